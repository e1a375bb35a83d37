// Status: codes travel with errors through context and copies.
#include "support/status.h"

#include <set>

#include <gtest/gtest.h>

namespace strata {
namespace {

TEST(StatusTest, OkHasCodeOkAndNoMessage) {
  Status ok = Status::Ok();
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.code(), StatusCode::kOk);
  EXPECT_EQ(ok.message(), "");
}

TEST(StatusTest, MessageOnlyErrorIsInvalidArgument) {
  Status error = Status::Error("bad input");
  EXPECT_FALSE(error.ok());
  EXPECT_EQ(error.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(error.message(), "bad input");
}

TEST(StatusTest, StreamBuilderKeepsTheNamedCode) {
  Status error = ErrorStatus(StatusCode::kDataLoss) << "constants[" << 3 << "]: checksum mismatch";
  EXPECT_EQ(error.code(), StatusCode::kDataLoss);
  EXPECT_EQ(error.message(), "constants[3]: checksum mismatch");
  Status plain = ErrorStatus() << "x";
  EXPECT_EQ(plain.code(), StatusCode::kInvalidArgument);
}

TEST(StatusTest, ContextAndCopiesKeepTheCode) {
  Status error = Status::Error(StatusCode::kResourceExhausted, "arena full");
  Status copy = error;
  Status moved = std::move(copy).WithContext("main: ");
  EXPECT_EQ(moved.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(moved.message(), "main: arena full");
  EXPECT_EQ(error.message(), "arena full");  // the copy was independent
}

TEST(StatusTest, StatusOrCarriesTheCode) {
  StatusOr<int> value = Status::Error(StatusCode::kNotFound, "no function 'f'");
  ASSERT_FALSE(value.ok());
  EXPECT_EQ(value.status().code(), StatusCode::kNotFound);
}

TEST(StatusTest, EveryCodeHasADistinctName) {
  const StatusCode codes[] = {StatusCode::kOk,
                              StatusCode::kInvalidArgument,
                              StatusCode::kNotFound,
                              StatusCode::kOutOfRange,
                              StatusCode::kDataLoss,
                              StatusCode::kUnimplemented,
                              StatusCode::kResourceExhausted,
                              StatusCode::kFailedPrecondition,
                              StatusCode::kCancelled,
                              StatusCode::kInternal};
  std::set<std::string_view> names;
  for (StatusCode code : codes) names.insert(StatusCodeName(code));
  EXPECT_EQ(names.size(), std::size(codes));
  EXPECT_EQ(StatusCodeName(StatusCode::kDataLoss), "DATA_LOSS");
}

TEST(StatusTest, TheInnermostLocationWinsAndSurvivesContext) {
  SourceLocation inner{"model.sir", 3, 5, ""};
  SourceLocation outer{"model.sir", 1, 1, ""};
  Status error = Status::Error("bad").WithLocation(inner).WithLocation(outer).WithContext("LegalizeOps: ");
  ASSERT_NE(error.location(), nullptr);
  EXPECT_EQ(error.location()->Text(), "model.sir:3:5");
  EXPECT_EQ(error.message(), "LegalizeOps: bad");
  EXPECT_EQ(Status::Error("no location").location(), nullptr);
  EXPECT_EQ(Status::Ok().WithLocation(inner).location(), nullptr);
}

TEST(SourceLocationTest, TextNamesTheLineOrTheModelNode) {
  EXPECT_EQ((SourceLocation{"a.sir", 12, 7, ""}).Text(), "a.sir:12:7");
  EXPECT_EQ((SourceLocation{"m.onnx", 0, 0, "/Slice"}).Text(), "m.onnx (node '/Slice')");
  EXPECT_FALSE(SourceLocation{}.known());
}

}  // namespace
}  // namespace strata
