// .npy reading/writing and inline tensor values.
#include "vm/tensor_io/npy.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>

#include "support/half_float.h"

namespace strata::vm {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

// ---- dtype descriptors ------------------------------------------------------------

StatusOr<DataType> ParseDescr(std::string_view descr, std::string_view name) {
  if (descr.size() < 3) return Status(ErrorStatus() << name << ": unsupported dtype '" << descr << "'");
  char order = descr[0];
  std::string_view type = descr.substr(1);
  if (order == '>' && type != "i1" && type != "u1" && type != "b1") {
    return Status(ErrorStatus() << name << ": big-endian data ('" << descr
                                << "') is not supported; save it little-endian");
  }
  if (order != '<' && order != '|' && order != '=' && order != '>') {
    return Status(ErrorStatus() << name << ": unsupported dtype '" << descr << "'");
  }
  if (type == "f2") return DataType::Float(16);
  if (type == "f4") return DataType::F32();
  if (type == "f8") return DataType::F64();
  if (type == "i1") return DataType::Int(8);
  if (type == "i2") return DataType::Int(16);
  if (type == "i4") return DataType::I32();
  if (type == "i8") return DataType::I64();
  if (type == "u1") return DataType::UInt(8);
  if (type == "u2") return DataType::UInt(16);
  if (type == "u4") return DataType::UInt(32);
  if (type == "u8") return DataType::UInt(64);
  if (type == "b1") return DataType::Bool();
  return Status(ErrorStatus() << name << ": unsupported dtype '" << descr
                              << "' (supported: f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1)");
}

StatusOr<std::string> DescrOf(DataType dtype) {
  if (dtype.is_bool()) return std::string("|b1");
  if (!IsValidTensorDataType(dtype))
    return Status(ErrorStatus() << "dtype " << dtype.ToString() << " has no .npy form");
  char kind = dtype.is_float() ? 'f' : dtype.is_int() ? 'i' : 'u';
  int bytes = dtype.bytes();
  return std::string(bytes == 1 ? "|" : "<") + kind + std::to_string(bytes);
}

// ---- the header dictionary ----------------------------------------------------------
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
  bool has_descr = false, has_order = false, has_shape = false;
};

class HeaderParser {
 public:
  HeaderParser(std::string_view text, std::string_view name) : text_(text), name_(name) {}

  Status Parse(NpyHeader* out_header) {
    SkipSpace();
    if (!Consume('{')) return Error("expected '{'");
    for (;;) {
      SkipSpace();
      if (Consume('}')) break;
      std::string key;
      STRATA_RETURN_IF_ERROR(ParseString(&key));
      SkipSpace();
      if (!Consume(':')) return Error("expected ':' after '" + key + "'");
      SkipSpace();
      if (key == "descr") {
        STRATA_RETURN_IF_ERROR(ParseString(&out_header->descr));
        out_header->has_descr = true;
      } else if (key == "fortran_order") {
        if (ConsumeWord("True")) {
          out_header->fortran_order = true;
        } else if (ConsumeWord("False")) {
          out_header->fortran_order = false;
        } else {
          return Error("fortran_order must be True or False");
        }
        out_header->has_order = true;
      } else if (key == "shape") {
        STRATA_RETURN_IF_ERROR(ParseShape(&out_header->shape));
        out_header->has_shape = true;
      } else {
        return Error("unexpected key '" + key + "'");
      }
      SkipSpace();
      if (Consume(',')) continue;
      SkipSpace();
      if (Consume('}')) break;
      return Error("expected ',' or '}'");
    }
    if (!out_header->has_descr || !out_header->has_order || !out_header->has_shape) {
      return Status(ErrorStatus() << name_ << ": malformed .npy header: missing "
                                  << (!out_header->has_descr   ? "'descr'"
                                      : !out_header->has_order ? "'fortran_order'"
                                                               : "'shape'"));
    }
    return Status::Ok();
  }

 private:
  Status Error(const std::string& what) const {
    return Status(ErrorStatus() << name_ << ": malformed .npy header: " << what << " at offset " << pos_);
  }
  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n')) ++pos_;
  }
  bool Consume(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool ConsumeWord(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }
  Status ParseString(std::string* out) {
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) return Error("expected a string");
    char quote = text_[pos_++];
    size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos) return Error("unterminated string");
    *out = std::string(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return Status::Ok();
  }
  Status ParseShape(std::vector<int64_t>* out) {
    if (!Consume('(')) return Error("shape must be a tuple");
    for (;;) {
      SkipSpace();
      if (Consume(')')) return Status::Ok();
      int64_t dim = 0;
      const char* begin = text_.data() + pos_;
      auto [ptr, ec] = std::from_chars(begin, text_.data() + text_.size(), dim);
      if (ec != std::errc() || dim < 0) return Error("shape dimensions must be non-negative integers");
      pos_ += static_cast<size_t>(ptr - begin);
      if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;  // Python 2 longs
      out->push_back(dim);
      SkipSpace();
      if (Consume(',')) continue;
      SkipSpace();
      if (Consume(')')) return Status::Ok();
      return Error("expected ',' or ')' in shape");
    }
  }

  std::string_view text_;
  std::string_view name_;
  size_t pos_ = 0;
};

