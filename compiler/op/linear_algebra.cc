// Linear-algebra operators: matmul (numpy.matmul), dense (x @ weight^T + bias,
// as torch.nn.functional.linear) and bias_add.
//
// matmul and dense share their kernels (docs/ops/linear_algebra.md shows them).
// The default, GemmKernel, cuts the output into row x column blocks run in
// parallel; within a block, for each slice of the reduction, the block's
// columns of the right operand are packed into contiguous panels (a constant
// weight's panels, packed at compile time, are read in place), then each
// register tile's rows of the left operand are copied to a local buffer (so
// the hot loop reads them at constant offsets, from L1) and used against every
// column tile of the block, accumulating in a local buffer of constant size
// whose innermost loop, over contiguous output columns, is vectorized. Edges of
// symbolic sizes are handled by clamping the rows and columns that are read
// (the extra results are computed but never stored) and by min(...) extents
// where results are stored, so the hot loop has constant extents and no
// branches. With only a few rows, where such a tile would be mostly padding,
// the kernel branches at run time to RowKernel (matmul), DotKernel (dense, and
// matmul by a vector) or PanelRowKernel (packed_matmul).
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "compiler/analysis/struct_info_util.h"
#include "compiler/ir/arith/simplify.h"
#include "compiler/ir/printer.h"
#include "compiler/op/builtin_ops.h"
#include "compiler/op/gemm_panels.h"
#include "compiler/op/kernel_builder.h"
#include "compiler/op/op_util.h"

namespace strata::op {
namespace {

using analysis::DimText;
using analysis::ProveDimEqual;
using tir::ForKind;
using tir::ForNode;
using tir::PrimExprKind;
using tir::Stmt;

// ---- inference ---------------------------------------------------------------

// Dimension `d` of argument `i` as text for messages: "dimension 1 of x (k)".
std::string DimOf(const OpCall& call, size_t i, size_t d, const PrimExpr& dim) {
  return "dimension " + std::to_string(d) + " of " + call.arg_name(i) + " (" + DimText(dim) + ")";
}

// Two dimensions that must be equal: fine when provable, an error when both are
// constants that differ, otherwise left to the kernel's run-time check.
Status CheckSameDim(const OpCall& call, size_t a, size_t da, const PrimExpr& x, size_t b, size_t db, const PrimExpr& y,
                    const std::string& what) {
  if (ProveDimEqual(x, y)) return Status::Ok();
  std::optional<int64_t> cx = arith::AsConstant(x), cy = arith::AsConstant(y);
  if (cx && cy) {
    return ErrorStatus() << call.name() << ": " << ArgText(call, a) << " and " << ArgText(call, b) << " disagree on "
                         << what << ": " << DimOf(call, a, da, x) << " vs " << DimOf(call, b, db, y);
  }
  return Status::Ok();
}

Status CheckNumeric(const OpCall& call, size_t i, DataType dtype) {
  if (dtype.is_bool()) return ErrorStatus() << call.name() << ": " << ArgText(call, i) << " must be a numeric tensor";
  return Status::Ok();
}

Status CheckRank(const OpCall& call, size_t i, const TensorStructInfoNode* t, int rank, const std::string& what) {
  if (t->ndim >= 0 && t->ndim != rank) {
    return ErrorStatus() << call.name() << ": " << ArgText(call, i) << " must be " << rank << "-D " << what;
  }
  return Status::Ok();
}

StatusOr<StructInfo> InferMatmul(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0));
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* y, TensorArg(call, 1));
  STRATA_ASSIGN_OR_RETURN(DataType dtype, SameDtype(call, 0, 1, x->dtype, y->dtype));
  STRATA_RETURN_IF_ERROR(CheckNumeric(call, 0, dtype));
  for (size_t i = 0; i < 2; ++i) {
    if ((i == 0 ? x : y)->ndim == 0) {
      return ErrorStatus() << call.name() << ": " << ArgText(call, i) << " must have at least one dimension";
    }
  }
  if (x->ndim < 0 || y->ndim < 0) return TensorStructInfoNode::make_ndim(-1, dtype);
  // A 1-D operand takes part as a matrix (a row for x, a column for y) whose
  // extra dimension is dropped from the result.
  const int batch_rank = std::max(std::max(x->ndim, 2) - 2, std::max(y->ndim, 2) - 2);
  const int out_rank = batch_rank + (x->ndim >= 2 ? 1 : 0) + (y->ndim >= 2 ? 1 : 0);
  if (!x->shape || !y->shape) return TensorStructInfoNode::make_ndim(out_rank, dtype);
  const std::vector<PrimExpr>& a = *x->shape;
  const std::vector<PrimExpr>& b = *y->shape;
  const size_t ka = a.size() - 1, kb = b.size() >= 2 ? b.size() - 2 : 0;
  STRATA_RETURN_IF_ERROR(CheckSameDim(call, 0, ka, a[ka], 1, kb, b[kb], "the contracted dimension"));
  std::vector<PrimExpr> a_batch, b_batch;
  if (a.size() > 2) a_batch.assign(a.begin(), a.end() - 2);
  if (b.size() > 2) b_batch.assign(b.begin(), b.end() - 2);
  STRATA_ASSIGN_OR_RETURN(std::vector<std::optional<PrimExpr>> dims, BroadcastShapes(call, 0, 1, a_batch, b_batch));
  if (a.size() >= 2) dims.push_back(a[a.size() - 2]);
  if (b.size() >= 2) dims.push_back(b.back());
  return TensorFromDims(dims, dtype);
}

StatusOr<StructInfo> InferDense(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0));
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* w, TensorArg(call, 1));
  STRATA_ASSIGN_OR_RETURN(DataType dtype, SameDtype(call, 0, 1, x->dtype, w->dtype));
  STRATA_RETURN_IF_ERROR(CheckNumeric(call, 0, dtype));
  if (x->ndim == 0) {
    return ErrorStatus() << call.name() << ": " << ArgText(call, 0) << " must have at least one dimension";
  }
  STRATA_RETURN_IF_ERROR(CheckRank(call, 1, w, 2, "(out_features, in_features)"));
  const TensorStructInfoNode* bias = nullptr;
  if (call.num_args() > 2) {
    STRATA_ASSIGN_OR_RETURN(bias, TensorArg(call, 2));
    STRATA_ASSIGN_OR_RETURN(dtype, SameDtype(call, 0, 2, dtype, bias->dtype));
    STRATA_RETURN_IF_ERROR(CheckRank(call, 2, bias, 1, "(out_features,)"));
  }
  if (x->ndim < 0) return TensorStructInfoNode::make_ndim(-1, dtype);
  if (!x->shape || !w->shape) return TensorStructInfoNode::make_ndim(x->ndim, dtype);
  const std::vector<PrimExpr>& a = *x->shape;
  const std::vector<PrimExpr>& wt = *w->shape;
  STRATA_RETURN_IF_ERROR(CheckSameDim(call, 0, a.size() - 1, a.back(), 1, 1, wt[1], "the input features"));
  if (bias != nullptr && bias->shape) {
    STRATA_RETURN_IF_ERROR(CheckSameDim(call, 2, 0, (*bias->shape)[0], 1, 0, wt[0], "the output features"));
  }
  std::vector<PrimExpr> out(a.begin(), a.end() - 1);
  out.push_back(wt[0]);
  return TensorStructInfoNode::make(std::move(out), dtype);
}

