// Value: the register type of the VM, and the small objects it can box.
//
// A Value is 16 bytes: an 8-byte payload and a kind tag. Null, Int, Float,
// DataType and Function live inline (no heap, no reference count); Tensor,
// Shape, String, Tuple and Storage point to a reference-counted Object, so
// copying a Value costs at most one atomic increment and moving costs none.
//
//   Null        no value (the result of builtins that return nothing)
//   Int         int64
//   Float       double
//   DataType    an element type (dtype arguments of builtins)
//   Function    an index into the executable's function table
//   Tensor      Ref<Tensor>            (vm/tensor.h)
//   Shape       Ref<ShapeTuple>        an immutable int64 vector
//   String      Ref<String>            an immutable string
//   Tuple       Ref<Tuple>             an immutable vector of Values
//   Storage     Ref<Storage>           (vm/storage.h)
//
// Thread-safety: a Value is not synchronized (like std::shared_ptr: distinct
// Values that share an object may be used from different threads).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "support/data_type.h"
#include "vm/object.h"
#include "vm/storage.h"
#include "vm/tensor.h"

namespace strata::vm {

// Kinds that hold an Object come last (see Value::holds_object).
enum class ValueKind : uint8_t {
  kNull = 0,
  kInt,
  kFloat,
  kDataType,
  kFunction,
  kTensor,
  kShape,
  kString,
  kTuple,
  kStorage,
};
// "Null", "Int", "Float", "DataType", "Function", "Tensor", "Shape", "String", "Tuple", "Storage".
const char* ValueKindName(ValueKind kind);

// An immutable shape: the dims of a tensor or a value of `Shape` type.
class ShapeTuple final : public Object {
 public:
  static Ref<ShapeTuple> Make(std::span<const int64_t> dims);
  std::span<const int64_t> dims() const { return {data_, static_cast<size_t>(size_)}; }
  int64_t size() const { return size_; }

 private:
  static constexpr int kInlineDims = 6;
  explicit ShapeTuple(std::span<const int64_t> dims);
  ~ShapeTuple() override = default;
  int64_t size_;
  int64_t* data_;
  int64_t inline_[kInlineDims];
  std::unique_ptr<int64_t[]> heap_;
};

class String final : public Object {
 public:
  static Ref<String> Make(std::string_view text) { return Ref<String>(new String(text)); }
  const std::string& str() const { return value_; }

 private:
  explicit String(std::string_view text) : value_(text) {}
  ~String() override = default;
  std::string value_;
};

class Tuple;

class Value {
 public:
  Value() { payload_.i = 0; }
  static Value FromInt(int64_t v) { return Value(ValueKind::kInt, Payload{.i = v}); }
  static Value FromFloat(double v) {
    Payload p;
    p.f = v;
    return Value(ValueKind::kFloat, p);
  }
  static Value FromDataType(DataType dtype) {
    Payload p;
    p.i = 0;
    p.dtype[0] = static_cast<uint8_t>(dtype.code());
    p.dtype[1] = static_cast<uint8_t>(dtype.bits());
    return Value(ValueKind::kDataType, p);
  }
  static Value FromFunction(int64_t index) { return Value(ValueKind::kFunction, Payload{.i = index}); }
  static Value FromTensor(Ref<Tensor> t) { return FromObject(ValueKind::kTensor, t.release()); }
  static Value FromShape(Ref<ShapeTuple> s) { return FromObject(ValueKind::kShape, s.release()); }
  static Value FromShape(std::span<const int64_t> dims) { return FromShape(ShapeTuple::Make(dims)); }
  static Value FromShape(std::initializer_list<int64_t> dims) {
    return FromShape(std::span<const int64_t>(dims.begin(), dims.size()));
  }
  static Value FromString(std::string_view text) {
    return FromObject(ValueKind::kString, String::Make(text).release());
  }
  static Value FromTuple(Ref<Tuple> t);
  static Value FromTuple(std::vector<Value> fields);
  static Value FromStorage(Ref<Storage> s) { return FromObject(ValueKind::kStorage, s.release()); }

  Value(const Value& other) : payload_(other.payload_), kind_(other.kind_) {
    if (holds_object()) payload_.obj->IncRef();
  }
  Value(Value&& other) noexcept : payload_(other.payload_), kind_(other.kind_) { other.kind_ = ValueKind::kNull; }
  Value& operator=(const Value& other) {
    if (other.holds_object()) other.payload_.obj->IncRef();
    Release();
    payload_ = other.payload_;
    kind_ = other.kind_;
    return *this;
  }
  Value& operator=(Value&& other) noexcept {
    if (this != &other) {
      Release();
      payload_ = other.payload_;
      kind_ = other.kind_;
      other.kind_ = ValueKind::kNull;
    }
    return *this;
  }
  ~Value() { Release(); }

