"""Shared fixtures of the Python package's tests: the repository's models and small text-IR programs."""
import pathlib

import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
ONNX_FIXTURES = REPO / "tests" / "fixtures" / "onnx"
EXAMPLES = REPO / "examples"

# A function that returns its argument: its result is the caller's own memory.
IDENTITY_SIR = """
func @main(x: Tensor[(n, 4), f32]) -> Tensor[(n, 4), f32] {
  return x
}
"""

# matmul + relu over symbolic m, n, k (an operator call, legalized and compiled).
MATMUL_RELU_SIR = """
func @main(x: Tensor[(m, n), f32], w: Tensor[(n, k), f32]) -> Tensor[(m, k), f32] {
  dataflow {
    y = matmul(x, w)
    z = relu(y)
    output z
  }
  return z
}
"""


@pytest.fixture(scope="session")
def strata():
    import strata as s
    return s


@pytest.fixture(scope="session")
def matmul_relu(strata):
    return strata.compile(MATMUL_RELU_SIR)


@pytest.fixture(scope="session")
def rng():
    return np.random.default_rng(20261126)
