// Canonical printer of the text IR; see printer.h.
//
// Naming mirrors the parser's scoping so the text reads back to the same
// variables: a variable gets its name where the parser would declare it (a
// binding, a parameter, a loop, or the first shape it appears in), and the name
// is never one that is visible at that point, so nothing is ever shadowed.
#include "compiler/ir/printer.h"

#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/lexer.h"

namespace strata::ir {

namespace {

using graph::StructInfo;
using tir::PrimExpr;
using tir::PrimExprKind;

// Printable names for the variables of one namespace, with block scoping.
class NameTable {
 public:
  void Reset() {
    scopes_.assign(1, {});
    names_.clear();
  }
  void PushScope() { scopes_.emplace_back(); }
  void PopScope() { scopes_.pop_back(); }

  const std::string* Find(const void* node) const {
    auto it = names_.find(node);
    return it == names_.end() ? nullptr : &it->second;
  }

  // Names `node` in the innermost scope, avoiding every visible name and `also_avoid`.
  const std::string& Define(const void* node, const std::string& hint,
                            const std::set<std::string>* also_avoid = nullptr) {
    std::string base = Sanitize(hint);
    std::string name = base;
    for (int i = 1; Visible(name) || (also_avoid && also_avoid->count(name)); ++i) {
      name = base + "_" + std::to_string(i);
    }
    scopes_.back().insert(name);
    return names_[node] = name;
  }

  // Keeps a name visible in the enclosing scope (dataflow outputs).
  void Export(const void* node) {
    if (const std::string* name = Find(node); name && scopes_.size() >= 2) scopes_[scopes_.size() - 2].insert(*name);
  }

 private:
  bool Visible(const std::string& name) const {
    for (const auto& scope : scopes_) {
      if (scope.count(name)) return true;
    }
    return false;
  }

  static std::string Sanitize(const std::string& hint) {
    if (IsPlainName(hint)) return hint;
    std::string s;
    for (char c : hint) {
      bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
      s.push_back(ok ? c : '_');
    }
    if (s.empty() || (s[0] >= '0' && s[0] <= '9')) s = "v" + s;
    if (!IsPlainName(s)) s += "_";  // a keyword
    return s;
  }

  std::vector<std::set<std::string>> scopes_{1};
  std::map<const void*, std::string> names_;
};

// Operator precedence of the scalar language, loosest first (docs/text_ir.md).
constexpr int kPrecUnary = 7;
constexpr int kPrecPrimary = 8;

int BinaryPrecedence(PrimExprKind kind) {
  switch (kind) {
    case PrimExprKind::kOr: return 1;
    case PrimExprKind::kAnd: return 2;
    case PrimExprKind::kEQ:
    case PrimExprKind::kNE: return 3;
    case PrimExprKind::kLT:
    case PrimExprKind::kLE:
    case PrimExprKind::kGT:
    case PrimExprKind::kGE: return 4;
    case PrimExprKind::kAdd:
    case PrimExprKind::kSub: return 5;
    default: return 6;  // * / // %
  }
}

std::string Indent(int level) { return std::string(static_cast<size_t>(level) * 2, ' '); }

std::string IntLiteral(DataType dtype, int64_t value) {
  if (dtype.is_bool()) return value ? "true" : "false";
  if (dtype.is_uint()) return std::to_string(static_cast<uint64_t>(value)) + dtype.ToString();
  std::string text = std::to_string(value);
  return dtype == DataType::I64() ? text : text + dtype.ToString();
}

std::string FloatLiteral(DataType dtype, double value) {
  std::string text = FormatDouble(value);
  return dtype == DataType::F32() ? text : text + dtype.ToString();
}

std::string GlobalName(const std::string& name) { return "@" + (IsPlainGlobalName(name) ? name : QuoteString(name)); }

std::string AttrKey(const std::string& key) { return IsPlainName(key) ? key : QuoteString(key); }

std::string AttrBlock(const Attrs& attrs) {
  std::string out = "{";
  bool first = true;
  for (const auto& [key, value] : attrs) {
    out += (first ? "" : ", ") + AttrKey(key) + " = " + PrintAttrValue(value);
    first = false;
  }
  return out + "}";
}

bool IsPositiveZero(const PrimExpr& e) {
  if (const auto* i = e.as<tir::IntImmNode>()) return i->value == 0 && !e.dtype().is_bool();
  if (const auto* f = e.as<tir::FloatImmNode>()) return f->value == 0 && !std::signbit(f->value);
  return false;
}

// Names that the parser treats specially when followed by '(' in a value.
bool IsSpecialFormName(const std::string& name) {
  static const std::set<std::string> kNames = {graph::ops::kCallTIR,
                                               graph::ops::kCallDPSPacked,
                                               graph::ops::kCallPacked,
                                               "shape",
                                               "prim",
                                               "dtype",
                                               "const",
                                               "match_cast",
                                               "match_shape"};
  return kNames.count(name) != 0;
}

class Printer {
 public:
  explicit Printer(bool disambiguate, PrintOptions options = {})
      : disambiguate_(disambiguate), options_(std::move(options)) {}

