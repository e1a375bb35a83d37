// strata run: load an executable, call one function with tensors from .npy files
// or inline values, and print or save the result.
#include <charconv>
#include <cstdio>
#include <optional>

#include "apps/commands.h"
#include "apps/option_parsing.h"
#include "vm/executable.h"
#include "vm/npy.h"
#include "vm/tensor_compare.h"
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

// "@file.npy" reads a file, anything else is an inline tensor "2x3xf32=1,2,...".
// `option` and `index` name the argument in errors ("--input #1").
StatusOr<vm::Ref<vm::Tensor>> ParseTensorArgument(const std::string& text, const char* option, size_t index) {
  StatusOr<vm::Ref<vm::Tensor>> tensor =
      !text.empty() && text[0] == '@' ? vm::ReadNpyFile(text.substr(1)) : vm::ParseInlineTensor(text);
  if (tensor.ok()) return tensor;
  ErrorStatus error;
  error << option << " #" << index << ": " << tensor.status().message();
  if (!text.starts_with("@") && text.find('=') == std::string::npos && text.ends_with(".npy")) error << " (to read a .npy file, write @" << text << ")";
  return error;
}

// A scalar ("5", "2.5", "true") or a tensor argument.
StatusOr<vm::Value> ParseInput(const std::string& text, size_t index) {
  if (std::optional<vm::Value> scalar = ParseScalar(text)) return *scalar;
  StatusOr<vm::Ref<vm::Tensor>> tensor = ParseTensorArgument(text, "--input", index);
  if (!tensor.ok()) return tensor.status();
  return vm::Value::FromTensor(std::move(tensor).value());
}

// Checks each result against its --expected-output and prints one line per
// result; false if any differs.
bool CheckExpectedOutputs(const std::vector<vm::Value>& results, const std::vector<std::string>& expected_texts,
                          const vm::Tolerance& tolerance) {
  if (expected_texts.size() != results.size()) {
    std::fprintf(stderr, "strata run: %zu --expected-output values given, but the function returned %zu\n",
                 expected_texts.size(), results.size());
    return false;
  }
  bool all_match = true;
  for (size_t i = 0; i < results.size(); ++i) {
    StatusOr<vm::Ref<vm::Tensor>> expected = ParseTensorArgument(expected_texts[i], "--expected-output", i);
    if (!expected.ok()) {
      std::fprintf(stderr, "strata run: %s\n", expected.status().message().c_str());
      return false;
    }
    if (!results[i].is_tensor()) {
      std::fprintf(stderr, "[FAILED] result #%zu: got %s, expected %s\n", i, results[i].Describe().c_str(),
                   (*expected)->TypeString().c_str());
      all_match = false;
      continue;
    }
    StatusOr<vm::TensorComparison> comparison = vm::CompareTensors(*results[i].tensor(), **expected, tolerance);
    if (!comparison.ok()) {
      std::fprintf(stderr, "[FAILED] result #%zu: %s\n", i, comparison.status().message().c_str());
      all_match = false;
    } else if (!comparison->ok()) {
      std::fprintf(stderr, "[FAILED] result #%zu: %s\n", i, vm::DescribeMismatch(*comparison, tolerance).c_str());
      all_match = false;
    } else {
      std::printf("[ok] result #%zu matches (%s, max abs diff %g)\n", i, (*expected)->TypeString().c_str(),
                  comparison->max_abs_diff);
    }
  }
  return all_match;
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
      "output", po::value<std::vector<std::string>>(), "write the result (one per tuple field) to this .npy file")(
      "expected-output", po::value<std::vector<std::string>>(),
      "compare the result (one per tuple field) with @file.npy or an inline tensor; exit 1 if they differ")(
      "rtol", po::value<double>()->default_value(1e-4, "1e-4"), "relative tolerance of --expected-output")(
      "atol", po::value<double>()->default_value(1e-5, "1e-5"), "absolute tolerance of --expected-output");
  po::positional_options_description positional;
  positional.add("executable", 1);
  po::variables_map vm;
  int exit_code = 0;
  if (!ParseCommandLine("run", args, options, positional, &vm, &exit_code)) return exit_code;

  const vm::Tolerance tolerance{vm["rtol"].as<double>(), vm["atol"].as<double>()};
  if (!(tolerance.rtol >= 0) || !(tolerance.atol >= 0)) {
    std::fprintf(stderr, "strata run: --rtol and --atol must be non-negative numbers\n");
    return 2;
  }
  const std::string path = vm["executable"].as<std::string>();
  auto executable = vm::Executable::MapFile(path);
  if (!executable.ok()) {
    // The loader's message starts with the path already.
    std::fprintf(stderr, "error: %s\n", executable.status().message().c_str());
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
  const bool checking = vm.count("expected-output") > 0;
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
    if (checking) continue;  // the check prints one line per result instead
    if (value.is_tensor()) {
      std::printf("%s\n", vm::FormatInlineTensor(*value.tensor(), 64).c_str());
    } else {
      std::printf("%s\n", value.Describe().c_str());
    }
  }
  if (checking) {
    if (!CheckExpectedOutputs(results, vm["expected-output"].as<std::vector<std::string>>(), tolerance)) return 1;
  }
  return 0;
}

}  // namespace strata::apps
