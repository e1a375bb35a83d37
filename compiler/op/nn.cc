// Neural-network operators (NCHW layout, OIHW weights): conv2d, max/avg/global
// average pooling, softmax, log_softmax, layer_norm, batch_norm (inference) and
// dropout (identity at inference). docs/ops/nn.md is the reference.
//
// The default kernels avoid the two things LLVM will not do for them: it only
// vectorizes innermost loops, and it never reassociates float reductions (the
// codegen allows only contraction). So every vectorized loop here is innermost
// with a straight-line body, and reductions over a contiguous axis accumulate in
// kLanes partial results (LaneReduce) that are combined once at the end.
#include <array>
#include <cctype>
#include <functional>
#include <limits>
#include <optional>
#include <sstream>
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

StatusOr<StructInfo> InferConv2d(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(ConvOperands conv, ReadConvOperands(call));
  const auto& [x, w, dtype, window, groups] = conv;
  STRATA_RETURN_IF_ERROR(CheckRank4(call, 0, x, "(N, C, H, W)"));
  STRATA_RETURN_IF_ERROR(CheckRank4(call, 1, w, "(O, C / groups, KH, KW)"));
  if (!x->shape || !w->shape) return TensorStructInfoNode::make_ndim(4, dtype);
  const std::vector<PrimExpr>& xs = *x->shape;
  const std::vector<PrimExpr>& ws = *w->shape;
  std::optional<int64_t> channel_diff = arith::AsConstant(xs[1] - ws[1] * groups);
  if (channel_diff && *channel_diff != 0) {
    return ErrorStatus() << call.name() << ": " << ArgText(call, 0) << " has " << DimText(xs[1]) << " channels, but "
                         << ArgText(call, 1) << " with groups=" << groups << " expects "
                         << DimText(SimplifyDim(ws[1] * groups));
  }
  std::optional<int64_t> out_channels = arith::AsConstant(ws[0]);
  if (out_channels && *out_channels % groups != 0) {
    return ErrorStatus() << call.name() << ": the " << *out_channels << " output channels of " << ArgText(call, 1)
                         << " are not divisible by groups=" << groups;
  }
  STRATA_ASSIGN_OR_RETURN(auto spatial,
                          WindowOutput(call, xs, window, {ws[2], ws[3]}, false, "the kernel of " + ArgText(call, 1)));
  return TensorStructInfoNode::make({xs[0], ws[0], spatial[0], spatial[1]}, dtype);
}

StatusOr<StructInfo> InferPool(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0));
  STRATA_RETURN_IF_ERROR(CheckFloat(call, 0, x->dtype));
  STRATA_ASSIGN_OR_RETURN(PoolAttrs a, ReadPoolAttrs(call));
  STRATA_RETURN_IF_ERROR(CheckRank4(call, 0, x, "(N, C, H, W)"));
  if (!x->shape) return TensorStructInfoNode::make_ndim(4, x->dtype);
  const std::vector<PrimExpr>& xs = *x->shape;
  STRATA_ASSIGN_OR_RETURN(auto spatial, WindowOutput(call, xs, a.window, {a.size[0], a.size[1]}, a.ceil_mode,
                                                     "pool_size " + ir::PrintInts({a.size[0], a.size[1]})));
  return TensorStructInfoNode::make({xs[0], xs[1], spatial[0], spatial[1]}, x->dtype);
}

StatusOr<StructInfo> InferGlobalAvgPool(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0));
  STRATA_RETURN_IF_ERROR(CheckFloat(call, 0, x->dtype));
  STRATA_RETURN_IF_ERROR(CheckRank4(call, 0, x, "(N, C, H, W)"));
  if (!x->shape) return TensorStructInfoNode::make_ndim(4, x->dtype);
  return TensorStructInfoNode::make({(*x->shape)[0], (*x->shape)[1], 1, 1}, x->dtype);
}

// softmax, log_softmax: same shape; the axis must exist when the rank is known.
StatusOr<StructInfo> InferSoftmax(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0));
  STRATA_RETURN_IF_ERROR(CheckFloat(call, 0, x->dtype));
  if (x->ndim >= 0) STRATA_RETURN_IF_ERROR(NormalizeAxis(call, "axis", call.IntAttr("axis"), x->ndim).status());
  return call.arg_sinfo(0);
}

// Parameter `i` must have exactly the dims `expected` (a part of x's shape,
// described by `what`); dims that cannot be compared statically are checked by
// the kernel.
Status CheckParamShape(const OpCall& call, size_t i, const std::vector<PrimExpr>& expected, const std::string& what) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* p, TensorArg(call, i));
  bool mismatch = p->ndim >= 0 && p->ndim != static_cast<int>(expected.size());
  if (!mismatch && p->shape) {
    for (size_t d = 0; d < expected.size(); ++d) {
      std::optional<int64_t> diff = arith::AsConstant((*p->shape)[d] - expected[d]);
      mismatch = mismatch || (diff && *diff != 0);
    }
  }
  if (!mismatch) return Status::Ok();
  return ErrorStatus() << call.name() << ": " << ArgText(call, i) << " must have the shape " << what << " = "
                       << ir::PrintShape(expected) << " of " << ArgText(call, 0);
}

