// View-like data movement: reshape, flatten, expand_dims, squeeze. Each is a
// row-major copy whose indexing avoids divisions where the shapes allow
// (RowMajorCopy), with a run-time check of what inference could not prove.
#include <algorithm>
#include <cmath>

#include "compiler/analysis/struct_info_util.h"
#include "compiler/ir/arith/simplify.h"
#include "compiler/ir/printer.h"
#include "compiler/op/builtin_ops.h"
#include "compiler/op/data_movement.h"
#include "compiler/op/kernel_builder.h"
#include "compiler/op/op_util.h"

namespace strata::op {
namespace {

using analysis::DimText;
using tir::PrimExprKind;
using namespace movement;  // NOLINT(build/namespaces): the family's shared helpers

// Copies `in` to `out` in row-major order (reshape, flatten). The two shapes are
// cut into groups at the points where their prefix (then suffix) products are
// provably equal;
// a group loops over its dims on one side and computes the other side's index
// by raveling, so (b, t, 64) -> (b, t, 4, 16) indexes the input as
// [i0, i1, i2 * 16 + i3] without divisions. Only a group with several dims on
// both sides (or the rest after the last provable point) divides.
tir::Stmt RowMajorCopy(KernelBuilder& b, const tir::Buffer& in, const tir::Buffer& out) {
  const std::vector<PrimExpr>& src = in->shape;
  const std::vector<PrimExpr>& dst = out->shape;
  auto prefixes = [](const std::vector<PrimExpr>& dims) {
    std::vector<PrimExpr> p = {1};
    for (const PrimExpr& d : dims) p.push_back(arith::Simplify(p.back() * d));
    return p;
  };
  const std::vector<PrimExpr> pin = prefixes(src), pout = prefixes(dst);
  struct Group {
    size_t in_begin, in_end, out_begin, out_end;
  };
  std::vector<Group> groups;
  size_t in_done = 0, out_done = 0;
  for (size_t k = 1; k <= src.size(); ++k) {
    for (size_t l = out_done + 1; l <= dst.size(); ++l) {
      if (arith::ProveEqual(pin[k], pout[l])) {
        groups.push_back({in_done, k, out_done, l});
        in_done = k;
        out_done = l;
        break;
      }
    }
  }
  // Then from the right, over what is left: suffix products provably equal
  // also cut (the counts are equal, checked at run time if need be), so
  // (d1, 64, seq) -> (batch, 12, 64, seq), d1 being batch * 12 only by that
  // check, indexes the input as [i0 * 12 + i1, i2, i3] rather than through
  // three divisions by symbolic sizes per element.
  auto suffixes = [](const std::vector<PrimExpr>& dims) {
    std::vector<PrimExpr> p(dims.size() + 1, PrimExpr(1));
    for (size_t d = dims.size(); d-- > 0;) p[d] = arith::Simplify(p[d + 1] * dims[d]);
    return p;
  };
  const std::vector<PrimExpr> sin = suffixes(src), sout = suffixes(dst);
  std::vector<Group> tail;  // right to left
  size_t in_left = src.size(), out_left = dst.size();
  for (size_t k = src.size(); k-- > in_done + 1;) {
    for (size_t l = out_left; l-- > out_done + 1;) {
      if (arith::ProveEqual(sin[k], sout[l])) {
        tail.push_back({k, in_left, l, out_left});
        in_left = k;
        out_left = l;
        break;
      }
    }
  }
  if (in_done < in_left || out_done < out_left) groups.push_back({in_done, in_left, out_done, out_left});
  groups.insert(groups.end(), tail.rbegin(), tail.rend());

  // Loop over the output side of a group unless only the input side has
  // several dims.
  std::vector<PrimExpr> loop_shape;
  std::vector<bool> loops_out;
  for (const Group& g : groups) {
    const bool over_out = g.in_end - g.in_begin <= 1 || g.out_end - g.out_begin > 1;
    loops_out.push_back(over_out);
    const std::vector<PrimExpr>& side = over_out ? dst : src;
    for (size_t d = over_out ? g.out_begin : g.in_begin; d < (over_out ? g.out_end : g.in_end); ++d) {
      loop_shape.push_back(side[d]);
    }
  }
  return CopyNest(b, loop_shape, [&](const std::vector<PrimExpr>& index) {
    std::vector<PrimExpr> in_index, out_index;
    size_t k = 0;
    for (size_t g = 0; g < groups.size(); ++g) {
      const Group& grp = groups[g];
      std::vector<PrimExpr> in_dims(src.begin() + grp.in_begin, src.begin() + grp.in_end);
      std::vector<PrimExpr> out_dims(dst.begin() + grp.out_begin, dst.begin() + grp.out_end);
      const std::vector<PrimExpr>& looped_dims = loops_out[g] ? out_dims : in_dims;
      std::vector<PrimExpr> looped(index.begin() + k, index.begin() + k + looped_dims.size());
      k += looped_dims.size();
      const std::vector<PrimExpr>& other_dims = loops_out[g] ? in_dims : out_dims;
      std::vector<PrimExpr> other;
      if (other_dims.size() == 1) {
        other = {Ravel(looped, looped_dims)};
      } else if (other_dims.size() > 1) {
        other = Unravel(Ravel(looped, looped_dims), other_dims);
      }
      const std::vector<PrimExpr>& gin = loops_out[g] ? other : looped;
      const std::vector<PrimExpr>& gout = loops_out[g] ? looped : other;
      in_index.insert(in_index.end(), gin.begin(), gin.end());
      out_index.insert(out_index.end(), gout.begin(), gout.end());
    }
    return Store(out, out_index, Load(in, in_index));
  });
}

// A row-major copy with a run-time check of the element counts when they are
// not provably equal.
tir::Stmt CheckedRowMajorCopy(KernelBuilder& b, const tir::Buffer& in, const tir::Buffer& out) {
  std::vector<tir::Stmt> checks;
  const PrimExpr in_count = Product(in->shape), out_count = Product(out->shape);
  if (!arith::ProveEqual(in_count, out_count)) {
    checks.push_back(tir::AssertStmtNode::make(
        Eq(in_count, out_count), "argument 'x' of shape " + ir::PrintShape(in->shape) + " has " + DimText(in_count) +
                                     " elements, the result of shape " + ir::PrintShape(out->shape) + " has " +
                                     DimText(out_count)));
  }
  return tir::SeqStmtNode::make(Checks(std::move(checks), RowMajorCopy(b, in, out)));
}

// ---- reshape -------------------------------------------------------------------

// The factors of a product of dims (n * m * 4 is n, m and 4).
void Factors(const PrimExpr& dim, std::vector<PrimExpr>* out) {
  const auto* mul = dim.as<tir::BinaryOpNode>();
  if (mul != nullptr && mul->kind == PrimExprKind::kMul) {
    Factors(mul->a, out);
    Factors(mul->b, out);
  } else {
    out->push_back(dim);
  }
}

// product(numerator) / product(denominator), cancelling provably equal factors
// first so that (b * t * 64) / b is t * 64; what does not cancel becomes a floor
// division (the kernel checks the element count).
PrimExpr DivideDims(const std::vector<PrimExpr>& numerator, const std::vector<PrimExpr>& denominator) {
  std::vector<PrimExpr> num, den;
  for (const PrimExpr& d : numerator) Factors(SimplifyDim(d), &num);
  for (const PrimExpr& d : denominator) Factors(SimplifyDim(d), &den);
  std::vector<PrimExpr> rest;
  for (const PrimExpr& d : den) {
    auto it = std::find_if(num.begin(), num.end(), [&](const PrimExpr& n) { return arith::ProveEqual(n, d); });
    if (it != num.end()) {
      num.erase(it);
    } else {
      rest.push_back(d);
    }
  }
  return SimplifyDim(tir::FloorDiv(Product(num), Product(rest)));
}

StatusOr<StructInfo> InferReshape(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0));
  int ndim = 0;
  STRATA_ASSIGN_OR_RETURN(std::optional<std::vector<PrimExpr>> target, ShapeDims(call, 1, &ndim));
  if (!target) return TensorStructInfoNode::make_ndim(ndim, x->dtype);
  const std::string target_text = ir::PrintShape(*target);
  std::vector<std::optional<PrimExpr>> dims;
  std::optional<size_t> inferred;
  for (size_t k = 0; k < target->size(); ++k) {
    const PrimExpr& t = (*target)[k];
    std::optional<int64_t> c = arith::AsConstant(t);
    if (c == -1) {
      if (inferred) {
        return ErrorStatus() << call.name() << ": target shape " << target_text << " has more than one -1";
      }
      inferred = k;
      dims.push_back(std::nullopt);
    } else if (c == 0) {
      if (x->ndim >= 0 && static_cast<int>(k) >= x->ndim) {
        return ErrorStatus() << call.name() << ": dimension " << k << " of target shape " << target_text
                             << " is 0 (copy the input's), but " << ArgText(call, 0) << " has rank " << x->ndim;
      }
      dims.push_back(x->shape ? std::optional<PrimExpr>((*x->shape)[k]) : std::nullopt);
    } else if (c && *c < 0) {
      return ErrorStatus() << call.name() << ": dimension " << k << " of target shape " << target_text << " is " << *c
                           << " (expected a size, 0 to copy the input's or -1 to infer it)";
    } else {
      dims.push_back(t);
    }
  }
  if (!x->shape) return TensorFromDims(dims, x->dtype);

