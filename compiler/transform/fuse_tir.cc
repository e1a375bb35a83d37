// FuseTIR: primitive functions -> fused tensor programs; see fuse_tir.h.
#include "compiler/transform/fuse_tir.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compiler/analysis/graph_util.h"
#include "compiler/analysis/struct_info_util.h"
#include "compiler/ir/structural_equal.h"
#include "compiler/ir/tir_visitor.h"
#include "compiler/op/kernel_builder.h"
#include "compiler/op/op_registry.h"
#include "compiler/transform/normalize.h"
#include "compiler/transform/outline.h"
#include "compiler/transform/pass.h"
#include "compiler/transform/tir_inline.h"

namespace strata::transform {

using namespace graph;  // NOLINT: a graph-level pass

namespace {

using tir::Buffer;
using tir::Stmt;

// A member kernel's body in the fused kernel's buffers and variables, with
// fresh loop, let and local-buffer names so that two instances of one kernel
// never share a variable.
class Instantiator : public tir::StmtMutator {
 public:
  Instantiator(std::map<const tir::VarNode*, PrimExpr> vars, std::map<const tir::BufferNode*, Buffer> buffers)
      : vars_(std::move(vars)), buffers_(std::move(buffers)) {}

 protected:
  PrimExpr MutateVar(const PrimExpr& self, const tir::VarNode* op) override {
    auto it = vars_.find(op);
    return it == vars_.end() ? self : it->second;
  }
  Stmt MutateFor(const Stmt& self, const tir::ForNode* op) override {
    PrimExpr min = MutateExpr(op->min), extent = MutateExpr(op->extent);
    tir::Var fresh(op->loop_var.name(), op->loop_var->dtype);
    vars_[op->loop_var.get()] = fresh;
    Stmt body = MutateStmt(op->body);
    vars_.erase(op->loop_var.get());
    return tir::ForNode::make(fresh, std::move(min), std::move(extent), op->for_kind, std::move(body));
  }
  Stmt MutateLetStmt(const Stmt& self, const tir::LetStmtNode* op) override {
    PrimExpr value = MutateExpr(op->value);
    tir::Var fresh(op->var.name(), op->var->dtype);
    vars_[op->var.get()] = fresh;
    Stmt body = MutateStmt(op->body);
    vars_.erase(op->var.get());
    return tir::LetStmtNode::make(fresh, std::move(value), std::move(body));
  }
  Stmt MutateAllocate(const Stmt& self, const tir::AllocateNode* op) override {
    std::vector<PrimExpr> shape;
    for (const PrimExpr& dim : op->buffer->shape) shape.push_back(MutateExpr(dim));
    Buffer local = tir::MakeBuffer(op->buffer->name, op->buffer->dtype, std::move(shape));
    buffers_[op->buffer.get()] = local;
    Stmt body = MutateStmt(op->body);
    return tir::AllocateNode::make(local, std::move(body));
  }
  Buffer MutateBuffer(const Buffer& buffer) override {
    auto it = buffers_.find(buffer.get());
    return it == buffers_.end() ? buffer : it->second;
  }

 private:
  std::map<const tir::VarNode*, PrimExpr> vars_;
  std::map<const tir::BufferNode*, Buffer> buffers_;
};

// One member of the group inside the fused kernel.
struct Member {
  std::string op_name;
  op::OpPattern pattern = op::OpPattern::kOpaque;
  Buffer out;  // what its body writes (changes when an epilogue is inlined)
  Stmt body;   // without its leading checks
  bool removed = false;
};

struct FusedKernel {
  tir::PrimFunc kernel;
  std::vector<PrimExpr> tir_vars;  // in the primitive function's variables
};

std::optional<op::OpPattern> KernelPattern(const tir::PrimFunc& kernel) {
  auto it = kernel->attrs.find("op_pattern");
  const auto* name = it == kernel->attrs.end() ? nullptr : std::get_if<std::string>(&it->second);
  return name ? op::ParseOpPattern(*name) : std::nullopt;
}

bool IsLight(op::OpPattern p) {
  return p == op::OpPattern::kElementwise || p == op::OpPattern::kBroadcast || p == op::OpPattern::kInjective;
}

class GroupFuser {
 public:
  GroupFuser(const ir::IRModule& module, std::string name, const Function& func)
      : module_(module), name_(std::move(name)), func_(func), builder_(name_) {}

