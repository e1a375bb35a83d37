// The builtins of docs/vm_builtins.md, called directly through the registry.
#include <gtest/gtest.h>

#include "kernels/blas.h"
#include "tests/vm/test_util.h"
#include "vm/registry.h"
#include "vm/value.h"

namespace strata::vm {
namespace {

using testing::F32;

StatusOr<Value> Call(const std::string& name, std::vector<Value> args) {
  RegisterBuiltins();
  std::optional<LibraryFunction> fn = LookupLibraryFunction(name);
  if (!fn) return Status::Error("not registered: " + name);
  std::vector<const Value*> ptrs;
  for (const Value& a : args) ptrs.push_back(&a);
  Value out;
  Status status = fn->fn(fn->context, ptrs.data(), static_cast<int32_t>(ptrs.size()), &out);
  if (!status.ok()) return status;
  return out;
}

std::string CallError(const std::string& name, std::vector<Value> args) {
  auto result = Call(name, std::move(args));
  EXPECT_FALSE(result.ok()) << name << " unexpectedly succeeded";
  return result.ok() ? std::string() : result.status().message();
}

Value Heap(std::vector<int64_t> values) {
  auto t = Tensor::FromValues<int64_t>(std::vector<int64_t>{static_cast<int64_t>(values.size())},
                                       std::span<const int64_t>(values));
  EXPECT_TRUE(t.ok());
  return Value::FromTensor(t.value());
}

int64_t HeapAt(const Value& heap, int64_t i) { return heap.tensor()->data_as<int64_t>()[i]; }

Value I(int64_t v) { return Value::FromInt(v); }
Value S(const char* s) { return Value::FromString(s); }
Value D(DataType d) { return Value::FromDataType(d); }

TEST(BuiltinsTest, EveryContractBuiltinIsRegistered) {
  RegisterBuiltins();
  for (const char* name :
       {"vm.builtin.shape_of", "vm.builtin.alloc_shape_heap", "vm.builtin.check_tensor_info",
        "vm.builtin.check_shape_info", "vm.builtin.check_prim_info", "vm.builtin.check_tuple_info",
        "vm.builtin.match_shape", "vm.builtin.make_shape", "vm.builtin.heap_scalar", "vm.builtin.alloc_storage",
        "vm.builtin.alloc_tensor_from_storage", "vm.builtin.alloc_tensor", "vm.builtin.tuple",
        "vm.builtin.tuple_getitem", "vm.builtin.copy", "vm.builtin.null", "strata.blas.matmul"}) {
    EXPECT_TRUE(LookupLibraryFunction(name).has_value()) << name;
  }
}

TEST(BuiltinsTest, ShapeOfAndAllocShapeHeap) {
  auto shape = Call("vm.builtin.shape_of", {F32({2, 5}, std::vector<float>(10))});
  ASSERT_TRUE(shape.ok());
  EXPECT_EQ(shape->Describe(), "Shape (2, 5)");
  EXPECT_EQ(CallError("vm.builtin.shape_of", {I(3)}),
            "vm.builtin.shape_of: argument 0 (t) must be a Tensor, got Int 3");
  EXPECT_EQ(CallError("vm.builtin.shape_of", {}), "vm.builtin.shape_of expects 1 argument (t), got 0");
  auto heap = Call("vm.builtin.alloc_shape_heap", {I(4)});
  ASSERT_TRUE(heap.ok());
  EXPECT_EQ(heap->tensor()->TypeString(), "Tensor[(4,), i64]");
  EXPECT_EQ(HeapAt(*heap, 3), 0);
}

TEST(BuiltinsTest, MatchShapeStoresChecksAndReportsMismatches) {
  Value heap = Heap({0, 0});
  Value ctx = S("f: parameter 'x' (match_shape)");
  // (n, 4, m): store n and m.
  auto ok = Call("vm.builtin.match_shape", {F32({3, 4, 5}, std::vector<float>(60)), heap, I(3), I(1), I(0), S("n"),
                                            I(0), I(4), S("4"), I(1), I(1), S("m"), ctx});
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_TRUE(ok->is_null());
  EXPECT_EQ(HeapAt(heap, 0), 3);
  EXPECT_EQ(HeapAt(heap, 1), 5);
  // A shape value is matched like a tensor: (n, m) against bound n = 3, m = 5.
  EXPECT_TRUE(Call("vm.builtin.match_shape",
                   {Value::FromShape({3, 5}), heap, I(2), I(2), I(0), S("n"), I(2), I(1), S("m"), ctx})
                  .ok());
  EXPECT_EQ(CallError("vm.builtin.match_shape",
                      {Value::FromShape({3, 6}), heap, I(2), I(2), I(0), S("n"), I(2), I(1), S("m"), ctx}),
            "f: parameter 'x' (match_shape): dimension 1 expected m = 5, got 6");
  EXPECT_EQ(CallError("vm.builtin.match_shape",
                      {Value::FromShape({3, 7}), heap, I(2), I(2), I(0), S("n"), I(0), I(4), S("4"), ctx}),
            "f: parameter 'x' (match_shape): dimension 1 expected 4, got 7");
  EXPECT_EQ(CallError("vm.builtin.match_shape",
                      {Value::FromShape({3}), heap, I(2), I(2), I(0), S("n"), I(0), I(4), S("4"), ctx}),
            "f: parameter 'x' (match_shape): expected rank 2, got rank 1 (shape (3,))");
  EXPECT_EQ(CallError("vm.builtin.match_shape", {I(1), heap, I(1), I(1), I(0), S("n"), ctx}),
            "f: parameter 'x' (match_shape): expected a Tensor or Shape, got Int 1");
  EXPECT_EQ(CallError("vm.builtin.match_shape", {Value::FromShape({3}), heap, I(1), I(2), I(9), S("k"), ctx}),
            "vm.builtin.match_shape: shape heap index 9 out of range (heap size 2)");
  EXPECT_EQ(CallError("vm.builtin.match_shape", {Value::FromShape({3}), heap, I(1), I(5), I(0), S("k"), ctx}),
            "vm.builtin.match_shape: dimension 0 has invalid code 5 (0 = value, 1 = store, 2 = check)");
  EXPECT_EQ(CallError("vm.builtin.match_shape", {Value::FromShape({3}), heap, I(2), I(2), I(0), S("n"), ctx}),
            "vm.builtin.match_shape: ndim 2 needs 10 arguments, got 7");
}

TEST(BuiltinsTest, HeapScalarReadsOneSlotAsAnInt) {
  Value heap = Heap({7, 9});
  auto value = Call("vm.builtin.heap_scalar", {heap, I(1)});
  ASSERT_TRUE(value.ok()) << value.status().message();
  ASSERT_TRUE(value->is_int());
  EXPECT_EQ(value->int_value(), 9);
  EXPECT_EQ(CallError("vm.builtin.heap_scalar", {heap, I(2)}),
            "vm.builtin.heap_scalar: shape heap index 2 out of range (heap size 2)");
  EXPECT_EQ(CallError("vm.builtin.heap_scalar", {heap, I(-1)}),
            "vm.builtin.heap_scalar: shape heap index -1 out of range (heap size 2)");
  EXPECT_EQ(CallError("vm.builtin.heap_scalar", {I(3), I(0)}),
            "vm.builtin.heap_scalar: argument 0 (heap) must be the shape heap (an i64 tensor), got Int 3");
  EXPECT_EQ(CallError("vm.builtin.heap_scalar", {heap}),
            "vm.builtin.heap_scalar expects 2 arguments (heap, slot), got 1");
}

TEST(BuiltinsTest, MakeShapeReadsValuesAndTheHeap) {
  Value heap = Heap({7, 9});
  auto shape = Call("vm.builtin.make_shape", {heap, I(3), I(1), I(1), I(0), I(16), I(1), I(0)});
  ASSERT_TRUE(shape.ok()) << shape.status().message();
  EXPECT_EQ(shape->Describe(), "Shape (9, 16, 7)");
  EXPECT_EQ(CallError("vm.builtin.make_shape", {heap, I(1), I(1), I(2)}),
            "vm.builtin.make_shape: shape heap index 2 out of range (heap size 2)");
  EXPECT_EQ(CallError("vm.builtin.make_shape", {heap, I(1), I(3), I(0)}),
            "vm.builtin.make_shape: dimension 0 has invalid code 3 (0 = value, 1 = heap)");
  EXPECT_EQ(CallError("vm.builtin.make_shape", {F32({2}, {1, 2}), I(1), I(0), I(2)}),
            "vm.builtin.make_shape: argument 0 (heap) must be the shape heap (a 1-D i64 CPU tensor), got "
            "Tensor[(2,), f32]");
}

TEST(BuiltinsTest, CheckInfoBuiltins) {
  Value t = F32({2, 3}, std::vector<float>(6));
  EXPECT_TRUE(Call("vm.builtin.check_tensor_info", {t, I(2), D(DataType::F32()), S("ctx")}).ok());
  EXPECT_TRUE(Call("vm.builtin.check_tensor_info", {t, I(-1), D(DataType::Void()), S("ctx")}).ok());
  EXPECT_EQ(CallError("vm.builtin.check_tensor_info", {t, I(3), D(DataType::Void()), S("ctx")}),
            "ctx: expected a tensor of rank 3, got rank 2 (Tensor[(2, 3), f32])");
  EXPECT_EQ(CallError("vm.builtin.check_tensor_info", {t, I(2), D(DataType::Float(16)), S("ctx")}),
            "ctx: expected dtype f16, got f32 (Tensor[(2, 3), f32])");

  EXPECT_TRUE(Call("vm.builtin.check_shape_info", {Value::FromShape({1, 2}), I(2), S("ctx")}).ok());
  EXPECT_EQ(CallError("vm.builtin.check_shape_info", {Value::FromShape({1, 2}), I(3), S("ctx")}),
            "ctx: expected a shape of rank 3, got rank 2 (1, 2)");
  EXPECT_EQ(CallError("vm.builtin.check_shape_info", {t, I(2), S("ctx")}),
            "ctx: expected a Shape, got Tensor[(2, 3), f32]");

  EXPECT_TRUE(Call("vm.builtin.check_prim_info", {I(3), D(DataType::I64()), S("ctx")}).ok());
  EXPECT_TRUE(Call("vm.builtin.check_prim_info", {I(1), D(DataType::Bool()), S("ctx")}).ok());
  EXPECT_TRUE(Call("vm.builtin.check_prim_info", {Value::FromFloat(1), D(DataType::F32()), S("ctx")}).ok());
  EXPECT_EQ(CallError("vm.builtin.check_prim_info", {Value::FromFloat(1), D(DataType::I32()), S("ctx")}),
            "ctx: expected a i32 scalar, got Float 1");

  EXPECT_TRUE(Call("vm.builtin.check_tuple_info", {Value::FromTuple({I(1), I(2)}), I(2), S("ctx")}).ok());
  EXPECT_EQ(CallError("vm.builtin.check_tuple_info", {I(1), I(2), S("ctx")}), "ctx: expected a Tuple, got Int 1");
  EXPECT_EQ(CallError("vm.builtin.check_tensor_info", {t, D(DataType::F32()), I(2), S("ctx")}),
            "vm.builtin.check_tensor_info: argument 1 (ndim) must be an Int, got DataType f32");
}

TEST(BuiltinsTest, StorageAndTensorAllocation) {
  auto storage = Call("vm.builtin.alloc_storage", {I(1024), I(64)});
  ASSERT_TRUE(storage.ok()) << storage.status().message();
  ASSERT_TRUE(storage->is_storage());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(storage->storage()->data()) % 64, 0u);
  auto view =
      Call("vm.builtin.alloc_tensor_from_storage", {*storage, I(512), Value::FromShape({8, 16}), D(DataType::F32())});
  ASSERT_TRUE(view.ok()) << view.status().message();
  EXPECT_EQ(view->tensor()->data(), static_cast<uint8_t*>(storage->storage()->data()) + 512);
  EXPECT_EQ(CallError("vm.builtin.alloc_tensor_from_storage",
                      {*storage, I(768), Value::FromShape({8, 16}), D(DataType::F32())}),
            "vm.builtin.alloc_tensor_from_storage: a tensor of 512 bytes at offset 768 does not fit in a storage "
            "of 1024 bytes");
  EXPECT_EQ(CallError("vm.builtin.alloc_storage", {I(16), I(3)}),
            "vm.builtin.alloc_storage: alignment 3 is not a power of two up to 4096");