// packed_matmul(x, panels, bias?, n): x @ B (+ bias) with B, K x n, packed
// into panels of gemm_panels.h by PackWeights.
StatusOr<StructInfo> InferPackedMatmul(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0));
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* p, TensorArg(call, 1));
  STRATA_ASSIGN_OR_RETURN(DataType dtype, SameDtype(call, 0, 1, x->dtype, p->dtype));
  STRATA_RETURN_IF_ERROR(CheckNumeric(call, 0, dtype));
  if (x->ndim == 0) {
    return ErrorStatus() << call.name() << ": " << ArgText(call, 0) << " must have at least one dimension";
  }
  STRATA_RETURN_IF_ERROR(CheckRank(call, 1, p, 3, "(column panels, in_features, panel width)"));
  const int64_t n = call.IntAttr("n");
  if (n < 0) return ErrorStatus() << call.name() << ": attribute 'n' must be >= 0, got " << n;
  const TensorStructInfoNode* bias = nullptr;
  if (call.num_args() > 2) {
    STRATA_ASSIGN_OR_RETURN(bias, TensorArg(call, 2));
    STRATA_ASSIGN_OR_RETURN(dtype, SameDtype(call, 0, 2, dtype, bias->dtype));
    STRATA_RETURN_IF_ERROR(CheckRank(call, 2, bias, 1, "(n,)"));
  }
  // The panels' count and width follow from n and the kernel; a constant that
  // differs is an error here, a symbolic one the kernel checks.
  auto expect_dim = [&](size_t arg, size_t d, int64_t want, const std::string& what) -> Status {
    const auto* t = call.arg_sinfo(arg).as<TensorStructInfoNode>();
    if (t == nullptr || !t->shape) return Status::Ok();
    const std::optional<int64_t> got = arith::AsConstant((*t->shape)[d]);
    if (!got || *got == want) return Status::Ok();
    return ErrorStatus() << call.name() << ": " << ArgText(call, arg) << " must have " << what << " in dimension " << d
                         << ", got " << *got;
  };
  const int64_t panel_count = (n + kGemmPanelWidth - 1) / kGemmPanelWidth;
  STRATA_RETURN_IF_ERROR(expect_dim(1, 0, panel_count,
                                    std::to_string(panel_count) + " column panels (ceil(n / " +
                                        std::to_string(kGemmPanelWidth) + ") for n = " + std::to_string(n) + ")"));
  STRATA_RETURN_IF_ERROR(
      expect_dim(1, 2, kGemmPanelWidth, "panels " + std::to_string(kGemmPanelWidth) + " columns wide"));
  if (bias != nullptr) STRATA_RETURN_IF_ERROR(expect_dim(2, 0, n, "n = " + std::to_string(n) + " elements"));
  if (x->ndim < 0) return TensorStructInfoNode::make_ndim(-1, dtype);
  if (!x->shape || !p->shape) return TensorStructInfoNode::make_ndim(x->ndim, dtype);
  const std::vector<PrimExpr>& a = *x->shape;
  STRATA_RETURN_IF_ERROR(CheckSameDim(call, 0, a.size() - 1, a.back(), 1, 1, (*p->shape)[1], "the input features"));
  std::vector<PrimExpr> out(a.begin(), a.end() - 1);
  out.push_back(PrimExpr(n));
  return TensorStructInfoNode::make(std::move(out), dtype);
}

// take_panel_columns(panels, indices, n): the columns `indices` of B (K x n,
// packed as for packed_matmul), each as a row of K values: take(E, indices,
// axis=0) for the table E = B^T. PackWeights emits it for a tied embedding, a
// table whose transpose is also a packed GEMM weight (GPT-2's token embedding
// and LM head), so the executable holds the table once, as panels.
StatusOr<StructInfo> InferTakePanelColumns(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* p, TensorArg(call, 0));
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* indices, TensorArg(call, 1));
  if (!indices->dtype.is_void() && !indices->dtype.is_integral()) {
    return ErrorStatus() << call.name() << ": " << ArgText(call, 1) << " must be an integer tensor";
  }
  STRATA_RETURN_IF_ERROR(CheckRank(call, 0, p, 3, "(column panels, rows, panel width)"));
  const int64_t n = call.IntAttr("n");
  if (n < 0) return ErrorStatus() << call.name() << ": attribute 'n' must be >= 0, got " << n;
  if (p->shape) {
    const std::optional<int64_t> count = arith::AsConstant((*p->shape)[0]);
    const std::optional<int64_t> width = arith::AsConstant((*p->shape)[2]);
    if ((width && *width != kGemmPanelWidth) || (count && *count != (n + kGemmPanelWidth - 1) / kGemmPanelWidth)) {
      return ErrorStatus() << call.name() << ": " << ArgText(call, 0) << " must be ceil(n / " << kGemmPanelWidth
                           << ") panels " << kGemmPanelWidth << " columns wide for n = " << n << ", got "
                           << ir::PrintShape(*p->shape);
    }
  }
  if (indices->ndim < 0) return TensorStructInfoNode::make_ndim(-1, p->dtype);
  if (!indices->shape || !p->shape) return TensorStructInfoNode::make_ndim(indices->ndim + 1, p->dtype);
  std::vector<PrimExpr> dims = *indices->shape;
  dims.push_back((*p->shape)[1]);
  return TensorStructInfoNode::make(std::move(dims), p->dtype);
}

StatusOr<StructInfo> InferBiasAdd(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0));
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* bias, TensorArg(call, 1));
  STRATA_ASSIGN_OR_RETURN(DataType dtype, SameDtype(call, 0, 1, x->dtype, bias->dtype));
  STRATA_RETURN_IF_ERROR(CheckNumeric(call, 0, dtype));
  STRATA_RETURN_IF_ERROR(CheckRank(call, 1, bias, 1, "(one value per index of axis)"));
  if (x->ndim < 0) return TensorStructInfoNode::make_ndim(-1, dtype);
  STRATA_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(call, "axis", call.IntAttr("axis"), x->ndim));
  if (x->shape && bias->shape) {
    STRATA_RETURN_IF_ERROR(CheckSameDim(call, 0, static_cast<size_t>(axis), (*x->shape)[axis], 1, 0, (*bias->shape)[0],
                                        "the length of axis " + std::to_string(axis)));
  }
  return x->shape ? TensorStructInfoNode::make(*x->shape, dtype) : TensorStructInfoNode::make_ndim(x->ndim, dtype);
}

