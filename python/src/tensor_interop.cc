// strata.Tensor and the argument / result conversions; see tensor_interop.h.
#include "python/src/tensor_interop.h"

#include <memory>
#include <vector>

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "python/src/errors.h"

namespace strata::python {
namespace {

// nanobind's view of an argument: any CPU array, C-contiguous (nanobind copies
// one that is not), read-only accepted (the VM never writes its arguments).
using HostArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;

DataType DataTypeOf(nb::dlpack::dtype dtype, const ArgumentContext& what) {
  const DataType t(static_cast<DataType::Code>(dtype.code), dtype.bits);
  if (dtype.lanes != 1 || !vm::IsValidTensorDataType(t)) {
    throw ShapeErrorEx(what.Text() + ": unsupported element type (DLPack code " + std::to_string(dtype.code) + ", " +
                       std::to_string(dtype.bits) + " bits, " + std::to_string(dtype.lanes) +
                       " lanes); Strata tensors hold i8..i64, u8..u64, f16, f32, f64 and bool");
  }
  return t;
}

// A tensor viewing `array`'s memory; the storage holds `array` (and through it
// the Python object it came from) until the VM lets go of the tensor.
vm::Ref<vm::Tensor> ViewOf(const HostArray& array, const ArgumentContext& what) {
  const DataType dtype = DataTypeOf(array.dtype(), what);
  std::vector<int64_t> shape(array.ndim());
  for (size_t i = 0; i < array.ndim(); ++i) shape[i] = static_cast<int64_t>(array.shape(i));
  StatusOr<int64_t> nbytes = vm::NumBytesOf(shape, dtype);
  if (!nbytes.ok()) throw ShapeErrorEx(what.Text() + ": " + nbytes.status().message());
  if (*nbytes == 0 || array.data() == nullptr) {
    StatusOr<vm::Ref<vm::Tensor>> empty = vm::Tensor::Empty(shape, dtype);
    if (!empty.ok()) throw ShapeErrorEx(what.Text() + ": " + empty.status().message());
    return *std::move(empty);
  }
  // The last reference may be dropped on a thread that does not hold the GIL
  // (a VM running with it released), so the deleter takes it.
  auto* held = new HostArray(array);
  std::shared_ptr<const void> owner(held, [](const HostArray* a) {
    if (!Py_IsInitialized()) return;  // the interpreter is gone: leak rather than crash
    nb::gil_scoped_acquire gil;
    delete a;
  });
  vm::Ref<vm::Storage> storage =
      vm::Storage::WrapExternal(const_cast<void*>(array.data()), *nbytes, vm::kCpuDevice, std::move(owner));
  StatusOr<vm::Ref<vm::Tensor>> view = vm::Tensor::View(std::move(storage), 0, shape, dtype);
  if (!view.ok()) throw ShapeErrorEx(what.Text() + ": " + view.status().message());
  return *std::move(view);
}

// DLPack 1.0's versioned managed tensor (dlpack.h 1.0; Debian's header is
// 0.6): consumers that ask for it (max_version >= (1, 0), as numpy 2 does)
// import a writable array from it, and a read-only constant says so instead
// of being copied.
struct DLPackVersion {
  uint32_t major;
  uint32_t minor;
};
struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
};
constexpr uint64_t kDlpackFlagReadOnly = 1;

// The capsule protocol, the same for both kinds: the manager context holds a
// reference to the tensor; a consumer that takes the capsule renames it
// ("used_dltensor") and calls the deleter itself, and one nobody took is freed
// by the capsule's destructor.
template <typename Managed>
struct Capsule;
template <>
struct Capsule<DLManagedTensor> {
  static constexpr const char* kName = "dltensor";
};
template <>
struct Capsule<DLManagedTensorVersioned> {
  static constexpr const char* kName = "dltensor_versioned";
};

template <typename Managed>
void DeleteManaged(Managed* managed) {
  delete static_cast<vm::Ref<vm::Tensor>*>(managed->manager_ctx);
  delete managed;
}

template <typename Managed>
void CapsuleDestructor(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, Capsule<Managed>::kName)) {
    auto* managed = static_cast<Managed*>(PyCapsule_GetPointer(capsule, Capsule<Managed>::kName));
    if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
  }
}

template <typename Managed>
nb::object MakeCapsule(vm::Ref<vm::Tensor> tensor, Managed* managed) {
  managed->dl_tensor = *tensor->dl();
  managed->dl_tensor.strides = nullptr;  // compact row-major
  managed->manager_ctx = new vm::Ref<vm::Tensor>(std::move(tensor));
  managed->deleter = DeleteManaged<Managed>;
  PyObject* capsule = PyCapsule_New(managed, Capsule<Managed>::kName, CapsuleDestructor<Managed>);
  if (capsule == nullptr) {
    DeleteManaged(managed);
    throw nb::python_error();
  }
  return nb::steal(capsule);
}