  std::string Module(const IRModule& module) {
    std::string out;
    if (!module.attrs().empty()) out += "attrs " + AttrBlock(module.attrs()) + "\n";
    for (const auto& [name, func] : module.functions()) {
      if (!out.empty()) out += "\n";
      if (const auto* g = std::get_if<graph::Function>(&func)) {
        out += GraphFunction(name, *g);
      } else {
        out += PrimFunc(name, std::get<tir::PrimFunc>(func));
      }
    }
    return out;
  }

  // -------------------------------------------------------------- scalars

  std::string Prim(const PrimExpr& e, int context = 0) {
    int prec = kPrecPrimary;
    std::string text = PrimText(e, &prec);
    return prec < context ? "(" + text + ")" : text;
  }

  std::string TirVarName(const tir::VarNode* var) {
    if (!disambiguate_) return var->name;
    if (const std::string* name = tir_names_.Find(var)) return *name;
    return tir_names_.Define(var, var->name);  // first appearance, e.g. in a shape
  }

  std::string BufferName(const tir::BufferNode* buffer) {
    if (!disambiguate_) return buffer->name;
    if (const std::string* name = buffer_names_.Find(buffer)) return *name;
    return buffer_names_.Define(buffer, buffer->name);
  }

  std::string PrimText(const PrimExpr& e, int* prec) {
    if (!e.defined()) return "<null>";
    *prec = kPrecPrimary;
    switch (e->kind) {
      case PrimExprKind::kIntImm: {
        int64_t value = e.as<tir::IntImmNode>()->value;
        if (value < 0 && e.dtype().is_int()) *prec = kPrecUnary;
        return IntLiteral(e.dtype(), value);
      }
      case PrimExprKind::kFloatImm: {
        double value = e.as<tir::FloatImmNode>()->value;
        if (std::signbit(value)) *prec = kPrecUnary;
        return FloatLiteral(e.dtype(), value);
      }
      case PrimExprKind::kVar: return TirVarName(e.as<tir::VarNode>());
      case PrimExprKind::kNot: *prec = kPrecUnary; return "!" + Prim(e.as<tir::NotNode>()->a, kPrecUnary);
      case PrimExprKind::kSelect: {
        const auto* op = e.as<tir::SelectNode>();
        return "select(" + Prim(op->condition) + ", " + Prim(op->true_value) + ", " + Prim(op->false_value) + ")";
      }
      case PrimExprKind::kCast: {
        const auto* op = e.as<tir::CastNode>();
        return "cast<" + e.dtype().ToString() + ">(" + Prim(op->value) + ")";
      }
      case PrimExprKind::kCall: {
        const auto* op = e.as<tir::CallNode>();
        std::string out = std::string(tir::IntrinsicName(op->op)) + "(";
        for (size_t i = 0; i < op->args.size(); ++i) out += (i ? ", " : "") + Prim(op->args[i]);
        return out + ")";
      }
      case PrimExprKind::kBufferLoad: {
        const auto* op = e.as<tir::BufferLoadNode>();
        return BufferName(op->buffer.get()) + "[" + PrimList(op->indices) + "]";
      }
      default: break;
    }
    const auto* op = e.as<tir::BinaryOpNode>();
    if (e->kind == PrimExprKind::kMin || e->kind == PrimExprKind::kMax) {
      return std::string(tir::BinaryOpName(e->kind)) + "(" + Prim(op->a) + ", " + Prim(op->b) + ")";
    }
    if (e->kind == PrimExprKind::kSub && IsPositiveZero(op->a)) {
      // 0 - x is how the parser builds -x; a literal operand keeps its parentheses,
      // since -5 reads back as the constant -5.
      *prec = kPrecUnary;
      bool literal = op->b.as<tir::IntImmNode>() || op->b.as<tir::FloatImmNode>();
      return literal ? "-(" + Prim(op->b) + ")" : "-" + Prim(op->b, kPrecUnary);
    }
    int p = BinaryPrecedence(e->kind);
    *prec = p;
    return Prim(op->a, p) + " " + std::string(tir::BinaryOpName(e->kind)) + " " + Prim(op->b, p + 1);
  }