// ---- kernels -----------------------------------------------------------------

PrimExpr Const(DataType dtype, double v) {
  return dtype.is_float() ? tir::FloatImm(dtype, v) : tir::IntImm(dtype, static_cast<int64_t>(v));
}
PrimExpr Eq(PrimExpr a, PrimExpr b) { return tir::BinaryOpNode::make(PrimExprKind::kEQ, a, b); }
PrimExpr Simplify(PrimExpr e) { return arith::Simplify(e); }
PrimExpr CeilDiv(PrimExpr a, int64_t b) { return Simplify(tir::FloorDiv(a + (b - 1), b)); }
Stmt Loop(const tir::Var& v, PrimExpr extent, ForKind kind, Stmt body) {
  return ForNode::make(v, 0, Simplify(extent), kind, std::move(body));
}
Stmt Let(const tir::Var& v, PrimExpr value, Stmt body) { return tir::LetStmtNode::make(v, Simplify(value), body); }

// The indices of a flat (row-major) index over `dims`.
std::vector<PrimExpr> Unflatten(PrimExpr flat, const std::vector<PrimExpr>& dims) {
  std::vector<PrimExpr> index(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    index[d] = d == 0 ? flat : tir::FloorMod(flat, dims[d]);
    flat = tir::FloorDiv(flat, dims[d]);
  }
  return index;
}

// Tile sizes of the GEMM schedule. A register tile of kRowTile x kColTile
// accumulators (24 vector registers of 16 f32 with AVX-512) is updated from one
// broadcast element of the left operand and kColTile / 16 vectors of the packed
// right panel per reduction step. As in BLIS, the operand a register tile
// reuses most stays in L1: the tile's rows of a for one slice of the reduction
// (kRowTile x depth, copied once per slice) are used against every column
// tile of the block, whose panels stream from L2. A block of up to
// kBlockRows x kBlockCols outputs is one parallel task; its partial sums live
// in a local buffer across the slices.
constexpr int64_t kRowTile = 12;
// The rows a block has past its whole register tiles go through one tile of
// this height or twice it, or one more kRowTile tile.
constexpr int64_t kRemainderRows = 4;
constexpr int64_t kColTile = kGemmPanelWidth;
// The deepest slice: 256 when the kernel packs b per slice (the block's panels,
// 128 KiB, stay on the stack), 768 when b's panels are packed already (a
// constant at compile time, or once per call): fewer round trips through the
// partial sums, and the 768-deep layers of BERT and GPT-2 in one slice (1-3%
// over 512 on them; the a tile, 36 KiB, is read one column at a time and the
// next tile's rows are prefetched). Slices are of equal depth.
constexpr int64_t kDepth = 256;
constexpr int64_t kPackedDepth = 768;
constexpr int64_t kBlockRows = 120;
constexpr int64_t kBlockCols = 128;

// The dot-product schedule (DotKernel) takes over when both operands run along
// the reduction (dense's weight, matmul by a vector) and the rows are fewer than
// this: a register tile of kRowTile rows would be mostly padding, and the panel
// packing (a transposition for dense) would cost as much as the products.
constexpr int64_t kDotMaxRows = 8;
// Outputs per parallel task of the dot-product schedule.
constexpr int64_t kDotChunk = 16;
// With fewer than kRowMaxRows rows and b contiguous along the columns (matmul),
// RowKernel accumulates kRowChunk columns of one output row in registers: it
// reads b once per row, so it beats the padded register tile only for a row or two.
constexpr int64_t kRowMaxRows = 3;
constexpr int64_t kRowChunk = 64;

// One GEMM per output batch index: Out[row, col] = sum_k a(row, k) * b(k, col)
// (+ bias(col)), in the kernel's own variables.
struct Gemm {
  DataType dtype;
  std::vector<PrimExpr> batch;  // output batch extents, run in parallel with the blocks
  PrimExpr rows, cols, depth;
  std::function<PrimExpr(const std::vector<PrimExpr>& batch, PrimExpr row, PrimExpr k)> a;
  std::function<PrimExpr(const std::vector<PrimExpr>& batch, PrimExpr k, PrimExpr col)> b;
  tir::Buffer out;
  std::function<std::vector<PrimExpr>(const std::vector<PrimExpr>& batch, PrimExpr row, PrimExpr col)> out_index;
  std::function<PrimExpr(PrimExpr col)> bias;  // null: none
  // b is contiguous along k (dense's weight): its panel is packed with k
  // innermost, reading memory in order.
  bool b_k_contiguous = false;
  // When defined, b is this constant packed at compile time (gemm_panels.h):
  // the kernels read its panels in place and `b` is not used.
  tir::Buffer panels;
};

// Loads and stores that keep the indices exactly as the matmul schedules build
// them (build::Load and build::Store simplify theirs).
Stmt Store(const tir::Buffer& buffer, std::vector<PrimExpr> index, PrimExpr value) {
  return tir::BufferStoreNode::make(buffer, std::move(index), std::move(value));
}
PrimExpr Load(const tir::Buffer& buffer, std::vector<PrimExpr> index) {
  return tir::BufferLoadNode::make(buffer, std::move(index));
}

// Every output is one dot product, its reduction loop vectorized into a local
// accumulator; the outputs (batch, row, col) run in parallel chunks.
Stmt DotKernel(const Gemm& g) {
  const PrimExpr M = g.rows, N = g.cols, K = g.depth;
  const tir::Buffer sum = KernelBuilder::Local("Sum", g.dtype, {1});
  const PrimExpr total = Simplify(Product(g.batch) * M * N);
  tir::Var task("task"), e("e"), flat("flat"), k("kk"), row("row"), col("col"), batch_task("batch");
  const std::vector<PrimExpr> batch = Unflatten(batch_task, g.batch);
  PrimExpr result = Load(sum, {0});
  if (g.bias) result = result + g.bias(col);
  Stmt body = tir::SeqStmtNode::make({
      Store(sum, {0}, Const(g.dtype, 0)),
      Loop(k, K, ForKind::kVectorized, Store(sum, {0}, Load(sum, {0}) + g.a(batch, row, k) * g.b(batch, k, col))),
      Store(g.out, g.out_index(batch, row, col), result),
  });
  body = Let(row, tir::FloorMod(tir::FloorDiv(flat, N), M), Let(col, tir::FloorMod(flat, N), body));
  if (!g.batch.empty()) body = Let(batch_task, tir::FloorDiv(flat, M * N), body);
  body = Loop(e, tir::Min(PrimExpr(kDotChunk), total - task * kDotChunk), ForKind::kSerial,
              Let(flat, task * kDotChunk + e, body));
  return Loop(task, CeilDiv(total, kDotChunk), ForKind::kParallel, tir::AllocateNode::make(sum, body));
}

