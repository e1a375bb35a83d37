#!/usr/bin/env bash
# Configures the sanitizer build: clang 16 with AddressSanitizer and
# UndefinedBehaviorSanitizer (-O1, assertions on, line tables for the reports), the compiler and the runtime,
# and the libFuzzer targets. scripts/test.sh runs the whole test suite in it;
# scripts/fuzz.sh runs the fuzz targets from it.
#
#   scripts/configure_sanitizer_build.sh [BUILD_DIR]   (default build-san)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-san}
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
CC=clang-16 CXX=clang++-16 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" \
  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" \
  -DSTRATA_SANITIZE=address,undefined -DSTRATA_FUZZ=ON -DSTRATA_BUILD_BENCHMARKS=OFF "${launcher[@]}" >/dev/null
