// strata run: load an executable, call one function with tensors from .npy files
// or inline values, and print or save the result. --repeat / --warmup time the
// call, --profile and --trace say where its time goes (vm/profiler.h).
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "apps/commands.h"
#include "apps/load_executable.h"
#include "apps/option_parsing.h"
#include "vm/executable.h"
#include "vm/kernel_threads.h"
#include "vm/profiler.h"
#include "vm/tensor_io/npy.h"
#include "vm/tensor_io/tensor_compare.h"
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
  ErrorStatus error(tensor.status().code());  // a file that cannot be read keeps its kind (the exit code)
  error << option << " #" << index << ": " << tensor.status().message();
  if (!text.starts_with("@") && text.find('=') == std::string::npos && text.ends_with(".npy"))
    error << " (to read a .npy file, write @" << text << ")";
  return error;
}

// A scalar ("5", "2.5", "true") or a tensor argument.
StatusOr<vm::Value> ParseInput(const std::string& text, size_t index) {
  if (std::optional<vm::Value> scalar = ParseScalar(text)) return *scalar;
  StatusOr<vm::Ref<vm::Tensor>> tensor = ParseTensorArgument(text, "--input", index);
  if (!tensor.ok()) return tensor.status();
  return vm::Value::FromTensor(std::move(tensor).value());
}

// The model's own names of the results (format 1.6: an ONNX model's output names), one
// per result, or none when the file records none (they would be "output0", ..) or
// the results are not one per name (a tuple nested in the result is flattened).
std::vector<std::string> ResultNames(const vm::Executable& exe, const std::string& function, size_t num_results) {
  std::optional<int32_t> index = exe.FindEntryPoint(function);
  if (!index) return {};
  const std::vector<std::string>& names = exe.functions()[static_cast<size_t>(*index)].output_names;
  if (names.size() != num_results || names == vm::DefaultOutputNames(names.size())) return {};
  return names;
}

// "result #1", or "result #1 (probs)" when the result has a name of its own.
std::string ResultLabel(size_t i, const std::vector<std::string>& names) {
  std::string label = "result #" + std::to_string(i);
  return names.empty() ? label : label + " (" + names[i] + ")";
}

// The exit code of a value that could not be read: a file's, or a refused one's.
int ArgumentExitCode(const Status& status) {
  return status.code() == StatusCode::kNotFound || status.code() == StatusCode::kFailedPrecondition ? kExitFile
                                                                                                    : kExitRefused;
}

