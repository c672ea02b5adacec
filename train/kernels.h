// Dense compute kernels of the GPT, forward and backward, for float (training)
// and double (gradient checks). Row-major throughout; a row's result never
// depends on how many rows are processed together, which is what makes expert
// dispatch and micro-batching exact. Inner loops run over contiguous memory so
// the compiler vectorises them. Stateless and thread-compatible.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

namespace braid::train {

// y[n][o] = sum_i x[n][i] w[i][o]  (+ b[o] when b != nullptr). Overwrites y.
// Always inlined so that kernels.cc can build it for several instruction sets.
template <typename F>
[[gnu::always_inline]] inline void matmulRows(const F* x, const F* w, const F* b, F* y, size_t n,
                                              size_t in, size_t out) {
  for (size_t r = 0; r < n; ++r) {
    F* yr = y + r * out;
    for (size_t o = 0; o < out; ++o) yr[o] = b ? b[o] : F(0);
  }
  // Four rows share each pass over w; each row still sums over i in order,
  // so its result does not depend on its neighbours.
  size_t r = 0;
  for (; r + 4 <= n; r += 4) {
    const F* x0 = x + r * in;
    F* y0 = y + r * out;
    F* y1 = y0 + out;
    F* y2 = y1 + out;
    F* y3 = y2 + out;
    for (size_t i = 0; i < in; ++i) {
      const F a0 = x0[i], a1 = x0[in + i], a2 = x0[2 * in + i], a3 = x0[3 * in + i];
      const F* wi = w + i * out;
      for (size_t o = 0; o < out; ++o) {
        y0[o] += a0 * wi[o];
        y1[o] += a1 * wi[o];
        y2[o] += a2 * wi[o];
        y3[o] += a3 * wi[o];
      }
    }
  }
  for (; r < n; ++r) {
    const F* xr = x + r * in;
    F* yr = y + r * out;
    for (size_t i = 0; i < in; ++i) {
      const F xi = xr[i];
      const F* wi = w + i * out;
      for (size_t o = 0; o < out; ++o) yr[o] += xi * wi[o];
    }
  }
}

// Backward of matmul. dw[i][o] += sum_n x[n][i] dy[n][o]; db[o] += sum_n dy[n][o];
// dx[n][i] = sum_o dy[n][o] w[i][o] (overwritten; skipped when dx == nullptr).
// dx goes through a transposed copy of w so every inner loop is an axpy over
// contiguous memory (a dot product would not vectorise without reassociation).
template <typename F>
[[gnu::always_inline]] inline void matmulBackwardRows(const F* x, const F* w, const F* dy, F* dx,
                                                      F* dw, F* db, size_t n, size_t in,
                                                      size_t out) {
  thread_local std::vector<F> wt;
  if (dx) {
    wt.resize(in * out);
    for (size_t i = 0; i < in; ++i) {
      for (size_t o = 0; o < out; ++o) wt[o * in + i] = w[i * out + o];
    }
  }
  size_t r0 = 0;
  for (; r0 + 4 <= n; r0 += 4) {  // four rows per pass over dw
    const F* x0 = x + r0 * in;
    const F* d0 = dy + r0 * out;
    for (size_t i = 0; i < in; ++i) {
      const F a0 = x0[i], a1 = x0[in + i], a2 = x0[2 * in + i], a3 = x0[3 * in + i];
      F* dwi = dw + i * out;
      for (size_t o = 0; o < out; ++o) {
        dwi[o] += (a0 * d0[o] + a1 * d0[out + o]) + (a2 * d0[2 * out + o] + a3 * d0[3 * out + o]);
      }
    }
  }
  for (size_t r = 0; r < n; ++r) {
    const F* xr = x + r * in;
    const F* dyr = dy + r * out;
    for (size_t i = 0; r >= r0 && i < in; ++i) {
      const F xi = xr[i];
      F* dwi = dw + i * out;
      for (size_t o = 0; o < out; ++o) dwi[o] += xi * dyr[o];
    }
    if (db) {
      for (size_t o = 0; o < out; ++o) db[o] += dyr[o];
    }
    if (dx) {
      F* dxr = dx + r * in;
      for (size_t i = 0; i < in; ++i) dxr[i] = 0;
      for (size_t o = 0; o < out; ++o) {
        const F g = dyr[o];
        const F* wo = wt.data() + o * in;
        for (size_t i = 0; i < in; ++i) dxr[i] += g * wo[i];
      }
    }
  }
}

// float matmuls are built for AVX2+FMA and for the baseline, chosen by what the
// CPU has (kernels.cc); results are reproducible on one machine.
void matmul(const float* x, const float* w, const float* b, float* y, size_t n, size_t in,
            size_t out);
void matmulBackward(const float* x, const float* w, const float* dy, float* dx, float* dw,
                    float* db, size_t n, size_t in, size_t out);
inline void matmul(const double* x, const double* w, const double* b, double* y, size_t n,
                   size_t in, size_t out) {
  matmulRows(x, w, b, y, n, in, out);
}
inline void matmulBackward(const double* x, const double* w, const double* dy, double* dx,
                           double* dw, double* db, size_t n, size_t in, size_t out) {
  matmulBackwardRows(x, w, dy, dx, dw, db, n, in, out);
}

// LayerNorm over the last dimension d; keeps mean and 1/std per row for backward.
template <typename F>
void layerNorm(const F* x, const F* g, const F* b, F* y, F* mean, F* rstd, size_t n, size_t d) {
  for (size_t r = 0; r < n; ++r) {
    const F* xr = x + r * d;
    F m = 0;
    for (size_t i = 0; i < d; ++i) m += xr[i];
    m /= F(d);
    F v = 0;
    for (size_t i = 0; i < d; ++i) v += (xr[i] - m) * (xr[i] - m);
    v /= F(d);
    const F s = F(1) / std::sqrt(v + F(1e-5));
    mean[r] = m;
    rstd[r] = s;
    F* yr = y + r * d;
    for (size_t i = 0; i < d; ++i) yr[i] = (xr[i] - m) * s * g[i] + b[i];
  }
}

// dx is accumulated into (residual streams add their gradients).
template <typename F>
void layerNormBackward(const F* x, const F* g, const F* mean, const F* rstd, const F* dy, F* dx,
                       F* dg, F* db, size_t n, size_t d) {
  for (size_t r = 0; r < n; ++r) {
    const F* xr = x + r * d;
    const F* dyr = dy + r * d;
    const F m = mean[r];
    const F s = rstd[r];
    F sumD = 0;
    F sumDX = 0;
    for (size_t i = 0; i < d; ++i) {
      const F xh = (xr[i] - m) * s;
      const F dxh = dyr[i] * g[i];
      dg[i] += dyr[i] * xh;
      db[i] += dyr[i];
      sumD += dxh;
      sumDX += dxh * xh;
    }
    sumD /= F(d);
    sumDX /= F(d);
    F* dxr = dx + r * d;
    for (size_t i = 0; i < d; ++i) {
      const F xh = (xr[i] - m) * s;
      dxr[i] += s * (dyr[i] * g[i] - sumD - xh * sumDX);
    }
  }
}

// GELU, tanh approximation (GPT-2's).
template <typename F>
void gelu(const F* x, F* y, size_t n) {
  const F c = F(0.7978845608028654);
  for (size_t i = 0; i < n; ++i) {
    const F v = x[i];
    y[i] = F(0.5) * v * (F(1) + std::tanh(c * (v + F(0.044715) * v * v * v)));
  }
}

// dx[i] = dy[i] * gelu'(x[i]) (overwrites dx).
template <typename F>
void geluBackward(const F* x, const F* dy, F* dx, size_t n) {
  const F c = F(0.7978845608028654);
  for (size_t i = 0; i < n; ++i) {
    const F v = x[i];
    const F t = std::tanh(c * (v + F(0.044715) * v * v * v));
    const F dt = (F(1) - t * t) * c * (F(1) + F(3 * 0.044715) * v * v);
    dx[i] = dy[i] * (F(0.5) * (F(1) + t) + F(0.5) * v * dt);
  }
}

// Causal attention over heads h (local heads of width hd). q, k, v, ctx: [b*t][h*hd];
// probs: [b][h][t][t] (lower triangle used).
template <typename F>
void attention(const F* q, const F* k, const F* v, F* probs, F* ctx, size_t b, size_t t,
               size_t h, size_t hd) {
  const size_t w = h * hd;
  const F scale = F(1) / std::sqrt(F(hd));
  for (size_t s = 0; s < b; ++s) {
    for (size_t hh = 0; hh < h; ++hh) {
      F* p = probs + (s * h + hh) * t * t;
      for (size_t i = 0; i < t; ++i) {
        const F* qi = q + (s * t + i) * w + hh * hd;
        F* pi = p + i * t;
        F mx = -INFINITY;
        for (size_t j = 0; j <= i; ++j) {
          const F* kj = k + (s * t + j) * w + hh * hd;
          F dot = 0;
          for (size_t e = 0; e < hd; ++e) dot += qi[e] * kj[e];
          pi[j] = dot * scale;
          if (pi[j] > mx) mx = pi[j];
        }
        F sum = 0;
        for (size_t j = 0; j <= i; ++j) {
          pi[j] = std::exp(pi[j] - mx);
          sum += pi[j];
        }
        const F inv = F(1) / sum;
        F* ci = ctx + (s * t + i) * w + hh * hd;
        for (size_t e = 0; e < hd; ++e) ci[e] = 0;
        for (size_t j = 0; j <= i; ++j) {
          pi[j] *= inv;
          const F* vj = v + (s * t + j) * w + hh * hd;
          for (size_t e = 0; e < hd; ++e) ci[e] += pi[j] * vj[e];
        }
      }
    }
  }
}

// Backward of attention: dq, dk, dv overwritten. scratch: t floats.
template <typename F>
void attentionBackward(const F* q, const F* k, const F* v, const F* probs, const F* dctx, F* dq,
                       F* dk, F* dv, F* scratch, size_t b, size_t t, size_t h, size_t hd) {
  const size_t w = h * hd;
  const F scale = F(1) / std::sqrt(F(hd));
  for (size_t i = 0; i < b * t * w; ++i) dq[i] = dk[i] = dv[i] = 0;
  for (size_t s = 0; s < b; ++s) {
    for (size_t hh = 0; hh < h; ++hh) {
      const F* p = probs + (s * h + hh) * t * t;
      for (size_t i = 0; i < t; ++i) {
        const F* pi = p + i * t;
        const F* dci = dctx + (s * t + i) * w + hh * hd;
        F dotSum = 0;
        for (size_t j = 0; j <= i; ++j) {
          const F* vj = v + (s * t + j) * w + hh * hd;
          F* dvj = dv + (s * t + j) * w + hh * hd;
          F dp = 0;
          for (size_t e = 0; e < hd; ++e) {
            dp += dci[e] * vj[e];
            dvj[e] += pi[j] * dci[e];
          }
          scratch[j] = dp;
          dotSum += dp * pi[j];
        }
        const F* qi = q + (s * t + i) * w + hh * hd;
        F* dqi = dq + (s * t + i) * w + hh * hd;
        for (size_t j = 0; j <= i; ++j) {
          const F ds = pi[j] * (scratch[j] - dotSum) * scale;
          const F* kj = k + (s * t + j) * w + hh * hd;
          F* dkj = dk + (s * t + j) * w + hh * hd;
          for (size_t e = 0; e < hd; ++e) {
            dqi[e] += ds * kj[e];
            dkj[e] += ds * qi[e];
          }
        }
      }
    }
  }
}

}  // namespace braid::train
