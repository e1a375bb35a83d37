// The blocked NCHW[x]c layout: to_nchwc and from_nchwc move a tensor between
// NCHW and [N, C / b, H, W, b], and max_pool2d_nchwc / avg_pool2d_nchwc pool in
// the blocked layout. docs/ops/nchwc.md is the reference.
//
// Element (n, c, h, w) of the plain tensor is [n, c / b, h, w, c % b] of the
// blocked one, so a row (n, cb, h) of the blocked tensor is W * b contiguous
// values gathered from b channel planes. The kernels follow the rules of nn.cc:
// vectorized loops are innermost with straight-line bodies, and every output
// element is stored exactly once (fusion appends epilogues to that store).
#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/analysis/struct_info_util.h"
#include "compiler/ir/arith/simplify.h"
#include "compiler/ir/printer.h"
#include "compiler/op/builtin_ops.h"
#include "compiler/op/kernel_builder.h"
#include "compiler/op/op_util.h"
#include "compiler/op/pool_kernel.h"
#include "compiler/op/tir_build.h"
#include "compiler/op/window.h"

namespace strata::op {
namespace {

using analysis::DimText;
using namespace build;  // NOLINT: the kernel builders

// ---- inference -----------------------------------------------------------------

constexpr const char* kBlockedLayout = "(N, C / block, H, W, block)";

Status CheckFloatOrInt(const OpCall& call, size_t i, DataType dtype) {
  if (dtype.is_void() || dtype.is_float() || dtype.is_integral()) return Status::Ok();
  return ErrorStatus() << call.name() << ": " << ArgText(call, i) << " must be a float or integer tensor";
}

Status CheckRank5(const OpCall& call, size_t i, const TensorStructInfoNode* t) {
  if (t->ndim < 0 || t->ndim == 5) return Status::Ok();
  return ErrorStatus() << call.name() << ": " << ArgText(call, i) << " must be 5-D " << kBlockedLayout;
}

// The block (last) dimension of a blocked tensor of known shape: a positive constant.
StatusOr<int64_t> BlockDim(const OpCall& call, size_t i, const std::vector<PrimExpr>& shape) {
  std::optional<int64_t> block = arith::AsConstant(shape[4]);
  if (block && *block >= 1) return *block;
  return ErrorStatus() << call.name() << ": the block dimension (dimension 4) of " << ArgText(call, i)
                       << " must be a positive constant, got " << DimText(shape[4]);
}

StatusOr<StructInfo> InferToNchwc(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0));
  STRATA_RETURN_IF_ERROR(CheckFloatOrInt(call, 0, x->dtype));
  const int64_t block = call.IntAttr("block");
  if (block < 1) return ErrorStatus() << call.name() << ": attribute 'block' must be positive, got " << block;
  STRATA_RETURN_IF_ERROR(CheckRank4(call, 0, x, "(N, C, H, W)"));
  if (!x->shape) return TensorStructInfoNode::make_ndim(5, x->dtype);
  const std::vector<PrimExpr>& xs = *x->shape;
  // A constant remainder (a constant C, or one such as 8 * k + 4) is an error;
  // a symbolic one is checked by the kernel.
  std::optional<int64_t> rest = arith::AsConstant(SimplifyDim(tir::FloorMod(xs[1], block)));
  if (rest && *rest != 0) {
    return ErrorStatus() << call.name() << ": the " << DimText(xs[1]) << " channels of " << ArgText(call, 0)
                         << " are not divisible by block=" << block;
  }
  return TensorStructInfoNode::make({xs[0], SimplifyDim(tir::FloorDiv(xs[1], block)), xs[2], xs[3], block}, x->dtype);
}

StatusOr<StructInfo> InferFromNchwc(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0));
  STRATA_RETURN_IF_ERROR(CheckFloatOrInt(call, 0, x->dtype));
  STRATA_RETURN_IF_ERROR(CheckRank5(call, 0, x));
  if (!x->shape) return TensorStructInfoNode::make_ndim(4, x->dtype);
  const std::vector<PrimExpr>& xs = *x->shape;
  STRATA_ASSIGN_OR_RETURN(int64_t block, BlockDim(call, 0, xs));
  return TensorStructInfoNode::make({xs[0], SimplifyDim(xs[1] * block), xs[2], xs[3]}, x->dtype);
}

