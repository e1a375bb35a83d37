// Tokenizer of the text IR. Errors name the offending character and its position.
#include "compiler/ir/lexer.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "support/data_type.h"

namespace strata::ir {

namespace {

bool IsIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsIdentChar(char c) { return IsIdentStart(c) || IsDigit(c); }
// Global names may also contain dots (fused.add); other names need @"...".
bool IsGlobalChar(char c) { return IsIdentChar(c) || c == '.'; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string Printable(char c) {
  unsigned char u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return std::string("'") + c + "'";
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%02x", u);
  return buf;
}

class Lexer {
 public:
  Lexer(std::string_view text, std::string_view filename) : text_(text), filename_(filename) {}

  StatusOr<std::vector<Token>> Run() {
    std::vector<Token> tokens;
    bool newline = true;
    while (true) {
      newline = SkipSpaceAndComments() || newline;
      Token token;
      token.line = line_;
      token.col = col_;
      token.newline_before = newline;
      newline = false;
      if (pos_ >= text_.size()) {
        token.kind = TokenKind::kEnd;
        tokens.push_back(std::move(token));
        return tokens;
      }
      Status status = LexOne(&token);
      if (!status.ok()) return status;
      tokens.push_back(std::move(token));
    }
  }

 private:
  char Peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }

  void Advance() {
    if (text_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }

  // Returns true when a line break was skipped.
  bool SkipSpaceAndComments() {
    bool newline = false;
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == '\n') {
        newline = true;
        Advance();
      } else if (c == ' ' || c == '\t' || c == '\r') {
        Advance();
      } else if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') Advance();
      } else {
        break;
      }
    }
    return newline;
  }

  Status ErrorAt(int line, int col, const std::string& message) const {
    return ErrorStatus() << filename_ << ":" << line << ":" << col << ": error: " << message;
  }

  Status LexOne(Token* token) {
    char c = Peek();
    if (IsIdentStart(c)) {
      token->kind = TokenKind::kIdent;
      size_t start = pos_;
      // Dots join words (op names such as nn.relu); a trailing dot is not taken.
      while (IsIdentChar(Peek()) || (Peek() == '.' && IsIdentStart(Peek(1)))) Advance();
      token->text = std::string(text_.substr(start, pos_ - start));
      return Status::Ok();
    }
    if (IsDigit(c)) return LexNumber(token);
    if (c == '"') {
      token->kind = TokenKind::kString;
      return LexString(&token->text);
    }
    if (c == '@') {
      token->kind = TokenKind::kGlobal;
      Advance();
      if (Peek() == '"') return LexString(&token->text);
      size_t start = pos_;
      while (IsGlobalChar(Peek())) Advance();
      if (pos_ == start) return ErrorAt(token->line, token->col, "expected a function name after '@'");
      token->text = std::string(text_.substr(start, pos_ - start));
      return Status::Ok();
    }
    static constexpr std::string_view kTwoChar[] = {"->", "==", "!=", "<=", ">=", "//", "&&", "||"};
    for (std::string_view op : kTwoChar) {
      if (c == op[0] && Peek(1) == op[1]) {
        token->kind = TokenKind::kPunct;
        token->text = std::string(op);
        Advance();
        Advance();
        return Status::Ok();
      }
    }
    static constexpr std::string_view kOneChar = "()[]{},:=<>+-*/%!";
    if (kOneChar.find(c) != std::string_view::npos) {
      token->kind = TokenKind::kPunct;
      token->text = std::string(1, c);
      Advance();
      return Status::Ok();
    }
    return ErrorAt(line_, col_, "unexpected character " + Printable(c));
  }

  // digits [. digits] [e [+-] digits] [dtype suffix]; the parser checks the suffix.
  Status LexNumber(Token* token) {
    size_t start = pos_;
    bool is_float = false;
    while (IsDigit(Peek())) Advance();
    if (Peek() == '.' && IsDigit(Peek(1))) {
      is_float = true;
      Advance();
      while (IsDigit(Peek())) Advance();
    }
    if ((Peek() == 'e' || Peek() == 'E') &&
        (IsDigit(Peek(1)) || ((Peek(1) == '+' || Peek(1) == '-') && IsDigit(Peek(2))))) {
      is_float = true;
      Advance();
      if (Peek() == '+' || Peek() == '-') Advance();
      while (IsDigit(Peek())) Advance();
    }
    if (IsIdentStart(Peek())) {
      while (IsIdentChar(Peek())) Advance();
    }
    token->kind = is_float ? TokenKind::kFloat : TokenKind::kInt;
    token->text = std::string(text_.substr(start, pos_ - start));
    return Status::Ok();
  }

  Status LexString(std::string* out) {
    int line = line_, col = col_;
    Advance();  // opening quote
    out->clear();
    while (true) {
      if (pos_ >= text_.size() || Peek() == '\n') return ErrorAt(line, col, "unterminated string literal");
      char c = Peek();
      if (c == '"') {
        Advance();
        return Status::Ok();
      }
      if (c != '\\') {
        out->push_back(c);
        Advance();
        continue;
      }
      int esc_line = line_, esc_col = col_;
      Advance();
      char e = Peek();
      switch (e) {
        case 'n': out->push_back('\n'); break;
        case 't': out->push_back('\t'); break;
        case 'r': out->push_back('\r'); break;
        case '"': out->push_back('"'); break;
        case '\\': out->push_back('\\'); break;
        case 'x': {
          int hi = HexValue(Peek(1)), lo = HexValue(Peek(2));
          if (hi < 0 || lo < 0) return ErrorAt(esc_line, esc_col, "expected two hex digits after '\\x'");
          out->push_back(static_cast<char>(hi * 16 + lo));
          Advance();
          Advance();
          break;
        }
        default:
          if (pos_ >= text_.size()) return ErrorAt(line, col, "unterminated string literal");
          return ErrorAt(esc_line, esc_col, "unknown escape sequence '\\" + std::string(1, e) + "' in string");
      }
      Advance();
    }
  }