// layer_norm and batch_norm: x and its parameters share one float dtype; the
// parameters' expected shape is a function of x's shape and the normalized axis.
StatusOr<StructInfo> InferNorm(const OpCall& call, bool layer) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0));
  DataType dtype = x->dtype;
  for (size_t i = 1; i < call.num_args(); ++i) {
    STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* p, TensorArg(call, i));
    STRATA_ASSIGN_OR_RETURN(dtype, SameDtype(call, 0, i, dtype, p->dtype));
  }
  STRATA_RETURN_IF_ERROR(CheckFloat(call, 0, dtype));
  if (x->ndim < 0) return call.arg_sinfo(0);
  STRATA_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(call, "axis", call.IntAttr("axis"), x->ndim));
  if (!x->shape) return call.arg_sinfo(0);
  const std::vector<PrimExpr>& xs = *x->shape;
  const std::vector<PrimExpr> expected =
      layer ? std::vector<PrimExpr>(xs.begin() + axis, xs.end()) : std::vector<PrimExpr>{xs[axis]};
  const std::string what =
      layer ? "x.shape[" + std::to_string(axis) + ":]" : "(x.shape[" + std::to_string(axis) + "],)";
  for (size_t i = 1; i < call.num_args(); ++i) STRATA_RETURN_IF_ERROR(CheckParamShape(call, i, expected, what));
  return TensorStructInfoNode::make(xs, dtype);
}

StatusOr<StructInfo> InferDropout(const OpCall& call) {
  STRATA_RETURN_IF_ERROR(TensorArg(call, 0).status());
  const double rate = call.FloatAttr("rate");
  if (!(rate >= 0 && rate < 1)) {
    return ErrorStatus() << call.name() << ": attribute 'rate' must be in [0, 1), got " << rate;
  }
  return call.arg_sinfo(0);
}

// ---- kernel pieces -------------------------------------------------------------

// Partial results per reduction: two AVX-512 vectors of f32, i.e. two
// independent dependency chains.
constexpr int64_t kLanes = 32;
// Width of the column tiles of softmax over a non-innermost axis.
constexpr int64_t kSoftmaxTile = 64;
// conv2d register tile: up to kConvChannels output channels x kConvWidth output
// positions accumulate in registers (16 AVX-512 accumulators) while the
// reduction over input channels and kernel taps runs.
constexpr int64_t kConvChannels = 8;
constexpr int64_t kConvWidth = 32;

using Combine = std::function<PrimExpr(PrimExpr, PrimExpr)>;

PrimExpr Add(PrimExpr a, PrimExpr b) { return a + b; }
PrimExpr Maximum(PrimExpr a, PrimExpr b) { return tir::Max(a, b); }

// A reduction of value(index) over a box whose last dimension is contiguous.
struct Reduction {
  std::string name;  // of the partial-results buffer and the loop variables
  DataType dtype;
  PrimExpr init;
  Combine combine;
  std::function<PrimExpr(const Index&)> value;
  // Optional: a store of each value as it is computed (softmax writes exp(x - max) once).
  std::function<tir::Stmt(const Index&, const PrimExpr&)> also;
};

// Binds `result` to the reduction over `extents` for `then`. Element k of a row
// goes to partial result k % kLanes.
tir::Stmt LaneReduce(const Reduction& r, const std::vector<PrimExpr>& extents, const tir::Var& result, tir::Stmt then) {
  tir::Buffer acc = KernelBuilder::Local(r.name, r.dtype, {kLanes});
  auto update = [&](const PrimExpr& lane, const Index& index) {
    PrimExpr value = r.value(index);
    if (!r.also) return Store(acc, {lane}, r.combine(Load(acc, {lane}), value));
    tir::Var v(r.name + "_v", r.dtype);
    return Let(v, value, Seq({r.also(index, v), Store(acc, {lane}, r.combine(Load(acc, {lane}), v))}));
  };
  const std::vector<PrimExpr> outer(extents.begin(), extents.end() - 1);
  const PrimExpr last = extents.back();
  tir::Stmt rows = Nest(r.name + "_i", outer, ForKind::kSerial, [&](const Index& index) {
    std::vector<tir::Stmt> parts;
    const PrimExpr full = S(tir::FloorDiv(last, kLanes));
    if (arith::AsConstant(full) != 0) {
      parts.push_back(Loop(r.name + "_c", 0, full, ForKind::kSerial, [&](const PrimExpr& c) {
        return Loop(r.name + "_l", 0, kLanes, ForKind::kVectorized,
                    [&](const PrimExpr& l) { return update(l, Concat(index, {c * kLanes + l})); });
      }));
    }
    const PrimExpr tail = S(tir::FloorMod(last, kLanes));
    if (arith::AsConstant(tail) != 0) {
      // The tail's elements go to distinct lanes, so its loop vectorizes too (a
      // softmax over 16 attention scores is all tail).
      parts.push_back(Loop(r.name + "_t", 0, tail, ForKind::kVectorized,
                           [&](const PrimExpr& t) { return update(t, Concat(index, {full * kLanes + t})); }));
    }
    return Seq(std::move(parts));
  });
  std::vector<tir::Stmt> stmts = {
      Loop(r.name + "_l0", 0, kLanes, ForKind::kVectorized, [&](const PrimExpr& l) { return Store(acc, {l}, r.init); }),
      rows};
  // Pairwise across the partial results: halve the live ones until one is left.
  for (int64_t half = kLanes / 2; half >= 2; half /= 2) {
    stmts.push_back(Loop(r.name + "_h" + std::to_string(half), 0, half, ForKind::kVectorized, [&](const PrimExpr& l) {
      return Store(acc, {l}, r.combine(Load(acc, {l}), Load(acc, {l + half})));
    }));
  }
  stmts.push_back(Let(result, r.combine(Load(acc, {0}), Load(acc, {1})), then));
  return tir::AllocateNode::make(acc, Seq(std::move(stmts)));
}

