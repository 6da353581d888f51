// The OpenCL device's own probe: its fp32 FMA rate and triad bandwidth, measured with two small
// kernels, so that the percentages of an implementation on a GPU divide by that GPU's rates
// instead of the host CPU's.
#include <algorithm>
#include <cmath>
#include <mutex>
#include <string>

#include "kernels/core/error.h"
#include "kernels/opencl/runtime.h"

namespace pb::ocl {
namespace {

// fma_chains: CHAINS independent float8 FMA chains per work-item (vectors, for devices that
// vectorise within a work-item; a GPU runs them as scalar FMAs), `iters` steps each (a * x + b with
// |a| < 1, so the values stay normal); the sum is stored so that nothing is dead code.
// triad: a[i] = b[i] + s * c[i] on float4 (12 bytes per element, the STREAM rule).
const char* kProbeSource = R"CL(
#define CHAINS 8
__kernel void fma_chains(__global float* out, int iters, float a, float b) {
  const size_t g = get_global_id(0);
  float8 x[CHAINS];
#pragma unroll
  for (int c = 0; c < CHAINS; ++c)
    x[c] = (float8)((float)(g % 1024) * 1e-3f + (float)c) +
           (float8)(0.0f, 0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f);
  const float8 av = (float8)(a), bv = (float8)(b);
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) x[c] = fma(x[c], av, bv);
  }
  float8 s = x[0];
#pragma unroll
  for (int c = 1; c < CHAINS; ++c) s += x[c];
  out[g] = s.s0 + s.s1 + s.s2 + s.s3 + s.s4 + s.s5 + s.s6 + s.s7;
}
__kernel void triad(__global float4* a, __global const float4* b, __global const float4* c,
                    float s) {
  const size_t i = get_global_id(0);
  a[i] = b[i] + s * c[i];
}
)CL";
constexpr int kChains = 8, kLanes = 8;  // CHAINS, and the float8 lanes of each

// The best of `passes` timed runs of `k` (milliseconds, profiling events).
double best_ms(const Kernel& k, size_t global, int passes) {
  double best = 0;
  for (int i = 0; i < passes; ++i) {
    Event ev;
    k.enqueue(1, &global, nullptr, &ev);
    const double ms = ev.elapsed_ms();
    if (ms > 0 && (best == 0 || ms < best)) best = ms;
  }
  return best;
}

}  // namespace

DeviceRates measure_device_rates(size_t triad_elements) {
  cl_program prog = build_source("the device probe", kProbeSource, "");
  struct Release {
    cl_program p;
    ~Release() { clReleaseProgram(p); }
  } release{prog};
  const DeviceInfo& info = device_info();
  DeviceRates r;

  // FMA: enough work-items to fill every compute unit many times over; the step count grows
  // until a pass takes at least 10 ms, so that launch overhead is negligible.
  const size_t global = std::max<size_t>(
      1024, size_t(info.compute_units) * std::max<size_t>(64, info.max_work_group_size) * 4);
  Buffer out(global * sizeof(float));
  Kernel fma(prog, "fma_chains");
  int iters = 64;
  double ms = 0;
  for (;;) {
    fma.set_args(out, iters, 0.9999f, 1e-4f);
    ms = best_ms(fma, global, 2);
    if (ms >= 10 || iters >= (1 << 20)) break;
    iters *= ms > 0.5 ? std::min(16, std::max(2, static_cast<int>(std::ceil(12 / ms)))) : 16;
  }
  ms = best_ms(fma, global, 5);
  if (ms <= 0) throw RuntimeError("the device probe's FMA kernel reported no time");
  r.flops = 2.0 * kChains * kLanes * static_cast<double>(iters) * static_cast<double>(global) /
            (ms * 1e-3);

  // Triad over three buffers of triad_elements floats (float4 per work-item).
  const size_t n4 = std::max<size_t>(1, triad_elements / 4);
  const size_t bytes = n4 * 4 * sizeof(float);
  if (bytes > info.max_mem_alloc_size)
    throw Unsupported("the device probe's triad needs " + std::to_string(bytes >> 20) +
                      " MiB buffers; the device allows " +
                      std::to_string(info.max_mem_alloc_size >> 20));
  Buffer a(bytes), b(bytes), c(bytes);
  b.zero(), c.zero();
  Kernel triad(prog, "triad");
  triad.set_args(a, b, c, 3.0f);
  const double tms = best_ms(triad, n4, 5);
  if (tms <= 0) throw RuntimeError("the device probe's triad kernel reported no time");
  r.bytes = 12.0 * static_cast<double>(n4 * 4) / (tms * 1e-3);
  return r;
}

const DeviceRates& device_rates() {
  static std::once_flag once;
  static DeviceRates rates;
  std::call_once(once, [] {
    // 64 Mi floats per buffer (768 MiB moved per pass): beyond the last-level cache of any
    // current GPU; fewer where the device caps one allocation lower.
    size_t n = size_t(64) << 20;
    const cl_ulong cap = device_info().max_mem_alloc_size / sizeof(float);
    if (cap > 0 && n > cap) n = static_cast<size_t>(cap);
    rates = measure_device_rates(n);
  });
  return rates;
}

}  // namespace pb::ocl