  std::string PrimList(const std::vector<PrimExpr>& values) {
    std::string out;
    for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + Prim(values[i]);
    return out;
  }

  // (m, n), (m,), ()
  std::string Dims(const std::vector<PrimExpr>& dims) { return "(" + PrimList(dims) + (dims.size() == 1 ? ",)" : ")"); }

  // -------------------------------------------------------------- struct info

  std::string SInfo(const StructInfo& sinfo) {
    if (!sinfo.defined()) return "<null>";
    switch (sinfo->kind) {
      case graph::StructInfoKind::kObject: return "Object";
      case graph::StructInfoKind::kPrim: return "Prim[" + sinfo.as<graph::PrimStructInfoNode>()->dtype.ToString() + "]";
      case graph::StructInfoKind::kShape: {
        const auto* s = sinfo.as<graph::ShapeStructInfoNode>();
        if (s->values) return "Shape[" + Dims(*s->values) + "]";
        if (s->ndim >= 0) return "Shape[ndim=" + std::to_string(s->ndim) + "]";
        return "Shape";
      }
      case graph::StructInfoKind::kTensor: {
        const auto* t = sinfo.as<graph::TensorStructInfoNode>();
        std::string dtype = t->dtype.is_void() ? "" : t->dtype.ToString();
        if (t->shape) return "Tensor[" + Dims(*t->shape) + (dtype.empty() ? "" : ", " + dtype) + "]";
        if (t->ndim >= 0) return "Tensor[ndim=" + std::to_string(t->ndim) + (dtype.empty() ? "" : ", " + dtype) + "]";
        return dtype.empty() ? "Tensor" : "Tensor[" + dtype + "]";
      }
      case graph::StructInfoKind::kTuple: {
        const auto* t = sinfo.as<graph::TupleStructInfoNode>();
        std::string out = "Tuple[";
        for (size_t i = 0; i < t->fields.size(); ++i) out += (i ? ", " : "") + SInfo(t->fields[i]);
        return out + "]";
      }
    }
    return "<unknown struct info>";
  }

  // -------------------------------------------------------------- tensor programs

  std::string PrimFunc(const std::string& name, const tir::PrimFunc& func) {
    tir_names_.Reset();
    buffer_names_.Reset();
    std::string out = "prim_func " + GlobalName(name) + "(";
    // Buffer and scalar parameters share one list of names in the parser.
    std::set<std::string> param_names;
    for (size_t i = 0; i < func->params.size(); ++i) {
      const tir::PrimFuncParam& param = func->params[i];
      out += i ? ", " : "";
      if (param.is_buffer()) {
        std::string type = BufferType(param.buffer);
        std::string param_name = disambiguate_
                                     ? buffer_names_.Define(param.buffer.get(), param.buffer->name, &param_names)
                                     : param.buffer->name;
        param_names.insert(param_name);
        out += param_name + ": " + type;
        continue;
      }
      const tir::VarNode* var = param.scalar.get();
      std::string param_name;
      if (!disambiguate_) {
        param_name = var->name;
      } else if (const std::string* known = tir_names_.Find(var)) {
        param_name = *known;  // already named by a buffer shape: the same variable
      } else {
        param_name = tir_names_.Define(var, var->name, &param_names);
      }
      param_names.insert(param_name);
      out += param_name + ": " + var->dtype.ToString();
    }
    out += ")";
    if (!func->attrs.empty()) out += " attrs " + AttrBlock(func->attrs);
    out += " {\n";
    tir_names_.PushScope();
    buffer_names_.PushScope();
    Stmt(func->body, 1, &out);
    tir_names_.PopScope();
    buffer_names_.PopScope();
    return out + "}\n";
  }

