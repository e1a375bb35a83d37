// VMShapeLower: symbolic shapes -> shape heap, match_shape and make_shape
// builtins, and generated shape functions (see vm_shape_lower.h).
//
// Matching a value against a pattern of dims runs in rounds, as composite dims
// can need variables the same match binds (x: Tensor[(n, n * 2)]):
//   0. composite dims whose variables are all bound already are computed;
//   1. each match stores first occurrences (code 1) and asserts constants
//      (code 0) and bound values (code 2); a match that still has an uncomputed
//      composite dim stores it into a scratch slot when it binds something,
//      and is otherwise postponed;
//   2. the remaining composites are computed and the postponed matches run
//      again with every dim asserted.
#include "compiler/backend/vm/vm_shape_lower.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "abi/builtin_names.h"
#include "compiler/analysis/graph_util.h"
#include "compiler/analysis/struct_info_util.h"
#include "compiler/ir/graph_visitor.h"
#include "compiler/ir/tir.h"
#include "compiler/ir/tir_visitor.h"
#include "compiler/transform/normalize.h"
#include "compiler/transform/pass.h"

namespace strata::backend {

namespace builtin = vm::builtin;

using namespace graph;  // NOLINT: a graph-level pass

namespace {

// match_shape / make_shape codes (docs/vm_builtins.md).
constexpr int64_t kAssertImm = 0;
constexpr int64_t kStore = 1;  // match_shape: store; make_shape: load
constexpr int64_t kAssertLoad = 2;

StructInfo VoidSI() { return TupleStructInfoNode::make({}); }

// The variable x of shape_of(x) or call_packed(builtin::kShapeOf, x), or nullptr.
const VarNode* ShapeOfArgument(const CallNode* call) {
  if (analysis::IsOpCall(call, ops::kShapeOf)) return call->args.size() == 1 ? call->args[0].as<VarNode>() : nullptr;
  analysis::PackedCall packed;
  if (!analysis::MatchCallPacked(call, &packed) || packed.name != builtin::kShapeOf || packed.args.size() != 1)
    return nullptr;
  return packed.args[0].as<VarNode>();
}

bool IsComposite(const PrimExpr& dim) { return !dim.as<tir::IntImmNode>() && !dim.as<tir::VarNode>(); }

// True when `func` already starts with the shape heap this pass creates.
bool AlreadyLowered(const FunctionNode& func) {
  const auto* seq = func.body.as<SeqExprNode>();
  if (!seq || seq->blocks.empty() || seq->blocks[0].bindings.empty()) return false;
  const Binding& first = seq->blocks[0].bindings[0];
  analysis::PackedCall packed;
  if (first.var->name.rfind("shape_heap", 0) != 0) return false;
  if (!analysis::MatchCallPacked(first.value.as<CallNode>(), &packed)) return false;
  return packed.name == builtin::kAllocShapeHeap || packed.name == builtin::kNull;
}

// Original binding values by variable, to tell what a match_cast matches.
class DefinitionCollector : public ExprVisitor {
 public:
  std::map<const VarNode*, Expr> definitions;

 protected:
  void VisitBinding(const Binding& binding) override {
    definitions[binding.var.get()] = binding.value;
    ExprVisitor::VisitBinding(binding);
  }
};

class ShapeLowerMutator : public Normalizer {
 public:
  explicit ShapeLowerMutator(ir::IRModule* module) : Normalizer(module), mod_(module) {}

