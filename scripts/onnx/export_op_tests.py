#!/usr/bin/env python3
"""Writes per-operator ONNX conformance fixtures for Strata's ONNX importer.

Every case is a tiny ONNX graph (one operator, or a chain of 2-5 nodes where the
operator needs a shape input) built directly with onnx.helper -- no PyTorch. For
each case this writes tests/fixtures/onnx_ops/<case>/:

  model.onnx            ir_version 8, opset 17 unless the case says otherwise
                        (13 to 21, the range the importer takes),
                        checked with onnx.checker.check_model(full_check=True)
  case.txt              one line describing the case
  inputs.txt            one line per graph input:  <name> <dtype> <d0,d1,...>
  outputs.txt           the same for the graph outputs ("?" = computed dim)
  ops.txt               the op types the graph uses, one per line, sorted
  run_<k>/in<i>.npy     the inputs of run k, in graph-input order
  run_<k>/out<i>.npy    onnxruntime's outputs of run k, in graph-output order

The graph inputs are only the dynamic data tensors (dims named by dim_param:
"n", "h", "w", ...); weights and parameters (axes, shapes, starts/ends, scalars)
are initializers or Constant nodes. Each run uses another shape of the dynamic
axes. The reference outputs come from onnxruntime (CPUExecutionProvider, one
thread, graph optimizations off so every node runs its own kernel). They are
also compared with onnx's reference evaluator (onnx.reference); a disagreement
is only reported, onnxruntime stays the reference.

The cases live in op_cases_<family>.py (elementwise, indexing, nn, tensor), the framework
that builds and writes them in op_case_lib.py.

Run from the repository root:

    python3 scripts/onnx/export_op_tests.py [--out-dir DIR] [--cases a,b,c] [--list]

Every case has its own fixed seed (crc32 of its name), so a rerun with the same
onnx/onnxruntime/numpy versions rewrites the same files. The fixtures are
committed: Strata's tests never need Python.
"""
import argparse
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from op_case_lib import CASES, DEFAULT_OUT, export_case, folder_size  # noqa: E402
import op_cases_elementwise  # noqa: E402,F401  (each module registers its cases)
import op_cases_indexing  # noqa: E402,F401
import op_cases_nn  # noqa: E402,F401
import op_cases_tensor  # noqa: E402,F401


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out-dir", default=DEFAULT_OUT,
                        help="where to write <case>/ (default tests/fixtures/onnx_ops)")
    parser.add_argument("--cases", default="", help="comma-separated cases to write (default: all)")
    parser.add_argument("--list", action="store_true", help="print the cases and exit")
    args = parser.parse_args()

    names = [n for n, *_ in CASES]
    assert len(names) == len(set(names)), "duplicate case names"
    if args.list:
        for name, desc, *_ in CASES:
            print(f"{name}: {desc}")
        return
    wanted = [s for s in args.cases.split(",") if s]
    unknown = sorted(set(wanted) - set(names))
    if unknown:
        sys.exit(f"error: unknown cases {unknown}")

    print(f"onnx {onnx.__version__}, onnxruntime {ort.__version__}, numpy {np.__version__}")
    os.makedirs(args.out_dir, exist_ok=True)
    if not wanted:
        # Drop the folders of cases that no longer exist.
        for entry in sorted(os.listdir(args.out_dir)):
            folder = os.path.join(args.out_dir, entry)
            if entry not in names and os.path.isfile(os.path.join(folder, "case.txt")):
                shutil.rmtree(folder)
    notes = []
    for name, desc, kw, build in CASES:
        if not wanted or name in wanted:
            export_case(name, desc, kw, build, args.out_dir, notes)
    print(f"{len(wanted) or len(CASES)} cases, {folder_size(args.out_dir)} bytes in {args.out_dir}")
    for note in notes:
        print(f"note: {note}")


if __name__ == "__main__":
    main()
