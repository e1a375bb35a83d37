// Value, Tensor and Storage: layout, reference counting, host data in and out.
#include "vm/value.h"

#include <gtest/gtest.h>

namespace strata::vm {
namespace {

TEST(ValueTest, IsSixteenBytesAndScalarsNeedNoHeap) {
  EXPECT_EQ(sizeof(Value), 16u);
  Value i = Value::FromInt(-5);
  Value f = Value::FromFloat(2.5);
  Value d = Value::FromDataType(DataType::F32());
  Value fn = Value::FromFunction(3);
  EXPECT_FALSE(i.holds_object());
  EXPECT_FALSE(f.holds_object());
  EXPECT_FALSE(d.holds_object());
  EXPECT_FALSE(fn.holds_object());
  EXPECT_EQ(i.int_value(), -5);
  EXPECT_EQ(f.float_value(), 2.5);
  EXPECT_EQ(d.data_type(), DataType::F32());
  EXPECT_EQ(fn.function_index(), 3);
  EXPECT_TRUE(Value().is_null());
}

TEST(ValueTest, CopiesShareTheObjectAndMovesTransferIt) {
  auto t = Tensor::Empty({2, 3}, DataType::F32());
  ASSERT_TRUE(t.ok());
  Value a = Value::FromTensor(t.value());
  EXPECT_EQ(a.tensor()->use_count(), 2);  // `t` and `a`
  t = StatusOr<Ref<Tensor>>(Ref<Tensor>());
  EXPECT_EQ(a.tensor()->use_count(), 1);
  Value b = a;
  EXPECT_EQ(a.tensor(), b.tensor());
  EXPECT_EQ(a.tensor()->use_count(), 2);
  Value c = std::move(b);
  EXPECT_TRUE(b.is_null());  // NOLINT: moved-from is Null by contract
  EXPECT_EQ(c.tensor()->use_count(), 2);
  c = Value::FromInt(1);
  EXPECT_EQ(a.tensor()->use_count(), 1);
  a = a;  // self-assignment keeps the object alive
  EXPECT_EQ(a.tensor()->use_count(), 1);
}

TEST(ValueTest, ShapesStringsAndTuples) {
  Value s = Value::FromShape({4, 0, 7});
  ASSERT_TRUE(s.is_shape());
  EXPECT_EQ(std::vector<int64_t>(s.shape().begin(), s.shape().end()), (std::vector<int64_t>{4, 0, 7}));
  std::vector<int64_t> long_dims = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  Value long_shape = Value::FromShape(long_dims);
  EXPECT_EQ(std::vector<int64_t>(long_shape.shape().begin(), long_shape.shape().end()), long_dims);
  Value str = Value::FromString("err ctx");
  EXPECT_EQ(str.string(), "err ctx");
  Value tup = Value::FromTuple({s, str, Value::FromInt(3)});
  ASSERT_EQ(tup.tuple()->size(), 3);
  EXPECT_EQ((*tup.tuple())[1].string(), "err ctx");
  EXPECT_EQ(s.Describe(), "Shape (4, 0, 7)");
  EXPECT_EQ(Value::FromShape({5}).Describe(), "Shape (5,)");
  EXPECT_EQ(tup.Describe(), "Tuple of 3");
  EXPECT_EQ(str.Describe(), "String \"err ctx\"");
}

TEST(TensorTest, FromValuesAndBackAreExactAndAligned) {
  auto t = Tensor::FromValues<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  ASSERT_TRUE(t.ok()) << t.status().message();
  const Tensor& tensor = *t.value();
  EXPECT_EQ(tensor.TypeString(), "Tensor[(2, 3), f32]");
  EXPECT_EQ(tensor.num_elements(), 6);
  EXPECT_EQ(tensor.num_bytes(), 24);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(tensor.data()) % 64, 0u);
  const DLTensor* dl = tensor.dl();
  EXPECT_EQ(dl->ndim, 2);
  EXPECT_EQ(dl->shape[0], 2);
  EXPECT_EQ(dl->shape[1], 3);
  EXPECT_EQ(dl->strides, nullptr);
  EXPECT_EQ(dl->byte_offset, 0u);
  EXPECT_EQ(dl->dtype.code, kDLFloat);
  EXPECT_EQ(dl->dtype.bits, 32);
  EXPECT_EQ(dl->dtype.lanes, 1);
  EXPECT_EQ(dl->device.device_type, kDLCPU);
  auto back = tensor.ToVector<float>();
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  auto wrong = tensor.ToVector<int32_t>();
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().message(), "cannot read a Tensor[(2, 3), f32] as i32 elements");
  std::vector<uint8_t> bytes(24);
  EXPECT_TRUE(tensor.CopyToHost(bytes).ok());
  std::vector<uint8_t> short_bytes(20);
  EXPECT_EQ(tensor.CopyToHost(short_bytes).message(), "a Tensor[(2, 3), f32] holds 24 bytes, the destination has 20");
}