// ---- conv2d --------------------------------------------------------------------
//
// Two phases. First the input is copied, zero-padded, into a workspace in which
// every tap of the convolution is a shifted contiguous read: each (image,
// channel) plane is split by the strides into stride_h x stride_w phase planes
// (padded row i = hq * stride_h + phase_h, column j = wq * stride_w + phase_w),
// each flattened to rows of Wq columns. Output position (oh, ow) is flat
// position oh * Wq + ow, and kernel tap (kh, kw) reads the phase plane of
// (kh * dh % stride_h, kw * dw % stride_w) at that position plus a constant
// offset. Positions with ow >= out_w are computed and dropped, a small price
// (Wq - out_w is about the kernel width / stride_w) for tiles that run across
// rows: small images fill whole vectors and the hot loop needs no bounds checks.
//
// Then each task (image, tile of kConvWidth flat positions, block of output
// channels of one group) accumulates a (channels x positions) tile that LLVM
// keeps in registers over the whole reduction (input channels x kernel rows x
// kernel columns), each step one load of input positions and one broadcast
// weight per channel, and stores the tile's row segments to the output. The
// blocks of one tile are consecutive tasks, so the input the tile reads stays
// in cache while every block uses it.

StatusOr<tir::Stmt> LegalizeConv2d(const OpCall& call, KernelBuilder& b) {
  STRATA_ASSIGN_OR_RETURN(Window win, ReadWindow(call, "strides"));
  const int64_t groups = call.IntAttr("groups");
  STRATA_ASSIGN_OR_RETURN(tir::Buffer x, b.Input(call.arg(0), "X", "x"));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer w, b.Input(call.arg(1), "W", "weight"));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer y, b.Output(call.call().struct_info, "Y"));
  const DataType dt = y->dtype;
  const PrimExpr n_img = x->shape[0], channels = x->shape[1], height = x->shape[2], width = x->shape[3];
  const PrimExpr out_channels = w->shape[0], group_in = w->shape[1], kh_n = w->shape[2], kw_n = w->shape[3];
  const PrimExpr out_h = y->shape[2], out_w = y->shape[3];
  const auto [sh, sw] = win.strides;
  const auto [dh, dw] = win.dilation;
  const int64_t pt = win.pad_before(0), pl = win.pad_before(1);

  std::vector<tir::Stmt> stmts;
  CheckAtRunTime(&stmts, Eq(channels, group_in * groups),
                 "channels of x (" + DimText(channels) + ") must equal groups * channels of weight (" +
                     DimText(S(group_in * groups)) + ")");
  CheckAtRunTime(&stmts, Eq(tir::FloorMod(out_channels, groups), 0),
                 "output channels of weight (" + DimText(out_channels) + ") must be divisible by groups (" +
                     std::to_string(groups) + ")");

  // Output-channel blocks never straddle groups (a block shares its input
  // channels); a constant group size is split into blocks of equal size.
  const PrimExpr group_out = S(tir::FloorDiv(out_channels, groups));
  int64_t block = kConvChannels;
  if (std::optional<int64_t> og = arith::AsConstant(group_out); og && *og > 0) {
    const int64_t count = (*og + kConvChannels - 1) / kConvChannels;
    block = (*og + count - 1) / count;
  }
  const PrimExpr blocks_per_group = CeilDiv(group_out, block);
  const bool whole_blocks = arith::CanProve(Eq(tir::FloorMod(group_out, block), 0));

  // Phase-plane geometry: the largest tap offsets, rows Hq x columns Wq, and the
  // zeroed slack that the last tile's reads may run into.
  const PrimExpr max_row_shift = S(tir::FloorDiv(dh * (kh_n - 1), sh));
  const PrimExpr max_col_shift = S(tir::FloorDiv(dw * (kw_n - 1), sw));
  const PrimExpr plane_h = S(out_h + max_row_shift), plane_w = S(out_w + max_col_shift);
  const PrimExpr plane_used = S(plane_h * plane_w);
  const PrimExpr plane_size = S(plane_used + kConvWidth + max_col_shift);
  std::vector<PrimExpr> xp_shape = {n_img, channels};
  if (sh > 1) xp_shape.push_back(sh);
  if (sw > 1) xp_shape.push_back(sw);
  xp_shape.push_back(plane_size);
  tir::Buffer xp = KernelBuilder::Local("Xp", dt, xp_shape);
  auto xp_index = [&](const PrimExpr& n, const PrimExpr& c, const PrimExpr& phase_h, const PrimExpr& phase_w,
                      const PrimExpr& flat) {
    Index index = {n, c};
    if (sh > 1) index.push_back(phase_h);
    if (sw > 1) index.push_back(phase_w);
    index.push_back(flat);
    return index;
  };
  // A loop over the phases of one dimension; none for stride 1.
  auto phases = [&](const std::string& name, int64_t stride, const std::function<tir::Stmt(const PrimExpr&)>& body) {
    return stride == 1 ? body(0) : Loop(name, 0, stride, ForKind::kSerial, body);
  };

  // Columns [first[pw], end[pw]) of phase pw hold input columns (wq * sw + pw -
  // pl inside [0, width)); the others are padding. They are the same for every row.
  std::vector<std::pair<tir::Var, PrimExpr>> column_lets;
  std::vector<PrimExpr> first(sw), end(sw);
  for (int64_t pw = 0; pw < sw; ++pw) {
    const std::string suffix = sw == 1 ? "" : "_" + std::to_string(pw);
    first[pw] = S(tir::Min(PrimExpr((pl - pw + sw - 1) / sw), plane_w));
    const PrimExpr end_value = S(tir::Max(tir::Min(tir::FloorDiv(width + (pl - pw + sw - 1), sw), plane_w), first[pw]));
    column_lets.emplace_back(tir::Var("cols_end" + suffix), end_value);
    end[pw] = column_lets.back().first;
  }

  tir::Stmt copy = ParallelOver("nc", {n_img, channels}, [&](const Index& nc) {
    auto at = [&](const PrimExpr& ph_h, const PrimExpr& ph_w, const PrimExpr& q) {
      return xp_index(nc[0], nc[1], ph_h, ph_w, q);
    };
    auto fill = [&](const PrimExpr& ph_h, const PrimExpr& ph_w, const PrimExpr& from, const PrimExpr& to,
                    const std::string& name) {
      return Loop(name, from, tir::Max(to - from, 0), ForKind::kVectorized,
                  [&](const PrimExpr& q) { return Store(xp, at(ph_h, ph_w, q), Float(dt, 0)); });
    };
    // Each phase of a row: leading padding, input columns, trailing padding.
    // (The phases of one row read the input row at stride sw.)
    tir::Stmt rows = phases("ph", sh, [&](const PrimExpr& ph_h) {
      return Loop("hq", 0, plane_h, ForKind::kSerial, [&](const PrimExpr& hq) {
        const PrimExpr row = S(hq * sh + ph_h - pt);
        const PrimExpr base = S(hq * plane_w);
        std::vector<tir::Stmt> inside;
        for (int64_t pw = 0; pw < sw; ++pw) {
          const std::string suffix = sw == 1 ? "" : std::to_string(pw);
          if (arith::AsConstant(first[pw]) != 0)
            inside.push_back(fill(ph_h, pw, base, base + first[pw], "ql" + suffix));
          inside.push_back(
              Loop("q" + suffix, first[pw], end[pw] - first[pw], ForKind::kVectorized, [&](const PrimExpr& q) {
                return Store(xp, at(ph_h, pw, base + q), Load(x, Concat(nc, {row, q * sw + (pw - pl)})));
              }));
          inside.push_back(fill(ph_h, pw, base + end[pw], base + plane_w, "qr" + suffix));
        }
        const bool below_top = arith::CanProve(Ge(row, 0)), above_bottom = arith::CanProve(Lt(row, height));
        if (below_top && above_bottom) return Seq(std::move(inside));
        tir::Stmt outside =
            phases("pw", sw, [&](const PrimExpr& ph_w) { return fill(ph_h, ph_w, base, base + plane_w, "qz"); });
        PrimExpr in_input = below_top ? Lt(row, height) : above_bottom ? Ge(row, 0) : And(Ge(row, 0), Lt(row, height));
        return tir::IfThenElseNode::make(in_input, Seq(std::move(inside)), outside);
      });
    });
    tir::Stmt slack = phases("ph", sh, [&](const PrimExpr& ph_h) {
      return phases("pw", sw, [&](const PrimExpr& ph_w) { return fill(ph_h, ph_w, plane_used, plane_size, "qs"); });
    });
    return Seq({rows, slack});
  });
  for (size_t k = column_lets.size(); k-- > 0;) copy = Let(column_lets[k].first, column_lets[k].second, copy);

  tir::Buffer acc = KernelBuilder::Local("acc", dt, {block, kConvWidth});
  const PrimExpr flat_out = S(out_h * plane_w);
  tir::Stmt compute =
      ParallelOver("t", {n_img, CeilDiv(flat_out, kConvWidth), S(blocks_per_group * groups)}, [&](const Index& t) {
        const PrimExpr& n = t[0];
        tir::Var group_var("g"), oc0("oc0"), valid_var("valid"), p0("pos0");
        const PrimExpr g = groups == 1 ? PrimExpr(0) : PrimExpr(group_var);
        const PrimExpr valid = whole_blocks ? PrimExpr(block) : PrimExpr(valid_var);
        const PrimExpr in_block = S((groups == 1 ? t[2] : tir::FloorMod(t[2], blocks_per_group)) * block);
        tir::Stmt init = Loop("o", 0, block, ForKind::kUnrolled, [&](const PrimExpr& o) {
          return Loop("l", 0, kConvWidth, ForKind::kVectorized, [&](const PrimExpr& l) {
            return Store(acc, {o, l}, Float(dt, 0));
          });
        });
        tir::Stmt reduce = Loop("ic", 0, group_in, ForKind::kSerial, [&](const PrimExpr& ic) {
          return Loop("kh", 0, kh_n, ForKind::kSerial, [&](const PrimExpr& kh) {
            return Loop("kw", 0, kw_n, ForKind::kSerial, [&](const PrimExpr& kw) {
              return Loop("l", 0, kConvWidth, ForKind::kVectorized, [&](const PrimExpr& l) {
                tir::Var xv("xv", dt);
                const PrimExpr shift = tir::FloorDiv(kh * dh, sh) * plane_w + tir::FloorDiv(kw * dw, sw);
                PrimExpr in = Load(xp, xp_index(n, g * group_in + ic, tir::FloorMod(kh * dh, sh),
                                                tir::FloorMod(kw * dw, sw), p0 + l + shift));
                tir::Stmt fma = Loop("o", 0, block, ForKind::kUnrolled, [&](const PrimExpr& o) {
                  // Past the last channel of a partial block: any valid weight row, result dropped.
                  PrimExpr oc = whole_blocks ? PrimExpr(oc0 + o) : tir::Min(oc0 + o, out_channels - 1);
                  return Store(acc, {o, l}, Load(acc, {o, l}) + xv * Load(w, {oc, ic, kh, kw}));
                });
                return Let(xv, in, fma);
              });
            });
          });
        });
        // The output rows the tile's positions [p0, p0 + kConvWidth) fall in. Each
        // row takes the tile lanes [lo, hi) with masked vector stores, so the
        // accumulators are read at constant lanes and never leave registers for
        // a partial row.
        tir::Var row0("row0");
        tir::Stmt write = Loop(
            "r", row0, tir::Min(out_h, tir::FloorDiv(p0 + (kConvWidth - 1), plane_w) + 1) - row0, ForKind::kSerial,
            [&](const PrimExpr& r) {
              tir::Var lo("lo"), hi("hi");
              tir::Stmt rows = Loop("o", 0, block, ForKind::kUnrolled, [&](const PrimExpr& o) {
                tir::Stmt lanes = Loop("l", 0, kConvWidth, ForKind::kVectorized, [&](const PrimExpr& l) {
                  return tir::IfThenElseNode::make(And(Ge(l, lo), Lt(l, hi)),
                                                   Store(y, {n, oc0 + o, r, l + p0 - r * plane_w}, Load(acc, {o, l})));
                });
                return whole_blocks ? lanes : tir::IfThenElseNode::make(Lt(o, valid), lanes);
              });
              return Let(lo, S(tir::Max(r * plane_w - p0, 0)),
                         Let(hi, S(tir::Min(r * plane_w + out_w - p0, PrimExpr(kConvWidth))), rows));
            });
        tir::Stmt body =
            tir::AllocateNode::make(acc, Seq({init, reduce, Let(row0, S(tir::FloorDiv(p0, plane_w)), write)}));
        body = Let(p0, S(t[1] * kConvWidth), body);
        if (!whole_blocks) body = Let(valid_var, S(tir::Min(PrimExpr(block), group_out - in_block)), body);
        body = Let(oc0, S(g * group_out + in_block), body);
        return groups == 1 ? body : Let(group_var, S(tir::FloorDiv(t[2], blocks_per_group)), body);
      });
  stmts.push_back(tir::AllocateNode::make(xp, Seq({copy, compute})));
  return Seq(std::move(stmts));
}

