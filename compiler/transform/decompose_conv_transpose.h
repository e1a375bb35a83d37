// DecomposeConvTranspose: a transposed convolution with a constant weight
// becomes one stride-1 convolution and a depth_to_space.
//
// conv2d_transpose(x, w[C, O, KH, KW], strides=[sh, sw], padding=[pt, pl, pb, pr],
// output_padding=[oph, opw]) scatters each input pixel through the kernel to
// an sh x sw grid of output phases. Output row o + pt = q * sh + rh receives
// exactly the kernel rows rh + j * sh from input rows q - j, so each phase is
// an ordinary correlation of x with a sub-kernel of J = ceil(KH / sh) rows,
// read back to front. All sh * sw phases are one conv2d with O * sh * sw
// output channels (phase-major, zero taps where a sub-kernel is shorter than
// J), padded by J - 1 on each side, and depth_to_space(blocks=[sh, sw], crop)
// interleaves the phases and removes the padding's rows:
//
//   y = conv2d_transpose(x, w, ...)   ->   c = conv2d(x, W2, padding=[Jh-1, Jw-1, Jh-1+eh, Jw-1+ew])
//                                          y = depth_to_space(c, blocks=[sh, sw], crop=[pt, pl, cb, cr])
//
// The convolution then runs on the blocked (NCHWc) kernels like any other,
// and depth_to_space has a blocked form, so a decoder stays blocked from the
// upsampling through the skip concat into the next convolution. The
// multiply-adds are those of the transposed convolution when the stride
// divides the kernel (k=2/s=2, k=4/s=2); otherwise the zero taps add up to
// (J * s / K)^2 of them (k=3/s=2: 16 for 9), still on the fast kernels.
//
// Left alone (the direct conv2d_transpose kernel): grouped or dilated
// transposed convolutions, non-constant or non-f32 weights. LegalizeOps runs
// this before ConvertToNchwc; a conv2d_transpose a dispatch pass or BYOC took
// over is not touched.
#pragma once

#include <set>
#include <string>

#include "compiler/ir/module.h"
#include "support/status.h"

namespace strata::transform {

StatusOr<ir::IRModule> DecomposeConvTranspose(ir::IRModule module, const std::set<std::string>& except = {});

}  // namespace strata::transform
