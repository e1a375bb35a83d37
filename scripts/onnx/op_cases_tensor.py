"""ONNX op fixtures: reductions and shape manipulation (see export_op_tests.py)."""
import numpy as np
from onnx import helper

from op_case_lib import *  # noqa: F401,F403  (Case, case, generators, dtypes, node)

# --------------------------------------------------------------------------
# Reductions
# --------------------------------------------------------------------------

RED_X = [("x", F32, ("n", "h", 4))]


@case("reducemean_keepdims0", "ReduceMean axes=[1] (attribute) keepdims=0: x (n,h,4) -> (n,4)")
def _(rng):
    return Case(None, None, RED_X, [("y", F32, ("n", 4))],
                [node("ReduceMean", ["x"], ["y"], name="mean", axes=[1], keepdims=0)], NH_RUNS)


@case("reducemean_keepdims1", "ReduceMean axes=[1] (attribute) keepdims=1: x (n,h,4) -> (n,1,4)")
def _(rng):
    return Case(None, None, RED_X, [("y", F32, ("n", 1, 4))],
                [node("ReduceMean", ["x"], ["y"], name="mean", axes=[1], keepdims=1)], NH_RUNS)


def _reducesum_axes_input(rng):
    return Case(None, None, RED_X, [("y", F32, ("h",))],
                [node("ReduceSum", ["x", "axes"], ["y"], name="sum", keepdims=0)], NH_RUNS,
                inits={"axes": i64([0, -1])})


case("reducesum_axes_input", "ReduceSum axes=[0,-1] as a constant input (opset 13+ form) keepdims=0: "
     "x (n,h,4) -> (h)")(_reducesum_axes_input)
case("reducesum_axes_input_opset13", "opset 13: ReduceSum axes=[0,-1] as a constant input keepdims=0: "
     "x (n,h,4) -> (h)", opset=13)(_reducesum_axes_input)


@case("reducesum_no_axes", "ReduceSum without axes (all axes) keepdims=0: x (n,h,4) -> scalar ()")
def _(rng):
    return Case(None, None, RED_X, [("y", F32, ())],
                [node("ReduceSum", ["x"], ["y"], name="sum", keepdims=0)], NH_RUNS)


@case("reducesum_noop_empty_axes", "ReduceSum without axes and noop_with_empty_axes=1 (identity): "
      "x (n,h,4) -> (n,h,4)")
def _(rng):
    return Case(None, None, RED_X, [("y", F32, ("n", "h", 4))],
                [node("ReduceSum", ["x"], ["y"], name="sum", noop_with_empty_axes=1)], NH_RUNS)


@case("reducemax_axes", "ReduceMax axes=[-1] (attribute) keepdims=0: x (n,h,4) -> (n,h)")
def _(rng):
    return Case(None, None, RED_X, [("y", F32, ("n", "h"))],
                [node("ReduceMax", ["x"], ["y"], name="max", axes=[-1], keepdims=0)], NH_RUNS)


@case("reducemax_all", "ReduceMax without axes (all axes), keepdims default 1: x (n,h,4) -> (1,1,1)")
def _(rng):
    return Case(None, None, RED_X, [("y", F32, (1, 1, 1))],
                [node("ReduceMax", ["x"], ["y"], name="max")], NH_RUNS)


@case("reducemean_axes_input_opset18", "opset 18: ReduceMean axes=[1] as a constant input (the attribute is "
      "gone) keepdims=0: x (n,h,4) -> (n,4)", opset=18)
def _(rng):
    return Case(None, None, RED_X, [("y", F32, ("n", 4))],
                [node("ReduceMean", ["x", "axes"], ["y"], name="mean", keepdims=0)], NH_RUNS,
                inits={"axes": i64([1])}, opset=18)


@case("reducemax_axes_input_opset18", "opset 18: ReduceMax axes=[0,2] as a constant input, "
      "noop_with_empty_axes=0 written out, keepdims=1: x (n,h,4) -> (1,h,1)", opset=18)
def _(rng):
    return Case(None, None, RED_X, [("y", F32, (1, "h", 1))],
                [node("ReduceMax", ["x", "axes"], ["y"], name="max", keepdims=1, noop_with_empty_axes=0)],
                NH_RUNS, inits={"axes": i64([0, 2])}, opset=18)


# --------------------------------------------------------------------------
# Shape manipulation
# --------------------------------------------------------------------------


@case("reshape_const", "Reshape to the constant shape [0,2,-1]: x (n,4,6) -> (n,2,12)")
def _(rng):
    return Case(None, None, [("x", F32, ("n", 4, 6))], [("y", F32, ("n", 2, 12))],
                [node("Reshape", ["x", "shape"], ["y"], name="reshape")], N_RUNS,
                inits={"shape": i64([0, 2, -1])})


