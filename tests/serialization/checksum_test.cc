// The checksums of format 1.5: every byte of an executable is covered, damage
// anywhere is refused with a message naming the damaged region, and skipping the
// check (verify_checksums = false) leaves a file that loads without crashing.
// Run under ASan (build-asan) as well.
#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>
#include <regex>
#include <xxhash.h>

#include <gtest/gtest.h>

#include "serialization/format_version.h"
#include "serialization/reader.h"
#include "tests/vm/executable_builder.h"
#include "tests/vm/test_util.h"
#include "vm/executable.h"
#include "vm/virtual_machine.h"

namespace strata::testing {
namespace {

using vm::Value;

constexpr int64_t kRows = 256, kCols = 128;  // the weight: 128 KiB of f32
constexpr const char* kProducer = "checksum-test producer";
constexpr const char* kHelperName = "helper_named_in_the_functions_section";
constexpr const char* kModuleCpu = "cpu-named-in-the-native-modules-section";
constexpr const char* kStringConstant = "a string of the constants section";

std::vector<float> Weights() {
  std::vector<float> w(static_cast<size_t>(kRows * kCols));
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 251) * 0.25f - 20.0f;
  return w;
}

std::vector<float> Input() {
  std::vector<float> x(static_cast<size_t>(kRows * kCols));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) - 3.0f;
  return x;
}

// What main(x, n) returns, computed here: x + W + 1.5.
std::vector<float> ExpectedResult() {
  std::vector<float> x = Input(), w = Weights(), y(x.size());
  for (size_t i = 0; i < y.size(); ++i) y[i] = x[i] + w[i] + 1.5f;
  return y;
}

struct Model {
  serialization::ExecutableSpec spec;
  int32_t weight_constant = -1;
};

// A small model with every section: library calls, a loop, compiled kernels
// (tests/vm/test_kernel_module.c, so native code is in the file), signatures,
// every kind of constant and one sizeable weight. main(x, n) = x + W + 1.5 after
// counting n down.
Model BuildModel() {
  ExecutableBuilder b;
  serialization::NativeModuleSpec module;
  module.target_triple = "x86_64-pc-linux-gnu";
  module.cpu = kModuleCpu;
  module.code = ReadFile(STRATA_TEST_KERNEL_MODULE);
  module.symbols = {"add_scalar", "add_tensors"};
  b.spec.native_modules.push_back(module);
  int shape_of = b.Library("vm.builtin.shape_of");
  int alloc = b.Library("vm.builtin.alloc_tensor");
  int dec = b.Library("test.decrement");
  int add_tensors = b.Kernel("add_tensors", 0, "add_tensors");
  int add_scalar = b.Kernel("add_scalar", 0, "add_scalar");
  Model model;
  model.weight_constant = b.Tensor<float>(DataType::F32(), {kRows, kCols}, Weights());
  int f32 = b.DType(DataType::F32());
  int half = b.Constant(1.5);
  b.Tensor<int64_t>(DataType::I64(), {4}, {1, -2, 3, -4});
  b.Shape({kRows, kCols});
  b.String(kStringConstant);
  b.Int(7);
  int helper = b.Declare(kHelperName, {"t"}, 2, /*entry_point=*/false);
  CodeBuilder helper_code;
  helper_code.Call(1, dec, {R(0)}).Ret(1);
  b.Define(helper, helper_code);
  CodeBuilder code;
  code.Call(2, shape_of, {R(0)})
      .Call(3, alloc, {R(2), C(f32)})
      .Call(kVoid, add_tensors, {R(0), C(model.weight_constant), R(3)})
      .Call(4, alloc, {R(2), C(f32)})
      .Call(kVoid, add_scalar, {R(3), C(half), R(4)})
      .Label("loop")
      .If(1, "done")
      .Call(1, helper, {R(1)})
      .Goto("loop")
      .Label("done")
      .Ret(4);
  int main = b.Bytecode("main", {"x", "n"}, 5, code);
  const serialization::ValueSignatureSpec tensor{"tensor", "f32", 2, {"256", "128"}, {}, "Tensor[(256, 128), f32]"};
  const serialization::ValueSignatureSpec prim{"prim", "i64", -1, {}, {}, "Prim[i64]"};
  b.spec.functions[static_cast<size_t>(helper)].signature = serialization::SignatureSpec{{prim}, prim};
  b.spec.functions[static_cast<size_t>(main)].signature = serialization::SignatureSpec{{tensor, prim}, tensor};
  model.spec = std::move(b.spec);
  return model;
}

