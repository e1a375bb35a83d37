// Argument checks shared by the library kernels (see tensor_args.h).
#include "kernels/tensor_args.h"

#include <cstdint>
#include <string>

namespace strata::kernels {

// Argument `index` as a CPU f32 tensor of rank >= min_rank (exactly `exact_rank` when >= 0).
Status GetF32(const char* fn, const vm::Value* const* args, int index, const char* param, int min_rank,
              int exact_rank, vm::Tensor** out_tensor) {
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

}  // namespace strata::kernels
