// ocl/ring's reduction: y[off + i] = x[off + i] + t[toff + i] for i < count (one element per
// work-item; the global size is count rounded up to the work-group size WG).
#ifndef WG
#define WG 64
#endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void add_chunk(
    __global float* y, __global const float* x, __global const float* t, ulong off, ulong toff,
    ulong count) {
  const size_t i = get_global_id(0);
  if (i < count) y[off + i] = x[off + i] + t[toff + i];
}
