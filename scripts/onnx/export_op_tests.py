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

Run from the repository root:

    python3 scripts/onnx/export_op_tests.py [--out-dir DIR] [--cases a,b,c] [--list]

Every case has its own fixed seed (crc32 of its name), so a rerun with the same
onnx/onnxruntime/numpy versions rewrites the same files. The fixtures are
committed: Strata's tests never need Python.
"""
import argparse
import os
import shutil
import sys
import zlib

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_OUT = os.path.join(ROOT, "tests", "fixtures", "onnx_ops")

IR_VERSION = 8
INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min

F32, I32, I64, BOOL = TensorProto.FLOAT, TensorProto.INT32, TensorProto.INT64, TensorProto.BOOL
NP_OF = {F32: np.float32, I32: np.int32, I64: np.int64, BOOL: np.bool_}
DTYPE_NAMES = {F32: "float32", I32: "int32", I64: "int64", BOOL: "bool"}

# The ONNX op types Strata's importer handles (docs/onnx.md); every case must stay
# inside this list.
SUPPORTED_OPS = set(
    """Add Sub Mul Div Pow Sqrt Erf Exp Log Tanh Sigmoid Relu LeakyRelu Gelu Neg Abs
    Clip Cast Where Equal Less Greater MatMul Gemm Conv MaxPool AveragePool
    GlobalAveragePool BatchNormalization LayerNormalization Softmax LogSoftmax
    ReduceMean ReduceSum ReduceMax Reshape Transpose Flatten Concat Split Slice
    Gather Unsqueeze Squeeze Expand Shape Constant ConstantOfShape Identity Dropout
    Range""".split()
)

# --------------------------------------------------------------------------
# Case description
# --------------------------------------------------------------------------


class Case:
    """One fixture.

    inputs:  [(name, elem_type, dims)]; a dim is a dim_param name or an int.
    outputs: [(name, elem_type, dims)]; a dim may also be None (computed, e.g. n*h).
    nodes:   onnx NodeProtos.
    inits:   {name: numpy array}, in graph-initializer order.
    runs:    [{dim_name: size}], one per run.
    gen:     {input name: fn(rng, shape) -> array}; default standard normal float32.
    """

    def __init__(self, name, desc, inputs, outputs, nodes, runs, inits=None, gen=None, opset=17):
        self.name, self.desc = name, desc
        self.inputs, self.outputs, self.nodes = inputs, outputs, nodes
        self.inits = inits or {}
        self.runs, self.gen, self.opset = runs, gen or {}, opset


CASES = []


def case(name, desc, **kw):
    """Registers a case built by a function of a seeded numpy Generator."""

    def register(build):
        CASES.append((name, desc, kw, build))
        return build

    return register


def rng_for(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


# Input generators.
def normal(scale=1.0):
    return lambda rng, shape: (rng.standard_normal(shape) * scale).astype(np.float32)


def uniform(lo, hi):
    return lambda rng, shape: rng.uniform(lo, hi, shape).astype(np.float32)


def small_ints(lo, hi, dtype=np.float32):
    """Integer values in [lo, hi] (as floats by default), so that Equal and ties occur."""
    return lambda rng, shape: rng.integers(lo, hi + 1, shape).astype(dtype)


def f32(values):
    return np.asarray(values, dtype=np.float32)


def i64(values):
    return np.asarray(values, dtype=np.int64)


def w_normal(rng, shape, scale=0.5):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


N_RUNS = [{"n": 1}, {"n": 3}, {"n": 7}]
NH_RUNS = [{"n": 1, "h": 2}, {"n": 2, "h": 7}, {"n": 3, "h": 1}]
NHW_RUNS = [{"n": 1, "h": 3, "w": 4}, {"n": 2, "h": 5, "w": 7}, {"n": 3, "h": 2, "w": 6}]
IMG_RUNS = [{"n": 1, "h": 6, "w": 6}, {"n": 2, "h": 7, "w": 9}, {"n": 1, "h": 10, "w": 5}]

node = helper.make_node

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
# MatMul / Gemm
# --------------------------------------------------------------------------


@case("matmul", "MatMul: x (n,8) @ initializer W (8,3) -> (n,3)")
def _(rng):
    return Case(None, None, [("x", F32, ("n", 8))], [("y", F32, ("n", 3))],
                [node("MatMul", ["x", "W"], ["y"], name="matmul")], N_RUNS,
                inits={"W": w_normal(rng, (8, 3))})


@case("matmul_batched", "MatMul batched: x (b,n,8) @ initializer W (8,3) -> (b,n,3)")
def _(rng):
    return Case(None, None, [("x", F32, ("b", "n", 8))], [("y", F32, ("b", "n", 3))],
                [node("MatMul", ["x", "W"], ["y"], name="matmul")],
                [{"b": 1, "n": 1}, {"b": 2, "n": 3}, {"b": 3, "n": 5}],
                inits={"W": w_normal(rng, (8, 3))})


@case("gemm_transb_bias", "Gemm transB=1: x (n,8), W (3,8), bias C (3,) -> (n,3)")
def _(rng):
    return Case(None, None, [("x", F32, ("n", 8))], [("y", F32, ("n", 3))],
                [node("Gemm", ["x", "W", "C"], ["y"], name="gemm", transB=1)], N_RUNS,
                inits={"W": w_normal(rng, (3, 8)), "C": w_normal(rng, (3,))})


@case("gemm_alpha_beta", "Gemm transA=0 transB=0 alpha=0.5 beta=2.0: x (n,8), W (8,3), C (3,) -> (n,3)")
def _(rng):
    return Case(None, None, [("x", F32, ("n", 8))], [("y", F32, ("n", 3))],
                [node("Gemm", ["x", "W", "C"], ["y"], name="gemm", alpha=0.5, beta=2.0,
                      transA=0, transB=0)], N_RUNS,
                inits={"W": w_normal(rng, (8, 3)), "C": w_normal(rng, (3,))})


@case("gemm_transa", "Gemm transA=1: x (8,n) (used transposed), W (8,3), C (1,3) -> (n,3)")
def _(rng):
    return Case(None, None, [("x", F32, (8, "n"))], [("y", F32, ("n", 3))],
                [node("Gemm", ["x", "W", "C"], ["y"], name="gemm", transA=1)], N_RUNS,
                inits={"W": w_normal(rng, (8, 3)), "C": w_normal(rng, (1, 3))})


# --------------------------------------------------------------------------
# Convolution, pooling, normalization, softmax
# --------------------------------------------------------------------------

IMG_X = [("x", F32, ("n", 3, "h", "w"))]


@case("conv_pads_strides", "Conv W (4,3,3,3) + bias (4,), pads [1,1,1,1], strides [2,2]: "
      "x (n,3,h,w) -> (n,4,?,?)")
def _(rng):
    return Case(None, None, IMG_X, [("y", F32, ("n", 4, None, None))],
                [node("Conv", ["x", "W", "B"], ["y"], name="conv", kernel_shape=[3, 3],
                      pads=[1, 1, 1, 1], strides=[2, 2])],
                [{"n": 1, "h": 5, "w": 5}, {"n": 2, "h": 8, "w": 6}, {"n": 1, "h": 7, "w": 10}],
                inits={"W": w_normal(rng, (4, 3, 3, 3)), "B": w_normal(rng, (4,))})


@case("conv_depthwise_dilated", "Conv group=3 (depthwise) W (3,1,3,3), dilations [2,2], no bias, "
      "no pads: x (n,3,h,w) -> (n,3,h-4,w-4)")
def _(rng):
    return Case(None, None, IMG_X, [("y", F32, ("n", 3, None, None))],
                [node("Conv", ["x", "W"], ["y"], name="conv", group=3, dilations=[2, 2])],
                [{"n": 1, "h": 5, "w": 5}, {"n": 2, "h": 7, "w": 9}, {"n": 1, "h": 8, "w": 6}],
                inits={"W": w_normal(rng, (3, 1, 3, 3))})


@case("conv_auto_pad_valid", "Conv auto_pad=VALID, kernel_shape [2,3], strides [1,2], W (2,3,2,3) "
      "+ bias: x (n,3,h,w) -> (n,2,?,?)")
def _(rng):
    return Case(None, None, IMG_X, [("y", F32, ("n", 2, None, None))],
                [node("Conv", ["x", "W", "B"], ["y"], name="conv", auto_pad="VALID",
                      kernel_shape=[2, 3], strides=[1, 2])],
                [{"n": 1, "h": 4, "w": 5}, {"n": 2, "h": 6, "w": 8}, {"n": 1, "h": 3, "w": 7}],
                inits={"W": w_normal(rng, (2, 3, 2, 3)), "B": w_normal(rng, (2,))})


@case("maxpool_k2_s2", "MaxPool kernel [2,2], strides [2,2] (odd sizes floor): x (n,3,h,w) -> (n,3,?,?)")
def _(rng):
    return Case(None, None, IMG_X, [("y", F32, ("n", 3, None, None))],
                [node("MaxPool", ["x"], ["y"], name="maxpool", kernel_shape=[2, 2], strides=[2, 2])],
                IMG_RUNS)


@case("maxpool_pads_ceil", "MaxPool kernel [3,3], strides [2,2], pads [1,1,1,1], ceil_mode=1: "
      "x (n,3,h,w) -> (n,3,?,?)")
def _(rng):
    return Case(None, None, IMG_X, [("y", F32, ("n", 3, None, None))],
                [node("MaxPool", ["x"], ["y"], name="maxpool", kernel_shape=[3, 3], strides=[2, 2],
                      pads=[1, 1, 1, 1], ceil_mode=1)],
                IMG_RUNS)


@case("maxpool_default_strides", "MaxPool kernel [3,2], no strides attribute (ONNX default 1): "
      "x (n,3,h,w) -> (n,3,h-2,w-1)")
def _(rng):
    return Case(None, None, IMG_X, [("y", F32, ("n", 3, None, None))],
                [node("MaxPool", ["x"], ["y"], name="maxpool", kernel_shape=[3, 2])],
                IMG_RUNS)


@case("avgpool_exclude_pad", "AveragePool kernel [3,3], strides [2,2], pads [1,1,1,1], "
      "count_include_pad=0: x (n,3,h,w) -> (n,3,?,?)")
def _(rng):
    return Case(None, None, IMG_X, [("y", F32, ("n", 3, None, None))],
                [node("AveragePool", ["x"], ["y"], name="avgpool", kernel_shape=[3, 3], strides=[2, 2],
                      pads=[1, 1, 1, 1], count_include_pad=0)],
                IMG_RUNS)


@case("avgpool_include_pad", "AveragePool kernel [3,3], pads [1,1,1,1], count_include_pad=1, "
      "no strides attribute (default 1): x (n,3,h,w) -> (n,3,h,w)")
def _(rng):
    return Case(None, None, IMG_X, [("y", F32, ("n", 3, "h", "w"))],
                [node("AveragePool", ["x"], ["y"], name="avgpool", kernel_shape=[3, 3],
                      pads=[1, 1, 1, 1], count_include_pad=1)],
                IMG_RUNS)


@case("global_avgpool", "GlobalAveragePool: x (n,3,h,w) -> (n,3,1,1)")
def _(rng):
    return Case(None, None, IMG_X, [("y", F32, ("n", 3, 1, 1))],
                [node("GlobalAveragePool", ["x"], ["y"], name="gap")], IMG_RUNS)


@case("batchnorm", "BatchNormalization (inference) epsilon=1e-3, scale/B/mean/var (3,) non-trivial: "
      "x (n,3,h,w) -> (n,3,h,w)")
def _(rng):
    return Case(None, None, IMG_X, [("y", F32, ("n", 3, "h", "w"))],
                [node("BatchNormalization", ["x", "scale", "B", "mean", "var"], ["y"], name="bn",
                      epsilon=1e-3)],
                NHW_RUNS,
                inits={"scale": f32([1.5, -0.5, 0.8]), "B": f32([0.1, -0.2, 0.3]),
                       "mean": f32([0.5, -1.0, 0.25]), "var": f32([0.5, 2.0, 1.25])})


@case("layernorm", "LayerNormalization axis=-1 epsilon=1e-5, scale and bias (8,): x (n,t,8) -> (n,t,8)",
      gen={"x": normal(2.0)})
def _(rng):
    return Case(None, None, [("x", F32, ("n", "t", 8))], [("y", F32, ("n", "t", 8))],
                [node("LayerNormalization", ["x", "scale", "bias"], ["y"], name="ln", axis=-1,
                      epsilon=1e-5)],
                [{"n": 1, "t": 1}, {"n": 2, "t": 3}, {"n": 3, "t": 4}],
                inits={"scale": (1.0 + w_normal(rng, (8,))).astype(np.float32),
                       "bias": w_normal(rng, (8,))})


SM_X = [("x", F32, ("n", "h", 6))]


@case("softmax_axis_last", "Softmax axis=-1: x (n,h,6) -> (n,h,6)", gen={"x": normal(3.0)})
def _(rng):
    return Case(None, None, SM_X, [("y", F32, ("n", "h", 6))],
                [node("Softmax", ["x"], ["y"], name="softmax", axis=-1)], NH_RUNS)


@case("softmax_axis1", "Softmax axis=1 (a dynamic axis of a rank-3 input): x (n,h,6) -> (n,h,6)",
      gen={"x": normal(3.0)})
def _(rng):
    return Case(None, None, SM_X, [("y", F32, ("n", "h", 6))],
                [node("Softmax", ["x"], ["y"], name="softmax", axis=1)], NH_RUNS)


@case("logsoftmax", "LogSoftmax axis=-1: x (n,h,6) -> (n,h,6)", gen={"x": normal(3.0)})
def _(rng):
    return Case(None, None, SM_X, [("y", F32, ("n", "h", 6))],
                [node("LogSoftmax", ["x"], ["y"], name="logsoftmax", axis=-1)], NH_RUNS)


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
# Building, checking and writing
# --------------------------------------------------------------------------


def value_info(name, elem_type, dims):
    # A str dim becomes a dim_param, an int a dim_value, None an unnamed dim.
    return helper.make_tensor_value_info(name, elem_type, list(dims))


def build_model(name, c):
    graph = helper.make_graph(
        c.nodes, name,
        [value_info(*i) for i in c.inputs],
        [value_info(*o) for o in c.outputs],
        initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in c.inits.items()],
    )
    model = helper.make_model(graph, producer_name="strata-export_op_tests",
                              opset_imports=[helper.make_opsetid("", c.opset)])
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model, full_check=True)
    return model


def describe(values):
    lines = []
    for name, elem_type, dims in values:
        text = ",".join("?" if d is None else str(d) for d in dims)
        lines.append(f"{name} {DTYPE_NAMES[elem_type]} {text}")
    return lines


def write_lines(path, lines):
    with open(path, "w") as f:
        f.write("".join(line + "\n" for line in lines))


def make_inputs(c, rng, bindings):
    arrays = []
    for name, elem_type, dims in c.inputs:
        shape = tuple(bindings[d] if isinstance(d, str) else d for d in dims)
        gen = c.gen.get(name, normal())
        a = np.require(gen(rng, shape), requirements="C")
        assert a.dtype == NP_OF[elem_type], (c.name, name, a.dtype)
        arrays.append(a)
    return arrays


def check_output_shapes(c, bindings, outputs, k):
    for (name, elem_type, dims), a in zip(c.outputs, outputs):
        assert a.dtype == NP_OF[elem_type], (c.name, k, name, a.dtype)
        assert a.ndim == len(dims), (c.name, k, name, a.shape, dims)
        for d, s in zip(dims, a.shape):
            want = bindings[d] if isinstance(d, str) else d
            assert want is None or want == s, (c.name, k, name, a.shape, dims, bindings)


def reference_mismatch(model, feeds, ref):
    """Compares onnxruntime's outputs with onnx.reference; returns a message or None."""
    try:
        from onnx.reference import ReferenceEvaluator
        got = ReferenceEvaluator(model).run(None, feeds)
    except Exception as e:  # an op the reference evaluator lacks
        return f"onnx.reference failed: {type(e).__name__}: {e}"
    for i, (g, r) in enumerate(zip(got, ref)):
        g = np.asarray(g)
        if g.shape != r.shape or g.dtype != r.dtype:
            return f"output {i}: onnx.reference gives {g.dtype}{list(g.shape)}, onnxruntime {r.dtype}{list(r.shape)}"
        if not np.allclose(g, r, rtol=1e-4, atol=1e-5, equal_nan=True):
            return f"output {i}: onnx.reference and onnxruntime differ (max abs diff {np.max(np.abs(g.astype(np.float64) - r)):.3g})"
    return None


