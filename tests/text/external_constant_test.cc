// Constants stored outside the text: const(SI, file("name.bin", offset)), what
// --dump-ir writes for large weights, parses back to the same module.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/structural_equal.h"
#include "tests/text/text_test_util.h"

namespace strata::ir {
namespace {

namespace fs = std::filesystem;

class ExternalConstant : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("strata_external_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Sir() const { return (dir_ / "m.sir").string(); }
  fs::path dir_;
};

constexpr const char* kInline =
    "func @main(x: Tensor[(n, 3), f32]) -> Tensor[(n, 3), f32] {\n"
    "  y = add(x, const(Tensor[(3,), f32], [1.5, -2.0, 4.25]))\n"
    "  return y\n"
    "}\n";

TEST_F(ExternalConstant, PrintedToAFileAndParsedBack) {
  IRModule module = testing::MustParse(kInline);
  PrintOptions options;
  options.max_inline_constant_bytes = 8;  // the 12-byte constant goes out
  std::ofstream bin(dir_ / "w.bin", std::ios::binary);
  bin << "padding!";  // the reference carries its offset
  options.external_constant = [&](const graph::HostTensor& data) {
    bin.write(reinterpret_cast<const char*>(data.bytes.data()), static_cast<std::streamsize>(data.bytes.size()));
    return std::string("file(\"w.bin\", 8)");
  };
  const std::string text = PrintModule(module, options);
  bin.close();
  EXPECT_NE(text.find("const(Tensor[(3,), f32], file(\"w.bin\", 8))"), std::string::npos) << text;
  std::ofstream(Sir()) << text;
  auto reparsed = ParseModule(text, Sir());
  ASSERT_TRUE(reparsed.ok()) << reparsed.status().message();
  std::string why;
  EXPECT_TRUE(StructuralEqual(module, *reparsed, &why)) << why;
}

TEST_F(ExternalConstant, MissingOrShortFilesAreErrorsWithALocation) {
  const std::string missing =
      "func @main() -> Tensor[(4,), f32] {\n  y = const(Tensor[(4,), f32], file(\"nope.bin\", 0))\n  return y\n}\n";
  auto a = ParseModule(missing, Sir());
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().message(),
            Sir() + ":2:32: error: cannot open constant file '" + (dir_ / "nope.bin").string() + "'");
  std::ofstream(dir_ / "short.bin", std::ios::binary) << "12345678";
  const std::string short_file =
      "func @main() -> Tensor[(4,), f32] {\n  y = const(Tensor[(4,), f32], file(\"short.bin\", 4))\n  return y\n}\n";
  auto b = ParseModule(short_file, Sir());
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().message(), Sir() + ":2:32: error: constant file '" + (dir_ / "short.bin").string() +
                                      "' holds 8 bytes; the constant needs 16 at offset 4");
  const std::string bad_offset =
      "func @main() -> Tensor[(4,), f32] {\n  y = const(Tensor[(4,), f32], file(\"short.bin\", x))\n  return y\n}\n";
  auto c = ParseModule(bad_offset, Sir());
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            Sir() + ":2:50: error: expected the byte offset of the constant in the file, found 'x'");
}

}  // namespace
}  // namespace strata::ir
