// ConvertToNchwc: convolutional regions in the blocked layout (see convert_to_nchwc.h).
#include "compiler/transform/convert_to_nchwc.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compiler/analysis/graph_util.h"
#include "compiler/ir/arith/simplify.h"
#include "compiler/ir/graph_visitor.h"
#include "compiler/op/op_registry.h"
#include "compiler/transform/dead_code_elimination.h"
#include "compiler/transform/normalize.h"
#include "compiler/transform/pass.h"

namespace strata::transform {

NchwcOptions NchwcOptionsFor(const TargetFacts& target) {
  NchwcOptions options;
  options.max_block = std::max(4, target.vector_bits / 32);
  options.max_lanes = 2 * options.max_block;
  return options;
}

int64_t NchwcBlock(int64_t channels, int64_t max_block) {
  int64_t block = 1;
  while (block * 2 <= max_block && channels % (block * 2) == 0) block *= 2;
  return block;
}

int64_t NchwcLanes(int64_t out_channels, int64_t out_block, const NchwcOptions& options) {
  const int64_t blocks = out_channels / out_block;
  const int64_t vector = options.max_block;
  // Whole vectors first: the largest tile of full registers within max_lanes.
  int64_t best = 0;
  for (int64_t d = 1; d <= blocks && d * out_block <= options.max_lanes; ++d) {
    if (blocks % d == 0 && d * out_block % vector == 0) best = d * out_block;
  }
  if (best > 0) return best;
  // Otherwise the tile whose registers are fullest, up to kMaxPartialTileVectors
  // registers: 72 channels in blocks of 8 take 72 lanes (4.5 of 5 vectors)
  // rather than 24 (1.5 of 2), measured 1.3x faster at 56x56 on AVX-512.
  double best_use = 0;
  for (int64_t d = 1; d <= blocks && d * out_block <= kMaxPartialTileVectors * vector; ++d) {
    if (blocks % d != 0) continue;
    const int64_t lanes = d * out_block;
    const double use = static_cast<double>(lanes) / static_cast<double>((lanes + vector - 1) / vector * vector);
    if (use > best_use) best = lanes, best_use = use;
  }
  return std::max(best, out_block);
}

namespace {

using namespace graph;  // NOLINT: a graph-level pass

// The smallest block a convolution's output may have to be worth converting.
constexpr int64_t kMinOutputBlock = 4;

const TensorStructInfoNode* TensorInfo(const Expr& e) {
  return e->struct_info.defined() ? e->struct_info.as<TensorStructInfoNode>() : nullptr;
}

// The channels (dimension 1) of a 4-D tensor value when they are a constant.
std::optional<int64_t> ConstantChannels(const Expr& e) {
  const TensorStructInfoNode* t = TensorInfo(e);
  if (t == nullptr || !t->shape || t->shape->size() != 4) return std::nullopt;
  return arith::AsConstant((*t->shape)[1]);
}

std::shared_ptr<HostTensor> NewF32(std::vector<int64_t> shape) {
  auto t = std::make_shared<HostTensor>();
  t->dtype = DataType::F32();
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  t->shape = std::move(shape);
  t->bytes.assign(static_cast<size_t>(count) * sizeof(float), 0);
  return t;
}

const float* F32Data(const HostTensor& t) { return reinterpret_cast<const float*>(t.bytes.data()); }

// OIHW -> [O / lanes, I / ib, KH, KW, ib, lanes].
Expr PackConvWeight(const HostTensor& w, int64_t ib, int64_t lanes) {
  const int64_t o_n = w.shape[0], i_n = w.shape[1], kh_n = w.shape[2], kw_n = w.shape[3];
  auto packed = NewF32({o_n / lanes, i_n / ib, kh_n, kw_n, ib, lanes});
  const float* src = F32Data(w);
  auto* dst = reinterpret_cast<float*>(packed->bytes.data());
  for (int64_t o = 0; o < o_n; ++o) {
    for (int64_t i = 0; i < i_n; ++i) {
      for (int64_t kh = 0; kh < kh_n; ++kh) {
        for (int64_t kw = 0; kw < kw_n; ++kw) {
          const int64_t to = ((((o / lanes * (i_n / ib) + i / ib) * kh_n + kh) * kw_n + kw) * ib + i % ib) * lanes;
          dst[to + o % lanes] = src[((o * i_n + i) * kh_n + kh) * kw_n + kw];
        }
      }
    }
  }
  return ConstantNode::make(std::move(packed));
}

// [a, C, h, w] -> [a, C / b, h, w, b].
Expr BlockConstant(const HostTensor& t, int64_t block) {
  const int64_t a = t.shape[0], c = t.shape[1], h = t.shape[2], w = t.shape[3];
  auto out = NewF32({a, c / block, h, w, block});
  const float* src = F32Data(t);
  auto* dst = reinterpret_cast<float*>(out->bytes.data());
  for (int64_t n = 0; n < a; ++n) {
    for (int64_t ch = 0; ch < c; ++ch) {
      for (int64_t y = 0; y < h * w; ++y) {
        dst[((n * (c / block) + ch / block) * h * w + y) * block + ch % block] = src[(n * c + ch) * h * w + y];
      }
    }
  }
  return ConstantNode::make(std::move(out));
}

// The same elements under another shape.
Expr Reshaped(const HostTensor& t, std::vector<int64_t> shape) {
  auto out = std::make_shared<HostTensor>(t);
  out->shape = std::move(shape);
  return ConstantNode::make(std::move(out));
}

// For each var, whether some use is outside the binding block that defines it
// (a later block, the function's result, a branch of an if): such a value
// must exist in the plain layout at the end of its block.
class EscapingVars : public ExprVisitor {
 public:
  std::set<const VarNode*> Find(const Function& func) {
    VisitExpr(func->body);
    std::set<const VarNode*> escaping;
    for (const auto& [var, blocks] : use_blocks_) {
      auto def = def_block_.find(var);
      if (def == def_block_.end()) continue;  // a parameter
      for (int b : blocks) {
        if (b != def->second) escaping.insert(var);
      }
    }
    return escaping;
  }

