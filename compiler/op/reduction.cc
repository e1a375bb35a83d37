// Reductions: sum, mean, max, min and prod of a tensor over a set of axes.
//
// Two kernel schedules, chosen by whether the innermost (non-unit) axis is
// reduced:
//   - innermost reduced: each output element is one parallel task's scalar
//     reduction; the innermost axis is read in strips of L contiguous elements
//     into an L-lane local accumulator (a vectorized loop), the lanes are folded
//     pairwise at the end. This vectorizes max and min too, which LLVM would not
//     do for a scalar accumulator under IEEE semantics.
//   - innermost kept: the innermost axis is cut into tiles of T elements; a
//     tile's accumulators live in a local buffer that the reduced loops update
//     with one vectorized, contiguous pass per reduced index.
// Outer kept axes are the parallel loops. Axes of constant extent 1 get no loop.
#include <bit>
#include <cmath>
#include <limits>

#include "compiler/ir/arith/simplify.h"
#include "compiler/op/builtin_ops.h"
#include "compiler/op/kernel_builder.h"
#include "compiler/op/op_util.h"
#include "compiler/op/tir_build.h"

namespace strata::op {
namespace {

using tir::ForKind;
using tir::ForNode;
using tir::PrimExprKind;

enum class Reducer { kSum, kMean, kMax, kMin, kProd };

// Accumulators span this many bytes of contiguous elements: two AVX-512
// registers of independent lanes for innermost-reduced strips; for kept tiles,
// row segments long enough to stream well (1 KiB measured best of 256 B-4 KiB
// on column sums of a 4096 x 4096 f32 matrix).
constexpr int64_t kStripBytes = 128;
constexpr int64_t kTileBytes = 1024;

// ---- inference ---------------------------------------------------------------

// Which axes of a rank-`ndim` tensor are reduced: the `axes` attribute
// (negative axes count from the end), or every axis when it is absent.
StatusOr<std::vector<bool>> ReducedAxes(const OpCall& call, int64_t ndim) {
  std::vector<bool> reduced(ndim, !call.HasAttr("axes"));
  if (!call.HasAttr("axes")) return reduced;
  for (int64_t axis : call.IntsAttr("axes")) {
    STRATA_ASSIGN_OR_RETURN(int64_t a, NormalizeAxis(call, "axis", axis, ndim));
    if (reduced[a]) {
      return ErrorStatus() << call.name() << ": axis " << a << " appears twice in attribute 'axes'";
    }
    reduced[a] = true;
  }
  return reduced;
}

StatusOr<StructInfo> InferReduce(const OpCall& call, Reducer reducer) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0));
  if (x->dtype.is_bool()) {
    return ErrorStatus() << call.name() << ": " << ArgText(call, 0) << " must be a numeric tensor; cast it first";
  }
  if (reducer == Reducer::kMean && !x->dtype.is_void() && !x->dtype.is_float()) {
    return ErrorStatus() << call.name() << ": " << ArgText(call, 0) << " must be a float tensor";
  }
  const bool keepdims = call.BoolAttr("keepdims");
  if (x->ndim < 0) {
    // Reducing every axis without keepdims gives a scalar whatever the rank.
    if (!call.HasAttr("axes") && !keepdims) return TensorStructInfoNode::make({}, x->dtype);
    return TensorStructInfoNode::make_ndim(-1, x->dtype);
  }
  STRATA_ASSIGN_OR_RETURN(std::vector<bool> reduced, ReducedAxes(call, x->ndim));
  int out_ndim = 0;
  for (bool r : reduced) out_ndim += keepdims || !r;
  if (!x->shape) return TensorStructInfoNode::make_ndim(out_ndim, x->dtype);
  std::vector<PrimExpr> dims;
  for (size_t d = 0; d < reduced.size(); ++d) {
    if (!reduced[d]) {
      dims.push_back((*x->shape)[d]);
    } else if (keepdims) {
      dims.push_back(1);
    }
  }
  return TensorStructInfoNode::make(std::move(dims), x->dtype);
}

