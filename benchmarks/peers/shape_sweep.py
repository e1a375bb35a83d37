#!/usr/bin/env python3
"""Speed at shapes nobody tuned for: Strata vs ONNX Runtime and OpenVINO
across each model's dynamic range.

For each model (--models, default all: dense, small_cnn, encoder_layer,
unet, resnet18, mobilenet_v3_small, efficientnet_b0, bert, gpt2;
sweep_models.py builds them with random weights, lists their shapes and
exports them to ONNX with the swept axes dynamic, into --work-dir, default
/tmp/strata_sweep) the script times one inference at 10-12 shapes spread
over the model's range, odd and uneven sizes among them, with every engine
in the same run:

  strata        `strata compile model.onnx -o model.stx` once per model (the
                axes stay symbolic: one executable serves every shape), then
                per shape `strata run model.stx --input=@in0.npy ... --warmup W
                --repeat N --threads T`: the median latency by the CLI's own
                timer around each Invoke (loading the executable and the
                inputs is not timed).
  strata-NAME   the same with extra compile flags, one engine per
                --strata-variant NAME=FLAGS (repeatable; "{model}" in FLAGS
                becomes the model's name, for per-model files), e.g.
                --strata-variant "nofuse=--no-fuse" or
                --strata-variant "lib=--tir-library /tmp/{model}.sir".
  ort           ONNX Runtime, the same model.onnx, CPUExecutionProvider,
                ORT_ENABLE_ALL, intra_op_num_threads T, inter_op 1. Its
                output is the reference.
  openvino      OpenVINO's CPU plugin, the same model.onnx compiled once per
                model with INFERENCE_PRECISION_HINT f32 (this CPU's default is
                bf16), INFERENCE_NUM_THREADS T and PERFORMANCE_HINT LATENCY;
                the dynamic axes stay dynamic, each shape's inputs are fed as
                they are (share_inputs=True: no copy into the request).

T is --threads (default 2). ORT and OpenVINO are called from Python, one
call per sample (so their times include a few microseconds of Python), and
report the median of at least --min-calls calls and --seconds after
--warmup-seconds of warm-up (peer_util.median_ns, at least one warm-up
call); Strata's warm-up and call counts are set from one probe call so that
it gets the same time.

Checks: at every shape, before timing, each engine's output is compared with
ONNX Runtime's: max |got - ref| <= atol + rtol * max |ref| (rtol 1e-3, atol
1e-4, as e2e_peers.py). An engine that fails to compile or run, or whose
output differs, is not timed there: its cell reads FAILED or MISMATCH with a
note under the table (the exact error), the other engines go on, and the
script exits with 1 at the end.

Rounds: every shape of a model is checked first; then in each of --rounds
rounds (default 3) every shape is timed once, every engine one after the
other, each after a pause (--settle-seconds) for the previous engine's worker
threads to go idle; every number is the median over the rounds. Rounds go
over all the shapes, so a slow spell of the machine lands in one round of a
shape, not in all of them.

Output: a table (--markdown for Markdown) of the shapes of each model,
fewest elements first (elements: batch*H*W for images, batch*tokens for
sequences, rows for the dense model), with each engine's milliseconds, the
ratios ORT / Strata and OpenVINO / Strata (above 1, Strata is faster) and
"per-elem vs nbrs": Strata's time per element over the mean time per
element of the shapes just before and after it in that order, marked ! above
1.25 (a shape Strata handles worse than its neighbours). Under the table,
per model and over all shapes: the minimum and geometric mean of each
ratio, the compile times, and a line naming the machine and the packages.
--json (default <work-dir>/sweep.json) gets every number, per-round samples
included; --plots (default docs/images/sweep) gets <model>.png per model:
latency per shape and engine (log scale) above the ratios per shape.

--quick: 4 shapes per model spread over its range and 1 round, a smoke
test (dense and unet in under a minute). The default run of all nine
models takes about 25 minutes on 2 cores.

    python3 benchmarks/peers/shape_sweep.py [--models dense,unet] [--quick] [--markdown]
"""
import argparse
import datetime
import importlib.metadata
import json
import math
import multiprocessing
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sweep_models  # noqa: E402
from e2e_peers import LATENCY  # noqa: E402
from peer_util import median_ns, print_table  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RTOL, ATOL = 1e-3, 1e-4
NEIGHBOUR_FLAG = 1.25
STRATA_TIMEOUT_SECONDS = 900
PACKAGES = ["onnxruntime", "openvino", "torch", "torchvision", "transformers", "onnx", "numpy"]
PEER_TITLES = {"ort": "ORT", "openvino": "OpenVINO"}
RATIO_TICKS = [0.1, 0.2, 0.3, 0.5, 0.7, 1, 1.5, 2, 3, 5, 7, 10, 20, 30, 50]  # of the plots' ratio panel


