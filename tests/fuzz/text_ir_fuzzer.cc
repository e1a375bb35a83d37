// libFuzzer target: the text IR parser (strata compile's .sir input). A module
// that parses must print to text that parses again, and printing that second
// module must give the same text: the printer and parser agree on every
// construct the parser accepts.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  StatusOr<ir::IRModule> module = ir::ParseModule(text, "fuzz.sir");
  if (!module.ok()) return 0;
  std::string printed = ir::PrintModule(*module);
  StatusOr<ir::IRModule> reparsed = ir::ParseModule(printed, "printed.sir");
  if (!reparsed.ok()) {
    std::fprintf(stderr, "the printed module does not parse: %s\n--- printed:\n%s\n",
                 reparsed.status().message().c_str(), printed.c_str());
    std::abort();
  }
  std::string reprinted = ir::PrintModule(*reparsed);
  if (reprinted != printed) {
    std::fprintf(stderr, "printing is not stable\n--- first:\n%s\n--- second:\n%s\n", printed.c_str(),
                 reprinted.c_str());
    std::abort();
  }
  return 0;
}
