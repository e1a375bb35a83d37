// The server's log; see log.h.
#include "apps/server/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <unistd.h>

#include "apps/server/json_util.h"

namespace strata::server {
namespace {

std::atomic<LogFormat> g_format{LogFormat::kText};
std::atomic<int> g_verbose{0};

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kError: return "error";
    case LogLevel::kWarning: return "warning";
    case LogLevel::kInfo: return "info";
    case LogLevel::kVerbose: return "verbose";
  }
  return "info";
}

// ISO 8601 in UTC with milliseconds.
std::string Now() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[96];  // room for any int in each field, as -Wformat-truncation counts
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900, utc.tm_mon + 1,
                utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, static_cast<int>(millis));
  return text;
}

// A text value: bare when it is a plain word, else a JSON string (quoted, escaped).
void AppendTextValue(std::string& out, std::string_view value) {
  const bool plain =
      !value.empty() && value.find_first_of(" \t\r\n\"=\\") == std::string_view::npos && ValidUtf8(value) == value;
  if (plain) {
    out += value;
    return;
  }
  rapidjson::StringBuffer buffer;
  JsonWriter writer(buffer);
  WriteString(writer, value);
  out += buffer.GetString();
}

}  // namespace

void SetLogOptions(LogFormat format, int verbose_level) {
  g_format = format;
  g_verbose = verbose_level;
}

bool LogVerbose(int level) { return g_verbose.load(std::memory_order_relaxed) >= level; }

std::string FormatLogLine(LogFormat format, LogLevel level, std::string_view event,
                          std::initializer_list<LogField> fields, std::string_view time) {
  if (format == LogFormat::kJson) {
    rapidjson::StringBuffer buffer;
    JsonWriter out(buffer);
    out.StartObject();
    out.Key("time");
    WriteString(out, time);
    out.Key("level");
    out.String(LevelName(level));
    out.Key("event");
    WriteString(out, event);
    for (const LogField& f : fields) {
      WriteString(out, f.key);
      std::visit(
          [&](const auto& v) {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::string_view>) {
              WriteString(out, v);
            } else if constexpr (std::is_same_v<T, int64_t>) {
              out.Int64(v);
            } else if constexpr (std::is_same_v<T, double>) {
              out.Double(v);
            } else {
              out.Bool(v);
            }
          },
          f.value);
    }
    out.EndObject();
    return std::string(buffer.GetString()) + "\n";
  }
  std::string line(time);
  line += ' ';
  line += static_cast<char>(std::toupper(LevelName(level)[0]));
  line += ' ';
  line += event;
  for (const LogField& f : fields) {
    line += ' ';
    line += f.key;
    line += '=';
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::string_view>) {
            AppendTextValue(line, v);
          } else if constexpr (std::is_same_v<T, bool>) {
            line += v ? "true" : "false";
          } else {
            line += std::to_string(v);
          }
        },
        f.value);
  }
  line += '\n';
  return line;
}

void Log(LogLevel level, std::string_view event, std::initializer_list<LogField> fields) {
  const std::string line = FormatLogLine(g_format.load(std::memory_order_relaxed), level, event, fields, Now());
  // One write() per line: lines from concurrent threads never interleave.
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(STDERR_FILENO, line.data() + done, line.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

void LogV(int verbose_level, std::string_view event, std::initializer_list<LogField> fields) {
  if (LogVerbose(verbose_level)) Log(LogLevel::kVerbose, event, fields);
}

}  // namespace strata::server
