// FoldBatchNorm: batch_norm after a convolution folded into its weights and bias (see fold_batch_norm.h).
#include "compiler/transform/fold_batch_norm.h"

#include <cstring>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compiler/analysis/graph_util.h"
#include "compiler/op/op_registry.h"
#include "compiler/transform/normalize.h"
#include "compiler/transform/pass.h"

namespace strata::transform {
namespace {

using namespace graph;  // NOLINT: a graph-level pass

const CallNode* AsOpCall(const Expr& e, const char* name) {
  const auto* call = e.defined() ? e.as<CallNode>() : nullptr;
  const auto* op = call ? call->op.as<OpNode>() : nullptr;
  return op != nullptr && op->name == name ? call : nullptr;
}

const TensorStructInfoNode* TensorInfo(const Expr& e) {
  return e->struct_info.defined() ? e->struct_info.as<TensorStructInfoNode>() : nullptr;
}

// An int attribute, or `fallback` when it is not written.
int64_t IntAttr(const CallNode* call, const char* name, int64_t fallback) {
  auto it = call->attrs.find(name);
  if (it == call->attrs.end()) return fallback;
  const auto* v = std::get_if<int64_t>(&it->second);
  return v ? *v : -1000;  // not an int: never a valid axis
}

double EpsilonAttr(const CallNode* bn) {
  auto it = bn->attrs.find("epsilon");
  if (it == bn->attrs.end()) return 1e-5;
  if (const auto* d = std::get_if<double>(&it->second)) return *d;
  if (const auto* i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
  return 1e-5;
}

// A 0-d constant of `dtype` (f32 or f64) holding `value`.
Expr ScalarConstant(DataType dtype, double value) {
  auto t = std::make_shared<HostTensor>();
  t->dtype = dtype;
  t->bytes.resize(static_cast<size_t>(dtype.bytes()));
  if (dtype.bits() == 32) {
    const float f = static_cast<float>(value);
    std::memcpy(t->bytes.data(), &f, sizeof(f));
  } else {
    std::memcpy(t->bytes.data(), &value, sizeof(value));
  }
  return ConstantNode::make(std::move(t));
}

Expr Call(const char* op, std::vector<Expr> args, ir::Attrs attrs = {}) {
  return CallNode::make(OpNode::Get(op), std::move(args), std::move(attrs));
}

// One batch_norm to fold and the chain that feeds it.
struct Fold {
  const CallNode* bn = nullptr;
  const CallNode* conv = nullptr;
  const CallNode* squeeze = nullptr;  // the 1-D form: squeeze(conv2d(...), axis=[2])
  Expr bias;                          // the conv bias, when there is a bias_add
  int64_t out_channels = 0;
};

// Finds the foldable batch_norms of one function (top-level blocks).
class FoldFinder {
 public:
  void Analyze(const FunctionNode& func) {
    const auto* seq = func.body.as<SeqExprNode>();
    if (seq == nullptr) return;
    for (const VarNode* v : analysis::VarsUsedIn(func.body)) ++uses_[v];
    for (const BindingBlock& block : seq->blocks) {
      std::map<const VarNode*, Expr> defs;  // values bound in this block
      for (const Binding& b : block.bindings) {
        if (b.kind != BindingKind::kVarBinding) continue;
        if (ConstantValued(b.value)) constant_.insert(b.var.get());
        defs[b.var.get()] = b.value;
        Match(b, defs);
      }
    }
  }

  std::map<const VarNode*, Fold> folds;  // by the batch_norm's variable
  std::set<const VarNode*> removed;      // the chains' intermediates

 private:
  // Known at compile time: a constant, or an operator call on such values alone.
  bool ConstantValued(const Expr& e) const {
    switch (e->kind) {
      case ExprKind::kConstant:
      case ExprKind::kPrimValue:
      case ExprKind::kStringImm:
      case ExprKind::kDataTypeImm: return true;
      case ExprKind::kVar: return constant_.count(e.as<VarNode>()) != 0;
      case ExprKind::kShapeExpr:
        for (const PrimExpr& d : e.as<ShapeExprNode>()->values) {
          if (tir::AsConstInt(d) == nullptr) return false;
        }
        return true;
      case ExprKind::kTuple:
        for (const Expr& f : e.as<TupleNode>()->fields) {
          if (!ConstantValued(f)) return false;
        }
        return true;
      case ExprKind::kCall: {
        const auto* call = e.as<CallNode>();
        const auto* op = call->op.as<OpNode>();
        const op::OpDef* def = op ? op::FindOp(op->name) : nullptr;
        if (def == nullptr || !def->legalize) return false;
        for (const Expr& a : call->args) {
          if (!ConstantValued(a)) return false;
        }
        return true;
      }
      default: return false;
    }
  }

  // The operator call `name` bound in this block to `e`, a variable with no
  // other user; appends the variable to `chain`.
  const CallNode* SoleUser(const Expr& e, const char* name, const std::map<const VarNode*, Expr>& defs,
                           std::vector<const VarNode*>* chain) const {
    const auto* v = e.as<VarNode>();
    if (v == nullptr) return nullptr;
    auto use = uses_.find(v);
    auto def = defs.find(v);
    if (use == uses_.end() || use->second != 1 || def == defs.end()) return nullptr;
    const CallNode* call = AsOpCall(def->second, name);
    if (call != nullptr) chain->push_back(v);
    return call;
  }

  void Match(const Binding& binding, const std::map<const VarNode*, Expr>& defs) {
    Fold fold;
    fold.bn = AsOpCall(binding.value, "batch_norm");
    if (fold.bn == nullptr || fold.bn->args.size() != 5) return;
    const TensorStructInfoNode* y = TensorInfo(fold.bn->args[0]);
    if (y == nullptr || (y->ndim != 3 && y->ndim != 4)) return;
    if (!(y->dtype == DataType::F32() || y->dtype == DataType::F64())) return;
    const int64_t axis = IntAttr(fold.bn, "axis", 1);
    if (axis != 1 && axis != 1 - y->ndim) return;
    for (size_t i = 1; i < 5; ++i) {
      if (!ConstantValued(fold.bn->args[i])) return;
    }
    std::vector<const VarNode*> chain;
    Expr cur = fold.bn->args[0];
    if (const CallNode* bias_add = SoleUser(cur, "bias_add", defs, &chain)) {
      const int64_t bias_axis = IntAttr(bias_add, "axis", 1);
      if ((bias_axis != 1 && bias_axis != 1 - y->ndim) || !ConstantValued(bias_add->args[1])) return;
      fold.bias = bias_add->args[1];
      cur = bias_add->args[0];
    }
    if (y->ndim == 3) {
      fold.squeeze = SoleUser(cur, "squeeze", defs, &chain);
      if (fold.squeeze == nullptr) return;
      auto it = fold.squeeze->attrs.find("axis");
      const auto* axes = it == fold.squeeze->attrs.end() ? nullptr : std::get_if<std::vector<int64_t>>(&it->second);
      if (axes == nullptr || *axes != std::vector<int64_t>{2}) return;
      cur = fold.squeeze->args[0];
    }
    fold.conv = SoleUser(cur, "conv2d", defs, &chain);
    if (fold.conv == nullptr || !ConstantValued(fold.conv->args[1])) return;
    const TensorStructInfoNode* w = TensorInfo(fold.conv->args[1]);
    const TensorStructInfoNode* c = TensorInfo(cur);
    if (w == nullptr || !w->shape || w->shape->size() != 4 || w->dtype != y->dtype) return;
    if (c == nullptr || c->ndim != 4) return;
    const int64_t* out_channels = tir::AsConstInt((*w->shape)[0]);
    if (out_channels == nullptr) return;
    fold.out_channels = *out_channels;
    removed.insert(chain.begin(), chain.end());
    folds[binding.var.get()] = fold;
  }

  std::map<const VarNode*, int> uses_;
  std::set<const VarNode*> constant_;
};

class BatchNormFolder : public Normalizer {
 public:
  BatchNormFolder(const ir::IRModule* module, const FoldFinder& finder)
      : Normalizer(module), folds_(finder.folds), removed_(finder.removed) {}

 protected:
  void RewriteBinding(const Binding& binding) override {
    if (removed_.count(binding.var.get())) return;  // its one user, the batch_norm, is rewritten below
    auto it = folds_.find(binding.var.get());
    if (it == folds_.end()) return Normalizer::RewriteBinding(binding);
    const Fold& f = it->second;
    auto arg = [&](const Expr& e) { return MutateExpr(e); };
    const std::string& name = binding.var->name;
    const DataType dtype = TensorInfo(f.bn->args[0])->dtype;
    const Expr gamma = arg(f.bn->args[1]), beta = arg(f.bn->args[2]), mean = arg(f.bn->args[3]),
               var = arg(f.bn->args[4]);
    // scale = gamma / sqrt(var + eps), one value per output channel.
    Var shifted = Emit(name + "_var_eps", Call("add", {var, ScalarConstant(dtype, EpsilonAttr(f.bn))}));
    Var stddev = Emit(name + "_std", Call("sqrt", {shifted}));
    Var scale = Emit(name + "_scale", Call("divide", {gamma, stddev}));
    const PrimExpr one = tir::IntImm(DataType::I64(), 1);
    Var column = Emit(
        name + "_scale_oihw",
        Call("reshape", {scale, ShapeExprNode::make({tir::IntImm(DataType::I64(), f.out_channels), one, one, one})}));
    Var weight = Emit(name + "_weight", Call("multiply", {arg(f.conv->args[1]), column}));
    Var out = Emit(name + "_conv", Call("conv2d", {arg(f.conv->args[0]), weight}, f.conv->attrs));
    if (f.squeeze != nullptr) out = Emit(name + "_conv1d", Call("squeeze", {out}, f.squeeze->attrs));
    // bias = (B - mean) * scale + beta, or beta - mean * scale without B.
    Var bias;
    if (f.bias.defined()) {
      Var centered = Emit(name + "_bias_centered", Call("subtract", {arg(f.bias), mean}));
      Var scaled = Emit(name + "_bias_scaled", Call("multiply", {centered, scale}));
      bias = Emit(name + "_bias", Call("add", {scaled, beta}));
    } else {
      Var scaled = Emit(name + "_mean_scaled", Call("multiply", {mean, scale}));
      bias = Emit(name + "_bias", Call("subtract", {beta, scaled}));
    }
    EmitBinding(binding, Annotate(Call("bias_add", {out, bias}, {{"axis", int64_t{1}}})));
  }

 private:
  std::map<const VarNode*, Fold> folds_;
  std::set<const VarNode*> removed_;
};

}  // namespace

StatusOr<ir::IRModule> FoldBatchNorm(ir::IRModule module) {
  std::vector<std::string> names;
  for (const auto& [name, func] : module.functions()) {
    if (std::holds_alternative<Function>(func)) names.push_back(name);
  }
  for (const std::string& name : names) {
    Function func = module.GetGraphFunction(name);
    FoldFinder finder;
    finder.Analyze(*func);
    if (finder.folds.empty()) continue;  // unchanged functions keep their handles
    BatchNormFolder folder(&module, finder);
    STRATA_ASSIGN_OR_RETURN(Function rewritten, folder.NormalizeFunction(name, func));
    module.Add(name, std::move(rewritten));
  }
  return module;
}

STRATA_REGISTER_PASS(FoldBatchNorm, FoldBatchNorm)

}  // namespace strata::transform
