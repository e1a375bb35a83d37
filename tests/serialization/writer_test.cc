// WriteExecutable and the reader: layout, alignment and round trips of the file format.
#include "serialization/writer.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>

#include "serialization/reader.h"
#include "tests/vm/executable_builder.h"

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
  // zlib.crc32(b"\x7fELF") in Python.
  ASSERT_TRUE(module->code_crc32().has_value());
  EXPECT_EQ(*module->code_crc32(), 0xa73ac451U);
  ASSERT_EQ(exe->entry_points()->size(), 1u);
  EXPECT_EQ(exe->entry_points()->Get(0), 1);
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
