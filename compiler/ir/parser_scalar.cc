// Text IR parser: scalar expressions (precedence climbing, literals that take
// their dtype from context), indices, shapes and buffer types.
#include <charconv>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "compiler/ir/arith/simplify.h"
#include "compiler/ir/parser_internal.h"

namespace strata::ir::text_parser {

// ===================================================================== scalars

StatusOr<PExpr> Parser::ParseNumber(const Token& token, bool negative, int line, int col) {
  PExpr e;
  e.line = line;
  e.col = col;
  e.negative = negative;
  e.spelling = (negative ? "-" : "") + token.text;
  NumberParts parts;
  if (token.kind == TokenKind::kIdent) {  // inf / nan, optionally suffixed
    parts.body = std::string_view(token.text).substr(0, 3);
    parts.suffix = std::string_view(token.text).substr(3);
    parts.is_float = true;
  } else {
    parts = SplitNumber(token.text);
  }
  if (parts.is_float) {
    e.lit = PExpr::Lit::kFloat;
    if (parts.body == "inf") {
      e.fvalue = std::numeric_limits<double>::infinity();
    } else if (parts.body == "nan") {
      e.fvalue = std::numeric_limits<double>::quiet_NaN();
    } else if (!ParseDoubleText(parts.body, &e.fvalue)) {
      return ErrorAt(token, "malformed float literal '" + token.text + "'");
    }
    if (negative) e.fvalue = -e.fvalue;
  } else {
    e.lit = PExpr::Lit::kInt;
    auto result = std::from_chars(parts.body.data(), parts.body.data() + parts.body.size(), e.magnitude);
    if (result.ec != std::errc() || result.ptr != parts.body.data() + parts.body.size()) {
      return ErrorAt(token, "integer literal '" + token.text + "' is too large");
    }
  }
  if (parts.suffix.empty()) return e;
  std::optional<DataType> dtype = DataType::Parse(parts.suffix);
  if (!dtype || dtype->is_void() || dtype->is_handle()) {
    return ErrorAt(token, "unknown dtype suffix '" + std::string(parts.suffix) + "' on literal '" + token.text + "'");
  }
  if (e.lit == PExpr::Lit::kFloat && !dtype->is_float()) {
    return ErrorAt(token, "float literal '" + token.text + "' cannot have dtype " + dtype->ToString());
  }
  STRATA_ASSIGN_OR_RETURN(e.expr, MakeLiteral(e, *dtype));
  e.lit = PExpr::Lit::kNone;
  return e;
}

StatusOr<PrimExpr> Parser::MakeLiteral(const PExpr& e, DataType dtype) {
  if (e.lit == PExpr::Lit::kFloat) {
    if (!dtype.is_float()) {
      return ErrorAt(e.line, e.col, "float literal " + e.spelling + " cannot have dtype " + dtype.ToString());
    }
    return tir::FloatImm(dtype, e.fvalue);
  }
  if (dtype.is_float()) {
    double value = static_cast<double>(e.magnitude);
    return tir::FloatImm(dtype, e.negative ? -value : value);
  }
  int64_t value = 0;
  if ((!dtype.is_integral() && !dtype.is_bool()) || !FitsInt(e.negative, e.magnitude, dtype, &value)) {
    return ErrorAt(e.line, e.col, "integer literal " + e.spelling + " does not fit in " + dtype.ToString());
  }
  return tir::IntImm(dtype, value);
}

Status Parser::Settle(PExpr* e, DataType dtype) {
  if (e->lit == PExpr::Lit::kNone) return Status::Ok();
  STRATA_ASSIGN_OR_RETURN(e->expr, MakeLiteral(*e, dtype));
  e->lit = PExpr::Lit::kNone;
  return Status::Ok();
}

Status Parser::Unify(PExpr* a, PExpr* b) {
  bool a_pending = a->lit != PExpr::Lit::kNone, b_pending = b->lit != PExpr::Lit::kNone;
  if (a_pending && b_pending) {
    bool any_float = a->lit == PExpr::Lit::kFloat || b->lit == PExpr::Lit::kFloat;
    DataType t = any_float ? DataType::F32() : DataType::I64();
    STRATA_RETURN_IF_ERROR(Settle(a, t));
    return Settle(b, t);
  }
  if (a_pending) return Settle(a, b->expr.dtype());
  if (b_pending) return Settle(b, a->expr.dtype());
  return Status::Ok();
}

StatusOr<PExpr> Parser::MakeBinary(PrimExprKind kind, PExpr a, PExpr b, const Token& op) {
  STRATA_RETURN_IF_ERROR(Unify(&a, &b));
  std::string name(tir::BinaryOpName(kind));
  DataType t = a.expr.dtype();
  if (t != b.expr.dtype()) {
    return ErrorAt(
        op, "dtype mismatch: operands of '" + name + "' are " + t.ToString() + " and " + b.expr.dtype().ToString());
  }
  std::string need;
  switch (kind) {
    case PrimExprKind::kDiv:
      if (!t.is_float()) need = "float operands ('/' is true division; use '//' for integers)";
      break;
    case PrimExprKind::kFloorDiv:
    case PrimExprKind::kFloorMod:
      if (!t.is_integral()) need = "integer operands";
      break;
    case PrimExprKind::kEQ:
    case PrimExprKind::kNE:
      if (!IsNumeric(t) && !t.is_bool()) need = "scalar operands";
      break;
    case PrimExprKind::kAnd:
    case PrimExprKind::kOr:
      if (!t.is_bool()) need = "bool operands";
      break;
    default:  // arithmetic, min/max and ordering
      if (!IsNumeric(t)) need = "integer or float operands";
      break;
  }
  if (!need.empty()) return ErrorAt(op, "'" + name + "' needs " + need + ", found " + t.ToString());
  PExpr result;
  result.line = a.line;
  result.col = a.col;
  result.expr = tir::BinaryOpNode::make(kind, a.expr, b.expr);
  return result;
}

namespace {

bool BinaryOpInfo(const Token& t, int* prec, PrimExprKind* kind) {
  if (t.kind != TokenKind::kPunct) return false;
  static const std::map<std::string, std::pair<int, PrimExprKind>> kOps = {
      {"||", {1, PrimExprKind::kOr}},       {"&&", {2, PrimExprKind::kAnd}},     {"==", {3, PrimExprKind::kEQ}},
      {"!=", {3, PrimExprKind::kNE}},       {"<", {4, PrimExprKind::kLT}},       {"<=", {4, PrimExprKind::kLE}},
      {">", {4, PrimExprKind::kGT}},        {">=", {4, PrimExprKind::kGE}},      {"+", {5, PrimExprKind::kAdd}},
      {"-", {5, PrimExprKind::kSub}},       {"*", {6, PrimExprKind::kMul}},      {"/", {6, PrimExprKind::kDiv}},
      {"//", {6, PrimExprKind::kFloorDiv}}, {"%", {6, PrimExprKind::kFloorMod}},
  };
  auto it = kOps.find(t.text);
  if (it == kOps.end()) return false;
  *prec = it->second.first;
  *kind = it->second.second;
  return true;
}
}  // namespace

StatusOr<PExpr> Parser::ParseScalar(int min_prec) {
  DepthGuard guard(&depth_);
  STRATA_RETURN_IF_ERROR(CheckDepth());
  STRATA_ASSIGN_OR_RETURN(PExpr lhs, ParseUnary());
  while (true) {
    int prec = 0;
    PrimExprKind kind;
    if (!BinaryOpInfo(Peek(), &prec, &kind) || prec < min_prec) {
      if (min_prec == 1 && TooDeep(lhs.expr, kMaxExprHeight)) {
        return ErrorAt(lhs.line, lhs.col,
                       "expression is nested more than " + std::to_string(kMaxExprHeight) + " levels deep");
      }
      return lhs;
    }
    Token op = Next();
    STRATA_ASSIGN_OR_RETURN(PExpr rhs, ParseScalar(prec + 1));
    STRATA_ASSIGN_OR_RETURN(lhs, MakeBinary(kind, std::move(lhs), std::move(rhs), op));
  }
}

StatusOr<PExpr> Parser::ParseUnary() {
  DepthGuard guard(&depth_);
  STRATA_RETURN_IF_ERROR(CheckDepth());
  const Token t = Peek();
  if (t.IsPunct("-")) {
    Next();
    // A minus directly on a literal is part of the literal: -1 is a constant.
    if (Peek().kind == TokenKind::kInt || Peek().kind == TokenKind::kFloat || IsFloatLiteralWord(Peek())) {
      return ParseNumber(Next(), /*negative=*/true, t.line, t.col);
    }
    STRATA_ASSIGN_OR_RETURN(PExpr operand, ParseUnary());
    STRATA_RETURN_IF_ERROR(SettleDefault(&operand));
    DataType dtype = operand.expr.dtype();
    if (!IsNumeric(dtype)) return ErrorAt(t, "unary '-' needs an integer or float operand, found " + dtype.ToString());
    PrimExpr zero = dtype.is_float() ? tir::FloatImm(dtype, 0.0) : tir::IntImm(dtype, 0);
    PExpr result;
    result.line = t.line;
    result.col = t.col;
    result.expr = tir::BinaryOpNode::make(PrimExprKind::kSub, zero, operand.expr);
    return result;
  }
  if (t.IsPunct("!")) {
    Next();
    STRATA_ASSIGN_OR_RETURN(PExpr operand, ParseUnary());
    STRATA_RETURN_IF_ERROR(SettleDefault(&operand));
    if (!operand.expr.dtype().is_bool()) {
      return ErrorAt(t, "'!' needs a bool operand, found " + operand.expr.dtype().ToString());
    }
    PExpr result;
    result.line = t.line;
    result.col = t.col;
    result.expr = tir::NotNode::make(operand.expr);
    return result;
  }
  return ParsePrimary();
}

tir::Var* Parser::LookupVar(const std::string& name) {
  for (auto it = tir_vars_.rbegin(); it != tir_vars_.rend(); ++it) {
    auto found = it->find(name);
    if (found != it->end()) return &found->second;
  }
  return nullptr;
}

tir::Buffer Parser::LookupBuffer(const std::string& name) {
  for (auto it = buffers_.rbegin(); it != buffers_.rend(); ++it) {
    auto found = it->find(name);
    if (found != it->end()) return found->second;
  }
  return nullptr;
}

StatusOr<PExpr> Parser::ParsePrimary() {
  const Token t = Peek();
  PExpr result;
  result.line = t.line;
  result.col = t.col;
  if (t.IsPunct("(")) {
    Next();
    STRATA_ASSIGN_OR_RETURN(PExpr inner, ParseScalar());
    STRATA_RETURN_IF_ERROR(Expect(")", "to close the parenthesized expression"));
    return inner;
  }
  if (t.kind == TokenKind::kInt || t.kind == TokenKind::kFloat || IsFloatLiteralWord(t)) {
    return ParseNumber(Next(), /*negative=*/false, t.line, t.col);
  }
  if (t.kind != TokenKind::kIdent) return Expected("an expression");
  if (t.text == "true" || t.text == "false") {
    Next();
    result.expr = tir::IntImm(DataType::Bool(), t.text == "true" ? 1 : 0);
    return result;
  }
  if (IsReservedWord(t.text)) return Expected("an expression");
  if ((t.text == "cast" && Peek(1).IsPunct("<")) || Peek(1).IsPunct("(")) {
    Next();
    return ParseScalarCall(t);
  }
  if (Peek(1).IsPunct("[")) {
    Next();
    tir::Buffer buffer = LookupBuffer(t.text);
    if (!buffer) return ErrorAt(t, "undefined buffer '" + t.text + "'");
    STRATA_ASSIGN_OR_RETURN(std::vector<PrimExpr> indices, ParseIndices(buffer, t));
    result.expr = tir::BufferLoadNode::make(buffer, std::move(indices));
    return result;
  }
  Next();
  if (tir::Var* var = LookupVar(t.text)) {
    result.expr = *var;
    return result;
  }
  if (declare_shape_vars_ && !tir_vars_.empty()) {
    auto scalar = scalar_params_ahead_.find(t.text);
    tir::Var var(t.text, scalar != scalar_params_ahead_.end() ? scalar->second : DataType::I64());
    tir_vars_.back()[t.text] = var;
    result.expr = var;
    return result;
  }
  if (in_graph_) {
    return ErrorAt(t, "undefined variable '" + t.text +
                          "' (graph-level scalars can only use shape variables declared in a shape)");
  }
  return ErrorAt(t, "undefined variable '" + t.text + "'");
}

StatusOr<PExpr> Parser::ParseScalarCall(const Token& name) {
  PExpr result;
  result.line = name.line;
  result.col = name.col;
  if (name.text == "cast" && Peek().IsPunct("<")) {
    Next();
    STRATA_ASSIGN_OR_RETURN(DataType dtype, ParseDType());
    if (dtype.is_void() || dtype.is_handle()) return ErrorAt(name, "cannot cast to " + dtype.ToString());
    STRATA_RETURN_IF_ERROR(Expect(">", "after the cast dtype"));
    STRATA_RETURN_IF_ERROR(Expect("(", "after cast<...>"));
    STRATA_ASSIGN_OR_RETURN(PExpr value, ParseScalar());
    STRATA_RETURN_IF_ERROR(Expect(")", "to close the cast"));
    STRATA_RETURN_IF_ERROR(SettleDefault(&value));
    result.expr = tir::CastNode::make(dtype, value.expr);
    return result;
  }
  tir::Intrinsic intrinsic = tir::Intrinsic::kExp;
  bool is_minmax = name.text == "min" || name.text == "max";
  bool is_select = name.text == "select";
  bool is_intrinsic = !is_minmax && !is_select && tir::ParseIntrinsic(name.text, &intrinsic);
  if (!is_minmax && !is_select && !is_intrinsic) {
    return ErrorAt(name, "unknown intrinsic '" + name.text +
                             "' (expected min, max, select, cast, exp, log, sqrt, tanh, erf, pow, abs, floor or ceil)");
  }
  STRATA_RETURN_IF_ERROR(Expect("(", "after '" + name.text + "'"));
  std::vector<PExpr> args;
  if (!Peek().IsPunct(")")) {
    while (true) {
      STRATA_ASSIGN_OR_RETURN(PExpr arg, ParseScalar());
      args.push_back(std::move(arg));
      if (!TryPunct(",")) break;
    }
  }
  STRATA_RETURN_IF_ERROR(Expect(")", "after the arguments of '" + name.text + "'"));
  size_t arity = is_minmax ? 2 : is_select ? 3 : static_cast<size_t>(tir::IntrinsicArity(intrinsic));
  if (args.size() != arity) {
    return ErrorAt(name,
                   "'" + name.text + "' takes " + Count(arity, "argument") + ", found " + std::to_string(args.size()));
  }
  if (is_minmax) {
    return MakeBinary(name.text == "min" ? PrimExprKind::kMin : PrimExprKind::kMax, std::move(args[0]),
                      std::move(args[1]), name);
  }
  if (is_select) {
    STRATA_RETURN_IF_ERROR(SettleDefault(&args[0]));
    if (!args[0].expr.dtype().is_bool()) {
      return ErrorAt(args[0].line, args[0].col,
                     "select condition must be bool, found " + args[0].expr.dtype().ToString());
    }
    STRATA_RETURN_IF_ERROR(Unify(&args[1], &args[2]));
    if (args[1].expr.dtype() != args[2].expr.dtype()) {
      return ErrorAt(name, "dtype mismatch: select branches are " + args[1].expr.dtype().ToString() + " and " +
                               args[2].expr.dtype().ToString());
    }
    result.expr = tir::SelectNode::make(args[0].expr, args[1].expr, args[2].expr);
    return result;
  }
  // Intrinsics: pending literals take the dtype of a typed argument, else f32
  // (abs of a lone integer literal stays an integer).
  std::optional<DataType> dtype;
  for (const PExpr& arg : args) {
    if (arg.lit == PExpr::Lit::kNone) {
      dtype = arg.expr.dtype();
      break;
    }
  }
  if (!dtype) {
    bool int_abs = intrinsic == tir::Intrinsic::kAbs && args[0].lit == PExpr::Lit::kInt;
    dtype = int_abs ? DataType::I64() : DataType::F32();
  }
  std::vector<PrimExpr> values;
  for (PExpr& arg : args) {
    STRATA_RETURN_IF_ERROR(Settle(&arg, *dtype));
    if (arg.expr.dtype() != *dtype) {
      return ErrorAt(arg.line, arg.col,
                     "dtype mismatch: arguments of '" + name.text + "' are " + dtype->ToString() + " and " +
                         arg.expr.dtype().ToString());
    }
    values.push_back(arg.expr);
  }
  bool ok = dtype->is_float() || (intrinsic == tir::Intrinsic::kAbs && dtype->is_integral());
  if (!ok) return ErrorAt(name, "'" + name.text + "' needs float arguments, found " + dtype->ToString());
  result.expr = tir::CallNode::make(intrinsic, std::move(values));
  return result;
}

StatusOr<PrimExpr> Parser::ParseIndexLike(const std::string& what) {
  STRATA_ASSIGN_OR_RETURN(PExpr e, ParseScalar());
  STRATA_RETURN_IF_ERROR(Settle(&e, DataType::I64()));
  if (!e.expr.dtype().is_integral()) {
    return ErrorAt(e.line, e.col, what + " must be an integer, found " + e.expr.dtype().ToString());
  }
  return e.expr;
}

StatusOr<std::vector<PrimExpr>> Parser::ParseIndices(const tir::Buffer& buffer, const Token& name) {
  STRATA_RETURN_IF_ERROR(Expect("[", "after the buffer name"));
  std::vector<PrimExpr> indices;
  if (!Peek().IsPunct("]")) {
    while (true) {
      STRATA_ASSIGN_OR_RETURN(PrimExpr index, ParseIndexLike("a buffer index"));
      indices.push_back(std::move(index));
      if (!TryPunct(",")) break;
    }
  }
  STRATA_RETURN_IF_ERROR(Expect("]", "after the buffer indices"));
  if (indices.size() != buffer->shape.size()) {
    return ErrorAt(name, "buffer '" + name.text + "' has " + Count(buffer->shape.size(), "dimension") + ", but " +
                             std::to_string(indices.size()) + (indices.size() == 1 ? " index was" : " indices were") +
                             " given");
  }
  return indices;
}

StatusOr<std::vector<PrimExpr>> Parser::ParseShapeDims() {
  STRATA_RETURN_IF_ERROR(Expect("(", "to open the shape"));
  bool saved = declare_shape_vars_;
  declare_shape_vars_ = true;
  std::vector<PrimExpr> dims;
  Status status;
  while (!Peek().IsPunct(")")) {
    StatusOr<PrimExpr> dim = ParseIndexLike("a shape dimension");
    if (!dim.ok()) {
      status = dim.status();
      break;
    }
    dims.push_back(std::move(dim).value());
    if (!TryPunct(",")) break;
  }
  declare_shape_vars_ = saved;
  STRATA_RETURN_IF_ERROR(status);
  STRATA_RETURN_IF_ERROR(Expect(")", "to close the shape"));
  return dims;
}

StatusOr<tir::Buffer> Parser::ParseBufferType(const std::string& name) {
  STRATA_RETURN_IF_ERROR(ExpectKeyword("Buffer", "(a buffer type such as Buffer[(m, n), f32])"));
  STRATA_RETURN_IF_ERROR(Expect("[", "after 'Buffer'"));
  STRATA_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, ParseShapeDims());
  STRATA_RETURN_IF_ERROR(Expect(",", "after the buffer shape"));
  const Token dtype_token = Peek();
  STRATA_ASSIGN_OR_RETURN(DataType dtype, ParseDType());
  if (dtype.is_void() || dtype.is_handle()) {
    return ErrorAt(dtype_token, "a buffer needs a numeric or bool element dtype, found " + dtype.ToString());
  }
  STRATA_RETURN_IF_ERROR(Expect("]", "to close the buffer type"));
  return tir::MakeBuffer(name, dtype, std::move(shape));
}

}  // namespace strata::ir::text_parser
