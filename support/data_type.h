// DataType: the element type of tensors and scalars, shared by compiler and runtime.
//
// Codes follow DLPack (kDLInt, kDLUInt, kDLFloat) so a DataType converts to a
// DLDataType without a table. Bool is stored as an 8-bit unsigned code with
// bits == 1 in IR and as uint8 in memory, as numpy does. Lanes are always 1 in
// IR: vectorization is a property of loops, not of types.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace strata {

class DataType {
 public:
  enum class Code : uint8_t { kInt = 0, kUInt = 1, kFloat = 2, kHandle = 3, kBool = 6 };

  constexpr DataType() = default;
  constexpr DataType(Code code, uint8_t bits) : code_(code), bits_(bits) {}

  static constexpr DataType Int(int bits) { return DataType(Code::kInt, bits); }
  static constexpr DataType UInt(int bits) { return DataType(Code::kUInt, bits); }
  static constexpr DataType Float(int bits) { return DataType(Code::kFloat, bits); }
  static constexpr DataType Bool() { return DataType(Code::kBool, 1); }
  static constexpr DataType Handle() { return DataType(Code::kHandle, 64); }
  static constexpr DataType I32() { return Int(32); }
  static constexpr DataType I64() { return Int(64); }
  static constexpr DataType F32() { return Float(32); }
  static constexpr DataType F64() { return Float(64); }
  // The "unknown" dtype of a tensor whose element type is not known statically.
  static constexpr DataType Void() { return DataType(Code::kHandle, 0); }

  constexpr Code code() const { return code_; }
  constexpr int bits() const { return bits_; }
  constexpr bool is_int() const { return code_ == Code::kInt; }
  constexpr bool is_uint() const { return code_ == Code::kUInt; }
  constexpr bool is_float() const { return code_ == Code::kFloat; }
  constexpr bool is_bool() const { return code_ == Code::kBool; }
  constexpr bool is_handle() const { return code_ == Code::kHandle && bits_ != 0; }
  constexpr bool is_void() const { return code_ == Code::kHandle && bits_ == 0; }
  constexpr bool is_integral() const { return is_int() || is_uint(); }
  // Bytes one element occupies in memory (bool takes a byte).
  constexpr int bytes() const { return is_bool() ? 1 : (bits_ + 7) / 8; }

  constexpr bool operator==(const DataType& o) const { return code_ == o.code_ && bits_ == o.bits_; }
  constexpr bool operator!=(const DataType& o) const { return !(*this == o); }

  // Text names: i8 i16 i32 i64 u8 u16 u32 u64 f16 f32 f64 bool handle void.
  std::string ToString() const;
  static std::optional<DataType> Parse(std::string_view text);

 private:
  Code code_ = Code::kHandle;
  uint8_t bits_ = 0;
};

inline std::string DataType::ToString() const {
  // Appending (rather than "i" + to_string) keeps GCC 12's -Wrestrict false
  // positive on operator+(const char*, string&&) out of every includer.
  auto with_bits = [this](char prefix) { return std::string(1, prefix).append(std::to_string(bits_)); };
  switch (code_) {
    case Code::kInt: return with_bits('i');
    case Code::kUInt: return with_bits('u');
    case Code::kFloat: return with_bits('f');
    case Code::kBool: return "bool";
    case Code::kHandle: return bits_ == 0 ? "void" : "handle";
  }
  return "?";
}

inline std::optional<DataType> DataType::Parse(std::string_view text) {
  if (text == "bool") return Bool();
  if (text == "handle") return Handle();
  if (text == "void") return Void();
  if (text.size() < 2) return std::nullopt;
  Code code;
  switch (text[0]) {
    case 'i': code = Code::kInt; break;
    case 'u': code = Code::kUInt; break;
    case 'f': code = Code::kFloat; break;
    default: return std::nullopt;
  }
  int bits = 0;
  for (char c : text.substr(1)) {
    if (c < '0' || c > '9') return std::nullopt;
    bits = bits * 10 + (c - '0');
    if (bits > 64) return std::nullopt;
  }
  bool valid = code == Code::kFloat ? (bits == 16 || bits == 32 || bits == 64)
                                    : (bits == 8 || bits == 16 || bits == 32 || bits == 64);
  if (!valid) return std::nullopt;
  return DataType(code, static_cast<uint8_t>(bits));
}

}  // namespace strata
