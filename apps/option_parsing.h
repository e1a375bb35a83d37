// Shared command-line parsing for the subcommands (Boost.Program_options), so
// every command reports bad usage the same way, and the exit codes
// (docs/cli.md#exit-codes).
#pragma once

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "support/status.h"
#include "support/suggest.h"

namespace strata::apps {

namespace po = boost::program_options;

// One exit code per kind of failure, the same for every command.
enum ExitCode : int {
  kExitOk = 0,
  kExitRefused = 1,   // the model, executable or inputs were refused (the message says why and where)
  kExitUsage = 2,     // the command line is wrong
  kExitFile = 3,      // a file could not be read or written
  kExitInternal = 4,  // a bug in Strata: please report it with the message
};

inline int ExitCodeFor(const Status& status) {
  return status.ok() ? kExitOk : status.code() == StatusCode::kInternal ? kExitInternal : kExitRefused;
}

// The long names of `options` ("--input"), for "did you mean".
inline std::vector<std::string> OptionNames(const po::options_description& options) {
  std::vector<std::string> names;
  for (const auto& option : options.options()) names.push_back("--" + option->long_name());
  return names;
}

// Parses `args` into `vm`. Prints the error or help and returns false (with
// *out_exit_code set) when the command should stop. `usage` is the command's
// synopsis ("strata compile MODEL -o OUT.stx [options]").
inline bool ParseCommandLine(const std::string& command, const std::string& usage, const std::vector<std::string>& args,
                             const po::options_description& options,
                             const po::positional_options_description& positional, po::variables_map* vm,
                             int* out_exit_code) {
  try {
    po::store(po::command_line_parser(args).options(options).positional(positional).run(), *vm);
    if (vm->count("help")) {
      std::cout << "usage: " << usage << "\n\n" << options;
      *out_exit_code = kExitOk;
      return false;
    }
    po::notify(*vm);
  } catch (const po::unknown_option& e) {
    std::string name = e.get_option_name();
    name = name.substr(0, name.find('='));  // "--inptu=1xf32=1" is option "--inptu"
    std::fprintf(stderr, "strata %s: unknown option '%s'%s\nusage: %s (strata %s --help lists the options)\n",
                 command.c_str(), name.c_str(), DidYouMean(name, OptionNames(options)).c_str(), usage.c_str(),
                 command.c_str());
    *out_exit_code = kExitUsage;
    return false;
  } catch (const po::too_many_positional_options_error&) {
    std::fprintf(stderr, "strata %s: too many files given\nusage: %s\n", command.c_str(), usage.c_str());
    *out_exit_code = kExitUsage;
    return false;
  } catch (const po::error& e) {
    std::fprintf(stderr, "strata %s: %s\nusage: %s\n", command.c_str(), e.what(), usage.c_str());
    *out_exit_code = kExitUsage;
    return false;
  }
  return true;
}

}  // namespace strata::apps
