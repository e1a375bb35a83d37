// The server's JSON and log helpers: deep nesting is an error, not a crash;
// NaN and Infinity are read and written as Triton does; every string written
// is valid UTF-8; log lines are parseable in both formats.
#include "apps/server/json_util.h"

#include <cmath>

#include <gtest/gtest.h>

#include "apps/server/log.h"

namespace strata::server {
namespace {

TEST(ServerJson, DeepNestingIsAParseErrorNotAStackOverflow) {
  for (const std::string& text : {std::string(1'000'000, '['), "{\"a\":" + std::string(500'000, '[')}) {
    rapidjson::Document doc;
    std::string error;
    EXPECT_FALSE(ParseJson(text, &doc, &error));
    EXPECT_NE(error.find("invalid JSON at byte"), std::string::npos) << error;
  }
  // Valid and deep: parsed on the heap.
  const std::string deep = std::string(200'000, '[') + "1" + std::string(200'000, ']');
  rapidjson::Document doc;
  std::string error;
  EXPECT_TRUE(ParseJson(deep, &doc, &error)) << error;
}

TEST(ServerJson, NanAndInfinityAreReadAndWritten) {
  rapidjson::Document doc;
  std::string error;
  ASSERT_TRUE(ParseJson("[NaN, Infinity, -Infinity, 1.5]", &doc, &error)) << error;
  EXPECT_TRUE(std::isnan(doc[0].GetDouble()));
  EXPECT_TRUE(std::isinf(doc[1].GetDouble()) && doc[1].GetDouble() > 0);
  EXPECT_TRUE(std::isinf(doc[2].GetDouble()) && doc[2].GetDouble() < 0);
  rapidjson::StringBuffer buffer;
  JsonWriter out(buffer);
  out.StartArray();
  for (double v : {std::nan(""), HUGE_VAL, -HUGE_VAL, 0.5}) out.Double(v);
  out.EndArray();
  EXPECT_STREQ(buffer.GetString(), "[NaN,Infinity,-Infinity,0.5]");
}

TEST(ServerJson, InvalidUtf8IsReplacedNotPassedThrough) {
  EXPECT_EQ(ValidUtf8("plain"), "plain");
  EXPECT_EQ(ValidUtf8("caf\xC3\xA9"), "caf\xC3\xA9");  // a valid 2-byte character
  EXPECT_EQ(ValidUtf8("a\xFF"
                      "b"),
            "a\xEF\xBF\xBD"
            "b");                                  // a byte that starts nothing
  EXPECT_EQ(ValidUtf8("a\xC3"), "a\xEF\xBF\xBD");  // truncated at the end
  EXPECT_EQ(ValidUtf8("\xE2\x82"
                      "x"),
            "\xEF\xBF\xBD\xEF\xBF\xBD"
            "x");                                                // truncated, then ASCII kept
  EXPECT_EQ(ValidUtf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // an overlong '/'
  // Whatever goes in, the writer's output parses back as JSON with encoding validation.
  rapidjson::StringBuffer buffer;
  JsonWriter out(buffer);
  WriteString(out, "model '\xFF\xFE\x80' \"quoted\"");
  rapidjson::Document doc;
  std::string error;
  ASSERT_TRUE(ParseJson(buffer.GetString(), &doc, &error)) << error;
  EXPECT_EQ(std::string(doc.GetString()), "model '\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD' \"quoted\"");
}

TEST(ServerLog, TextAndJsonLines) {
  const std::string text =
      FormatLogLine(LogFormat::kText, LogLevel::kError, "model_load_failed",
                    {{"model", "mlp"}, {"version", 2}, {"reason", "bad \"file\" x"}}, "2026-11-28T00:00:00.000Z");
  EXPECT_EQ(text, "2026-11-28T00:00:00.000Z E model_load_failed model=mlp version=2 reason=\"bad \\\"file\\\" x\"\n");
  const std::string json = FormatLogLine(LogFormat::kJson, LogLevel::kInfo, "model_loaded",
                                         {{"model", "m\xFF"}, {"ready", true}, {"ms", 1.5}}, "T");
  rapidjson::Document doc;
  std::string error;
  ASSERT_TRUE(ParseJson(json, &doc, &error)) << error << json;
  EXPECT_STREQ(doc["level"].GetString(), "info");
  EXPECT_STREQ(doc["event"].GetString(), "model_loaded");
  EXPECT_STREQ(doc["model"].GetString(), "m\xEF\xBF\xBD");
  EXPECT_TRUE(doc["ready"].GetBool());
  EXPECT_DOUBLE_EQ(doc["ms"].GetDouble(), 1.5);
}

}  // namespace
}  // namespace strata::server
