// strata.blas.*: single-precision GEMM through OpenBLAS's cblas_sgemm (see blas.h).
#include "kernels/blas.h"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <span>

#include "kernels/tensor_args.h"
#include "vm/registry.h"

namespace strata::kernels {
namespace {

constexpr const char* kMatmul = "strata.blas.matmul";
constexpr const char* kDense = "strata.blas.dense";
constexpr const char* kDenseBias = "strata.blas.dense_bias";

// BLAS takes 32-bit sizes.
Status CheckBlasSize(const char* fn, std::initializer_list<int64_t> sizes) {
  for (int64_t s : sizes) {
    if (s > INT_MAX) return Status(ErrorStatus() << fn << ": a matrix dimension of " << s << " does not fit BLAS's 32 bits");
  }
  return Status::Ok();
}

// C[m, n] = A[m, k] @ op(B) where op(B) = B[k, n] or, transposed, B[n, k]^T.
void Gemm(bool transpose_b, int64_t m, int64_t n, int64_t k, const float* a, const float* b, float beta, float* c) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (beta == 0.0f) std::memset(c, 0, static_cast<size_t>(m * n) * sizeof(float));
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, transpose_b ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), 1.0f, a, static_cast<int>(k), b,
              static_cast<int>(transpose_b ? k : n), beta, c, static_cast<int>(n));
}

// Dense with an optional bias: C[..., n] = X[..., k] @ W[n, k]^T (+ bias[n]).
Status Dense(const char* fn, const vm::Value* const* args, int32_t num_args, bool with_bias) {
  const int32_t expected = with_bias ? 4 : 3;
  if (num_args != expected) {
    return Status(ErrorStatus() << fn << " expects " << expected << " arguments ("
                                << (with_bias ? "X, W, bias, C" : "X, W, C") << "), got " << num_args);
  }
  vm::Tensor *x, *w, *bias = nullptr, *c;
  STRATA_RETURN_IF_ERROR(GetF32(fn, args, 0, "X", 1, -1, &x));
  STRATA_RETURN_IF_ERROR(GetF32(fn, args, 1, "W", 2, 2, &w));
  if (with_bias) STRATA_RETURN_IF_ERROR(GetF32(fn, args, 2, "bias", 1, 1, &bias));
  STRATA_RETURN_IF_ERROR(GetF32(fn, args, expected - 1, "C", 1, -1, &c));
  const int64_t k = x->shape().back(), n = w->shape()[0];
  if (w->shape()[1] != k) {
    return Status(ErrorStatus() << fn << ": X " << vm::ShapeToString(x->shape()) << " has " << k
                                << " features but W " << vm::ShapeToString(w->shape()) << " expects " << w->shape()[1]);
  }
  if (bias != nullptr && bias->shape()[0] != n) {
    return Status(ErrorStatus() << fn << ": bias is " << vm::ShapeToString(bias->shape()) << ", expected (" << n << ",)");
  }
  const auto batch = x->shape().first(x->shape().size() - 1);
  const bool c_ok = c->ndim() == x->ndim() && c->shape().back() == n &&
                    std::equal(batch.begin(), batch.end(), c->shape().begin());
  if (!c_ok) {
    return Status(ErrorStatus() << fn << ": output C is " << vm::ShapeToString(c->shape()) << ", expected X's "
                                << vm::ShapeToString(x->shape()) << " with the last dimension " << n);
  }
  STRATA_RETURN_IF_ERROR(with_bias ? CheckOutput(fn, "C", c, {x, w, bias}, "X, W and bias") : CheckOutput(fn, "C", c, {x, w}, "X and W"));
  const int64_t m = Product(batch);
  STRATA_RETURN_IF_ERROR(CheckBlasSize(fn, {m, n, k}));
  float* out = c->data_as<float>();
  float beta = 0.0f;
  if (bias != nullptr) {
    const float* b = bias->data_as<const float>();
    for (int64_t i = 0; i < m; ++i) std::memcpy(out + i * n, b, static_cast<size_t>(n) * sizeof(float));
    beta = 1.0f;
  }
  Gemm(/*transpose_b=*/true, m, n, k, x->data_as<const float>(), w->data_as<const float>(), beta, out);
  return Status::Ok();
}

}  // namespace

