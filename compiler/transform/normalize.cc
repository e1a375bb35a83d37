// Normalize: struct info inference for graph functions (see normalize.h).
//
// Inference rules, by value:
//   call_tir / call_dps_packed       their OUT struct info (call_tir validated)
//   call_packed                      its declared result, else Object
//   shape_of(x)                      Shape[dims of x], or Shape[ndim=rank of x]
//   alloc_tensor(shape, dtype(D))    Tensor[shape, D]
//   a registered operator            its OpDef's inference (compiler/op/)
//   @graph_fn(args)                  the callee's return struct info, with its
//                                    parameters' shape variables replaced by the
//                                    argument dims (shapes using anything else
//                                    are erased to their rank)
//   @prim_func(args..., outs...)     Tuple[] (a destination-passing kernel call)
//   match_cast(v, SI)                SI; plain variables of SI become bound
//   tuples, items, if (the least upper bound of both branches), sequences.
#include "compiler/transform/normalize.h"

#include <map>
#include <memory>
#include <utility>

#include "compiler/analysis/memory_ops.h"
#include "compiler/analysis/struct_info_util.h"
#include "compiler/op/op_registry.h"
#include "compiler/transform/pass.h"

namespace strata::graph {

using analysis::BaseCheck;
using analysis::BindParamSymbols;
using analysis::CheckBaseOf;
using analysis::DimText;
using analysis::StructInfoText;

namespace {

StructInfo ObjectSI() { return ObjectStructInfoNode::make(); }

StructInfo OrObject(const StructInfo& sinfo) { return sinfo.defined() ? sinfo : ObjectSI(); }

// Name of an argument for error messages: the variable's name, or its position.
std::string ArgName(const Expr& arg, size_t index) {
  if (const auto* var = arg.as<VarNode>()) return "argument " + std::to_string(index) + " ('" + var->name + "')";
  return "argument " + std::to_string(index);
}

std::string BufferText(const tir::Buffer& buffer) {
  std::string text = "Buffer[(";
  for (size_t i = 0; i < buffer->shape.size(); ++i) {
    if (i) text += ", ";
    text += analysis::DimText(buffer->shape[i]);
  }
  if (buffer->shape.size() == 1) text += ",";
  return text + "), " + buffer->dtype.ToString() + "]";
}

}  // namespace

// ---------------------------------------------------------------- driver

std::vector<Var> Normalizer::BeginFunction(const std::string& name, const Function& func) {
  function_name_ = name;
  binding_name_.clear();
  binding_location_ = nullptr;
  error_ = Status::Ok();
  defined_symbols_.clear();
  var_remap_.clear();
  names_ = analysis::NameSupply();
  analysis::ReserveNames(*func, &names_);
  emit_target_ = nullptr;
  in_dataflow_ = false;

  std::vector<Var> params;
  params.reserve(func->params.size());
  for (const Var& param : func->params) {
    StructInfo sinfo = param->struct_info.defined() ? analysis::SimplifyStructInfo(param->struct_info) : ObjectSI();
    if (sinfo.same_as(param->struct_info)) {
      params.push_back(param);
    } else {
      Var renewed(param->name, sinfo, param->is_dataflow);
      var_remap_[param.get()] = renewed;
      params.push_back(renewed);
    }
    DefineSymbols(sinfo);
  }
  return params;
}

StatusOr<Function> Normalizer::FinishFunction(const Function& func, std::vector<Var> params, Expr body) {
  if (failed()) return error_;
  binding_name_.clear();
  binding_location_ = nullptr;
  StructInfo body_sinfo = OrObject(body->struct_info);
  StructInfo ret = func->ret_struct_info;
  if (!ret.defined()) {
    ret = body_sinfo;
  } else {
    ret = analysis::SimplifyStructInfo(ret);
    analysis::BaseCheck check = analysis::CheckBaseOf(ret, body_sinfo);
    if (check != analysis::BaseCheck::kPass) {
      binding_location_ = func->return_location;  // the error points at `return`
      Fail("the returned value has struct info " + analysis::StructInfoText(body_sinfo) +
           (check == analysis::BaseCheck::kFail ? ", which contradicts" : ", which does not prove") +
           " the declared return struct info " + analysis::StructInfoText(ret));
    }
  }
  if (failed()) return error_;
  return Function(std::make_shared<const FunctionNode>(std::move(params), std::move(body), std::move(ret), func->attrs,
                                                       func->return_location));
}

StatusOr<Function> Normalizer::NormalizeFunction(const std::string& name, const Function& func) {
  std::vector<Var> params = BeginFunction(name, func);
  Expr body = MutateExpr(func->body);
  return FinishFunction(func, std::move(params), std::move(body));
}

void Normalizer::Fail(const std::string& message) {
  if (failed()) return;
  std::string context = "function '" + function_name_ + "'";
  if (!binding_name_.empty()) context += ", binding '" + binding_name_ + "'";
  error_ = Status::Error(context + ": " + message);
  if (binding_location_) error_ = std::move(error_).WithLocation(*binding_location_);
}

void Normalizer::DefineSymbols(const StructInfo& sinfo) {
  std::vector<tir::Var> vars;
  analysis::CollectDefinableVars(sinfo, &vars);
  for (const tir::Var& v : vars) defined_symbols_.insert(v.get());
}

// ---------------------------------------------------------------- bindings

void Normalizer::MutateBindingBlock(const BindingBlock& block, std::vector<BindingBlock>* out) {
  BindingBlock result;
  result.is_dataflow = block.is_dataflow;
  bool saved_dataflow = in_dataflow_;
  in_dataflow_ = block.is_dataflow;
  for (const Binding& binding : block.bindings) MutateBinding(binding, &result.bindings);
  in_dataflow_ = saved_dataflow;
  if (!result.bindings.empty()) out->push_back(std::move(result));
}

void Normalizer::MutateBinding(const Binding& binding, std::vector<Binding>* out) {
  emit_target_ = out;
  binding_name_ = binding.var->name;
  binding_location_ = binding.location;
  if (failed()) {
    out->push_back(binding);
    return;
  }
  RewriteBinding(binding);
}

void Normalizer::RewriteBinding(const Binding& binding) { EmitBinding(binding, MutateExpr(binding.value)); }

void Normalizer::EmitBinding(const Binding& original, const Expr& value) {
  assert(emit_target_ && "EmitBinding outside of a binding block");
  Binding result;
  result.kind = original.kind;
  result.value = value;
  result.location = original.location;
  StructInfo sinfo = OrObject(value->struct_info);
  if (original.kind == BindingKind::kMatchCast) {
    StructInfo pattern = analysis::SimplifyStructInfo(original.pattern);
    if (analysis::CheckBaseOf(pattern, sinfo) == analysis::BaseCheck::kFail) {
      Fail("match_cast of a value with struct info " + analysis::StructInfoText(sinfo) + " to " +
           analysis::StructInfoText(pattern) + " can never succeed");
    }
    DefineSymbols(pattern);
    result.pattern = pattern;
    sinfo = pattern;
  }
  const StructInfo& annotation = original.var->struct_info;
  if (annotation.defined()) {
    analysis::BaseCheck check = analysis::CheckBaseOf(annotation, sinfo);
    if (check == analysis::BaseCheck::kFail) {
      Fail("annotation " + analysis::StructInfoText(annotation) + " contradicts the inferred struct info " +
           analysis::StructInfoText(sinfo));
    } else if (check == analysis::BaseCheck::kUnprovable) {
      Fail("annotation " + analysis::StructInfoText(annotation) + " is more precise than the inferred struct info " +
           analysis::StructInfoText(sinfo) + "; use match_cast to check it at run time");
    }
  }
  result.var = Var(original.var->name, sinfo, original.var->is_dataflow);
  var_remap_[original.var.get()] = result.var;
  emit_target_->push_back(std::move(result));
}

Var Normalizer::Emit(const std::string& name_hint, const Expr& value) {
  assert(emit_target_ && "Emit outside of a binding block");
  Expr annotated = Annotate(value);
  Var var(FreshName(name_hint), OrObject(annotated->struct_info), in_dataflow_);
  Binding binding;
  binding.var = var;
  binding.value = annotated;
  binding.location = binding_location_;  // made while rewriting that binding
  emit_target_->push_back(std::move(binding));
  return var;
}

// ---------------------------------------------------------------- expressions

Expr Normalizer::MutateVar(const Expr& self, const VarNode* op) {
  auto it = var_remap_.find(op);
  return it == var_remap_.end() ? self : Expr(it->second);
}

Expr Normalizer::MutateShapeExpr(const Expr& self, const ShapeExprNode* op) {
  std::vector<PrimExpr> dims;
  bool changed = false;
  for (const PrimExpr& d : op->values) {
    dims.push_back(analysis::SimplifyDim(d));
    changed |= !dims.back().same_as(d);
  }
  if (!changed && self->struct_info.defined()) return self;
  return ShapeExprNode::make(std::move(dims));
}

Expr Normalizer::MutateTuple(const Expr& self, const TupleNode* op) {
  return Annotate(ExprMutator::MutateTuple(self, op));
}

Expr Normalizer::MutateTupleGetItem(const Expr& self, const TupleGetItemNode* op) {
  return Annotate(ExprMutator::MutateTupleGetItem(self, op));
}

Expr Normalizer::MutateCall(const Expr& self, const CallNode* op) {
  return Annotate(ExprMutator::MutateCall(self, op));
}

Expr Normalizer::MutateIf(const Expr& self, const IfNode* op) {
  Expr condition = MutateExpr(op->condition);
  StructInfo cond_sinfo = OrObject(condition->struct_info);
  const auto* tensor = cond_sinfo.as<TensorStructInfoNode>();
  bool ok = cond_sinfo.as<PrimStructInfoNode>() || cond_sinfo.as<ObjectStructInfoNode>() ||
            (tensor && (tensor->ndim == 0 || tensor->ndim == -1));
  if (!ok) {
    Fail("if condition has struct info " + analysis::StructInfoText(cond_sinfo) +
         "; expected a bool scalar (Prim[bool]) or a 0-d tensor");
  }
  Expr then_branch = MutateBranch(op->then_branch);
  Expr else_branch = MutateBranch(op->else_branch);
  return Annotate(IfNode::make(std::move(condition), std::move(then_branch), std::move(else_branch)));
}

Expr Normalizer::MutateBranch(const Expr& branch) {
  std::set<const tir::VarNode*> saved = defined_symbols_;
  Expr result = MutateExpr(branch);
  if (!result.as<SeqExprNode>()) result = Annotate(SeqExprNode::make({}, result));
  defined_symbols_ = std::move(saved);
  return result;
}

Expr Normalizer::MutateSeqExpr(const Expr& self, const SeqExprNode* op) {
  std::vector<Binding>* saved_target = emit_target_;
  bool saved_dataflow = in_dataflow_;
  std::string saved_binding = binding_name_;
  std::shared_ptr<const SourceLocation> saved_location = binding_location_;

  std::vector<BindingBlock> blocks;
  for (const BindingBlock& block : op->blocks) MutateBindingBlock(block, &blocks);
  // Bindings emitted while rewriting the result go into a trailing block.
  BindingBlock tail;
  in_dataflow_ = false;
  emit_target_ = &tail.bindings;
  binding_name_ = saved_binding;
  binding_location_ = saved_location;
  Expr body = MutateExpr(op->body);
  if (!tail.bindings.empty()) blocks.push_back(std::move(tail));

  emit_target_ = saved_target;
  in_dataflow_ = saved_dataflow;
  binding_name_ = saved_binding;
  binding_location_ = saved_location;
  return Annotate(SeqExprNode::make(std::move(blocks), std::move(body)));
}

Expr Normalizer::MutateFunction(const Expr& self, const FunctionNode* op) {
  Fail("nested functions are not supported; define the function at module level");
  return self;
}

// ---------------------------------------------------------------- inference

Expr Normalizer::Annotate(const Expr& expr) {
  switch (expr->kind) {
    case ExprKind::kVar:
    case ExprKind::kGlobalVar:
    case ExprKind::kExternFunc:
    case ExprKind::kOp:
    case ExprKind::kFunction: return expr;
    case ExprKind::kConstant:
    case ExprKind::kShapeExpr:
    case ExprKind::kPrimValue:
    case ExprKind::kStringImm:
    case ExprKind::kDataTypeImm:
      // make() gives leaves their struct info.
      return expr;
    case ExprKind::kTuple: {
      const auto* op = expr.as<TupleNode>();
      return Expr(std::make_shared<const TupleNode>(op->fields, InferStructInfo(expr)));
    }
    case ExprKind::kTupleGetItem: {
      const auto* op = expr.as<TupleGetItemNode>();
      return Expr(std::make_shared<const TupleGetItemNode>(op->tuple, op->index, InferStructInfo(expr)));
    }
    case ExprKind::kCall: {
      const auto* op = expr.as<CallNode>();
      std::vector<StructInfo> sinfo_args;
      for (const StructInfo& si : op->sinfo_args) sinfo_args.push_back(analysis::SimplifyStructInfo(si));
      auto simplified = std::make_shared<const CallNode>(op->op, op->args, op->attrs, sinfo_args, StructInfo());
      StructInfo sinfo = InferCall(simplified.get());
      return Expr(std::make_shared<const CallNode>(op->op, op->args, op->attrs, std::move(sinfo_args),
                                                   analysis::SimplifyStructInfo(sinfo)));
    }
    case ExprKind::kIf: {
      const auto* op = expr.as<IfNode>();
      return Expr(
          std::make_shared<const IfNode>(op->condition, op->then_branch, op->else_branch, InferStructInfo(expr)));
    }
    case ExprKind::kSeqExpr: {
      const auto* op = expr.as<SeqExprNode>();
      return Expr(std::make_shared<const SeqExprNode>(op->blocks, op->body, InferStructInfo(expr)));
    }
  }
  assert(false && "unknown graph Expr kind");
  return expr;
}

StructInfo Normalizer::InferStructInfo(const Expr& expr) {
  switch (expr->kind) {
    case ExprKind::kTuple: {
      std::vector<StructInfo> fields;
      for (const Expr& f : expr.as<TupleNode>()->fields) fields.push_back(OrObject(f->struct_info));
      return TupleStructInfoNode::make(std::move(fields));
    }
    case ExprKind::kTupleGetItem: {
      const auto* op = expr.as<TupleGetItemNode>();
      StructInfo tuple = OrObject(op->tuple->struct_info);
      if (tuple.as<ObjectStructInfoNode>()) return ObjectSI();
      const auto* fields = tuple.as<TupleStructInfoNode>();
      if (!fields) {
        Fail("item [" + std::to_string(op->index) + "] of a value of struct info " + analysis::StructInfoText(tuple) +
             ", which is not a tuple");
        return ObjectSI();
      }
      if (op->index < 0 || static_cast<size_t>(op->index) >= fields->fields.size()) {
        Fail("tuple index " + std::to_string(op->index) + " out of range for " + analysis::StructInfoText(tuple));
        return ObjectSI();
      }
      return fields->fields[op->index];
    }
    case ExprKind::kCall: return InferCall(expr.as<CallNode>());
    case ExprKind::kIf: {
      // Shapes that use variables bound inside a branch mean nothing after the if.
      const auto* op = expr.as<IfNode>();
      auto defined = [this](const tir::VarNode* v) { return IsSymbolDefined(v); };
      StructInfo then_sinfo = analysis::EraseUndefinedVars(OrObject(op->then_branch->struct_info), defined);
      StructInfo else_sinfo = analysis::EraseUndefinedVars(OrObject(op->else_branch->struct_info), defined);
      return analysis::StructInfoLUB(then_sinfo, else_sinfo);
    }
    case ExprKind::kSeqExpr: return OrObject(expr.as<SeqExprNode>()->body->struct_info);
    default: return OrObject(expr->struct_info);
  }
}

StructInfo Normalizer::InferCall(const CallNode* call) {
  auto declared = [&]() -> StructInfo { return call->sinfo_args.empty() ? ObjectSI() : call->sinfo_args[0]; };
  if (const auto* op = call->op.as<OpNode>()) {
    const std::string& name = op->name;
    if (name == ops::kCallTIR) {
      ValidateCallTIR(call);
      return declared();
    }
    if (name == ops::kCallDPSPacked) {
      if (call->sinfo_args.size() != 1 || call->args.size() != 2 || !analysis::LibraryName(call->args[0])) {
        Fail("call_dps_packed takes (\"name\", (args...), OUT_SI)");
      }
      return declared();
    }
    if (name == ops::kCallPacked) return declared();
    if (name == ops::kShapeOf) {
      if (call->args.size() != 1) {
        Fail("shape_of takes one argument");
        return ShapeStructInfoNode::make_ndim(-1);
      }
      StructInfo arg = OrObject(call->args[0]->struct_info);
      if (const auto* t = arg.as<TensorStructInfoNode>()) {
        return t->shape ? ShapeStructInfoNode::make(*t->shape) : ShapeStructInfoNode::make_ndim(t->ndim);
      }
      if (!arg.as<ObjectStructInfoNode>()) Fail("shape_of of a value of struct info " + analysis::StructInfoText(arg));
      return ShapeStructInfoNode::make_ndim(-1);
    }
    if (name == ops::kKill) {
      if (call->args.size() != 1 || !call->args[0].as<VarNode>()) Fail("kill takes one variable");
      return TupleStructInfoNode::make({});
    }
    if (name == ops::kAllocTensor) {
      const auto* dtype = call->args.size() == 2 ? call->args[1].as<DataTypeImmNode>() : nullptr;
      if (!dtype) {
        Fail("alloc_tensor takes (shape, dtype(D))");
        return TensorStructInfoNode::make_ndim(-1, DataType::Void());
      }
      StructInfo shape = OrObject(call->args[0]->struct_info);
      if (const auto* s = shape.as<ShapeStructInfoNode>()) {
        return s->values ? TensorStructInfoNode::make(*s->values, dtype->value)
                         : TensorStructInfoNode::make_ndim(s->ndim, dtype->value);
      }
      Fail("alloc_tensor shape has struct info " + analysis::StructInfoText(shape) + "; expected a Shape");
      return TensorStructInfoNode::make_ndim(-1, dtype->value);
    }
    if (analysis::IsMemoryOp(name)) {
      StatusOr<StructInfo> inferred = analysis::InferMemoryOp(*call);
      if (!inferred.ok()) Fail(inferred.status().message());
      return inferred.ok() ? *inferred : ObjectSI();
    }
    const op::OpDef* def = op::FindOp(name);
    if (def == nullptr) {
      Fail("unknown operator '" + name + "'");
      return ObjectSI();
    }
    if (Status checked = op::CheckOpCall(*def, *call); !checked.ok()) {
      Fail(checked.message());
      return ObjectSI();
    }
    StatusOr<StructInfo> inferred = def->infer(op::OpCall(*def, *call));
    if (!inferred.ok()) {
      Fail(inferred.status().message());
      return ObjectSI();
    }
    return analysis::SimplifyStructInfo(*inferred);
  }
  if (call->op.as<ExternFuncNode>()) return declared();
  if (const auto* gv = call->op.as<GlobalVarNode>()) {
    const ir::BaseFunc* callee = module_->Lookup(gv->name);
    if (!callee) {
      Fail("call to @" + gv->name + ", which is not a function of the module");
      return ObjectSI();
    }
    if (const auto* graph_fn = std::get_if<Function>(callee)) return InferGraphCall(gv->name, **graph_fn, call);
    return InferKernelCall(gv->name, *std::get<tir::PrimFunc>(*callee), call);
  }
  if (call->op.as<VarNode>()) return declared();
  Fail("a call's callee must be an operator, a function or a library function");
  return ObjectSI();
}

StructInfo Normalizer::InferGraphCall(const std::string& callee_name, const FunctionNode& callee,
                                      const CallNode* call) {
  if (call->args.size() != callee.params.size()) {
    Fail("@" + callee_name + " takes " + std::to_string(callee.params.size()) + " argument(s), " +
         std::to_string(call->args.size()) + " given");
    return ObjectSI();
  }
  std::map<const tir::VarNode*, PrimExpr> subst;
  for (size_t i = 0; i < call->args.size(); ++i) {
    BindParamSymbols(callee.params[i]->struct_info, call->args[i]->struct_info, &subst);
  }
  auto lookup = [&](const tir::VarNode* v) -> PrimExpr {
    auto it = subst.find(v);
    return it == subst.end() ? PrimExpr() : it->second;
  };
  for (size_t i = 0; i < call->args.size(); ++i) {
    StructInfo param = analysis::SubstituteStructInfo(OrObject(callee.params[i]->struct_info), lookup);
    StructInfo arg = OrObject(call->args[i]->struct_info);
    if (analysis::CheckBaseOf(param, arg) == analysis::BaseCheck::kFail) {
      Fail(ArgName(call->args[i], i) + " of @" + callee_name + " has struct info " + analysis::StructInfoText(arg) +
           ", incompatible with parameter '" + callee.params[i]->name + "': " + analysis::StructInfoText(param));
    }
  }
  StructInfo ret = analysis::SubstituteStructInfo(OrObject(callee.ret_struct_info), lookup);
  return analysis::EraseUndefinedVars(ret, [this](const tir::VarNode* v) { return IsSymbolDefined(v); });
}

StructInfo Normalizer::InferKernelCall(const std::string& callee_name, const tir::PrimFuncNode& callee,
                                       const CallNode* call) {
  // Destination passing: tensors, outputs, then optionally the tir_vars as one shape.
  size_t values = call->args.size();
  if (values != callee.params.size() && !call->args.empty()) {
    const auto* shape = OrObject(call->args.back()->struct_info).as<ShapeStructInfoNode>();
    if (shape && shape->ndim >= 0) values = call->args.size() - 1 + static_cast<size_t>(shape->ndim);
  }
  if (values != callee.params.size()) {
    Fail("tensor program @" + callee_name + " takes " + std::to_string(callee.params.size()) +
         " parameter(s), the call passes " + std::to_string(values));
  }
  return TupleStructInfoNode::make({});
}

void Normalizer::ValidateCallTIR(const CallNode* call) {
  if (call->args.size() < 2 || call->args.size() > 3 || call->sinfo_args.size() != 1) {
    Fail("call_tir takes (@prim_func, (args...), OUT_SI[, shape(tir_vars...)])");
    return;
  }
  const auto* gv = call->args[0].as<GlobalVarNode>();
  if (!gv) {
    Fail("the callee of call_tir must be a tensor program @name");
    return;
  }
  const ir::BaseFunc* target = module_->Lookup(gv->name);
  if (!target) {
    Fail("call_tir of @" + gv->name + ", which is not a function of the module");
    return;
  }
  const auto* prim = std::get_if<tir::PrimFunc>(target);
  if (!prim) {
    Fail("call_tir of @" + gv->name + ", which is a graph function; call it directly: @" + gv->name + "(...)");
    return;
  }
  const tir::PrimFuncNode& func = **prim;
  const std::string callee = "call_tir(@" + gv->name + ")";

  std::vector<Expr> args;
  if (!analysis::CallArguments(call, &args)) {
    Fail(callee + ": the arguments must be a tuple (a, b, ...), not a tuple-typed value");
    return;
  }
  std::vector<StructInfo> outputs;
  const StructInfo& out = call->sinfo_args[0];
  if (out.as<TensorStructInfoNode>()) {
    outputs.push_back(out);
  } else if (const auto* tuple = out.as<TupleStructInfoNode>()) {
    outputs = tuple->fields;
  }
  for (const StructInfo& o : outputs) {
    if (!o.as<TensorStructInfoNode>()) outputs.clear();
  }
  if (outputs.empty()) {
    Fail(callee + ": the output struct info " + analysis::StructInfoText(out) +
         " must be a Tensor or a Tuple of Tensors");
    return;
  }
  size_t num_tir_vars = 0;
  if (call->args.size() == 3) {
    const auto* shape = OrObject(call->args[2]->struct_info).as<ShapeStructInfoNode>();
    if (!shape || shape->ndim < 0) {
      Fail(callee + ": tir_vars must be a shape(...) of known length");
      return;
    }
    num_tir_vars = static_cast<size_t>(shape->ndim);
  }
  size_t total = args.size() + outputs.size() + num_tir_vars;
  if (total != func.params.size()) {
    Fail(callee + " passes " + std::to_string(args.size()) + " tensor argument(s) + " + std::to_string(outputs.size()) +
         " output(s) + " + std::to_string(num_tir_vars) + " tir_var(s) = " + std::to_string(total) +
         " value(s), but @" + gv->name + " takes " + std::to_string(func.params.size()) + " parameter(s)");
    return;
  }
  for (size_t i = 0; i < args.size() + outputs.size(); ++i) {
    const tir::PrimFuncParam& param = func.params[i];
    bool is_output = i >= args.size();
    std::string what = is_output ? "output " + std::to_string(i - args.size()) : ArgName(args[i], i);
    if (!param.is_buffer()) {
      Fail(callee + ": " + what + " is a tensor but parameter '" + param.name() + "' of @" + gv->name + " is a scalar");
      return;
    }
    StructInfo sinfo = is_output ? outputs[i - args.size()] : OrObject(args[i]->struct_info);
    if (sinfo.as<ObjectStructInfoNode>()) continue;
    const auto* tensor = sinfo.as<TensorStructInfoNode>();
    if (!tensor) {
      Fail(callee + ": " + what + " has struct info " + analysis::StructInfoText(sinfo) + ", not a tensor");
      return;
    }
    const tir::Buffer& buffer = param.buffer;
    if (tensor->ndim >= 0 && static_cast<size_t>(tensor->ndim) != buffer->shape.size()) {
      Fail(callee + ": " + what + " has struct info " + analysis::StructInfoText(sinfo) + " (rank " +
           std::to_string(tensor->ndim) + ") but parameter '" + param.name() + "' is " + BufferText(buffer) +
           " (rank " + std::to_string(buffer->shape.size()) + ")");
      return;
    }
    if (!tensor->dtype.is_void() && tensor->dtype != buffer->dtype) {
      Fail(callee + ": " + what + " has struct info " + analysis::StructInfoText(sinfo) + " but parameter '" +
           param.name() + "' is " + BufferText(buffer) + " (dtype " + buffer->dtype.ToString() + ")");
      return;
    }
  }
  for (size_t i = args.size() + outputs.size(); i < func.params.size(); ++i) {
    if (func.params[i].is_buffer()) {
      Fail(callee + ": tir_var " + std::to_string(i - args.size() - outputs.size()) + " is passed to parameter '" +
           func.params[i].name() + "' of @" + gv->name + ", which is a buffer");
      return;
    }
  }
}

}  // namespace strata::graph

