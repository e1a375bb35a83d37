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

# The runtime and the server under ThreadSanitizer: the server's C++ tests and
# its end-to-end tests (concurrent clients, batching, load/unload while
# requests run, SIGTERM); any report fails the test that stops the server.
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTRATA_SANITIZE=thread \
  -DSTRATA_BUILD_COMPILER=OFF -DSTRATA_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build build-tsan -j "$jobs" --target strata-server strata_sim_npu strata_server_test
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/tests/server/tsan.supp"
build-tsan/tests/strata_server_test
(cd tests/server && STRATA_SERVER="$PWD/../../build-tsan/bin/strata-server" python3 -m pytest -q -p no:cacheprovider .)
unset TSAN_OPTIONS
