// Every scalar expression and statement kind, compiled and run against C++.
#include <cmath>
#include <functional>
#include <limits>
#include <unistd.h>

#include <gtest/gtest.h>
#include <sys/mman.h>

#include "tests/codegen/codegen_test_util.h"
#include "vm/cpu_features.h"

namespace strata::codegen::testing {
namespace {

using tir::Intrinsic;
using tir::PrimExprKind;

// Y[i] = f(X[i]) over a vectorized loop of a 1-D buffer of `dtype`.
PrimFunc MakeElementwise(DataType dtype, const std::function<PrimExpr(PrimExpr)>& f,
                         DataType out_dtype = DataType::Void()) {
  if (out_dtype.is_void()) out_dtype = dtype;
  Var n("n"), i("i");
  Buffer x = tir::MakeBuffer("X", dtype, {n});
  Buffer y = tir::MakeBuffer("Y", out_dtype, {n});
  Stmt body = For(i, 0, n, ForKind::kVectorized, Store(y, {i}, f(Load(x, {i}))));
  return tir::MakePrimFunc({BufferParam(x), BufferParam(y)}, body);
}

// Compiles one elementwise kernel and runs it on `input`.
template <typename In, typename Out>
std::vector<Out> RunElementwise(const PrimFunc& func, const std::vector<In>& input) {
  LoadedKernels kernels({{"f", func}});
  EXPECT_TRUE(kernels.status().ok()) << kernels.status().message();
  if (!kernels.status().ok()) return {};
  HostTensor<In> x({static_cast<int64_t>(input.size())}, input);
  HostTensor<Out> y({static_cast<int64_t>(input.size())});
  EXPECT_EQ(Call(kernels.Get("f"), {TensorArg(x.dl()), TensorArg(y.dl())}), 0) << vm::TakeKernelError();
  return y.values();
}

struct UnaryCase {
  Intrinsic op;
  double (*reference)(double);
  float lo, hi;
};

// Vectorized loops over exp/tanh/erf call glibc's vector variants at the widest
// width the target has (16 lanes of f32 on AVX-512), not scalar libm per lane.
TEST(CodegenIntrinsics, VectorMathCallsTheWidestLibmvecVariant) {
  IrDump dump("strata_vector_math");
  LoadedKernels kernels({{"f", MakeElementwise(DataType::F32(),
                                               [](PrimExpr x) {
                                                 return tir::CallNode::make(
                                                     Intrinsic::kErf, {tir::CallNode::make(Intrinsic::kExp, {x})});
                                               })}},
                        dump.options);
  ASSERT_KERNELS_OK(kernels);
  const std::string ir = dump.Take();
  // The variant (ISA letter and lanes) this host's widest vector unit calls.
  const bool avx512 = vm::HostHasCpuFeature("avx512f").value_or(false);
  const bool avx2 = vm::HostHasCpuFeature("avx2").value_or(false);
  const std::string lanes = avx512 ? "16" : avx2 ? "8" : "4";
  const std::string prefix = std::string("_ZGV") + (avx512 ? "e" : avx2 ? "d" : "b") + "N" + lanes + "v_";
  for (const char* fn : {"expf", "erff"}) {
    EXPECT_NE(ir.find("<" + lanes + " x float> @" + prefix + fn + "("), std::string::npos)
        << "no call of " << prefix << fn << " in the optimized IR";
  }
  EXPECT_EQ(ir.find("call float @expf"), std::string::npos) << "scalar expf left in the vector loop";
}

TEST(CodegenIntrinsics, UnaryMatchStdF32AndF64) {
  const UnaryCase cases[] = {
      {Intrinsic::kExp, [](double x) { return std::exp(x); }, -10, 10},
      {Intrinsic::kLog, [](double x) { return std::log(x); }, 0.01f, 100},
      {Intrinsic::kSqrt, [](double x) { return std::sqrt(x); }, 0, 100},
      {Intrinsic::kTanh, [](double x) { return std::tanh(x); }, -5, 5},
      {Intrinsic::kErf, [](double x) { return std::erf(x); }, -3, 3},
      {Intrinsic::kAbs, [](double x) { return std::fabs(x); }, -5, 5},
      {Intrinsic::kFloor, [](double x) { return std::floor(x); }, -5, 5},
      {Intrinsic::kCeil, [](double x) { return std::ceil(x); }, -5, 5},
      {Intrinsic::kRound, [](double x) { return std::nearbyint(x); }, -5, 5},
      {Intrinsic::kSin, [](double x) { return std::sin(x); }, -10, 10},
      {Intrinsic::kCos, [](double x) { return std::cos(x); }, -10, 10},
  };
  for (const UnaryCase& c : cases) {
    SCOPED_TRACE(std::string(tir::IntrinsicName(c.op)));
    std::vector<float> input = RandomFloats(37, 5, c.lo, c.hi);
    auto call = [&](PrimExpr x) { return tir::CallNode::make(c.op, {x}); };
    std::vector<float> out32 = RunElementwise<float, float>(MakeElementwise(DataType::F32(), call), input);
    std::vector<double> input64(input.begin(), input.end());
    std::vector<double> out64 = RunElementwise<double, double>(MakeElementwise(DataType::F64(), call), input64);
    ASSERT_EQ(out32.size(), input.size());
    ASSERT_EQ(out64.size(), input.size());
    for (size_t i = 0; i < input.size(); ++i) {
      double expected = c.reference(input[i]);
      EXPECT_NEAR(out32[i], expected, 1e-5 * (1 + std::fabs(expected))) << "x = " << input[i];
      EXPECT_NEAR(out64[i], expected, 1e-12 * (1 + std::fabs(expected))) << "x = " << input[i];
    }
  }
}

TEST(CodegenIntrinsics, PowMatchesStd) {
  Var n("n"), i("i");
  Buffer x = tir::MakeBuffer("X", DataType::F32(), {n});
  Buffer e = tir::MakeBuffer("E", DataType::F32(), {n});
  Buffer y = tir::MakeBuffer("Y", DataType::F32(), {n});
  Stmt body = For(i, 0, n, ForKind::kVectorized,
                  Store(y, {i}, tir::CallNode::make(Intrinsic::kPow, {Load(x, {i}), Load(e, {i})})));
  LoadedKernels kernels({{"pow", tir::MakePrimFunc({BufferParam(x), BufferParam(e), BufferParam(y)}, body)}});
  ASSERT_KERNELS_OK(kernels);
  HostTensor<float> xs({20}, RandomFloats(20, 9, 0.1f, 4.0f));
  HostTensor<float> es({20}, RandomFloats(20, 10, -3.0f, 3.0f));
  HostTensor<float> ys({20});
  ASSERT_EQ(Call(kernels.Get("pow"), {TensorArg(xs.dl()), TensorArg(es.dl()), TensorArg(ys.dl())}), 0);
  for (int i = 0; i < 20; ++i) {
    double expected = std::pow(static_cast<double>(xs[i]), static_cast<double>(es[i]));
    EXPECT_NEAR(ys[i], expected, 1e-5 * (1 + std::fabs(expected)));
  }
}

// exp below log(FLT_MIN) is 0 (its exact value is subnormal or 0) and above
// log(FLT_MAX) +inf: such arguments never reach the vector exp, which runs a
// scalar path for a whole vector when a lane is out of its range. NaN stays
// NaN, and arguments just inside the range keep their exact value.
TEST(CodegenIntrinsics, ExpFlushesUnderflowToZeroOverflowToInfinityAndKeepsTheRest) {
  auto f = [](PrimExpr x) { return tir::CallNode::make(Intrinsic::kExp, {x}); };
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> input = {-inf,         -std::numeric_limits<float>::max(),
                                    -1000.0f,     -100.0f,
                                    -87.4f,       -87.3f,
                                    -20.0f,       0.0f,
                                    1.0f,         88.7f,
                                    88.8f,        inf,
                                    std::nanf("")};
  std::vector<float> out32 = RunElementwise<float, float>(MakeElementwise(DataType::F32(), f), input);
  ASSERT_EQ(out32.size(), input.size());
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(out32[i], 0.0f) << "x = " << input[i];
  for (size_t i = 5; i < 10; ++i) {
    const float expected = std::exp(input[i]);
    EXPECT_NEAR(out32[i], expected, 1e-6 * expected) << "x = " << input[i];
  }
  EXPECT_GT(out32[5], 0.0f) << "exp(-87.3) is a normal float";
  EXPECT_EQ(out32[10], inf);
  EXPECT_EQ(out32[11], inf);
  EXPECT_TRUE(std::isnan(out32.back()));
  const std::vector<double> input64 = {-inf, -800.0, -708.5, -708.0, -1.0, 710.0, std::nan(""), 709.7};
  std::vector<double> out64 = RunElementwise<double, double>(MakeElementwise(DataType::F64(), f), input64);
  ASSERT_EQ(out64.size(), input64.size());
  EXPECT_EQ(out64[0], 0.0);
  EXPECT_EQ(out64[1], 0.0);
  EXPECT_EQ(out64[2], 0.0);
  EXPECT_NEAR(out64[3], std::exp(-708.0), 1e-12 * std::exp(-708.0));
  EXPECT_NEAR(out64[4], std::exp(-1.0), 1e-15);
  EXPECT_EQ(out64[5], std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(out64[6]));
  EXPECT_NEAR(out64[7], std::exp(709.7), 1e-12 * std::exp(709.7));
}

// ONNX Round and numpy round halves to the even neighbour, not away from zero.
TEST(CodegenIntrinsics, RoundTakesHalvesToEven) {
  auto f = [](PrimExpr x) { return tir::CallNode::make(Intrinsic::kRound, {x}); };
  std::vector<float> out =
      RunElementwise<float, float>(MakeElementwise(DataType::F32(), f), {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 2.4f});
  EXPECT_EQ(out, (std::vector<float>{0.0f, 2.0f, 2.0f, -0.0f, -2.0f, -2.0f, 2.0f}));
}

// fmod keeps the dividend's sign (C's fmod), unlike a floor modulo.
TEST(CodegenIntrinsics, FmodKeepsTheSignOfTheDividend) {
  Var n("n"), i("i");
  Buffer a = tir::MakeBuffer("A", DataType::F32(), {n});
  Buffer b = tir::MakeBuffer("B", DataType::F32(), {n});
  Buffer y = tir::MakeBuffer("Y", DataType::F32(), {n});
  Stmt body = For(i, 0, n, ForKind::kVectorized,
                  Store(y, {i}, tir::CallNode::make(Intrinsic::kFmod, {Load(a, {i}), Load(b, {i})})));
  LoadedKernels kernels({{"fmod", tir::MakePrimFunc({BufferParam(a), BufferParam(b), BufferParam(y)}, body)}});
  ASSERT_KERNELS_OK(kernels);
  HostTensor<float> as({4}, {-7.5f, 7.5f, -7.5f, 7.5f});
  HostTensor<float> bs({4}, {2.0f, 2.0f, -2.0f, -2.0f});
  HostTensor<float> ys({4});
  ASSERT_EQ(Call(kernels.Get("fmod"), {TensorArg(as.dl()), TensorArg(bs.dl()), TensorArg(ys.dl())}), 0);
  for (int k = 0; k < 4; ++k) EXPECT_EQ(ys[k], std::fmod(as[k], bs[k])) << "k = " << k;
  EXPECT_EQ(ys[0], -1.5f);
}

TEST(CodegenIntrinsics, IntegerAbs) {
  auto f = [](PrimExpr x) { return tir::CallNode::make(Intrinsic::kAbs, {x}); };
  std::vector<int32_t> out = RunElementwise<int32_t, int32_t>(MakeElementwise(DataType::I32(), f), {-5, 0, 7, -1});
  EXPECT_EQ(out, (std::vector<int32_t>{5, 0, 7, 1}));
}

// Floor division and modulo of every sign combination, i64 and i32.
template <typename T>
void CheckFloorDivMod(DataType dtype) {
  Var n("n"), i("i");
  Buffer a = tir::MakeBuffer("A", dtype, {n});
  Buffer b = tir::MakeBuffer("B", dtype, {n});
  Buffer q = tir::MakeBuffer("Q", dtype, {n});
  Buffer r = tir::MakeBuffer("R", dtype, {n});
  Stmt body = For(i, 0, n, ForKind::kSerial,
                  Seq({Store(q, {i}, tir::FloorDiv(Load(a, {i}), Load(b, {i}))),
                       Store(r, {i}, tir::FloorMod(Load(a, {i}), Load(b, {i})))}));
  LoadedKernels kernels(
      {{"divmod", tir::MakePrimFunc({BufferParam(a), BufferParam(b), BufferParam(q), BufferParam(r)}, body)}});
  ASSERT_KERNELS_OK(kernels);
  std::vector<T> as = {7, -7, 7, -7, 0, -1, 6, -6, 1, -9, 9, 5};
  std::vector<T> bs = {2, 2, -2, -2, 3, 3, -3, 3, 5, 4, -4, 1};
  int64_t count = static_cast<int64_t>(as.size());
  HostTensor<T> at({count}, as), bt({count}, bs), qt({count}), rt({count});
  ASSERT_EQ(
      Call(kernels.Get("divmod"), {TensorArg(at.dl()), TensorArg(bt.dl()), TensorArg(qt.dl()), TensorArg(rt.dl())}), 0);
  for (int64_t k = 0; k < count; ++k) {
    T expected_q = static_cast<T>(std::floor(static_cast<double>(as[k]) / static_cast<double>(bs[k])));
    T expected_r = as[k] - expected_q * bs[k];
    EXPECT_EQ(qt[k], expected_q) << as[k] << " // " << bs[k];
    EXPECT_EQ(rt[k], expected_r) << as[k] << " % " << bs[k];
  }
}

TEST(CodegenArithmetic, FloorDivModRoundTowardNegativeInfinity) {
  CheckFloorDivMod<int64_t>(DataType::I64());
  CheckFloorDivMod<int32_t>(DataType::I32());
}

TEST(CodegenArithmetic, BinaryOperatorsOnFloats) {
  auto f = [](PrimExpr x) {
    // ((x - 1) * 3 + min(x, 0.5)) / 2 - max(x, -0.25)
    return Bin(PrimExprKind::kDiv, (x - F32(1)) * F32(3) + tir::Min(x, F32(0.5)), F32(2)) - tir::Max(x, F32(-0.25));
  };
  std::vector<float> input = RandomFloats(29, 3, -2, 2);
  std::vector<float> out = RunElementwise<float, float>(MakeElementwise(DataType::F32(), f), input);
  ASSERT_EQ(out.size(), input.size());
  for (size_t i = 0; i < input.size(); ++i) {
    double x = input[i];
    double expected = ((x - 1) * 3 + std::min(x, 0.5)) / 2 - std::max(x, -0.25);
    EXPECT_NEAR(out[i], expected, 1e-5 * (1 + std::fabs(expected)));
  }
}

TEST(CodegenArithmetic, ComparisonsAndLogic) {
  // Y = select((x > 0 && x < 3) || !(x != -1), 1, 0) with x an i32.
  auto f = [](PrimExpr x) {
    PrimExpr in_range = Bin(PrimExprKind::kAnd, Bin(PrimExprKind::kGT, x, tir::IntImm(DataType::I32(), 0)),
                            Bin(PrimExprKind::kLT, x, tir::IntImm(DataType::I32(), 3)));
    PrimExpr minus_one = tir::NotNode::make(Bin(PrimExprKind::kNE, x, tir::IntImm(DataType::I32(), -1)));
    PrimExpr both_ends = Bin(PrimExprKind::kOr, Bin(PrimExprKind::kLE, x, tir::IntImm(DataType::I32(), -5)),
                             Bin(PrimExprKind::kGE, x, tir::IntImm(DataType::I32(), 5)));
    PrimExpr eq = Bin(PrimExprKind::kEQ, x, tir::IntImm(DataType::I32(), 4));
    PrimExpr one = tir::IntImm(DataType::I32(), 1);
    PrimExpr zero = tir::IntImm(DataType::I32(), 0);
    return tir::SelectNode::make(Bin(PrimExprKind::kOr, in_range, minus_one), one, zero) +
           tir::SelectNode::make(both_ends, tir::IntImm(DataType::I32(), 10), zero) +
           tir::SelectNode::make(eq, tir::IntImm(DataType::I32(), 100), zero);
  };
  std::vector<int32_t> input = {-6, -5, -4, -1, 0, 1, 2, 3, 4, 5, 6};
  std::vector<int32_t> out = RunElementwise<int32_t, int32_t>(MakeElementwise(DataType::I32(), f), input);
  ASSERT_EQ(out.size(), input.size());
  for (size_t i = 0; i < input.size(); ++i) {
    int x = input[i];
    int expected = (((x > 0 && x < 3) || x == -1) ? 1 : 0) + ((x <= -5 || x >= 5) ? 10 : 0) + (x == 4 ? 100 : 0);
    EXPECT_EQ(out[i], expected) << "x = " << x;
  }
}

TEST(CodegenArithmetic, ShortCircuitGuardsOutOfBoundsLoad) {
  // Y[i] = select(i < m && X[i] > 0, 1, 0) with i running past X's extent m:
  // the load must not execute for i >= m.
  Var m("m"), n("n"), i("i");
  Buffer x = tir::MakeBuffer("X", DataType::F32(), {m});
  Buffer y = tir::MakeBuffer("Y", DataType::I32(), {n});
  PrimExpr guard = Bin(PrimExprKind::kAnd, Bin(PrimExprKind::kLT, i, m), Bin(PrimExprKind::kGT, Load(x, {i}), F32(0)));
  Stmt body = For(
      i, 0, n, ForKind::kSerial,
      Store(y, {i}, tir::SelectNode::make(guard, tir::IntImm(DataType::I32(), 1), tir::IntImm(DataType::I32(), 0))));
  LoadedKernels kernels({{"guarded", tir::MakePrimFunc({BufferParam(x), BufferParam(y)}, body)}});
  ASSERT_KERNELS_OK(kernels);
  // X's two elements end right before an inaccessible page, so a load past them faults.
  long page = sysconf(_SC_PAGESIZE);
  void* pages = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(pages, MAP_FAILED);
  ASSERT_EQ(mprotect(static_cast<char*>(pages) + page, page, PROT_NONE), 0);
  float* data = reinterpret_cast<float*>(static_cast<char*>(pages) + page) - 2;
  data[0] = 1.0f;
  data[1] = -1.0f;
  HostTensor<float> xs({2});
  xs.dl()->data = data;
  HostTensor<int32_t> ys({5});
  ASSERT_EQ(Call(kernels.Get("guarded"), {TensorArg(xs.dl()), TensorArg(ys.dl())}), 0);
  EXPECT_EQ(ys.values(), (std::vector<int32_t>{1, 0, 0, 0, 0}));
  munmap(pages, 2 * page);
}

TEST(CodegenCasts, BetweenIntFloatAndBool) {
  auto check_f32_to_i32 = [](PrimExpr x) { return tir::CastNode::make(DataType::I32(), x); };
  EXPECT_EQ((RunElementwise<float, int32_t>(MakeElementwise(DataType::F32(), check_f32_to_i32, DataType::I32()),
                                            {2.7f, -2.7f, 0.0f, 100.5f})),
            (std::vector<int32_t>{2, -2, 0, 100}));

  auto i32_to_f32 = [](PrimExpr x) { return tir::CastNode::make(DataType::F32(), x); };
  EXPECT_EQ((RunElementwise<int32_t, float>(MakeElementwise(DataType::I32(), i32_to_f32, DataType::F32()),
                                            {-3, 0, 16777216})),
            (std::vector<float>{-3.0f, 0.0f, 16777216.0f}));

  auto i64_to_i8 = [](PrimExpr x) { return tir::CastNode::make(DataType::Int(8), x); };
  EXPECT_EQ((RunElementwise<int64_t, int8_t>(MakeElementwise(DataType::I64(), i64_to_i8, DataType::Int(8)),
                                             {1, -1, 300, -129})),
            (std::vector<int8_t>{1, -1, 44, 127}));

  auto u8_to_f64 = [](PrimExpr x) { return tir::CastNode::make(DataType::F64(), x); };
  EXPECT_EQ(
      (RunElementwise<uint8_t, double>(MakeElementwise(DataType::UInt(8), u8_to_f64, DataType::F64()), {0, 200, 255})),
      (std::vector<double>{0, 200, 255}));

  auto i8_to_i64 = [](PrimExpr x) { return tir::CastNode::make(DataType::I64(), x); };
  EXPECT_EQ(
      (RunElementwise<int8_t, int64_t>(MakeElementwise(DataType::Int(8), i8_to_i64, DataType::I64()), {-128, -1, 5})),
      (std::vector<int64_t>{-128, -1, 5}));

  // f64 -> f32 -> f16 -> f32 rounds to half precision.
  auto through_half = [](PrimExpr x) {
    return tir::CastNode::make(DataType::F32(),
                               tir::CastNode::make(DataType::Float(16), tir::CastNode::make(DataType::F32(), x)));
  };
  std::vector<float> halves =
      RunElementwise<double, float>(MakeElementwise(DataType::F64(), through_half, DataType::F32()), {1.0, 0.1, 2049});
  EXPECT_EQ(halves, (std::vector<float>{1.0f, 0.0999755859375f, 2048.0f}));

  // f32 -> bool -> i32: non-zero is true.
  auto to_bool_to_int = [](PrimExpr x) {
    return tir::CastNode::make(DataType::I32(), tir::CastNode::make(DataType::Bool(), x));
  };
  EXPECT_EQ((RunElementwise<float, int32_t>(MakeElementwise(DataType::F32(), to_bool_to_int, DataType::I32()),
                                            {0.0f, -0.5f, 3.0f})),
            (std::vector<int32_t>{0, 1, 1}));

  // Saturating float -> int: no poison, the nearest representable value.
  auto f32_to_i8 = [](PrimExpr x) { return tir::CastNode::make(DataType::Int(8), x); };
  EXPECT_EQ((RunElementwise<float, int8_t>(MakeElementwise(DataType::F32(), f32_to_i8, DataType::Int(8)),
                                           {1000.0f, -1000.0f})),
            (std::vector<int8_t>{127, -128}));
}

TEST(CodegenCasts, BoolBuffersRoundTrip) {
  // Y (bool) = X > 0; Z (f32) = select(Y, 1, -1).
  Var n("n"), i("i");
  Buffer x = tir::MakeBuffer("X", DataType::F32(), {n});
  Buffer y = tir::MakeBuffer("Y", DataType::Bool(), {n});
  Buffer z = tir::MakeBuffer("Z", DataType::F32(), {n});
  Stmt body = For(i, 0, n, ForKind::kSerial,
                  Seq({Store(y, {i}, Bin(PrimExprKind::kGT, Load(x, {i}), F32(0))),
                       Store(z, {i}, tir::SelectNode::make(Load(y, {i}), F32(1), F32(-1)))}));
  LoadedKernels kernels({{"bools", tir::MakePrimFunc({BufferParam(x), BufferParam(y), BufferParam(z)}, body)}});
  ASSERT_KERNELS_OK(kernels);
  HostTensor<float> xs({4}, {1, -1, 0, 2});
  HostTensor<uint8_t> ys({4});
  ys.dl()->dtype = DLDataType{6, 1, 1};  // Strata's bool DLDataType
  HostTensor<float> zs({4});
  ASSERT_EQ(Call(kernels.Get("bools"), {TensorArg(xs.dl()), TensorArg(ys.dl()), TensorArg(zs.dl())}), 0)
      << vm::TakeKernelError();
  EXPECT_EQ(ys.values(), (std::vector<uint8_t>{1, 0, 0, 1}));
  EXPECT_EQ(zs.values(), (std::vector<float>{1, -1, -1, 1}));
  ys.dl()->dtype = DLDataType{6, 8, 1};  // numpy-style 8-bit bool is accepted too
  EXPECT_EQ(Call(kernels.Get("bools"), {TensorArg(xs.dl()), TensorArg(ys.dl()), TensorArg(zs.dl())}), 0);
}

TEST(CodegenStatements, LetAndIfThenElse) {
  // let t = X[i] * 2; if t > 1 { Y[i] = t } else { if t < -1 { Y[i] = -1 } else { Y[i] = 0 } }
  Var n("n"), i("i"), t("t", DataType::F32());
  Buffer x = tir::MakeBuffer("X", DataType::F32(), {n});
  Buffer y = tir::MakeBuffer("Y", DataType::F32(), {n});
  Stmt inner =
      tir::IfThenElseNode::make(Bin(PrimExprKind::kLT, t, F32(-1)), Store(y, {i}, F32(-1)), Store(y, {i}, F32(0)));
  Stmt outer = tir::IfThenElseNode::make(Bin(PrimExprKind::kGT, t, F32(1)), Store(y, {i}, t), inner);
  Stmt body = For(i, 0, n, ForKind::kSerial, tir::LetStmtNode::make(t, Load(x, {i}) * F32(2), outer));
  LoadedKernels kernels({{"branches", tir::MakePrimFunc({BufferParam(x), BufferParam(y)}, body)}});
  ASSERT_KERNELS_OK(kernels);
  HostTensor<float> xs({5}, {1.0f, 0.25f, -0.25f, -3.0f, 0.75f});
  HostTensor<float> ys({5});
  ASSERT_EQ(Call(kernels.Get("branches"), {TensorArg(xs.dl()), TensorArg(ys.dl())}), 0);
  EXPECT_EQ(ys.values(), (std::vector<float>{2.0f, 0.0f, 0.0f, -1.0f, 1.5f}));
}

// for i in range(0, n) { step(X, Y, i, n) } over 1-D f32 buffers X and Y.
PrimFunc MakeSerialLoop(const std::function<std::vector<Stmt>(Buffer, Buffer, Var, Var)>& step) {
  Var n("n"), i("i");
  Buffer x = tir::MakeBuffer("X", DataType::F32(), {n});
  Buffer y = tir::MakeBuffer("Y", DataType::F32(), {n});
  return tir::MakePrimFunc({BufferParam(x), BufferParam(y)}, For(i, 0, n, ForKind::kSerial, Seq(step(x, y, i, n))));
}

TEST(CodegenStatements, IfWithoutElseAndEvaluate) {
  PrimFunc clip = MakeSerialLoop([](Buffer x, Buffer y, Var i, Var) {
    return std::vector<Stmt>{
        tir::EvaluateNode::make(Load(x, {i})), Store(y, {i}, F32(5)),
        tir::IfThenElseNode::make(Bin(PrimExprKind::kLT, Load(x, {i}), F32(0)), Store(y, {i}, Load(x, {i})))};
  });
  LoadedKernels kernels({{"clip", clip}});
  ASSERT_KERNELS_OK(kernels);
  HostTensor<float> xs({3}, {-1, 1, -2});
  HostTensor<float> ys({3});
  ASSERT_EQ(Call(kernels.Get("clip"), {TensorArg(xs.dl()), TensorArg(ys.dl())}), 0);
  EXPECT_EQ(ys.values(), (std::vector<float>{-1, 5, -2}));
}

// A prefetch becomes llvm.prefetch (read, into L2, data) of the element's
// address and changes nothing the kernel computes, even when it names an
// element the kernel never reads.
TEST(CodegenStatements, PrefetchIsAHintThatChangesNoValue) {
  PrimFunc twice = MakeSerialLoop([](Buffer x, Buffer y, Var i, Var n) {
    return std::vector<Stmt>{tir::PrefetchNode::make(Load(x, {tir::Min(i + 8, n - 1)})),
                             Store(y, {i}, Load(x, {i}) * F32(2))};
  });
  IrDump dump("strata_prefetch");
  LoadedKernels kernels({{"twice", twice}}, dump.options);
  ASSERT_KERNELS_OK(kernels);
  const std::string ir = dump.Take();
  EXPECT_NE(ir.find("@llvm.prefetch.p0(ptr"), std::string::npos) << "no prefetch in the optimized IR";
  EXPECT_NE(ir.find("i32 0, i32 2, i32 1)"), std::string::npos) << "not a read prefetch into L2";
  for (int64_t size : {1, 7, 13}) {
    HostTensor<float> xs({size}, RandomFloats(size, 5));
    HostTensor<float> ys({size});
    ASSERT_EQ(Call(kernels.Get("twice"), {TensorArg(xs.dl()), TensorArg(ys.dl())}), 0) << vm::TakeKernelError();
    for (int64_t j = 0; j < size; ++j) ASSERT_EQ(ys[j], xs[j] * 2) << "size " << size << ", element " << j;
  }
}

// Reverses each row of X[m, n] into Y through a local buffer T of `shape`.
PrimFunc MakeReverseThroughScratch(std::vector<PrimExpr> scratch_shape, ForKind outer_kind) {
  Var m("m"), n("n"), i("i"), j("j"), j2("j");
  Buffer x = tir::MakeBuffer("X", DataType::F32(), {m, n});
  Buffer y = tir::MakeBuffer("Y", DataType::F32(), {m, n});
  Buffer t = tir::MakeBuffer("T", DataType::F32(), std::move(scratch_shape));
  Stmt fill = For(j, 0, n, ForKind::kSerial, Store(t, {j}, Load(x, {i, j})));
  Stmt drain = For(j2, 0, n, ForKind::kVectorized, Store(y, {i, j2}, Load(t, {n - 1 - j2})));
  Stmt body = For(i, 0, m, outer_kind, tir::AllocateNode::make(t, Seq({fill, drain})));
  return tir::MakePrimFunc({BufferParam(x), BufferParam(y)}, body);
}

void CheckReverse(const PrimFunc& func, int64_t m, int64_t n) {
  LoadedKernels kernels({{"reverse", func}});
  ASSERT_KERNELS_OK(kernels);
  HostTensor<float> x({m, n}, RandomFloats(m * n, 21));
  HostTensor<float> y({m, n});
  ASSERT_EQ(Call(kernels.Get("reverse"), {TensorArg(x.dl()), TensorArg(y.dl())}), 0) << vm::TakeKernelError();
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) ASSERT_EQ(y[i * n + j], x[i * n + (n - 1 - j)]);
  }
}

