// strata._strata: the native half of the Python package (python/strata/ is the
// other). It binds the existing C++ libraries; nothing here compiles, loads
// or runs anything itself. The Python layer turns keyword arguments into the
// plain ones these functions take and adds the conveniences (vm.main(...),
// strata.from_torch).
//
// The GIL is released while the compiler or the VM runs, so other Python
// threads run meanwhile; a VirtualMachine serializes its own calls (a VM runs
// one call at a time), while any number of VMs share one Executable.
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "compiler/driver/compile.h"
#include "compiler/driver/compile_model.h"
#include "python/src/errors.h"
#include "python/src/tensor_interop.h"
#include "vm/executable.h"
#include "vm/executable_description.h"
#include "vm/kernel_threads.h"
#include "vm/profiler.h"
#include "vm/virtual_machine.h"

namespace strata::python {
namespace {

// An executable and where it came from, so that a VM asking for other device
// options can load it again.
struct PyExecutable {
  std::shared_ptr<const vm::Executable> executable;
  std::string path;  // the file it was mapped from; empty when it came from bytes
};

// What strata.compile passes down (python/strata/__init__.py fills it).
struct CompileRequest {
  std::string kind;    // "onnx_file", "onnx_bytes", "sir_file", "sir_text"
  std::string source;  // the path, the ONNX bytes or the text
  std::string name;    // what errors call the model
  std::map<std::string, std::pair<int64_t, int64_t>> dynamic;
  std::vector<std::string> byoc, targets, dispatch, tir_library;
  std::vector<std::pair<std::string, std::string>> passes_before, passes_after;
  std::string dump_ir, dump_llvm_ir, cpu, cpu_features;
  bool fuse = true, nchwc = true, memory_plan = true, time_passes = false;
};

vm::LoadOptions LoadOptionsWith(const std::map<std::string, std::string>& device_options,
                                bool verify_checksums = true) {
  vm::LoadOptions options;
  options.device_options = device_options;
  options.verify_checksums = verify_checksums;
  return options;
}

std::shared_ptr<const vm::Executable> LoadOrThrow(StatusOr<std::shared_ptr<const vm::Executable>> loaded) {
  if (!loaded.ok()) throw LoadErrorEx(loaded.status().message());
  return *std::move(loaded);
}

PyExecutable LoadFile(const std::string& path, bool mmap, const std::map<std::string, std::string>& device_options,
                      bool verify_checksums) {
  nb::gil_scoped_release no_gil;
  const vm::LoadOptions options = LoadOptionsWith(device_options, verify_checksums);
  return PyExecutable{
      LoadOrThrow(mmap ? vm::Executable::MapFile(path, options) : vm::Executable::LoadFromFile(path, options)),
      mmap ? path : std::string()};
}

PyExecutable LoadBytes(nb::bytes bytes, const std::map<std::string, std::string>& device_options) {
  std::span<const uint8_t> data(static_cast<const uint8_t*>(bytes.data()), bytes.size());
  nb::gil_scoped_release no_gil;
  return PyExecutable{LoadOrThrow(vm::Executable::LoadFromBytes(data, LoadOptionsWith(device_options))), ""};
}

PyExecutable Compile(const CompileRequest& request) {
  // The compiler's front door, as `strata compile` takes it (compiler/driver/compile_model.h).
  driver::CompileRequest compile;
  driver::CompileOptions& options = compile.options;
  options.dump_ir_dir = request.dump_ir;
  options.codegen.dump_llvm_ir_path = request.dump_llvm_ir;
  options.codegen.cpu = request.cpu;
  options.codegen.features = request.cpu_features;
  options.print_pass_timing = request.time_passes;
  options.byoc_backends = request.byoc;
  options.tir_library_paths = request.tir_library;
  options.passes_before = request.passes_before;
  options.passes_after = request.passes_after;
  options.fuse = request.fuse;
  options.nchwc_layout = request.nchwc;
  options.plan_memory = request.memory_plan;
  compile.targets = request.targets;
  compile.dispatch = request.dispatch;
  compile.dynamic = request.dynamic;

  nb::gil_scoped_release no_gil;
  const bool file = request.kind == "onnx_file" || request.kind == "sir_file";
  const driver::ModelFormat format =
      request.kind.rfind("onnx", 0) == 0 ? driver::ModelFormat::kOnnx : driver::ModelFormat::kTextIR;
  StatusOr<driver::ModelSource> source = file ? driver::ReadModelSource(request.source, format)
                                              : driver::ModelSourceFromBytes(request.source, request.name, format);
  if (!source.ok()) throw CompileErrorEx(source.status().message());
  StatusOr<driver::CompileOptions> resolved = driver::ResolveCompileOptions(compile);
  if (!resolved.ok()) throw CompileErrorEx(resolved.status().message());
  StatusOr<ir::IRModule> module = driver::ImportModel(*source, compile);
  if (!module.ok()) throw CompileErrorEx(driver::ErrorText(module.status(), source->name));
  // Written to a file and mapped, as `strata compile` then `strata.load` would:
  // a large model's weights are then neither held twice nor copied again. The
  // file is unlinked at once; the mapping keeps its pages.
  char path[] = "/tmp/strata-compile-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) throw CompileErrorEx(std::string("cannot create a temporary file in /tmp: ") + std::strerror(errno));
  close(fd);
  const Status compiled = driver::CompileToFile(*std::move(module), *resolved, path);
  if (!compiled.ok()) {
    std::remove(path);
    throw CompileErrorEx(driver::ErrorText(compiled, request.name));
  }
  StatusOr<std::shared_ptr<const vm::Executable>> loaded = vm::Executable::MapFile(path);
  std::remove(path);
  if (!loaded.ok()) throw LoadErrorEx(loaded.status().message());
  return PyExecutable{*std::move(loaded), ""};
}

void Save(const PyExecutable& exe, const std::string& path) {
  const std::span<const uint8_t> bytes = exe.executable->bytes();
  nb::gil_scoped_release no_gil;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw ErrorEx("cannot write the executable to '" + path + "': " + std::strerror(errno));
}

// One entry of Executable.functions, as plain Python data (the Python layer
// wraps it in dataclasses).
nb::dict DescribeSignature(const vm::ValueSignature& s) {
  nb::dict out;
  out["kind"] = s.kind;
  out["dtype"] = s.dtype;
  out["ndim"] = s.ndim;
  out["dims"] = s.dims;
  out["text"] = s.text;
  nb::list fields;
  for (const vm::ValueSignature& field : s.fields) fields.append(DescribeSignature(field));
  out["fields"] = fields;
  return out;
}

nb::dict DescribeFunction(const vm::VMFunction& f) {
  nb::dict out;
  out["name"] = f.name;
  out["param_names"] = f.param_names;
  out["input_names"] = f.input_names;
  out["output_names"] = f.output_names;
  if (f.has_signature) {
    nb::list params;
    for (const vm::ValueSignature& p : f.param_signatures) params.append(DescribeSignature(p));
    out["param_signatures"] = params;
    out["result_signature"] = DescribeSignature(f.result_signature);
  }
  return out;
}

// A VirtualMachine with the lock that serializes its calls.
struct PyVirtualMachine {
  PyExecutable exe;
  std::unique_ptr<vm::VirtualMachine> machine;
  std::mutex mutex;