  auto tensor = Call("vm.builtin.alloc_tensor", {Value::FromShape({3, 7}), D(DataType::I32())});
  ASSERT_TRUE(tensor.ok());
  EXPECT_EQ(tensor->tensor()->TypeString(), "Tensor[(3, 7), i32]");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(tensor->tensor()->data()) % 64, 0u);
  EXPECT_EQ(CallError("vm.builtin.alloc_tensor", {Value::FromShape({3, -7}), D(DataType::I32())}),
            "vm.builtin.alloc_tensor: dimension 1 is negative (-7)");
}

TEST(BuiltinsTest, TupleCopyAndNull) {
  auto tuple = Call("vm.builtin.tuple", {I(1), S("x")});
  ASSERT_TRUE(tuple.ok());
  auto item = Call("vm.builtin.tuple_getitem", {*tuple, I(1)});
  ASSERT_TRUE(item.ok());
  EXPECT_EQ(item->string(), "x");
  EXPECT_EQ(CallError("vm.builtin.tuple_getitem", {*tuple, I(-1)}),
            "vm.builtin.tuple_getitem: index -1 out of range (tuple of 2)");
  auto empty = Call("vm.builtin.tuple", {});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->tuple()->size(), 0);
  Value t = F32({1}, {1});
  auto copy = Call("vm.builtin.copy", {t});
  ASSERT_TRUE(copy.ok());
  EXPECT_EQ(copy->tensor(), t.tensor());
  auto null = Call("vm.builtin.null", {});
  ASSERT_TRUE(null.ok());
  EXPECT_TRUE(null->is_null());
}

