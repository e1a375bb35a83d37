// Struct info algebra shared by the passes (see struct_info_util.h).
#include "compiler/analysis/struct_info_util.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "compiler/ir/arith/simplify.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/tir_visitor.h"

namespace strata::analysis {

using graph::ObjectStructInfoNode;
using graph::PrimStructInfoNode;
using graph::ShapeStructInfoNode;
using graph::TensorStructInfoNode;
using graph::TupleStructInfoNode;

namespace {

class VarCollector : public tir::PrimExprVisitor {
 public:
  explicit VarCollector(std::vector<tir::Var>* out) : out_(out) {}

  void VisitExpr(const PrimExpr& expr) override {
    if (!expr.as<tir::VarNode>()) return tir::PrimExprVisitor::VisitExpr(expr);
    for (const tir::Var& v : *out_) {
      if (v.same_as(expr)) return;
    }
    out_->push_back(tir::Var::FromNode(expr));
  }

 private:
  std::vector<tir::Var>* out_;
};

// Applies `fn` to every dimension list of `sinfo`, rebuilding only what changed.
// `fn` returns std::nullopt to erase the dimensions (keeping the rank).
using DimsFn = std::function<std::optional<std::vector<PrimExpr>>(const std::vector<PrimExpr>&)>;

StructInfo MapDims(const StructInfo& sinfo, const DimsFn& fn) {
  if (!sinfo.defined()) return sinfo;
  if (const auto* t = sinfo.as<TensorStructInfoNode>()) {
    if (!t->shape) return sinfo;
    std::optional<std::vector<PrimExpr>> dims = fn(*t->shape);
    if (!dims) return TensorStructInfoNode::make_ndim(t->ndim, t->dtype);
    bool same = dims->size() == t->shape->size() &&
                std::equal(dims->begin(), dims->end(), t->shape->begin(),
                           [](const PrimExpr& a, const PrimExpr& b) { return a.same_as(b); });
    return same ? sinfo : TensorStructInfoNode::make(std::move(*dims), t->dtype);
  }
  if (const auto* s = sinfo.as<ShapeStructInfoNode>()) {
    if (!s->values) return sinfo;
    std::optional<std::vector<PrimExpr>> dims = fn(*s->values);
    if (!dims) return ShapeStructInfoNode::make_ndim(s->ndim);
    bool same = dims->size() == s->values->size() &&
                std::equal(dims->begin(), dims->end(), s->values->begin(),
                           [](const PrimExpr& a, const PrimExpr& b) { return a.same_as(b); });
    return same ? sinfo : ShapeStructInfoNode::make(std::move(*dims));
  }
  if (const auto* tup = sinfo.as<TupleStructInfoNode>()) {
    std::vector<StructInfo> fields;
    bool changed = false;
    for (const StructInfo& f : tup->fields) {
      fields.push_back(MapDims(f, fn));
      changed |= !fields.back().same_as(f);
    }
    return changed ? TupleStructInfoNode::make(std::move(fields)) : sinfo;
  }
  return sinfo;
}

// Dims of a tensor or shape struct info, or nullptr.
const std::optional<std::vector<PrimExpr>>* DimsOf(const StructInfo& sinfo) {
  if (const auto* t = sinfo.as<TensorStructInfoNode>()) return &t->shape;
  if (const auto* s = sinfo.as<ShapeStructInfoNode>()) return &s->values;
  return nullptr;
}

BaseCheck Worse(BaseCheck a, BaseCheck b) { return static_cast<int>(a) > static_cast<int>(b) ? a : b; }

// base dims vs derived dims of the same rank.
BaseCheck CheckDims(const std::vector<PrimExpr>& base, const std::vector<PrimExpr>& derived) {
  BaseCheck result = BaseCheck::kPass;
  for (size_t i = 0; i < base.size(); ++i) {
    if (ProveDimEqual(base[i], derived[i])) continue;
    const int64_t* a = tir::AsConstInt(SimplifyDim(base[i]));
    const int64_t* b = tir::AsConstInt(SimplifyDim(derived[i]));
    if (a && b && *a != *b) return BaseCheck::kFail;
    result = BaseCheck::kUnprovable;
  }
  return result;
}

BaseCheck CheckRankAndDims(int base_ndim, const std::optional<std::vector<PrimExpr>>& base_dims, int derived_ndim,
                           const std::optional<std::vector<PrimExpr>>& derived_dims) {
  if (base_ndim == -1) return BaseCheck::kPass;
  if (derived_ndim == -1) return BaseCheck::kUnprovable;
  if (base_ndim != derived_ndim) return BaseCheck::kFail;
  if (!base_dims) return BaseCheck::kPass;
  if (!derived_dims) return BaseCheck::kUnprovable;
  return CheckDims(*base_dims, *derived_dims);
}

bool DimsEqual(const std::vector<PrimExpr>& a, const std::vector<PrimExpr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!ProveDimEqual(a[i], b[i])) return false;
  }
  return true;
}

}  // namespace

