// strata.blas.*: single-precision GEMM through OpenBLAS's cblas_sgemm (see blas.h).
#include "kernels/blas.h"

#include <algorithm>
#include <cblas.h>
#include <climits>
#include <cstring>
#include <mutex>
#include <span>

#include "kernels/tensor_args.h"
#include "vm/kernel_threads.h"
#include "vm/registry.h"

namespace strata::kernels {
namespace {

constexpr const char* kMatmul = "strata.blas.matmul";
constexpr const char* kDense = "strata.blas.dense";
constexpr const char* kDenseBias = "strata.blas.dense_bias";

// BLAS takes 32-bit sizes.
Status CheckBlasSize(const char* fn, std::initializer_list<int64_t> sizes) {
  for (int64_t s : sizes) {
    if (s > INT_MAX)
      return Status(ErrorStatus() << fn << ": a matrix dimension of " << s << " does not fit BLAS's 32 bits");
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
  // OpenBLAS's own threads, as many as the VM's pool has (--threads): more
  // would compete with the pool's workers for the same cores.
  static std::once_flag threads_set;
  std::call_once(threads_set, [] { openblas_set_num_threads(vm::KernelThreadCount()); });
  cblas_sgemm(CblasRowMajor, CblasNoTrans, transpose_b ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), 1.0f, a, static_cast<int>(k), b,
              static_cast<int>(transpose_b ? k : n), beta, c, static_cast<int>(n));
}

// Dense with an optional bias: C[..., n] = X[..., k] @ W[n, k]^T (+ bias[n]).
Status Dense(const char* fn, const vm::Value* const* args, int32_t num_args, bool with_bias) {
  DenseArgs d;
  STRATA_RETURN_IF_ERROR(GetDenseArgs(fn, args, num_args, with_bias, "bias", "C", &d));
  vm::Tensor *x = d.x, *w = d.w, *bias = d.bias, *c = d.out;
  const int64_t m = d.m, n = d.n, k = d.k;
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
  MatmulArgs mm;
  STRATA_RETURN_IF_ERROR(GetMatmulArgs(kMatmul, args, num_args, &mm));
  vm::Tensor *a = mm.a, *b = mm.b, *c = mm.c;
  const size_t ra = a->shape().size(), rb = b->shape().size();
  const int64_t m = mm.m, k = mm.k, n = mm.n;
  const auto batch = a->shape().first(ra - 2);
  if (rb > 2 && !std::equal(batch.begin(), batch.end(), b->shape().begin(), b->shape().end() - 2)) {
    return Status(ErrorStatus() << kMatmul << ": batch dimensions differ: A is " << vm::ShapeToString(a->shape())
                                << " and B is " << vm::ShapeToString(b->shape())
                                << " (a batched B must have exactly A's batch dimensions)");
  }
  STRATA_RETURN_IF_ERROR(CheckMatmulOutput(kMatmul, mm, batch));
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

namespace {
// Linking strata_kernels (whole-archive, as strata_runtime does) registers them.
[[maybe_unused]] const bool kRegisteredAtStartup = (RegisterBlasFunctions(), true);
}  // namespace

}  // namespace strata::kernels