@case("reshape_shape_chain", "Reshape to Concat(Unsqueeze(Gather(Shape(x),0)), Unsqueeze(Gather(Shape(x),1)), "
      "[2,4]): x (n,t,8) -> (n,t,2,4)")
def _(rng):
    return Case(None, None, [("x", F32, ("n", "t", 8))], [("y", F32, ("n", "t", 2, 4))], [
        node("Shape", ["x"], ["shape"], name="shape"),
        node("Gather", ["shape", "i0"], ["d0"], name="gather0", axis=0),
        node("Gather", ["shape", "i1"], ["d1"], name="gather1", axis=0),
        node("Unsqueeze", ["d0", "axes0"], ["u0"], name="unsqueeze0"),
        node("Unsqueeze", ["d1", "axes0"], ["u1"], name="unsqueeze1"),
        node("Concat", ["u0", "u1", "tail"], ["target"], name="concat", axis=0),
        node("Reshape", ["x", "target"], ["y"], name="reshape"),
    ], [{"n": 1, "t": 1}, {"n": 2, "t": 3}, {"n": 3, "t": 5}],
        inits={"i0": i64(0), "i1": i64(1), "axes0": i64([0]), "tail": i64([2, 4])})


@case("reshape_shape_arith", "Reshape to [Shape(x)[0]*Shape(x)[1], 2, Shape(x)[2]/2] (integer Mul/Div "
      "on shape values): x (n,t,8) -> (n*t,2,4)")
def _(rng):
    return Case(None, None, [("x", F32, ("n", "t", 8))], [("y", F32, (None, 2, 4))], [
        node("Shape", ["x"], ["shape"], name="shape"),
        node("Gather", ["shape", "i0"], ["d0"], name="gather0", axis=0),
        node("Gather", ["shape", "i1"], ["d1"], name="gather1", axis=0),
        node("Gather", ["shape", "i2"], ["d2"], name="gather2", axis=0),
        node("Mul", ["d0", "d1"], ["nt"], name="mul"),
        node("Div", ["d2", "two"], ["half"], name="div"),
        node("Unsqueeze", ["nt", "axes0"], ["u0"], name="unsqueeze0"),
        node("Unsqueeze", ["half", "axes0"], ["u2"], name="unsqueeze2"),
        node("Concat", ["u0", "two_vec", "u2"], ["target"], name="concat", axis=0),
        node("Reshape", ["x", "target"], ["y"], name="reshape"),
    ], [{"n": 1, "t": 1}, {"n": 2, "t": 3}, {"n": 3, "t": 5}],
        inits={"i0": i64(0), "i1": i64(1), "i2": i64(2), "two": i64(2), "axes0": i64([0]),
               "two_vec": i64([2])})


@case("transpose_021", "Transpose perm=[0,2,1]: x (n,h,5) -> (n,5,h)")
def _(rng):
    return Case(None, None, [("x", F32, ("n", "h", 5))], [("y", F32, ("n", 5, "h"))],
                [node("Transpose", ["x"], ["y"], name="transpose", perm=[0, 2, 1])], NH_RUNS)


@case("flatten_axis1", "Flatten axis=1 on a rank-4 input: x (n,3,h,w) -> (n,3*h*w)")
def _(rng):
    return Case(None, None, IMG_X, [("y", F32, ("n", None))],
                [node("Flatten", ["x"], ["y"], name="flatten", axis=1)], NHW_RUNS)


@case("flatten_axis2", "Flatten axis=2 on a rank-3 input: x (n,h,5) -> (n*h,5)")
def _(rng):
    return Case(None, None, [("x", F32, ("n", "h", 5))], [("y", F32, (None, 5))],
                [node("Flatten", ["x"], ["y"], name="flatten", axis=2)], NH_RUNS)


@case("concat_axis0", "Concat axis=0 of x (n,4) and y (m,4) (two dynamic dims) -> (n+m,4)")
def _(rng):
    return Case(None, None, [("x", F32, ("n", 4)), ("y", F32, ("m", 4))], [("z", F32, (None, 4))],
                [node("Concat", ["x", "y"], ["z"], name="concat", axis=0)],
                [{"n": 1, "m": 2}, {"n": 3, "m": 1}, {"n": 4, "m": 5}])


@case("concat_axis1", "Concat axis=1 of x (n,3) and y (n,w) -> (n,3+w)")
def _(rng):
    return Case(None, None, [("x", F32, ("n", 3)), ("y", F32, ("n", "w"))], [("z", F32, ("n", None))],
                [node("Concat", ["x", "y"], ["z"], name="concat", axis=1)],
                [{"n": 1, "w": 2}, {"n": 3, "w": 1}, {"n": 2, "w": 5}])


