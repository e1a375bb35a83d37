#!/usr/bin/env bash
# Checks `cmake --install`: installs a built tree into a temporary prefix,
# builds tests/install/consumer against it with find_package(Strata), checks
# that the consumer links no LLVM, and runs it on a compiled model (the zoo's
# MLP): its result must be the one `strata run` gives for the same input. Then
# the installed strata compiles the MLP with --byoc ccodegen with the checkout
# hidden (needs root, for a mount namespace) and must give the same result.
# Usage: scripts/check_install.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
work=$(mktemp -d /tmp/strata-install-XXXXXX)
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$work/prefix" >/dev/null
for f in bin/strata-server lib/cmake/Strata/StrataConfig.cmake lib/cmake/Strata/StrataConfigVersion.cmake \
         include/strata/vm/virtual_machine.h include/strata/serialization/executable_generated.h \
         lib/libstrata_sim_npu.so; do
  [ -e "$work/prefix/$f" ] || { echo "check_install: $f was not installed" >&2; exit 1; }
done

cmake -S tests/install/consumer -B "$work/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
if ldd "$work/consumer/consumer" | grep -qi llvm; then
  echo "check_install: the consumer links LLVM:" >&2
  ldd "$work/consumer/consumer" >&2
  exit 1
fi

"$build/bin/strata" compile tests/fixtures/onnx/mlp/model.onnx --dynamic batch=1..16 -o "$work/mlp.stx"
got=$("$work/consumer/consumer" "$work/mlp.stx" 3)
ones=$(python3 -c "print('3x64xf32=' + ','.join(['1'] * 192))")
expected=$("$build/bin/strata" run "$work/mlp.stx" "--input=$ones" --output="$work/y.npy" >/dev/null &&
           python3 -c "import numpy as np; y = np.load('$work/y.npy'); y = y.astype(np.float64); print(f'shape {tuple(y.shape)} sum {y.sum():.6f} squares {(y * y).sum():.6f}')")
if [ "$got" != "$expected" ]; then
  echo "check_install: the consumer printed '$got', the CLI's result is '$expected'" >&2
  exit 1
fi
# The installed compiler with the source and build trees out of reach (a mount
# namespace hides the checkout, as if it had been moved away): --byoc ccodegen
# finds its headers and library under the prefix, and the offloaded executable
# gives the CLI's result.
repo=$(pwd)
cp tests/fixtures/onnx/mlp/model.onnx "$work/mlp.onnx"
python3 -c "print('3x64xf32=' + ','.join(['1'] * 192))" > "$work/ones.txt"
unshare --mount bash -c "mount -t tmpfs none '$repo' &&
  [ ! -e '$repo/CMakeLists.txt' ] &&
  '$work/prefix/bin/strata' compile '$work/mlp.onnx' --dynamic batch=1..16 --byoc ccodegen -o '$work/mlp_ccodegen.stx' &&
  '$work/prefix/bin/strata' run '$work/mlp_ccodegen.stx' \"--input=\$(cat '$work/ones.txt')\" \
    --expected-output=@'$work/y.npy'" >"$work/ccodegen.log" 2>&1 || {
  echo "check_install: the installed strata could not compile and run --byoc ccodegen without the source tree:" >&2
  cat "$work/ccodegen.log" >&2
  exit 1
}
grep -q "ccodegen" <("$work/prefix/bin/strata" inspect "$work/mlp_ccodegen.stx") || {
  echo "check_install: nothing was offloaded to ccodegen" >&2
  exit 1
}
echo "check_install: ok ($got; --byoc ccodegen from the prefix alone)"
