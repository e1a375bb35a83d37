"""Strata from Python: compile models, load executables, run them with zero-copy tensors.

    import strata, numpy as np
    exe = strata.compile("model.onnx", dynamic={"batch": (1, 64)})
    vm = strata.VirtualMachine(exe)
    y = vm.main(np.ones((8, 3, 224, 224), np.float32))
    np.from_dlpack(y)          # the same memory, no copy

See docs/python.md for the whole API.
"""
from __future__ import annotations

import os as _os

# The sim_npu device plug-in ships beside the extension; the runtime finds
# plug-ins through STRATA_DEVICE_PLUGIN_PATH (docs/devices.md).
_here = _os.path.dirname(_os.path.abspath(__file__))
_os.environ["STRATA_DEVICE_PLUGIN_PATH"] = _os.pathsep.join(
    p for p in (_os.environ.get("STRATA_DEVICE_PLUGIN_PATH", ""), _here) if p)

from . import _strata  # noqa: E402
from ._api import (  # noqa: E402
    Executable,
    Function,
    Parameter,
    ProfileRow,
    Profile,
    VirtualMachine,
    compile,
    from_torch,
    load,
    num_threads,
    set_num_threads,
)

Error = _strata.Error
CompileError = _strata.CompileError
LoadError = _strata.LoadError
ShapeError = _strata.ShapeError
ExecutionError = _strata.ExecutionError
Tensor = _strata.Tensor

__version__ = "0.1.0"

__all__ = [
    "CompileError", "Error", "ExecutionError", "Executable", "Function", "LoadError", "Parameter",
    "Profile", "ProfileRow", "ShapeError", "Tensor", "VirtualMachine", "compile", "from_torch", "load",
    "num_threads", "set_num_threads",
]
