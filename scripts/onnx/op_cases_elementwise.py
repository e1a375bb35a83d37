"""ONNX op fixtures: elementwise ops (see export_op_tests.py)."""
import numpy as np
from onnx import helper

from op_case_lib import *  # noqa: F401,F403  (Case, case, generators, dtypes, node)

# --------------------------------------------------------------------------
# Elementwise binary, broadcasting x (n, 4) against an initializer (4,)
# --------------------------------------------------------------------------

BIN_X = [("x", F32, ("n", 4))]
for _op, _name, _b, _gen, _out in [
    ("Add", "add_broadcast", [0.5, -1.0, 2.0, 0.0], normal(), F32),
    ("Sub", "sub_broadcast", [0.5, -1.0, 2.0, 0.0], normal(), F32),
    ("Mul", "mul_broadcast", [0.5, -1.5, 2.0, 0.0], normal(), F32),
    ("Div", "div_broadcast", [1.5, -2.0, 0.5, 4.0], normal(), F32),
    ("Pow", "pow_broadcast", [0.5, 1.0, 2.0, 3.0], uniform(0.2, 2.5), F32),
    ("Equal", "equal_broadcast", [0.0, 1.0, -1.0, 2.0], small_ints(-2, 2), BOOL),
    ("Less", "less_broadcast", [0.0, 1.0, -1.0, 2.0], small_ints(-2, 2), BOOL),
    ("Greater", "greater_broadcast", [0.0, 1.0, -1.0, 2.0], small_ints(-2, 2), BOOL),
]:
    def _make(rng, op=_op, b=_b, out=_out):
        return Case(None, None, BIN_X, [("y", out, ("n", 4))],
                    [node(op, ["x", "b"], ["y"], name=op.lower())], N_RUNS, inits={"b": f32(b)})

    extra = " (x > 0)" if _op == "Pow" else ""
    case(_name, f"{_op}: x (n,4){extra} with initializer b (4,) broadcast -> y (n,4) "
         f"{DTYPE_NAMES[_out]}", gen={"x": _gen})(_make)


@case("where_greater", "Where(Greater(x, 0), x, b): x (n,4), initializer b (4,) broadcast -> (n,4)")
def _(rng):
    return Case(None, None, BIN_X, [("y", F32, ("n", 4))], [
        node("Greater", ["x", "zero"], ["cond"], name="greater"),
        node("Where", ["cond", "x", "b"], ["y"], name="where"),
    ], N_RUNS, inits={"zero": f32(0.0), "b": f32([-1.0, 0.5, 2.0, -3.0])})


# --------------------------------------------------------------------------
# Unary on x (n, 5)
# --------------------------------------------------------------------------

UN_X = [("x", F32, ("n", 5))]
UN_RUNS = [{"n": 1}, {"n": 4}, {"n": 9}]
for _op, _name, _gen, _attrs in [
    ("Sqrt", "sqrt", uniform(0.01, 4.0), {}),
    ("Erf", "erf", normal(1.5), {}),
    ("Exp", "exp", normal(1.5), {}),
    ("Log", "log", uniform(0.01, 5.0), {}),
    ("Tanh", "tanh", normal(1.5), {}),
    ("Sigmoid", "sigmoid", normal(2.0), {}),
    ("Relu", "relu", normal(), {}),
    ("Neg", "neg", normal(), {}),
    ("Abs", "abs", normal(), {}),
    ("LeakyRelu", "leaky_relu", normal(), {"alpha": 0.2}),
    ("Identity", "identity", normal(), {}),
    ("Dropout", "dropout", normal(), {}),
]:
    def _make(rng, op=_op, attrs=_attrs):
        return Case(None, None, UN_X, [("y", F32, ("n", 5))],
                    [node(op, ["x"], ["y"], name=op.lower(), **attrs)], UN_RUNS)

    _attr_text = "".join(f" {k}={v}" for k, v in _attrs.items())
    _extra = {"Sqrt": " (x > 0)", "Log": " (x > 0)",
              "Dropout": " (no ratio / training_mode inputs: inference, identity)"}.get(_op, "")
    case(_name, f"{_op}{_attr_text}: x (n,5){_extra} -> (n,5)", gen={"x": _gen})(_make)


@case("dropout_ratio_input", "Dropout with a constant ratio input 0.3 and no training_mode "
      "(inference, identity): x (n,5) -> (n,5)")
def _(rng):
    return Case(None, None, UN_X, [("y", F32, ("n", 5))],
                [node("Dropout", ["x", "ratio"], ["y"], name="dropout")], UN_RUNS,
                inits={"ratio": f32(0.3)})


@case("clip", "Clip with min=-0.5 and max=0.8 as constant scalar inputs: x (n,5) -> (n,5)")
def _(rng):
    return Case(None, None, UN_X, [("y", F32, ("n", 5))],
                [node("Clip", ["x", "lo", "hi"], ["y"], name="clip")], UN_RUNS,
                inits={"lo": f32(-0.5), "hi": f32(0.8)})