TEST(BlasTest, MatmulComputesAndChecksItsArguments) {
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {1, 0, 0, 1, 1, 1};
  Value c = F32({2, 2}, {0, 0, 0, 0});
  ASSERT_TRUE(Call("strata.blas.matmul", {F32({2, 3}, a), F32({3, 2}, b), c}).ok());
  EXPECT_EQ(testing::ToFloats(c), (std::vector<float>{4, 5, 10, 11}));

  EXPECT_EQ(CallError("strata.blas.matmul", {F32({2, 3}, a), F32({2, 3}, a), c}),
            "strata.blas.matmul: inner dimensions differ: A is (2, 3) and B is (2, 3) (A dimension 1 = 3, B "
            "dimension 0 = 2)");
  EXPECT_EQ(CallError("strata.blas.matmul", {F32({2, 3}, a), F32({3, 2}, b), F32({3, 2}, std::vector<float>(6))}),
            "strata.blas.matmul: output C is (3, 2), expected (2, 2) for A (2, 3) and B (3, 2)");
  EXPECT_EQ(CallError("strata.blas.matmul", {F32({6}, a), F32({3, 2}, b), c}),
            "strata.blas.matmul: argument A must be a f32 tensor of rank >= 2, got Tensor[(6,), f32]");
  auto i32 = Tensor::FromValues<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  ASSERT_TRUE(i32.ok());
  EXPECT_EQ(CallError("strata.blas.matmul", {F32({2, 3}, a), Value::FromTensor(i32.value()), c}),
            "strata.blas.matmul: argument B must be a f32 tensor of rank >= 2, got Tensor[(2, 3), i32]");
  EXPECT_EQ(CallError("strata.blas.matmul", {F32({2, 3}, a), F32({3, 2}, b)}),
            "strata.blas.matmul expects 3 arguments (A, B, C), got 2");
  EXPECT_EQ(CallError("strata.blas.matmul", {c, c, c}),
            "strata.blas.matmul: output C must not overlap the inputs A and B");
}

