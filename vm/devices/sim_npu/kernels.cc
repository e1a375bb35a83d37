// The simulated NPU's kernels (see kernels.h and docs/devices.md for their
// arguments). Results are real f32 values, accumulated in double so that they
// match numpy's float64 references closely; the device time is the cost model's.
#include "vm/devices/sim_npu/kernels.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <sstream>

namespace sim_npu {
namespace {

// Kernel argument positions are fixed by each signature below; these name them.
using Shape = std::span<const int64_t>;

// The number of elements; 0 as soon as a dimension is 0. Never overflows for a
// tensor that was accepted at submission (its bytes fit in its buffer).
uint64_t NumElements(Shape shape) {
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d == 0) return 0;
  }
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

bool Fail(std::string* error, const std::string& message) {
  *error = message;
  return false;
}

std::string ArgName(const KernelDef& def, size_t i) {
  return "argument #" + std::to_string(i) + " '" + def.params[i].name + "'";
}

// ---- matmul: A[..., M, K] x B[..., K, N] -> C[..., M, N], batch dims broadcast ----

bool CheckMatmul(std::span<const Arg> args, const CostModel& cost, Cost* out, std::string* error) {
  const Shape a = args[0].shape(), b = args[1].shape(), c = args[2].shape();
  if (a.size() < 2 || b.size() < 2) {
    return Fail(error, "A and B must have rank >= 2 ([..., M, K] and [..., K, N]), got A " + ShapeString(a) +
                           " and B " + ShapeString(b));
  }
  const int64_t m = a[a.size() - 2], k = a[a.size() - 1], n = b[b.size() - 1];
  if (b[b.size() - 2] != k) {
    return Fail(error, "inner dimensions differ: A " + ShapeString(a) + " has K = " + std::to_string(k) + " but B " +
                           ShapeString(b) + " has " + std::to_string(b[b.size() - 2]) + " rows");
  }
  const size_t ra = a.size() - 2, rb = b.size() - 2, rc = std::max(ra, rb);
  std::vector<int64_t> expected(rc + 2);
  for (size_t i = 0; i < rc; ++i) {
    const int64_t da = i + ra >= rc ? a[i + ra - rc] : 1, db = i + rb >= rc ? b[i + rb - rc] : 1;
    if (da != db && da != 1 && db != 1) {
      return Fail(error, "batch dimensions do not broadcast: A " + ShapeString(a) + " and B " + ShapeString(b) +
                             " differ in batch dimension " + std::to_string(i) + " (" + std::to_string(da) + " vs " +
                             std::to_string(db) + ", and neither is 1)");
    }
    expected[i] = da == 1 ? db : da;
  }
  expected[rc] = m;
  expected[rc + 1] = n;
  if (!std::equal(c.begin(), c.end(), expected.begin(), expected.end())) {
    return Fail(error, "output C is " + ShapeString(c) + ", expected " + ShapeString(expected) + " for A " +
                           ShapeString(a) + " x B " + ShapeString(b));
  }
  const uint64_t batch = NumElements(Shape(expected).first(rc));
  const uint64_t per_matrix = cost.MatmulCycles(m, n, k);
  out->mac_cycles = batch == 0 ? 0 : (per_matrix > UINT64_MAX / batch ? UINT64_MAX : batch * per_matrix);
  return true;
}

// C[m, n] = sum_k A[m, k] * B[k, n] for one matrix of each.
void Gemm(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k) {
  std::vector<double> row(static_cast<size_t>(n));
  for (int64_t i = 0; i < m; ++i) {
    std::fill(row.begin(), row.end(), 0.0);
    for (int64_t p = 0; p < k; ++p) {
      const double av = a[i * k + p];
      const float* brow = b + p * n;
      for (int64_t j = 0; j < n; ++j) row[j] += av * brow[j];
    }
    for (int64_t j = 0; j < n; ++j) c[i * n + j] = static_cast<float>(row[j]);
  }
}

void RunMatmul(std::span<const Arg> args, std::span<float* const> data) {
  const Shape a = args[0].shape(), b = args[1].shape(), c = args[2].shape();
  const int64_t m = a[a.size() - 2], k = a[a.size() - 1], n = b[b.size() - 1];
  const size_t ra = a.size() - 2, rb = b.size() - 2, rc = c.size() - 2;
  // Element strides of each batch dimension of C in A and B (0 where broadcast).
  std::vector<int64_t> a_stride(rc, 0), b_stride(rc, 0);
  int64_t sa = m * k, sb = k * n;
  for (size_t i = rc; i-- > 0;) {
    if (i + ra >= rc) {
      const int64_t d = a[i + ra - rc];
      a_stride[i] = d == 1 ? 0 : sa;
      sa *= d;
    }
    if (i + rb >= rc) {
      const int64_t d = b[i + rb - rc];
      b_stride[i] = d == 1 ? 0 : sb;
      sb *= d;
    }
  }
  const uint64_t batch = NumElements(c.first(rc));
  std::vector<int64_t> index(rc, 0);
  for (uint64_t t = 0; t < batch; ++t) {
    int64_t ao = 0, bo = 0;
    for (size_t i = 0; i < rc; ++i) {
      ao += index[i] * a_stride[i];
      bo += index[i] * b_stride[i];
    }
    Gemm(data[0] + ao, data[1] + bo, data[2] + static_cast<int64_t>(t) * m * n, m, n, k);
    for (size_t i = rc; i-- > 0;) {  // odometer over C's batch dimensions
      if (++index[i] < c[i]) break;
      index[i] = 0;
    }
  }
}

// ---- dense: X[..., K], W[N, K] (, bias[N]) -> Y[..., N] = X W^T (+ bias) (relu) ----

bool CheckDenseShapes(std::span<const Arg> args, bool with_bias, const CostModel& cost, Cost* out, std::string* error) {
  const Shape x = args[0].shape(), w = args[1].shape(), y = args[with_bias ? 3 : 2].shape();
  if (x.empty()) return Fail(error, "X must have rank >= 1 ([..., K]), got a scalar");
  if (w.size() != 2) return Fail(error, "W must be [N, K], got " + ShapeString(w));
  const int64_t k = x.back(), n = w[0];
  if (w[1] != k) {
    return Fail(error, "X " + ShapeString(x) + " has K = " + std::to_string(k) + " features but W " + ShapeString(w) +
                           " has " + std::to_string(w[1]) + " columns");
  }
  if (with_bias) {
    const Shape bias = args[2].shape();
    if (bias.size() != 1 || bias[0] != n) {
      return Fail(error, "bias is " + ShapeString(bias) + ", expected [" + std::to_string(n) + "] (N of W " +
                             ShapeString(w) + ")");
    }
  }
  std::vector<int64_t> expected(x.begin(), x.end());
  expected.back() = n;
  if (!std::equal(y.begin(), y.end(), expected.begin(), expected.end())) {
    return Fail(error, "output Y is " + ShapeString(y) + ", expected " + ShapeString(expected) + " for X " +
                           ShapeString(x) + " and W " + ShapeString(w));
  }
  out->mac_cycles = cost.MatmulCycles(NumElements(x.first(x.size() - 1)), n, k);
  return true;  // the bias and relu epilogue runs in the array's output pipeline: no extra cycles
}

bool CheckDense(std::span<const Arg> args, const CostModel& cost, Cost* out, std::string* error) {
  return CheckDenseShapes(args, false, cost, out, error);
}
bool CheckDenseBias(std::span<const Arg> args, const CostModel& cost, Cost* out, std::string* error) {
  return CheckDenseShapes(args, true, cost, out, error);
}

void Dense(std::span<const Arg> args, std::span<float* const> data, bool with_bias, bool relu) {
  const Shape x = args[0].shape(), w = args[1].shape();
  const int64_t k = x.back(), n = w[0];
  const int64_t m = static_cast<int64_t>(NumElements(x.first(x.size() - 1)));
  const float *xd = data[0], *wd = data[1], *bias = with_bias ? data[2] : nullptr;
  float* yd = data[with_bias ? 3 : 2];
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = bias != nullptr ? bias[j] : 0.0;
      for (int64_t p = 0; p < k; ++p) sum += static_cast<double>(xd[i * k + p]) * wd[j * k + p];
      yd[i * n + j] = relu && sum < 0 ? 0.0f : static_cast<float>(sum);
    }
  }
}

