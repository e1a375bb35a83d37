// PlanMemory: liveness, arena packing and storage tokens (see plan_memory.h).
#include "compiler/transform/plan_memory.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compiler/analysis/graph_util.h"
#include "compiler/analysis/memory_ops.h"
#include "compiler/analysis/struct_info_util.h"
#include "compiler/ir/arith/simplify.h"
#include "compiler/transform/normalize.h"
#include "compiler/transform/pass.h"

namespace strata::transform {

using namespace graph;  // NOLINT: a graph-level pass
namespace memory_ops = analysis::memory_ops;

namespace {

constexpr const char* kBoundAttrPrefix = "bound_";

int64_t AlignUp(int64_t bytes) { return (bytes + kPlanAlignment - 1) / kPlanAlignment * kPlanAlignment; }

// ---- value ranges under the user's bounds ----------------------------------

struct Range {
  int64_t lo, hi;
};
using Bounds = std::map<std::string, Range>;

std::optional<int64_t> CheckedMul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}
std::optional<int64_t> CheckedAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// The range of an i64 expression when every variable in it is bounded; nullopt
// when a variable is unbounded or the expression is not one interval arithmetic
// can follow.
std::optional<Range> RangeOf(const PrimExpr& e, const Bounds& bounds) {
  if (const int64_t* c = tir::AsConstInt(e)) return Range{*c, *c};
  if (const auto* v = e.as<tir::VarNode>()) {
    auto it = bounds.find(v->name);
    if (it == bounds.end()) return std::nullopt;
    return it->second;
  }
  const auto* op = e.as<tir::BinaryOpNode>();
  if (!op) return std::nullopt;
  std::optional<Range> a = RangeOf(op->a, bounds), b = RangeOf(op->b, bounds);
  if (!a || !b) return std::nullopt;
  switch (e->kind) {
    case tir::PrimExprKind::kAdd: {
      auto lo = CheckedAdd(a->lo, b->lo), hi = CheckedAdd(a->hi, b->hi);
      if (!lo || !hi) return std::nullopt;
      return Range{*lo, *hi};
    }
    case tir::PrimExprKind::kSub: {
      auto lo = CheckedAdd(a->lo, -b->hi), hi = CheckedAdd(a->hi, -b->lo);
      if (!lo || !hi) return std::nullopt;
      return Range{*lo, *hi};
    }
    case tir::PrimExprKind::kMul: {
      int64_t corners[4];
      int64_t* out = corners;
      for (int64_t x : {a->lo, a->hi}) {
        for (int64_t y : {b->lo, b->hi}) {
          auto p = CheckedMul(x, y);
          if (!p) return std::nullopt;
          *out++ = *p;
        }
      }
      return Range{*std::min_element(corners, corners + 4), *std::max_element(corners, corners + 4)};
    }
    case tir::PrimExprKind::kFloorDiv: {
      // Only division by a positive constant: monotone in the dividend.
      if (b->lo != b->hi || b->lo <= 0) return std::nullopt;
      auto floordiv = [d = b->lo](int64_t x) { return x >= 0 ? x / d : -((-x + d - 1) / d); };
      return Range{floordiv(a->lo), floordiv(a->hi)};
    }
    case tir::PrimExprKind::kMin: return Range{std::min(a->lo, b->lo), std::min(a->hi, b->hi)};
    case tir::PrimExprKind::kMax: return Range{std::max(a->lo, b->lo), std::max(a->hi, b->hi)};
    default: return std::nullopt;
  }
}

Bounds BoundsOf(const FunctionNode& func) {
  Bounds bounds;
  for (const auto& [key, value] : func.attrs) {
    if (key.rfind(kBoundAttrPrefix, 0) != 0) continue;
    const auto* range = std::get_if<std::vector<int64_t>>(&value);
    if (!range || range->size() != 2 || (*range)[0] < 0 || (*range)[0] > (*range)[1]) continue;
    bounds[key.substr(std::char_traits<char>::length(kBoundAttrPrefix))] = Range{(*range)[0], (*range)[1]};
  }
  return bounds;
}

// ---- analysis --------------------------------------------------------------

// Whether a value of this struct info can hold (or be) a tensor.
bool MayHoldTensor(const StructInfo& sinfo) {
  if (!sinfo) return true;
  if (sinfo.as<ShapeStructInfoNode>() || sinfo.as<PrimStructInfoNode>()) return false;
  if (const auto* tuple = sinfo.as<TupleStructInfoNode>()) {
    for (const StructInfo& field : tuple->fields) {
      if (MayHoldTensor(field)) return true;
    }
    return false;
  }
  return true;  // Tensor, Object, Callable
}

struct Candidate {
  const VarNode* var;
  size_t block;
  int64_t def;         // binding index (over all top-level blocks)
  int64_t last_use;    // last binding index that uses it or an alias
  PrimExpr bytes;      // simplified size in bytes
  std::string device;  // empty: host memory; else the plugged-in device (PlaceOnDevices)
  bool output = false;
};

// Where one planned tensor lives.
struct Placement {
  int storage;  // index into Plan::storages
  int64_t offset;
};

struct StorageDecl {
  size_t block;
  std::string device;  // empty: host
  bool arena;
  int64_t static_bytes;  // arena: its size; token: -1
  PrimExpr size;         // token: its symbolic size
};

struct Plan {
  std::map<const VarNode*, Placement> placements;
  std::vector<StorageDecl> storages;
  // Per planned tensor whose size was planned at its upper bound: the bounded
  // variables it relies on, checked before it is allocated.
  std::map<const VarNode*, std::vector<tir::Var>> bounded;
};

// The planned tensor sizes packed into one arena: greedy by size, each at the
// smallest gap among already placed tensors whose lifetimes overlap its own.
int64_t PackArena(std::vector<const Candidate*> items, std::vector<int64_t> sizes, std::vector<int64_t>* offsets) {
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (sizes[a] != sizes[b]) return sizes[a] > sizes[b];
    return items[a]->def < items[b]->def;
  });
  offsets->assign(items.size(), 0);
  std::vector<size_t> placed;
  int64_t arena = 0;
  for (size_t i : order) {
    std::vector<std::pair<int64_t, int64_t>> busy;  // [offset, end) of overlapping lifetimes
    for (size_t j : placed) {
      bool overlap = !(items[j]->last_use < items[i]->def || items[i]->last_use < items[j]->def);
      if (overlap) busy.emplace_back((*offsets)[j], (*offsets)[j] + sizes[j]);
    }
    std::sort(busy.begin(), busy.end());
    int64_t best = -1, best_gap = std::numeric_limits<int64_t>::max(), end = 0;
    for (const auto& [begin, finish] : busy) {
      int64_t gap = begin - end;
      if (gap >= sizes[i] && gap < best_gap) {
        best = end;
        best_gap = gap;
      }
      end = std::max(end, finish);
    }
    (*offsets)[i] = best >= 0 ? best : end;
    arena = std::max(arena, (*offsets)[i] + sizes[i]);
    placed.push_back(i);
  }
  return arena;
}

