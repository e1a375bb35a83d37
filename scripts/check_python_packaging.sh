#!/usr/bin/env bash
# Checks the two other ways the Python package is installed: `pip wheel .`
# gives a wheel holding the extension and the device plug-in, and a virtual
# environment gets a working package from `pip install .` (both reuse the CMake
# build of `pip install .`, so they take seconds after it).
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d /tmp/strata-packaging-XXXXXX)
trap 'rm -rf "$work"' EXIT

python3 -m pip wheel --quiet --no-build-isolation --no-deps -w "$work/wheels" .
wheel=$(ls "$work"/wheels/strata-*.whl)
python3 - "$wheel" <<'PY'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
for needed in ("strata/__init__.py", "strata/_api.py", "strata/_strata", "strata/libstrata_sim_npu.so", "strata/py.typed"):
    if not any(n.startswith(needed) for n in names):
        sys.exit(f"check_python_packaging: {sys.argv[1]} lacks {needed} (has {names})")
stray = [n for n in names if not n.startswith(("strata/", "strata-"))]
if stray:
    sys.exit(f"check_python_packaging: {sys.argv[1]} holds files outside the package: {stray[:10]}")
print(f"check_python_packaging: wheel ok ({len(names)} files)")
PY

# --system-site-packages: numpy and the test peers come from the system; strata
# itself must come from the venv's own install.
python3 -m venv --system-site-packages "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --no-build-isolation --no-deps .
(cd "$work" && "$work/venv/bin/python" - <<'PY'
import numpy as np, strata, sys
assert strata.__file__.startswith(sys.prefix), f"strata imported from {strata.__file__}, not the venv {sys.prefix}"
exe = strata.compile("func @main(x: Tensor[(n,), f32]) -> Tensor[(n,), f32] {\n  return x\n}\n")
x = np.arange(5, dtype=np.float32)
assert np.array_equal(np.asarray(strata.VirtualMachine(exe).main(x)), x)
print(f"check_python_packaging: venv ok ({strata.__file__})")
PY
)