  StatusOr<Function> Lower(const std::string& name, const Function& func) {
    if (AlreadyLowered(*func)) return func;
    state_ = ScopeState();
    var_slot_.clear();
    num_slots_ = 0;
    scratch_slot_ = -1;
    shape_funcs_.clear();
    params_.clear();
    DefinitionCollector collector;
    collector.VisitExpr(func->body);
    definitions_ = std::move(collector.definitions);
    for (const Var& p : func->params) params_.insert(p.get());

    std::vector<Var> params = BeginFunction(name, func);
    heap_ = Var(FreshName("shape_heap"), ObjectStructInfoNode::make(), false);

    BindingBlock prologue;
    std::vector<Binding>* saved = SetEmitTarget(&prologue.bindings);
    std::vector<Todo> todos;
    for (const Var& param : params) {
      std::string ctx = function_name() + ": parameter '" + param->name + "'";
      EmitChecks(param, param->struct_info, param->struct_info, ctx, /*always=*/true, &todos);
    }
    RunMatches(todos);
    SetEmitTarget(saved);

    Expr body = MutateExpr(func->body);
    if (failed()) return FinishFunction(func, std::move(params), body);

    // The heap size is known only now.
    Binding heap;
    heap.var = heap_;
    heap.value =
        Annotate(num_slots_ > 0 ? analysis::MakeCallPacked(builtin::kAllocShapeHeap, {analysis::Int64Value(num_slots_)})
                                : analysis::MakeCallPacked(builtin::kNull, {}));
    prologue.bindings.insert(prologue.bindings.begin(), std::move(heap));
    const auto* seq = body.as<SeqExprNode>();
    std::vector<BindingBlock> blocks = {std::move(prologue)};
    blocks.insert(blocks.end(), seq->blocks.begin(), seq->blocks.end());
    Expr new_body = Annotate(SeqExprNode::make(std::move(blocks), seq->body));
    for (const ShapeFunc& sf : shape_funcs_) mod_->Add(sf.name, BuildShapeFunc(sf));
    return FinishFunction(func, std::move(params), std::move(new_body));
  }

 protected:
  void RewriteBinding(const Binding& binding) override {
    if (binding.kind != BindingKind::kMatchCast) return Normalizer::RewriteBinding(binding);
    Expr value = MutateExpr(binding.value);
    if (failed()) return;
    if (!value.as<VarNode>()) value = Emit(binding.var->name + "_value", value);
    StructInfo pattern = analysis::SimplifyStructInfo(binding.pattern);
    StructInfo value_sinfo = value->struct_info;
    if (analysis::CheckBaseOf(pattern, value_sinfo) != analysis::BaseCheck::kPass) {
      std::vector<Todo> todos;
      EmitChecks(value, pattern, value_sinfo, function_name() + ": " + Subject(binding), /*always=*/false, &todos);
      RunMatches(todos);
    }
    EmitBinding(binding, value);
  }

  Expr MutateShapeExpr(const Expr& self, const ShapeExprNode* op) override {
    Expr normalized = Normalizer::MutateShapeExpr(self, op);
    const auto& dims = normalized.as<ShapeExprNode>()->values;
    bool constant = true;
    std::string key;
    for (const PrimExpr& d : dims) {
      constant &= d.as<tir::IntImmNode>() != nullptr;
      key += analysis::DimText(d) + ";";
    }
    if (constant) return normalized;
    auto it = state_.shapes.find(key);
    if (it != state_.shapes.end()) return it->second;

    std::vector<PrimExpr> composites;
    for (const PrimExpr& d : dims) {
      if (!RequireBound(d, "shape(...)")) return normalized;
      if (IsComposite(d)) composites.push_back(d);
    }
    EmitCompute(composites);
    std::vector<Expr> args = {heap_, analysis::Int64Value(static_cast<int64_t>(dims.size()))};
    for (const PrimExpr& d : dims) {
      if (const int64_t* c = tir::AsConstInt(d)) {
        args.push_back(analysis::Int64Value(kAssertImm));
        args.push_back(analysis::Int64Value(*c));
      } else {
        args.push_back(analysis::Int64Value(kStore));
        args.push_back(analysis::Int64Value(SlotOf(d)));
      }
    }
    Var shape =
        Emit("shape", analysis::MakeCallPacked(builtin::kMakeShape, std::move(args), ShapeStructInfoNode::make(dims)));
    state_.shapes[key] = shape;
    return shape;
  }

  // A symbolic integer or bool scalar (prim(n + 1), prim(h == 224 && w == 224))
  // is computed into the shape heap like a composite dimension and read back
  // as an Int (a bool as 0 or 1, what an if takes).
  Expr MutatePrimValue(const Expr& self, const PrimValueNode* op) override {
    if (op->value.as<tir::IntImmNode>() || op->value.as<tir::FloatImmNode>()) return self;
    const DataType dtype = op->value.dtype();
    if (dtype != DataType::I64() && !dtype.is_bool()) {
      Fail("symbolic scalar prim(" + analysis::DimText(op->value) + ") of type " + dtype.ToString() +
           " cannot be lowered: the shape heap holds i64 values (use an i64 or bool expression)");
      return self;
    }
    if (!RequireBound(op->value, "prim(" + analysis::DimText(op->value) + ")")) return self;
    const PrimExpr value = dtype.is_bool() ? tir::CastNode::make(DataType::I64(), op->value) : op->value;
    if (IsComposite(value)) EmitCompute({value});
    return Emit("scalar", analysis::MakeCallPacked(builtin::kHeapScalar, {heap_, analysis::Int64Value(SlotOf(value))},
                                                   PrimStructInfoNode::make(dtype)));
  }

