// Parser errors: each bad input must be rejected at the exact line and column of
// the problem, with a message that says what was expected or what is wrong.
#include <string>

#include <gtest/gtest.h>

#include "compiler/ir/parser.h"
#include "tests/text/text_test_util.h"

namespace strata::ir {
namespace {

using testing::ParseError;

struct BadInput {
  const char* name;
  const char* text;
  const char* location;  // "line:col"
  std::vector<std::string> key_words;
};

void PrintTo(const BadInput& input, std::ostream* os) { *os << input.name; }

class ParseErrorTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(ParseErrorTest, ReportsLocationAndCause) {
  const BadInput& input = GetParam();
  std::string message = ParseError(input.text);
  ASSERT_FALSE(message.empty()) << "parsed without error:\n" << input.text;
  std::string prefix = std::string("bad.sir:") + input.location + ": error: ";
  EXPECT_EQ(message.substr(0, prefix.size()), prefix) << message;
  for (const std::string& word : input.key_words) {
    EXPECT_NE(message.find(word), std::string::npos) << "missing '" << word << "' in: " << message;
  }
}

const BadInput kBadInputs[] = {
    {"MissingCloseParen",
     "func @main(x: Tensor[(n,), f32]) -> Tensor[(n,), f32] {\n"
     "  y = nn.relu(x\n"
     "  return y\n"
     "}\n",
     "3:3",
     {"expected ')' after call arguments", "found 'return'"}},
    {"UndefinedGraphVariable",
     "func @main(x: Tensor[(n,), f32]) -> Tensor[(n,), f32] {\n"
     "  return z\n"
     "}\n",
     "2:10",
     {"undefined variable 'z'"}},
    {"UndefinedBuffer",
     "prim_func @f(A: Buffer[(n,), f32]) {\n"
     "  for i in range(0, n) {\n"
     "    Q[i] = A[i]\n"
     "  }\n"
     "}\n",
     "3:5",
     {"undefined buffer 'Q'"}},
    {"UndefinedScalarVariable",
     "prim_func @f(A: Buffer[(n,), f32]) {\n"
     "  A[0] = cast<f32>(q)\n"
     "}\n",
     "2:20",
     {"undefined variable 'q'"}},
    {"UndefinedFunction",
     "func @main(x: Tensor[(n,), f32]) -> Tensor[(n,), f32] {\n"
     "  y = @nope(x)\n"
     "  return y\n"
     "}\n",
     "2:7",
     {"undefined function '@nope'"}},
    {"WrongIndexCount",
     "prim_func @f(A: Buffer[(n,), f32]) {\n"
     "  A[0, 1] = 1.0\n"
     "}\n",
     "2:3",
     {"buffer 'A' has 1 dimension", "2 indices"}},
    {"BinaryDtypeMismatch",
     "prim_func @f(A: Buffer[(n,), f32], k: i32) {\n"
     "  for i in range(0, n) {\n"
     "    A[i] = A[i] + cast<f32>(i + k)\n"
     "  }\n"
     "}\n",
     "3:31",
     {"dtype mismatch", "'+'", "i64 and i32"}},
    {"StoreDtypeMismatch",
     "prim_func @f(A: Buffer[(n,), f32], B: Buffer[(n,), f64]) {\n"
     "  A[0] = B[0]\n"
     "}\n",
     "2:10",
     {"dtype mismatch", "f64", "'A' holds f32"}},
    {"UnknownDtype",
     "func @main(x: Tensor[(n,), f31]) -> Tensor {\n"
     "  return x\n"
     "}\n",
     "1:28",
     {"unknown dtype 'f31'"}},
    {"UnknownIntrinsic",
     "prim_func @f(A: Buffer[(n,), f32]) {\n"
     "  for i in range(0, n) {\n"
     "    A[i] = sinh(A[i])\n"
     "  }\n"
     "}\n",
     "3:12",
     {"unknown intrinsic 'sinh'"}},
    {"IntrinsicArity",
     "prim_func @f(A: Buffer[(n,), f32]) {\n"
     "  A[0] = pow(A[0])\n"
     "}\n",
     "2:10",
     {"'pow' takes 2 arguments"}},
    {"DuplicateFunction",
     "func @main(x: Tensor) -> Tensor {\n"
     "  return x\n"
     "}\n"
     "\n"
     "func @main(y: Tensor) -> Tensor {\n"
     "  return y\n"
     "}\n",
     "5:6",
     {"duplicate function name '@main'", "line 1"}},
    {"DuplicateParameter",
     "func @main(x: Tensor, x: Tensor) -> Tensor {\n"
     "  return x\n"
     "}\n",
     "1:23",
     {"duplicate parameter name 'x'"}},
    {"DuplicatePrimFuncParameter",
     "prim_func @f(A: Buffer[(n,), f32], A: i64) {\n"
     "}\n",
     "1:36",
     {"duplicate parameter name 'A'"}},
    {"MatchShapeOfUnknownKind",
     "func @main(x: Tensor) -> Shape {\n"
     "  s = call_packed(\"vm.builtin.shape_of\", x)\n"
     "  t = match_shape(s, (m, n))\n"
     "  return s\n"
     "}\n",
     "3:19",
     {"match_shape", "annotate it or use match_cast"}},
    {"OutputNotBoundInBlock",
     "func @main(x: Tensor) -> Tensor {\n"
     "  dataflow {\n"
     "    y = nn.relu(x)\n"
     "    output x\n"
     "  }\n"
     "  return x\n"
     "}\n",
     "4:12",
     {"output 'x' is not bound in this dataflow block"}},
    {"DataflowVarUsedOutsideItsBlock",
     "func @main(x: Tensor) -> Tensor {\n"
     "  dataflow {\n"
     "    y = nn.relu(x)\n"
     "    z = nn.relu(y)\n"
     "    output z\n"
     "  }\n"
     "  return y\n"
     "}\n",
     "7:10",
     {"undefined variable 'y'"}},
    {"UnterminatedString",
     "func @main(x: Tensor) -> Object {\n"
     "  y = call_packed(\"abc, x)\n"
     "  return y\n"
     "}\n",
     "2:19",
     {"unterminated string"}},
    {"UnexpectedCharacter",
     "func @main(x: Tensor) -> Tensor {\n"
     "  return $x\n"
     "}\n",
     "2:10",
     {"unexpected character '$'"}},
    {"FloatLiteralForInteger",
     "prim_func @f(A: Buffer[(n,), f32]) {\n"
     "  let k: i64 = 1.5\n"
     "}\n",
     "2:16",
     {"float literal 1.5", "i64"}},
    {"LiteralOutOfRange",
     "prim_func @f(U: Buffer[(n,), u8]) {\n"
     "  U[0] = U[0] + 256\n"
     "}\n",
     "2:17",
     {"integer literal 256 does not fit in u8"}},
    {"TrueDivisionOfIntegers",
     "prim_func @f(A: Buffer[(n,), i64]) {\n"
     "  A[0] = n / 2\n"
     "}\n",
     "2:12",
     {"'/' needs float operands", "use '//'"}},
    {"NonBoolCondition",
     "prim_func @f(A: Buffer[(n,), f32]) {\n"
     "  if n {\n"
     "  }\n"
     "}\n",
     "2:6",
     {"if condition must be bool", "i64"}},
    {"CallTIROfGraphFunction",
     "func @g(x: Tensor) -> Tensor {\n"
     "  return x\n"
     "}\n"
     "\n"
     "func @main(x: Tensor) -> Tensor {\n"
     "  y = call_tir(@g, (x,), Tensor)\n"
     "  return y\n"
     "}\n",
     "6:16",
     {"call_tir needs a prim_func", "'@g' is a graph function"}},
    {"GraphCallArgumentCount",
     "func @main(x: Tensor) -> Tensor {\n"
     "  y = @g(x, x)\n"
     "  return y\n"
     "}\n"
     "\n"
     "func @g(x: Tensor) -> Tensor {\n"
     "  return x\n"
     "}\n",
     "2:7",
     {"'@g' takes 1 argument", "2 were given"}},
    {"MissingReturn",
     "func @main(x: Tensor) -> Tensor {\n"
     "  y = x\n"
     "}\n",
     "3:1",
     {"expected a binding, 'dataflow' or 'return'", "found '}'"}},
    {"KeywordAsVariableName",
     "func @main(x: Tensor) -> Tensor {\n"
     "  output: Tensor = x\n"
     "  return x\n"
     "}\n",
     "2:3",
     {"keyword 'output'"}},
    {"GraphScalarOfGraphVariable",
     "func @main(x: Prim[i64]) -> Object {\n"
     "  y = prim(x + 1)\n"
     "  return y\n"
     "}\n",
     "2:12",
     {"undefined variable 'x'", "shape variables"}},
    {"TupleIndexOutOfRange",
     "func @main(x: Tuple[Tensor, Tensor]) -> Tensor {\n"
     "  return x[2]\n"
     "}\n",
     "2:12",
     {"tuple index 2 is out of range", "2 fields"}},
    {"UnknownLoopKind",
     "prim_func @f(A: Buffer[(n,), f32]) {\n"
     "  for i in tiled(0, n) {\n"
     "  }\n"
     "}\n",
     "2:12",
     {"expected a loop kind", "found 'tiled'"}},
    {"UnclosedBlock",
     "prim_func @f(A: Buffer[(n,), f32]) {\n"
     "  for i in range(0, n) {\n"
     "    A[i] = 0.0\n",
     "4:1",
     {"expected '}' to close the block opened at line 2", "end of file"}},
    {"PositionalAfterKeyword",
     "func @main(x: Tensor) -> Tensor {\n"
     "  y = my_op(axis=1, x)\n"
     "  return y\n"
     "}\n",
     "2:21",
     {"positional argument after keyword arguments"}},
    {"ConstWithWrongValueCount",
     "func @main() -> Tensor {\n"
     "  c = const(Tensor[(2, 2), f32], [1.0, 2.0, 3.0])\n"
     "  return c\n"
     "}\n",
     "2:34",
     {"const has 3 values", "needs 4"}},
    {"ConstWithSymbolicShape",
     "func @main() -> Tensor {\n"
     "  c = const(Tensor[(n,), f32], [1.0])\n"
     "  return c\n"
     "}\n",
     "2:13",
     {"const needs Tensor", "constant dimensions"}},
    {"MatchCastInsideAnExpression",
     "func @main(x: Tensor) -> Object {\n"
     "  y = (match_cast(x, Tensor), x)\n"
     "  return y\n"
     "}\n",
     "2:8",
     {"match_cast must be the whole value of a binding"}},
    {"UnknownSuffix",
     "prim_func @f(A: Buffer[(n,), f32]) {\n"
     "  evaluate 3q7\n"
     "}\n",
     "2:12",
     {"unknown dtype suffix 'q7'"}},
    {"PrefetchOfAValue",
     "prim_func @f(A: Buffer[(n,), f32]) {\n"
     "  prefetch A[0] + 1.0\n"
     "}\n",
     "2:12",
     {"prefetch needs a buffer element such as A[i, k]"}},
    {"StringListWithAnInteger",
     "func @main(x: Tensor[(n,), f32]) -> Tensor[(n,), f32] attrs {input_names = [\"x\", 1]} {\n"
     "  return x\n"
     "}\n",
     "1:82",
     {"expected a string (a list that starts with a string holds only strings)", "found '1'"}},
    {"IntegerListWithAString",
     "func @main(x: Tensor[(n,), f32]) -> Tensor[(n,), f32] attrs {input_names = [1, \"x\"]} {\n"
     "  return x\n"
     "}\n",
     "1:80",
     {"string \"x\""}},
    {"UnclosedStringList",
     "func @main(x: Tensor[(n,), f32]) -> Tensor[(n,), f32] attrs {input_names = [\"x\" output_names = [\"y\"]} {\n"
     "  return x\n"
     "}\n",
     "1:81",
     {"expected ']' to close the attribute list", "found 'output_names'"}},
    {"GarbageAtTopLevel",
     "function @main() {\n"
     "}\n",
     "1:1",
     {"expected 'func' or 'prim_func'", "found 'function'"}},
};

INSTANTIATE_TEST_SUITE_P(BadInputs, ParseErrorTest, ::testing::ValuesIn(kBadInputs),
                         [](const ::testing::TestParamInfo<BadInput>& info) { return std::string(info.param.name); });

TEST(ParseErrorLimitsTest, DeepParenthesesAreAnErrorNotAStackOverflow) {
  std::string text = "prim_func @f(A: Buffer[(n,), f32]) {\n  A[0] = " + std::string(100000, '(') + "1.0" +
                     std::string(100000, ')') + "\n}\n";
  std::string message = ParseError(text);
  EXPECT_EQ(message.rfind("bad.sir:2:", 0), 0u) << message;
  EXPECT_NE(message.find("nesting is deeper than"), std::string::npos) << message;
}

TEST(ParseErrorLimitsTest, LongOperatorChainIsAnErrorNotADeepTree) {
  std::string chain = "n";
  for (int i = 0; i < 5000; ++i) chain += " + n";
  std::string message = ParseError("prim_func @f(A: Buffer[(n,), i64]) {\n  A[0] = " + chain + "\n}\n");
  EXPECT_EQ(message.rfind("bad.sir:2:10: error: expression is nested more than", 0), 0u) << message;
}

TEST(ParseErrorLimitsTest, TooManyNestedLetsAreAnError) {
  std::string body;
  for (int i = 0; i < 1500; ++i) body += "  let x" + std::to_string(i) + ": i64 = " + std::to_string(i) + "\n";
  std::string message = ParseError("prim_func @f(A: Buffer[(n,), i64]) {\n" + body + "}\n");
  EXPECT_NE(message.find("statements are nested more than"), std::string::npos) << message;
}

TEST(ParseErrorLimitsTest, ModerateChainsStillParse) {
  std::string chain = "n";
  for (int i = 0; i < 200; ++i) chain += " + n";
  std::string body;
  for (int i = 0; i < 300; ++i) body += "  let x" + std::to_string(i) + ": i64 = " + std::to_string(i) + "\n";
  EXPECT_EQ(ParseError("prim_func @f(A: Buffer[(n,), i64]) {\n" + body + "  A[0] = " + chain + "\n}\n"), "");
}

}  // namespace
}  // namespace strata::ir
