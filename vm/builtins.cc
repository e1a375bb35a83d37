// The VM builtins of docs/vm_builtins.md: shape handling, checks, allocation, tuples.
//
// Every builtin validates its arguments (kinds, counts, indices) because a
// corrupt or hostile executable can pass anything; checks of user data name the
// compiler-provided err_ctx string, as the contract requires.
#include <cinttypes>
#include <cstring>
#include <mutex>
#include <string>

#include "abi/builtin_names.h"
#include "vm/memory_pool.h"
#include "vm/plugged_device.h"
#include "vm/registry.h"
#include "vm/value.h"

namespace strata::vm {
namespace {

// ---- argument helpers --------------------------------------------------------

Status KindError(const char* builtin, int index, const char* param, const char* want, const Value& got) {
  return Status(ErrorStatus() << builtin << ": argument " << index << " (" << param << ") must be " << want << ", got "
                              << got.Describe());
}

Status GetInt(const char* builtin, const Value* const* args, int index, const char* param, int64_t* out_value) {
  const Value& v = *args[index];
  if (!v.is_int()) return KindError(builtin, index, param, "an Int", v);
  *out_value = v.int_value();
  return Status::Ok();
}

Status GetDataType(const char* builtin, const Value* const* args, int index, const char* param, DataType* out_dtype) {
  const Value& v = *args[index];
  if (!v.is_data_type()) return KindError(builtin, index, param, "a DataType", v);
  *out_dtype = v.data_type();
  return Status::Ok();
}

Status GetString(const char* builtin, const Value* const* args, int index, const char* param,
                 const std::string** out_text) {
  const Value& v = *args[index];
  if (!v.is_string()) return KindError(builtin, index, param, "a String", v);
  *out_text = &v.string();
  return Status::Ok();
}

// The shape heap: a 1-D i64 CPU tensor.
Status GetHeap(const char* builtin, const Value* const* args, int index, Tensor** out_heap) {
  const Value& v = *args[index];
  if (!v.is_tensor()) return KindError(builtin, index, "heap", "the shape heap (an i64 tensor)", v);
  Tensor* heap = v.tensor();
  if (heap->ndim() != 1 || heap->dtype() != DataType::I64() || heap->device().device_type != kDLCPU) {
    return KindError(builtin, index, "heap", "the shape heap (a 1-D i64 CPU tensor)", v);
  }
  *out_heap = heap;
  return Status::Ok();
}

Status CheckHeapIndex(const char* builtin, const Tensor* heap, int64_t index) {
  if (heap == nullptr) return Status(ErrorStatus() << builtin << ": uses the shape heap but none was passed");
  if (index < 0 || index >= heap->num_elements()) {
    return Status(ErrorStatus() << builtin << ": shape heap index " << index << " out of range (heap size "
                                << heap->num_elements() << ")");
  }
  return Status::Ok();
}

// Tensors and storages come from the running VM's pool (vm/memory_pool.h); a
// builtin called outside a VM (a test, a user's C++) allocates from the system.
StatusOr<Ref<Tensor>> NewTensor(std::span<const int64_t> shape, DataType dtype) {
  if (MemoryPool* pool = CurrentMemoryPool()) return pool->AllocateTensor(shape, dtype);
  return Tensor::Empty(shape, dtype, kCpuDevice);
}

// ---- builtins ----------------------------------------------------------------

Status ShapeOf(void*, const Value* const* args, int32_t num_args, Value* out_result) {
  constexpr const char* kName = builtin::kShapeOf;
  STRATA_RETURN_IF_ERROR(CheckArgCount(kName, num_args, 1, "t"));
  if (!args[0]->is_tensor()) return KindError(kName, 0, "t", "a Tensor", *args[0]);
  *out_result = Value::FromShape(args[0]->tensor()->shape());
  return Status::Ok();
}

Status AllocShapeHeap(void*, const Value* const* args, int32_t num_args, Value* out_result) {
  constexpr const char* kName = builtin::kAllocShapeHeap;
  STRATA_RETURN_IF_ERROR(CheckArgCount(kName, num_args, 1, "size"));
  int64_t size = 0;
  STRATA_RETURN_IF_ERROR(GetInt(kName, args, 0, "size", &size));
  // A heap holds one slot per symbolic variable; a huge size is a corrupt program.
  constexpr int64_t kMaxHeapSize = int64_t{1} << 24;
  if (size < 0 || size > kMaxHeapSize) {
    return Status(ErrorStatus() << kName << ": size " << size << " out of range (0 to " << kMaxHeapSize << ")");
  }
  int64_t dims[1] = {size};
  STRATA_ASSIGN_OR_RETURN(Ref<Tensor> heap, NewTensor(dims, DataType::I64()));
  if (size > 0) std::memset(heap->data(), 0, static_cast<size_t>(heap->num_bytes()));
  *out_result = Value::FromTensor(std::move(heap));
  return Status::Ok();
}

// An argument that does not fit the signature the check states (its err_ctx
// names the function and parameter): marked, so that front ends tell it from
// a failing program (Status::is_signature_mismatch).
Status Mismatch(Status status) { return std::move(status).MarkSignatureMismatch(); }

Status CheckTensorInfo(void*, const Value* const* args, int32_t num_args, Value*) {
  constexpr const char* kName = builtin::kCheckTensorInfo;
  STRATA_RETURN_IF_ERROR(CheckArgCount(kName, num_args, 4, "v, ndim, dtype, err_ctx"));
  int64_t ndim = 0;
  DataType dtype;
  const std::string* ctx = nullptr;
  STRATA_RETURN_IF_ERROR(GetInt(kName, args, 1, "ndim", &ndim));
  STRATA_RETURN_IF_ERROR(GetDataType(kName, args, 2, "dtype", &dtype));
  STRATA_RETURN_IF_ERROR(GetString(kName, args, 3, "err_ctx", &ctx));
  const Value& v = *args[0];
  if (!v.is_tensor()) return Mismatch(ErrorStatus() << *ctx << ": expected a Tensor, got " << v.Describe());
  const Tensor* t = v.tensor();
  if (ndim != -1 && t->ndim() != ndim) {
    return Mismatch(ErrorStatus() << *ctx << ": expected a tensor of rank " << ndim << ", got rank " << t->ndim()
                                  << " (" << t->TypeString() << ")");
  }
  if (!dtype.is_void() && t->dtype() != dtype) {
    return Mismatch(ErrorStatus() << *ctx << ": expected dtype " << dtype.ToString() << ", got "
                                  << t->dtype().ToString() << " (" << t->TypeString() << ")");
  }
  return Status::Ok();
}

Status CheckShapeInfo(void*, const Value* const* args, int32_t num_args, Value*) {
  constexpr const char* kName = builtin::kCheckShapeInfo;
  STRATA_RETURN_IF_ERROR(CheckArgCount(kName, num_args, 3, "v, ndim, err_ctx"));
  int64_t ndim = 0;
  const std::string* ctx = nullptr;
  STRATA_RETURN_IF_ERROR(GetInt(kName, args, 1, "ndim", &ndim));
  STRATA_RETURN_IF_ERROR(GetString(kName, args, 2, "err_ctx", &ctx));
  const Value& v = *args[0];
  if (!v.is_shape()) return Mismatch(ErrorStatus() << *ctx << ": expected a Shape, got " << v.Describe());
  if (ndim != -1 && static_cast<int64_t>(v.shape().size()) != ndim) {
    return Mismatch(ErrorStatus() << *ctx << ": expected a shape of rank " << ndim << ", got rank " << v.shape().size()
                                  << " " << ShapeToString(v.shape()));
  }
  return Status::Ok();
}

Status CheckPrimInfo(void*, const Value* const* args, int32_t num_args, Value*) {
  constexpr const char* kName = builtin::kCheckPrimInfo;
  STRATA_RETURN_IF_ERROR(CheckArgCount(kName, num_args, 3, "v, dtype, err_ctx"));
  DataType dtype;
  const std::string* ctx = nullptr;
  STRATA_RETURN_IF_ERROR(GetDataType(kName, args, 1, "dtype", &dtype));
  STRATA_RETURN_IF_ERROR(GetString(kName, args, 2, "err_ctx", &ctx));
  const Value& v = *args[0];
  bool ok;
  if (dtype.is_float()) {
    ok = v.is_float();
  } else if (dtype.is_integral() || dtype.is_bool()) {
    ok = v.is_int();
  } else {
    ok = v.is_int() || v.is_float();
  }
  if (!ok) {
    return Mismatch(ErrorStatus() << *ctx << ": expected a " << dtype.ToString() << " scalar, got " << v.Describe());
  }
  return Status::Ok();
}

Status CheckTupleInfo(void*, const Value* const* args, int32_t num_args, Value*) {
  constexpr const char* kName = builtin::kCheckTupleInfo;
  STRATA_RETURN_IF_ERROR(CheckArgCount(kName, num_args, 3, "v, size, err_ctx"));
  int64_t size = 0;
  const std::string* ctx = nullptr;
  STRATA_RETURN_IF_ERROR(GetInt(kName, args, 1, "size", &size));
  STRATA_RETURN_IF_ERROR(GetString(kName, args, 2, "err_ctx", &ctx));
  const Value& v = *args[0];
  if (!v.is_tuple()) return Mismatch(ErrorStatus() << *ctx << ": expected a Tuple, got " << v.Describe());
  if (size != -1 && v.tuple()->size() != size) {
    return Mismatch(ErrorStatus() << *ctx << ": expected a tuple of " << size << " fields, got " << v.tuple()->size());
  }
  return Status::Ok();
}

// match_shape(v, heap, ndim, (code, value, expr) * ndim, err_ctx)
Status MatchShape(void*, const Value* const* args, int32_t num_args, Value*) {
  constexpr const char* kName = builtin::kMatchShape;
  if (num_args < 4) {
    return Status(ErrorStatus() << kName << " expects at least 4 arguments (v, heap, ndim, ..., err_ctx), got "
                                << num_args);
  }
  int64_t ndim = 0;
  STRATA_RETURN_IF_ERROR(GetInt(kName, args, 2, "ndim", &ndim));
  if (ndim < 0 || ndim > (num_args - 4) / 3 || 4 + 3 * ndim != num_args) {
    return Status(ErrorStatus() << kName << ": ndim " << ndim << " needs " << (ndim >= 0 ? 4 + 3 * ndim : 4)
                                << " arguments, got " << num_args);
  }
  const std::string* ctx = nullptr;
  STRATA_RETURN_IF_ERROR(GetString(kName, args, num_args - 1, "err_ctx", &ctx));
  Tensor* heap = nullptr;
  if (!args[1]->is_null()) STRATA_RETURN_IF_ERROR(GetHeap(kName, args, 1, &heap));

  const Value& v = *args[0];
  std::span<const int64_t> dims;
  if (v.is_tensor()) {
    dims = v.tensor()->shape();
  } else if (v.is_shape()) {
    dims = v.shape();
  } else {
    return Mismatch(ErrorStatus() << *ctx << ": expected a Tensor or Shape, got " << v.Describe());
  }
  if (static_cast<int64_t>(dims.size()) != ndim) {
    return Mismatch(ErrorStatus() << *ctx << ": expected rank " << ndim << ", got rank " << dims.size() << " (shape "
                                  << ShapeToString(dims) << ")");
  }
  int64_t* heap_data = heap ? heap->data_as<int64_t>() : nullptr;
  for (int64_t i = 0; i < ndim; ++i) {
    int base = static_cast<int>(3 + 3 * i);
    int64_t code = 0, value = 0;
    STRATA_RETURN_IF_ERROR(GetInt(kName, args, base, "code", &code));
    STRATA_RETURN_IF_ERROR(GetInt(kName, args, base + 1, "value", &value));
    const Value& expr_value = *args[base + 2];
    std::string expr = expr_value.is_string() ? expr_value.string() : std::to_string(value);
    int64_t actual = dims[static_cast<size_t>(i)];
    switch (code) {
      case 0:
        if (actual != value) {
          return Mismatch(ErrorStatus() << *ctx << ": dimension " << i << " expected " << expr << ", got " << actual);
        }
        break;
      case 1:
        STRATA_RETURN_IF_ERROR(CheckHeapIndex(kName, heap, value));
        if (heap->read_only()) return Status(ErrorStatus() << kName << ": the shape heap is a read-only constant");
        heap_data[value] = actual;
        break;
      case 2: {
        STRATA_RETURN_IF_ERROR(CheckHeapIndex(kName, heap, value));
        int64_t bound = heap_data[value];
        if (actual != bound) {
          return Mismatch(ErrorStatus() << *ctx << ": dimension " << i << " expected " << expr << " = " << bound
                                        << ", got " << actual);
        }
        break;
      }
      default:
        return Status(ErrorStatus() << kName << ": dimension " << i << " has invalid code " << code
                                    << " (0 = value, 1 = store, 2 = check)");
    }
  }
  return Status::Ok();
}

// make_shape(heap, ndim, (code, value) * ndim)
Status MakeShape(void*, const Value* const* args, int32_t num_args, Value* out_result) {
  constexpr const char* kName = builtin::kMakeShape;
  if (num_args < 2) {
    return Status(ErrorStatus() << kName << " expects at least 2 arguments (heap, ndim, ...), got " << num_args);
  }
  int64_t ndim = 0;
  STRATA_RETURN_IF_ERROR(GetInt(kName, args, 1, "ndim", &ndim));
  if (ndim < 0 || ndim > (num_args - 2) / 2 || 2 + 2 * ndim != num_args) {
    return Status(ErrorStatus() << kName << ": ndim " << ndim << " needs " << (ndim >= 0 ? 2 + 2 * ndim : 2)
                                << " arguments, got " << num_args);
  }
  Tensor* heap = nullptr;
  if (!args[0]->is_null()) STRATA_RETURN_IF_ERROR(GetHeap(kName, args, 0, &heap));
  constexpr int kInline = 8;
  int64_t inline_dims[kInline];
  std::vector<int64_t> heap_dims;
  int64_t* dims = inline_dims;
  if (ndim > kInline) {
    heap_dims.resize(static_cast<size_t>(ndim));
    dims = heap_dims.data();
  }
  for (int64_t i = 0; i < ndim; ++i) {
    int base = static_cast<int>(2 + 2 * i);
    int64_t code = 0, value = 0;
    STRATA_RETURN_IF_ERROR(GetInt(kName, args, base, "code", &code));
    STRATA_RETURN_IF_ERROR(GetInt(kName, args, base + 1, "value", &value));
    if (code == 0) {
      dims[i] = value;
    } else if (code == 1) {
      STRATA_RETURN_IF_ERROR(CheckHeapIndex(kName, heap, value));
      dims[i] = heap->data_as<int64_t>()[value];
    } else {
      return Status(ErrorStatus() << kName << ": dimension " << i << " has invalid code " << code
                                  << " (0 = value, 1 = heap)");
    }
  }
  *out_result = Value::FromShape(std::span<const int64_t>(dims, static_cast<size_t>(ndim)));
  return Status::Ok();
}

// heap_scalar(heap, slot): heap[slot] as an Int, a symbolic scalar such as the
// condition of an if on shape values (prim(h == 224 && w == 224)).
Status HeapScalar(void*, const Value* const* args, int32_t num_args, Value* out_result) {
  constexpr const char* kName = builtin::kHeapScalar;
  STRATA_RETURN_IF_ERROR(CheckArgCount(kName, num_args, 2, "heap, slot"));
  Tensor* heap = nullptr;
  int64_t slot = 0;
  STRATA_RETURN_IF_ERROR(GetHeap(kName, args, 0, &heap));
  STRATA_RETURN_IF_ERROR(GetInt(kName, args, 1, "slot", &slot));
  STRATA_RETURN_IF_ERROR(CheckHeapIndex(kName, heap, slot));
  *out_result = Value::FromInt(heap->data_as<int64_t>()[slot]);
  return Status::Ok();
}

Status GetDevice(const char* builtin, const Value* const* args, int index, PluggedDevice** out_device);

// check_bound(shape(v), lo, hi, err_ctx): v within [lo, hi], the range a memory
// plan sized its arena for.
Status CheckBound(void*, const Value* const* args, int32_t num_args, Value*) {
  constexpr const char* kName = builtin::kCheckBound;
  STRATA_RETURN_IF_ERROR(CheckArgCount(kName, num_args, 4, "v, lo, hi, err_ctx"));
  const Value& v = *args[0];
  if (!v.is_shape() || v.shape().size() != 1) return KindError(kName, 0, "v", "a Shape of one dimension", v);
  int64_t lo = 0, hi = 0;
  const std::string* ctx = nullptr;
  STRATA_RETURN_IF_ERROR(GetInt(kName, args, 1, "lo", &lo));
  STRATA_RETURN_IF_ERROR(GetInt(kName, args, 2, "hi", &hi));
  STRATA_RETURN_IF_ERROR(GetString(kName, args, 3, "err_ctx", &ctx));
  int64_t value = v.shape()[0];
  if (value < lo || value > hi) return Mismatch(ErrorStatus() << *ctx << ": got " << value);
  return Status::Ok();
}

// alloc_storage(bytes, alignment): `bytes` is an Int, or a one-dimensional Shape
// when the size is symbolic (the plan computes it with make_shape).
Status AllocStorage(void*, const Value* const* args, int32_t num_args, Value* out_result) {
  constexpr const char* kName = builtin::kAllocStorage;
  if (num_args != 3) STRATA_RETURN_IF_ERROR(CheckArgCount(kName, num_args, 2, "bytes, alignment[, device]"));
  int64_t bytes = 0, alignment = 0;
  const Value& size = *args[0];
  if (size.is_shape() && size.shape().size() == 1) {
    bytes = size.shape()[0];
  } else if (size.is_int()) {
    bytes = size.int_value();
  } else {
    return KindError(kName, 0, "bytes", "an Int or a Shape of one dimension", size);
  }
  STRATA_RETURN_IF_ERROR(GetInt(kName, args, 1, "alignment", &alignment));
  if (bytes < 0) return Status(ErrorStatus() << kName << ": negative size " << bytes);
  if (alignment <= 0 || (alignment & (alignment - 1)) != 0 || alignment > 4096) {
    return Status(ErrorStatus() << kName << ": alignment " << alignment << " is not a power of two up to 4096");
  }
  if (num_args == 3) {
    // Device memory (a memory plan's device arena or token): the plug-in's alignment applies.
    PluggedDevice* device = nullptr;
    STRATA_RETURN_IF_ERROR(GetDevice(kName, args, 2, &device));
    auto storage = device->Allocate(bytes);
    if (!storage.ok()) return Status(storage.status()).WithContext(std::string(kName) + ": ");
    *out_result = Value::FromStorage(std::move(storage).value());
    return Status::Ok();
  }
  MemoryPool* pool = CurrentMemoryPool();
  auto storage = pool ? pool->AllocateStorage(bytes, alignment) : Storage::Allocate(bytes, alignment, kCpuDevice);
  if (!storage.ok()) return Status(storage.status()).WithContext(std::string(kName) + ": ");
  *out_result = Value::FromStorage(std::move(storage).value());
  return Status::Ok();
}

Status AllocTensorFromStorage(void*, const Value* const* args, int32_t num_args, Value* out_result) {
  constexpr const char* kName = builtin::kAllocTensorFromStorage;
  STRATA_RETURN_IF_ERROR(CheckArgCount(kName, num_args, 4, "s, offset, shape, dtype"));
  if (!args[0]->is_storage()) return KindError(kName, 0, "s", "a Storage", *args[0]);
  int64_t offset = 0;
  DataType dtype;
  STRATA_RETURN_IF_ERROR(GetInt(kName, args, 1, "offset", &offset));
  if (!args[2]->is_shape()) return KindError(kName, 2, "shape", "a Shape", *args[2]);
  STRATA_RETURN_IF_ERROR(GetDataType(kName, args, 3, "dtype", &dtype));
  auto tensor = Tensor::View(args[0]->storage_ref(), offset, args[2]->shape(), dtype);
  if (!tensor.ok()) return Status(tensor.status()).WithContext(std::string(kName) + ": ");
  *out_result = Value::FromTensor(std::move(tensor).value());
  return Status::Ok();
}

Status AllocTensor(void*, const Value* const* args, int32_t num_args, Value* out_result) {
  constexpr const char* kName = builtin::kAllocTensor;
  STRATA_RETURN_IF_ERROR(CheckArgCount(kName, num_args, 2, "shape, dtype"));
  if (!args[0]->is_shape()) return KindError(kName, 0, "shape", "a Shape", *args[0]);
  DataType dtype;
  STRATA_RETURN_IF_ERROR(GetDataType(kName, args, 1, "dtype", &dtype));
  auto tensor = NewTensor(args[0]->shape(), dtype);
  if (!tensor.ok()) return Status(tensor.status()).WithContext(std::string(kName) + ": ");
  *out_result = Value::FromTensor(std::move(tensor).value());
  return Status::Ok();
}

// ---- devices (vm/plugged_device.h) ----------------------------------------------

Status GetDevice(const char* builtin, const Value* const* args, int index, PluggedDevice** out_device) {
  int64_t device = 0;
  STRATA_RETURN_IF_ERROR(GetInt(builtin, args, index, "device", &device));
  std::span<const std::shared_ptr<PluggedDevice>> devices = CurrentDevices();
  if (device < 0 || static_cast<size_t>(device) >= devices.size()) {
    return Status(ErrorStatus() << builtin << ": device " << device << " out of range (the executable has "
                                << devices.size() << " device" << (devices.size() == 1 ? "" : "s") << ")");
  }
  *out_device = devices[static_cast<size_t>(device)].get();
  return Status::Ok();
}

// to_device(t, device): a copy of host tensor t on the device (asynchronous).
Status ToDevice(void*, const Value* const* args, int32_t num_args, Value* out_result) {
  constexpr const char* kName = builtin::kToDevice;
  STRATA_RETURN_IF_ERROR(CheckArgCount(kName, num_args, 2, "t, device"));
  if (!args[0]->is_tensor()) return KindError(kName, 0, "t", "a Tensor", *args[0]);
  PluggedDevice* device = nullptr;
  STRATA_RETURN_IF_ERROR(GetDevice(kName, args, 1, &device));
  auto copy = device->CopyToDevice(args[0]->tensor_ref());
  if (!copy.ok()) return Status(copy.status()).WithContext(std::string(kName) + ": ");
  *out_result = Value::FromTensor(std::move(copy).value());
  return Status::Ok();
}

// to_host(t): a host copy of device tensor t; waits for the device (the host reads it).
Status ToHost(void*, const Value* const* args, int32_t num_args, Value* out_result) {
  constexpr const char* kName = builtin::kToHost;
  STRATA_RETURN_IF_ERROR(CheckArgCount(kName, num_args, 1, "t"));
  if (!args[0]->is_tensor()) return KindError(kName, 0, "t", "a Tensor", *args[0]);
  const Tensor& t = *args[0]->tensor();
  if (t.device().device_type == kDLCPU) {
    *out_result = *args[0];  // already on the host
    return Status::Ok();
  }
  std::span<const std::shared_ptr<PluggedDevice>> devices = CurrentDevices();
  const int32_t id = t.device().device_id;
  if (t.device().device_type != kDLExtDev || id < 0 || static_cast<size_t>(id) >= devices.size()) {
    return Status(ErrorStatus() << kName << ": the tensor is on " << DeviceName(t.device())
                                << ", which is not a device of this executable");
  }
  auto copy = devices[static_cast<size_t>(id)]->CopyToHost(t, CurrentMemoryPool());
  if (!copy.ok()) return Status(copy.status()).WithContext(std::string(kName) + ": ");
  *out_result = Value::FromTensor(std::move(copy).value());
  return Status::Ok();
}

// alloc_device_tensor(shape, dtype, device): an uninitialized tensor in device memory.
Status AllocDeviceTensor(void*, const Value* const* args, int32_t num_args, Value* out_result) {
  constexpr const char* kName = builtin::kAllocDeviceTensor;
  STRATA_RETURN_IF_ERROR(CheckArgCount(kName, num_args, 3, "shape, dtype, device"));
  if (!args[0]->is_shape()) return KindError(kName, 0, "shape", "a Shape", *args[0]);
  DataType dtype;
  STRATA_RETURN_IF_ERROR(GetDataType(kName, args, 1, "dtype", &dtype));
  PluggedDevice* device = nullptr;
  STRATA_RETURN_IF_ERROR(GetDevice(kName, args, 2, &device));
  if (!IsValidTensorDataType(dtype)) return Status(ErrorStatus() << kName << ": invalid dtype " << dtype.ToString());
  auto bytes = NumBytesOf(args[0]->shape(), dtype);
  if (!bytes.ok()) return Status(bytes.status()).WithContext(std::string(kName) + ": ");
  auto storage = device->Allocate(*bytes);
  if (!storage.ok()) return Status(storage.status()).WithContext(std::string(kName) + ": ");
  auto tensor = Tensor::View(std::move(storage).value(), 0, args[0]->shape(), dtype);
  if (!tensor.ok()) return Status(tensor.status()).WithContext(std::string(kName) + ": ");
  *out_result = Value::FromTensor(std::move(tensor).value());
  return Status::Ok();
}

Status MakeTuple(void*, const Value* const* args, int32_t num_args, Value* out_result) {
  std::vector<Value> fields;
  fields.reserve(static_cast<size_t>(num_args));
  for (int32_t i = 0; i < num_args; ++i) fields.push_back(*args[i]);
  *out_result = Value::FromTuple(std::move(fields));
  return Status::Ok();
}

Status TupleGetItem(void*, const Value* const* args, int32_t num_args, Value* out_result) {
  constexpr const char* kName = builtin::kTupleGetItem;
  STRATA_RETURN_IF_ERROR(CheckArgCount(kName, num_args, 2, "t, i"));
  if (!args[0]->is_tuple()) return KindError(kName, 0, "t", "a Tuple", *args[0]);
  int64_t index = 0;
  STRATA_RETURN_IF_ERROR(GetInt(kName, args, 1, "i", &index));
  const Tuple* tuple = args[0]->tuple();
  if (index < 0 || index >= tuple->size()) {
    return Status(ErrorStatus() << kName << ": index " << index << " out of range (tuple of " << tuple->size() << ")");
  }
  *out_result = (*tuple)[index];
  return Status::Ok();
}

Status Copy(void*, const Value* const* args, int32_t num_args, Value* out_result) {
  STRATA_RETURN_IF_ERROR(CheckArgCount(builtin::kCopy, num_args, 1, "v"));
  *out_result = *args[0];
  return Status::Ok();
}

Status Null(void*, const Value* const*, int32_t num_args, Value* out_result) {
  STRATA_RETURN_IF_ERROR(CheckArgCount(builtin::kNull, num_args, 0, ""));
  *out_result = Value();
  return Status::Ok();
}

struct BuiltinEntry {
  const char* name;
  LibraryFn fn;
};
constexpr BuiltinEntry kBuiltins[] = {
    {builtin::kShapeOf, &ShapeOf},
    {builtin::kAllocShapeHeap, &AllocShapeHeap},
    {builtin::kCheckTensorInfo, &CheckTensorInfo},
    {builtin::kCheckShapeInfo, &CheckShapeInfo},
    {builtin::kCheckPrimInfo, &CheckPrimInfo},
    {builtin::kCheckTupleInfo, &CheckTupleInfo},
    {builtin::kMatchShape, &MatchShape},
    {builtin::kMakeShape, &MakeShape},
    {builtin::kHeapScalar, &HeapScalar},
    {builtin::kCheckBound, &CheckBound},
    {builtin::kAllocStorage, &AllocStorage},
    {builtin::kAllocTensorFromStorage, &AllocTensorFromStorage},
    {builtin::kAllocTensor, &AllocTensor},
    {builtin::kToDevice, &ToDevice},
    {builtin::kToHost, &ToHost},
    {builtin::kAllocDeviceTensor, &AllocDeviceTensor},
    {builtin::kTuple, &MakeTuple},
    {builtin::kTupleGetItem, &TupleGetItem},
    {builtin::kCopy, &Copy},
    {builtin::kNull, &Null},
};

}  // namespace

void RegisterBuiltins() {
  static std::once_flag once;
  std::call_once(once, [] {
    // A name a user registered first keeps the user's function.
    for (const BuiltinEntry& entry : kBuiltins) (void)RegisterLibraryFunction(entry.name, entry.fn);
  });
}

}  // namespace strata::vm
