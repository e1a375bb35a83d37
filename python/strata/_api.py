"""The Python API over strata._strata: compile, load, Executable, VirtualMachine, from_torch."""
from __future__ import annotations

import dataclasses
import difflib
import os
import tempfile
import warnings
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Tuple, Union

from . import _strata

_NUMPY_DTYPES = {
    "f16": "float16", "f32": "float32", "f64": "float64", "i8": "int8", "i16": "int16", "i32": "int32",
    "i64": "int64", "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64", "bool": "bool",
}


@dataclasses.dataclass(frozen=True)
class Parameter:
    """A parameter (or the result) of a function, as the compiler annotated it.

    kind is "tensor", "shape", "prim", "tuple" or "object"; dtype the numpy name of
    the element type ("float32") or None; shape a tuple whose entries are ints
    (static dimensions) or strings (symbolic ones: "batch", "n * 2"), or None when
    the rank is not known; text the annotation in the text IR ("Tensor[(n, 4), f32]").
    """

    name: str
    kind: Optional[str] = None
    dtype: Optional[str] = None
    shape: Optional[Tuple[Union[int, str], ...]] = None
    text: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class Function:
    """An entry point of an executable: its parameters and its result.

    input_names are the model's own names of the parameters (an ONNX model's graph
    input names, such as "input.1", which the parameter names cannot always keep:
    those are identifiers, "input_1"); the parameter names when the executable records
    none. output_names has one name per result tensor (per field of a tuple result,
    else one): an ONNX model's graph output names, else "output0", "output1", ..
    (empty for executables older than format 1.4, which do not describe the result).
    A function takes keyword arguments by either name: vm.main(**{"input.1": x}).
    """

    name: str
    params: Tuple[Parameter, ...]
    result: Optional[Parameter] = None
    input_names: Tuple[str, ...] = ()
    output_names: Tuple[str, ...] = ()

    def __str__(self) -> str:
        params = ", ".join(f"{p.name}: {p.text}" if p.text else p.name for p in self.params)
        result = f" -> {self.result.text}" if self.result is not None and self.result.text else ""
        return f"{self.name}({params}){result}"


def _parameter(name: str, signature: Optional[Mapping[str, Any]]) -> Parameter:
    if not signature:
        return Parameter(name)
    dims, ndim = signature.get("dims") or [], signature.get("ndim", -1)
    shape = None
    if ndim >= 0 and len(dims) == ndim:
        shape = tuple(int(d) if d.lstrip("-").isdigit() else d for d in dims)
    dtype = signature.get("dtype") or None
    return Parameter(name, signature.get("kind") or None, _NUMPY_DTYPES.get(dtype, dtype) if dtype else None, shape,
                     signature.get("text") or None)


class Executable:
    """A compiled, verified executable (a .stx file), shared by any number of VMs.

    Made by strata.compile or strata.load; save() writes it, functions describes
    its entry points, inspect() prints what `strata inspect` prints.
    """

    def __init__(self, native: "_strata.Executable"):
        self._native = native

    def save(self, path: Union[str, os.PathLike]) -> None:
        """Writes the executable to `path` (load it again with strata.load)."""
        self._native.save(os.fspath(path))

    @property
    def functions(self) -> dict:
        """The entry points by name, each a Function with its parameters' shapes and dtypes."""
        out = {}
        for f in self._native.function_table:
            signatures = f.get("param_signatures") or [None] * len(f["param_names"])
            params = tuple(_parameter(n, s) for n, s in zip(f["param_names"], signatures))
            result = f.get("result_signature")
            out[f["name"]] = Function(f["name"], params, _parameter("result", result) if result else None,
                                      tuple(f["input_names"]), tuple(f["output_names"]))
        return out

    @property
    def entry_points(self) -> list:
        return list(self._native.entry_points)

    @property
    def devices(self) -> list:
        """The devices besides the CPU the executable runs kernels on ("sim_npu")."""
        return list(self._native.devices)

    @property
    def nbytes(self) -> int:
        """The size of the executable file."""
        return self._native.nbytes

    @property
    def format_version(self) -> str:
        return self._native.format_version

    def inspect(self) -> str:
        """The description `strata inspect` prints: functions, memory plans, bytecode, kernels, constants."""
        return self._native.inspect()

    def __repr__(self) -> str:
        return f"strata.Executable(entry_points={self.entry_points}, nbytes={self.nbytes})"