def export_case(name, desc, kw, build, out_dir, notes):
    rng = rng_for(name)
    c = build(rng)
    c.name, c.desc = name, desc
    c.opset = kw.get("opset", 17)
    c.gen = {**c.gen, **kw.get("gen", {})}

    model = build_model(name, c)
    ops = sorted({n.op_type for n in model.graph.node})
    bad = sorted(set(ops) - SUPPORTED_OPS)
    if bad:
        sys.exit(f"error: {name} uses ops Strata's importer does not list: {bad}")

    folder = os.path.join(out_dir, name)
    if os.path.isdir(folder):
        shutil.rmtree(folder)
    os.makedirs(folder)
    path = os.path.join(folder, "model.onnx")
    onnx.save(model, path)
    write_lines(os.path.join(folder, "case.txt"), [desc])
    write_lines(os.path.join(folder, "inputs.txt"), describe(c.inputs))
    write_lines(os.path.join(folder, "outputs.txt"), describe(c.outputs))
    write_lines(os.path.join(folder, "ops.txt"), ops)

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    in_names = [i[0] for i in c.inputs]
    out_names = [o[0] for o in c.outputs]

    shapes = []
    for k, bindings in enumerate(c.runs):
        inputs = make_inputs(c, rng, bindings)
        feeds = dict(zip(in_names, inputs))
        ref = session.run(out_names, feeds)
        check_output_shapes(c, bindings, ref, k)
        msg = reference_mismatch(model, feeds, ref)
        if msg:
            notes.append(f"{name} run_{k}: {msg}")
        run_dir = os.path.join(folder, f"run_{k}")
        os.makedirs(run_dir)
        for i, a in enumerate(inputs):
            np.save(os.path.join(run_dir, f"in{i}.npy"), a)
        for i, a in enumerate(ref):
            np.save(os.path.join(run_dir, f"out{i}.npy"), np.require(a, requirements="C"))
        fmt = lambda arrays: " ".join("x".join(map(str, a.shape)) or "()" for a in arrays)
        shapes.append(f"{fmt(inputs)} -> {fmt(ref)}")
    print(f"{name} (opset {c.opset}; {' '.join(ops)}): " + " | ".join(shapes))


def folder_size(path):
    total = 0
    for dirpath, _, files in os.walk(path):
        total += sum(os.path.getsize(os.path.join(dirpath, f)) for f in files)
    return total


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
