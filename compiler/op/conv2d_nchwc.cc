// conv2d_nchwc: 2-D convolution in the blocked layout (docs/ops/nchwc.md).
//
//   x:      [N, C / ib, H, W, ib]  (NCHW[ib]c), or plain [N, C, H, W] read as ib = 1
//   weight: [O / L, C / ib, KH, KW, ib, L]  (OIHW[ib]i[L]o, packed at compile time)
//   y:      [N, O / ob, OH, OW, ob]         (NCHW[ob]c, ob = out_block, L a multiple of ob)
//
// or, depthwise (groups = C = O): weight [C / ob, 1, KH, KW, 1, ob] and x blocked by ob.
//
// ConvertToNchwc (compiler/transform/convert_to_nchwc.h) makes these calls
// from conv2d with constant weights. The weight's lanes L are the register
// tile's output channels (one or two AVX-512 vectors): a reduction step loads
// L weights as vectors and broadcasts one input element per output position.
//
// One task per (image, group of L output channels, output row). A row is cut
// into tiles of RW output positions whose L x RW accumulators stay in
// registers over the whole reduction (input channel blocks x kernel rows x
// kernel columns x block lanes) and are stored once. Kernel rows outside the
// input are skipped by the task's kernel-row range. Tiles whose taps all fall
// inside the row run without checks; the few border tiles check each tap's
// column. When the image width is a constant (the usual case: only the batch
// is symbolic), border tiles are generated per tile with their kernel columns
// unrolled, so every check is decided at compile time and taps in the padding
// are simply left out. With a symbolic width (and column padding) the input
// rows are first copied with their padding as zeros, so that no tile checks
// its taps at run time. A depthwise convolution does too little work per
// input element for that copy (it cost as much as the convolution): its rows
// start and end in tiles whose taps are decided at compile time all the same
// (depthwise_rows).
#include <algorithm>
#include <array>
#include <functional>
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
#include "compiler/op/tir_build.h"
#include "compiler/op/window.h"