  const PrimExpr in_count = Product(*x->shape);
  if (inferred) {
    std::vector<PrimExpr> others;
    for (const auto& d : dims) {
      if (d) others.push_back(*d);
    }
    const PrimExpr divisor = Product(others);
    if (arith::AsConstant(divisor) == 0) {
      return ErrorStatus() << call.name() << ": cannot infer the -1 of target shape " << target_text << " for "
                           << ArgText(call, 0) << ": the other dimensions hold no elements";
    }
    std::optional<int64_t> c_in = arith::AsConstant(in_count), c_div = arith::AsConstant(divisor);
    if (c_in && c_div && *c_in % *c_div != 0) {
      return ErrorStatus() << call.name() << ": cannot reshape " << ArgText(call, 0) << " (" << *c_in
                           << " elements) to " << target_text << ": " << *c_in << " is not a multiple of " << *c_div;
    }
    dims[*inferred] = DivideDims(*x->shape, others);
  }
  std::vector<PrimExpr> out;
  for (const auto& d : dims) out.push_back(*d);
  const PrimExpr out_count = Product(out);
  std::optional<int64_t> difference = arith::AsConstant(in_count - out_count);
  if (difference && *difference != 0) {
    return ErrorStatus() << call.name() << ": cannot reshape " << ArgText(call, 0) << " (" << DimText(in_count)
                         << " elements) to " << target_text << " (" << DimText(out_count) << " elements)";
  }
  return TensorStructInfoNode::make(std::move(out), x->dtype);
}

