"""ONNX op fixtures: MatMul/Gemm, convolution, pooling, normalization, softmax (see export_op_tests.py)."""
import numpy as np
from onnx import helper

from op_case_lib import *  # noqa: F401,F403  (Case, case, generators, dtypes, node)

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
# Conv 1-D (run as a 2-D convolution of unit height) and grouped 2-D Conv
# --------------------------------------------------------------------------

SEQ_X = [("x", F32, ("n", 4, "t"))]
SEQ_RUNS = [{"n": 1, "t": 9}, {"n": 2, "t": 16}, {"n": 3, "t": 11}]


@case("conv1d_pads_stride_dilation", "Conv 1-D W (6,4,3) + bias, pads [2,1], strides [2], dilations [2]: "
      "x (n,4,t) -> (n,6,?)", opset=13)
def _(rng):
    return Case(None, None, SEQ_X, [("y", F32, ("n", 6, None))],
                [node("Conv", ["x", "W", "B"], ["y"], name="conv1d", kernel_shape=[3], pads=[2, 1],
                      strides=[2], dilations=[2])],
                SEQ_RUNS, inits={"W": w_normal(rng, (6, 4, 3)), "B": w_normal(rng, (6,))})


@case("conv1d_depthwise", "Conv 1-D group=4 (depthwise) W (4,1,5), pads [2,2], no bias: x (n,4,t) -> (n,4,t)",
      opset=18)
def _(rng):
    return Case(None, None, SEQ_X, [("y", F32, ("n", 4, "t"))],
                [node("Conv", ["x", "W"], ["y"], name="conv1d_dw", group=4, pads=[2, 2])],
                SEQ_RUNS, inits={"W": w_normal(rng, (4, 1, 5))})


@case("conv_grouped", "Conv group=2 W (4,2,3,3) + bias, pads [1,1,1,1]: x (n,4,h,w) -> (n,4,h,w)")
def _(rng):
    return Case(None, None, [("x", F32, ("n", 4, "h", "w"))], [("y", F32, ("n", 4, "h", "w"))],
                [node("Conv", ["x", "W", "B"], ["y"], name="conv_grouped", group=2, pads=[1, 1, 1, 1])],
                NHW_RUNS, inits={"W": w_normal(rng, (4, 2, 3, 3)), "B": w_normal(rng, (4,))})


# --------------------------------------------------------------------------
# Einsum, batched MatMul broadcasting, Softmax on an inner axis
# --------------------------------------------------------------------------

SUPPORTED_OPS.update(["Einsum"])

for _name, _eq, _a, _b, _out, _runs, _w in [
    ("einsum_attention_scores", "bhid,bhjd->bhij", ("n", 2, "s", 4), ("n", 2, "s", 4), ("n", 2, "s", "s"),
     [{"n": 1, "s": 3}, {"n": 2, "s": 5}, {"n": 3, "s": 1}], None),
    ("einsum_attention_values", "bhij,bhjd->bhid", ("n", 2, "s", "s"), ("n", 2, "s", 4), ("n", 2, "s", 4),
     [{"n": 1, "s": 3}, {"n": 2, "s": 5}, {"n": 3, "s": 1}], None),
    ("einsum_linear", "bid,de->bie", ("n", "s", 4), None, ("n", "s", 3),
     [{"n": 1, "s": 3}, {"n": 2, "s": 5}, {"n": 3, "s": 1}], (4, 3)),
    ("einsum_outer", "i,j->ij", ("n",), None, ("n", 3), N_RUNS, (3,)),
    ("einsum_transposed_out", "bij,bjk->bki", ("n", "s", 4), ("n", 4, 2), ("n", 2, "s"),
     [{"n": 1, "s": 3}, {"n": 2, "s": 5}, {"n": 3, "s": 1}], None),
]:
    def _make(rng, eq=_eq, a=_a, b=_b, out=_out, runs=_runs, w=_w):
        inputs = [("x", F32, a)] + ([("y", F32, b)] if b is not None else [])
        inits = {"y": w_normal(rng, w)} if w is not None else {}
        return Case(None, None, inputs, [("z", F32, out)],
                    [node("Einsum", ["x", "y"], ["z"], name="einsum", equation=eq)], runs, inits=inits)

    case(_name, f"Einsum '{_eq}'", opset=13)(_make)


@case("matmul_broadcast_batch", "MatMul broadcasting batch dims: x (1,2,s,4) @ y (n,1,4,s) -> (n,2,s,s)")
def _(rng):
    return Case(None, None, [("x", F32, (1, 2, "s", 4)), ("y", F32, ("n", 1, 4, "s"))],
                [("z", F32, ("n", 2, "s", "s"))], [node("MatMul", ["x", "y"], ["z"], name="matmul")],
                [{"n": 1, "s": 3}, {"n": 2, "s": 5}, {"n": 3, "s": 1}])


