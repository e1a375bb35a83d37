// Structural equality with alpha-equivalence; see structural_equal.h.
//
// One recursive walk over both sides in lockstep. Variables are matched through
// two maps (a->b and b->a) so the correspondence is a bijection; the first
// difference is reported with the path of labels pushed on the way down.
#include "compiler/ir/structural_equal.h"

#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/lexer.h"
#include "compiler/ir/printer.h"

namespace strata::ir {

namespace {

using graph::StructInfo;
using tir::PrimExpr;

bool SameDouble(double x, double y) {
  if (std::isnan(x) && std::isnan(y)) return true;
  return std::memcmp(&x, &y, sizeof(x)) == 0;
}

bool SameAttrValue(const AttrValue& a, const AttrValue& b) {
  // `[]` is the empty list whatever its elements: the text IR cannot tell them apart.
  const std::optional<std::vector<std::string>> strings_a = StringList(a), strings_b = StringList(b);
  if (strings_a && strings_b) return *strings_a == *strings_b;
  if (a.index() != b.index()) return false;
  if (const double* d = std::get_if<double>(&a)) return SameDouble(*d, std::get<double>(b));
  return a == b;
}

// A one-line, bounded rendering of a graph expression for messages.
std::string Short(const graph::Expr& expr) {
  if (const auto* seq = expr.as<graph::SeqExprNode>()) {
    size_t count = 0;
    for (const graph::BindingBlock& block : seq->blocks) count += block.bindings.size();
    return "{" + std::to_string(count) + (count == 1 ? " binding; " : " bindings; ") + Short(seq->body) + "}";
  }
  std::string text = PrintGraphExpr(expr);
  size_t newline = text.find('\n');
  if (newline != std::string::npos) text = text.substr(0, newline) + " ...";
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

// A binding block after dropping empty plain blocks and merging adjacent ones.
struct CanonBlock {
  bool is_dataflow;
  std::vector<const graph::Binding*> bindings;
};

std::vector<CanonBlock> Canonicalize(const std::vector<graph::BindingBlock>& blocks) {
  std::vector<CanonBlock> out;
  for (const graph::BindingBlock& block : blocks) {
    if (!block.is_dataflow && block.bindings.empty()) continue;
    if (!block.is_dataflow && !out.empty() && !out.back().is_dataflow) {
      for (const graph::Binding& b : block.bindings) out.back().bindings.push_back(&b);
      continue;
    }
    CanonBlock canon{block.is_dataflow, {}};
    for (const graph::Binding& b : block.bindings) canon.bindings.push_back(&b);
    out.push_back(std::move(canon));
  }
  return out;
}

// A SeqExpr without bindings is its result.
graph::Expr Unwrap(graph::Expr expr) {
  while (const auto* seq = expr.as<graph::SeqExprNode>()) {
    if (!Canonicalize(seq->blocks).empty()) break;
    expr = seq->body;
  }
  return expr;
}

template <typename T>
struct Bijection {
  std::map<const T*, const T*> ab, ba;
  // Whether a corresponds to b; an unseen pair is recorded when `define`.
  // Returns 1 for an existing match, 2 for a new one, 0 for a mismatch.
  int Match(const T* a, const T* b, bool define) {
    auto it = ab.find(a);
    if (it != ab.end()) return it->second == b ? 1 : 0;
    if (ba.count(b)) return 0;
    if (!define) return a == b ? 1 : 0;
    ab[a] = b;
    ba[b] = a;
    return 2;
  }
  void Clear() {
    ab.clear();
    ba.clear();
  }
};

class Comparer {
 public:
  explicit Comparer(std::string* why_not) : why_not_(why_not) {}

  bool define_free = false;

  // ------------------------------------------------------------ bookkeeping
  struct Label {
    Label(Comparer* c, std::string text) : c(c) { c->path_.push_back(std::move(text)); }
    ~Label() { c->path_.pop_back(); }
    Comparer* c;
  };

  bool Fail(const std::string& message) {
    if (why_not_ && !failed_) {
      std::string out;
      for (const std::string& label : path_) out += label + ": ";
      *why_not_ = out + message;
    }
    failed_ = true;
    return false;
  }

  void ResetVariables() {
    tir_vars_.Clear();
    buffers_.Clear();
    graph_vars_.Clear();
  }

  // ------------------------------------------------------------ scalars
  bool PrimLeaf(const PrimExpr& a, const PrimExpr& b) {
    std::string ta = PrintPrimExpr(a), tb = PrintPrimExpr(b);
    if (ta != tb) return Fail(ta + " vs " + tb);
    if (a.dtype() != b.dtype())
      return Fail(ta + " vs " + tb + " (dtype " + a.dtype().ToString() + " vs " + b.dtype().ToString() + ")");
    return Fail(ta + " vs " + tb + " (different variables)");
  }

  bool TirVar(const tir::VarNode* a, const tir::VarNode* b, bool binder) {
    if (a->dtype != b->dtype) {
      return Fail(a->name + " vs " + b->name + " (dtype " + a->dtype.ToString() + " vs " + b->dtype.ToString() + ")");
    }
    if (tir_vars_.Match(a, b, binder || define_free) == 0) {
      return Fail(a->name + " vs " + b->name + (a->name == b->name ? " (different variables)" : ""));
    }
    return true;
  }

  bool Buffer(const tir::BufferNode* a, const tir::BufferNode* b, bool binder) {
    int match = buffers_.Match(a, b, binder || define_free);
    if (match == 0) {
      return Fail("buffer " + a->name + " vs " + b->name + (a->name == b->name ? " (different buffers)" : ""));
    }
    if (match == 1) return true;
    Label label(this, "buffer " + a->name);
    if (a->dtype != b->dtype) return Fail("dtype " + a->dtype.ToString() + " vs " + b->dtype.ToString());
    return Dims(a->shape, b->shape);
  }

  bool Dims(const std::vector<PrimExpr>& a, const std::vector<PrimExpr>& b) {
    if (a.size() != b.size()) {
      return Fail("rank " + std::to_string(a.size()) + " vs " + std::to_string(b.size()));
    }
    for (size_t i = 0; i < a.size(); ++i) {
      Label label(this, "shape dim " + std::to_string(i));
      if (!Prim(a[i], b[i])) return false;
    }
    return true;
  }

  bool PrimList(const std::vector<PrimExpr>& a, const std::vector<PrimExpr>& b, const char* what) {
    if (a.size() != b.size()) {
      return Fail(std::to_string(a.size()) + " " + what + "s vs " + std::to_string(b.size()));
    }
    for (size_t i = 0; i < a.size(); ++i) {
      Label label(this, std::string(what) + " " + std::to_string(i));
      if (!Prim(a[i], b[i])) return false;
    }
    return true;
  }

  bool Prim(const PrimExpr& a, const PrimExpr& b) {
    if (!a.defined() || !b.defined()) {
      if (a.defined() == b.defined()) return true;
      return Fail(std::string(a.defined() ? "an expression" : "none") + " vs " +
                  (b.defined() ? "an expression" : "none"));
    }
    if (a->kind != b->kind || a.dtype() != b.dtype()) return PrimLeaf(a, b);
    switch (a->kind) {
      case tir::PrimExprKind::kIntImm:
        return a.as<tir::IntImmNode>()->value == b.as<tir::IntImmNode>()->value || PrimLeaf(a, b);
      case tir::PrimExprKind::kFloatImm:
        return SameDouble(a.as<tir::FloatImmNode>()->value, b.as<tir::FloatImmNode>()->value) || PrimLeaf(a, b);
      case tir::PrimExprKind::kVar: return TirVar(a.as<tir::VarNode>(), b.as<tir::VarNode>(), false);
      case tir::PrimExprKind::kNot: return Prim(a.as<tir::NotNode>()->a, b.as<tir::NotNode>()->a);
      case tir::PrimExprKind::kSelect: {
        const auto *x = a.as<tir::SelectNode>(), *y = b.as<tir::SelectNode>();
        return Prim(x->condition, y->condition) && Prim(x->true_value, y->true_value) &&
               Prim(x->false_value, y->false_value);
      }
      case tir::PrimExprKind::kCast: return Prim(a.as<tir::CastNode>()->value, b.as<tir::CastNode>()->value);
      case tir::PrimExprKind::kCall: {
        const auto *x = a.as<tir::CallNode>(), *y = b.as<tir::CallNode>();
        if (x->op != y->op || x->args.size() != y->args.size()) return PrimLeaf(a, b);
        for (size_t i = 0; i < x->args.size(); ++i) {
          if (!Prim(x->args[i], y->args[i])) return false;
        }
        return true;
      }
      case tir::PrimExprKind::kBufferLoad: {
        const auto *x = a.as<tir::BufferLoadNode>(), *y = b.as<tir::BufferLoadNode>();
        return Buffer(x->buffer.get(), y->buffer.get(), false) && PrimList(x->indices, y->indices, "index");
      }
      default: {
        const auto *x = a.as<tir::BinaryOpNode>(), *y = b.as<tir::BinaryOpNode>();
        return Prim(x->a, y->a) && Prim(x->b, y->b);
      }
    }
  }

  // ------------------------------------------------------------ statements
  static const char* StmtKindName(tir::StmtKind kind) {
    switch (kind) {
      case tir::StmtKind::kFor: return "for";
      case tir::StmtKind::kBufferStore: return "store";
      case tir::StmtKind::kAllocate: return "alloc";
      case tir::StmtKind::kLetStmt: return "let";
      case tir::StmtKind::kIfThenElse: return "if";
      case tir::StmtKind::kSeqStmt: return "sequence";
      case tir::StmtKind::kAssertStmt: return "assert";
      case tir::StmtKind::kEvaluate: return "evaluate";
      case tir::StmtKind::kPrefetch: return "prefetch";
    }
    return "?";
  }

  bool Stmt(const tir::Stmt& a, const tir::Stmt& b) {
    if (!a.defined() || !b.defined()) {
      if (a.defined() == b.defined()) return true;
      return Fail(std::string(a.defined() ? StmtKindName(a->kind) : "nothing") + " vs " +
                  (b.defined() ? StmtKindName(b->kind) : "nothing"));
    }
    if (a->kind != b->kind) return Fail(std::string(StmtKindName(a->kind)) + " vs " + StmtKindName(b->kind));
    switch (a->kind) {
      case tir::StmtKind::kSeqStmt: {
        const auto &x = a.as<tir::SeqStmtNode>()->stmts, &y = b.as<tir::SeqStmtNode>()->stmts;
        for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
          Label label(this, "stmt " + std::to_string(i));
          if (!Stmt(x[i], y[i])) return false;
        }
        if (x.size() != y.size()) {
          return Fail(std::to_string(x.size()) + " statements vs " + std::to_string(y.size()));
        }
        return true;
      }
      case tir::StmtKind::kFor: {
        const auto *x = a.as<tir::ForNode>(), *y = b.as<tir::ForNode>();
        Label label(this, "for " + x->loop_var->name);
        if (x->for_kind != y->for_kind) {
          return Fail(std::string(tir::ForKindName(x->for_kind)) + " vs " + std::string(tir::ForKindName(y->for_kind)));
        }
        {
          Label start(this, "start");
          if (!Prim(x->min, y->min)) return false;
        }
        {
          Label extent(this, "extent");
          if (!Prim(x->extent, y->extent)) return false;
        }
        return TirVar(x->loop_var.get(), y->loop_var.get(), true) && Stmt(x->body, y->body);
      }
      case tir::StmtKind::kBufferStore: {
        const auto *x = a.as<tir::BufferStoreNode>(), *y = b.as<tir::BufferStoreNode>();
        Label label(this, "store " + x->buffer->name);
        if (!Buffer(x->buffer.get(), y->buffer.get(), false) || !PrimList(x->indices, y->indices, "index")) {
          return false;
        }
        Label value(this, "value");
        return Prim(x->value, y->value);
      }
      case tir::StmtKind::kAllocate: {
        const auto *x = a.as<tir::AllocateNode>(), *y = b.as<tir::AllocateNode>();
        {
          Label label(this, "alloc " + x->buffer->name);
          if (!Buffer(x->buffer.get(), y->buffer.get(), true)) return false;
        }
        return Stmt(x->body, y->body);
      }
      case tir::StmtKind::kLetStmt: {
        const auto *x = a.as<tir::LetStmtNode>(), *y = b.as<tir::LetStmtNode>();
        {
          Label label(this, "let " + x->var->name);
          if (!Prim(x->value, y->value) || !TirVar(x->var.get(), y->var.get(), true)) return false;
        }
        return Stmt(x->body, y->body);
      }
      case tir::StmtKind::kIfThenElse: {
        const auto *x = a.as<tir::IfThenElseNode>(), *y = b.as<tir::IfThenElseNode>();
        Label label(this, "if");
        {
          Label cond(this, "condition");
          if (!Prim(x->condition, y->condition)) return false;
        }
        {
          Label then_label(this, "then");
          if (!Stmt(x->then_case, y->then_case)) return false;
        }
        Label else_label(this, "else");
        return Stmt(x->else_case, y->else_case);
      }
      case tir::StmtKind::kAssertStmt: {
        const auto *x = a.as<tir::AssertStmtNode>(), *y = b.as<tir::AssertStmtNode>();
        Label label(this, "assert");
        if (!Prim(x->condition, y->condition)) return false;
        return x->message == y->message || Fail("message \"" + x->message + "\" vs \"" + y->message + "\"");
      }
      case tir::StmtKind::kEvaluate: {
        Label label(this, "evaluate");
        return Prim(a.as<tir::EvaluateNode>()->value, b.as<tir::EvaluateNode>()->value);
      }
      case tir::StmtKind::kPrefetch: {
        Label label(this, "prefetch");
        return Prim(a.as<tir::PrefetchNode>()->load, b.as<tir::PrefetchNode>()->load);
      }
    }
    return Fail("unknown statement kind");
  }

  bool PrimFunc(const tir::PrimFunc& a, const tir::PrimFunc& b) {
    bool saved = define_free;
    define_free = true;
    bool ok = PrimFuncBody(a, b);
    define_free = saved;
    return ok;
  }

  bool PrimFuncBody(const tir::PrimFunc& a, const tir::PrimFunc& b) {
    if (!a || !b) return (!a && !b) || Fail("missing function");
    if (a->params.size() != b->params.size()) {
      return Fail(std::to_string(a->params.size()) + " params vs " + std::to_string(b->params.size()));
    }
    for (size_t i = 0; i < a->params.size(); ++i) {
      Label label(this, "param " + std::to_string(i));
      const tir::PrimFuncParam &x = a->params[i], &y = b->params[i];
      if (x.is_buffer() != y.is_buffer()) {
        return Fail(std::string(x.is_buffer() ? "buffer" : "scalar") + " vs " + (y.is_buffer() ? "buffer" : "scalar"));
      }
      bool ok =
          x.is_buffer() ? Buffer(x.buffer.get(), y.buffer.get(), true) : TirVar(x.scalar.get(), y.scalar.get(), true);
      if (!ok) return false;
    }
    return Attrs(a->attrs, b->attrs) && Stmt(a->body, b->body);
  }

  // ------------------------------------------------------------ attrs, struct info
  bool Attrs(const ir::Attrs& a, const ir::Attrs& b) {
    auto ia = a.begin();
    auto ib = b.begin();
    while (ia != a.end() || ib != b.end()) {
      if (ib == b.end() || (ia != a.end() && ia->first < ib->first)) {
        return Fail("attr '" + ia->first + "': " + PrintAttrValue(ia->second) + " vs missing");
      }
      if (ia == a.end() || ib->first < ia->first) {
        return Fail("attr '" + ib->first + "': missing vs " + PrintAttrValue(ib->second));
      }
      const auto* sa = std::get_if<ir::SymbolicInts>(&ia->second);
      const auto* sb = std::get_if<ir::SymbolicInts>(&ib->second);
      if (sa != nullptr && sb != nullptr) {
        Label label(this, "attr '" + ia->first + "'");
        if (!PrimList(sa->values, sb->values, "element")) return false;
      } else if (!SameAttrValue(ia->second, ib->second)) {
        return Fail("attr '" + ia->first + "': " + PrintAttrValue(ia->second) + " vs " + PrintAttrValue(ib->second));
      }
      ++ia;
      ++ib;
    }
    return true;
  }

  bool SInfo(const StructInfo& a, const StructInfo& b) {
    if (!a.defined() || !b.defined()) {
      if (a.defined() == b.defined()) return true;
      return Fail((a.defined() ? PrintStructInfo(a) : "no struct info") + " vs " +
                  (b.defined() ? PrintStructInfo(b) : "no struct info"));
    }
    auto leaf = [&] { return Fail(PrintStructInfo(a) + " vs " + PrintStructInfo(b)); };
    if (a->kind != b->kind) return leaf();
    switch (a->kind) {
      case graph::StructInfoKind::kObject: return true;
      case graph::StructInfoKind::kPrim:
        return a.as<graph::PrimStructInfoNode>()->dtype == b.as<graph::PrimStructInfoNode>()->dtype || leaf();
      case graph::StructInfoKind::kShape: {
        const auto *x = a.as<graph::ShapeStructInfoNode>(), *y = b.as<graph::ShapeStructInfoNode>();
        if (x->ndim != y->ndim || x->values.has_value() != y->values.has_value()) return leaf();
        return !x->values || Dims(*x->values, *y->values);
      }
      case graph::StructInfoKind::kTensor: {
        const auto *x = a.as<graph::TensorStructInfoNode>(), *y = b.as<graph::TensorStructInfoNode>();
        if (x->dtype != y->dtype || x->ndim != y->ndim || x->shape.has_value() != y->shape.has_value()) {
          return leaf();
        }
        return !x->shape || Dims(*x->shape, *y->shape);
      }
      case graph::StructInfoKind::kTuple: {
        const auto *x = a.as<graph::TupleStructInfoNode>(), *y = b.as<graph::TupleStructInfoNode>();
        if (x->fields.size() != y->fields.size()) return leaf();
        for (size_t i = 0; i < x->fields.size(); ++i) {
          Label label(this, "field " + std::to_string(i));
          if (!SInfo(x->fields[i], y->fields[i])) return false;
        }
        return true;
      }
    }
    return leaf();
  }

  // ------------------------------------------------------------ graph level
  bool GraphVarDef(const graph::Var& a, const graph::Var& b) {
    if (graph_vars_.Match(a.get(), b.get(), true) == 0) {
      return Fail("var " + a->name + " vs " + b->name + " (defined twice)");
    }
    if (a->is_dataflow != b->is_dataflow) {
      return Fail("var " + a->name + ": " + (a->is_dataflow ? "dataflow" : "not dataflow") + " vs " +
                  (b->is_dataflow ? "dataflow" : "not dataflow"));
    }
    Label label(this, "var " + a->name);
    return SInfo(a->struct_info, b->struct_info);
  }

  bool Expr(graph::Expr a, graph::Expr b) {
    a = Unwrap(a);
    b = Unwrap(b);
    if (!a.defined() || !b.defined()) {
      if (a.defined() == b.defined()) return true;
      return Fail((a.defined() ? Short(a) : "nothing") + " vs " + (b.defined() ? Short(b) : "nothing"));
    }
    auto leaf = [&] { return Fail(Short(a) + " vs " + Short(b)); };
    if (a->kind != b->kind) return leaf();
    switch (a->kind) {
      case graph::ExprKind::kVar: {
        const auto *x = a.as<graph::VarNode>(), *y = b.as<graph::VarNode>();
        if (graph_vars_.Match(x, y, define_free) == 0) {
          return Fail(x->name + " vs " + y->name + (x->name == y->name ? " (different variables)" : ""));
        }
        return true;
      }
      case graph::ExprKind::kGlobalVar:
        return a.as<graph::GlobalVarNode>()->name == b.as<graph::GlobalVarNode>()->name || leaf();
      case graph::ExprKind::kExternFunc:
        return a.as<graph::ExternFuncNode>()->name == b.as<graph::ExternFuncNode>()->name || leaf();
      case graph::ExprKind::kOp: return a.as<graph::OpNode>()->name == b.as<graph::OpNode>()->name || leaf();
      case graph::ExprKind::kConstant: {
        const auto &x = *a.as<graph::ConstantNode>()->data, &y = *b.as<graph::ConstantNode>()->data;
        if (x.dtype != y.dtype || x.shape != y.shape) return leaf();
        if (x.bytes != y.bytes) return Fail("constant data differs");
        return true;
      }
      case graph::ExprKind::kShapeExpr:
        return Dims(a.as<graph::ShapeExprNode>()->values, b.as<graph::ShapeExprNode>()->values);
      case graph::ExprKind::kPrimValue:
        return Prim(a.as<graph::PrimValueNode>()->value, b.as<graph::PrimValueNode>()->value);
      case graph::ExprKind::kStringImm:
        return a.as<graph::StringImmNode>()->value == b.as<graph::StringImmNode>()->value || leaf();
      case graph::ExprKind::kDataTypeImm:
        return a.as<graph::DataTypeImmNode>()->value == b.as<graph::DataTypeImmNode>()->value || leaf();
      case graph::ExprKind::kTuple: {
        const auto &x = a.as<graph::TupleNode>()->fields, &y = b.as<graph::TupleNode>()->fields;
        if (x.size() != y.size()) return leaf();
        for (size_t i = 0; i < x.size(); ++i) {
          Label label(this, "field " + std::to_string(i));
          if (!Expr(x[i], y[i])) return false;
        }
        return true;
      }
      case graph::ExprKind::kTupleGetItem: {
        const auto *x = a.as<graph::TupleGetItemNode>(), *y = b.as<graph::TupleGetItemNode>();
        if (x->index != y->index) return leaf();
        return Expr(x->tuple, y->tuple);
      }
      case graph::ExprKind::kCall: return Call(a.as<graph::CallNode>(), b.as<graph::CallNode>());
      case graph::ExprKind::kIf: {
        const auto *x = a.as<graph::IfNode>(), *y = b.as<graph::IfNode>();
        {
          Label label(this, "if condition");
          if (!Expr(x->condition, y->condition)) return false;
        }
        {
          Label label(this, "then");
          if (!Expr(x->then_branch, y->then_branch)) return false;
        }
        Label label(this, "else");
        return Expr(x->else_branch, y->else_branch);
      }
      case graph::ExprKind::kSeqExpr: return Seq(a.as<graph::SeqExprNode>(), b.as<graph::SeqExprNode>());
      case graph::ExprKind::kFunction: return Function(a.as<graph::FunctionNode>(), b.as<graph::FunctionNode>());
    }
    return leaf();
  }

  bool Call(const graph::CallNode* a, const graph::CallNode* b) {
    {
      Label label(this, "callee");
      if (!Expr(a->op, b->op)) return false;
    }
    if (a->args.size() != b->args.size()) {
      return Fail(std::to_string(a->args.size()) + " call args vs " + std::to_string(b->args.size()));
    }
    for (size_t i = 0; i < a->args.size(); ++i) {
      Label label(this, "call arg " + std::to_string(i));
      if (!Expr(a->args[i], b->args[i])) return false;
    }
    if (!Attrs(a->attrs, b->attrs)) return false;
    if (a->sinfo_args.size() != b->sinfo_args.size()) {
      return Fail(std::to_string(a->sinfo_args.size()) + " sinfo args vs " + std::to_string(b->sinfo_args.size()));
    }
    for (size_t i = 0; i < a->sinfo_args.size(); ++i) {
      Label label(this, "sinfo arg " + std::to_string(i));
      if (!SInfo(a->sinfo_args[i], b->sinfo_args[i])) return false;
    }
    return true;
  }

  bool Binding(const graph::Binding& a, const graph::Binding& b) {
    if (a.kind != b.kind) {
      auto name = [](const graph::Binding& x) {
        return x.kind == graph::BindingKind::kMatchCast ? "match_cast" : "binding";
      };
      return Fail(std::string(name(a)) + " vs " + name(b));
    }
    if (!Expr(a.value, b.value)) return false;
    if (a.kind == graph::BindingKind::kMatchCast) {
      Label label(this, "pattern");
      if (!SInfo(a.pattern, b.pattern)) return false;
    }
    return GraphVarDef(a.var, b.var);
  }

  bool Seq(const graph::SeqExprNode* a, const graph::SeqExprNode* b) {
    std::vector<CanonBlock> x = Canonicalize(a->blocks), y = Canonicalize(b->blocks);
    size_t binding_index = 0;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (x[i].is_dataflow != y[i].is_dataflow) {
        Label label(this, "block " + std::to_string(i));
        return Fail(std::string(x[i].is_dataflow ? "dataflow" : "plain") + " vs " +
                    (y[i].is_dataflow ? "dataflow" : "plain"));
      }
      const auto &bx = x[i].bindings, &by = y[i].bindings;
      for (size_t j = 0; j < bx.size() && j < by.size(); ++j, ++binding_index) {
        Label label(this, "binding " + std::to_string(binding_index));
        if (!Binding(*bx[j], *by[j])) return false;
      }
      if (bx.size() != by.size()) {
        Label label(this, "block " + std::to_string(i));
        return Fail(std::to_string(bx.size()) + " bindings vs " + std::to_string(by.size()));
      }
    }
    if (x.size() != y.size()) return Fail(std::to_string(x.size()) + " blocks vs " + std::to_string(y.size()));
    Label label(this, "result");
    return Expr(a->body, b->body);
  }

