// Batch-norm kernels for ocl/native. Statistics: one work-group of WG work-items per channel,
// each work-item accumulating a strided share, then a fixed-order tree in local memory
// (deterministic, no atomics). Mean from shifted sums, variance from a second pass over the
// squared deviations (no E[x^2] - E[x]^2 cancellation). NCHW.
#ifndef WG
#define WG 64
#endif
#ifndef RELU
#define RELU 0
#endif

// Sums v over the work-group; every work-item gets the total (fixed order: deterministic).
inline float wg_sum(float v, __local float* scratch) {
  const int lid = get_local_id(0);
  scratch[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = WG / 2; s > 0; s >>= 1) {
    if (lid < s) scratch[lid] += scratch[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float r = scratch[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}

// Runs `body` for every element offset o of channel c, work-item lid taking a strided share
// of each (n, c) plane.
#define FOR_CHANNEL(body)                                    \
  for (int nb = 0; nb < MB; ++nb) {                          \
    const size_t base = ((size_t)nb * IC + c) * HW;          \
    for (int i = lid; i < HW; i += WG) {                     \
      const size_t o = base + i;                             \
      body                                                   \
    }                                                        \
  }

inline float bn_out(float x, float m, float a, float b) {
  const float y = (x - m) * a + b;
  return RELU ? fmax(y, 0.0f) : y;
}

// Training forward: batch statistics, normalisation, running-statistics update.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void bn_fwd_training(
    const int MB, const int IC, const int HW, const float eps, const float mom,
    __global const float* restrict src, __global const float* restrict gamma,
    __global const float* restrict beta, __global float* restrict dst,
    __global float* restrict mean, __global float* restrict var,
    __global const float* restrict rmean_in, __global const float* restrict rvar_in,
    __global float* restrict rmean, __global float* restrict rvar) {
  __local float scratch[WG];
  const int c = get_group_id(0), lid = get_local_id(0);
  const int n = MB * HW;
  const float k = src[(size_t)c * HW];  // shift: the channel's first element
  float s = 0.0f;
  FOR_CHANNEL(s += src[o] - k;)
  const float m = k + wg_sum(s, scratch) / n;
  float s2 = 0.0f;
  FOR_CHANNEL(const float t = src[o] - m; s2 += t * t;)
  const float v = wg_sum(s2, scratch) / n;
  const float a = gamma[c] * rsqrt(v + eps), b = beta[c];
  FOR_CHANNEL(dst[o] = bn_out(src[o], m, a, b);)
  if (lid == 0) {
    mean[c] = m;
    var[c] = v;
    rmean[c] = (1.0f - mom) * rmean_in[c] + mom * m;
    rvar[c] = (1.0f - mom) * rvar_in[c] + mom * (n > 1 ? v * n / (n - 1) : v);
  }
}

// Inference forward: element-wise with the given statistics; global (HW, IC, MB).
__kernel void bn_fwd_inference(const int IC, const int HW, const float eps,
                               __global const float* restrict src,
                               __global const float* restrict gamma,
                               __global const float* restrict beta,
                               __global const float* restrict mean,
                               __global const float* restrict var, __global float* restrict dst) {
  const int i = get_global_id(0), c = get_global_id(1);
  const size_t o = ((size_t)get_global_id(2) * IC + c) * HW + i;
  dst[o] = bn_out(src[o], mean[c], gamma[c] * rsqrt(var[c] + eps), beta[c]);
}

// Backward: sums of dy and dy * (x - mean) per channel (through the ReLU mask), then diff_src.
// TRAIN 1: through the batch statistics; 0: through given constants.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void bn_bwd(
    const int MB, const int IC, const int HW, const float eps, const int train,
    __global const float* restrict src, __global const float* restrict dy,
    __global const float* restrict gamma, __global const float* restrict beta,
    __global const float* restrict mean, __global const float* restrict var,
    __global float* restrict dx, __global float* restrict dgamma, __global float* restrict dbeta) {
  __local float scratch[WG];
  const int c = get_group_id(0), lid = get_local_id(0);
  const int n = MB * HW;
  const float m = mean[c], rstd = rsqrt(var[c] + eps);
  const float a = gamma[c] * rstd, b = beta[c];
  float s0 = 0.0f, s1 = 0.0f;
  FOR_CHANNEL(const float x = src[o]; const float g = RELU && (x - m) * a + b <= 0.0f ? 0.0f : dy[o];
              s0 += g; s1 += g * (x - m);)
  const float sdy = wg_sum(s0, scratch), sdyx = wg_sum(s1, scratch);
  const float mdy = train ? sdy / n : 0.0f, k2 = train ? rstd * rstd * sdyx / n : 0.0f;
  FOR_CHANNEL(const float x = src[o]; const float g = RELU && (x - m) * a + b <= 0.0f ? 0.0f : dy[o];
              dx[o] = a * (g - mdy - (x - m) * k2);)
  if (lid == 0) {
    dgamma[c] = sdyx * rstd;
    dbeta[c] = sdy;
  }
}