// The tensor to export: itself, or a copy when it is a read-only constant.
vm::Ref<vm::Tensor> Exportable(const PyTensor& t) {
  const vm::Tensor& tensor = *t.tensor;
  if (tensor.device().device_type != kDLCPU) {
    throw ExecutionErrorEx("this tensor is on device " + std::to_string(tensor.device().device_type) +
                           "; only CPU tensors can be exported");
  }
  if (!tensor.read_only()) return t.tensor;
  StatusOr<vm::Ref<vm::Tensor>> copy = vm::Tensor::Empty(tensor.shape(), tensor.dtype());
  if (!copy.ok()) throw ExecutionErrorEx(copy.status().message());
  if (tensor.num_bytes() > 0) std::memcpy((*copy)->data(), tensor.data(), static_cast<size_t>(tensor.num_bytes()));
  return *std::move(copy);
}

nb::object DlpackCapsule(const PyTensor& t) { return MakeCapsule(Exportable(t), new DLManagedTensor{}); }

nb::object VersionedDlpackCapsule(const PyTensor& t) {
  if (t.tensor->device().device_type != kDLCPU) Exportable(t);  // raises
  auto* managed = new DLManagedTensorVersioned{};
  managed->version = DLPackVersion{1, 0};
  managed->flags = t.tensor->read_only() ? kDlpackFlagReadOnly : 0;
  return MakeCapsule(t.tensor, managed);
}

// A numpy array sharing the tensor's memory (a copy for a read-only constant).
nb::object NumpyArray(const PyTensor& t) {
  vm::Ref<vm::Tensor> tensor = Exportable(t);
  std::vector<size_t> shape(tensor->shape().begin(), tensor->shape().end());
  const DataType dtype = tensor->dtype();
  nb::dlpack::dtype dl{static_cast<uint8_t>(dtype.code()), static_cast<uint8_t>(dtype.bits()), 1};
  void* data = tensor->data();
  nb::capsule owner(new vm::Ref<vm::Tensor>(std::move(tensor)),
                    [](void* p) noexcept { delete static_cast<vm::Ref<vm::Tensor>*>(p); });
  return nb::ndarray<nb::numpy>(data, shape.size(), shape.data(), owner, nullptr, dl).cast();
}

std::string NumpyDtypeName(DataType dtype) {
  switch (dtype.code()) {
    case DataType::Code::kFloat: return "float" + std::to_string(dtype.bits());
    case DataType::Code::kInt: return "int" + std::to_string(dtype.bits());
    case DataType::Code::kUInt: return "uint" + std::to_string(dtype.bits());
    case DataType::Code::kBool: return "bool";
    default: return dtype.ToString();
  }
}

}  // namespace

vm::Value ToValue(nb::handle argument, const ArgumentContext& context) {
  if (nb::isinstance<PyTensor>(argument)) return vm::Value::FromTensor(nb::cast<PyTensor&>(argument).tensor);
  // bool before int: Python's bool is an int.
  if (PyBool_Check(argument.ptr())) return vm::Value::FromInt(argument.ptr() == Py_True ? 1 : 0);
  if (PyLong_Check(argument.ptr())) return vm::Value::FromInt(nb::cast<int64_t>(argument));
  if (PyFloat_Check(argument.ptr())) return vm::Value::FromFloat(nb::cast<double>(argument));
  if (PyTuple_Check(argument.ptr()) || PyList_Check(argument.ptr())) {
    std::vector<vm::Value> fields;
    size_t i = 0;
    for (nb::handle field : argument) {
      fields.push_back(ToValue(field, ArgumentContext{context.function, context.index, context.param,
                                                      context.path + "[" + std::to_string(i++) + "]"}));
    }
    return vm::Value::FromTuple(std::move(fields));
  }
  HostArray array;
  if (nb::try_cast(argument, array, /*convert=*/true)) return vm::Value::FromTensor(ViewOf(array, context));
  const std::string type = nb::cast<std::string>(nb::str(argument.type().attr("__name__")));
  throw nb::type_error((context.Text() + ": cannot pass a '" + type +
                        "': expected a strata.Tensor, an array on the CPU (anything with __dlpack__ or the buffer "
                        "protocol: numpy, PyTorch, JAX), an int, a float, or a tuple of these")
                           .c_str());
}