std::vector<uint8_t> Write(const serialization::ExecutableSpec& spec,
                           serialization::WriteOptions options = serialization::WriteOptions()) {
  options.producer = kProducer;
  return serialization::WriteExecutable(spec, options);
}

vm::LoadOptions Unchecked() {
  vm::LoadOptions options;
  options.verify_checksums = false;
  return options;
}

std::string LoadError(std::span<const uint8_t> bytes, const vm::LoadOptions& options = {}) {
  auto exe = vm::Executable::LoadFromBytes(bytes, options);
  return exe.ok() ? std::string() : exe.status().message();
}

// Calls main(x, 3); the result, or the error as a status.
StatusOr<std::vector<float>> RunMain(const std::shared_ptr<const vm::Executable>& exe) {
  vm::VirtualMachine machine(exe);
  // Damage to a jump can make a loop that never ends: the budget makes it an error.
  machine.SetStepBudget(10000);
  std::vector<Value> args = {F32({kRows, kCols}, Input()), Value::FromInt(3)};
  StatusOr<Value> result = machine.Invoke("main", args);
  if (!result.ok()) return result.status();
  if (!result->is_tensor()) return Status::Error("main returned " + result->Describe());
  return result->tensor()->ToVector<float>();
}

size_t Find(const std::vector<uint8_t>& haystack, const void* needle, size_t size) {
  const auto* p = static_cast<const uint8_t*>(needle);
  auto at = std::search(haystack.begin(), haystack.end(), p, p + size);
  EXPECT_NE(at, haystack.end()) << "not in the file";
  return static_cast<size_t>(at - haystack.begin());
}
size_t Find(const std::vector<uint8_t>& haystack, const std::string& needle) {
  return Find(haystack, needle.data(), needle.size());
}

// The file's checksum table, read with the reader (the buffer must stay alive).
struct Table {
  std::vector<uint8_t> aligned;  // 8-byte aligned copy (vector storage is)
  const fb::Executable* root = nullptr;
  std::vector<const fb::ChecksumRegion*> regions;
  size_t OffsetOf(const void* p) const { return static_cast<size_t>(static_cast<const uint8_t*>(p) - aligned.data()); }
};
Table ReadTable(const std::vector<uint8_t>& bytes) {
  Table t;
  t.aligned = bytes;
  auto root = serialization::ReadExecutable(t.aligned);
  EXPECT_TRUE(root.ok()) << root.status().message();
  if (!root.ok() || (*root)->checksums() == nullptr) return t;
  t.root = *root;
  for (const fb::ChecksumRegion* r : *t.root->checksums()) t.regions.push_back(r);
  return t;
}

// "(... N bytes at offset O)" of a checksum message.
struct Extent {
  uint64_t offset = 0, size = 0;
  bool Contains(size_t at) const { return at >= offset && at < offset + size; }
};
std::optional<Extent> ParseExtent(const std::string& message) {
  std::smatch m;
  if (!std::regex_search(message, m, std::regex(R"(\((?:[a-z ]+, )?(\d+) bytes at offset (\d+)\))"))) {
    return std::nullopt;
  }
  return Extent{std::stoull(m[2].str()), std::stoull(m[1].str())};
}

TEST(ChecksumTest, TheModelRuns) {
  RegisterTestFunctions();
  Model model = BuildModel();
  auto exe = vm::Executable::LoadFromBytes(Write(model.spec));
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  EXPECT_TRUE((*exe)->has_checksums());
  EXPECT_TRUE((*exe)->checksums_verified());
  EXPECT_EQ((*exe)->format_minor(), serialization::kFormatMinor);
  auto result = RunMain(*exe);
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(*result, ExpectedResult());
}

