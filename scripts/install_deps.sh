#!/usr/bin/env bash
# Installs the Debian packages Strata builds against, only those that are missing.
# Needs root (apt-get). Safe to run repeatedly: it does nothing when all are present.
set -euo pipefail

packages=(
  build-essential cmake ninja-build binutils ccache
  llvm-16-dev                      # codegen of tensor programs (compiler only)
  libflatbuffers-dev flatbuffers-compiler  # executable file format
  libxxhash-dev                    # XXH3-64 checksums of executables (format 1.5)
  libdlpack-dev                    # DLTensor layout
  libgtest-dev libgmock-dev libbenchmark-dev
  libboost-program-options-dev     # strata CLI
  libopenblas-dev                  # library functions
  libdnnl-dev                      # oneDNN: conv2d baseline of the benchmarks, BYOC backend
  libonnx-dev libprotobuf-dev protobuf-compiler  # ONNX importer
  zlib1g-dev libzstd-dev libtinfo-dev libxml2-dev libedit-dev libffi-dev  # llvm-config --system-libs
  clang-format-16 clang-tidy-16    # scripts/format.sh (checked by the tests), scripts/tidy.sh
  clang-16 libclang-rt-16-dev      # the sanitizer build and libFuzzer (scripts/configure_sanitizer_build.sh)
  rapidjson-dev                    # strata-server's JSON; tests: reading the profiler's trace JSON
  libboost-dev                     # strata-server: Asio and Beast (HTTP/1.1)
  libgrpc++-dev protobuf-compiler-grpc  # strata-server's KServe v2 gRPC endpoint
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "install_deps: installing ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "install_deps: need root to apt-get install: ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
