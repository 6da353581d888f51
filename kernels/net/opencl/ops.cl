// The network executor's own steps on the device (kernels/net/opencl/device_ops.cpp). The bias
// gradient reuses conv/conv_bwd.cl's bias_grad.

// global: (hw, mb * c). y[n][c][i] += b[c].
__kernel void add_channel_bias(__global float* y, __global const float* b, const int c,
                               const int hw) {
  const int i = get_global_id(0), nc = get_global_id(1);
  if (i >= hw) return;
  y[(size_t)nc * hw + i] += b[nc % c];
}

// global: n. out = a + b.
__kernel void add(__global const float* a, __global const float* b, __global float* out,
                  const int n) {
  const int i = get_global_id(0);
  if (i < n) out[i] = a[i] + b[i];
}

// global: n. y += alpha * x.
__kernel void axpy(const float alpha, __global const float* x, __global float* y, const int n) {
  const int i = get_global_id(0);
  if (i < n) y[i] += alpha * x[i];
}

// global: (c * hw, mb). Per image n: the c channels of src from channel src_off (of src_c) to
// dst's channels from dst_off (of dst_c); `slice` = c * hw.
__kernel void copy_channels(__global const float* src, const int src_c, const int src_off,
                            __global float* dst, const int dst_c, const int dst_off,
                            const int slice, const int hw) {
  const int i = get_global_id(0);
  const size_t n = get_global_id(1);
  if (i < slice) dst[(n * dst_c + dst_off) * hw + i] = src[(n * src_c + src_off) * hw + i];
}

// global: n. As net::dropout_hash (native_ops.h): kept when the hash's upper 32 bits are
// >= threshold; y = x * scale or 0.
__kernel void dropout(__global const float* x, __global float* y, const int n,
                      const uint threshold, const float scale, const ulong seed,
                      const ulong step) {
  const int i = get_global_id(0);
  if (i >= n) return;
  ulong z = seed ^ (step * 0x9E3779B97F4A7C15UL) ^ ((ulong)i * 0xD1B54A32D192ED03UL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9UL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBUL;
  z = z ^ (z >> 31);
  y[i] = (uint)(z >> 32) >= threshold ? x[i] * scale : 0.0f;
}
