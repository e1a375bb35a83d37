// Argument checks shared by the library kernels (see tensor_args.h).
#include "kernels/tensor_args.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace strata::kernels {

// Argument `index` as a CPU f32 tensor of rank >= min_rank (exactly `exact_rank` when >= 0).
Status GetF32(const char* fn, const vm::Value* const* args, int index, const char* param, int min_rank, int exact_rank,
              vm::Tensor** out_tensor) {
  const vm::Value& v = *args[index];
  auto rank_text = [&] {
    return exact_rank >= 0 ? "of rank " + std::to_string(exact_rank) : "of rank >= " + std::to_string(min_rank);
  };
  if (!v.is_tensor()) {
    return Status(ErrorStatus() << fn << ": argument " << param << " must be a f32 tensor " << rank_text() << ", got "
                                << v.Describe());
  }
  vm::Tensor* t = v.tensor();
  if (t->dtype() != DataType::F32() || t->ndim() < min_rank || (exact_rank >= 0 && t->ndim() != exact_rank)) {
    return Status(ErrorStatus() << fn << ": argument " << param << " must be a f32 tensor " << rank_text() << ", got "
                                << t->TypeString());
  }
  if (t->device().device_type != kDLCPU) {
    return Status(ErrorStatus() << fn << ": argument " << param << " must be on the CPU, got " << t->TypeString());
  }
  *out_tensor = t;
  return Status::Ok();
}

bool Overlaps(const vm::Tensor* x, const vm::Tensor* y) {
  auto x0 = reinterpret_cast<uintptr_t>(x->data()), y0 = reinterpret_cast<uintptr_t>(y->data());
  return x->num_bytes() > 0 && y->num_bytes() > 0 && x0 < y0 + static_cast<uintptr_t>(y->num_bytes()) &&
         y0 < x0 + static_cast<uintptr_t>(x->num_bytes());
}

// Null inputs (an absent bias) are skipped.
Status CheckOutput(const char* fn, const char* name, const vm::Tensor* out,
                   std::initializer_list<const vm::Tensor*> inputs, const char* input_names) {
  if (out->read_only()) return Status(ErrorStatus() << fn << ": output " << name << " is a read-only constant");
  for (const vm::Tensor* in : inputs) {
    if (in != nullptr && Overlaps(out, in)) {
      return Status(ErrorStatus() << fn << ": output " << name << " must not overlap the inputs " << input_names);
    }
  }
  return Status::Ok();
}

int64_t Product(std::span<const int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims) p *= d;
  return p;
}

Status GetDenseArgs(const char* fn, const vm::Value* const* args, int32_t num_args, bool with_bias,
                    const char* bias_name, const char* out_name, DenseArgs* d) {
  const int32_t expected = with_bias ? 4 : 3;
  const std::string names = std::string("X, W, ") + (with_bias ? std::string(bias_name) + ", " : "") + out_name;
  STRATA_RETURN_IF_ERROR(CheckArgCount(fn, num_args, expected, names.c_str()));
  STRATA_RETURN_IF_ERROR(GetF32(fn, args, 0, "X", 1, -1, &d->x));
  STRATA_RETURN_IF_ERROR(GetF32(fn, args, 1, "W", 2, 2, &d->w));
  if (with_bias) STRATA_RETURN_IF_ERROR(GetF32(fn, args, 2, bias_name, 1, 1, &d->bias));
  STRATA_RETURN_IF_ERROR(GetF32(fn, args, expected - 1, out_name, 1, -1, &d->out));
  const vm::Tensor *x = d->x, *w = d->w, *bias = d->bias, *out = d->out;
  d->k = x->shape().back();
  d->n = w->shape()[0];
  if (w->shape()[1] != d->k) {
    return Status(ErrorStatus() << fn << ": X " << vm::ShapeToString(x->shape()) << " has " << d->k
                                << " features but W " << vm::ShapeToString(w->shape()) << " expects " << w->shape()[1]);
  }
  if (bias != nullptr && bias->shape()[0] != d->n) {
    return Status(ErrorStatus() << fn << ": " << bias_name << " is " << vm::ShapeToString(bias->shape())
                                << ", expected (" << d->n << ",)");
  }
  const auto batch = x->shape().first(x->shape().size() - 1);
  const bool out_ok = out->ndim() == x->ndim() && out->shape().back() == d->n &&
                      std::equal(batch.begin(), batch.end(), out->shape().begin());
  if (!out_ok) {
    return Status(ErrorStatus() << fn << ": output " << out_name << " is " << vm::ShapeToString(out->shape())
                                << ", expected X's " << vm::ShapeToString(x->shape()) << " with the last dimension "
                                << d->n);
  }
  const std::string inputs = std::string(with_bias ? "X, W and " : "X and W") + (with_bias ? bias_name : "");
  STRATA_RETURN_IF_ERROR(CheckOutput(fn, out_name, out, {x, w, bias}, inputs.c_str()));
  d->m = Product(batch);
  return Status::Ok();
}

Status GetMatmulArgs(const char* fn, const vm::Value* const* args, int32_t num_args, MatmulArgs* mm) {
  STRATA_RETURN_IF_ERROR(CheckArgCount(fn, num_args, 3, "A, B, C"));
  STRATA_RETURN_IF_ERROR(GetF32(fn, args, 0, "A", 2, -1, &mm->a));
  STRATA_RETURN_IF_ERROR(GetF32(fn, args, 1, "B", 2, -1, &mm->b));
  STRATA_RETURN_IF_ERROR(GetF32(fn, args, 2, "C", 2, -1, &mm->c));
  const auto a = mm->a->shape(), b = mm->b->shape();
  const size_t ra = a.size(), rb = b.size();
  mm->m = a[ra - 2];
  mm->k = a[ra - 1];
  mm->n = b[rb - 1];
  if (b[rb - 2] != mm->k) {
    return Status(ErrorStatus() << fn << ": inner dimensions differ: A is " << vm::ShapeToString(a) << " and B is "
                                << vm::ShapeToString(b) << " (A dimension " << ra - 1 << " = " << mm->k
                                << ", B dimension " << rb - 2 << " = " << b[rb - 2] << ")");
  }
  return Status::Ok();
}

Status CheckMatmulOutput(const char* fn, const MatmulArgs& mm, std::span<const int64_t> batch) {
  const vm::Tensor *a = mm.a, *b = mm.b, *c = mm.c;
  const size_t ra = a->shape().size();
  const bool c_ok = c->shape().size() == ra && c->shape()[ra - 2] == mm.m && c->shape()[ra - 1] == mm.n &&
                    std::equal(batch.begin(), batch.end(), c->shape().begin());
  if (!c_ok) {
    std::vector<int64_t> want(batch.begin(), batch.end());
    want.push_back(mm.m);
    want.push_back(mm.n);
    return Status(ErrorStatus() << fn << ": output C is " << vm::ShapeToString(c->shape()) << ", expected "
                                << vm::ShapeToString(want) << " for A " << vm::ShapeToString(a->shape()) << " and B "
                                << vm::ShapeToString(b->shape()));
  }
  return CheckOutput(fn, "C", c, {a, b}, "A and B");
}

}  // namespace strata::kernels