class EngineError(Exception):
    """An engine could not compile or run the model at a shape; the message is its error text."""


# ---- Strata -------------------------------------------------------------------

def strata_engines(variants):
    """Engine name -> extra `strata compile` flags (with {model} unreplaced)."""
    engines = {"strata": ""}
    for spec in variants:
        name, sep, flags = spec.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
            sys.exit(f"error: --strata-variant wants NAME=FLAGS, got '{spec}'")
        engines["strata-" + name] = flags
    return engines


def strata_compile(strata, onnx_path, exe_path, flags):
    """Compiles onnx_path into exe_path; the seconds it took."""
    cmd = [strata, "compile", onnx_path, "-o", exe_path] + shlex.split(flags)
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=STRATA_TIMEOUT_SECONDS)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise EngineError(f"`{shlex.join(cmd)}` exited {proc.returncode}: {(proc.stderr + proc.stdout).strip()}")
    return seconds


def strata_run_ms(strata, exe, input_paths, threads, warmup, repeat, output=None):
    """The median latency of `repeat` Invokes after `warmup`, by the CLI's timer (ms)."""
    cmd = [strata, "run", exe] + [f"--input=@{p}" for p in input_paths] + [
        f"--warmup={warmup}", f"--repeat={repeat}", f"--threads={threads}"]
    if output:
        cmd.append(f"--output={output}")
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=STRATA_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        raise EngineError(f"`{shlex.join(cmd)}` took more than {STRATA_TIMEOUT_SECONDS} s") from None
    if proc.returncode != 0:
        raise EngineError(f"`{shlex.join(cmd)}` exited {proc.returncode}: {(proc.stderr + proc.stdout).strip()}")
    match = LATENCY.search(proc.stderr)
    if not match:
        raise EngineError(f"no latency line in the output of `{shlex.join(cmd)}`: {proc.stderr.strip()}")
    return float(match.group(1)) / 1e3


class StrataEngine:
    """One compiled executable, run by the CLI once per measurement."""

    def __init__(self, strata, exe, threads, work_dir):
        self.strata, self.exe, self.threads, self.work_dir = strata, exe, threads, work_dir
        self.shapes = {}  # label -> (input paths, (warm-up calls, timed calls))

    def prepare(self, label, inputs, timing):
        """Writes the shape's inputs; returns the output of one probe run, whose
        latency sets the warm-up and timed call counts."""
        shape_dir = os.path.join(self.work_dir, label)
        os.makedirs(shape_dir, exist_ok=True)
        input_paths = []
        for i, a in enumerate(inputs):
            input_paths.append(os.path.join(shape_dir, f"in{i}.npy"))
            np.save(input_paths[-1], a)
        out_path = os.path.join(shape_dir, "out.npy")
        probe_ms = strata_run_ms(self.strata, self.exe, input_paths, self.threads, 1, 1, output=out_path)
        self.shapes[label] = (input_paths, timing.call_counts(probe_ms))
        return np.load(out_path)

    def calls(self, label):
        return self.shapes[label][1]

    def time_ms(self, label, timing):
        input_paths, (warmup, repeat) = self.shapes[label]
        return strata_run_ms(self.strata, self.exe, input_paths, self.threads, warmup, repeat)