// ---- pooling -------------------------------------------------------------------
//
// One task per output row. The taps of a window are unrolled into one
// expression (pool sizes are attributes, so their count is known). Rows outside
// the input are masked per task; columns are split into the interior, where
// every tap is inside the input and the loop vectorizes with plain loads, and
// the few border columns, which clamp and mask each tap.

StatusOr<tir::Stmt> LegalizePool(const OpCall& call, KernelBuilder& b, PoolKind kind) {
  STRATA_ASSIGN_OR_RETURN(const PoolKernelSetup setup, BeginPoolKernel(call, b, kind));
  const auto& [a, include_pad, x, y, dt, height, width, out_w, sh, sw, dh, dw, pt, pl, pb, pr, init] = setup;
  const Combine combine = kind == PoolKind::kMax ? Combine(Maximum) : Combine(Add);
  const auto& clamp = ClampToExtent;
  const auto& inside = InsideExtent;
  const auto& count = CountTrue;

  return ParallelOver("t", {x->shape[0], x->shape[1], y->shape[2]}, [&](const Index& t) {
    const PrimExpr &n = t[0], &c = t[1], &oh = t[2];
    // Per window row: its (clamped) index and whether it is inside the input,
    // as variables of the task unless they are known; likewise the interior.
    std::vector<PrimExpr> rows, rows_ok, rows_counted;
    std::vector<std::pair<tir::Var, PrimExpr>> lets;
    auto bind = [&](const std::string& name, DataType dtype, const PrimExpr& value) -> PrimExpr {
      if (dtype.is_bool() ? IsTrue(value) : arith::AsConstant(value).has_value()) return value;
      tir::Var var(name, dtype);
      lets.emplace_back(var, value);
      return var;
    };
    // Floor mode without bottom padding: the last window ends inside the input.
    const bool rows_end_inside = !a.ceil_mode && pb == 0;
    for (int64_t kh = 0; kh < a.size[0]; ++kh) {
      const PrimExpr r = S(oh * sh + (kh * dh - pt));
      const PrimExpr ok = rows_end_inside ? AllOf({Ge(r, 0)}) : inside(r, height);
      rows.push_back(IsTrue(ok) ? r : bind("row" + std::to_string(kh), DataType::I64(), S(clamp(r, height))));
      rows_ok.push_back(bind("row" + std::to_string(kh) + "_ok", DataType::Bool(), ok));
      rows_counted.push_back(include_pad ? AllOf({Lt(r, height + pb)}) : rows_ok.back());
    }
    const PrimExpr rows_in_window =
        kind == PoolKind::kAvg ? bind("rows_in_window", DataType::I64(), count(rows_counted)) : PrimExpr(0);

    // The pooled value at column ow; `interior` columns need no column checks.
    auto pooled = [&](const PrimExpr& ow, bool interior) {
      PrimExpr total;
      std::vector<PrimExpr> cols_counted;
      for (int64_t kw = 0; kw < a.size[1]; ++kw) {
        const PrimExpr col = S(ow * sw + (kw * dw - pl));
        const PrimExpr col_ok = interior ? AllOf({}) : inside(col, width);
        cols_counted.push_back(include_pad ? AllOf({Lt(col, width + pr)}) : col_ok);
        for (int64_t kh = 0; kh < a.size[0]; ++kh) {
          const PrimExpr ok = AllOf({rows_ok[kh], col_ok});
          PrimExpr tap = Load(x, {n, c, rows[kh], IsTrue(col_ok) ? col : clamp(col, width)});
          if (!IsTrue(ok)) tap = tir::SelectNode::make(ok, tap, init);
          total = total.defined() ? combine(total, tap) : tap;
        }
      }
      if (kind == PoolKind::kMax) return total;
      PrimExpr divisor = S(rows_in_window * (interior && !include_pad ? PrimExpr(a.size[1]) : count(cols_counted)));
      if (!arith::CanProve(Ge(divisor, 1))) divisor = tir::Max(divisor, 1);
      return Div(total, CastTo(dt, divisor));
    };
    std::vector<tir::Stmt> loops;
    auto columns = [&](const std::string& name, const PrimExpr& from, const PrimExpr& extent, bool interior) {
      if (arith::AsConstant(extent) == 0) return;
      loops.push_back(
          Loop(name, from, extent, interior ? ForKind::kVectorized : ForKind::kSerial, [&](const PrimExpr& ow) {
            return Store(y, {n, c, oh, ow}, pooled(ow, interior));
          }));
    };
    // Interior columns [lo, hi): every tap column in [0, width).
    const PrimExpr lo = bind("lo", DataType::I64(), S(tir::Min(PrimExpr((pl + sw - 1) / sw), out_w)));
    const PrimExpr hi_value =
        S(tir::Max(tir::Min(tir::FloorDiv(width - 1 + pl - (a.size[1] - 1) * dw, sw) + 1, out_w), lo));
    const PrimExpr hi = arith::CanProve(Eq(hi_value, out_w)) ? out_w : bind("hi", DataType::I64(), hi_value);
    columns("ow_left", 0, lo, false);
    columns("ow", lo, S(hi - lo), true);
    columns("ow_right", hi, S(out_w - hi), false);
    tir::Stmt body = Seq(std::move(loops));
    for (size_t k = lets.size(); k-- > 0;) body = Let(lets[k].first, lets[k].second, body);
    return body;
  });
}

