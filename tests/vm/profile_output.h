// Reading what the profiler writes, for the tests of the profiler and of the
// CLI's --profile and --trace: the count column of a report row, and the events
// of a Chrome trace (parsed with RapidJSON, which rejects anything that is not
// JSON).
#pragma once

#include <cctype>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

namespace strata::testing {

// The count column of the report row that starts with `label`, or -1.
inline int64_t ReportCount(const std::string& report, const std::string& label) {
  std::istringstream lines(report);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with(label + " ")) continue;
    // The kind column of the callee table ("library", "compiled kernel", ...)
    // comes before the count.
    std::istringstream fields(line.substr(label.size()));
    std::string field;
    while (fields >> field && !std::isdigit(static_cast<unsigned char>(field[0]))) {
    }
    return field.empty() ? -1 : std::stoll(field);
  }
  return -1;
}

// One complete event ("ph": "X") of a trace, times in microseconds.
struct TraceSpan {
  std::string name, cat, ph;
  double begin = 0, end = 0;
};

// The events of a trace-event JSON document ({"traceEvents": [...]}) in file
// order. Every event must carry string name, cat and ph and numeric ts, dur, pid
// and tid; otherwise (or when the text is not JSON) `*error` says what is wrong
// and the result is empty.
inline std::vector<TraceSpan> ParseTrace(const std::string& json, std::string* error) {
  rapidjson::Document doc;
  doc.Parse(json.c_str(), json.size());
  if (doc.HasParseError()) {
    *error = std::string("not JSON: ") + rapidjson::GetParseError_En(doc.GetParseError()) + " at offset " +
             std::to_string(doc.GetErrorOffset());
    return {};
  }
  if (!doc.IsObject() || !doc.HasMember("traceEvents") || !doc["traceEvents"].IsArray()) {
    *error = "no traceEvents array";
    return {};
  }
  std::vector<TraceSpan> spans;
  const auto& events = doc["traceEvents"].GetArray();
  for (rapidjson::SizeType i = 0; i < events.Size(); ++i) {
    const rapidjson::Value& e = events[i];
    const std::string where = "traceEvents[" + std::to_string(i) + "]";
    if (!e.IsObject()) {
      *error = where + " is not an object";
      return {};
    }
    for (const char* key : {"name", "cat", "ph"}) {
      if (!e.HasMember(key) || !e[key].IsString()) {
        *error = where + " has no string '" + key + "'";
        return {};
      }
    }
    for (const char* key : {"ts", "dur", "pid", "tid"}) {
      if (!e.HasMember(key) || !e[key].IsNumber()) {
        *error = where + " has no number '" + key + "'";
        return {};
      }
    }
    const double ts = e["ts"].GetDouble();
    spans.push_back(
        TraceSpan{e["name"].GetString(), e["cat"].GetString(), e["ph"].GetString(), ts, ts + e["dur"].GetDouble()});
  }
  return spans;
}

}  // namespace strata::testing
