// strata.blas.matmul: single-precision GEMM through OpenBLAS's cblas_sgemm.
#include "kernels/blas.h"

#include <cblas.h>

#include <climits>
#include <cstring>

#include "vm/registry.h"

namespace strata::kernels {
namespace {

constexpr const char* kMatmul = "strata.blas.matmul";

Status GetMatrix(const vm::Value* const* args, int index, const char* param, vm::Tensor** out_tensor) {
  const vm::Value& v = *args[index];
  if (!v.is_tensor()) {
    return Status(ErrorStatus() << kMatmul << ": argument " << param << " must be a f32 tensor of rank 2, got "
                         << v.Describe());
  }
  vm::Tensor* t = v.tensor();
  if (t->dtype() != DataType::F32() || t->ndim() != 2) {
    return Status(ErrorStatus() << kMatmul << ": argument " << param << " must be a f32 tensor of rank 2, got "
                         << t->TypeString());
  }
  if (t->device().device_type != kDLCPU) {
    return Status(ErrorStatus() << kMatmul << ": argument " << param << " must be on the CPU, got " << t->TypeString());
  }
  for (int64_t d : t->shape()) {
    if (d > INT_MAX) {
      return Status(ErrorStatus() << kMatmul << ": argument " << param << " " << t->TypeString()
                           << " is too large for BLAS (dimensions must fit in 32 bits)");
    }
  }
  *out_tensor = t;
  return Status::Ok();
}

}  // namespace

Status BlasMatmul(void*, const vm::Value* const* args, int32_t num_args, vm::Value*) {
  if (num_args != 3) {
    return Status(ErrorStatus() << kMatmul << " expects 3 arguments (A, B, C), got " << num_args);
  }
  vm::Tensor *a, *b, *c;
  STRATA_RETURN_IF_ERROR(GetMatrix(args, 0, "A", &a));
  STRATA_RETURN_IF_ERROR(GetMatrix(args, 1, "B", &b));
  STRATA_RETURN_IF_ERROR(GetMatrix(args, 2, "C", &c));
  const int64_t m = a->shape()[0], k = a->shape()[1], n = b->shape()[1];
  if (b->shape()[0] != k) {
    return Status(ErrorStatus() << kMatmul << ": inner dimensions differ: A is " << vm::ShapeToString(a->shape())
                         << " and B is " << vm::ShapeToString(b->shape()) << " (A dimension 1 = " << k
                         << ", B dimension 0 = " << b->shape()[0] << ")");
  }
  if (c->shape()[0] != m || c->shape()[1] != n) {
    return Status(ErrorStatus() << kMatmul << ": output C is " << vm::ShapeToString(c->shape()) << ", expected (" << m
                         << ", " << n << ") for A " << vm::ShapeToString(a->shape()) << " and B "
                         << vm::ShapeToString(b->shape()));
  }
  if (c->read_only()) return Status(ErrorStatus() << kMatmul << ": output C is a read-only constant");
  auto overlaps = [](const vm::Tensor* x, const vm::Tensor* y) {
    auto x0 = reinterpret_cast<uintptr_t>(x->data()), y0 = reinterpret_cast<uintptr_t>(y->data());
    return x->num_bytes() > 0 && y->num_bytes() > 0 && x0 < y0 + static_cast<uintptr_t>(y->num_bytes()) &&
           y0 < x0 + static_cast<uintptr_t>(x->num_bytes());
  };
  if (overlaps(c, a) || overlaps(c, b)) {
    return Status(ErrorStatus() << kMatmul << ": output C must not overlap the inputs A and B");
  }
  if (m == 0 || n == 0) return Status::Ok();
  if (k == 0) {
    std::memset(c->data(), 0, static_cast<size_t>(c->num_bytes()));
    return Status::Ok();
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), 1.0f, a->data_as<const float>(), static_cast<int>(k), b->data_as<const float>(),
              static_cast<int>(n), 0.0f, c->data_as<float>(), static_cast<int>(n));
  return Status::Ok();
}

void RegisterBlasFunctions() { (void)vm::RegisterLibraryFunction(kMatmul, &BlasMatmul); }

}  // namespace strata::kernels