TEST(BlasTest, MatmulFoldsLeadingDimsOrLoopsOverBatches) {
  // (2, 2, 3) @ (3, 2): the leading dims of A are one M of 4.
  std::vector<float> a = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, b = {1, 0, 0, 1, 1, 1};
  Value c = F32({2, 2, 2}, std::vector<float>(8));
  ASSERT_TRUE(Call("strata.blas.matmul", {F32({2, 2, 3}, a), F32({3, 2}, b), c}).ok());
  EXPECT_EQ(testing::ToFloats(c), (std::vector<float>{4, 5, 10, 11, 16, 17, 22, 23}));
  // A batched B: batch 1 uses the second (3, 2) matrix, here 2 * the first.
  std::vector<float> bb = {1, 0, 0, 1, 1, 1, 2, 0, 0, 2, 2, 2};
  ASSERT_TRUE(Call("strata.blas.matmul", {F32({2, 2, 3}, a), F32({2, 3, 2}, bb), c}).ok());
  EXPECT_EQ(testing::ToFloats(c), (std::vector<float>{4, 5, 10, 11, 32, 34, 44, 46}));
  EXPECT_EQ(CallError("strata.blas.matmul", {F32({2, 2, 3}, a), F32({1, 6, 2}, bb), c}),
            "strata.blas.matmul: inner dimensions differ: A is (2, 2, 3) and B is (1, 6, 2) (A dimension 2 = 3, B "
            "dimension 1 = 6)");
  EXPECT_EQ(CallError("strata.blas.matmul", {F32({2, 2, 3}, a), F32({4, 3, 1}, bb), F32({2, 2, 1}, {0, 0, 0, 0})}),
            "strata.blas.matmul: batch dimensions differ: A is (2, 2, 3) and B is (4, 3, 1) (a batched B must have "
            "exactly A's batch dimensions)");
  EXPECT_EQ(CallError("strata.blas.matmul", {F32({2, 2, 3}, a), F32({3, 2}, b), F32({4, 2}, std::vector<float>(8))}),
            "strata.blas.matmul: output C is (4, 2), expected (2, 2, 2) for A (2, 2, 3) and B (3, 2)");
}