@case("clip_min_only", "Clip with only min=0.25 (a constant input; max absent): x (n,5) -> (n,5)")
def _(rng):
    return Case(None, None, UN_X, [("y", F32, ("n", 5))],
                [node("Clip", ["x", "lo"], ["y"], name="clip")], UN_RUNS, inits={"lo": f32(0.25)})


@case("clip_max_only", "Clip with only max=-0.1 (min is the empty input name): x (n,5) -> (n,5)")
def _(rng):
    return Case(None, None, UN_X, [("y", F32, ("n", 5))],
                [node("Clip", ["x", "", "hi"], ["y"], name="clip")], UN_RUNS, inits={"hi": f32(-0.1)})


@case("cast_float_to_int32", "Cast to=INT32 (truncation toward zero): x float32 (n,5) in (-10,10) "
      "-> int32 (n,5)", gen={"x": uniform(-10.0, 10.0)})
def _(rng):
    return Case(None, None, UN_X, [("y", I32, ("n", 5))],
                [node("Cast", ["x"], ["y"], name="cast", to=I32)], UN_RUNS)


@case("cast_int64_to_float", "Cast to=FLOAT: x int64 (n,5) in [-1000,1000] -> float32 (n,5)",
      gen={"x": small_ints(-1000, 1000, np.int64)})
def _(rng):
    return Case(None, None, [("x", I64, ("n", 5))], [("y", F32, ("n", 5))],
                [node("Cast", ["x"], ["y"], name="cast", to=F32)], UN_RUNS)


# --------------------------------------------------------------------------
# Rounding, sign, trigonometry and activations (opsets 13-21)
# --------------------------------------------------------------------------

SUPPORTED_OPS.update("""LessOrEqual GreaterOrEqual Not And Or Xor IsNaN IsInf Floor Ceil Round
    Sign Reciprocal Sin Cos Softplus Softsign HardSwish HardSigmoid Elu Selu PRelu Mod Max Min Sum
    Mean""".split())


def halves(lo, hi):
    """Multiples of 0.5, so Round meets its ties (half to even) and Floor/Ceil exact integers."""
    return lambda rng, shape: (rng.integers(2 * lo, 2 * hi + 1, shape) / 2).astype(np.float32)


def with_specials(rng, shape):
    """Normal values with NaN, +inf and -inf sprinkled in (for IsNaN / IsInf)."""
    a = rng.standard_normal(shape).astype(np.float32)
    flat = a.reshape(-1)
    picks = rng.integers(0, 4, flat.shape)
    flat[picks == 1] = np.nan
    flat[picks == 2] = np.inf
    flat[picks == 3] = -np.inf
    return a


for _op, _name, _gen, _attrs, _out, _opset in [
    ("Floor", "floor", halves(-6, 6), {}, F32, 13),
    ("Ceil", "ceil", halves(-6, 6), {}, F32, 13),
    ("Round", "round_half_to_even", halves(-6, 6), {}, F32, 13),
    ("Sign", "sign", small_ints(-2, 2), {}, F32, 13),
    ("Reciprocal", "reciprocal", uniform(0.2, 3.0), {}, F32, 13),
    ("Sin", "sin", normal(3.0), {}, F32, 13),
    ("Cos", "cos", normal(3.0), {}, F32, 13),
    ("Softplus", "softplus", normal(20.0), {}, F32, 13),
    ("Softsign", "softsign", normal(3.0), {}, F32, 13),
    ("HardSwish", "hard_swish", normal(4.0), {}, F32, 14),
    ("HardSigmoid", "hard_sigmoid", normal(4.0), {"alpha": 0.25, "beta": 0.4}, F32, 13),
    ("Elu", "elu", normal(2.0), {"alpha": 0.7}, F32, 13),
    ("Selu", "selu", normal(2.0), {}, F32, 13),
    ("IsNaN", "isnan", with_specials, {}, BOOL, 20),
    ("IsInf", "isinf", with_specials, {}, BOOL, 20),
    ("IsInf", "isinf_negative_only", with_specials, {"detect_positive": 0}, BOOL, 20),
]:
    def _make(rng, op=_op, attrs=_attrs, out=_out):
        return Case(None, None, UN_X, [("y", out, ("n", 5))],
                    [node(op, ["x"], ["y"], name=op.lower(), **attrs)], UN_RUNS)

    _attr_text = "".join(f" {k}={v}" for k, v in _attrs.items())
    case(_name, f"{_op}{_attr_text} (opset {_opset}): x (n,5) -> (n,5) {DTYPE_NAMES[_out]}",
         gen={"x": _gen}, opset=_opset)(_make)


