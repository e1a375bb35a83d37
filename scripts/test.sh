#!/usr/bin/env bash
# Builds Strata and runs every test: the full build (compiler + runtime) and an
# AddressSanitizer build of the runtime, whose tests feed it corrupt executables.
# Installs missing Debian packages first (needs root for that).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install_deps.sh
jobs=$(nproc)

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"
# `cmake --install` and a project that embeds the installed runtime (find_package(Strata)).
bash scripts/check_install.sh build

# The runtime alone, under AddressSanitizer: loading hostile files must never crash.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSTRATA_SANITIZE=address \
  -DSTRATA_BUILD_COMPILER=OFF -DSTRATA_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build build-asan -j "$jobs"
ctest --test-dir build-asan --output-on-failure -j "$jobs"

# The Python package: built and installed by pip as a user would (its own CMake
# build in build/python-<tag>, kept between runs), then its tests. A wheel and a
# virtual environment reuse that build.
bash scripts/install_python_deps.sh
python3 -m pip install --quiet --no-build-isolation .
(cd python/tests && python3 -m pytest -q -p no:cacheprovider .)
bash scripts/check_python_packaging.sh

# strata-server end to end: the real server on loopback, tritonclient[http] and plain HTTP.
(cd tests/server && python3 -m pytest -q -p no:cacheprovider .)