uint32_t ReadLE(const uint8_t* p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// ---- inline values ----------------------------------------------------------------------

template <typename T>
bool ParseIntegral(std::string_view token, T* out) {
  using Wide = std::conditional_t<std::is_unsigned_v<T>, uint64_t, int64_t>;
  Wide v = 0;
  auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), v);
  if (ec != std::errc() || ptr != token.data() + token.size()) return false;
  if (v < static_cast<Wide>(std::numeric_limits<T>::min()) || v > static_cast<Wide>(std::numeric_limits<T>::max())) {
    return false;
  }
  *out = static_cast<T>(v);
  return true;
}

bool ParseDouble(std::string_view token, double* out) {
  std::string text(token);
  if (text.empty()) return false;
  char* end = nullptr;
  *out = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size();
}

Status StoreValue(DataType dtype, std::string_view token, uint8_t* dst) {
  bool ok = false;
  if (dtype.is_bool()) {
    uint8_t b = 0;
    if (token == "true" || token == "True" || token == "1") {
      b = 1;
      ok = true;
    } else if (token == "false" || token == "False" || token == "0") {
      ok = true;
    }
    *dst = b;
  } else if (dtype.is_float()) {
    double v;
    ok = ParseDouble(token, &v);
    if (ok) {
      if (dtype.bits() == 64) {
        std::memcpy(dst, &v, 8);
      } else if (dtype.bits() == 32) {
        float f = static_cast<float>(v);
        std::memcpy(dst, &f, 4);
      } else {
        uint16_t h = FloatToHalf(static_cast<float>(v));
        std::memcpy(dst, &h, 2);
      }
    }
  } else {
#define STRATA_STORE_INT(type)              \
  {                                         \
    type v;                                 \
    ok = ParseIntegral<type>(token, &v);    \
    if (ok) std::memcpy(dst, &v, sizeof v); \
  }
    bool is_signed = dtype.is_int();
    switch (dtype.bits()) {
      case 8:
        if (is_signed) STRATA_STORE_INT(int8_t) else STRATA_STORE_INT(uint8_t) break;
      case 16:
        if (is_signed) STRATA_STORE_INT(int16_t) else STRATA_STORE_INT(uint16_t) break;
      case 32:
        if (is_signed) STRATA_STORE_INT(int32_t) else STRATA_STORE_INT(uint32_t) break;
      default:
        if (is_signed) STRATA_STORE_INT(int64_t) else STRATA_STORE_INT(uint64_t) break;
    }
#undef STRATA_STORE_INT
  }
  if (!ok) return Status(ErrorStatus() << "'" << token << "' is not a valid " << dtype.ToString() << " value");
  return Status::Ok();
}

}  // namespace

StatusOr<Ref<Tensor>> ParseNpy(std::span<const uint8_t> bytes, std::string_view name) {
  if (bytes.size() < 10 || std::memcmp(bytes.data(), kMagic, kMagicSize) != 0) {
    return Status(ErrorStatus() << name << ": not a .npy file (missing the \\x93NUMPY magic)");
  }
  uint8_t major = bytes[6], minor = bytes[7];
  size_t len_bytes;
  if (major == 1) {
    len_bytes = 2;
  } else if (major == 2 || major == 3) {
    len_bytes = 4;
  } else {
    return Status(ErrorStatus() << name << ": unsupported .npy format version " << static_cast<int>(major) << "."
                                << static_cast<int>(minor) << " (supported: 1.0, 2.0, 3.0)");
  }
  size_t header_start = kMagicSize + 2 + len_bytes;
  if (bytes.size() < header_start) return Status(ErrorStatus() << name << ": truncated .npy header");
  size_t header_len = ReadLE(bytes.data() + 8, static_cast<int>(len_bytes));
  if (header_len > bytes.size() - header_start) {
    return Status(ErrorStatus() << name << ": truncated .npy header (" << header_len << " bytes announced, "
                                << (bytes.size() - header_start) << " present)");
  }
  std::string_view header(reinterpret_cast<const char*>(bytes.data() + header_start), header_len);
  NpyHeader h;
  STRATA_RETURN_IF_ERROR(HeaderParser(header, name).Parse(&h));
  if (h.fortran_order) {
    return Status(ErrorStatus() << name
                                << ": fortran_order (column-major) arrays are not supported; save a C-order array "
                                   "(numpy.ascontiguousarray)");
  }
  STRATA_ASSIGN_OR_RETURN(DataType dtype, ParseDescr(h.descr, name));
  auto nbytes = NumBytesOf(h.shape, dtype);
  if (!nbytes.ok()) return Status(nbytes.status()).WithContext(std::string(name) + ": ");
  size_t data_start = header_start + header_len;
  size_t present = bytes.size() - data_start;
  if (present != static_cast<size_t>(*nbytes)) {
    return Status(ErrorStatus() << name << ": "
                                << (present < static_cast<size_t>(*nbytes) ? "truncated data" : "extra data")
                                << ": shape " << ShapeToString(h.shape) << " of " << dtype.ToString() << " needs "
                                << *nbytes << " bytes, the file has " << present);
  }
  auto tensor = Tensor::FromHost(h.shape, dtype, bytes.subspan(data_start));
  if (!tensor.ok()) return Status(tensor.status()).WithContext(std::string(name) + ": ");
  if (dtype.is_bool()) {
    uint8_t* p = tensor.value()->data_as<uint8_t>();
    for (int64_t i = 0; i < tensor.value()->num_elements(); ++i) p[i] = p[i] != 0;
  }
  return tensor;
}