for _op, _name, _b, _gen, _out in [
    ("LessOrEqual", "less_or_equal_broadcast", [0.0, 1.0, -1.0, 2.0], small_ints(-2, 2), BOOL),
    ("GreaterOrEqual", "greater_or_equal_broadcast", [0.0, 1.0, -1.0, 2.0], small_ints(-2, 2), BOOL),
]:
    def _make(rng, op=_op, b=_b, out=_out):
        return Case(None, None, BIN_X, [("y", out, ("n", 4))],
                    [node(op, ["x", "b"], ["y"], name=op.lower())], N_RUNS, inits={"b": f32(b)})

    case(_name, f"{_op}: x (n,4) with initializer b (4,) broadcast -> y (n,4) bool",
         gen={"x": _gen})(_make)


BOOL_X = [("x", BOOL, ("n", 4))]
for _op in ["And", "Or", "Xor"]:
    def _make(rng, op=_op):
        return Case(None, None, BOOL_X, [("y", BOOL, ("n", 4))],
                    [node(op, ["x", "b"], ["y"], name=op.lower())], N_RUNS,
                    inits={"b": np.array([True, False, True, False])})

    case(f"{_op.lower()}_broadcast", f"{_op}: bool x (n,4) with bool initializer b (4,) -> (n,4)",
         gen={"x": small_ints(0, 1, np.bool_)})(_make)


@case("not_of_less", "Not(Less(x, 0)): x (n,4) -> bool (n,4)", gen={"x": small_ints(-2, 2)})
def _(rng):
    return Case(None, None, BIN_X, [("y", BOOL, ("n", 4))],
                [node("Less", ["x", "zero"], ["neg"], name="less"), node("Not", ["neg"], ["y"], name="not")],
                N_RUNS, inits={"zero": f32(0.0)})


I64_X = [("x", I64, ("n", 4))]
for _name, _fmod, _desc in [("mod_int_floor", 0, "fmod=0: the result takes the divisor's sign"),
                            ("mod_int_fmod", 1, "fmod=1: the result takes the dividend's sign")]:
    def _make(rng, fmod=_fmod):
        return Case(None, None, I64_X, [("y", I64, ("n", 4))],
                    [node("Mod", ["x", "b"], ["y"], name="mod", fmod=fmod)], N_RUNS,
                    inits={"b": i64([3, -3, 4, -5])})

    case(_name, f"Mod {_desc}: int64 x (n,4) in [-9, 9] by initializer b (4,) = [3,-3,4,-5] -> (n,4)",
         gen={"x": small_ints(-9, 9, np.int64)})(_make)


@case("mod_float_fmod", "Mod fmod=1 on floats (C fmod): x (n,4) by initializer b (4,) -> (n,4)",
      gen={"x": normal(5.0)})
def _(rng):
    return Case(None, None, BIN_X, [("y", F32, ("n", 4))],
                [node("Mod", ["x", "b"], ["y"], name="mod", fmod=1)], N_RUNS,
                inits={"b": f32([1.5, -2.0, 0.75, 3.0])})


@case("prelu_channel_slope", "PRelu with a per-channel slope (3,1,1): x (n,3,h,w) -> (n,3,h,w)", opset=16)
def _(rng):
    return Case(None, None, IMG_X, [("y", F32, ("n", 3, "h", "w"))],
                [node("PRelu", ["x", "slope"], ["y"], name="prelu")], NHW_RUNS,
                inits={"slope": f32([[[0.25]], [[-0.5]], [[0.0]]])})


for _op, _name in [("Max", "max_variadic"), ("Min", "min_variadic"), ("Sum", "sum_variadic"),
                   ("Mean", "mean_variadic")]:
    def _make(rng, op=_op):
        return Case(None, None, BIN_X, [("y", F32, ("n", 4))],
                    [node(op, ["x", "b", "c"], ["y"], name=op.lower())], N_RUNS,
                    inits={"b": f32([0.5, -1.0, 2.0, 0.0]), "c": f32([[0.25]])})

    case(_name, f"{_op} of three inputs: x (n,4), initializers b (4,) and c (1,1), broadcast -> (n,4)")(_make)


@case("max_of_shape_values", "Max(Shape(x)[1], 3) stays a symbolic dim: Reshape(x, [-1, max(h, 3)]) "
      "on x (n,h), run at h >= 3 -> (n,h)")
def _(rng):
    return Case(None, None, [("x", F32, ("n", "h"))], [("y", F32, ("n", "h"))],
                [node("Shape", ["x"], ["shape"], name="shape"),
                 node("Gather", ["shape", "one"], ["h"], name="gather_h", axis=0),
                 node("Max", ["h", "three"], ["hmax"], name="max"),
                 node("Unsqueeze", ["hmax", "zero_axis"], ["hmax_1"], name="unsqueeze"),
                 node("Concat", ["minus_one", "hmax_1"], ["target"], name="concat", axis=0),
                 node("Reshape", ["x", "target"], ["y"], name="reshape")],
                [{"n": 1, "h": 3}, {"n": 2, "h": 5}, {"n": 4, "h": 7}],
                inits={"one": i64(1), "three": i64(3), "zero_axis": i64([0]), "minus_one": i64([-1])})