void RunDense(std::span<const Arg> a, std::span<float* const> d) { Dense(a, d, false, false); }
void RunDenseBias(std::span<const Arg> a, std::span<float* const> d) { Dense(a, d, true, false); }
void RunDenseBiasRelu(std::span<const Arg> a, std::span<float* const> d) { Dense(a, d, true, true); }

// ---- conv2d: X[N, C, H, W], W[O, C, KH, KW] (, bias[O]) -> Y[N, O, OH, OW] ----
// Scalars after the tensors: stride_h, stride_w, pad_top, pad_left, pad_bottom,
// pad_right, dilation_h, dilation_w. groups = 1.

struct ConvGeometry {
  int64_t n, c, h, w, o, kh, kw, oh, ow;
  int64_t stride_h, stride_w, pad_top, pad_left, dilation_h, dilation_w;
};

// Bounds the scalars so that no index arithmetic below can overflow.
constexpr int64_t kMaxConvScalar = int64_t{1} << 31;

bool ConvGeometryOf(std::span<const Arg> args, bool with_bias, ConvGeometry* g, std::string* error) {
  const size_t first_scalar = with_bias ? 4 : 3;
  const Shape x = args[0].shape(), wt = args[1].shape(), y = args[first_scalar - 1].shape();
  if (x.size() != 4) return Fail(error, "X must be NCHW (rank 4), got " + ShapeString(x));
  if (wt.size() != 4) return Fail(error, "W must be OIHW (rank 4), got " + ShapeString(wt));
  if (wt[1] != x[1]) {
    return Fail(error, "X " + ShapeString(x) + " has " + std::to_string(x[1]) + " channels but W " + ShapeString(wt) +
                           " expects " + std::to_string(wt[1]) + " (groups = 1 only)");
  }
  if (wt[2] == 0 || wt[3] == 0) return Fail(error, "W " + ShapeString(wt) + " has an empty kernel window");
  const char* names[] = {"stride_h",   "stride_w",  "pad_top",    "pad_left",
                         "pad_bottom", "pad_right", "dilation_h", "dilation_w"};
  int64_t s[8];
  for (size_t i = 0; i < 8; ++i) {
    s[i] = args[first_scalar + i].i64;
    const bool positive = i < 2 || i >= 6;  // strides and dilations; paddings may be 0
    if (s[i] < (positive ? 1 : 0) || s[i] > kMaxConvScalar) {
      return Fail(error, std::string(names[i]) + " = " + std::to_string(s[i]) + " is out of range [" +
                             (positive ? "1" : "0") + ", 2^31]");
    }
  }
  *g = {x[0], x[1], x[2], x[3], wt[0], wt[2], wt[3], 0, 0, s[0], s[1], s[2], s[3], s[6], s[7]};
  // Dimensions are at most 2^40 (checked at submission) and the scalars 2^31:
  // the padded input fits in 64 bits, the dilated window may not.
  using i128 = __int128;
  const i128 window_h = i128{s[6]} * (wt[2] - 1) + 1, window_w = i128{s[7]} * (wt[3] - 1) + 1;
  const int64_t padded_h = x[2] + s[2] + s[4], padded_w = x[3] + s[3] + s[5];
  if (padded_h < window_h || padded_w < window_w) {
    auto text = [](i128 v) { return v > INT64_MAX ? std::string("more than 2^63") : std::to_string(int64_t(v)); };
    return Fail(error, "the kernel window of W " + ShapeString(wt) + " at dilation " + std::to_string(s[6]) + "x" +
                           std::to_string(s[7]) + " spans " + text(window_h) + "x" + text(window_w) +
                           " pixels, more than the padded input " + std::to_string(padded_h) + "x" +
                           std::to_string(padded_w) + " of X " + ShapeString(x));
  }
  g->oh = static_cast<int64_t>((padded_h - window_h) / s[0] + 1);
  g->ow = static_cast<int64_t>((padded_w - window_w) / s[1] + 1);
  if (with_bias) {
    const Shape bias = args[2].shape();
    if (bias.size() != 1 || bias[0] != g->o) {
      return Fail(error, "bias is " + ShapeString(bias) + ", expected [" + std::to_string(g->o) +
                             "] (output channels of W " + ShapeString(wt) + ")");
    }
  }
  const int64_t expected[] = {g->n, g->o, g->oh, g->ow};
  if (!std::equal(y.begin(), y.end(), std::begin(expected), std::end(expected))) {
    return Fail(error, "output Y is " + ShapeString(y) + ", expected " + ShapeString(expected) + " for X " +
                           ShapeString(x) + ", W " + ShapeString(wt) + ", strides " + std::to_string(s[0]) + "x" +
                           std::to_string(s[1]) + ", padding (top, left, bottom, right) (" + std::to_string(s[2]) +
                           ", " + std::to_string(s[3]) + ", " + std::to_string(s[4]) + ", " + std::to_string(s[5]) +
                           "), dilation " + std::to_string(s[6]) + "x" + std::to_string(s[7]));
  }
  return true;
}

