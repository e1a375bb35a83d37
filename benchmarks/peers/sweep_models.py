"""The models of shape_sweep.py: builders, the shapes of each sweep, inputs, export.

Every model is built with random weights (nothing is downloaded) after
torch.manual_seed(0), its BatchNorm statistics measured on random batches
(e2e_peers.calibrate_batch_norm), in eval mode. resnet18, mobilenet_v3_small,
bert and gpt2 are e2e_peers.py's very modules (its build_module). Exports go
to ONNX with every swept axis dynamic, traced at a middle shape of the sweep:
by the TorchScript exporter (torch.onnx.export(..., dynamo=False), opset 17),
except encoder_layer, bert and gpt2, which go through PyTorch's default
exporter as in e2e_peers.export (the TorchScript one fixes the attention's
reshapes at the traced shape, and cannot export GPT-2's masking code).

An export is checked against the PyTorch module with ONNX Runtime at the
sweep's smallest and largest shapes, so an axis the exporter fixed at the
traced shape is caught before anything is timed. It is reused while it was
made from the same weights with the same settings (a .stamp file next to it,
as in e2e_peers.py); --re-export redoes it.
"""
import contextlib
import hashlib
import os
import sys
import warnings
from typing import Callable, NamedTuple

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_peers  # noqa: E402

BERT_VOCAB, GPT2_VOCAB = 30522, 50257
# The export check against PyTorch: the same bound as the engines' checks in
# shape_sweep.py (max |ort - torch| <= atol + rtol * max |torch|).
EXPORT_RTOL, EXPORT_ATOL = 1e-3, 1e-4


class Model(NamedTuple):
    build: Callable          # () -> torch.nn.Module in eval mode, seeded, calibrated
    input_names: list
    dynamic_axes: dict       # input name -> {axis: dimension name}
    shapes: list             # the sweep: one tuple of axis sizes per shape
    make_inputs: Callable    # (shape, rng) -> list of numpy arrays, in input order
    elements: Callable       # shape -> work units (batch*H*W, batch*tokens, rows)
    element_unit: str        # what elements counts, for the table
    exporter: str            # "torchscript" or "dynamo"


# ---- the modules --------------------------------------------------------------

def seeded(builder):
    """builder() after torch.manual_seed(0), in eval mode."""
    def build():
        import torch
        torch.manual_seed(0)
        return builder().eval()
    return build


def calibrated(builder, make_inputs, calibration_shape):
    """seeded(builder), its BatchNorm statistics measured at calibration_shape first."""
    def build():
        import torch
        torch.manual_seed(0)
        module = builder()
        e2e_peers.calibrate_batch_norm(module, lambda rng: make_inputs(calibration_shape, rng))
        return module.eval()
    return build


def dense_module():
    import torch
    return torch.nn.Sequential(torch.nn.Linear(800, 500), torch.nn.ReLU(), torch.nn.Linear(500, 10))


def small_cnn_module():
    import torch
    from torch import nn

    def conv(cin, cout, stride=1):
        return nn.Conv2d(cin, cout, 3, stride=stride, padding=1)

    class SmallCnn(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(conv(3, 16), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2))
            self.block_a, self.block_b = conv(16, 16), conv(16, 16)
            self.down = nn.Sequential(conv(16, 32, stride=2), nn.ReLU())
            self.head = nn.Linear(32, 10)

        def forward(self, x):
            x = self.stem(x)
            x = torch.relu(x + self.block_b(torch.relu(self.block_a(x))))
            x = self.down(x)
            return self.head(x.mean(dim=(2, 3)))

    return SmallCnn()


def encoder_layer_module():
    import torch
    # The eval-mode fast path (aten::_transformer_encoder_layer_fwd) has no
    # ONNX export; off, the layer runs (and exports) as its plain operators.
    torch.backends.mha.set_fastpath_enabled(False)
    return torch.nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, batch_first=True)


def unet_module():
    import torch
    from torch import nn

    def conv_relu(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU())

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc1, self.down1 = conv_relu(3, 16), nn.Conv2d(16, 16, 3, stride=2, padding=1)
            self.enc2, self.down2 = conv_relu(16, 32), nn.Conv2d(32, 32, 3, stride=2, padding=1)
            self.bottleneck = conv_relu(32, 64)
            self.up2, self.dec2 = nn.ConvTranspose2d(64, 32, 2, stride=2), conv_relu(64, 32)
            self.up1, self.dec1 = nn.ConvTranspose2d(32, 16, 2, stride=2), conv_relu(32, 16)
            self.out = nn.Conv2d(16, 2, 1)

        def forward(self, x):
            skip1 = self.enc1(x)                                   # 16 x H x W
            skip2 = self.enc2(self.down1(skip1))                   # 32 x H/2 x W/2
            x = self.bottleneck(self.down2(skip2))                 # 64 x H/4 x W/4
            x = self.dec2(torch.cat([self.up2(x), skip2], dim=1))  # 32 x H/2 x W/2
            x = self.dec1(torch.cat([self.up1(x), skip1], dim=1))  # 16 x H x W
            return self.out(x)

    return UNet()