def load(path: Union[str, os.PathLike], *, mmap: bool = True,
         device_options: Optional[Mapping[str, str]] = None, verify_checksums: bool = True) -> Executable:
    """Loads and verifies an executable file; memory-mapped by default (weights are not copied).

    device_options replaces the executable's options for a device ({"sim_npu": "memory=64M"}).
    verify_checksums=False skips the file's checksums (format 1.5), which read every byte:
    damaged weights then go unnoticed (docs/executable_format.md).
    Raises strata.LoadError with the loader's message for a missing, corrupt or incompatible file.
    """
    return Executable(_strata.load(os.fspath(path), mmap, dict(device_options or {}), verify_checksums))


def _targets(target: Union[str, Sequence[str]]) -> list:
    # Checked by the compiler's front door, with `strata compile --target`'s messages.
    return [t.strip() for t in (target.split(",") if isinstance(target, str) else target)]


def _pass_insertions(option: str, items: Iterable[str]) -> list:
    out = []
    for text in items:
        anchor, sep, name = text.partition(":")
        if not sep or not anchor or not name:
            raise _strata.CompileError(f"{option} expects ANCHOR:PASS, got '{text}'")
        out.append((anchor, name))
    return out


def _model_source(model: Any) -> Tuple[str, Any, str]:
    """(kind, source, name) of what compile() was given."""
    if hasattr(model, "SerializeToString"):  # an onnx.ModelProto
        name = getattr(getattr(model, "graph", None), "name", "") or "model"
        return "onnx_bytes", model.SerializeToString(), f"<onnx.ModelProto {name}>"
    if isinstance(model, (bytes, bytearray, memoryview)):
        return "onnx_bytes", bytes(model), "<onnx bytes>"
    if isinstance(model, os.PathLike) or (isinstance(model, str) and "\n" not in model and
                                          model.rstrip().endswith((".onnx", ".sir"))):
        path = os.fspath(model)
        if path.endswith(".onnx"):
            return "onnx_file", path, path
        if path.endswith(".sir"):
            return "sir_file", path, path
        raise _strata.CompileError(f"{path}: error: expected a .onnx or .sir file")
    if isinstance(model, str):
        return "sir_text", model, "<string>"
    raise TypeError(f"compile: cannot compile a '{type(model).__name__}': expected a path to a .onnx or .sir file, "
                    "text IR as a string, an onnx.ModelProto or ONNX bytes")


def compile(model: Any, *, target: Union[str, Sequence[str]] = "cpu", byoc: Sequence[str] = (),
            dynamic: Optional[Mapping[str, Tuple[int, int]]] = None, dispatch: Sequence[str] = (),
            tir_library: Sequence[Union[str, os.PathLike]] = (), dump_ir: Optional[Union[str, os.PathLike]] = None,
            dump_llvm_ir: Optional[Union[str, os.PathLike]] = None, fuse: bool = True, nchwc: bool = True,
            memory_plan: bool = True, cpu: Optional[str] = None, cpu_features: Optional[str] = None,
            pass_before: Sequence[str] = (), pass_after: Sequence[str] = (), time_passes: bool = False) -> Executable:
    """Compiles a model into an Executable, with the options and the errors of `strata compile`.

    model: a path to a .onnx or .sir file, text IR as a string, an onnx.ModelProto, or ONNX bytes.
    target: "cpu" or "cpu,npu" (offload to the simulated NPU). byoc: BYOC backends ("dnnl").
    dynamic: bounds of an ONNX model's dynamic dimensions, {"batch": (1, 64)}.
    dispatch: dispatch passes to run before LegalizeOps ("cpu-blas"). tir_library: .sir files
    of hand-written tensor programs. dump_ir: a directory for the module after every pass.
    fuse / nchwc / memory_plan: turn those passes off with False. cpu / cpu_features: the CPU
    to compile the kernels for (LLVM names), default this machine's.
    Raises strata.CompileError with the compiler's message (file:line:col for text,
    node, op and opset for ONNX).
    """
    kind, source, name = _model_source(model)
    request = _strata.CompileRequest()
    request.kind, request.name = kind, name
    if isinstance(source, bytes):
        request.set_source_bytes(source)
    else:
        request.source = source
    if dynamic:
        bounds = {}
        for dim, bound in dynamic.items():
            try:
                lo, hi = (int(b) for b in bound)
            except (TypeError, ValueError):
                raise _strata.CompileError(f"dynamic: '{dim}' needs a (lo, hi) pair of ints, got {bound!r}") from None
            if not (0 <= lo <= hi):
                raise _strata.CompileError(f"dynamic: '{dim}' needs 0 <= lo <= hi, got ({lo}, {hi})")
            bounds[str(dim)] = (lo, hi)
        request.dynamic = bounds
    request.targets = _targets(target)
    request.byoc = list(byoc)
    request.dispatch = list(dispatch)
    request.tir_library = [os.fspath(p) for p in tir_library]
    request.passes_before = _pass_insertions("pass_before", pass_before)
    request.passes_after = _pass_insertions("pass_after", pass_after)
    request.dump_ir = os.fspath(dump_ir) if dump_ir is not None else ""
    request.dump_llvm_ir = os.fspath(dump_llvm_ir) if dump_llvm_ir is not None else ""
    request.cpu, request.cpu_features = cpu or "", cpu_features or ""
    request.fuse, request.nchwc, request.memory_plan, request.time_passes = fuse, nchwc, memory_plan, time_passes
    return Executable(_strata.compile(request))