namespace strata::transform {

Status RewriteGraphFunctions(graph::Normalizer& mutator, ir::IRModule* module) {
  std::vector<std::string> names;
  for (const auto& [name, func] : module->functions()) {
    if (std::holds_alternative<graph::Function>(func)) names.push_back(name);
  }
  for (const std::string& name : names) {
    graph::Function func = module->GetGraphFunction(name);  // a copy: the module is updated below
    mutator.PrepareFunction(name, func);
    STRATA_ASSIGN_OR_RETURN(graph::Function rewritten, mutator.NormalizeFunction(name, func));
    module->Add(name, std::move(rewritten));
  }
  return Status::Ok();
}

StatusOr<bool> RewriteChangedGraphFunctions(ir::IRModule* module, const FunctionRewrite& rewrite) {
  std::vector<std::string> names;
  for (const auto& [name, func] : module->functions()) {
    if (std::holds_alternative<graph::Function>(func)) names.push_back(name);
  }
  bool changed = false;
  for (const std::string& name : names) {
    graph::Function func = module->GetGraphFunction(name);  // a copy: the module is updated below
    STRATA_ASSIGN_OR_RETURN(std::optional<graph::Function> rewritten, rewrite(name, func));
    if (!rewritten) continue;
    module->Add(name, std::move(*rewritten));
    changed = true;
  }
  return changed;
}

StatusOr<ir::IRModule> Normalize(ir::IRModule module) {
  graph::Normalizer normalizer(&module);
  STRATA_RETURN_IF_ERROR(RewriteGraphFunctions(normalizer, &module));
  return module;
}

STRATA_REGISTER_PASS(Normalize, Normalize)

}  // namespace strata::transform
