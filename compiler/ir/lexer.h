// Lexer for the text IR (.sir, docs/text_ir.md): source text to a token vector.
//
// The whole file is tokenized up front so the parser can look ahead freely (it
// pre-scans a dataflow block for its `output` line before building the vars).
// Tokens remember whether a line break preceded them: a value at the end of one
// line followed by `(` or `[` on the next is two things, not a call or an index.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "support/status.h"

namespace strata::ir {

enum class TokenKind : uint8_t {
  kEnd,     // end of input
  kIdent,   // foo, _1, f32, for, nn.relu (dots only after the first character)
  kGlobal,  // @name or @"any name"; text is the name without '@'
  kInt,     // 42, 3i32 (text is the spelling, suffix included)
  kFloat,   // 1.5, 1e-3, 2.5f64 (text is the spelling, suffix included)
  kString,  // "text"; text holds the decoded value
  kPunct,   // ( ) [ ] { } , : = -> == != < <= > >= + - * / // % ! && ||
};

struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::string text;
  int line = 1;
  int col = 1;
  bool newline_before = false;

  bool Is(TokenKind k, std::string_view t) const { return kind == k && text == t; }
  bool IsPunct(std::string_view t) const { return Is(TokenKind::kPunct, t); }
  bool IsIdent(std::string_view t) const { return Is(TokenKind::kIdent, t); }
};

// How a token reads in an error message: 'foo', '(', "text", end of file.
std::string DescribeToken(const Token& token);

// Tokenizes `text`; the last token is always kEnd. Errors are formatted as
// `filename:line:col: error: ...`.
StatusOr<std::vector<Token>> Lex(std::string_view text, std::string_view filename);

// ---- Spelling shared by the parser and the printer, so they cannot drift apart.

// Words that cannot name a variable: statement keywords, `true`/`false`, and
// the float literals `inf`/`nan` (optionally with a dtype suffix, `inff64`).
bool IsReservedWord(std::string_view word);
// A name the printer can emit as is: an identifier that is not reserved.
bool IsPlainName(std::string_view name);
// A function name that needs no quotes after '@'.
bool IsPlainGlobalName(std::string_view name);
// An operator name the parser reads as one word: an identifier that may contain
// dots after its first character (nn.relu, vm.builtin.shape_of).
bool IsPlainOpName(std::string_view name);

// Shortest text that reads back to exactly `value`, always recognizable as a
// float ("1.0", "1e+20", "-0.0"); infinities and NaN are "inf", "-inf", "nan", "-nan".
std::string FormatDouble(double value);
// The same for a value that lives in a float (f32 or f16 constant data).
std::string FormatFloat(float value);
// Parses the unsigned body of a float literal ("1.5", "1e-3"). Values beyond the
// range of double become infinity; false if `text` is not a number.
bool ParseDoubleText(std::string_view text, double* out);
bool ParseFloatText(std::string_view text, float* out);
// IEEE half precision conversions (round to nearest even).
uint16_t FloatToHalf(float value);
float HalfToFloat(uint16_t bits);
// A string literal with quotes and escapes, as the lexer reads it back.
std::string QuoteString(std::string_view text);

}  // namespace strata::ir
