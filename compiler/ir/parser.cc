// Recursive-descent parser of the text IR; the grammar is docs/text_ir.md.
//
// Name resolution follows the spec: graph variables are scoped per function,
// dataflow block and if branch; symbolic shape variables are declared by their
// first use inside a shape and live for the whole function; tensor-program
// names are scoped per block. Every rule the make() constructors assert is
// checked here first, so bad input is an error message, never an abort.
#include "compiler/ir/parser.h"

#include <charconv>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "compiler/ir/arith/simplify.h"
#include "compiler/ir/lexer.h"

namespace strata::ir {

namespace {

using graph::StructInfo;
using tir::PrimExpr;
using tir::PrimExprKind;

// Deep enough for any real program, shallow enough that the recursion cannot
// exhaust the stack on hostile input.
constexpr int kMaxDepth = 128;
// Bounds on the depth of the IR built, so that the recursive passes, printers
// and destructors that later walk it cannot exhaust the stack either: a chain
// `a + b + c + ...` is parsed by a loop but builds a tree as deep as it is long.
constexpr int kMaxExprHeight = 1000;
constexpr int kMaxStmtNesting = 1000;
// Upper bound on a parsed rank; ranks are small, and this keeps ints in range.
constexpr int64_t kMaxNdim = 1 << 16;
// A constant in text form beyond this many elements is not a sensible input.
constexpr uint64_t kMaxConstElements = uint64_t{1} << 32;

// A scalar expression being parsed. An unsuffixed literal stays pending until the
// operand beside it (or its context) gives it a dtype: `x + 1` with x: i32 makes
// 1 an i32, while a lone `1` is an i64.
struct PExpr {
  enum class Lit : uint8_t { kNone, kInt, kFloat };
  PrimExpr expr;  // null while `lit` is pending
  Lit lit = Lit::kNone;
  bool negative = false;
  uint64_t magnitude = 0;  // of a pending integer
  double fvalue = 0;       // of a pending float (sign included)
  int line = 0, col = 0;
  std::string spelling;  // of a pending literal, for messages
};

// A reference to a module function, checked once the whole module is known.
struct GlobalRef {
  enum class Use : uint8_t { kValue, kCall, kCallTIR };
  std::string name;
  int line = 0, col = 0;
  Use use = Use::kValue;
  size_t num_args = 0;
};

// The pieces of a number token: "1.5e3" + "f64".
struct NumberParts {
  std::string_view body;
  std::string_view suffix;
  bool is_float = false;
};

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

// Whether -magnitude (or +magnitude) is representable in `dtype`; the value as
// the int64 an IntImm stores (u64 values wrap, as their bits do).
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

// Whether `e` is more than `budget` levels deep; looks no deeper than that.
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

// "1 argument", "2 arguments"
std::string Count(size_t n, const std::string& noun) { return std::to_string(n) + " " + noun + (n == 1 ? "" : "s"); }

void AppendLittleEndian(uint64_t bits, int bytes, std::vector<uint8_t>* out) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<uint8_t>(bits >> (8 * i)));
}

class Parser {
 public:
  Parser(std::vector<Token> tokens, std::string_view filename) : tokens_(std::move(tokens)), filename_(filename) {}

  StatusOr<IRModule> Run();

 private:
  // ------------------------------------------------------------ tokens, errors
  const Token& Peek(size_t ahead = 0) const {
    size_t i = pos_ + ahead;
    return i < tokens_.size() ? tokens_[i] : tokens_.back();
  }
  Token Next() {
    Token t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  bool TryPunct(std::string_view p) {
    if (!Peek().IsPunct(p)) return false;
    Next();
    return true;
  }
  Status ErrorAt(int line, int col, const std::string& message) const {
    return ErrorStatus() << filename_ << ":" << line << ":" << col << ": error: " << message;
  }
  Status ErrorAt(const Token& t, const std::string& message) const { return ErrorAt(t.line, t.col, message); }
  Status Expected(const std::string& what) const {
    return ErrorAt(Peek(), "expected " + what + ", found " + DescribeToken(Peek()));
  }
  Status Expect(std::string_view punct, std::string_view context) {
    if (TryPunct(punct)) return Status::Ok();
    return Expected("'" + std::string(punct) + "' " + std::string(context));
  }
  Status ExpectKeyword(std::string_view word, std::string_view context) {
    if (Peek().IsIdent(word)) {
      Next();
      return Status::Ok();
    }
    return Expected("'" + std::string(word) + "' " + std::string(context));
  }
  bool PeekKwarg() const {
    return (Peek().kind == TokenKind::kIdent || Peek().kind == TokenKind::kString) && Peek(1).IsPunct("=");
  }
  bool PeekCallParen() const { return Peek(1).IsPunct("(") && !Peek(1).newline_before; }

  struct DepthGuard {
    explicit DepthGuard(int* depth) : depth(depth) { ++*depth; }
    ~DepthGuard() { --*depth; }
    int* depth;
  };
  Status CheckDepth() const {
    if (depth_ > kMaxDepth) {
      return ErrorAt(Peek(), "nesting is deeper than " + std::to_string(kMaxDepth) + " levels");
    }
    return Status::Ok();
  }

  // ------------------------------------------------------------ shared pieces
  StatusOr<Token> ParseName(const std::string& what);
  StatusOr<DataType> ParseDType();
  StatusOr<Attrs> ParseAttrBlock();
  StatusOr<AttrValue> ParseAttrValue();
  StatusOr<int64_t> ParseSmallInt(const std::string& what);

  // ------------------------------------------------------------ scalar expressions
  StatusOr<PExpr> ParseNumber(const Token& token, bool negative, int line, int col);
  StatusOr<PrimExpr> MakeLiteral(const PExpr& e, DataType dtype);
  Status Settle(PExpr* e, DataType dtype);
  Status SettleDefault(PExpr* e) { return Settle(e, e->lit == PExpr::Lit::kFloat ? DataType::F32() : DataType::I64()); }
  Status Unify(PExpr* a, PExpr* b);
  StatusOr<PExpr> MakeBinary(PrimExprKind kind, PExpr a, PExpr b, const Token& op);
  StatusOr<PExpr> ParseScalar(int min_prec = 1);
  StatusOr<PExpr> ParseUnary();
  StatusOr<PExpr> ParsePrimary();
  StatusOr<PExpr> ParseScalarCall(const Token& name);
  StatusOr<std::vector<PrimExpr>> ParseIndices(const tir::Buffer& buffer, const Token& name);
  StatusOr<PrimExpr> ParseIndexLike(const std::string& what);  // an integer scalar, literals i64
  StatusOr<std::vector<PrimExpr>> ParseShapeDims();            // (d0, d1, ...), declaring names
  StatusOr<tir::Buffer> ParseBufferType(const std::string& name);
  tir::Var* LookupVar(const std::string& name);
  tir::Buffer LookupBuffer(const std::string& name);

  // ------------------------------------------------------------ tensor programs
  StatusOr<tir::PrimFunc> ParsePrimFuncRest();
  StatusOr<tir::Stmt> ParseBlock(const tir::Var* loop_var);
  StatusOr<tir::Stmt> ParseStmt();
  StatusOr<tir::Stmt> ParseIfStmt();

  // ------------------------------------------------------------ graph functions
  StatusOr<graph::Function> ParseGraphFuncRest();
  StatusOr<StructInfo> ParseStructInfo();
  StatusOr<graph::Expr> ParseSeq(bool function_body, const Token& open);
  StatusOr<graph::BindingBlock> ParseDataflowBlock();
  StatusOr<graph::Binding> ParseBinding(bool in_dataflow, const std::set<std::string>& outputs);
  StatusOr<graph::Expr> ParseValue(const StructInfo* packed_sinfo);
  StatusOr<graph::Expr> ParseValuePrimary(const StructInfo* packed_sinfo);
  StatusOr<graph::Expr> ParseGraphIf();
  StatusOr<graph::Expr> ParseConst();
  StatusOr<graph::Expr> ParseConstFile(std::shared_ptr<graph::HostTensor> data, uint64_t count);
  Status ParseCallRest(std::vector<graph::Expr>* args, Attrs* attrs, size_t max_extra, const Token& callee);
  Status ParseKwarg(Attrs* attrs);
  StatusOr<int> ParseTupleIndex();
  bool PeekBindingStart() const {
    return Peek().kind == TokenKind::kIdent && (Peek(1).IsPunct(":") || Peek(1).IsPunct("="));
  }
  void BindGraphVar(const graph::Var& var) { graph_scopes_.back()[var->name] = var; }
  const graph::Var* LookupGraphVar(const std::string& name) const {
    for (auto it = graph_scopes_.rbegin(); it != graph_scopes_.rend(); ++it) {
      auto found = it->find(name);
      if (found != it->end()) return &found->second;
    }
    return nullptr;
  }
  void AddRef(const Token& t, GlobalRef::Use use, size_t num_args = 0) {
    refs_.push_back(GlobalRef{t.text, t.line, t.col, use, num_args});
  }

  std::vector<Token> tokens_;
  std::string filename_;
  size_t pos_ = 0;
  int depth_ = 0;
  int stmt_nesting_ = 0;  // enclosing blocks, lets and allocs of the statement being read
  // Names in a shape (Tensor[(m, n)], Buffer[(m, n)], match_shape) that are not
  // bound yet declare new symbolic variables.
  bool declare_shape_vars_ = false;
  bool in_graph_ = false;
  std::vector<std::map<std::string, tir::Var>> tir_vars_;
  std::vector<std::map<std::string, tir::Buffer>> buffers_;
  std::vector<std::map<std::string, graph::Var>> graph_scopes_;
  std::vector<GlobalRef> refs_;
  // The graph function being parsed, and where each of its bindings was written.
  // Scalar parameters of the prim_func being read, seen ahead, so that a shape
  // naming one before its declaration gets the parameter's dtype.
  std::map<std::string, DataType> scalar_params_ahead_;
};

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
    // Integers, or expressions of the function's shape variables (end=[t]).
    Next();
    std::vector<PrimExpr> values;
    if (TryPunct("]")) return AttrValue(std::vector<int64_t>{});
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
  return Expected("an attribute value (integer, float, string, true/false, [integers] or a dtype)");
}

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

