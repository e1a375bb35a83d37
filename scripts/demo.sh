#!/usr/bin/env bash
# The main job: builds the strata tool, compiles the bundled seed model
# (examples/matmul_relu.sir) once, and runs that one executable at three shapes.
# Installs missing Debian packages first (needs root for that).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install_deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target strata

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
set -x
build/bin/strata compile examples/matmul_relu.sir -o "$out/mr.stx"
build/bin/strata inspect "$out/mr.stx" | head -40
build/bin/strata run "$out/mr.stx" --function main \
  --input=2x3xf32=1,2,3,4,5,6 --input=3x2xf32=1,-1,1,-1,1,-1
build/bin/strata run "$out/mr.stx" --function main \
  --input=@tests/fixtures/matmul_relu/x_7x13x5.npy --input=@tests/fixtures/matmul_relu/w_7x13x5.npy \
  --output="$out/y.npy"
build/bin/strata run "$out/mr.stx" --function main \
  --input=@tests/fixtures/matmul_relu/x_128x256x64.npy --input=@tests/fixtures/matmul_relu/w_128x256x64.npy \
  --output="$out/y_big.npy"
# A shape that contradicts match_shape: a clear error, not a crash.
build/bin/strata run "$out/mr.stx" --function main \
  --input=3x4xf32=1,2,3,4,5,6,7,8,9,10,11,12 --input=5x2xf32=1,2,3,4,5,6,7,8,9,10 || true