namespace strata::op {
namespace {

using analysis::DimText;
using namespace build;  // NOLINT: the kernel builders

std::optional<int64_t> Const(const PrimExpr& e) { return arith::AsConstant(e); }

// ---- inference -----------------------------------------------------------------

StatusOr<StructInfo> InferConv2dNchwc(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(ConvOperands conv, ReadConvOperands(call));
  const auto& [x, w, dtype, window, groups] = conv;
  const int64_t out_block = call.IntAttr("out_block");
  if (out_block < 1) {
    return ErrorStatus() << call.name() << ": attribute 'out_block' must be positive, got " << out_block;
  }
  if (x->ndim >= 0 && x->ndim != 4 && x->ndim != 5) {
    return ErrorStatus() << call.name() << ": " << ArgText(call, 0)
                         << " must be 5-D (N, C / block, H, W, block) or 4-D (N, C, H, W), got " << x->ndim << "-D";
  }
  if (w->ndim >= 0 && w->ndim != 6) {
    return ErrorStatus() << call.name() << ": " << ArgText(call, 1)
                         << " must be 6-D (O / lanes, C / block, KH, KW, block, lanes), got " << w->ndim << "-D";
  }
  if (!x->shape || !w->shape) return TensorStructInfoNode::make_ndim(5, dtype);
  const std::vector<PrimExpr>& xs = *x->shape;
  const std::vector<PrimExpr>& ws = *w->shape;
  const bool blocked = xs.size() == 5;
  const std::optional<int64_t> ib = blocked ? Const(xs[4]) : std::optional<int64_t>(1);
  const std::optional<int64_t> lanes = Const(ws[5]), w_ib = Const(ws[4]);
  if (!ib)
    return ErrorStatus() << call.name() << ": the block (last dimension) of " << ArgText(call, 0)
                         << " must be a constant, got " << DimText(xs[4]);
  if (!lanes || !w_ib) {
    return ErrorStatus() << call.name() << ": the last two dimensions of " << ArgText(call, 1)
                         << " must be constants, got " << ir::PrintShape(ws);
  }
  if (*lanes % out_block != 0) {
    return ErrorStatus() << call.name() << ": the " << *lanes << " lanes of " << ArgText(call, 1)
                         << " are not a multiple of out_block=" << out_block;
  }
  const PrimExpr in_channels = SimplifyDim(blocked ? xs[1] * xs[4] : xs[1]);
  auto must_equal = [&](const PrimExpr& a, const PrimExpr& b, const std::string& what) -> Status {
    std::optional<int64_t> diff = Const(SimplifyDim(a - b));
    if (diff && *diff != 0) {
      return ErrorStatus() << call.name() << ": " << what << ": " << DimText(SimplifyDim(a)) << " vs "
                           << DimText(SimplifyDim(b));
    }
    return Status::Ok();
  };
  if (groups == 1) {
    STRATA_RETURN_IF_ERROR(
        must_equal(ws[4], PrimExpr(*ib),
                   "the input block of " + ArgText(call, 1) + " must equal the block of " + ArgText(call, 0)));
    STRATA_RETURN_IF_ERROR(
        must_equal(SimplifyDim(ws[1] * ws[4]), in_channels,
                   "the input channels of " + ArgText(call, 1) + " must equal those of " + ArgText(call, 0)));
  } else {
    // Depthwise: each output channel reads its own input channel.
    if (*w_ib != 1 || Const(ws[1]) != 1 || *lanes != out_block || *ib != out_block) {
      return ErrorStatus() << call.name() << ": with groups=" << groups
                           << " (depthwise) the weight must be (C / block, 1, KH, KW, 1, block) and x blocked by "
                              "the same block as out_block="
                           << out_block << "; got weight " << ir::PrintShape(ws) << " and x " << ir::PrintShape(xs);
    }
    STRATA_RETURN_IF_ERROR(
        must_equal(in_channels, PrimExpr(groups), "depthwise groups must equal the channels of " + ArgText(call, 0)));
    STRATA_RETURN_IF_ERROR(
        must_equal(SimplifyDim(ws[0] * ws[5]), in_channels,
                   "the output channels of " + ArgText(call, 1) + " must equal the channels of " + ArgText(call, 0)));
  }
  STRATA_ASSIGN_OR_RETURN(auto spatial,
                          WindowOutput(call, xs, window, {ws[2], ws[3]}, false, "the kernel of " + ArgText(call, 1)));
  const PrimExpr out_blocks = SimplifyDim(ws[0] * (*lanes / out_block));
  return TensorStructInfoNode::make({xs[0], out_blocks, spatial[0], spatial[1], PrimExpr(out_block)}, dtype);
}

// ---- kernel --------------------------------------------------------------------

// Tile widths, measured on AVX-512 (Zen 4) for a 3x3 64-channel layer: with
// one or two vectors of output channels, 7 to 9 positions (14 to 18
// accumulator registers) run at the machine's FMA rate, 12 positions of two
// vectors spill and run at half of it; a half-vector (8 lanes) tile degrades
// far sooner. So: up to 18 accumulators, 14 positions, 8 for narrow tiles.
constexpr int64_t kAccumulatorRegisters = 18;
constexpr int64_t kMaxTileWidth = 14;
constexpr int64_t kNarrowTileWidth = 8;
constexpr int64_t kVectorLanes = 16;  // f32 lanes of one AVX-512 register

// Output positions per tile for `lanes` output channels: as many as the
// registers hold, and, when the output width is known, the width that wastes
// the fewest positions in the row's last tile (7 for a 7-wide row, 8 for 56).
int64_t TileWidth(int64_t lanes, const PrimExpr& out_w) {
  const int64_t registers = (lanes + kVectorLanes - 1) / kVectorLanes;
  const int64_t widest =
      lanes < kVectorLanes ? kNarrowTileWidth : std::min(kMaxTileWidth, kAccumulatorRegisters / registers);
  const std::optional<int64_t> ow = Const(out_w);
  if (!ow || *ow <= 0) return widest;
  if (*ow <= widest) return *ow;
  int64_t best = widest, best_waste = -1;
  for (int64_t rw = widest; rw >= std::max<int64_t>(1, (widest + 1) / 2); --rw) {
    const int64_t waste = (*ow + rw - 1) / rw * rw - *ow;
    if (best_waste < 0 || waste < best_waste) best = rw, best_waste = waste;
  }
  return best;
}

// The second tile width a kernel with a symbolic output width may choose at
// run time: 7, which divides the rows of 7, 14, 28, 56, 112 and 224
// positions of the usual image sizes. None for a constant width (TileWidth
// fitted the tile to it) or a widest tile of 7 or less. (A third candidate,
// one position narrower than the widest, took ResNet-18's compile from 3.9
// to 9.9 s.)
std::optional<int64_t> NarrowTileWidth(int64_t widest, const PrimExpr& out_w) {
  if (Const(out_w) || widest <= 7) return std::nullopt;
  return 7;
}

// A tile at one end of a row with a symbolic width, whose taps fall past
// only that end of the row (the caller knows): kLeft from position 0, so
// that each tap's column check is decided here; kRight ending at the row's
// end, its checks decided against `width`, the input width written in
// terms of ow0 (see depthwise_rows). It stores only its positions from
// `store_from` on, when given (the positions before are another tile's).
// kPastEnd: a row's last tile with no column padding, whose only taps past
// the row are those of positions past the output; those positions read the
// last position's columns and are not stored, so no tap is checked (a 1x1
// stride-2 layer with a symbolic width ran 2.5x slower checking each tap).
enum class Edge { kNone, kLeft, kRight, kPastEnd };
struct EdgeTile {
  Edge edge = Edge::kNone;
  PrimExpr width, store_from;
};

struct NchwcConv {
  tir::Buffer x, w, y, acc;
  // With a symbolic width: x copied with its left and right padding as zeros
  // ([N, C / ib, H, Wp, ib]), so that no tile checks its columns.
  tir::Buffer xp;
  DataType dt;
  bool x_blocked, depthwise;
  int64_t ib, lanes, out_block, rw;
  PrimExpr height, width, out_w, in_blocks, kh_n, kw_n;
  Window win;

  // This convolution with tiles of `width` positions.
  NchwcConv WithTileWidth(int64_t width) const {
    NchwcConv narrower = *this;
    narrower.rw = width;
    narrower.acc = KernelBuilder::Local("acc", dt, {width, lanes});
    return narrower;
  }