// The layout the format promises, checked from the outside: regions back to back
// over the whole file, the header holding the table, each tensor's data and each
// module's code a region of its own, and each checksum the XXH3-64 of its bytes.
TEST(ChecksumTest, RegionsCoverEveryByteOnceWithTheirXxh3) {
  Model model = BuildModel();
  const std::vector<uint8_t> bytes = Write(model.spec);
  Table t = ReadTable(bytes);
  ASSERT_GE(t.regions.size(), 6u);
  uint64_t end = 0;
  for (const fb::ChecksumRegion* r : t.regions) {
    EXPECT_EQ(r->offset(), end);
    end = r->offset() + r->size();
  }
  EXPECT_EQ(end, bytes.size());

  const fb::ChecksumRegion& header = *t.regions[0];
  EXPECT_EQ(header.kind(), fb::ChecksumRegionKind::Header);
  const size_t table_begin = t.OffsetOf(t.root->checksums()->data());
  EXPECT_LE(table_begin + t.regions.size() * sizeof(fb::ChecksumRegion), header.size());
  std::vector<uint8_t> header_bytes(bytes.begin(), bytes.begin() + header.size());
  std::memset(header_bytes.data() + table_begin, 0, 8);  // its own checksum reads as zero
  EXPECT_EQ(XXH3_64bits(header_bytes.data(), header_bytes.size()), header.xxh3());
  for (size_t i = 1; i < t.regions.size(); ++i) {
    const fb::ChecksumRegion& r = *t.regions[i];
    EXPECT_EQ(XXH3_64bits(bytes.data() + r.offset(), r.size()), r.xxh3()) << "region " << i;
  }

  auto region_of = [&](fb::ChecksumRegionKind kind, uint32_t index) -> const fb::ChecksumRegion* {
    for (const fb::ChecksumRegion* r : t.regions) {
      if (r->kind() == kind && r->index() == index) return r;
    }
    return nullptr;
  };
  for (uint32_t i = 0; i < t.root->constants()->size(); ++i) {
    const fb::TensorConstant* tensor = t.root->constants()->Get(i)->value_as_TensorConstant();
    const fb::ChecksumRegion* r = region_of(fb::ChecksumRegionKind::ConstantData, i);
    if (tensor == nullptr) {
      EXPECT_EQ(r, nullptr) << "constant " << i;
      continue;
    }
    ASSERT_NE(r, nullptr) << "constant " << i;
    EXPECT_EQ(r->offset(), t.OffsetOf(tensor->data()->data()));
    EXPECT_EQ(r->size(), tensor->data()->size());
  }
  const fb::ChecksumRegion* code = region_of(fb::ChecksumRegionKind::NativeCode, 0);
  ASSERT_NE(code, nullptr);
  EXPECT_EQ(code->offset(), t.OffsetOf(t.root->native_modules()->Get(0)->code()->data()));
  EXPECT_EQ(code->size(), model.spec.native_modules[0].code.size());

  // Tables sit in their sections.
  auto kind_at = [&](size_t offset) {
    for (const fb::ChecksumRegion* r : t.regions) {
      if (offset >= r->offset() && offset < r->offset() + r->size()) return r->kind();
    }
    return static_cast<fb::ChecksumRegionKind>(99);
  };
  EXPECT_EQ(kind_at(Find(bytes, kProducer)), fb::ChecksumRegionKind::Header);
  EXPECT_EQ(kind_at(Find(bytes, kHelperName)), fb::ChecksumRegionKind::Functions);
  EXPECT_EQ(kind_at(Find(bytes, kModuleCpu)), fb::ChecksumRegionKind::NativeModules);
  EXPECT_EQ(kind_at(Find(bytes, kStringConstant)), fb::ChecksumRegionKind::Constants);
  EXPECT_EQ(kind_at(t.OffsetOf(t.root->functions()->Get(0))), fb::ChecksumRegionKind::Functions);
}

