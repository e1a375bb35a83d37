// FoldBatchNorm: an inference batch_norm that follows a convolution is folded
// into the convolution's weights and one bias.
//
//   %c = conv2d(%x, W)                      %s  = gamma / sqrt(var + eps)
//   %b = bias_add(%c, B, axis=1)     ->     %c  = conv2d(%x, W * reshape(%s, (O, 1, 1, 1)))
//   %y = batch_norm(%b, gamma, beta,        %y  = bias_add(%c, (B - mean) * %s + beta, axis=1)
//                   mean, var, axis=1)
//
// (without a conv bias, the new bias is beta - mean * %s). The 1-D convolution
// of the ONNX importer, squeeze(conv2d(...), axis=[2]), folds the same way. The
// scale and the new weight and bias are written as operator calls on the
// constants, which FoldConstants (after this pass in the pipeline) computes at
// compile time with the program's own kernels; the math is exact, only rounded
// differently from the unfolded program.
//
// It fires when W, B and the four batch_norm parameters are constants (or
// computed from constants alone, like the unit-height weight of a 1-D
// convolution), the dtype is f32 or f64, batch_norm normalizes axis 1 (the
// channel axis of NCHW and of NCL), and every intermediate (the conv result, the
// squeezed and the biased one) has no other user and sits in the same binding
// block; the intermediates are then removed. Any group count folds: conv2d's
// weight is OIHW for grouped and depthwise convolutions too, so output channel o
// is always weight row o. Not folded: non-constant parameters, a conv result
// that is also used elsewhere (it must keep its unnormalized value), a channel
// axis other than 1, and conv_transpose (its weight is IOHW).
#pragma once

#include "compiler/ir/module.h"
#include "support/status.h"

namespace strata::transform {

StatusOr<ir::IRModule> FoldBatchNorm(ir::IRModule module);

}  // namespace strata::transform
