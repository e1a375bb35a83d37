// ONNX tensors and values at import time: TensorProto -> host data, dtype
// mapping, and the NodeContext / OnnxValue accessors (see onnx_context.h).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "compiler/frontend/onnx/onnx_context.h"
#include "compiler/ir/printer.h"
#include "support/half_float.h"
#include "support/numeric_range.h"

namespace strata::frontend::onnx_import {

graph::StructInfo OnnxValue::sinfo() const {
  if (expr.defined() && expr->struct_info.defined()) return expr->struct_info;
  if (constant) return graph::ConstantNode::make(constant)->struct_info;
  if (symbolic) {
    std::vector<PrimExpr> shape;
    if (!symbolic_scalar) shape.push_back(static_cast<int64_t>(symbolic->size()));
    return graph::TensorStructInfoNode::make(std::move(shape), DataType::I64());
  }
  return graph::ObjectStructInfoNode::make();
}

StatusOr<DataType> DataTypeFromOnnx(int32_t onnx_type) {
  switch (onnx_type) {
    case onnx::TensorProto::FLOAT: return DataType::F32();
    case onnx::TensorProto::DOUBLE: return DataType::F64();
    case onnx::TensorProto::FLOAT16: return DataType::Float(16);
    case onnx::TensorProto::INT8: return DataType::Int(8);
    case onnx::TensorProto::INT16: return DataType::Int(16);
    case onnx::TensorProto::INT32: return DataType::Int(32);
    case onnx::TensorProto::INT64: return DataType::I64();
    case onnx::TensorProto::UINT8: return DataType::UInt(8);
    case onnx::TensorProto::BOOL: return DataType::Bool();
    default:
      return ErrorStatus() << "ONNX element type " << onnx_type << " ("
                           << onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(onnx_type))
                           << ") is not supported";
  }
}

namespace {

// The bytes of a tensor stored outside the model. `location` must stay inside
// `dir` (relative, no ".."): a model must not make the compiler read any file.
StatusOr<std::string> ReadExternalData(const onnx::TensorProto& proto, const std::string& dir, size_t bytes) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const onnx::StringStringEntryProto& entry : proto.external_data()) {
    if (entry.key() == "location") {
      location = entry.value();
    } else if (entry.key() == "offset" || entry.key() == "length") {
      int64_t value = -1;
      const char* begin = entry.value().data();
      const char* end = begin + entry.value().size();
      auto [at, ec] = std::from_chars(begin, end, value);
      if (ec != std::errc() || at != end || value < 0) {
        return ErrorStatus() << "external data " << entry.key() << " '" << entry.value()
                             << "' is not a non-negative integer";
      }
      (entry.key() == "offset" ? offset : length) = value;
    }
  }
  if (location.empty()) return ErrorStatus() << "external data without a location";
  const std::filesystem::path relative(location);
  if (relative.is_absolute() || std::find(relative.begin(), relative.end(), "..") != relative.end()) {
    return ErrorStatus() << "external data location '" << location
                         << "' must be a path relative to the model's folder, without '..'";
  }
  if (dir.empty()) {
    return ErrorStatus() << "stored in external file '" << location
                         << "', but the model was not read from a file (import the .onnx file, or set "
                            "external_data_dir)";
  }
  if (length >= 0 && static_cast<size_t>(length) != bytes) {
    return ErrorStatus() << "external data length " << length << " bytes, the tensor needs " << bytes;
  }
  const std::filesystem::path path = std::filesystem::path(dir) / relative;
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrorStatus(StatusCode::kNotFound) << "cannot open external data file '" << path.string() << "'";
  in.seekg(0, std::ios::end);
  const auto size = static_cast<int64_t>(in.tellg());
  if (offset > size || static_cast<int64_t>(bytes) > size - offset) {
    return ErrorStatus() << "external data file '" << path.string() << "' has " << size << " bytes; the tensor needs "
                         << bytes << " at offset " << offset;
  }
  std::string data(bytes, '\0');
  in.seekg(offset);
  in.read(data.data(), static_cast<std::streamsize>(bytes));
  if (!in) return ErrorStatus() << "cannot read external data file '" << path.string() << "'";
  return data;
}

}  // namespace

