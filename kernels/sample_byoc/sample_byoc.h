/* A small "external library" for the BYOC tutorial (docs/byoc.md): the kind of
 * vendor library a hand-written C codegen calls: one fused function per composite
 * (dense+bias, dense+bias+relu).
 *
 * Plain C, row-major f32, no Strata types: it knows nothing about Strata. The
 * "ccodegen" backend (compiler/byoc/ccodegen/) generates C wrappers that check the
 * VM's tensors and call these, compiles them at compile time and links this
 * library (a static, position-independent archive) into the generated code, so
 * the executable needs nothing installed at run time.
 *
 * All functions compute, for x: [m, k], w: [n, k] (rows are output features, as
 * in `dense`), b: [n], y: [m, n]:
 *   sample_dense_bias:       y = x @ w^T + b
 *   sample_dense_bias_relu:  y = max(x @ w^T + b, 0)
 * y must not overlap the inputs. */
#ifndef STRATA_KERNELS_SAMPLE_BYOC_H_
#define STRATA_KERNELS_SAMPLE_BYOC_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void sample_dense_bias(const float* x, const float* w, const float* b, float* y, int64_t m, int64_t k, int64_t n);
void sample_dense_bias_relu(const float* x, const float* w, const float* b, float* y, int64_t m, int64_t k, int64_t n);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_KERNELS_SAMPLE_BYOC_H_ */