TEST(CodegenAllocate, SmallConstantBufferOnTheStack) {
  CheckReverse(MakeReverseThroughScratch({PrimExpr(64)}, ForKind::kSerial), 3, 64);
  CheckReverse(MakeReverseThroughScratch({PrimExpr(64)}, ForKind::kParallel), 9, 50);
}

TEST(CodegenAllocate, LargeConstantBufferInWorkspace) {
  // 100000 floats = 400 KB: beyond the stack limit.
  CheckReverse(MakeReverseThroughScratch({PrimExpr(100000)}, ForKind::kSerial), 2, 100000);
  CheckReverse(MakeReverseThroughScratch({PrimExpr(100000)}, ForKind::kParallel), 4, 3000);
}

TEST(CodegenAllocate, SymbolicBufferInWorkspace) {
  // T has the symbolic extent n of the input.
  Var m("m"), n("n"), i("i"), j("j"), j2("j");
  Buffer x = tir::MakeBuffer("X", DataType::F32(), {m, n});
  Buffer y = tir::MakeBuffer("Y", DataType::F32(), {m, n});
  Buffer t = tir::MakeBuffer("T", DataType::F32(), {n});
  Stmt fill = For(j, 0, n, ForKind::kSerial, Store(t, {j}, Load(x, {i, j})));
  Stmt drain = For(j2, 0, n, ForKind::kSerial, Store(y, {i, j2}, Load(t, {n - 1 - j2})));
  Stmt body = For(i, 0, m, ForKind::kParallel, tir::AllocateNode::make(t, Seq({fill, drain})));
  PrimFunc func = tir::MakePrimFunc({BufferParam(x), BufferParam(y)}, body);
  CheckReverse(func, 5, 7);
  CheckReverse(func, 3, 70000);
}