// ---- kernels -----------------------------------------------------------------

using build::Bin;

// The accumulation of one reducer in dtype `acc`: identity, combine and the
// final value written to the output of dtype `out`.
struct Accumulation {
  Reducer reducer;
  DataType acc, out;

  PrimExpr Identity() const {
    if (reducer == Reducer::kSum || reducer == Reducer::kMean) {
      return acc.is_float() ? tir::FloatImm(acc, 0.0) : tir::IntImm(acc, 0);
    }
    if (reducer == Reducer::kProd) return acc.is_float() ? tir::FloatImm(acc, 1.0) : tir::IntImm(acc, 1);
    const bool max = reducer == Reducer::kMax;
    if (acc.is_float()) return tir::FloatImm(acc, max ? -INFINITY : INFINITY);
    // The extreme values of the integer type, two's complement.
    const int bits = acc.bits();
    if (acc.is_uint()) return tir::IntImm(acc, max ? 0 : (bits == 64 ? -1 : (int64_t{1} << bits) - 1));
    const int64_t lowest = bits == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (bits - 1));
    return tir::IntImm(acc, max ? lowest : -(lowest + 1));
  }

  // max/min propagate NaN as numpy does: a NaN operand wins.
  PrimExpr Combine(const PrimExpr& a, const PrimExpr& x) const {
    switch (reducer) {
      case Reducer::kSum:
      case Reducer::kMean: return a + x;
      case Reducer::kProd: return a * x;
      case Reducer::kMax:
        if (!acc.is_float()) return tir::Max(a, x);
        return tir::SelectNode::make(Bin(PrimExprKind::kOr, Bin(PrimExprKind::kLT, a, x), Bin(PrimExprKind::kNE, x, x)),
                                     x, a);
      case Reducer::kMin:
        if (!acc.is_float()) return tir::Min(a, x);
        return tir::SelectNode::make(Bin(PrimExprKind::kOr, Bin(PrimExprKind::kLT, x, a), Bin(PrimExprKind::kNE, x, x)),
                                     x, a);
    }
    return a;
  }

  PrimExpr Load(const tir::Buffer& buffer, std::vector<PrimExpr> index) const {
    PrimExpr value = tir::BufferLoadNode::make(buffer, std::move(index));
    return acc == out ? value : tir::CastNode::make(acc, value);
  }

  // `count` is the number of reduced elements (mean divides by it).
  PrimExpr Finalize(const PrimExpr& a, const PrimExpr& count) const {
    PrimExpr value = reducer == Reducer::kMean ? Bin(PrimExprKind::kDiv, a, tir::CastNode::make(acc, count)) : a;
    return acc == out ? value : tir::CastNode::make(out, value);
  }
};

tir::Stmt Loop(const tir::Var& var, PrimExpr extent, ForKind kind, tir::Stmt body) {
  return ForNode::make(var, 0, arith::Simplify(extent), kind, std::move(body));
}

// Wraps `body` in serial loops over `vars` (outermost first); the outermost is
// parallel when `parallel`.
tir::Stmt Nest(const std::vector<tir::Var>& vars, const std::vector<PrimExpr>& extents, tir::Stmt body, bool parallel) {
  for (size_t k = vars.size(); k-- > 0;) {
    body = Loop(vars[k], extents[k], parallel && k == 0 ? ForKind::kParallel : ForKind::kSerial, std::move(body));
  }
  return body;
}

