// Profiler: exact counts per instruction kind and per callee for a known
// program, the report's format, and a Chrome trace that parses as JSON with one
// event per call, nested the way the calls were.
#include "vm/profiler.h"

#include <sstream>

#include <gtest/gtest.h>

#include "tests/vm/executable_builder.h"
#include "tests/vm/profile_output.h"
#include "tests/vm/test_util.h"
#include "vm/virtual_machine.h"

namespace strata::testing {
namespace {

using vm::InstructionKind;
using vm::Profiler;
using vm::Value;
using vm::VirtualMachine;

// A library function whose name needs escaping in JSON (and is not ASCII).
constexpr const char* kQuotedName = "test.\"quoted\"\\caf\xc3\xa9";

void RegisterQuotedFunction() {
  RegisterTestFunctions();
  ASSERT_TRUE(vm::RegisterLibraryFunction(
                  kQuotedName,
                  [](std::span<const Value* const> args, Value* out) -> Status {
                    *out = *args[0];
                    return Status::Ok();
                  },
                  /*allow_override=*/true)
                  .ok());
}

serialization::NativeModuleSpec TestModule() {
  serialization::NativeModuleSpec m;
  m.target_triple = "x86_64-pc-linux-gnu";
  m.cpu = "generic";
  m.code = ReadFile(STRATA_TEST_KERNEL_MODULE);
  m.symbols = {"add_scalar"};
  return m;
}

// main(n, x): counts n down in a loop that calls the bytecode function helper
// (which calls test.increment) each iteration, then adds 1.5 to x with the
// add_scalar kernel and passes the result through the quoted function.
// fails(x) calls helper, then failing_helper, which fails inside. Per run of
// main with n = 3:
//   library: copy 1, test.decrement 3, test.increment 3, shape_of 1,
//            alloc_tensor 1, the quoted function 1            = 10
//   kernel: add_scalar 1      bytecode: helper 3
//   ret: 3 (helper) + 1 (main)   goto: 3   if: 4
struct Program {
  std::shared_ptr<const vm::Executable> executable;
  int32_t main = -1, helper = -1, copy = -1, dec = -1, inc = -1, shape_of = -1, alloc = -1, quoted = -1, add = -1;
  int32_t fail_entry = -1;
};

Program BuildProgram() {
  RegisterQuotedFunction();
  ExecutableBuilder b;
  b.spec.native_modules.push_back(TestModule());
  Program p;
  p.copy = b.Library("vm.builtin.copy");
  p.dec = b.Library("test.decrement");
  p.inc = b.Library("test.increment");
  p.shape_of = b.Library("vm.builtin.shape_of");
  p.alloc = b.Library("vm.builtin.alloc_tensor");
  p.quoted = b.Library(kQuotedName);
  const int32_t fail = b.Library("test.fail");
  p.add = b.Kernel("add_scalar", 0, "add_scalar");
  const int half = b.Constant(1.5);
  const int f32 = b.DType(DataType::F32());
  p.helper = b.Declare("helper", {"v"}, 2, /*entry_point=*/false);
  CodeBuilder helper;
  helper.Call(1, p.inc, {R(0)}).Ret(1);
  b.Define(p.helper, helper);
  CodeBuilder main;
  main.Call(2, p.copy, {R(0)})
      .Label("loop")
      .If(2, "done")
      .Call(2, p.dec, {R(2)})
      .Call(3, p.helper, {R(2)})
      .Goto("loop")
      .Label("done")
      .Call(4, p.shape_of, {R(1)})
      .Call(5, p.alloc, {R(4), C(f32)})
      .Call(kVoid, p.add, {R(1), C(half), R(5)})
      .Call(5, p.quoted, {R(5)})
      .Ret(5);
  p.main = b.Bytecode("main", {"n", "x"}, 6, main);
  const int32_t failing = b.Declare("failing_helper", {"v"}, 2, /*entry_point=*/false);
  CodeBuilder failing_code;
  failing_code.Call(1, p.inc, {Imm(1)}).Call(1, fail, {R(0)}).Ret(1);
  b.Define(failing, failing_code);
  CodeBuilder fails;
  fails.Call(1, p.helper, {Imm(7)}).Call(1, failing, {R(0)}).Ret(1);
  p.fail_entry = b.Bytecode("fails", {"x"}, 2, fails);
  p.executable = LoadOrDie(b.Write());
  return p;
}

StatusOr<Value> RunMain(VirtualMachine& vm, int64_t n) {
  std::vector<Value> args = {Value::FromInt(n), F32({2}, {1, 2})};
  return vm.Invoke("main", args);
}

TEST(ProfilerTest, CountsEveryInstructionKindAndCalleeExactly) {
  Program p = BuildProgram();
  ASSERT_NE(p.executable, nullptr);
  VirtualMachine vm(p.executable);
  Profiler profiler(p.executable);
  ASSERT_TRUE(vm.SetProfiler(&profiler).ok());
  for (int run = 0; run < 2; ++run) {
    auto result = RunMain(vm, 3);
    ASSERT_TRUE(result.ok()) << result.status().message();
    EXPECT_EQ(ToFloats(*result), (std::vector<float>{2.5f, 3.5f}));  // profiling changes nothing
  }
  EXPECT_EQ(profiler.runs().count, 2);
  EXPECT_EQ(profiler.kind_stat(InstructionKind::kCallLibrary).count, 2 * 10);
  EXPECT_EQ(profiler.kind_stat(InstructionKind::kCallCompiledKernel).count, 2 * 1);
  EXPECT_EQ(profiler.kind_stat(InstructionKind::kCallBytecode).count, 2 * 3);
  EXPECT_EQ(profiler.kind_stat(InstructionKind::kRet).count, 2 * 4);
  EXPECT_EQ(profiler.kind_stat(InstructionKind::kGoto).count, 2 * 3);
  EXPECT_EQ(profiler.kind_stat(InstructionKind::kIf).count, 2 * 4);
  EXPECT_EQ(profiler.function_stat(p.copy).count, 2);
  EXPECT_EQ(profiler.function_stat(p.dec).count, 6);
  EXPECT_EQ(profiler.function_stat(p.inc).count, 6);
  EXPECT_EQ(profiler.function_stat(p.shape_of).count, 2);
  EXPECT_EQ(profiler.function_stat(p.alloc).count, 2);
  EXPECT_EQ(profiler.function_stat(p.quoted).count, 2);
  EXPECT_EQ(profiler.function_stat(p.add).count, 2);
  EXPECT_EQ(profiler.function_stat(p.helper).count, 0);  // bytecode callees: counted by kind only
  // One clock read per instruction: the instructions' times add up to at most the runs' total.
  EXPECT_GT(profiler.instruction_ns(), 0);
  EXPECT_LE(profiler.instruction_ns(), profiler.runs().total_ns);
  EXPECT_GT(profiler.kind_stat(InstructionKind::kCallCompiledKernel).total_ns, 0);

  // Detached: the next call is not recorded.
  ASSERT_TRUE(vm.SetProfiler(nullptr).ok());
  ASSERT_TRUE(RunMain(vm, 5).ok());
  EXPECT_EQ(profiler.runs().count, 2);
  EXPECT_EQ(profiler.kind_stat(InstructionKind::kGoto).count, 6);

  profiler.Clear();
  EXPECT_EQ(profiler.runs().count, 0);
  EXPECT_EQ(profiler.kind_stat(InstructionKind::kCallLibrary).count, 0);
  EXPECT_EQ(profiler.function_stat(p.dec).count, 0);
  EXPECT_EQ(profiler.FormatReport(), "profile: nothing was run\n");
}

TEST(ProfilerTest, RefusesAnotherExecutablesVm) {
  Program p = BuildProgram();
  Program other = BuildProgram();
  ASSERT_NE(p.executable, nullptr);
  ASSERT_NE(other.executable, nullptr);
  VirtualMachine vm(p.executable);
  Profiler profiler(other.executable);
  Status status = vm.SetProfiler(&profiler);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(), "the profiler records a different executable than this VM runs");
  EXPECT_EQ(vm.profiler(), nullptr);
}

TEST(ProfilerTest, ReportListsKindsAndCalleesWithTheirCounts) {
  Program p = BuildProgram();
  ASSERT_NE(p.executable, nullptr);
  VirtualMachine vm(p.executable);
  Profiler profiler(p.executable);
  ASSERT_TRUE(vm.SetProfiler(&profiler).ok());
  ASSERT_TRUE(RunMain(vm, 4).ok());
  const std::string report = profiler.FormatReport();
  EXPECT_TRUE(report.starts_with("profile: 1 run of 'main', ")) << report;
  EXPECT_EQ(ReportCount(report, "call library"), 1 + 4 + 4 + 3) << report;
  EXPECT_EQ(ReportCount(report, "call compiled kernel"), 1) << report;
  EXPECT_EQ(ReportCount(report, "call bytecode"), 4) << report;
  EXPECT_EQ(ReportCount(report, "ret"), 5) << report;
  EXPECT_EQ(ReportCount(report, "goto"), 4) << report;
  EXPECT_EQ(ReportCount(report, "if"), 5) << report;
  EXPECT_EQ(ReportCount(report, "test.decrement"), 4) << report;
  EXPECT_EQ(ReportCount(report, "test.increment"), 4) << report;
  EXPECT_EQ(ReportCount(report, "add_scalar"), 1) << report;
  EXPECT_EQ(ReportCount(report, kQuotedName), 1) << report;
  EXPECT_EQ(ReportCount(report, "helper"), -1) << report;  // bytecode functions are not listed
}

// The report of a synthetic timeline: exact totals, means, shares and order.
TEST(ProfilerTest, ReportFormatsTotalsMeansAndSharesSortedByTotal) {
  Program p = BuildProgram();
  ASSERT_NE(p.executable, nullptr);
  Profiler profiler(p.executable);
  profiler.BeginRun(p.main, 1000);
  profiler.RecordInstruction(InstructionKind::kCallLibrary, p.dec, 1000, 1500);
  profiler.RecordInstruction(InstructionKind::kCallCompiledKernel, p.add, 1500, 7500);
  profiler.RecordInstruction(InstructionKind::kCallLibrary, p.dec, 7500, 8500);
  profiler.RecordInstruction(InstructionKind::kGoto, -1, 8500, 9000);
  profiler.RecordInstruction(InstructionKind::kRet, -1, 9000, 9000);
  profiler.EndRun(10000);
  const std::string report = profiler.FormatReport();
  const std::string header = "profile: 1 run of 'main', 9.000 us in total, 8.000 us in instructions";
  EXPECT_TRUE(report.starts_with(header)) << report;
  const std::string tables = report.substr(report.find("\n\n") + 2);
  EXPECT_EQ(tables,
            "instruction                count     total us    mean us   share\n"
            "call compiled kernel           1        6.000      6.000   75.0%\n"
            "call library                   2        1.500      0.750   18.8%\n"
            "goto                           1        0.500      0.500    6.2%\n"
            "ret                            1        0.000      0.000    0.0%\n"
            "\n"
            "function        kind                 count     total us    mean us   share\n"
            "add_scalar      compiled kernel          1        6.000      6.000   75.0%\n"
            "test.decrement  library                  2        1.500      0.750   18.8%\n")
      << tables;
}

// The spans of a trace, checked to be complete events of non-negative length
// (failing the test otherwise).
std::vector<TraceSpan> Spans(const std::string& json) {
  std::string error;
  std::vector<TraceSpan> spans = ParseTrace(json, &error);
  EXPECT_TRUE(error.empty()) << error << "\n" << json;
  for (const TraceSpan& span : spans) {
    EXPECT_EQ(span.ph, "X") << span.name;
    EXPECT_GE(span.end, span.begin) << span.name;
  }
  return spans;
}

// `inner` lies within `outer` (both rounded to 1 ns in the JSON).
bool Within(const TraceSpan& inner, const TraceSpan& outer) {
  constexpr double kRounding = 0.0021;
  return inner.begin >= outer.begin - kRounding && inner.end <= outer.end + kRounding;
}

TEST(ProfilerTest, TraceIsJsonWithOneEventPerCallNestedLikeTheCalls) {
  Program p = BuildProgram();
  ASSERT_NE(p.executable, nullptr);
  VirtualMachine vm(p.executable);
  Profiler profiler(p.executable, Profiler::Options{.record_trace = true});
  ASSERT_TRUE(vm.SetProfiler(&profiler).ok());
  ASSERT_TRUE(RunMain(vm, 3).ok());
  ASSERT_TRUE(RunMain(vm, 2).ok());
  std::vector<TraceSpan> spans = Spans(profiler.TraceJson());
  // Per run: the run itself, 10 / 8 library calls, 1 kernel call, 3 / 2 helper calls.
  ASSERT_EQ(spans.size(), (1 + 10 + 1 + 3) + (1 + 8 + 1 + 2));
  std::map<std::string, int> by_cat, by_name;
  for (const TraceSpan& s : spans) {
    ++by_cat[s.cat];
    ++by_name[s.name];
  }
  EXPECT_EQ(by_cat["invoke"], 2);
  EXPECT_EQ(by_cat["library"], 18);
  EXPECT_EQ(by_cat["compiled kernel"], 2);
  EXPECT_EQ(by_cat["bytecode"], 5);
  EXPECT_EQ(by_name["main"], 2);
  EXPECT_EQ(by_name["helper"], 5);
  EXPECT_EQ(by_name["add_scalar"], 2);
  EXPECT_EQ(by_name["test.decrement"], 5);
  EXPECT_EQ(by_name[kQuotedName], 2);  // escaped in the file, the same name once parsed

  // Events come in start order; each run contains its calls, each helper call
  // contains exactly the one test.increment it makes, and nothing else.
  ASSERT_EQ(spans[0].cat, "invoke");
  const TraceSpan* run = nullptr;
  for (size_t i = 0; i < spans.size(); ++i) {
    if (i > 0) {
      EXPECT_GE(spans[i].begin, spans[i - 1].begin);
    }
    if (spans[i].cat == "invoke") {
      if (run != nullptr) {
        EXPECT_GE(spans[i].begin, run->end - 0.0021);
      }
      run = &spans[i];
      continue;
    }
    EXPECT_TRUE(Within(spans[i], *run)) << spans[i].name;
    if (spans[i].cat != "bytecode") continue;
    std::vector<std::string> inside;
    for (const TraceSpan& s : spans) {
      if (&s != &spans[i] && s.cat != "invoke" && Within(s, spans[i])) inside.push_back(s.name);
    }
    EXPECT_EQ(inside, std::vector<std::string>{"test.increment"});
  }
}

TEST(ProfilerTest, AFailedRunClosesItsOpenCallsAndTheVmRecovers) {
  Program p = BuildProgram();
  ASSERT_NE(p.executable, nullptr);
  VirtualMachine vm(p.executable);
  Profiler profiler(p.executable, Profiler::Options{.record_trace = true});
  ASSERT_TRUE(vm.SetProfiler(&profiler).ok());
  Value x = F32({1}, {1});
  auto failed = vm.Invoke("fails", std::span<const Value>(&x, 1));
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().message(),
            "functions[10] 'failing_helper': instruction at word 5 (call): test.fail: Tensor[(1,), f32]");
  EXPECT_EQ(profiler.runs().count, 1);
  // helper(7): call, increment, ret; failing_helper: call, increment; test.fail failed (not recorded).
  EXPECT_EQ(profiler.kind_stat(InstructionKind::kCallBytecode).count, 2);
  EXPECT_EQ(profiler.kind_stat(InstructionKind::kCallLibrary).count, 2);
  EXPECT_EQ(profiler.kind_stat(InstructionKind::kRet).count, 1);
  std::vector<TraceSpan> spans = Spans(profiler.TraceJson());
  ASSERT_EQ(spans.size(), 1u + 2u + 2u);
  EXPECT_EQ(spans[0].name, "fails");
  // failing_helper was still open when the run failed: it ends with the run.
  const TraceSpan& open = spans[3];
  EXPECT_EQ(open.name, "failing_helper");
  EXPECT_NEAR(open.end, spans[0].end, 0.0021);
  for (size_t i = 1; i < spans.size(); ++i) EXPECT_TRUE(Within(spans[i], spans[0])) << spans[i].name;