@case("matmul_batched_by_matrix", "MatMul of a batched (n,2,s,4) by a matrix (4,3) -> (n,2,s,3)")
def _(rng):
    return Case(None, None, [("x", F32, ("n", 2, "s", 4))], [("z", F32, ("n", 2, "s", 3))],
                [node("MatMul", ["x", "w"], ["z"], name="matmul")],
                [{"n": 1, "s": 3}, {"n": 2, "s": 5}, {"n": 3, "s": 1}], inits={"w": w_normal(rng, (4, 3))})


@case("softmax_axis1_rank4", "Softmax axis=1 on x (n,3,h,w) (opset 13: one axis, not flattened) -> (n,3,h,w)",
      opset=13)
def _(rng):
    return Case(None, None, IMG_X, [("y", F32, ("n", 3, "h", "w"))],
                [node("Softmax", ["x"], ["y"], name="softmax", axis=1)], NHW_RUNS)


# --------------------------------------------------------------------------
# InstanceNormalization, GroupNormalization
# --------------------------------------------------------------------------

SUPPORTED_OPS.update("InstanceNormalization GroupNormalization".split())


@case("instance_norm_4d", "InstanceNormalization epsilon=1e-3 with scale/bias (4,): x (n,4,h,w) -> (n,4,h,w)",
      opset=13)
def _(rng):
    return Case(None, None, [("x", F32, ("n", 4, "h", "w"))], [("y", F32, ("n", 4, "h", "w"))],
                [node("InstanceNormalization", ["x", "s", "b"], ["y"], name="instance_norm", epsilon=1e-3)],
                NHW_RUNS, inits={"s": w_normal(rng, (4,)) + 1, "b": w_normal(rng, (4,))})


@case("instance_norm_3d", "InstanceNormalization over a sequence: x (n,4,t) -> (n,4,t)", opset=13)
def _(rng):
    return Case(None, None, [("x", F32, ("n", 4, "t"))], [("y", F32, ("n", 4, "t"))],
                [node("InstanceNormalization", ["x", "s", "b"], ["y"], name="instance_norm")],
                [{"n": 1, "t": 5}, {"n": 2, "t": 9}, {"n": 3, "t": 2}],
                inits={"s": w_normal(rng, (4,)) + 1, "b": w_normal(rng, (4,))})


@case("group_norm_opset21", "GroupNormalization num_groups=2, scale/bias per channel (6,) (opset 21): "
      "x (n,6,h,w) -> (n,6,h,w)", opset=21)
def _(rng):
    return Case(None, None, [("x", F32, ("n", 6, "h", "w"))], [("y", F32, ("n", 6, "h", "w"))],
                [node("GroupNormalization", ["x", "s", "b"], ["y"], name="group_norm", num_groups=2)],
                NHW_RUNS, inits={"s": w_normal(rng, (6,)) + 1, "b": w_normal(rng, (6,))})



# --------------------------------------------------------------------------
# ConvTranspose
# --------------------------------------------------------------------------

SUPPORTED_OPS.update(["ConvTranspose"])


@case("conv_transpose_upsample", "ConvTranspose W (3,4,3,3) + bias, strides [2,2], pads [1,1,1,1], "
      "output_padding [1,1] (a 2x upsampler): x (n,3,h,w) -> (n,4,2h,2w)")
def _(rng):
    return Case(None, None, IMG_X, [("y", F32, ("n", 4, None, None))],
                [node("ConvTranspose", ["x", "W", "B"], ["y"], name="deconv", kernel_shape=[3, 3], strides=[2, 2],
                      pads=[1, 1, 1, 1], output_padding=[1, 1])],
                NHW_RUNS, inits={"W": w_normal(rng, (3, 4, 3, 3)), "B": w_normal(rng, (4,))})


@case("conv_transpose_grouped_dilated", "ConvTranspose group=2 W (4,1,2,3), dilations [2,1], strides [1,3], "
      "pads [0,1,1,0], no bias: x (n,4,h,w) -> (n,2,?,?)")
def _(rng):
    return Case(None, None, [("x", F32, ("n", 4, "h", "w"))], [("y", F32, ("n", 2, None, None))],
                [node("ConvTranspose", ["x", "W"], ["y"], name="deconv", group=2, dilations=[2, 1], strides=[1, 3],
                      pads=[0, 1, 1, 0])],
                NHW_RUNS, inits={"W": w_normal(rng, (4, 1, 2, 3))})


