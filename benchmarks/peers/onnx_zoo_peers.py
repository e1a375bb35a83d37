#!/usr/bin/env python3
"""End-to-end latency of the ONNX zoo: Strata vs onnxruntime and PyTorch.

For each model of the zoo (tests/fixtures/onnx/<model>; --models, default
all ten) this times one inference on the largest exported shape (run_2)
three ways, on this machine:

  Strata       <build-dir>/benchmarks/onnx_zoo_bench (Google Benchmark,
               --benchmark_format=json --benchmark_repetitions=5): the median
               of the 5 repetitions, each the mean real time of one VM
               Invoke("main") over its iterations, for the default (fused)
               build and for the --no-fuse build (Zoo/<model>/no_fuse), with
               the kernel launches and VM instructions of one call of each.
               The program checks its result against run_2/out0.npy before
               timing.
  onnxruntime  model.onnx on the CPUExecutionProvider, once with the default
               SessionOptions and once with intra_op_num_threads=2.
  PyTorch      the very modules export_zoo.py exported (same builders, same
               seeds, eval mode), under torch.inference_mode() with
               torch.set_num_threads(2); their output is checked against
               run_2/out0.npy before timing.

onnxruntime and PyTorch are called from Python, one call per sample, and
report the median of many calls after a warm-up. Every result is checked
against run_2/out0.npy (rtol 1e-4, atol 1e-5) before it is timed.

The five measurements of a model are taken one after the other, in --rounds
rounds (default 3), and each number is the median over the rounds, so that
a machine shared with other work loads every side alike.

The table gives each time in microseconds and the ratios peer / Strata:
above 1, Strata is faster.

Run from the repository root, after building the benchmark:

    cmake --build build --target onnx_zoo_bench
    python3 benchmarks/peers/onnx_zoo_peers.py [--build-dir build] [--markdown]
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_util import median_ns, print_table  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "onnx")
MODELS = ["mlp", "cnn", "transformer", "transformer_opset13", "bert", "gpt2", "vit", "resnet_basicblock",
          "mobilenet_v3_small", "kws_conv1d"]
RUN = "run_2"
RTOL, ATOL = 1e-4, 1e-5


def load_run(model):
    folder = os.path.join(FIXTURES, model, RUN)
    inputs = []
    while os.path.exists(os.path.join(folder, f"in{len(inputs)}.npy")):
        inputs.append(np.load(os.path.join(folder, f"in{len(inputs)}.npy")))
    if not inputs:
        sys.exit(f"error: no inputs in {folder}")
    return inputs, np.load(os.path.join(folder, "out0.npy"))


def check(engine, model, got, expected):
    got = np.asarray(got)
    if got.shape != expected.shape or got.dtype != expected.dtype:
        sys.exit(f"error: {engine} {model}: result {got.dtype}{list(got.shape)}, "
                 f"expected {expected.dtype}{list(expected.shape)}")
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL,
                               err_msg=f"{engine} {model}: result differs from run_2/out0.npy")


def median_us(fn, warmup_seconds, seconds, min_calls):
    """Median wall time of one call of fn(), in microseconds, after a warm-up."""
    return median_ns(fn, warmup_seconds, seconds, min_calls) / 1e3


def time_strata(binary, model, repetitions):
    """Medians (us) of Zoo/<model> and Zoo/<model>/no_fuse, their kernel and
    instruction counts, and the run's context."""
    proc = subprocess.run(
        [binary, "--benchmark_format=json", f"--benchmark_repetitions={repetitions}",
         f"--benchmark_filter=^Zoo/{model}(/no_fuse)?(/real_time)?$"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        sys.exit(f"error: {binary} failed (exit {proc.returncode}):\n{proc.stderr}")
    report = json.loads(proc.stdout)
    result = {}
    for row in report["benchmarks"]:
        # The rows are "Zoo/<model>[/no_fuse]/real_time" per repetition, then the aggregates.
        if row.get("run_type") != "aggregate" or row.get("aggregate_name") != "median":
            continue
        parts = row["run_name"].split("/")
        if parts[1] != model:
            continue
        assert row["time_unit"] == "us", row
        variant = "no_fuse" if "no_fuse" in parts else "fused"
        result[variant] = row["real_time"]
        result[variant + "_kernels"] = int(row.get("kernels", 0))
        result[variant + "_instructions"] = int(row.get("instructions", 0))
    if "fused" not in result or "no_fuse" not in result:
        sys.exit(f"error: {binary} reported no median for Zoo/{model} and Zoo/{model}/no_fuse")
    return result, report.get("context", {})


def onnxruntime_runner(model, inputs, expected, threads):
    """A checked call of model.onnx in onnxruntime (intra_op_num_threads=threads, None: default)."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    if threads is not None:
        opts.intra_op_num_threads = threads
    session = ort.InferenceSession(os.path.join(FIXTURES, model, "model.onnx"), opts,
                                   providers=["CPUExecutionProvider"])
    feeds = {i.name: a for i, a in zip(session.get_inputs(), inputs)}
    outputs = [session.get_outputs()[0].name]
    check(f"onnxruntime (threads={threads or 'default'})", model, session.run(outputs, feeds)[0], expected)
    return lambda: session.run(outputs, feeds)


def pytorch_runner(model, inputs, expected):
    """A checked call of the PyTorch module export_zoo.py exported as model.onnx."""
    import torch

    # export_zoo.py defines the modules and builds them with their fixed seeds
    # (and the perturbed norm parameters) exactly as it did for the export.
    sys.path.insert(0, os.path.join(ROOT, "scripts", "onnx"))
    import export_zoo

    # transformer_opset13 is the transformer's module exported at opset 13.
    name = "transformer" if model == "transformer_opset13" else model
    module = export_zoo.build_model(name, export_zoo.ZOO[name])
    tensors = [torch.from_numpy(a) for a in inputs]
    with torch.inference_mode():
        check("PyTorch", model, module(*tensors).numpy(), expected)
    # main() times every peer inside torch.inference_mode().
    return lambda: module(*tensors)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build-dir", default="build",
                        help="Strata build directory holding benchmarks/onnx_zoo_bench (default: build)")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    parser.add_argument("--models", default=",".join(MODELS),
                        help="comma-separated zoo models (default: all ten)")
    parser.add_argument("--repetitions", type=int, default=5,
                        help="Google Benchmark repetitions of Strata (median; default 5)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds of the five measurements per model (median over rounds; default 3)")
    parser.add_argument("--warmup-seconds", type=float, default=0.3,
                        help="warm-up per peer, model and round (default 0.3 s)")
    parser.add_argument("--seconds", type=float, default=1.0,
                        help="timed calls per peer, model and round, at least this long (default 1 s)")
    parser.add_argument("--min-calls", type=int, default=200,
                        help="timed calls per peer, model and round, at least this many (default 200)")
    args = parser.parse_args()
    build_dir = args.build_dir if os.path.isabs(args.build_dir) else os.path.join(ROOT, args.build_dir)

    import onnxruntime as ort
    import torch

    binary = os.path.join(build_dir, "benchmarks", "onnx_zoo_bench")
    if not os.path.exists(binary):
        sys.exit(f"error: {binary} not found; build it with "
                 f"cmake --build {os.path.relpath(build_dir, ROOT)} --target onnx_zoo_bench")
    torch.set_num_threads(2)

    rows = []
    context = {}
    for model in args.models.split(","):
        inputs, expected = load_run(model)
        peers = [onnxruntime_runner(model, inputs, expected, None),
                 onnxruntime_runner(model, inputs, expected, 2),
                 pytorch_runner(model, inputs, expected)]
        samples = [[] for _ in range(2 + len(peers))]
        counts = {}
        for _ in range(args.rounds):
            strata, context = time_strata(binary, model, args.repetitions)
            samples[0].append(strata["fused"])
            samples[1].append(strata["no_fuse"])
            counts = strata
            with torch.inference_mode():
                for i, run in enumerate(peers):
                    samples[2 + i].append(median_us(run, args.warmup_seconds, args.seconds, args.min_calls))
        shape = " ".join("x".join(map(str, a.shape)) for a in inputs)
        kernels = f"{counts['fused_kernels']} / {counts['no_fuse_kernels']}"
        instructions = f"{counts['fused_instructions']} / {counts['no_fuse_instructions']}"
        rows.append((model, shape, kernels, instructions, *(statistics.median(s) for s in samples)))
        print(f"{model}: " + "; ".join(f"{name} {', '.join(f'{x:.1f}' for x in s)} us" for name, s in
                                       zip(["Strata", "Strata no-fuse", "ORT", "ORT 2 thr", "PyTorch"], samples)),
              file=sys.stderr)

    header = ["model", "input", "kernels fused / no-fuse", "VM instructions fused / no-fuse", "Strata us",
              "no-fuse us", "fusion speed-up", "ORT us", "ORT 2 thr us", "PyTorch us", "ORT/Strata",
              "ORT 2 thr/Strata", "PyTorch/Strata"]
    table = [[m, s, k, ins, f"{st:.1f}", f"{nf:.1f}", f"{nf / st:.2f}", f"{o:.1f}", f"{o2:.1f}", f"{pt:.1f}",
              f"{o / st:.2f}", f"{o2 / st:.2f}", f"{pt / st:.2f}"]
             for m, s, k, ins, st, nf, o, o2, pt in rows]
    versions = (f"onnxruntime {ort.__version__}, torch {torch.__version__} "
                f"({torch.get_num_threads()} threads), numpy {np.__version__}, python {platform.python_version()}; "
                f"{context.get('num_cpus', os.cpu_count())} CPUs at {context.get('mhz_per_cpu', '?')} MHz, "
                f"load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print_table(header, table, args.markdown, right_align=True)
    print()
    print(f"Median over {args.rounds} rounds of: Strata, the median of {args.repetitions} Google Benchmark "
          f"repetitions (each a mean over its iterations); the peers, the median of >= {args.min_calls} calls and "
          f">= {args.seconds:g} s after {args.warmup_seconds:g} s of warm-up. Ratios above 1: Strata is faster.")
    print(versions)


if __name__ == "__main__":
    main()
