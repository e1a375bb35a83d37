// The server's log: one line per event on stderr, as text or as JSON lines.
//
//   text: 2026-11-28T01:02:03.456Z I model_loaded model="mlp" version=1 state=READY
//   json: {"time":"2026-11-28T01:02:03.456Z","level":"info","event":"model_loaded","model":"mlp","version":1,...}
//
// Events are named (model_loaded, model_load_failed, model_unloaded, request_failed,
// accept_backoff, ...) and carry key/value fields, so a log pipeline can filter on
// them without parsing prose. `--log-verbose N` adds verbose events up to level N
// (1: every failed request and connection-level refusal; 2: every request).
// Thread-safe: a line is written whole with one write().
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <variant>

namespace strata::server {

enum class LogLevel { kError, kWarning, kInfo, kVerbose };
enum class LogFormat { kText, kJson };

struct LogField {
  std::string_view key;
  std::variant<std::string_view, int64_t, double, bool> value;
  LogField(std::string_view k, std::string_view v) : key(k), value(v) {}
  LogField(std::string_view k, const std::string& v) : key(k), value(std::string_view(v)) {}
  LogField(std::string_view k, const char* v) : key(k), value(std::string_view(v)) {}
  LogField(std::string_view k, int64_t v) : key(k), value(v) {}
  LogField(std::string_view k, int v) : key(k), value(int64_t{v}) {}
  LogField(std::string_view k, uint64_t v) : key(k), value(static_cast<int64_t>(v)) {}
  LogField(std::string_view k, double v) : key(k), value(v) {}
  LogField(std::string_view k, bool v) : key(k), value(v) {}
};

// Set once at start, before any thread logs.
void SetLogOptions(LogFormat format, int verbose_level);
// True when verbose events of `level` (1, 2) are written.
bool LogVerbose(int level);

void Log(LogLevel level, std::string_view event, std::initializer_list<LogField> fields = {});
// A verbose event of `verbose_level`: written only when --log-verbose is at least that.
void LogV(int verbose_level, std::string_view event, std::initializer_list<LogField> fields = {});

// The line Log writes (for tests).
std::string FormatLogLine(LogFormat format, LogLevel level, std::string_view event,
                          std::initializer_list<LogField> fields, std::string_view time);

}  // namespace strata::server