  PyVirtualMachine(const PyExecutable& executable, const std::map<std::string, std::string>& device_options)
      : exe(executable) {
    if (!device_options.empty()) {
      // Device options apply when the devices are opened, at load: the same file
      // (or bytes) loaded again with them.
      nb::gil_scoped_release no_gil;
      // As the first load: a file loaded without verifying its checksums is not verified now.
      const vm::LoadOptions options = LoadOptionsWith(device_options, executable.executable->checksums_verified());
      exe.executable =
          LoadOrThrow(exe.path.empty() ? vm::Executable::LoadFromBytes(executable.executable->bytes(), options)
                                       : vm::Executable::MapFile(exe.path, options));
    }
    machine = std::make_unique<vm::VirtualMachine>(exe.executable);
  }

  // The entry point `name`'s function-table index; KeyError naming the entry points otherwise.
  int32_t EntryIndex(const std::string& name) const {
    std::optional<int32_t> index = exe.executable->FindEntryPoint(name);
    if (!index) {
      throw nb::key_error(
          ("no function '" + name + "' in the executable; its entry points are: " + exe.executable->EntryPointNames())
              .c_str());
    }
    return *index;
  }

  // The arguments in parameter order: the positional ones first, then each keyword
  // argument by its parameter's name or by the model's name of that input (format
  // 1.6: vm.main(**{"input.1": x}) for an ONNX input the IR calls input_1).
  std::vector<vm::Value> Arguments(int32_t index, nb::handle args, nb::handle kwargs = nb::handle()) const {
    const vm::VMFunction& f = exe.executable->functions()[static_cast<size_t>(index)];
    const size_t num_params = static_cast<size_t>(f.num_params);
    const size_t count = nb::len(args);
    const size_t num_keywords = kwargs.is_valid() ? nb::len(kwargs) : 0;
    auto fail = [&](const std::string& what) {
      std::string params;
      for (size_t i = 0; i < num_params; ++i) {
        params += (params.empty() ? "" : ", ") + f.param_names[i];
        if (f.input_names[i] != f.param_names[i]) params += " ('" + f.input_names[i] + "')";
      }
      throw nb::type_error(("function '" + f.name + "' expects " + std::to_string(num_params) + " argument" +
                            (num_params == 1 ? "" : "s") + " (" + params + "), " + what)
                               .c_str());
    };
    if (num_keywords == 0 && count != num_params) fail("got " + std::to_string(count));
    if (count > num_params) fail("got " + std::to_string(count) + " positional");
    std::vector<nb::handle> given(num_params);
    size_t i = 0;
    for (nb::handle arg : args) given[i++] = arg;
    if (num_keywords > 0) {
      for (auto [key, value] : nb::borrow<nb::dict>(kwargs)) {
        const std::string name = nb::cast<std::string>(key);
        size_t p = 0;
        while (p < num_params && f.param_names[p] != name && f.input_names[p] != name) ++p;
        if (p == num_params) fail("got an unexpected keyword argument '" + name + "'");
        if (given[p].is_valid()) {
          fail("got argument " + std::to_string(p) + " ('" + f.param_names[p] + "') twice, the second time as '" +
               name + "'");
        }
        given[p] = value;
      }
      for (size_t p = 0; p < num_params; ++p) {
        if (!given[p].is_valid()) fail("argument " + std::to_string(p) + " ('" + f.param_names[p] + "') is missing");
      }
    }
    std::vector<vm::Value> values;
    values.reserve(num_params);
    for (size_t p = 0; p < num_params; ++p) {
      values.push_back(ToValue(given[p], ArgumentContext{f.name, p, f.param_names[p], {}}));
    }
    return values;
  }