  std::string BufferType(const tir::Buffer& buffer) {
    return "Buffer[" + Dims(buffer->shape) + ", " + buffer->dtype.ToString() + "]";
  }

  void Block(const tir::Stmt& body, int indent, std::string* out, const tir::Var* loop_var = nullptr,
             std::string* loop_var_name = nullptr) {
    tir_names_.PushScope();
    buffer_names_.PushScope();
    if (loop_var) *loop_var_name = DefineTirVar(*loop_var);
    std::string inner;
    Stmt(body, indent, &inner);
    *out += inner;
    tir_names_.PopScope();
    buffer_names_.PopScope();
  }

  std::string DefineTirVar(const tir::Var& var) {
    return disambiguate_ ? tir_names_.Define(var.get(), var->name) : var->name;
  }

  void Stmt(const tir::Stmt& stmt, int indent, std::string* out) {
    if (!stmt.defined()) return;
    std::string pad = Indent(indent);
    switch (stmt->kind) {
      case tir::StmtKind::kSeqStmt:
        for (const tir::Stmt& s : stmt.as<tir::SeqStmtNode>()->stmts) Stmt(s, indent, out);
        return;
      case tir::StmtKind::kFor: {
        const auto* op = stmt.as<tir::ForNode>();
        std::string header =
            std::string(tir::ForKindName(op->for_kind)) + "(" + Prim(op->min) + ", " + Prim(op->extent) + ") {\n";
        std::string name, body;
        Block(op->body, indent + 1, &body, &op->loop_var, &name);
        *out += pad + "for " + name + " in " + header + body + pad + "}\n";
        return;
      }
      case tir::StmtKind::kBufferStore: {
        const auto* op = stmt.as<tir::BufferStoreNode>();
        std::string target = BufferName(op->buffer.get()) + "[" + PrimList(op->indices) + "]";
        *out += pad + target + " = " + Prim(op->value) + "\n";
        return;
      }
      case tir::StmtKind::kAllocate: {
        const auto* op = stmt.as<tir::AllocateNode>();
        std::string type = BufferType(op->buffer);
        std::string name = disambiguate_ ? buffer_names_.Define(op->buffer.get(), op->buffer->name) : op->buffer->name;
        *out += pad + "alloc " + name + ": " + type + "\n";
        Stmt(op->body, indent, out);
        return;
      }
      case tir::StmtKind::kLetStmt: {
        const auto* op = stmt.as<tir::LetStmtNode>();
        std::string value = Prim(op->value);
        std::string name = DefineTirVar(op->var);
        *out += pad + "let " + name + ": " + op->var->dtype.ToString() + " = " + value + "\n";
        Stmt(op->body, indent, out);
        return;
      }
      case tir::StmtKind::kIfThenElse: {
        const auto* op = stmt.as<tir::IfThenElseNode>();
        *out += pad + "if " + Prim(op->condition) + " {\n";
        Block(op->then_case, indent + 1, out);
        if (op->else_case.defined()) {
          *out += pad + "} else {\n";
          Block(op->else_case, indent + 1, out);
        }
        *out += pad + "}\n";
        return;
      }
      case tir::StmtKind::kAssertStmt: {
        const auto* op = stmt.as<tir::AssertStmtNode>();
        *out += pad + "assert " + Prim(op->condition) + ", " + QuoteString(op->message) + "\n";
        return;
      }
      case tir::StmtKind::kEvaluate:
        *out += pad + "evaluate " + Prim(stmt.as<tir::EvaluateNode>()->value) + "\n";
        return;
      case tir::StmtKind::kPrefetch:
        *out += pad + "prefetch " + Prim(stmt.as<tir::PrefetchNode>()->load) + "\n";
        return;
    }
  }

  // -------------------------------------------------------------- graph functions

  std::string GraphVarName(const graph::VarNode* var) {
    if (!disambiguate_) return var->name;
    if (const std::string* name = graph_names_.Find(var)) return *name;
    return graph_names_.Define(var, var->name);
  }