  StatusOr<FusedKernel> Run() {
    const auto* body = func_->body.as<SeqExprNode>();
    if (body == nullptr || body->blocks.size() != 1) return Error("its body is not one block");
    for (const Var& param : func_->params) {
      if (param->struct_info.as<ShapeStructInfoNode>() != nullptr) continue;  // shape_vars: scalars below
      STRATA_ASSIGN_OR_RETURN(
          Buffer buffer, builder_.Input(param, "in" + std::to_string(buffer_of_.size()), "parameter " + param->name));
      buffer_of_[param.get()] = buffer;
    }
    const auto* result = body->body.as<VarNode>();
    if (result == nullptr) return Error("it does not return one variable");
    const std::vector<Binding>& bindings = body->blocks[0].bindings;
    for (const Binding& binding : bindings) {
      if (binding.var.get() != result) continue;
      STRATA_ASSIGN_OR_RETURN(Buffer out, builder_.Output(binding.var->struct_info, "out"));
      buffer_of_[binding.var.get()] = out;
    }
    for (const Binding& binding : bindings) {
      if (buffer_of_.count(binding.var.get()) != 0) continue;
      const auto* t = binding.var->struct_info.as<TensorStructInfoNode>();
      if (t == nullptr || !t->shape) return Error("intermediate " + binding.var->name + " has no known shape");
      std::vector<PrimExpr> shape;
      for (const PrimExpr& dim : *t->shape) shape.push_back(builder_.Dim(dim));
      Buffer local =
          op::KernelBuilder::Local("tmp" + std::to_string(intermediates_.size()), t->dtype, std::move(shape));
      buffer_of_[binding.var.get()] = local;
      intermediates_.push_back(local);
    }
    // The run-time checks name the fused operator, not this group's function:
    // groups that fuse the same kernels then make identical kernels, emitted
    // once (BERT's 12 attention transposes were 12 copies of one kernel).
    fused_op_ = "fused";
    for (const Binding& binding : bindings) fused_op_ += "_" + MemberOpName(binding);
    for (const Binding& binding : bindings) STRATA_RETURN_IF_ERROR(AddMember(binding));

    InlineLightMembers();
    InlineEpilogues();

    std::vector<Stmt> stmts = checks_;
    std::vector<Stmt> bodies;
    for (const Member& m : members_) {
      if (!m.removed) bodies.push_back(m.body);
    }
    Stmt nest = tir::SeqStmtNode::make(std::move(bodies));
    for (const Buffer& local : intermediates_) {
      if (LoadsBuffer(nest, local) || Stores(nest, local)) nest = tir::AllocateNode::make(local, nest);
    }
    stmts.push_back(nest);

    // Attributes name what was fused, not where (identical groups share a kernel).
    FusedKernel fused;
    std::string ops;
    for (const Member& m : members_) ops += (ops.empty() ? "" : ",") + m.op_name;
    fused.kernel = builder_.Finish(tir::SeqStmtNode::make(std::move(stmts)),
                                   {{"op", fused_op_}, {"fused_ops", ops}, {"op_pattern", std::string("opaque")}});
    fused.tir_vars = builder_.tir_var_args();
    return fused;
  }

 private:
  Status Error(const std::string& what) const {
    return ErrorStatus() << "FuseTIR: cannot fuse " << name_ << ": " << what;
  }

  static bool Stores(const Stmt& stmt, const Buffer& buffer) {
    class Finder : public tir::StmtVisitor {
     public:
      explicit Finder(const Buffer& b) : b_(b) {}
      bool found = false;

     protected:
      void VisitBufferStore(const tir::BufferStoreNode* op) override {
        found = found || op->buffer == b_;
        tir::StmtVisitor::VisitBufferStore(op);
      }

     private:
      const Buffer& b_;
    } finder(buffer);
    finder.VisitStmt(stmt);
    return finder.found;
  }

  // The operator a member binding's kernel implements (its "op" attribute),
  // or its callee's name.
  std::string MemberOpName(const Binding& binding) const {
    const auto* call = binding.value.as<CallNode>();
    const auto* callee = call != nullptr && !call->args.empty() ? call->args[0].as<GlobalVarNode>() : nullptr;
    if (callee == nullptr) return "?";
    tir::PrimFunc kernel = module_.GetPrimFunc(callee->name);
    if (kernel == nullptr) return callee->name;
    auto op_attr = kernel->attrs.find("op");
    const auto* op_name = op_attr == kernel->attrs.end() ? nullptr : std::get_if<std::string>(&op_attr->second);
    return op_name ? *op_name : callee->name;
  }

