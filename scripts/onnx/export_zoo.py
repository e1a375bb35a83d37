#!/usr/bin/env python3
"""Exports Strata's ONNX model zoo and its reference fixtures.

For each model of the zoo this writes tests/fixtures/onnx/<model>/. The zoo has
Strata's own small models (mlp, cnn, transformer) and public architectures built
from the libraries deployers use, with random weights made here (nothing is
downloaded): torchvision's ResNet BasicBlock and MobileNetV3-Small, Hugging Face
transformers' ViT, BERT and GPT-2 (small configs), and a Conv1d keyword spotter.

  model.onnx            the PyTorch module exported with dynamic axes, by the
                        classic TorchScript exporter (torch.onnx.export(...,
                        dynamo=False), opset --opset) or, for models whose spec
                        says exporter="dynamo", by PyTorch's default exporter
                        (dynamo=True, opset 18+; its external weights folded
                        back into the one file); checked with onnx.checker
  run_<k>/in<i>.npy     the inputs of run k, in graph-input order
  run_<k>/out<i>.npy    onnxruntime's outputs of run k, in graph-output order
  inputs.txt            one line per graph input:  <name> <dtype> <d0,d1,...>
  outputs.txt           the same for the graph outputs
  ops.txt               the op types the graph uses, one per line, sorted

Each run uses another shape of the dynamic axes (the first has a batch of 1).
The reference outputs come from onnxruntime (CPUExecutionProvider) running the
exported file; PyTorch's own outputs are checked against them too
(rtol=1e-4, atol=1e-5), so every fixture is checked twice.

Run from the repository root:

    python3 scripts/onnx/export_zoo.py [--opset 17] [--out-dir DIR] [--models mlp,cnn]

Everything is seeded, so the output is the same on every run with the same
torch/onnx/onnxruntime versions. The fixtures are committed: Strata's tests
never need Python.
"""
import argparse
import shutil
import tempfile
import inspect
import math
import os
import shutil
import sys
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_OUT = os.path.join(ROOT, "tests", "fixtures", "onnx")

# The ONNX op types Strata's importer is meant to handle. The script fails if an
# exported graph uses any other op.
ALLOWED_OPS = set(
    """Add Sub Mul Div Pow Sqrt Erf Exp Log Tanh Sigmoid Relu LeakyRelu Gelu Neg Abs
    Clip Cast Where Equal Less Greater MatMul Gemm Conv MaxPool AveragePool
    GlobalAveragePool BatchNormalization LayerNormalization Softmax LogSoftmax
    ReduceMean ReduceSum ReduceMax Reshape Transpose Flatten Concat Split Slice
    Gather Unsqueeze Squeeze Expand Shape Constant ConstantOfShape Identity Dropout
    Range HardSigmoid HardSwish ReduceMean GreaterOrEqual IsNaN And Max Mod Not LessOrEqual CumSum
    GatherND GatherElements""".split()
)

ONNX_DTYPE_NAMES = {
    onnx.TensorProto.FLOAT: "float32",
    onnx.TensorProto.DOUBLE: "float64",
    onnx.TensorProto.FLOAT16: "float16",
    onnx.TensorProto.INT64: "int64",
    onnx.TensorProto.INT32: "int32",
    onnx.TensorProto.INT8: "int8",
    onnx.TensorProto.UINT8: "uint8",
    onnx.TensorProto.BOOL: "bool",
}


# --------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------


class MLP(nn.Module):
    """x (batch, 64) -> Linear -> GELU -> Dropout -> Linear -> ReLU -> Linear -> Softmax."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 128)
        self.act1 = nn.GELU()
        self.drop = nn.Dropout(0.1)
        self.fc2 = nn.Linear(128, 32)
        self.act2 = nn.ReLU()
        self.fc3 = nn.Linear(32, 10)

    def forward(self, x):
        x = self.drop(self.act1(self.fc1(x)))
        x = self.act2(self.fc2(x))
        return torch.softmax(self.fc3(x), dim=-1)


class ResidualBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        y = self.conv2(F.relu(self.conv1(x)))
        return F.relu(x + y)


class CNN(nn.Module):
    """image (batch, 3, h, w) -> conv/bn/relu/maxpool -> residual block -> avgpool
    -> 1x1 conv -> global average pool -> flatten -> linear."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.block = ResidualBlock(8)
        self.avg = nn.AvgPool2d(2)
        self.proj = nn.Conv2d(8, 16, 1)
        self.fc = nn.Linear(16, 10)

    def forward(self, image):
        x = self.pool(F.relu(self.bn(self.conv(image))))
        x = self.avg(self.block(x))
        x = F.adaptive_avg_pool2d(self.proj(x), 1)
        return self.fc(torch.flatten(x, 1))