  std::string GraphFunction(const std::string& name, const graph::Function& func) {
    tir_names_.Reset();
    graph_names_.Reset();
    std::string out = "func " + GlobalName(name) + "(";
    for (size_t i = 0; i < func->params.size(); ++i) {
      const graph::Var& param = func->params[i];
      std::string param_name = disambiguate_ ? graph_names_.Define(param.get(), param->name) : param->name;
      out += (i ? ", " : "") + param_name;
      if (param->struct_info.defined()) out += ": " + SInfo(param->struct_info);
    }
    out += ")";
    if (func->ret_struct_info.defined()) out += " -> " + SInfo(func->ret_struct_info);
    if (!func->attrs.empty()) out += " attrs " + AttrBlock(func->attrs);
    out += " {\n";
    if (const auto* seq = func->body.as<graph::SeqExprNode>()) {
      Blocks(seq->blocks, 1, &out);
      out += Indent(1) + "return " + Value(seq->body, 1) + "\n";
    } else {
      out += Indent(1) + "return " + Value(func->body, 1) + "\n";
    }
    return out + "}\n";
  }

  void Blocks(const std::vector<graph::BindingBlock>& blocks, int indent, std::string* out) {
    for (const graph::BindingBlock& block : blocks) {
      if (!block.is_dataflow) {
        for (const graph::Binding& binding : block.bindings) *out += Binding(binding, indent);
        continue;
      }
      *out += Indent(indent) + "dataflow {\n";
      graph_names_.PushScope();
      std::vector<const graph::VarNode*> outputs;
      for (const graph::Binding& binding : block.bindings) {
        *out += Binding(binding, indent + 1);
        if (!binding.var->is_dataflow) outputs.push_back(binding.var.get());
      }
      if (!outputs.empty()) {
        *out += Indent(indent + 1) + "output ";
        for (size_t i = 0; i < outputs.size(); ++i) *out += (i ? ", " : "") + GraphVarName(outputs[i]);
        *out += "\n";
      }
      for (const graph::VarNode* var : outputs) graph_names_.Export(var);
      graph_names_.PopScope();
      *out += Indent(indent) + "}\n";
    }
  }

  std::string Binding(const graph::Binding& binding, int indent) {
    // Same order as the parser reads: annotation, value, then the new name.
    std::string annotation;
    if (binding.var->struct_info.defined()) annotation = ": " + SInfo(binding.var->struct_info);
    std::string value;
    if (binding.kind == graph::BindingKind::kMatchCast) {
      value = "match_cast(" + Value(binding.value, indent) + ", " + SInfo(binding.pattern) + ")";
    } else {
      value = Value(binding.value, indent);
    }
    std::string name = disambiguate_ ? graph_names_.Define(binding.var.get(), binding.var->name) : binding.var->name;
    return Indent(indent) + name + annotation + " = " + value + "\n";
  }

  std::string Args(const std::vector<graph::Expr>& args, size_t begin, int indent) {
    std::string out;
    for (size_t i = begin; i < args.size(); ++i) out += (i > begin ? ", " : "") + Value(args[i], indent);
    return out;
  }

  std::string Kwargs(const Attrs& attrs, bool leading_comma) {
    std::string out;
    for (const auto& [key, value] : attrs) {
      out += (leading_comma ? ", " : "") + AttrKey(key) + "=" + PrintAttrValue(value);
      leading_comma = true;
    }
    return out;
  }

