/* The C ABI between compiled tensor programs and the runtime.
 *
 * Compiled kernels (LLVM output, packaged as a shared object inside the
 * executable) and the runtime agree only on this header. A kernel never calls
 * into the runtime by symbol name: the loader hands each module a table of
 * function pointers, so kernel modules link against nothing of Strata's and the
 * runtime needs no exported symbols.
 *
 * Kernel calling convention: every tensor program compiles to
 *     int32_t kernel(const StrataKernelArg* args, const int32_t* type_codes,
 *                    int32_t num_args);
 * with one argument per parameter of the tensor program, in order: a buffer
 * parameter takes `tensor` (a compact row-major DLTensor on the CPU), a scalar
 * parameter takes `i64` or `f64`, and type_codes[i] says which member of
 * args[i] is set (STRATA_ARG_*). The kernel checks num_args and every type code
 * before it reads a slot, so a caller that passes an int where a tensor belongs
 * gets an error, not a dereferenced integer. It then checks each tensor's ndim,
 * dtype and strides, and that every shape dimension agrees with the symbolic
 * variables it binds; on any mismatch it calls set_error with a message naming
 * the kernel, the parameter and the dimension, and returns non-zero.
 * It returns 0 on success.
 */
#ifndef STRATA_VM_KERNEL_ABI_H_
#define STRATA_VM_KERNEL_ABI_H_

#include <stdint.h>

#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever anything in this header changes incompatibly. */
#define STRATA_KERNEL_ABI_VERSION 2

typedef union StrataKernelArg {
  DLTensor* tensor;
  int64_t i64;
  double f64;
} StrataKernelArg;

/* Type codes: which member of a StrataKernelArg the caller set. A float scalar
 * parameter also accepts STRATA_ARG_INT (converted); nothing else converts. */
#define STRATA_ARG_TENSOR 1
#define STRATA_ARG_INT 2
#define STRATA_ARG_FLOAT 3

typedef int32_t (*StrataKernelFn)(const StrataKernelArg* args, const int32_t* type_codes, int32_t num_args);

/* The VM entry: a second entry point of a kernel, named <symbol>__vm, that the
 * VM calls with its own registers instead of a StrataKernelArg array, so a call
 * through the VM builds no argument array and checks each operand once:
 *     int32_t kernel__vm(const void* registers, const int64_t* operands,
 *                        int32_t num_operands);
 * operands[i] is the i-th operand of the VM's Call instruction, pre-decoded: a
 * word >= 0 is the index of a register (registers + word *
 * STRATA_VM_VALUE_SIZE); a word with STRATA_VM_OPERAND_VALUE_TAG set is the
 * address of a Value, tag cleared. The entry reads each Value's kind byte and
 * payload word (the layout below) and, when every operand is what the
 * parameter takes in the common form (a tensor on the CPU for a buffer, an Int
 * for an int, an Int or Float for a float) and their count is the parameter
 * count, behaves exactly as the main entry would with the same arguments:
 * same checks, same error messages, same result. Otherwise it returns
 * STRATA_VM_ENTRY_FALLBACK before reading anything else, and the VM makes the
 * call through the main entry, which reports or handles the unusual operand
 * (a Shape expands to one int per dimension).
 *
 * The entry is optional. The loader uses it only when the module defines
 * strata_vm_value_layout = STRATA_VM_VALUE_LAYOUT_VERSION, the layout the
 * runtime has; a module without it, or built for another layout, is called
 * through the main entry, so changing the layout never breaks an executable. */
typedef int32_t (*StrataVmKernelFn)(const void* registers, const int64_t* operands, int32_t num_operands);

#define STRATA_VM_ENTRY_SUFFIX "__vm"
#define STRATA_VM_ENTRY_FALLBACK (-1) /* never returned by a main entry */
#define STRATA_VM_VALUE_LAYOUT_SYMBOL "strata_vm_value_layout"