class MultiHeadAttention(nn.Module):
    """Self-attention written out with Linear q/k/v/out, reshape, transpose,
    matmul and softmax, so that the export uses only plain ONNX ops.

    nn.TransformerEncoderLayer is not used: its nn.MultiheadAttention exports
    through aten::scaled_dot_product_attention and aten::unflatten, which
    (torch 2.15, TorchScript exporter) gives a Mod node at opset 17, plus
    Slice/Squeeze/Sqrt shape arithmetic, and does not export at all at
    opset 13 (SDPA needs opset 14). Pass builtin_layer=True to Transformer to
    see that graph."""

    def __init__(self, d_model, nhead, dropout):
        super().__init__()
        assert d_model % nhead == 0
        self.nhead = nhead
        self.head_dim = d_model // nhead
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)
        self.v = nn.Linear(d_model, d_model)
        self.out = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)
        self.scale = 1.0 / math.sqrt(self.head_dim)

    def _heads(self, t):
        # (batch, seq, d_model) -> (batch, nhead, seq, head_dim); the -1 keeps
        # batch and seq dynamic without reading the input's shape.
        return t.reshape(t.shape[0], -1, self.nhead, self.head_dim).transpose(1, 2)

    def forward(self, x):
        q = self._heads(self.q(x))
        k = self._heads(self.k(x))
        v = self._heads(self.v(x))
        scores = torch.matmul(q, k.transpose(-2, -1)) * self.scale
        weights = self.drop(torch.softmax(scores, dim=-1))
        ctx = torch.matmul(weights, v)  # (batch, nhead, seq, head_dim)
        ctx = ctx.transpose(1, 2).reshape(x.shape[0], -1, self.nhead * self.head_dim)
        return self.out(ctx)


class EncoderLayer(nn.Module):
    """The same computation as nn.TransformerEncoderLayer(d_model, nhead,
    dim_feedforward, activation="gelu", batch_first=True, norm_first=False)."""

    def __init__(self, d_model, nhead, dim_feedforward, dropout):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, nhead, dropout)
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def forward(self, x):
        x = self.norm1(x + self.dropout1(self.self_attn(x)))
        ff = self.linear2(self.dropout(F.gelu(self.linear1(x))))
        return self.norm2(x + self.dropout2(ff))


class Transformer(nn.Module):
    """tokens (batch, seq) int64 < 100 -> token + learned positional embedding
    -> one encoder layer -> LayerNorm -> Linear(32, 100)."""

    VOCAB = 100
    MAX_SEQ = 64
    D_MODEL = 32

    def __init__(self, builtin_layer):
        super().__init__()
        self.tok = nn.Embedding(self.VOCAB, self.D_MODEL)
        self.pos = nn.Embedding(self.MAX_SEQ, self.D_MODEL)
        if builtin_layer:
            self.layer = nn.TransformerEncoderLayer(
                d_model=32, nhead=4, dim_feedforward=64, activation="gelu",
                batch_first=True, dropout=0.1)
        else:
            self.layer = EncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.1)
        self.norm = nn.LayerNorm(self.D_MODEL)
        self.head = nn.Linear(self.D_MODEL, self.VOCAB)

    def forward(self, tokens):
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.tok(tokens) + self.pos(positions)  # (seq, d) broadcasts over batch
        x = self.layer(x)
        return self.head(self.norm(x))


def perturb_(module, gen):
    """Gives every LayerNorm / BatchNorm non-trivial affine parameters (and
    BatchNorm non-trivial running statistics), so they are really tested."""
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, (nn.LayerNorm, nn.BatchNorm2d)):
                m.weight.copy_(1.0 + 0.2 * torch.randn(m.weight.shape, generator=gen))
                m.bias.copy_(0.1 * torch.randn(m.bias.shape, generator=gen))
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.copy_(0.3 * torch.randn(m.running_mean.shape, generator=gen))
                m.running_var.copy_(0.5 + torch.rand(m.running_var.shape, generator=gen))