  std::string Call(const graph::CallNode* call, int indent) {
    const auto& args = call->args;
    if (const auto* global = call->op.as<graph::GlobalVarNode>()) {
      return GlobalName(global->name) + "(" + Args(args, 0, indent) + Kwargs(call->attrs, !args.empty()) + ")";
    }
    const auto* op = call->op.as<graph::OpNode>();
    if (!op) return "<call of " + Value(call->op, indent) + ">(" + Args(args, 0, indent) + ")";
    const std::string& name = op->name;
    bool one_sinfo = call->sinfo_args.size() == 1;
    if (name == graph::ops::kCallTIR && (args.size() == 2 || args.size() == 3) && args[0].as<graph::GlobalVarNode>() &&
        one_sinfo) {
      std::string out = "call_tir(" + GlobalName(args[0].as<graph::GlobalVarNode>()->name) + ", " +
                        Value(args[1], indent) + ", " + SInfo(call->sinfo_args[0]);
      if (args.size() == 3) out += ", " + Value(args[2], indent);
      return out + Kwargs(call->attrs, true) + ")";
    }
    if (name == graph::ops::kCallDPSPacked && args.size() == 2 && args[0].as<graph::ExternFuncNode>() && one_sinfo) {
      return "call_dps_packed(" + QuoteString(args[0].as<graph::ExternFuncNode>()->name) + ", " +
             Value(args[1], indent) + ", " + SInfo(call->sinfo_args[0]) + Kwargs(call->attrs, true) + ")";
    }
    if (name == graph::ops::kCallPacked && !args.empty() && args[0].as<graph::ExternFuncNode>() &&
        call->sinfo_args.size() <= 1) {
      // The result struct info is the binding's annotation.
      std::string rest = Args(args, 1, indent);
      return "call_packed(" + QuoteString(args[0].as<graph::ExternFuncNode>()->name) +
             (rest.empty() ? "" : ", " + rest) + Kwargs(call->attrs, true) + ")";
    }
    if (IsSpecialFormName(name) || !IsPlainOpName(name)) {
      return "<malformed " + name + ">(" + Args(args, 0, indent) + ")";
    }
    return name + "(" + Args(args, 0, indent) + Kwargs(call->attrs, !args.empty()) + ")";
  }

  std::string Branch(const graph::Expr& branch, int indent) {
    graph_names_.PushScope();
    std::string out;
    if (const auto* seq = branch.as<graph::SeqExprNode>()) {
      Blocks(seq->blocks, indent, &out);
      out += Indent(indent) + Value(seq->body, indent) + "\n";
    } else {
      out += Indent(indent) + Value(branch, indent) + "\n";
    }
    graph_names_.PopScope();
    return out;
  }

  std::string ConstantText(const graph::HostTensor& data) {
    std::vector<PrimExpr> dims;
    for (int64_t d : data.shape) dims.push_back(tir::IntImm(DataType::I64(), d));
    const std::string head = "const(Tensor[" + Dims(dims) + ", " + data.dtype.ToString() + "], ";
    if (options_.max_inline_constant_bytes >= 0 && options_.external_constant &&
        static_cast<int64_t>(data.bytes.size()) > options_.max_inline_constant_bytes) {
      return head + options_.external_constant(data) + ")";
    }
    std::string out = head + "[";
    size_t width = static_cast<size_t>(data.dtype.bytes());
    size_t count = width ? data.bytes.size() / width : 0;
    for (size_t i = 0; i < count; ++i) {
      uint64_t bits = 0;
      for (size_t b = 0; b < width; ++b) bits |= static_cast<uint64_t>(data.bytes[i * width + b]) << (8 * b);
      out += i ? ", " : "";
      DataType t = data.dtype;
      if (t.is_bool()) {
        out += bits ? "true" : "false";
      } else if (t.is_float() && t.bits() == 64) {
        double v;
        std::memcpy(&v, &bits, sizeof(v));
        out += FormatDouble(v);
      } else if (t.is_float() && t.bits() == 32) {
        uint32_t b32 = static_cast<uint32_t>(bits);
        float v;
        std::memcpy(&v, &b32, sizeof(v));
        out += FormatFloat(v);
      } else if (t.is_float()) {
        out += FormatFloat(HalfToFloat(static_cast<uint16_t>(bits)));
      } else if (t.is_uint()) {
        out += std::to_string(bits);
      } else {
        int shift = 64 - t.bits();  // sign-extend
        out += std::to_string(static_cast<int64_t>(bits << shift) >> shift);
      }
    }
    return out + "])";
  }