/* Bumped whenever anything in the layout below changes. */
#define STRATA_VM_VALUE_LAYOUT_VERSION 1
/* vm::Value: 16 bytes; an 8-byte payload at offset 0 (int64, double or object
 * pointer), the ValueKind byte at offset 8. */
#define STRATA_VM_VALUE_SIZE 16
#define STRATA_VM_VALUE_PAYLOAD_OFFSET 0
#define STRATA_VM_VALUE_KIND_OFFSET 8
#define STRATA_VM_VALUE_KIND_INT 1
#define STRATA_VM_VALUE_KIND_FLOAT 2
#define STRATA_VM_VALUE_KIND_TENSOR 5
/* A Tensor value's payload points at the tensor object; its DLTensor is at
 * this offset from there. */
#define STRATA_VM_TENSOR_DLTENSOR_OFFSET 16
/* The tag of an operand word that is a Value's address (vm::kDispatchValueTag). */
#define STRATA_VM_OPERAND_VALUE_TAG 0x8000000000000000ull

/* The Value an operand word denotes, and what a hand-written VM entry reads
 * from it (the generated ones do the same in LLVM IR). */
static inline const unsigned char* StrataVmOperandValue(const void* registers, int64_t word) {
  if (word >= 0) return (const unsigned char*)registers + word * STRATA_VM_VALUE_SIZE;
  return (const unsigned char*)(uintptr_t)((uint64_t)word & ~STRATA_VM_OPERAND_VALUE_TAG);
}
static inline int StrataVmValueKind(const unsigned char* value) { return value[STRATA_VM_VALUE_KIND_OFFSET]; }
/* The payload word: an Int's int64, a Float's double bits. */
static inline int64_t StrataVmValuePayload(const unsigned char* value) {
  return *(const int64_t*)(value + STRATA_VM_VALUE_PAYLOAD_OFFSET);
}
/* The DLTensor of a Value that holds a tensor on the CPU, else NULL. */
static inline DLTensor* StrataVmCpuTensor(const unsigned char* value) {
  if (StrataVmValueKind(value) != STRATA_VM_VALUE_KIND_TENSOR) return 0;
  unsigned char* object = *(unsigned char* const*)(value + STRATA_VM_VALUE_PAYLOAD_OFFSET);
  DLTensor* tensor = (DLTensor*)(object + STRATA_VM_TENSOR_DLTENSOR_OFFSET);
  return tensor->device.device_type == kDLCPU ? tensor : 0;
}

/* One chunk of a parallel loop: iterations [begin, end). Returns 0 or an error. */
typedef int32_t (*StrataParallelBody)(int64_t begin, int64_t end, void* closure);

typedef struct StrataRuntimeApi {
  uint32_t abi_version; /* STRATA_KERNEL_ABI_VERSION of the runtime */
  /* Runs body over [0, n) in chunks on the runtime thread pool, the calling
   * thread included, and returns when all chunks are done: 0, or the first
   * non-zero a chunk returned. Nested calls run serially on the caller. */
  int32_t (*parallel_for)(int64_t n, StrataParallelBody body, void* closure);
  /* Records the error message of the current kernel call (copied). */
  void (*set_error)(const char* message);
  /* Scratch memory for local buffers too large for the stack; never NULL for
   * bytes <= 2^40 unless the system is out of memory (then set_error + NULL). */
  void* (*alloc_workspace)(int64_t bytes);
  void (*free_workspace)(void* ptr);
} StrataRuntimeApi;

/* Every kernel module defines these two symbols:
 *   const StrataRuntimeApi* strata_runtime_api;   set by the loader before use
 *   const uint32_t strata_kernel_abi_version;     = STRATA_KERNEL_ABI_VERSION  */
#define STRATA_RUNTIME_API_SYMBOL "strata_runtime_api"
#define STRATA_ABI_VERSION_SYMBOL "strata_kernel_abi_version"

#ifdef __cplusplus
}
#endif

#endif /* STRATA_VM_KERNEL_ABI_H_ */
