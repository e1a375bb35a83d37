// JSON as strata-server reads and writes it (rapidjson).
//
// Reading is iterative (rapidjson's explicit stack, not recursion), so nesting
// depth costs heap, never the thread's stack: a body of 100,000 '[' is a parse
// error, not a crash. NaN, Infinity and -Infinity are accepted, and written
// for non-finite floats, as Triton does (Python's json module reads them);
// strict JSON has no spelling for them. Strings written are valid UTF-8 even
// when they echo what a client sent: ill-formed bytes become U+FFFD.
#pragma once

#include <string>
#include <string_view>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace strata::server {

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer, rapidjson::UTF8<>, rapidjson::UTF8<>,
                                     rapidjson::CrtAllocator, rapidjson::kWriteNanAndInfFlag>;

inline constexpr unsigned kJsonParseFlags =
    rapidjson::kParseIterativeFlag | rapidjson::kParseNanAndInfFlag | rapidjson::kParseValidateEncodingFlag;

// Parses `text` into `doc` with kJsonParseFlags; on error, a message naming the
// byte offset and what is wrong ("invalid JSON at byte 12: Missing a comma ...").
bool ParseJson(std::string_view text, rapidjson::Document* doc, std::string* error);

// `text` with every ill-formed UTF-8 sequence replaced by U+FFFD.
std::string ValidUtf8(std::string_view text);

// Writes `text` as a JSON string, ill-formed UTF-8 replaced.
void WriteString(JsonWriter& out, std::string_view text);

}  // namespace strata::server