  // x at channel block cb, lane i, row ih, column iw.
  PrimExpr XAt(const PrimExpr& n, const PrimExpr& cb, const PrimExpr& ih, const PrimExpr& iw, const PrimExpr& i) const {
    if (xp != nullptr) return Load(xp, {n, cb, ih, iw, i});
    return x_blocked ? Load(x, {n, cb, ih, iw, i}) : Load(x, {n, cb, ih, iw});
  }

  // The register tile at output positions ow0 .. ow0 + rw of row oh, over
  // kernel rows [kh_lo, kh_hi). `checked`: taps may fall outside the row (and
  // positions past the output); when ow0 and the widths are constants the
  // checks are decided here, otherwise at run time. Reading the padded copy,
  // only the stores past the output are checked.
  tir::Stmt Tile(const PrimExpr& n, const PrimExpr& og, const PrimExpr& oh, const PrimExpr& ow0, const PrimExpr& kh_lo,
                 const PrimExpr& kh_hi, bool checked, const EdgeTile& at_edge = {}) const {
    const auto [sh, sw] = win.strides;
    const auto [dh, dw] = win.dilation;
    // The padded copy holds the left padding: its column 0 is column -pl of x.
    const int64_t pt = win.pad_before(0), pl = xp != nullptr ? 0 : win.pad_before(1);
    const Edge edge = at_edge.edge;
    const bool check_all = checked && xp == nullptr && edge != Edge::kPastEnd;
    const bool check_left = check_all || edge == Edge::kLeft, check_right = check_all || edge == Edge::kRight;
    const bool check_columns = check_left || check_right;
    const PrimExpr right_end = edge == Edge::kRight ? at_edge.width : width;
    const bool constant_columns = check_columns && Const(kw_n) && (edge != Edge::kNone || (Const(ow0) && Const(width)));
    std::vector<tir::Stmt> stmts;
    stmts.push_back(Loop("p", 0, rw, ForKind::kUnrolled, [&](const PrimExpr& p) {
      return Loop("l", 0, lanes, ForKind::kVectorized, [&](const PrimExpr& l) {
        return Store(acc, {p, l}, Float(dt, 0));
      });
    }));
    // Taps (kh, kw) for each kw of `columns`, of block lane i of channel block
    // cb, for every position.
    auto tap = [&](const PrimExpr& cb, const PrimExpr& kh, const std::vector<PrimExpr>& columns, const PrimExpr& i) {
      const PrimExpr ih = S(oh * sh + kh * dh - pt);
      // All positions' updates in one vectorized loop: a loop per position
      // is small enough for LLVM to unroll before vectorizing, and the SLP
      // vectorizer then bundled the positions' input elements into gathers.
      std::vector<std::pair<tir::Var, PrimExpr>> broadcasts;
      std::vector<std::function<tir::Stmt(const PrimExpr&)>> updates;
      for (int64_t k = 0; k < rw * static_cast<int64_t>(columns.size()); ++k) {
        const PrimExpr& kw = columns[k / rw];
        const int64_t p = k % rw;  // the output position
        const PrimExpr position = edge == Edge::kPastEnd ? tir::Min(ow0 + p, out_w - 1) : ow0 + p;
        const PrimExpr iw = S(position * sw + kw * dw - pl);
        PrimExpr inside = tir::IntImm(DataType::Bool(), 1);
        if (check_left && check_right) {
          inside = S(And(Ge(iw, 0), Lt(iw, right_end)));
        } else if (check_columns) {
          inside = S(check_left ? Ge(iw, 0) : Lt(iw, right_end));
        }
        if (Const(inside) == 0) continue;  // in the padding: contributes nothing
        const bool sure = IsTrue(inside);
        const PrimExpr column = sure ? iw : S(tir::Max(tir::Min(iw, width - 1), 0));
        auto input = [=, this](const PrimExpr& lane) {
          PrimExpr v = XAt(n, cb, ih, column, lane);
          return sure ? v : tir::SelectNode::make(inside, v, Float(dt, 0));
        };
        if (depthwise) {
          // The tap's input vector (the block's lanes) times the weight vector.
          updates.push_back([=, this](const PrimExpr& l) {
            return Store(acc, {p, l}, Load(acc, {p, l}) + input(l) * Load(w, {og, 0, kh, kw, 0, l}));
          });
        } else {
          tir::Var xv("xv", dt);
          broadcasts.emplace_back(xv, input(i));
          updates.push_back([=, this](const PrimExpr& l) {
            return Store(acc, {p, l}, Load(acc, {p, l}) + xv * Load(w, {og, cb, kh, kw, i, l}));
          });
        }
      }
      if (updates.empty()) return Seq({});
      tir::Stmt body = Loop("l", 0, lanes, ForKind::kVectorized, [&](const PrimExpr& l) {
        std::vector<tir::Stmt> stores;
        for (const auto& update : updates) stores.push_back(update(l));
        return Seq(std::move(stores));
      });
      for (size_t k = broadcasts.size(); k-- > 0;) body = Let(broadcasts[k].first, broadcasts[k].second, body);
      return body;
    };
    auto kernel_columns = [&](const PrimExpr& cb, const PrimExpr& kh, const PrimExpr& i) -> tir::Stmt {
      if (constant_columns) {
        std::vector<PrimExpr> columns;
        for (int64_t kw = 0; kw < *Const(kw_n); ++kw) columns.push_back(kw);
        return tap(cb, kh, columns, i);
      }
      return Loop("kw", 0, kw_n, ForKind::kSerial, [&](const PrimExpr& kw) { return tap(cb, kh, {kw}, i); });
    };
    if (depthwise) {
      stmts.push_back(Loop("kh", kh_lo, kh_hi - kh_lo, ForKind::kSerial,
                           [&](const PrimExpr& kh) { return kernel_columns(og, kh, 0); }));
    } else {
      stmts.push_back(Loop("cb", 0, in_blocks, ForKind::kSerial, [&](const PrimExpr& cb) {
        return Loop("kh", kh_lo, kh_hi - kh_lo, ForKind::kSerial, [&](const PrimExpr& kh) {
          if (ib == 1) return kernel_columns(cb, kh, 0);
          return Loop("i", 0, ib, ForKind::kSerial, [&](const PrimExpr& i) { return kernel_columns(cb, kh, i); });
        });
      }));
    }
    // Each position's L lanes go to L / ob output channel blocks.
    const int64_t parts = lanes / out_block;
    for (int64_t p = 0; p < rw; ++p) {
      const PrimExpr ow = S(ow0 + p);
      PrimExpr valid = checked || edge == Edge::kPastEnd ? S(Lt(ow, out_w)) : tir::IntImm(DataType::Bool(), 1);
      if (at_edge.store_from.defined()) valid = S(And(valid, Ge(ow, at_edge.store_from)));
      if (Const(valid) == 0) continue;
      std::vector<tir::Stmt> stores;
      for (int64_t t = 0; t < parts; ++t) {
        stores.push_back(Loop("l", 0, out_block, ForKind::kVectorized, [&](const PrimExpr& l) {
          return Store(y, {n, og * parts + t, oh, ow, l}, Load(acc, {p, l + t * out_block}));
        }));
      }
      tir::Stmt store = Seq(std::move(stores));
      stmts.push_back(IsTrue(valid) ? store : tir::IfThenElseNode::make(valid, store));
    }
    return tir::AllocateNode::make(acc, Seq(std::move(stmts)));
  }