bool CheckConv(std::span<const Arg> args, bool with_bias, const CostModel& cost, Cost* out, std::string* error) {
  ConvGeometry g;
  if (!ConvGeometryOf(args, with_bias, &g, error)) return false;
  // As an implicit GEMM: one output row per output pixel, one column per output
  // channel, a reduction over the C x KH x KW window.
  const int64_t pixels[] = {g.n, g.oh, g.ow}, window[] = {g.c, g.kh, g.kw};
  out->mac_cycles = cost.MatmulCycles(NumElements(pixels), g.o, NumElements(window));
  return true;
}

bool CheckConv2d(std::span<const Arg> a, const CostModel& c, Cost* o, std::string* e) {
  return CheckConv(a, false, c, o, e);
}
bool CheckConv2dBias(std::span<const Arg> a, const CostModel& c, Cost* o, std::string* e) {
  return CheckConv(a, true, c, o, e);
}

void Conv(std::span<const Arg> args, std::span<float* const> data, bool with_bias, bool relu) {
  ConvGeometry g;
  std::string unused;
  ConvGeometryOf(args, with_bias, &g, &unused);  // checked before the call
  const float *x = data[0], *w = data[1], *bias = with_bias ? data[2] : nullptr;
  float* y = data[with_bias ? 3 : 2];
  const int64_t dh = g.dilation_h, dw = g.dilation_w;
  for (int64_t b = 0; b < g.n; ++b) {
    for (int64_t o = 0; o < g.o; ++o) {
      for (int64_t oy = 0; oy < g.oh; ++oy) {
        for (int64_t ox = 0; ox < g.ow; ++ox) {
          double sum = bias != nullptr ? bias[o] : 0.0;
          for (int64_t c = 0; c < g.c; ++c) {
            const float* xc = x + (b * g.c + c) * g.h * g.w;
            const float* wc = w + (o * g.c + c) * g.kh * g.kw;
            for (int64_t i = 0; i < g.kh; ++i) {
              const int64_t iy = oy * g.stride_h - g.pad_top + i * dh;
              if (iy < 0 || iy >= g.h) continue;  // zero padding
              for (int64_t j = 0; j < g.kw; ++j) {
                const int64_t ix = ox * g.stride_w - g.pad_left + j * dw;
                if (ix < 0 || ix >= g.w) continue;
                sum += static_cast<double>(xc[iy * g.w + ix]) * wc[i * g.kw + j];
              }
            }
          }
          y[((b * g.o + o) * g.oh + oy) * g.ow + ox] = relu && sum < 0 ? 0.0f : static_cast<float>(sum);
        }
      }
    }
  }
}

