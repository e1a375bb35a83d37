// JSON helpers; see json_util.h.
#include "apps/server/json_util.h"

#include <rapidjson/encodings.h>
#include <rapidjson/error/en.h>

namespace strata::server {
namespace {

// A rapidjson input stream over a byte range, for UTF8<>::Decode.
struct ByteStream {
  using Ch = char;
  const char* p;
  const char* end;
  char Peek() const { return p < end ? *p : '\0'; }
  char Take() { return p < end ? *p++ : '\0'; }
  size_t Tell() const { return 0; }
};

}  // namespace

bool ParseJson(std::string_view text, rapidjson::Document* doc, std::string* error) {
  doc->Parse<kJsonParseFlags>(text.data(), text.size());
  if (!doc->HasParseError()) return true;
  *error = "invalid JSON at byte " + std::to_string(doc->GetErrorOffset()) + ": " +
           rapidjson::GetParseError_En(doc->GetParseError());
  return false;
}

std::string ValidUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  ByteStream in{text.data(), text.data() + text.size()};
  while (in.p < in.end) {
    const char* start = in.p;
    unsigned codepoint = 0;
    // Decode reads past a bad byte; on failure, restart one byte later so that
    // a truncated sequence does not swallow the character after it.
    if (rapidjson::UTF8<>::Decode(in, &codepoint)) {
      out.append(start, static_cast<size_t>(in.p - start));
    } else {
      out += "\xEF\xBF\xBD";
      in.p = start + 1;
    }
  }
  return out;
}

void WriteString(JsonWriter& out, std::string_view text) {
  const std::string valid = ValidUtf8(text);
  out.String(valid.data(), static_cast<rapidjson::SizeType>(valid.size()));
}

}  // namespace strata::server
