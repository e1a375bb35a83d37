// pad: inference over symbolic widths, refused calls, and the kernel's modes
// and run-time checks.
#include <gtest/gtest.h>

#include "tests/op/op_test_util.h"
#include "vm/tensor_io/npy.h"
#include "vm/virtual_machine.h"

namespace strata::op::testing {
namespace {

TEST(PadInfer, SymbolicWidthsWidenTheShape) {
  EXPECT_EQ(Infer("x: Tensor[(n, h), f32]", "pad(x, pad_before=[0, 1], pad_after=[2, h % 4])"),
            "Tensor[(n + 2, h + h % 4 + 1), f32]");
  EXPECT_EQ(Infer("x: Tensor[(n, h), f32]", "pad(x, pad_before=[0, 1], pad_after=[0, 0], mode=\"reflect\")"),
            "Tensor[(n, h + 1), f32]");
}

TEST(PadInfer, BadCallsSayWhatIsWrong) {
  EXPECT_EQ(Infer("x: Tensor[(n, h), f32]", "pad(x, pad_before=[0], pad_after=[0, 0])"),
            "error: function 'main', binding 'y': pad: pad_before and pad_after must have one width per dim (2), got "
            "1 and 2");
  EXPECT_EQ(Infer("x: Tensor[(n, h), f32]", "pad(x, pad_before=[0, -1], pad_after=[0, 0])"),
            "error: function 'main', binding 'y': pad: pad width -1 must be provably non-negative (cropping is "
            "strided_slice's job)");
  EXPECT_EQ(Infer("x: Tensor[(n, h), f32]", "pad(x, pad_before=[0, 1], pad_after=[0, 0], mode=\"mirror\")"),
            "error: function 'main', binding 'y': pad: mode must be \"constant\", \"edge\", \"reflect\" or \"wrap\", "
            "got \"mirror\"");
}

TEST(PadRuntime, ModesMatchNumpyPad) {
  const std::string params = "x: Tensor[(h,), f32]";
  EXPECT_EQ(RunTensorOnce(params, "pad(x, pad_before=[2], pad_after=[1], pad_value=9)", {"3xf32=1,2,3"}),
            "6xf32=9,9,1,2,3,9");
  EXPECT_EQ(RunTensorOnce(params, "pad(x, pad_before=[2], pad_after=[1], mode=\"edge\")", {"3xf32=1,2,3"}),
            "6xf32=1,1,1,2,3,3");
  EXPECT_EQ(RunTensorOnce(params, "pad(x, pad_before=[2], pad_after=[1], mode=\"reflect\")", {"3xf32=1,2,3"}),
            "6xf32=3,2,1,2,3,2");
  EXPECT_EQ(RunTensorOnce(params, "pad(x, pad_before=[2], pad_after=[1], mode=\"wrap\")", {"3xf32=1,2,3"}),
            "6xf32=2,3,1,2,3,1");
  EXPECT_EQ(RunTensorOnce(params, "pad(x, pad_before=[2], pad_after=[0], mode=\"reflect\")", {"2xf32=1,2"}),
            "error: compiled kernel 'pad' failed: pad: argument 'x' dimension 0 (h) must be longer than its reflect "
            "pad widths (2, 0)");
  EXPECT_EQ(RunTensorOnce(params, "pad(x, pad_before=[1], pad_after=[0], mode=\"edge\")", {"0xf32="}),
            "error: compiled kernel 'pad' failed: pad: argument 'x' dimension 0 (h) must not be empty to pad");
}

}  // namespace
}  // namespace strata::op::testing
