// Protocol tensors; see tensor_codec.h.
#include "apps/server/tensor_codec.h"

#include <cmath>
#include <cstring>

#include <rapidjson/stringbuffer.h>

#include "support/half_float.h"

namespace strata::server {
namespace {

struct NamedType {
  const char* name;
  DataType dtype;
};

const NamedType kTypes[] = {
    {"BOOL", DataType::Bool()},     {"UINT8", DataType::UInt(8)},   {"UINT16", DataType::UInt(16)},
    {"UINT32", DataType::UInt(32)}, {"UINT64", DataType::UInt(64)}, {"INT8", DataType::Int(8)},
    {"INT16", DataType::Int(16)},   {"INT32", DataType::Int(32)},   {"INT64", DataType::Int(64)},
    {"FP16", DataType::Float(16)},  {"FP32", DataType::F32()},      {"FP64", DataType::F64()},
};

constexpr int kMaxDataDepth = 64;

// The number of leaves of a (possibly nested) JSON array; -1 when it nests
// deeper than kMaxDataDepth.
int64_t CountLeaves(const rapidjson::Value& v, int depth) {
  if (!v.IsArray()) return 1;
  if (depth > kMaxDataDepth) return -1;
  int64_t n = 0;
  for (const rapidjson::Value& item : v.GetArray()) {
    const int64_t m = CountLeaves(item, depth + 1);
    if (m < 0) return -1;
    n += m;
  }
  return n;
}

template <typename T>
bool StoreNumber(const rapidjson::Value& v, uint8_t* dst) {
  T value;
  if constexpr (std::is_same_v<T, bool>) {
    if (v.IsBool()) {
      value = v.GetBool();
    } else if (v.IsInt64() && (v.GetInt64() == 0 || v.GetInt64() == 1)) {
      value = v.GetInt64() != 0;
    } else {
      return false;
    }
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!v.IsNumber()) return false;
    const double x = v.GetDouble();
    value = static_cast<T>(x);
    // A finite value past the type's range would silently become infinite.
    if (std::isinf(value) && !std::isinf(x)) return false;
  } else if constexpr (std::is_signed_v<T>) {
    if (!v.IsInt64()) return false;
    const int64_t x = v.GetInt64();
    if (x < std::numeric_limits<T>::min() || x > std::numeric_limits<T>::max()) return false;
    value = static_cast<T>(x);
  } else {
    if (!v.IsUint64()) return false;
    const uint64_t x = v.GetUint64();
    if (x > std::numeric_limits<T>::max()) return false;
    value = static_cast<T>(x);
  }
  std::memcpy(dst, &value, sizeof value);
  return true;
}

bool StoreElement(DataType dtype, const rapidjson::Value& v, uint8_t* dst) {
  switch (dtype.code()) {
    case DataType::Code::kBool: return StoreNumber<bool>(v, dst);
    case DataType::Code::kFloat:
      if (dtype.bits() == 16) {
        if (!v.IsNumber()) return false;
        const double x = v.GetDouble();
        const uint16_t h = FloatToHalf(static_cast<float>(x));
        if ((h & 0x7fff) == 0x7c00 && !std::isinf(x)) return false;  // finite, past FP16's range
        std::memcpy(dst, &h, sizeof h);
        return true;
      }
      return dtype.bits() == 32 ? StoreNumber<float>(v, dst) : StoreNumber<double>(v, dst);
    case DataType::Code::kInt:
      switch (dtype.bits()) {
        case 8: return StoreNumber<int8_t>(v, dst);
        case 16: return StoreNumber<int16_t>(v, dst);
        case 32: return StoreNumber<int32_t>(v, dst);
        default: return StoreNumber<int64_t>(v, dst);
      }
    case DataType::Code::kUInt:
      switch (dtype.bits()) {
        case 8: return StoreNumber<uint8_t>(v, dst);
        case 16: return StoreNumber<uint16_t>(v, dst);
        case 32: return StoreNumber<uint32_t>(v, dst);
        default: return StoreNumber<uint64_t>(v, dst);
      }
    default: return false;
  }
}

}  // namespace

std::optional<DataType> DataTypeFromProtocol(std::string_view name) {
  for (const NamedType& t : kTypes) {
    if (name == t.name) return t.dtype;
  }
  return std::nullopt;
}

std::string ProtocolDataType(DataType dtype) {
  for (const NamedType& t : kTypes) {
    if (t.dtype == dtype) return t.name;
  }
  return dtype.ToString();
}

