// What the plain (NCHW, nn.cc) and blocked (NCHWc, nchwc_layout.cc) pooling
// kernels both begin with: the attributes, the buffers, the window's geometry
// as plain integers, and the accumulator's initial value.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/op/kernel_builder.h"
#include "compiler/op/op_registry.h"
#include "compiler/op/window.h"
#include "support/status.h"

namespace strata::op {

enum class PoolKind { kMax, kAvg };

struct PoolKernelSetup {
  PoolAttrs attrs;
  bool include_pad = false;  // avg_pool's count_include_pad
  tir::Buffer x, y;
  DataType dt;
  PrimExpr height, width, out_w;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1;  // strides, dilation
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;  // padding: top, left, bottom, right
  PrimExpr init;                           // -inf for max, 0 for avg
};

// Reads the attributes and declares X and Y (x: rank 4 in either layout; the
// spatial dims are 2 and 3).
StatusOr<PoolKernelSetup> BeginPoolKernel(const OpCall& call, KernelBuilder& b, PoolKind kind);

// The window taps' index arithmetic: `v` clamped into [0, extent); whether
// 0 <= v < extent (without the parts that always hold); how many of
// `conditions` hold (an expression, simplified).
PrimExpr ClampToExtent(const PrimExpr& v, const PrimExpr& extent);
PrimExpr InsideExtent(const PrimExpr& v, const PrimExpr& extent);
PrimExpr CountTrue(const std::vector<PrimExpr>& conditions);

}  // namespace strata::op
