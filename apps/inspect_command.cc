// strata inspect: describe an executable without running it.
#include <cstdio>

#include "apps/commands.h"
#include "apps/load_executable.h"
#include "apps/option_parsing.h"
#include "vm/executable.h"
#include "vm/executable_description.h"

namespace strata::apps {

int RunInspectCommand(const std::vector<std::string>& args) {
  po::options_description options("inspect options");
  options.add_options()("help,h", "show this help")("executable", po::value<std::string>(),
                                                    "the executable (.stx); - reads standard input")(
      "no-verify-checksums",
      "describe the file without verifying its checksums, so that a file whose weights are damaged can still be "
      "read; its structure is verified all the same (docs/executable_format.md)");
  po::positional_options_description positional;
  positional.add("executable", 1);
  po::variables_map vm;
  int exit_code = 0;
  if (!ParseCommandLine("inspect", "strata inspect EXE.stx [--no-verify-checksums]", args, options, positional, &vm,
                        &exit_code))
    return exit_code;

  if (!vm.count("executable")) {
    std::fprintf(stderr,
                 "strata inspect: no executable given\nusage: strata inspect EXE.stx [--no-verify-checksums]\n");
    return kExitUsage;
  }
  const std::string path = vm["executable"].as<std::string>();
  // Inspection verifies the file but neither loads native code nor needs the
  // library functions it names, so files built for another machine can be read.
  vm::LoadOptions load_options;
  load_options.resolve = false;
  load_options.verify_checksums = vm.count("no-verify-checksums") == 0;
  int load_exit_code = kExitOk;
  const std::shared_ptr<const vm::Executable> executable =
      LoadExecutableArgument("inspect", path, load_options, &load_exit_code);
  if (executable == nullptr) return load_exit_code;
  std::fputs(vm::DescribeExecutable(*executable).c_str(), stdout);
  return kExitOk;
}

}  // namespace strata::apps
