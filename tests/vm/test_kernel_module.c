/* A hand-written kernel module for the VM tests: the shapes of the ABI in
 * abi/kernel_abi.h without any compiler. Built as a shared object whose bytes the
 * tests embed in an executable's native_modules.
 *
 * It is built twice: once for the runtime's VM value layout, so that the VM
 * calls the VM entries below (kernel_abi.h), and once with
 * STRATA_TEST_VM_LAYOUT_VERSION naming another layout, whose VM entries the
 * loader must ignore. */
#include <stdint.h>

#include "abi/kernel_abi.h"

const StrataRuntimeApi* strata_runtime_api;
const uint32_t strata_kernel_abi_version = STRATA_KERNEL_ABI_VERSION;
#ifndef STRATA_TEST_VM_LAYOUT_VERSION
#define STRATA_TEST_VM_LAYOUT_VERSION STRATA_VM_VALUE_LAYOUT_VERSION
#endif
const uint32_t strata_vm_value_layout = STRATA_TEST_VM_LAYOUT_VERSION;

/* How many calls the VM entries below have taken (vm_entry_calls reports it). */
static int64_t g_vm_entry_calls;

static int64_t NumElements(const DLTensor* t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; ++i) n *= t->shape[i];
  return n;
}

/* add_scalar(in: f32[n...], s: f64, out: f32[n...]): out = in + s */
int32_t add_scalar(const StrataKernelArg* args, const int32_t* type_codes, int32_t num_args) {
  if (num_args != 3) {
    strata_runtime_api->set_error("add_scalar: expected 3 arguments");
    return 1;
  }
  if (type_codes[0] != STRATA_ARG_TENSOR || type_codes[1] != STRATA_ARG_FLOAT || type_codes[2] != STRATA_ARG_TENSOR) {
    strata_runtime_api->set_error("add_scalar: expected (tensor, float, tensor)");
    return 3;
  }
  const DLTensor* in = args[0].tensor;
  DLTensor* out = args[2].tensor;
  if (NumElements(in) != NumElements(out)) {
    strata_runtime_api->set_error("add_scalar: parameter 'out' has a different size than 'in'");
    return 2;
  }
  const float* x = (const float*)in->data;
  float* y = (float*)out->data;
  for (int64_t i = 0; i < NumElements(in); ++i) y[i] = x[i] + (float)args[1].f64;
  return 0;
}

/* record_i64(v0, v1, ..., out: i64[k]): out[i] = v_i (shapes arrive as one i64 per dimension) */
int32_t record_i64(const StrataKernelArg* args, const int32_t* type_codes, int32_t num_args) {
  if (num_args < 1 || type_codes[num_args - 1] != STRATA_ARG_TENSOR) {
    strata_runtime_api->set_error("record_i64: the last argument must be a tensor");
    return 2;
  }
  for (int32_t i = 0; i < num_args - 1; ++i) {
    if (type_codes[i] != STRATA_ARG_INT) {
      strata_runtime_api->set_error("record_i64: every argument but the last must be an int");
      return 3;
    }
  }
  DLTensor* out = args[num_args - 1].tensor;
  if (NumElements(out) != num_args - 1) {
    strata_runtime_api->set_error("record_i64: parameter 'out' has the wrong size");
    return 1;
  }
  int64_t* y = (int64_t*)out->data;
  for (int32_t i = 0; i < num_args - 1; ++i) y[i] = args[i].i64;
  return 0;
}

/* always_fails(): reports an error like a shape check in generated code would. */
int32_t always_fails(const StrataKernelArg* args, const int32_t* type_codes, int32_t num_args) {
  (void)args;
  (void)type_codes;
  (void)num_args;
  strata_runtime_api->set_error("always_fails: parameter 'x' dimension 0 expected 4, got 5");
  return 1;
}

/* silent_failure(): fails without a message. */
int32_t silent_failure(const StrataKernelArg* args, const int32_t* type_codes, int32_t num_args) {
  (void)args;
  (void)type_codes;
  (void)num_args;
  return 7;
}

/* scale(in: f32[n...], s: int or float, out: f32[n...]): out = in * s. The
 * scalar may come either way (the VM writes the code of what the register holds). */