# --------------------------------------------------------------------------
# Zoo description
# --------------------------------------------------------------------------


def make_mlp():
    return MLP()


def make_cnn():
    return CNN()


def make_transformer(builtin_layer=False):
    return Transformer(builtin_layer)


# ---- public architectures: the libraries deployers use, reduced widths --------


class TinyResNet(nn.Module):
    """A ResNet of torchvision's BasicBlocks (stem, three stages of one block,
    the last two with stride 2 and a projection shortcut), at widths 8/16/32."""

    def __init__(self, widths=(8, 16, 32), classes=10):
        super().__init__()
        from torchvision.models.resnet import BasicBlock
        self.stem = nn.Sequential(nn.Conv2d(3, widths[0], 3, 1, 1, bias=False), nn.BatchNorm2d(widths[0]), nn.ReLU())
        blocks, cin = [], widths[0]
        for i, w in enumerate(widths):
            stride = 1 if i == 0 else 2
            down = None
            if stride != 1 or cin != w:
                down = nn.Sequential(nn.Conv2d(cin, w, 1, stride, bias=False), nn.BatchNorm2d(w))
            blocks.append(BasicBlock(cin, w, stride, down))
            cin = w
        self.blocks = nn.Sequential(*blocks)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, classes)

    def forward(self, image):
        return self.fc(torch.flatten(self.pool(self.blocks(self.stem(image))), 1))


def rescale_linear_(module, gen):
    """Re-draws Linear weights with unit-gain scale, so logits are O(1) (the
    libraries' own inits give tiny classifier outputs that a comparison at
    atol 1e-5 would not test)."""
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.Linear):
                m.weight.copy_(torch.randn(m.weight.shape, generator=gen) / math.sqrt(m.in_features))
                if m.bias is not None:
                    m.bias.copy_(0.1 * torch.randn(m.bias.shape, generator=gen))


def make_resnet():
    return TinyResNet()


def make_mobilenet():
    import torchvision
    model = torchvision.models.mobilenet_v3_small(width_mult=0.25, num_classes=10)
    rescale_linear_(model, torch.Generator().manual_seed(7))
    return model


class HFOutput0(nn.Module):
    """A Hugging Face model returning its first output as a plain tensor."""

    def __init__(self, model, arg_names):
        super().__init__()
        self.model, self.arg_names = model, arg_names

    def forward(self, *args):
        return self.model(**dict(zip(self.arg_names, args)), return_dict=False)[0]


def make_vit():
    from transformers import ViTConfig, ViTForImageClassification
    cfg = ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=32, num_hidden_layers=2,
                    num_attention_heads=2, intermediate_size=64, num_labels=10)
    model = ViTForImageClassification(cfg)
    rescale_linear_(model, torch.Generator().manual_seed(8))
    return HFOutput0(model, ["pixel_values"])


def make_bert():
    from transformers import BertConfig, BertModel
    cfg = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=64)
    model = BertModel(cfg, add_pooling_layer=False)
    rescale_linear_(model, torch.Generator().manual_seed(9))
    return HFOutput0(model, ["input_ids", "attention_mask"])


def make_gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=100, n_positions=64, use_cache=False)
    model = GPT2LMHeadModel(cfg)
    rescale_linear_(model, torch.Generator().manual_seed(10))
    return HFOutput0(model, ["input_ids"])


class KeywordSpotter(nn.Module):
    """A Conv1d keyword spotter over (batch, 40 mel bins, time) with a dynamic
    time axis: a strided conv, a depthwise-separable block with BatchNorm1d,
    a mean over time and a classifier over 12 keywords."""

    def __init__(self, mels=40, width=32, keywords=12):
        super().__init__()
        self.front = nn.Sequential(nn.Conv1d(mels, width, 5, padding=2), nn.BatchNorm1d(width), nn.ReLU(),
                                   nn.Conv1d(width, width, 3, stride=2, padding=1), nn.ReLU())
        self.separable = nn.Sequential(nn.Conv1d(width, width, 3, padding=2, dilation=2, groups=width),
                                       nn.Conv1d(width, width, 1), nn.BatchNorm1d(width), nn.ReLU())
        self.classifier = nn.Linear(width, keywords)

    def forward(self, features):
        h = self.front(features)
        h = h + self.separable(h)
        return self.classifier(h.mean(dim=2))