 protected:
  void VisitVar(const VarNode* op) override { use_blocks_[op].insert(current_); }
  void VisitSeqExpr(const SeqExprNode* op) override {
    const int saved = current_;
    for (const BindingBlock& block : op->blocks) {
      current_ = next_++;
      for (const Binding& binding : block.bindings) {
        def_block_[binding.var.get()] = current_;
        VisitBinding(binding);
      }
    }
    current_ = next_++;
    VisitExpr(op->body);
    current_ = saved;
  }
  void VisitFunction(const FunctionNode* op) override {}  // a nested function has its own scope

 private:
  int current_ = -1, next_ = 0;
  std::map<const VarNode*, int> def_block_;
  std::map<const VarNode*, std::set<int>> use_blocks_;
};

class NchwcConverter : public Normalizer {
 public:
  NchwcConverter(const ir::IRModule* module, const NchwcOptions& options, const std::set<std::string>& except)
      : Normalizer(module), options_(options), except_(except) {}
  bool changed() const { return changed_; }

  StatusOr<Function> Convert(const std::string& name, const Function& func) {
    escaping_ = EscapingVars().Find(func);
    FindPhaseConvolutions(func);
    return NormalizeFunction(name, func);
  }

 protected:
  // A use of a value that so far exists only blocked: its plain form first.
  Expr MutateVar(const Expr& self, const VarNode* op) override {
    auto pending = pending_.find(op);
    if (pending != pending_.end()) {
      Binding original = pending->second;
      pending_.erase(pending);
      EmitBinding(original, Annotate(Call("from_nchwc", {blocked_.at(op).var}, {})));
    }
    return Normalizer::MutateVar(self, op);
  }