  // The register tile of a pointwise convolution (1x1, stride 1, no padding)
  // at the rw output pixels from q0 in row-major order over the whole image
  // (`pixels` = OH * OW = H * W), crossing row ends. An image row's pixels
  // follow the previous row's in memory within a channel block, so pixel q of
  // block cb is read as row 0, column q: one base address and constant
  // offsets, as in a row's tiles. In the image's last tile (kLast) positions
  // past the image read the last pixel and are not stored. The stores take
  // each position's row and column (from the tile's first, h0 and w0: the
  // next columns of the row (kInRow), or a step per position that wraps at
  // the row's end), so that fused epilogues index their operands as usual.
  enum class PixelRun { kInRow, kAcrossRows, kLast };
  tir::Stmt PointwiseTile(const PrimExpr& n, const PrimExpr& og, const PrimExpr& q0, const PrimExpr& h0,
                          const PrimExpr& w0, const PrimExpr& pixels, PixelRun run) const {
    const bool last = run == PixelRun::kLast;
    std::vector<PrimExpr> rows, cols;
    std::vector<std::pair<tir::Var, PrimExpr>> lets;
    auto bind = [&](const std::string& name, const PrimExpr& value) {
      tir::Var v(name);
      lets.emplace_back(v, value);
      return PrimExpr(v);
    };
    for (int64_t p = 0; p < rw; ++p) {
      const std::string id = std::to_string(p);
      if (p == 0 || run == PixelRun::kInRow) {
        rows.push_back(h0);
        cols.push_back(S(w0 + p));
        continue;
      }
      const PrimExpr wraps = Eq(cols[p - 1] + 1, out_w);
      rows.push_back(bind("h" + id, tir::SelectNode::make(wraps, rows[p - 1] + 1, rows[p - 1])));
      cols.push_back(bind("w" + id, tir::SelectNode::make(wraps, PrimExpr(0), cols[p - 1] + 1)));
    }
    std::vector<tir::Stmt> stmts;
    stmts.push_back(Loop("p", 0, rw, ForKind::kUnrolled, [&](const PrimExpr& p) {
      return Loop("l", 0, lanes, ForKind::kVectorized, [&](const PrimExpr& l) {
        return Store(acc, {p, l}, Float(dt, 0));
      });
    }));
    auto step = [&](const PrimExpr& cb, const PrimExpr& i) {
      std::vector<std::pair<tir::Var, PrimExpr>> broadcasts;
      for (int64_t p = 0; p < rw; ++p) {
        const PrimExpr q = last ? S(tir::Min(q0 + p, pixels - 1)) : S(q0 + p);
        broadcasts.emplace_back(tir::Var("xv", dt), XAt(n, cb, 0, q, i));
      }
      tir::Stmt body = Loop("l", 0, lanes, ForKind::kVectorized, [&](const PrimExpr& l) {
        std::vector<tir::Stmt> updates;
        for (int64_t p = 0; p < rw; ++p) {
          updates.push_back(
              Store(acc, {p, l}, Load(acc, {p, l}) + broadcasts[p].first * Load(w, {og, cb, 0, 0, i, l})));
        }
        return Seq(std::move(updates));
      });
      for (size_t k = broadcasts.size(); k-- > 0;) body = Let(broadcasts[k].first, broadcasts[k].second, body);
      return body;
    };
    stmts.push_back(Loop("cb", 0, in_blocks, ForKind::kSerial, [&](const PrimExpr& cb) {
      if (ib == 1) return step(cb, 0);
      return Loop("i", 0, ib, ForKind::kSerial, [&](const PrimExpr& i) { return step(cb, i); });
    }));
    const int64_t parts = lanes / out_block;
    for (int64_t p = 0; p < rw; ++p) {
      std::vector<tir::Stmt> stores;
      for (int64_t t = 0; t < parts; ++t) {
        stores.push_back(Loop("l", 0, out_block, ForKind::kVectorized, [&](const PrimExpr& l) {
          return Store(y, {n, og * parts + t, rows[p], cols[p], l}, Load(acc, {p, l + t * out_block}));
        }));
      }
      tir::Stmt store = Seq(std::move(stores));
      stmts.push_back(last ? tir::IfThenElseNode::make(S(Lt(q0 + p, pixels)), store) : store);
    }
    tir::Stmt body = tir::AllocateNode::make(acc, Seq(std::move(stmts)));
    for (size_t k = lets.size(); k-- > 0;) body = Let(lets[k].first, lets[k].second, body);
    return body;
  }
};

constexpr int64_t kPointwiseTilesPerTask = 4;
// Rows narrower than this many tiles run flattened.
constexpr int64_t kRowTilesToFlatten = 4;

// Whether a convolution is pointwise (1x1 kernel, stride 1, no padding, not
// depthwise) with a symbolic output width: its pixels then run as one
// row-major sequence in whole tiles, as a GEMM over the image (PointwiseTile).
// Row by row, a width the tile does not divide (7, 14, 28 with tiles of 9)
// wasted up to a fifth of each row's positions in a checked border tile.
bool FlattensPixels(const NchwcConv& c) {
  return !c.depthwise && Const(c.kh_n) == 1 && Const(c.kw_n) == 1 && c.win.strides == std::array<int64_t, 2>{1, 1} &&
         c.win.pad_before(0) == 0 && c.win.pad_before(1) == 0 && c.win.pad_after(0) == 0 && c.win.pad_after(1) == 0 &&
         !Const(c.out_w);
}

StatusOr<tir::Stmt> LegalizeConv2dNchwc(const OpCall& call, KernelBuilder& b) {
  NchwcConv c;
  STRATA_ASSIGN_OR_RETURN(c.win, ReadWindow(call, "strides"));
  const int64_t groups = call.IntAttr("groups");
  STRATA_ASSIGN_OR_RETURN(c.x, b.Input(call.arg(0), "X", "x"));
  STRATA_ASSIGN_OR_RETURN(c.w, b.Input(call.arg(1), "W", "weight"));
  STRATA_ASSIGN_OR_RETURN(c.y, b.Output(call.call().struct_info, "Y"));
  c.dt = c.y->dtype;
  c.x_blocked = c.x->shape.size() == 5;
  c.depthwise = groups > 1;
  c.ib = c.x_blocked ? *Const(c.x->shape[4]) : 1;
  c.lanes = *Const(c.w->shape[5]);
  c.out_block = call.IntAttr("out_block");
  c.height = c.x->shape[2];
  c.width = c.x->shape[3];
  c.out_w = c.y->shape[3];
  c.in_blocks = c.w->shape[1];
  c.kh_n = c.w->shape[2];
  c.kw_n = c.w->shape[3];
  c.rw = TileWidth(c.lanes, c.out_w);
  c.acc = KernelBuilder::Local("acc", c.dt, {c.rw, c.lanes});
  const std::optional<int64_t> narrow = NarrowTileWidth(c.rw, c.out_w);
  const auto [sh, sw] = c.win.strides;
  const auto [dh, dw] = c.win.dilation;
  const int64_t pt = c.win.pad_before(0), pl = c.win.pad_before(1);
  const PrimExpr n_img = c.x->shape[0], out_h = c.y->shape[2], out_w = c.out_w;
  const PrimExpr groups_of_lanes = c.w->shape[0];

  std::vector<tir::Stmt> stmts;
  const PrimExpr x_channels = S(c.x_blocked ? c.x->shape[1] * c.ib : c.x->shape[1]);
  CheckAtRunTime(&stmts, Eq(x_channels, c.depthwise ? S(groups_of_lanes * c.lanes) : S(c.in_blocks * c.w->shape[4])),
                 "channels of x (" + DimText(x_channels) + ") must match the weight of conv2d_nchwc");

  // Pointwise convolutions over short rows run over the image's pixels as one
  // sequence; rows of several tiles keep the row-by-row schedule, whose tiles
  // need no per-tile position arithmetic (measured 1.2x faster at 112 x 112
  // with 16 input channels, where a tile's reduction is short).
  tir::Stmt flattened;
  if (FlattensPixels(c)) {
    const PrimExpr pixels = S(out_h * out_w);
    const PrimExpr tiles = CeilDiv(pixels, c.rw);
    // kPointwiseTilesPerTask consecutive tiles per task: the first tile's
    // row and column take a division, each next one a step (one wrap at most
    // when the row holds a tile; a division again when it does not).
    const PrimExpr chunks = CeilDiv(tiles, kPointwiseTilesPerTask);
    flattened = ParallelOver("t", {n_img, groups_of_lanes, chunks}, [&](const Index& t) {
      using Run = NchwcConv::PixelRun;
      const tir::Buffer pos = KernelBuilder::Local("pos", DataType::I64(), {2});
      tir::Var q_first("q_first"), g("g"), q0("q0"), h0("h0"), w0("w0");
      auto tile = [&](Run run) { return c.PointwiseTile(t[0], t[1], q0, h0, w0, pixels, run); };
      auto at_most = [](const PrimExpr& a, const PrimExpr& b) { return S(Bin(tir::PrimExprKind::kLE, a, b)); };
      tir::Stmt compute = tir::IfThenElseNode::make(
          at_most(w0 + c.rw, out_w), tile(Run::kInRow),
          tir::IfThenElseNode::make(at_most(q0 + c.rw, pixels), tile(Run::kAcrossRows), tile(Run::kLast)));
      const PrimExpr next_w = S(w0 + c.rw), wraps = S(Ge(next_w, out_w));
      tir::Stmt step = tir::IfThenElseNode::make(
          at_most(PrimExpr(c.rw), out_w),
          Seq({Store(pos, {0}, tir::SelectNode::make(wraps, h0 + 1, h0)),
               Store(pos, {1}, tir::SelectNode::make(wraps, next_w - out_w, next_w))}),
          Seq({Store(pos, {0}, tir::FloorDiv(q0 + c.rw, out_w)), Store(pos, {1}, tir::FloorMod(q0 + c.rw, out_w))}));
      tir::Stmt per_tile =
          Let(q0, S(q_first + g * c.rw), Let(h0, Load(pos, {0}), Let(w0, Load(pos, {1}), Seq({compute, step}))));
      tir::Stmt tiles_loop =
          tir::ForNode::make(g, 0, S(tir::Min(PrimExpr(kPointwiseTilesPerTask), tiles - t[2] * kPointwiseTilesPerTask)),
                             ForKind::kSerial, per_tile);
      return Let(q_first, S(t[2] * (kPointwiseTilesPerTask * c.rw)),
                 tir::AllocateNode::make(pos, Seq({Store(pos, {0}, tir::FloorDiv(q_first, out_w)),
                                                   Store(pos, {1}, tir::FloorMod(q_first, out_w)), tiles_loop})));
    });
  }

  // A symbolic width: border tiles would check every tap at run time (2x
  // slower on a small image), so the rows are first copied with their column
  // padding as zeros, wide enough for the last tile's extra positions, and
  // every tile but a partial last one runs unchecked.
  tir::Stmt pad_copy;
  const bool column_padding = pl > 0 || c.win.pad_after(1) > 0;
  if (!Const(c.width) && column_padding && !c.depthwise) {
    const PrimExpr x_blocks = c.x->shape[1];
    // Wide enough for the last tile of either tile width: its positions end
    // before out_w + c.rw - 1.
    const PrimExpr padded_w = S((out_w + c.rw - 2) * sw + (c.kw_n - 1) * dw + 1);
    c.xp = KernelBuilder::Local("Xp", c.dt, {n_img, x_blocks, c.height, padded_w, c.ib});
    const PrimExpr lo = S(tir::Min(PrimExpr(pl), padded_w));
    const PrimExpr hi = S(tir::Max(tir::Min(c.width + pl, padded_w), lo));
    pad_copy = ParallelOver("r", {n_img, x_blocks, c.height}, [&](const Index& r) {
      // Columns [from, to) of the row: zeros, or x's columns shifted by pl.
      auto run = [&](const std::string& name, const PrimExpr& from, const PrimExpr& to, bool zeros) {
        auto value = [&](const PrimExpr& q, const PrimExpr& i) {
          if (zeros) return Float(c.dt, 0);
          return c.x_blocked ? Load(c.x, {r[0], r[1], r[2], q - pl, i}) : Load(c.x, {r[0], r[1], r[2], q - pl});
        };
        if (c.ib == 1) {
          return Loop(name, from, S(to - from), ForKind::kVectorized, [&](const PrimExpr& q) {
            return Store(c.xp, {r[0], r[1], r[2], q, 0}, value(q, 0));
          });
        }
        return Loop(name, from, S(to - from), ForKind::kSerial, [&](const PrimExpr& q) {
          return Loop("i", 0, c.ib, ForKind::kVectorized, [&](const PrimExpr& i) {
            return Store(c.xp, {r[0], r[1], r[2], q, i}, value(q, i));
          });
        });
      };
      return Seq({run("ql", 0, lo, true), run("q", lo, hi, false), run("qr", hi, padded_w, true)});
    });
  }

  // Kernel rows inside the input for output row oh: 0 <= oh * sh + kh * dh - pt < height.
  auto kernel_rows = [&](const PrimExpr& oh) {
    const PrimExpr top = S(oh * sh - pt);
    const PrimExpr lo = S(tir::Max(tir::FloorDiv(dh - 1 - top, dh), 0));
    const PrimExpr hi = S(tir::Max(tir::Min(tir::FloorDiv(c.height - 1 - top, dh) + 1, c.kh_n), lo));
    return std::make_pair(lo, hi);
  };

  // A depthwise convolution with a symbolic width, without a padded copy.
  // Positions [0, left_reach) reach into the left padding, [right, out_w)
  // into the right padding. A row in tiles of T positions: the first tile's
  // taps are decided at compile time (from its constant columns, as with a
  // constant width), the next ones to `right` run unchecked, and the last
  // tile ends at the row's end, storing only the positions not yet stored.
  // Its taps are decided at compile time too: the input width is written as
  // (right - 1) * sw + rho - pl + eff (eff the kernel's extent), exact for
  // the residue rho = (width + pl - eff) mod sw, with one last tile per
  // residue, whose out_w - right = (rho + pr) / sw positions reach the right
  // padding. Of the tile widths rw and rw / 2, the widest whose first and
  // last tiles each reach only their own end of the row runs; narrower rows
  // run position by position with every tap checked. (Before: a padded copy
  // of the input cost as much as the convolution; tiles with every tap
  // checked made 5x5 layers slower; so did single positions with checked
  // taps at the row's ends and tiles of 2 and 1 positions for the rest,
  // whose one accumulator is a chain of dependent FMAs.)
  auto depthwise_rows = [&]() {
    const int64_t left_reach = (pl + sw - 1) / sw, pr = c.win.pad_after(1);
    const PrimExpr eff = S((c.kw_n - 1) * dw + 1);
    return ParallelOver("t", {n_img, groups_of_lanes, out_h}, [&](const Index& t) {
      const PrimExpr &n = t[0], &og = t[1], &oh = t[2];
      tir::Var kh_lo("kh_lo"), kh_hi("kh_hi"), right("right"), rho("rho");
      const NchwcConv single = c.WithTileWidth(1);
      auto single_positions = [&](const PrimExpr& from, const PrimExpr& to) {
        return Loop("p", from, S(to - from), ForKind::kSerial,
                    [&](const PrimExpr& p) { return single.Tile(n, og, oh, p, kh_lo, kh_hi, true); });
      };
      tir::Stmt schedule = single_positions(0, out_w);
      std::vector<int64_t> widths = {c.rw};
      if (c.rw / 2 > 1) widths.push_back(c.rw / 2);
      for (auto width = widths.rbegin(); width != widths.rend(); ++width) {
        const NchwcConv cv = c.WithTileWidth(*width);
        const int64_t tw = cv.rw;
        tir::Var done("done");
        std::vector<tir::Stmt> row;
        row.push_back(cv.Tile(n, og, oh, 0, kh_lo, kh_hi, false, {Edge::kLeft, {}, {}}));
        const PrimExpr inner = S(tir::FloorDiv(right - tw, tw));
        row.push_back(Loop("tile", 0, inner, ForKind::kSerial,
                           [&](const PrimExpr& k) { return cv.Tile(n, og, oh, S(tw + k * tw), kh_lo, kh_hi, false); }));
        // Positions between the inner tiles and the last tile (fewer than
        // out_w - right): only when the right padding spans positions.
        const PrimExpr last_start = S(out_w - tw);
        if (pr > sw) row.push_back(single_positions(done, S(tir::Max(last_start, done))));
        // The last tile, ending at out_w, of `lw` positions.
        auto last_tile = [&](int64_t lw) {
          const NchwcConv cl = c.WithTileWidth(lw);
          tir::Stmt tile = Seq({});
          for (int64_t r = sw - 1; r >= 0; --r) {
            // out_w - lw, written in terms of right, as the width is.
            const PrimExpr start = S(right + (r + pr) / sw - lw);
            const PrimExpr width_at_residue = S((right - 1) * sw + r - pl + eff);
            const PrimExpr from = pr > sw ? S(tir::Max(start, done)) : PrimExpr(done);
            tir::Stmt at_r = cl.Tile(n, og, oh, start, kh_lo, kh_hi, false, {Edge::kRight, width_at_residue, from});
            tile = r == sw - 1 ? at_r : tir::IfThenElseNode::make(Eq(rho, r), at_r, tile);
          }
          return tile;
        };
        // Half as wide when the positions left fit, so that a row wastes
        // fewer than tw / 2 positions (a 49-wide row in tiles of 14 computed
        // 70 positions).
        tir::Stmt last = last_tile(tw);
        if (tw / 2 > 1) {
          last = tir::IfThenElseNode::make(S(Bin(tir::PrimExprKind::kLE, out_w - done, PrimExpr(tw / 2))),
                                           last_tile(tw / 2), last);
        }
        row.push_back(tir::IfThenElseNode::make(S(Lt(done, out_w)), last));
        const PrimExpr fits = S(And(Ge(right, tw), Ge(last_start, left_reach)));
        schedule = tir::IfThenElseNode::make(fits, Let(done, S(tw + inner * tw), Seq(std::move(row))), schedule);
      }
      // The first position whose last tap is past the row.
      const PrimExpr reach = S(tir::FloorDiv(c.width - 1 + pl - (c.kw_n - 1) * dw, sw) + 1);
      const auto [lo, hi] = kernel_rows(oh);
      tir::Stmt body = Let(rho, S(tir::FloorMod(c.width + pl - eff, sw)), schedule);
      return Let(kh_lo, lo, Let(kh_hi, hi, Let(right, S(tir::Min(reach, out_w)), body)));
    });
  };

  // The row schedule with tiles of `cv.rw` positions.
  auto row_schedule = [&](const NchwcConv& cv) {
    // Tiles [t_lo, t_hi) of a row read only inside it and end inside the output.
    const int64_t rw = cv.rw;
    const PrimExpr tiles = CeilDiv(out_w, rw);
    PrimExpr t_lo = S(tir::Min(tir::FloorDiv(PrimExpr(pl + rw * sw - 1), rw * sw), tiles));
    const PrimExpr last_reach = S(c.width - 1 + pl - (c.kw_n - 1) * dw - (rw - 1) * sw);
    PrimExpr t_hi = S(tir::Min(tir::FloorDiv(out_w, rw), tir::FloorDiv(last_reach, rw * sw) + 1));
    t_hi = S(tir::Max(t_hi, t_lo));
    if (cv.xp != nullptr) {
      t_lo = 0;
      t_hi = S(tir::FloorDiv(out_w, rw));
    }
    return ParallelOver("t", {n_img, groups_of_lanes, out_h}, [&](const Index& t) {
      const PrimExpr &n = t[0], &og = t[1], &oh = t[2];
      tir::Var kh_lo("kh_lo"), kh_hi("kh_hi");
      const auto [lo_value, hi_value] = kernel_rows(oh);
      std::vector<tir::Stmt> row;
      auto border = [&](const PrimExpr& from, const PrimExpr& to, const std::string& name) {
        const std::optional<int64_t> a = Const(from), z = Const(to);
        if (a && z) {
          // Each border tile generated for its own constant position.
          for (int64_t k = *a; k < *z; ++k) row.push_back(cv.Tile(n, og, oh, PrimExpr(k * rw), kh_lo, kh_hi, true));
          return;
        }
        const EdgeTile past_end{cv.xp == nullptr && !column_padding ? Edge::kPastEnd : Edge::kNone, {}, {}};
        row.push_back(Loop(name, from, S(to - from), ForKind::kSerial, [&](const PrimExpr& k) {
          return cv.Tile(n, og, oh, S(k * rw), kh_lo, kh_hi, true, past_end);
        }));
      };
      border(0, t_lo, "tile_left");
      if (Const(S(t_hi - t_lo)) != 0) {
        row.push_back(Loop("tile", t_lo, S(t_hi - t_lo), ForKind::kSerial,
                           [&](const PrimExpr& k) { return cv.Tile(n, og, oh, S(k * rw), kh_lo, kh_hi, false); }));
      }
      border(t_hi, tiles, "tile_right");
      return Let(kh_lo, lo_value, Let(kh_hi, hi_value, Seq(std::move(row))));
    });
  };

  // With a symbolic width the tile width is chosen at run time: the narrow
  // one when it wastes fewer positions in the row's last tile. ResNet's 7-,
  // 14- and 28-wide rows in tiles of 9 computed 9 positions for every 7 (a
  // 224 x 224 image 1.4x slower than with the width a constant).
  // Depthwise rows with column padding end in their own narrower tiles.
  const bool depthwise_unpadded = c.depthwise && !Const(c.width) && column_padding;
  tir::Stmt compute = depthwise_unpadded ? depthwise_rows() : row_schedule(c);
  if (narrow && !depthwise_unpadded) {
    const NchwcConv cv = c.WithTileWidth(*narrow);
    auto waste = [&](int64_t w) { return S(CeilDiv(out_w, w) * w - out_w); };
    compute = tir::IfThenElseNode::make(S(Lt(waste(cv.rw), waste(c.rw))), row_schedule(cv), compute);
  }
  if (c.xp != nullptr) {
    stmts.push_back(tir::AllocateNode::make(c.xp, Seq({pad_copy, compute})));
  } else if (flattened.defined()) {
    stmts.push_back(tir::IfThenElseNode::make(S(Lt(out_w, kRowTilesToFlatten * c.rw)), flattened, compute));
  } else {
    stmts.push_back(compute);
  }
  return Seq(std::move(stmts));
}

}  // namespace

std::vector<OpDef> Conv2dNchwcOps() {
  return {OpDef{"conv2d_nchwc",
                {"x", "weight"},
                0,
                {AttrDef{"strides", AttrKind::kInts, ir::AttrValue(std::vector<int64_t>{1, 1})},
                 AttrDef{"padding", AttrKind::kInts, ir::AttrValue(std::vector<int64_t>{0, 0, 0, 0})},
                 AttrDef{"dilation", AttrKind::kInts, ir::AttrValue(std::vector<int64_t>{1, 1})},
                 AttrDef{"groups", AttrKind::kInt, ir::AttrValue(int64_t{1})},
                 AttrDef{"out_block", AttrKind::kInt, std::nullopt, false}},
                InferConv2dNchwc,
                LegalizeConv2dNchwc}};
}

}  // namespace strata::op