// Each output row in chunks of kRowChunk columns, accumulated in a local buffer
// over the whole reduction: row += a(row, k) * b(k, chunk); the last chunk of a
// row, when short, runs the same loops with its own extent.
Stmt RowKernel(const Gemm& g) {
  const PrimExpr M = g.rows, N = g.cols, K = g.depth;
  const tir::Buffer acc = KernelBuilder::Local("Acc", g.dtype, {kRowChunk});
  tir::Var chunks("col_chunks"), task("task"), row("row"), j0("j0"), batch_task("batch");
  const std::vector<PrimExpr> batch = Unflatten(batch_task, g.batch);
  auto chunk = [&](PrimExpr extent) {
    tir::Var zc("c"), k("kk"), a("a", g.dtype), c("c"), sc("c");
    PrimExpr value = Load(acc, {sc});
    if (g.bias) value = value + g.bias(j0 + sc);
    return tir::SeqStmtNode::make({
        Loop(zc, extent, ForKind::kVectorized, Store(acc, {zc}, Const(g.dtype, 0))),
        Loop(k, K, ForKind::kSerial,
             Let(a, g.a(batch, row, k),
                 Loop(c, extent, ForKind::kVectorized, Store(acc, {c}, Load(acc, {c}) + a * g.b(batch, k, j0 + c))))),
        Loop(sc, extent, ForKind::kVectorized, Store(g.out, g.out_index(batch, row, j0 + sc), value)),
    });
  };
  Stmt body = tir::IfThenElseNode::make(tir::BinaryOpNode::make(PrimExprKind::kLE, j0 + kRowChunk, N), chunk(kRowChunk),
                                        chunk(N - j0));
  body =
      Let(row, tir::FloorMod(tir::FloorDiv(task, chunks), M), Let(j0, tir::FloorMod(task, chunks) * kRowChunk, body));
  if (!g.batch.empty()) body = Let(batch_task, tir::FloorDiv(task, M * chunks), body);
  body = Loop(task, Product(g.batch) * M * chunks, ForKind::kParallel, tir::AllocateNode::make(acc, body));
  return Let(chunks, CeilDiv(N, kRowChunk), body);
}

// With a packed weight and few rows: each (rows, panel) task accumulates the
// panel's kColTile columns of `tile_rows` rows (clamped past M, not stored)
// in registers over the whole reduction, reading the panel once,
// contiguously. The register tile would be mostly padding. One row per task
// served 2 and 3 rows too, reading every panel once per row with two
// accumulator chains: 3 x 800 x 500 took 2.8x as long as 1 row, more than 7
// rows in the tiled kernel.
constexpr int64_t kPanelRowMaxRows = 4;
Stmt PanelRowKernel(const Gemm& g, int64_t tile_rows) {
  const PrimExpr M = g.rows, N = g.cols, K = g.depth;
  const tir::Buffer acc = KernelBuilder::Local("Acc", g.dtype, {tile_rows, kColTile});
  tir::Var panels("panels"), task("task"), row0("row0"), pt("panel"), zr("r"), zc("c"), k("kk"), r("r"),
      a("a", g.dtype), c("c"), sr("r"), sc("c");
  PrimExpr value = Load(acc, {sr, sc});
  if (g.bias) value = value + g.bias(pt * kColTile + sc);
  Stmt body = tir::SeqStmtNode::make({
      Loop(zr, tile_rows, ForKind::kUnrolled,
           Loop(zc, kColTile, ForKind::kVectorized, Store(acc, {zr, zc}, Const(g.dtype, 0)))),
      Loop(k, K, ForKind::kSerial,
           Loop(r, tile_rows, ForKind::kUnrolled,
                Let(a, g.a({}, tir::Min(row0 + r, M - 1), k),
                    Loop(c, kColTile, ForKind::kVectorized,
                         Store(acc, {r, c}, Load(acc, {r, c}) + a * Load(g.panels, {pt, k, c})))))),
      Loop(sr, tir::Min(PrimExpr(tile_rows), M - row0), ForKind::kSerial,
           Loop(sc, tir::Min(PrimExpr(kColTile), N - pt * kColTile), ForKind::kVectorized,
                Store(g.out, g.out_index({}, row0 + sr, pt * kColTile + sc), value))),
  });
  body = Let(row0, tir::FloorDiv(task, panels) * tile_rows, Let(pt, tir::FloorMod(task, panels), body));
  body = Loop(task, CeilDiv(M, tile_rows) * panels, ForKind::kParallel, tir::AllocateNode::make(acc, body));
  return Let(panels, CeilDiv(N, kColTile), body);
}

// Packing b into panels (per block and slice in GemmKernel, or all of it once
// per call in PrepackedGemmKernel); `at` gives the destination index of a
// panel element.
using PanelIndex = std::function<std::vector<PrimExpr>(PrimExpr k, PrimExpr c)>;

// Reduction step k of b's columns col0 .. col0 + kColTile - 1, read along b's
// row (matmul): one contiguous run. Past N (the last panel) the columns up to
// N are copied as one run and the rest are zero (their sums are dropped).
// Clamping the column index instead (min(col0 + c, N - 1)) made LLVM vectorize
// down the rows with a gather and a scatter per 16 elements; a lane condition
// with a store in each branch is not vectorized at all.
Stmt PackPanelStep(const Gemm& g, const std::vector<PrimExpr>& batch, PrimExpr k, PrimExpr b_k, PrimExpr col0,
                   const tir::Buffer& dst, const PanelIndex& at) {
  tir::Var c("pj"), zc("pj"), qc("pj");
  Stmt whole = Loop(c, kColTile, ForKind::kVectorized, Store(dst, at(k, c), g.b(batch, b_k, col0 + c)));
  Stmt edge =
      tir::SeqStmtNode::make({Loop(zc, kColTile, ForKind::kVectorized, Store(dst, at(k, zc), Const(g.dtype, 0))),
                              Loop(qc, tir::Min(PrimExpr(kColTile), g.cols - col0), ForKind::kVectorized,
                                   Store(dst, at(k, qc), g.b(batch, b_k, col0 + qc)))});
  return tir::IfThenElseNode::make(tir::BinaryOpNode::make(PrimExprKind::kLE, col0 + kColTile, g.cols), whole, edge);
}