// One byte of each kind of region damaged: the error names the region and its
// extent holds the damaged byte; with verify_checksums = false the file loads.
TEST(ChecksumTest, EachKindOfDamageNamesTheDamagedRegion) {
  RegisterTestFunctions();
  Model model = BuildModel();
  const std::vector<uint8_t> good = Write(model.spec);
  const std::vector<float> weights = Weights();
  const size_t weight_offset = Find(good, weights.data(), weights.size() * sizeof(float));
  const std::vector<uint8_t>& code = model.spec.native_modules[0].code;
  const size_t code_offset = Find(good, code.data(), code.size());

  struct Case {
    const char* what;
    size_t at;
    std::string message_start;
  };
  const std::vector<Case> cases = {
      {"producer", Find(good, kProducer) + 3, "checksum mismatch in the header ("},
      {"function name", Find(good, kHelperName) + 5, "checksum mismatch in section \"functions\" ("},
      {"module cpu", Find(good, kModuleCpu) + 5, "checksum mismatch in section \"native_modules\" ("},
      {"string constant", Find(good, kStringConstant) + 5, "checksum mismatch in section \"constants\" ("},
      {"weight", weight_offset + 4 * 1000 + 1,
       "checksum mismatch in constants[" + std::to_string(model.weight_constant) + "] (tensor data, " +
           std::to_string(weights.size() * sizeof(float)) + " bytes at offset " + std::to_string(weight_offset) +
           "): the file is damaged"},
      {"native code", code_offset + code.size() / 2,
       "checksum mismatch in native_modules[0] (code, " + std::to_string(code.size()) + " bytes at offset " +
           std::to_string(code_offset) + "): the file is damaged"},
  };
  for (const Case& c : cases) {
    for (uint8_t flip : {uint8_t{0x01}, uint8_t{0x80}}) {
      std::vector<uint8_t> damaged = good;
      damaged[c.at] ^= flip;
      const std::string error = LoadError(damaged);
      EXPECT_EQ(error.rfind(c.message_start, 0), 0u) << c.what << ": " << error;
      EXPECT_NE(error.find("the file is damaged"), std::string::npos) << c.what << ": " << error;
      std::optional<Extent> extent = ParseExtent(error);
      ASSERT_TRUE(extent.has_value()) << c.what << ": " << error;
      EXPECT_TRUE(extent->Contains(c.at)) << c.what << ": byte " << c.at << " not in " << error;
      EXPECT_EQ(vm::Executable::LoadFromBytes(damaged).status().code(), StatusCode::kDataLoss);
    }
  }

  // Skipped: the damaged weight loads and gives wrong numbers, the damaged
  // producer is read as is, damaged code is still refused.
  std::vector<uint8_t> damaged = good;
  damaged[weight_offset + 4 * 1000 + 3] ^= 0x40;  // the exponent of element 1000
  auto loaded = vm::Executable::LoadFromBytes(damaged, Unchecked());
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_TRUE((*loaded)->has_checksums());
  EXPECT_FALSE((*loaded)->checksums_verified());
  auto wrong = RunMain(*loaded);
  ASSERT_TRUE(wrong.ok()) << wrong.status().message();
  const std::vector<float> expected = ExpectedResult();
  EXPECT_NE((*wrong)[1000], expected[1000]);
  (*wrong)[1000] = expected[1000];
  EXPECT_EQ(*wrong, expected);  // only that element

  damaged = good;
  damaged[Find(good, kProducer)] = 'C';
  loaded = vm::Executable::LoadFromBytes(damaged, Unchecked());
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ((*loaded)->producer(), "Checksum-test producer");

  damaged = good;
  damaged[code_offset + code.size() / 2] ^= 0x01;
  EXPECT_EQ(LoadError(damaged, Unchecked()), cases.back().message_start);
}

