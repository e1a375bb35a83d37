#!/usr/bin/env bash
# The main job: builds the strata tool, compiles the bundled example model
# (examples/matmul_relu.sir) once, and runs that one executable at three shapes;
# then an ONNX transformer exported from PyTorch.
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
# The same executable at three shapes, each checked against numpy's result
# (tests/fixtures, written by scripts/gen_fixtures.py); a mismatch fails the demo.
for shape in 1x1x1 7x13x5 128x256x64; do
  build/bin/strata run "$out/mr.stx" --function main \
    --input=@tests/fixtures/matmul_relu/x_$shape.npy --input=@tests/fixtures/matmul_relu/w_$shape.npy \
    --output="$out/y_$shape.npy" --expected-output=@tests/fixtures/matmul_relu/y_$shape.npy
done
# A shape that contradicts match_shape: a clear error, not a crash.
build/bin/strata run "$out/mr.stx" --function main \
  --input=3x4xf32=1,2,3,4,5,6,7,8,9,10,11,12 --input=5x2xf32=1,2,3,4,5,6,7,8,9,10 || true

# An ONNX model exported from PyTorch (a transformer encoder layer over token
# ids, dynamic batch and sequence): compiled once, run at two shapes against
# onnxruntime's outputs.
build/bin/strata compile tests/fixtures/onnx/transformer/model.onnx -o "$out/transformer.stx"
for run in run_0 run_2; do
  build/bin/strata run "$out/transformer.stx" --input=@tests/fixtures/onnx/transformer/$run/in0.npy \
    --expected-output=@tests/fixtures/onnx/transformer/$run/out0.npy
done