Status BlasMatmul(void*, const vm::Value* const* args, int32_t num_args, vm::Value*) {
  if (num_args != 3) {
    return Status(ErrorStatus() << kMatmul << " expects 3 arguments (A, B, C), got " << num_args);
  }
  vm::Tensor *a, *b, *c;
  STRATA_RETURN_IF_ERROR(GetF32(kMatmul, args, 0, "A", 2, -1, &a));
  STRATA_RETURN_IF_ERROR(GetF32(kMatmul, args, 1, "B", 2, -1, &b));
  STRATA_RETURN_IF_ERROR(GetF32(kMatmul, args, 2, "C", 2, -1, &c));
  const size_t ra = a->shape().size(), rb = b->shape().size();
  const int64_t m = a->shape()[ra - 2], k = a->shape()[ra - 1], n = b->shape()[rb - 1];
  if (b->shape()[rb - 2] != k) {
    return Status(ErrorStatus() << kMatmul << ": inner dimensions differ: A is " << vm::ShapeToString(a->shape())
                                << " and B is " << vm::ShapeToString(b->shape()) << " (A dimension " << ra - 1
                                << " = " << k << ", B dimension " << rb - 2 << " = " << b->shape()[rb - 2] << ")");
  }
  const auto batch = a->shape().first(ra - 2);
  if (rb > 2 && !std::equal(batch.begin(), batch.end(), b->shape().begin(), b->shape().end() - 2)) {
    return Status(ErrorStatus() << kMatmul << ": batch dimensions differ: A is " << vm::ShapeToString(a->shape())
                                << " and B is " << vm::ShapeToString(b->shape())
                                << " (a batched B must have exactly A's batch dimensions)");
  }
  const bool c_ok = c->shape().size() == ra && c->shape()[ra - 2] == m && c->shape()[ra - 1] == n &&
                    std::equal(batch.begin(), batch.end(), c->shape().begin());
  if (!c_ok) {
    std::vector<int64_t> want(batch.begin(), batch.end());
    want.push_back(m);
    want.push_back(n);
    return Status(ErrorStatus() << kMatmul << ": output C is " << vm::ShapeToString(c->shape()) << ", expected "
                                << vm::ShapeToString(want) << " for A " << vm::ShapeToString(a->shape()) << " and B "
                                << vm::ShapeToString(b->shape()));
  }
  STRATA_RETURN_IF_ERROR(CheckOutput(kMatmul, "C", c, {a, b}, "A and B"));
  const int64_t batches = Product(batch);
  STRATA_RETURN_IF_ERROR(CheckBlasSize(kMatmul, {batches * m, n, k}));
  if (rb == 2) {
    // Row-major A[..., m, k] is one (batches * m, k) matrix.
    Gemm(false, batches * m, n, k, a->data_as<const float>(), b->data_as<const float>(), 0.0f, c->data_as<float>());
    return Status::Ok();
  }
  for (int64_t i = 0; i < batches; ++i) {
    Gemm(false, m, n, k, a->data_as<const float>() + i * m * k, b->data_as<const float>() + i * k * n, 0.0f,
         c->data_as<float>() + i * m * n);
  }
  return Status::Ok();
}

Status BlasDense(void*, const vm::Value* const* args, int32_t num_args, vm::Value*) {
  return Dense(kDense, args, num_args, /*with_bias=*/false);
}

Status BlasDenseBias(void*, const vm::Value* const* args, int32_t num_args, vm::Value*) {
  return Dense(kDenseBias, args, num_args, /*with_bias=*/true);
}

void RegisterBlasFunctions() {
  (void)vm::RegisterLibraryFunction(kMatmul, &BlasMatmul);
  (void)vm::RegisterLibraryFunction(kDense, &BlasDense);
  (void)vm::RegisterLibraryFunction(kDenseBias, &BlasDenseBias);
}

}  // namespace strata::kernels