  void RewriteBinding(const Binding& binding) override {
    const auto* call = binding.value.as<CallNode>();
    const auto* op = call ? call->op.as<OpNode>() : nullptr;
    constants_.Record(binding);
    if (op != nullptr && binding.kind == BindingKind::kVarBinding && !except_.count(op->name)) {
      if (std::optional<Expr> plain = ReduceImageToChannels(binding, *call, op->name)) {
        changed_ = true;
        EmitBinding(binding, *plain);
        return;
      }
      std::optional<Blocked> result = Convert(binding, *call, op->name);
      if (failed()) return;
      if (result) {
        changed_ = true;
        blocked_[binding.var.get()] = *result;
        pending_[binding.var.get()] = binding;
        // Needed plain beyond this block: made now, while the blocked value is in scope.
        if (escaping_.count(binding.var.get())) MutateVar(binding.var, binding.var.get());
        return;
      }
    }
    Normalizer::RewriteBinding(binding);
  }

 private:
  struct Blocked {
    Expr var;  // the 5-D value
    int64_t block;
  };

  Expr Call(const std::string& op, std::vector<Expr> args, ir::Attrs attrs) {
    return CallNode::make(OpNode::Get(op), std::move(args), std::move(attrs));
  }
  Blocked EmitBlocked(const Binding& binding, const std::string& op, std::vector<Expr> args, ir::Attrs attrs,
                      int64_t block) {
    return {Emit(binding.var->name + "_nchwc", Call(op, std::move(args), std::move(attrs))), block};
  }

  // The constant an argument denotes (inline, or a variable bound to one).
  const HostTensor* ConstantOf(const Expr& e) const { return constants_.Of(e); }
  const Blocked* BlockedOf(const Expr& e) const {
    const auto* v = e.as<VarNode>();
    auto it = v ? blocked_.find(v) : blocked_.end();
    return it == blocked_.end() ? nullptr : &it->second;
  }

  // The blocked form of a plain 4-D f32 value with `channels` channels: made
  // once (to_nchwc) and remembered, so every blocked user shares it.
  std::optional<Blocked> BlockInput(const Expr& x, int64_t block) {
    if (const Blocked* b = BlockedOf(x)) {
      if (b->block == block) return *b;
      return std::nullopt;
    }
    if (const HostTensor* c = ConstantOf(x)) return Blocked{BlockConstant(*c, block), block};
    Expr plain = MutateExpr(x);
    Blocked b{Emit((x.as<VarNode>() ? x.as<VarNode>()->name : std::string("x")) + "_nchwc",
                   Call("to_nchwc", {plain}, {{"block", block}})),
              block};
    if (const auto* v = x.as<VarNode>()) blocked_[v] = b;
    return b;
  }

  // The convolutions whose output a depth_to_space reads (the phases of a
  // decomposed transposed convolution): their block must divide the channels
  // per phase, so that depth_to_space_nchwc moves whole blocks.
  void FindPhaseConvolutions(const Function& func) {
    const auto* seq = func->body.as<SeqExprNode>();
    if (seq == nullptr) return;
    for (const BindingBlock& block : seq->blocks) {
      for (const Binding& b : block.bindings) {
        const auto* call = b.value.as<CallNode>();
        const auto* op = call ? call->op.as<OpNode>() : nullptr;
        const auto* input = op && op->name == "depth_to_space" ? call->args[0].as<VarNode>() : nullptr;
        if (input == nullptr) continue;
        if (std::optional<int64_t> depth = ConstantChannels(b.var)) phase_depth_[input] = *depth;
      }
    }
  }

