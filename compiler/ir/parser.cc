// Recursive-descent parser of the text IR; the grammar is docs/text_ir.md.
//
// Name resolution follows the spec: graph variables are scoped per function,
// dataflow block and if branch; symbolic shape variables are declared by their
// first use inside a shape and live for the whole function; tensor-program
// names are scoped per block. Every rule the make() constructors assert is
// checked here first, so bad input is an error message, never an abort.
//
// This file holds the module level (functions, names, dtypes, attributes) and
// the helpers the other parser_*.cc files share (parser_internal.h).
#include "compiler/ir/parser.h"

#include <charconv>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "compiler/ir/arith/simplify.h"
#include "compiler/ir/parser_internal.h"

namespace strata::ir {
namespace text_parser {

NumberParts SplitNumber(std::string_view text) {
  auto digit = [&](size_t i) { return i < text.size() && text[i] >= '0' && text[i] <= '9'; };
  size_t i = 0;
  NumberParts parts;
  while (digit(i)) ++i;
  if (i < text.size() && text[i] == '.' && digit(i + 1)) {
    parts.is_float = true;
    ++i;
    while (digit(i)) ++i;
  }
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E') &&
      (digit(i + 1) || (i + 1 < text.size() && (text[i + 1] == '+' || text[i + 1] == '-') && digit(i + 2)))) {
    parts.is_float = true;
    i += 2;
    while (digit(i)) ++i;
  }
  parts.body = text.substr(0, i);
  parts.suffix = text.substr(i);
  return parts;
}

bool FitsInt(bool negative, uint64_t magnitude, DataType dtype, int64_t* out) {
  if (dtype.is_bool()) {
    if (magnitude > 1 || (negative && magnitude != 0)) return false;
    *out = static_cast<int64_t>(magnitude);
    return true;
  }
  int bits = dtype.bits();
  if (dtype.is_uint()) {
    if (negative && magnitude != 0) return false;
    if (bits < 64 && magnitude > (uint64_t{1} << bits) - 1) return false;
    *out = static_cast<int64_t>(magnitude);
    return true;
  }
  uint64_t max_positive = (uint64_t{1} << (bits - 1)) - 1;
  if (negative) {
    if (magnitude > max_positive + 1) return false;
    *out = magnitude == max_positive + 1
               ? (bits == 64 ? std::numeric_limits<int64_t>::min() : -static_cast<int64_t>(magnitude))
               : -static_cast<int64_t>(magnitude);
    return true;
  }
  if (magnitude > max_positive) return false;
  *out = static_cast<int64_t>(magnitude);
  return true;
}

bool IsNumeric(DataType t) { return t.is_integral() || t.is_float(); }

bool TooDeep(const PrimExpr& e, int budget) {
  if (!e.defined()) return false;
  if (budget <= 0) return true;
  --budget;
  switch (e->kind) {
    case PrimExprKind::kIntImm:
    case PrimExprKind::kFloatImm:
    case PrimExprKind::kVar: return false;
    case PrimExprKind::kNot: return TooDeep(e.as<tir::NotNode>()->a, budget);
    case PrimExprKind::kCast: return TooDeep(e.as<tir::CastNode>()->value, budget);
    case PrimExprKind::kSelect: {
      const auto* op = e.as<tir::SelectNode>();
      return TooDeep(op->condition, budget) || TooDeep(op->true_value, budget) || TooDeep(op->false_value, budget);
    }
    case PrimExprKind::kCall:
      for (const PrimExpr& arg : e.as<tir::CallNode>()->args) {
        if (TooDeep(arg, budget)) return true;
      }
      return false;
    case PrimExprKind::kBufferLoad:
      for (const PrimExpr& index : e.as<tir::BufferLoadNode>()->indices) {
        if (TooDeep(index, budget)) return true;
      }
      return false;
    default: {
      const auto* op = e.as<tir::BinaryOpNode>();
      return TooDeep(op->a, budget) || TooDeep(op->b, budget);
    }
  }
}

std::string Count(size_t n, const std::string& noun) { return std::to_string(n) + " " + noun + (n == 1 ? "" : "s"); }

void AppendLittleEndian(uint64_t bits, int bytes, std::vector<uint8_t>* out) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<uint8_t>(bits >> (8 * i)));
}