def efficientnet_b0_module():
    import torchvision
    return torchvision.models.efficientnet_b0(weights=None)


def e2e_module(name):
    """e2e_peers.py's module `name` (seeded, calibrated, eval mode)."""
    return lambda: e2e_peers.build_module(name)


# ---- inputs -------------------------------------------------------------------

def rows_input(width):
    return lambda rows, rng: [rng.standard_normal((rows, width), dtype=np.float32)]


def image_input(shape, rng):
    batch, height, width = shape
    return [rng.standard_normal((batch, 3, height, width), dtype=np.float32)]


def square_image_input(shape, rng):
    batch, side = shape
    return image_input((batch, side, side), rng)


def sequence_input(width):
    return lambda shape, rng: [rng.standard_normal((*shape, width), dtype=np.float32)]


def token_input(vocab, with_mask):
    def make(shape, rng):
        ids = rng.integers(0, vocab, size=shape, dtype=np.int64)
        return [ids, np.ones(shape, dtype=np.int64)] if with_mask else [ids]
    return make


def product(shape):
    return int(np.prod(shape))


def batch_times_square(shape):
    batch, side = shape
    return batch * side * side


IMAGE_AXES = {"x": {0: "batch", 2: "height", 3: "width"}}
BATCH_AXIS = {"x": {0: "batch"}}
# torchvision's classifiers end in adaptive average pooling: any H, W works.
SQUARE_SHAPES = [(1, 160), (1, 193), (1, 224), (1, 257), (1, 320), (2, 224), (3, 176), (4, 208), (5, 240),
                 (8, 160), (11, 224), (16, 192)]

MODELS = {
    "dense": Model(
        seeded(dense_module), ["x"], {"x": {0: "rows"}},
        [1, 3, 7, 16, 33, 47, 59, 64, 71, 97, 128, 257],
        rows_input(800), lambda rows: rows, "rows", "torchscript"),
    "small_cnn": Model(
        calibrated(small_cnn_module, image_input, (8, 64, 64)), ["x"], IMAGE_AXES,
        [(1, 32, 32), (2, 19, 19), (3, 45, 37), (5, 64, 64), (7, 73, 61), (11, 28, 28), (4, 96, 80), (8, 33, 57),
         (2, 128, 128), (1, 224, 224), (6, 50, 50), (9, 41, 29)],
        image_input, product, "batch*H*W", "torchscript"),
    "encoder_layer": Model(
        seeded(encoder_layer_module), ["x"], {"x": {0: "batch", 1: "seq"}},
        [(1, 8), (3, 51), (5, 64), (7, 107), (4, 77), (2, 128), (1, 256), (3, 33), (6, 93), (2, 200), (1, 512),
         (8, 17)],
        sequence_input(256), product, "batch*tokens", "dynamo"),
    "unet": Model(
        seeded(unet_module), ["x"], IMAGE_AXES,
        [(1, 16, 32), (1, 32, 32), (2, 24, 40), (1, 48, 64), (3, 36, 52), (1, 64, 64), (2, 60, 84), (1, 80, 160),
         (4, 28, 28), (1, 96, 96), (2, 44, 100), (1, 128, 128)],
        image_input, product, "batch*H*W", "torchscript"),
    "resnet18": Model(
        e2e_module("resnet18"), ["x"], IMAGE_AXES, SQUARE_SHAPES,
        square_image_input, batch_times_square, "batch*H*W", "torchscript"),
    "mobilenet_v3_small": Model(
        e2e_module("mobilenet_v3_small"), ["x"], IMAGE_AXES, SQUARE_SHAPES,
        square_image_input, batch_times_square, "batch*H*W", "torchscript"),
    "efficientnet_b0": Model(
        calibrated(efficientnet_b0_module, square_image_input, (8, 224)), ["x"], IMAGE_AXES,
        [(1, 160), (1, 193), (1, 224), (1, 255), (1, 288), (2, 224), (3, 176), (4, 208), (5, 240), (8, 192)],
        square_image_input, batch_times_square, "batch*H*W", "torchscript"),
    "bert": Model(
        e2e_module("bert_base"), ["input_ids", "attention_mask"],
        {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}},
        [(1, s) for s in (8, 17, 31, 64, 77, 128, 129, 200, 256, 311, 384, 512)],
        token_input(BERT_VOCAB, True), product, "batch*tokens", "dynamo"),
    "gpt2": Model(
        e2e_module("gpt2"), ["input_ids"], {"input_ids": {0: "batch", 1: "seq"}},
        [(1, s) for s in (1, 5, 16, 33, 64, 100, 128, 255, 256, 400, 700, 1024)],
        token_input(GPT2_VOCAB, False), product, "batch*tokens", "dynamo"),
}