  // Runs with the GIL released; the lock is taken after releasing it, so a
  // thread waiting for this VM never blocks the others.
  vm::Value Run(int32_t index, const std::vector<vm::Value>& values) {
    StatusOr<vm::Value> result = vm::Value();
    {
      nb::gil_scoped_release no_gil;
      std::lock_guard<std::mutex> lock(mutex);
      result = machine->InvokeFunction(index, values);
    }
    if (!result.ok()) ThrowRunError(result.status());
    return *std::move(result);
  }

  nb::object Invoke(const std::string& name, nb::handle args, nb::handle kwargs) {
    return InvokeIndex(EntryIndex(name), args, kwargs);
  }

  nb::object InvokeIndex(int32_t index, nb::handle args, nb::handle kwargs) {
    const std::vector<vm::Value> values = Arguments(index, args, kwargs);
    return FromValue(Run(index, values));
  }

  // Runs `name` `repeat` times with a profiler attached; returns the result of
  // the last call, the per-function rows and the Chrome trace (when asked).
  nb::tuple Profile(const std::string& name, nb::handle args, int64_t repeat, bool trace) {
    if (repeat < 1) throw nb::value_error("repeat must be at least 1");
    const int32_t index = EntryIndex(name);
    const std::vector<vm::Value> values = Arguments(index, args);
    vm::Profiler profiler(exe.executable, vm::Profiler::Options{.record_trace = trace});
    StatusOr<vm::Value> last = vm::Value();
    {
      nb::gil_scoped_release no_gil;
      std::lock_guard<std::mutex> lock(mutex);
      const Status attached = machine->SetProfiler(&profiler);
      if (!attached.ok()) last = attached;
      for (int64_t i = 0; i < repeat && last.ok(); ++i) last = machine->InvokeFunction(index, values);
      (void)machine->SetProfiler(nullptr);
    }
    if (!last.ok()) ThrowRunError(last.status());
    const vm::Value result = *std::move(last);
    nb::list rows;
    const std::span<const vm::VMFunction> functions = exe.executable->functions();
    for (size_t i = 0; i < functions.size(); ++i) {
      const vm::Profiler::Stat& stat = profiler.function_stat(static_cast<int32_t>(i));
      if (stat.count == 0) continue;
      const vm::VMFunction& f = functions[i];
      rows.append(
          nb::make_tuple(f.name, std::string(vm::FunctionKindName(f.kind)), f.backend, stat.count, stat.total_ns));
    }
    nb::dict kinds;
    for (int k = 0; k < vm::kNumInstructionKinds; ++k) {
      const auto kind = static_cast<vm::InstructionKind>(k);
      const vm::Profiler::Stat& stat = profiler.kind_stat(kind);
      if (stat.count > 0) kinds[vm::InstructionKindName(kind)] = nb::make_tuple(stat.count, stat.total_ns);
    }
    return nb::make_tuple(FromValue(result), rows, kinds, profiler.runs().total_ns, profiler.FormatReport(),
                          trace ? nb::object(nb::str(profiler.TraceJson().c_str())) : nb::none());
  }