TEST(TensorTest, RankZeroHighRankAndEmptyTensors) {
  auto scalar = Tensor::FromValues<double>({}, {2.5});
  ASSERT_TRUE(scalar.ok());
  EXPECT_EQ(scalar.value()->ndim(), 0);
  EXPECT_EQ(scalar.value()->num_elements(), 1);
  EXPECT_EQ(scalar.value()->TypeString(), "Tensor[(), f64]");
  std::vector<int64_t> dims = {1, 2, 1, 2, 1, 2, 1, 2};
  auto high = Tensor::Empty(dims, DataType::Int(8));
  ASSERT_TRUE(high.ok());
  EXPECT_EQ(std::vector<int64_t>(high.value()->shape().begin(), high.value()->shape().end()), dims);
  auto empty = Tensor::Empty({0, 5}, DataType::F32());
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty.value()->num_bytes(), 0);
  EXPECT_NE(empty.value()->data(), nullptr);
}

TEST(TensorTest, InvalidShapesAndSizesAreErrors) {
  auto negative = Tensor::Empty({2, -3}, DataType::F32());
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.status().message(), "dimension 1 is negative (-3)");
  auto huge = Tensor::Empty({int64_t{1} << 40, int64_t{1} << 40}, DataType::F32());
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("too large"), std::string::npos);
  auto mismatch = Tensor::FromHost(std::vector<int64_t>{3}, DataType::F32(), std::vector<uint8_t>(8));
  ASSERT_FALSE(mismatch.ok());
  EXPECT_EQ(mismatch.status().message(), "a Tensor[(3,), f32] holds 12 bytes, got 8");
  auto bad_dtype = Tensor::Empty({2}, DataType::Void());
  ASSERT_FALSE(bad_dtype.ok());
  EXPECT_EQ(bad_dtype.status().message(), "cannot allocate a tensor of dtype void");
}

TEST(StorageTest, ViewsKeepTheStorageAliveAndStayInBounds) {
  auto storage = Storage::Allocate(256, 128);
  ASSERT_TRUE(storage.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(storage.value()->data()) % 128, 0u);
  Ref<Storage> s = storage.value();
  auto view = Tensor::View(s, 64, std::vector<int64_t>{4, 4}, DataType::F32());
  ASSERT_TRUE(view.ok()) << view.status().message();
  EXPECT_EQ(view.value()->data(), static_cast<uint8_t*>(s->data()) + 64);
  EXPECT_EQ(s->use_count(), 3);  // `storage`, `s`, the view
  auto too_big = Tensor::View(s, 200, std::vector<int64_t>{4, 4}, DataType::F32());
  ASSERT_FALSE(too_big.ok());
  EXPECT_EQ(too_big.status().message(), "a tensor of 64 bytes at offset 200 does not fit in a storage of 256 bytes");
  auto negative = Tensor::View(s, -8, std::vector<int64_t>{1}, DataType::F32());
  EXPECT_FALSE(negative.ok());
}

TEST(DeviceTest, NonCpuDevicesHaveNoAllocatorYet) {
  auto t = Tensor::Empty({2}, DataType::F32(), DLDevice{kDLCUDA, 1});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(), "no allocator for device cuda:1");
}

}  // namespace
}  // namespace strata::vm
