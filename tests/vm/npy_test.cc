// .npy files and inline tensor values.
#include "vm/tensor_io/npy.h"

#include <cstdio>
#include <cstring>

#include <gtest/gtest.h>

#include "tests/vm/test_util.h"

namespace strata::vm {
namespace {

using testing::ReadFile;
using testing::TempPath;

std::vector<uint8_t> NpyBytes(const std::string& header_dict, std::vector<uint8_t> data, uint8_t major = 1) {
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', major, 0};
  size_t prefix = major == 1 ? 10 : 12;
  std::string header = header_dict;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  uint32_t len = static_cast<uint32_t>(header.size());
  for (size_t i = 0; i < prefix - 8; ++i) out.push_back(static_cast<uint8_t>(len >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

template <typename T>
void ExpectRoundTrip(std::initializer_list<int64_t> shape, std::initializer_list<T> list) {
  std::vector<T> values(list);
  auto t = Tensor::FromValues<T>(std::vector<int64_t>(shape), std::span<const T>(list.begin(), list.size()));
  ASSERT_TRUE(t.ok()) << t.status().message();
  auto bytes = EncodeNpy(*t.value());
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  // numpy pads the header so the data starts 64-byte aligned.
  EXPECT_EQ((bytes->size() - t.value()->num_bytes()) % 64, 0u);
  auto back = ParseNpy(*bytes, "round trip");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back.value()->TypeString(), t.value()->TypeString());
  auto got = back.value()->template ToVector<T>();
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, values);
}

TEST(NpyTest, RoundTripsEveryDtype) {
  ExpectRoundTrip<float>({2, 3}, {1.5f, -2, 3, 4, 5, 6e-8f});
  ExpectRoundTrip<double>({3}, {1e300, -0.0, 3.25});
  ExpectRoundTrip<int8_t>({2, 2}, {-128, 127, 0, 1});
  ExpectRoundTrip<int16_t>({2}, {-32768, 32767});
  ExpectRoundTrip<int32_t>({1, 1, 2}, {-7, 1 << 30});
  ExpectRoundTrip<int64_t>({2}, {int64_t{1} << 62, -1});
  ExpectRoundTrip<uint8_t>({3}, {0, 128, 255});
  ExpectRoundTrip<bool>({4}, {true, false, false, true});
  ExpectRoundTrip<float>({}, {42.0f});
  ExpectRoundTrip<float>({0, 3}, {});
}

TEST(NpyTest, HalfPrecisionRoundTripsThroughInlineValues) {
  auto t = ParseInlineTensor("4xf16=1,-2.5,65504,0.0001");
  ASSERT_TRUE(t.ok()) << t.status().message();
  const uint16_t* h = t.value()->data_as<uint16_t>();
  EXPECT_EQ(h[0], 0x3c00);
  EXPECT_EQ(h[1], 0xc100);
  EXPECT_EQ(h[2], 0x7bff);
  auto bytes = EncodeNpy(*t.value());
  ASSERT_TRUE(bytes.ok());
  auto back = ParseNpy(*bytes, "f16");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(FormatInlineTensor(*back.value()), "4xf16=1,-2.5,65504,0.000100016594");
}

TEST(NpyTest, ReadsNumpyFixtureFiles) {
  auto x = ReadNpyFile(STRATA_SOURCE_DIR "/tests/fixtures/matmul_relu/x_3x4x2.npy");
  ASSERT_TRUE(x.ok()) << x.status().message();
  EXPECT_EQ(x.value()->TypeString(), "Tensor[(3, 4), f32]");
  auto y = ReadNpyFile(STRATA_SOURCE_DIR "/tests/fixtures/matmul_relu/y_3x4x2.npy");
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_EQ(y.value()->TypeString(), "Tensor[(3, 2), f32]");
  auto bias = ReadNpyFile(STRATA_SOURCE_DIR "/tests/fixtures/matmul_bias/bias_5x9x3.npy");
  ASSERT_TRUE(bias.ok()) << bias.status().message();
  EXPECT_EQ(bias.value()->TypeString(), "Tensor[(3,), f32]");
}

TEST(NpyTest, WritesFilesThatReadBack) {
  auto t = Tensor::FromValues<int32_t>({2, 2}, {1, 2, 3, 4});
  ASSERT_TRUE(t.ok());
  std::string path = TempPath("written.npy");
  ASSERT_TRUE(WriteNpyFile(path, *t.value()).ok());
  std::vector<uint8_t> bytes = ReadFile(path);
  std::string header(bytes.begin() + 10, bytes.begin() + 64);
  EXPECT_EQ(header.substr(0, 53), "{'descr': '<i4', 'fortran_order': False, 'shape': (2,");
  auto back = ReadNpyFile(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back.value()->ToVector<int32_t>(), (std::vector<int32_t>{1, 2, 3, 4}));
  std::remove(path.c_str());
  EXPECT_EQ(WriteNpyFile("/nonexistent/dir/x.npy", *t.value()).message(),
            "/nonexistent/dir/x.npy: cannot create: No such file or directory");
}

TEST(NpyTest, ReadsVersion2HeadersAndDoubleQuotes) {
  std::vector<uint8_t> data(8);
  float v[2] = {1.0f, 2.0f};
  std::memcpy(data.data(), v, 8);
  auto t = ParseNpy(NpyBytes("{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2,)}", data, 2), "v2.npy");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(*t.value()->ToVector<float>(), (std::vector<float>{1.0f, 2.0f}));
}

TEST(NpyTest, BadFilesGiveClearErrors) {
  std::vector<uint8_t> four(16);
  EXPECT_EQ(ParseNpy(NpyBytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", four), "w.npy")
                .status()
                .message(),
            "w.npy: fortran_order (column-major) arrays are not supported; save a C-order array "
            "(numpy.ascontiguousarray)");
  EXPECT_EQ(ParseNpy(NpyBytes("{'descr': '>f4', 'fortran_order': False, 'shape': (4,), }", four), "be.npy")
                .status()
                .message(),
            "be.npy: big-endian data ('>f4') is not supported; save it little-endian");
  EXPECT_EQ(
      ParseNpy(NpyBytes("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", four), "c.npy").status().message(),
      "c.npy: unsupported dtype '<c8' (supported: f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1)");
  EXPECT_EQ(
      ParseNpy(NpyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", four), "t.npy").status().message(),
      "t.npy: truncated data: shape (5,) of f32 needs 20 bytes, the file has 16");
  EXPECT_EQ(
      ParseNpy(NpyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", four), "x.npy").status().message(),
      "x.npy: extra data: shape (3,) of f32 needs 12 bytes, the file has 16");
  EXPECT_EQ(ParseNpy(NpyBytes("{'descr': '<f4', 'shape': (4,), }", four), "m.npy").status().message(),
            "m.npy: malformed .npy header: missing 'fortran_order'");
  EXPECT_EQ(ParseNpy(NpyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (-4,), }", four), "n.npy")
                .status()
                .message(),
            "n.npy: malformed .npy header: shape dimensions must be non-negative integers at offset 51");
  std::vector<uint8_t> not_npy = {'P', 'K', 3, 4, 0, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(ParseNpy(not_npy, "z.npy").status().message(), "z.npy: not a .npy file (missing the \\x93NUMPY magic)");
  std::vector<uint8_t> truncated = NpyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", four);
  truncated.resize(40);
  EXPECT_EQ(ParseNpy(truncated, "h.npy").status().message(),
            "h.npy: truncated .npy header (118 bytes announced, 30 present)");
  std::vector<uint8_t> v9 = NpyBytes("{}", {}, 1);
  v9[6] = 9;
  EXPECT_EQ(ParseNpy(v9, "v9.npy").status().message(),
            "v9.npy: unsupported .npy format version 9.0 (supported: 1.0, 2.0, 3.0)");
  EXPECT_EQ(ReadNpyFile("/nonexistent.npy").status().message(),
            "/nonexistent.npy: cannot open: No such file or directory");
}

TEST(NpyTest, EveryTruncationOfAValidFileIsAnErrorNotACrash) {
  auto t = Tensor::FromValues<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  ASSERT_TRUE(t.ok());
  std::vector<uint8_t> bytes = *EncodeNpy(*t.value());
  for (size_t len = 0; len < bytes.size(); ++len) {
    std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(len));
    EXPECT_FALSE(ParseNpy(prefix, "p.npy").ok()) << "length " << len;
  }
}

TEST(InlineTensorTest, ParsesShapesDtypesAndValues) {
  auto t = ParseInlineTensor("2x3xf32=1,2,3,4,5,6");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t.value()->TypeString(), "Tensor[(2, 3), f32]");
  EXPECT_EQ(*t.value()->ToVector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  auto scalar = ParseInlineTensor("f32=1.5");
  ASSERT_TRUE(scalar.ok());
  EXPECT_EQ(scalar.value()->ndim(), 0);
  EXPECT_EQ(*scalar.value()->ToVector<float>(), (std::vector<float>{1.5f}));
  auto spaces = ParseInlineTensor("2x2xi64=1 -2 3 4");
  ASSERT_TRUE(spaces.ok()) << spaces.status().message();
  EXPECT_EQ(*spaces.value()->ToVector<int64_t>(), (std::vector<int64_t>{1, -2, 3, 4}));
  auto flags = ParseInlineTensor("3xbool=true,0,1");
  ASSERT_TRUE(flags.ok());
  EXPECT_EQ(*flags.value()->ToVector<bool>(), (std::vector<bool>{true, false, true}));
  auto empty = ParseInlineTensor("0x4xi32=");
  ASSERT_TRUE(empty.ok()) << empty.status().message();
  EXPECT_EQ(empty.value()->num_elements(), 0);
  auto u8 = ParseInlineTensor("2xu8=0,255");
  ASSERT_TRUE(u8.ok());
  EXPECT_EQ(FormatInlineTensor(*u8.value()), "2xu8=0,255");
  EXPECT_EQ(FormatInlineTensor(*t.value()), "2x3xf32=1,2,3,4,5,6");
  EXPECT_EQ(FormatInlineTensor(*t.value(), 4), "2x3xf32=1,2,3,4,...");
  EXPECT_EQ(FormatInlineTensor(*scalar.value()), "f32=1.5");
}

TEST(InlineTensorTest, ErrorsSayWhatIsWrong) {
  EXPECT_EQ(ParseInlineTensor("2x3xf32=1,2,3").status().message(),
            "input '2x3xf32=1,2,3': expected 6 values for shape (2, 3), got 3");
  EXPECT_EQ(ParseInlineTensor("f32=1,2").status().message(), "input 'f32=1,2': expected 1 value for shape (), got 2");
  EXPECT_EQ(ParseInlineTensor("2x3xf32").status().message(),
            "input '2x3xf32': expected '<dims>x<dtype>=<values>', e.g. 2x3xf32=1,2,3,4,5,6 or f32=1.5");
  EXPECT_EQ(ParseInlineTensor("2xq7=1,2").status().message(),
            "input '2xq7=1,2': unknown element type 'q7' (expected one of f16 f32 f64 i8 i16 i32 i64 u8 u16 u32 u64 "
            "bool)");
  EXPECT_EQ(ParseInlineTensor("2x-1xf32=").status().message(),
            "input '2x-1xf32=': dimension 1 '-1' is not a non-negative integer");
  EXPECT_EQ(ParseInlineTensor("2xi8=1,300").status().message(),
            "input '2xi8=1,300': value 1: '300' is not a valid i8 value");
  EXPECT_EQ(ParseInlineTensor("2xf32=1,abc").status().message(),
            "input '2xf32=1,abc': value 1: 'abc' is not a valid f32 value");
  EXPECT_EQ(ParseInlineTensor("3xi32=1,,2").status().message(), "input '3xi32=1,,2': empty value at position 1");
  EXPECT_EQ(ParseInlineTensor("2xu8=-1,2").status().message(),
            "input '2xu8=-1,2': value 0: '-1' is not a valid u8 value");
}

}  // namespace
}  // namespace strata::vm
