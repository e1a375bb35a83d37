// The `strata inspect` description of an executable.
#include <gtest/gtest.h>

#include "serialization/format_version.h"
#include "tests/vm/executable_builder.h"
#include "tests/vm/test_util.h"
#include "vm/executable_description.h"

namespace strata::testing {
namespace {

TEST(DisassemblerTest, DescribesFunctionsBytecodeConstantsAndModules) {
  ExecutableBuilder b;
  int match = b.Library("vm.builtin.match_shape");
  int copy = b.Library("vm.builtin.copy");
  int w = b.Tensor<float>(DataType::F32(), {2, 2}, {1, 2, 3, 4});
  int ctx = b.String("main: parameter 'x'");
  b.Shape({4, 5});
  b.Int(-3);
  b.Constant(0.5);
  b.DType(DataType::I64());
  int helper = b.Declare("helper", {"v"}, 1, /*entry_point=*/false);
  CodeBuilder code;
  code.Call(kVoid, match, {R(0), R(1), Imm(1), Imm(0), Imm(4), C(ctx), C(ctx)})
      .Label("loop")
      .If(2, "end")
      .Call(3, copy, {Fn(helper)})
      .Call(2, helper, {C(w)})
      .Goto("loop")
      .Label("end")
      .Ret(2);
  int32_t main = b.Bytecode("main", {"x", "heap", "flag"}, 4, code);
  // The helper has no signature, as in files older than format 1.4.
  serialization::SignatureSpec sig;
  sig.params.push_back({"tensor", "f32", 2, {"m", "n * 2"}, {}, "Tensor[(m, n * 2), f32]"});
  sig.params.push_back({"shape", "", -1, {}, {}, "Shape"});
  sig.params.push_back({"prim", "bool", -1, {}, {}, "Prim[bool]"});
  sig.result = {"tensor", "f32", 2, {"2", "2"}, {}, "Tensor[(2, 2), f32]"};
  b.spec.functions[static_cast<size_t>(main)].signature = std::move(sig);
  serialization::NativeModuleSpec module;
  module.target_triple = "x86_64-pc-linux-gnu";
  module.cpu = "skylake-avx512";
  module.code = ReadFile(STRATA_TEST_KERNEL_MODULE);
  module.symbols = {"add_scalar", "record_i64"};
  b.spec.native_modules.push_back(module);
  b.Kernel("add_scalar", 0, "add_scalar");

  auto exe = vm::Executable::LoadFromBytes(b.Write(), vm::LoadOptions{.resolve = false, .device_options = {}});
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  std::string text = vm::DescribeExecutable(**exe);
  auto expect_line = [&](const std::string& line) {
    EXPECT_NE(text.find(line), std::string::npos) << "missing: " << line << "\nin:\n" << text;
  };
  expect_line("Strata executable, format " + std::to_string(serialization::kFormatMajor) + "." +
              std::to_string(serialization::kFormatMinor) + ", producer \"strata\"");
  expect_line("entry points: main\n");
  expect_line("functions (5):\n");
  expect_line("  [0] vm.builtin.match_shape  library\n");
  expect_line("  [2] helper  bytecode  params (v)  registers 1  code 2 words\n");
  expect_line(
      "  [3] main  bytecode  (x: Tensor[(m, n * 2), f32], heap: Shape, flag: Prim[bool]) -> Tensor[(2, 2), f32]  "
      "registers 4  code 28 words\n");
  expect_line("     0: call vm.builtin.match_shape(r0, r1, 1, 0, 4, c1, c1)\n");
  expect_line("    11: if r2 else +15  (to 26)\n");
  expect_line("    14: call r3 = vm.builtin.copy(@helper)\n");
  expect_line("    19: call r2 = helper(c0)\n");
  expect_line("    24: goto -13  (to 11)\n");
  expect_line("    26: ret r2\n");
  expect_line("  [4] add_scalar  compiled kernel  native_modules[0] symbol add_scalar\n");
  expect_line("  c0  tensor f32 (2, 2), 16 bytes\n");
  expect_line("  c1  string \"main: parameter 'x'\"\n");
  expect_line("  c2  shape (4, 5)\n");
  expect_line("  c3  int -3\n");
  expect_line("  c4  float 0.5\n");
  expect_line("  c5  dtype i64\n");
  expect_line("  [0] elf-shared-object  triple x86_64-pc-linux-gnu  cpu skylake-avx512  ");
  expect_line("      symbols (2): add_scalar record_i64\n");
}

}  // namespace
}  // namespace strata::testing
