#include "support/printable_text.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

TEST(PrintableTextTest, PlainAsciiIsUnchanged) {
  EXPECT_EQ(PrintableText("main: parameter 'x' dimension 0"), "main: parameter 'x' dimension 0");
  EXPECT_TRUE(IsPrintableText("vm.builtin.match_shape"));
}

TEST(PrintableTextTest, ControlBytesAreEscaped) {
  using namespace std::string_literals;
  EXPECT_EQ(PrintableText("a\nb\tc\x1b[31m\x7f"s), "a\\x0ab\\x09c\\x1b[31m\\x7f");
  EXPECT_EQ(PrintableText("name\0tail"s), "name\\x00tail");
  EXPECT_FALSE(IsPrintableText("two\nlines"));
}

TEST(PrintableTextTest, ValidUtf8IsKeptAndBrokenUtf8Escaped) {
  EXPECT_EQ(PrintableText("gewicht_ä_张量_𝛼"), "gewicht_ä_张量_𝛼");
  EXPECT_EQ(PrintableText("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(PrintableText("\xc3"), "\\xc3");                             // truncated sequence
  EXPECT_EQ(PrintableText("\xc0\xaf"), "\\xc0\\xaf");                    // overlong '/'
  EXPECT_EQ(PrintableText("\xed\xa0\x80"), "\\xed\\xa0\\x80");           // UTF-16 surrogate
  EXPECT_EQ(PrintableText("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // above U+10FFFF
}

TEST(PrintableTextTest, LongTextIsCutWithACount) {
  std::string long_name(10000, 'a');
  std::string shown = PrintableText(long_name, 100);
  EXPECT_EQ(shown, std::string(100, 'a') + "... (9900 more bytes)");
  EXPECT_FALSE(IsPrintableText(long_name, 100));
  EXPECT_TRUE(IsPrintableText(long_name, 10000));
}

}  // namespace
}  // namespace strata