  nb::dict LastMemoryStats() const {
    const vm::MemoryStats& s = machine->last_memory_stats();
    nb::dict out;
    out["system_bytes"] = s.system_bytes;
    out["system_allocations"] = s.system_allocations;
    out["allocations"] = s.allocations;
    out["peak_live_bytes"] = s.peak_live_bytes;
    out["lower_bound_bytes"] = s.lower_bound_bytes;
    return out;
  }
};

// vm.main: an entry point resolved once, called with positional arguments.
// The VM's Python object is held, so the function outlives neither.
struct PyFunction {
  nb::object owner;
  PyVirtualMachine* machine;
  int32_t index;
  std::string name;
};

}  // namespace
}  // namespace strata::python

NB_MODULE(_strata, m) {
  using namespace strata;
  using namespace strata::python;
  m.doc() = "The native half of the strata package; use the strata module.";

  // strata.Error and its subclasses; the C++ exception types map to them.
  static nb::exception<ErrorEx> base(m, "Error", PyExc_Exception);
  nb::exception<CompileErrorEx>(m, "CompileError", base);
  nb::exception<LoadErrorEx>(m, "LoadError", base);
  nb::exception<ShapeErrorEx>(m, "ShapeError", base);
  nb::exception<ExecutionErrorEx>(m, "ExecutionError", base);

  BindTensor(m);

  nb::class_<CompileRequest>(m, "CompileRequest")
      .def(nb::init<>())
      .def_rw("kind", &CompileRequest::kind)
      .def_rw("source", &CompileRequest::source)
      .def(
          "set_source_bytes",
          [](CompileRequest& r, nb::bytes bytes) {
            r.source.assign(static_cast<const char*>(bytes.data()), bytes.size());
          },
          nb::arg("data"))
      .def_rw("name", &CompileRequest::name)
      .def_rw("dynamic", &CompileRequest::dynamic)
      .def_rw("byoc", &CompileRequest::byoc)
      .def_rw("targets", &CompileRequest::targets)
      .def_rw("dispatch", &CompileRequest::dispatch)
      .def_rw("tir_library", &CompileRequest::tir_library)
      .def_rw("passes_before", &CompileRequest::passes_before)
      .def_rw("passes_after", &CompileRequest::passes_after)
      .def_rw("dump_ir", &CompileRequest::dump_ir)
      .def_rw("dump_llvm_ir", &CompileRequest::dump_llvm_ir)
      .def_rw("cpu", &CompileRequest::cpu)
      .def_rw("cpu_features", &CompileRequest::cpu_features)
      .def_rw("fuse", &CompileRequest::fuse)
      .def_rw("nchwc", &CompileRequest::nchwc)
      .def_rw("memory_plan", &CompileRequest::memory_plan)
      .def_rw("time_passes", &CompileRequest::time_passes);

  nb::class_<PyExecutable>(m, "Executable")
      .def("save", &Save, nb::arg("path"))
      .def("inspect", [](const PyExecutable& e) { return vm::DescribeExecutable(*e.executable); })
      .def_prop_ro("entry_points",
                   [](const PyExecutable& e) {
                     std::vector<std::string> names;
                     for (int32_t i : e.executable->entry_points()) {
                       names.push_back(e.executable->functions()[static_cast<size_t>(i)].name);
                     }
                     return names;
                   })
      .def_prop_ro("function_table",
                   [](const PyExecutable& e) {
                     nb::list out;
                     for (int32_t i : e.executable->entry_points()) {
                       out.append(DescribeFunction(e.executable->functions()[static_cast<size_t>(i)]));
                     }
                     return out;
                   })
      .def_prop_ro("devices",
                   [](const PyExecutable& e) {
                     std::vector<std::string> names;
                     for (const serialization::DeviceRequirementSpec& d : e.executable->devices()) {
                       names.push_back(d.name);
                     }
                     return names;
                   })
      .def_prop_ro("nbytes", [](const PyExecutable& e) { return e.executable->bytes().size(); })
      .def_prop_ro("is_mapped", [](const PyExecutable& e) { return e.executable->is_mapped(); })
      .def_prop_ro("format_version", [](const PyExecutable& e) {
        return std::to_string(e.executable->format_major()) + "." + std::to_string(e.executable->format_minor());
      });

  nb::class_<PyVirtualMachine>(m, "VirtualMachine")
      .def(nb::init<const PyExecutable&, const std::map<std::string, std::string>&>(), nb::arg("executable"),
           nb::arg("device_options"))
      .def("invoke", &PyVirtualMachine::Invoke, nb::arg("name"), nb::arg("args"), nb::arg("kwargs"))
      .def("profile", &PyVirtualMachine::Profile, nb::arg("name"), nb::arg("args"), nb::arg("repeat"), nb::arg("trace"))
      .def(
          "function",
          [](nb::handle self, const std::string& name) {
            PyVirtualMachine& v = nb::cast<PyVirtualMachine&>(self);
            return PyFunction{nb::borrow(self), &v, v.EntryIndex(name), name};
          },
          nb::arg("name"))
      .def("has_function", [](const PyVirtualMachine& v,
                              const std::string& name) { return v.exe.executable->FindEntryPoint(name).has_value(); })
      .def_prop_ro("last_memory_stats", &PyVirtualMachine::LastMemoryStats)
      .def_prop_ro("executable", [](const PyVirtualMachine& v) { return v.exe; });

  nb::class_<PyFunction>(m, "Function", "An entry point of a VirtualMachine: call it with the arguments.")
      .def("__call__", [](PyFunction& f, nb::args args,
                          nb::kwargs kwargs) { return f.machine->InvokeIndex(f.index, args, kwargs); })
      .def_ro("name", &PyFunction::name)
      .def("__repr__", [](const PyFunction& f) { return "<strata function " + f.name + ">"; });

  m.def("compile", &Compile, nb::arg("request"));
  m.def("load", &LoadFile, nb::arg("path"), nb::arg("mmap"), nb::arg("device_options"), nb::arg("verify_checksums"));
  m.def("load_bytes", &LoadBytes, nb::arg("data"), nb::arg("device_options"));
  m.def("set_num_threads", [](int threads) {
    const Status set = vm::SetKernelThreadCount(threads);
    if (!set.ok()) throw nb::value_error(set.message().c_str());
  });
  m.def("num_threads", &vm::KernelThreadCount);
}