  Status AddMember(const Binding& binding) {
    const auto* call = binding.value.as<CallNode>();
    const auto* op = call ? call->op.as<OpNode>() : nullptr;
    if (op == nullptr || op->name != ops::kCallTIR || call->args.size() < 2) {
      return Error(binding.var->name + " is not a call_tir");
    }
    const auto* callee = call->args[0].as<GlobalVarNode>();
    const auto* inputs = call->args[1].as<TupleNode>();
    tir::PrimFunc kernel = callee ? module_.GetPrimFunc(callee->name) : nullptr;
    if (kernel == nullptr || inputs == nullptr) return Error(binding.var->name + " does not call a tensor program");
    std::vector<Expr> tir_var_args;
    if (call->args.size() > 2) {
      const auto* shape = call->args[2].as<ShapeExprNode>();
      if (shape == nullptr) return Error(binding.var->name + ": tir_vars are not a shape");
      for (const PrimExpr& v : shape->values) tir_var_args.push_back(ShapeExprNode::make({v}));
    }

    std::vector<std::pair<Buffer, Buffer>> buffers;  // member parameter -> fused buffer
    std::vector<std::pair<tir::Var, PrimExpr>> scalars;
    size_t next_input = 0, next_scalar = 0;
    for (const tir::PrimFuncParam& param : kernel->params) {
      if (!param.is_buffer()) {
        if (next_scalar >= tir_var_args.size()) return Error(callee->name + ": missing tir_vars");
        const PrimExpr& value = call->args[2].as<ShapeExprNode>()->values[next_scalar++];
        scalars.emplace_back(param.scalar, builder_.Dim(value));
        continue;
      }
      const VarNode* arg = nullptr;
      if (next_input < inputs->fields.size()) {
        arg = inputs->fields[next_input++].as<VarNode>();
        if (arg == nullptr) return Error(binding.var->name + ": an argument is not a variable");
      } else {
        arg = binding.var.get();
      }
      auto it = buffer_of_.find(arg);
      if (it == buffer_of_.end()) return Error(binding.var->name + ": unknown argument " + arg->name);
      buffers.emplace_back(param.buffer, it->second);
    }

    // Member variables -> fused expressions: plain dimensions bind, the rest
    // are checked (at run time unless provably equal).
    // The member's output and the group's intermediates bind first: their shapes
    // are the graph's own (h // 2), while a fused parameter may carry a fresh
    // dimension (s0) that is only checked equal to it. Member loops then span the
    // same expressions as the buffers they write, so nests match and epilogues
    // inline across members.
    std::map<const tir::VarNode*, PrimExpr> vars;
    for (const auto& [var, value] : scalars) vars[var.get()] = value;
    const Buffer& member_out = buffer_of_.at(binding.var.get());
    for (bool graph_shaped : {true, false}) {
      for (const auto& [mine, fused] : buffers) {
        if ((fused == member_out || IsIntermediate(fused)) != graph_shaped) continue;
        if (mine->shape.size() != fused->shape.size() || mine->dtype != fused->dtype) {
          return Error(callee->name + ": buffer " + mine->name + " does not match its argument");
        }
        for (size_t d = 0; d < mine->shape.size(); ++d) {
          const auto* v = mine->shape[d].as<tir::VarNode>();
          if (v != nullptr && vars.count(v) == 0) vars[v] = fused->shape[d];
        }
      }
    }
    auto substitute = [&](const PrimExpr& e) {
      return tir::Substitute(e, [&](const tir::VarNode* v) -> PrimExpr {
        auto it = vars.find(v);
        return it == vars.end() ? PrimExpr() : it->second;
      });
    };
    for (const auto& [mine, fused] : buffers) {
      for (size_t d = 0; d < mine->shape.size(); ++d) {
        PrimExpr expected = analysis::SimplifyDim(substitute(mine->shape[d]));
        if (analysis::ProveDimEqual(expected, fused->shape[d])) continue;
        checks_.push_back(tir::AssertStmtNode::make(
            tir::BinaryOpNode::make(tir::PrimExprKind::kEQ, fused->shape[d], expected),
            fused_op_ + ": dimension " + std::to_string(d) + " of " + fused->name + " must be " +
                analysis::DimText(expected) + " (kernel " + callee->name + ")"));
      }
    }

    std::map<const tir::BufferNode*, Buffer> buffer_map;
    for (const auto& [mine, fused] : buffers) buffer_map[mine.get()] = fused;
    Instantiator instantiate(vars, buffer_map);
    Stmt instance = instantiate.MutateStmt(kernel->body);
    Member member;
    member.op_name = MemberOpName(binding);
    member.pattern = KernelPattern(kernel).value_or(op::OpPattern::kOpaque);
    member.out = buffer_of_.at(binding.var.get());
    SplitLeadingChecks(instance, &checks_, &member.body);
    members_.push_back(std::move(member));
    return Status::Ok();
  }

