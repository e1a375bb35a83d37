// The profiler's report and its Chrome trace-event output.
#include "vm/profiler.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <string_view>

#include "support/printable_text.h"

namespace strata::vm {
namespace {

const char* CategoryName(Profiler::EventCategory category) {
  switch (category) {
    case Profiler::EventCategory::kLibrary: return "library";
    case Profiler::EventCategory::kCompiledKernel: return "compiled kernel";
    case Profiler::EventCategory::kBytecode: return "bytecode";
    case Profiler::EventCategory::kInvoke: return "invoke";
    case Profiler::EventCategory::kDevice: return "device";
  }
  return "<invalid>";
}

// `text` as a JSON string literal: quotes, backslashes and control bytes
// escaped, valid UTF-8 (non-ASCII names) kept. A byte that is not valid UTF-8
// (the verifier refuses such names, but the output must be valid JSON whatever
// the input) becomes the Latin-1 code point \u00XX.
void AppendJsonString(std::string* out, std::string_view text) {
  out->push_back('"');
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(static_cast<char>(c));
    } else if (c >= 0x20 && c < 0x7f) {
      out->push_back(static_cast<char>(c));
    } else if (const size_t length = c >= 0x80 ? Utf8SequenceLength(text, i) : 0; length > 0) {
      out->append(text.substr(i, length));
      i += length;
      continue;
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      out->append(escaped);
    }
    ++i;
  }
  out->push_back('"');
}

void AppendFormat(std::string* out, const char* format, auto... args) {
  char buffer[256];
  int n = std::snprintf(buffer, sizeof(buffer), format, args...);
  if (n > 0) out->append(buffer, std::min<size_t>(static_cast<size_t>(n), sizeof(buffer) - 1));
}

double Micros(int64_t ns) { return static_cast<double>(ns) / 1e3; }

// One row of a report table.
struct Row {
  std::string name;
  const char* kind;  // null for the instruction table
  Profiler::Stat stat;
};

// Rows sorted by total time (then by name, so the order is deterministic),
// with count, total, mean and share of `instruction_ns`.
void AppendTable(std::string* out, const char* first_column, std::vector<Row> rows, int64_t instruction_ns) {
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    if (a.stat.total_ns != b.stat.total_ns) return a.stat.total_ns > b.stat.total_ns;
    return a.name < b.name;
  });
  size_t width = std::string_view(first_column).size();
  for (const Row& row : rows) width = std::max(width, row.name.size());
  const bool with_kind = !rows.empty() && rows[0].kind != nullptr;
  size_t kind_width = std::string_view("kind").size();
  if (with_kind) {
    for (const Row& row : rows) kind_width = std::max(kind_width, std::string_view(row.kind).size());
  }
  const int w = static_cast<int>(width);
  const int kw = static_cast<int>(kind_width);
  if (with_kind) {
    AppendFormat(out, "%-*s  %-*s %10s %12s %10s %7s\n", w, first_column, kw, "kind", "count", "total us", "mean us",
                 "share");
  } else {
    AppendFormat(out, "%-*s  %10s %12s %10s %7s\n", w, first_column, "count", "total us", "mean us", "share");
  }
  for (const Row& row : rows) {
    const double mean = row.stat.count > 0 ? Micros(row.stat.total_ns) / static_cast<double>(row.stat.count) : 0.0;
    const double share =
        instruction_ns > 0 ? 100.0 * static_cast<double>(row.stat.total_ns) / static_cast<double>(instruction_ns) : 0.0;
    out->append(row.name);
    out->append(width - row.name.size() + 2, ' ');
    if (with_kind) AppendFormat(out, "%-*s ", kw, row.kind);
    AppendFormat(out, "%10" PRId64 " %12.3f %10.3f %6.1f%%\n", row.stat.count, Micros(row.stat.total_ns), mean, share);
  }
}

}  // namespace