StatusOr<StructInfo> InferPoolNchwc(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0));
  STRATA_RETURN_IF_ERROR(CheckFloat(call, 0, x->dtype));
  STRATA_ASSIGN_OR_RETURN(PoolAttrs a, ReadPoolAttrs(call));
  STRATA_RETURN_IF_ERROR(CheckRank5(call, 0, x));
  if (!x->shape) return TensorStructInfoNode::make_ndim(5, x->dtype);
  const std::vector<PrimExpr>& xs = *x->shape;
  STRATA_RETURN_IF_ERROR(BlockDim(call, 0, xs).status());
  // The spatial dims are dims 2 and 3, as in NCHW.
  STRATA_ASSIGN_OR_RETURN(auto spatial, WindowOutput(call, xs, a.window, {a.size[0], a.size[1]}, a.ceil_mode,
                                                     "pool_size " + ir::PrintInts({a.size[0], a.size[1]})));
  return TensorStructInfoNode::make({xs[0], xs[1], spatial[0], spatial[1], xs[4]}, x->dtype);
}

// ---- to_nchwc, from_nchwc ------------------------------------------------------
//
// One parallel task per row (n, cb, h) of the blocked tensor: W * b contiguous
// values on the blocked side, b rows of W contiguous values, H * W apart, on
// the plain side. Moving a row is a transposition of a b x W tile.
//
// Up to 8 lanes (kMaxGroup): a loop along w whose body moves the b values of
// column w, one statement per lane. The plain side is b contiguous streams and
// the blocked side b accesses at stride b that together cover the row: LLVM's
// loop vectorizer makes them one interleaved group (b vector loads or stores
// and a b x VF transposition in registers). The loop has no vectorize hint on
// purpose: a forced width turns off LLVM's epilogue vectorization, so the
// W % 16 last columns of a row ran as scalar code with gathers, while the
// vectorizer's own choice is a VF-16 loop plus a VF-8 epilogue.
//
// More lanes: LLVM forms no interleaved group of more than 8 members and falls
// back to a scatter or gather per lane. The row then moves in chunks of
// ChunkColumns columns through a local tile T[b / s][chunk][s], with s the
// largest divisor of b up to 8: the plain side and T exchange full groups of s
// lanes (vectorized along the chunk's columns), T and the blocked side
// exchange s-lane vectors per column. The W % chunk last columns move one
// column at a time with the b lanes vectorized (a gather or a scatter on the
// plain side); so does every column when b has no divisor from 2 to 8.
//
// (1, 256, 56, 56) f32 on 2 cores (AMD EPYC, AVX-512), where a plain copy
// takes 105 us: to_nchwc 82 / 121 / 165 us at b = 4 / 8 / 16 and from_nchwc
// 95 / 194 us at b = 8 / 16; a forced width of 16 made b = 8 175 us, and one
// statement per lane made b = 16 390 us (to) and 360 us (from).

constexpr int64_t kMaxGroup = 8;
// Columns per chunk: at least 16, and at least one 64-byte vector of the dtype
// (a shorter constant trip count would be vectorized with masks, and LLVM
// has no masked interleaved groups for x86).
int64_t ChunkColumns(DataType dtype) { return std::max<int64_t>(16, 64 / dtype.bytes()); }

