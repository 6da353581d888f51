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

// global: (ocg * icg rounded up, A, g). One work-item per filter and output value a; neighbouring
// work-items take neighbouring o when o_fast (the host sets it where o's output offsets are the
// closer ones), else neighbouring c, so that their writes share cache lines. (With one work-item
// per filter writing all A values, and c fastest everywhere, each write went to its own line: the
// 1x1 layers' FFT spectra, 500 MB, took 1 s on PoCL.)
__kernel void filter_map(__global const float* w, __global float* out, __global const float* coef,
                         __global const long* aoff, __global const long* ooff,
                         __global const long* coff, int T, int ocg, int icg, long sg, int o_fast) {
  const int f = get_global_id(0), a = get_global_id(1), gi = get_global_id(2);
  if (f >= ocg * icg) return;
  const int o = o_fast ? f % ocg : f / icg, c = o_fast ? f / ocg : f % icg;
  __global const float* wf = w + ((long)(gi * ocg + o) * icg + c) * T;
  __global const float* k = coef + a * T;
  acc_t s = 0;
  for (int t = 0; t < T; ++t) s += (acc_t)k[t] * (acc_t)wf[t];
  out[gi * sg + ooff[o] + coff[c] + aoff[a]] = (float)s;
}