bool IsFloatLiteralWord(const Token& t) {
  if (t.kind != TokenKind::kIdent) return false;
  std::string_view w(t.text);
  if (w.substr(0, 3) != "inf" && w.substr(0, 3) != "nan") return false;
  return w.size() == 3 || DataType::Parse(w.substr(3)).has_value();
}

// ===================================================================== module

StatusOr<IRModule> Parser::Run() {
  IRModule module;
  std::map<std::string, int> defined_at_line;
  while (Peek().kind != TokenKind::kEnd) {
    if (Peek().IsIdent("attrs")) {  // module attributes
      Next();
      STRATA_ASSIGN_OR_RETURN(Attrs attrs, ParseAttrBlock());
      for (auto& [key, value] : attrs) module.attrs()[key] = value;
      continue;
    }
    bool is_prim = Peek().IsIdent("prim_func");
    if (!is_prim && !Peek().IsIdent("func")) return Expected("'func' or 'prim_func'");
    Next();
    if (Peek().kind != TokenKind::kGlobal) return Expected("a function name such as @main");
    Token name = Next();
    auto [it, inserted] = defined_at_line.emplace(name.text, name.line);
    if (!inserted) {
      return ErrorAt(name, "duplicate function name '@" + name.text + "' (first defined at line " +
                               std::to_string(it->second) + ")");
    }
    if (is_prim) {
      STRATA_ASSIGN_OR_RETURN(tir::PrimFunc func, ParsePrimFuncRest());
      module.Add(name.text, func);
    } else {
      STRATA_ASSIGN_OR_RETURN(graph::Function func, ParseGraphFuncRest());
      module.Add(name.text, func);
    }
  }
  for (const GlobalRef& ref : refs_) {
    const BaseFunc* func = module.Lookup(ref.name);
    if (!func) return ErrorAt(ref.line, ref.col, "undefined function '@" + ref.name + "'");
    const auto* prim = std::get_if<tir::PrimFunc>(func);
    if (ref.use == GlobalRef::Use::kCallTIR && !prim) {
      return ErrorAt(ref.line, ref.col, "call_tir needs a prim_func, but '@" + ref.name + "' is a graph function");
    }
    if (ref.use == GlobalRef::Use::kCall) {
      size_t want = prim ? (*prim)->params.size() : std::get<graph::Function>(*func)->params.size();
      if (want != ref.num_args) {
        return ErrorAt(ref.line, ref.col,
                       "'@" + ref.name + "' takes " + Count(want, "argument") + ", but " +
                           std::to_string(ref.num_args) + " " + (ref.num_args == 1 ? "was" : "were") + " given");
      }
    }
  }
  return module;
}

// ===================================================================== shared

StatusOr<Token> Parser::ParseName(const std::string& what) {
  const Token& t = Peek();
  if (t.kind == TokenKind::kIdent && IsReservedWord(t.text)) {
    return ErrorAt(t, "expected " + what + ", found keyword '" + t.text + "' (it cannot name a variable)");
  }
  if (t.kind != TokenKind::kIdent) return Expected(what);
  return Next();
}

StatusOr<DataType> Parser::ParseDType() {
  const Token& t = Peek();
  if (t.kind != TokenKind::kIdent) return Expected("a dtype such as f32");
  std::optional<DataType> dtype = DataType::Parse(t.text);
  if (!dtype) {
    return ErrorAt(t, "unknown dtype '" + t.text +
                          "' (expected i8, i16, i32, i64, u8, u16, u32, u64, f16, f32, "
                          "f64 or bool)");
  }
  Next();
  return *dtype;
}

StatusOr<int64_t> Parser::ParseSmallInt(const std::string& what) {
  const Token& t = Peek();
  if (t.kind != TokenKind::kInt) return Expected(what);
  NumberParts parts = SplitNumber(t.text);
  int64_t value = 0;
  auto result = std::from_chars(parts.body.data(), parts.body.data() + parts.body.size(), value);
  if (!parts.suffix.empty() || result.ec != std::errc() || value > kMaxNdim) {
    return ErrorAt(t, "expected " + what + " (a small unsuffixed integer), found '" + t.text + "'");
  }
  Next();
  return value;
}

