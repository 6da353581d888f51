// LRN across channels (kernels/lrn/desc.h), one work-item per element.
// global: (hw, ic, mb). Build options: -DHALF=<(ls-1)/2>, and -DBETA075 when beta is 0.75
// (AlexNet's and GoogLeNet's): scale^-0.75 as two square roots instead of pow.

// k + alpha/ls * the window sum of squares at channel c of pixel p of image n.
float lrn_scale(__global const float* x, const int n, const int c, const int ic, const int hw,
                const int p, const float a, const float k) {
  const int lo = max(0, c - HALF), hi = min(ic - 1, c + HALF);
  float s = 0.0f;
  for (int j = lo; j <= hi; ++j) {
    const float v = x[((size_t)n * ic + j) * hw + p];
    s += v * v;
  }
  return k + a * s;
}

// scale^-beta.
float inv_pow(const float s, const float beta) {
#ifdef BETA075
  const float r = rsqrt(s);
  return r * sqrt(r);
#else
  return powr(s, -beta);
#endif
}

__kernel void lrn_fwd(__global const float* x, __global float* y, const int ic, const int hw,
                      const float a, const float k, const float beta) {
  const int p = get_global_id(0), c = get_global_id(1), n = get_global_id(2);
  if (p >= hw) return;
  const size_t i = ((size_t)n * ic + c) * hw + p;
  y[i] = x[i] * inv_pow(lrn_scale(x, n, c, ic, hw, p, a, k), beta);
}

// diff_src = dy * scale^-beta - 2 alpha beta / ls * x * sum over the window of
// dy * x * scale^(-beta-1); coef = 2 alpha beta / ls.
__kernel void lrn_bwd(__global const float* x, __global const float* dy, __global float* dx,
                      const int ic, const int hw, const float a, const float k,
                      const float beta, const float coef) {
  const int p = get_global_id(0), c = get_global_id(1), n = get_global_id(2);
  if (p >= hw) return;
  const int lo = max(0, c - HALF), hi = min(ic - 1, c + HALF);
  float acc = 0.0f;
  for (int j = lo; j <= hi; ++j) {
    const size_t at = ((size_t)n * ic + j) * hw + p;
    const float s = lrn_scale(x, n, j, ic, hw, p, a, k);
    acc += dy[at] * x[at] * inv_pow(s, beta) / s;
  }
  const size_t i = ((size_t)n * ic + c) * hw + p;
  dx[i] = dy[i] * inv_pow(lrn_scale(x, n, c, ic, hw, p, a, k), beta) - coef * x[i] * acc;
}
