#!/usr/bin/env python3
"""Full-size models end to end: Strata vs ONNX Runtime and PyTorch eager.

The benchmark users will quote (issue 17). Each model is built here, with
random weights (nothing is downloaded), exported to ONNX at run time by
PyTorch's default exporter (torch.onnx.export(..., dynamo=True), batch and
sequence axes dynamic, weights folded into the one file) into --work-dir
(default /tmp/strata_e2e; an export is reused when it was made from the
same weights, --re-export redoes it), then:

  Strata       `strata compile model.onnx -o model.stx` (timed: the compile
               time column; every model is compiled before anything else
               runs, on an otherwise idle machine, while this script holds
               no model: the models are built and exported in a child
               process that has exited by then, and built again for
               PyTorch's timing afterwards, checked to have the exported
               weights; each compile starts after a sync, with no file
               write-back in flight), `strata run model.stx
               --input=@... --output=...` checked against ONNX Runtime, then `strata run --warmup W
               --repeat N`: the median latency of N calls of the VM's
               Invoke (the CLI's own timer; loading the executable and the
               inputs is not timed).
  ONNX Runtime the same model.onnx, CPUExecutionProvider, all graph
               optimizations (ORT_ENABLE_ALL), intra_op_num_threads = the
               thread count; its output is the reference.
  PyTorch      the very module that was exported, eval mode, under
               torch.inference_mode() with torch.set_num_threads(threads);
               checked against ONNX Runtime too.

Workloads (--models, default all):

  resnet18_b1   torchvision ResNet-18, 1x3x224x224 (BatchNorm statistics
                measured on random batches, see calibrate_batch_norm)
  resnet18_b8   the same executable at 8x3x224x224 (batch is symbolic)
  mobilenet_v3_small_b1   torchvision MobileNetV3-Small, 1x3x224x224
  bert_base_s128  Hugging Face BertModel (bert-base config), input_ids and
                attention_mask 1x128; output last_hidden_state
  gpt2_s64      Hugging Face GPT2LMHeadModel (gpt2 config, no KV cache),
                input_ids 1x64; output logits

Outputs are compared with ONNX Runtime's: max |got - ref| <= atol + rtol *
max |ref| (rtol 1e-3, atol 1e-4; the table shows max |got - ref| / max |ref|; f32 sums over thousands of terms in a
different order differ by more than the zoo's 1e-4). The sides run one
after the other in each of --rounds rounds (default 3), and every number is
the median over the rounds, so a machine shared with other work loads every
side alike. Ratios are peer time / Strata time: above 1, Strata is faster.
The last line gives the geometric mean of ORT / Strata over the workloads.

    cmake --build build --target strata
    python3 benchmarks/peers/e2e_peers.py [--build-dir build] [--markdown] [--threads 2]
"""
import argparse
import datetime
import math
import multiprocessing
import os
import platform
import re
import statistics
import subprocess
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_util import median_ns, print_table  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RTOL, ATOL = 1e-3, 1e-4


# ---- the models ---------------------------------------------------------------

def build_resnet18():
    import torchvision
    return torchvision.models.resnet18(weights=None)


def build_mobilenet_v3_small():
    import torchvision
    return torchvision.models.mobilenet_v3_small(weights=None)


def build_bert_base():
    import torch
    import transformers

    class Bert(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = transformers.BertModel(transformers.BertConfig(), add_pooling_layer=False)

        def forward(self, input_ids, attention_mask):
            return self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    return Bert()


def build_gpt2():
    import torch
    import transformers

    class Gpt2(torch.nn.Module):
        def __init__(self):
            super().__init__()
            config = transformers.GPT2Config()
            config.use_cache = False
            self.gpt2 = transformers.GPT2LMHeadModel(config)

        def forward(self, input_ids):
            return self.gpt2(input_ids=input_ids, use_cache=False).logits

    return Gpt2()


def image(batch):
    return lambda rng: [rng.standard_normal((batch, 3, 224, 224), dtype=np.float32)]


def tokens(seq, with_mask, vocab):
    def make(rng):
        ids = rng.integers(0, vocab, size=(1, seq), dtype=np.int64)
        return [ids, np.ones((1, seq), dtype=np.int64)] if with_mask else [ids]
    return make


# name -> (builder, input names, dynamic axes per input, example inputs for the export)
MODELS = {
    "resnet18": (build_resnet18, ["x"], {"x": {0: "batch"}}, image(1)),
    "mobilenet_v3_small": (build_mobilenet_v3_small, ["x"], {"x": {0: "batch"}}, image(1)),
    "bert_base": (build_bert_base, ["input_ids", "attention_mask"],
                  {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}},
                  tokens(128, True, 30522)),
    "gpt2": (build_gpt2, ["input_ids"], {"input_ids": {0: "batch", 1: "seq"}}, tokens(64, False, 50257)),
}