void RunConv2d(std::span<const Arg> a, std::span<float* const> d) { Conv(a, d, false, false); }
void RunConv2dBias(std::span<const Arg> a, std::span<float* const> d) { Conv(a, d, true, false); }
void RunConv2dBiasRelu(std::span<const Arg> a, std::span<float* const> d) { Conv(a, d, true, true); }

// ---- elementwise: add / mul (A, B, C), B broadcast to A; relu (X, Y) ----

bool CheckBinary(std::span<const Arg> args, const CostModel& cost, Cost* out, std::string* error) {
  const Shape a = args[0].shape(), b = args[1].shape(), c = args[2].shape();
  bool broadcasts = b.size() <= a.size();
  size_t bad = 0;
  for (size_t i = 0; broadcasts && i < b.size(); ++i) {
    const int64_t db = b[b.size() - 1 - i], da = a[a.size() - 1 - i];
    if (db != da && db != 1) {
      broadcasts = false;
      bad = i;
    }
  }
  if (!broadcasts) {
    std::string why = b.size() > a.size()
                          ? "B has more dimensions than A"
                          : "B dimension " + std::to_string(b.size() - 1 - bad) + " = " +
                                std::to_string(b[b.size() - 1 - bad]) + " is neither 1 nor A's dimension " +
                                std::to_string(a.size() - 1 - bad) + " = " + std::to_string(a[a.size() - 1 - bad]);
    return Fail(error, "B " + ShapeString(b) + " does not broadcast to A " + ShapeString(a) + ": " + why +
                           " (B's dimensions align with A's last ones and each must equal A's or be 1)");
  }
  if (!std::equal(c.begin(), c.end(), a.begin(), a.end())) {
    return Fail(error, "output C is " + ShapeString(c) + ", expected A's shape " + ShapeString(a));
  }
  out->vector_cycles = cost.VectorCycles(NumElements(c));
  return true;
}