# ---- the peers ----------------------------------------------------------------

class OrtEngine:
    def __init__(self, model_path, threads):
        import onnxruntime as ort
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        self.session = ort.InferenceSession(model_path, opts, providers=["CPUExecutionProvider"])
        self.outputs = [self.session.get_outputs()[0].name]
        self.feeds = {}  # label -> the session's feeds

    def prepare(self, label, inputs, timing):
        self.feeds[label] = {i.name: a for i, a in zip(self.session.get_inputs(), inputs)}
        return self.run(label)

    def run(self, label):
        return self.session.run(self.outputs, self.feeds[label])[0]

    def time_ms(self, label, timing):
        return timing.median_ms(lambda: self.run(label))


class OpenVinoEngine:
    def __init__(self, model_path, threads):
        import openvino as ov
        config = {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY"}
        self.request = ov.Core().compile_model(model_path, "CPU", config).create_infer_request()
        self.inputs = {}  # label -> inputs

    def prepare(self, label, inputs, timing):
        self.inputs[label] = inputs
        return self.run(label)

    def run(self, label):
        return self.request.infer(self.inputs[label], share_inputs=True)[0]

    def time_ms(self, label, timing):
        return timing.median_ms(lambda: self.run(label))


class Timing:
    """How long each engine is timed at a shape, per round."""

    def __init__(self, args):
        self.warmup_seconds, self.seconds, self.min_calls = args.warmup_seconds, args.seconds, args.min_calls

    def median_ms(self, fn):
        return median_ns(fn, self.warmup_seconds, self.seconds, self.min_calls, min_warmup_calls=1) / 1e6

    def call_counts(self, call_ms):
        """Strata's (warm-up, timed) calls for the time median_ms gives a peer."""
        call_s = max(call_ms, 1e-3) / 1e3
        return (max(1, math.ceil(self.warmup_seconds / call_s)),
                max(self.min_calls, math.ceil(self.seconds / call_s)))


def check(got, ref):
    """(max |got - ref|, None) when got matches ONNX Runtime's ref, else
    (max |got - ref| or None, what differs)."""
    got = np.asarray(got)
    if got.shape != ref.shape:
        return None, f"result shape {list(got.shape)}, ONNX Runtime's {list(ref.shape)}"
    err = float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64))))
    bound = ATOL + RTOL * float(np.max(np.abs(ref)))
    if not err <= bound:  # NaN fails too
        return err, f"max |got - ONNX Runtime| {err:.3g} > {bound:.3g} (atol {ATOL:g} + rtol {RTOL:g} * max |ref|)"
    return err, None


# ---- the sweep ----------------------------------------------------------------

def open_engines(model, names, strata_exes, args, strata, work_dir):
    """Engine name -> engine object, or -> EngineError for one that failed to
    compile or load; ONNX Runtime first (the reference)."""
    model_path = os.path.join(work_dir, model + ".onnx")
    engines = {"ort": None}
    for name in names:
        try:
            if name == "ort":
                engines[name] = OrtEngine(model_path, args.threads)
            elif name == "openvino":
                engines[name] = OpenVinoEngine(model_path, args.threads)
            elif isinstance(strata_exes[name], EngineError):
                engines[name] = strata_exes[name]
            else:
                engines[name] = StrataEngine(strata, strata_exes[name], args.threads,
                                             os.path.join(work_dir, "runs", model, name))
                os.makedirs(engines[name].work_dir, exist_ok=True)
        except Exception as e:  # the peers' own exceptions, whatever their type
            engines[name] = EngineError(f"{type(e).__name__}: {e}")
    return engines