# workload -> (model, inputs)
WORKLOADS = {
    "resnet18_b1": ("resnet18", image(1)),
    "resnet18_b8": ("resnet18", image(8)),
    "mobilenet_v3_small_b1": ("mobilenet_v3_small", image(1)),
    "bert_base_s128": ("bert_base", tokens(128, True, 30522)),
    "gpt2_s64": ("gpt2", tokens(64, False, 50257)),
}


def calibrate_batch_norm(module, make_inputs):
    """Sets every BatchNorm's running statistics from a few random batches.

    With torchvision's initialization and the default statistics (mean 0,
    variance 1) the activations of a random MobileNetV3 shrink layer by layer
    into denormals (PyTorch then takes 100x longer, and the output is ~1e-15,
    which checks nothing). Statistics measured on its own activations keep
    every layer normalized, as trained weights would."""
    import torch
    norms = [m for m in module.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return
    for m in norms:
        m.reset_running_stats()
        m.momentum = None  # a cumulative average over the batches below
    module.train()
    rng = np.random.default_rng(2)
    with torch.no_grad():
        for _ in range(4):
            module(*(torch.from_numpy(a) for a in make_inputs(rng)))


def build_module(name):
    import torch
    torch.manual_seed(0)
    module = MODELS[name][0]()
    calibrate_batch_norm(module, image(8) if name in ("resnet18", "mobilenet_v3_small") else MODELS[name][3])
    module.eval()
    return module


def export(name, module, path):
    """PyTorch's default exporter, dynamic batch/sequence axes, one file."""
    import onnx
    import torch

    _, input_names, dynamic_axes, example = MODELS[name]
    args = tuple(torch.from_numpy(a) for a in example(np.random.default_rng(0)))
    dims = {}
    dynamic_shapes = tuple(
        {axis: dims.setdefault(d, torch.export.Dim(d, min=1, max=4096)) for axis, d in dynamic_axes[n].items()}
        for n in input_names)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, args, path, dynamo=True, dynamic_shapes=dynamic_shapes,
                          input_names=input_names, output_names=["y"])
    proto = onnx.load(path)  # loads the external weights the exporter wrote next to it
    onnx.save(proto, path)
    if os.path.exists(path + ".data"):
        os.remove(path + ".data")


def export_models(names, work_dir, re_export):
    """Builds each model and exports it, unless its export was made from the
    same weights (the .stamp next to it). Run in a child process, so that the
    models are gone when Strata compiles."""
    for name in names:
        model_path = os.path.join(work_dir, name + ".onnx")
        module = build_module(name)
        stamp_path = model_path + ".stamp"
        stamp = fingerprint(module)
        stale = not os.path.exists(stamp_path) or open(stamp_path).read() != stamp
        if re_export or stale or not os.path.exists(model_path):
            print(f"exporting {name} ...", file=sys.stderr)
            export(name, module, model_path)
            with open(stamp_path, "w") as f:
                f.write(stamp)
        del module


def fingerprint(module):
    """A hash of the module's parameters and buffers (and torch's version)."""
    import hashlib
    import torch
    h = hashlib.sha256(torch.__version__.encode())
    for key, tensor in module.state_dict().items():
        h.update(key.encode())
        h.update(tensor.detach().contiguous().numpy().tobytes())
    return h.hexdigest()


# ---- running ------------------------------------------------------------------

def run(cmd, what):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        sys.exit(f"error: {what} failed (exit {proc.returncode}): {' '.join(cmd)}\n{proc.stderr}{proc.stdout}")
    return proc


def check(engine, workload, got, ref):
    got = np.asarray(got)
    if got.shape != ref.shape or got.dtype != ref.dtype:
        sys.exit(f"error: {engine} {workload}: result {got.dtype}{list(got.shape)}, "
                 f"ONNX Runtime's {ref.dtype}{list(ref.shape)}")
    err = float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64))))
    bound = ATOL + RTOL * float(np.max(np.abs(ref)))
    if not err <= bound:
        sys.exit(f"error: {engine} {workload}: max |difference| from ONNX Runtime {err:.3g} > {bound:.3g}")
    return err / max(float(np.max(np.abs(ref))), 1e-30)