TEST(CodegenParams, ScalarParameters) {
  // Y[i] = X[i] * alpha + cast<f32>(offset) + cast<f32>(count), with f32 alpha,
  // i64 offset and an i32 count.
  Var n("n"), i("i"), alpha("alpha", DataType::F32()), offset("offset", DataType::I64()),
      count("count", DataType::I32());
  Buffer x = tir::MakeBuffer("X", DataType::F32(), {n});
  Buffer y = tir::MakeBuffer("Y", DataType::F32(), {n});
  Stmt body = For(i, 0, n, ForKind::kVectorized,
                  Store(y, {i},
                        Load(x, {i}) * alpha + tir::CastNode::make(DataType::F32(), offset) +
                            tir::CastNode::make(DataType::F32(), count)));
  LoadedKernels kernels({{"axpb", tir::MakePrimFunc({BufferParam(x), ScalarParam(alpha), ScalarParam(offset),
                                                     ScalarParam(count), BufferParam(y)},
                                                    body)}});
  ASSERT_KERNELS_OK(kernels);
  HostTensor<float> xs({4}, {1, 2, 3, 4});
  HostTensor<float> ys({4});
  ASSERT_EQ(Call(kernels.Get("axpb"), {TensorArg(xs.dl()), FloatArg(0.5), IntArg(-10), IntArg(3), TensorArg(ys.dl())}),
            0);
  EXPECT_EQ(ys.values(), (std::vector<float>{-6.5f, -6.0f, -5.5f, -5.0f}));
  // An int for the float parameter is converted; a float for an int parameter is refused.
  ASSERT_EQ(Call(kernels.Get("axpb"), {TensorArg(xs.dl()), IntArg(2), IntArg(-10), IntArg(3), TensorArg(ys.dl())}), 0)
      << vm::TakeKernelError();
  EXPECT_EQ(ys.values(), (std::vector<float>{-5.0f, -3.0f, -1.0f, 1.0f}));
  EXPECT_NE(
      Call(kernels.Get("axpb"), {TensorArg(xs.dl()), FloatArg(0.5), FloatArg(-10), IntArg(3), TensorArg(ys.dl())}), 0);
  EXPECT_EQ(vm::TakeKernelError(), "axpb: argument 'offset' (#2): expected an int, got a float");
  EXPECT_NE(
      Call(kernels.Get("axpb"), {TensorArg(xs.dl()), TensorArg(xs.dl()), IntArg(-10), IntArg(3), TensorArg(ys.dl())}),
      0);
  EXPECT_EQ(vm::TakeKernelError(), "axpb: argument 'alpha' (#1): expected a float or an int, got a tensor");
}

