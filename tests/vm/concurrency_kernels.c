/* Kernels for tests/vm/concurrency_test.cc, shaped like what the compiler emits
 * for a dynamic-shape layer: a shape function that reads and writes the shape
 * heap, and loops split with the runtime's parallel_for (abi/kernel_abi.h), one
 * of them with a parallel loop nested inside each chunk. Hand-written so that the
 * runtime-only build (no LLVM) can run them from many VMs at once.
 *
 * The module keeps no state of its own: every kernel may run on any number of
 * threads at once. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "abi/kernel_abi.h"

const StrataRuntimeApi* strata_runtime_api;
const uint32_t strata_kernel_abi_version = STRATA_KERNEL_ABI_VERSION;

static int IsF32Matrix(const DLTensor* t) {
  return t->ndim == 2 && t->dtype.code == kDLFloat && t->dtype.bits == 32 && t->dtype.lanes == 1;
}

static int AllTensors(const int32_t* type_codes, int32_t num_args) {
  for (int32_t i = 0; i < num_args; ++i) {
    if (type_codes[i] != STRATA_ARG_TENSOR) return 0;
  }
  return 1;
}

/* shape_func_matmul_bytes(heap: i64[5]): heap[3] = m * n * 4, the bytes of the
 * (m, n) f32 intermediate, from m = heap[0] and n = heap[2]. */
int32_t shape_func_matmul_bytes(const StrataKernelArg* args, const int32_t* type_codes, int32_t num_args) {
  if (num_args != 1 || type_codes[0] != STRATA_ARG_TENSOR || args[0].tensor->ndim != 1 ||
      args[0].tensor->shape[0] < 4) {
    strata_runtime_api->set_error("shape_func_matmul_bytes: expected the shape heap (i64[>= 4])");
    return 1;
  }
  int64_t* heap = (int64_t*)args[0].tensor->data;
  heap[3] = heap[0] * heap[2] * 4;
  return 0;
}

/* ---- parallel_matmul(A: f32[m, k], B: f32[k, n], C: f32[m, n]) ----
 * One parallel_for over the rows; each element is summed in double in order of
 * k, as the test's reference does. */
typedef struct {
  const float* a;
  const float* b;
  float* c;
  int64_t k, n;
} MatmulClosure;

static int32_t MatmulRows(int64_t begin, int64_t end, void* closure) {
  const MatmulClosure* m = (const MatmulClosure*)closure;
  for (int64_t i = begin; i < end; ++i) {
    for (int64_t j = 0; j < m->n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < m->k; ++p) sum += (double)m->a[i * m->k + p] * (double)m->b[p * m->n + j];
      m->c[i * m->n + j] = (float)sum;
    }
  }
  return 0;
}

int32_t parallel_matmul(const StrataKernelArg* args, const int32_t* type_codes, int32_t num_args) {
  if (num_args != 3 || !AllTensors(type_codes, num_args) || !IsF32Matrix(args[0].tensor) ||
      !IsF32Matrix(args[1].tensor) || !IsF32Matrix(args[2].tensor)) {
    strata_runtime_api->set_error("parallel_matmul: expected (f32[m, k], f32[k, n], f32[m, n])");
    return 1;
  }
  const DLTensor *a = args[0].tensor, *b = args[1].tensor, *c = args[2].tensor;
  if (a->shape[1] != b->shape[0] || c->shape[0] != a->shape[0] || c->shape[1] != b->shape[1]) {
    strata_runtime_api->set_error("parallel_matmul: shapes do not agree");
    return 2;
  }
  MatmulClosure closure = {(const float*)a->data, (const float*)b->data, (float*)c->data, a->shape[1], b->shape[1]};
  return strata_runtime_api->parallel_for(a->shape[0], MatmulRows, &closure);
}

/* ---- parallel_bias_relu(X: f32[m, n], bias: f32[n], Y: f32[m, n]) ----
 * Y = max(X + bias, 0). A parallel_for over the rows whose chunks each run a
 * parallel_for over the columns of their rows: the runtime runs that inner loop
 * serially on the chunk's thread. A NaN in X fails the chunk that meets it with
 * a message naming its row, which must reach the VM whose call it was. */
typedef struct {
  const float* x;
  const float* bias;
  float* y;
  int64_t n;
  int64_t row;
} RowClosure;

static int32_t BiasReluColumns(int64_t begin, int64_t end, void* closure) {
  const RowClosure* r = (const RowClosure*)closure;
  for (int64_t j = begin; j < end; ++j) {
    const float v = r->x[r->row * r->n + j];
    if (isnan(v)) {
      char message[96];
      snprintf(message, sizeof(message), "parallel_bias_relu: NaN in row %lld", (long long)r->row);
      strata_runtime_api->set_error(message);
      return 5;
    }
    const float sum = v + r->bias[j];
    r->y[r->row * r->n + j] = sum > 0.0f ? sum : 0.0f;
  }
  return 0;
}

static int32_t BiasReluRows(int64_t begin, int64_t end, void* closure) {
  const RowClosure* outer = (const RowClosure*)closure;
  for (int64_t i = begin; i < end; ++i) {
    RowClosure row = *outer;
    row.row = i;
    const int32_t rc = strata_runtime_api->parallel_for(outer->n, BiasReluColumns, &row);
    if (rc != 0) return rc;
  }
  return 0;
}

int32_t parallel_bias_relu(const StrataKernelArg* args, const int32_t* type_codes, int32_t num_args) {
  if (num_args != 3 || !AllTensors(type_codes, num_args) || !IsF32Matrix(args[0].tensor) || args[1].tensor->ndim != 1 ||
      !IsF32Matrix(args[2].tensor)) {
    strata_runtime_api->set_error("parallel_bias_relu: expected (f32[m, n], f32[n], f32[m, n])");
    return 1;
  }
  const DLTensor *x = args[0].tensor, *bias = args[1].tensor, *y = args[2].tensor;
  if (bias->shape[0] != x->shape[1] || y->shape[0] != x->shape[0] || y->shape[1] != x->shape[1]) {
    strata_runtime_api->set_error("parallel_bias_relu: shapes do not agree");
    return 2;
  }
  RowClosure closure = {(const float*)x->data, (const float*)bias->data, (float*)y->data, x->shape[1], 0};
  return strata_runtime_api->parallel_for(x->shape[0], BiasReluRows, &closure);
}
