// Round trips of whole modules: parse -> print -> parse gives a structurally
// equal module, printing is a fixed point, and the case files are already in
// canonical form (so the printer's output for them is checked line by line).
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/structural_equal.h"
#include "tests/text/text_test_util.h"

namespace strata::ir {
namespace {

using testing::MustParse;
using testing::ReadSourceFile;

// tests/text/cases/*.sir, relative to the source root, sorted.
std::vector<std::string> CaseFiles() {
  std::vector<std::string> files;
  std::filesystem::path dir = std::filesystem::path(STRATA_SOURCE_DIR) / "tests/text/cases";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".sir") files.push_back("tests/text/cases/" + entry.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::string> AllInputs() {
  std::vector<std::string> files = {"examples/matmul_relu.sir"};
  for (const std::string& f : CaseFiles()) files.push_back(f);
  return files;
}

// The text without comment lines and without the blank lines that led up to the
// first function: what the printer emits for a canonical file.
std::string StripComments(const std::string& text) {
  std::string out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    size_t first = line.find_first_not_of(' ');
    if (first != std::string::npos && line[first] == '#') continue;
    if (out.empty() && line.empty()) continue;
    out += line + "\n";
  }
  return out;
}

std::string TestName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = std::filesystem::path(info.param).stem().string();
  std::replace_if(
      name.begin(), name.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
  return name;
}

class RoundTripTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RoundTripTest, ReparsedPrintIsStructurallyEqual) {
  IRModule original = MustParse(ReadSourceFile(GetParam()), GetParam());
  ASSERT_FALSE(original.functions().empty());
  std::string printed = PrintModule(original);
  IRModule reparsed = MustParse(printed, "printed.sir");
  std::string why;
  EXPECT_TRUE(StructuralEqual(original, reparsed, &why)) << why << "\n" << printed;
  EXPECT_TRUE(why.empty());
}

TEST_P(RoundTripTest, PrintingIsAFixedPoint) {
  std::string printed = PrintModule(MustParse(ReadSourceFile(GetParam()), GetParam()));
  EXPECT_EQ(PrintModule(MustParse(printed, "printed.sir")), printed);
}

TEST_P(RoundTripTest, ParsingTwiceGivesEqualModulesOfDistinctNodes) {
  std::string text = ReadSourceFile(GetParam());
  IRModule a = MustParse(text), b = MustParse(text);
  ASSERT_EQ(a.functions().size(), b.functions().size());
  EXPECT_TRUE(StructuralEqual(a, b));
  // Equality above must come from structure, not from shared nodes.
  for (size_t i = 0; i < a.functions().size(); ++i) {
    if (const auto* ga = std::get_if<graph::Function>(&a.functions()[i].second)) {
      EXPECT_NE(ga->get(), std::get<graph::Function>(b.functions()[i].second).get());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Inputs, RoundTripTest, ::testing::ValuesIn(AllInputs()), TestName);

class CanonicalCaseTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CanonicalCaseTest, PrintReproducesTheFileWithoutComments) {
  std::string text = ReadSourceFile(GetParam());
  EXPECT_EQ(PrintModule(MustParse(text, GetParam())), StripComments(text));
}

INSTANTIATE_TEST_SUITE_P(Cases, CanonicalCaseTest, ::testing::ValuesIn(CaseFiles()), TestName);

TEST(CaseFilesTest, AllCasesArePresent) {
  std::vector<std::string> files = CaseFiles();
  for (const char* name : {"loops", "intrinsics", "graph_values", "graph_control"}) {
    std::string path = std::string("tests/text/cases/") + name + ".sir";
    EXPECT_NE(std::find(files.begin(), files.end(), path), files.end()) << path;
  }
}

// The example is written with match_shape, which the printer spells as the
// match_cast it stands for; everything else is already canonical.
TEST(ExampleTest, PrintsAsCanonicalTextWithMatchCast) {
  std::string text = ReadSourceFile("examples/matmul_relu.sir");
  std::string expected = StripComments(text);
  auto replace = [&](const std::string& from, const std::string& to) {
    size_t at = expected.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    expected.replace(at, from.size(), to);
  };
  replace("match_shape(sx, (m, n))", "match_cast(sx, Shape[(m, n)])");
  replace("match_shape(sw, (n, k))", "match_cast(sw, Shape[(n, k)])");
  EXPECT_EQ(PrintModule(MustParse(text)), expected);
}

// Every module that parses must print and reparse to an equal module, also for
// inputs nobody wrote on purpose.
void ExpectRoundTrips(const IRModule& module, const std::string& context) {
  std::string printed = PrintModule(module);
  StatusOr<IRModule> reparsed = ParseModule(printed, "printed.sir");
  ASSERT_TRUE(reparsed.ok()) << context << "\n" << reparsed.status().message() << "\n" << printed;
  std::string why;
  EXPECT_TRUE(StructuralEqual(module, *reparsed, &why)) << context << "\n" << why << "\n" << printed;
}

// Truncating a file anywhere must give an error (or, at a function boundary, a
// smaller module), never a crash or a hang.
TEST(TruncationTest, EveryPrefixParsesOrFailsCleanly) {
  for (const std::string& file : AllInputs()) {
    std::string text = ReadSourceFile(file);
    for (size_t length = 0; length <= text.size(); ++length) {
      std::string prefix = text.substr(0, length);
      StatusOr<IRModule> module = ParseModule(prefix, "bad.sir");
      size_t last = prefix.find_last_not_of(" \n");
      std::string trimmed = last == std::string::npos ? std::string() : prefix.substr(0, last + 1);
      bool at_function_end = trimmed.empty() || (trimmed.size() >= 2 && trimmed.substr(trimmed.size() - 2) == "\n}");
      bool only_comments = StripComments(prefix).find_first_not_of(" \n") == std::string::npos;
      if (!at_function_end && !only_comments) {
        EXPECT_FALSE(module.ok()) << file << " cut at " << length << " parsed:\n" << prefix;
      }
      if (!module.ok()) {
        EXPECT_EQ(module.status().message().rfind("bad.sir:", 0), 0u) << module.status().message();
        EXPECT_NE(module.status().message().find(": error: "), std::string::npos) << module.status().message();
      } else {
        ExpectRoundTrips(*module, file + " cut at " + std::to_string(length));
      }
    }
  }
}

// Random edits (deletions, duplications, punctuation swaps) of the inputs: the
// parser must answer every one with a module or a located error.
TEST(MutationTest, RandomEditsNeverCrash) {
  uint64_t state = 0x9e3779b97f4a7c15ull;
  auto next = [&state](uint64_t bound) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return bound ? state % bound : 0;
  };
  static constexpr char kChars[] = "(){}[],:=-+*/<>!@\"#0a1.\n _i";
  int parsed = 0, failed = 0;
  for (const std::string& file : AllInputs()) {
    const std::string original = ReadSourceFile(file);
    for (int round = 0; round < 600; ++round) {
      std::string text = original;
      int edits = 1 + static_cast<int>(next(3));
      for (int e = 0; e < edits && !text.empty(); ++e) {
        size_t at = next(text.size());
        switch (next(3)) {
          case 0: text.erase(at, 1 + next(8)); break;
          case 1: text.insert(at, text.substr(next(text.size()), 1 + next(12))); break;
          default: text[at] = kChars[next(sizeof(kChars) - 1)]; break;
        }
      }
      StatusOr<IRModule> module = ParseModule(text, "bad.sir");
      if (module.ok()) {
        ++parsed;
        ExpectRoundTrips(*module, file + " mutation " + std::to_string(round) + ":\n" + text);
      } else {
        ++failed;
        EXPECT_EQ(module.status().message().rfind("bad.sir:", 0), 0u) << module.status().message();
      }
    }
  }
  EXPECT_GT(failed, 0);
  EXPECT_GT(parsed + failed, 0);
}

}  // namespace
}  // namespace strata::ir