Plan PlanFunction(const FunctionNode& func) {
  Plan plan;
  const auto* seq = func.body.as<SeqExprNode>();
  if (!seq) return plan;
  const Bounds bounds = BoundsOf(func);

  std::vector<Candidate> candidates;
  std::map<const VarNode*, std::set<size_t>> points_to;  // var -> candidates it may refer to
  auto pointees = [&](const std::vector<const VarNode*>& vars) {
    std::set<size_t> out;
    for (const VarNode* v : vars) {
      auto it = points_to.find(v);
      if (it != points_to.end()) out.insert(it->second.begin(), it->second.end());
    }
    return out;
  };

  int64_t index = 0;
  for (size_t b = 0; b < seq->blocks.size(); ++b) {
    for (const Binding& binding : seq->blocks[b].bindings) {
      const Expr& value = binding.value;
      std::vector<const VarNode*> used = analysis::VarsUsedIn(value);
      for (size_t id : pointees(used)) candidates[id].last_use = index;

      const auto* call = value.as<CallNode>();
      const ShapeExprNode* shape = nullptr;
      const DataTypeImmNode* dtype = nullptr;
      std::string device;
      const bool fresh_host = call && analysis::IsOpCall(call, ops::kAllocTensor) && call->args.size() == 2;
      const bool fresh_device = call && analysis::IsOpCall(call, memory_ops::kAllocDeviceTensor) &&
                                call->args.size() == 3 && call->args[2].as<StringImmNode>();
      if (fresh_host || fresh_device) {
        shape = call->args[0].as<ShapeExprNode>();
        dtype = call->args[1].as<DataTypeImmNode>();
        if (fresh_device) device = call->args[2].as<StringImmNode>()->value;
      }
      const bool to_device = call && analysis::IsOpCall(call, memory_ops::kToDevice);
      if (to_device) {
        // The copy runs after to_device returns: its host source must keep its
        // memory until the device has read it, so it is not planned.
        for (size_t id : pointees(used)) candidates[id].output = true;
      }
      if (shape && dtype) {
        PrimExpr bytes = tir::IntImm(DataType::I64(), dtype->value.bytes());
        for (const PrimExpr& d : shape->values) bytes = bytes * d;
        candidates.push_back(Candidate{binding.var.get(), b, index, index, arith::Simplify(bytes), device});
        points_to[binding.var.get()] = {candidates.size() - 1};
      } else if (to_device || (call && analysis::IsOpCall(call, memory_ops::kToHost))) {
        // A copy: a new tensor, no alias of its source.
      } else if (value.as<VarNode>() || value.as<TupleNode>() || value.as<TupleGetItemNode>() ||
                 MayHoldTensor(binding.var->struct_info)) {
        // Aliases, and any other value that could hand back one of its inputs.
        std::set<size_t> ids = pointees(used);
        if (!ids.empty()) points_to[binding.var.get()] = std::move(ids);
      }
      ++index;
    }
  }
  for (size_t id : pointees(analysis::VarsUsedIn(seq->body))) candidates[id].output = true;

  std::set<std::string> devices;  // "" is the host
  for (const Candidate& c : candidates) devices.insert(c.device);
  for (size_t b = 0; b < seq->blocks.size(); ++b) {
    for (const std::string& device : devices) {
      // Static and bounded sizes: one arena for the block (per device).
      std::vector<const Candidate*> packed;
      std::vector<int64_t> sizes;
      std::vector<const Candidate*> symbolic;
      for (const Candidate& c : candidates) {
        if (c.block != b || c.device != device || c.output) continue;
        if (std::optional<int64_t> bytes = arith::AsConstant(c.bytes)) {
          packed.push_back(&c);
          sizes.push_back(AlignUp(*bytes));
        } else if (std::optional<Range> range = RangeOf(c.bytes, bounds); range && range->hi >= 0) {
          packed.push_back(&c);
          sizes.push_back(AlignUp(range->hi));
          analysis::CollectVars(c.bytes, &plan.bounded[c.var]);
        } else {
          symbolic.push_back(&c);
        }
      }
      if (!packed.empty()) {
        std::vector<int64_t> offsets;
        int64_t arena = PackArena(packed, sizes, &offsets);
        int storage = static_cast<int>(plan.storages.size());
        plan.storages.push_back(StorageDecl{b, device, true, arena, PrimExpr()});
        for (size_t i = 0; i < packed.size(); ++i) plan.placements[packed[i]->var] = Placement{storage, offsets[i]};
      }

      // Symbolic sizes: tokens, in program order, reused when provably equal. A
      // token whose tensor died stays open for reuse only until the next
      // allocation that takes new memory: an idle token held across such an
      // allocation would raise the peak above what the tensors need. Once closed,
      // its memory goes back to the pool when its last tensor dies.
      struct Token {
        int storage;
        PrimExpr size;
        int64_t free_after;  // last binding index of the tensor holding it
        bool open = true;
      };
      std::vector<Token> tokens;
      std::set<const Candidate*> symbolic_set(symbolic.begin(), symbolic.end());
      std::set<const Candidate*> in_arena(packed.begin(), packed.end());  // allocated up front
      for (const Candidate& c : candidates) {
        if (c.block != b || c.device != device) continue;
        Token* reuse = nullptr;
        if (symbolic_set.count(&c)) {
          for (Token& t : tokens) {
            if (t.open && t.free_after < c.def && arith::ProveEqual(t.size, c.bytes)) {
              reuse = &t;
              break;
            }
          }
        }
        if (!reuse && !in_arena.count(&c)) {
          for (Token& t : tokens) t.open = t.open && t.free_after >= c.def;
        }
        if (!symbolic_set.count(&c)) continue;
        if (!reuse) {
          int storage = static_cast<int>(plan.storages.size());
          plan.storages.push_back(StorageDecl{b, device, false, -1, c.bytes});
          tokens.push_back(Token{storage, c.bytes, c.last_use});
          reuse = &tokens.back();
        }
        reuse->free_after = c.last_use;
        plan.placements[c.var] = Placement{reuse->storage, 0};
      }
    }
  }
  return plan;
}