@case("concat_with_const", "Concat axis=0 of x (n,4) and an initializer c (2,4) -> (n+2,4)")
def _(rng):
    return Case(None, None, [("x", F32, ("n", 4))], [("z", F32, (None, 4))],
                [node("Concat", ["x", "c"], ["z"], name="concat", axis=0)], N_RUNS,
                inits={"c": w_normal(rng, (2, 4), 1.0)})


def _split_sizes(rng):
    return Case(None, None, [("x", F32, ("n", 5))], [("a", F32, ("n", 2)), ("b", F32, ("n", 3))],
                [node("Split", ["x", "split"], ["a", "b"], name="split", axis=1)], N_RUNS,
                inits={"split": i64([2, 3])})


case("split_sizes", "Split axis=1 with sizes [2,3] as a constant input: x (n,5) -> a (n,2), b (n,3)")(
    _split_sizes)
case("split_sizes_opset13", "opset 13: Split axis=1 with sizes [2,3] as a constant input: "
     "x (n,5) -> a (n,2), b (n,3)", opset=13)(_split_sizes)


@case("split_equal", "Split axis=1 without a split input (3 equal parts): x (n,6) -> a, b, c (n,2)")
def _(rng):
    return Case(None, None, [("x", F32, ("n", 6))],
                [("a", F32, ("n", 2)), ("b", F32, ("n", 2)), ("c", F32, ("n", 2))],
                [node("Split", ["x"], ["a", "b", "c"], name="split", axis=1)], N_RUNS)


@case("split_num_outputs_uneven_opset18", "opset 18: Split axis=1 num_outputs=3 of 7 columns (chunks of "
      "ceil(7/3) = 3, the last one shorter): x (n,7) -> a (n,3), b (n,3), c (n,1)", opset=18)
def _(rng):
    return Case(None, None, [("x", F32, ("n", 7))],
                [("a", F32, ("n", 3)), ("b", F32, ("n", 3)), ("c", F32, ("n", 1))],
                [node("Split", ["x"], ["a", "b", "c"], name="split", axis=1, num_outputs=3)], N_RUNS, opset=18)


@case("cast_saturate_opset19", "opset 19: Cast to=FLOAT with saturate=1 (only meaningful for float8 "
      "targets, a no-op here): x int64 (n,5) -> float32 (n,5)", opset=19,
      gen={"x": small_ints(-1000, 1000, np.int64)})
def _(rng):
    return Case(None, None, [("x", I64, ("n", 5))], [("y", F32, ("n", 5))],
                [node("Cast", ["x"], ["y"], name="cast", to=F32, saturate=1)], N_RUNS, opset=19)


@case("matmul_gelu_opset21", "opset 21 (the newest Strata imports): Gelu(MatMul(x, W)) with Gelu's "
      "default approximate='none': x (n,8), W (8,4) -> (n,4)", opset=21)
def _(rng):
    return Case(None, None, [("x", F32, ("n", 8))], [("y", F32, ("n", 4))],
                [node("MatMul", ["x", "w"], ["m"], name="matmul"), node("Gelu", ["m"], ["y"], name="gelu")],
                N_RUNS, inits={"w": w_normal(rng, (8, 4))}, opset=21)


@case("slice_symbolic_end", "pos[:, :t] + x, the positional-embedding slice: Slice(pos, starts [0], "
      "ends Unsqueeze(Gather(Shape(x), 1)), axes [1]) with pos an initializer (1,16,4): x (n,t,4) -> (n,t,4)")
def _(rng):
    return Case(None, None, [("x", F32, ("n", "t", 4))], [("y", F32, ("n", "t", 4))], [
        node("Shape", ["x"], ["shape"], name="shape"),
        node("Gather", ["shape", "i1"], ["t"], name="gather", axis=0),
        node("Unsqueeze", ["t", "axes0"], ["end"], name="unsqueeze"),
        node("Slice", ["pos", "start", "end", "axis1"], ["window"], name="slice"),
        node("Add", ["x", "window"], ["y"], name="add"),
    ], [{"n": 1, "t": 1}, {"n": 2, "t": 9}, {"n": 3, "t": 16}],
        inits={"pos": w_normal(rng, (1, 16, 4), 1.0), "i1": i64(1), "axes0": i64([0]), "start": i64([0]),
               "axis1": i64([1])})


@case("slice_end_reshaped_shape_value", "pos[:, :t + 1] as the dynamo exporter writes it: ends = "
      "Reshape(Add(Squeeze(Shape(x, start=1, end=2)), 1), [1]), opset 18: x (n,t,4) -> (n,t+1,4) window of an "
      "initializer pos (1,16,4)", opset=18)