  std::optional<Blocked> Convert(const Binding& binding, const CallNode& call, const std::string& name) {
    if (name == "conv2d") return ConvertConv(binding, call);
    // Everything else follows a blocked input; nothing blocked, nothing to do.
    bool any_blocked = false;
    for (const Expr& arg : call.args) any_blocked |= BlockedOf(arg) != nullptr;
    if (const auto* tuple = call.args.empty() ? nullptr : call.args[0].as<TupleNode>()) {
      for (const Expr& field : tuple->fields) any_blocked |= BlockedOf(field) != nullptr;
    }
    if (!any_blocked) return std::nullopt;
    const op::OpDef* def = op::FindOp(name);
    if (def == nullptr) return std::nullopt;
    const op::OpCall oc(*def, call);
    const Blocked* x = call.args.empty() ? nullptr : BlockedOf(call.args[0]);

    if ((name == "max_pool2d" || name == "avg_pool2d") && x) {
      return EmitBlocked(binding, name + "_nchwc", {x->var}, call.attrs, x->block);
    }
    if (name == "global_avg_pool2d" && x) {
      return EmitBlocked(binding, "mean", {x->var}, {{"axes", std::vector<int64_t>{2, 3}}, {"keepdims", true}},
                         x->block);
    }
    if ((name == "mean" || name == "sum" || name == "max") && x && oc.BoolAttr("keepdims") && oc.HasAttr("axes")) {
      std::vector<int64_t> axes;
      for (int64_t a : oc.IntsAttr("axes")) {
        const int64_t axis = a < 0 ? a + 4 : a;
        if (axis != 2 && axis != 3) return std::nullopt;
        axes.push_back(axis);
      }
      ir::Attrs attrs = call.attrs;
      attrs["axes"] = axes;
      return EmitBlocked(binding, name, {x->var}, std::move(attrs), x->block);
    }
    if (name == "bias_add" && x) {
      const HostTensor* bias = ConstantOf(call.args[1]);
      const int64_t axis = oc.IntAttr("axis");
      if (bias == nullptr || bias->dtype != DataType::F32() || bias->shape.size() != 1 || (axis != 1 && axis != -3)) {
        return std::nullopt;
      }
      const int64_t c = bias->shape[0];
      if (c % x->block != 0) return std::nullopt;
      return EmitBlocked(binding, "add", {x->var, Reshaped(*bias, {c / x->block, 1, 1, x->block})}, {}, x->block);
    }
    if (name == "concat" && oc.IntAttr("axis") % 4 == 1) return ConvertConcat(binding, call);
    if (name == "depth_to_space" && x) {
      std::optional<int64_t> depth = ConstantChannels(binding.var);
      if (!depth || *depth % x->block != 0) return std::nullopt;
      return EmitBlocked(binding, "depth_to_space_nchwc", {x->var}, call.attrs, x->block);
    }
    const TensorStructInfoNode* out = TensorInfo(binding.var);
    if (def->pattern == op::OpPattern::kElementwise && call.args.size() == 1 && x) {
      return EmitBlocked(binding, name, {x->var}, call.attrs, x->block);
    }
    if (def->pattern == op::OpPattern::kBroadcast && out && out->ndim == 4) return ConvertBroadcast(binding, call);
    return std::nullopt;
  }

  // mean, sum or max of a blocked value over its height and width without
  // keepdims (a classifier's global pooling: x.mean(dim=(2, 3)), ReduceMean
  // with keepdims=0) is the blocked reduction with keepdims, whose
  // (N, C / b, 1, 1, b) elements are (N, C) in order: a reshape, where the
  // plain reduction needed the whole activation converted back first.
  std::optional<Expr> ReduceImageToChannels(const Binding& binding, const CallNode& call, const std::string& name) {
    if (name != "mean" && name != "sum" && name != "max") return std::nullopt;
    const Blocked* x = call.args.size() == 1 ? BlockedOf(call.args[0]) : nullptr;
    const TensorStructInfoNode* out = TensorInfo(binding.var);
    if (x == nullptr || out == nullptr || !out->shape || out->shape->size() != 2) return std::nullopt;
    const op::OpCall oc(*op::FindOp(name), call);
    if (oc.BoolAttr("keepdims") || !oc.HasAttr("axes")) return std::nullopt;
    std::set<int64_t> axes;
    for (int64_t a : oc.IntsAttr("axes")) axes.insert(a < 0 ? a + 4 : a);
    if (axes != std::set<int64_t>{2, 3}) return std::nullopt;
    ir::Attrs attrs = call.attrs;
    attrs["axes"] = std::vector<int64_t>{2, 3};
    attrs["keepdims"] = true;
    Expr reduced = EmitBlocked(binding, name, {x->var}, std::move(attrs), x->block).var;
    return Annotate(Call("reshape", {reduced, ShapeExprNode::make(*out->shape)}, {}));
  }