// ---- rewriting -------------------------------------------------------------

class PlanRewriter : public Normalizer {
 public:
  using Normalizer::Normalizer;

  void PrepareFunction(const std::string&, const Function& func) override {
    plan_ = PlanFunction(*func);
    storage_vars_.assign(plan_.storages.size(), Var());
    bounds_ = BoundsOf(*func);
    checked_.clear();
  }

 protected:
  void RewriteBinding(const Binding& binding) override {
    auto it = plan_.placements.find(binding.var.get());
    if (it == plan_.placements.end()) return Normalizer::RewriteBinding(binding);
    auto bounded = plan_.bounded.find(binding.var.get());
    if (bounded != plan_.bounded.end()) EmitBoundChecks(bounded->second);
    Expr value = MutateExpr(binding.value);
    if (failed()) return;
    // alloc_tensor(shape, dtype) or device.alloc_tensor(shape, dtype, device).
    const std::vector<Expr>& args = value.as<CallNode>()->args;
    const Placement& placement = it->second;
    Var& storage = storage_vars_[placement.storage];
    if (!storage.get()) {
      const StorageDecl& decl = plan_.storages[placement.storage];
      Expr size = decl.arena ? analysis::Int64Value(decl.static_bytes) : ShapeExprNode::make({decl.size});
      std::string hint = decl.arena ? "arena" : "storage";
      if (!decl.device.empty()) hint += "_" + decl.device;
      storage = Emit(hint, analysis::AllocStorage(size, kPlanAlignment, decl.device));
    }
    Expr tensor = analysis::AllocTensorInStorage(storage, placement.offset, args[0], args[1]);
    EmitBinding(binding, Annotate(tensor));
  }

 private:
  // A call beyond the bounds would write past its arena: stop it before the first
  // tensor whose size relies on them.
  void EmitBoundChecks(const std::vector<tir::Var>& vars) {
    for (const tir::Var& var : vars) {
      if (!checked_.insert(var.get()).second) continue;
      const Range& range = bounds_.at(var.name());
      std::string ctx = function_name() + ": dimension '" + var.name() + "' (the model was compiled for " + var.name() +
                        " = " + std::to_string(range.lo) + ".." + std::to_string(range.hi) + ")";
      Emit("_", analysis::CheckBound(var, range.lo, range.hi, ctx));
    }
  }

  Plan plan_;
  std::vector<Var> storage_vars_;
  Bounds bounds_;
  std::set<const tir::VarNode*> checked_;
};

}  // namespace

StatusOr<ir::IRModule> PlanMemory(ir::IRModule module) {
  PlanRewriter rewriter(&module);
  STRATA_RETURN_IF_ERROR(RewriteGraphFunctions(rewriter, &module));
  return module;
}

STRATA_REGISTER_PASS(PlanMemory, PlanMemory)

}  // namespace strata::transform