StatusOr<tir::Stmt> LegalizeGlobalAvgPool(const OpCall& call, KernelBuilder& b) {
  STRATA_ASSIGN_OR_RETURN(tir::Buffer x, b.Input(call.arg(0), "X", "x"));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer y, b.Output(call.call().struct_info, "Y"));
  const DataType dt = y->dtype;
  const PrimExpr area = S(x->shape[2] * x->shape[3]);
  return ParallelOver("p", {x->shape[0], x->shape[1]}, [&](const Index& nc) {
    tir::Var sum("sum", dt);
    Reduction r{"partial", dt, Float(dt, 0), Add, [&](const Index& hw) { return Load(x, Concat(nc, hw)); }, nullptr};
    return LaneReduce(r, {x->shape[2], x->shape[3]}, sum, Store(y, Concat(nc, {0, 0}), Div(sum, CastTo(dt, area))));
  });
}

// ---- softmax, log_softmax ------------------------------------------------------
//
// max, then sum of exp(x - max), then the result from both. Over the innermost
// axis each row reduces with LaneReduce. Over another axis the innermost
// dimension stays the vectorized one: tiles of kSoftmaxTile columns keep their
// running max and sum in local buffers while the loop walks the axis.

StatusOr<tir::Stmt> LegalizeSoftmax(const OpCall& call, KernelBuilder& b, bool log) {
  STRATA_ASSIGN_OR_RETURN(tir::Buffer x, b.Input(call.arg(0), "X", "x"));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer y, b.Output(call.call().struct_info, "Y"));
  const DataType dt = y->dtype;
  const std::vector<PrimExpr>& shape = y->shape;
  const int64_t rank = static_cast<int64_t>(shape.size());
  STRATA_ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(call, "axis", call.IntAttr("axis"), rank));
  const PrimExpr neg_inf = Float(dt, -std::numeric_limits<double>::infinity());
  const PrimExpr k_n = shape[axis];

  if (axis == rank - 1) {
    const std::vector<PrimExpr> rows(shape.begin(), shape.end() - 1);
    return ParallelOver("r", rows, [&](const Index& row) {
      auto at = [&](const Index& k) { return Concat(row, k); };
      tir::Var mx("row_max", dt), sum("row_sum", dt);
      Reduction max_r{"max_part", dt, neg_inf, Maximum, [&](const Index& k) { return Load(x, at(k)); }, nullptr};
      Reduction sum_r{"sum_part", dt, Float(dt, 0), Add, [&](const Index& k) { return Exp(Load(x, at(k)) - mx); },
                      nullptr};
      tir::Stmt finish;
      if (log) {
        tir::Var lse("log_sum_exp", dt);
        finish = Let(lse, mx + Log(sum), Loop("k", 0, k_n, ForKind::kVectorized, [&](const PrimExpr& k) {
                       return Store(y, at({k}), Load(x, at({k})) - lse);
                     }));
      } else {
        sum_r.also = [&](const Index& k, const PrimExpr& e) { return Store(y, at(k), e); };
        tir::Var inv("inv_sum", dt);
        finish = Let(inv, Div(Float(dt, 1), sum), Loop("k", 0, k_n, ForKind::kVectorized, [&](const PrimExpr& k) {
                       return Store(y, at({k}), Load(y, at({k})) * inv);
                     }));
      }
      return LaneReduce(max_r, {k_n}, mx, LaneReduce(sum_r, {k_n}, sum, finish));
    });
  }

  // Tasks: every index outside the axis except the innermost, times column tiles.
  std::vector<PrimExpr> task_dims;
  for (int64_t d = 0; d + 1 < rank; ++d) {
    if (d != axis) task_dims.push_back(shape[d]);
  }
  const PrimExpr inner = shape.back();
  task_dims.push_back(CeilDiv(inner, kSoftmaxTile));
  return ParallelOver("t", task_dims, [&](const Index& t) {
    tir::Var j0("j0"), cols("cols");
    tir::Buffer mx = KernelBuilder::Local("tile_max", dt, {kSoftmaxTile});
    tir::Buffer sum = KernelBuilder::Local("tile_sum", dt, {kSoftmaxTile});
    // The element at axis index k and tile column j.
    auto at = [&](const PrimExpr& k, const PrimExpr& j) {
      Index index;
      size_t next = 0;
      for (int64_t d = 0; d + 1 < rank; ++d) index.push_back(d == axis ? k : t[next++]);
      index.push_back(j0 + j);
      return index;
    };
    auto sweep = [&](const std::string& name, const std::function<tir::Stmt(const PrimExpr&, const PrimExpr&)>& f) {
      return Loop(name, 0, k_n, ForKind::kSerial, [&](const PrimExpr& k) {
        return Loop(name + "_j", 0, cols, ForKind::kVectorized, [&](const PrimExpr& j) { return f(k, j); });
      });
    };
    tir::Stmt init = Loop("j", 0, cols, ForKind::kVectorized, [&](const PrimExpr& j) {
      return Seq({Store(mx, {j}, neg_inf), Store(sum, {j}, Float(dt, 0))});
    });
    tir::Stmt max_pass = sweep("km", [&](const PrimExpr& k, const PrimExpr& j) {
      return Store(mx, {j}, tir::Max(Load(mx, {j}), Load(x, at(k, j))));
    });
    tir::Stmt sum_pass = sweep("ks", [&](const PrimExpr& k, const PrimExpr& j) {
      PrimExpr e = Exp(Load(x, at(k, j)) - Load(mx, {j}));
      if (log) return Store(sum, {j}, Load(sum, {j}) + e);
      tir::Var ev("e", dt);
      return Let(ev, e, Seq({Store(y, at(k, j), ev), Store(sum, {j}, Load(sum, {j}) + ev)}));
    });
    tir::Stmt out_pass = sweep("ko", [&](const PrimExpr& k, const PrimExpr& j) {
      if (log) return Store(y, at(k, j), Load(x, at(k, j)) - (Load(mx, {j}) + Log(Load(sum, {j}))));
      return Store(y, at(k, j), Div(Load(y, at(k, j)), Load(sum, {j})));
    });
    tir::Stmt body =
        tir::AllocateNode::make(mx, tir::AllocateNode::make(sum, Seq({init, max_pass, sum_pass, out_pass})));
    return Let(j0, S(t.back() * kSoftmaxTile), Let(cols, S(tir::Min(PrimExpr(kSoftmaxTile), inner - j0)), body));
  });
}

