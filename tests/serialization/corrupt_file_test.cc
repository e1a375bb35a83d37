// Corrupt and hostile executables: every one is refused with a one-line error
// naming the section and index, or (when a damaged file still verifies) runs
// without crashing or hanging. Run under ASan (build-vm-asan) as well.
#include <algorithm>
#include <cstring>

#include <gtest/gtest.h>

#include "serialization/format_version.h"
#include "serialization/reader.h"
#include "tests/vm/executable_builder.h"
#include "tests/vm/test_util.h"
#include "vm/executable.h"
#include "vm/virtual_machine.h"

// Allocation requests built from damaged sizes must come back as errors, not aborts.
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }

namespace strata::testing {
namespace {

using vm::Value;

// A small executable using every section: library calls, two bytecode functions,
// If/Goto, every constant kind. The loop count is the argument `n`.
ExecutableBuilder SmallExecutable() {
  ExecutableBuilder b;
  int copy = b.Library("vm.builtin.copy");
  int dec = b.Library("test.decrement");
  int alloc = b.Library("vm.builtin.alloc_tensor");
  int match = b.Library("vm.builtin.match_shape");
  int heap = b.Library("vm.builtin.alloc_shape_heap");
  int w = b.Tensor<float>(DataType::F32(), {2, 2}, {1, 2, 3, 4});
  int shape = b.Shape({2, 2});
  int f32 = b.DType(DataType::F32());
  int ctx = b.String("main: parameter 'x'");
  int n = b.String("n");
  b.Constant(1.25);
  b.Int(3);
  int helper = b.Declare("helper", {"t"}, 2, /*entry_point=*/false);
  CodeBuilder helper_code;
  helper_code.Call(1, alloc, {C(shape), C(f32)}).Ret(1);
  b.Define(helper, helper_code);
  CodeBuilder code;
  code.Call(2, heap, {Imm(1)})
      .Call(kVoid, match, {R(0), R(2), Imm(2), Imm(1), Imm(0), C(n), Imm(0), Imm(2), C(n), C(ctx)})
      .Call(3, copy, {R(1)})
      .Label("loop")
      .If(3, "done")
      .Call(3, dec, {R(3)})
      .Call(4, helper, {C(w)})
      .Goto("loop")
      .Label("done")
      .Ret(4);
  int main = b.Bytecode("main", {"x", "n"}, 5, code);
  // Signatures too, so that damage to them is part of every test below.
  const serialization::ValueSignatureSpec tensor{"tensor", "f32", 2, {"2", "n"}, {}, "Tensor[(2, n), f32]"};
  const serialization::ValueSignatureSpec result{"tensor", "f32", 2, {"2", "2"}, {}, "Tensor[(2, 2), f32]"};
  b.spec.functions[static_cast<size_t>(helper)].signature = serialization::SignatureSpec{{result}, result};
  b.spec.functions[static_cast<size_t>(main)].signature =
      serialization::SignatureSpec{{tensor, {"prim", "i64", -1, {}, {}, "Prim[i64]"}}, result, {"x.0", "n"}, {"y"}};
  return b;
}

// Loads `bytes`; if that works, runs main on a valid input. Never crashes.
// Returns the load error, or "" when the file loaded.
std::string LoadAndMaybeRun(std::span<const uint8_t> bytes, const vm::LoadOptions& options = {}) {
  auto exe = vm::Executable::LoadFromBytes(bytes, options);
  if (!exe.ok()) return exe.status().message();
  vm::VirtualMachine machine(*exe);
  // Damage to a jump offset can make a loop that never ends; the budget turns
  // that into an error like any other.
  machine.SetStepBudget(10000);
  for (int32_t entry : (*exe)->entry_points()) {
    const vm::VMFunction& f = (*exe)->functions()[static_cast<size_t>(entry)];
    std::vector<Value> args(static_cast<size_t>(f.num_params), Value::FromInt(3));
    if (!args.empty()) args[0] = F32({2, 2}, {1, 2, 3, 4});
    (void)machine.Invoke(f.name, args);
  }
  return "";
}

TEST(CorruptFileTest, TheSmallExecutableIsValid) {
  RegisterTestFunctions();
  auto exe = LoadOrDie(SmallExecutable().Write());
  ASSERT_NE(exe, nullptr);
  vm::VirtualMachine machine(exe);
  std::vector<Value> args = {F32({2, 2}, {1, 2, 3, 4}), Value::FromInt(3)};
  auto result = machine.Invoke("main", args);
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(result->tensor()->TypeString(), "Tensor[(2, 2), f32]");
}

TEST(CorruptFileTest, EveryTruncationIsRefused) {
  RegisterTestFunctions();
  std::vector<uint8_t> bytes = SmallExecutable().Write();
  for (size_t len = 0; len < bytes.size(); ++len) {
    std::string error = LoadAndMaybeRun(std::span<const uint8_t>(bytes.data(), len));
    ASSERT_FALSE(error.empty()) << "truncated to " << len << " of " << bytes.size() << " bytes but loaded";
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
}

// With the checksums skipped, so that the structural verifiers see every kind of
// damage (checksum_test.cc has the same damage with them).
TEST(CorruptFileTest, EveryFlippedByteFailsCleanlyOrRuns) {
  RegisterTestFunctions();
  std::vector<uint8_t> bytes = SmallExecutable().Write();
  vm::LoadOptions unchecked;
  unchecked.verify_checksums = false;
  int refused = 0, loaded = 0, located = 0;
  for (uint8_t pattern : {uint8_t{0xff}, uint8_t{0x80}, uint8_t{0x01}}) {
    for (size_t i = 0; i < bytes.size(); ++i) {
      std::vector<uint8_t> damaged = bytes;
      damaged[i] ^= pattern;
      if (std::getenv("STRATA_FLIP_DEBUG")) std::fprintf(stderr, "flip %zu ^%02x\n", i, pattern);
      std::string error = LoadAndMaybeRun(damaged, unchecked);
      if (error.empty()) {
        ++loaded;
        continue;
      }
      ++refused;
      EXPECT_EQ(error.find('\n'), std::string::npos) << error;
      // A damaged file is DATA_LOSS, unless the damage hit the version (a file
      // this runtime cannot read) or left a loadable file whose run fails.
      StatusCode code = vm::Executable::LoadFromBytes(damaged, unchecked).status().code();
      EXPECT_TRUE(code == StatusCode::kDataLoss || code == StatusCode::kUnimplemented || code == StatusCode::kOk ||
                  code == StatusCode::kNotFound)
          << StatusCodeName(code) << ": " << error;
      if (error.rfind("flatbuffer verification failed in functions[", 0) == 0 ||
          error.rfind("flatbuffer verification failed in constants[", 0) == 0) {
        ++located;
      }
    }
  }
  // Most damage is caught; the rest (e.g. bytes of tensor data or padding) still runs.
  EXPECT_GT(refused, static_cast<int>(bytes.size()));
  EXPECT_GT(loaded, 0);
  EXPECT_GT(located, 0);  // the flatbuffers failures name a table
}

TEST(CorruptFileTest, WrongMagicNamesTheIdentifier) {
  std::vector<uint8_t> bytes = SmallExecutable().Write();
  std::memcpy(bytes.data() + 4, "ONNX", 4);
  EXPECT_EQ(LoadError(bytes), "not a Strata executable (file identifier 'ONNX', expected 'STRX')");
  bytes[4] = 0x00;
  bytes[5] = 0xff;
  EXPECT_EQ(LoadError(bytes), "not a Strata executable (file identifier '\\x00\\xffNX', expected 'STRX')");
  std::string text = "# this is a text file, not an executable\n";
  EXPECT_EQ(LoadError(std::vector<uint8_t>(text.begin(), text.end())),
            "not a Strata executable (file identifier 'is i', expected 'STRX')");
  EXPECT_EQ(LoadError({1, 2, 3}), "not a Strata executable: file too small (3 bytes)");
  EXPECT_EQ(LoadError({}), "not a Strata executable: file too small (0 bytes)");
  EXPECT_EQ(vm::Executable::LoadFromBytes(bytes).status().code(), StatusCode::kDataLoss);
}

std::vector<uint8_t> WithVersion(uint32_t major, uint32_t minor) {
  serialization::WriteOptions options;
  options.format_major = major;
  options.format_minor = minor;
  return serialization::WriteExecutable(SmallExecutable().spec, options);
}

TEST(CorruptFileTest, VersionsTheRuntimeCannotReadAreRefusedWithBothVersions) {
  EXPECT_EQ(LoadError(WithVersion(2, 0)),
            "executable format version 2.0 is newer than this runtime supports (1.7); upgrade the runtime");
  EXPECT_EQ(vm::Executable::LoadFromBytes(WithVersion(2, 0)).status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(LoadError(WithVersion(1, 8)),
            "executable format version 1.8 is newer than this runtime supports (1.7); upgrade the runtime");
  EXPECT_EQ(LoadError(WithVersion(0, 9)),
            "executable format version 0.9 is older than this runtime supports (1.7); recompile the model");
  RegisterTestFunctions();
  EXPECT_NE(LoadOrDie(WithVersion(serialization::kFormatMajor, serialization::kFormatMinor)), nullptr);
}

TEST(CorruptFileTest, VersionIsCheckedBeforeTheRestOfTheFileIsTrusted) {
  // A "future" file whose body this runtime cannot verify still gets the version message.
  std::vector<uint8_t> bytes = WithVersion(3, 1);
  std::vector<uint8_t> mangled = bytes;
  for (size_t i = mangled.size() / 2; i < mangled.size(); ++i) mangled[i] = 0xee;
  EXPECT_EQ(LoadError(mangled),
            "executable format version 3.1 is newer than this runtime supports (1.7); upgrade the runtime");
}

// main with two library functions before it, so it is functions[2], and an
// instruction at word 17: calls of 5 and 4 arguments take words 0-8 and 9-16.
ExecutableBuilder WordSeventeen(const std::vector<int64_t>& bad_call_args, int64_t func = 0) {
  ExecutableBuilder b;
  int tuple = b.Library("vm.builtin.tuple");
  b.Library("vm.builtin.null");
  b.Int(1);
  CodeBuilder code;
  code.Call(1, tuple, {R(0), R(0), R(0), R(0), R(0)})
      .Call(2, tuple, {R(1), Imm(1), C(0), R(0)})
      .Call(3, func < 0 ? tuple : func, bad_call_args)
      .Ret(3);
  b.Bytecode("main", {"x"}, 8, code);
  return b;
}

TEST(CorruptFileTest, OutOfRangeRegister) {
  EXPECT_EQ(LoadError(WordSeventeen({R(0), R(9)}).Write()),
            "functions[2] 'main': instruction at word 17 (call): argument 1: register 9 out of range (num_registers "
            "8)");
  EXPECT_EQ(LoadError(WordSeventeen({R(-1)}).Write()),
            "functions[2] 'main': instruction at word 17 (call): argument 0: register -1 out of range (num_registers "
            "8)");
}

TEST(CorruptFileTest, OutOfRangeDestinationAndReturnRegisters) {
  ExecutableBuilder b;
  int null = b.Library("vm.builtin.null");
  CodeBuilder code;
  code.Call(8, null, {}).Ret(0);
  b.Bytecode("main", {}, 8, code);
  EXPECT_EQ(LoadError(b.Write()),
            "functions[1] 'main': instruction at word 0 (call): destination register 8 out of range (num_registers 8)");
  ExecutableBuilder r;
  CodeBuilder ret;
  ret.Ret(3);
  r.Bytecode("main", {}, 3, ret);
  EXPECT_EQ(LoadError(r.Write()),
            "functions[0] 'main': instruction at word 0 (ret): register 3 out of range (num_registers 3)");
}

TEST(CorruptFileTest, OutOfRangeConstant) {
  EXPECT_EQ(LoadError(WordSeventeen({C(1)}).Write()),
            "functions[2] 'main': instruction at word 17 (call): argument 0: constant 1 out of range (1 constants)");
}

TEST(CorruptFileTest, OutOfRangeFunction) {
  EXPECT_EQ(LoadError(WordSeventeen({R(0)}, 7).Write()),
            "functions[2] 'main': instruction at word 17 (call): function 7 out of range (3 functions)");
  EXPECT_EQ(LoadError(WordSeventeen({Fn(3)}).Write()),
            "functions[2] 'main': instruction at word 17 (call): argument 0: function 3 out of range (3 functions)");
}

TEST(CorruptFileTest, InvalidOperandKindAndOpcode) {
  EXPECT_EQ(LoadError(WordSeventeen({int64_t{0x0700000000000001}}).Write()),
            "functions[2] 'main': instruction at word 17 (call): argument 0: invalid operand kind 7");
  ExecutableBuilder b;
  CodeBuilder code;
  code.Words({42}).Ret(0);
  b.Bytecode("main", {}, 1, code);
  EXPECT_EQ(LoadError(b.Write()), "functions[0] 'main': instruction at word 0: invalid opcode 42");
}

TEST(CorruptFileTest, JumpTargetsMustBeInstructionsInsideTheFunction) {
  ExecutableBuilder outside;
  CodeBuilder code;
  code.Words({static_cast<int64_t>(vm::Opcode::kGoto), 40}).Ret(0);
  outside.Bytecode("main", {}, 1, code);
  EXPECT_EQ(LoadError(outside.Write()),
            "functions[0] 'main': instruction at word 0 (goto): jump offset 40 lands outside the function (4 words)");

  ExecutableBuilder middle;
  CodeBuilder code2;
  code2.Words({static_cast<int64_t>(vm::Opcode::kIf), 0, 4}).Ret(0);  // word 4 is ret's operand
  middle.Bytecode("main", {"c"}, 1, code2);
  EXPECT_EQ(LoadError(middle.Write()),
            "functions[0] 'main': instruction at word 0 (if): jump target word 4 is not the start of an "
            "instruction");

  ExecutableBuilder backwards;
  CodeBuilder code3;
  code3.Ret(0).Words({static_cast<int64_t>(vm::Opcode::kGoto), -5});
  backwards.Bytecode("main", {}, 1, code3);
  EXPECT_EQ(LoadError(backwards.Write()),
            "functions[0] 'main': instruction at word 2 (goto): jump offset -5 lands outside the function (4 words)");

  ExecutableBuilder huge;
  CodeBuilder code4;
  code4.Words({static_cast<int64_t>(vm::Opcode::kGoto), INT64_MIN}).Ret(0);
  huge.Bytecode("main", {}, 1, code4);
  EXPECT_NE(LoadError(huge.Write()).find("lands outside the function"), std::string::npos);
}

TEST(CorruptFileTest, FallingOffTheEndIsRefused) {
  ExecutableBuilder b;
  int null = b.Library("vm.builtin.null");
  CodeBuilder code;
  code.Call(0, null, {});
  b.Bytecode("main", {}, 1, code);
  EXPECT_EQ(LoadError(b.Write()),
            "functions[1] 'main': the last instruction (call) falls off the end of the code; a function must end in "
            "ret or goto");
  ExecutableBuilder with_if;
  CodeBuilder code2;
  code2.Ret(0).Words({static_cast<int64_t>(vm::Opcode::kIf), 0, -2});
  with_if.Bytecode("main", {"c"}, 1, code2);
  EXPECT_EQ(LoadError(with_if.Write()),
            "functions[0] 'main': the last instruction (if) falls off the end of the code; a function must end in "
            "ret or goto");
  ExecutableBuilder empty;
  empty.Bytecode("main", {}, 1, CodeBuilder());
  EXPECT_EQ(LoadError(empty.Write()), "functions[0] 'main': bytecode function has no code");
}

TEST(CorruptFileTest, TruncatedInstructions) {
  ExecutableBuilder b;
  int null = b.Library("vm.builtin.null");
  CodeBuilder code;
  code.Ret(0).Words({static_cast<int64_t>(vm::Opcode::kCall), 0, null, 5, R(0)});
  b.Bytecode("main", {}, 1, code);
  EXPECT_EQ(LoadError(b.Write()),
            "functions[1] 'main': instruction at word 2 (call): truncated: 5 arguments but 1 words left in the "
            "function");
  ExecutableBuilder fixed;
  CodeBuilder code2;
  code2.Ret(0).Words({static_cast<int64_t>(vm::Opcode::kIf), 0});
  fixed.Bytecode("main", {}, 1, code2);
  EXPECT_EQ(LoadError(fixed.Write()),
            "functions[0] 'main': instruction at word 2 (if): truncated: needs 3 words, 2 left in the function");
  ExecutableBuilder negative;
  CodeBuilder code3;
  code3.Words({static_cast<int64_t>(vm::Opcode::kCall), 0, 0, -1}).Ret(0);
  negative.Library("vm.builtin.null");
  negative.Bytecode("main", {}, 1, code3);
  EXPECT_NE(LoadError(negative.Write()).find("truncated: -1 arguments"), std::string::npos);
}

TEST(CorruptFileTest, FunctionHeadersAreChecked) {
  auto one = [](int32_t params, int32_t registers, std::vector<std::string> names) {
    ExecutableBuilder b;
    CodeBuilder code;
    code.Ret(0);
    int32_t index = b.Bytecode("f", names, registers, code);
    b.spec.functions[static_cast<size_t>(index)].num_params = params;
    return LoadError(b.Write());
  };
  EXPECT_EQ(one(3, 2, {"a", "b", "c"}), "functions[0] 'f': num_params 3 out of range (0 to num_registers 2)");
  EXPECT_EQ(one(0, 1 << 20, {}), "functions[0] 'f': num_registers 1048576 out of range (0 to 65536)");
  EXPECT_EQ(one(1, 2, {"a", "b"}), "functions[0] 'f': 2 param_names for 1 parameters");

  ExecutableBuilder kind;
  CodeBuilder code;
  code.Ret(0);
  kind.Bytecode("f", {}, 1, code);
  kind.spec.functions[0].kind = static_cast<serialization::FunctionKindSpec>(9);
  kind.spec.entry_points.clear();
  EXPECT_EQ(LoadError(kind.Write()), "functions[0] 'f': invalid function kind 9");
}

// The memory plan is descriptive, but inspect prints it: indices and text are checked.
TEST(CorruptFileTest, MemoryPlansAreChecked) {
  auto build = [](serialization::MemoryPlanSpec plan) {
    ExecutableBuilder b;
    CodeBuilder code;
    code.Ret(0);
    int32_t index = b.Bytecode("f", {"x"}, 1, code);
    b.spec.functions[static_cast<size_t>(index)].memory_plan = std::move(plan);
    return b.Write();
  };
  auto with_plan = [&](serialization::MemoryPlanSpec plan) { return LoadError(build(std::move(plan))); };
  serialization::MemoryPlanSpec plan;
  plan.storages.push_back({"arena", "4096", 4096, ""});
  plan.tensors.push_back({"t", "Tensor[(4, 256), f32]", 0, 128});
  plan.pooled.push_back("y: Tensor[(4,), f32]");
  plan.bounds.push_back("n = 1..8");
  auto good = vm::Executable::LoadFromBytes(build(plan));
  ASSERT_TRUE(good.ok()) << good.status().message();
  const serialization::MemoryPlanSpec& read = (*good)->functions()[0].memory_plan;
  ASSERT_EQ(read.storages.size(), 1u);
  EXPECT_EQ(read.storages[0].static_bytes, 4096);
  ASSERT_EQ(read.tensors.size(), 1u);
  EXPECT_EQ(read.tensors[0].type, "Tensor[(4, 256), f32]");
  EXPECT_EQ(read.tensors[0].offset, 128);
  EXPECT_EQ(read.pooled, plan.pooled);
  EXPECT_EQ(read.bounds, plan.bounds);

  serialization::MemoryPlanSpec bad_storage = plan;
  bad_storage.tensors[0].storage = 5;
  EXPECT_EQ(with_plan(bad_storage), "functions[0] 'f': memory_plan.tensors[0]: storage 5 out of range (1 storages)");
  serialization::MemoryPlanSpec bad_offset = plan;
  bad_offset.tensors[0].offset = -64;
  EXPECT_EQ(with_plan(bad_offset), "functions[0] 'f': memory_plan.tensors[0]: negative offset -64");
  serialization::MemoryPlanSpec bad_text = plan;
  bad_text.storages[0].size = std::string("40\x1b[2J96");
  EXPECT_NE(with_plan(bad_text).find("functions[0] 'f': memory_plan.storages[0]: size is not printable text"),
            std::string::npos);
}

// Signatures (1.4) only describe a function, but runtimes and inspect read them:
// they are checked like every other field, and their nesting is bounded.
TEST(CorruptFileTest, SignaturesAreChecked) {
  using serialization::ValueSignatureSpec;
  auto value = [](std::string kind, std::string dtype, int32_t ndim, std::vector<std::string> dims) {
    ValueSignatureSpec v;
    v.kind = std::move(kind);
    v.dtype = std::move(dtype);
    v.ndim = ndim;
    v.dims = std::move(dims);
    v.text = v.kind;
    return v;
  };
  const ValueSignatureSpec tensor = value("tensor", "f32", 2, {"m", "n * 2 + 1"});
  const ValueSignatureSpec prim = value("prim", "i64", -1, {});
  auto build = [](std::vector<ValueSignatureSpec> params, ValueSignatureSpec result) {
    ExecutableBuilder b;
    CodeBuilder code;
    code.Ret(0);
    int32_t index = b.Bytecode("main", {"x", "y"}, 2, code);
    b.spec.functions[static_cast<size_t>(index)].signature =
        serialization::SignatureSpec{std::move(params), std::move(result)};
    return b.Write();
  };
  auto with_param = [&](ValueSignatureSpec param) { return LoadError(build({tensor, std::move(param)}, tensor)); };
  auto tuple_of = [](std::vector<ValueSignatureSpec> fields) {
    ValueSignatureSpec t;
    t.kind = "tuple";
    t.fields = std::move(fields);
    return t;
  };
  EXPECT_NE(LoadOrDie(build({tensor, prim}, tuple_of({tensor, value("object", "", -1, {})}))), nullptr);

  EXPECT_EQ(LoadError(build({tensor, prim, prim}, tensor)),
            "functions[0] 'main': signature has 3 params for 2 parameters");
  EXPECT_EQ(LoadError(build({}, tensor)), "functions[0] 'main': signature has 0 params for 2 parameters");
  EXPECT_EQ(with_param(value("matrix", "", -1, {})),
            "functions[0] 'main': signature.params[1]: unknown kind 'matrix' (expected tensor, shape, prim, tuple or "
            "object)");
  EXPECT_EQ(with_param(value("", "", -1, {})), "functions[0] 'main': signature.params[1]: no kind");
  EXPECT_EQ(with_param(value("tensor", "f33", 1, {"n"})),
            "functions[0] 'main': signature.params[1]: dtype 'f33' is not a data type");
  EXPECT_EQ(with_param(value("tensor", "void", -1, {})),
            "functions[0] 'main': signature.params[1]: dtype 'void' is not a data type");
  EXPECT_EQ(with_param(value("shape", "i64", 1, {"n"})),
            "functions[0] 'main': signature.params[1]: a shape has no dtype");
  EXPECT_EQ(with_param(value("prim", "i64", 0, {})),
            "functions[0] 'main': signature.params[1]: a prim has no ndim or dims");
  EXPECT_EQ(with_param(value("tensor", "f32", -2, {})),
            "functions[0] 'main': signature.params[1]: ndim -2 out of range (-1 or more)");
  EXPECT_EQ(with_param(value("tensor", "f32", -1, {"n"})),
            "functions[0] 'main': signature.params[1]: 1 dims for ndim -1");
  EXPECT_EQ(with_param(value("tensor", "f32", 2, {"n", ""})),
            "functions[0] 'main': signature.params[1]: dims[1] is empty");
  EXPECT_NE(with_param(value("shape", "", 1, {"n\x1b[2J"}))
                .find("functions[0] 'main': signature.params[1]: dims[0] is not printable text"),
            std::string::npos);
  ValueSignatureSpec bad_text = prim;
  bad_text.text = "Prim[\n]";
  EXPECT_NE(with_param(bad_text).find("functions[0] 'main': signature.params[1]: text is not printable text"),
            std::string::npos);
  ValueSignatureSpec object_with_fields = value("object", "", -1, {});
  object_with_fields.fields = {prim};
  EXPECT_EQ(with_param(object_with_fields), "functions[0] 'main': signature.params[1]: an object has no fields");
  EXPECT_EQ(LoadError(build({tensor, prim}, tuple_of({prim, value("tensor", "f32", 2, {"n"})}))),
            "functions[0] 'main': signature.result.fields[1]: 1 dims for ndim 2");

  // Tuples nested as deep as the format allows load; one level more is refused by
  // name, and far deeper by the flatbuffers verifier, before anything recurses.
  auto nested = [&](int levels) {
    ValueSignatureSpec v = prim;
    for (int i = 1; i < levels; ++i) v = tuple_of({std::move(v)});
    return v;
  };
  EXPECT_NE(LoadOrDie(build({tensor, prim}, nested(serialization::kMaxSignatureDepth))), nullptr);
  std::string too_deep = LoadError(build({tensor, prim}, nested(serialization::kMaxSignatureDepth + 1)));
  std::string path = "functions[0] 'main': signature.result";
  for (int i = 1; i <= serialization::kMaxSignatureDepth; ++i) path += ".fields[0]";
  EXPECT_EQ(too_deep, path + ": nested more than 32 levels deep");
  EXPECT_EQ(LoadError(build({tensor, prim}, nested(1000))).rfind("flatbuffer verification failed in functions[0]", 0),
            0u);

  ExecutableBuilder library;
  int32_t null = library.Library("vm.builtin.null");
  library.spec.functions[static_cast<size_t>(null)].signature = serialization::SignatureSpec{{}, prim};
  EXPECT_EQ(LoadError(library.Write()), "functions[0] 'vm.builtin.null': only bytecode functions have a signature");
}

// 1.6: servers look tensors up by the model's input and output names, so there is
// one per parameter and per result tensor, each printable, non-empty and distinct.
TEST(CorruptFileTest, ModelNamesAreChecked) {
  using serialization::ValueSignatureSpec;
  const ValueSignatureSpec tensor{"tensor", "f32", 1, {"n"}, {}, "Tensor[(n,), f32]"};
  const ValueSignatureSpec pair{"tuple", "", -1, {}, {tensor, tensor}, "Tuple[Tensor[(n,), f32], Tensor[(n,), f32]]"};
  auto build = [&](std::vector<std::string> inputs, std::vector<std::string> outputs, bool tuple = true) {
    ExecutableBuilder b;
    CodeBuilder code;
    code.Ret(0);
    int32_t index = b.Bytecode("main", {"x", "y"}, 2, code);
    b.spec.functions[static_cast<size_t>(index)].signature =
        serialization::SignatureSpec{{tensor, tensor}, tuple ? pair : tensor, std::move(inputs), std::move(outputs)};
    return b.Write();
  };
  std::shared_ptr<const vm::Executable> good = LoadOrDie(build({"input.1", "y"}, {"probs", "logits"}));
  ASSERT_NE(good, nullptr);
  EXPECT_EQ(good->functions()[0].input_names, (std::vector<std::string>{"input.1", "y"}));
  EXPECT_EQ(good->functions()[0].output_names, (std::vector<std::string>{"probs", "logits"}));
  EXPECT_NE(LoadOrDie(build({}, {"probs"}, /*tuple=*/false)), nullptr);

  EXPECT_EQ(LoadError(build({"a"}, {})), "functions[0] 'main': signature has 1 input_names for 2 parameters");
  EXPECT_EQ(LoadError(build({"a", "b", "c"}, {})), "functions[0] 'main': signature has 3 input_names for 2 parameters");
  EXPECT_EQ(LoadError(build({}, {"p"})), "functions[0] 'main': signature has 1 output_names for 2 result tuple fields");
  EXPECT_EQ(LoadError(build({}, {"p", "q"}, /*tuple=*/false)),
            "functions[0] 'main': signature has 2 output_names for 1 result");
  EXPECT_EQ(LoadError(build({"a", ""}, {})), "functions[0] 'main': signature.input_names[1] is empty");
  EXPECT_EQ(LoadError(build({}, {"p", "p"})),
            "functions[0] 'main': signature.output_names[1] 'p' repeats output_names[0]");
  EXPECT_EQ(LoadError(build({"a", "b\x1b[2J"}, {})),
            "functions[0] 'main': signature.input_names[1] is not printable text or longer than 4096 bytes "
            "('b\\x1b[2J')");
  EXPECT_EQ(
      LoadError(build({}, {"p", std::string(4097, 'q')}))
          .rfind("functions[0] 'main': signature.output_names[1] is not printable text or longer than 4096 bytes", 0),
      0u);
}

// The writer always writes a result; a file may still lack one. (Written as a 1.4
// file: this one has no checksums.)
TEST(CorruptFileTest, SignatureWithoutAResultIsRefused) {
  ::flatbuffers::FlatBufferBuilder b;
  auto code = b.CreateVector(std::vector<int64_t>{static_cast<int64_t>(vm::Opcode::kRet), 0});
  auto name = b.CreateString("main");
  auto signature = fb::CreateSignature(b);  // no params (num_params 0), no result
  auto function = fb::CreateFunction(b, name, fb::FunctionKind::Bytecode, /*num_params=*/0, /*num_registers=*/1,
                                     /*param_names=*/0, code, /*module_index=*/-1, /*symbol=*/0, /*backend=*/0,
                                     /*memory_plan=*/0, /*device_index=*/-1, signature);
  auto functions = b.CreateVector(std::vector<::flatbuffers::Offset<fb::Function>>{function});
  auto entry_points = b.CreateVector(std::vector<int32_t>{0});
  auto root = fb::CreateExecutable(b, /*format_major=*/1, /*format_minor=*/4, b.CreateString("test"), functions,
                                   /*constants=*/0, /*native_modules=*/0, entry_points);
  fb::FinishExecutableBuffer(b, root);
  EXPECT_EQ(LoadError(std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize())),
            "functions[0] 'main': signature has no result");
}

// Devices (1.3): the table's names become file names of plug-ins, and device
// functions must point into it.
TEST(CorruptFileTest, DevicesAndDeviceFunctionsAreChecked) {
  auto with_device = [](const std::string& device_name, int32_t device_index, const std::string& kernel) {
    ExecutableBuilder b;
    b.spec.devices.push_back({device_name, ""});
    serialization::FunctionSpec f;
    f.name = "npu.kernel";
    f.kind = serialization::FunctionKindSpec::kDevice;
    f.device_index = device_index;
    f.symbol = kernel;
    b.spec.functions.push_back(std::move(f));
    CodeBuilder code;
    code.Ret(0);
    b.Bytecode("main", {"x"}, 1, code);
    vm::LoadOptions inspect;
    inspect.resolve = false;  // no plug-in needed to verify
    auto exe = vm::Executable::LoadFromBytes(b.Write(), inspect);
    return exe.ok() ? std::string() : exe.status().message();
  };
  EXPECT_EQ(with_device("sim_npu", 0, "dense"), "");
  EXPECT_EQ(with_device("sim_npu", 1, "dense"), "functions[0] 'npu.kernel': device_index 1 out of range (1 devices)");
  EXPECT_EQ(with_device("sim_npu", -1, "dense"), "functions[0] 'npu.kernel': device_index -1 out of range (1 devices)");
  EXPECT_EQ(with_device("sim_npu", 0, ""),
            "functions[0] 'npu.kernel': device function has no device kernel name (symbol)");
  EXPECT_EQ(with_device("../../tmp/evil", 0, "dense"),
            "devices[0]: device name '../../tmp/evil' may only hold letters, digits and '_'");
  EXPECT_EQ(with_device("", 0, "dense"), "devices[0]: device has no name");
}

TEST(CorruptFileTest, CallsToBytecodeFunctionsMustPassEveryParameter) {
  ExecutableBuilder b;
  int callee = b.Declare("callee", {"a", "b"}, 2, false);
  CodeBuilder code;
  code.Call(0, callee, {Imm(1)}).Ret(0);
  b.Bytecode("main", {}, 1, code);
  EXPECT_EQ(LoadError(b.Write()),
            "functions[1] 'main': instruction at word 0 (call): call to functions[0] 'callee' passes 1 arguments, it "
            "takes 2");
}

TEST(CorruptFileTest, KernelAndLibraryEntriesAreChecked) {
  ExecutableBuilder b;
  b.Kernel("k", 2, "sym");
  EXPECT_EQ(LoadError(b.Write()), "functions[0] 'k': compiled kernel module_index 2 out of range (0 native modules)");
  ExecutableBuilder s;
  s.spec.native_modules.push_back(serialization::NativeModuleSpec{"elf-shared-object", "", "", {1, 2}, {}, {}, ""});
  s.Kernel("k", 0, "");
  EXPECT_EQ(LoadError(s.Write()), "functions[0] 'k': compiled kernel has no symbol");
  ExecutableBuilder l;
  l.Library("");
  EXPECT_EQ(LoadError(l.Write()), "functions[0]: library function has no name");
}

TEST(CorruptFileTest, ConstantsAreChecked) {
  auto with = [](serialization::ConstantSpec c) {
    ExecutableBuilder b;
    b.Int(0);
    b.Constant(std::move(c));
    return LoadError(b.Write());
  };
  serialization::TensorConstantSpec t{DataType::F32(), {2, 3}, std::make_shared<const std::vector<uint8_t>>(20)};
  EXPECT_EQ(with(t), "constants[1]: tensor data has 20 bytes, expected 24 (6 elements of f32)");
  t = {DataType::F32(), {2, -3}, {}};
  EXPECT_EQ(with(t), "constants[1]: tensor dimension 1 is negative (-3)");
  t = {DataType(DataType::Code::kFloat, 12), {1}, std::make_shared<const std::vector<uint8_t>>(2)};
  EXPECT_EQ(with(t), "constants[1]: invalid tensor dtype (code 2, bits 12)");
  t = {DataType::F32(), {int64_t{1} << 40, int64_t{1} << 40}, {}};
  EXPECT_EQ(with(t), "constants[1]: tensor shape is too large");
  EXPECT_EQ(with(serialization::DataTypeConstantSpec{DataType(static_cast<DataType::Code>(9), 8)}),
            "constants[1]: invalid dtype (code 9, bits 8)");
}

TEST(CorruptFileTest, EntryPointsAndModulesAreChecked) {
  ExecutableBuilder b;
  b.Library("vm.builtin.null");
  b.spec.entry_points = {4};
  EXPECT_EQ(LoadError(b.Write()), "entry_points[0]: function 4 out of range (1 functions)");
  b.spec.entry_points = {0};
  EXPECT_EQ(LoadError(b.Write()), "entry_points[0]: functions[0] 'vm.builtin.null' is not a bytecode function");
  ExecutableBuilder m;
  m.spec.native_modules.push_back(serialization::NativeModuleSpec{"pe-dll", "", "", {1}, {}, {}, ""});
  EXPECT_EQ(LoadError(m.Write()), "native_modules[0]: unsupported format 'pe-dll' (expected 'elf-shared-object')");
  m.spec.native_modules[0] = serialization::NativeModuleSpec{};
  EXPECT_EQ(LoadError(m.Write()), "native_modules[0]: no code");
}

// 1.7: an alternative module stands in for an earlier one that is not itself
// an alternative, with the same symbols; functions name the first of a group.
TEST(CorruptFileTest, AlternativeModulesAreChecked) {
  auto module = [](std::vector<std::string> symbols, int32_t alternative_of) {
    serialization::NativeModuleSpec m{"elf-shared-object", "", "", {1, 2}, std::move(symbols), {}, ""};
    m.alternative_of = alternative_of;
    return m;
  };
  auto with = [&](std::vector<serialization::NativeModuleSpec> modules, int32_t kernel_module = 0) {
    ExecutableBuilder b;
    b.spec.native_modules = std::move(modules);
    b.Kernel("k", kernel_module, "a");
    return LoadError(b.Write());
  };
  EXPECT_EQ(with({module({"a"}, -1), module({"a"}, 1)}),
            "native_modules[1]: alternative_of 1 must name an earlier module (0..0)");
  EXPECT_EQ(with({module({"a"}, -1), module({"a"}, -7)}),
            "native_modules[1]: alternative_of -7 must name an earlier module (0..0)");
  EXPECT_EQ(with({module({"a"}, -1), module({"a"}, 0), module({"a"}, 1)}),
            "native_modules[2]: alternative_of names native_modules[1], itself an alternative of native_modules[0]");
  EXPECT_EQ(with({module({"a", "b"}, -1), module({"a"}, 0)}),
            "native_modules[1]: an alternative of native_modules[0] must export the same symbols");
  EXPECT_EQ(with({module({"a"}, -1), module({"a"}, 0)}, 1),
            "functions[0] 'k': compiled kernel names native_modules[1], an alternative of native_modules[0]; "
            "functions name the first module of a group");
}

// Native code is checked even when the other checksums are skipped: damaged
// machine code could crash the process. Files before 1.5 have a CRC-32 instead.
TEST(CorruptFileTest, DamagedNativeCodeFailsItsChecksum) {
  ExecutableBuilder b;
  const std::vector<uint8_t> code = {0x7f, 'E', 'L', 'F', 0xde, 0xad, 0xbe, 0xef, 0x5a};
  b.spec.native_modules.push_back(serialization::NativeModuleSpec{"elf-shared-object", "", "", code, {}, {}, ""});
  auto damage_code = [&](std::vector<uint8_t> bytes) {
    auto at = std::search(bytes.begin(), bytes.end(), code.begin(), code.end());
    EXPECT_NE(at, bytes.end());
    if (at != bytes.end()) at[5] ^= 0x01;
    return std::pair(bytes, at - bytes.begin());
  };
  auto [damaged, offset] = damage_code(b.Write());
  const std::string expected = "checksum mismatch in native_modules[0] (code, 9 bytes at offset " +
                               std::to_string(offset) + "): the file is damaged";
  EXPECT_EQ(LoadError(damaged), expected);
  vm::LoadOptions unchecked;
  unchecked.verify_checksums = false;
  auto skipped = vm::Executable::LoadFromBytes(damaged, unchecked);
  ASSERT_FALSE(skipped.ok());
  EXPECT_EQ(skipped.status().message(), expected);

  serialization::WriteOptions format_1_4;
  format_1_4.format_minor = 4;
  format_1_4.checksums = false;
  auto [old_damaged, old_offset] = damage_code(serialization::WriteExecutable(b.spec, format_1_4));
  // zlib.crc32 in Python of the code before and after the flip.
  EXPECT_EQ(LoadError(old_damaged),
            "native_modules[0]: code checksum mismatch (stored 0xe698a66c, computed 0x5e24c109); the file is "
            "damaged");
}

TEST(CorruptFileTest, UnalignedInputIsCopiedAndLoads) {
  RegisterTestFunctions();
  std::vector<uint8_t> bytes = SmallExecutable().Write();
  std::vector<uint8_t> shifted(bytes.size() + 1);
  std::memcpy(shifted.data() + 1, bytes.data(), bytes.size());
  EXPECT_EQ(LoadAndMaybeRun(std::span<const uint8_t>(shifted.data() + 1, bytes.size())), "");
}

TEST(CorruptFileTest, HostileProgramsFailAtRunTimeWithoutCrashing) {
  // Well-formed bytecode whose builtins receive nonsense: every case is a clean error.
  ExecutableBuilder b;
  int make = b.Library("vm.builtin.make_shape");
  int alloc = b.Library("vm.builtin.alloc_tensor");
  int heap = b.Library("vm.builtin.alloc_shape_heap");
  int match = b.Library("vm.builtin.match_shape");
  int f32 = b.DType(DataType::F32());
  int w = b.Tensor<int64_t>(DataType::I64(), {2}, {1, 2});
  int ctx = b.String("ctx");
  int null = b.Library("vm.builtin.null");
  CodeBuilder huge;  // constant dims only, so the heap is Null
  huge.Call(1, null, {})
      .Call(0, make, {R(1), Imm(2), Imm(0), Imm(int64_t{1} << 40), Imm(0), Imm(int64_t{1} << 40)})
      .Call(0, alloc, {R(0), C(f32)})
      .Ret(0);
  b.Bytecode("huge", {}, 2, huge);
  CodeBuilder big_heap;
  big_heap.Call(0, heap, {Imm(int64_t{1} << 54)}).Ret(0);
  b.Bytecode("big_heap", {}, 1, big_heap);
  CodeBuilder write_constant;  // match_shape storing into a constant used as the heap
  write_constant.Call(kVoid, match, {C(w), C(w), Imm(1), Imm(1), Imm(0), C(ctx), C(ctx)}).Ret(0);
  b.Bytecode("write_constant", {"x"}, 1, write_constant);
  auto exe = LoadOrDie(b.Write());
  ASSERT_NE(exe, nullptr);
  vm::VirtualMachine machine(exe);
  auto r1 = machine.Invoke("huge", {});
  ASSERT_FALSE(r1.ok());
  EXPECT_NE(r1.status().message().find("vm.builtin.alloc_tensor: tensor of shape"), std::string::npos)
      << r1.status().message();
  auto r2 = machine.Invoke("big_heap", {});
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(r2.status().message(),
            "functions[6] 'big_heap': instruction at word 0 (call): vm.builtin.alloc_shape_heap: size "
            "18014398509481984 out of range (0 to 16777216)");
  Value x = Value::FromInt(0);
  auto r3 = machine.Invoke("write_constant", std::span<const Value>(&x, 1));
  ASSERT_FALSE(r3.ok());
  EXPECT_EQ(r3.status().message(),
            "functions[7] 'write_constant': instruction at word 0 (call): vm.builtin.match_shape: the shape heap is a "
            "read-only constant");
}

}  // namespace
}  // namespace strata::testing