int32_t scale(const StrataKernelArg* args, const int32_t* type_codes, int32_t num_args) {
  if (num_args != 3 || type_codes[0] != STRATA_ARG_TENSOR || type_codes[2] != STRATA_ARG_TENSOR ||
      (type_codes[1] != STRATA_ARG_INT && type_codes[1] != STRATA_ARG_FLOAT)) {
    strata_runtime_api->set_error("scale: expected (tensor, int or float, tensor)");
    return 1;
  }
  const DLTensor* in = args[0].tensor;
  DLTensor* out = args[2].tensor;
  if (NumElements(in) != NumElements(out)) {
    strata_runtime_api->set_error("scale: parameter 'out' has a different size than 'in'");
    return 2;
  }
  const float s = type_codes[1] == STRATA_ARG_INT ? (float)args[1].i64 : (float)args[1].f64;
  const float* x = (const float*)in->data;
  float* y = (float*)out->data;
  for (int64_t i = 0; i < NumElements(in); ++i) y[i] = x[i] * s;
  return 0;
}

/* add_tensors(a: f32[n...], b: f32[n...], out: f32[n...]): out = a + b, tensors only. */
int32_t add_tensors(const StrataKernelArg* args, const int32_t* type_codes, int32_t num_args) {
  if (num_args != 3 || type_codes[0] != STRATA_ARG_TENSOR || type_codes[1] != STRATA_ARG_TENSOR ||
      type_codes[2] != STRATA_ARG_TENSOR) {
    strata_runtime_api->set_error("add_tensors: expected (tensor, tensor, tensor)");
    return 1;
  }
  const DLTensor* a = args[0].tensor;
  const DLTensor* b = args[1].tensor;
  DLTensor* out = args[2].tensor;
  if (NumElements(a) != NumElements(out) || NumElements(b) != NumElements(out)) {
    strata_runtime_api->set_error("add_tensors: the three tensors differ in size");
    return 2;
  }
  const float* x = (const float*)a->data;
  const float* z = (const float*)b->data;
  float* y = (float*)out->data;
  for (int64_t i = 0; i < NumElements(out); ++i) y[i] = x[i] + z[i];
  return 0;
}

/* ---- VM entries (kernel_abi.h) ------------------------------------------- */

/* add_scalar's VM entry: (CPU tensor, Float, CPU tensor), anything else falls back. */
int32_t add_scalar__vm(const void* registers, const int64_t* operands, int32_t num_operands) {
  if (num_operands != 3) return STRATA_VM_ENTRY_FALLBACK;
  StrataKernelArg args[3];
  const unsigned char* s = StrataVmOperandValue(registers, operands[1]);
  args[0].tensor = StrataVmCpuTensor(StrataVmOperandValue(registers, operands[0]));
  args[2].tensor = StrataVmCpuTensor(StrataVmOperandValue(registers, operands[2]));
  if (args[0].tensor == 0 || args[2].tensor == 0 || StrataVmValueKind(s) != STRATA_VM_VALUE_KIND_FLOAT) {
    return STRATA_VM_ENTRY_FALLBACK;
  }
  args[1].i64 = StrataVmValuePayload(s);
  ++g_vm_entry_calls;
  const int32_t codes[3] = {STRATA_ARG_TENSOR, STRATA_ARG_FLOAT, STRATA_ARG_TENSOR};
  return add_scalar(args, codes, 3);
}

int32_t always_fails__vm(const void* registers, const int64_t* operands, int32_t num_operands) {
  (void)registers;
  (void)operands;
  (void)num_operands;
  ++g_vm_entry_calls;
  return always_fails(0, 0, 0);
}

int32_t silent_failure__vm(const void* registers, const int64_t* operands, int32_t num_operands) {
  (void)registers;
  (void)operands;
  (void)num_operands;
  ++g_vm_entry_calls;
  return silent_failure(0, 0, 0);
}

/* vm_entry_calls(out: i64[1]): out[0] = the calls the VM entries have taken. */
int32_t vm_entry_calls(const StrataKernelArg* args, const int32_t* type_codes, int32_t num_args) {
  if (num_args != 1 || type_codes[0] != STRATA_ARG_TENSOR || NumElements(args[0].tensor) != 1) {
    strata_runtime_api->set_error("vm_entry_calls: expected one 1-element i64 tensor");
    return 1;
  }
  *(int64_t*)args[0].tensor->data = g_vm_entry_calls;
  return 0;
}