// reshape and flatten. The count check appears only when the kernel cannot
// prove the counts equal (always provable for flatten, unless a compound input
// dim such as n * 2 is bound as a variable of its own).
StatusOr<tir::Stmt> ReshapeKernel(const OpCall& call, KernelBuilder& b) {
  STRATA_ASSIGN_OR_RETURN(tir::Buffer in, b.Input(call.arg(0), "A", call.arg_name(0)));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer out, b.Output(call.call().struct_info, "Out"));
  return CheckedRowMajorCopy(b, in, out);
}

// ---- flatten -------------------------------------------------------------------

// ONNX Flatten: axis in [-ndim, ndim].
StatusOr<int64_t> FlattenAxis(const OpCall& call, int64_t ndim) {
  const int64_t axis = call.IntAttr("axis");
  if (axis < -ndim || axis > ndim) {
    return ErrorStatus() << call.name() << ": axis " << axis << " is out of range for a tensor of rank " << ndim
                         << " (expected " << -ndim << " <= axis <= " << ndim << ")";
  }
  return axis < 0 ? axis + ndim : axis;
}

StatusOr<StructInfo> InferFlatten(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0));
  if (x->ndim < 0) return TensorStructInfoNode::make_ndim(2, x->dtype);
  STRATA_ASSIGN_OR_RETURN(int64_t axis, FlattenAxis(call, x->ndim));
  if (!x->shape) return TensorStructInfoNode::make_ndim(2, x->dtype);
  const std::vector<PrimExpr>& s = *x->shape;
  return TensorStructInfoNode::make({Product({s.begin(), s.begin() + axis}), Product({s.begin() + axis, s.end()})},
                                    x->dtype);
}
// ---- expand_dims, squeeze ------------------------------------------------------

StatusOr<std::vector<bool>> InsertedAxes(const OpCall& call, int64_t in_ndim) {
  auto [values, single] = IntOrInts(call, "axis");
  const int64_t out_ndim = in_ndim + static_cast<int64_t>(values.size());
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> axes, DistinctAxes(call, "axis", values, out_ndim));
  std::vector<bool> inserted(out_ndim, false);
  for (int64_t a : axes) inserted[a] = true;
  return inserted;
}

StatusOr<StructInfo> InferExpandDims(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0));
  if (x->ndim < 0) return call.arg_sinfo(0);
  STRATA_ASSIGN_OR_RETURN(std::vector<bool> inserted, InsertedAxes(call, x->ndim));
  if (!x->shape) return TensorStructInfoNode::make_ndim(static_cast<int>(inserted.size()), x->dtype);
  std::vector<PrimExpr> dims;
  size_t k = 0;
  for (bool ins : inserted) dims.push_back(ins ? PrimExpr(1) : (*x->shape)[k++]);
  return TensorStructInfoNode::make(std::move(dims), x->dtype);
}