def make_kws():
    model = KeywordSpotter()
    gen = torch.Generator().manual_seed(11)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm1d):
                m.weight.copy_(1.0 + 0.2 * torch.randn(m.weight.shape, generator=gen))
                m.bias.copy_(0.1 * torch.randn(m.bias.shape, generator=gen))
                m.running_mean.copy_(0.3 * torch.randn(m.running_mean.shape, generator=gen))
                m.running_var.copy_(0.5 + torch.rand(m.running_var.shape, generator=gen))
    return model


def float_input(shape):
    return lambda rng: rng.standard_normal(shape, dtype=np.float32)


def token_input(shape, vocab=None):
    return lambda rng: rng.integers(0, vocab or Transformer.VOCAB, size=shape, dtype=np.int64)


def mask_input(shape):
    """An attention mask (int64 1/0) whose rows keep a random prefix of at least one token."""
    def gen(rng):
        keep = rng.integers(1, shape[1] + 1, size=shape[0])
        return (np.arange(shape[1])[None, :] < keep[:, None]).astype(np.int64)
    return gen


# name -> (factory, seed, input names, output names, dynamic axes, runs); each
# run is a list of input generators, one per graph input.
ZOO = {
    "mlp": dict(
        make=make_mlp,
        seed=1001,
        inputs=["x"],
        outputs=["probs"],
        dynamic_axes={"x": {0: "batch"}, "probs": {0: "batch"}},
        runs=[[float_input((1, 64))], [float_input((3, 64))], [float_input((17, 64))]],
    ),
    "cnn": dict(
        make=make_cnn,
        seed=1002,
        inputs=["image"],
        outputs=["logits"],
        dynamic_axes={"image": {0: "batch", 2: "h", 3: "w"}, "logits": {0: "batch"}},
        # Keep BatchNormalization as a node of its own (see export()).
        keep_batchnorm=True,
        runs=[
            [float_input((1, 3, 16, 16))],
            [float_input((2, 3, 20, 28))],
            [float_input((3, 3, 32, 24))],
        ],
    ),
    "transformer": dict(
        make=make_transformer,
        seed=1003,
        inputs=["tokens"],
        outputs=["logits"],
        dynamic_axes={"tokens": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}},
        runs=[[token_input((1, 5))], [token_input((2, 9))], [token_input((3, 16))]],
    ),
    # Public architectures (issue 15): torchvision and transformers modules with
    # random weights, some through each PyTorch exporter.
    "resnet_basicblock": dict(
        make=make_resnet,
        seed=1101,
        inputs=["image"],
        outputs=["logits"],
        dynamic_axes={"image": {0: "batch", 2: "h", 3: "w"}, "logits": {0: "batch"}},
        keep_batchnorm=True,
        runs=[[float_input((1, 3, 16, 16))], [float_input((2, 3, 20, 28))], [float_input((3, 3, 33, 24))]],
    ),
    "mobilenet_v3_small": dict(
        make=make_mobilenet,
        seed=1102,
        exporter="dynamo",
        inputs=["image"],
        outputs=["logits"],
        dynamic_axes={"image": {0: "batch", 2: "h", 3: "w"}, "logits": {0: "batch"}},
        runs=[[float_input((1, 3, 32, 32))], [float_input((2, 3, 40, 56))], [float_input((3, 3, 64, 48))]],
    ),
    "vit": dict(
        make=make_vit,
        seed=1103,
        inputs=["pixel_values"],
        outputs=["logits"],
        dynamic_axes={"pixel_values": {0: "batch"}, "logits": {0: "batch"}},
        runs=[[float_input((1, 3, 32, 32))], [float_input((2, 3, 32, 32))], [float_input((5, 3, 32, 32))]],
    ),
    "kws_conv1d": dict(
        make=make_kws,
        seed=1106,
        inputs=["features"],
        outputs=["logits"],
        dynamic_axes={"features": {0: "batch", 2: "time"}, "logits": {0: "batch"}},
        runs=[[float_input((1, 40, 16))], [float_input((2, 40, 49))], [float_input((3, 40, 101))]],
    ),
    "bert": dict(
        make=make_bert,
        seed=1104,
        exporter="dynamo",
        inputs=["input_ids", "attention_mask"],
        outputs=["hidden"],
        dynamic_axes={"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"},
                      "hidden": {0: "batch", 1: "seq"}},
        runs=[[token_input((1, 4), 100), mask_input((1, 4))], [token_input((2, 9), 100), mask_input((2, 9))],
              [token_input((3, 16), 100), mask_input((3, 16))]],
    ),
    "gpt2": dict(
        make=make_gpt2,
        seed=1105,
        exporter="dynamo",
        inputs=["input_ids"],
        outputs=["logits"],
        dynamic_axes={"input_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}},
        runs=[[token_input((1, 4), 100)], [token_input((2, 9), 100)], [token_input((3, 16), 100)]],
    ),
}