PrimExpr SimplifyDim(const PrimExpr& dim) {
  if (dim.as<tir::IntImmNode>() || dim.as<tir::VarNode>()) return dim;
  PrimExpr simplified = arith::Simplify(dim);
  return simplified.defined() ? simplified : dim;
}

bool ProveDimEqual(const PrimExpr& a, const PrimExpr& b) {
  if (a.same_as(b)) return true;
  const int64_t* ca = tir::AsConstInt(a);
  const int64_t* cb = tir::AsConstInt(b);
  if (ca && cb) return *ca == *cb;
  return arith::ProveEqual(a, b);
}

StructInfo SimplifyStructInfo(const StructInfo& sinfo) {
  return MapDims(sinfo, [](const std::vector<PrimExpr>& dims) -> std::optional<std::vector<PrimExpr>> {
    std::vector<PrimExpr> out;
    out.reserve(dims.size());
    for (const PrimExpr& d : dims) out.push_back(SimplifyDim(d));
    return out;
  });
}

void CollectVars(const PrimExpr& expr, std::vector<tir::Var>* out) {
  VarCollector collector(out);
  collector.VisitExpr(expr);
}

void CollectVars(const StructInfo& sinfo, std::vector<tir::Var>* out) {
  if (!sinfo.defined()) return;
  if (const auto* tup = sinfo.as<TupleStructInfoNode>()) {
    for (const StructInfo& f : tup->fields) CollectVars(f, out);
    return;
  }
  const auto* dims = DimsOf(sinfo);
  if (!dims || !*dims) return;
  for (const PrimExpr& d : **dims) CollectVars(d, out);
}

void CollectDefinableVars(const StructInfo& sinfo, std::vector<tir::Var>* out) {
  if (!sinfo.defined()) return;
  if (const auto* tup = sinfo.as<TupleStructInfoNode>()) {
    for (const StructInfo& f : tup->fields) CollectDefinableVars(f, out);
    return;
  }
  const auto* dims = DimsOf(sinfo);
  if (!dims || !*dims) return;
  for (const PrimExpr& d : **dims) {
    if (d.as<tir::VarNode>()) CollectVars(d, out);
  }
}

bool StructInfoEqual(const StructInfo& a, const StructInfo& b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined()) return false;
  if (a->kind != b->kind) return false;
  switch (a->kind) {
    case graph::StructInfoKind::kObject: return true;
    case graph::StructInfoKind::kPrim: return a.as<PrimStructInfoNode>()->dtype == b.as<PrimStructInfoNode>()->dtype;
    case graph::StructInfoKind::kShape: {
      const auto* x = a.as<ShapeStructInfoNode>();
      const auto* y = b.as<ShapeStructInfoNode>();
      if (x->ndim != y->ndim || x->values.has_value() != y->values.has_value()) return false;
      return !x->values || DimsEqual(*x->values, *y->values);
    }
    case graph::StructInfoKind::kTensor: {
      const auto* x = a.as<TensorStructInfoNode>();
      const auto* y = b.as<TensorStructInfoNode>();
      if (x->dtype != y->dtype || x->ndim != y->ndim || x->shape.has_value() != y->shape.has_value()) return false;
      return !x->shape || DimsEqual(*x->shape, *y->shape);
    }
    case graph::StructInfoKind::kTuple: {
      const auto* x = a.as<TupleStructInfoNode>();
      const auto* y = b.as<TupleStructInfoNode>();
      if (x->fields.size() != y->fields.size()) return false;
      for (size_t i = 0; i < x->fields.size(); ++i) {
        if (!StructInfoEqual(x->fields[i], y->fields[i])) return false;
      }
      return true;
    }
  }
  return false;
}

