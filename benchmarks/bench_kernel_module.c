/* The compiled kernel of benchmarks/vm_dispatch's kernel chain, written by hand
 * so that the benchmark needs no compiler: add_one(A: f32[1], B: f32[1]),
 * B[0] = A[0] + 1, behind the kernel ABI of abi/kernel_abi.h with the checks the
 * compiler's generated entry makes (compiler/codegen/llvm/kernel_entry.cc):
 * argument count, every type code, then for each tensor non-NULL, CPU, ndim,
 * dtype, compact strides and every dimension; and its VM entry add_one__vm as the
 * compiler generates it (compiler/codegen/llvm/vm_entry.cc): operands read from
 * the VM's registers, then the same checks. Built as a shared object whose
 * bytes the benchmark embeds in an executable's native_modules. */
#include <stdint.h>

#include "abi/kernel_abi.h"

const StrataRuntimeApi* strata_runtime_api;
const uint32_t strata_kernel_abi_version = STRATA_KERNEL_ABI_VERSION;
const uint32_t strata_vm_value_layout = STRATA_VM_VALUE_LAYOUT_VERSION;

static int32_t Fail(const char* message) {
  strata_runtime_api->set_error(message);
  return 1;
}

/* A CPU f32 tensor of shape (1,) with compact strides, or the reason it is not. */
static const char* CheckOneElementF32(const DLTensor* t) {
  if (t == 0) return "add_one: expected a tensor, got NULL";
  if (t->device.device_type != kDLCPU) return "add_one: expected a CPU tensor";
  if (t->ndim != 1) return "add_one: expected ndim 1";
  if (t->dtype.code != kDLFloat || t->dtype.bits != 32 || t->dtype.lanes != 1) return "add_one: expected dtype f32";
  if (t->strides != 0 && t->shape[0] != 1 && t->strides[0] != 1) return "add_one: expected compact strides";
  if (t->shape[0] != 1) return "add_one: dimension 0 expected 1";
  return 0;
}

/* Both entries' body: static, so the VM entry inlines it (a call to the
 * exported add_one would go through the PLT, as generated code's does not). */
static inline int32_t AddOne(const StrataKernelArg* args, const int32_t* type_codes, int32_t num_args) {
  if (num_args != 2) return Fail("add_one: expected 2 arguments");
  if (type_codes[0] != STRATA_ARG_TENSOR || type_codes[1] != STRATA_ARG_TENSOR) {
    return Fail("add_one: expected (tensor, tensor)");
  }
  const DLTensor* in = args[0].tensor;
  DLTensor* out = args[1].tensor;
  const char* error = CheckOneElementF32(in);
  if (error == 0) error = CheckOneElementF32(out);
  if (error != 0) return Fail(error);
  const float* x = (const float*)((const char*)in->data + in->byte_offset);
  float* y = (float*)((char*)out->data + out->byte_offset);
  y[0] = x[0] + 1.0f;
  return 0;
}

int32_t add_one(const StrataKernelArg* args, const int32_t* type_codes, int32_t num_args) {
  return AddOne(args, type_codes, num_args);
}

int32_t add_one__vm(const void* registers, const int64_t* operands, int32_t num_operands) {
  if (num_operands != 2) return STRATA_VM_ENTRY_FALLBACK;
  StrataKernelArg args[2];
  args[0].tensor = StrataVmCpuTensor(StrataVmOperandValue(registers, operands[0]));
  args[1].tensor = StrataVmCpuTensor(StrataVmOperandValue(registers, operands[1]));
  if (args[0].tensor == 0 || args[1].tensor == 0) return STRATA_VM_ENTRY_FALLBACK;
  static const int32_t kCodes[2] = {STRATA_ARG_TENSOR, STRATA_ARG_TENSOR};
  return AddOne(args, kCodes, 2);
}
