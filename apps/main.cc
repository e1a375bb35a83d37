// strata: compile text IR to an executable, run it, inspect it.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "apps/commands.h"

namespace {

constexpr const char* kUsage =
    "usage: strata <command> [options]\n"
    "\n"
    "commands:\n"
    "  compile FILE.sir -o OUT.stx [--dump-ir DIR] [--pass-before=ANCHOR:PASS] [--pass-after=ANCHOR:PASS]\n"
    "  run EXE.stx [--function NAME] --input=@x.npy|--input=2x3xf32=1,2,... [--output=y.npy] "
    "[--no-verify-checksums]\n"
    "  inspect EXE.stx [--no-verify-checksums]\n"
    "\n"
    "`strata <command> --help` describes a command's options.\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  std::string command = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  if (command == "compile") return strata::apps::RunCompileCommand(args);
  if (command == "run") return strata::apps::RunRunCommand(args);
  if (command == "inspect") return strata::apps::RunInspectCommand(args);
  std::fprintf(stderr, "strata: unknown command '%s'\n\n%s", command.c_str(), kUsage);
  return 2;
}