  bool Function(const graph::FunctionNode* a, const graph::FunctionNode* b) {
    bool saved = define_free;
    define_free = true;
    bool ok = FunctionBody(a, b);
    define_free = saved;
    return ok;
  }

  bool FunctionBody(const graph::FunctionNode* a, const graph::FunctionNode* b) {
    if (a->params.size() != b->params.size()) {
      return Fail(std::to_string(a->params.size()) + " params vs " + std::to_string(b->params.size()));
    }
    for (size_t i = 0; i < a->params.size(); ++i) {
      Label label(this, "param " + std::to_string(i));
      if (!GraphVarDef(a->params[i], b->params[i])) return false;
    }
    {
      Label label(this, "return type");
      if (!SInfo(a->ret_struct_info, b->ret_struct_info)) return false;
    }
    return Attrs(a->attrs, b->attrs) && Expr(a->body, b->body);
  }

  bool Module(const IRModule& a, const IRModule& b) {
    const auto &fa = a.functions(), &fb = b.functions();
    for (size_t i = 0; i < fa.size() && i < fb.size(); ++i) {
      if (fa[i].first != fb[i].first) {
        return Fail("function " + std::to_string(i) + ": @" + fa[i].first + " vs @" + fb[i].first);
      }
      Label label(this, "function @" + fa[i].first);
      ResetVariables();
      const auto* ga = std::get_if<graph::Function>(&fa[i].second);
      const auto* gb = std::get_if<graph::Function>(&fb[i].second);
      if ((ga == nullptr) != (gb == nullptr)) {
        return Fail(std::string(ga ? "graph function" : "prim_func") + " vs " + (gb ? "graph function" : "prim_func"));
      }
      bool ok = ga ? Function(ga->get(), gb->get())
                   : PrimFunc(std::get<tir::PrimFunc>(fa[i].second), std::get<tir::PrimFunc>(fb[i].second));
      if (!ok) return false;
    }
    if (fa.size() != fb.size()) {
      return Fail(std::to_string(fa.size()) + " functions vs " + std::to_string(fb.size()));
    }
    Label label(this, "module");
    return Attrs(a.attrs(), b.attrs());
  }

 private:
  std::string* why_not_;
  bool failed_ = false;
  std::vector<std::string> path_;
  Bijection<tir::VarNode> tir_vars_;
  Bijection<tir::BufferNode> buffers_;
  Bijection<graph::VarNode> graph_vars_;
};

}  // namespace

bool StructuralEqual(const IRModule& a, const IRModule& b, std::string* why_not) {
  return Comparer(why_not).Module(a, b);
}

bool StructuralEqual(const graph::Expr& a, const graph::Expr& b, std::string* why_not) {
  return Comparer(why_not).Expr(a, b);
}

bool StructuralEqual(const tir::PrimFunc& a, const tir::PrimFunc& b, std::string* why_not) {
  return Comparer(why_not).PrimFunc(a, b);
}

bool StructuralEqual(const tir::PrimExpr& a, const tir::PrimExpr& b, std::string* why_not) {
  return Comparer(why_not).Prim(a, b);
}

bool StructuralEqual(const graph::StructInfo& a, const graph::StructInfo& b, std::string* why_not) {
  return Comparer(why_not).SInfo(a, b);
}

}  // namespace strata::ir