StatusOr<tir::Stmt> ReduceKernel(const OpCall& call, KernelBuilder& b, Reducer reducer) {
  STRATA_ASSIGN_OR_RETURN(tir::Buffer in, b.Input(call.arg(0), "A", "x"));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer out, b.Output(call.call().struct_info, "Out"));
  const size_t rank = in->shape.size();
  STRATA_ASSIGN_OR_RETURN(std::vector<bool> reduced, ReducedAxes(call, static_cast<int64_t>(rank)));
  const bool keepdims = call.BoolAttr("keepdims");
  // f16 accumulates in f32, whose 24-bit mantissa keeps small addends. f32 sums
  // stay in f32, as in numpy: each lane adds extent / L elements in sequence, so
  // the rounding error grows with that count (f64 lanes would halve the speed).
  const DataType acc_dtype = in->dtype == DataType::Float(16) ? DataType::F32() : in->dtype;
  const Accumulation acc{reducer, acc_dtype, in->dtype};

  PrimExpr count = 1;
  for (size_t d = 0; d < rank; ++d) {
    if (reduced[d]) count = count * in->shape[d];
  }
  count = arith::Simplify(count);

  // Index of every input axis: a loop variable, or 0 for a unit axis. The
  // innermost axis with a loop decides the schedule.
  std::vector<PrimExpr> index(rank);
  std::vector<tir::Var> kept_vars, reduced_vars;
  std::vector<PrimExpr> kept_extents, reduced_extents;
  int inner = -1;
  for (size_t d = 0; d < rank; ++d) {
    if (arith::AsConstant(in->shape[d]) == 1) {
      index[d] = 0;
      continue;
    }
    std::string name = reduced[d] ? "r" : "i";
    tir::Var v = b.LoopVar(name += std::to_string(d));
    index[d] = v;
    (reduced[d] ? reduced_vars : kept_vars).push_back(v);
    (reduced[d] ? reduced_extents : kept_extents).push_back(in->shape[d]);
    inner = static_cast<int>(d);
  }
  auto out_index = [&](const std::vector<PrimExpr>& in_index) {
    std::vector<PrimExpr> result;
    for (size_t d = 0; d < rank; ++d) {
      if (!reduced[d]) {
        result.push_back(in_index[d]);
      } else if (keepdims) {
        result.push_back(0);
      }
    }
    return result;
  };

  if (inner >= 0 && reduced[inner]) {
    // Innermost axis reduced: strips of `lanes` elements into an accumulator
    // of `lanes` lanes, folded pairwise.
    const PrimExpr extent = reduced_extents.back();
    int64_t lanes = kStripBytes / acc_dtype.bytes();
    if (std::optional<int64_t> e = arith::AsConstant(extent)) {
      lanes = std::min<int64_t>(lanes, std::bit_ceil(static_cast<uint64_t>(*e)));
    }
    tir::Buffer lane_acc = KernelBuilder::Local("acc", acc_dtype, {lanes});
    auto update = [&](const tir::Var& lane, const PrimExpr& offset) {
      std::vector<PrimExpr> idx = index;
      idx[inner] = arith::Simplify(offset + lane);
      return tir::BufferStoreNode::make(
          lane_acc, {lane}, acc.Combine(tir::BufferLoadNode::make(lane_acc, {lane}), acc.Load(in, std::move(idx))));
    };
    std::vector<tir::Stmt> strips;
    const PrimExpr full = arith::Simplify(tir::FloorDiv(extent, lanes));
    if (arith::AsConstant(full) != 0) {
      tir::Var strip = b.LoopVar("strip"), lane = b.LoopVar("lane");
      strips.push_back(
          Loop(strip, full, ForKind::kSerial, Loop(lane, lanes, ForKind::kVectorized, update(lane, strip * lanes))));
    }
    const PrimExpr rest = arith::Simplify(tir::FloorMod(extent, lanes));
    if (arith::AsConstant(rest) != 0) {
      tir::Var lane = b.LoopVar("lane");
      strips.push_back(Loop(lane, rest, ForKind::kVectorized, update(lane, full * lanes)));  // distinct lanes
    }
    reduced_vars.pop_back();
    reduced_extents.pop_back();
    tir::Var lane = b.LoopVar("lane");
    std::vector<tir::Stmt> body = {
        Loop(lane, lanes, ForKind::kVectorized, tir::BufferStoreNode::make(lane_acc, {lane}, acc.Identity())),
        Nest(reduced_vars, reduced_extents, tir::SeqStmtNode::make(std::move(strips)), false)};
    for (int64_t half = lanes / 2; half >= 1; half /= 2) {
      auto fold = [&](const PrimExpr& l) {
        const PrimExpr other = tir::BufferLoadNode::make(lane_acc, {arith::Simplify(l + half)});
        return tir::BufferStoreNode::make(lane_acc, {l}, acc.Combine(tir::BufferLoadNode::make(lane_acc, {l}), other));
      };
      tir::Var l = b.LoopVar("lane");
      body.push_back(half == 1 ? fold(0) : Loop(l, half, ForKind::kUnrolled, fold(l)));
    }
    body.push_back(tir::BufferStoreNode::make(out, out_index(index),
                                              acc.Finalize(tir::BufferLoadNode::make(lane_acc, {0}), count)));
    tir::Stmt per_output = tir::AllocateNode::make(lane_acc, tir::SeqStmtNode::make(std::move(body)));
    return Nest(kept_vars, kept_extents, per_output, true);
  }

  // Innermost axis kept (or no axis with a loop): tiles of the innermost kept
  // axis accumulate in a local buffer.
  if (inner < 0) {
    // Every axis has extent 1: one element.
    return tir::BufferStoreNode::make(out, out_index(index),
                                      acc.Finalize(acc.Combine(acc.Identity(), acc.Load(in, index)), count));
  }
  const PrimExpr extent = kept_extents.back();
  const tir::Var inner_var = kept_vars.back();
  kept_vars.pop_back();
  kept_extents.pop_back();
  int64_t tile = kTileBytes / acc_dtype.bytes();
  std::optional<int64_t> constant_extent = arith::AsConstant(extent);
  PrimExpr start = 0, width = extent;
  if (constant_extent && *constant_extent <= tile) {
    tile = *constant_extent;
  } else {
    tir::Var tile_var = b.LoopVar("tile");
    start = tile_var * tile;
    width = constant_extent && *constant_extent % tile == 0 ? PrimExpr(tile) : tir::Min(PrimExpr(tile), extent - start);
    kept_vars.push_back(tile_var);
    kept_extents.push_back(tir::FloorDiv(extent + (tile - 1), tile));
  }
  tir::Buffer tile_acc = KernelBuilder::Local("acc", acc_dtype, {tile});
  std::vector<PrimExpr> idx = index;
  idx[inner] = arith::Simplify(start + inner_var);
  auto over_tile = [&](tir::Stmt body) {
    return ForNode::make(inner_var, 0, arith::Simplify(width), ForKind::kVectorized, std::move(body));
  };
  const PrimExpr acc_value = tir::BufferLoadNode::make(tile_acc, {inner_var});
  std::vector<tir::Stmt> body = {
      over_tile(tir::BufferStoreNode::make(tile_acc, {inner_var}, acc.Identity())),
      Nest(reduced_vars, reduced_extents,
           over_tile(tir::BufferStoreNode::make(tile_acc, {inner_var}, acc.Combine(acc_value, acc.Load(in, idx)))),
           false),
      over_tile(tir::BufferStoreNode::make(out, out_index(idx), acc.Finalize(acc_value, count)))};
  tir::Stmt per_tile = tir::AllocateNode::make(tile_acc, tir::SeqStmtNode::make(std::move(body)));
  return Nest(kept_vars, kept_extents, per_tile, true);
}

OpDef Reduction(const std::string& name, Reducer reducer) {
  return OpDef{name,
               {"x"},
               0,
               {AttrDef{"axes", AttrKind::kInts, std::nullopt, /*optional=*/true},
                AttrDef{"keepdims", AttrKind::kBool, ir::AttrValue(false)}},
               [reducer](const OpCall& call) { return InferReduce(call, reducer); },
               [reducer](const OpCall& call, KernelBuilder& b) { return ReduceKernel(call, b, reducer); }};
}

}  // namespace

std::vector<OpDef> ReductionOps() {
  return {Reduction("sum", Reducer::kSum), Reduction("mean", Reducer::kMean), Reduction("max", Reducer::kMax),
          Reduction("min", Reducer::kMin), Reduction("prod", Reducer::kProd)};
}

}  // namespace strata::op
