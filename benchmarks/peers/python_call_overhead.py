#!/usr/bin/env python3
"""What a call through the Python package costs over the same call from C++.

One small model (add of two 4-element vectors, one compiled kernel) is called
  - from C++: `strata run --repeat` times VirtualMachine::Invoke alone;
  - from Python: vm.main(x, y) with numpy inputs (each wrapped without a copy),
    and with strata.Tensor inputs (no conversion at all), timed with
    time.perf_counter_ns over batches of calls;
in alternating rounds, so that both sides see the same machine. The overhead is
the Python median minus the C++ median of the same round; the goal is under
2 us. Usage: python3 benchmarks/peers/python_call_overhead.py [--rounds 5]
(the strata package installed, build/bin/strata built).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import strata

MODEL = """
func @main(x: Tensor[(n,), f32], y: Tensor[(n,), f32]) -> Tensor[(n,), f32] {
  dataflow {
    z = add(x, y)
    output z
  }
  return z
}
"""


def python_median_us(call, calls_per_batch=2000, batches=15):
    for _ in range(calls_per_batch):  # warm up: the pool, the VM's registers
        call()
    per_call = []
    for _ in range(batches):
        start = time.perf_counter_ns()
        for _ in range(calls_per_batch):
            call()
        per_call.append((time.perf_counter_ns() - start) / calls_per_batch / 1000.0)
    return statistics.median(per_call)


def cpp_median_us(cli, stx, repeat=30000):
    out = subprocess.run([cli, "run", stx, "--input=4xf32=1,2,3,4", "--input=4xf32=1,2,3,4", "--repeat", str(repeat),
                          "--warmup", "2000"], check=True, capture_output=True, text=True)
    match = re.search(r"median ([0-9.]+) us", out.stdout + out.stderr)
    if not match:
        sys.exit(f"cannot read the latency from strata run: {out.stdout}{out.stderr}")
    return float(match.group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cli", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "bin", "strata"))
    args = parser.parse_args()
    exe = strata.compile(MODEL)
    vm = strata.VirtualMachine(exe)
    x = np.arange(4, dtype=np.float32)
    y = np.ones(4, dtype=np.float32)
    tx, ty = vm.main(x, np.zeros(4, np.float32)), vm.main(y, np.zeros(4, np.float32))  # strata.Tensors
    np.testing.assert_array_equal(np.asarray(vm.main(x, y)), x + y)
    with tempfile.TemporaryDirectory() as folder:
        stx = os.path.join(folder, "add.stx")
        exe.save(stx)
        rows = []
        for _ in range(args.rounds):
            cpp = cpp_median_us(args.cli, stx)
            numpy_in = python_median_us(lambda: vm.main(x, y))
            tensor_in = python_median_us(lambda: vm.main(tx, ty))
            rows.append((cpp, numpy_in, tensor_in))
    print("| round | C++ Invoke us | Python, numpy inputs us | overhead us | Python, strata.Tensor inputs us | overhead us |")
    print("|---|---|---|---|---|---|")
    for i, (cpp, numpy_in, tensor_in) in enumerate(rows):
        print(f"| {i} | {cpp:.2f} | {numpy_in:.2f} | {numpy_in - cpp:.2f} | {tensor_in:.2f} | {tensor_in - cpp:.2f} |")
    over_numpy = [n - c for c, n, _ in rows]
    over_tensor = [t - c for c, _, t in rows]
    print(f"\noverhead over C++: numpy inputs {min(over_numpy):.2f}-{max(over_numpy):.2f} us, "
          f"strata.Tensor inputs {min(over_tensor):.2f}-{max(over_tensor):.2f} us (goal: under 2 us)")


if __name__ == "__main__":
    main()