  std::optional<Blocked> ConvertConv(const Binding& binding, const CallNode& call) {
    const op::OpCall oc(*op::FindOp("conv2d"), call);
    const HostTensor* w = call.args.size() == 2 ? ConstantOf(call.args[1]) : nullptr;
    const TensorStructInfoNode* xi = TensorInfo(call.args[0]);
    if (w == nullptr || w->dtype != DataType::F32() || w->shape.size() != 4 || xi == nullptr ||
        xi->dtype != DataType::F32() || xi->ndim != 4) {
      return std::nullopt;
    }
    const int64_t groups = oc.IntAttr("groups");
    const int64_t o = w->shape[0], c = w->shape[1] * groups;
    ir::Attrs attrs = call.attrs;
    if (groups == 1) {
      auto phase = phase_depth_.find(binding.var.get());
      const int64_t ob = NchwcBlock(phase == phase_depth_.end() ? o : phase->second, options_.max_block);
      if (ob < kMinOutputBlock) return std::nullopt;
      // The input's block: the one it has, its own, or 1 (read in place).
      Expr xb;
      int64_t ib = 1;
      if (const Blocked* b = BlockedOf(call.args[0])) {
        xb = b->var, ib = b->block;
      } else if (NchwcBlock(c, options_.max_block) >= kMinOutputBlock) {
        std::optional<Blocked> b = BlockInput(call.args[0], NchwcBlock(c, options_.max_block));
        if (!b) return std::nullopt;
        xb = b->var, ib = b->block;
      } else {
        xb = MutateExpr(call.args[0]);
      }
      const int64_t lanes = NchwcLanes(o, ob, options_);
      attrs["out_block"] = ob;
      return EmitBlocked(binding, "conv2d_nchwc", {xb, PackConvWeight(*w, ib, lanes)}, std::move(attrs), ob);
    }
    // Depthwise: every output channel reads its own input channel.
    if (w->shape[1] != 1 || o != groups) return std::nullopt;
    int64_t block = NchwcBlock(c, options_.max_block);
    if (const Blocked* b = BlockedOf(call.args[0])) block = b->block;
    if (block < kMinOutputBlock) return std::nullopt;
    std::optional<Blocked> xb = BlockInput(call.args[0], block);
    if (!xb) return std::nullopt;
    attrs["out_block"] = block;
    return EmitBlocked(binding, "conv2d_nchwc", {xb->var, PackConvWeight(*w, 1, block)}, std::move(attrs), block);
  }