def _(rng):
    return Case(None, None, [("x", F32, ("n", "t", 4))], [("y", F32, (None, None, 4))], [
        node("Shape", ["x"], ["t1"], name="shape", start=1, end=2),
        node("Squeeze", ["t1"], ["t"], name="squeeze"),
        node("Add", ["t", "one"], ["t_plus_1"], name="add"),
        node("Reshape", ["t_plus_1", "one_dim"], ["end"], name="reshape"),
        node("Slice", ["pos", "start", "end", "axis1"], ["window"], name="slice"),
        node("Mul", ["window", "two"], ["y"], name="mul"),
    ], [{"n": 1, "t": 1}, {"n": 2, "t": 9}, {"n": 3, "t": 15}],
        inits={"pos": w_normal(rng, (1, 16, 4), 1.0), "one": i64(1), "one_dim": i64([1]), "start": i64([0]),
               "axis1": i64([1]), "two": f32([2.0])}, opset=18)


@case("slice_symbolic_start_negative", "x[:, -t:] style: Slice(x, starts Neg(Unsqueeze(Gather(Shape(y), 0))), "
      "ends [INT64_MAX], axes [1]) keeps the last k columns of x, k = y's length: x (n,8), y (k,) -> (n,k)")
def _(rng):
    return Case(None, None, [("x", F32, ("n", 8)), ("y", F32, ("k",))], [("z", F32, ("n", "k"))], [
        node("Shape", ["y"], ["shape"], name="shape"),
        node("Gather", ["shape", "i0"], ["k"], name="gather", axis=0),
        node("Unsqueeze", ["k", "axes0"], ["kk"], name="unsqueeze"),
        node("Neg", ["kk"], ["start"], name="neg"),
        node("Slice", ["x", "start", "end", "axis1"], ["z"], name="slice"),
    ], [{"n": 1, "k": 1}, {"n": 2, "k": 5}, {"n": 3, "k": 8}],
        inits={"i0": i64(0), "axes0": i64([0]), "end": i64([INT64_MAX]), "axis1": i64([1])})


@case("slice_steps", "Slice starts [0,1] ends [INT64_MAX,-1] axes [0,1] steps [1,2] (constant inputs): "
      "x (n,12) -> (n,5)")