def check_shape(model, shape, engines, timing):
    """Runs every engine once at one shape and checks its output; the shape's
    record and the engines ready to be timed there."""
    spec = sweep_models.MODELS[model]
    inputs = spec.make_inputs(shape, np.random.default_rng(1))
    record = {"shape": list(np.atleast_1d(shape).tolist()), "label": sweep_models.shape_label(model, shape),
              "elements": spec.elements(shape), "engines": {}}
    ready, ref = [], None
    for name, engine in engines.items():  # ONNX Runtime first: its output is the reference
        entry = record["engines"][name] = {"status": "ok", "rounds_ms": []}
        if isinstance(engine, EngineError):
            entry.update(status="failed", error=str(engine))
            continue
        if name != "ort" and ref is None:
            entry.update(status="failed", error="no reference: ONNX Runtime failed at this shape")
            continue
        try:
            got = engine.prepare(record["label"], inputs, timing)
        except Exception as e:  # EngineError, or the peers' own
            entry.update(status="failed", error=str(e) if isinstance(e, EngineError) else f"{type(e).__name__}: {e}")
            continue
        if name == "ort":
            ref = np.asarray(got)
            record["max_abs_ref"] = float(np.max(np.abs(ref)))
        else:
            entry["max_abs_err"], problem = check(got, ref)
            if problem:
                entry.update(status="mismatch", error=problem)
                continue
        ready.append(name)
    return record, ready


def sweep_model(model, shapes, engines, args, timing):
    """Checks every shape, then times them round by round: each round times
    every shape once, so that a slow spell of the machine (a 2-vCPU VM's
    parallel loops ran 2x slower for a minute at a time) costs each shape at
    most one round, which the median drops, instead of all rounds of the
    shapes it happens to cover. The shapes' records."""
    checked = [check_shape(model, shape, engines, timing) for shape in shapes]
    for _ in range(args.rounds):
        for record, ready in checked:
            for name in ready:
                entry = record["engines"][name]
                if entry["status"] != "ok":
                    continue
                time.sleep(args.settle_seconds)
                try:
                    entry["rounds_ms"].append(engines[name].time_ms(record["label"], timing))
                except EngineError as e:
                    entry.update(status="failed", error=str(e))
    records = []
    for record, _ in checked:
        for name, entry in record["engines"].items():
            if entry["status"] == "ok":
                entry["median_ms"] = statistics.median(entry["rounds_ms"])
                if isinstance(engines[name], StrataEngine):
                    entry["warmup_calls"], entry["timed_calls"] = engines[name].calls(record["label"])
        print(f"{model} {record['label']}: " + "; ".join(
            f"{n} {e['status'].upper()}" if "median_ms" not in e else
            f"{n} {e['median_ms']:.3f} ms (rounds {', '.join(f'{x:.3f}' for x in e['rounds_ms'])})"
            for n, e in record["engines"].items()), file=sys.stderr, flush=True)
        records.append(record)
    return records


def add_neighbour_ratios(records, strata_names):
    """Each Strata engine's time per element over the mean of the nearest timed
    shapes' before and after it (records ordered by elements)."""
    for name in strata_names:
        timed = [r for r in records if "median_ms" in r["engines"][name]]
        per_element = [r["engines"][name]["median_ms"] / r["elements"] for r in timed]
        for i, r in enumerate(timed):
            around = per_element[max(0, i - 1):i] + per_element[i + 1:i + 2]
            if around:
                r["engines"][name]["per_element_vs_neighbours"] = per_element[i] / statistics.mean(around)


def ratio(record, peer, strata_name):
    """peer time / Strata time at one shape, or None where either is missing."""
    a, b = record["engines"].get(peer, {}), record["engines"][strata_name]
    return a["median_ms"] / b["median_ms"] if "median_ms" in a and "median_ms" in b else None


# ---- reporting ----------------------------------------------------------------

def format_ms(ms):
    return f"{ms:.{3 if ms < 1 else 2 if ms < 10 else 1 if ms < 100 else 0}f}"


def ratio_pairs(engine_names):
    """(peer, Strata engine) pairs the table gives ratios for."""
    strata_names = [n for n in engine_names if n.startswith("strata")]
    return [(peer, s) for s in strata_names for peer in ("ort", "openvino") if peer in engine_names]


