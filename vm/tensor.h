// Tensor: an n-dimensional array in the DLPack DLTensor layout.
//
// A Tensor is compact and row-major (strides == nullptr; on the CPU byte_offset ==
// 0 and `data` points at the first element; on a plugged-in device `data` is the
// buffer handle and byte_offset the tensor's place in it), lives on one device, and either owns its
// memory or views a Storage (memory planning, tensor constants inside a mapped
// executable). `dl()` is what kernels receive, unchanged.
//
// Ownership: Tensors are reference counted (Ref<Tensor>); the memory lives as
// long as the tensor or the storage it views.
// Thread-safety: shape, dtype and device are immutable; element data is not
// synchronized. Tensors marked read-only (constants of an Executable, shared by
// all VMs) must not be written; builtins that write check it.
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <dlpack/dlpack.h>

#include "support/data_type.h"
#include "support/status.h"
#include "vm/device.h"
#include "vm/object.h"
#include "vm/storage.h"

namespace strata::vm {

// DataType <-> DLDataType: the codes are DLPack's, lanes are always 1.
inline DLDataType ToDLDataType(DataType dtype) {
  return DLDataType{static_cast<uint8_t>(dtype.code()), static_cast<uint8_t>(dtype.bits()), 1};
}
inline DataType FromDLDataType(DLDataType dtype) {
  return DataType(static_cast<DataType::Code>(dtype.code), dtype.bits);
}
// True for the element types tensors can hold: i8..i64, u8..u64, f16/f32/f64, bool.
bool IsValidTensorDataType(DataType dtype);

// The DataType of a C++ element type (float -> f32, bool -> bool, ...).
template <typename T>
struct DataTypeOf;
#define STRATA_DATA_TYPE_OF(type, value)      \
  template <>                                 \
  struct DataTypeOf<type> {                   \
    static constexpr DataType kValue = value; \
  };
STRATA_DATA_TYPE_OF(float, DataType::F32())
STRATA_DATA_TYPE_OF(double, DataType::F64())
STRATA_DATA_TYPE_OF(int8_t, DataType::Int(8))
STRATA_DATA_TYPE_OF(int16_t, DataType::Int(16))
STRATA_DATA_TYPE_OF(int32_t, DataType::Int(32))
STRATA_DATA_TYPE_OF(int64_t, DataType::Int(64))
STRATA_DATA_TYPE_OF(uint8_t, DataType::UInt(8))
STRATA_DATA_TYPE_OF(uint16_t, DataType::UInt(16))
STRATA_DATA_TYPE_OF(uint32_t, DataType::UInt(32))
STRATA_DATA_TYPE_OF(uint64_t, DataType::UInt(64))
STRATA_DATA_TYPE_OF(bool, DataType::Bool())
#undef STRATA_DATA_TYPE_OF

// Elements of a tensor of `shape`: an error if a dimension is negative or the
// count overflows (more than 2^62 elements or bytes).
StatusOr<int64_t> NumElementsOf(std::span<const int64_t> shape);
StatusOr<int64_t> NumBytesOf(std::span<const int64_t> shape, DataType dtype);
// "(2, 3)", "(5,)", "()": the text IR's shape syntax.
std::string ShapeToString(std::span<const int64_t> shape);

class Tensor final : public Object {
 public:
  // A new uninitialized tensor, data aligned to kDefaultAlignment (64 bytes).
  static StatusOr<Ref<Tensor>> Empty(std::span<const int64_t> shape, DataType dtype, DLDevice device = kCpuDevice);
  static StatusOr<Ref<Tensor>> Empty(std::initializer_list<int64_t> shape, DataType dtype,
                                     DLDevice device = kCpuDevice) {
    return Empty(std::span<const int64_t>(shape.begin(), shape.size()), dtype, device);
  }
  // A new CPU tensor holding a copy of `bytes` (row-major, exactly the tensor's size).
  static StatusOr<Ref<Tensor>> FromHost(std::span<const int64_t> shape, DataType dtype, std::span<const uint8_t> bytes);
  // A new CPU tensor of the element type T holding a copy of `values`.
  template <typename T>
  static StatusOr<Ref<Tensor>> FromValues(std::span<const int64_t> shape, std::span<const T> values);
  template <typename T>
  static StatusOr<Ref<Tensor>> FromValues(std::initializer_list<int64_t> shape, std::initializer_list<T> values) {
    return FromValues<T>(std::span<const int64_t>(shape.begin(), shape.size()),
                         std::span<const T>(values.begin(), values.size()));
  }
  // A view of `shape`/`dtype` at `byte_offset` into `storage`; an error if it
  // does not fit inside the storage.
  static StatusOr<Ref<Tensor>> View(Ref<Storage> storage, int64_t byte_offset, std::span<const int64_t> shape,
                                    DataType dtype);

