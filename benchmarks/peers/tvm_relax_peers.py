#!/usr/bin/env python3
"""VM dispatch overhead and end-to-end latency: Strata's VM vs Apache TVM's Relax VM.

Two measurements, each run by both VMs on this machine:

(a) Dispatch: ONE call of a VM function main(x, a, b) that is a straight chain
    of 1000 destination-passing calls of one native function on 1-element f32
    tensors,

        f(x, a); f(a, b); f(b, a); ...; return the last output

    where f computes out[0] = in[0] + 1 (the result, x + 1000, is checked).
    The outputs a and b are allocated once by the caller, outside the timed
    calls, and passed in, so nothing is allocated inside the chain. Reported
    per call: the time of one invocation / 1000 (the entry into the VM is
    amortized over the 1000 calls; the empty-function row shows its size).
    f exists in two forms, on both sides:
      library  C++ "peer.add_one" registered in the VM's function registry:
               Strata vm::RegisterLibraryFunction (benchmarks/peers/
               vm_peer_bench.cc), called with call_packed; TVM a C++ function
               compiled here with tvm_ffi.cpp.load_inline and registered as a
               global ffi function, called with R.call_packed. Same checks on
               both sides (2 tensors, f32, 1 element).
      kernel   a tensor program (B[0] = A[0] + 1 over a 1-element loop)
               compiled by each compiler's LLVM backend and called directly as
               a destination-passing kernel (Strata @add_one(in, out); TVM a
               PrimFunc called from an impure Relax function).

(b) End to end: the ONNX zoo MLP (tests/fixtures/onnx/mlp/model.onnx) at
    batch 17 (run_2/in0.npy). TVM imports it with
    tvm.relax.frontend.onnx.from_onnx and builds it with relax.build(mod,
    "llvm") (the default pipeline); also, as an extra row, with TVM's CPU
    pipeline relax.get_default_pipeline(llvm), which adds FoldConstant,
    FuseOps and FuseTIR. Strata imports and compiles it with the default
    pipeline (vm_peer_bench, as onnx_zoo_bench), and runs it with 2 threads
    and, as an extra row, with 1 (TVM's unscheduled default kernels are
    serial loop nests). Both results are checked against run_2/out0.npy
    (rtol 1e-4, atol 1e-5) before timing.

TVM is measured with its VM executable built in "bytecode" mode (the primary
numbers: the Relax functions run by TVM's VM interpreter) and in "compiled"
mode (the Relax functions compiled to native code that calls the same
functions). It is timed from Python, the way it is used: batches of
back-to-back calls of vm["main"](*args) timed with time.perf_counter_ns, the
median of the batch means. Its own C++ timer (time_evaluator: no Python per
call) is reported next to it. TVM_NUM_THREADS=2 and STRATA_NUM_THREADS=2
unless set.

Strata is timed from C++ by <build-dir>/benchmarks/vm_peer_bench (Google
Benchmark, --benchmark_format=json): the median over its repetitions of the
mean time of one VirtualMachine::Invoke. This script builds nothing.

Every batch (a Google Benchmark repetition, a Python batch, a time_evaluator
repeat) lasts at least --batch-seconds. Every measurement runs once per round
(--rounds, default 3), the sides one after the other; each reported number is
the median over the rounds. Ratios are TVM time / Strata time: above 1, Strata
is faster. A last line gives Strata's compiled-kernel call over its library
call (the two chains of the same vm_peer_bench run, per round): at most 1, a
kernel call costs no more than a library call.

    cmake --build build --target vm_peer_bench
    python3 benchmarks/peers/tvm_relax_peers.py [--build-dir build] [--json out.json] [--markdown]
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

# Before TVM is imported: its thread pool reads this once.
os.environ.setdefault("TVM_NUM_THREADS", "2")
os.environ.setdefault("STRATA_NUM_THREADS", "2")

import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MLP_DIR = os.path.join(ROOT, "tests", "fixtures", "onnx", "mlp")
RTOL, ATOL = 1e-4, 1e-5
CHAIN_CALLS = 1000  # vm_peer_bench registers Chain/<kind>/1000 and Chain/library/0

# The TVM side's native function: the same computation and checks as AddOne
# in vm_peer_bench.cc. The TensorView parameters make the ffi::Function check
# the argument count and that both arguments are tensors.
ADD_ONE_CPP = r"""
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/dtype.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/reflection/registry.h>