// Reduction steps k0 .. k0 + depth - 1 of one panel (columns from col0), read
// down each column of b (dense's weight rows), in memory order; columns past N
// repeat the last one.
Stmt PackPanelOfColumns(const Gemm& g, const std::vector<PrimExpr>& batch, PrimExpr k0, PrimExpr depth, PrimExpr col0,
                        const tir::Buffer& dst, const PanelIndex& at) {
  tir::Var c("pj"), k("pk");
  return Loop(c, kColTile, ForKind::kSerial,
              Loop(k, depth, ForKind::kSerial,
                   Store(dst, at(k, c), g.b(batch, Simplify(k0 + k), tir::Min(col0 + c, g.cols - 1)))));
}

// The tiled schedule; see the top of the file.
Stmt GemmKernel(const Gemm& g) {
  const DataType t = g.dtype;
  const PrimExpr M = g.rows, N = g.cols, K = g.depth;
  const int64_t max_depth = g.panels != nullptr ? kPackedDepth : kDepth;
  const tir::Buffer panel = KernelBuilder::Local("Bpanel", t, {kBlockCols / kColTile, kDepth, kColTile});
  const tir::Buffer acc = KernelBuilder::Local("Acc", t, {kRowTile, kColTile});
  const tir::Buffer a_tile = KernelBuilder::Local("Atile", t, {kRowTile, max_depth});
  const tir::Buffer partial = KernelBuilder::Local("Partial", t, {kBlockRows, kBlockCols});
  tir::Var row_blocks("row_blocks"), block_rows("block_rows"), col_blocks("col_blocks"), block_cols("block_cols");
  tir::Var task("task"), i0("i0"), j0("j0"), kb("kb"), k0("k0"), kc("kc"), jt("jt"), jj("jj"), it("it");
  tir::Var col_tiles("col_tiles");
  tir::Var batch_task("batch");  // the flat output batch index of a task
  const std::vector<PrimExpr> batch = Unflatten(batch_task, g.batch);

  // Pack the block's columns of b for the reduction steps k0 .. k0 + kc into
  // one panel per column tile jt (past the last column: dense's panel repeats
  // it, matmul's is zero). A constant's panels are read in place.
  tir::Var pk("pk");
  const PanelIndex in_panel = [&](PrimExpr kk, PrimExpr cc) { return std::vector<PrimExpr>{jt, kk, cc}; };
  Stmt pack_block;
  if (g.panels != nullptr) {
    pack_block = tir::SeqStmtNode::make({});
  } else if (g.b_k_contiguous) {
    pack_block = Loop(jt, col_tiles, ForKind::kSerial,
                      Let(jj, j0 + jt * kColTile, PackPanelOfColumns(g, batch, k0, kc, jj, panel, in_panel)));
  } else {
    // Along each row of b, the block's columns in memory order: column tile
    // by column tile, the reads were 128-byte runs 4 KiB apart (for
    // N = 1024) that missed the caches, 10% of a 1024^3 GEMM.
    pack_block = Loop(pk, kc, ForKind::kSerial,
                      Loop(jt, col_tiles, ForKind::kSerial,
                           Let(jj, j0 + jt * kColTile, PackPanelStep(g, batch, pk, k0 + pk, jj, panel, in_panel))));
  }

  // Column tile jj's panel: the packed copy, or the constant's own panel jj / kColTile.
  auto panel_at = [&](PrimExpr kk, PrimExpr cc) {
    if (g.panels == nullptr) return Load(panel, {jt, kk, cc});
    if (g.panels->shape.size() == 4) {  // packed per call, one set of panels per batch index
      return Load(g.panels,
                  {g.batch.empty() ? PrimExpr(0) : PrimExpr(batch_task), tir::FloorDiv(jj, kColTile), k0 + kk, cc});
    }
    return Load(g.panels, {tir::FloorDiv(jj, kColTile), k0 + kk, cc});
  };
  // The `rows` rows from row `first` against every column tile of the block:
  // the rows of a for this slice are copied once, then each register tile is
  // zeroed, accumulated over the slice and stored (the first slice stores,
  // later ones add; rows past M were clamped and are dropped).
  auto make_tile = [&](int64_t rows, const PrimExpr& first) {
    tir::Var ii("ii"), zr("r"), zc("c"), k("kk"), r("r"), c("c"), a("a", t), sr("r"), sc("c"), ar("r"), ac("c");
    Stmt zero =
        Loop(zr, rows, ForKind::kUnrolled, Loop(zc, kColTile, ForKind::kVectorized, Store(acc, {zr, zc}, Const(t, 0))));
    // The tile's rows of a for this slice, copied (contiguous runs, clamped
    // rows) to a local buffer: the update then reads each row at a constant
    // offset from one base. Read from a in place, the 12 row addresses (clamped
    // row times K, plus k) became vector integer arithmetic and extracts in the
    // hot loop, competing with the FMAs for the vector pipes. The copy serves
    // every column tile of the block: made per column tile, its row copies
    // (LLVM turns them into memcpy calls) took 12% of a 128 x 768 x 768 GEMM.
    tir::Var cr("r"), ck("kk");
    Stmt copy_a = Loop(
        cr, rows, ForKind::kSerial,
        Loop(ck, kc, ForKind::kVectorized, Store(a_tile, {cr, ck}, g.a(batch, tir::Min(ii + cr, M - 1), k0 + ck))));
    // Each step also prefetches (into L2) one element of the next tile's
    // rows, row k mod `rows` at column k: 12 rows x 16 floats per cache line,
    // so the first column tile's steps cover every line the next copy reads.
    // Without it the copy waited on L3 for rows that miss L2 (a 1024 x 1024 a
    // is re-read for every column block): 3-4% of a 1024^3 GEMM.
    // The remainder tiles (a block's last rows) skip it: their 8 FMAs a step
    // have less room for it, and the block's next rows are another task's.
    Stmt prefetch_next =
        rows == kRowTile
            ? tir::PrefetchNode::make(g.a(batch, tir::Min(ii + rows + tir::FloorMod(k, rows), M - 1), k0 + k))
            : tir::SeqStmtNode::make({});
    Stmt update =
        Loop(k, kc, ForKind::kSerial,
             tir::SeqStmtNode::make(
                 {prefetch_next, Loop(r, rows, ForKind::kUnrolled,
                                      Let(a, Load(a_tile, {r, k}),
                                          Loop(c, kColTile, ForKind::kVectorized,
                                               Store(acc, {r, c}, Load(acc, {r, c}) + a * panel_at(k, c)))))}));
    // The tile's partial sums go to the block's Partial buffer (the first slice
    // stores, later ones add); Out is written once, after the last slice, so
    // that every output element is stored exactly once (fusion puts epilogues
    // such as bias + relu at that final store).
    const PrimExpr tile_cols = tir::Min(PrimExpr(kColTile), N - jj);
    const std::vector<PrimExpr> first_at = {ii - i0 + sr, jj - j0 + sc};
    Stmt store_first = Loop(sc, tile_cols, ForKind::kVectorized, Store(partial, first_at, Load(acc, {sr, sc})));
    const std::vector<PrimExpr> add_at = {ii - i0 + ar, jj - j0 + ac};
    Stmt store_add =
        Loop(ac, tile_cols, ForKind::kVectorized, Store(partial, add_at, Load(partial, add_at) + Load(acc, {ar, ac})));
    Stmt store =
        tir::IfThenElseNode::make(Eq(kb, 0), Loop(sr, tir::Min(PrimExpr(rows), M - ii), ForKind::kSerial, store_first),
                                  Loop(ar, tir::Min(PrimExpr(rows), M - ii), ForKind::kSerial, store_add));
    Stmt per_col_tile = Loop(jt, col_tiles, ForKind::kSerial,
                             Let(jj, j0 + jt * kColTile, tir::SeqStmtNode::make({zero, update, store})));
    return Let(ii, first, tir::SeqStmtNode::make({copy_a, per_col_tile}));
  };
  // Whole tiles of kRowTile rows, then the block's last rows in one tile of
  // the smallest height that holds them: 9-11 rows one more kRowTile tile
  // (rows past M are clamped reads and are not stored), 5-8 rows a tile of
  // 2 * kRemainderRows, 1-4 rows one of kRemainderRows. 64 rows are 5 x 12 +
  // 4, not 6 x 12 with 8 rows of padding (11% of the FMAs of a 64-row GEMM),
  // and 33 rows are 3 x 12 with three rows of padding rather than 2 x 12 and
  // three 4-row tiles, whose 8 accumulators keep the FMA pipes half as busy
  // as a 24-accumulator tile's (33 x 800 x 500: 0.67 of oneDNN with 4-row tails).
  tir::Var rest("rest");
  const PrimExpr block_m = tir::Min(block_rows, M - i0);
  const PrimExpr whole_tiles = tir::FloorDiv(block_m + (kRowTile - 2 * kRemainderRows - 1), kRowTile);
  const PrimExpr tail_first = i0 + whole_tiles * kRowTile;
  auto greater = [](const PrimExpr& a, int64_t b) {
    return tir::BinaryOpNode::make(PrimExprKind::kGT, a, PrimExpr(b));
  };
  Stmt tail = tir::IfThenElseNode::make(
      greater(rest, kRemainderRows), make_tile(2 * kRemainderRows, tail_first),
      tir::IfThenElseNode::make(greater(rest, 0), make_tile(kRemainderRows, tail_first), tir::SeqStmtNode::make({})));
  Stmt row_tiles =
      tir::SeqStmtNode::make({Loop(it, whole_tiles, ForKind::kSerial, make_tile(kRowTile, i0 + it * kRowTile)),
                              Let(rest, block_m - whole_tiles * kRowTile, tail)});

  // Slices of equal depth (a multiple of 16, so that each starts on a cache
  // line): K = 768 is 2 x 384 rather than 512 + 256.
  tir::Var slices("slices"), depth("depth");
  Stmt slice = Let(k0, kb * depth, Let(kc, tir::Min(depth, K - k0), tir::SeqStmtNode::make({pack_block, row_tiles})));
  // At least one slice, so that an empty reduction (K = 0) stores zeros (+ bias).
  Stmt block = Let(slices, tir::Max(CeilDiv(K, max_depth), 1),
                   Let(depth, tir::FloorDiv(tir::FloorDiv(K + slices - 1, slices) + 15, 16) * 16,
                       Loop(kb, slices, ForKind::kSerial, slice)));
  tir::Var fr("r"), fc("c");
  PrimExpr result = Load(partial, {fr, fc});
  if (g.bias) result = result + g.bias(j0 + fc);
  Stmt final_store = Loop(fr, tir::Min(block_rows, M - i0), ForKind::kSerial,
                          Loop(fc, tir::Min(block_cols, N - j0), ForKind::kVectorized,
                               Store(g.out, g.out_index(batch, i0 + fr, j0 + fc), result)));
  block = Let(col_tiles, CeilDiv(tir::Min(block_cols, N - j0), kColTile), block);
  block = tir::AllocateNode::make(acc, tir::AllocateNode::make(a_tile, tir::SeqStmtNode::make({block, final_store})));
  if (g.panels == nullptr) block = tir::AllocateNode::make(panel, block);
  block = tir::AllocateNode::make(partial, block);
  // Consecutive tasks share a column block: the threads' contiguous ranges of
  // tasks then hold whole column blocks (128 x 768 x 768 has row blocks of 72
  // and 56 rows; ordered by row block, one thread got all the short ones and
  // 2 threads ran at 0.89 of their speed), and a block's columns of b stay
  // in cache from one row block to the next.
  block = Let(i0, tir::FloorMod(task, row_blocks) * block_rows,
              Let(j0, tir::FloorMod(tir::FloorDiv(task, row_blocks), col_blocks) * block_cols, block));
  if (!g.batch.empty()) block = Let(batch_task, tir::FloorDiv(task, row_blocks * col_blocks), block);
  Stmt nest = Loop(task, Product(g.batch) * row_blocks * col_blocks, ForKind::kParallel, block);
  // Blocks of near-equal sizes rounded up to whole tiles, as few as the block
  // limits allow (at least one, so that the divisions are defined when M or N is 0).
  auto tiles_of = [](PrimExpr extent, PrimExpr blocks, int64_t tile) {
    return tir::FloorDiv(tir::FloorDiv(extent + blocks - 1, blocks) + (tile - 1), tile) * tile;
  };
  nest = Let(col_blocks, tir::Max(CeilDiv(N, kBlockCols), 1), Let(block_cols, tiles_of(N, col_blocks, kColTile), nest));
  return Let(row_blocks, tir::Max(CeilDiv(M, kBlockRows), 1), Let(block_rows, tiles_of(M, row_blocks, kRowTile), nest));
}