StatusOr<std::shared_ptr<const graph::HostTensor>> TensorFromProto(const onnx::TensorProto& proto,
                                                                   const std::string& external_data_dir) {
  auto tensor = std::make_shared<graph::HostTensor>();
  STRATA_ASSIGN_OR_RETURN(tensor->dtype, DataTypeFromOnnx(proto.data_type()));
  int64_t count = 1;
  for (int64_t d : proto.dims()) {
    if (d < 0) return ErrorStatus() << "negative dimension " << d;
    // A hostile model must not make the importer allocate without bound.
    if (d > 0 && count > (int64_t{1} << 40) / d) return ErrorStatus() << "more than 2^40 elements";
    tensor->shape.push_back(d);
    count *= d;
  }
  const size_t bytes = static_cast<size_t>(count) * static_cast<size_t>(tensor->dtype.bytes());
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    STRATA_ASSIGN_OR_RETURN(std::string data, ReadExternalData(proto, external_data_dir, bytes));
    tensor->bytes.assign(data.begin(), data.end());
    return std::shared_ptr<const graph::HostTensor>(std::move(tensor));
  }
  // The data must be there before anything is allocated for it.
  if (proto.has_raw_data() && proto.raw_data().size() != bytes) {
    return ErrorStatus() << "raw data of " << proto.raw_data().size() << " bytes for " << count << " elements of "
                         << tensor->dtype.ToString();
  }
  if (!proto.has_raw_data() && count > 0) {
    const int64_t stored =
        proto.float_data_size() + proto.double_data_size() + proto.int64_data_size() + proto.int32_data_size();
    if (stored != count) return ErrorStatus() << "holds " << stored << " values for " << count << " elements";
  }
  tensor->bytes.resize(bytes);
  auto copy_typed = [&](const auto& field, auto element) -> Status {
    using T = decltype(element);
    if (static_cast<int64_t>(field.size()) != count) {
      return ErrorStatus() << "holds " << field.size() << " values for " << count << " elements";
    }
    for (int64_t i = 0; i < count; ++i) {
      T v = static_cast<T>(field.Get(static_cast<int>(i)));
      std::memcpy(tensor->bytes.data() + i * sizeof(T), &v, sizeof(T));
    }
    return Status::Ok();
  };
  if (proto.has_raw_data()) {
    if (bytes > 0) std::memcpy(tensor->bytes.data(), proto.raw_data().data(), bytes);
  } else if (count > 0) {
    switch (proto.data_type()) {
      case onnx::TensorProto::FLOAT: STRATA_RETURN_IF_ERROR(copy_typed(proto.float_data(), float{})); break;
      case onnx::TensorProto::DOUBLE: STRATA_RETURN_IF_ERROR(copy_typed(proto.double_data(), double{})); break;
      case onnx::TensorProto::INT64: STRATA_RETURN_IF_ERROR(copy_typed(proto.int64_data(), int64_t{})); break;
      case onnx::TensorProto::INT32: STRATA_RETURN_IF_ERROR(copy_typed(proto.int32_data(), int32_t{})); break;
      case onnx::TensorProto::INT16: STRATA_RETURN_IF_ERROR(copy_typed(proto.int32_data(), int16_t{})); break;
      case onnx::TensorProto::INT8: STRATA_RETURN_IF_ERROR(copy_typed(proto.int32_data(), int8_t{})); break;
      // ONNX stores each f16 as its 16 bits in an int32 field.
      case onnx::TensorProto::FLOAT16: STRATA_RETURN_IF_ERROR(copy_typed(proto.int32_data(), uint16_t{})); break;
      case onnx::TensorProto::UINT8:
      case onnx::TensorProto::BOOL: STRATA_RETURN_IF_ERROR(copy_typed(proto.int32_data(), uint8_t{})); break;
      default:
        return ErrorStatus(StatusCode::kUnimplemented)
               << "typed data of element type " << proto.data_type() << " is not supported";
    }
  }
  return std::shared_ptr<const graph::HostTensor>(std::move(tensor));
}

namespace {

template <typename T>
T LoadElement(const graph::HostTensor& tensor, size_t i) {
  T v;
  std::memcpy(&v, tensor.bytes.data() + i * sizeof(T), sizeof(T));
  return v;
}

}  // namespace

double ConstantElement(const graph::HostTensor& tensor, size_t i) {
  const DataType dtype = tensor.dtype;
  if (dtype.is_bool()) return tensor.bytes[i] != 0 ? 1.0 : 0.0;
  if (dtype.is_float()) {
    switch (dtype.bits()) {
      case 16: return HalfToFloat(LoadElement<uint16_t>(tensor, i));
      case 32: return LoadElement<float>(tensor, i);
      default: return LoadElement<double>(tensor, i);
    }
  }
  const bool is_signed = dtype.is_int();
  switch (dtype.bits()) {
    case 8: return is_signed ? LoadElement<int8_t>(tensor, i) : LoadElement<uint8_t>(tensor, i);
    case 16: return is_signed ? LoadElement<int16_t>(tensor, i) : LoadElement<uint16_t>(tensor, i);
    case 32: return is_signed ? LoadElement<int32_t>(tensor, i) : LoadElement<uint32_t>(tensor, i);
    default:
      return is_signed ? static_cast<double>(LoadElement<int64_t>(tensor, i))
                       : static_cast<double>(LoadElement<uint64_t>(tensor, i));
  }
}

