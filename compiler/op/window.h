// Window geometry shared by the convolution and pooling operators, in the
// plain (NCHW) and blocked (NCHWc) layouts: strides, dilation and padding
// attributes, and the output size of a window sliding over a symbolic image.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/op/op_registry.h"
#include "support/status.h"

namespace strata::op {

using tir::PrimExpr;

// A (height, width) attribute of positive values.
StatusOr<std::array<int64_t, 2>> PairAttr(const OpCall& call, const std::string& name);

// Padding is (top, left, bottom, right).
struct Window {
  std::array<int64_t, 2> strides, dilation;
  std::array<int64_t, 4> padding;
  int64_t pad_before(int d) const { return padding[d]; }
  int64_t pad_after(int d) const { return padding[d + 2]; }
};

StatusOr<Window> ReadWindow(const OpCall& call, const std::string& strides_attr);

// Number of window positions along one dimension: floor((in + pads - dilated
// window) / stride) + 1. ceil_mode rounds up instead, except that a window must
// start inside the input or the leading padding (PyTorch's rule).
PrimExpr WindowOutputDim(const PrimExpr& in, const Window& w, int d, const PrimExpr& kernel, bool ceil_mode);

Status CheckFloat(const OpCall& call, size_t i, DataType dtype);
// Argument i has rank 4 (when its rank is known); `layout` names the dims for the message.
Status CheckRank4(const OpCall& call, size_t i, const graph::TensorStructInfoNode* t, const char* layout);

// The output spatial dims of a window operator whose input has the spatial
// dims x_shape[2], x_shape[3]; an error when a constant one is empty.
StatusOr<std::array<PrimExpr, 2>> WindowOutput(const OpCall& call, const std::vector<PrimExpr>& x_shape,
                                               const Window& w, const std::array<PrimExpr, 2>& kernel, bool ceil_mode,
                                               const std::string& window_text);

// The operands and attributes every 2-D convolution reads first (conv2d and
// its NCHWc form): x and the weight, of one float dtype, the window (strides,
// padding, dilation) and a positive group count.
struct ConvOperands {
  const graph::TensorStructInfoNode* x;
  const graph::TensorStructInfoNode* weight;
  DataType dtype;
  Window window;
  int64_t groups;
};
StatusOr<ConvOperands> ReadConvOperands(const OpCall& call);

struct PoolAttrs {
  std::array<int64_t, 2> size;
  Window window;
  bool ceil_mode;
};

// pool_size, strides (default: pool_size), padding, dilation and ceil_mode of
// max_pool2d / avg_pool2d and their NCHWc forms; padding must be smaller than the window.
StatusOr<PoolAttrs> ReadPoolAttrs(const OpCall& call);

// The attribute definitions ReadPoolAttrs reads (pool_size required, strides
// optional), plus count_include_pad (default false) when `avg`.
std::vector<AttrDef> PoolAttrDefs(bool avg);

}  // namespace strata::op