  Expr MutateCall(const Expr& self, const CallNode* op) override {
    if (analysis::IsOpCall(op, ops::kCallTIR) || analysis::IsOpCall(op, ops::kCallDPSPacked)) {
      Fail(op->op.as<OpNode>()->name + " must be rewritten by CallTIRRewrite before VMShapeLower");
      return self;
    }
    return Normalizer::MutateCall(self, op);
  }

  // Values computed in a branch exist only on that path.
  Expr MutateBranch(const Expr& branch) override {
    ScopeState saved = state_;
    Expr result = Normalizer::MutateBranch(branch);
    state_ = std::move(saved);
    return result;
  }

  // Shapes made in a dataflow block are dataflow variables: not reusable after it.
  void MutateBindingBlock(const BindingBlock& block, std::vector<BindingBlock>* out) override {
    if (!block.is_dataflow) return Normalizer::MutateBindingBlock(block, out);
    std::map<std::string, Var> saved = state_.shapes;
    Normalizer::MutateBindingBlock(block, out);
    state_.shapes = std::move(saved);
  }

 private:
  struct Todo {
    Expr value;
    std::vector<PrimExpr> dims;
    std::string ctx;
  };
  struct ScopeState {
    std::set<const tir::VarNode*> bound;  // variables stored in the heap
    std::map<std::string, int> computed;  // composite expression -> slot
    std::map<std::string, Var> shapes;    // made shapes, by their dims
  };
  struct ShapeFunc {
    std::string name;
    std::vector<std::pair<int64_t, PrimExpr>> stores;  // heap slot, expression
  };

  // "parameter 'x'" when `binding` matches a parameter or its shape, else "binding 'y'".
  std::string Subject(const Binding& binding) const {
    Expr value = binding.value;
    for (int hops = 0; hops < 2; ++hops) {
      const auto* var = value.as<VarNode>();
      if (var && params_.count(var)) return "parameter '" + var->name + "'";
      if (const auto* call = value.as<CallNode>()) {
        const VarNode* arg = ShapeOfArgument(call);
        if (arg && params_.count(arg)) return "parameter '" + arg->name + "'";
        break;
      }
      if (!var) break;
      auto it = definitions_.find(var);
      if (it == definitions_.end()) break;
      value = it->second;
    }
    return "binding '" + binding.var->name + "'";
  }

  int64_t SlotOf(const PrimExpr& dim) {
    if (const auto* var = dim.as<tir::VarNode>()) {
      auto it = var_slot_.find(var);
      if (it != var_slot_.end()) return it->second;
      return var_slot_[var] = num_slots_++;
    }
    auto it = state_.computed.find(analysis::DimText(dim));
    assert(it != state_.computed.end() && "composite dimension used before it was computed");
    return it->second;
  }

  bool IsComputed(const PrimExpr& dim) const {
    if (dim.as<tir::IntImmNode>()) return true;
    if (const auto* var = dim.as<tir::VarNode>()) return state_.bound.count(var) != 0;
    return state_.computed.count(analysis::DimText(dim)) != 0;
  }

  bool AllVarsBound(const PrimExpr& dim) const {
    std::vector<tir::Var> vars;
    analysis::CollectVars(dim, &vars);
    for (const tir::Var& v : vars) {
      if (!state_.bound.count(v.get())) return false;
    }
    return true;
  }

  // Fails naming the first unbound variable of `dim`.
  bool RequireBound(const PrimExpr& dim, const std::string& where) {
    std::vector<tir::Var> vars;
    analysis::CollectVars(dim, &vars);
    for (const tir::Var& v : vars) {
      if (state_.bound.count(v.get())) continue;
      Fail("symbolic variable '" + v.name() + "' in " + where + " is not bound at this point");
      return false;
    }
    return true;
  }

  Expr Check(const char* builtin, std::vector<Expr> args) {
    return Emit("_", analysis::MakeCallPacked(builtin, std::move(args), VoidSI()));
  }