  bool IsIntermediate(const Buffer& buffer) const {
    for (const Buffer& b : intermediates_) {
      if (b == buffer) return true;
    }
    return false;
  }

  // 1. Light elementwise nests, computed at each load (last member first, so
  // a chain folds into its final consumer).
  void InlineLightMembers() {
    for (size_t i = members_.size(); i-- > 0;) {
      Member& m = members_[i];
      if (m.removed || !IsLight(m.pattern) || !IsIntermediate(m.out)) continue;
      std::optional<ElementwiseNest> nest = MatchElementwiseNest(m.body, m.out);
      if (!nest) continue;
      bool heavy_reader = false;
      for (const Member& other : members_) {
        if (&other != &m && !other.removed && LoadsBuffer(other.body, m.out)) {
          heavy_reader = heavy_reader || other.pattern == op::OpPattern::kOutputFusable;
        }
      }
      if (heavy_reader) continue;
      for (Member& other : members_) {
        if (&other != &m && !other.removed && LoadsBuffer(other.body, m.out))
          other.body = InlineLoads(other.body, *nest);
      }
      m.removed = true;
    }
  }

  // 2. Epilogues at final stores (first member first, so they stack).
  void InlineEpilogues() {
    for (Member& host : members_) {
      if (host.removed) continue;
      while (IsIntermediate(host.out) && !LoadsBuffer(host.body, host.out)) {
        Member* reader = nullptr;
        int readers = 0;
        for (Member& other : members_) {
          if (&other != &host && !other.removed && LoadsBuffer(other.body, host.out)) {
            reader = &other;
            ++readers;
          }
        }
        if (readers != 1 || !IsLight(reader->pattern)) break;
        std::optional<ElementwiseNest> nest = MatchElementwiseNest(reader->body, reader->out);
        if (!nest || !SameShape(host.out, reader->out) || !LoadsOnlyAt(nest->value, host.out, nest->position)) break;
        host.body = InlineIntoStores(host.body, host.out, *nest);
        host.out = reader->out;
        reader->removed = true;
      }
    }
  }

  static bool SameShape(const Buffer& a, const Buffer& b) {
    if (a->shape.size() != b->shape.size() || a->dtype != b->dtype) return false;
    for (size_t d = 0; d < a->shape.size(); ++d) {
      if (!analysis::ProveDimEqual(a->shape[d], b->shape[d])) return false;
    }
    return true;
  }

  const ir::IRModule& module_;
  std::string name_;
  std::string fused_op_;  // "fused_" and the members' operators
  Function func_;
  op::KernelBuilder builder_;
  std::map<const VarNode*, Buffer> buffer_of_;
  std::vector<Buffer> intermediates_;
  std::vector<Stmt> checks_;
  std::vector<Member> members_;
};

// Calls of primitive functions -> call_tir of their fused kernels.
class CallRewriter : public Normalizer {
 public:
  struct Target {
    Function function;
    std::string kernel;
    std::vector<PrimExpr> tir_vars;  // in the primitive function's variables
  };
  CallRewriter(const ir::IRModule* module, const std::map<std::string, Target>& targets)
      : Normalizer(module), targets_(targets) {}

