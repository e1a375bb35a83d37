// strata run: load an executable, call one function with tensors from .npy files
// or inline values, and print or save the result.
#include <charconv>
#include <cstdio>
#include <optional>

#include "apps/commands.h"
#include "apps/option_parsing.h"
#include "vm/executable.h"
#include "vm/npy.h"
#include "vm/virtual_machine.h"

namespace strata::apps {
namespace {

// A bare number or true/false is a scalar for a Prim parameter: an Int (also for
// bool) or a Float. nullopt when `text` is not one.
std::optional<vm::Value> ParseScalar(const std::string& text) {
  if (text == "true" || text == "false") return vm::Value::FromInt(text == "true" ? 1 : 0);
  if (text.empty() || text.find_first_of("=x@") != std::string::npos) return std::nullopt;
  const char* begin = text.data();
  const char* end = begin + text.size();
  int64_t i = 0;
  if (auto [p, ec] = std::from_chars(begin, end, i); ec == std::errc() && p == end) return vm::Value::FromInt(i);
  double d = 0;
  if (auto [p, ec] = std::from_chars(begin, end, d); ec == std::errc() && p == end) return vm::Value::FromFloat(d);
  return std::nullopt;
}

// "@file.npy" reads a file, "5" / "2.5" / "true" is a scalar, anything else an
// inline tensor "2x3xf32=1,2,...".
StatusOr<vm::Value> ParseInput(const std::string& text, size_t index) {
  if (std::optional<vm::Value> scalar = ParseScalar(text)) return *scalar;
  StatusOr<vm::Ref<vm::Tensor>> tensor =
      !text.empty() && text[0] == '@' ? vm::ReadNpyFile(text.substr(1)) : vm::ParseInlineTensor(text);
  if (!tensor.ok()) {
    ErrorStatus error;
    error << "--input #" << index << ": " << tensor.status().message();
    if (text.find('=') == std::string::npos && text.ends_with(".npy")) error << " (to read a .npy file, write @" << text << ")";
    return error;
  }
  return vm::Value::FromTensor(std::move(tensor).value());
}

// Flattens a (possibly nested) tuple result into its tensors, in order.
Status CollectTensors(const vm::Value& value, std::vector<vm::Value>* out) {
  if (value.is_tensor()) {
    out->push_back(value);
    return Status::Ok();
  }
  if (value.is_tuple()) {
    for (const vm::Value& field : value.tuple()->fields()) STRATA_RETURN_IF_ERROR(CollectTensors(field, out));
    return Status::Ok();
  }
  out->push_back(value);
  return Status::Ok();
}

}  // namespace

int RunRunCommand(const std::vector<std::string>& args) {
  po::options_description options("run options");
  options.add_options()("help,h", "show this help")(
      "executable", po::value<std::string>()->required(), "the executable (.stx)")(
      "function", po::value<std::string>()->default_value("main"), "the function to call")(
      "input", po::value<std::vector<std::string>>(), "an argument: @file.npy, an inline tensor like 2x3xf32=1,2,3,4,5,6, or a scalar (5, 2.5, true)")(
      "output", po::value<std::vector<std::string>>(), "write the result (one per tuple field) to this .npy file");
  po::positional_options_description positional;
  positional.add("executable", 1);
  po::variables_map vm;
  int exit_code = 0;
  if (!ParseCommandLine("run", args, options, positional, &vm, &exit_code)) return exit_code;

  const std::string path = vm["executable"].as<std::string>();
  auto executable = vm::Executable::MapFile(path);
  if (!executable.ok()) {
    std::fprintf(stderr, "%s: error: %s\n", path.c_str(), executable.status().message().c_str());
    return 1;
  }
  std::vector<vm::Value> inputs;
  if (vm.count("input")) {
    const auto& texts = vm["input"].as<std::vector<std::string>>();
    for (size_t i = 0; i < texts.size(); ++i) {
      StatusOr<vm::Value> input = ParseInput(texts[i], i);
      if (!input.ok()) {
        std::fprintf(stderr, "strata run: %s\n", input.status().message().c_str());
        return 1;
      }
      inputs.push_back(std::move(input).value());
    }
  }

  vm::VirtualMachine machine(*executable);
  const std::string function = vm["function"].as<std::string>();
  StatusOr<vm::Value> result = machine.Invoke(function, inputs);
  if (!result.ok()) {
    std::fprintf(stderr, "error: %s\n", result.status().message().c_str());
    return 1;
  }

  std::vector<vm::Value> results;
  (void)CollectTensors(*result, &results);
  std::vector<std::string> outputs;
  if (vm.count("output")) outputs = vm["output"].as<std::vector<std::string>>();
  if (!outputs.empty() && outputs.size() != results.size()) {
    std::fprintf(stderr, "strata run: %zu --output files given, but '%s' returned %zu values\n", outputs.size(),
                 function.c_str(), results.size());
    return 1;
  }
  for (size_t i = 0; i < results.size(); ++i) {
    const vm::Value& value = results[i];
    if (!outputs.empty()) {
      if (!value.is_tensor()) {
        std::fprintf(stderr, "strata run: result #%zu is a %s, not a tensor; cannot write '%s'\n", i,
                     value.kind_name(), outputs[i].c_str());
        return 1;
      }
      Status written = vm::WriteNpyFile(outputs[i], *value.tensor());
      if (!written.ok()) {
        std::fprintf(stderr, "strata run: %s\n", written.message().c_str());
        return 1;
      }
      continue;
    }
    if (value.is_tensor()) {
      std::printf("%s\n", vm::FormatInlineTensor(*value.tensor(), 64).c_str());
    } else {
      std::printf("%s\n", value.Describe().c_str());
    }
  }
  return 0;
}

}  // namespace strata::apps