const char* InstructionKindName(InstructionKind kind) {
  switch (kind) {
    case InstructionKind::kCallLibrary: return "call library";
    case InstructionKind::kCallCompiledKernel: return "call compiled kernel";
    case InstructionKind::kCallDevice: return "call device";
    case InstructionKind::kCallBytecode: return "call bytecode";
    case InstructionKind::kRet: return "ret";
    case InstructionKind::kGoto: return "goto";
    case InstructionKind::kIf: return "if";
  }
  return "<invalid>";
}

Profiler::Profiler(std::shared_ptr<const Executable> executable, Options options)
    : executable_(std::move(executable)), options_(options), functions_(executable_->functions().size()) {
  // What one clock read costs, for the report (~30 us).
  constexpr int kReads = 1000;
  const int64_t first = Now();
  int64_t last = first;
  for (int i = 0; i < kReads; ++i) last = Now();
  clock_read_ns_ = static_cast<double>(last - first) / kReads;
}

void Profiler::BeginRun(int32_t function, int64_t now) {
  run_start_ns_ = now;
  run_function_ = runs_.count == 0 || run_function_ == function ? function : -1;
  if (!options_.record_trace) return;
  open_events_.clear();
  open_events_.push_back(events_.size());
  events_.push_back(TraceEvent{now, 0, function, EventCategory::kInvoke});
}

void Profiler::EndRun(int64_t now) {
  ++runs_.count;
  runs_.total_ns += now - run_start_ns_;
  // Calls a failed run left open end with it, innermost first.
  while (!open_events_.empty()) {
    TraceEvent& e = events_[open_events_.back()];
    e.duration_ns = now - e.start_ns;
    open_events_.pop_back();
  }
}

int64_t Profiler::instruction_ns() const {
  int64_t total = 0;
  for (const Stat& s : kinds_) total += s.total_ns;
  return total;
}

std::string Profiler::FormatReport() const {
  std::string out;
  if (runs_.count == 0) return "profile: nothing was run\n";
  const int64_t instructions = instruction_ns();
  std::string runs = std::to_string(runs_.count) + (runs_.count == 1 ? " run" : " runs");
  if (run_function_ >= 0) runs += " of '" + executable_->functions()[static_cast<size_t>(run_function_)].name + "'";
  AppendFormat(&out,
               "profile: %s, %.3f us in total, %.3f us in instructions (each instruction's time includes one "
               "clock read, %.0f ns)\n\n",
               runs.c_str(), Micros(runs_.total_ns), Micros(instructions), clock_read_ns_);

  std::vector<Row> kinds;
  for (int k = 0; k < kNumInstructionKinds; ++k) {
    const Stat& stat = kinds_[static_cast<size_t>(k)];
    if (stat.count > 0) kinds.push_back(Row{InstructionKindName(static_cast<InstructionKind>(k)), nullptr, stat});
  }
  AppendTable(&out, "instruction", std::move(kinds), instructions);

  std::vector<Row> callees;
  std::span<const VMFunction> functions = executable_->functions();
  for (size_t i = 0; i < functions.size(); ++i) {
    if (functions_[i].count == 0) continue;
    callees.push_back(Row{functions[i].name, FunctionKindName(functions[i].kind), functions_[i]});
  }
  if (!callees.empty()) {
    out.push_back('\n');
    AppendTable(&out, "function", std::move(callees), instructions);
  }
  return out;
}

std::string Profiler::TraceJson() const {
  std::string out = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";
  const int64_t origin = events_.empty() ? 0 : events_.front().start_ns;
  std::span<const VMFunction> functions = executable_->functions();
  for (size_t i = 0; i < events_.size(); ++i) {
    const TraceEvent& e = events_[i];
    out.append(i == 0 ? "\n{\"name\":" : ",\n{\"name\":");
    AppendJsonString(&out, functions[static_cast<size_t>(e.function)].name);
    AppendFormat(&out, ",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":1,\"tid\":1}",
                 CategoryName(e.category), Micros(e.start_ns - origin), Micros(e.duration_ns));
  }
  out.append("\n]}\n");
  return out;
}

void Profiler::Clear() {
  kinds_ = {};
  std::fill(functions_.begin(), functions_.end(), Stat{});
  runs_ = {};
  run_function_ = -1;
  events_.clear();
  open_events_.clear();
}

}  // namespace strata::vm
