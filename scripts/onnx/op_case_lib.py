"""The fixture framework of export_op_tests.py: the Case description, the case
registry, input generators, and building, checking and writing one fixture.

Case definitions live in op_cases_<family>.py; each registers its cases with
@case when imported.
"""
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
# inside this list. A family module adds its new op types with SUPPORTED_OPS.update(...).
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

IMG_X = [("x", F32, ("n", 3, "h", "w"))]

node = helper.make_node

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