  // Emits the rank/dtype/kind checks of `value` against `pattern` (skipped when
  // `value_sinfo` proves them, unless `always`) and queues its shape matches.
  void EmitChecks(const Expr& value, const StructInfo& pattern, const StructInfo& value_sinfo, const std::string& ctx,
                  bool always, std::vector<Todo>* todos) {
    if (!pattern.defined()) return;
    auto needs = [&](const StructInfo& base) {
      return always || analysis::CheckBaseOf(base, value_sinfo) != analysis::BaseCheck::kPass;
    };
    if (const auto* prim = pattern.as<PrimStructInfoNode>()) {
      if (needs(pattern)) {
        Check(builtin::kCheckPrimInfo, {value, DataTypeImmNode::make(prim->dtype), StringImmNode::make(ctx)});
      }
      return;
    }
    if (const auto* shape = pattern.as<ShapeStructInfoNode>()) {
      if (needs(ShapeStructInfoNode::make_ndim(shape->ndim))) {
        Check(builtin::kCheckShapeInfo, {value, analysis::Int64Value(shape->ndim), StringImmNode::make(ctx)});
      }
      if (shape->values) todos->push_back({value, *shape->values, ctx});
      return;
    }
    if (const auto* tensor = pattern.as<TensorStructInfoNode>()) {
      if (needs(TensorStructInfoNode::make_ndim(tensor->ndim, tensor->dtype))) {
        Check(builtin::kCheckTensorInfo, {value, analysis::Int64Value(tensor->ndim),
                                          DataTypeImmNode::make(tensor->dtype), StringImmNode::make(ctx)});
      }
      if (tensor->shape) todos->push_back({value, *tensor->shape, ctx});
      return;
    }
    if (const auto* tuple = pattern.as<TupleStructInfoNode>()) {
      const auto* value_tuple = value_sinfo.defined() ? value_sinfo.as<TupleStructInfoNode>() : nullptr;
      if (always || !value_tuple || value_tuple->fields.size() != tuple->fields.size()) {
        Check(builtin::kCheckTupleInfo,
              {value, analysis::Int64Value(static_cast<int64_t>(tuple->fields.size())), StringImmNode::make(ctx)});
      }
      for (size_t i = 0; i < tuple->fields.size(); ++i) {
        const StructInfo& field = tuple->fields[i];
        if (field.as<ObjectStructInfoNode>()) continue;
        Var item = Emit("item", TupleGetItemNode::make(value, static_cast<int>(i)));
        StructInfo item_sinfo =
            value_tuple && i < value_tuple->fields.size() ? value_tuple->fields[i] : ObjectStructInfoNode::make();
        EmitChecks(item, field, item_sinfo, ctx + " field " + std::to_string(i), always, todos);
      }
    }
  }

  void RunMatches(const std::vector<Todo>& todos) {
    // Round 0: composites computable from variables bound before this point.
    std::vector<PrimExpr> ready;
    for (const Todo& todo : todos) {
      for (const PrimExpr& d : todo.dims) {
        if (IsComposite(d) && !IsComputed(d) && AllVarsBound(d)) ready.push_back(d);
      }
    }
    EmitCompute(ready);

    // Round 1.
    std::vector<const Todo*> postponed;
    for (const Todo& todo : todos) {
      bool stores = false;
      bool pending = false;
      std::set<const tir::VarNode*> stored_here;
      for (const PrimExpr& d : todo.dims) {
        const auto* var = d.as<tir::VarNode>();
        if (var && !state_.bound.count(var)) stores = stored_here.insert(var).second || stores;
        if (IsComposite(d) && !IsComputed(d)) pending = true;
      }
      if (pending) postponed.push_back(&todo);
      if (pending && !stores) continue;
      EmitMatch(todo, /*final_round=*/false);
    }
    if (postponed.empty() || failed()) return;

    // Round 2.
    ready.clear();
    for (const Todo* todo : postponed) {
      for (const PrimExpr& d : todo->dims) {
        if (!IsComposite(d) || IsComputed(d)) continue;
        if (!RequireBound(d, todo->ctx + " (" + analysis::DimText(d) + ")")) return;
        ready.push_back(d);
      }
    }
    EmitCompute(ready);
    for (const Todo* todo : postponed) EmitMatch(*todo, /*final_round=*/true);
  }

