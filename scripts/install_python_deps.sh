#!/usr/bin/env bash
# Installs the PyPI packages the Python package builds and tests with, only
# those that are missing: scikit-build-core and nanobind (the build, run without
# isolation so nothing is fetched during it), numpy, pytest, and the peers the
# tests compare with (onnx, onnxruntime, torch, and onnxscript, which PyTorch's
# default ONNX exporter needs for strata.from_torch), and Triton's HTTP and gRPC
# clients for the server's tests. Safe to run repeatedly.
set -euo pipefail
python=${PYTHON:-python3}

declare -A modules=(
  [scikit_build_core]=scikit-build-core [nanobind]=nanobind [numpy]=numpy [pytest]=pytest
  [onnx]=onnx [onnxruntime]=onnxruntime [torch]=torch [onnxscript]=onnxscript [tritonclient.http]="tritonclient[http]" [tritonclient.grpc]="tritonclient[grpc]" [yaml]=pyyaml
)
missing=()
for module in "${!modules[@]}"; do
  "$python" -c "import $module" 2>/dev/null || missing+=("${modules[$module]}")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install_python_deps: installing ${missing[*]}"
  "$python" -m pip install --quiet "${missing[@]}"
fi