bool IsFloatLiteralWord(const Token& t) {
  if (t.kind != TokenKind::kIdent) return false;
  std::string_view w(t.text);
  if (w.substr(0, 3) != "inf" && w.substr(0, 3) != "nan") return false;
  return w.size() == 3 || DataType::Parse(w.substr(3)).has_value();
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

// ===================================================================== tensor programs

StatusOr<tir::PrimFunc> Parser::ParsePrimFuncRest() {
  in_graph_ = false;
  tir_vars_.assign(1, {});
  buffers_.assign(1, {});
  STRATA_RETURN_IF_ERROR(Expect("(", "after the function name"));
  scalar_params_ahead_.clear();
  int nesting = 0;
  for (size_t i = pos_; i + 3 < tokens_.size() && tokens_[i].kind != TokenKind::kEnd; ++i) {
    const Token& tok = tokens_[i];
    if (tok.IsPunct("(") || tok.IsPunct("[") || tok.IsPunct("{")) ++nesting;
    if (tok.IsPunct(")") || tok.IsPunct("]") || tok.IsPunct("}")) {
      if (nesting-- == 0) break;
    }
    if (nesting != 0 || tok.kind != TokenKind::kIdent || !tokens_[i + 1].IsPunct(":")) continue;
    std::optional<DataType> dtype = DataType::Parse(tokens_[i + 2].text);
    bool ends = tokens_[i + 3].IsPunct(",") || tokens_[i + 3].IsPunct(")");
    if (tokens_[i + 2].kind == TokenKind::kIdent && dtype && dtype->is_integral() && ends) {
      scalar_params_ahead_.emplace(tok.text, *dtype);
    }
  }
  std::vector<tir::PrimFuncParam> params;
  std::set<std::string> param_names;
  while (!Peek().IsPunct(")")) {
    STRATA_ASSIGN_OR_RETURN(Token name, ParseName("a parameter name"));
    if (!param_names.insert(name.text).second) {
      return ErrorAt(name, "duplicate parameter name '" + name.text + "'");
    }
    STRATA_RETURN_IF_ERROR(Expect(":", "after the parameter name"));
    tir::PrimFuncParam param;
    if (Peek().IsIdent("Buffer")) {
      STRATA_ASSIGN_OR_RETURN(param.buffer, ParseBufferType(name.text));
      buffers_.back()[name.text] = param.buffer;
    } else {
      const Token dtype_token = Peek();
      STRATA_ASSIGN_OR_RETURN(DataType dtype, ParseDType());
      if (dtype.is_void() || dtype.is_handle()) {
        return ErrorAt(dtype_token, "a scalar parameter needs a numeric or bool dtype, found " + dtype.ToString());
      }
      // A scalar that already appeared in a buffer shape is that shape variable.
      if (tir::Var* existing = LookupVar(name.text)) {
        if (existing->dtype() != dtype) {
          return ErrorAt(dtype_token, "scalar parameter '" + name.text + "' is declared " + dtype.ToString() +
                                          ", but a buffer shape already made it " + existing->dtype().ToString());
        }
        param.scalar = *existing;
      } else {
        param.scalar = tir::Var(name.text, dtype);
        tir_vars_.back()[name.text] = param.scalar;
      }
    }
    params.push_back(std::move(param));
    if (!TryPunct(",")) break;
  }
  STRATA_RETURN_IF_ERROR(Expect(")", "after the parameters"));
  scalar_params_ahead_.clear();
  Attrs attrs;
  if (Peek().IsIdent("attrs")) {
    Next();
    STRATA_ASSIGN_OR_RETURN(attrs, ParseAttrBlock());
  }
  STRATA_ASSIGN_OR_RETURN(tir::Stmt body, ParseBlock(nullptr));
  return tir::MakePrimFunc(std::move(params), std::move(body), std::move(attrs));
}

StatusOr<tir::Stmt> Parser::ParseBlock(const tir::Var* loop_var) {
  DepthGuard guard(&depth_);
  STRATA_RETURN_IF_ERROR(CheckDepth());
  const Token open = Peek();
  STRATA_RETURN_IF_ERROR(Expect("{", "to open a block"));
  tir_vars_.emplace_back();
  buffers_.emplace_back();
  if (loop_var) tir_vars_.back()[loop_var->name()] = *loop_var;
  const int outer_nesting = stmt_nesting_++;
  // let and alloc scope over the rest of the block: collect the block flat,
  // then nest from the back (no recursion, however many lets there are).
  struct Item {
    tir::Stmt stmt;
    tir::Var let_var;
    PrimExpr let_value;
    tir::Buffer alloc;
  };
  std::vector<Item> items;
  while (!Peek().IsPunct("}")) {
    const Token t = Peek();
    if (t.kind == TokenKind::kEnd) {
      return ErrorAt(
          t, "expected '}' to close the block opened at line " + std::to_string(open.line) + ", found end of file");
    }
    Item item;
    bool binder = t.IsIdent("let") || t.IsIdent("alloc");
    if (stmt_nesting_ + (binder ? 1 : 0) > kMaxStmtNesting) {
      return ErrorAt(t, "statements are nested more than " + std::to_string(kMaxStmtNesting) +
                            " levels deep (each let and alloc nests the rest of its block)");
    }
    if (binder) ++stmt_nesting_;
    if (t.IsIdent("let")) {
      Next();
      STRATA_ASSIGN_OR_RETURN(Token name, ParseName("a variable name after 'let'"));
      std::optional<DataType> declared;
      if (TryPunct(":")) {
        STRATA_ASSIGN_OR_RETURN(declared, ParseDType());
      }
      STRATA_RETURN_IF_ERROR(Expect("=", "after the let variable"));
      STRATA_ASSIGN_OR_RETURN(PExpr value, ParseScalar());
      if (declared) {
        STRATA_RETURN_IF_ERROR(Settle(&value, *declared));
        if (value.expr.dtype() != *declared) {
          return ErrorAt(value.line, value.col,
                         "dtype mismatch: let value is " + value.expr.dtype().ToString() + ", but '" + name.text +
                             "' is declared " + declared->ToString());
        }
      } else {
        STRATA_RETURN_IF_ERROR(SettleDefault(&value));
      }
      item.let_var = tir::Var(name.text, value.expr.dtype());
      item.let_value = value.expr;
      tir_vars_.back()[name.text] = item.let_var;
    } else if (t.IsIdent("alloc")) {
      Next();
      STRATA_ASSIGN_OR_RETURN(Token name, ParseName("a buffer name after 'alloc'"));
      STRATA_RETURN_IF_ERROR(Expect(":", "after the buffer name"));
      STRATA_ASSIGN_OR_RETURN(item.alloc, ParseBufferType(name.text));
      buffers_.back()[name.text] = item.alloc;
    } else {
      STRATA_ASSIGN_OR_RETURN(item.stmt, ParseStmt());
    }
    items.push_back(std::move(item));
  }
  Next();  // '}'
  stmt_nesting_ = outer_nesting;
  tir_vars_.pop_back();
  buffers_.pop_back();
  std::vector<tir::Stmt> tail;
  for (auto it = items.rbegin(); it != items.rend(); ++it) {
    if (it->stmt.defined()) {
      tail.insert(tail.begin(), it->stmt);
      continue;
    }
    tir::Stmt body = tir::SeqStmtNode::make(std::move(tail));
    tail.clear();
    tail.push_back(it->alloc ? tir::AllocateNode::make(it->alloc, body)
                             : tir::LetStmtNode::make(it->let_var, it->let_value, body));
  }
  return tir::SeqStmtNode::make(std::move(tail));
}

StatusOr<tir::Stmt> Parser::ParseStmt() {
  const Token t = Peek();
  if (t.IsIdent("for")) {
    Next();
    STRATA_ASSIGN_OR_RETURN(Token name, ParseName("a loop variable after 'for'"));
    STRATA_RETURN_IF_ERROR(ExpectKeyword("in", "after the loop variable"));
    const Token kind_token = Peek();
    tir::ForKind kind;
    if (kind_token.IsIdent("range")) {
      kind = tir::ForKind::kSerial;
    } else if (kind_token.IsIdent("parallel")) {
      kind = tir::ForKind::kParallel;
    } else if (kind_token.IsIdent("vectorized")) {
      kind = tir::ForKind::kVectorized;
    } else if (kind_token.IsIdent("unrolled")) {
      kind = tir::ForKind::kUnrolled;
    } else {
      return Expected("a loop kind (range, parallel, vectorized or unrolled)");
    }
    Next();
    STRATA_RETURN_IF_ERROR(Expect("(", "after the loop kind"));
    STRATA_ASSIGN_OR_RETURN(PExpr min, ParseScalar());
    STRATA_RETURN_IF_ERROR(Expect(",", "after the loop start"));
    STRATA_ASSIGN_OR_RETURN(PExpr extent, ParseScalar());
    STRATA_RETURN_IF_ERROR(Expect(")", "after the loop extent"));
    for (PExpr* bound : {&min, &extent}) {
      STRATA_RETURN_IF_ERROR(Settle(bound, DataType::I64()));
      if (!bound->expr.dtype().is_integral()) {
        return ErrorAt(bound->line, bound->col,
                       "loop bounds must be integers, found " + bound->expr.dtype().ToString());
      }
    }
    tir::Var loop_var(name.text, DataType::I64());
    STRATA_ASSIGN_OR_RETURN(tir::Stmt body, ParseBlock(&loop_var));
    return tir::ForNode::make(loop_var, min.expr, extent.expr, kind, body);
  }
  if (t.IsIdent("if")) return ParseIfStmt();
  if (t.IsIdent("assert")) {
    Next();
    STRATA_ASSIGN_OR_RETURN(PExpr cond, ParseScalar());
    STRATA_RETURN_IF_ERROR(SettleDefault(&cond));
    if (!cond.expr.dtype().is_bool()) {
      return ErrorAt(cond.line, cond.col, "assert condition must be bool, found " + cond.expr.dtype().ToString());
    }
    STRATA_RETURN_IF_ERROR(Expect(",", "after the assert condition"));
    if (Peek().kind != TokenKind::kString) return Expected("the assert message (a string)");
    return tir::AssertStmtNode::make(cond.expr, Next().text);
  }
  if (t.IsIdent("evaluate")) {
    Next();
    STRATA_ASSIGN_OR_RETURN(PExpr value, ParseScalar());
    STRATA_RETURN_IF_ERROR(SettleDefault(&value));
    return tir::EvaluateNode::make(value.expr);
  }
  if (t.IsIdent("prefetch")) {
    Next();
    STRATA_ASSIGN_OR_RETURN(PExpr load, ParseScalar());
    if (load.expr.as<tir::BufferLoadNode>() == nullptr) {
      return ErrorAt(load.line, load.col, "prefetch needs a buffer element such as A[i, k]");
    }
    return tir::PrefetchNode::make(load.expr);
  }
  if (t.kind == TokenKind::kIdent && !IsReservedWord(t.text) && Peek(1).IsPunct("[")) {
    Next();
    tir::Buffer buffer = LookupBuffer(t.text);
    if (!buffer) return ErrorAt(t, "undefined buffer '" + t.text + "'");
    STRATA_ASSIGN_OR_RETURN(std::vector<PrimExpr> indices, ParseIndices(buffer, t));
    STRATA_RETURN_IF_ERROR(Expect("=", "after the store target"));
    STRATA_ASSIGN_OR_RETURN(PExpr value, ParseScalar());
    STRATA_RETURN_IF_ERROR(Settle(&value, buffer->dtype));
    if (value.expr.dtype() != buffer->dtype) {
      return ErrorAt(value.line, value.col,
                     "dtype mismatch: stored value is " + value.expr.dtype().ToString() + ", but buffer '" + t.text +
                         "' holds " + buffer->dtype.ToString());
    }
    return tir::BufferStoreNode::make(buffer, std::move(indices), value.expr);
  }
  return Expected("a statement (for, let, alloc, if, assert, evaluate or a store B[i] = value)");
}

StatusOr<tir::Stmt> Parser::ParseIfStmt() {
  DepthGuard guard(&depth_);
  STRATA_RETURN_IF_ERROR(CheckDepth());
  Next();  // if
  STRATA_ASSIGN_OR_RETURN(PExpr cond, ParseScalar());
  STRATA_RETURN_IF_ERROR(SettleDefault(&cond));
  if (!cond.expr.dtype().is_bool()) {
    return ErrorAt(cond.line, cond.col, "if condition must be bool, found " + cond.expr.dtype().ToString());
  }
  STRATA_ASSIGN_OR_RETURN(tir::Stmt then_case, ParseBlock(nullptr));
  tir::Stmt else_case;
  if (Peek().IsIdent("else")) {
    Next();
    if (Peek().IsIdent("if")) {
      STRATA_ASSIGN_OR_RETURN(else_case, ParseIfStmt());
    } else {
      STRATA_ASSIGN_OR_RETURN(else_case, ParseBlock(nullptr));
    }
  }
  return tir::IfThenElseNode::make(cond.expr, then_case, else_case);
}

// ===================================================================== graph functions

StatusOr<graph::Function> Parser::ParseGraphFuncRest() {
  in_graph_ = true;
  tir_vars_.assign(1, {});
  buffers_.clear();
  graph_scopes_.assign(1, {});
  STRATA_RETURN_IF_ERROR(Expect("(", "after the function name"));
  std::vector<graph::Var> params;
  std::set<std::string> names;
  while (!Peek().IsPunct(")")) {
    STRATA_ASSIGN_OR_RETURN(Token name, ParseName("a parameter name"));
    if (!names.insert(name.text).second) return ErrorAt(name, "duplicate parameter name '" + name.text + "'");
    STRATA_RETURN_IF_ERROR(Expect(":", "after the parameter name (parameters need struct info)"));
    STRATA_ASSIGN_OR_RETURN(StructInfo sinfo, ParseStructInfo());
    graph::Var var(name.text, sinfo, /*is_dataflow=*/false);
    BindGraphVar(var);
    params.push_back(var);
    if (!TryPunct(",")) break;
  }
  STRATA_RETURN_IF_ERROR(Expect(")", "after the parameters"));
  StructInfo ret;
  if (TryPunct("->")) {
    STRATA_ASSIGN_OR_RETURN(ret, ParseStructInfo());
  }
  Attrs attrs;
  if (Peek().IsIdent("attrs")) {
    Next();
    STRATA_ASSIGN_OR_RETURN(attrs, ParseAttrBlock());
  }
  const Token open = Peek();
  STRATA_RETURN_IF_ERROR(Expect("{", "to open the function body"));
  STRATA_ASSIGN_OR_RETURN(graph::Expr body, ParseSeq(/*function_body=*/true, open));
  STRATA_RETURN_IF_ERROR(Expect("}", "after the return value (it ends the function)"));
  graph::Expr func = graph::FunctionNode::make(std::move(params), body, ret, std::move(attrs));
  return std::static_pointer_cast<const graph::FunctionNode>(func.node_ptr());
}

StatusOr<StructInfo> Parser::ParseStructInfo() {
  DepthGuard guard(&depth_);
  STRATA_RETURN_IF_ERROR(CheckDepth());
  const Token t = Peek();
  if (t.kind != TokenKind::kIdent) return Expected("struct info (Object, Prim[..], Shape, Tensor or Tuple[..])");
  if (t.text == "Object") {
    Next();
    return graph::ObjectStructInfoNode::make();
  }
  if (t.text == "Prim") {
    Next();
    STRATA_RETURN_IF_ERROR(Expect("[", "after 'Prim'"));
    STRATA_ASSIGN_OR_RETURN(DataType dtype, ParseDType());
    STRATA_RETURN_IF_ERROR(Expect("]", "to close Prim[...]"));
    return graph::PrimStructInfoNode::make(dtype);
  }
  if (t.text == "Shape") {
    Next();
    if (!TryPunct("[")) return graph::ShapeStructInfoNode::make_ndim(-1);
    StructInfo sinfo;
    if (Peek().IsPunct("(")) {
      STRATA_ASSIGN_OR_RETURN(std::vector<PrimExpr> dims, ParseShapeDims());
      sinfo = graph::ShapeStructInfoNode::make(std::move(dims));
    } else if (Peek().IsIdent("ndim")) {
      Next();
      STRATA_RETURN_IF_ERROR(Expect("=", "after 'ndim'"));
      STRATA_ASSIGN_OR_RETURN(int64_t ndim, ParseSmallInt("the rank"));
      sinfo = graph::ShapeStructInfoNode::make_ndim(static_cast<int>(ndim));
    } else {
      return Expected("a shape '(...)' or 'ndim=' in Shape[...]");
    }
    STRATA_RETURN_IF_ERROR(Expect("]", "to close Shape[...]"));
    return sinfo;
  }
  if (t.text == "Tensor") {
    Next();
    if (!TryPunct("[")) return graph::TensorStructInfoNode::make_ndim(-1, DataType::Void());
    std::optional<std::vector<PrimExpr>> dims;
    int ndim = -1;
    DataType dtype = DataType::Void();
    bool need_dtype = true;
    if (Peek().IsPunct("(")) {
      STRATA_ASSIGN_OR_RETURN(dims, ParseShapeDims());
      need_dtype = TryPunct(",");
    } else if (Peek().IsIdent("ndim")) {
      Next();
      STRATA_RETURN_IF_ERROR(Expect("=", "after 'ndim'"));
      STRATA_ASSIGN_OR_RETURN(int64_t n, ParseSmallInt("the rank"));
      ndim = static_cast<int>(n);
      need_dtype = TryPunct(",");
    }
    if (need_dtype) {
      STRATA_ASSIGN_OR_RETURN(dtype, ParseDType());
    }
    STRATA_RETURN_IF_ERROR(Expect("]", "to close Tensor[...]"));
    if (dims) return graph::TensorStructInfoNode::make(std::move(*dims), dtype);
    return graph::TensorStructInfoNode::make_ndim(ndim, dtype);
  }
  if (t.text == "Tuple") {
    Next();
    STRATA_RETURN_IF_ERROR(Expect("[", "after 'Tuple'"));
    std::vector<StructInfo> fields;
    while (!Peek().IsPunct("]")) {
      STRATA_ASSIGN_OR_RETURN(StructInfo field, ParseStructInfo());
      fields.push_back(std::move(field));
      if (!TryPunct(",")) break;
    }
    STRATA_RETURN_IF_ERROR(Expect("]", "to close Tuple[...]"));
    return graph::TupleStructInfoNode::make(std::move(fields));
  }
  return ErrorAt(t, "unknown struct info '" + t.text + "' (expected Object, Prim, Shape, Tensor or Tuple)");
}

StatusOr<graph::Expr> Parser::ParseSeq(bool function_body, const Token& open) {
  DepthGuard guard(&depth_);
  STRATA_RETURN_IF_ERROR(CheckDepth());
  std::vector<graph::BindingBlock> blocks;
  graph::BindingBlock plain;
  auto flush = [&] {
    if (!plain.bindings.empty()) blocks.push_back(std::move(plain));
    plain = graph::BindingBlock();
  };
  while (true) {
    const Token& t = Peek();
    if (t.kind == TokenKind::kEnd) {
      return ErrorAt(t, std::string("expected ") + (function_body ? "'return'" : "a value") +
                            " before the end of the block opened at line " + std::to_string(open.line) +
                            ", found end of file");
    }
    if (function_body && t.IsIdent("return")) {
      Next();
      STRATA_ASSIGN_OR_RETURN(graph::Expr value, ParseValue(nullptr));
      flush();
      return graph::SeqExprNode::make(std::move(blocks), value);
    }
    if (t.IsIdent("dataflow") && Peek(1).IsPunct("{")) {
      flush();
      STRATA_ASSIGN_OR_RETURN(graph::BindingBlock block, ParseDataflowBlock());
      blocks.push_back(std::move(block));
      continue;
    }
    if (PeekBindingStart()) {
      STRATA_ASSIGN_OR_RETURN(graph::Binding binding, ParseBinding(false, {}));
      plain.bindings.push_back(std::move(binding));
      continue;
    }
    if (function_body) return Expected("a binding, 'dataflow' or 'return'");
    STRATA_ASSIGN_OR_RETURN(graph::Expr value, ParseValue(nullptr));
    flush();
    return graph::SeqExprNode::make(std::move(blocks), value);
  }
}

StatusOr<graph::BindingBlock> Parser::ParseDataflowBlock() {
  const Token keyword = Next();  // dataflow
  Next();                        // {
  // Whether a binding makes a dataflow var depends on the `output` line at the
  // block's end, so read that line ahead before building any var.
  std::set<std::string> outputs;
  int depth = 1;
  for (size_t i = pos_; i < tokens_.size() && tokens_[i].kind != TokenKind::kEnd; ++i) {
    const Token& tok = tokens_[i];
    if (tok.IsPunct("{")) ++depth;
    if (tok.IsPunct("}") && --depth == 0) break;
    if (depth != 1 || !tok.IsIdent("output") || i + 1 >= tokens_.size()) continue;
    if (tokens_[i + 1].IsPunct(":") || tokens_[i + 1].IsPunct("=")) continue;
    for (size_t j = i + 1; j < tokens_.size() && tokens_[j].kind == TokenKind::kIdent; j += 2) {
      outputs.insert(tokens_[j].text);
      if (j + 1 >= tokens_.size() || !tokens_[j + 1].IsPunct(",")) break;
    }
  }
  graph::BindingBlock block;
  block.is_dataflow = true;
  graph_scopes_.emplace_back();
  std::vector<graph::Var> exported;
  while (true) {
    const Token t = Peek();
    if (t.IsPunct("}")) {
      Next();
      break;
    }
    if (t.kind == TokenKind::kEnd) {
      return ErrorAt(t, "expected '}' to close the dataflow block opened at line " + std::to_string(keyword.line) +
                            ", found end of file");
    }
    if (t.IsIdent("output") && !PeekBindingStart()) {
      Next();
      while (true) {
        STRATA_ASSIGN_OR_RETURN(Token name, ParseName("a variable name after 'output'"));
        auto found = graph_scopes_.back().find(name.text);
        if (found == graph_scopes_.back().end()) {
          return ErrorAt(name, "output '" + name.text + "' is not bound in this dataflow block");
        }
        exported.push_back(found->second);
        if (!TryPunct(",")) break;
      }
      STRATA_RETURN_IF_ERROR(Expect("}", "after the output line (it ends the dataflow block)"));
      break;
    }
    if (PeekBindingStart()) {
      STRATA_ASSIGN_OR_RETURN(graph::Binding binding, ParseBinding(true, outputs));
      block.bindings.push_back(std::move(binding));
      continue;
    }
    if (t.IsIdent("dataflow")) return ErrorAt(t, "dataflow blocks cannot be nested");
    return Expected("a binding or 'output' in the dataflow block");
  }
  graph_scopes_.pop_back();
  for (const graph::Var& var : exported) BindGraphVar(var);
  return block;
}

StatusOr<graph::Binding> Parser::ParseBinding(bool in_dataflow, const std::set<std::string>& outputs) {
  STRATA_ASSIGN_OR_RETURN(Token name, ParseName("a variable name"));
  auto location = std::make_shared<const SourceLocation>(SourceLocation{filename_, name.line, name.col, ""});
  StructInfo annotation;
  if (TryPunct(":")) {
    STRATA_ASSIGN_OR_RETURN(annotation, ParseStructInfo());
    STRATA_RETURN_IF_ERROR(Expect("=", "after the struct info of '" + name.text + "'"));
  } else {
    STRATA_RETURN_IF_ERROR(Expect("=", "after the variable name"));
  }
  graph::Binding binding;
  binding.location = std::move(location);
  const Token head = Peek();
  if ((head.IsIdent("match_cast") || head.IsIdent("match_shape")) && PeekCallParen()) {
    Next();
    Next();
    binding.kind = graph::BindingKind::kMatchCast;
    const Token value_token = Peek();
    STRATA_ASSIGN_OR_RETURN(binding.value, ParseValue(nullptr));
    STRATA_RETURN_IF_ERROR(Expect(",", "after the value of " + head.text));
    if (head.text == "match_cast") {
      STRATA_ASSIGN_OR_RETURN(binding.pattern, ParseStructInfo());
    } else {
      const StructInfo& known = binding.value->struct_info;
      bool is_shape = known.as<graph::ShapeStructInfoNode>() != nullptr;
      const auto* tensor = known.as<graph::TensorStructInfoNode>();
      if (!is_shape && !tensor) {
        return ErrorAt(value_token,
                       "match_shape needs a value known to be a Shape or a Tensor; annotate it or "
                       "use match_cast");
      }
      STRATA_ASSIGN_OR_RETURN(std::vector<PrimExpr> dims, ParseShapeDims());
      binding.pattern = is_shape ? graph::ShapeStructInfoNode::make(std::move(dims))
                                 : graph::TensorStructInfoNode::make(std::move(dims), tensor->dtype);
    }
    STRATA_RETURN_IF_ERROR(Expect(")", "to close " + head.text));
  } else {
    STRATA_ASSIGN_OR_RETURN(binding.value, ParseValue(annotation.defined() ? &annotation : nullptr));
  }
  bool is_dataflow = in_dataflow && outputs.count(name.text) == 0;
  binding.var = graph::Var(name.text, annotation, is_dataflow);
  BindGraphVar(binding.var);
  return binding;
}

StatusOr<int> Parser::ParseTupleIndex() {
  const Token t = Peek();
  if (t.kind != TokenKind::kInt) return Expected("a tuple index (an integer)");
  NumberParts parts = SplitNumber(t.text);
  int value = 0;
  auto result = std::from_chars(parts.body.data(), parts.body.data() + parts.body.size(), value);
  if (!parts.suffix.empty() || result.ec != std::errc()) {
    return ErrorAt(t, "tuple index '" + t.text + "' must be a small unsuffixed integer");
  }
  Next();
  return value;
}

StatusOr<graph::Expr> Parser::ParseValue(const StructInfo* packed_sinfo) {
  DepthGuard guard(&depth_);
  STRATA_RETURN_IF_ERROR(CheckDepth());
  STRATA_ASSIGN_OR_RETURN(graph::Expr value, ParseValuePrimary(packed_sinfo));
  for (int chain = 0; Peek().IsPunct("[") && !Peek().newline_before; ++chain) {
    if (chain == kMaxDepth) {
      return ErrorAt(Peek(), "tuple items are chained more than " + std::to_string(kMaxDepth) + " deep");
    }
    Next();
    const Token index_token = Peek();
    STRATA_ASSIGN_OR_RETURN(int index, ParseTupleIndex());
    STRATA_RETURN_IF_ERROR(Expect("]", "after the tuple index"));
    if (const auto* tuple = value->struct_info.as<graph::TupleStructInfoNode>()) {
      if (static_cast<size_t>(index) >= tuple->fields.size()) {
        return ErrorAt(index_token, "tuple index " + std::to_string(index) + " is out of range for a tuple of " +
                                        std::to_string(tuple->fields.size()) + " fields");
      }
    }
    value = graph::TupleGetItemNode::make(value, index);
  }
  return value;
}

Status Parser::ParseCallRest(std::vector<graph::Expr>* args, Attrs* attrs, size_t max_extra, const Token& callee) {
  size_t extra = 0;
  while (TryPunct(",")) {
    if (PeekKwarg()) {
      STRATA_RETURN_IF_ERROR(ParseKwarg(attrs));
      continue;
    }
    if (!attrs->empty()) return ErrorAt(Peek(), "positional argument after keyword arguments");
    if (extra == max_extra) return Expected("')' after the arguments of '" + callee.text + "'");
    STRATA_ASSIGN_OR_RETURN(graph::Expr arg, ParseValue(nullptr));
    args->push_back(std::move(arg));
    ++extra;
  }
  return Expect(")", "after call arguments");
}

StatusOr<graph::Expr> Parser::ParseValuePrimary(const StructInfo* packed_sinfo) {
  const Token t = Peek();
  if (t.IsPunct("(")) {
    Next();
    std::vector<graph::Expr> fields;
    bool is_tuple = true;
    if (!Peek().IsPunct(")")) {
      STRATA_ASSIGN_OR_RETURN(graph::Expr first, ParseValue(nullptr));
      fields.push_back(std::move(first));
      is_tuple = false;
      while (TryPunct(",")) {
        is_tuple = true;
        if (Peek().IsPunct(")")) break;
        STRATA_ASSIGN_OR_RETURN(graph::Expr field, ParseValue(nullptr));
        fields.push_back(std::move(field));
      }
    }
    STRATA_RETURN_IF_ERROR(Expect(")", "to close the tuple"));
    if (!is_tuple) return fields[0];
    return graph::TupleNode::make(std::move(fields));
  }
  if (t.kind == TokenKind::kString) {
    Next();
    return graph::StringImmNode::make(t.text);
  }
  bool negative_number = t.IsPunct("-") && (Peek(1).kind == TokenKind::kInt || Peek(1).kind == TokenKind::kFloat ||
                                            IsFloatLiteralWord(Peek(1)));
  if (t.kind == TokenKind::kInt || t.kind == TokenKind::kFloat || IsFloatLiteralWord(t) || negative_number) {
    if (negative_number) Next();
    STRATA_ASSIGN_OR_RETURN(PExpr number, ParseNumber(Next(), negative_number, t.line, t.col));
    STRATA_RETURN_IF_ERROR(SettleDefault(&number));
    return graph::PrimValueNode::make(number.expr);
  }
  if (t.kind == TokenKind::kGlobal) {
    Next();
    graph::Expr global = graph::GlobalVarNode::make(t.text);
    if (!Peek().IsPunct("(") || Peek().newline_before) {
      AddRef(t, GlobalRef::Use::kValue);
      return global;
    }
    Next();
    std::vector<graph::Expr> args;
    Attrs attrs;
    if (!TryPunct(")")) {
      if (PeekKwarg()) {
        STRATA_RETURN_IF_ERROR(ParseKwarg(&attrs));
      } else {
        STRATA_ASSIGN_OR_RETURN(graph::Expr first, ParseValue(nullptr));
        args.push_back(std::move(first));
      }
      STRATA_RETURN_IF_ERROR(ParseCallRest(&args, &attrs, SIZE_MAX, t));
    }
    AddRef(t, GlobalRef::Use::kCall, args.size());
    return graph::CallNode::make(global, std::move(args), std::move(attrs));
  }
  if (t.kind != TokenKind::kIdent) return Expected("a value");
  if (t.text == "true" || t.text == "false") {
    Next();
    return graph::PrimValueNode::make(tir::IntImm(DataType::Bool(), t.text == "true" ? 1 : 0));
  }
  if (t.text == "if") return ParseGraphIf();
  if (IsReservedWord(t.text)) return Expected("a value");
  if (!PeekCallParen()) {
    Next();
    const graph::Var* var = LookupGraphVar(t.text);
    if (!var) return ErrorAt(t, "undefined variable '" + t.text + "'");
    return *var;
  }
  // name(...): a special form or an operator.
  Next();
  Next();  // (
  const std::string& name = t.text;
  if (name == "match_cast" || name == "match_shape") {
    return ErrorAt(t, name + " must be the whole value of a binding (x = " + name + "(...))");
  }
  if (name == graph::ops::kCallTIR) {
    if (Peek().kind != TokenKind::kGlobal) return Expected("'@prim_func' as the first argument of call_tir");
    const Token callee = Next();
    AddRef(callee, GlobalRef::Use::kCallTIR);
    STRATA_RETURN_IF_ERROR(Expect(",", "after the callee of call_tir"));
    STRATA_ASSIGN_OR_RETURN(graph::Expr args, ParseValue(nullptr));
    STRATA_RETURN_IF_ERROR(Expect(",", "after the arguments of call_tir (the output struct info comes next)"));
    STRATA_ASSIGN_OR_RETURN(StructInfo out, ParseStructInfo());
    std::vector<graph::Expr> call_args = {graph::GlobalVarNode::make(callee.text), args};
    Attrs attrs;
    STRATA_RETURN_IF_ERROR(ParseCallRest(&call_args, &attrs, 1, t));
    return graph::CallNode::make(graph::OpNode::Get(name), std::move(call_args), std::move(attrs), {out});
  }
  if (name == graph::ops::kCallDPSPacked || name == graph::ops::kCallPacked) {
    if (Peek().kind != TokenKind::kString) return Expected("the library function name (a string) in " + name);
    std::vector<graph::Expr> call_args = {graph::ExternFuncNode::make(Next().text)};
    Attrs attrs;
    if (name == graph::ops::kCallPacked) {
      STRATA_RETURN_IF_ERROR(ParseCallRest(&call_args, &attrs, SIZE_MAX, t));
      StructInfo result = packed_sinfo ? *packed_sinfo : graph::ObjectStructInfoNode::make();
      return graph::CallNode::make(graph::OpNode::Get(name), std::move(call_args), std::move(attrs), {result});
    }
    STRATA_RETURN_IF_ERROR(Expect(",", "after the function name of call_dps_packed"));
    STRATA_ASSIGN_OR_RETURN(graph::Expr args, ParseValue(nullptr));
    STRATA_RETURN_IF_ERROR(Expect(",", "after the arguments of call_dps_packed (the output struct info comes next)"));
    STRATA_ASSIGN_OR_RETURN(StructInfo out, ParseStructInfo());
    call_args.push_back(std::move(args));
    STRATA_RETURN_IF_ERROR(ParseCallRest(&call_args, &attrs, 0, t));
    return graph::CallNode::make(graph::OpNode::Get(name), std::move(call_args), std::move(attrs), {out});
  }
  if (name == "shape") {
    std::vector<PrimExpr> dims;
    while (!Peek().IsPunct(")")) {
      STRATA_ASSIGN_OR_RETURN(PrimExpr dim, ParseIndexLike("a shape dimension"));
      dims.push_back(std::move(dim));
      if (!TryPunct(",")) break;
    }
    STRATA_RETURN_IF_ERROR(Expect(")", "to close shape(...)"));
    return graph::ShapeExprNode::make(std::move(dims));
  }
  if (name == "prim") {
    STRATA_ASSIGN_OR_RETURN(PExpr value, ParseScalar());
    STRATA_RETURN_IF_ERROR(SettleDefault(&value));
    STRATA_RETURN_IF_ERROR(Expect(")", "to close prim(...)"));
    return graph::PrimValueNode::make(value.expr);
  }
  if (name == "dtype") {
    STRATA_ASSIGN_OR_RETURN(DataType dtype, ParseDType());
    STRATA_RETURN_IF_ERROR(Expect(")", "to close dtype(...)"));
    return graph::DataTypeImmNode::make(dtype);
  }
  if (name == "const") return ParseConst();
  std::vector<graph::Expr> args;
  Attrs attrs;
  if (!TryPunct(")")) {
    if (PeekKwarg()) {
      STRATA_RETURN_IF_ERROR(ParseKwarg(&attrs));
    } else {
      STRATA_ASSIGN_OR_RETURN(graph::Expr first, ParseValue(nullptr));
      args.push_back(std::move(first));
    }
    STRATA_RETURN_IF_ERROR(ParseCallRest(&args, &attrs, SIZE_MAX, t));
  }
  return graph::CallNode::make(graph::OpNode::Get(name), std::move(args), std::move(attrs));
}

StatusOr<graph::Expr> Parser::ParseGraphIf() {
  Next();  // if
  STRATA_ASSIGN_OR_RETURN(graph::Expr cond, ParseValue(nullptr));
  graph::Expr branches[2];
  for (int i = 0; i < 2; ++i) {
    if (i == 1) STRATA_RETURN_IF_ERROR(ExpectKeyword("else", "(a graph-level if needs both branches)"));
    const Token open = Peek();
    STRATA_RETURN_IF_ERROR(Expect("{", i == 0 ? "after the if condition" : "after 'else'"));
    graph_scopes_.emplace_back();
    STRATA_ASSIGN_OR_RETURN(branches[i], ParseSeq(/*function_body=*/false, open));
    graph_scopes_.pop_back();
    STRATA_RETURN_IF_ERROR(Expect("}", "after the value of the branch (it ends the branch)"));
  }
  return graph::IfNode::make(cond, branches[0], branches[1]);
}

// const(SI, file("weights.bin", OFFSET)): the data are the bytes at OFFSET of
// a binary file next to the .sir file (what --dump-ir writes for large weights).
StatusOr<graph::Expr> Parser::ParseConstFile(std::shared_ptr<graph::HostTensor> data, uint64_t count) {
  const Token file_token = Next();
  STRATA_RETURN_IF_ERROR(Expect("(", "after 'file'"));
  if (Peek().kind != TokenKind::kString) return Expected("the name of the constant file, as a string");
  const std::string name = Next().text;
  STRATA_RETURN_IF_ERROR(Expect(",", "after the file name"));
  if (Peek().kind != TokenKind::kInt) return Expected("the byte offset of the constant in the file");
  const Token offset_token = Next();
  uint64_t offset = 0;
  auto [end, ec] =
      std::from_chars(offset_token.text.data(), offset_token.text.data() + offset_token.text.size(), offset);
  if (ec != std::errc() || end != offset_token.text.data() + offset_token.text.size()) {
    return ErrorAt(offset_token, "malformed byte offset '" + offset_token.text + "'");
  }
  STRATA_RETURN_IF_ERROR(Expect(")", "to close file(...)"));
  STRATA_RETURN_IF_ERROR(Expect(")", "to close const(...)"));
  std::filesystem::path path(name);
  if (path.is_relative()) path = std::filesystem::path(filename_).parent_path() / path;
  const uint64_t bytes = count * static_cast<uint64_t>(data->dtype.bytes());
  std::error_code size_error;
  const uint64_t file_size = std::filesystem::file_size(path, size_error);
  if (size_error) return ErrorAt(file_token, "cannot open constant file '" + path.string() + "'");
  if (offset > file_size || file_size - offset < bytes) {
    return ErrorAt(file_token, "constant file '" + path.string() + "' holds " + std::to_string(file_size) +
                                   " bytes; the constant needs " + std::to_string(bytes) + " at offset " +
                                   std::to_string(offset));
  }
  std::ifstream in(path, std::ios::binary);
  data->bytes.resize(static_cast<size_t>(bytes));
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(reinterpret_cast<char*>(data->bytes.data()), static_cast<std::streamsize>(bytes));
  if (!in) return ErrorAt(file_token, "cannot read constant file '" + path.string() + "'");
  return graph::ConstantNode::make(std::move(data));
}

StatusOr<graph::Expr> Parser::ParseConst() {
  const Token si_token = Peek();
  STRATA_ASSIGN_OR_RETURN(StructInfo sinfo, ParseStructInfo());
  const auto* tensor = sinfo.as<graph::TensorStructInfoNode>();
  auto data = std::make_shared<graph::HostTensor>();
  bool ok = tensor && tensor->shape && !tensor->dtype.is_void() && !tensor->dtype.is_handle();
  uint64_t count = 1;
  if (ok) {
    for (const PrimExpr& dim : *tensor->shape) {
      const int64_t* value = tir::AsConstInt(dim);
      if (!value || *value < 0) {
        ok = false;
        break;
      }
      data->shape.push_back(*value);
      if (*value != 0 && count > kMaxConstElements / static_cast<uint64_t>(*value)) {
        return ErrorAt(si_token, "constant is too large to write as text");
      }
      count *= static_cast<uint64_t>(*value);
    }
  }
  if (!ok) {
    return ErrorAt(si_token, "const needs Tensor[(d0, d1, ...), dtype] with constant dimensions and a dtype");
  }
  DataType dtype = tensor->dtype;
  data->dtype = dtype;
  STRATA_RETURN_IF_ERROR(Expect(",", "after the struct info of const"));
  if (Peek().IsIdent("file")) return ParseConstFile(std::move(data), count);
  const Token open = Peek();
  STRATA_RETURN_IF_ERROR(Expect("[", "to open the values of const"));
  uint64_t n = 0;
  while (!Peek().IsPunct("]")) {
    const Token item = Peek();
    bool negative = TryPunct("-");
    const Token t = Peek();
    if (dtype.is_bool() && (t.IsIdent("true") || t.IsIdent("false")) && !negative) {
      Next();
      data->bytes.push_back(t.text == "true" ? 1 : 0);
    } else if (dtype.is_float()) {
      if (t.kind != TokenKind::kInt && t.kind != TokenKind::kFloat && !t.IsIdent("inf") && !t.IsIdent("nan")) {
        return Expected("a number in the values of const");
      }
      NumberParts parts = t.kind == TokenKind::kIdent ? NumberParts{t.text, "", true} : SplitNumber(t.text);
      if (!parts.suffix.empty()) return ErrorAt(t, "values of const take no dtype suffix");
      Next();
      if (dtype.bits() == 64) {
        double v = 0;
        if (parts.body == "inf")
          v = std::numeric_limits<double>::infinity();
        else if (parts.body == "nan")
          v = std::numeric_limits<double>::quiet_NaN();
        else if (!ParseDoubleText(parts.body, &v))
          return ErrorAt(t, "malformed number '" + t.text + "'");
        if (negative) v = -v;
        uint64_t bits;
        std::memcpy(&bits, &v, sizeof(bits));
        AppendLittleEndian(bits, 8, &data->bytes);
      } else {
        float v = 0;
        if (parts.body == "inf")
          v = std::numeric_limits<float>::infinity();
        else if (parts.body == "nan")
          v = std::numeric_limits<float>::quiet_NaN();
        else if (!ParseFloatText(parts.body, &v))
          return ErrorAt(t, "malformed number '" + t.text + "'");
        if (negative) v = -v;
        if (dtype.bits() == 16) {
          AppendLittleEndian(FloatToHalf(v), 2, &data->bytes);
        } else {
          uint32_t bits;
          std::memcpy(&bits, &v, sizeof(bits));
          AppendLittleEndian(bits, 4, &data->bytes);
        }
      }
    } else {
      if (t.kind != TokenKind::kInt) return Expected("an integer in the values of const");
      STRATA_ASSIGN_OR_RETURN(PExpr e, ParseNumber(Next(), negative, item.line, item.col));
      if (e.lit != PExpr::Lit::kInt) return ErrorAt(t, "values of const take no dtype suffix");
      STRATA_ASSIGN_OR_RETURN(PrimExpr imm, MakeLiteral(e, dtype));
      AppendLittleEndian(static_cast<uint64_t>(*tir::AsConstInt(imm)), dtype.bytes(), &data->bytes);
    }
    ++n;
    if (n > count) break;
    if (!TryPunct(",")) break;
  }
  if (n != count) {
    return ErrorAt(open, "const has " +
                             std::string(n > count ? "more than " + std::to_string(count) : std::to_string(n)) +
                             " values, but its shape needs " + std::to_string(count));
  }
  STRATA_RETURN_IF_ERROR(Expect("]", "to close the values of const"));
  STRATA_RETURN_IF_ERROR(Expect(")", "to close const(...)"));
  return graph::ConstantNode::make(std::move(data));
}

}  // namespace

StatusOr<IRModule> ParseModule(std::string_view text, std::string_view filename) {
  STRATA_ASSIGN_OR_RETURN(std::vector<Token> tokens, Lex(text, filename));
  return Parser(std::move(tokens), filename).Run();
}

}  // namespace strata::ir