// Checks each result against its --expected-output and prints one line per
// result: kExitOk when every one matches, else the exit code (kExitRefused for
// a mismatch, kExitFile for an expected file that cannot be read).
int CheckExpectedOutputs(const std::vector<vm::Value>& results, const std::vector<std::string>& names,
                         const std::vector<std::string>& expected_texts, const vm::Tolerance& tolerance) {
  if (expected_texts.size() != results.size()) {
    std::fprintf(stderr, "strata run: %zu --expected-output values given, but the function returned %zu\n",
                 expected_texts.size(), results.size());
    return kExitRefused;
  }
  bool all_match = true;
  for (size_t i = 0; i < results.size(); ++i) {
    StatusOr<vm::Ref<vm::Tensor>> expected = ParseTensorArgument(expected_texts[i], "--expected-output", i);
    if (!expected.ok()) {
      std::fprintf(stderr, "strata run: %s\n", expected.status().message().c_str());
      return ArgumentExitCode(expected.status());
    }
    if (!results[i].is_tensor()) {
      std::fprintf(stderr, "[FAILED] %s: got %s, expected %s\n", ResultLabel(i, names).c_str(),
                   results[i].Describe().c_str(), (*expected)->TypeString().c_str());
      all_match = false;
      continue;
    }
    StatusOr<vm::TensorComparison> comparison = vm::CompareTensors(*results[i].tensor(), **expected, tolerance);
    if (!comparison.ok()) {
      std::fprintf(stderr, "[FAILED] %s: %s\n", ResultLabel(i, names).c_str(), comparison.status().message().c_str());
      all_match = false;
    } else if (!comparison->ok()) {
      std::fprintf(stderr, "[FAILED] %s: %s\n", ResultLabel(i, names).c_str(),
                   vm::DescribeMismatch(*comparison, tolerance).c_str());
      all_match = false;
    } else {
      std::printf("[ok] %s matches (%s, max abs diff %g)\n", ResultLabel(i, names).c_str(),
                  (*expected)->TypeString().c_str(), comparison->max_abs_diff);
    }
  }
  return all_match ? kExitOk : kExitRefused;
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

// "12.0 KiB", "512 B": sizes for people.
std::string FormatBytes(int64_t bytes) {
  char text[32];
  if (bytes < 1024) {
    std::snprintf(text, sizeof(text), "%lld B", static_cast<long long>(bytes));
  } else if (bytes < 1024 * 1024) {
    std::snprintf(text, sizeof(text), "%.1f KiB", static_cast<double>(bytes) / 1024);
  } else {
    std::snprintf(text, sizeof(text), "%.1f MiB", static_cast<double>(bytes) / (1024 * 1024));
  }
  return text;
}

// One line of --stats: what call `index` (1-based) allocated and held.
void PrintMemoryStats(size_t index, const vm::MemoryStats& stats) {
  double ratio = stats.lower_bound_bytes > 0
                     ? static_cast<double>(stats.peak_live_bytes) / static_cast<double>(stats.lower_bound_bytes)
                     : 1.0;
  std::fprintf(stderr,
               "memory, call %zu: %lld allocations, %lld from the system (%s); peak live %s (%lld bytes), "
               "lower bound %s (%lld bytes), %.2fx\n",
               index, static_cast<long long>(stats.allocations), static_cast<long long>(stats.system_allocations),
               FormatBytes(stats.system_bytes).c_str(), FormatBytes(stats.peak_live_bytes).c_str(),
               static_cast<long long>(stats.peak_live_bytes), FormatBytes(stats.lower_bound_bytes).c_str(),
               static_cast<long long>(stats.lower_bound_bytes), ratio);
}

// --stats: what all the calls allocated and held together, printed once after
// the last (per-call lines only with --stats=per-call). The system
// allocations say whether later calls were served from the pool's cache.
struct StatsSummary {
  int64_t calls = 0;
  int64_t allocations = 0, system_allocations = 0, system_bytes = 0, later_system_allocations = 0;
  int64_t peak_live_bytes = 0, lower_bound_bytes = 0;
  vm::DeviceStats devices;

  void Add(const vm::MemoryStats& m, const vm::DeviceStats& d) {
    ++calls;
    allocations += m.allocations;
    system_allocations += m.system_allocations;
    system_bytes += m.system_bytes;
    if (calls > 1) later_system_allocations += m.system_allocations;
    peak_live_bytes = std::max(peak_live_bytes, m.peak_live_bytes);
    lower_bound_bytes = std::max(lower_bound_bytes, m.lower_bound_bytes);
    devices.host_to_device_copies += d.host_to_device_copies;
    devices.host_to_device_bytes += d.host_to_device_bytes;
    devices.device_to_host_copies += d.device_to_host_copies;
    devices.device_to_host_bytes += d.device_to_host_bytes;
    devices.kernel_launches += d.kernel_launches;
    devices.device_time_ns += d.device_time_ns;
  }

  void Print(bool has_devices) const {
    if (calls == 0) return;
    const double ratio =
        lower_bound_bytes > 0 ? static_cast<double>(peak_live_bytes) / static_cast<double>(lower_bound_bytes) : 1.0;
    std::fprintf(stderr,
                 "memory over %lld call%s: %lld allocations, %lld from the system (%s; %lld after the first call); "
                 "largest peak live %s (%lld bytes), largest lower bound %s (%lld bytes), %.2fx\n",
                 static_cast<long long>(calls), calls == 1 ? "" : "s", static_cast<long long>(allocations),
                 static_cast<long long>(system_allocations), FormatBytes(system_bytes).c_str(),
                 static_cast<long long>(later_system_allocations), FormatBytes(peak_live_bytes).c_str(),
                 static_cast<long long>(peak_live_bytes), FormatBytes(lower_bound_bytes).c_str(),
                 static_cast<long long>(lower_bound_bytes), ratio);
    if (!has_devices) return;
    std::fprintf(
        stderr,
        "devices over %lld call%s: %lld host->device copies (%s), %lld device->host copies (%s), %lld device "
        "kernel launches, device time %.3f us\n",
        static_cast<long long>(calls), calls == 1 ? "" : "s", static_cast<long long>(devices.host_to_device_copies),
        FormatBytes(devices.host_to_device_bytes).c_str(), static_cast<long long>(devices.device_to_host_copies),
        FormatBytes(devices.device_to_host_bytes).c_str(), static_cast<long long>(devices.kernel_launches),
        static_cast<double>(devices.device_time_ns) / 1000.0);
  }
};

// The device line of --stats (executables compiled for a device target).
void PrintDeviceStats(size_t index, const vm::DeviceStats& stats) {
  std::fprintf(stderr,
               "devices, call %zu: %lld host->device copies (%s), %lld device->host copies (%s), %lld device kernel "
               "launches, device time %.3f us\n",
               index, static_cast<long long>(stats.host_to_device_copies),
               FormatBytes(stats.host_to_device_bytes).c_str(), static_cast<long long>(stats.device_to_host_copies),
               FormatBytes(stats.device_to_host_bytes).c_str(), static_cast<long long>(stats.kernel_launches),
               static_cast<double>(stats.device_time_ns) / 1000.0);
}

// --repeat, --warmup, --profile and --trace, checked.
struct TimingOptions {
  int64_t warmup = 0;          // untimed calls first
  int64_t repeat = 1;          // then the timed (and profiled) calls
  bool print_latency = false;  // --repeat was given
  bool profile = false;
  std::string trace_path;  // empty: no trace
};

// The latency of every timed call is kept (8 bytes each), so the count is
// bounded: at most 80 MB.
constexpr int64_t kMaxCalls = 10'000'000;

// Reads the timing options; false after printing the usage error.
bool ParseTimingOptions(const po::variables_map& vm, TimingOptions* out) {
  if (vm.count("repeat")) {
    out->repeat = vm["repeat"].as<int64_t>();
    out->print_latency = true;
    if (out->repeat < 1 || out->repeat > kMaxCalls) {
      std::fprintf(stderr, "strata run: --repeat must be between 1 and %lld, got %lld\n",
                   static_cast<long long>(kMaxCalls), static_cast<long long>(out->repeat));
      return false;
    }
  }
  out->warmup = vm["warmup"].as<int64_t>();
  if (out->warmup < 0 || out->warmup > kMaxCalls) {
    std::fprintf(stderr, "strata run: --warmup must be between 0 and %lld, got %lld\n",
                 static_cast<long long>(kMaxCalls), static_cast<long long>(out->warmup));
    return false;
  }
  out->profile = vm.count("profile") > 0;
  if (vm.count("trace")) {
    out->trace_path = vm["trace"].as<std::string>();
    if (out->trace_path.empty()) {
      std::fprintf(stderr, "strata run: --trace needs a file name (--trace=trace.json)\n");
      return false;
    }
  }
  return true;
}

// "latency over 100 runs: median 12.30 us, p90 13.02 us, min 11.80 us, mean 12.41 us".
// The median of an even count is the mean of the middle two; p90 is the
// nearest-rank percentile (the smallest latency >= 90% of the runs).
std::string FormatLatency(std::vector<double> us, int64_t warmup) {
  std::sort(us.begin(), us.end());
  const size_t n = us.size();
  const double median = n % 2 == 1 ? us[n / 2] : (us[n / 2 - 1] + us[n / 2]) / 2;
  const double p90 = us[static_cast<size_t>(std::ceil(0.9 * static_cast<double>(n))) - 1];
  double sum = 0;
  for (double v : us) sum += v;
  char text[256];
  std::snprintf(text, sizeof(text), "latency over %zu run%s%s: median %.2f us, p90 %.2f us, min %.2f us, mean %.2f us",
                n, n == 1 ? "" : "s", warmup > 0 ? (" after " + std::to_string(warmup) + " warmup").c_str() : "",
                median, p90, us.front(), sum / static_cast<double>(n));
  return text;
}

}  // namespace

