#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with AddressSanitizer and
# UndefinedBehaviorSanitizer and runs each for SECONDS (default 60), two at a
# time. A crash, a sanitizer report, a leak or an input slower than 1 s fails
# the run; libFuzzer writes the input to build-san/fuzz-findings/<target>/.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# Seeds are tests/fuzz/seeds/<target>/ (committed) plus, for the executable
# loader, executables compiled from examples/ by the strata binary built here.
# The corpus each run grows is kept in build-san/fuzz-corpus/, so later runs
# start where earlier ones stopped. docs/reliability.md has the figures reached.
#
# STRATA_FUZZ_SEED=N fixes libFuzzer's random seed: from the same corpus, the
# same inputs are tried in the same order (scripts/test.sh sets it, so that CI
# repeats what a developer's run of the same length already passed, and a
# finding there is a regression rather than luck). Unset, each run differs.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
build=${STRATA_SANITIZER_BUILD:-build-san}

bash scripts/configure_sanitizer_build.sh "$build"
all_targets=(executable_loader_fuzzer npy_fuzzer inline_tensor_fuzzer model_config_fuzzer infer_request_fuzzer
             text_ir_fuzzer onnx_import_fuzzer)
if [ $# -gt 0 ]; then targets=("$@"); else targets=("${all_targets[@]}"); fi
cmake --build "$build" -j "$(nproc)" --target strata "${targets[@]}"

corpus=$build/fuzz-corpus
findings=$build/fuzz-findings
mkdir -p "$corpus" "$findings"

# The loader's seeds: small executables of the current format, with and without
# native code, library calls, symbolic shapes, a memory plan and a device.
mkdir -p "$corpus/executable_loader_fuzzer"
seed_dir=$corpus/executable_loader_fuzzer
for example in matmul_relu mlp matmul_bias_blas; do
  [ -f "$seed_dir/$example.stx" ] && continue
  "$build/bin/strata" compile "examples/$example.sir" -o "$seed_dir/$example.stx" >/dev/null
done
[ -f "$seed_dir/mlp_blas.stx" ] || "$build/bin/strata" compile examples/mlp.sir --dispatch cpu-blas -o "$seed_dir/mlp_blas.stx" >/dev/null
[ -f "$seed_dir/mlp_npu.stx" ] || "$build/bin/strata" compile examples/mlp.sir --target cpu,npu -o "$seed_dir/mlp_npu.stx" >/dev/null

dictionary() {
  case $1 in
    executable_loader_fuzzer) echo tests/fuzz/dict/executable.dict ;;
    text_ir_fuzzer) echo tests/fuzz/dict/text_ir.dict ;;
    onnx_import_fuzzer) echo tests/fuzz/dict/onnx.dict ;;
    infer_request_fuzzer | model_config_fuzzer) echo tests/fuzz/dict/infer_request.dict ;;
  esac
}

# Leaks are checked at exit of each input's run; UBSan stops at the first report.
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:abort_on_error=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$PWD/tests/ubsan.supp"

run_one() {
  local target=$1 log=$build/fuzz-findings/$1.log
  mkdir -p "$corpus/$target" "$findings/$target"
  local seeds=tests/fuzz/seeds/$target dict args=()
  dict=$(dictionary "$target")
  [ -n "$dict" ] && args+=("-dict=$dict")
  [ -n "${STRATA_FUZZ_SEED:-}" ] && args+=("-seed=$STRATA_FUZZ_SEED")
  [ -d "$seeds" ] || seeds=
  # The compiler keeps process-wide tables across inputs (interned ops, the
  # creation order of expressions), so nearly every input ends with more
  # allocations than frees and libFuzzer would run a full leak scan after each:
  # 30x slower. For the compiler's targets leaks are checked once, when the run
  # ends (ASAN_OPTIONS detect_leaks=1), instead of after every input.
  case $target in
    text_ir_fuzzer | onnx_import_fuzzer) args+=(-detect_leaks=0) ;;
  esac
  # -timeout: an input running over 1 s is a hang. -rss_limit_mb / -malloc_limit_mb:
  # an input that makes the parser ask for more memory is a finding too.
  "$build/fuzz/$target" -max_total_time="$seconds" -timeout=1 -rss_limit_mb=2560 -malloc_limit_mb=1024 \
    -print_final_stats=1 -artifact_prefix="$findings/$target/" "${args[@]}" "$corpus/$target" $seeds \
    >"$log" 2>&1
}

status=0
summary=$build/fuzz-findings/summary.txt
printf '%-26s %8s %12s %10s %8s  %s\n' target seconds executions exec/s corpus result >"$summary"
pids=()
names=()
jobs=$(nproc)
for target in "${targets[@]}"; do
  run_one "$target" &
  pids+=($!)
  names+=("$target")
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do sleep 1; done
done
for i in "${!pids[@]}"; do
  target=${names[$i]}
  log=$findings/$target.log
  result=ok
  wait "${pids[$i]}" || result=FAILED
  runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' | tail -1 || true)
  secs=$(grep -oE 'Done [0-9]+ runs in [0-9]+ second' "$log" | grep -oE 'in [0-9]+' | grep -oE '[0-9]+' | tail -1 || true)
  files=$(ls "$corpus/$target" | wc -l)
  printf '%-26s %8s %12s %10s %8s  %s\n' "$target" "${secs:-?}" "${runs:-?}" \
    "$([ -n "${runs:-}" ] && [ "${secs:-0}" -gt 0 ] && echo $((runs / secs)) || echo ?)" "$files" "$result" >>"$summary"
  if [ "$result" != ok ]; then
    status=1
    echo "fuzz: $target failed; its log is $log, the input is in $findings/$target/:" >&2
    grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$log" | head -20 >&2
  fi
done
cat "$summary"
exit $status