// The checksums themselves and the version are in the header: changing one is
// refused, including a version lowered to one that has no checksums.
TEST(ChecksumTest, DamagedChecksumsAndVersionAreRefused) {
  const std::vector<uint8_t> good = Write(BuildModel().spec);
  Table t = ReadTable(good);
  ASSERT_FALSE(t.regions.empty());
  for (size_t i : {size_t{0}, size_t{1}, t.regions.size() - 1}) {
    for (size_t byte : {size_t{0}, size_t{7}, size_t{8}, size_t{12}, size_t{16}, size_t{20}}) {
      std::vector<uint8_t> damaged = good;
      damaged[t.OffsetOf(t.regions[i]) + byte] ^= 0x04;
      const std::string error = LoadError(damaged);
      // A damaged offset, size or kind of the first region is caught before its checksum.
      const bool header_entry = i == 0 && byte >= 8;
      if (header_entry) {
        EXPECT_FALSE(error.empty()) << "region " << i << " byte " << byte;
      } else {
        EXPECT_EQ(error.rfind("checksum mismatch in the header (", 0), 0u)
            << "region " << i << " byte " << byte << ": " << error;
      }
    }
  }
  const auto* root_table = reinterpret_cast<const ::flatbuffers::Table*>(t.root);
  const size_t minor = t.OffsetOf(root_table->GetAddressOf(fb::Executable::VT_FORMAT_MINOR));
  ASSERT_EQ(good[minor], serialization::kFormatMinor);
  for (uint8_t older : {uint8_t{4}, uint8_t{1}, uint8_t{0}}) {
    std::vector<uint8_t> damaged = good;
    damaged[minor] = older;
    EXPECT_EQ(LoadError(damaged).rfind("checksum mismatch in the header (", 0), 0u) << LoadError(damaged);
  }
}

TEST(ChecksumTest, TruncatedOrExtendedFilesAreRefused) {
  const std::vector<uint8_t> good = Write(BuildModel().spec);
  const std::string size = std::to_string(good.size());
  for (size_t cut : {size_t{1}, size_t{64}, good.size() / 4}) {
    const std::span<const uint8_t> truncated(good.data(), good.size() - cut);
    EXPECT_EQ(LoadError(truncated), "the file is truncated: its checksums cover " + size + " bytes, it has " +
                                        std::to_string(good.size() - cut));
    EXPECT_EQ(vm::Executable::LoadFromBytes(truncated).status().code(), StatusCode::kDataLoss);
  }
  std::vector<uint8_t> extended = good;
  extended.resize(good.size() + 64);
  EXPECT_EQ(LoadError(extended), "the file has " + std::to_string(extended.size()) +
                                     " bytes but its checksums cover only " + size +
                                     ": bytes were appended or the file is damaged");
}

// Every load path verifies by default, and every one skips on request.
TEST(ChecksumTest, LoadFromFileAndMapFileVerifyToo) {
  RegisterTestFunctions();
  Model model = BuildModel();
  std::vector<uint8_t> damaged = Write(model.spec);
  const std::vector<float> weights = Weights();
  const size_t weight = Find(damaged, weights.data(), weights.size() * sizeof(float));
  damaged[weight + 77] ^= 0x10;
  const std::string path = TempPath("checksum_test_damaged.stx");
  WriteFile(path, damaged);
  const std::string expected = path + ": checksum mismatch in constants[" + std::to_string(model.weight_constant) +
                               "] (tensor data, " + std::to_string(weights.size() * 4) + " bytes at offset " +
                               std::to_string(weight) + "): the file is damaged";
  auto from_file = vm::Executable::LoadFromFile(path);
  ASSERT_FALSE(from_file.ok());
  EXPECT_EQ(from_file.status().message(), expected);
  auto mapped = vm::Executable::MapFile(path);
  ASSERT_FALSE(mapped.ok());
  EXPECT_EQ(mapped.status().message(), expected);
  for (bool map : {false, true}) {
    auto unchecked = map ? vm::Executable::MapFile(path, Unchecked()) : vm::Executable::LoadFromFile(path, Unchecked());
    ASSERT_TRUE(unchecked.ok()) << unchecked.status().message();
    auto result = RunMain(*unchecked);
    ASSERT_TRUE(result.ok()) << result.status().message();
    EXPECT_NE(*result, ExpectedResult());
  }
  std::remove(path.c_str());
}

