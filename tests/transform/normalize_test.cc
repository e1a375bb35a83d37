// Normalize: what it infers, and the errors it reports with their exact text.
#include "compiler/transform/normalize.h"

#include <gtest/gtest.h>

#include "tests/transform/test_util.h"

namespace strata::transform {
namespace {

using testing::Parse;
using testing::SInfoOf;

constexpr const char* kRelu = R"(
prim_func @relu(A: Buffer[(m, n), f32], B: Buffer[(m, n), f32]) {
  for i in range(0, m) {
    for j in range(0, n) {
      B[i, j] = max(A[i, j], 0.0)
    }
  }
}
)";

std::string NormalizeError(const std::string& text) {
  StatusOr<ir::IRModule> result = Normalize(Parse(text));
  EXPECT_FALSE(result.ok()) << "Normalize accepted:\n" << text;
  return result.ok() ? "" : result.status().message();
}

TEST(NormalizeTest, InfersShapeOfAndAllocTensor) {
  ir::IRModule module = Parse(R"(
func @main(x: Tensor[(n, 4), f32]) -> Shape {
  s = shape_of(x)
  a = alloc_tensor(s, dtype(i32))
  b = alloc_tensor(shape(n + n, 3), dtype(f32))
  return s
}
)");
  StatusOr<ir::IRModule> result = Normalize(module);
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(SInfoOf(*result, "main", "s"), "Shape[(n, 4)]");
  EXPECT_EQ(SInfoOf(*result, "main", "a"), "Tensor[(n, 4), i32]");
  // Shapes are kept in the simplifier's canonical form.
  EXPECT_EQ(SInfoOf(*result, "main", "b"), "Tensor[(n * 2, 3), f32]");
}

TEST(NormalizeTest, InfersMemoryAndDeviceOperators) {
  ir::IRModule module = Parse(R"(
func @main(x: Tensor[(n, 4), f32]) -> Tensor[(n, 4), f32] {
  c = memory.check_bound(shape(n), 1, 64, "main: dimension 'n'")
  arena = memory.alloc_storage(1024, 64)
  tokens = memory.alloc_storage(shape(n * 16), 64, "sim_npu")
  a = memory.alloc_tensor(arena, 128, shape(n, 4), dtype(f32))
  d = device.alloc_tensor(shape(n, 2), dtype(i8), "sim_npu")
  x_on = device.to_device(x, "sim_npu")
  x_back = device.to_host(x_on)
  return x_back
}
)");
  StatusOr<ir::IRModule> result = Normalize(module);
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(SInfoOf(*result, "main", "c"), "Tuple[]");
  EXPECT_EQ(SInfoOf(*result, "main", "arena"), "Object");
  EXPECT_EQ(SInfoOf(*result, "main", "tokens"), "Object");
  EXPECT_EQ(SInfoOf(*result, "main", "a"), "Tensor[(n, 4), f32]");
  EXPECT_EQ(SInfoOf(*result, "main", "d"), "Tensor[(n, 2), i8]");
  EXPECT_EQ(SInfoOf(*result, "main", "x_on"), "Tensor[(n, 4), f32]");
  EXPECT_EQ(SInfoOf(*result, "main", "x_back"), "Tensor[(n, 4), f32]");
}

TEST(NormalizeTest, MemoryOperatorErrorsNameTheOperatorAndTheArgument) {
  auto error_of = [](const std::string& binding) {
    return NormalizeError(
        "func @main(x: Tensor[(n, 4), f32]) -> Tensor {\n  arena = memory.alloc_storage(1024, 64)\n  " + binding +
        "\n  return x\n}\n");
  };
  EXPECT_EQ(error_of("s = memory.alloc_storage(1024, 48)"),
            "function 'main', binding 's': memory.alloc_storage: the alignment must be a power of two, got 48");
  EXPECT_EQ(error_of("s = memory.alloc_storage(x, 64)"),
            "function 'main', binding 's': memory.alloc_storage: the size must be an i64 or a one-dimension "
            "shape(bytes), got Tensor[(n, 4), f32]");
  EXPECT_EQ(error_of("t = memory.alloc_tensor(x, 0, shape(4), dtype(f32))"),
            "function 'main', binding 't': memory.alloc_tensor: the storage must be an Object from "
            "memory.alloc_storage, got Tensor[(n, 4), f32]");
  EXPECT_EQ(error_of("t = memory.alloc_tensor(arena, -64, shape(4), dtype(f32))"),
            "function 'main', binding 't': memory.alloc_tensor: the offset is negative (-64)");
  EXPECT_EQ(error_of("t = memory.alloc_tensor(arena, 0, shape(4))"),
            "function 'main', binding 't': memory.alloc_tensor takes (storage, offset, shape, dtype(D)), got 3 "
            "arguments");
  EXPECT_EQ(error_of("c = memory.check_bound(shape(n), 9, 2, \"n\")"),
            "function 'main', binding 'c': memory.check_bound: the range 9..2 is empty");
  EXPECT_EQ(error_of("d = device.to_device(arena, \"sim_npu\")"),
            "function 'main', binding 'd': device.to_device copies a tensor, got a value of struct info Object");
  EXPECT_EQ(error_of("d = device.to_device(x, 3)"),
            "function 'main', binding 'd': device.to_device: the device must be a string");
}

TEST(NormalizeTest, LessPreciseAnnotationIsRefined) {
  StatusOr<ir::IRModule> result = Normalize(Parse(std::string(kRelu) + R"(
func @main(x: Tensor[(a, b), f32]) -> Tensor {
  y: Tensor = call_tir(@relu, (x,), Tensor[(a, b), f32])
  z: Tensor[ndim=2, f32] = call_tir(@relu, (y,), Tensor[(a, b), f32])
  return z
}
)"));
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(SInfoOf(*result, "main", "y"), "Tensor[(a, b), f32]");
  EXPECT_EQ(SInfoOf(*result, "main", "z"), "Tensor[(a, b), f32]");
}

TEST(NormalizeTest, CallTIRTakesALoneArgumentWithoutTheTrailingComma) {
  // `(x)` parses as x itself; call_tir accepts it as its one argument.
  StatusOr<ir::IRModule> result = Normalize(Parse(std::string(kRelu) + R"(
func @main(x: Tensor[(a, b), f32]) -> Tensor {
  y = call_tir(@relu, (x), Tensor[(a, b), f32])
  return y
}
)"));
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(SInfoOf(*result, "main", "y"), "Tensor[(a, b), f32]");
  StatusOr<ir::IRModule> rewritten = testing::RunPasses(*result, {"CallTIRRewrite"});
  ASSERT_TRUE(rewritten.ok()) << rewritten.status().message();
  EXPECT_NE(ir::PrintModule(*rewritten).find("_: Tuple[] = @relu(x, out)"), std::string::npos)
      << ir::PrintModule(*rewritten);
}

TEST(NormalizeTest, ContradictingAnnotationNamesFunctionBindingAndBothStructInfos) {
  std::string error = NormalizeError(std::string(kRelu) + R"(
func @main(x: Tensor[(a, 4), f32]) -> Tensor {
  y: Tensor[(a, 5), f32] = call_tir(@relu, (x,), Tensor[(a, 4), f32])
  return y
}
)");
  EXPECT_EQ(error,
            "function 'main', binding 'y': annotation Tensor[(a, 5), f32] contradicts the inferred struct info "
            "Tensor[(a, 4), f32]");
}

TEST(NormalizeTest, DtypeContradictionIsAnError) {
  std::string error = NormalizeError(std::string(kRelu) + R"(
func @main(x: Tensor[(a, 4), f32]) -> Tensor {
  y: Tensor[i32] = call_tir(@relu, (x,), Tensor[(a, 4), f32])
  return y
}
)");
  EXPECT_EQ(error,
            "function 'main', binding 'y': annotation Tensor[i32] contradicts the inferred struct info "
            "Tensor[(a, 4), f32]");
}

TEST(NormalizeTest, AnnotationMorePreciseThanInferredAsksForMatchCast) {
  std::string error = NormalizeError(R"(
func @g(x: Tensor[ndim=2, f32]) -> Tensor[ndim=2, f32] {
  return x
}
func @main(x: Tensor[(a, 4), f32]) -> Tensor {
  y: Tensor[(a, 4), f32] = @g(x)
  return y
}
)");
  EXPECT_EQ(error,
            "function 'main', binding 'y': annotation Tensor[(a, 4), f32] is more precise than the inferred "
            "struct info Tensor[ndim=2, f32]; use match_cast to check it at run time");
}

TEST(NormalizeTest, CallTIRArityMismatchIsAnError) {
  std::string error = NormalizeError(std::string(kRelu) + R"(
func @main(x: Tensor[(a, b), f32]) -> Tensor {
  y = call_tir(@relu, (x, x), Tensor[(a, b), f32])
  return y
}
)");
  EXPECT_EQ(error,
            "function 'main', binding 'y': call_tir(@relu) passes 2 tensor argument(s) + 1 output(s) + 0 "
            "tir_var(s) = 3 value(s), but @relu takes 2 parameter(s)");
}

TEST(NormalizeTest, CallTIRRankMismatchNamesArgumentAndBuffer) {
  std::string error = NormalizeError(std::string(kRelu) + R"(
func @main(x: Tensor[(a, b, c), f32]) -> Tensor {
  y = call_tir(@relu, (x,), Tensor[(a, b), f32])
  return y
}
)");
  EXPECT_EQ(error,
            "function 'main', binding 'y': call_tir(@relu): argument 0 ('x') has struct info "
            "Tensor[(a, b, c), f32] (rank 3) but parameter 'A' is Buffer[(m, n), f32] (rank 2)");
}

TEST(NormalizeTest, CallTIRDtypeMismatchOfOutputIsAnError) {
  std::string error = NormalizeError(std::string(kRelu) + R"(
func @main(x: Tensor[(a, b), f32]) -> Tensor {
  y = call_tir(@relu, (x,), Tensor[(a, b), i32])
  return y
}
)");
  EXPECT_EQ(error,
            "function 'main', binding 'y': call_tir(@relu): output 0 has struct info Tensor[(a, b), i32] but "
            "parameter 'B' is Buffer[(m, n), f32] (dtype f32)");
}

TEST(NormalizeTest, CallTIRTirVarsCountTowardsTheParameters) {
  ir::IRModule module = Parse(R"(
prim_func @fill(Y: Buffer[(n,), i64], v: i64) {
  for i in range(0, n) {
    Y[i] = v
  }
}
func @main(x: Tensor[(n,), f32]) -> Tensor {
  ok = call_tir(@fill, (), Tensor[(n,), i64], shape(7))
  return ok
}
)");
  ASSERT_TRUE(Normalize(module).ok());
  std::string error = NormalizeError(R"(
prim_func @fill(Y: Buffer[(n,), i64], v: i64) {
  for i in range(0, n) {
    Y[i] = v
  }
}
func @main(x: Tensor[(n,), f32]) -> Tensor {
  bad = call_tir(@fill, (), Tensor[(n,), i64], shape(7, 8))
  return bad
}
)");
  EXPECT_EQ(error,
            "function 'main', binding 'bad': call_tir(@fill) passes 0 tensor argument(s) + 1 output(s) + 2 "
            "tir_var(s) = 3 value(s), but @fill takes 2 parameter(s)");
}

TEST(NormalizeTest, IfJoinsBranchesToTheirLeastUpperBound) {
  StatusOr<ir::IRModule> result = Normalize(Parse(std::string(kRelu) + R"(
func @main(c: Prim[bool], x: Tensor[(a, b), f32], y: Tensor[(b, a), f32]) -> Tensor {
  same = if c {
    x
  } else {
    x
  }
  joined = if c {
    x
  } else {
    y
  }
  return joined
}
)"));
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(SInfoOf(*result, "main", "same"), "Tensor[(a, b), f32]");
  EXPECT_EQ(SInfoOf(*result, "main", "joined"), "Tensor[ndim=2, f32]");
}

TEST(NormalizeTest, IfConditionMustBeAScalarOrZeroDimTensor) {
  std::string error = NormalizeError(R"(
func @main(c: Tensor[(4,), bool], x: Tensor[(4,), f32]) -> Tensor {
  y = if c {
    x
  } else {
    x
  }
  return y
}
)");
  EXPECT_EQ(error,
            "function 'main', binding 'y': if condition has struct info Tensor[(4,), bool]; expected a bool "
            "scalar (Prim[bool]) or a 0-d tensor");
}

TEST(NormalizeTest, GraphCallInstantiatesCalleeShapesAndErasesItsLocalOnes) {
  StatusOr<ir::IRModule> result = Normalize(Parse(R"(
func @local(x: Tensor[(n,), f32]) -> Tensor[(k,), f32] {
  s = call_packed("lib.produce", x)
  y = match_cast(s, Tensor[(k,), f32])
  return y
}
func @pair(x: Tensor[(n,), f32], y: Tensor[(m, n), f32]) -> Tensor[(m + n,), f32] {
  r = call_packed("lib.concat", x, y)
  z = match_cast(r, Tensor[(m + n,), f32])
  return z
}
func @main(a: Tensor[(p, q), f32], b: Tensor[(q,), f32]) -> Tensor {
  u = @local(b)
  v = @pair(b, a)
  return v
}
)"));
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(SInfoOf(*result, "main", "u"), "Tensor[ndim=1, f32]");
  EXPECT_EQ(SInfoOf(*result, "main", "v"), "Tensor[(p + q,), f32]");
}

TEST(NormalizeTest, GraphCallArgumentContradictionIsAnError) {
  std::string error = NormalizeError(R"(
func @pair(x: Tensor[(n,), f32], y: Tensor[(n,), f32]) -> Tensor[(n,), f32] {
  return x
}
func @main(a: Tensor[(3,), f32], b: Tensor[(4,), f32]) -> Tensor {
  v = @pair(a, b)
  return v
}
)");
  EXPECT_EQ(error,
            "function 'main', binding 'v': argument 1 ('b') of @pair has struct info Tensor[(4,), f32], "
            "incompatible with parameter 'y': Tensor[(3,), f32]");
}

TEST(NormalizeTest, MatchCastBindsPatternVariables) {
  StatusOr<ir::IRModule> result = Normalize(Parse(R"(
func @main(x: Tensor[ndim=2, f32]) -> Tensor {
  y = match_cast(x, Tensor[(r, c), f32])
  s = shape_of(y)
  return y
}
)"));
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(SInfoOf(*result, "main", "y"), "Tensor[(r, c), f32]");
  EXPECT_EQ(SInfoOf(*result, "main", "s"), "Shape[(r, c)]");
}

TEST(NormalizeTest, ImpossibleMatchCastIsAnError) {
  std::string error = NormalizeError(R"(
func @main(x: Tensor[ndim=2, f32]) -> Tensor {
  y = match_cast(x, Tensor[(r,), f32])
  return y
}
)");
  EXPECT_EQ(error,
            "function 'main', binding 'y': match_cast of a value with struct info Tensor[ndim=2, f32] to "
            "Tensor[(r,), f32] can never succeed");
}

TEST(NormalizeTest, ReturnValueMustMatchTheDeclaredReturn) {
  std::string error = NormalizeError(R"(
func @main(x: Tensor[(a, 4), f32]) -> Tensor[(a, 5), f32] {
  return x
}
)");
  EXPECT_EQ(error,
            "function 'main': the returned value has struct info Tensor[(a, 4), f32], which contradicts the "
            "declared return struct info Tensor[(a, 5), f32]");
}

TEST(NormalizeTest, UnknownOperatorIsAnError) {
  std::string error = NormalizeError(R"(
func @main(x: Tensor[(a, 4), f32]) -> Tensor {
  y = frobnicate(x)
  return y
}
)");
  EXPECT_EQ(error, "function 'main', binding 'y': unknown operator 'frobnicate'");
}

TEST(NormalizeTest, NormalizerKeepsDataflowKindAndNames) {
  StatusOr<ir::IRModule> result = Normalize(Parse(std::string(kRelu) + R"(
func @main(x: Tensor[(a, b), f32]) -> Tensor {
  dataflow {
    t = call_tir(@relu, (x,), Tensor[(a, b), f32])
    u = call_tir(@relu, (t,), Tensor[(a, b), f32])
    output u
  }
  return u
}
)"));
  ASSERT_TRUE(result.ok()) << result.status().message();
  graph::Binding t = testing::FindBinding(*result, "main", "t");
  graph::Binding u = testing::FindBinding(*result, "main", "u");
  ASSERT_TRUE(t.var.defined() && u.var.defined());
  EXPECT_TRUE(t.var->is_dataflow);
  EXPECT_FALSE(u.var->is_dataflow);
  // The use of t in u's value is the rebuilt t, not the parsed one.
  const auto* call = u.value.as<graph::CallNode>();
  ASSERT_TRUE(call != nullptr);
  EXPECT_TRUE(call->args[1].as<graph::TupleNode>()->fields[0].same_as(t.var));
}

}  // namespace
}  // namespace strata::transform