// Products with more rows than this pack b once per call (PrepackedGemmKernel)
// rather than once per row block: from three row blocks on, the blocks' own
// packing reads and writes b three or more times.
constexpr int64_t kPrepackMinRows = 2 * kBlockRows + 1;

// The tiled schedule reading b from panels packed once per call, in the layout
// PackWeights gives a constant weight, into a workspace: b's columns in panels
// of kColTile (the last one zero-filled past N for matmul, its last column
// repeated for dense, as the per-block packing does), one set per batch index.
// Packing per row block instead cost a 1024^3 matmul 8-10% (0.89-0.92 of
// oneDNN, whose matmul also copies b once per thread).
Stmt PrepackedGemmKernel(const Gemm& g) {
  const DataType t = g.dtype;
  const PrimExpr K = g.depth;
  tir::Var panel_count("panel_count"), task("task"), batch_task("batch"), p("p"), k("kk");
  const std::vector<PrimExpr> batch = Unflatten(batch_task, g.batch);
  const PrimExpr batches = Product(g.batch);
  const tir::Buffer packed = KernelBuilder::Local("Bpacked", t, {batches, panel_count, K, kColTile});
  const PrimExpr batch_index = g.batch.empty() ? PrimExpr(0) : PrimExpr(batch_task);
  const PanelIndex in_packed = [&](PrimExpr kk, PrimExpr cc) { return std::vector<PrimExpr>{batch_index, p, kk, cc}; };
  Stmt pack = g.b_k_contiguous
                  ? PackPanelOfColumns(g, batch, 0, K, p * kColTile, packed, in_packed)
                  : Loop(k, K, ForKind::kSerial, PackPanelStep(g, batch, k, k, p * kColTile, packed, in_packed));
  pack = Let(p, tir::FloorMod(task, panel_count), pack);
  if (!g.batch.empty()) pack = Let(batch_task, tir::FloorDiv(task, panel_count), pack);
  pack = Loop(task, batches * panel_count, ForKind::kParallel, pack);
  Gemm prepacked = g;
  prepacked.panels = packed;
  return Let(panel_count, CeilDiv(g.cols, kColTile),
             tir::AllocateNode::make(packed, tir::SeqStmtNode::make({pack, GemmKernel(prepacked)})));
}