@dataclasses.dataclass(frozen=True)
class ProfileRow:
    """One kernel or library function of a profiled run: its calls and time (all calls together)."""

    name: str
    kind: str  # "compiled kernel", "library", "device kernel"
    backend: str  # the BYOC backend that made it ("dnnl"), or ""
    calls: int
    total_us: float

    @property
    def mean_us(self) -> float:
        return self.total_us / self.calls if self.calls else 0.0


@dataclasses.dataclass(frozen=True)
class Profile:
    """What VirtualMachine.profile measured: the result of the last call, one row per
    kernel and library function (slowest first), the time per instruction kind, and
    the report `strata run --profile` prints."""

    result: Any
    rows: Tuple[ProfileRow, ...]
    instruction_kinds: Mapping[str, Tuple[int, float]]  # kind -> (count, total us)
    total_us: float
    report: str

    def __str__(self) -> str:
        return self.report


class VirtualMachine:
    """Runs the functions of an Executable: vm["main"](x, w) or vm.main(x, w).

    Arguments may also be given by keyword, by the parameter's name or by the model's
    name of that input (Function.input_names): vm.main(x=x, w=w), or for an ONNX model
    whose input is "input.1" (parameter input_1), vm.main(**{"input.1": x}).

    Arguments: strata.Tensor, anything with __dlpack__ or the buffer protocol on the
    CPU (numpy, PyTorch, JAX: passed without a copy when C-contiguous), ints, floats,
    tuples. Results are strata.Tensor (np.from_dlpack / torch.from_dlpack share their
    memory), tuples, ints or floats. The GIL is released while a call runs; one VM
    runs one call at a time (calls from several threads wait for each other), so give
    each thread its own VM over the same Executable to run them in parallel.

    devices, when given, lists the devices the VM may use besides the CPU
    (["sim_npu"]; [] for the CPU only): an executable that runs kernels on another
    is a strata.LoadError naming it, before anything is opened. device_options
    replaces the executable's options for a device ({"sim_npu": "memory=64M"}).
    """

    def __init__(self, executable: Executable, *, devices: Optional[Sequence[str]] = None,
                 device_options: Optional[Mapping[str, str]] = None):
        if not isinstance(executable, Executable):
            raise TypeError(f"VirtualMachine needs a strata.Executable, got '{type(executable).__name__}'")
        if devices is not None:
            allowed = {d for d in devices if d != "cpu"}
            for needed in executable.devices:
                if needed not in allowed:
                    raise _strata.LoadError(f"the executable runs kernels on device '{needed}', which devices="
                                            f"{list(devices)} does not allow")
        for name in device_options or {}:
            if name not in executable.devices:
                raise _strata.LoadError(f"device_options names device '{name}', which the executable does not use "
                                        f"(it uses: {', '.join(executable.devices) or 'the CPU only'})")
        self._executable = executable
        self._native = _strata.VirtualMachine(executable._native, dict(device_options or {}))

    @property
    def executable(self) -> Executable:
        return self._executable

    def __getitem__(self, name: str) -> Callable[..., Any]:
        # The entry point is resolved once; calls go straight to C++.
        return self._native.function(name)  # KeyError listing the entry points

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_"):
            raise AttributeError(name)
        native = self.__dict__.get("_native")
        if native is None or not native.has_function(name):
            raise AttributeError(f"no function '{name}' in the executable; its entry points are: "
                                 f"{', '.join(self._executable.entry_points)}")
        function = native.function(name)
        self.__dict__[name] = function  # later vm.main lookups skip __getattr__
        return function

    def invoke(self, name: str, /, *args: Any, **kwargs: Any) -> Any:
        """Calls the entry point `name` (the same as vm[name](*args, **kwargs))."""
        return self._native.invoke(name, args, kwargs)

    def run(self, output_names: Optional[Sequence[str]], input_feed: Mapping[str, Any], *,
            function: str = "main") -> list:
        """Runs `function` as onnxruntime's InferenceSession.run does: inputs in a dict by name,
        outputs asked for by name, results in a list.

        input_feed keys are the model's input names (Function.input_names, "input.1") or the
        parameter names; output_names picks results by the model's output names
        (Function.output_names) in the order given, or all of them in order when None.
        """
        described = self._function(function)
        if not isinstance(input_feed, Mapping):
            raise TypeError(f"run: input_feed must be a dict of input name -> value, got "
                            f"'{type(input_feed).__name__}' (the function's inputs: "
                            f"{', '.join(described.input_names)})")
        result = self._native.invoke(function, (), dict(input_feed))
        results = list(result) if isinstance(result, tuple) else [result]
        if output_names is None:
            return results
        names = list(described.output_names)
        if len(names) != len(results):  # an executable older than format 1.4 names no outputs
            names = [f"output{i}" for i in range(len(results))]
        picked = []
        for name in output_names:
            if name not in names:
                close = difflib.get_close_matches(name, names, n=1)
                hint = f"; did you mean '{close[0]}'?" if close else ""
                raise ValueError(f"'{function}' has no output named '{name}' (its outputs: "
                                         f"{', '.join(names)}){hint}")
            picked.append(results[names.index(name)])
        return picked

    def _function(self, name: str) -> Function:
        functions = self._executable.functions
        if name not in functions:
            raise KeyError(f"no function '{name}' in the executable; its entry points are: "
                           f"{', '.join(self._executable.entry_points)}")
        return functions[name]

    def profile(self, function: str, *args: Any, repeat: int = 1,
                trace: Optional[Union[str, os.PathLike]] = None) -> Profile:
        """Calls `function` `repeat` times with a profiler attached and returns the per-kernel table.

        With trace, also writes the Chrome trace of every call there (open it in
        https://ui.perfetto.dev), as `strata run --trace` does.
        """
        result, rows, kinds, total_ns, report, trace_json = self._native.profile(function, args, repeat,
                                                                                 trace is not None)
        if trace is not None:
            with open(os.fspath(trace), "w", encoding="utf-8") as f:
                f.write(trace_json)
        table = sorted((ProfileRow(n, k, b, c, t / 1000.0) for n, k, b, c, t in rows), key=lambda r: -r.total_us)
        return Profile(result, tuple(table), {k: (c, t / 1000.0) for k, (c, t) in kinds.items()}, total_ns / 1000.0,
                       report)

    @property
    def last_memory_stats(self) -> dict:
        """Memory counters of the last call: bytes and blocks newly taken from the system,
        allocations, the peak of live pool bytes and the lower bound (docs/memory.md)."""
        return dict(self._native.last_memory_stats)

    def __repr__(self) -> str:
        return f"strata.VirtualMachine(entry_points={self._executable.entry_points})"