BaseCheck CheckBaseOf(const StructInfo& base, const StructInfo& derived) {
  if (!base.defined() || base.as<ObjectStructInfoNode>()) return BaseCheck::kPass;
  if (!derived.defined() || derived.as<ObjectStructInfoNode>()) return BaseCheck::kUnprovable;
  if (base->kind != derived->kind) return BaseCheck::kFail;
  switch (base->kind) {
    case graph::StructInfoKind::kObject: return BaseCheck::kPass;
    case graph::StructInfoKind::kPrim:
      return base.as<PrimStructInfoNode>()->dtype == derived.as<PrimStructInfoNode>()->dtype ? BaseCheck::kPass
                                                                                             : BaseCheck::kFail;
    case graph::StructInfoKind::kShape: {
      const auto* b = base.as<ShapeStructInfoNode>();
      const auto* d = derived.as<ShapeStructInfoNode>();
      return CheckRankAndDims(b->ndim, b->values, d->ndim, d->values);
    }
    case graph::StructInfoKind::kTensor: {
      const auto* b = base.as<TensorStructInfoNode>();
      const auto* d = derived.as<TensorStructInfoNode>();
      BaseCheck dtype = BaseCheck::kPass;
      if (!b->dtype.is_void()) {
        if (d->dtype.is_void()) {
          dtype = BaseCheck::kUnprovable;
        } else if (d->dtype != b->dtype) {
          return BaseCheck::kFail;
        }
      }
      return Worse(dtype, CheckRankAndDims(b->ndim, b->shape, d->ndim, d->shape));
    }
    case graph::StructInfoKind::kTuple: {
      const auto* b = base.as<TupleStructInfoNode>();
      const auto* d = derived.as<TupleStructInfoNode>();
      if (b->fields.size() != d->fields.size()) return BaseCheck::kFail;
      BaseCheck result = BaseCheck::kPass;
      for (size_t i = 0; i < b->fields.size(); ++i) {
        result = Worse(result, CheckBaseOf(b->fields[i], d->fields[i]));
        if (result == BaseCheck::kFail) return result;
      }
      return result;
    }
  }
  return BaseCheck::kFail;
}

StructInfo StructInfoLUB(const StructInfo& a, const StructInfo& b) {
  if (!a.defined() || !b.defined()) return ObjectStructInfoNode::make();
  if (StructInfoEqual(a, b)) return a;
  if (a->kind != b->kind) return ObjectStructInfoNode::make();
  switch (a->kind) {
    case graph::StructInfoKind::kObject:
    case graph::StructInfoKind::kPrim:  // different dtypes
      return ObjectStructInfoNode::make();
    case graph::StructInfoKind::kShape: {
      const auto* x = a.as<ShapeStructInfoNode>();
      const auto* y = b.as<ShapeStructInfoNode>();
      int ndim = x->ndim == y->ndim ? x->ndim : -1;
      if (x->values && y->values && ndim != -1 && DimsEqual(*x->values, *y->values)) return a;
      return ShapeStructInfoNode::make_ndim(ndim);
    }
    case graph::StructInfoKind::kTensor: {
      const auto* x = a.as<TensorStructInfoNode>();
      const auto* y = b.as<TensorStructInfoNode>();
      DataType dtype = x->dtype == y->dtype ? x->dtype : DataType::Void();
      int ndim = x->ndim == y->ndim ? x->ndim : -1;
      if (x->shape && y->shape && ndim != -1 && DimsEqual(*x->shape, *y->shape)) {
        return TensorStructInfoNode::make(*x->shape, dtype);
      }
      return TensorStructInfoNode::make_ndim(ndim, dtype);
    }
    case graph::StructInfoKind::kTuple: {
      const auto* x = a.as<TupleStructInfoNode>();
      const auto* y = b.as<TupleStructInfoNode>();
      if (x->fields.size() != y->fields.size()) return ObjectStructInfoNode::make();
      std::vector<StructInfo> fields;
      for (size_t i = 0; i < x->fields.size(); ++i) fields.push_back(StructInfoLUB(x->fields[i], y->fields[i]));
      return TupleStructInfoNode::make(std::move(fields));
    }
  }
  return ObjectStructInfoNode::make();
}

