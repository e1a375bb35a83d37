// Shared command-line parsing for the subcommands (Boost.Program_options), so
// every command reports bad usage the same way.
#pragma once

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

namespace strata::apps {

namespace po = boost::program_options;

// Parses `args` into `vm`. Prints the error or help and returns false (with
// *out_exit_code set) when the command should stop.
inline bool ParseCommandLine(const std::string& command, const std::vector<std::string>& args,
                             const po::options_description& options,
                             const po::positional_options_description& positional, po::variables_map* vm,
                             int* out_exit_code) {
  try {
    po::store(po::command_line_parser(args).options(options).positional(positional).run(), *vm);
    if (vm->count("help")) {
      std::cout << "usage: strata " << command << " [options]\n" << options;
      *out_exit_code = 0;
      return false;
    }
    po::notify(*vm);
  } catch (const po::error& e) {
    std::fprintf(stderr, "strata %s: %s\n", command.c_str(), e.what());
    *out_exit_code = 2;
    return false;
  }
  return true;
}

}  // namespace strata::apps