  std::string_view text_;
  std::string_view filename_;
  size_t pos_ = 0;
  int line_ = 1;
  int col_ = 1;
};

}  // namespace

std::string DescribeToken(const Token& token) {
  switch (token.kind) {
    case TokenKind::kEnd: return "end of file";
    case TokenKind::kString: return "string " + QuoteString(token.text);
    case TokenKind::kGlobal: return "'@" + token.text + "'";
    default: return "'" + token.text + "'";
  }
}

StatusOr<std::vector<Token>> Lex(std::string_view text, std::string_view filename) {
  return Lexer(text, filename).Run();
}

bool IsReservedWord(std::string_view word) {
  static constexpr std::string_view kWords[] = {
      "if",  "else",  "return", "dataflow", "output",   "func",  "prim_func", "for",   "in",
      "let", "alloc", "assert", "evaluate", "prefetch", "attrs", "true",      "false",
  };
  for (std::string_view w : kWords) {
    if (word == w) return true;
  }
  for (std::string_view special : {std::string_view("inf"), std::string_view("nan")}) {
    if (word.substr(0, 3) != special) continue;
    if (word.size() == 3 || DataType::Parse(word.substr(3))) return true;
  }
  return false;
}

bool IsPlainName(std::string_view name) {
  if (name.empty() || !IsIdentStart(name[0])) return false;
  for (char c : name) {
    if (!IsIdentChar(c)) return false;
  }
  return !IsReservedWord(name);
}

bool IsPlainOpName(std::string_view name) {
  if (name.empty() || !IsIdentStart(name[0]) || name.back() == '.') return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (IsIdentChar(name[i])) continue;
    if (name[i] != '.' || !IsIdentStart(name[i + 1])) return false;
  }
  return !IsReservedWord(name);
}

bool IsPlainGlobalName(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!IsGlobalChar(c)) return false;
  }
  return true;
}

namespace {

// Makes a shortest-round-trip spelling unmistakably a float literal.
std::string FinishFloatSpelling(const char* begin, const char* end) {
  std::string text(begin, end);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

}  // namespace

std::string FormatDouble(double value) {
  if (std::isnan(value)) return std::signbit(value) ? "-nan" : "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buf[64];
  auto result = std::to_chars(buf, buf + sizeof(buf), value);
  return FinishFloatSpelling(buf, result.ptr);
}

std::string FormatFloat(float value) {
  if (std::isnan(value)) return std::signbit(value) ? "-nan" : "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buf[64];
  auto result = std::to_chars(buf, buf + sizeof(buf), value);
  return FinishFloatSpelling(buf, result.ptr);
}

bool ParseDoubleText(std::string_view text, double* out) {
  if (text.empty() || !IsDigit(text[0])) return false;
  auto result = std::from_chars(text.data(), text.data() + text.size(), *out);
  if (result.ptr != text.data() + text.size()) return false;
  if (result.ec == std::errc()) return true;
  if (result.ec != std::errc::result_out_of_range) return false;
  // from_chars leaves the value unset on overflow/underflow; strtod saturates.
  std::string copy(text);
  *out = std::strtod(copy.c_str(), nullptr);
  return true;
}

bool ParseFloatText(std::string_view text, float* out) {
  if (text.empty() || !IsDigit(text[0])) return false;
  auto result = std::from_chars(text.data(), text.data() + text.size(), *out);
  if (result.ptr != text.data() + text.size()) return false;
  if (result.ec == std::errc()) return true;
  if (result.ec != std::errc::result_out_of_range) return false;
  std::string copy(text);
  *out = std::strtof(copy.c_str(), nullptr);
  return true;
}

uint16_t FloatToHalf(float value) {
  uint32_t x;
  std::memcpy(&x, &value, sizeof(x));
  uint32_t sign = (x >> 16) & 0x8000u;
  int exp = static_cast<int>((x >> 23) & 0xffu);
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0u));
  int e = exp - 127 + 15;
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    int shift = 14 - e;
    uint32_t half_mant = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_mant & 1u))) ++half_mant;
    return static_cast<uint16_t>(sign | half_mant);
  }
  uint32_t half = sign | (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;  // a carry rounds up to inf correctly
  return static_cast<uint16_t>(half);
}

float HalfToFloat(uint16_t bits) {
  uint32_t sign = (static_cast<uint32_t>(bits) & 0x8000u) << 16;
  uint32_t exp = (bits >> 10) & 0x1fu;
  uint32_t mant = bits & 0x3ffu;
  float result;
  if (exp == 0) {
    result = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -result : result;
  }
  uint32_t x = exp == 31 ? (sign | 0x7f800000u | (mant << 13)) : (sign | ((exp + 112) << 23) | (mant << 13));
  std::memcpy(&result, &x, sizeof(result));
  return result;
}

std::string QuoteString(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (u < 0x20 || u == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\x%02x", u);
          out += buf;
        } else {
          out.push_back(c);
        }
    }
  }
  out += "\"";
  return out;
}

}  // namespace strata::ir
