/* The sample external library of the BYOC tutorial (see sample_byoc.h). Simple
 * loops on purpose: it stands for someone else's library, not for fast code. */
#include "kernels/sample_byoc/sample_byoc.h"

static void dense_bias(const float* x, const float* w, const float* b, float* y, int64_t m, int64_t k, int64_t n,
                       int relu) {
  for (int64_t i = 0; i < m; ++i) {
    const float* row = x + i * k;
    for (int64_t j = 0; j < n; ++j) {
      const float* weights = w + j * k;
      float acc = 0.0f;
      for (int64_t p = 0; p < k; ++p) acc += row[p] * weights[p];
      acc += b[j];
      y[i * n + j] = relu && acc < 0.0f ? 0.0f : acc;
    }
  }
}

void sample_dense_bias(const float* x, const float* w, const float* b, float* y, int64_t m, int64_t k, int64_t n) {
  dense_bias(x, w, b, y, m, k, n, 0);
}

void sample_dense_bias_relu(const float* x, const float* w, const float* b, float* y, int64_t m, int64_t k, int64_t n) {
  dense_bias(x, w, b, y, m, k, n, 1);
}
