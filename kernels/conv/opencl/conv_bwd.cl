// Reductions shared by every OpenCL bwd_w (ocl_conv.cpp adds them): the bias gradient and the
// sum of per-chunk partial weight gradients. Each output has one work-item and a fixed order.

#ifndef WB
#define WB 8  // bias_grad work-group size
#endif
#ifndef WS
#define WS 64  // sum_partials work-group size
#endif

inline float hsum16(float16 v) {
  const float8 a = v.lo + v.hi;
  const float4 b = a.lo + a.hi;
  const float2 c = b.lo + b.hi;
  return c.x + c.y;
}

// global: oc. diff_bias[o] = sum over images n (in order) of the plane diff_dst(n, o, :, :),
// each plane summed in 16 lanes (then the lanes in a fixed tree, then the tail).
__kernel __attribute__((reqd_work_group_size(WB, 1, 1))) void bias_grad(
    __global const float* restrict dd, __global float* restrict db, const int mb, const int oc,
    const int plane) {
  const int o = get_global_id(0);
  if (o >= oc) return;
  float total = 0.0f;
  for (int n = 0; n < mb; ++n) {
    __global const float* p = dd + ((size_t)n * oc + o) * plane;
    float16 lane = (float16)(0.0f);
    int i = 0;
    for (; i + 16 <= plane; i += 16) lane += vload16(0, p + i);
    float tail = 0.0f;
    for (; i < plane; ++i) tail += p[i];
    total += hsum16(lane) + tail;
  }
  db[o] = total;
}

// global: ceil(n / 8). out[i] = sum over p < parts (in order) of part[p * n + i].
__kernel __attribute__((reqd_work_group_size(WS, 1, 1))) void sum_partials(
    __global const float* restrict part, const int parts, const int n,
    __global float* restrict out) {
  const int i0 = get_global_id(0) * 8;
  if (i0 >= n) return;
  if (i0 + 8 <= n) {
    float8 s = vload8(0, part + i0);
    for (int p = 1; p < parts; ++p) s += vload8(0, part + (size_t)p * n + i0);
    vstore8(s, 0, out + i0);
  } else {
    for (int i = i0; i < n; ++i) {
      float s = part[i];
      for (int p = 1; p < parts; ++p) s += part[(size_t)p * n + i];
      out[i] = s;
    }
  }
}
