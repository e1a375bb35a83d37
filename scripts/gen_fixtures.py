#!/usr/bin/env python3
"""Generates the reference fixtures of the end-to-end tests with numpy.

Strata's results are compared against these files; numpy is the independent
reference. Run from the repository root:  python3 scripts/gen_fixtures.py
Fixtures are committed, so tests never need Python.
"""
import os

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures")


def save(case, name, array):
    folder = os.path.join(OUT, case)
    os.makedirs(folder, exist_ok=True)
    np.save(os.path.join(folder, name + ".npy"), array)


def matmul_relu():
    rng = np.random.default_rng(20261122)
    # (m, n, k): x is m x n, w is n x k.
    for m, n, k in [(1, 1, 1), (7, 13, 5), (128, 256, 64), (3, 4, 2)]:
        x = rng.standard_normal((m, n), dtype=np.float32)
        w = rng.standard_normal((n, k), dtype=np.float32)
        y = np.maximum(x.astype(np.float64) @ w.astype(np.float64), 0.0).astype(np.float32)
        tag = f"{m}x{n}x{k}"
        save("matmul_relu", f"x_{tag}", x)
        save("matmul_relu", f"w_{tag}", w)
        save("matmul_relu", f"y_{tag}", y)


def matmul_blas():
    rng = np.random.default_rng(7)
    for m, n, k in [(1, 1, 1), (5, 9, 3), (64, 32, 48)]:
        a = rng.standard_normal((m, n), dtype=np.float32)
        b = rng.standard_normal((n, k), dtype=np.float32)
        bias = rng.standard_normal((k,), dtype=np.float32)
        y = (a.astype(np.float64) @ b.astype(np.float64) + bias).astype(np.float32)
        tag = f"{m}x{n}x{k}"
        save("matmul_bias", f"a_{tag}", a)
        save("matmul_bias", f"b_{tag}", b)
        save("matmul_bias", f"bias_{tag}", bias)
        save("matmul_bias", f"y_{tag}", y)


def custom_concat():
    """examples/custom_concat: relu(concat((x, y), axis=1)) with x, y of (n, 256)."""
    rng = np.random.default_rng(3)
    for n in [1, 3, 17]:
        x = rng.standard_normal((n, 256), dtype=np.float32)
        y = rng.standard_normal((n, 256), dtype=np.float32)
        save("custom_concat", f"x_{n}", x)
        save("custom_concat", f"y_{n}", y)
        save("custom_concat", f"z_{n}", np.maximum(np.concatenate([x, y], axis=1), 0.0))


def mlp_dispatch():
    """examples/mlp.sir: dense+bias, gelu(tanh), dense+bias, over a symbolic batch."""
    rng = np.random.default_rng(11)
    w1 = (rng.standard_normal((256, 128)) * 0.1).astype(np.float32)
    b1 = (rng.standard_normal((256,)) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((16, 256)) * 0.1).astype(np.float32)
    b2 = (rng.standard_normal((16,)) * 0.1).astype(np.float32)
    for name, a in [("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2)]:
        save("mlp", name, a)
    for n in [1, 5, 33]:
        x = rng.standard_normal((n, 128), dtype=np.float32)
        h = x.astype(np.float64) @ w1.T.astype(np.float64) + b1
        g = 0.5 * h * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (h + 0.044715 * h ** 3)))
        y = g @ w2.T.astype(np.float64) + b2
        save("mlp", f"x_{n}", x)
        save("mlp", f"y_{n}", y.astype(np.float32))


if __name__ == "__main__":
    matmul_relu()
    matmul_blas()
    custom_concat()
    mlp_dispatch()
