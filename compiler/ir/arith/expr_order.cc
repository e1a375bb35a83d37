// CompareExprs and the creation-index side table.
#include "compiler/ir/arith/expr_order.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <mutex>
#include <unordered_map>

namespace strata::arith {

namespace {

using tir::PrimExpr;
using tir::PrimExprKind;

// Maps a node address to its creation index. The weak_ptr tells a live entry from
// the stale entry of a dead node whose address was reused. Dead entries are swept
// whenever the table doubles, so it stays proportional to the live nodes.
class CreationTable {
 public:
  uint64_t Get(const std::shared_ptr<const void>& node) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(node.get());
    if (it != entries_.end() && !it->second.owner.expired()) return it->second.index;
    if (entries_.size() >= sweep_at_) Sweep();
    uint64_t index = next_++;
    entries_[node.get()] = Entry{node, index};
    return index;
  }

 private:
  struct Entry {
    std::weak_ptr<const void> owner;
    uint64_t index;
  };

  void Sweep() {
    for (auto it = entries_.begin(); it != entries_.end();) {
      it = it->second.owner.expired() ? entries_.erase(it) : std::next(it);
    }
    sweep_at_ = std::max<size_t>(1024, entries_.size() * 2);
  }

  std::mutex mutex_;
  std::unordered_map<const void*, Entry> entries_;
  uint64_t next_ = 0;
  size_t sweep_at_ = 1024;
};

CreationTable& Table() {
  static auto* table = new CreationTable;  // leaked: used during static destruction
  return *table;
}

template <typename T>
int Cmp(const T& a, const T& b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}

int CompareDouble(double a, double b) {
  if (a < b) return -1;
  if (b < a) return 1;
  // Equal, or unordered (NaN): fall back to the bit pattern for a total order.
  uint64_t ba, bb;
  std::memcpy(&ba, &a, sizeof a);
  std::memcpy(&bb, &b, sizeof b);
  return Cmp(ba, bb);
}

int CompareBuffers(const tir::Buffer& a, const tir::Buffer& b) {
  if (a == b) return 0;
  if (int c = a->name.compare(b->name)) return c < 0 ? -1 : 1;
  return Cmp(CreationIndex(a), CreationIndex(b));
}

int CompareLists(const std::vector<PrimExpr>& a, const std::vector<PrimExpr>& b) {
  if (int c = Cmp(a.size(), b.size())) return c;
  for (size_t i = 0; i < a.size(); ++i) {
    if (int c = CompareExprs(a[i], b[i])) return c;
  }
  return 0;
}

}  // namespace

uint64_t CreationIndex(const std::shared_ptr<const void>& node) { return Table().Get(node); }

int CompareExprs(const PrimExpr& a, const PrimExpr& b) {
  if (a.same_as(b)) return 0;
  assert(a.defined() && b.defined() && "comparing a null expression");
  if (int c = Cmp(a->kind, b->kind)) return c;
  if (int c = Cmp(a.dtype().code(), b.dtype().code())) return c;
  if (int c = Cmp(a.dtype().bits(), b.dtype().bits())) return c;
  switch (a->kind) {
    case PrimExprKind::kIntImm: return Cmp(a.as<tir::IntImmNode>()->value, b.as<tir::IntImmNode>()->value);
    case PrimExprKind::kFloatImm:
      return CompareDouble(a.as<tir::FloatImmNode>()->value, b.as<tir::FloatImmNode>()->value);
    case PrimExprKind::kVar: {
      if (int c = a.as<tir::VarNode>()->name.compare(b.as<tir::VarNode>()->name)) return c < 0 ? -1 : 1;
      return Cmp(CreationIndex(a.node_ptr()), CreationIndex(b.node_ptr()));
    }
    case PrimExprKind::kNot: return CompareExprs(a.as<tir::NotNode>()->a, b.as<tir::NotNode>()->a);
    case PrimExprKind::kSelect: {
      const auto* x = a.as<tir::SelectNode>();
      const auto* y = b.as<tir::SelectNode>();
      if (int c = CompareExprs(x->condition, y->condition)) return c;
      if (int c = CompareExprs(x->true_value, y->true_value)) return c;
      return CompareExprs(x->false_value, y->false_value);
    }
    case PrimExprKind::kCast: return CompareExprs(a.as<tir::CastNode>()->value, b.as<tir::CastNode>()->value);
    case PrimExprKind::kCall: {
      const auto* x = a.as<tir::CallNode>();
      const auto* y = b.as<tir::CallNode>();
      if (int c = Cmp(x->op, y->op)) return c;
      return CompareLists(x->args, y->args);
    }
    case PrimExprKind::kBufferLoad: {
      const auto* x = a.as<tir::BufferLoadNode>();
      const auto* y = b.as<tir::BufferLoadNode>();
      if (int c = CompareBuffers(x->buffer, y->buffer)) return c;
      return CompareLists(x->indices, y->indices);
    }
    default: {
      const auto* x = a.as<tir::BinaryOpNode>();
      const auto* y = b.as<tir::BinaryOpNode>();
      assert(x && y && "unknown PrimExpr kind");
      if (int c = CompareExprs(x->a, y->a)) return c;
      return CompareExprs(x->b, y->b);
    }
  }
}

}  // namespace strata::arith