  auto ok = RunMain(vm, 1);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(profiler.runs().count, 2);
}

TEST(ProfilerTest, TraceOfASyntheticTimelineIsExact) {
  Program p = BuildProgram();
  ASSERT_NE(p.executable, nullptr);
  Profiler profiler(p.executable, Profiler::Options{.record_trace = true});
  profiler.BeginRun(p.main, 5000);
  profiler.RecordInstruction(InstructionKind::kCallLibrary, p.quoted, 5000, 6250);
  profiler.EnterBytecodeCall(p.helper, 6250);
  profiler.RecordInstruction(InstructionKind::kCallCompiledKernel, p.add, 6300, 7300);
  profiler.ExitBytecodeCall(7400);
  profiler.EndRun(8000);
  EXPECT_EQ(profiler.TraceJson(),
            "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"
            "{\"name\":\"main\",\"cat\":\"invoke\",\"ph\":\"X\",\"ts\":0.000,\"dur\":3.000,\"pid\":1,\"tid\":1},\n"
            "{\"name\":\"test.\\\"quoted\\\"\\\\caf\xc3\xa9\",\"cat\":\"library\",\"ph\":\"X\",\"ts\":0.000,"
            "\"dur\":1.250,\"pid\":1,\"tid\":1},\n"
            "{\"name\":\"helper\",\"cat\":\"bytecode\",\"ph\":\"X\",\"ts\":1.250,\"dur\":1.150,\"pid\":1,\"tid\":1},\n"
            "{\"name\":\"add_scalar\",\"cat\":\"compiled "
            "kernel\",\"ph\":\"X\",\"ts\":1.300,\"dur\":1.000,\"pid\":1,\"tid\":1}\n"
            "]}\n");
}

}  // namespace
}  // namespace strata::testing
