// Text from an untrusted file, made safe to put in a one-line error message.
//
// Names and strings in an executable are arbitrary bytes once the file is
// damaged: a NUL, a newline or a terminal escape in an error message breaks the
// "one line, says what is wrong" promise and can garble a log. Control bytes and
// bytes that are not valid UTF-8 become \xNN; valid UTF-8 (non-ASCII names) is
// kept; very long text is cut.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace strata {

// Length of the valid UTF-8 sequence starting at text[i], or 0 when invalid
// (overlong forms, surrogates and code points above U+10FFFF are invalid).
inline size_t Utf8SequenceLength(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  const uint8_t lead = byte(i);
  size_t length;
  uint32_t min_code_point;
  uint32_t code_point;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2, min_code_point = 0x80, code_point = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3, min_code_point = 0x800, code_point = lead & 0x0F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4, min_code_point = 0x10000, code_point = lead & 0x07;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code_point = (code_point << 6) | (byte(i + k) & 0x3F);
  }
  if (code_point < min_code_point || code_point > 0x10FFFF) return 0;
  if (code_point >= 0xD800 && code_point <= 0xDFFF) return 0;
  return length;
}

// `text` with control bytes (including newlines) and invalid UTF-8 escaped as
// \xNN, cut after about `max_bytes` bytes of input with a note of how much was left out.
inline std::string PrintableText(std::string_view text, size_t max_bytes = 4096) {
  std::string out;
  out.reserve(std::min(text.size(), max_bytes) + 16);
  size_t i = 0;
  while (i < text.size() && i < max_bytes) {
    const uint8_t c = static_cast<uint8_t>(text[i]);
    if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    size_t length = c >= 0x80 ? Utf8SequenceLength(text, i) : 0;
    if (length > 0) {
      out.append(text.substr(i, length));
      i += length;
      continue;
    }
    char escaped[5];
    std::snprintf(escaped, sizeof(escaped), "\\x%02x", c);
    out += escaped;
    ++i;
  }
  if (i < text.size()) out += "... (" + std::to_string(text.size() - i) + " more bytes)";
  return out;
}

// True when PrintableText would return `text` unchanged.
inline bool IsPrintableText(std::string_view text, size_t max_bytes = 4096) {
  return text.size() <= max_bytes && PrintableText(text, max_bytes) == text;
}

}  // namespace strata
