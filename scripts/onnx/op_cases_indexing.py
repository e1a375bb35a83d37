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


SUPPORTED_OPS.update("ArgMax ArgMin ReduceProd".split())

for _op, _name, _attrs, _out in [
    ("ArgMax", "argmax_axis1", {"axis": 1}, ("n", 1, 4)),
    ("ArgMin", "argmin_axis_last_no_keepdims", {"axis": -1, "keepdims": 0}, ("n", "h")),
    ("ArgMax", "argmax_ties_last_index", {"axis": 1, "select_last_index": 1}, ("n", 1, 4)),
    ("ArgMin", "argmin_ties_first_index", {"axis": 1}, ("n", 1, 4)),
]:
    def _make(rng, op=_op, attrs=_attrs, out=_out):
        return Case(None, None, [("x", F32, ("n", "h", 4))], [("y", I64, out)],
                    [node(op, ["x"], ["y"], name=op.lower(), **attrs)], NH_RUNS)

    _text = " ".join(f"{k}={v}" for k, v in _attrs.items())
    case(_name, f"{_op} {_text}: x (n,h,4) with ties (values in [-2, 2]) -> int64", opset=13,
         gen={"x": small_ints(-2, 2)})(_make)


@case("reduceprod_opset18", "ReduceProd over axis 1 (axes input), keepdims=0: x (n,h,4) -> (n,4)", opset=18,
      gen={"x": uniform(0.5, 1.5)})
def _(rng):
    return Case(None, None, [("x", F32, ("n", "h", 4))], [("y", F32, ("n", 4))],
                [node("ReduceProd", ["x", "axes"], ["y"], name="reduceprod", keepdims=0)], NH_RUNS,
                inits={"axes": i64([1])})