StatusOr<tir::Stmt> ExpandDimsKernel(const OpCall& call, KernelBuilder& b) {
  STRATA_ASSIGN_OR_RETURN(tir::Buffer in, b.Input(call.arg(0), "A", call.arg_name(0)));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer out, b.Output(call.call().struct_info, "Out"));
  STRATA_ASSIGN_OR_RETURN(std::vector<bool> inserted, InsertedAxes(call, static_cast<int64_t>(in->shape.size())));
  return CopyNest(b, out->shape, [&](const std::vector<PrimExpr>& index) {
    std::vector<PrimExpr> in_index;
    for (size_t d = 0; d < index.size(); ++d) {
      if (!inserted[d]) in_index.push_back(index[d]);
    }
    return Store(out, index, Load(in, in_index));
  });
}

// The squeezed axes of x (known shape): the listed ones, or every axis of
// constant extent 1.
StatusOr<std::vector<bool>> SqueezedAxes(const OpCall& call, const std::vector<PrimExpr>& shape) {
  std::vector<bool> squeezed(shape.size(), false);
  if (!call.HasAttr("axis")) {
    for (size_t d = 0; d < shape.size(); ++d) squeezed[d] = arith::AsConstant(shape[d]) == 1;
    return squeezed;
  }
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> axes, DistinctAxes(call, "axis", IntOrInts(call, "axis").first,
                                                                  static_cast<int64_t>(shape.size())));
  for (int64_t a : axes) {
    std::optional<int64_t> c = arith::AsConstant(shape[a]);
    if (c && *c != 1) {
      return ErrorStatus() << call.name() << ": cannot squeeze axis " << a << " of " << ArgText(call, 0)
                           << ": its extent is " << *c << ", not 1";
    }
    squeezed[a] = true;
  }
  return squeezed;
}

StatusOr<StructInfo> InferSqueeze(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0));
  if (x->ndim < 0) return call.arg_sinfo(0);
  if (!x->shape) {
    // Without the dims, which axes are 1 is only known when they are listed.
    if (!call.HasAttr("axis")) return TensorStructInfoNode::make_ndim(-1, x->dtype);
    STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> axes,
                            DistinctAxes(call, "axis", IntOrInts(call, "axis").first, x->ndim));
    return TensorStructInfoNode::make_ndim(x->ndim - static_cast<int>(axes.size()), x->dtype);
  }
  STRATA_ASSIGN_OR_RETURN(std::vector<bool> squeezed, SqueezedAxes(call, *x->shape));
  std::vector<PrimExpr> dims;
  for (size_t d = 0; d < squeezed.size(); ++d) {
    if (!squeezed[d]) dims.push_back((*x->shape)[d]);
  }
  return TensorStructInfoNode::make(std::move(dims), x->dtype);
}

StatusOr<tir::Stmt> SqueezeKernel(const OpCall& call, KernelBuilder& b) {
  STRATA_ASSIGN_OR_RETURN(tir::Buffer in, b.Input(call.arg(0), "A", call.arg_name(0)));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer out, b.Output(call.call().struct_info, "Out"));
  STRATA_ASSIGN_OR_RETURN(std::vector<bool> squeezed, SqueezedAxes(call, in->shape));
  std::vector<tir::Stmt> checks;
  for (size_t d = 0; d < squeezed.size(); ++d) {
    if (squeezed[d] && !arith::AsConstant(in->shape[d])) {
      checks.push_back(tir::AssertStmtNode::make(
          Eq(in->shape[d], 1),
          "argument 'x' dimension " + std::to_string(d) + " (" + DimText(in->shape[d]) + ") must be 1 to be squeezed"));
    }
  }
  tir::Stmt copy = CopyNest(b, out->shape, [&](const std::vector<PrimExpr>& index) {
    std::vector<PrimExpr> in_index;
    size_t k = 0;
    for (bool s : squeezed) in_index.push_back(s ? PrimExpr(0) : index[k++]);
    return Store(out, index, Load(in, in_index));
  });
  return tir::SeqStmtNode::make(Checks(std::move(checks), copy));
}
}  // namespace

std::vector<OpDef> ReshapeOps() {
  const auto required_ints = [](const std::string& name) { return AttrDef{name, AttrKind::kInts, std::nullopt}; };
  const auto optional_ints = [](const std::string& name) {
    return AttrDef{name, AttrKind::kInts, std::nullopt, /*optional=*/true};
  };
  const auto int_attr = [](const std::string& name, int64_t value) {
    return AttrDef{name, AttrKind::kInt, ir::AttrValue(value)};
  };
  return {
      OpDef{"reshape", {"x", "shape"}, 0, {}, InferReshape, ReshapeKernel},
      OpDef{"flatten", {"x"}, 0, {int_attr("axis", 1)}, InferFlatten, ReshapeKernel},
      OpDef{"expand_dims", {"x"}, 0, {required_ints("axis")}, InferExpandDims, ExpandDimsKernel},
      OpDef{"squeeze", {"x"}, 0, {optional_ints("axis")}, InferSqueeze, SqueezeKernel},
  };
}

}  // namespace strata::op