StructInfo SubstituteStructInfo(const StructInfo& sinfo, const std::function<PrimExpr(const tir::VarNode*)>& map) {
  return MapDims(sinfo, [&](const std::vector<PrimExpr>& dims) -> std::optional<std::vector<PrimExpr>> {
    std::vector<PrimExpr> out;
    out.reserve(dims.size());
    for (const PrimExpr& d : dims) {
      PrimExpr replaced = tir::Substitute(d, map);
      out.push_back(replaced.same_as(d) ? d : SimplifyDim(replaced));
    }
    return out;
  });
}

StructInfo EraseUndefinedVars(const StructInfo& sinfo, const std::function<bool(const tir::VarNode*)>& is_defined) {
  return MapDims(sinfo, [&](const std::vector<PrimExpr>& dims) -> std::optional<std::vector<PrimExpr>> {
    std::vector<tir::Var> vars;
    for (const PrimExpr& d : dims) CollectVars(d, &vars);
    for (const tir::Var& v : vars) {
      if (!is_defined(v.get())) return std::nullopt;
    }
    return dims;
  });
}

std::string StructInfoText(const StructInfo& sinfo) {
  if (!sinfo.defined()) return "<none>";
  return ir::PrintStructInfo(sinfo);
}

std::string DimText(const PrimExpr& dim) { return ir::PrintPrimExpr(dim); }

void BindParamSymbols(const graph::StructInfo& param, const graph::StructInfo& arg,
                      std::map<const tir::VarNode*, PrimExpr>* subst) {
  if (!param.defined() || !arg.defined()) return;
  if (const auto* pt = param.as<graph::TupleStructInfoNode>()) {
    const auto* at = arg.as<graph::TupleStructInfoNode>();
    if (!at || at->fields.size() != pt->fields.size()) return;
    for (size_t i = 0; i < pt->fields.size(); ++i) BindParamSymbols(pt->fields[i], at->fields[i], subst);
    return;
  }
  const std::optional<std::vector<PrimExpr>>* pdims = nullptr;
  const std::optional<std::vector<PrimExpr>>* adims = nullptr;
  if (const auto* p = param.as<graph::TensorStructInfoNode>()) {
    const auto* a = arg.as<graph::TensorStructInfoNode>();
    if (!a) return;
    pdims = &p->shape;
    adims = &a->shape;
  } else if (const auto* p = param.as<graph::ShapeStructInfoNode>()) {
    const auto* a = arg.as<graph::ShapeStructInfoNode>();
    if (!a) return;
    pdims = &p->values;
    adims = &a->values;
  } else {
    return;
  }
  if (!*pdims || !*adims || (*pdims)->size() != (*adims)->size()) return;
  for (size_t i = 0; i < (*pdims)->size(); ++i) {
    const auto* var = (**pdims)[i].as<tir::VarNode>();
    if (var && !subst->count(var)) subst->emplace(var, (**adims)[i]);
  }
}

}  // namespace strata::analysis