// Files written before 1.5 have no checksums: they load and run as before (native
// code checked by its CRC-32); a 1.5 file without them is damaged.
TEST(ChecksumTest, Format14FilesWithoutChecksumsStillLoadAndRun) {
  RegisterTestFunctions();
  Model model = BuildModel();
  serialization::WriteOptions format_1_4;
  format_1_4.format_minor = 4;
  format_1_4.checksums = false;
  const std::vector<uint8_t> old = Write(model.spec, format_1_4);
  auto exe = vm::Executable::LoadFromBytes(old);
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  EXPECT_EQ((*exe)->format_minor(), 4u);
  EXPECT_FALSE((*exe)->has_checksums());
  EXPECT_FALSE((*exe)->checksums_verified());
  auto result = RunMain(*exe);
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(*result, ExpectedResult());

  serialization::WriteOptions without = format_1_4;
  without.format_minor = serialization::kFormatMinor;
  EXPECT_EQ(LoadError(Write(model.spec, without)),
            "a file of format 1.7 must carry checksums and this one has none: the file is damaged");
}

// A checksum table whose header checksum matches but whose regions do not add
// up (a hostile or broken writer): refused without reading out of bounds.
TEST(ChecksumTest, HostileChecksumTablesAreRefused) {
  const std::vector<uint8_t> good = Write(BuildModel().spec);
  Table t = ReadTable(good);
  ASSERT_GE(t.regions.size(), 3u);
  // Rewrites region `i`, then stores a matching header checksum.
  auto with_region = [&](size_t i, uint32_t offset, uint32_t size, uint8_t kind) {
    std::vector<uint8_t> bytes = good;
    const size_t at = t.OffsetOf(t.regions[i]);
    std::memcpy(bytes.data() + at + 8, &offset, 4);
    std::memcpy(bytes.data() + at + 12, &size, 4);
    bytes[at + 20] = kind;
    const size_t header_field = t.OffsetOf(t.regions[0]);
    uint32_t header_size = 0;
    std::memcpy(&header_size, bytes.data() + header_field + 12, 4);
    std::vector<uint8_t> header(bytes.begin(), bytes.begin() + std::min<size_t>(header_size, bytes.size()));
    if (header_field + 8 <= header.size()) {
      std::memset(header.data() + header_field, 0, 8);
      const uint64_t checksum = XXH3_64bits(header.data(), header.size());
      std::memcpy(bytes.data() + header_field, &checksum, 8);
    }
    return LoadError(bytes);
  };
  const fb::ChecksumRegion& second = *t.regions[1];
  const auto kind = [](fb::ChecksumRegionKind k) { return static_cast<uint8_t>(k); };
  EXPECT_EQ(with_region(1, second.offset() + 1, second.size(), kind(second.kind()))
                .rfind("the checksum table is damaged: checksums[1] is ", 0),
            0u);
  EXPECT_EQ(with_region(1, second.offset(), second.size(), 77)
                .rfind("the checksum table is damaged: checksums[1] is a region of unknown kind 77", 0),
            0u);
  EXPECT_EQ(with_region(1, second.offset(), second.size(), kind(fb::ChecksumRegionKind::Header))
                .rfind("the checksum table is damaged: checksums[1] is the header", 0),
            0u);
  for (uint32_t huge : {UINT32_MAX, UINT32_MAX - 7, static_cast<uint32_t>(INT32_MAX)}) {
    EXPECT_EQ(with_region(2, t.regions[2]->offset(), huge, kind(t.regions[2]->kind()))
                  .rfind("the file is truncated: its checksums cover ", 0),
              0u);
  }
  const fb::ChecksumRegion& header = *t.regions[0];
  EXPECT_EQ(with_region(0, 0, static_cast<uint32_t>(good.size() + 64), kind(header.kind())),
            "the file is truncated: its header has " + std::to_string(good.size() + 64) + " bytes, the file " +
                std::to_string(good.size()));
  const std::string table_at = std::to_string(t.OffsetOf(t.regions[0]));
  EXPECT_EQ(with_region(0, 0, 16, kind(header.kind())),
            "the checksum table is damaged: checksums[0] is the header (16 bytes at offset 0), expected the header, "
            "holding the table at offset " +
                table_at);
  EXPECT_EQ(with_region(0, 0, header.size(), kind(fb::ChecksumRegionKind::Functions)),
            "the checksum table is damaged: checksums[0] is section \"functions\" (" + std::to_string(header.size()) +
                " bytes at offset 0), expected the header, holding the table at offset " + table_at);
}

