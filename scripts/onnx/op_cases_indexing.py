"""ONNX op fixtures: indexing and scans (see export_op_tests.py)."""
import numpy as np
from onnx import helper

from op_case_lib import *  # noqa: F401,F403  (Case, case, generators, dtypes, node)

SUPPORTED_OPS.update("GatherElements GatherND CumSum".split())


def index_gen(lo, hi):
    return lambda rng, shape: rng.integers(lo, hi + 1, shape).astype(np.int64)


@case("gather_elements_axis1", "GatherElements axis=1, negative indices wrap: x (n,5), int64 indices (n,3) "
      "in [-5, 4] -> (n,3)", gen={"i": index_gen(-5, 4)}, opset=13)
def _(rng):
    return Case(None, None, [("x", F32, ("n", 5)), ("i", I64, ("n", 3))], [("y", F32, ("n", 3))],
                [node("GatherElements", ["x", "i"], ["y"], name="gather_elements", axis=1)], N_RUNS)


@case("gather_elements_axis0_smaller", "GatherElements axis=0 with indices smaller than x along the other "
      "axis: x (n,4), int64 indices (2,3) in [-2, 1] -> (2,3)", gen={"i": index_gen(-2, 1)}, opset=13)
def _(rng):
    return Case(None, None, [("x", F32, ("n", 4)), ("i", I64, (2, 3))], [("y", F32, (2, 3))],
                [node("GatherElements", ["x", "i"], ["y"], name="gather_elements", axis=0)],
                [{"n": 2}, {"n": 3}, {"n": 7}])


@case("gather_nd_pairs", "GatherND batch_dims=0 with index pairs: x (n,h,3), int64 indices (k,2) "
      "in [-2, 1] -> (k,3)", gen={"i": index_gen(-2, 1)}, opset=13)
def _(rng):
    return Case(None, None, [("x", F32, ("n", "h", 3)), ("i", I64, ("k", 2))], [("y", F32, ("k", 3))],
                [node("GatherND", ["x", "i"], ["y"], name="gather_nd")],
                [{"n": 2, "h": 2, "k": 2}, {"n": 2, "h": 4, "k": 5}, {"n": 3, "h": 2, "k": 1}])


@case("gather_nd_full_tuples", "GatherND with full-rank tuples (a scalar per tuple), negative indices: "
      "x (4,5), int64 indices (n,3,2) in [-4, 3] -> (n,3)", gen={"i": index_gen(-4, 3)}, opset=13)
def _(rng):
    return Case(None, None, [("x", F32, (4, 5)), ("i", I64, ("n", 3, 2))], [("y", F32, ("n", 3))],
                [node("GatherND", ["x", "i"], ["y"], name="gather_nd")], N_RUNS)


for _name, _attrs, _axis, _dtype in [
    ("cumsum_axis1", {}, 1, F32),
    ("cumsum_axis0_exclusive", {"exclusive": 1}, 0, F32),
    ("cumsum_reverse", {"reverse": 1}, -1, F32),
    ("cumsum_reverse_exclusive_int64", {"reverse": 1, "exclusive": 1}, 1, I64),
]:
    def _make(rng, attrs=_attrs, axis=_axis, dtype=_dtype):
        return Case(None, None, [("x", dtype, ("n", "h"))], [("y", dtype, ("n", "h"))],
                    [node("CumSum", ["x", "axis"], ["y"], name="cumsum", **attrs)], NH_RUNS,
                    inits={"axis": i64(axis)})

    _text = "".join(f" {k}={v}" for k, v in _attrs.items())
    case(_name, f"CumSum axis={_axis}{_text}: x (n,h) {DTYPE_NAMES[_dtype]} -> (n,h)", opset=14,
         gen={"x": small_ints(-5, 5, np.int64)} if _dtype == I64 else {})(_make)
