// Dataflow pattern construction and printing (see dataflow_pattern.h).
#include "compiler/pattern/dataflow_pattern.h"

#include <utility>

#include "compiler/ir/printer.h"

namespace strata::pattern {
namespace {

DFPattern Make(PatternNode node) { return DFPattern(std::make_shared<const PatternNode>(std::move(node))); }

// Field by field rather than designated initializers: GCC before 14 reports
// every member a designated initializer leaves out (-Wmissing-field-initializers).
PatternNode Node(PatternKind kind, std::string name = {}, std::optional<std::vector<DFPattern>> args = std::nullopt) {
  PatternNode node{};
  node.kind = kind;
  node.name = std::move(name);
  node.args = std::move(args);
  return node;
}

PatternNode Constraint(PatternKind kind, const DFPattern& operand) {
  PatternNode node = Node(kind);
  node.lhs = operand;
  return node;
}

DFPattern Unary(PatternKind kind, const DFPattern& operand) { return Make(Constraint(kind, operand)); }

DFPattern Binary(PatternKind kind, const DFPattern& a, const DFPattern& b) {
  PatternNode node = Constraint(kind, a);
  node.rhs = b;
  return Make(std::move(node));
}

std::string ArgsText(const std::optional<std::vector<DFPattern>>& args) {
  if (!args) return "...";
  std::string out;
  for (size_t i = 0; i < args->size(); ++i) out += (i ? ", " : "") + (*args)[i].ToString();
  return out;
}

}  // namespace

DFPattern Wildcard() { return Make(Node(PatternKind::kWildcard)); }
DFPattern IsConst() { return Make(Node(PatternKind::kConstant)); }
DFPattern IsVar(std::string name) { return Make(Node(PatternKind::kVar, std::move(name))); }

DFPattern IsOp(std::string name, std::vector<DFPattern> args) {
  return Make(Node(PatternKind::kOp, std::move(name), std::move(args)));
}
DFPattern IsCallTIR(std::string func, std::optional<std::vector<DFPattern>> args) {
  return Make(Node(PatternKind::kCallTIR, std::move(func), std::move(args)));
}
DFPattern IsCallDPSPacked(std::string name, std::optional<std::vector<DFPattern>> args) {
  return Make(Node(PatternKind::kCallDPSPacked, std::move(name), std::move(args)));
}
DFPattern IsTuple(std::vector<DFPattern> fields) { return Make(Node(PatternKind::kTuple, {}, std::move(fields))); }

DFPattern operator|(const DFPattern& a, const DFPattern& b) { return Binary(PatternKind::kOr, a, b); }
DFPattern operator&(const DFPattern& a, const DFPattern& b) { return Binary(PatternKind::kAnd, a, b); }
DFPattern operator!(const DFPattern& a) { return Unary(PatternKind::kNot, a); }

DFPattern DFPattern::HasDType(DataType dtype) const {
  PatternNode node = Constraint(PatternKind::kDType, *this);
  node.dtype = dtype;
  return Make(std::move(node));
}
DFPattern DFPattern::HasShape(std::vector<tir::PrimExpr> shape) const {
  PatternNode node = Constraint(PatternKind::kShape, *this);
  node.shape = std::move(shape);
  return Make(std::move(node));
}
DFPattern DFPattern::HasRank(int rank) const {
  PatternNode node = Constraint(PatternKind::kRank, *this);
  node.rank = rank;
  return Make(std::move(node));
}
DFPattern DFPattern::HasAttr(std::string key, ir::AttrValue value) const {
  PatternNode node = Constraint(PatternKind::kAttr, *this);
  node.attr_key = std::move(key);
  node.attr_value = std::move(value);
  return Make(std::move(node));
}
DFPattern DFPattern::Where(ExprPredicate predicate, std::string description) const {
  PatternNode node = Constraint(PatternKind::kPredicate, *this);
  node.name = std::move(description);
  node.predicate = std::move(predicate);
  return Make(std::move(node));
}

std::string DFPattern::ToString() const {
  if (!node_) return "<null>";
  const PatternNode& n = *node_;
  switch (n.kind) {
    case PatternKind::kWildcard: return "*";
    case PatternKind::kConstant: return "const";
    case PatternKind::kVar: return n.name.empty() ? "var" : "var(" + n.name + ")";
    case PatternKind::kOp: return n.name + "(" + ArgsText(n.args) + ")";
    case PatternKind::kCallTIR:
      return "call_tir(" + (n.name.empty() ? "*" : "@" + n.name) + ", (" + ArgsText(n.args) + "))";
    case PatternKind::kCallDPSPacked:
      return "call_dps_packed(" + (n.name.empty() ? "*" : "\"" + n.name + "\"") + ", (" + ArgsText(n.args) + "))";
    case PatternKind::kTuple: return "(" + ArgsText(n.args) + ")";
    case PatternKind::kOr: return "(" + n.lhs.ToString() + " | " + n.rhs.ToString() + ")";
    case PatternKind::kAnd: return "(" + n.lhs.ToString() + " & " + n.rhs.ToString() + ")";
    case PatternKind::kNot: return "!" + n.lhs.ToString();
    case PatternKind::kDType: return n.lhs.ToString() + ".dtype(" + n.dtype.ToString() + ")";
    case PatternKind::kShape: {
      std::string dims;
      for (size_t i = 0; i < n.shape.size(); ++i) dims += (i ? ", " : "") + ir::PrintPrimExpr(n.shape[i]);
      return n.lhs.ToString() + ".shape(" + dims + ")";
    }
    case PatternKind::kRank: return n.lhs.ToString() + ".rank(" + std::to_string(n.rank) + ")";
    case PatternKind::kAttr:
      return n.lhs.ToString() + ".attr(" + n.attr_key + " = " + ir::PrintAttrValue(n.attr_value) + ")";
    case PatternKind::kPredicate: return n.lhs.ToString() + ".where(" + n.name + ")";
  }
  return "<unknown>";
}

}  // namespace strata::pattern