TEST(CodegenParams, ScalarParameterInBufferShape) {
  // X: (n * 2,) with n a scalar parameter; Y: (n,) = X[2i] + X[2i + 1].
  Var n("n"), i("i");
  Buffer x = tir::MakeBuffer("X", DataType::F32(), {n * 2});
  Buffer y = tir::MakeBuffer("Y", DataType::F32(), {n});
  Stmt body = For(i, 0, n, ForKind::kSerial, Store(y, {i}, Load(x, {i * 2}) + Load(x, {i * 2 + 1})));
  LoadedKernels kernels({{"pairs", tir::MakePrimFunc({BufferParam(x), BufferParam(y), ScalarParam(n)}, body)}});
  ASSERT_KERNELS_OK(kernels);
  HostTensor<float> xs({6}, {1, 2, 3, 4, 5, 6});
  HostTensor<float> ys({3});
  ASSERT_EQ(Call(kernels.Get("pairs"), {TensorArg(xs.dl()), TensorArg(ys.dl()), IntArg(3)}), 0)
      << vm::TakeKernelError();
  EXPECT_EQ(ys.values(), (std::vector<float>{3, 7, 11}));
  // A wrong n: the shape check reports the expression.
  EXPECT_NE(Call(kernels.Get("pairs"), {TensorArg(xs.dl()), TensorArg(ys.dl()), IntArg(4)}), 0);
  EXPECT_EQ(vm::TakeKernelError(), "pairs: argument 'X' (#0): dimension 0 expected n * 2 = 8, got 6");
}