# --------------------------------------------------------------------------
# Export and fixtures
# --------------------------------------------------------------------------


def export_dynamo(model, example_inputs, spec, path):
    """PyTorch's default exporter (torch.export, opset 18+): dynamic axes as
    torch.export.Dim objects, one per name; the weights it writes next to the
    model are folded back in, so the fixture is one file."""
    dims = {}
    def dim(name):
        return dims.setdefault(name, torch.export.Dim(name, min=1, max=4096))
    arg_names = list(inspect.signature(model.forward).parameters)
    dynamic_shapes = []
    for name in spec["inputs"]:
        dynamic_shapes.append({axis: dim(d) for axis, d in spec["dynamic_axes"].get(name, {}).items()})
    if arg_names == ["args"]:  # forward(*args)
        dynamic_shapes = (tuple(dynamic_shapes),)
    else:
        dynamic_shapes = tuple(dynamic_shapes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, tuple(example_inputs), path, dynamo=True, dynamic_shapes=dynamic_shapes,
                          input_names=spec["inputs"], output_names=spec["outputs"])
    proto = onnx.load(path)
    onnx.save(proto, path)
    data = path + ".data"
    if os.path.exists(data):
        os.remove(data)


def export(model, example_inputs, spec, opset, path):
    if spec.get("exporter") == "dynamo":
        return export_dynamo(model, example_inputs, spec, path)
    kwargs = dict(
        input_names=spec["inputs"],
        output_names=spec["outputs"],
        dynamic_axes=spec["dynamic_axes"],
        opset_version=opset,
        do_constant_folding=True,
    )
    # torch >= 2.5 has the dynamo exporter too (the default from 2.9 on): ask
    # for the classic TorchScript one.
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kwargs["dynamo"] = False
    if spec.get("keep_batchnorm"):
        # In TrainingMode.EVAL (the default) the exporter folds every
        # BatchNorm that follows a Conv into the Conv's weights. PRESERVE
        # exports the module as it is, i.e. in eval mode too (asserted), but
        # skips that fusion, so the graph has a real BatchNormalization with
        # the running statistics as initializers.
        assert not model.training
        kwargs["training"] = torch.onnx.TrainingMode.PRESERVE
    with warnings.catch_warnings():
        # "You are using the legacy TorchScript-based ONNX export" and, with
        # PRESERVE, the advice to turn constant folding off, which is only
        # meant for models exported in training mode.
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.filterwarnings("ignore", message="It is recommended that constant folding")
        torch.onnx.export(model, tuple(example_inputs), path, **kwargs)


def describe_values(values):
    lines = []
    for v in values:
        t = v.type.tensor_type
        dtype = ONNX_DTYPE_NAMES.get(t.elem_type, onnx.TensorProto.DataType.Name(t.elem_type))
        dims = []
        for d in t.shape.dim:
            if d.HasField("dim_param"):
                dims.append(d.dim_param)
            elif d.HasField("dim_value"):
                dims.append(str(d.dim_value))
            else:
                dims.append("?")
        lines.append(f"{v.name} {dtype} {','.join(dims)}")
    return lines


def op_types(graph):
    ops = set()
    for node in graph.node:
        ops.add(node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}::{node.op_type}")
        for attr in node.attribute:  # subgraphs (If/Loop/Scan), none expected
            if attr.type == onnx.AttributeProto.GRAPH:
                ops |= op_types(attr.g)
            for g in attr.graphs:
                ops |= op_types(g)
    return ops


def write_lines(path, lines):
    with open(path, "w") as f:
        f.write("".join(line + "\n" for line in lines))