// The row-copy kernel of to_nchwc (`to_blocked`) or from_nchwc.
tir::Stmt RelayoutKernel(const tir::Buffer& plain, const tir::Buffer& blocked, int64_t block, bool to_blocked) {
  const PrimExpr width = blocked->shape[3];
  int64_t sub = 1;
  for (int64_t s = std::min(block, kMaxGroup); s >= 2 && sub == 1; --s) {
    if (block % s == 0) sub = s;
  }
  const int64_t chunk = ChunkColumns(blocked->dtype);
  return ParallelOver("r", {blocked->shape[0], blocked->shape[1], blocked->shape[2]}, [&](const Index& r) {
    const PrimExpr &n = r[0], &cb = r[1], &h = r[2];
    auto plain_at = [&](const PrimExpr& w, const PrimExpr& i) { return Index{n, cb * block + i, h, w}; };
    auto blocked_at = [&](const PrimExpr& w, const PrimExpr& i) { return Index{n, cb, h, w, i}; };
    // Lane i of column w.
    auto move = [&](const PrimExpr& w, const PrimExpr& i) {
      return to_blocked ? Store(blocked, blocked_at(w, i), Load(plain, plain_at(w, i)))
                        : Store(plain, plain_at(w, i), Load(blocked, blocked_at(w, i)));
    };
    // Every lane of column w, one statement each.
    auto column = [&](const PrimExpr& w) {
      std::vector<tir::Stmt> lanes;
      for (int64_t i = 0; i < block; ++i) lanes.push_back(move(w, i));
      return Seq(std::move(lanes));
    };
    auto one_by_one = [&](const PrimExpr& from, const PrimExpr& extent) {
      return Loop("wt", from, extent, ForKind::kSerial, [&](const PrimExpr& w) {
        return Loop("i", 0, block, ForKind::kVectorized, [&](const PrimExpr& i) { return move(w, i); });
      });
    };
    if (block <= kMaxGroup) return Loop("w", 0, width, ForKind::kSerial, column);
    if (sub == 1) return one_by_one(0, width);

    tir::Buffer tile = KernelBuilder::Local("T", blocked->dtype, {block / sub, chunk, sub});
    const PrimExpr chunks = S(tir::FloorDiv(width, chunk));
    tir::Stmt chunked = Loop("wc", 0, chunks, ForKind::kSerial, [&](const PrimExpr& wc) {
      // Plain side <-> T: one interleaved group of `sub` lanes per part.
      std::vector<tir::Stmt> groups;
      for (int64_t a = 0; a < block / sub; ++a) {
        groups.push_back(Loop("j", 0, chunk, ForKind::kVectorized, [&](const PrimExpr& j) {
          std::vector<tir::Stmt> lanes;
          for (int64_t k = 0; k < sub; ++k) {
            const Index p = plain_at(wc * chunk + j, a * sub + k);
            lanes.push_back(to_blocked ? Store(tile, {a, j, k}, Load(plain, p))
                                       : Store(plain, p, Load(tile, {a, j, k})));
          }
          return Seq(std::move(lanes));
        }));
      }
      // T <-> blocked side: `sub`-lane vectors per column.
      tir::Stmt vectors = Loop("j", 0, chunk, ForKind::kSerial, [&](const PrimExpr& j) {
        return Loop("a", 0, block / sub, ForKind::kUnrolled, [&](const PrimExpr& a) {
          return Loop("k", 0, sub, ForKind::kVectorized, [&](const PrimExpr& k) {
            const Index q = blocked_at(wc * chunk + j, a * sub + k);
            return to_blocked ? Store(blocked, q, Load(tile, {a, j, k})) : Store(tile, {a, j, k}, Load(blocked, q));
          });
        });
      });
      tir::Stmt body = to_blocked ? Seq({Seq(std::move(groups)), vectors}) : Seq({vectors, Seq(std::move(groups))});
      return tir::AllocateNode::make(tile, body);
    });
    const PrimExpr done = S(chunks * chunk);
    if (arith::CanProve(Eq(done, width))) return chunked;
    return Seq({chunked, one_by_one(done, S(width - done))});
  });
}

StatusOr<tir::Stmt> LegalizeToNchwc(const OpCall& call, KernelBuilder& b) {
  const int64_t block = call.IntAttr("block");
  STRATA_ASSIGN_OR_RETURN(tir::Buffer x, b.Input(call.arg(0), "X", "x"));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer y, b.Output(call.call().struct_info, "Y"));
  const PrimExpr channels = x->shape[1];
  std::vector<tir::Stmt> stmts;
  CheckAtRunTime(
      &stmts, Eq(tir::FloorMod(channels, block), 0),
      "channels of x (" + DimText(channels) + ") must be divisible by block (" + std::to_string(block) + ")");
  stmts.push_back(RelayoutKernel(x, y, block, true));
  return Seq(std::move(stmts));
}