StatusOr<vm::Ref<vm::Tensor>> TensorFromJson(const rapidjson::Value& data, std::span<const int64_t> shape,
                                             DataType dtype, const std::string& what) {
  STRATA_ASSIGN_OR_RETURN(int64_t count, vm::NumElementsOf(shape));
  const int64_t leaves = data.IsArray() ? CountLeaves(data, 0) : -1;
  if (leaves < 0) {
    return Status(ErrorStatus() << what << ": 'data' must be an array of the elements (at most " << kMaxDataDepth
                                << " levels deep)");
  }
  if (leaves != count) {
    return Status(ErrorStatus() << what << ": 'data' has " << leaves << " elements, the shape "
                                << vm::ShapeToString(shape) << " needs " << count);
  }
  STRATA_ASSIGN_OR_RETURN(vm::Ref<vm::Tensor> tensor, vm::Tensor::Empty(shape, dtype));
  uint8_t* dst = static_cast<uint8_t*>(tensor->data());
  const int64_t size = dtype.bytes();
  // Depth-first over the nesting (already bounded by CountLeaves), writing each
  // leaf in place: no list of the leaves, which would cost 8 bytes an element.
  int64_t i = 0;
  auto store = [&](auto& self, const rapidjson::Value& v) -> bool {
    if (v.IsArray()) {
      for (const rapidjson::Value& item : v.GetArray()) {
        if (!self(self, item)) return false;
      }
      return true;
    }
    if (!StoreElement(dtype, v, dst + i * size)) return false;
    ++i;
    return true;
  };
  if (!store(store, data)) {
    return Status(ErrorStatus() << what << ": element " << i << " of 'data' is not a valid " << ProtocolDataType(dtype)
                                << " value"
                                << (dtype.is_float() ? " (a number within its range, NaN or Infinity)" : ""));
  }
  return tensor;
}

StatusOr<vm::Ref<vm::Tensor>> TensorFromBinary(std::span<const uint8_t> bytes, std::span<const int64_t> shape,
                                               DataType dtype, std::shared_ptr<const void> owner,
                                               const std::string& what) {
  STRATA_ASSIGN_OR_RETURN(int64_t nbytes, vm::NumBytesOf(shape, dtype));
  if (static_cast<int64_t>(bytes.size()) != nbytes) {
    return Status(ErrorStatus() << what << ": binary_data_size is " << bytes.size() << " bytes, the shape "
                                << vm::ShapeToString(shape) << " of " << ProtocolDataType(dtype) << " needs "
                                << nbytes);
  }
  // Elements must be aligned for the kernels' loads; a body offset that is not
  // (the JSON header has any length) costs one copy.
  if (nbytes == 0 || reinterpret_cast<uintptr_t>(bytes.data()) % static_cast<uintptr_t>(dtype.bytes()) != 0) {
    STRATA_ASSIGN_OR_RETURN(vm::Ref<vm::Tensor> copy, vm::Tensor::Empty(shape, dtype));
    if (nbytes > 0) std::memcpy(copy->data(), bytes.data(), static_cast<size_t>(nbytes));
    return copy;
  }
  vm::Ref<vm::Storage> storage =
      vm::Storage::WrapExternal(const_cast<uint8_t*>(bytes.data()), nbytes, vm::kCpuDevice, std::move(owner));
  return vm::Tensor::View(std::move(storage), 0, shape, dtype);
}

void WriteJsonData(const vm::Tensor& tensor, JsonWriter& out) {
  const DataType dtype = tensor.dtype();
  const uint8_t* p = static_cast<const uint8_t*>(tensor.data());
  const int64_t size = dtype.bytes();
  out.StartArray();
  for (int64_t i = 0; i < tensor.num_elements(); ++i, p += size) {
    switch (dtype.code()) {
      case DataType::Code::kBool: out.Bool(*p != 0); break;
      case DataType::Code::kFloat:
        if (dtype.bits() == 16) {
          uint16_t h;
          std::memcpy(&h, p, 2);
          out.Double(HalfToFloat(h));
        } else if (dtype.bits() == 32) {
          float f;
          std::memcpy(&f, p, 4);
          out.Double(f);
        } else {
          double d;
          std::memcpy(&d, p, 8);
          out.Double(d);
        }
        break;
      case DataType::Code::kInt: {
        int64_t v = 0;
        if (dtype.bits() == 8) v = *reinterpret_cast<const int8_t*>(p);
        if (dtype.bits() == 16) v = *reinterpret_cast<const int16_t*>(p);
        if (dtype.bits() == 32) v = *reinterpret_cast<const int32_t*>(p);
        if (dtype.bits() == 64) v = *reinterpret_cast<const int64_t*>(p);
        out.Int64(v);
        break;
      }
      default: {
        uint64_t v = 0;
        std::memcpy(&v, p, static_cast<size_t>(size));  // little-endian
        out.Uint64(v);
      }
    }
  }
  out.EndArray();
}

}  // namespace strata::server