// The tiled schedule, with b packed once per call when the rows are many.
Stmt TiledGemmKernel(const Gemm& g) {
  return tir::IfThenElseNode::make(tir::BinaryOpNode::make(PrimExprKind::kGE, g.rows, kPrepackMinRows),
                                   PrepackedGemmKernel(g), GemmKernel(g));
}

// A run-time check that two dimensions the inference could not prove equal are.
void CheckSameDimAtRunTime(const std::string& a, size_t da, const PrimExpr& x, const std::string& b, size_t db,
                           const PrimExpr& y, std::vector<Stmt>* checks) {
  if (ProveDimEqual(x, y)) return;
  checks->push_back(tir::AssertStmtNode::make(
      Eq(x, y), "argument '" + a + "' dimension " + std::to_string(da) + " (" + DimText(x) + ") and argument '" + b +
                    "' dimension " + std::to_string(db) + " (" + DimText(y) + ") must be equal"));
}

std::vector<PrimExpr> Concat(std::vector<PrimExpr> a, const std::vector<PrimExpr>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

StatusOr<Stmt> LegalizeMatmul(const OpCall& call, KernelBuilder& b) {
  STRATA_ASSIGN_OR_RETURN(tir::Buffer x, b.Input(call.arg(0), "X", "x"));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer y, b.Input(call.arg(1), "Y", "y"));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer out, b.Output(call.call().struct_info, "Out"));
  const std::vector<PrimExpr>& xs = x->shape;
  const std::vector<PrimExpr>& ys = y->shape;
  const bool x_vec = xs.size() == 1, y_vec = ys.size() == 1;
  const size_t ky = y_vec ? 0 : ys.size() - 2;
  std::vector<Stmt> stmts;
  CheckSameDimAtRunTime("x", xs.size() - 1, xs.back(), "y", ky, ys[ky], &stmts);
  const std::vector<PrimExpr> x_batch(xs.begin(), xs.end() - std::min<size_t>(xs.size(), 2));
  const std::vector<PrimExpr> y_batch(ys.begin(), ys.end() - std::min<size_t>(ys.size(), 2));
  const std::vector<PrimExpr> out_batch(out->shape.begin(), out->shape.end() - (x_vec ? 0 : 1) - (y_vec ? 0 : 1));
  BroadcastChecks("argument 'x'", x_batch, out_batch, &stmts);
  BroadcastChecks("argument 'y'", y_batch, out_batch, &stmts);
  Gemm g;
  g.dtype = out->dtype;
  g.batch = out_batch;
  g.rows = x_vec ? PrimExpr(1) : xs[xs.size() - 2];
  g.cols = y_vec ? PrimExpr(1) : ys.back();
  g.depth = xs.back();
  const auto row_index = [x_vec](PrimExpr row) { return x_vec ? std::vector<PrimExpr>{} : std::vector<PrimExpr>{row}; };
  const auto col_index = [y_vec](PrimExpr col) { return y_vec ? std::vector<PrimExpr>{} : std::vector<PrimExpr>{col}; };
  g.a = [=](const std::vector<PrimExpr>& batch, PrimExpr row, PrimExpr k) {
    return Load(x, Concat(Concat(BroadcastIndex(x_batch, out_batch, batch), row_index(row)), {k}));
  };
  g.b = [=](const std::vector<PrimExpr>& batch, PrimExpr k, PrimExpr col) {
    return Load(y, Concat(Concat(BroadcastIndex(y_batch, out_batch, batch), {k}), col_index(col)));
  };
  g.out = out;
  g.out_index = [=](const std::vector<PrimExpr>& batch, PrimExpr row, PrimExpr col) {
    return Concat(Concat(batch, row_index(row)), col_index(col));
  };
  // By a vector, both operands run along the reduction: a matrix-vector product.
  if (y_vec) {
    stmts.push_back(DotKernel(g));
  } else {
    stmts.push_back(tir::IfThenElseNode::make(tir::BinaryOpNode::make(PrimExprKind::kLT, g.rows, kRowMaxRows),
                                              RowKernel(g), TiledGemmKernel(g)));
  }
  return tir::SeqStmtNode::make(std::move(stmts));
}

// The GEMM of x (..., K) times a K x `cols` right operand into out (..., cols):
// x's leading dimensions are flattened into the rows. The caller sets b (or
// panels) and the bias.
Gemm RowsOfX(const tir::Buffer& x, const tir::Buffer& out, PrimExpr cols) {
  const std::vector<PrimExpr>& xs = x->shape;
  const std::vector<PrimExpr> lead(xs.begin(), xs.end() - 1);
  Gemm g;
  g.dtype = out->dtype;
  g.rows = Product(lead);
  g.cols = std::move(cols);
  g.depth = xs.back();
  g.a = [=](const std::vector<PrimExpr>&, PrimExpr row, PrimExpr k) {
    return Load(x, Concat(Unflatten(row, lead), {k}));
  };
  g.out = out;
  g.out_index = [=](const std::vector<PrimExpr>&, PrimExpr row, PrimExpr col) {
    return Concat(Unflatten(row, lead), {col});
  };
  return g;
}