@case("conv_transpose_1d", "ConvTranspose 1-D W (4,3,4) + bias, strides [2], pads [1,1]: x (n,4,t) -> (n,3,2t)",
      opset=18)
def _(rng):
    return Case(None, None, [("x", F32, ("n", 4, "t"))], [("y", F32, ("n", 3, None))],
                [node("ConvTranspose", ["x", "W", "B"], ["y"], name="deconv1d", strides=[2], pads=[1, 1])],
                [{"n": 1, "t": 9}, {"n": 2, "t": 16}, {"n": 3, "t": 11}],
                inits={"W": w_normal(rng, (4, 3, 4)), "B": w_normal(rng, (3,))})


# DecomposeConvTranspose's corners: one stride-1 convolution over the phases
# plus depth_to_space, blocked (channels per phase divisible by 4, 8, 16) or
# plain; kernels the stride divides and kernels it does not; output_padding
# past the last phase row; pads of a whole stride or more; odd sizes.
for _name, _cin, _cout, _k, _attrs in [
    ("conv_transpose_k2s2_unet", 16, 16, (2, 2), {"strides": [2, 2]}),
    ("conv_transpose_k4s2p1_c8", 12, 8, (4, 4), {"strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ("conv_transpose_k3s3_outpad2", 16, 4, (3, 3), {"strides": [3, 3], "output_padding": [2, 2]}),
    ("conv_transpose_k5s2_bigpads", 8, 16, (5, 5), {"strides": [2, 2], "pads": [3, 2, 4, 1],
                                                     "output_padding": [1, 0]}),
    ("conv_transpose_k3x2_s2x1", 6, 12, (3, 2), {"strides": [2, 1], "pads": [0, 1, 1, 0]}),
    ("conv_transpose_k2s2_one_channel", 16, 1, (2, 2), {"strides": [2, 2]}),
]:
    def _make(rng, cin=_cin, cout=_cout, k=_k, attrs=_attrs):
        return Case(None, None, [("x", F32, ("n", cin, "h", "w"))], [("y", F32, ("n", cout, None, None))],
                    [node("ConvTranspose", ["x", "W", "B"], ["y"], name="deconv", **attrs)],
                    [{"n": 1, "h": 3, "w": 5}, {"n": 2, "h": 5, "w": 4}, {"n": 1, "h": 7, "w": 6}],
                    inits={"W": w_normal(rng, (cin, cout) + k), "B": w_normal(rng, (cout,))})
    case(_name, f"ConvTranspose W ({_cin},{_cout},{_k[0]},{_k[1]}) + bias, {_attrs}: x (n,{_cin},h,w)")(_make)


# --------------------------------------------------------------------------
# Resize (the forms F.interpolate exports)
# --------------------------------------------------------------------------

SUPPORTED_OPS.update(["Resize"])

for _name, _attrs, _scales in [
    ("resize_nearest_scale2", {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
                               "nearest_mode": "floor"}, [1, 1, 2, 2]),
    ("resize_linear_half_pixel", {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"},
     [1, 1, 2, 1.5]),
    ("resize_linear_align_corners", {"mode": "linear", "coordinate_transformation_mode": "align_corners"},
     [1, 1, 2, 2]),
    ("resize_nearest_half_pixel_downsample", {"mode": "nearest", "coordinate_transformation_mode": "half_pixel",
                                              "nearest_mode": "round_prefer_ceil"}, [1, 1, 0.5, 0.5]),
]:
    def _make(rng, attrs=_attrs, scales=_scales):
        return Case(None, None, IMG_X, [("y", F32, ("n", 3, None, None))],
                    [node("Resize", ["x", "", "scales"], ["y"], name="resize", **attrs)], IMG_RUNS,
                    inits={"scales": f32(scales)})

    _text = " ".join(f"{k}={v}" for k, v in _attrs.items())
    case(_name, f"Resize {_text} scales={_scales}: x (n,3,h,w)", opset=13)(_make)


@case("resize_sizes_from_shape", "Resize linear half_pixel to sizes [n, 3, 2h, w + 3] computed from Shape "
      "(opset 18): x (n,3,h,w) -> (n,3,2h,w+3)", opset=18)
def _(rng):
    return Case(None, None, IMG_X, [("y", F32, ("n", 3, None, None))], [
        node("Shape", ["x"], ["shape"], name="shape"),
        node("Mul", ["shape", "factor"], ["scaled"], name="mul"),
        node("Add", ["scaled", "extra"], ["sizes"], name="add"),
        node("Resize", ["x", "", "", "sizes"], ["y"], name="resize", mode="linear"),
    ], IMG_RUNS, inits={"factor": i64([1, 1, 2, 1]), "extra": i64([0, 0, 0, 3])})
