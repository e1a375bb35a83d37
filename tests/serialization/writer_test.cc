// WriteExecutable and the reader: layout, alignment and round trips of the file format.
#include "serialization/writer.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>

#include "serialization/reader.h"
#include "tests/vm/executable_builder.h"
#include "vm/executable.h"

namespace strata::testing {
namespace {

// A 64-byte aligned copy, like the runtime's loaders make.
struct AlignedCopy {
  explicit AlignedCopy(const std::vector<uint8_t>& bytes, size_t offset = 0)
      : storage(bytes.size() + 128), size(bytes.size()) {
    auto base = reinterpret_cast<uintptr_t>(storage.data());
    data = storage.data() + ((64 - base % 64) % 64) + offset;
    std::memcpy(data, bytes.data(), bytes.size());
  }
  std::span<const uint8_t> span() const { return {data, size}; }
  std::vector<uint8_t> storage;
  uint8_t* data;
  size_t size;
};

TEST(WriterTest, TensorConstantDataIs64ByteAlignedInTheFile) {
  ExecutableBuilder b;
  b.String("odd");  // misalign whatever follows
  b.Tensor<uint8_t>(DataType::UInt(8), {3}, {1, 2, 3});
  b.Int(5);
  b.Tensor<float>(DataType::F32(), {7}, {1, 2, 3, 4, 5, 6, 7});
  b.Tensor<double>(DataType::F64(), {1, 1}, {9});
  b.Tensor<int64_t>(DataType::I64(), {0}, {});
  std::vector<uint8_t> bytes = b.Write();
  EXPECT_EQ(bytes.size() % 64, 0u);
  AlignedCopy copy(bytes);
  auto exe = serialization::ReadExecutable(copy.span());
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  int tensors = 0;
  for (const fb::Constant* c : *(*exe)->constants()) {
    const fb::TensorConstant* t = c->value_as_TensorConstant();
    if (t == nullptr || t->data() == nullptr || t->data()->size() == 0) continue;
    ++tensors;
    EXPECT_EQ((t->data()->data() - copy.data) % 64, 0) << "constant data at offset " << (t->data()->data() - copy.data);
  }
  EXPECT_EQ(tensors, 3);
}

TEST(WriterTest, RoundTripsEveryField) {
  ExecutableBuilder b;
  int lib = b.Library("vm.builtin.null");
  CodeBuilder code;
  code.Call(1, lib, {}).Ret(1);
  b.Bytecode("main", {"a"}, 2, code);
  b.Shape({2, -1});
  b.Constant(2.5);
  b.DType(DataType::Bool());
  serialization::NativeModuleSpec m;
  m.target_triple = "x86_64-pc-linux-gnu";
  m.cpu = "znver4";
  m.code = {0x7f, 'E', 'L', 'F'};
  m.symbols = {"k0", "k1"};
  b.spec.native_modules.push_back(m);
  b.Kernel("kern", 0, "k1");
  serialization::WriteOptions options;
  options.producer = "strata test";
  std::vector<uint8_t> bytes = serialization::WriteExecutable(b.spec, options);
  AlignedCopy copy(bytes);
  auto read = serialization::ReadExecutable(copy.span());
  ASSERT_TRUE(read.ok()) << read.status().message();
  const fb::Executable* exe = *read;
  EXPECT_EQ(exe->format_major(), serialization::kFormatMajor);
  EXPECT_EQ(exe->format_minor(), serialization::kFormatMinor);
  EXPECT_EQ(exe->producer()->str(), "strata test");
  ASSERT_EQ(exe->functions()->size(), 3u);
  const fb::Function* main = exe->functions()->Get(1);
  EXPECT_EQ(main->name()->str(), "main");
  EXPECT_EQ(main->kind(), fb::FunctionKind::Bytecode);
  EXPECT_EQ(main->num_params(), 1);
  EXPECT_EQ(main->num_registers(), 2);
  EXPECT_EQ(main->param_names()->Get(0)->str(), "a");
  EXPECT_EQ(std::vector<int64_t>(main->code()->begin(), main->code()->end()), code.Build());
  const fb::Function* kern = exe->functions()->Get(2);
  EXPECT_EQ(kern->kind(), fb::FunctionKind::CompiledKernel);
  EXPECT_EQ(kern->module_index(), 0);
  EXPECT_EQ(kern->symbol()->str(), "k1");
  EXPECT_EQ(exe->functions()->Get(0)->kind(), fb::FunctionKind::Library);
  ASSERT_EQ(exe->constants()->size(), 3u);
  auto dims = exe->constants()->Get(0)->value_as_ShapeConstant()->dims();
  EXPECT_EQ(std::vector<int64_t>(dims->begin(), dims->end()), (std::vector<int64_t>{2, -1}));
  EXPECT_EQ(exe->constants()->Get(1)->value_as_FloatConstant()->value(), 2.5);
  EXPECT_EQ(exe->constants()->Get(2)->value_as_DataTypeConstant()->code(), static_cast<uint8_t>(DataType::Code::kBool));
  const fb::NativeModule* module = exe->native_modules()->Get(0);
  EXPECT_EQ(module->format()->str(), "elf-shared-object");
  EXPECT_EQ(module->cpu()->str(), "znver4");
  EXPECT_EQ(module->symbols()->size(), 2u);
  // Since 1.5 the code is a checksum region of its own, not a CRC-32.
  EXPECT_FALSE(module->code_crc32().has_value());
  ASSERT_NE(exe->checksums(), nullptr);
  int code_regions = 0;
  for (const fb::ChecksumRegion* region : *exe->checksums()) {
    if (region->kind() != fb::ChecksumRegionKind::NativeCode) continue;
    ++code_regions;
    EXPECT_EQ(region->index(), 0u);
    EXPECT_EQ(region->offset(), module->code()->data() - copy.data);
    EXPECT_EQ(region->size(), 4u);
  }
  EXPECT_EQ(code_regions, 1);
  ASSERT_EQ(exe->entry_points()->size(), 1u);
  EXPECT_EQ(exe->entry_points()->Get(0), 1);
}

serialization::ValueSignatureSpec Sig(std::string kind, std::string dtype, int32_t ndim, std::vector<std::string> dims,
                                      std::string text, std::vector<serialization::ValueSignatureSpec> fields = {}) {
  return {std::move(kind), std::move(dtype), ndim, std::move(dims), std::move(fields), std::move(text)};
}

// A bytecode function main(x, n, t) whose parameters and result have every kind of annotation.
ExecutableBuilder WithSignature() {
  ExecutableBuilder b;
  CodeBuilder code;
  code.Ret(0);
  int32_t main = b.Bytecode("main", {"x", "n", "t"}, 3, code);
  serialization::SignatureSpec sig;
  sig.params.push_back(Sig("tensor", "f32", 2, {"batch", "n * 2 + 1"}, "Tensor[(batch, n * 2 + 1), f32]"));
  sig.params.push_back(Sig("prim", "i64", -1, {}, "Prim[i64]"));
  sig.params.push_back(Sig("tuple", "", -1, {}, "Tuple[Tensor[ndim=3, f16], Shape[(4,)], Object]",
                           {Sig("tensor", "f16", 3, {}, "Tensor[ndim=3, f16]"),
                            Sig("shape", "", 1, {"4"}, "Shape[(4,)]"), Sig("object", "", -1, {}, "Object")}));
  sig.result = Sig("tensor", "f32", 0, {}, "Tensor[(), f32]");
  b.spec.functions[static_cast<size_t>(main)].signature = std::move(sig);
  return b;
}

void ExpectValueSignature(const vm::ValueSignature& v, const serialization::ValueSignatureSpec& want) {
  EXPECT_EQ(v.kind, want.kind) << want.text;
  EXPECT_EQ(v.dtype, want.dtype) << want.text;
  EXPECT_EQ(v.ndim, want.ndim) << want.text;
  EXPECT_EQ(v.dims, want.dims) << want.text;
  EXPECT_EQ(v.text, want.text);
  ASSERT_EQ(v.fields.size(), want.fields.size()) << want.text;
  for (size_t i = 0; i < v.fields.size(); ++i) ExpectValueSignature(v.fields[i], want.fields[i]);
}

TEST(WriterTest, SignaturesRoundTripThroughTheLoader) {
  ExecutableBuilder b = WithSignature();
  std::vector<uint8_t> bytes = b.Write();
  AlignedCopy copy(bytes);
  auto read = serialization::ReadExecutable(copy.span());
  ASSERT_TRUE(read.ok()) << read.status().message();
  // Unknown dims and dtypes are absent, not empty, in the file.
  const fb::Signature* file_sig = (*read)->functions()->Get(0)->signature();
  ASSERT_NE(file_sig, nullptr);
  ASSERT_EQ(file_sig->params()->size(), 3u);
  EXPECT_EQ(file_sig->params()->Get(0)->dims()->size(), 2u);
  EXPECT_EQ(file_sig->params()->Get(1)->dims(), nullptr);
  EXPECT_EQ(file_sig->params()->Get(2)->dtype(), nullptr);
  EXPECT_EQ(file_sig->params()->Get(2)->fields()->Get(0)->dims(), nullptr);

  auto exe = vm::Executable::LoadFromBytes(bytes);
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  const vm::VMFunction& main = (*exe)->functions()[0];
  ASSERT_TRUE(main.has_signature);
  const serialization::SignatureSpec& want = *b.spec.functions[0].signature;
  ASSERT_EQ(main.param_signatures.size(), 3u);
  for (size_t i = 0; i < want.params.size(); ++i) ExpectValueSignature(main.param_signatures[i], want.params[i]);
  ExpectValueSignature(main.result_signature, want.result);
}

// 1.6: the model's own names of the inputs and outputs, as written.
TEST(WriterTest, ModelNamesRoundTripThroughTheLoader) {
  ExecutableBuilder b = WithSignature();
  b.spec.functions[0].signature->input_names = {"input.1", "n:0", "pair of things"};
  b.spec.functions[0].signature->output_names = {"probs"};
  auto exe = vm::Executable::LoadFromBytes(b.Write());
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  const vm::VMFunction& main = (*exe)->functions()[0];
  EXPECT_EQ(main.param_names, (std::vector<std::string>{"x", "n", "t"}));
  EXPECT_EQ(main.input_names, (std::vector<std::string>{"input.1", "n:0", "pair of things"}));
  EXPECT_EQ(main.output_names, std::vector<std::string>{"probs"});
}

// Files that record no names (1.5 and older, or a function compiled without them):
// the parameter names, and "output0".. one per result tensor (a tuple's fields).
TEST(WriterTest, ModelNamesDefaultWhenTheFileRecordsNone) {
  auto load = [](const ExecutableBuilder& b, uint32_t minor) {
    serialization::WriteOptions options;
    options.format_minor = minor;
    options.checksums = minor >= serialization::kFirstMinorWithChecksums;
    auto exe = vm::Executable::LoadFromBytes(serialization::WriteExecutable(b.spec, options));
    EXPECT_TRUE(exe.ok()) << exe.status().message();
    EXPECT_EQ((*exe)->format_minor(), minor);
    return *exe;
  };
  ExecutableBuilder single = WithSignature();
  for (uint32_t minor : {4u, 5u, serialization::kFormatMinor}) {
    std::shared_ptr<const vm::Executable> exe = load(single, minor);
    EXPECT_EQ(exe->functions()[0].input_names, (std::vector<std::string>{"x", "n", "t"})) << minor;
    EXPECT_EQ(exe->functions()[0].output_names, std::vector<std::string>{"output0"}) << minor;
  }
  ExecutableBuilder tuple = WithSignature();
  serialization::ValueSignatureSpec& result = tuple.spec.functions[0].signature->result;
  result = Sig("tuple", "", -1, {}, "Tuple[Prim[i64], Object, Object]",
               {Sig("prim", "i64", -1, {}, "Prim[i64]"), Sig("object", "", -1, {}, "Object"),
                Sig("object", "", -1, {}, "Object")});
  EXPECT_EQ(load(tuple, 5)->functions()[0].output_names, (std::vector<std::string>{"output0", "output1", "output2"}));
  result = Sig("tuple", "", -1, {}, "Tuple[]");
  EXPECT_TRUE(load(tuple, 5)->functions()[0].output_names.empty());
}

// A 1.3 file has no signatures: it loads, and says so.
TEST(WriterTest, FilesWithoutSignaturesStillLoad) {
  ExecutableBuilder b;
  CodeBuilder code;
  code.Ret(0);
  b.Bytecode("main", {"x", "y"}, 2, code);
  serialization::WriteOptions options;
  options.format_minor = 3;
  auto exe = vm::Executable::LoadFromBytes(serialization::WriteExecutable(b.spec, options));
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  EXPECT_EQ((*exe)->format_minor(), 3u);
  const vm::VMFunction& main = (*exe)->functions()[0];
  EXPECT_FALSE(main.has_signature);
  EXPECT_TRUE(main.param_signatures.empty());
  EXPECT_EQ(main.result_signature.kind, "");
  EXPECT_EQ(main.param_names, (std::vector<std::string>{"x", "y"}));
  // Without a signature the result is not described: no output names, the parameter names as input names.
  EXPECT_EQ(main.input_names, (std::vector<std::string>{"x", "y"}));
  EXPECT_TRUE(main.output_names.empty());
}

// The file variant writes the very bytes WriteExecutable returns; a path it
// cannot create is an error naming the path and the reason.
TEST(WriterTest, WriteExecutableFileWritesTheSameBytes) {
  ExecutableBuilder b;
  b.String("odd");
  b.Tensor<float>(DataType::F32(), {7}, {1, 2, 3, 4, 5, 6, 7});
  CodeBuilder code;
  code.Ret(0);
  b.Bytecode("main", {"x"}, 1, code);
  const std::string path = ::testing::TempDir() + "/strata_writer_test.stx";
  ASSERT_TRUE(serialization::WriteExecutableFile(b.spec, path).ok());
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> written((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::remove(path.c_str());
  EXPECT_EQ(written, serialization::WriteExecutable(b.spec));
  Status bad = serialization::WriteExecutableFile(b.spec, "/nonexistent-dir/x.stx");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.message(), "cannot write '/nonexistent-dir/x.stx': No such file or directory");
}

TEST(ReaderTest, RequiresAnAlignedBuffer) {
  ExecutableBuilder b;
  CodeBuilder code;
  code.Ret(0);
  b.Bytecode("main", {"x"}, 1, code);
  AlignedCopy shifted(b.Write(), 4);
  auto read = serialization::ReadExecutable(shifted.span());
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().message(), "executable buffer is not 8-byte aligned");
}

}  // namespace
}  // namespace strata::testing