  void EmitMatch(const Todo& todo, bool final_round) {
    std::vector<Expr> args = {todo.value, heap_, analysis::Int64Value(static_cast<int64_t>(todo.dims.size()))};
    std::vector<const tir::VarNode*> stored;
    for (const PrimExpr& d : todo.dims) {
      int64_t code;
      int64_t value;
      if (const int64_t* c = tir::AsConstInt(d)) {
        code = kAssertImm;
        value = *c;
      } else if (const auto* var = d.as<tir::VarNode>()) {
        bool bound = state_.bound.count(var) || std::find(stored.begin(), stored.end(), var) != stored.end();
        assert((bound || !final_round) && "variable unbound in the final match round");
        code = bound ? kAssertLoad : kStore;
        value = SlotOf(d);
        if (!bound) stored.push_back(var);
      } else if (IsComputed(d)) {
        code = kAssertLoad;
        value = SlotOf(d);
      } else {
        // Checked in round 2; the dimension is parked in a slot nobody reads.
        assert(!final_round && "composite uncomputed in the final match round");
        if (scratch_slot_ < 0) scratch_slot_ = num_slots_++;
        code = kStore;
        value = scratch_slot_;
      }
      args.push_back(analysis::Int64Value(code));
      args.push_back(analysis::Int64Value(value));
      args.push_back(StringImmNode::make(analysis::DimText(d)));
    }
    args.push_back(StringImmNode::make(todo.ctx + " (match_shape)"));
    Check(builtin::kMatchShape, std::move(args));
    for (const tir::VarNode* var : stored) state_.bound.insert(var);
  }

  // Computes `exprs` (composites whose variables are bound) into new heap slots
  // with one generated shape function.
  void EmitCompute(const std::vector<PrimExpr>& exprs) {
    ShapeFunc func;
    for (const PrimExpr& e : exprs) {
      std::string key = analysis::DimText(e);
      if (state_.computed.count(key)) continue;
      int64_t slot = num_slots_++;
      state_.computed[key] = static_cast<int>(slot);
      func.stores.emplace_back(slot, e);
    }
    if (func.stores.empty()) return;
    func.name = FreshFunctionName("shape_func_" + function_name() + "_");
    // A placeholder until the heap size is known, so the call can be normalized.
    mod_->Add(func.name, BuildShapeFunc(func));
    Emit("_", CallNode::make(GlobalVarNode::make(func.name), {heap_}));
    shape_funcs_.push_back(std::move(func));
  }

  std::string FreshFunctionName(const std::string& prefix) {
    for (int i = 0;; ++i) {
      std::string name = prefix + std::to_string(i);
      if (!mod_->Contains(name)) return name;
    }
  }

  tir::PrimFunc BuildShapeFunc(const ShapeFunc& func) {
    tir::Buffer heap = tir::MakeBuffer("H", DataType::I64(), {tir::IntImm(DataType::I64(), num_slots_)});
    auto load = [&](const tir::VarNode* var) -> PrimExpr {
      auto it = var_slot_.find(var);
      assert(it != var_slot_.end() && "shape function reads a variable without a heap slot");
      return tir::BufferLoadNode::make(heap, {tir::IntImm(DataType::I64(), it->second)});
    };
    std::vector<tir::Stmt> stores;
    for (const auto& [slot, expr] : func.stores) {
      stores.push_back(
          tir::BufferStoreNode::make(heap, {tir::IntImm(DataType::I64(), slot)}, tir::Substitute(expr, load)));
    }
    tir::PrimFuncParam param;
    param.buffer = heap;
    return tir::MakePrimFunc({param}, tir::SeqStmtNode::make(std::move(stores)));
  }

  ir::IRModule* mod_;
  Var heap_;
  ScopeState state_;
  std::map<const tir::VarNode*, int64_t> var_slot_;
  int64_t num_slots_ = 0;
  int64_t scratch_slot_ = -1;
  std::vector<ShapeFunc> shape_funcs_;
  std::map<const VarNode*, Expr> definitions_;
  std::set<const VarNode*> params_;
};

}  // namespace

StatusOr<ir::IRModule> VMShapeLower(ir::IRModule module) {
  ShapeLowerMutator mutator(&module);
  // Shape functions are appended while lowering; only the graph functions that
  // were there at the start are lowered.
  size_t count = module.functions().size();
  for (size_t i = 0; i < count; ++i) {
    const auto* entry = std::get_if<Function>(&module.functions()[i].second);
    if (!entry) continue;
    Function func = *entry;  // a copy: the module grows below
    std::string name = module.functions()[i].first;
    STRATA_ASSIGN_OR_RETURN(Function lowered, mutator.Lower(name, func));
    module.Add(name, std::move(lowered));
  }
  return module;
}

STRATA_REGISTER_PASS(VMShapeLower, VMShapeLower)

}  // namespace strata::backend
