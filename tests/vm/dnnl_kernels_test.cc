// The oneDNN library kernels (kernels/dnnl.h), called through the registry and compared
// with the numpy references of tests/fixtures/dnnl (scripts/fixtures/dnnl_kernels.py).
#include <cmath>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/dnnl.h"
#include "tests/vm/test_util.h"
#include "vm/registry.h"
#include "vm/tensor_io/npy.h"
#include "vm/tensor_io/tensor_compare.h"
#include "vm/value.h"

namespace strata::vm {
namespace {

using testing::F32;

Status Call(const std::string& name, const std::vector<Value>& args) {
  RegisterBuiltins();
  std::optional<LibraryFunction> fn = LookupLibraryFunction(name);
  if (!fn) return Status::Error("not registered: " + name);
  std::vector<const Value*> ptrs;
  for (const Value& a : args) ptrs.push_back(&a);
  Value out;
  Status status = fn->fn(fn->context, ptrs.data(), static_cast<int32_t>(ptrs.size()), &out);
  EXPECT_TRUE(out.is_null()) << name << " returned " << out.Describe();
  return status;
}

std::string CallError(const std::string& name, const std::vector<Value>& args) {
  Status status = Call(name, args);
  EXPECT_FALSE(status.ok()) << name << " unexpectedly succeeded";
  return status.message();
}

Ref<Tensor> Fixture(const std::string& case_name, const std::string& file) {
  auto t = ReadNpyFile(STRATA_SOURCE_DIR "/tests/fixtures/dnnl/" + case_name + "/" + file + ".npy");
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? t.value() : Ref<Tensor>();
}

// An output tensor full of NaN: an element the kernel does not write fails the comparison.
Value NanOutput(std::span<const int64_t> shape) {
  auto t = Tensor::Empty(shape, DataType::F32());
  EXPECT_TRUE(t.ok()) << t.status().message();
  std::fill_n(t.value()->data_as<float>(), t.value()->num_elements(), std::numeric_limits<float>::quiet_NaN());
  return Value::FromTensor(t.value());
}

void ExpectClose(const Value& actual, const Tensor& expected, const std::string& what) {
  auto cmp = CompareTensors(*actual.tensor(), expected, Tolerance{1e-4, 1e-5});
  ASSERT_TRUE(cmp.ok()) << what << ": " << cmp.status().message();
  EXPECT_TRUE(cmp->ok()) << what << ": " << DescribeMismatch(cmp.value(), Tolerance{1e-4, 1e-5});
}

// Calls `fn` on the fixture's inputs (and conv attributes) with a fresh output; checks the result.
void RunCase(const std::string& fn, const std::string& case_name, std::vector<std::string> inputs,
             const std::string& expected_name) {
  SCOPED_TRACE(fn + " on " + case_name);
  std::vector<Value> args;
  for (const std::string& name : inputs) args.push_back(Value::FromTensor(Fixture(case_name, name)));
  if (fn.find("conv2d") != std::string::npos) {
    Ref<Tensor> attrs = Fixture(case_name, "attrs");
    ASSERT_EQ(attrs->num_elements(), 9);
    const int64_t* a = attrs->data_as<const int64_t>();
    args.push_back(Value::FromShape({a[0], a[1]}));
    args.push_back(Value::FromShape({a[2], a[3], a[4], a[5]}));
    args.push_back(Value::FromShape({a[6], a[7]}));
    args.push_back(Value::FromInt(a[8]));
  }
  Ref<Tensor> expected = Fixture(case_name, expected_name);
  args.push_back(NanOutput(expected->shape()));
  Status status = Call(fn, args);
  ASSERT_TRUE(status.ok()) << status.message();
  ExpectClose(args.back(), *expected, case_name);
}

// The conv2d variant a fixture case is for, from its name.
std::string ConvFunction(const std::string& case_name) {
  const bool bias = case_name.find("bias") != std::string::npos, relu = case_name.find("relu") != std::string::npos;
  return std::string("strata.dnnl.conv2d") + (bias ? "_bias" : "") + (relu ? "_relu" : "");
}

Value Zeros(std::initializer_list<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return F32(shape, std::vector<float>(static_cast<size_t>(n)));
}

Value EmptyF32(std::initializer_list<int64_t> shape) {
  auto t = Tensor::Empty(shape, DataType::F32());
  EXPECT_TRUE(t.ok());
  return Value::FromTensor(t.value());
}

// conv2d attributes: strides, padding, dilation, groups.
std::vector<Value> ConvAttrs(std::initializer_list<int64_t> strides, std::initializer_list<int64_t> padding,
                             std::initializer_list<int64_t> dilation, int64_t groups) {
  return {Value::FromShape(strides), Value::FromShape(padding), Value::FromShape(dilation), Value::FromInt(groups)};
}

std::vector<Value> ConvArgs(Value x, Value wt, std::vector<Value> attrs, Value y) {
  std::vector<Value> args = {std::move(x), std::move(wt)};
  args.insert(args.end(), attrs.begin(), attrs.end());
  args.push_back(std::move(y));
  return args;
}

// ---- results -------------------------------------------------------------------

TEST(DnnlDenseTest, Rank2AndRank3Inputs) {
  RunCase("strata.dnnl.dense", "dense_rank2", {"x", "w"}, "y");
  RunCase("strata.dnnl.dense", "dense_rank3", {"x", "w"}, "y");
  // A rank-1 X is one row.
  Value y = NanOutput(std::vector<int64_t>{2});
  ASSERT_TRUE(Call("strata.dnnl.dense", {F32({3}, {1, 2, 3}), F32({2, 3}, {1, 0, 0, 1, 1, 1}), y}).ok());
  EXPECT_EQ(testing::ToFloats(y), (std::vector<float>{1, 6}));
}

TEST(DnnlDenseTest, BiasAndRelu) {
  RunCase("strata.dnnl.dense_bias", "dense_bias", {"x", "w", "b"}, "y");
  RunCase("strata.dnnl.dense_relu", "dense_relu", {"x", "w"}, "y");
  RunCase("strata.dnnl.dense_bias_relu", "dense_bias_relu", {"x", "w", "b"}, "y");
}

TEST(DnnlDenseTest, EveryBatchSizeCreatesItsPrimitiveOnce) {
  // The same weights at batch sizes 1, 3, 17, twice: the second round only hits the cache.
  for (int round = 0; round < 2; ++round) {
    const kernels::DnnlCacheStats before = kernels::GetDnnlCacheStats();
    for (const char* m : {"1", "3", "17"}) {
      RunCase("strata.dnnl.dense", "dense_batches", {std::string("x_") + m, "w"}, std::string("y_") + m);
    }
    const kernels::DnnlCacheStats after = kernels::GetDnnlCacheStats();
    EXPECT_EQ(after.hits + after.misses - before.hits - before.misses, 3);
    if (round == 1) {
      EXPECT_EQ(after.misses, before.misses);
      EXPECT_EQ(after.hits, before.hits + 3);
    }
    EXPECT_GE(after.entries, 3);
  }
}

TEST(DnnlMatmulTest, SharedBatchedAndBroadcastB) {
  for (const char* c : {"matmul_2d", "matmul_shared_b", "matmul_batched_b", "matmul_broadcast_inner",
                        "matmul_broadcast_outer", "matmul_broadcast_mixed", "matmul_broadcast_all"}) {
    RunCase("strata.dnnl.matmul", c, {"a", "b"}, "c");
  }
}

TEST(DnnlConv2dTest, PaddingStridesDilationAndGroups) {
  for (const char* c : {"conv2d_pad_asymmetric", "conv2d_stride2", "conv2d_dilation2", "conv2d_mixed", "conv2d_groups2",
                        "conv2d_depthwise", "conv2d_depthwise_x2", "conv2d_1x1"}) {
    RunCase(ConvFunction(c), c, {"x", "w"}, "y");
  }
}

TEST(DnnlConv2dTest, BiasAndRelu) {
  RunCase("strata.dnnl.conv2d_bias", "conv2d_bias", {"x", "w", "b"}, "y");
  RunCase("strata.dnnl.conv2d_relu", "conv2d_relu", {"x", "w"}, "y");
  RunCase("strata.dnnl.conv2d_bias_relu", "conv2d_bias_relu", {"x", "w", "b"}, "y");
  RunCase("strata.dnnl.conv2d_bias_relu", "conv2d_bias_relu_groups", {"x", "w", "b"}, "y");
}

TEST(DnnlConv2dTest, ThreadsShareTheCachedPrimitive) {
  // Four threads run one conv (its primitive, user scratchpads) at once, several times each.
  const std::string c = "conv2d_bias_relu";
  std::vector<std::thread> threads;
  std::vector<std::string> failures(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::vector<Value> args = {Value::FromTensor(Fixture(c, "x")), Value::FromTensor(Fixture(c, "w")),
                                 Value::FromTensor(Fixture(c, "b"))};
      for (Value& a : ConvAttrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1)) args.push_back(a);
      Ref<Tensor> expected = Fixture(c, "y");
      args.push_back(NanOutput(expected->shape()));
      for (int i = 0; i < 20 && failures[t].empty(); ++i) {
        Status status = Call("strata.dnnl.conv2d_bias_relu", args);
        auto cmp = CompareTensors(*args.back().tensor(), *expected, Tolerance{1e-4, 1e-5});
        if (!status.ok())
          failures[t] = status.message();
        else if (!cmp.ok() || !cmp->ok())
          failures[t] = "mismatch in run " + std::to_string(i);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string& f : failures) EXPECT_EQ(f, "");
}

// ---- empty tensors -------------------------------------------------------------

TEST(DnnlEmptyTest, BatchZeroGivesAnEmptyOutput) {
  EXPECT_TRUE(Call("strata.dnnl.dense", {EmptyF32({0, 24}), Zeros({16, 24}), EmptyF32({0, 16})}).ok());
  EXPECT_TRUE(
      Call("strata.dnnl.dense_bias_relu", {EmptyF32({0, 3, 24}), Zeros({16, 24}), Zeros({16}), EmptyF32({0, 3, 16})})
          .ok());
  EXPECT_TRUE(Call("strata.dnnl.matmul", {EmptyF32({0, 5, 12}), Zeros({12, 7}), EmptyF32({0, 5, 7})}).ok());
  EXPECT_TRUE(Call("strata.dnnl.matmul", {EmptyF32({2, 0, 12}), Zeros({1, 12, 7}), EmptyF32({2, 0, 7})}).ok());
  EXPECT_TRUE(Call("strata.dnnl.conv2d", ConvArgs(EmptyF32({0, 4, 9, 10}), Zeros({6, 4, 3, 3}),
                                                  ConvAttrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1), EmptyF32({0, 6, 9, 10})))
                  .ok());
  // A batch-0 shape that was never run must still be checked.
  EXPECT_EQ(CallError("strata.dnnl.dense", {EmptyF32({0, 24}), Zeros({16, 24}), EmptyF32({0, 15})}),
            "strata.dnnl.dense: output Y is (0, 15), expected X's (0, 24) with the last dimension 16");
}

TEST(DnnlEmptyTest, EmptyReductionGivesTheBias) {
  Value y = NanOutput(std::vector<int64_t>{2, 3});
  ASSERT_TRUE(Call("strata.dnnl.dense_bias", {EmptyF32({2, 0}), EmptyF32({3, 0}), F32({3}, {1, -2, 3}), y}).ok());
  EXPECT_EQ(testing::ToFloats(y), (std::vector<float>{1, -2, 3, 1, -2, 3}));
  ASSERT_TRUE(Call("strata.dnnl.dense_bias_relu", {EmptyF32({2, 0}), EmptyF32({3, 0}), F32({3}, {1, -2, 3}), y}).ok());
  EXPECT_EQ(testing::ToFloats(y), (std::vector<float>{1, 0, 3, 1, 0, 3}));
  ASSERT_TRUE(Call("strata.dnnl.dense", {EmptyF32({2, 0}), EmptyF32({3, 0}), y}).ok());
  EXPECT_EQ(testing::ToFloats(y), (std::vector<float>(6, 0.0f)));

  Value c = NanOutput(std::vector<int64_t>{2, 2, 3});
  ASSERT_TRUE(Call("strata.dnnl.matmul", {EmptyF32({2, 2, 0}), EmptyF32({0, 3}), c}).ok());
  EXPECT_EQ(testing::ToFloats(c), (std::vector<float>(12, 0.0f)));

  // No input channels: every output pixel is its channel's bias.
  Value out = NanOutput(std::vector<int64_t>{1, 2, 2, 2});
  ASSERT_TRUE(Call("strata.dnnl.conv2d_bias",
                   {EmptyF32({1, 0, 4, 4}), EmptyF32({2, 0, 3, 3}), F32({2}, {0.5f, -1}), Value::FromShape({1, 1}),
                    Value::FromShape({0, 0, 0, 0}), Value::FromShape({1, 1}), Value::FromInt(1), out})
                  .ok());
  EXPECT_EQ(testing::ToFloats(out), (std::vector<float>{0.5f, 0.5f, 0.5f, 0.5f, -1, -1, -1, -1}));
}

// ---- bad input -----------------------------------------------------------------

TEST(DnnlErrorsTest, ArgumentCountAndKinds) {
  EXPECT_EQ(CallError("strata.dnnl.dense", {Zeros({2, 3}), Zeros({4, 3})}),
            "strata.dnnl.dense expects 3 arguments (X, W, Y), got 2");
  EXPECT_EQ(CallError("strata.dnnl.dense_bias_relu", {Zeros({2, 3}), Zeros({4, 3}), Zeros({2, 4})}),
            "strata.dnnl.dense_bias_relu expects 4 arguments (X, W, b, Y), got 3");
  EXPECT_EQ(CallError("strata.dnnl.matmul", {Zeros({2, 3}), Zeros({3, 2}), Zeros({2, 2}), Zeros({2, 2})}),
            "strata.dnnl.matmul expects 3 arguments (A, B, C), got 4");
  EXPECT_EQ(
      CallError("strata.dnnl.conv2d_bias", ConvArgs(Zeros({1, 3, 5, 5}), Zeros({4, 3, 3, 3}),
                                                    ConvAttrs({1, 1}, {0, 0, 0, 0}, {1, 1}, 1), Zeros({1, 4, 3, 3}))),
      "strata.dnnl.conv2d_bias expects 8 arguments (X, Wt, b, strides, padding, dilation, groups, Y), got 7");
  EXPECT_EQ(CallError("strata.dnnl.dense", {Value::FromInt(5), Zeros({4, 3}), Zeros({2, 4})}),
            "strata.dnnl.dense: argument X must be a f32 tensor of rank >= 1, got Int 5");
  EXPECT_EQ(CallError("strata.dnnl.conv2d", ConvArgs(Zeros({1, 3, 5, 5}), Value::FromShape({4, 3, 3, 3}),
                                                     ConvAttrs({1, 1}, {0, 0, 0, 0}, {1, 1}, 1), Zeros({1, 4, 3, 3}))),
            "strata.dnnl.conv2d: argument Wt must be a f32 tensor of rank 4, got Shape (4, 3, 3, 3)");
  EXPECT_EQ(CallError("strata.dnnl.matmul", {Zeros({2, 3}), Zeros({3, 2}), Value()}),
            "strata.dnnl.matmul: argument C must be a f32 tensor of rank >= 2, got Null");
}

TEST(DnnlErrorsTest, DtypeAndRank) {
  auto i32 = Tensor::FromValues<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  ASSERT_TRUE(i32.ok());
  EXPECT_EQ(CallError("strata.dnnl.dense", {Value::FromTensor(i32.value()), Zeros({4, 3}), Zeros({2, 4})}),
            "strata.dnnl.dense: argument X must be a f32 tensor of rank >= 1, got Tensor[(2, 3), i32]");
  auto f64 = Tensor::FromValues<double>({4}, {1, 2, 3, 4});
  ASSERT_TRUE(f64.ok());
  EXPECT_EQ(CallError("strata.dnnl.dense_bias",
                      {Zeros({2, 3}), Zeros({4, 3}), Value::FromTensor(f64.value()), Zeros({2, 4})}),
            "strata.dnnl.dense_bias: argument b must be a f32 tensor of rank 1, got Tensor[(4,), f64]");
  EXPECT_EQ(CallError("strata.dnnl.matmul", {Zeros({6}), Zeros({3, 2}), Zeros({2, 2})}),
            "strata.dnnl.matmul: argument A must be a f32 tensor of rank >= 2, got Tensor[(6,), f32]");
  EXPECT_EQ(CallError("strata.dnnl.conv2d", ConvArgs(Zeros({3, 5, 5}), Zeros({4, 3, 3, 3}),
                                                     ConvAttrs({1, 1}, {0, 0, 0, 0}, {1, 1}, 1), Zeros({1, 4, 3, 3}))),
            "strata.dnnl.conv2d: argument X must be a f32 tensor of rank 4, got Tensor[(3, 5, 5), f32]");
}

TEST(DnnlErrorsTest, DenseAndMatmulShapes) {
  EXPECT_EQ(CallError("strata.dnnl.dense", {Zeros({2, 3}), Zeros({4, 5}), Zeros({2, 4})}),
            "strata.dnnl.dense: X (2, 3) has 3 features but W (4, 5) expects 5");
  EXPECT_EQ(CallError("strata.dnnl.dense_bias", {Zeros({2, 3}), Zeros({4, 3}), Zeros({3}), Zeros({2, 4})}),
            "strata.dnnl.dense_bias: b is (3,), expected (4,)");
  EXPECT_EQ(CallError("strata.dnnl.dense_relu", {Zeros({2, 5, 3}), Zeros({4, 3}), Zeros({2, 4})}),
            "strata.dnnl.dense_relu: output Y is (2, 4), expected X's (2, 5, 3) with the last dimension 4");
  EXPECT_EQ(CallError("strata.dnnl.matmul", {Zeros({2, 3}), Zeros({2, 3}), Zeros({2, 3})}),
            "strata.dnnl.matmul: inner dimensions differ: A is (2, 3) and B is (2, 3) (A dimension 1 = 3, B "
            "dimension 0 = 2)");
  EXPECT_EQ(CallError("strata.dnnl.matmul", {Zeros({2, 2, 3}), Zeros({3, 3, 1}), Zeros({2, 2, 1})}),
            "strata.dnnl.matmul: batch dimensions differ: A is (2, 2, 3) and B is (3, 3, 1) (a batched B must have "
            "A's rank, each batch dimension equal to A's or 1)");
  EXPECT_EQ(CallError("strata.dnnl.matmul", {Zeros({2, 2, 3}), Zeros({1, 1, 3, 1}), Zeros({2, 2, 1})}),
            "strata.dnnl.matmul: batch dimensions differ: A is (2, 2, 3) and B is (1, 1, 3, 1) (a batched B must "
            "have A's rank, each batch dimension equal to A's or 1)");
  EXPECT_EQ(CallError("strata.dnnl.matmul", {Zeros({2, 2, 3}), Zeros({3, 2}), Zeros({4, 2})}),
            "strata.dnnl.matmul: output C is (4, 2), expected (2, 2, 2) for A (2, 2, 3) and B (3, 2)");
}

TEST(DnnlErrorsTest, TooManyAlternatingBroadcastDims) {
  // B broadcasts every other batch dim of A: 11 batch dims that cannot merge, one more than oneDNN's 12-D limit.
  std::vector<int64_t> a_shape(11, 2), b_shape;
  for (int i = 0; i < 11; ++i) b_shape.push_back(i % 2 == 0 ? 2 : 1);
  for (auto* shape : {&a_shape, &b_shape}) shape->insert(shape->end(), {1, 1});
  auto tensor = [](const std::vector<int64_t>& shape) {
    auto t = Tensor::Empty(shape, DataType::F32());
    EXPECT_TRUE(t.ok());
    return Value::FromTensor(t.value());
  };
  EXPECT_EQ(CallError("strata.dnnl.matmul", {tensor(a_shape), tensor(b_shape), tensor(a_shape)}),
            "strata.dnnl.matmul: A (2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1) and B (2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, "
            "1) still have 11 batch dimensions after merging neighbours; oneDNN takes at most 10");
}

TEST(DnnlErrorsTest, ReadOnlyAndOverlappingOutputs) {
  Value y = Zeros({2, 4});
  y.tensor()->MarkReadOnly();
  EXPECT_EQ(CallError("strata.dnnl.dense", {Zeros({2, 3}), Zeros({4, 3}), y}),
            "strata.dnnl.dense: output Y is a read-only constant");
  Value x = Zeros({2, 2});
  EXPECT_EQ(CallError("strata.dnnl.dense_bias", {x, Zeros({2, 2}), Zeros({2}), x}),
            "strata.dnnl.dense_bias: output Y must not overlap the inputs X, W and b");
  // Views of one storage: C's first half is B's second half.
  auto storage = Storage::Allocate(64, 64);
  ASSERT_TRUE(storage.ok());
  std::fill_n(static_cast<float*>(storage.value()->data()), 16, 0.0f);
  auto b = Tensor::View(storage.value(), 0, std::vector<int64_t>{2, 4}, DataType::F32());
  auto c = Tensor::View(storage.value(), 16, std::vector<int64_t>{2, 4}, DataType::F32());
  ASSERT_TRUE(b.ok() && c.ok());
  EXPECT_EQ(
      CallError("strata.dnnl.matmul", {Zeros({2, 2}), Value::FromTensor(b.value()), Value::FromTensor(c.value())}),
      "strata.dnnl.matmul: output C must not overlap the inputs A and B");
  Value image = Zeros({1, 2, 3, 3});
  EXPECT_EQ(CallError("strata.dnnl.conv2d_relu",
                      ConvArgs(image, Zeros({2, 2, 1, 1}), ConvAttrs({1, 1}, {0, 0, 0, 0}, {1, 1}, 1), image)),
            "strata.dnnl.conv2d_relu: output Y must not overlap the inputs X and Wt");
}

TEST(DnnlErrorsTest, ConvAttributes) {
  auto conv = [](std::vector<Value> attrs) {
    return CallError("strata.dnnl.conv2d",
                     ConvArgs(Zeros({1, 4, 5, 5}), Zeros({4, 2, 3, 3}), std::move(attrs), Zeros({1, 4, 3, 3})));
  };
  EXPECT_EQ(conv(ConvAttrs({1, 1, 1}, {0, 0, 0, 0}, {1, 1}, 2)),
            "strata.dnnl.conv2d: argument strides must be a Shape of 2 values (height, width), got Shape (1, 1, 1)");
  EXPECT_EQ(conv(ConvAttrs({1, 1}, {0, 0}, {1, 1}, 2)),
            "strata.dnnl.conv2d: argument padding must be a Shape of 4 values (top, left, bottom, right), got Shape "
            "(0, 0)");
  EXPECT_EQ(conv({Value::FromShape({1, 1}), Value::FromInt(0), Value::FromShape({1, 1}), Value::FromInt(2)}),
            "strata.dnnl.conv2d: argument padding must be a Shape of 4 values (top, left, bottom, right), got Int 0");
  EXPECT_EQ(conv(ConvAttrs({0, 1}, {0, 0, 0, 0}, {1, 1}, 2)),
            "strata.dnnl.conv2d: argument strides must be positive, got (0, 1)");
  EXPECT_EQ(conv(ConvAttrs({1, 1}, {0, -1, 0, 0}, {1, 1}, 2)),
            "strata.dnnl.conv2d: argument padding must be non-negative, got (0, -1, 0, 0)");
  EXPECT_EQ(conv(ConvAttrs({1, 1}, {0, 0, 0, 0}, {1, 0}, 2)),
            "strata.dnnl.conv2d: argument dilation must be positive, got (1, 0)");
  EXPECT_EQ(conv(ConvAttrs({1, 1}, {0, 0, 0, 0}, {1, 1}, 0)),
            "strata.dnnl.conv2d: argument groups must be positive, got 0");
  EXPECT_EQ(
      conv({Value::FromShape({1, 1}), Value::FromShape({0, 0, 0, 0}), Value::FromShape({1, 1}), Value::FromShape({2})}),
      "strata.dnnl.conv2d: argument groups must be an Int, got Shape (2,)");
}

TEST(DnnlErrorsTest, ConvChannelsAndShapes) {
  auto attrs = [](int64_t groups) { return ConvAttrs({1, 1}, {0, 0, 0, 0}, {1, 1}, groups); };
  EXPECT_EQ(CallError("strata.dnnl.conv2d",
                      ConvArgs(Zeros({1, 6, 5, 5}), Zeros({4, 2, 3, 3}), attrs(4), Zeros({1, 4, 3, 3}))),
            "strata.dnnl.conv2d: the 6 input channels of X (1, 6, 5, 5) are not divisible by groups=4");
  EXPECT_EQ(CallError("strata.dnnl.conv2d",
                      ConvArgs(Zeros({1, 6, 5, 5}), Zeros({5, 3, 3, 3}), attrs(2), Zeros({1, 5, 3, 3}))),
            "strata.dnnl.conv2d: the 5 output channels of Wt (5, 3, 3, 3) are not divisible by groups=2");
  EXPECT_EQ(CallError("strata.dnnl.conv2d",
                      ConvArgs(Zeros({1, 3, 8, 8}), Zeros({4, 2, 3, 3}), attrs(1), Zeros({1, 4, 6, 6}))),
            "strata.dnnl.conv2d: X (1, 3, 8, 8) has 3 channels, but Wt (4, 2, 3, 3) with groups=1 expects 2");
  EXPECT_EQ(CallError("strata.dnnl.conv2d_bias", {Zeros({1, 3, 8, 8}), Zeros({4, 3, 3, 3}), Zeros({3}),
                                                  Value::FromShape({1, 1}), Value::FromShape({0, 0, 0, 0}),
                                                  Value::FromShape({1, 1}), Value::FromInt(1), Zeros({1, 4, 6, 6})}),
            "strata.dnnl.conv2d_bias: b is (3,), expected (4,)");
  EXPECT_EQ(CallError("strata.dnnl.conv2d", ConvArgs(Zeros({1, 3, 8, 8}), Zeros({4, 3, 3, 3}),
                                                     ConvAttrs({2, 1}, {1, 0, 0, 2}, {1, 1}, 1), Zeros({1, 4, 6, 6}))),
            "strata.dnnl.conv2d: output Y is (1, 4, 6, 6), expected (1, 4, 4, 8) for X (1, 3, 8, 8) and Wt (4, 3, 3, "
            "3) with strides (2, 1), padding (1, 0, 0, 2) and dilation (1, 1)");
  EXPECT_EQ(CallError("strata.dnnl.conv2d",
                      ConvArgs(Zeros({1, 3, 2, 8}), Zeros({4, 3, 3, 3}), attrs(1), Zeros({1, 4, 1, 6}))),
            "strata.dnnl.conv2d: X (1, 3, 2, 8) is too small for the kernel of Wt (4, 3, 3, 3) with padding (0, 0, "
            "0, 0) and dilation (1, 1): the output height would be 0");
  EXPECT_EQ(CallError("strata.dnnl.conv2d", ConvArgs(Zeros({1, 3, 8, 8}), Zeros({4, 3, 3, 3}),
                                                     ConvAttrs({1, 1}, {0, 0, 0, 0}, {1, 4}, 1), Zeros({1, 4, 6, 6}))),
            "strata.dnnl.conv2d: X (1, 3, 8, 8) is too small for the kernel of Wt (4, 3, 3, 3) with padding (0, 0, "
            "0, 0) and dilation (1, 4): the output width would be 0");
}

TEST(DnnlRegistryTest, EveryFunctionIsRegistered) {
  RegisterBuiltins();
  for (const char* name : {"strata.dnnl.dense", "strata.dnnl.dense_bias", "strata.dnnl.dense_relu",
                           "strata.dnnl.dense_bias_relu", "strata.dnnl.matmul", "strata.dnnl.conv2d",
                           "strata.dnnl.conv2d_bias", "strata.dnnl.conv2d_relu", "strata.dnnl.conv2d_bias_relu"}) {
    EXPECT_TRUE(LookupLibraryFunction(name).has_value()) << name;
  }
}

}  // namespace
}  // namespace strata::vm