constexpr const char* kRunUsage = "strata run EXE.stx|- [--function NAME] --input=... [options]";

int RunRunCommand(const std::vector<std::string>& args) {
  po::options_description options("run options");
  options.add_options()("help,h", "show this help")("executable", po::value<std::string>(),
                                                    "the executable (.stx); - reads standard input")(
      "function", po::value<std::string>()->default_value("main"), "the function to call")(
      "input", po::value<std::vector<std::string>>(),
      "an argument: @file.npy, an inline tensor like 2x3xf32=1,2,3,4,5,6, or a scalar (5, 2.5, true)")(
      "output", po::value<std::vector<std::string>>(), "write the result (one per tuple field) to this .npy file")(
      "expected-output", po::value<std::vector<std::string>>(),
      "compare the result (one per tuple field) with @file.npy or an inline tensor; exit 1 if they differ")(
      "rtol", po::value<double>()->default_value(1e-4, "1e-4"), "relative tolerance of --expected-output")(
      "atol", po::value<double>()->default_value(1e-5, "1e-5"), "absolute tolerance of --expected-output")(
      "device-options", po::value<std::vector<std::string>>(),
      "NAME=OPTIONS: open device NAME with these options instead of the executable's, e.g. "
      "--device-options sim_npu=memory=64M (docs/devices.md)")(
      "stats", po::value<std::string>()->implicit_value("summary")->value_name("per-call"),
      "print (to stderr), once after all calls: allocations, bytes from the system, the largest peak live bytes "
      "and lower bound (the most tensor bytes alive at once); --stats=per-call prints a line per call instead; "
      "see docs/memory.md")(
      "repeat", po::value<int64_t>(),
      "call the function N times (after --warmup calls) and print (to stderr) the latency: median, p90, min, mean")(
      "warmup", po::value<int64_t>()->default_value(0), "untimed calls before the timed ones")(
      "threads", po::value<int>(),
      "threads of the kernels' parallel loops and of the oneDNN and OpenBLAS calls, the calling thread "
      "included (default: STRATA_NUM_THREADS, else the CPUs this process may use)")(
      "profile",
      "print (to stderr) the time per instruction kind, per compiled kernel and per library function of the "
      "timed calls; see docs/vm.md")(
      "trace", po::value<std::string>(),
      "write a Chrome trace-event JSON of every call the timed calls make to this file (open it in "
      "https://ui.perfetto.dev)")(
      "no-verify-checksums",
      "load without verifying the file's checksums (every byte is read to verify them; without them damaged "
      "weights go unnoticed); see docs/executable_format.md");
  po::positional_options_description positional;
  positional.add("executable", 1);
  po::variables_map vm;
  int exit_code = 0;
  if (!ParseCommandLine("run", kRunUsage, args, options, positional, &vm, &exit_code)) return exit_code;

  const vm::Tolerance tolerance{vm["rtol"].as<double>(), vm["atol"].as<double>()};
  if (!(tolerance.rtol >= 0) || !(tolerance.atol >= 0)) {
    std::fprintf(stderr, "strata run: --rtol and --atol must be non-negative numbers\n");
    return kExitUsage;
  }
  TimingOptions timing;
  if (!ParseTimingOptions(vm, &timing)) return kExitUsage;
  if (vm.count("threads")) {
    if (Status status = vm::SetKernelThreadCount(vm["threads"].as<int>()); !status.ok()) {
      std::fprintf(stderr, "strata run: --threads: %s\n", status.message().c_str());
      return kExitUsage;
    }
  }
  vm::LoadOptions load_options;
  load_options.verify_checksums = vm.count("no-verify-checksums") == 0;
  if (vm.count("device-options")) {
    for (const std::string& text : vm["device-options"].as<std::vector<std::string>>()) {
      const size_t equals = text.find('=');
      if (equals == std::string::npos || equals == 0) {
        std::fprintf(stderr, "strata run: --device-options expects NAME=OPTIONS, got '%s'\n", text.c_str());
        return kExitUsage;
      }
      load_options.device_options[text.substr(0, equals)] = text.substr(equals + 1);
    }
  }
  if (!vm.count("executable")) {
    std::fprintf(stderr, "strata run: no executable given\nusage: %s\n", kRunUsage);
    return kExitUsage;
  }
  const std::string path = vm["executable"].as<std::string>();
  int load_exit_code = kExitOk;
  const std::shared_ptr<const vm::Executable> executable =
      LoadExecutableArgument("run", path, load_options, &load_exit_code);
  if (executable == nullptr) return load_exit_code;
  std::vector<vm::Value> inputs;
  if (vm.count("input")) {
    const auto& texts = vm["input"].as<std::vector<std::string>>();
    for (size_t i = 0; i < texts.size(); ++i) {
      StatusOr<vm::Value> input = ParseInput(texts[i], i);
      if (!input.ok()) {
        std::fprintf(stderr, "strata run: %s\n", input.status().message().c_str());
        return ArgumentExitCode(input.status());
      }
      inputs.push_back(std::move(input).value());
    }
  }

  // Opened before anything runs, so a bad path fails fast.
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> trace_file(nullptr, &std::fclose);
  if (!timing.trace_path.empty()) {
    trace_file.reset(std::fopen(timing.trace_path.c_str(), "w"));
    if (!trace_file) {
      std::fprintf(stderr, "strata run: cannot write the trace to '%s': %s\n", timing.trace_path.c_str(),
                   std::strerror(errno));
      return kExitFile;
    }
  }

  const std::string stats_mode = vm.count("stats") ? vm["stats"].as<std::string>() : "";
  if (!stats_mode.empty() && stats_mode != "summary" && stats_mode != "per-call") {
    std::fprintf(stderr, "strata run: --stats takes no value or =per-call, got '%s'\n", stats_mode.c_str());
    return kExitUsage;
  }
  StatsSummary stats_summary;
  vm::VirtualMachine machine(executable);
  const std::string function = vm["function"].as<std::string>();
  // The profiler watches the timed calls only (the warmup calls fill the
  // memory pool's cache, which is what a service's steady state looks like);
  // their latencies then include its clock reads.
  std::unique_ptr<vm::Profiler> profiler;
  if (timing.profile || trace_file) {
    const vm::Profiler::Options options{.record_trace = trace_file != nullptr};
    profiler = std::make_unique<vm::Profiler>(executable, options);
  }
  std::vector<double> latencies_us;
  latencies_us.reserve(static_cast<size_t>(timing.repeat));
  vm::Value result;
  bool failed = false;
  for (int64_t call = 0; call < timing.warmup + timing.repeat && !failed; ++call) {
    if (call == timing.warmup && profiler) (void)machine.SetProfiler(profiler.get());  // same executable
    const auto start = std::chrono::steady_clock::now();
    StatusOr<vm::Value> called = machine.Invoke(function, inputs);
    const auto end = std::chrono::steady_clock::now();
    if (!called.ok()) {
      std::fprintf(stderr, "error: %s\n", called.status().message().c_str());
      failed = true;
      continue;
    }
    if (stats_mode == "per-call") {
      PrintMemoryStats(static_cast<size_t>(call) + 1, machine.last_memory_stats());
      if (!executable->devices().empty()) PrintDeviceStats(static_cast<size_t>(call) + 1, machine.last_device_stats());
    } else if (stats_mode == "summary") {
      stats_summary.Add(machine.last_memory_stats(), machine.last_device_stats());
    }
    if (call >= timing.warmup) latencies_us.push_back(std::chrono::duration<double, std::micro>(end - start).count());
    result = std::move(called).value();
  }
  stats_summary.Print(!executable->devices().empty());
  // A failed call still reports what the profiler saw up to the failure.
  if (timing.profile) std::fputs(profiler->FormatReport().c_str(), stderr);
  if (trace_file) {
    const std::string json = profiler->TraceJson();
    const bool written = std::fwrite(json.data(), 1, json.size(), trace_file.get()) == json.size();
    if (!written || std::fclose(trace_file.release()) != 0) {
      std::fprintf(stderr, "strata run: cannot write the trace to '%s': %s\n", timing.trace_path.c_str(),
                   std::strerror(errno));
      return kExitFile;
    }
  }
  if (failed) return kExitRefused;
  if (timing.print_latency) {
    std::fprintf(stderr, "%s%s\n", FormatLatency(latencies_us, timing.warmup).c_str(),
                 profiler ? " (profiled: includes the profiler's clock reads)" : "");
  }

  std::vector<vm::Value> results;
  (void)CollectTensors(result, &results);
  const std::vector<std::string> names = ResultNames(*executable, function, results.size());
  std::vector<std::string> outputs;
  if (vm.count("output")) outputs = vm["output"].as<std::vector<std::string>>();
  if (!outputs.empty() && outputs.size() != results.size()) {
    std::fprintf(stderr, "strata run: %zu --output files given, but '%s' returned %zu values\n", outputs.size(),
                 function.c_str(), results.size());
    return kExitRefused;
  }
  const bool checking = vm.count("expected-output") > 0;
  for (size_t i = 0; i < results.size(); ++i) {
    const vm::Value& value = results[i];
    if (!outputs.empty()) {
      if (!value.is_tensor()) {
        std::fprintf(stderr, "strata run: %s is a %s, not a tensor; cannot write '%s'\n", ResultLabel(i, names).c_str(),
                     value.kind_name(), outputs[i].c_str());
        return kExitRefused;
      }
      Status written = vm::WriteNpyFile(outputs[i], *value.tensor());
      if (!written.ok()) {
        std::fprintf(stderr, "strata run: %s\n", written.message().c_str());
        return kExitFile;
      }
      continue;
    }
    if (checking) continue;  // the check prints one line per result instead
    // "probs: 2x3xf32=..." when the result has a name of its own; the bare value otherwise.
    const std::string label = names.empty() ? "" : names[i] + ": ";
    if (value.is_tensor()) {
      std::printf("%s%s\n", label.c_str(), vm::FormatInlineTensor(*value.tensor(), 64).c_str());
    } else {
      std::printf("%s%s\n", label.c_str(), value.Describe().c_str());
    }
  }
  if (checking) {
    return CheckExpectedOutputs(results, names, vm["expected-output"].as<std::vector<std::string>>(), tolerance);
  }
  return kExitOk;
}

}  // namespace strata::apps
