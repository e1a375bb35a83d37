// ConvertToNchwc: convolutional regions run in the blocked NCHW[x]c layout.
//
// A conv2d whose weight is an f32 constant becomes conv2d_nchwc (docs/ops/nchwc.md):
//
//   y = conv2d(x, W[O, C, KH, KW])   ->   xb = to_nchwc(x, block=ib)
//                                          yb = conv2d_nchwc(xb, Wp, out_block=ob)
//                                          y  = from_nchwc(yb)      (only if something needs y plain)
//
// with Wp the weight packed at compile time ([O/L, C/ib, KH, KW, ib, L]). The
// blocked value then flows on through the ops that work in the blocked layout
// unchanged or with an equivalent blocked form: elementwise ops, broadcasting
// ops (add, multiply, ... where a constant operand such as a bias is blocked
// here, at compile time), bias_add over the channels, max/avg pooling
// (max_pool2d_nchwc / avg_pool2d_nchwc), global average pooling and mean/sum/
// max over the spatial axes with keepdims, concat over the channels, and the
// next convolution. A from_nchwc is emitted only where a value is needed in
// the plain layout (an op without a blocked form, a function output), once per
// value, right before its first such use; a to_nchwc only where a plain value
// enters a blocked op. So there are no transform pairs to cancel: a value
// converted once is reused in both layouts.
//
// Blocks: a tensor of C channels gets the largest power of two up to
// `max_block` (the f32 lanes of the target's vectors) that divides C; a
// convolution whose output block would be below 4 stays plain. A convolution
// reading a plain input whose channels do not block (an RGB image) reads it in
// place as block 1. The weight's lanes L are the output block times the
// largest divisor of the output blocks keeping L <= max_lanes and L a whole
// number of vectors, else the one that fills its vectors best (NchwcLanes):
// the register tile's width.
//
// Depthwise convolutions (groups = C = O) are converted too; other grouped
// convolutions, convolutions with non-constant weights or symbolic channels,
// and non-f32 ones are left alone. Batch and image size stay symbolic.
// LegalizeOps runs it as its first step (before PackWeights), after target
// dispatch and BYOC, so a conv2d they took over is not touched.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "compiler/ir/module.h"
#include "compiler/transform/pass_context.h"
#include "support/status.h"

namespace strata::transform {

struct NchwcOptions {
  int64_t max_block = 16;  // f32 lanes of the target's vector registers
  int64_t max_lanes = 32;  // output channels of a convolution's register tile
};

// Blocks that fill the target's vector registers (at least 4 lanes) and register
// tiles of two vectors: 16 and 32 with AVX-512, 8 and 16 with AVX2.
NchwcOptions NchwcOptionsFor(const TargetFacts& target);

// The block of a tensor with `channels` channels (1 when none is >= 2).
int64_t NchwcBlock(int64_t channels, int64_t max_block);
// Registers a register tile may take when no whole-vector tile divides the outputs.
inline constexpr int64_t kMaxPartialTileVectors = 5;
// The weight lanes of a convolution with `out_channels` outputs in blocks of
// `out_block`: the largest multiple of the vector (max_block) up to
// max_lanes that divides them, else the lanes that fill their registers best
// (72 -> 72: 4.5 of 5 vectors; 24 -> 24).
int64_t NchwcLanes(int64_t out_channels, int64_t out_block, const NchwcOptions& options);

// `except`: operators to leave alone (an operator a LegalizeOptions override
// lowers, so conv2d with an override keeps its calls).
StatusOr<ir::IRModule> ConvertToNchwc(ir::IRModule module, const NchwcOptions& options = {},
                                      const std::set<std::string>& except = {});

}  // namespace strata::transform
