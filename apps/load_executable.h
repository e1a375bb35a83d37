// The executable a command was given: a file (mapped), or - for standard input.
// Prints what went wrong, with what to do when the file is a model rather than
// an executable, and sets the exit code (apps/option_parsing.h).
#pragma once

#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "apps/option_parsing.h"
#include "vm/executable.h"

namespace strata::apps {

inline std::shared_ptr<const vm::Executable> LoadExecutableArgument(const std::string& command, const std::string& path,
                                                                    const vm::LoadOptions& options, int* exit_code) {
  StatusOr<std::shared_ptr<const vm::Executable>> executable = Status::Error(StatusCode::kInternal, "not loaded");
  if (path == "-") {
    const std::string bytes((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    executable = vm::Executable::LoadFromBytes(
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), options);
  } else {
    executable = vm::Executable::MapFile(path, options);
  }
  if (executable.ok()) return *std::move(executable);
  // The loader's message starts with the path already.
  std::fprintf(stderr, "strata %s: error: %s\n", command.c_str(), executable.status().message().c_str());
  const std::string_view name(path);
  const bool model =
      name.ends_with(".onnx") || name.ends_with(".sir") ||
      (!name.ends_with(".stx") && executable.status().message().find("not a Strata executable") != std::string::npos);
  if (model && executable.status().code() != StatusCode::kNotFound) {
    std::fprintf(stderr,
                 "hint: '%s' is not an executable; if it is a model (.onnx or .sir), compile it first: "
                 "strata compile %s -o model.stx\n",
                 path.c_str(), path.c_str());
  }
  *exit_code = executable.status().code() == StatusCode::kNotFound ? kExitFile : ExitCodeFor(executable.status());
  return nullptr;
}

}  // namespace strata::apps