StatusOr<Ref<Tensor>> ReadNpyFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int error = errno;
    return Status(ErrorStatus(error == ENOENT ? StatusCode::kNotFound : StatusCode::kFailedPrecondition)
                  << path << ": cannot open: " << std::strerror(error));
  }
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return Status(ErrorStatus() << path << ": read failed");
  return ParseNpy(bytes, path);
}

StatusOr<std::vector<uint8_t>> EncodeNpy(const Tensor& tensor) {
  if (tensor.device().device_type != kDLCPU) {
    return Status(ErrorStatus() << "cannot write a tensor on " << DeviceName(tensor.device()) << " as .npy");
  }
  STRATA_ASSIGN_OR_RETURN(std::string descr, DescrOf(tensor.dtype()));
  std::string dict =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + ShapeToString(tensor.shape()) + ", }";
  // Pad with spaces and a newline so the data starts 64-byte aligned, as numpy does.
  size_t prefix = kMagicSize + 2 + 2;
  uint8_t major = 1;
  if (dict.size() + 1 + prefix + 64 > 65535) {
    prefix = kMagicSize + 2 + 4;
    major = 2;
  }
  size_t total = prefix + dict.size() + 1;
  size_t padded = (total + 63) / 64 * 64;
  dict.append(padded - total, ' ');
  dict.push_back('\n');
  std::vector<uint8_t> out;
  out.reserve(prefix + dict.size() + static_cast<size_t>(tensor.num_bytes()));
  out.insert(out.end(), kMagic, kMagic + kMagicSize);
  out.push_back(major);
  out.push_back(0);
  uint32_t len = static_cast<uint32_t>(dict.size());
  for (size_t i = 0; i < prefix - kMagicSize - 2; ++i) out.push_back(static_cast<uint8_t>(len >> (8 * i)));
  out.insert(out.end(), dict.begin(), dict.end());
  const auto* data = static_cast<const uint8_t*>(tensor.data());
  out.insert(out.end(), data, data + tensor.num_bytes());
  return out;
}

Status WriteNpyFile(const std::string& path, const Tensor& tensor) {
  auto bytes = EncodeNpy(tensor);
  if (!bytes.ok()) return Status(bytes.status()).WithContext(path + ": ");
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Status(ErrorStatus() << path << ": cannot create: " << std::strerror(errno));
  out.write(reinterpret_cast<const char*>(bytes->data()), static_cast<std::streamsize>(bytes->size()));
  out.close();
  if (!out) return Status(ErrorStatus() << path << ": write failed");
  return Status::Ok();
}

