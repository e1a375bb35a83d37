// Value descriptions and the boxed shape object.
#include "vm/value.h"

#include <cstddef>
#include <sstream>

#include "abi/kernel_abi.h"

namespace strata::vm {

// Compiled kernels' VM entries read Values in place (kernel_abi.h): a change
// here must bump STRATA_VM_VALUE_LAYOUT_VERSION and the constants with it.
struct ValueKernelAbiLayout {
  static_assert(sizeof(Value) == STRATA_VM_VALUE_SIZE);
  static_assert(offsetof(Value, payload_) == STRATA_VM_VALUE_PAYLOAD_OFFSET);
  static_assert(offsetof(Value, kind_) == STRATA_VM_VALUE_KIND_OFFSET);
  static_assert(sizeof(ValueKind) == 1);
  static_assert(static_cast<int>(ValueKind::kInt) == STRATA_VM_VALUE_KIND_INT);
  static_assert(static_cast<int>(ValueKind::kFloat) == STRATA_VM_VALUE_KIND_FLOAT);
  static_assert(static_cast<int>(ValueKind::kTensor) == STRATA_VM_VALUE_KIND_TENSOR);
};

const char* ValueKindName(ValueKind kind) {
  switch (kind) {
    case ValueKind::kNull: return "Null";
    case ValueKind::kInt: return "Int";
    case ValueKind::kFloat: return "Float";
    case ValueKind::kDataType: return "DataType";
    case ValueKind::kFunction: return "Function";
    case ValueKind::kTensor: return "Tensor";
    case ValueKind::kShape: return "Shape";
    case ValueKind::kString: return "String";
    case ValueKind::kTuple: return "Tuple";
    case ValueKind::kStorage: return "Storage";
  }
  return "<invalid>";
}

ShapeTuple::ShapeTuple(std::span<const int64_t> dims) : size_(static_cast<int64_t>(dims.size())), data_(inline_) {
  if (dims.size() > static_cast<size_t>(kInlineDims)) {
    heap_ = std::make_unique<int64_t[]>(dims.size());
    data_ = heap_.get();
  }
  for (size_t i = 0; i < dims.size(); ++i) data_[i] = dims[i];
}

Ref<ShapeTuple> ShapeTuple::Make(std::span<const int64_t> dims) { return Ref<ShapeTuple>(new ShapeTuple(dims)); }

std::string Value::Describe() const {
  std::ostringstream out;
  switch (kind_) {
    case ValueKind::kNull: return "Null";
    case ValueKind::kInt: out << "Int " << payload_.i; break;
    case ValueKind::kFloat: out << "Float " << payload_.f; break;
    case ValueKind::kDataType: out << "DataType " << data_type().ToString(); break;
    case ValueKind::kFunction: out << "Function " << payload_.i; break;
    case ValueKind::kTensor: return tensor()->TypeString();
    case ValueKind::kShape: out << "Shape " << ShapeToString(shape()); break;
    case ValueKind::kString: {
      std::string text = string();
      if (text.size() > 40) text = text.substr(0, 37) + "...";
      out << "String \"" << text << "\"";
      break;
    }
    case ValueKind::kTuple: out << "Tuple of " << tuple()->size(); break;
    case ValueKind::kStorage: out << "Storage of " << storage()->nbytes() << " bytes"; break;
  }
  return out.str();
}

}  // namespace strata::vm
