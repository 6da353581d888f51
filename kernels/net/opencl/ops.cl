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
