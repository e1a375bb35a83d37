// Tensor creation, views and host copies.
#include "vm/tensor.h"

#include <cstddef>
#include <limits>
#include <sstream>

#include "abi/kernel_abi.h"

namespace strata::vm {

// Compiled kernels' VM entries find a tensor's DLTensor at a fixed offset from
// the object a Value points at (kernel_abi.h). Tensor is not standard-layout
// (Object has a vtable), but GCC and Clang lay out single inheritance the one
// way and evaluate offsetof on it; a change fails here, not in a kernel.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
struct TensorKernelAbiLayout {
  static_assert(offsetof(Tensor, dl_) == STRATA_VM_TENSOR_DLTENSOR_OFFSET);
};
#pragma GCC diagnostic pop

namespace {
constexpr int64_t kMaxTensorBytes = int64_t{1} << 62;
}  // namespace

bool IsValidTensorDataType(DataType dtype) {
  switch (dtype.code()) {
    case DataType::Code::kInt:
    case DataType::Code::kUInt:
      return dtype.bits() == 8 || dtype.bits() == 16 || dtype.bits() == 32 || dtype.bits() == 64;
    case DataType::Code::kFloat: return dtype.bits() == 16 || dtype.bits() == 32 || dtype.bits() == 64;
    case DataType::Code::kBool: return dtype.bits() == 1 || dtype.bits() == 8;
    default: return false;
  }
}

StatusOr<int64_t> NumElementsOf(std::span<const int64_t> shape) {
  int64_t count = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) return Status(ErrorStatus() << "dimension " << i << " is negative (" << shape[i] << ")");
    if (shape[i] != 0 && count > kMaxTensorBytes / shape[i]) {
      return Status(ErrorStatus() << "tensor of shape " << ShapeToString(shape) << " is too large");
    }
    count *= shape[i];
  }
  return count;
}

StatusOr<int64_t> NumBytesOf(std::span<const int64_t> shape, DataType dtype) {
  STRATA_ASSIGN_OR_RETURN(int64_t count, NumElementsOf(shape));
  if (count > kMaxTensorBytes / 8) {
    return Status(ErrorStatus() << "tensor of shape " << ShapeToString(shape) << " is too large");
  }
  return count * dtype.bytes();
}

std::string ShapeToString(std::span<const int64_t> shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(shape[i]);
  }
  if (shape.size() == 1) out += ",";
  return out + ")";
}

Tensor::Tensor(std::span<const int64_t> shape, DataType dtype, DLDevice device, void* data, int64_t num_elements,
               Ref<Storage> storage)
    : num_elements_(num_elements), storage_(std::move(storage)) {
  int64_t* dims = inline_shape_;
  if (shape.size() > static_cast<size_t>(kInlineDims)) {
    heap_shape_ = std::make_unique<int64_t[]>(shape.size());
    dims = heap_shape_.get();
  }
  for (size_t i = 0; i < shape.size(); ++i) dims[i] = shape[i];
  dl_.data = data;
  dl_.device = device;
  dl_.ndim = static_cast<int32_t>(shape.size());
  dl_.dtype = ToDLDataType(dtype);
  dl_.shape = dims;
  dl_.strides = nullptr;
  dl_.byte_offset = 0;
}

Tensor::~Tensor() {
  if (!storage_) {
    FreeDeviceMemory(dl_.device, dl_.data);
  } else if (StoragePool* pool = storage_->pool()) {
    pool->AddTensorBytes(-num_bytes());
  }
}

StatusOr<Ref<Tensor>> Tensor::Empty(std::span<const int64_t> shape, DataType dtype, DLDevice device) {
  if (!IsValidTensorDataType(dtype)) {
    return Status(ErrorStatus() << "cannot allocate a tensor of dtype " << dtype.ToString());
  }
  if (shape.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return Status(ErrorStatus() << "tensor rank " << shape.size() << " is too large");
  }
  STRATA_ASSIGN_OR_RETURN(int64_t count, NumElementsOf(shape));
  STRATA_ASSIGN_OR_RETURN(int64_t nbytes, NumBytesOf(shape, dtype));
  STRATA_ASSIGN_OR_RETURN(void* data, AllocateDeviceMemory(device, nbytes, kDefaultAlignment));
  return Ref<Tensor>(new Tensor(shape, dtype, device, data, count, nullptr));
}

StatusOr<Ref<Tensor>> Tensor::FromHost(std::span<const int64_t> shape, DataType dtype, std::span<const uint8_t> bytes) {
  STRATA_ASSIGN_OR_RETURN(Ref<Tensor> tensor, Empty(shape, dtype, kCpuDevice));
  if (static_cast<int64_t>(bytes.size()) != tensor->num_bytes()) {
    return Status(ErrorStatus() << "a " << tensor->TypeString() << " holds " << tensor->num_bytes() << " bytes, got "
                                << bytes.size());
  }
  if (!bytes.empty()) std::memcpy(tensor->data(), bytes.data(), bytes.size());
  return tensor;
}

StatusOr<Ref<Tensor>> Tensor::View(Ref<Storage> storage, int64_t byte_offset, std::span<const int64_t> shape,
                                   DataType dtype) {
  if (!storage) return Status(ErrorStatus() << "cannot view a null storage");
  if (!IsValidTensorDataType(dtype)) {
    return Status(ErrorStatus() << "cannot create a tensor of dtype " << dtype.ToString());
  }
  STRATA_ASSIGN_OR_RETURN(int64_t count, NumElementsOf(shape));
  STRATA_ASSIGN_OR_RETURN(int64_t nbytes, NumBytesOf(shape, dtype));
  if (byte_offset < 0 || byte_offset > storage->nbytes() || nbytes > storage->nbytes() - byte_offset) {
    return Status(ErrorStatus() << "a tensor of " << nbytes << " bytes at offset " << byte_offset
                                << " does not fit in a storage of " << storage->nbytes() << " bytes");
  }
  DLDevice device = storage->device();
  if (StoragePool* pool = storage->pool()) pool->AddTensorBytes(nbytes);
  if (device.device_type != kDLCPU) {
    // Device memory is a handle the host never dereferences: no pointer
    // arithmetic on it; the offset travels in byte_offset (vm/plugged_device.h).
    void* handle = storage->data();
    Ref<Tensor> t(new Tensor(shape, dtype, device, handle, count, std::move(storage)));
    t->dl_.byte_offset = static_cast<uint64_t>(byte_offset);
    return t;
  }
  void* data = static_cast<uint8_t*>(storage->data()) + byte_offset;
  return Ref<Tensor>(new Tensor(shape, dtype, device, data, count, std::move(storage)));
}

Status Tensor::CopyToHost(std::span<uint8_t> out_bytes) const {
  if (dl_.device.device_type != kDLCPU) {
    return Status(ErrorStatus() << "cannot copy a tensor on " << DeviceName(dl_.device) << " to the host");
  }
  if (static_cast<int64_t>(out_bytes.size()) != num_bytes()) {
    return Status(ErrorStatus() << "a " << TypeString() << " holds " << num_bytes() << " bytes, the destination has "
                                << out_bytes.size());
  }
  if (!out_bytes.empty()) std::memcpy(out_bytes.data(), dl_.data, out_bytes.size());
  return Status::Ok();
}

std::string Tensor::TypeString() const {
  std::string out = "Tensor[" + ShapeToString(shape()) + ", " + dtype().ToString();
  if (dl_.device.device_type != kDLCPU) out += ", " + DeviceName(dl_.device);
  return out + "]";
}

}  // namespace strata::vm
