#include "train/kernels.h"

namespace braid::train {

namespace {

// The same kernels built for AVX2 with FMA; used only when the CPU has both.
__attribute__((target("avx2,fma"))) void matmulAvx2(const float* x, const float* w,
                                                    const float* b, float* y, size_t n, size_t in,
                                                    size_t out) {
  matmulRows(x, w, b, y, n, in, out);
}

__attribute__((target("avx2,fma"))) void matmulBackwardAvx2(const float* x, const float* w,
                                                            const float* dy, float* dx, float* dw,
                                                            float* db, size_t n, size_t in,
                                                            size_t out) {
  matmulBackwardRows(x, w, dy, dx, dw, db, n, in, out);
}

const bool kHaveAvx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");

}  // namespace

void matmul(const float* x, const float* w, const float* b, float* y, size_t n, size_t in,
            size_t out) {
  if (kHaveAvx2) {
    matmulAvx2(x, w, b, y, n, in, out);
  } else {
    matmulRows(x, w, b, y, n, in, out);
  }
}

void matmulBackward(const float* x, const float* w, const float* dy, float* dx, float* dw,
                    float* db, size_t n, size_t in, size_t out) {
  if (kHaveAvx2) {
    matmulBackwardAvx2(x, w, dy, dx, dw, db, n, in, out);
  } else {
    matmulBackwardRows(x, w, dy, dx, dw, db, n, in, out);
  }
}

}  // namespace braid::train