def table_rows(results, engine_names, notes):
    """The table's rows; the error text of each FAILED or MISMATCH cell goes to notes."""
    strata_names = [n for n in engine_names if n.startswith("strata")]
    rows = []
    for result in results:
        for record in result["shapes"]:
            row = [result["model"], record["label"], str(record["elements"])]
            for name in engine_names:
                entry = record["engines"][name]
                if "median_ms" in entry:
                    row.append(format_ms(entry["median_ms"]))
                else:
                    key = (result["model"], name, entry["error"])
                    notes.setdefault(key, (len(notes) + 1, record["label"]))
                    row.append(f"{entry['status'].upper()} [{notes[key][0]}]")
            for peer, s in ratio_pairs(engine_names):
                r = ratio(record, peer, s)
                row.append(f"{r:.2f}" if r is not None else "-")
            for s in strata_names:
                r = record["engines"][s].get("per_element_vs_neighbours")
                row.append("-" if r is None else f"{r:.2f}" + (" !" if r > NEIGHBOUR_FLAG else ""))
            rows.append(row)
    return rows


def ratio_summary(records, engine_names):
    """'ORT / strata min 0.81 (1x3x176x176), geomean 1.05; ...' over records."""
    parts = []
    for peer, s in ratio_pairs(engine_names):
        values = [(ratio(r, peer, s), r) for r in records]
        values = [(v, r) for v, r in values if v is not None]
        if not values:
            parts.append(f"{PEER_TITLES[peer]} / {s}: no shape timed by both")
            continue
        low, where = min(values, key=lambda x: x[0])
        geo = math.exp(statistics.mean(math.log(v) for v, _ in values))
        label = where["label"] if "model" not in where else f"{where['model']} {where['label']}"
        parts.append(f"{PEER_TITLES[peer]} / {s} min {low:.2f} ({label}), geomean {geo:.2f} over {len(values)} shapes")
    return "; ".join(parts)


def machine(args):
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    versions = {}
    for package in PACKAGES:
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = None
    try:
        load = list(os.getloadavg())
    except OSError:
        load = None
    return {"platform": platform.platform(), "cpu": cpu, "cpus": os.cpu_count(), "threads": args.threads,
            "date": datetime.datetime.now().isoformat(timespec="seconds"), "python": platform.python_version(),
            "packages": versions, "load_average": load}


def print_report(results, engine_names, args, info, strata_version):
    notes = {}
    rows = table_rows(results, engine_names, notes)
    header = ["model", "shape", "elements"] + [f"{n} ms" for n in engine_names] + \
        [f"{PEER_TITLES[p]} / {s}" for p, s in ratio_pairs(engine_names)] + \
        [f"{s} per-elem vs nbrs" for s in engine_names if s.startswith("strata")]
    print_table(header, rows, args.markdown)
    bullet = "- " if args.markdown else ""
    print()
    if notes:
        for (model, name, error), (number, label) in notes.items():
            print(f"{bullet}[{number}] {model}, {name} (first at {label}): {error}")
        print()
    print(f"{bullet}!: Strata's time per element above {NEIGHBOUR_FLAG}x the mean of the neighbouring shapes' "
          "(by elements).")
    for result in results:
        compiles = ", ".join(f"{n} {s:.1f} s" if isinstance(s, float) else f"{n} FAILED"
                             for n, s in result["compile_seconds"].items())
        print(f"{bullet}{result['model']} ({len(result['shapes'])} shapes, elements = {result['element_unit']}): "
              f"{ratio_summary(result['shapes'], engine_names)}; compile {compiles}.")
    everything = [dict(r, model=result["model"]) for result in results for r in result["shapes"]]
    print(f"{bullet}All models: {ratio_summary(everything, engine_names)}.")
    packages = ", ".join(f"{k} {v}" for k, v in info["packages"].items() if v)
    load = ", ".join(f"{x:.2f}" for x in info["load_average"]) if info["load_average"] else "unknown"
    print(f"{bullet}{info['date']}, {info['platform']}, {info['cpu']}, {info['cpus']} CPUs, {args.threads} threads "
          f"per engine, median over {args.rounds} round{'s' if args.rounds != 1 else ''}; {strata_version}; "
          f"Python {info['python']}, {packages}; load average {load}.")


