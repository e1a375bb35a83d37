// The text IR parser's shared state: the Parser class, whose rules are
// defined by concept in parser.cc (module, names, attributes),
// parser_scalar.cc (scalar expressions, shapes, buffer types),
// parser_tensor_program.cc (prim_func bodies) and parser_graph.cc (graph
// functions, struct info, constants). Internal to compiler/ir: include
// parser.h instead.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compiler/ir/lexer.h"
#include "compiler/ir/parser.h"

namespace strata::ir::text_parser {

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

// "1.5e3f64" -> {"1.5e3", "f64", float}.
NumberParts SplitNumber(std::string_view text);
// Whether -magnitude (or +magnitude) is representable in `dtype`; the value as
// the int64 an IntImm stores (u64 values wrap, as their bits do).
bool FitsInt(bool negative, uint64_t magnitude, DataType dtype, int64_t* out);
bool IsNumeric(DataType t);
// Whether `e` is more than `budget` levels deep; looks no deeper than that.
bool TooDeep(const PrimExpr& e, int budget);
// "1 argument", "2 arguments"
std::string Count(size_t n, const std::string& noun);
void AppendLittleEndian(uint64_t bits, int bytes, std::vector<uint8_t>* out);
// inf, nan, optionally with a dtype suffix (inff16, nanf64).
bool IsFloatLiteralWord(const Token& t);

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
  // The rest of a list of strings, after its '['.
  StatusOr<AttrValue> ParseStringListRest();
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
  // After "callee(": any number of positional arguments, then keyword ones, then ")".
  Status ParseCallArguments(std::vector<graph::Expr>* args, Attrs* attrs, const Token& callee);
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
  // The `return` of the graph function being parsed (FunctionNode::return_location).
  std::shared_ptr<const SourceLocation> return_location_;
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

}  // namespace strata::ir::text_parser