def build_model(name, spec):
    torch.manual_seed(spec["seed"])
    model = spec["make"]()
    perturb_(model, torch.Generator().manual_seed(spec["seed"] + 1))
    model.eval()
    return model


def export_one(name, spec, opset, out_dir):
    folder = os.path.join(out_dir, name)
    if os.path.isdir(folder):
        shutil.rmtree(folder)
    os.makedirs(folder)

    model = build_model(name, spec)
    rng = np.random.default_rng(spec["seed"])
    runs = [[gen(rng) for gen in run] for run in spec["runs"]]

    path = os.path.join(folder, "model.onnx")
    # Export with a run that is not the batch-1 one, so no dim equals 1 by accident.
    export(model, [torch.from_numpy(a) for a in runs[-1]], spec, opset, path)
    proto = onnx.load(path)
    onnx.checker.check_model(proto, full_check=True)

    graph_inputs = [i.name for i in proto.graph.input]
    graph_outputs = [o.name for o in proto.graph.output]
    assert graph_inputs == spec["inputs"], graph_inputs
    assert graph_outputs == spec["outputs"], graph_outputs

    ops = sorted(op_types(proto.graph))
    written = next(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx"))
    print(f"{name}: opset {written} ({spec.get('exporter', 'torchscript')} exporter), ops: {' '.join(ops)}")
    bad = sorted(set(ops) - ALLOWED_OPS)
    if bad:
        sys.exit(f"error: {name} uses ops outside the allowed list: {bad}")
    write_lines(os.path.join(folder, "ops.txt"), ops)
    write_lines(os.path.join(folder, "inputs.txt"), describe_values(proto.graph.input))
    write_lines(os.path.join(folder, "outputs.txt"), describe_values(proto.graph.output))

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    session = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])

    for k, inputs in enumerate(runs):
        feeds = dict(zip(graph_inputs, inputs))
        ref = session.run(graph_outputs, feeds)
        with torch.no_grad():
            got = model(*[torch.from_numpy(a) for a in inputs])
        got = got if isinstance(got, (tuple, list)) else (got,)
        assert len(got) == len(ref)
        for i, (g, r) in enumerate(zip(got, ref)):
            g = g.numpy()
            assert g.shape == r.shape and g.dtype == r.dtype, (name, k, i, g.shape, r.shape)
            np.testing.assert_allclose(
                g, r, rtol=1e-4, atol=1e-5,
                err_msg=f"{name} run {k} output {i}: PyTorch and onnxruntime differ")

        run_dir = os.path.join(folder, f"run_{k}")
        os.makedirs(run_dir)
        for i, a in enumerate(inputs):
            np.save(os.path.join(run_dir, f"in{i}.npy"), np.ascontiguousarray(a))
        for i, a in enumerate(ref):
            np.save(os.path.join(run_dir, f"out{i}.npy"), np.ascontiguousarray(a))
        shapes = " ".join("x".join(map(str, a.shape)) for a in inputs)
        print(f"  run_{k}: inputs {shapes} -> outputs "
              + " ".join("x".join(map(str, a.shape)) for a in ref))

    size = os.path.getsize(path)
    print(f"  model.onnx: {size} bytes")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--opset", type=int, default=17, help="ONNX opset (default 17; 13 works too)")
    parser.add_argument("--out-dir", default=DEFAULT_OUT,
                        help="where to write <model>/ (default tests/fixtures/onnx)")
    parser.add_argument("--models", default=",".join(ZOO),
                        help="comma-separated models to export (default: all)")
    args = parser.parse_args()

    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, onnx {onnx.__version__}, "
          f"onnxruntime {ort.__version__}, numpy {np.__version__}")
    for name in args.models.split(","):
        if name not in ZOO:
            sys.exit(f"error: unknown model {name!r}; the zoo has {', '.join(ZOO)}")
        export_one(name, ZOO[name], args.opset, args.out_dir)
    # The transformer again at the oldest supported opset: LayerNormalization
    # appears there as ReduceMean / Sub / Pow / Sqrt / Div, which the importer
    # must also handle.
    if args.opset == 17 and "transformer" in args.models.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            export_one("transformer", ZOO["transformer"], 13, tmp)
            target = os.path.join(args.out_dir, "transformer_opset13")
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(os.path.join(tmp, "transformer"), target)


if __name__ == "__main__":
    main()