def median_ms(fn, warmup_seconds, seconds, min_calls):
    """Median wall time of one call of fn(), in milliseconds, after a warm-up."""
    return median_ns(fn, warmup_seconds, seconds, min_calls, min_warmup_calls=2) / 1e6


LATENCY = re.compile(r"latency over \d+ runs?(?: after \d+ warmup)?: median ([0-9.]+) us")


def strata_median_ms(strata, exe, input_paths, warmup, repeat, threads):
    cmd = [strata, "run", exe] + [f"--input=@{p}" for p in input_paths] + [
        f"--warmup={warmup}", f"--repeat={repeat}", f"--threads={threads}"]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        sys.exit(f"error: strata run failed (exit {proc.returncode}): {' '.join(cmd)}\n{proc.stderr}")
    match = LATENCY.search(proc.stderr)
    if not match:
        sys.exit(f"error: no latency line in the output of {' '.join(cmd)}:\n{proc.stderr}")
    return float(match.group(1)) / 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build-dir", default="build", help="Strata build directory (default: build)")
    parser.add_argument("--work-dir", default="/tmp/strata_e2e",
                        help="where the exported models, inputs and executables go (default /tmp/strata_e2e)")
    parser.add_argument("--models", default=",".join(WORKLOADS),
                        help="comma-separated workloads (default: all): " + ", ".join(WORKLOADS))
    parser.add_argument("--threads", type=int, default=2, help="threads of every side (default 2)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (median over rounds; default 3)")
    parser.add_argument("--warmup-seconds", type=float, default=1.0, help="warm-up per side and round (1 s)")
    parser.add_argument("--seconds", type=float, default=3.0, help="timed calls per side and round, seconds (3)")
    parser.add_argument("--min-calls", type=int, default=10, help="timed calls per side and round, at least (10)")
    parser.add_argument("--settle-seconds", type=float, default=1.0,
                        help="pause before each side's measurement, for the other sides' threads to go idle (1 s)")
    parser.add_argument("--re-export", action="store_true", help="export the models again even if present")
    parser.add_argument("--compile-flags", default="", help="extra flags for strata compile (space-separated)")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    args = parser.parse_args()
    build_dir = args.build_dir if os.path.isabs(args.build_dir) else os.path.join(ROOT, args.build_dir)
    strata = os.path.join(build_dir, "bin", "strata")
    if not os.path.exists(strata):
        sys.exit(f"error: {strata} not found; build it with cmake --build {args.build_dir} --target strata")
    workloads = args.models.split(",")
    for w in workloads:
        if w not in WORKLOADS:
            sys.exit(f"error: unknown workload '{w}'; known: {', '.join(WORKLOADS)}")
    os.makedirs(args.work_dir, exist_ok=True)

    names = list(dict.fromkeys(WORKLOADS[w][0] for w in workloads))
    # Export, then compile everything before anything is timed: compile times
    # are taken before any ONNX Runtime or PyTorch run (their spinning workers
    # slowed a compile started right after a timed run by up to 2x), and while
    # this process holds no model (holding the PyTorch models, 1.2 GB, made
    # BERT's compile 5.2-5.8 s instead of 4.0 s: a memory-heavy process pays
    # for fresh pages on this VM, more so when the machine's memory is in use).
    exporter = multiprocessing.get_context("spawn").Process(target=export_models,
                                                              args=(names, args.work_dir, args.re_export))
    exporter.start()
    exporter.join()
    if exporter.exitcode != 0:
        sys.exit(f"error: exporting the models failed (exit {exporter.exitcode})")
    compiled, compile_seconds = {}, {}
    for name in names:
        # Each compile starts with no write-back in flight (the exports', the
        # previous executable's): on this VM a 500 MB executable written while
        # the kernel still flushed earlier files took 2.4-3.2 s instead of 1.3.
        os.sync()
        time.sleep(args.settle_seconds)
        model_path = os.path.join(args.work_dir, name + ".onnx")
        exe = os.path.join(args.work_dir, name + ".stx")
        start = time.perf_counter()
        run([strata, "compile", model_path, "-o", exe] + args.compile_flags.split(), f"strata compile {name}")
        compile_seconds[name] = time.perf_counter() - start
        compiled[name] = exe

    import onnxruntime as ort
    import torch

    torch.set_num_threads(args.threads)
    modules = {}
    for name in names:
        modules[name] = build_module(name)
        # PyTorch times the very weights that were exported.
        with open(os.path.join(args.work_dir, name + ".onnx.stamp")) as f:
            if f.read() != fingerprint(modules[name]):
                sys.exit(f"error: {name} built for PyTorch's timing differs from the exported one")
    rows = []

    for workload in workloads:
        name, make_inputs = WORKLOADS[workload]
        model_path = os.path.join(args.work_dir, name + ".onnx")
        inputs = make_inputs(np.random.default_rng(1))
        input_paths = []
        for i, a in enumerate(inputs):
            input_paths.append(os.path.join(args.work_dir, f"{workload}.in{i}.npy"))
            np.save(input_paths[-1], a)

        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.intra_op_num_threads = args.threads
        session = ort.InferenceSession(model_path, opts, providers=["CPUExecutionProvider"])
        feeds = {i.name: a for i, a in zip(session.get_inputs(), inputs)}
        outputs = [session.get_outputs()[0].name]
        ref = session.run(outputs, feeds)[0]

        out_path = os.path.join(args.work_dir, f"{workload}.strata_out.npy")
        run([strata, "run", compiled[name]] + [f"--input=@{p}" for p in input_paths] + [f"--output={out_path}"],
            f"strata run {workload}")
        strata_err = check("Strata", workload, np.load(out_path), ref)
        tensors = [torch.from_numpy(a) for a in inputs]
        module = modules[name]
        with torch.inference_mode():
            torch_err = check("PyTorch", workload, module(*tensors).numpy(), ref)

        # Strata's call count per round: about the timed seconds' worth.
        probe = strata_median_ms(strata, compiled[name], input_paths, 1, 3, args.threads)
        repeat = max(args.min_calls, int(args.seconds * 1e3 / max(probe, 1e-3)))
        warmup = max(2, int(args.warmup_seconds * 1e3 / max(probe, 1e-3)))
        samples = {"strata": [], "ort": [], "torch": []}
        # Each side starts after a pause, so that the worker threads of the
        # side before it (PyTorch's OpenMP workers and ONNX Runtime's pool spin
        # for a while after a call) are idle by then.
        settle = lambda: time.sleep(args.settle_seconds)  # noqa: E731
        for _ in range(args.rounds):
            settle()
            samples["strata"].append(strata_median_ms(strata, compiled[name], input_paths, warmup, repeat,
                                                      args.threads))
            settle()
            samples["ort"].append(median_ms(lambda: session.run(outputs, feeds), args.warmup_seconds, args.seconds,
                                            args.min_calls))
            settle()
            with torch.inference_mode():
                samples["torch"].append(median_ms(lambda: module(*tensors), args.warmup_seconds, args.seconds,
                                                  args.min_calls))
        row = {k: statistics.median(v) for k, v in samples.items()}
        row.update(workload=workload, compile_s=compile_seconds[name], strata_err=strata_err, torch_err=torch_err,
                   rounds={k: v for k, v in samples.items()})
        rows.append(row)
        print(f"{workload}: strata {row['strata']:.2f} ms, ort {row['ort']:.2f} ms, torch {row['torch']:.2f} ms "
              f"(rounds: strata {', '.join(f'{x:.2f}' for x in samples['strata'])}; "
              f"ort {', '.join(f'{x:.2f}' for x in samples['ort'])}; "
              f"torch {', '.join(f'{x:.2f}' for x in samples['torch'])})", file=sys.stderr)

    header = ["workload", "Strata ms", "ONNX Runtime ms", "PyTorch ms", "ORT / Strata", "PyTorch / Strata",
              "compile s", "max err / max |out|"]
    table = [[r["workload"], f"{r['strata']:.2f}", f"{r['ort']:.2f}", f"{r['torch']:.2f}",
              f"{r['ort'] / r['strata']:.2f}", f"{r['torch'] / r['strata']:.2f}", f"{r['compile_s']:.1f}",
              f"{r['strata_err']:.2g}"] for r in rows]
    print_table(header, table, args.markdown)
    geo_ort = math.exp(statistics.mean(math.log(r["ort"] / r["strata"]) for r in rows))
    geo_torch = math.exp(statistics.mean(math.log(r["torch"] / r["strata"]) for r in rows))
    print()
    print(f"Geometric mean: ORT / Strata {geo_ort:.2f}, PyTorch / Strata {geo_torch:.2f}.")
    try:
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = "unknown"
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    print(f"{datetime.date.today()}, {cpu}, {os.cpu_count()} CPUs, {args.threads} threads per side, "
          f"median over {args.rounds} rounds; onnxruntime {ort.__version__}, torch {torch.__version__}; "
          f"load average {load}.")


if __name__ == "__main__":
    main()
