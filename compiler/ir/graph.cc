// Graph-level expression constructors.
//
// make() fills in struct info only where it follows from the node alone (leaves,
// tuples, tuple items); calls, ifs, sequences and functions need context (the
// callee, the module, scoping), so Normalize computes theirs and builds those
// nodes through their constructors directly.
#include "compiler/ir/graph.h"

#include <cassert>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

namespace strata::graph {

Var::Var(std::string name, StructInfo sinfo, bool is_dataflow)
    : Expr(std::make_shared<const VarNode>(std::move(name), std::move(sinfo), is_dataflow)) {}

Var Var::FromNode(const Expr& expr) {
  assert(expr.as<VarNode>() && "Var::FromNode of an expression that is not a variable");
  Var var;
  static_cast<Expr&>(var) = expr;
  return var;
}

Expr GlobalVarNode::make(std::string name) { return Expr(std::make_shared<const GlobalVarNode>(std::move(name))); }

Expr ExternFuncNode::make(std::string name) { return Expr(std::make_shared<const ExternFuncNode>(std::move(name))); }

Expr OpNode::Get(const std::string& name) {
  // Interned so passes can recognize an op with one pointer compare. The table is
  // leaked on purpose: ops may be looked up during static destruction.
  static std::mutex* mutex = new std::mutex;
  static auto* table = new std::map<std::string, Expr>;
  std::lock_guard<std::mutex> lock(*mutex);
  auto it = table->find(name);
  if (it != table->end()) return it->second;
  Expr op(std::make_shared<const OpNode>(name));
  table->emplace(name, op);
  return op;
}

Expr ConstantNode::make(std::shared_ptr<const HostTensor> data) {
  assert(data && "constant without data");
  size_t count = 1;
  std::vector<PrimExpr> shape;
  shape.reserve(data->shape.size());
  for (int64_t dim : data->shape) {
    assert(dim >= 0 && "negative constant dimension");
    count *= static_cast<size_t>(dim);
    shape.push_back(tir::IntImm(DataType::I64(), dim));
  }
  assert(data->bytes.size() == count * static_cast<size_t>(data->dtype.bytes()) &&
         "constant byte size does not match its shape and dtype");
  (void)count;
  StructInfo sinfo = TensorStructInfoNode::make(std::move(shape), data->dtype);
  return Expr(std::make_shared<const ConstantNode>(std::move(data), std::move(sinfo)));
}

Expr ShapeExprNode::make(std::vector<PrimExpr> values) {
  StructInfo sinfo = ShapeStructInfoNode::make(values);  // checks the dims
  return Expr(std::make_shared<const ShapeExprNode>(std::move(values), std::move(sinfo)));
}

Expr PrimValueNode::make(PrimExpr value) {
  assert(value.defined() && "prim value of a null expression");
  StructInfo sinfo = PrimStructInfoNode::make(value.dtype());
  return Expr(std::make_shared<const PrimValueNode>(std::move(value), std::move(sinfo)));
}

Expr StringImmNode::make(std::string value) {
  return Expr(std::make_shared<const StringImmNode>(std::move(value), ObjectStructInfoNode::make()));
}

Expr DataTypeImmNode::make(DataType value) {
  return Expr(std::make_shared<const DataTypeImmNode>(value, ObjectStructInfoNode::make()));
}

Expr TupleNode::make(std::vector<Expr> fields) {
  std::vector<StructInfo> field_sinfo;
  field_sinfo.reserve(fields.size());
  bool all_known = true;
  for (const Expr& field : fields) {
    assert(field.defined() && "null tuple field");
    if (!field->struct_info.defined()) {
      all_known = false;
      break;
    }
    field_sinfo.push_back(field->struct_info);
  }
  StructInfo sinfo = all_known ? TupleStructInfoNode::make(std::move(field_sinfo)) : StructInfo();
  return Expr(std::make_shared<const TupleNode>(std::move(fields), std::move(sinfo)));
}

Expr TupleGetItemNode::make(Expr tuple, int index) {
  assert(tuple.defined() && "tuple item of a null expression");
  assert(index >= 0 && "negative tuple index");
  StructInfo sinfo;
  if (const auto* tuple_sinfo = tuple->struct_info.as<TupleStructInfoNode>()) {
    assert(static_cast<size_t>(index) < tuple_sinfo->fields.size() && "tuple index out of range");
    sinfo = tuple_sinfo->fields[index];
  }
  return Expr(std::make_shared<const TupleGetItemNode>(std::move(tuple), index, std::move(sinfo)));
}

Expr CallNode::make(Expr op, std::vector<Expr> args, ir::Attrs attrs, std::vector<StructInfo> sinfo_args) {
  assert(op.defined() && "call of a null callee");
  for ([[maybe_unused]] const Expr& arg : args) assert(arg.defined() && "null call argument");
  for ([[maybe_unused]] const StructInfo& si : sinfo_args) assert(si.defined() && "null struct info argument");
  return Expr(std::make_shared<const CallNode>(std::move(op), std::move(args), std::move(attrs), std::move(sinfo_args),
                                               StructInfo()));
}

Expr SeqExprNode::make(std::vector<BindingBlock> blocks, Expr body) {
  assert(body.defined() && "sequence without a result");
  for (const BindingBlock& block : blocks) {
    for ([[maybe_unused]] const Binding& b : block.bindings) {
      assert(b.var.defined() && b.value.defined() && "binding with a null var or value");
      assert((b.kind != BindingKind::kMatchCast || b.pattern.defined()) && "match_cast without a pattern");
    }
  }
  return Expr(std::make_shared<const SeqExprNode>(std::move(blocks), std::move(body), StructInfo()));
}

Expr IfNode::make(Expr condition, Expr then_branch, Expr else_branch) {
  assert(condition.defined() && then_branch.defined() && else_branch.defined() && "if with a null part");
  return Expr(std::make_shared<const IfNode>(std::move(condition), std::move(then_branch), std::move(else_branch),
                                             StructInfo()));
}

Expr FunctionNode::make(std::vector<Var> params, Expr body, StructInfo ret_struct_info, ir::Attrs attrs,
                        std::shared_ptr<const SourceLocation> return_location) {
  for ([[maybe_unused]] const Var& p : params) assert(p.defined() && "null function parameter");
  assert(body.defined() && "function without a body");
  return Expr(std::make_shared<const FunctionNode>(std::move(params), std::move(body), std::move(ret_struct_info),
                                                   std::move(attrs), std::move(return_location)));
}

}  // namespace strata::graph
