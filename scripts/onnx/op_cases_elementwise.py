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