TEST(CodegenLoops, UnrolledAndOffsetLoops) {
  // for i in unrolled(2, 4): Y[i - 2] = X[i] * i (constant extent), and a serial
  // loop with a symbolic min.
  Var i("i"), j("j"), n("n");
  Buffer x = tir::MakeBuffer("X", DataType::F32(), {PrimExpr(6)});
  Buffer y = tir::MakeBuffer("Y", DataType::F32(), {PrimExpr(4)});
  Buffer z = tir::MakeBuffer("Z", DataType::I64(), {n});
  Stmt unrolled =
      For(i, 2, 4, ForKind::kUnrolled, Store(y, {i - 2}, Load(x, {i}) * tir::CastNode::make(DataType::F32(), i)));
  Stmt offset = For(j, n - 2, 2, ForKind::kUnrolled, Store(z, {j}, j * 10));
  LoadedKernels kernels(
      {{"loops", tir::MakePrimFunc({BufferParam(x), BufferParam(y), BufferParam(z)}, Seq({unrolled, offset}))}});
  ASSERT_KERNELS_OK(kernels);
  HostTensor<float> xs({6}, {0, 1, 2, 3, 4, 5});
  HostTensor<float> ys({4});
  HostTensor<int64_t> zs({5}, {-1, -1, -1, -1, -1});
  ASSERT_EQ(Call(kernels.Get("loops"), {TensorArg(xs.dl()), TensorArg(ys.dl()), TensorArg(zs.dl())}), 0)
      << vm::TakeKernelError();
  EXPECT_EQ(ys.values(), (std::vector<float>{4, 9, 16, 25}));
  EXPECT_EQ(zs.values(), (std::vector<int64_t>{-1, -1, -1, 30, 40}));
}

TEST(CodegenLoops, NestedParallelLoopsRunCorrectly) {
  // Parallel inside parallel: the inner one runs serially inside each chunk.
  Var m("m"), n("n"), i("i"), j("j");
  Buffer y = tir::MakeBuffer("Y", DataType::I64(), {m, n});
  Stmt body = For(i, 0, m, ForKind::kParallel, For(j, 0, n, ForKind::kParallel, Store(y, {i, j}, i * 1000 + j)));
  LoadedKernels kernels({{"nested", tir::MakePrimFunc({BufferParam(y)}, body)}});
  ASSERT_KERNELS_OK(kernels);
  HostTensor<int64_t> ys({33, 17});
  ASSERT_EQ(Call(kernels.Get("nested"), {TensorArg(ys.dl())}), 0);
  for (int64_t i = 0; i < 33; ++i) {
    for (int64_t j = 0; j < 17; ++j) ASSERT_EQ(ys[i * 17 + j], i * 1000 + j);
  }
}

}  // namespace
}  // namespace strata::codegen::testing