// What users did to a compiled model, at least 1,500 times: bit flips, runs of
// bytes, truncation and planted integers, half of them anywhere in the file
// (mostly weights) and half in its tables. With verification every one is refused;
// without it, whatever still loads runs without crashing.
TEST(ChecksumTest, NoRandomMutationLoadsAndNoneCrashesWhenUnchecked) {
  RegisterTestFunctions();
  const std::vector<uint8_t> good = Write(BuildModel().spec);
  const Table t = ReadTable(good);
  // The tables end where the bulk (native code and tensor data) starts.
  size_t tables_end = good.size();
  for (const fb::ChecksumRegion* r : t.regions) {
    if (r->kind() == fb::ChecksumRegionKind::NativeCode || r->kind() == fb::ChecksumRegionKind::ConstantData) {
      tables_end = std::min<size_t>(tables_end, r->offset());
    }
  }
  ASSERT_LT(tables_end, good.size());

  std::mt19937_64 rng(20240611);
  auto uniform = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  const size_t size = good.size();
  const std::vector<int64_t> planted = {
      0,         -1, 1, INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, int64_t(size), int64_t(size) - 1, int64_t(size) + 1,
      0x7f7f7f7f};
  constexpr int kMutations = 1600;
  int by_kind[5] = {}, checksum_errors = 0, other_errors = 0, loaded_unchecked = 0, ran_unchecked = 0;
  for (int n = 0; n < kMutations; ++n) {
    std::vector<uint8_t> bytes = good;
    const size_t at = n % 2 == 0 ? uniform(size) : uniform(tables_end);
    const int kind = static_cast<int>(rng() % 5);
    switch (kind) {
      case 0:  // a bit flip
        bytes[at] ^= static_cast<uint8_t>(1u << uniform(8));
        break;
      case 1: {  // a run of random bytes, or of one byte
        const size_t length = std::min<size_t>(1 + uniform(64), size - at);
        const bool same = rng() % 2 == 0;
        const auto fill = static_cast<uint8_t>(rng());
        for (size_t i = 0; i < length; ++i) bytes[at + i] = same ? fill : static_cast<uint8_t>(rng());
        break;
      }
      case 2:  // truncation
        bytes.resize(uniform(size));
        break;
      case 3:    // a planted 32-bit integer
      case 4: {  // a planted 64-bit integer
        const size_t width = kind == 3 ? 4 : 8;
        const size_t where = std::min(at, size - width) & ~(rng() % 2 == 0 ? width - 1 : size_t{0});
        const int64_t value = planted[uniform(planted.size())];
        std::memcpy(bytes.data() + where, &value, width);  // little-endian: the low half for 32 bits
        break;
      }
    }
    if (bytes == good) {  // planted what was there already: not a mutation
      --n;
      continue;
    }
    ++by_kind[kind];
    const std::string error = LoadError(bytes);
    ASSERT_FALSE(error.empty()) << "mutation " << n << " (kind " << kind << " at " << at << ") loaded";
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
    const bool checksum = error.starts_with("checksum mismatch in ") || error.starts_with("the file is truncated") ||
                          error.starts_with("the checksum table is damaged");
    ++(checksum ? checksum_errors : other_errors);

    auto unchecked = vm::Executable::LoadFromBytes(bytes, Unchecked());
    if (!unchecked.ok()) continue;
    ++loaded_unchecked;
    ran_unchecked += RunMain(*unchecked).ok() ? 1 : 0;
  }
  for (int kind = 0; kind < 5; ++kind) EXPECT_GT(by_kind[kind], 200) << "mutation kind " << kind;
  // Most are named by a checksum; the rest hit the identifier, the version, or the
  // root table before the checksums could be found.
  EXPECT_GT(checksum_errors, kMutations * 9 / 10) << other_errors << " other errors";
  // Without verification the damage goes through (it is what the checksums stop).
  EXPECT_GT(ran_unchecked, kMutations / 4) << loaded_unchecked << " loaded";
}

}  // namespace
}  // namespace strata::testing