  std::string Value(const graph::Expr& expr, int indent) {
    if (!expr.defined()) return "<null>";
    switch (expr->kind) {
      case graph::ExprKind::kVar: return GraphVarName(expr.as<graph::VarNode>());
      case graph::ExprKind::kGlobalVar: return GlobalName(expr.as<graph::GlobalVarNode>()->name);
      case graph::ExprKind::kExternFunc: return "<extern " + QuoteString(expr.as<graph::ExternFuncNode>()->name) + ">";
      case graph::ExprKind::kOp: return "<op " + expr.as<graph::OpNode>()->name + ">";
      case graph::ExprKind::kConstant: return ConstantText(*expr.as<graph::ConstantNode>()->data);
      case graph::ExprKind::kShapeExpr: return "shape(" + PrimList(expr.as<graph::ShapeExprNode>()->values) + ")";
      case graph::ExprKind::kPrimValue: {
        const PrimExpr& value = expr.as<graph::PrimValueNode>()->value;
        if (value.as<tir::IntImmNode>() || value.as<tir::FloatImmNode>()) return Prim(value);
        return "prim(" + Prim(value) + ")";
      }
      case graph::ExprKind::kStringImm: return QuoteString(expr.as<graph::StringImmNode>()->value);
      case graph::ExprKind::kDataTypeImm: return "dtype(" + expr.as<graph::DataTypeImmNode>()->value.ToString() + ")";
      case graph::ExprKind::kTuple: {
        const auto& fields = expr.as<graph::TupleNode>()->fields;
        return "(" + Args(fields, 0, indent) + (fields.size() == 1 ? ",)" : ")");
      }
      case graph::ExprKind::kTupleGetItem: {
        const auto* op = expr.as<graph::TupleGetItemNode>();
        return Value(op->tuple, indent) + "[" + std::to_string(op->index) + "]";
      }
      case graph::ExprKind::kCall: return Call(expr.as<graph::CallNode>(), indent);
      case graph::ExprKind::kIf: {
        const auto* op = expr.as<graph::IfNode>();
        std::string out = "if " + Value(op->condition, indent) + " {\n";
        out += Branch(op->then_branch, indent + 1);
        out += Indent(indent) + "} else {\n";
        out += Branch(op->else_branch, indent + 1);
        return out + Indent(indent) + "}";
      }
      case graph::ExprKind::kSeqExpr: return "<sequence as a value>";
      case graph::ExprKind::kFunction: return "<nested function>";
    }
    return "<unknown expression>";
  }

 private:
  bool disambiguate_;
  PrintOptions options_;
  NameTable tir_names_;
  NameTable buffer_names_;
  NameTable graph_names_;
};

}  // namespace

std::string PrintModule(const IRModule& module) { return Printer(true).Module(module); }

std::string PrintModule(const IRModule& module, const PrintOptions& options) {
  return Printer(true, options).Module(module);
}

std::string PrintPrimFunc(const std::string& name, const tir::PrimFunc& func) {
  return Printer(true).PrimFunc(name, func);
}

std::string PrintPrimExpr(const tir::PrimExpr& expr) { return Printer(false).Prim(expr); }

std::string PrintStructInfo(const graph::StructInfo& sinfo) { return Printer(false).SInfo(sinfo); }

std::string PrintGraphExpr(const graph::Expr& expr) { return Printer(false).Value(expr, 0); }

std::string PrintAttrValue(const AttrValue& value) {
  if (const bool* b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  if (const int64_t* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
  if (const double* d = std::get_if<double>(&value)) return FormatDouble(*d);
  if (const std::string* s = std::get_if<std::string>(&value)) return QuoteString(*s);
  if (const auto* list = std::get_if<std::vector<int64_t>>(&value)) return PrintInts(*list);
  if (const auto* symbolic = std::get_if<SymbolicInts>(&value)) {
    std::string out = "[";
    for (size_t i = 0; i < symbolic->values.size(); ++i) out += (i ? ", " : "") + PrintPrimExpr(symbolic->values[i]);
    return out + "]";
  }
  if (const auto* strings = std::get_if<std::vector<std::string>>(&value)) {
    std::string out = "[";
    for (size_t i = 0; i < strings->size(); ++i) out += (i ? ", " : "") + QuoteString((*strings)[i]);
    return out + "]";
  }
  return std::get<DataType>(value).ToString();
}

std::string PrintInts(const std::vector<int64_t>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + std::to_string(values[i]);
  return out + "]";
}

std::string PrintShape(const std::vector<tir::PrimExpr>& dims) {
  std::string out = "(";
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? ", " : "") + PrintPrimExpr(dims[i]);
  return out + (dims.size() == 1 ? ",)" : ")");
}

}  // namespace strata::ir