namespace {

void AddOne(tvm::ffi::TensorView in, tvm::ffi::TensorView out) {
  const DLDataType f32{kDLFloat, 32, 1};
  if (in.dtype() != f32 || out.dtype() != f32 || in.numel() != 1 || out.numel() != 1) {
    TVM_FFI_THROW(ValueError) << "peer.add_one expects one-element f32 tensors";
  }
  static_cast<float*>(out.data_ptr())[0] = static_cast<const float*>(in.data_ptr())[0] + 1.0f;
}

}  // namespace

// Runs when the shared library is loaded: a global function, found by name
// when a Relax VM loads an executable that calls it.
TVM_FFI_STATIC_INIT_BLOCK() {
  tvm::ffi::reflection::GlobalDef().def("peer.add_one", AddOne);
}
"""

# Rows of the report: (key, description, unit).
ROWS = [
    ("chain_library", f"chain of {CHAIN_CALLS} C++ library calls", "ns/call"),
    ("chain_kernel", f"chain of {CHAIN_CALLS} compiled-kernel calls", "ns/call"),
    ("empty", "empty function (3 parameter checks)", "us"),
    ("mlp", "MLP 17x64, default pipelines", "us"),
    ("mlp_fused", "MLP 17x64, TVM CPU pipeline (fused)", "us"),
    ("mlp_1thread", "MLP 17x64, default pipelines, Strata 1 thread", "us"),
]
# Rows whose TVM side is another row's measurement (only Strata's side differs).
TVM_SAME_AS = {"mlp_1thread": "mlp"}


# ---------------------------------------------------------------------------- Strata


def strata_medians(binary, repetitions, min_seconds, threads, benchmark_filter=None):
    """{Google Benchmark run name: median real time in us} of one run of vm_peer_bench
    with STRATA_NUM_THREADS=threads, and the run's context: for each benchmark, the
    median over the repetitions (each at least min_seconds) of the mean time of one Invoke."""
    command = [binary, "--benchmark_format=json", f"--benchmark_repetitions={repetitions}",
               f"--benchmark_min_time={min_seconds}", "--benchmark_report_aggregates_only=true"]
    if benchmark_filter:
        command.append(f"--benchmark_filter={benchmark_filter}")
    proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=dict(os.environ, STRATA_NUM_THREADS=str(threads)))
    if proc.returncode != 0:
        sys.exit(f"error: {binary} failed (exit {proc.returncode}):\n{proc.stderr}")
    report = json.loads(proc.stdout)
    medians = {}
    for row in report["benchmarks"]:
        if row.get("run_type") == "aggregate" and row.get("aggregate_name") == "median":
            assert row["time_unit"] == "us", row
            medians[row["run_name"]] = row["real_time"]
    return medians, report.get("context", {})


def run_strata(binary, repetitions, min_seconds):
    """{row key: Strata time in the row's unit} and the benchmark context: every
    benchmark with STRATA_NUM_THREADS threads, then the MLP alone with one thread."""
    medians, context = strata_medians(binary, repetitions, min_seconds, os.environ["STRATA_NUM_THREADS"])
    one_thread, _ = strata_medians(binary, repetitions, min_seconds, 1, "^Mlp/")
    wanted = {
        "chain_library": (medians, f"Chain/library/{CHAIN_CALLS}/real_time", 1e3 / CHAIN_CALLS),  # us -> ns/call
        "chain_kernel": (medians, f"Chain/compiled_kernel/{CHAIN_CALLS}/real_time", 1e3 / CHAIN_CALLS),
        "empty": (medians, "Chain/library/0/real_time", 1.0),
        "mlp": (medians, "Mlp/batch17/real_time", 1.0),
        # Strata has one pipeline: this row compares TVM's other one with it.
        "mlp_fused": (medians, "Mlp/batch17/real_time", 1.0),
        "mlp_1thread": (one_thread, "Mlp/batch17/real_time", 1.0),
    }
    times = {}
    for key, (source, name, scale) in wanted.items():
        if name not in source:
            sys.exit(f"error: {binary} reported no median for {name} (got {sorted(source)})")
        times[key] = source[name] * scale
    return times, context


# ---------------------------------------------------------------------------- TVM


def register_tvm_add_one():
    """Compiles ADD_ONE_CPP and loads it, which registers the global function peer.add_one."""
    import tvm_ffi
    import tvm_ffi.cpp

    try:
        # tvm_ffi's default flags (-O2): with -O3 the chain measured about 72 ns
        # per call instead of 60 in bytecode mode on the machine of README.md.
        module = tvm_ffi.cpp.load_inline("strata_peer_add_one", cpp_sources=ADD_ONE_CPP)
    except Exception as error:  # a missing compiler or headers: say so rather than time something else
        sys.exit(f"error: tvm_ffi.cpp.load_inline could not build the C++ function: {error}")
    if tvm_ffi.get_global_func("peer.add_one", allow_missing=True) is None:
        sys.exit("error: loading the inline module did not register peer.add_one")
    return module


def tvm_chain_module(kind, calls):
    """An IRModule whose impure @main(x, a, b) is the chain of `calls` calls of `kind`."""
    import tvm
    from tvm import relax, te

    tensor_1 = relax.TensorType((1,), "float32")
    x, a, b = (relax.Var(name, tensor_1) for name in "xab")
    builder = relax.BlockBuilder()
    if kind == "kernel":
        # for i in range(1): B[i] = A[i] + 1, the same loop as Strata's @add_one.
        in_buf = te.placeholder((1,), "float32", name="A")
        out_buf = te.compute((1,), lambda i: in_buf[i] + tvm.tirx.const(1.0, "float32"), name="B")
        callee = builder.add_func(te.create_prim_func([in_buf, out_buf]).with_attr("global_symbol", "add_one"),
                                  "add_one")
    else:
        callee = relax.ExternFunc("peer.add_one")
    # pure=False: the calls write their outputs, and nothing may drop or reorder them.
    with builder.function("main", [x, a, b], pure=False):
        source = x
        for i in range(calls):
            out = (a, b)[i % 2]
            if kind == "kernel":
                # A PrimFunc called with explicit outputs: the destination-passing form
                # that R.call_tir lowers to, without the allocation.
                builder.emit(relax.Call(callee, [source, out]))
            else:
                builder.emit(relax.Call(callee, [source, out], ty_args=[tvm.ir.TupleType([])]))
            source = out
        builder.emit_func_output(source)
    return builder.get()


class TvmCase:
    """A TVM VM, its function main and the arguments of one call."""

    def __init__(self, vm, args):
        self.vm = vm
        self.main = vm["main"]
        self.args = args

    def __call__(self):
        return self.main(*self.args)


def tvm_chain_case(kind, calls, exec_mode):
    import tvm
    from tvm import relax

    executable = relax.build(tvm_chain_module(kind, calls), "llvm", exec_mode=exec_mode)
    vm = relax.VirtualMachine(executable, tvm.cpu())
    args = [tvm.runtime.tensor(np.zeros(1, dtype="float32")) for _ in range(3)]
    case = TvmCase(vm, args)
    result = case().numpy()
    if result.shape != (1,) or result[0] != calls:
        sys.exit(f"error: TVM chain {kind}/{calls} ({exec_mode}): result {result}, expected [{calls}.]")
    return case


def tvm_mlp_case(exec_mode, fused):
    import onnx
    import tvm
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx

    mod = from_onnx(onnx.load(os.path.join(MLP_DIR, "model.onnx")), keep_params_in_input=False)
    target = tvm.target.Target("llvm")
    pipeline = relax.get_default_pipeline(target) if fused else "default"
    executable = relax.build(mod, target, relax_pipeline=pipeline, exec_mode=exec_mode)
    vm = relax.VirtualMachine(executable, tvm.cpu())
    x = np.load(os.path.join(MLP_DIR, "run_2", "in0.npy"))
    expected = np.load(os.path.join(MLP_DIR, "run_2", "out0.npy"))
    case = TvmCase(vm, [tvm.runtime.tensor(x)])
    got = case().numpy()
    if got.shape != expected.shape or got.dtype != expected.dtype:
        sys.exit(f"error: TVM mlp: result {got.dtype}{list(got.shape)}, "
                 f"expected {expected.dtype}{list(expected.shape)}")
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL,
                               err_msg="TVM mlp: result differs from run_2/out0.npy")
    return case


def python_ns(case, warmup_seconds, seconds, batch_seconds):
    """Time of one call of case.main(*case.args) from Python, in nanoseconds.

    After the warm-up, back-to-back calls are timed in batches of at least
    batch_seconds (so the timer's own cost does not count) for at least
    `seconds`; the result is the median over the batches of each batch's mean,
    as for Strata's Google Benchmark repetitions.
    """
    main, call_args = case.main, case.args
    start = time.perf_counter()
    calls = 0
    while calls < 10 or time.perf_counter() - start < warmup_seconds:
        main(*call_args)
        calls += 1
    # Size the batch from the warm-up's rate.
    batch = max(1, int(calls / (time.perf_counter() - start) * batch_seconds))
    means = []
    deadline = time.perf_counter() + seconds
    while len(means) < 5 or time.perf_counter() < deadline:
        start = time.perf_counter_ns()
        for _ in range(batch):
            main(*call_args)
        means.append((time.perf_counter_ns() - start) / batch)
    return statistics.median(means)


def cxx_timer_ns(case, seconds, batch_seconds):
    """TVM's own C++ timer (time_evaluator, no Python per call), in nanoseconds:
    the median over repeats (each at least batch_seconds) of the mean of one call."""
    import tvm

    repeat = max(5, int(seconds / batch_seconds))
    timer = case.vm.time_evaluator("main", tvm.cpu(), number=1, repeat=repeat,
                                   min_repeat_ms=max(1, round(batch_seconds * 1e3)))
    return statistics.median(timer(*case.args).results) * 1e9


# ---------------------------------------------------------------------------- report


def format_table(header, table, markdown):
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(row) + " |" for row in table]
    else:
        widths = [max(len(h), *(len(r[i]) for r in table)) for i, h in enumerate(header)]
        lines = ["  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
                 for row in [header] + table]
    return "\n".join(lines)


def machine_description(context):
    cpu = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next(line.split(":", 1)[1].strip() for line in info if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    system = platform.system()
    try:
        with open("/etc/os-release") as release:
            system = next(line.split("=", 1)[1].strip().strip('"') for line in release
                          if line.startswith("PRETTY_NAME="))
    except (OSError, StopIteration):
        pass
    return {"cpu": cpu, "cpus": context.get("num_cpus", os.cpu_count()), "mhz_per_cpu": context.get("mhz_per_cpu"),
            "os": system, "load_average": [round(x, 2) for x in os.getloadavg()]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build-dir", default="build",
                        help="Strata build directory holding benchmarks/vm_peer_bench (default: build)")
    parser.add_argument("--json", metavar="FILE", help="also write every number (and the per-round samples) here")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every measurement (median; default 3)")
    parser.add_argument("--batch-seconds", type=float, default=0.02,
                        help="length of one timed batch of back-to-back calls: a Google Benchmark repetition "
                             "of Strata, a Python batch or time_evaluator repeat of TVM (default 0.02 s)")
    parser.add_argument("--repetitions", type=int, default=20,
                        help="Google Benchmark repetitions of Strata per round (default 20)")
    parser.add_argument("--seconds", type=float, default=0.5,
                        help="TVM: timed batches per measurement, timer and round, at least this long "
                             "(default 0.5 s)")
    parser.add_argument("--warmup-seconds", type=float, default=0.2,
                        help="TVM: warm-up per measurement and round (default 0.2 s)")
    args = parser.parse_args()
    build_dir = args.build_dir if os.path.isabs(args.build_dir) else os.path.join(ROOT, args.build_dir)
    binary = os.path.join(build_dir, "benchmarks", "vm_peer_bench")
    if not os.path.exists(binary):
        sys.exit(f"error: {binary} not found; build it with "
                 f"cmake --build {os.path.relpath(build_dir, ROOT)} --target vm_peer_bench")

    import tvm
    import tvm_ffi

    inline_module = register_tvm_add_one()  # noqa: F841 (kept alive: it holds the registered function)
    # (row key, TVM executable mode) -> checked case. The fused-pipeline MLP is
    # an extra row, built in bytecode mode only.
    cases = {}
    for mode in ("bytecode", "compiled"):
        cases["chain_library", mode] = tvm_chain_case("library", CHAIN_CALLS, mode)
        cases["chain_kernel", mode] = tvm_chain_case("kernel", CHAIN_CALLS, mode)
        cases["empty", mode] = tvm_chain_case("library", 0, mode)
        cases["mlp", mode] = tvm_mlp_case(mode, fused=False)
    cases["mlp_fused", "bytecode"] = tvm_mlp_case("bytecode", fused=True)
    calls_per_invoke = {"chain_library": CHAIN_CALLS, "chain_kernel": CHAIN_CALLS}
    ns_per_unit = {"ns/call": 1.0, "us": 1e3}

    # samples[row][column]: one value per round, in the row's unit. "_cxx" is
    # TVM's time_evaluator; the other TVM columns are timed from Python.
    columns = ["strata", "tvm_bytecode", "tvm_bytecode_cxx", "tvm_compiled", "tvm_compiled_cxx"]
    samples = {key: {c: [] for c in columns} for key, _, _ in ROWS}
    context = {}
    for round_index in range(args.rounds):
        strata, context = run_strata(binary, args.repetitions, args.batch_seconds)
        for key, _, unit in ROWS:
            samples[key]["strata"].append(strata[key])
            if key in TVM_SAME_AS:
                for column in columns[1:]:
                    if samples[TVM_SAME_AS[key]][column]:
                        samples[key][column].append(samples[TVM_SAME_AS[key]][column][-1])
                continue
            scale = calls_per_invoke.get(key, 1) * ns_per_unit[unit]
            for mode in ("bytecode", "compiled"):
                case = cases.get((key, mode))
                if case is None:
                    continue
                samples[key][f"tvm_{mode}"].append(
                    python_ns(case, args.warmup_seconds, args.seconds, args.batch_seconds) / scale)
                samples[key][f"tvm_{mode}_cxx"].append(cxx_timer_ns(case, args.seconds, args.batch_seconds) / scale)
        print(f"round {round_index + 1}: " + "; ".join(
            f"{key} " + ", ".join(f"{c} {s[-1]:.4g}" for c, s in samples[key].items() if s) for key, _, _ in ROWS),
            file=sys.stderr)

    results = []
    for key, description, unit in ROWS:
        row = {"key": key, "measurement": description, "unit": unit}
        for column, values in samples[key].items():
            if values:
                row[column] = statistics.median(values)
        for column in columns[1:]:
            if column in row:
                row[f"{column}_vs_strata"] = row[column] / row["strata"]
        results.append(row)

    def time_cell(row, column):
        if column not in row:
            return "-"
        value = row[column]
        return f"{value:.3f}" if value < 1 else f"{value:.2f}" if value < 10 else f"{value:.1f}"

    def ratio_cell(row, column):
        return f"{row[column]:.2f}" if column in row else "-"

    header = ["measurement", "unit", "Strata", "TVM bytecode", "TVM bytecode / Strata", "TVM bytecode (C++ timer)",
              "TVM compiled", "TVM compiled / Strata", "TVM compiled (C++ timer)"]
    table = [[r["measurement"], r["unit"], time_cell(r, "strata"), time_cell(r, "tvm_bytecode"),
              ratio_cell(r, "tvm_bytecode_vs_strata"), time_cell(r, "tvm_bytecode_cxx"),
              time_cell(r, "tvm_compiled"), ratio_cell(r, "tvm_compiled_vs_strata"),
              time_cell(r, "tvm_compiled_cxx")] for r in results]
    print(format_table(header, table, args.markdown))
    print()
    # Strata's own kernel call against its library call, the two chains of the
    # same vm_peer_bench run in every round (the ratio of issue 16 part 3).
    kernel_over_library = [k / l for k, l in zip(samples["chain_kernel"]["strata"], samples["chain_library"]["strata"])]
    print(f"Strata compiled-kernel call / library call: {statistics.median(kernel_over_library):.2f} "
          f"(rounds: {', '.join(f'{r:.2f}' for r in kernel_over_library)}; at most 1: a kernel call costs no more)")
    versions = {"tvm": tvm.__version__, "tvm_ffi": tvm_ffi.__version__, "numpy": np.__version__,
                "python": platform.python_version()}
    machine = machine_description(context)
    print(f"Median over {args.rounds} rounds of: Strata, the median of {args.repetitions} Google Benchmark "
          f"repetitions (C++); TVM, the median over >= {args.seconds:g} s of batches of calls from Python after "
          f"{args.warmup_seconds:g} s of warm-up ('C++ timer': TVM's time_evaluator, median over its repeats); "
          f"every batch or repetition >= {args.batch_seconds:g} s. TVM / Strata above 1: Strata is faster.")
    print(f"TVM {versions['tvm']} (tvm-ffi {versions['tvm_ffi']}), target llvm, "
          f"TVM_NUM_THREADS={os.environ['TVM_NUM_THREADS']}, "
          f"STRATA_NUM_THREADS={os.environ['STRATA_NUM_THREADS']} (1 in the '1 thread' row); "
          f"{machine['cpu']}, {machine['cpus']} CPUs, {machine['os']}, "
          f"load average {', '.join(map(str, machine['load_average']))}")

    if args.json:
        report = {
            "date": datetime.date.today().isoformat(),
            "machine": machine,
            "versions": versions,
            "settings": {"chain_calls": CHAIN_CALLS, "rounds": args.rounds, "repetitions": args.repetitions,
                         "batch_seconds": args.batch_seconds, "seconds": args.seconds,
                         "warmup_seconds": args.warmup_seconds, "tvm_target": "llvm",
                         "TVM_NUM_THREADS": os.environ["TVM_NUM_THREADS"],
                         "STRATA_NUM_THREADS": os.environ["STRATA_NUM_THREADS"]},
            "results": results,
            "strata_kernel_over_library": {"median": statistics.median(kernel_over_library),
                                           "rounds": kernel_over_library},
            "samples": samples,
        }
        with open(args.json, "w") as out:
            json.dump(report, out, indent=2)
            out.write("\n")


if __name__ == "__main__":
    main()