def draw_plot(result, engine_names, args, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    records = result["shapes"]
    x = list(range(len(records)))
    colors = {name: f"C{i}" for i, name in enumerate(engine_names)}
    strata_names = [n for n in engine_names if n.startswith("strata")]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 8), sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    for name in engine_names:
        missing = sum("median_ms" not in r["engines"][name] for r in records)
        label = name + (f" ({missing} shape{'s' if missing != 1 else ''} failed or mismatched)" if missing else "")
        top.plot(x, [r["engines"][name].get("median_ms", math.nan) for r in records], marker="o",
                 color=colors[name], label=label)
    top.set_yscale("log")
    top.set_ylabel("latency, ms (log)")
    top.set_title(f"{result['model']}: latency per shape, {args.threads} threads, median of {args.rounds} "
                  f"round{'s' if args.rounds != 1 else ''}")
    top.grid(True, which="both", alpha=0.3)
    top.legend(fontsize="small")
    for peer, s in ratio_pairs(engine_names):
        bottom.plot(x, [ratio(r, peer, s) or math.nan for r in records], marker="o", color=colors[peer],
                    linestyle=["-", "--", ":", "-."][strata_names.index(s) % 4],
                    label=f"{PEER_TITLES[peer]} time / {s} time")
    bottom.axhline(1.0, color="gray", linewidth=1)
    bottom.set_yscale("log")
    bottom.yaxis.set_major_locator(matplotlib.ticker.FixedLocator(RATIO_TICKS))
    bottom.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    bottom.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    bottom.set_ylabel("peer / Strata (log; above 1: Strata faster)")
    bottom.grid(True, alpha=0.3)
    bottom.legend(fontsize="small")
    bottom.set_xticks(x)
    bottom.set_xticklabels([f"{r['label']} ({r['elements']})" for r in records], rotation=40, ha="right",
                           fontsize="small")
    bottom.set_xlabel(f"input shape (elements = {result['element_unit']}), fewest elements first")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


# ---- main ---------------------------------------------------------------------

def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    models = list(sweep_models.MODELS)
    parser.add_argument("--models", default=",".join(models),
                        help="comma-separated (default all): " + ", ".join(models))
    parser.add_argument("--build-dir", default="build", help="Strata build directory (default build)")
    parser.add_argument("--work-dir", default="/tmp/strata_sweep",
                        help="exports, executables, inputs (default /tmp/strata_sweep)")
    parser.add_argument("--threads", type=int, default=2, help="threads of every engine (default 2)")
    parser.add_argument("--strata-variant", action="append", default=[], metavar="NAME=FLAGS",
                        help="also time an executable compiled with these extra strata compile flags, as engine "
                             "strata-NAME; {model} in FLAGS becomes the model name (repeatable)")
    parser.add_argument("--rounds", type=int, help="rounds, median over them (default 3; 1 with --quick)")
    parser.add_argument("--quick", action="store_true", help="4 shapes per model and 1 round: a smoke test")
    parser.add_argument("--warmup-seconds", type=float, default=0.2, help="warm-up per engine, shape, round (0.2)")
    parser.add_argument("--seconds", type=float, default=0.5, help="timed calls per engine, shape, round (0.5 s)")
    parser.add_argument("--min-calls", type=int, default=5, help="timed calls per engine, shape, round, at least (5)")
    parser.add_argument("--settle-seconds", type=float, default=0.1,
                        help="pause before each measurement, for the previous engine's threads to go idle (0.1)")
    parser.add_argument("--re-export", action="store_true", help="export the models again even if up to date")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    parser.add_argument("--json", help="every raw number goes here (default <work-dir>/sweep.json)")
    parser.add_argument("--plots", default=os.path.join(ROOT, "docs", "images", "sweep"),
                        help="directory for <model>.png (default docs/images/sweep)")
    args = parser.parse_args()
    args.models = args.models.split(",")
    for model in args.models:
        if model not in sweep_models.MODELS:
            sys.exit(f"error: unknown model '{model}'; known: {', '.join(models)}")
    if args.rounds is None:
        args.rounds = 1 if args.quick else 3
    args.json = args.json or os.path.join(args.work_dir, "sweep.json")
    return args


