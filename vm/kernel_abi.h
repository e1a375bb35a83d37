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