template <typename Op>
void Binary(std::span<const Arg> args, std::span<float* const> data, Op op) {
  const Shape a = args[0].shape(), b = args[1].shape();
  const float *x = data[0], *y = data[1];
  float* z = data[2];
  const uint64_t total = NumElements(a);
  if (total == 0) return;
  if (NumElements(b) == total) {  // same shape up to leading 1s
    for (uint64_t i = 0; i < total; ++i) z[i] = op(x[i], y[i]);
    return;
  }
  // B's element stride along each dimension of A (0 where B broadcasts).
  const size_t r = a.size(), off = a.size() - b.size();
  std::vector<int64_t> stride(r, 0);
  int64_t s = 1;
  for (size_t i = r; i-- > off;) {
    const int64_t d = b[i - off];
    stride[i] = d == 1 ? 0 : s;
    s *= d;
  }
  // An odometer over A's outer dimensions, the innermost in a plain loop.
  const int64_t inner = a[r - 1], inner_stride = stride[r - 1];
  std::vector<int64_t> index(r, 0);
  for (uint64_t done = 0; done < total; done += static_cast<uint64_t>(inner)) {
    int64_t bo = 0;
    for (size_t i = 0; i + 1 < r; ++i) bo += index[i] * stride[i];
    for (int64_t j = 0; j < inner; ++j) z[j] = op(x[j], y[bo + j * inner_stride]);
    x += inner;
    z += inner;
    for (size_t i = r - 1; i-- > 0;) {
      if (++index[i] < a[i]) break;
      index[i] = 0;
    }
  }
}

void RunAdd(std::span<const Arg> a, std::span<float* const> d) {
  Binary(a, d, [](float x, float y) { return x + y; });
}
void RunMul(std::span<const Arg> a, std::span<float* const> d) {
  Binary(a, d, [](float x, float y) { return x * y; });
}

bool CheckRelu(std::span<const Arg> args, const CostModel& cost, Cost* out, std::string* error) {
  const Shape x = args[0].shape(), y = args[1].shape();
  if (!std::equal(x.begin(), x.end(), y.begin(), y.end())) {
    return Fail(error, "output Y is " + ShapeString(y) + ", expected X's shape " + ShapeString(x));
  }
  out->vector_cycles = cost.VectorCycles(NumElements(x));
  return true;
}

void RunRelu(std::span<const Arg> args, std::span<float* const> data) {
  const uint64_t n = NumElements(args[0].shape());
  for (uint64_t i = 0; i < n; ++i) data[1][i] = data[0][i] < 0 ? 0.0f : data[0][i];
}

std::vector<Param> ConvParams(bool with_bias) {
  std::vector<Param> p = {{"X", ParamKind::kInput}, {"W", ParamKind::kInput}};
  if (with_bias) p.push_back({"bias", ParamKind::kInput});
  p.push_back({"Y", ParamKind::kOutput});
  for (const char* s :
       {"stride_h", "stride_w", "pad_top", "pad_left", "pad_bottom", "pad_right", "dilation_h", "dilation_w"}) {
    p.push_back({s, ParamKind::kInt});
  }
  return p;
}

bool IsFloat32(DLDataType t) { return t.code == kDLFloat && t.bits == 32 && t.lanes == 1; }

bool Overlap(const Arg& x, const Arg& y) {
  return x.buffer == y.buffer && x.bytes > 0 && y.bytes > 0 && x.byte_offset < y.byte_offset + y.bytes &&
         y.byte_offset < x.byte_offset + x.bytes;
}

}  // namespace

const std::vector<KernelDef>& Kernels() {
  using K = ParamKind;
  static const std::vector<KernelDef> kernels = {
      {"matmul", {{"A", K::kInput}, {"B", K::kInput}, {"C", K::kOutput}}, false, CheckMatmul, RunMatmul},
      {"dense", {{"X", K::kInput}, {"W", K::kInput}, {"Y", K::kOutput}}, false, CheckDense, RunDense},
      {"dense_bias",
       {{"X", K::kInput}, {"W", K::kInput}, {"bias", K::kInput}, {"Y", K::kOutput}},
       false,
       CheckDenseBias,
       RunDenseBias},
      {"dense_bias_relu",
       {{"X", K::kInput}, {"W", K::kInput}, {"bias", K::kInput}, {"Y", K::kOutput}},
       false,
       CheckDenseBias,
       RunDenseBiasRelu},
      {"conv2d", ConvParams(false), false, CheckConv2d, RunConv2d},
      {"conv2d_bias", ConvParams(true), false, CheckConv2dBias, RunConv2dBias},
      {"conv2d_bias_relu", ConvParams(true), false, CheckConv2dBias, RunConv2dBiasRelu},
      {"add", {{"A", K::kInput}, {"B", K::kInput}, {"C", K::kOutput}}, true, CheckBinary, RunAdd},
      {"mul", {{"A", K::kInput}, {"B", K::kInput}, {"C", K::kOutput}}, true, CheckBinary, RunMul},
      {"relu", {{"X", K::kInput}, {"Y", K::kOutput}}, true, CheckRelu, RunRelu},
  };
  return kernels;
}