def main():
    args = parse_args()
    build_dir = args.build_dir if os.path.isabs(args.build_dir) else os.path.join(ROOT, args.build_dir)
    strata = os.path.join(build_dir, "bin", "strata")
    if not os.path.exists(strata):
        sys.exit(f"error: {strata} not found; build it with cmake --build {args.build_dir} --target strata")
    strata_version = subprocess.run([strata, "--version"], stdout=subprocess.PIPE, text=True).stdout.strip()
    variants = strata_engines(args.strata_variant)
    engine_names = list(variants) + ["ort", "openvino"]
    os.makedirs(args.work_dir, exist_ok=True)

    # Exported in a child process, so that this one holds no PyTorch model
    # (nor PyTorch's threads) while anything is timed.
    exporter = multiprocessing.get_context("spawn").Process(
        target=sweep_models.export_models, args=(args.models, args.work_dir, args.re_export))
    exporter.start()
    exporter.join()
    if exporter.exitcode != 0:
        sys.exit(f"error: exporting the models failed (exit {exporter.exitcode})")

    # Every executable is compiled before anything is timed.
    executables, compile_seconds = {}, {}
    for model in args.models:
        executables[model], compile_seconds[model] = {}, {}
        for name, flags in variants.items():
            exe = os.path.join(args.work_dir, f"{model}.{name}.stx")
            print(f"compiling {model} for {name} ...", file=sys.stderr, flush=True)
            try:
                compile_seconds[model][name] = strata_compile(
                    strata, os.path.join(args.work_dir, model + ".onnx"), exe, flags.replace("{model}", model))
                executables[model][name] = exe
            except (EngineError, subprocess.TimeoutExpired) as e:
                executables[model][name] = EngineError(str(e))
                compile_seconds[model][name] = None
                print(f"{model}: {name} FAILED to compile: {e}", file=sys.stderr, flush=True)

    timing = Timing(args)
    results = []
    for model in args.models:
        spec = sweep_models.MODELS[model]
        shapes = sweep_models.quick_shapes(model) if args.quick else sweep_models.by_elements(model)
        engines = open_engines(model, engine_names, executables[model], args, strata, args.work_dir)
        records = sweep_model(model, shapes, engines, args, timing)
        del engines  # frees the sessions' memory before the next model
        add_neighbour_ratios(records, list(variants))
        results.append({"model": model, "element_unit": spec.element_unit, "compile_seconds": compile_seconds[model],
                        "shapes": records})

    info = machine(args)
    print_report(results, engine_names, args, info, strata_version)
    with open(args.json, "w") as f:
        json.dump({"machine": info, "strata": strata_version, "engines": engine_names,
                   "strata_variants": variants, "rtol": RTOL, "atol": ATOL,
                   "settings": {k: getattr(args, k) for k in ("threads", "rounds", "quick", "warmup_seconds",
                                                              "seconds", "min_calls", "settle_seconds")},
                   "models": results}, f, indent=1)
    os.makedirs(args.plots, exist_ok=True)
    for result in results:
        draw_plot(result, engine_names, args, os.path.join(args.plots, result["model"] + ".png"))
    print(f"\nraw numbers: {args.json}; plots: {args.plots}/<model>.png", file=sys.stderr)
    failed = any(e["status"] != "ok" for r in results for s in r["shapes"] for e in s["engines"].values())
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
