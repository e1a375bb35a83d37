// strata: compile text IR to an executable, run it, inspect it.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "apps/commands.h"
#include "serialization/format_version.h"
#include "support/suggest.h"

namespace {

constexpr const char* kUsage =
    "usage: strata <command> [options]\n"
    "\n"
    "commands:\n"
    "  compile MODEL.onnx|MODEL.sir -o OUT.stx [--dynamic NAME=LO..HI] [--cpu x86-64-v3] [--target cpu,npu] ...\n"
    "  run EXE.stx [--function NAME] --input=@x.npy|--input=2x3xf32=1,2,... [--output=y.npy] ...\n"
    "  inspect EXE.stx [--no-verify-checksums]\n"
    "\n"
    "`strata <command> --help` describes a command's options; `strata --version` prints the version.\n"
    "Exit codes: 0 done, 1 the model, executable or inputs were refused, 2 bad usage, 3 a file could not be\n"
    "read or written, 4 a bug in Strata (docs/cli.md).\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (std::strcmp(argv[1], "--version") == 0 || std::strcmp(argv[1], "-V") == 0) {
    std::printf("strata %s (executable format %u.%u)\n", STRATA_VERSION, strata::serialization::kFormatMajor,
                strata::serialization::kFormatMinor);
    return 0;
  }
  std::string command = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  if (command == "compile") return strata::apps::RunCompileCommand(args);
  if (command == "run") return strata::apps::RunRunCommand(args);
  if (command == "inspect") return strata::apps::RunInspectCommand(args);
  std::fprintf(stderr, "strata: unknown command '%s'%s\n\n%s", command.c_str(),
               strata::DidYouMean(command, {"compile", "run", "inspect", "--version", "--help"}).c_str(), kUsage);
  return 2;
}
