// Weight transforms of the OpenCL convolutions (ocl_conv.cpp's add_filter_map): a linear map of
// every filter (gi, o, c), its T taps w[gi][o][c][:] (goihw), to A values of out:
//   out[gi * sg + ooff[o] + coff[c] + aoff[a]] = sum_t coef[a * T + t] * w[gi][o][c][t].
// Repacks and flips (coef a permutation), Winograd's G w G^T and FFT filter spectra are all such
// maps, so weights that change on the device (a network's SGD step) are transformed there.
// Accumulates in fp64 where the device has it.

#if defined(cl_khr_fp64) && !defined(PRIMBENCH_NO_FP64)  // PRIMBENCH_OCL_FP64=0 defines it
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double acc_t;
#else
typedef float acc_t;
#endif

// global: (ocg * icg rounded up, g). One work-item per filter.
__kernel void filter_map(__global const float* w, __global float* out, __global const float* coef,
                         __global const long* aoff, __global const long* ooff,
                         __global const long* coff, int A, int T, int ocg, int icg, long sg) {
  const int f = get_global_id(0), gi = get_global_id(1);
  if (f >= ocg * icg) return;
  const int o = f / icg, c = f % icg;
  __global const float* wf = w + ((long)(gi * ocg + o) * icg + c) * T;
  __global float* base = out + gi * sg + ooff[o] + coff[c];
  for (int a = 0; a < A; ++a) {
    __global const float* k = coef + a * T;
    acc_t s = 0;
    for (int t = 0; t < T; ++t) s += (acc_t)k[t] * (acc_t)wf[t];
    base[aoff[a]] = (float)s;
  }
}