def shape_label(model, shape):
    """The first input's shape, e.g. 3x3x45x37 (batch, channels, H, W) or 1x128."""
    inputs = MODELS[model].make_inputs(shape, np.random.default_rng(0))
    return "x".join(str(d) for d in inputs[0].shape)


def by_elements(model):
    """The model's shapes, fewest elements first."""
    spec = MODELS[model]
    return sorted(spec.shapes, key=spec.elements)


def quick_shapes(model, count=4):
    """`count` shapes spread over the sweep's range of elements (--quick)."""
    ordered = by_elements(model)
    picks = sorted({round(i * (len(ordered) - 1) / (count - 1)) for i in range(count)})
    return [ordered[i] for i in picks]


# ---- export -------------------------------------------------------------------

def export_example(model):
    """The inputs the exporters trace: the middle shape by elements of those
    with no axis of size 1 (torch.export fixes such an axis at 1), else of all."""
    spec = MODELS[model]
    ordered = by_elements(model)
    candidates = [s for s in ordered if min(np.atleast_1d(s)) > 1] or ordered
    return spec.make_inputs(candidates[len(candidates) // 2], np.random.default_rng(0))


def export_torchscript(model, module, path):
    import torch
    spec = MODELS[model]
    args = tuple(torch.from_numpy(a) for a in export_example(model))
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, args, path, dynamo=False, opset_version=17,
                          input_names=spec.input_names, output_names=["y"], dynamic_axes=spec.dynamic_axes)


def export_dynamo(model, module, path):
    """PyTorch's default exporter, as e2e_peers.export calls it: the swept axes
    as torch.export dimensions, the external weights folded into the one file."""
    import onnx
    import torch
    spec = MODELS[model]
    args = tuple(torch.from_numpy(a) for a in export_example(model))
    dims = {}
    dynamic_shapes = tuple(
        {axis: dims.setdefault(name, torch.export.Dim(name, min=1, max=4096))
         for axis, name in spec.dynamic_axes[input_name].items()}
        for input_name in spec.input_names)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, args, path, dynamo=True, dynamic_shapes=dynamic_shapes,
                          input_names=spec.input_names, output_names=["y"])
    onnx.save(onnx.load(path), path)  # loads the weights the exporter wrote next to it
    if os.path.exists(path + ".data"):
        os.remove(path + ".data")


def check_export(model, module, path):
    """ONNX Runtime on the export vs the module, at the smallest and largest shapes."""
    import onnxruntime as ort
    import torch
    spec = MODELS[model]
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    ordered = by_elements(model)
    for shape in (ordered[0], ordered[-1]):
        inputs = spec.make_inputs(shape, np.random.default_rng(1))
        with torch.no_grad():
            ref = module(*(torch.from_numpy(a) for a in inputs)).numpy()
        got = session.run(None, {i.name: a for i, a in zip(session.get_inputs(), inputs)})[0]
        if got.shape != ref.shape:
            raise RuntimeError(f"{model}: the export gives {list(got.shape)} at {shape_label(model, shape)}, "
                               f"PyTorch {list(ref.shape)}")
        err, bound = float(np.max(np.abs(got - ref))), EXPORT_ATOL + EXPORT_RTOL * float(np.max(np.abs(ref)))
        if not err <= bound:
            raise RuntimeError(f"{model}: the export differs from PyTorch at {shape_label(model, shape)}: "
                               f"max |difference| {err:.3g} > {bound:.3g}")


def export_stamp(model, module):
    """The weights' hash (e2e_peers.fingerprint: with torch's version) and the export settings."""
    spec = MODELS[model]
    example = [a.shape for a in export_example(model)]
    settings = repr((spec.exporter, spec.input_names, spec.dynamic_axes, example)).encode()
    return hashlib.sha256(e2e_peers.fingerprint(module).encode() + settings).hexdigest()


def export_models(models, work_dir, re_export):
    """Exports each model to work_dir/<model>.onnx unless an export of the same
    weights and code is there. Meant for a child process: the PyTorch modules
    are gone when it exits. The exporters' progress goes to stderr."""
    with contextlib.redirect_stdout(sys.stderr):
        for model in models:
            export_model(model, work_dir, re_export)


def export_model(model, work_dir, re_export):
    path = os.path.join(work_dir, model + ".onnx")
    module = MODELS[model].build()
    stamp = export_stamp(model, module)
    stamp_path = path + ".stamp"
    if not re_export and os.path.exists(path) and os.path.exists(stamp_path):
        with open(stamp_path) as f:
            if f.read() == stamp:
                return
    print(f"exporting {model} ...", file=sys.stderr, flush=True)
    (export_dynamo if MODELS[model].exporter == "dynamo" else export_torchscript)(model, module, path)
    check_export(model, module, path)
    with open(stamp_path, "w") as f:
        f.write(stamp)