// ---- normalization -------------------------------------------------------------

// Asserts that parameter buffer `p` has the dims `expected` where the struct
// info could not prove it.
void CheckParamDims(std::vector<tir::Stmt>* stmts, const OpCall& call, size_t i, const tir::Buffer& p,
                    const std::vector<PrimExpr>& expected, const std::vector<int64_t>& x_dims) {
  for (size_t d = 0; d < expected.size(); ++d) {
    CheckAtRunTime(stmts, Eq(p->shape[d], expected[d]),
                   "dimension " + std::to_string(d) + " of " + call.arg_name(i) + " (" + DimText(p->shape[d]) +
                       ") must equal dimension " + std::to_string(x_dims[d]) + " of x (" + DimText(expected[d]) + ")");
  }
}

// layer_norm: per row of the leading dims, mean and variance over the trailing
// ones (two passes: the variance of x - mean, not E[x^2] - mean^2).
StatusOr<tir::Stmt> LegalizeLayerNorm(const OpCall& call, KernelBuilder& b) {
  STRATA_ASSIGN_OR_RETURN(tir::Buffer x, b.Input(call.arg(0), "X", "x"));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer gamma, b.Input(call.arg(1), "Gamma", "gamma"));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer beta, b.Input(call.arg(2), "Beta", "beta"));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer y, b.Output(call.call().struct_info, "Y"));
  const DataType dt = y->dtype;
  const int64_t rank = static_cast<int64_t>(x->shape.size());
  STRATA_ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(call, "axis", call.IntAttr("axis"), rank));
  const std::vector<PrimExpr> outer(x->shape.begin(), x->shape.begin() + axis);
  const std::vector<PrimExpr> inner(x->shape.begin() + axis, x->shape.end());
  std::vector<int64_t> x_dims;
  for (int64_t d = axis; d < rank; ++d) x_dims.push_back(d);
  std::vector<tir::Stmt> stmts;
  CheckParamDims(&stmts, call, 1, gamma, inner, x_dims);
  CheckParamDims(&stmts, call, 2, beta, inner, x_dims);
  const PrimExpr count = CastTo(dt, Product(inner));
  const double epsilon = call.FloatAttr("epsilon");

  stmts.push_back(ParallelOver("r", outer, [&](const Index& row) {
    tir::Var sum("sum", dt), mean("mean", dt), sq("sq_sum", dt), rstd("rstd", dt);
    Reduction sum_r{"sum_part", dt, Float(dt, 0), Add, [&](const Index& k) { return Load(x, Concat(row, k)); },
                    nullptr};
    Reduction sq_r{"sq_part",
                   dt,
                   Float(dt, 0),
                   Add,
                   [&](const Index& k) {
                     PrimExpr diff = Load(x, Concat(row, k)) - mean;
                     return diff * diff;
                   },
                   nullptr};
    tir::Stmt out = Nest("k", inner, ForKind::kVectorized, [&](const Index& k) {
      return Store(y, Concat(row, k), (Load(x, Concat(row, k)) - mean) * rstd * Load(gamma, k) + Load(beta, k));
    });
    return LaneReduce(
        sum_r, inner, sum,
        Let(mean, Div(sum, count),
            LaneReduce(sq_r, inner, sq, Let(rstd, Div(Float(dt, 1), Sqrt(Div(sq, count) + Float(dt, epsilon))), out))));
  }));
  return Seq(std::move(stmts));
}