  ValueKind kind() const { return kind_; }
  const char* kind_name() const { return ValueKindName(kind_); }
  bool holds_object() const { return kind_ >= ValueKind::kTensor; }
  bool is_null() const { return kind_ == ValueKind::kNull; }
  bool is_int() const { return kind_ == ValueKind::kInt; }
  bool is_float() const { return kind_ == ValueKind::kFloat; }
  bool is_data_type() const { return kind_ == ValueKind::kDataType; }
  bool is_function() const { return kind_ == ValueKind::kFunction; }
  bool is_tensor() const { return kind_ == ValueKind::kTensor; }
  bool is_shape() const { return kind_ == ValueKind::kShape; }
  bool is_string() const { return kind_ == ValueKind::kString; }
  bool is_tuple() const { return kind_ == ValueKind::kTuple; }
  bool is_storage() const { return kind_ == ValueKind::kStorage; }

  // Accessors: valid only for the matching kind (asserted).
  int64_t int_value() const {
    assert(is_int());
    return payload_.i;
  }
  double float_value() const {
    assert(is_float());
    return payload_.f;
  }
  DataType data_type() const {
    assert(is_data_type());
    return DataType(static_cast<DataType::Code>(payload_.dtype[0]), payload_.dtype[1]);
  }
  int64_t function_index() const {
    assert(is_function());
    return payload_.i;
  }
  Tensor* tensor() const {
    assert(is_tensor());
    return static_cast<Tensor*>(payload_.obj);
  }
  std::span<const int64_t> shape() const {
    assert(is_shape());
    return static_cast<const ShapeTuple*>(payload_.obj)->dims();
  }
  const std::string& string() const {
    assert(is_string());
    return static_cast<const String*>(payload_.obj)->str();
  }
  const Tuple* tuple() const;  // defined below Tuple
  Storage* storage() const {
    assert(is_storage());
    return static_cast<Storage*>(payload_.obj);
  }
  // New references to the boxed object.
  Ref<Tensor> tensor_ref() const { return Ref<Tensor>(tensor()); }
  Ref<Storage> storage_ref() const { return Ref<Storage>(storage()); }

  // A short description for messages: "Int 5", "Tensor[(2, 3), f32]", "Shape (2, 3)".
  std::string Describe() const;

 private:
  union Payload {
    int64_t i;
    double f;
    Object* obj;
    uint8_t dtype[2];
  };
  Value(ValueKind kind, Payload payload) : payload_(payload), kind_(kind) {}
  static Value FromObject(ValueKind kind, Object* obj) {
    if (obj == nullptr) return Value();
    Payload p;
    p.obj = obj;
    return Value(kind, p);  // adopts the reference released by the caller
  }
  void Release() {
    if (holds_object()) payload_.obj->DecRef();
  }

  // Checks that this layout is the one kernel_abi.h describes to VM entries.
  friend struct ValueKernelAbiLayout;

  Payload payload_;
  ValueKind kind_ = ValueKind::kNull;
};
static_assert(sizeof(Value) == 16, "Value must stay 16 bytes");

// An immutable, ordered collection of Values (vm.builtin.tuple).
class Tuple final : public Object {
 public:
  static Ref<Tuple> Make(std::vector<Value> fields) { return Ref<Tuple>(new Tuple(std::move(fields))); }
  std::span<const Value> fields() const { return fields_; }
  int64_t size() const { return static_cast<int64_t>(fields_.size()); }
  const Value& operator[](int64_t i) const { return fields_[static_cast<size_t>(i)]; }

 private:
  explicit Tuple(std::vector<Value> fields) : fields_(std::move(fields)) {}
  ~Tuple() override = default;
  std::vector<Value> fields_;
};

inline const Tuple* Value::tuple() const {
  assert(is_tuple());
  return static_cast<const Tuple*>(payload_.obj);
}
inline Value Value::FromTuple(Ref<Tuple> t) { return FromObject(ValueKind::kTuple, t.release()); }
inline Value Value::FromTuple(std::vector<Value> fields) { return FromTuple(Tuple::Make(std::move(fields))); }

}  // namespace strata::vm
