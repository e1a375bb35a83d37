// VM codegen: the function table, verifiable bytecode (every instruction decoded
// with the vm/bytecode/bytecode.h helpers), operand kinds and the deduplicated constant pool.
#include "compiler/backend/vm/vm_codegen.h"

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/driver/pipeline.h"
#include "tests/transform/test_util.h"
#include "vm/bytecode/bytecode.h"

namespace strata::backend {
namespace {

using serialization::ExecutableSpec;
using serialization::FunctionKindSpec;
using serialization::FunctionSpec;
using transform::testing::Parse;
using vm::OperandKind;

struct Instruction {
  size_t pc;
  vm::Opcode op;
  std::vector<int64_t> words;  // every word after the opcode
};

// Decodes every instruction of a bytecode function and checks each index
// against its bounds: registers, functions, constants, jump targets.
std::vector<Instruction> DecodeAndVerify(const ExecutableSpec& exe, const FunctionSpec& fn) {
  std::vector<Instruction> out;
  std::set<size_t> starts;
  const std::vector<int64_t>& code = fn.code;
  auto reg_ok = [&](int64_t r) { return r >= 0 && r < fn.num_registers; };
  size_t pc = 0;
  while (pc < code.size()) {
    int64_t opword = code[pc];
    EXPECT_TRUE(opword >= 0 && opword < static_cast<int64_t>(vm::Opcode::kNumOpcodes))
        << fn.name << ": bad opcode at " << pc;
    if (!(opword >= 0 && opword < static_cast<int64_t>(vm::Opcode::kNumOpcodes))) return out;
    auto op = static_cast<vm::Opcode>(opword);
    size_t size = static_cast<size_t>(vm::OpcodeFixedWords(op));
    if (op == vm::Opcode::kCall && pc + 3 < code.size()) size += static_cast<size_t>(code[pc + 3]);
    EXPECT_LE(pc + size, code.size()) << fn.name << ": instruction at " << pc << " runs past the end";
    if (pc + size > code.size()) return out;
    out.push_back({pc, op, std::vector<int64_t>(code.begin() + pc + 1, code.begin() + pc + size)});
    starts.insert(pc);
    pc += size;
  }
  for (const Instruction& ins : out) {
    switch (ins.op) {
      case vm::Opcode::kCall: {
        int64_t dst = ins.words[0];
        EXPECT_TRUE(dst == vm::kVoidRegister || reg_ok(dst)) << fn.name << ": call dst " << dst << " at " << ins.pc;
        EXPECT_TRUE(ins.words[1] >= 0 && ins.words[1] < static_cast<int64_t>(exe.functions.size()))
            << fn.name << ": call of function " << ins.words[1] << " at " << ins.pc;
        for (size_t i = 3; i < ins.words.size(); ++i) {
          int64_t value = vm::DecodeOperandValue(ins.words[i]);
          switch (vm::DecodeOperandKind(ins.words[i])) {
            case OperandKind::kRegister:
              EXPECT_TRUE(reg_ok(value)) << fn.name << ": register operand " << value << " at " << ins.pc;
              break;
            case OperandKind::kConstant:
              EXPECT_TRUE(value >= 0 && value < static_cast<int64_t>(exe.constants.size()))
                  << fn.name << ": constant operand " << value << " at " << ins.pc;
              break;
            case OperandKind::kFunction:
              EXPECT_TRUE(value >= 0 && value < static_cast<int64_t>(exe.functions.size()))
                  << fn.name << ": function operand " << value << " at " << ins.pc;
              break;
            case OperandKind::kImmediate: break;
            default: ADD_FAILURE() << fn.name << ": bad operand kind at " << ins.pc;
          }
        }
        break;
      }
      case vm::Opcode::kRet: EXPECT_TRUE(reg_ok(ins.words[0])) << fn.name << ": ret register " << ins.words[0]; break;
      case vm::Opcode::kGoto:
        EXPECT_TRUE(starts.count(ins.pc + ins.words[0])) << fn.name << ": goto target at " << ins.pc;
        break;
      case vm::Opcode::kIf:
        EXPECT_TRUE(reg_ok(ins.words[0])) << fn.name << ": if register at " << ins.pc;
        EXPECT_TRUE(starts.count(ins.pc + ins.words[1])) << fn.name << ": if target at " << ins.pc;
        break;
      default: ADD_FAILURE() << "unknown opcode";
    }
  }
  EXPECT_FALSE(out.empty());
  if (!out.empty()) {
    EXPECT_EQ(out.back().op, vm::Opcode::kRet) << fn.name << " does not end with ret";
  }
  return out;
}

int FunctionIndex(const ExecutableSpec& exe, const std::string& name) {
  for (size_t i = 0; i < exe.functions.size(); ++i) {
    if (exe.functions[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

ExecutableSpec Compile(const std::string& text) {
  StatusOr<ir::IRModule> lowered = driver::DefaultPipeline().Run(Parse(text));
  EXPECT_TRUE(lowered.ok()) << lowered.status().message();
  if (!lowered.ok()) return {};
  StatusOr<ExecutableSpec> exe = CodegenVM(*lowered);
  EXPECT_TRUE(exe.ok()) << exe.status().message();
  return exe.ok() ? std::move(exe).value() : ExecutableSpec();
}

std::string ReadExample(const std::string& name) {
  std::ifstream in(std::string(STRATA_SOURCE_DIR) + "/examples/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(VMCodegenTest, MatmulReluFunctionTableAndBytecode) {
  ExecutableSpec exe = Compile(ReadExample("matmul_relu.sir"));
  ASSERT_GE(exe.functions.size(), 3u);
  // Graph functions first, then kernels, then library functions.
  EXPECT_EQ(exe.functions[0].name, "main");
  EXPECT_EQ(exe.functions[0].kind, FunctionKindSpec::kBytecode);
  EXPECT_EQ(exe.functions[0].num_params, 2);
  EXPECT_EQ(exe.functions[0].param_names, (std::vector<std::string>{"x", "w"}));
  EXPECT_EQ(exe.functions[1].name, "tir_matmul");
  EXPECT_EQ(exe.functions[1].kind, FunctionKindSpec::kCompiledKernel);
  EXPECT_EQ(exe.functions[1].symbol, "tir_matmul");
  EXPECT_EQ(exe.functions[1].module_index, 0);
  EXPECT_EQ(exe.functions[2].name, "tir_relu");
  EXPECT_EQ(exe.entry_points, (std::vector<int32_t>{0}));
  std::set<std::string> libraries;
  for (size_t i = 3; i < exe.functions.size(); ++i) {
    // The shape function computing the planned storage's size (m * n * 4) is a kernel.
    if (exe.functions[i].name.rfind("shape_func_", 0) == 0) {
      EXPECT_EQ(exe.functions[i].kind, FunctionKindSpec::kCompiledKernel);
      continue;
    }
    EXPECT_EQ(exe.functions[i].kind, FunctionKindSpec::kLibrary);
    EXPECT_TRUE(libraries.insert(exe.functions[i].name).second) << "library listed twice: " << exe.functions[i].name;
  }
  // Shape handling, the planned intermediate (alloc_storage + a view), the pooled
  // result (alloc_tensor) and the kills (null).
  EXPECT_EQ(libraries,
            (std::set<std::string>{"vm.builtin.alloc_shape_heap", "vm.builtin.check_tensor_info", "vm.builtin.shape_of",
                                   "vm.builtin.check_shape_info", "vm.builtin.match_shape", "vm.builtin.make_shape",
                                   "vm.builtin.alloc_storage", "vm.builtin.alloc_tensor_from_storage",
                                   "vm.builtin.alloc_tensor", "vm.builtin.null"}));

  std::vector<Instruction> code = DecodeAndVerify(exe, exe.functions[0]);
  // The two kernels are called with (inputs..., output) and their results discarded.
  int kernel_calls = 0;
  for (const Instruction& ins : code) {
    if (ins.op != vm::Opcode::kCall || (ins.words[1] != 1 && ins.words[1] != 2)) continue;
    ++kernel_calls;
    EXPECT_EQ(ins.words[0], vm::kVoidRegister);
    EXPECT_EQ(ins.words[2], ins.words[1] == 1 ? 3 : 2);
  }
  EXPECT_EQ(kernel_calls, 2);
  // Parameters are registers 0 and 1: the first check reads register 0.
  ASSERT_GE(code.size(), 2u);
  EXPECT_EQ(code[1].words[3], vm::EncodeOperand(OperandKind::kRegister, 0));
}

TEST(VMCodegenTest, MemoryAndDeviceOperatorsLowerToBuiltinsWithADeviceIndex) {
  // The graph passes leave memory and device operators; the VM backend alone
  // names builtins, and turns a device's name into its index in the table.
  StatusOr<ir::IRModule> lowered = transform::testing::RunPasses(Parse(R"(
func @main(x: Tensor[(n,), f32]) -> Tensor[(n,), f32] {
  _c: Tuple[] = memory.check_bound(shape(n), 1, 16, "main: dimension 'n'")
  host_arena: Object = memory.alloc_storage(64, 64)
  device_arena: Object = memory.alloc_storage(64, 64, "sim_npu")
  t: Tensor[(n,), f32] = memory.alloc_tensor(device_arena, 0, shape(n), dtype(f32))
  h: Tensor[(n,), f32] = memory.alloc_tensor(host_arena, 0, shape(n), dtype(f32))
  d: Tensor[(n,), f32] = device.to_device(x, "sim_npu")
  _: Tuple[] = call_packed("test.add", d, d, t)
  o: Tensor[(n,), f32] = device.alloc_tensor(shape(n), dtype(f32), "sim_npu")
  back: Tensor[(n,), f32] = device.to_host(t)
  return back
}
)"),
                                                                 {"Normalize", "VMShapeLower"});
  ASSERT_TRUE(lowered.ok()) << lowered.status().message();
  StatusOr<ExecutableSpec> exe = CodegenVM(*lowered);
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  ASSERT_EQ(exe->devices.size(), 1u);
  EXPECT_EQ(exe->devices[0].name, "sim_npu");
  std::map<std::string, int> library;
  for (size_t i = 0; i < exe->functions.size(); ++i) library[exe->functions[i].name] = static_cast<int>(i);
  for (const char* name : {"vm.builtin.check_bound", "vm.builtin.alloc_storage", "vm.builtin.alloc_tensor_from_storage",
                           "vm.builtin.to_device", "vm.builtin.alloc_device_tensor", "vm.builtin.to_host"}) {
    EXPECT_TRUE(library.count(name)) << name << " is not in the function table";
  }
  for (const auto& [name, index] : library) EXPECT_EQ(name.find("memory."), std::string::npos) << name;

  // Calls of the placing builtins end with the device's index, an immediate;
  // the host storage has no device operand.
  const int64_t device_zero = vm::EncodeOperand(OperandKind::kImmediate, 0);
  std::map<std::string, std::vector<size_t>> operand_counts;
  for (const Instruction& ins : DecodeAndVerify(*exe, exe->functions[FunctionIndex(*exe, "main")])) {
    if (ins.op != vm::Opcode::kCall) continue;
    const std::string& callee = exe->functions[ins.words[1]].name;
    operand_counts[callee].push_back(ins.words.size() - 3);
    if (callee == "vm.builtin.to_device" || callee == "vm.builtin.alloc_device_tensor" ||
        (callee == "vm.builtin.alloc_storage" && ins.words.size() - 3 == 3)) {
      EXPECT_EQ(ins.words.back(), device_zero) << callee;
    }
  }
  EXPECT_EQ(operand_counts["vm.builtin.alloc_storage"], (std::vector<size_t>{2, 3}));
  EXPECT_EQ(operand_counts["vm.builtin.to_host"], (std::vector<size_t>{1}));
}

TEST(VMCodegenTest, ConstantsAreDeduplicated) {
  ExecutableSpec exe = Compile(R"(
func @main(x: Tensor[(2, 3), f32]) -> Object {
  a = call_packed("lib.f", "hello", "hello", 1.5, 1.5, dtype(f32), dtype(f32), shape(2, 3), shape(2, 3))
  b = call_packed("lib.g", const(Tensor[(2,), f32], [1, 2]), const(Tensor[(2,), f32], [1, 2]), const(Tensor[(2,), f32], [1, 3]))
  return b
}
)");
  // One entry per distinct value: the match_shape of x adds its contexts and dims as strings.
  int strings = 0, floats = 0, dtypes = 0, shapes = 0, tensors = 0;
  for (size_t i = 0; i < exe.constants.size(); ++i) {
    const auto& c = exe.constants[i];
    strings += std::holds_alternative<std::string>(c);
    floats += std::holds_alternative<double>(c);
    dtypes += std::holds_alternative<serialization::DataTypeConstantSpec>(c);
    shapes += std::holds_alternative<serialization::ShapeConstantSpec>(c);
    tensors += std::holds_alternative<serialization::TensorConstantSpec>(c);
  }
  EXPECT_EQ(strings, 5);  // "hello", "main: parameter 'x'", "2", "3", "main: parameter 'x' (match_shape)"
  EXPECT_EQ(floats, 1);
  EXPECT_EQ(dtypes, 1);  // dtype(f32), shared with check_tensor_info
  EXPECT_EQ(shapes, 1);
  EXPECT_EQ(tensors, 2);
  std::vector<Instruction> code = DecodeAndVerify(exe, exe.functions[0]);
  // The two "hello" operands of lib.f are the same constant.
  int f = FunctionIndex(exe, "lib.f");
  for (const Instruction& ins : code) {
    if (ins.op != vm::Opcode::kCall || ins.words[1] != f) continue;
    ASSERT_EQ(ins.words.size(), 3u + 8u);
    EXPECT_EQ(ins.words[3], ins.words[4]);
    EXPECT_EQ(vm::DecodeOperandKind(ins.words[3]), OperandKind::kConstant);
  }
}

TEST(VMCodegenTest, EmptyTensorConstantsAreDeduplicatedByShape) {
  // An ONNX model with a zero-sized initializer reached the constant table with
  // no bytes at all (a fuzzed Trilu's k): hashing them must not touch memory.
  ExecutableSpec exe = Compile(R"(
func @main(x: Tensor[(2, 3), f32]) -> Object {
  b = call_packed("lib.g", const(Tensor[(0,), f32], []), const(Tensor[(0,), f32], []), const(Tensor[(0, 2), f32], []))
  return b
}
)");
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& c : exe.constants) {
    if (const auto* t = std::get_if<serialization::TensorConstantSpec>(&c)) {
      EXPECT_TRUE(t->bytes().empty());
      shapes.push_back(t->shape);
    }
  }
  EXPECT_EQ(shapes, (std::vector<std::vector<int64_t>>{{0}, {0, 2}}));
}

TEST(VMCodegenTest, SmallIntegersAreImmediatesLargeOnesConstants) {
  ExecutableSpec exe = Compile(R"(
func @main(x: Tensor[(2,), f32]) -> Object {
  a = call_packed("lib.f", 7, -3, 4611686018427387904)
  return a
}
)");
  std::vector<Instruction> code = DecodeAndVerify(exe, exe.functions[0]);
  int f = FunctionIndex(exe, "lib.f");
  bool found = false;
  for (const Instruction& ins : code) {
    if (ins.op != vm::Opcode::kCall || ins.words[1] != f) continue;
    found = true;
    EXPECT_EQ(ins.words[3], vm::EncodeOperand(OperandKind::kImmediate, 7));
    EXPECT_EQ(vm::DecodeOperandValue(ins.words[4]), -3);
    EXPECT_EQ(vm::DecodeOperandKind(ins.words[5]), OperandKind::kConstant);
    EXPECT_EQ(std::get<int64_t>(exe.constants[vm::DecodeOperandValue(ins.words[5])]), 4611686018427387904);
  }
  EXPECT_TRUE(found);
}

TEST(VMCodegenTest, IfWritesOneResultRegisterFromBothBranches) {
  ExecutableSpec exe = Compile(R"(
prim_func @relu(A: Buffer[(n,), f32], B: Buffer[(n,), f32]) {
  for i in range(0, n) {
    B[i] = max(A[i], 0.0)
  }
}
func @main(c: Prim[bool], x: Tensor[(n,), f32]) -> Tensor[(n,), f32] {
  y = if c {
    r = call_tir(@relu, (x,), Tensor[(n,), f32])
    r
  } else {
    x
  }
  return y
}
)");
  std::vector<Instruction> code = DecodeAndVerify(exe, exe.functions[0]);
  int copy = FunctionIndex(exe, "vm.builtin.copy");
  ASSERT_GE(copy, 0);
  const Instruction* branch = nullptr;
  for (const Instruction& ins : code) {
    if (ins.op == vm::Opcode::kIf) branch = &ins;
  }
  ASSERT_TRUE(branch != nullptr);
  EXPECT_EQ(branch->words[0], 0);  // the condition is parameter c
  std::vector<const Instruction*> copies;
  const Instruction* jump = nullptr;
  for (const Instruction& ins : code) {
    if (ins.pc > branch->pc && ins.op == vm::Opcode::kCall && ins.words[1] == copy) copies.push_back(&ins);
    if (ins.pc > branch->pc && ins.op == vm::Opcode::kGoto) jump = &ins;
  }
  ASSERT_EQ(copies.size(), 2u);
  ASSERT_TRUE(jump != nullptr);
  EXPECT_EQ(copies[0]->words[0], copies[1]->words[0]);  // same destination register
  // then-branch: ... copy, goto end; else-branch starts right after the goto.
  EXPECT_LT(copies[0]->pc, jump->pc);
  EXPECT_EQ(branch->pc + branch->words[1], jump->pc + 2);
  EXPECT_GT(copies[1]->pc, jump->pc);
  EXPECT_EQ(jump->pc + jump->words[0], copies[1]->pc + 4 + 1);  // just past the else copy
  // The else branch returns the parameter x (register 1) itself.
  EXPECT_EQ(copies[1]->words[3], vm::EncodeOperand(OperandKind::kRegister, 1));
  // ret returns the if's result register.
  EXPECT_EQ(code.back().words[0], copies[0]->words[0]);
}

TEST(VMCodegenTest, GraphFunctionCallsBytecodeFunction) {
  ExecutableSpec exe = Compile(R"(
func @helper(a: Tensor[(n,), f32]) -> Tensor[(n,), f32] {
  return a
}
func @main(x: Tensor[(m,), f32]) -> Tensor[(m,), f32] {
  y = @helper(x)
  return y
}
)");
  ASSERT_EQ(FunctionIndex(exe, "helper"), 0);
  ASSERT_EQ(FunctionIndex(exe, "main"), 1);
  EXPECT_EQ(exe.entry_points, (std::vector<int32_t>{0, 1}));
  DecodeAndVerify(exe, exe.functions[0]);
  std::vector<Instruction> code = DecodeAndVerify(exe, exe.functions[1]);
  bool calls_helper = false;
  for (const Instruction& ins : code) {
    if (ins.op == vm::Opcode::kCall && ins.words[1] == 0) {
      calls_helper = true;
      EXPECT_EQ(ins.words[2], 1);
      EXPECT_EQ(ins.words[3], vm::EncodeOperand(OperandKind::kRegister, 0));
      EXPECT_EQ(code.back().words[0], ins.words[0]);  // main returns the call's result
    }
  }
  EXPECT_TRUE(calls_helper);
}

TEST(VMCodegenTest, TupleOutputsAndItemsUseTupleBuiltins) {
  ExecutableSpec exe = Compile(R"(
prim_func @split(A: Buffer[(n, 2), f32], B: Buffer[(n,), f32], C: Buffer[(n,), f32]) {
  for i in range(0, n) {
    B[i] = A[i, 0]
    C[i] = A[i, 1]
  }
}
func @main(x: Tensor[(n, 2), f32]) -> Tensor[(n,), f32] {
  t = call_tir(@split, (x,), Tuple[Tensor[(n,), f32], Tensor[(n,), f32]])
  second = t[1]
  return second
}
)");
  std::vector<Instruction> code = DecodeAndVerify(exe, exe.functions[0]);
  int tuple = FunctionIndex(exe, "vm.builtin.tuple");
  int getitem = FunctionIndex(exe, "vm.builtin.tuple_getitem");
  ASSERT_GE(tuple, 0);
  ASSERT_GE(getitem, 0);
  for (const Instruction& ins : code) {
    if (ins.op == vm::Opcode::kCall && ins.words[1] == getitem) {
      EXPECT_EQ(ins.words[4], vm::EncodeOperand(OperandKind::kImmediate, 1));
    }
  }
}

using serialization::ValueSignatureSpec;

void ExpectSignature(const ValueSignatureSpec& v, const std::string& kind, const std::string& dtype, int32_t ndim,
                     const std::vector<std::string>& dims, const std::string& text, size_t num_fields = 0) {
  EXPECT_EQ(v.kind, kind) << text;
  EXPECT_EQ(v.dtype, dtype) << text;
  EXPECT_EQ(v.ndim, ndim) << text;
  EXPECT_EQ(v.dims, dims) << text;
  EXPECT_EQ(v.text, text);
  EXPECT_EQ(v.fields.size(), num_fields) << text;
}

TEST(VMCodegenTest, SignaturesRecordTheAnnotationsOfParametersAndResult) {
  ExecutableSpec exe = Compile(R"(
func @main(x: Tensor[(batch, n), f32], y: Tensor[(batch, n * 2 + 1), f32], k: Prim[i64], s: Shape[ndim=2],
           t: Tuple[Tensor[ndim=3, f16], Object], u: Tensor) -> Tuple[Tensor[(batch, n * 2 + 1), f32], Tuple[Shape, Prim[i64]]] {
  inner = (s, k)
  r = (y, inner)
  return r
}
)");
  ASSERT_EQ(FunctionIndex(exe, "main"), 0);
  const FunctionSpec& main = exe.functions[0];
  ASSERT_TRUE(main.signature.has_value());
  const std::vector<ValueSignatureSpec>& params = main.signature->params;
  ASSERT_EQ(params.size(), 6u);
  ExpectSignature(params[0], "tensor", "f32", 2, {"batch", "n"}, "Tensor[(batch, n), f32]");
  ExpectSignature(params[1], "tensor", "f32", 2, {"batch", "n * 2 + 1"}, "Tensor[(batch, n * 2 + 1), f32]");
  ExpectSignature(params[2], "prim", "i64", -1, {}, "Prim[i64]");
  ExpectSignature(params[3], "shape", "", 2, {}, "Shape[ndim=2]");
  ExpectSignature(params[4], "tuple", "", -1, {}, "Tuple[Tensor[ndim=3, f16], Object]", 2);
  ASSERT_EQ(params[4].fields.size(), 2u);
  ExpectSignature(params[4].fields[0], "tensor", "f16", 3, {}, "Tensor[ndim=3, f16]");
  ExpectSignature(params[4].fields[1], "object", "", -1, {}, "Object");
  ExpectSignature(params[5], "tensor", "", -1, {}, "Tensor");
  const ValueSignatureSpec& result = main.signature->result;
  ExpectSignature(result, "tuple", "", -1, {}, "Tuple[Tensor[(batch, n * 2 + 1), f32], Tuple[Shape, Prim[i64]]]", 2);
  ASSERT_EQ(result.fields.size(), 2u);
  ExpectSignature(result.fields[0], "tensor", "f32", 2, {"batch", "n * 2 + 1"}, "Tensor[(batch, n * 2 + 1), f32]");
  ExpectSignature(result.fields[1], "tuple", "", -1, {}, "Tuple[Shape, Prim[i64]]", 2);
  ASSERT_EQ(result.fields[1].fields.size(), 2u);
  ExpectSignature(result.fields[1].fields[0], "shape", "", -1, {}, "Shape");
  ExpectSignature(result.fields[1].fields[1], "prim", "i64", -1, {}, "Prim[i64]");
  // Only bytecode functions have one.
  for (const FunctionSpec& f : exe.functions) {
    EXPECT_EQ(f.signature.has_value(), f.kind == FunctionKindSpec::kBytecode) << f.name;
  }
}

TEST(VMCodegenTest, SignaturesOfStaticAndZeroDimensionalShapes) {
  ExecutableSpec exe = Compile(R"(
func @main(x: Tensor[(), f32], y: Tensor[(4, 768), f32], s: Shape[(2, m)]) -> Tensor[(), f32] {
  return x
}
)");
  ASSERT_FALSE(exe.functions.empty());
  ASSERT_TRUE(exe.functions[0].signature.has_value());
  const serialization::SignatureSpec& sig = *exe.functions[0].signature;
  ASSERT_EQ(sig.params.size(), 3u);
  ExpectSignature(sig.params[0], "tensor", "f32", 0, {}, "Tensor[(), f32]");
  ExpectSignature(sig.params[1], "tensor", "f32", 2, {"4", "768"}, "Tensor[(4, 768), f32]");
  ExpectSignature(sig.params[2], "shape", "", 2, {"2", "m"}, "Shape[(2, m)]");
  ExpectSignature(sig.result, "tensor", "f32", 0, {}, "Tensor[(), f32]");
}

// A file holds signatures at most kMaxSignatureDepth deep: codegen says so rather
// than write a file no runtime loads.
TEST(VMCodegenTest, TooDeeplyNestedAnnotationsAreRejected) {
  std::string annotation = "Object";
  for (int i = 0; i < serialization::kMaxSignatureDepth; ++i) annotation = "Tuple[" + annotation + "]";
  StatusOr<ir::IRModule> lowered =
      driver::DefaultPipeline().Run(Parse("func @main(t: " + annotation + ") -> Object {\n  return t\n}\n"));
  ASSERT_TRUE(lowered.ok()) << lowered.status().message();
  StatusOr<ExecutableSpec> exe = CodegenVM(*lowered);
  ASSERT_FALSE(exe.ok());
  EXPECT_EQ(exe.status().message(), "VM codegen: function 'main': parameter 't' nests tuples more than 32 levels deep");
}

// The model's own names (attrs input_names / output_names) survive the whole
// pipeline and land in the signature, one per parameter and per result tuple field.
TEST(VMCodegenTest, ModelInputAndOutputNamesAreRecorded) {
  ExecutableSpec exe = Compile(R"(
func @main(input_1: Tensor[(n, 4), f32], mask: Tensor[(n,), f32]) -> Tuple[Tensor[(n, 4), f32], Tensor[(n,), f32]]
    attrs {input_names = ["input.1", "attention mask"], output_names = ["probs", "logits:0"]} {
  y = add(input_1, input_1)
  r = (y, mask)
  return r
}
)");
  ASSERT_FALSE(exe.functions.empty());
  ASSERT_TRUE(exe.functions[0].signature.has_value());
  EXPECT_EQ(exe.functions[0].param_names, (std::vector<std::string>{"input_1", "mask"}));
  EXPECT_EQ(exe.functions[0].signature->input_names, (std::vector<std::string>{"input.1", "attention mask"}));
  EXPECT_EQ(exe.functions[0].signature->output_names, (std::vector<std::string>{"probs", "logits:0"}));

  // None recorded without the attrs (the runtime then uses the defaults).
  ExecutableSpec plain = Compile("func @main(x: Tensor[(n,), f32]) -> Tensor[(n,), f32] {\n  return x\n}\n");
  ASSERT_FALSE(plain.functions.empty());
  ASSERT_TRUE(plain.functions[0].signature.has_value());
  EXPECT_TRUE(plain.functions[0].signature->input_names.empty());
  EXPECT_TRUE(plain.functions[0].signature->output_names.empty());

  // A function of no parameters: `[]` (parsed as the empty list of ints) is its empty list of names.
  ExecutableSpec none = Compile(R"(
func @main() -> Tensor[(2,), f32] attrs {input_names = [], output_names = ["ones"]} {
  c = const(Tensor[(2,), f32], [1.0, 1.0])
  return c
}
)");
  ASSERT_FALSE(none.functions.empty());
  ASSERT_TRUE(none.functions[0].signature.has_value());
  EXPECT_TRUE(none.functions[0].signature->input_names.empty());
  EXPECT_EQ(none.functions[0].signature->output_names, std::vector<std::string>{"ones"});
}

// Names a server could not look tensors up by are a compile error naming the
// function and the attr, never a file the verifier refuses.
TEST(VMCodegenTest, BadModelNamesAreRejected) {
  auto error = [](const std::string& attrs, const std::string& result = "Tuple[Tensor[(n,), f32], Tensor[(n,), f32]]",
                  const std::string& body = "r = (x, y)\n  return r") {
    StatusOr<ir::IRModule> lowered =
        driver::DefaultPipeline().Run(Parse("func @main(x: Tensor[(n,), f32], y: Tensor[(n,), f32]) -> " + result +
                                            " attrs {" + attrs + "} {\n  " + body + "\n}\n"));
    EXPECT_TRUE(lowered.ok()) << lowered.status().message();
    if (!lowered.ok()) return std::string();
    StatusOr<ExecutableSpec> exe = CodegenVM(*lowered);
    return exe.ok() ? std::string("compiled") : exe.status().message();
  };
  EXPECT_EQ(error("input_names = [\"a\", \"b\"], output_names = [\"p\", \"q\"]"), "compiled");
  EXPECT_EQ(error("input_names = [\"a\"]"),
            "VM codegen: function 'main': attr 'input_names' has 1 name for 2 parameters");
  EXPECT_EQ(error("input_names = [\"a\", \"b\", \"c\"]"),
            "VM codegen: function 'main': attr 'input_names' has 3 names for 2 parameters");
  EXPECT_EQ(error("input_names = []"), "VM codegen: function 'main': attr 'input_names' has 0 names for 2 parameters");
  EXPECT_EQ(error("output_names = [\"p\", \"q\", \"r\"]"),
            "VM codegen: function 'main': attr 'output_names' has 3 names for 2 result tuple fields");
  EXPECT_EQ(error("output_names = [\"p\", \"q\"]", "Tensor[(n,), f32]", "return x"),
            "VM codegen: function 'main': attr 'output_names' has 2 names for 1 result (not a tuple)");
  EXPECT_EQ(error("output_names = [\"p\", \"p\"]"),
            "VM codegen: function 'main': attr 'output_names': name 1 'p' repeats name 0");
  EXPECT_EQ(error("input_names = [\"a\", \"\"]"), "VM codegen: function 'main': attr 'input_names': name 1 is empty");
  EXPECT_EQ(error("input_names = [\"a\", \"b\\n\"]"),
            "VM codegen: function 'main': attr 'input_names': name 1 'b\\x0a' is not printable text or longer than "
            "4096 bytes");
  EXPECT_EQ(error("input_names = [\"a\", \"" + std::string(4097, 'b') + "\"]")
                .rfind("VM codegen: function 'main': attr 'input_names': name 1 'bbbb", 0),
            0u);
  EXPECT_EQ(error("input_names = \"a\""),
            "VM codegen: function 'main': attr 'input_names' must be a list of strings, got \"a\"");
  EXPECT_EQ(error("output_names = [1, 2]"),
            "VM codegen: function 'main': attr 'output_names' must be a list of strings, got [1, 2]");
}

TEST(VMCodegenTest, UnloweredModulesAreRejected) {
  StatusOr<ir::IRModule> normalized = transform::testing::RunPasses(Parse(R"(
prim_func @copy(A: Buffer[(n,), f32], B: Buffer[(n,), f32]) {
  for i in range(0, n) {
    B[i] = A[i]
  }
}
func @main(x: Tensor[(n,), f32]) -> Tensor {
  y = call_tir(@copy, (x,), Tensor[(n,), f32])
  return y
}
)"),
                                                                    {"Normalize"});
  ASSERT_TRUE(normalized.ok());
  StatusOr<ExecutableSpec> exe = CodegenVM(*normalized);
  ASSERT_FALSE(exe.ok());
  EXPECT_EQ(exe.status().message(),
            "VM codegen: function 'main', binding 'y': call_tir must be rewritten by CallTIRRewrite before VM "
            "codegen");

  StatusOr<ir::IRModule> rewritten = transform::testing::RunPasses(*normalized, {"CallTIRRewrite"});
  ASSERT_TRUE(rewritten.ok());
  exe = CodegenVM(*rewritten);
  ASSERT_FALSE(exe.ok());
  EXPECT_EQ(exe.status().message(),
            "VM codegen: function 'main', binding 'out': symbolic shape dimension n in a value; run VMShapeLower "
            "first");
}

}  // namespace
}  // namespace strata::backend