StatusOr<Attrs> Parser::ParseAttrBlock() {
  STRATA_RETURN_IF_ERROR(Expect("{", "after 'attrs'"));
  Attrs attrs;
  if (TryPunct("}")) return attrs;
  while (true) {
    STRATA_RETURN_IF_ERROR(ParseKwarg(&attrs));
    if (TryPunct(",")) continue;
    STRATA_RETURN_IF_ERROR(Expect("}", "to close the attributes"));
    return attrs;
  }
}

Status Parser::ParseKwarg(Attrs* attrs) {
  const Token key = Peek();
  if (key.kind != TokenKind::kIdent && key.kind != TokenKind::kString) return Expected("an attribute name");
  Next();
  STRATA_RETURN_IF_ERROR(Expect("=", "after the attribute name"));
  STRATA_ASSIGN_OR_RETURN(AttrValue value, ParseAttrValue());
  if (!attrs->emplace(key.text, std::move(value)).second) {
    return ErrorAt(key, "duplicate attribute '" + key.text + "'");
  }
  return Status::Ok();
}

StatusOr<AttrValue> Parser::ParseAttrValue() {
  const Token t = Peek();
  if (t.kind == TokenKind::kString) {
    Next();
    return AttrValue(t.text);
  }
  if (t.IsPunct("[")) {
    // Integers, or expressions of the function's shape variables (end=[t]), or
    // strings (input_names = ["input.1"]). `[]` is the empty list of integers.
    Next();
    std::vector<PrimExpr> values;
    if (TryPunct("]")) return AttrValue(std::vector<int64_t>{});
    if (Peek().kind == TokenKind::kString) return ParseStringListRest();
    while (true) {
      STRATA_ASSIGN_OR_RETURN(PrimExpr value, ParseIndexLike("an attribute list element"));
      values.push_back(arith::Simplify(value));  // -1 is the constant, not 0 - 1
      if (TryPunct(",")) continue;
      STRATA_RETURN_IF_ERROR(Expect("]", "to close the attribute list"));
      return ir::MakeIntList(values);
    }
  }
  if (t.kind == TokenKind::kIdent) {
    if (t.text == "true" || t.text == "false") {
      Next();
      return AttrValue(t.text == "true");
    }
    if (t.text == "inf" || t.text == "nan") {
      Next();
      return AttrValue(t.text == "inf" ? std::numeric_limits<double>::infinity()
                                       : std::numeric_limits<double>::quiet_NaN());
    }
    if (std::optional<DataType> dtype = DataType::Parse(t.text)) {
      Next();
      return AttrValue(*dtype);
    }
  }
  bool negative = t.IsPunct("-");
  if (negative) Next();
  if (negative && Peek().IsIdent("inf")) {
    Next();
    return AttrValue(-std::numeric_limits<double>::infinity());
  }
  if (Peek().kind == TokenKind::kInt || Peek().kind == TokenKind::kFloat) {
    STRATA_ASSIGN_OR_RETURN(PExpr e, ParseNumber(Next(), negative, t.line, t.col));
    if (e.lit == PExpr::Lit::kNone) return ErrorAt(t, "attribute values take no dtype suffix");
    if (e.lit == PExpr::Lit::kFloat) return AttrValue(e.fvalue);
    STRATA_ASSIGN_OR_RETURN(PrimExpr imm, MakeLiteral(e, DataType::I64()));
    return AttrValue(*tir::AsConstInt(imm));
  }
  return Expected("an attribute value (integer, float, string, true/false, [integers], [strings] or a dtype)");
}

StatusOr<AttrValue> Parser::ParseStringListRest() {
  std::vector<std::string> values;
  while (true) {
    const Token t = Peek();
    if (t.kind != TokenKind::kString) return Expected("a string (a list that starts with a string holds only strings)");
    Next();
    values.push_back(t.text);
    if (TryPunct(",")) continue;
    STRATA_RETURN_IF_ERROR(Expect("]", "to close the attribute list"));
    return AttrValue(std::move(values));
  }
}

}  // namespace text_parser

StatusOr<IRModule> ParseModule(std::string_view text, std::string_view filename) {
  STRATA_ASSIGN_OR_RETURN(std::vector<Token> tokens, Lex(text, filename));
  return text_parser::Parser(std::move(tokens), filename).Run();
}

}  // namespace strata::ir