StatusOr<Ref<Tensor>> ParseInlineTensor(std::string_view text) {
  auto error = [&]() {
    ErrorStatus e;
    e << "input '" << (text.size() > 60 ? std::string(text.substr(0, 57)) + "..." : std::string(text)) << "': ";
    return e;
  };
  size_t eq = text.find('=');
  if (eq == std::string_view::npos) {
    return Status(error() << "expected '<dims>x<dtype>=<values>', e.g. 2x3xf32=1,2,3,4,5,6 or f32=1.5");
  }
  std::string_view type = text.substr(0, eq);
  std::string_view values = text.substr(eq + 1);
  std::vector<int64_t> shape;
  size_t start = 0;
  for (;;) {
    size_t x = type.find('x', start);
    if (x == std::string_view::npos) break;
    std::string_view dim = type.substr(start, x - start);
    int64_t d = -1;
    auto [ptr, ec] = std::from_chars(dim.data(), dim.data() + dim.size(), d);
    if (dim.empty() || ec != std::errc() || ptr != dim.data() + dim.size() || d < 0) {
      return Status(error() << "dimension " << shape.size() << " '" << dim << "' is not a non-negative integer");
    }
    shape.push_back(d);
    start = x + 1;
  }
  std::string_view dtype_text = type.substr(start);
  std::optional<DataType> dtype = DataType::Parse(dtype_text);
  if (!dtype || !IsValidTensorDataType(*dtype)) {
    return Status(error() << "unknown element type '" << dtype_text
                          << "' (expected one of f16 f32 f64 i8 i16 i32 i64 u8 u16 u32 u64 bool)");
  }
  auto count = NumElementsOf(shape);
  if (!count.ok()) return Status(error() << count.status().message());

  std::vector<std::string_view> tokens;
  size_t pos = 0;
  while (pos < values.size()) {
    while (pos < values.size() && (values[pos] == ',' || values[pos] == ' ')) {
      if (values[pos] == ',' && (pos == 0 || values[pos - 1] == ',')) {
        return Status(error() << "empty value at position " << tokens.size());
      }
      ++pos;
    }
    if (pos >= values.size()) break;
    size_t end = values.find_first_of(", ", pos);
    if (end == std::string_view::npos) end = values.size();
    tokens.push_back(values.substr(pos, end - pos));
    pos = end;
  }
  if (static_cast<int64_t>(tokens.size()) != *count) {
    return Status(error() << "expected " << *count << " value" << (*count == 1 ? "" : "s") << " for shape "
                          << ShapeToString(shape) << ", got " << tokens.size());
  }
  STRATA_ASSIGN_OR_RETURN(Ref<Tensor> tensor, Tensor::Empty(shape, *dtype));
  auto* dst = tensor->data_as<uint8_t>();
  int bytes = dtype->bytes();
  for (size_t i = 0; i < tokens.size(); ++i) {
    Status status = StoreValue(*dtype, tokens[i], dst + i * static_cast<size_t>(bytes));
    if (!status.ok()) return Status(error() << "value " << i << ": " << status.message());
  }
  return tensor;
}

namespace {

// The integer at `p` (unaligned) as the signed or unsigned type of its width.
template <typename Signed, typename Unsigned>
std::string IntegerText(const uint8_t* p, bool is_signed) {
  if (is_signed) {
    Signed v;
    std::memcpy(&v, p, sizeof(v));
    return std::to_string(v);
  }
  Unsigned v;
  std::memcpy(&v, p, sizeof(v));
  return std::to_string(v);
}

}  // namespace

std::string FormatElement(DataType dtype, const uint8_t* p) {
  char buf[64];
  if (dtype.is_bool()) return *p ? "true" : "false";
  if (dtype.is_float()) {
    if (dtype.bits() == 64) {
      double v;
      std::memcpy(&v, p, 8);
      auto r = std::to_chars(buf, buf + sizeof(buf), v);
      return std::string(buf, r.ptr);
    }
    float v;
    if (dtype.bits() == 32) {
      std::memcpy(&v, p, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, p, 2);
      v = HalfToFloat(h);
    }
    auto r = std::to_chars(buf, buf + sizeof(buf), v);
    return std::string(buf, r.ptr);
  }
  switch (dtype.bits()) {
    case 8: return IntegerText<int8_t, uint8_t>(p, dtype.is_int());
    case 16: return IntegerText<int16_t, uint16_t>(p, dtype.is_int());
    case 32: return IntegerText<int32_t, uint32_t>(p, dtype.is_int());
    default: return IntegerText<int64_t, uint64_t>(p, dtype.is_int());
  }
}

std::string FormatInlineTensor(const Tensor& tensor, int64_t max_elements) {
  std::string out;
  for (int64_t d : tensor.shape()) out += std::to_string(d) + "x";
  out += tensor.dtype().ToString() + "=";
  if (tensor.device().device_type != kDLCPU) return out + "<on " + DeviceName(tensor.device()) + ">";
  int64_t n = tensor.num_elements();
  int64_t shown = max_elements >= 0 && max_elements < n ? max_elements : n;
  const auto* p = tensor.data_as<const uint8_t>();
  int bytes = tensor.dtype().bytes();
  for (int64_t i = 0; i < shown; ++i) {
    if (i) out += ",";
    out += FormatElement(tensor.dtype(), p + i * bytes);
  }
  if (shown < n) out += shown ? ",..." : "...";
  return out;
}

}  // namespace strata::vm