def _(rng):
    return Case(None, None, [("x", F32, ("n", 12))], [("y", F32, ("n", 5))],
                [node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"], name="slice")], N_RUNS,
                inits={"starts": i64([0, 1]), "ends": i64([INT64_MAX, -1]), "axes": i64([0, 1]),
                       "steps": i64([1, 2])})


@case("slice_negative", "Slice starts [-6, 1] ends [7, INT64_MAX] axes [-1, 1] (no steps input): "
      "x (n,h,8) -> (n,h-1,5)")
def _(rng):
    return Case(None, None, [("x", F32, ("n", "h", 8))], [("y", F32, ("n", None, 5))],
                [node("Slice", ["x", "starts", "ends", "axes"], ["y"], name="slice")],
                [{"n": 1, "h": 2}, {"n": 2, "h": 5}, {"n": 3, "h": 3}],
                inits={"starts": i64([-6, 1]), "ends": i64([7, INT64_MAX]), "axes": i64([-1, 1])})


@case("slice_reverse", "Slice starts [-1] ends [INT64_MIN] axes [1] steps [-1] (reverses axis 1): "
      "x (n,6) -> (n,6)")
def _(rng):
    return Case(None, None, [("x", F32, ("n", 6))], [("y", F32, ("n", 6))],
                [node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"], name="slice")], N_RUNS,
                inits={"starts": i64([-1]), "ends": i64([INT64_MIN]), "axes": i64([1]),
                       "steps": i64([-1])})


@case("gather_axis0", "Gather axis=0 with the constant int64 indices [0,2,-1,1]: x (n,4) (n >= 3) "
      "-> (4,4)")
def _(rng):
    return Case(None, None, [("x", F32, ("n", 4))], [("y", F32, (4, 4))],
                [node("Gather", ["x", "idx"], ["y"], name="gather", axis=0)],
                [{"n": 3}, {"n": 5}, {"n": 8}], inits={"idx": i64([0, 2, -1, 1])})


@case("gather_axis1", "Gather axis=1 with constant int64 indices [[5,0],[2,-3]]: x (n,6) -> (n,2,2)")
def _(rng):
    return Case(None, None, [("x", F32, ("n", 6))], [("y", F32, ("n", 2, 2))],
                [node("Gather", ["x", "idx"], ["y"], name="gather", axis=1)], N_RUNS,
                inits={"idx": i64([[5, 0], [2, -3]])})


@case("unsqueeze", "Unsqueeze axes=[0,-1] (constant input): x (n,4) -> (1,n,4,1)")
def _(rng):
    return Case(None, None, [("x", F32, ("n", 4))], [("y", F32, (1, "n", 4, 1))],
                [node("Unsqueeze", ["x", "axes"], ["y"], name="unsqueeze")], N_RUNS,
                inits={"axes": i64([0, -1])})


@case("squeeze", "Squeeze axes=[1] (constant input) on a dim of size 1: x (n,1,4) -> (n,4)")
def _(rng):
    return Case(None, None, [("x", F32, ("n", 1, 4))], [("y", F32, ("n", 4))],
                [node("Squeeze", ["x", "axes"], ["y"], name="squeeze")], N_RUNS,
                inits={"axes": i64([1])})


@case("expand_const", "Expand to the constant shape [3,4]: x (1,4) (static; the runs differ in values "
      "only) -> (3,4)")
def _(rng):
    return Case(None, None, [("x", F32, (1, 4))], [("y", F32, (3, 4))],
                [node("Expand", ["x", "shape"], ["y"], name="expand")], [{}, {}],
                inits={"shape": i64([3, 4])})


@case("expand_bidirectional", "Expand x (n,1) to the constant shape [1,5] (ONNX broadcasts both ways) "
      "-> (n,5)")
def _(rng):
    return Case(None, None, [("x", F32, ("n", 1))], [("y", F32, ("n", 5))],
                [node("Expand", ["x", "shape"], ["y"], name="expand")], N_RUNS,
                inits={"shape": i64([1, 5])})


@case("expand_shape_of", "Expand x (1,w) to Shape(y) with y (n,w) -> (n,w)")
def _(rng):
    return Case(None, None, [("x", F32, (1, "w")), ("y", F32, ("n", "w"))], [("z", F32, ("n", "w"))], [
        node("Shape", ["y"], ["shape"], name="shape"),
        node("Expand", ["x", "shape"], ["z"], name="expand"),
    ], [{"n": 1, "w": 3}, {"n": 4, "w": 2}, {"n": 3, "w": 5}])


@case("shape_start_end", "Shape start=-2 end=-1 gives [h]; Reshape x to Concat([h],[-1]): "
      "x (n,h,w) -> (h,n*w)")
def _(rng):
    return Case(None, None, [("x", F32, ("n", "h", "w"))], [("y", F32, ("h", None))], [
        node("Shape", ["x"], ["hs"], name="shape", start=-2, end=-1),
        node("Concat", ["hs", "minus1"], ["target"], name="concat", axis=0),
        node("Reshape", ["x", "target"], ["y"], name="reshape"),
    ], NHW_RUNS, inits={"minus1": i64([-1])})


@case("shape_start_transpose", "Shape start=1 gives [h,w]; Reshape Transpose(x,[0,2,1]) (n,w,h) to "
      "Concat([-1],[h,w]): x (n,h,w) -> (n,h,w)")
def _(rng):
    return Case(None, None, [("x", F32, ("n", "h", "w"))], [("y", F32, ("n", "h", "w"))], [
        node("Transpose", ["x"], ["xt"], name="transpose", perm=[0, 2, 1]),
        node("Shape", ["x"], ["hw"], name="shape", start=1),
        node("Concat", ["minus1", "hw"], ["target"], name="concat", axis=0),
        node("Reshape", ["xt", "target"], ["y"], name="reshape"),
    ], NHW_RUNS, inits={"minus1": i64([-1])})


@case("constant_float_ints", "Constant value_float=1.5 added to x, then Reshape to Constant "
      "value_ints=[0,-1]: x (n,3,4) -> (n,12)")
def _(rng):
    return Case(None, None, [("x", F32, ("n", 3, 4))], [("y", F32, ("n", 12))], [
        node("Constant", [], ["c"], name="const_float", value_float=1.5),
        node("Add", ["x", "c"], ["a"], name="add"),
        node("Constant", [], ["shape"], name="const_ints", value_ints=[0, -1]),
        node("Reshape", ["a", "shape"], ["y"], name="reshape"),
    ], N_RUNS)


@case("constant_tensor", "Constant value=tensor float32 (4,) multiplied with x (n,4) -> (n,4)")
def _(rng):
    return Case(None, None, [("x", F32, ("n", 4))], [("y", F32, ("n", 4))], [
        node("Constant", [], ["c"], name="const",
             value=numpy_helper.from_array(f32([2.0, -0.5, 0.0, 3.25]), "c_value")),
        node("Mul", ["x", "c"], ["y"], name="mul"),
    ], N_RUNS)


@case("constant_int", "Constant value_int=4 (a scalar int64) as the Gather index on axis 1: "
      "x (n,6) -> (n)")
def _(rng):
    return Case(None, None, [("x", F32, ("n", 6))], [("y", F32, ("n",))], [
        node("Constant", [], ["idx"], name="const", value_int=4),
        node("Gather", ["x", "idx"], ["y"], name="gather", axis=1),
    ], N_RUNS)


@case("constant_of_shape", "ConstantOfShape(Shape(x)) with value 2.5 (float32), added to x: "
      "x (n,w) -> (n,w)")
def _(rng):
    return Case(None, None, [("x", F32, ("n", "w"))], [("y", F32, ("n", "w"))], [
        node("Shape", ["x"], ["shape"], name="shape"),
        node("ConstantOfShape", ["shape"], ["c"], name="cos",
             value=numpy_helper.from_array(f32([2.5]), "value")),
        node("Add", ["x", "c"], ["y"], name="add"),
    ], [{"n": 1, "w": 3}, {"n": 4, "w": 2}, {"n": 3, "w": 5}])


@case("range_shape", "Range(0, Shape(x)[1], 1) int64, Cast to float, added to x (broadcast): "
      "x (n,w) -> (n,w)")
def _(rng):
    return Case(None, None, [("x", F32, ("n", "w"))], [("y", F32, ("n", "w"))], [
        node("Shape", ["x"], ["shape"], name="shape"),
        node("Gather", ["shape", "i1"], ["limit"], name="gather", axis=0),
        node("Range", ["start", "limit", "delta"], ["r"], name="range"),
        node("Cast", ["r"], ["rf"], name="cast", to=F32),
        node("Add", ["x", "rf"], ["y"], name="add"),
    ], [{"n": 1, "w": 3}, {"n": 4, "w": 2}, {"n": 3, "w": 5}],
        inits={"i1": i64(1), "start": i64(0), "delta": i64(1)})


@case("range_step2", "Range(1, Shape(x)[1], 2) int64 (length ceil((w-1)/2)), Cast to float: "
      "x (n,w) -> (?)")
def _(rng):
    return Case(None, None, [("x", F32, ("n", "w"))], [("y", F32, (None,))], [
        node("Shape", ["x"], ["shape"], name="shape"),
        node("Gather", ["shape", "i1"], ["limit"], name="gather", axis=0),
        node("Range", ["start", "limit", "delta"], ["r"], name="range"),
        node("Cast", ["r"], ["y"], name="cast", to=F32),
    ], [{"n": 1, "w": 2}, {"n": 4, "w": 7}, {"n": 3, "w": 6}],
        inits={"i1": i64(1), "start": i64(1), "delta": i64(2)})


# --------------------------------------------------------------------------
# Split at symbolic points
# --------------------------------------------------------------------------

@case("split_num_outputs_dynamic_axis_opset18",
      "Split num_outputs=3 along the dynamic axis n (chunks of ceil(n/3), the last shorter): "
      "x (n,4) -> three parts", opset=18)
def _(rng):
    return Case(None, None, [("x", F32, ("n", 4))],
                [("a", F32, (None, 4)), ("b", F32, (None, 4)), ("c", F32, (None, 4))],
                [node("Split", ["x"], ["a", "b", "c"], name="split", axis=0, num_outputs=3)],
                [{"n": 3}, {"n": 7}, {"n": 8}])


@case("split_sizes_from_shape", "Split x (n,h) along h at sizes [h - 2, 2] computed from Shape: "
      "-> (n,h-2), (n,2)", opset=18)
def _(rng):
    return Case(None, None, [("x", F32, ("n", "h"))], [("a", F32, ("n", None)), ("b", F32, ("n", 2))],
                [node("Shape", ["x"], ["shape"], name="shape", start=1, end=2),
                 node("Sub", ["shape", "two"], ["head"], name="sub"),
                 node("Concat", ["head", "two"], ["sizes"], name="concat", axis=0),
                 node("Split", ["x", "sizes"], ["a", "b"], name="split", axis=1)],
                [{"n": 1, "h": 3}, {"n": 2, "h": 6}, {"n": 3, "h": 9}], inits={"two": i64([2])})


# --------------------------------------------------------------------------
# Shape values as operands and as data
# --------------------------------------------------------------------------

@case("range_symbolic_start", "Range(n, n + w, 1) with n and w from Shape (a range starting at a "
      "dynamic position, as position ids after a past length): x (n,w) -> int64 (w)")
def _(rng):
    return Case(None, None, [("x", F32, ("n", "w"))], [("y", I64, ("w",))], [
        node("Shape", ["x"], ["shape"], name="shape"),
        node("Gather", ["shape", "i0"], ["start"], name="gather_n", axis=0),
        node("Gather", ["shape", "i1"], ["width"], name="gather_w", axis=0),
        node("Add", ["start", "width"], ["limit"], name="add"),
        node("Range", ["start", "limit", "delta"], ["y"], name="range"),
    ], [{"n": 1, "w": 3}, {"n": 4, "w": 2}, {"n": 3, "w": 5}],
        inits={"i0": i64(0), "i1": i64(1), "delta": i64(1)})


@case("shape_value_as_data", "A shape computed from dynamic dims used as tensor data: "
      "x / Cast(Shape(x)[1] * 2, float), Shape(x) cast to float, and Shape(x) itself as a graph output: "
      "x (n,w) -> (n,w), (2), int64 (2)")
def _(rng):
    return Case(None, None, [("x", F32, ("n", "w"))],
                [("y", F32, ("n", "w")), ("s", F32, (2,)), ("shape", I64, (2,))], [
        node("Shape", ["x"], ["shape"], name="shape"),
        node("Gather", ["shape", "i1"], ["width"], name="gather_w", axis=0),
        node("Mul", ["width", "two"], ["double"], name="mul"),
        node("Cast", ["double"], ["scale"], name="cast_scale", to=F32),
        node("Div", ["x", "scale"], ["y"], name="div"),
        node("Cast", ["shape"], ["s"], name="cast_shape", to=F32),
    ], [{"n": 1, "w": 3}, {"n": 4, "w": 2}, {"n": 3, "w": 5}],
        inits={"i1": i64(1), "two": i64(2)})


# --------------------------------------------------------------------------
# More reductions, Size, Trilu, Tile
# --------------------------------------------------------------------------

SUPPORTED_OPS.update("ReduceMin ReduceL1 ReduceL2 ReduceSumSquare ReduceLogSum ReduceLogSumExp Size Trilu "
                     "Tile".split())

for _op, _name, _keep, _gen in [
    ("ReduceMin", "reducemin_axes_input_opset18", 1, normal()),
    ("ReduceL1", "reducel1_opset18", 0, normal()),
    ("ReduceL2", "reducel2_opset18", 1, normal()),
    ("ReduceSumSquare", "reducesumsquare_opset18", 0, normal()),
    ("ReduceLogSum", "reducelogsum_opset18", 1, uniform(0.1, 3.0)),
    ("ReduceLogSumExp", "reducelogsumexp_large_opset18", 0, normal(40.0)),
]:
    def _make(rng, op=_op, keep=_keep):
        out_dims = ("n", 1, 4) if keep else ("n", 4)
        return Case(None, None, RED_X, [("y", F32, out_dims)],
                    [node(op, ["x", "axes"], ["y"], name=op.lower(), keepdims=keep)], NH_RUNS,
                    inits={"axes": i64([1])})

    case(_name, f"{_op} over axis 1 (axes input), keepdims={_keep}: x (n,h,4) -> "
         f"{'(n,1,4)' if _keep else '(n,4)'}", opset=18, gen={"x": _gen})(_make)


@case("size_as_data", "Size(x) (a symbolic element count) cast to float and added: x (n,h) -> x + n*h")
def _(rng):
    return Case(None, None, [("x", F32, ("n", "h"))], [("y", F32, ("n", "h"))], [
        node("Size", ["x"], ["size"], name="size"),
        node("Cast", ["size"], ["sizef"], name="cast", to=F32),
        node("Add", ["x", "sizef"], ["y"], name="add"),
    ], NH_RUNS)


for _name, _upper, _k in [("trilu_upper", 1, None), ("trilu_lower_k1", 0, 1), ("trilu_upper_k_minus2", 1, -2)]:
    def _make(rng, upper=_upper, k=_k):
        inputs = ["x"] + ([] if k is None else ["k"])
        return Case(None, None, [("x", F32, ("n", "h", "w"))], [("y", F32, ("n", "h", "w"))],
                    [node("Trilu", inputs, ["y"], name="trilu", upper=upper)],
                    [{"n": 1, "h": 3, "w": 5}, {"n": 2, "h": 6, "w": 4}, {"n": 3, "h": 5, "w": 5}],
                    inits={} if k is None else {"k": i64(k)})

    case(_name, f"Trilu upper={_upper} k={_k if _k is not None else 0}: x (n,h,w) -> (n,h,w)", opset=14)(_make)


@case("trilu_causal_symbolic_k", "Trilu upper=1 with k = w - h + 1 computed from Shape (a causal mask "
      "offset by a past length): x (n,h,w) -> (n,h,w)", opset=14)
def _(rng):
    return Case(None, None, [("x", F32, ("n", "h", "w"))], [("y", F32, ("n", "h", "w"))], [
        node("Shape", ["x"], ["shape"], name="shape"),
        node("Gather", ["shape", "i1"], ["h"], name="gather_h", axis=0),
        node("Gather", ["shape", "i2"], ["w"], name="gather_w", axis=0),
        node("Sub", ["w", "h"], ["past"], name="sub"),
        node("Add", ["past", "one"], ["k"], name="add"),
        node("Trilu", ["x", "k"], ["y"], name="trilu", upper=1),
    ], [{"n": 1, "h": 3, "w": 5}, {"n": 2, "h": 4, "w": 4}, {"n": 3, "h": 2, "w": 6}],
        inits={"i1": i64(1), "i2": i64(2), "one": i64(1)})


@case("tile_constant", "Tile with repeats [2, 1, 3]: x (n,h,2) -> (2n,h,6)")
def _(rng):
    return Case(None, None, [("x", F32, ("n", "h", 2))], [("y", F32, (None, "h", 6))],
                [node("Tile", ["x", "repeats"], ["y"], name="tile")], NH_RUNS,
                inits={"repeats": i64([2, 1, 3])})


@case("tile_symbolic_repeats", "Tile x (n,2) by [1, n] with n from Shape: -> (n, 2n)")
def _(rng):
    return Case(None, None, [("x", F32, ("n", 2))], [("y", F32, ("n", None))], [
        node("Shape", ["x"], ["shape"], name="shape", start=0, end=1),
        node("Concat", ["one", "shape"], ["repeats"], name="concat", axis=0),
        node("Tile", ["x", "repeats"], ["y"], name="tile"),
    ], N_RUNS, inits={"one": i64([1])})


# --------------------------------------------------------------------------
# Pad
# --------------------------------------------------------------------------

SUPPORTED_OPS.update(["Pad"])

for _name, _mode, _pads, _value, _opset in [
    ("pad_constant_value", "constant", [0, 1, 2, 0, 2, 1], 1.5, 13),
    ("pad_reflect", "reflect", [0, 1, 1, 0, 1, 2], None, 13),
    ("pad_edge", "edge", [0, 2, 0, 0, 1, 3], None, 13),
    ("pad_wrap_opset19", "wrap", [0, 1, 2, 0, 2, 1], None, 19),
]:
    def _make(rng, mode=_mode, pads=_pads, value=_value):
        inputs = ["x", "pads"] + (["value"] if value is not None else [])
        inits = {"pads": i64(pads)}
        if value is not None:
            inits["value"] = f32(value)
        b, a = pads[:3], pads[3:]
        out = (None if b[0] + a[0] else "n", None, 4 + b[2] + a[2])
        return Case(None, None, [("x", F32, ("n", "h", 4))], [("y", F32, out)],
                    [node("Pad", inputs, ["y"], name="pad", mode=mode)],
                    [{"n": 1, "h": 3}, {"n": 2, "h": 5}, {"n": 3, "h": 4}], inits=inits)

    case(_name, f"Pad mode={_mode} pads={_pads}{'' if _value is None else f' value={_value}'}: x (n,h,4)",
         opset=_opset)(_make)


@case("pad_axes_symbolic_opset18", "Pad (opset 18 axes input [1]) h up to the next multiple of 4, "
      "pads [0, (4 - h % 4) % 4] computed from Shape: x (n,h,3) -> (n,?,3)", opset=18)
def _(rng):
    return Case(None, None, [("x", F32, ("n", "h", 3))], [("y", F32, ("n", None, 3))], [
        node("Shape", ["x"], ["shape"], name="shape", start=1, end=2),
        node("Mod", ["shape", "four"], ["rem"], name="mod"),
        node("Sub", ["four", "rem"], ["missing"], name="sub"),
        node("Mod", ["missing", "four"], ["after"], name="mod_again"),
        node("Concat", ["zero", "after"], ["pads"], name="concat", axis=0),
        node("Pad", ["x", "pads", "", "axes"], ["y"], name="pad"),
    ], [{"n": 1, "h": 3}, {"n": 2, "h": 8}, {"n": 3, "h": 5}],
        inits={"four": i64([4]), "zero": i64([0]), "axes": i64([1])})


# --------------------------------------------------------------------------
# The graph's interface
# --------------------------------------------------------------------------


@case("graph_io_names", "graph input and output names that are not identifiers ('input.1', 'mask/0'), two "
      "outputs listed in another order than computed: probs = Softmax(logits), logits = MatMul(input.1, w) + mask/0: "
      "(n,4), (n,3) -> (n,3), (n,3)")
def _(rng):
    return Case(None, None, [("input.1", F32, ("n", 4)), ("mask/0", F32, ("n", 3))],
                [("probs", F32, ("n", 3)), ("logits", F32, ("n", 3))], [
                    node("MatMul", ["input.1", "w"], ["scores"], name="matmul"),
                    node("Add", ["scores", "mask/0"], ["logits"], name="add"),
                    node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
                ], N_RUNS, inits={"w": w_normal(rng, (4, 3))})