  // An op broadcasting 4-D operands: each blocked (a plain operand over all
  // channels is blocked, one with a single channel gets a unit block axis).
  std::optional<Blocked> ConvertBroadcast(const Binding& binding, const CallNode& call) {
    int64_t block = 0;
    for (const Expr& arg : call.args) {
      if (const Blocked* b = BlockedOf(arg)) {
        if (block != 0 && b->block != block) return std::nullopt;
        block = b->block;
      }
    }
    const TensorStructInfoNode* out = TensorInfo(binding.var);
    std::optional<int64_t> channels = out && out->shape ? arith::AsConstant((*out->shape)[1]) : std::nullopt;
    if (!channels) return std::nullopt;
    std::vector<Expr> args;
    for (const Expr& arg : call.args) {
      if (const Blocked* b = BlockedOf(arg)) {
        args.push_back(b->var);
        continue;
      }
      const TensorStructInfoNode* t = TensorInfo(arg);
      if (t == nullptr || t->ndim < 0) return std::nullopt;
      if (t->ndim == 0) {
        args.push_back(MutateExpr(arg));
        continue;
      }
      const HostTensor* c = ConstantOf(arg);
      if (c != nullptr && c->dtype == DataType::F32()) {
        // Left-padded to rank 4, as broadcasting reads it.
        std::vector<int64_t> shape(4 - c->shape.size(), 1);
        shape.insert(shape.end(), c->shape.begin(), c->shape.end());
        if (shape[1] == *channels) {
          HostTensor padded = *c;
          padded.shape = shape;
          args.push_back(BlockConstant(padded, block));
        } else if (shape[1] == 1) {
          shape.push_back(1);
          args.push_back(Reshaped(*c, shape));
        } else {
          return std::nullopt;
        }
        continue;
      }
      // A plain 4-D value over all channels joins the blocked layout.
      if (t->ndim != 4 || t->dtype != DataType::F32() || !t->shape || arith::AsConstant((*t->shape)[1]) != *channels) {
        return std::nullopt;
      }
      std::optional<Blocked> b = BlockInput(arg, block);
      if (!b) return std::nullopt;
      args.push_back(b->var);
    }
    const auto* op = call.op.as<OpNode>();
    return EmitBlocked(binding, op->name, std::move(args), call.attrs, block);
  }

  std::optional<Blocked> ConvertConcat(const Binding& binding, const CallNode& call) {
    const auto* tuple = call.args[0].as<TupleNode>();
    if (tuple == nullptr) return std::nullopt;
    std::vector<Expr> fields;
    int64_t block = 0;
    for (const Expr& field : tuple->fields) {
      const Blocked* b = BlockedOf(field);
      if (b == nullptr || (block != 0 && b->block != block)) return std::nullopt;
      block = b->block;
      fields.push_back(b->var);
    }
    ir::Attrs attrs = call.attrs;
    attrs["axis"] = int64_t{1};
    return EmitBlocked(binding, "concat", {Annotate(TupleNode::make(std::move(fields)))}, std::move(attrs), block);
  }

  const NchwcOptions& options_;
  const std::set<std::string>& except_;
  std::set<const VarNode*> escaping_;
  std::map<const VarNode*, int64_t> phase_depth_;  // phase convolutions: the channels per phase
  analysis::BoundConstants constants_;
  // By the original (pre-rewrite) var: its blocked form, and, while its plain
  // form has not been emitted, its original binding.
  std::map<const VarNode*, Blocked> blocked_;
  std::map<const VarNode*, Binding> pending_;
  bool changed_ = false;
};

}  // namespace

StatusOr<ir::IRModule> ConvertToNchwc(ir::IRModule module, const NchwcOptions& options,
                                      const std::set<std::string>& except) {
  STRATA_ASSIGN_OR_RETURN(
      const bool changed,
      RewriteChangedGraphFunctions(
          &module, [&](const std::string& name, const Function& func) -> StatusOr<std::optional<Function>> {
            NchwcConverter converter(&module, options, except);
            STRATA_ASSIGN_OR_RETURN(Function rewritten, converter.Convert(name, func));
            if (!converter.changed()) return std::optional<Function>();  // unchanged functions keep their handles
            return std::optional<Function>(std::move(rewritten));
          }));
  // The plain weights, and plain values nothing needs any more.
  if (changed) return DeadCodeElimination(std::move(module));
  return module;
}

STRATA_REGISTER_PASS(ConvertToNchwc, [](ir::IRModule m, const PassContext& context) {
  return ConvertToNchwc(std::move(m), NchwcOptionsFor(context.target));
})

}  // namespace strata::transform