TEST(BlasTest, DenseTransposesTheWeightAndAddsTheBias) {
  // X (2, 3) @ W (2, 3)^T + bias.
  std::vector<float> x = {1, 2, 3, 4, 5, 6}, w = {1, 0, 0, 1, 1, 1};
  Value c = F32({2, 2}, {0, 0, 0, 0});
  ASSERT_TRUE(Call("strata.blas.dense", {F32({2, 3}, x), F32({2, 3}, w), c}).ok());
  EXPECT_EQ(testing::ToFloats(c), (std::vector<float>{1, 6, 4, 15}));
  ASSERT_TRUE(Call("strata.blas.dense_bias", {F32({2, 3}, x), F32({2, 3}, w), F32({2}, {10, 20}), c}).ok());
  EXPECT_EQ(testing::ToFloats(c), (std::vector<float>{11, 26, 14, 35}));
  EXPECT_EQ(CallError("strata.blas.dense", {F32({2, 3}, x), F32({3, 2}, w), c}),
            "strata.blas.dense: X (2, 3) has 3 features but W (3, 2) expects 2");
  EXPECT_EQ(CallError("strata.blas.dense_bias", {F32({2, 3}, x), F32({2, 3}, w), F32({3}, {1, 2, 3}), c}),
            "strata.blas.dense_bias: bias is (3,), expected (2,)");
  EXPECT_EQ(CallError("strata.blas.dense", {F32({2, 3}, x), F32({2, 3}, w), F32({2, 3}, x)}),
            "strata.blas.dense: output C is (2, 3), expected X's (2, 3) with the last dimension 2");
  EXPECT_EQ(CallError("strata.blas.dense_bias", {F32({2, 3}, x), F32({2, 3}, w), c}),
            "strata.blas.dense_bias expects 4 arguments (X, W, bias, C), got 3");
}

TEST(BlasTest, EmptyInnerDimensionGivesZeros) {
  Value c = F32({2, 2}, {9, 9, 9, 9});
  auto a = Tensor::Empty({2, 0}, DataType::F32());
  auto b = Tensor::Empty({0, 2}, DataType::F32());
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(Call("strata.blas.matmul", {Value::FromTensor(a.value()), Value::FromTensor(b.value()), c}).ok());
  EXPECT_EQ(testing::ToFloats(c), (std::vector<float>{0, 0, 0, 0}));
}

TEST(RegistryTest, RegistrationLookupAndDuplicates) {
  auto fn = [](void* ctx, const Value* const*, int32_t, Value* out) -> Status {
    *out = Value::FromInt(*static_cast<int*>(ctx));
    return Status::Ok();
  };
  static int forty_two = 42;
  ASSERT_TRUE(RegisterLibraryFunction("test.registry.answer", fn, &forty_two).ok());
  Status again = RegisterLibraryFunction("test.registry.answer", fn, &forty_two);
  EXPECT_EQ(again.message(), "library function 'test.registry.answer' is already registered");
  EXPECT_TRUE(RegisterLibraryFunction("test.registry.answer", fn, &forty_two, /*allow_override=*/true).ok());
  auto found = LookupLibraryFunction("test.registry.answer");
  ASSERT_TRUE(found.has_value());
  Value out;
  ASSERT_TRUE(found->fn(found->context, nullptr, 0, &out).ok());
  EXPECT_EQ(out.int_value(), 42);
  EXPECT_FALSE(LookupLibraryFunction("test.registry.missing").has_value());
  auto names = ListLibraryFunctions();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_NE(std::find(names.begin(), names.end(), "test.registry.answer"), names.end());
}

Status MacroRegistered(void*, const Value* const*, int32_t, Value* out) {
  *out = Value::FromString("from macro");
  return Status::Ok();
}
STRATA_REGISTER_LIBRARY_FUNCTION("test.registry.macro", &MacroRegistered);

TEST(RegistryTest, MacroRegistersAtStartup) {
  auto found = LookupLibraryFunction("test.registry.macro");
  ASSERT_TRUE(found.has_value());
  Value out;
  ASSERT_TRUE(found->fn(found->context, nullptr, 0, &out).ok());
  EXPECT_EQ(out.string(), "from macro");
}

}  // namespace
}  // namespace strata::vm