std::vector<int64_t> ConstantInts(const graph::HostTensor& tensor) {
  const DataType dtype = tensor.dtype;
  if (dtype.bytes() == 0) return {};
  const size_t n = tensor.bytes.size() / static_cast<size_t>(dtype.bytes());
  std::vector<int64_t> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (dtype.is_float()) {
      out.push_back(SaturatingIntegerBits(ConstantElement(tensor, i), DataType::I64()));
    } else if (dtype.bits() == 64) {
      out.push_back(LoadElement<int64_t>(tensor, i));  // exact, where a double is not above 2^53
    } else {
      out.push_back(static_cast<int64_t>(ConstantElement(tensor, i)));  // exact below 64 bits
    }
  }
  return out;
}

std::shared_ptr<const graph::HostTensor> MakeInt64Tensor(const std::vector<int64_t>& values, bool scalar) {
  auto t = std::make_shared<graph::HostTensor>();
  t->dtype = DataType::I64();
  if (!scalar) t->shape = {static_cast<int64_t>(values.size())};
  t->bytes.resize(values.size() * 8);
  if (!values.empty()) std::memcpy(t->bytes.data(), values.data(), t->bytes.size());
  return t;
}

std::shared_ptr<const graph::HostTensor> MakeScalarTensor(DataType dtype, double value) {
  auto t = std::make_shared<graph::HostTensor>();
  t->dtype = dtype;
  t->bytes.resize(static_cast<size_t>(dtype.bytes()));
  if (dtype == DataType::F32()) {
    float v = static_cast<float>(value);
    std::memcpy(t->bytes.data(), &v, 4);
  } else if (dtype == DataType::F64()) {
    std::memcpy(t->bytes.data(), &value, 8);
  } else if (dtype == DataType::Float(16)) {
    const uint16_t v = FloatToHalf(static_cast<float>(value));
    std::memcpy(t->bytes.data(), &v, 2);
  } else if (dtype.is_bool()) {
    t->bytes[0] = value != 0.0 ? 1 : 0;
  } else {
    // Attribute values (alpha, epsilon, a count) come from the file: out of
    // the dtype's range they saturate rather than being undefined behaviour
    // of the cast, and NaN becomes 0.
    const int64_t v = SaturatingIntegerBits(value, dtype);
    std::memcpy(t->bytes.data(), &v, t->bytes.size());  // little-endian: the low bytes
  }
  return t;
}

// ---- NodeContext ------------------------------------------------------------

Status NodeContext::Error(const std::string& message, StatusCode code) const {
  const std::string label = node_.name().empty() ? std::string("(unnamed)") : node_.name();
  return ErrorStatus(code) << "node '" << label << "' (" << node_.op_type() << ", opset " << opset_ << "): " << message;
}

StatusOr<const OnnxValue*> NodeContext::Required(size_t i) const {
  const OnnxValue* v = input(i);
  if (v == nullptr) return Error("input " + std::to_string(i) + " is required");
  return v;
}

StatusOr<Expr> NodeContext::InputExpr(size_t i) {
  STRATA_ASSIGN_OR_RETURN(const OnnxValue* v, Required(i));
  if (v->expr.defined()) return v->expr;
  if (v->constant) return ctx_.Constant(v->constant);
  std::vector<int64_t> ints;
  for (const PrimExpr& e : *v->symbolic) {
    const int64_t* c = tir::AsConstInt(e);
    if (c == nullptr) break;
    ints.push_back(*c);
  }
  if (ints.size() == v->symbolic->size()) return ctx_.Constant(MakeInt64Tensor(ints, v->symbolic_scalar));
  // A shape computed from dynamic dimensions used as data (scaled, compared,
  // gathered with): computed at run time from the shape variables.
  return ctx_.Call("shape_to_tensor", {graph::ShapeExprNode::make(*v->symbolic)}, {{"scalar", v->symbolic_scalar}},
                   node_.input(static_cast<int>(i)) + "_data");
}

namespace {
const onnx::AttributeProto* FindAttr(const onnx::NodeProto& node, const std::string& name) {
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}
}  // namespace

bool NodeContext::HasAttr(const std::string& name) const { return FindAttr(node_, name) != nullptr; }

int64_t NodeContext::IntAttr(const std::string& name, int64_t default_value) const {
  const onnx::AttributeProto* a = FindAttr(node_, name);
  return a ? a->i() : default_value;
}

float NodeContext::FloatAttr(const std::string& name, float default_value) const {
  const onnx::AttributeProto* a = FindAttr(node_, name);
  return a ? a->f() : default_value;
}

std::string NodeContext::StringAttr(const std::string& name, const std::string& default_value) const {
  const onnx::AttributeProto* a = FindAttr(node_, name);
  return a ? a->s() : default_value;
}

std::vector<int64_t> NodeContext::IntsAttr(const std::string& name) const {
  const onnx::AttributeProto* a = FindAttr(node_, name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : std::vector<int64_t>{};
}

const onnx::TensorProto* NodeContext::TensorAttr(const std::string& name) const {
  const onnx::AttributeProto* a = FindAttr(node_, name);
  return a && a->has_t() ? &a->t() : nullptr;
}

}  // namespace strata::frontend::onnx_import