StatusOr<tir::Stmt> LegalizeBatchNorm(const OpCall& call, KernelBuilder& b) {
  STRATA_ASSIGN_OR_RETURN(tir::Buffer x, b.Input(call.arg(0), "X", "x"));
  std::vector<tir::Buffer> params;
  for (size_t i = 1; i < 5; ++i) {
    std::string name = call.arg_name(i);
    name[0] = static_cast<char>(std::toupper(name[0]));
    STRATA_ASSIGN_OR_RETURN(tir::Buffer p, b.Input(call.arg(i), name, call.arg_name(i)));
    params.push_back(p);
  }
  STRATA_ASSIGN_OR_RETURN(tir::Buffer y, b.Output(call.call().struct_info, "Y"));
  const DataType dt = y->dtype;
  STRATA_ASSIGN_OR_RETURN(const int64_t axis,
                          NormalizeAxis(call, "axis", call.IntAttr("axis"), static_cast<int64_t>(x->shape.size())));
  std::vector<tir::Stmt> stmts;
  for (size_t i = 0; i < params.size(); ++i) CheckParamDims(&stmts, call, i + 1, params[i], {x->shape[axis]}, {axis});
  const PrimExpr epsilon = Float(dt, call.FloatAttr("epsilon"));
  stmts.push_back(Pointwise(b, y->shape, [&](const Index& index) {
    const Index c = {index[axis]};
    PrimExpr scale = Div(Load(params[0], c), Sqrt(Load(params[3], c) + epsilon));
    return Store(y, index, (Load(x, index) - Load(params[2], c)) * scale + Load(params[1], c));
  }));
  return Seq(std::move(stmts));
}