  // The DLPack view handed to kernels. Valid while this tensor lives.
  const DLTensor* dl() const { return &dl_; }
  DLTensor* dl() { return &dl_; }

  std::span<const int64_t> shape() const { return {dl_.shape, static_cast<size_t>(dl_.ndim)}; }
  int32_t ndim() const { return dl_.ndim; }
  DataType dtype() const { return FromDLDataType(dl_.dtype); }
  DLDevice device() const { return dl_.device; }
  void* data() const { return dl_.data; }
  template <typename T>
  T* data_as() const {
    return static_cast<T*>(dl_.data);
  }
  int64_t num_elements() const { return num_elements_; }
  int64_t num_bytes() const { return num_elements_ * dtype().bytes(); }
  // The storage this tensor views, or null when the tensor owns its memory.
  const Ref<Storage>& storage() const { return storage_; }

  bool read_only() const { return read_only_; }
  // Marks the tensor immutable (done by the loader before constants are shared).
  void MarkReadOnly() { read_only_ = true; }

  // Copies the elements into `out_bytes`, which must be exactly num_bytes() long.
  Status CopyToHost(std::span<uint8_t> out_bytes) const;
  // The elements as T; an error if T is not the tensor's dtype or it is not on the CPU.
  template <typename T>
  StatusOr<std::vector<T>> ToVector() const;

  // "Tensor[(2, 3), f32]" (with the device when it is not the CPU).
  std::string TypeString() const;

 private:
  static constexpr int kInlineDims = 6;
  Tensor(std::span<const int64_t> shape, DataType dtype, DLDevice device, void* data, int64_t num_elements,
         Ref<Storage> storage);
  ~Tensor() override;

  // Checks that dl_ is where kernel_abi.h tells compiled kernels' VM entries.
  friend struct TensorKernelAbiLayout;

  DLTensor dl_;
  int64_t num_elements_;
  Ref<Storage> storage_;  // null: dl_.data is owned and freed by this tensor
  bool read_only_ = false;
  int64_t inline_shape_[kInlineDims];
  std::unique_ptr<int64_t[]> heap_shape_;
};

template <typename T>
StatusOr<Ref<Tensor>> Tensor::FromValues(std::span<const int64_t> shape, std::span<const T> values) {
  constexpr DataType dtype = DataTypeOf<T>::kValue;
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(values.begin(), values.end());
    return FromHost(shape, dtype, bytes);
  } else {
    return FromHost(shape, dtype,
                    std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(values.data()), values.size_bytes()));
  }
}

template <typename T>
StatusOr<std::vector<T>> Tensor::ToVector() const {
  constexpr DataType want = DataTypeOf<T>::kValue;
  if (dtype() != want) {
    return Status(ErrorStatus() << "cannot read a " << TypeString() << " as " << want.ToString() << " elements");
  }
  if (dl_.device.device_type != kDLCPU) {
    return Status(ErrorStatus() << "cannot read a tensor on " << DeviceName(dl_.device) << " from the host");
  }
  std::vector<T> out(static_cast<size_t>(num_elements_));
  if constexpr (std::is_same_v<T, bool>) {
    const uint8_t* src = static_cast<const uint8_t*>(dl_.data);
    for (int64_t i = 0; i < num_elements_; ++i) out[i] = src[i] != 0;
  } else if (num_elements_ > 0) {
    std::memcpy(out.data(), dl_.data, static_cast<size_t>(num_bytes()));
  }
  return out;
}

}  // namespace strata::vm