 protected:
  void RewriteBinding(const Binding& binding) override {
    const auto* call = binding.value.as<CallNode>();
    const auto* callee = call ? call->op.as<GlobalVarNode>() : nullptr;
    auto it = callee ? targets_.find(callee->name) : targets_.end();
    if (it == targets_.end()) return Normalizer::RewriteBinding(binding);
    // The primitive function is gone (its kernel took its name): only the
    // arguments are normalized, and the call keeps its inferred result.
    const Function& func = it->second.function;
    std::map<const tir::VarNode*, PrimExpr> subst;
    std::vector<Expr> tensors;
    for (size_t i = 0; i < func->params.size() && i < call->args.size(); ++i) {
      Expr arg = MutateExpr(call->args[i]);
      if (failed()) return;
      analysis::BindParamSymbols(func->params[i]->struct_info, arg->struct_info, &subst);
      if (func->params[i]->struct_info.as<ShapeStructInfoNode>() == nullptr) tensors.push_back(arg);
    }
    std::vector<Expr> args = {GlobalVarNode::make(it->second.kernel), TupleNode::make(std::move(tensors))};
    if (!it->second.tir_vars.empty()) {
      std::vector<PrimExpr> values;
      for (const PrimExpr& v : it->second.tir_vars) {
        values.push_back(analysis::SimplifyDim(tir::Substitute(v, [&](const tir::VarNode* var) -> PrimExpr {
          auto found = subst.find(var);
          return found == subst.end() ? PrimExpr() : found->second;
        })));
      }
      args.push_back(ShapeExprNode::make(std::move(values)));
    }
    Expr call_tir = CallNode::make(OpNode::Get(ops::kCallTIR), std::move(args), {}, {call->struct_info});
    EmitBinding(binding, MutateExpr(call_tir));
  }

 private:
  const std::map<std::string, Target>& targets_;
};

// Names of the functions `expr` calls or passes (call_tir's kernel).
class GlobalRefCollector : public ExprVisitor {
 public:
  std::set<std::string> names;

 protected:
  void VisitGlobalVar(const GlobalVarNode* op) override { names.insert(op->name); }
};

}  // namespace

StatusOr<ir::IRModule> FuseTIR(ir::IRModule module) {
  std::vector<std::string> primitives;
  std::set<std::string> member_kernels;
  for (const auto& [name, func] : module.functions()) {
    const auto* graph_func = std::get_if<Function>(&func);
    if (graph_func == nullptr || (*graph_func)->attrs.count(kPrimitiveAttr) == 0) continue;
    primitives.push_back(name);
    GlobalRefCollector refs;
    refs.VisitExpr((*graph_func)->body);
    member_kernels.insert(refs.names.begin(), refs.names.end());
  }
  if (primitives.empty()) return module;

  // Fused kernels take their primitive function's name; identical ones are
  // emitted once, under the first name.
  std::map<std::string, CallRewriter::Target> targets;
  std::vector<std::pair<std::string, tir::PrimFunc>> emitted;
  for (const std::string& name : primitives) {
    Function func = module.GetGraphFunction(name);
    GroupFuser fuser(module, name, func);
    STRATA_ASSIGN_OR_RETURN(FusedKernel fused, fuser.Run());
    std::string kernel_name;
    for (const auto& [existing_name, existing] : emitted) {
      if (kernel_name.empty() && ir::StructuralEqual(existing, fused.kernel)) kernel_name = existing_name;
    }
    if (kernel_name.empty()) {
      kernel_name = name;
      emitted.emplace_back(name, fused.kernel);
    }
    targets[name] = CallRewriter::Target{func, kernel_name, fused.tir_vars};
  }
  for (const std::string& name : primitives) module.Remove(name);
  for (const auto& [kernel_name, kernel] : emitted) module.Add(kernel_name, kernel);

  CallRewriter rewriter(&module, targets);
  STRATA_RETURN_IF_ERROR(RewriteGraphFunctions(rewriter, &module));

  // Member kernels nothing calls any more.
  GlobalRefCollector refs;
  for (const auto& [name, func] : module.functions()) {
    if (const auto* graph_func = std::get_if<Function>(&func)) refs.VisitExpr((*graph_func)->body);
  }
  for (const std::string& kernel : member_kernels) {
    if (refs.names.count(kernel) == 0 && module.GetPrimFunc(kernel) != nullptr) module.Remove(kernel);
  }
  return module;
}

STRATA_REGISTER_PASS(FuseTIR, FuseTIR)

}  // namespace strata::transform