nb::object FromValue(const vm::Value& value) {
  switch (value.kind()) {
    case vm::ValueKind::kNull: return nb::none();
    case vm::ValueKind::kInt: return nb::int_(value.int_value());
    case vm::ValueKind::kFloat: return nb::float_(value.float_value());
    case vm::ValueKind::kTensor: return nb::cast(PyTensor{value.tensor_ref()});
    case vm::ValueKind::kShape: {
      nb::list dims;
      for (int64_t d : value.shape()) dims.append(d);
      return nb::tuple(dims);
    }
    case vm::ValueKind::kString: return nb::str(value.string().c_str());
    case vm::ValueKind::kTuple: {
      nb::list fields;
      for (const vm::Value& field : value.tuple()->fields()) fields.append(FromValue(field));
      return nb::tuple(fields);
    }
    default: throw ExecutionErrorEx("the function returned a " + value.Describe() + ", which Python cannot hold");
  }
}

void BindTensor(nb::module_& m) {
  nb::class_<PyTensor>(m, "Tensor",
                       "An n-dimensional array the VM made or was given. It shares its memory with numpy, PyTorch "
                       "and JAX through __dlpack__ and __array__ (np.from_dlpack(t), torch.from_dlpack(t)).")
      .def_prop_ro(
          "shape",
          [](const PyTensor& t) {
            nb::list dims;
            for (int64_t d : t.tensor->shape()) dims.append(d);
            return nb::tuple(dims);
          },
          "The dimensions, as a tuple of ints.")
      .def_prop_ro(
          "dtype", [](const PyTensor& t) { return NumpyDtypeName(t.tensor->dtype()); },
          "The element type, as numpy names it ('float32', 'int64', 'bool').")
      .def_prop_ro(
          "ndim", [](const PyTensor& t) { return t.tensor->ndim(); }, "The rank.")
      .def_prop_ro(
          "size", [](const PyTensor& t) { return t.tensor->num_elements(); }, "The number of elements.")
      .def_prop_ro(
          "nbytes", [](const PyTensor& t) { return t.tensor->num_bytes(); }, "The bytes the elements take.")
      .def_prop_ro(
          "data_ptr", [](const PyTensor& t) { return reinterpret_cast<uintptr_t>(t.tensor->data()); },
          "The address of the first element (to check that views share memory).")
      .def_prop_ro(
          "read_only", [](const PyTensor& t) { return t.tensor->read_only(); },
          "True for a constant of the executable (exported as a copy).")
      .def(
          "__dlpack__",
          [](const PyTensor& t, nb::handle stream, nb::handle max_version, nb::handle dl_device, nb::handle copy) {
            if (!copy.is_none() && nb::cast<bool>(copy)) {
              PyTensor copied{Exportable(t)};
              if (copied.tensor.get() == t.tensor.get()) {
                StatusOr<vm::Ref<vm::Tensor>> fresh = vm::Tensor::Empty(t.tensor->shape(), t.tensor->dtype());
                if (!fresh.ok()) throw ExecutionErrorEx(fresh.status().message());
                if (t.tensor->num_bytes() > 0) {
                  std::memcpy((*fresh)->data(), t.tensor->data(), static_cast<size_t>(t.tensor->num_bytes()));
                }
                copied.tensor = *std::move(fresh);
              }
              return DlpackCapsule(copied);
            }
            if (!max_version.is_none() && nb::cast<int>(max_version[0]) >= 1) return VersionedDlpackCapsule(t);
            return DlpackCapsule(t);
          },
          nb::kw_only(), nb::arg("stream") = nb::none(), nb::arg("max_version") = nb::none(),
          nb::arg("dl_device") = nb::none(), nb::arg("copy") = nb::none(),
          "A DLPack capsule viewing this tensor (the array API's __dlpack__).")
      .def(
          "__dlpack_device__", [](const PyTensor&) { return nb::make_tuple(static_cast<int>(kDLCPU), 0); },
          "(device type, device id): (1, 0), the CPU.")
      .def(
          "__array__",
          [](const PyTensor& t, nb::handle dtype, nb::handle copy) {
            nb::object array = NumpyArray(t);
            if (!dtype.is_none()) array = array.attr("astype")(dtype, nb::arg("copy") = false);
            if (!copy.is_none() && nb::cast<bool>(copy)) array = array.attr("copy")();
            return array;
          },
          nb::arg("dtype") = nb::none(), nb::arg("copy") = nb::none(),
          "A numpy array sharing this tensor's memory (a copy for a read-only constant).")
      .def("numpy", &NumpyArray, "A numpy array sharing this tensor's memory (a copy for a read-only constant).")
      .def("__len__",
           [](const PyTensor& t) {
             if (t.tensor->ndim() == 0) throw nb::type_error("len() of a 0-d tensor");
             return t.tensor->shape()[0];
           })
      .def("__repr__", [](const PyTensor& t) {
        std::string dims;
        for (int64_t d : t.tensor->shape()) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
        if (t.tensor->ndim() == 1) dims += ",";
        return "strata.Tensor(shape=(" + dims + "), dtype=" + NumpyDtypeName(t.tensor->dtype()) + ")";
      });
}

}  // namespace strata::python
