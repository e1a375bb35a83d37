// The compiler/runtime contract (docs/vm_builtins.md), checked from the compiler
// side: kernel-free programs go through the default pipeline and CodegenVM, are
// written, loaded (so the runtime's verifier and builtin resolution run) and
// executed. The error messages asserted are the ones users see.
#include <mutex>

#include <gtest/gtest.h>

#include "compiler/backend/vm/vm_codegen.h"
#include "compiler/driver/pipeline.h"
#include "serialization/writer.h"
#include "tests/transform/test_util.h"
#include "vm/executable.h"
#include "vm/registry.h"
#include "vm/tensor.h"
#include "vm/virtual_machine.h"

namespace strata::backend {
namespace {

using vm::Value;

StatusOr<std::shared_ptr<const vm::Executable>> Build(const std::string& text) {
  STRATA_ASSIGN_OR_RETURN(ir::IRModule lowered, driver::DefaultPipeline().Run(transform::testing::Parse(text)));
  STRATA_ASSIGN_OR_RETURN(serialization::ExecutableSpec spec, CodegenVM(lowered));
  std::vector<uint8_t> bytes = serialization::WriteExecutable(spec);
  return vm::Executable::LoadFromBytes(bytes);
}

Value Zeros(std::initializer_list<int64_t> shape) {
  auto t = vm::Tensor::Empty(shape, DataType::F32());
  EXPECT_TRUE(t.ok()) << t.status().message();
  return Value::FromTensor(std::move(t).value());
}

std::vector<int64_t> ShapeOf(const Value& v) {
  if (v.is_shape()) return {v.shape().begin(), v.shape().end()};
  if (v.is_tensor()) return {v.tensor()->shape().begin(), v.tensor()->shape().end()};
  ADD_FAILURE() << "not a shape or tensor: " << v.Describe();
  return {};
}

TEST(RuntimeContractTest, ParameterShapesAreMatchedAndMadeByTheRuntime) {
  auto exe = Build(R"(
func @main(x: Tensor[(n, m), f32], y: Tensor[(m, 3), f32]) -> Shape {
  s = shape(m, n, 7)
  return s
}
)");
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  vm::VirtualMachine machine(*exe);
  std::vector<Value> ok_args = {Zeros({2, 5}), Zeros({5, 3})};
  StatusOr<Value> result = machine.Invoke("main", ok_args);
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(ShapeOf(*result), (std::vector<int64_t>{5, 2, 7}));

  std::vector<Value> bad_dim = {Zeros({2, 5}), Zeros({4, 3})};
  result = machine.Invoke("main", bad_dim);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("main: parameter 'y' (match_shape): dimension 0 expected m = 5, got 4"),
            std::string::npos)
      << result.status().message();

  std::vector<Value> bad_const = {Zeros({2, 5}), Zeros({5, 4})};
  result = machine.Invoke("main", bad_const);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("main: parameter 'y' (match_shape): dimension 1 expected 3, got 4"),
            std::string::npos)
      << result.status().message();

  std::vector<Value> bad_rank = {Zeros({10}), Zeros({5, 3})};
  result = machine.Invoke("main", bad_rank);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("main: parameter 'x'"), std::string::npos) << result.status().message();
}

TEST(RuntimeContractTest, DestinationPassingLibraryCallGetsAnAllocatedOutput) {
  static std::once_flag once;
  std::call_once(once, [] {
    // transform_test.check_transposed(x, out): checks that out has the dims of x reversed.
    ASSERT_TRUE(vm::RegisterLibraryFunction("transform_test.check_transposed",
                                            [](std::span<const Value* const> args, Value* out) -> Status {
                                              if (args.size() != 2 || !args[0]->is_tensor() || !args[1]->is_tensor()) {
                                                return Status::Error("expects (tensor, tensor)");
                                              }
                                              auto in = args[0]->tensor()->shape();
                                              auto res = args[1]->tensor()->shape();
                                              if (in.size() != 2 || res.size() != 2 || in[0] != res[1] ||
                                                  in[1] != res[0]) {
                                                return Status::Error("output is not the transposed shape");
                                              }
                                              return Status::Ok();
                                            })
                    .ok());
  });
  auto exe = Build(R"(
func @main(x: Tensor[(n, m), f32]) -> Tensor[(m, n), f32] {
  dataflow {
    y = call_dps_packed("transform_test.check_transposed", (x,), Tensor[(m, n), f32])
    output y
  }
  return y
}
)");
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  vm::VirtualMachine machine(*exe);
  std::vector<Value> args = {Zeros({3, 8})};
  StatusOr<Value> result = machine.Invoke("main", args);
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(ShapeOf(*result), (std::vector<int64_t>{8, 3}));
}

TEST(RuntimeContractTest, IfTuplesAndGraphCallsRun) {
  auto exe = Build(R"(
func @pair(a: Tensor[(n,), f32]) -> Tuple[Tensor[(n,), f32], Shape[(n,)]] {
  s = shape_of(a)
  t = (a, s)
  return t
}
func @main(c: Prim[bool], x: Tensor[(k,), f32], y: Tensor[(k,), f32]) -> Shape {
  chosen = if c {
    x
  } else {
    z = @pair(y)
    z[0]
  }
  p = @pair(chosen)
  s = p[1]
  return s
}
)");
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  vm::VirtualMachine machine(*exe);
  for (int64_t c : {0, 1}) {
    std::vector<Value> args = {Value::FromInt(c), Zeros({6}), Zeros({6})};
    StatusOr<Value> result = machine.Invoke("main", args);
    ASSERT_TRUE(result.ok()) << result.status().message();
    EXPECT_EQ(ShapeOf(*result), (std::vector<int64_t>{6}));
  }
  std::vector<Value> mismatched = {Value::FromInt(1), Zeros({6}), Zeros({7})};
  StatusOr<Value> result = machine.Invoke("main", mismatched);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("main: parameter 'y' (match_shape): dimension 0 expected k = 6, got 7"),
            std::string::npos)
      << result.status().message();
}

}  // namespace
}  // namespace strata::backend