bool CheckCall(const KernelDef& def, std::span<const Arg> args, const CostModel& cost, Cost* out_cost,
               std::string* error) {
  if (args.size() != def.params.size()) {
    std::string names;
    for (const Param& p : def.params) names += (names.empty() ? "" : ", ") + std::string(p.name);
    return Fail(error, "expects " + std::to_string(def.params.size()) + " arguments (" + names + "), got " +
                           std::to_string(args.size()));
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const Arg& a = args[i];
    const bool want_buffer = def.params[i].kind != ParamKind::kInt;
    const int32_t want = want_buffer ? STRATA_DEVICE_ARG_BUFFER : STRATA_DEVICE_ARG_I64;
    if (a.kind != want) {
      const char* got = a.kind == STRATA_DEVICE_ARG_BUFFER ? "a buffer"
                        : a.kind == STRATA_DEVICE_ARG_I64  ? "an i64 scalar"
                                                           : "an f64 scalar";
      return Fail(
          error, ArgName(def, i) + " must be " + (want_buffer ? "a float32 buffer" : "an i64 scalar") + ", got " + got);
    }
    if (!want_buffer) continue;
    if (!IsFloat32(a.dtype)) {
      return Fail(error,
                  ArgName(def, i) + " must be float32, got " + DTypeString(a.dtype) + " " + ShapeString(a.shape()));
    }
    if (a.byte_offset % sizeof(float) != 0) {
      return Fail(error, ArgName(def, i) + " starts at byte offset " + std::to_string(a.byte_offset) +
                             ", which is not a multiple of the element size 4");
    }
  }
  *out_cost = Cost{};
  if (!def.check(args, cost, out_cost, error)) return false;
  for (size_t o = 0; o < args.size(); ++o) {
    if (def.params[o].kind != ParamKind::kOutput) continue;
    for (size_t i = 0; i < args.size(); ++i) {
      if (def.params[i].kind != ParamKind::kInput || !Overlap(args[o], args[i])) continue;
      const bool in_place =
          def.elementwise && args[o].byte_offset == args[i].byte_offset && args[o].bytes == args[i].bytes;
      if (!in_place) {
        return Fail(error, "output " + ArgName(def, o) + " overlaps input " + ArgName(def, i) +
                               (def.elementwise ? " (in place, an output must cover exactly the bytes of an input of "
                                                  "its shape)"
                                                : " (this kernel cannot run in place)"));
      }
    }
  }
  return true;
}

void RunCall(const KernelDef& def, std::span<const Arg> args, std::span<float* const> data) {
  // Only an output with elements bounds the loops (its bytes are in device
  // memory); an empty output may come with inputs whose other dimensions are huge.
  bool any_output = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (def.params[i].kind == ParamKind::kOutput && args[i].bytes > 0) any_output = true;
  }
  if (any_output) def.run(args, data);
}

std::string ShapeString(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string DTypeString(DLDataType dtype) {
  const char* base = nullptr;
  switch (dtype.code) {
    case kDLInt: base = "int"; break;
    case kDLUInt: base = "uint"; break;
    case kDLFloat: base = "float"; break;
    case kDLBfloat: base = "bfloat"; break;
    default: break;
  }
  // Appended piece by piece: GCC 12 warns (-Wrestrict, falsely) about "x" + std::string.
  std::string s;
  if (base != nullptr) {
    s = base;
    s += std::to_string(dtype.bits);
  } else {
    s = "type code ";
    s += std::to_string(dtype.code);
    s += " with ";
    s += std::to_string(dtype.bits);
    s += " bits";
  }
  if (dtype.lanes != 1) {
    s += 'x';
    s += std::to_string(dtype.lanes);
  }
  return s;
}

}  // namespace sim_npu
