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


SUPPORTED_OPS.update("ScatterElements ScatterND".split())


def distinct_rows(rows):
    """Indices (k,1) of k distinct rows in [0, rows) (ScatterND without reduction needs no repeats)."""
    return lambda rng, shape: rng.permutation(rows)[:shape[0]].reshape(shape).astype(np.int64)


@case("scatter_elements_axis1", "ScatterElements axis=1 (no reduction, distinct targets per row): "
      "x (n,5), indices (n,2) = two distinct columns, updates (n,2) -> (n,5)", opset=16)
def _(rng):
    c = Case(None, None, [("x", F32, ("n", 5)), ("i", I64, ("n", 2)), ("u", F32, ("n", 2))],
             [("y", F32, ("n", 5))],
             [node("ScatterElements", ["x", "i", "u"], ["y"], name="scatter_elements", axis=1)], N_RUNS)
    c.gen = {"i": lambda rng, shape: np.stack([rng.permutation(5)[:2] - 5 * (r % 2) for r in range(shape[0])])
             .astype(np.int64)}
    return c


@case("scatter_elements_add", "ScatterElements axis=0 reduction=add (repeated targets add up): x (n,3), "
      "indices (4,3) in [0, 1], updates (4,3) -> (n,3)", gen={"i": small_ints(0, 1, np.int64)}, opset=16)
def _(rng):
    return Case(None, None, [("x", F32, ("n", 3)), ("i", I64, (4, 3)), ("u", F32, (4, 3))], [("y", F32, ("n", 3))],
                [node("ScatterElements", ["x", "i", "u"], ["y"], name="scatter_elements", axis=0, reduction="add")],
                [{"n": 2}, {"n": 4}, {"n": 6}])


@case("scatter_nd_rows", "ScatterND of whole rows: x (6,h), indices (k,1) distinct rows, updates (k,h) -> (6,h)",
      gen={"i": distinct_rows(6)}, opset=16)
def _(rng):
    return Case(None, None, [("x", F32, (6, "h")), ("i", I64, ("k", 1)), ("u", F32, ("k", "h"))],
                [("y", F32, (6, "h"))], [node("ScatterND", ["x", "i", "u"], ["y"], name="scatter_nd")],
                [{"h": 2, "k": 1}, {"h": 5, "k": 3}, {"h": 3, "k": 6}])


@case("scatter_nd_mul_elements", "ScatterND reduction=mul of single elements (tuples of 2, repeats multiply): "
      "x (3,4), indices (k,2) in [0,2], updates (k) -> (3,4)", gen={"i": small_ints(0, 2, np.int64)}, opset=16)
def _(rng):
    return Case(None, None, [("x", F32, (3, 4)), ("i", I64, ("k", 2)), ("u", F32, ("k",))], [("y", F32, (3, 4))],
                [node("ScatterND", ["x", "i", "u"], ["y"], name="scatter_nd", reduction="mul")],
                [{"k": 1}, {"k": 4}, {"k": 9}])


SUPPORTED_OPS.update("TopK OneHot".split())

for _name, _attrs, _k in [("topk_largest_ties", {"axis": -1}, 3), ("topk_smallest_axis1", {"axis": 1, "largest": 0}, 2)]:
    def _make(rng, attrs=_attrs, k=_k):
        axis = attrs["axis"]
        out = ("n", "h", k) if axis == -1 else ("n", k, 6)
        return Case(None, None, [("x", F32, ("n", "h", 6))], [("v", F32, out), ("i", I64, out)],
                    [node("TopK", ["x", "k"], ["v", "i"], name="topk", **attrs)],
                    [{"n": 1, "h": 2}, {"n": 2, "h": 5}, {"n": 3, "h": 3}], inits={"k": i64([k])})

    case(_name, f"TopK k={_k} {_attrs} with ties (values in [-2, 2]): x (n,h,6) -> values, int64 indices",
         opset=13, gen={"x": small_ints(-2, 2)})(_make)


@case("topk_k_from_shape", "TopK with k = h computed from Shape (a full sort of the axis): x (n,h) -> (n,h) x2",
      opset=15)
def _(rng):
    return Case(None, None, [("x", F32, ("n", "h"))], [("v", F32, ("n", "h")), ("i", I64, ("n", "h"))], [
        node("Shape", ["x"], ["shape"], name="shape", start=1, end=2),
        node("TopK", ["x", "shape"], ["v", "i"], name="topk", axis=1),
    ], NH_RUNS)


@case("one_hot_axis_last", "OneHot depth 5, values [0, 3], negative indices wrap: int64 indices (n,h) in [-5, 4] "
      "-> (n,h,5)", opset=13, gen={"i": index_gen(-5, 4)})
def _(rng):
    return Case(None, None, [("i", I64, ("n", "h"))], [("y", F32, ("n", "h", 5))],
                [node("OneHot", ["i", "depth", "values"], ["y"], name="one_hot")], NH_RUNS,
                inits={"depth": i64(5), "values": f32([0.0, 3.0])})


@case("one_hot_depth_from_shape_axis0", "OneHot axis=0 with depth = h from Shape, int64 values [-1, 1]: "
      "indices (n,h) in [0, 1] -> int64 (h,n,h)", opset=15, gen={"i": index_gen(0, 1)})
def _(rng):
    return Case(None, None, [("i", I64, ("n", "h"))], [("y", I64, ("h", "n", "h"))], [
        node("Shape", ["i"], ["shape"], name="shape", start=1, end=2),
        node("OneHot", ["i", "shape", "values"], ["y"], name="one_hot", axis=0),
    ], [{"n": 1, "h": 2}, {"n": 2, "h": 5}, {"n": 3, "h": 3}], inits={"values": i64([-1, 1])})