def set_num_threads(threads: int) -> None:
    """Threads for the kernels' parallel loops and oneDNN / OpenBLAS calls (like `--threads`).

    Must be called before the first call runs (the pool is created then); default:
    STRATA_NUM_THREADS, else the CPUs the process may use."""
    _strata.set_num_threads(int(threads))


def num_threads() -> int:
    """The number of threads kernels run on."""
    return _strata.num_threads()


def from_torch(module: Any, example_inputs: Union[Any, Tuple[Any, ...]], *, dynamic_shapes: Any = None,
               input_names: Optional[Sequence[str]] = None, opset: Optional[int] = None, exporter: str = "dynamo",
               **compile_options: Any) -> Executable:
    """Exports a torch.nn.Module through torch.onnx and compiles it.

    exporter: "dynamo" (the default: torch.onnx.export(..., dynamo=True), PyTorch's
    exporter built on torch.export) or "torchscript" (the deprecated one).
    dynamic_shapes: as torch.export takes them, per forward() argument (a dict by
    argument name, or a tuple by position) of {axis: torch.export.Dim("batch", min=1,
    max=64)}; each Dim's bounds go to compile's `dynamic`. The form of earlier
    releases, {input name: {axis: ("batch", 1, 64)}}, is taken too (input names
    default to x0, x1, ..., or input_names). opset: the exporter's default when None
    (18 for dynamo, 17 for torchscript). Other keyword arguments go to strata.compile.
    Only this function needs PyTorch.
    """
    import torch  # optional dependency

    if exporter not in ("dynamo", "torchscript"):
        raise ValueError(f"from_torch: exporter must be 'dynamo' or 'torchscript', got {exporter!r}")
    if not isinstance(example_inputs, tuple):
        example_inputs = (example_inputs,)
    names = list(input_names) if input_names is not None else [f"x{i}" for i in range(len(example_inputs))]
    if len(names) != len(example_inputs):
        raise ValueError(f"from_torch: {len(names)} input names for {len(example_inputs)} inputs")
    bounds = dict(compile_options.pop("dynamic", None) or {})
    dims: dict = {}  # one torch.export.Dim per name, so that equal names stay one dimension

    def as_dim(spec: Any) -> Any:
        if isinstance(spec, tuple):  # ("batch", lo, hi), the earlier form
            name, lo, hi = spec
            if name not in dims:
                dims[name] = torch.export.Dim(name, min=lo, max=hi)
            spec = dims[name]
        name, hi = getattr(spec, "__name__", None), getattr(spec, "max", None)
        if name and isinstance(hi, int) and hi < 2**62:  # Dim.AUTO and unbounded dims have no bounds to give
            bounds.setdefault(name, (int(spec.min), hi))
        return spec

    def convert(per_input: Any) -> Any:
        return None if per_input is None else {int(axis): as_dim(spec) for axis, spec in per_input.items()}

    shapes = dynamic_shapes
    if isinstance(dynamic_shapes, Mapping):
        unknown = [k for k in dynamic_shapes if k not in names]
        if not unknown:  # keyed by input name: by position, whatever forward() calls its arguments
            shapes = tuple(convert(dynamic_shapes.get(n)) for n in names)
        elif exporter == "torchscript":
            raise ValueError(f"from_torch: dynamic_shapes names '{unknown[0]}', which is not an input "
                             f"({', '.join(names)})")
        else:  # keyed by forward() argument name, as torch.export takes it
            shapes = {k: convert(v) for k, v in dynamic_shapes.items()}
    elif isinstance(dynamic_shapes, (tuple, list)):
        shapes = tuple(convert(v) for v in dynamic_shapes)
    with tempfile.TemporaryDirectory(prefix="strata-torch-") as folder:
        path = os.path.join(folder, "model.onnx")
        was_training = getattr(module, "training", False)
        module.eval()
        try:
            if exporter == "dynamo":
                torch.onnx.export(module, example_inputs, path, dynamic_shapes=shapes or None,
                                  input_names=list(input_names) if input_names is not None else None,
                                  opset_version=opset or 18, dynamo=True, verbose=False)
            else:
                positional = shapes if isinstance(shapes, tuple) else ()
                dynamic_axes = {names[i]: {axis: dim.__name__ for axis, dim in per_input.items()}
                                for i, per_input in enumerate(positional) if per_input}
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", DeprecationWarning)  # the TorchScript exporter is deprecated
                    torch.onnx.export(module, example_inputs, path, input_names=names,
                                      dynamic_axes=dynamic_axes or None, opset_version=opset or 17, dynamo=False)
        finally:
            module.train(was_training)
        return compile(path, dynamic=bounds or None, **compile_options)