StatusOr<tir::Stmt> LegalizeFromNchwc(const OpCall& call, KernelBuilder& b) {
  STRATA_ASSIGN_OR_RETURN(tir::Buffer x, b.Input(call.arg(0), "X", "x"));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer y, b.Output(call.call().struct_info, "Y"));
  STRATA_ASSIGN_OR_RETURN(const int64_t block, BlockDim(call, 0, x->shape));
  return RelayoutKernel(y, x, block, false);
}

// ---- max_pool2d_nchwc, avg_pool2d_nchwc ----------------------------------------
//
// LegalizePool's schedule (nn.cc) with the block's lanes as the innermost,
// vectorized loop: one parallel task per output row (n, cb, oh); the window's
// rows get their clamped index and in-input flag once per task; output columns
// are split into the interior, where every tap column is inside the input and
// the taps are plain loads, and the border columns before and after it, whose
// clamped column indices and flags are computed once per column, outside the
// loop over the lanes. The taps are unrolled into one expression.

StatusOr<tir::Stmt> LegalizePoolNchwc(const OpCall& call, KernelBuilder& b, PoolKind kind) {
  STRATA_ASSIGN_OR_RETURN(const PoolKernelSetup setup, BeginPoolKernel(call, b, kind));
  const auto& [a, include_pad, x, y, dt, height, width, out_w, sh, sw, dh, dw, pt, pl, pb, pr, init] = setup;
  STRATA_ASSIGN_OR_RETURN(const int64_t block, BlockDim(call, 0, x->shape));
  auto combine = [&](const PrimExpr& acc, const PrimExpr& v) {
    return kind == PoolKind::kMax ? tir::Max(acc, v) : acc + v;
  };
  const auto& clamp = ClampToExtent;
  const auto& inside = InsideExtent;
  const auto& count = CountTrue;
  using Lets = std::vector<std::pair<tir::Var, PrimExpr>>;
  // `value` as a variable bound in `lets`, unless it is a constant.
  auto bind = [](Lets* lets, const std::string& name, DataType dtype, const PrimExpr& value) -> PrimExpr {
    if (dtype.is_bool() ? IsTrue(value) : arith::AsConstant(value).has_value()) return value;
    tir::Var var(name, dtype);
    lets->emplace_back(var, value);
    return var;
  };
  auto wrap = [](const Lets& lets, tir::Stmt body) {
    for (size_t k = lets.size(); k-- > 0;) body = Let(lets[k].first, lets[k].second, body);
    return body;
  };

  return ParallelOver("t", {x->shape[0], x->shape[1], y->shape[2]}, [&](const Index& t) {
    const PrimExpr &n = t[0], &cb = t[1], &oh = t[2];
    // Per window row: its (clamped) index and whether it is inside the input.
    std::vector<PrimExpr> rows, rows_ok, rows_counted;
    Lets task_lets;
    // Floor mode without bottom padding: the last window ends inside the input.
    const bool rows_end_inside = !a.ceil_mode && pb == 0;
    for (int64_t kh = 0; kh < a.size[0]; ++kh) {
      const PrimExpr r = S(oh * sh + (kh * dh - pt));
      const PrimExpr ok = rows_end_inside ? AllOf({Ge(r, 0)}) : inside(r, height);
      const std::string name = "row" + std::to_string(kh);
      rows.push_back(IsTrue(ok) ? r : bind(&task_lets, name, DataType::I64(), S(clamp(r, height))));
      rows_ok.push_back(bind(&task_lets, name + "_ok", DataType::Bool(), ok));
      rows_counted.push_back(include_pad ? AllOf({Lt(r, height + pb)}) : rows_ok.back());
    }
    const PrimExpr rows_in_window =
        kind == PoolKind::kAvg ? bind(&task_lets, "rows_in_window", DataType::I64(), count(rows_counted)) : PrimExpr(0);

    // Output column ow: its tap columns (clamped and flagged at the border),
    // then the lanes of the block.
    auto column = [&](const PrimExpr& ow, bool interior) {
      Lets lets;
      std::vector<PrimExpr> cols, cols_ok, cols_counted;
      for (int64_t kw = 0; kw < a.size[1]; ++kw) {
        const PrimExpr col = S(ow * sw + (kw * dw - pl));
        const PrimExpr ok = interior ? AllOf({}) : inside(col, width);
        const std::string name = "col" + std::to_string(kw);
        cols.push_back(IsTrue(ok) ? col : bind(&lets, name, DataType::I64(), S(clamp(col, width))));
        cols_ok.push_back(bind(&lets, name + "_ok", DataType::Bool(), ok));
        cols_counted.push_back(include_pad ? AllOf({Lt(col, width + pr)}) : cols_ok.back());
      }
      PrimExpr scale;
      if (kind == PoolKind::kAvg) {
        PrimExpr divisor = S(rows_in_window * (interior && !include_pad ? PrimExpr(a.size[1]) : count(cols_counted)));
        if (!arith::CanProve(Ge(divisor, 1))) divisor = tir::Max(divisor, 1);
        scale = CastTo(dt, divisor);
        if (!arith::AsConstant(divisor)) {
          tir::Var var("divisor", dt);
          lets.emplace_back(var, scale);
          scale = var;
        }
      }
      tir::Stmt lanes = Loop("i", 0, block, ForKind::kVectorized, [&](const PrimExpr& i) {
        PrimExpr total;
        for (int64_t kw = 0; kw < a.size[1]; ++kw) {
          for (int64_t kh = 0; kh < a.size[0]; ++kh) {
            PrimExpr tap = Load(x, {n, cb, rows[kh], cols[kw], i});
            const PrimExpr ok = AllOf({rows_ok[kh], cols_ok[kw]});
            if (!IsTrue(ok)) tap = tir::SelectNode::make(ok, tap, init);
            total = total.defined() ? combine(total, tap) : tap;
          }
        }
        return Store(y, {n, cb, oh, ow, i}, kind == PoolKind::kMax ? total : Div(total, scale));
      });
      return wrap(lets, lanes);
    };
    std::vector<tir::Stmt> loops;
    auto columns = [&](const std::string& name, const PrimExpr& from, const PrimExpr& extent, bool interior) {
      if (arith::AsConstant(extent) == 0) return;
      loops.push_back(
          Loop(name, from, extent, ForKind::kSerial, [&](const PrimExpr& ow) { return column(ow, interior); }));
    };
    // Interior columns [lo, hi): every tap column in [0, width).
    const PrimExpr lo = bind(&task_lets, "lo", DataType::I64(), S(tir::Min(PrimExpr((pl + sw - 1) / sw), out_w)));
    const PrimExpr hi_value =
        S(tir::Max(tir::Min(tir::FloorDiv(width - 1 + pl - (a.size[1] - 1) * dw, sw) + 1, out_w), lo));
    const PrimExpr hi =
        arith::CanProve(Eq(hi_value, out_w)) ? out_w : bind(&task_lets, "hi", DataType::I64(), hi_value);
    columns("ow_left", 0, lo, false);
    columns("ow", lo, S(hi - lo), true);
    columns("ow_right", hi, S(out_w - hi), false);
    return wrap(task_lets, Seq(std::move(loops)));
  });
}

}  // namespace

std::vector<OpDef> NchwcLayoutOps() {
  return {
      OpDef{"to_nchwc", {"x"}, 0, {AttrDef{"block", AttrKind::kInt, std::nullopt}}, InferToNchwc, LegalizeToNchwc},
      OpDef{"from_nchwc", {"x"}, 0, {}, InferFromNchwc, LegalizeFromNchwc},
      OpDef{"max_pool2d_nchwc",
            {"x"},
            0,
            PoolAttrDefs(false),
            InferPoolNchwc,
            [](const OpCall& call, KernelBuilder& b) { return LegalizePoolNchwc(call, b, PoolKind::kMax); }},
      OpDef{"avg_pool2d_nchwc",
            {"x"},
            0,
            PoolAttrDefs(true),
            InferPoolNchwc,
            [](const OpCall& call, KernelBuilder& b) { return LegalizePoolNchwc(call, b, PoolKind::kAvg); }},
  };
}

}  // namespace strata::op