// The third argument, the bias, as a kernel input; null when not given.
StatusOr<tir::Buffer> OptionalBias(const OpCall& call, KernelBuilder& b) {
  if (call.num_args() <= 2) return tir::Buffer();
  return b.Input(call.arg(2), "Bias", "bias");
}

StatusOr<Stmt> LegalizeDense(const OpCall& call, KernelBuilder& b) {
  STRATA_ASSIGN_OR_RETURN(tir::Buffer x, b.Input(call.arg(0), "X", "x"));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer w, b.Input(call.arg(1), "W", "weight"));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer bias, OptionalBias(call, b));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer out, b.Output(call.call().struct_info, "Out"));
  const std::vector<PrimExpr>& xs = x->shape;
  std::vector<Stmt> stmts;
  CheckSameDimAtRunTime("x", xs.size() - 1, xs.back(), "weight", 1, w->shape[1], &stmts);
  if (bias) CheckSameDimAtRunTime("bias", 0, bias->shape[0], "weight", 0, w->shape[0], &stmts);
  Gemm g = RowsOfX(x, out, w->shape[0]);
  g.b = [=](const std::vector<PrimExpr>&, PrimExpr k, PrimExpr col) { return Load(w, {col, k}); };
  g.b_k_contiguous = true;
  if (bias) g.bias = [=](PrimExpr col) { return Load(bias, {col}); };
  stmts.push_back(tir::IfThenElseNode::make(tir::BinaryOpNode::make(PrimExprKind::kLT, g.rows, kDotMaxRows),
                                            DotKernel(g), TiledGemmKernel(g)));
  return tir::SeqStmtNode::make(std::move(stmts));
}

StatusOr<Stmt> LegalizePackedMatmul(const OpCall& call, KernelBuilder& b) {
  STRATA_ASSIGN_OR_RETURN(tir::Buffer x, b.Input(call.arg(0), "X", "x"));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer panels, b.Input(call.arg(1), "Panels", "panels"));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer bias, OptionalBias(call, b));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer out, b.Output(call.call().struct_info, "Out"));
  const std::vector<PrimExpr>& xs = x->shape;
  std::vector<Stmt> stmts;
  CheckSameDimAtRunTime("x", xs.size() - 1, xs.back(), "panels", 1, panels->shape[1], &stmts);
  Gemm g = RowsOfX(x, out, PrimExpr(call.IntAttr("n")));
  g.panels = panels;
  if (bias) g.bias = [=](PrimExpr col) { return Load(bias, {col}); };
  // One row, a few rows together, or the tiled kernel.
  stmts.push_back(tir::IfThenElseNode::make(
      tir::BinaryOpNode::make(PrimExprKind::kEQ, g.rows, 1), PanelRowKernel(g, 1),
      tir::IfThenElseNode::make(tir::BinaryOpNode::make(PrimExprKind::kLT, g.rows, kPanelRowMaxRows),
                                PanelRowKernel(g, kPanelRowMaxRows - 1), GemmKernel(g))));
  return tir::SeqStmtNode::make(std::move(stmts));
}

StatusOr<Stmt> LegalizeTakePanelColumns(const OpCall& call, KernelBuilder& b) {
  STRATA_ASSIGN_OR_RETURN(tir::Buffer panels, b.Input(call.arg(0), "Panels", "panels"));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer indices, b.Input(call.arg(1), "I", "indices"));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer out, b.Output(call.call().struct_info, "Out"));
  const PrimExpr n(call.IntAttr("n"));
  Stmt check = CheckIndicesInRange(b, indices, n, "axis 0 of the table (extent " + DimText(n) + ")");
  const size_t rank = indices->shape.size();
  Stmt gather = b.Elementwise(out->shape, [&](const std::vector<PrimExpr>& index) {
    PrimExpr i = IndexAsI64(indices, std::vector<PrimExpr>(index.begin(), index.begin() + static_cast<long>(rank)));
    i = tir::SelectNode::make(tir::BinaryOpNode::make(PrimExprKind::kLT, i, 0), i + n, i);
    return Store(out, index,
                 Load(panels, {tir::FloorDiv(i, kGemmPanelWidth), index[rank], tir::FloorMod(i, kGemmPanelWidth)}));
  });
  return tir::SeqStmtNode::make({check, gather});
}

StatusOr<Stmt> LegalizeBiasAdd(const OpCall& call, KernelBuilder& b) {
  STRATA_ASSIGN_OR_RETURN(tir::Buffer x, b.Input(call.arg(0), "X", "x"));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer bias, b.Input(call.arg(1), "Bias", "bias"));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer out, b.Output(call.call().struct_info, "Out"));
  const int64_t ndim = static_cast<int64_t>(x->shape.size());
  STRATA_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(call, "axis", call.IntAttr("axis"), ndim));
  std::vector<Stmt> stmts;
  CheckSameDimAtRunTime("bias", 0, bias->shape[0], "x", static_cast<size_t>(axis), x->shape[axis], &stmts);
  stmts.push_back(b.Elementwise(out->shape, [&](const std::vector<PrimExpr>& index) {
    return Store(out, index, Load(x, index) + Load(bias, {index[axis]}));
  }));
  return tir::SeqStmtNode::make(std::move(stmts));
}

}  // namespace

std::vector<OpDef> LinearAlgebraOps() {
  return {
      OpDef{"matmul", {"x", "y"}, 0, {}, InferMatmul, LegalizeMatmul},
      OpDef{"dense", {"x", "weight", "bias"}, 1, {}, InferDense, LegalizeDense},
      OpDef{"packed_matmul",
            {"x", "panels", "bias"},
            1,
            {AttrDef{"n", AttrKind::kInt, std::nullopt}},
            InferPackedMatmul,
            LegalizePackedMatmul},
      OpDef{"take_panel_columns",
            {"panels", "indices"},
            0,
            {AttrDef{"n", AttrKind::kInt, std::nullopt}},
            InferTakePanelColumns,
            LegalizeTakePanelColumns},
      OpDef{"bias_add",
            {"x", "bias"},
            0,
            {AttrDef{"axis", AttrKind::kInt, ir::AttrValue(int64_t{1})}},
            InferBiasAdd,
            LegalizeBiasAdd},
  };
}

}  // namespace strata::op