StatusOr<tir::Stmt> LegalizeDropout(const OpCall& call, KernelBuilder& b) {
  STRATA_ASSIGN_OR_RETURN(tir::Buffer x, b.Input(call.arg(0), "X", "x"));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer y, b.Output(call.call().struct_info, "Y"));
  return Pointwise(b, y->shape, [&](const Index& index) { return Store(y, index, Load(x, index)); });
}

AttrDef Ints(const std::string& name, std::vector<int64_t> value) {
  return AttrDef{name, AttrKind::kInts, ir::AttrValue(std::move(value))};
}

}  // namespace

std::vector<OpDef> NeuralNetworkOps() {
  const AttrDef epsilon{"epsilon", AttrKind::kFloat, ir::AttrValue(1e-5)};
  auto axis = [](int64_t value) { return AttrDef{"axis", AttrKind::kInt, ir::AttrValue(value)}; };
  return {
      OpDef{"conv2d",
            {"x", "weight"},
            0,
            {Ints("strides", {1, 1}), Ints("padding", {0, 0, 0, 0}), Ints("dilation", {1, 1}),
             AttrDef{"groups", AttrKind::kInt, ir::AttrValue(int64_t{1})}},
            InferConv2d,
            LegalizeConv2d},
      OpDef{"max_pool2d",
            {"x"},
            0,
            PoolAttrDefs(false),
            InferPool,
            [](const OpCall& call, KernelBuilder& b) { return LegalizePool(call, b, PoolKind::kMax); }},
      OpDef{"avg_pool2d",
            {"x"},
            0,
            PoolAttrDefs(true),
            InferPool,
            [](const OpCall& call, KernelBuilder& b) { return LegalizePool(call, b, PoolKind::kAvg); }},
      OpDef{"global_avg_pool2d", {"x"}, 0, {}, InferGlobalAvgPool, LegalizeGlobalAvgPool},
      OpDef{"softmax",
            {"x"},
            0,
            {axis(-1)},
            InferSoftmax,
            [](const OpCall& call, KernelBuilder& b) { return LegalizeSoftmax(call, b, false); }},
      OpDef{"log_softmax",
            {"x"},
            0,
            {axis(-1)},
            InferSoftmax,
            [](const OpCall& call, KernelBuilder& b) { return LegalizeSoftmax(call, b, true); }},
      OpDef{"layer_norm",
            {"x", "gamma", "beta"},
            0,
            {axis(-1), epsilon},
            [](const OpCall& call) { return InferNorm(call, true); },
            LegalizeLayerNorm},
      OpDef{"batch_norm",
            {"x", "gamma", "beta", "moving_mean", "moving_var"},
            0,
            {axis(1), epsilon},
            [](const OpCall& call) { return InferNorm(call, false); },
            LegalizeBatchNorm},
      OpDef{
          "dropout", {"x"}, 0, {AttrDef{"rate", AttrKind::kFloat, ir::AttrValue(0.5)}}, InferDropout, LegalizeDropout},
  };
}

}  // namespace strata::op
