// Machine probe: FMA-loop peak and triad bandwidth, measured with the current thread count.
#include "kernels/core/machine.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <mutex>
#include <vector>

#include "kernels/core/tensor.h"
#include "kernels/core/threads.h"

namespace pb {

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// 16 independent accumulator vectors per thread hide the FMA latency (4 cycles x 2 ports on
// current cores). GCC vector types compile to the widest FMA the target has (zmm on AVX-512).
using Vec = float __attribute__((vector_size(64)));
constexpr int kAcc = 16;

double fma_peak(int nthreads) {
  const long iters = 2000000;
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    double t0 = now();
    float sink = 0;
#pragma omp parallel num_threads(nthreads) reduction(+ : sink)
    {
      Vec acc[kAcc];
      for (int j = 0; j < kAcc; ++j)
        for (int l = 0; l < 16; ++l) acc[j][l] = 1.0f + (j * 16 + l) * 1e-6f;
      const Vec mul = Vec{} + 0.999999f, add = Vec{} + 1e-7f;
      for (long it = 0; it < iters; ++it)
        for (int j = 0; j < kAcc; ++j) acc[j] = acc[j] * mul + add;
      for (int j = 0; j < kAcc; ++j)
        for (int l = 0; l < 16; ++l) sink += acc[j][l];
    }
    double t = now() - t0;
    if (sink == 12345.f) t += 1;  // keep the loop alive
    best = std::max(best, 2.0 * kAcc * 16 * iters * nthreads / t);
  }
  return best;
}

double triad(int nthreads) {
  const int64_t n = 16 << 20;  // 3 x 64 MB: far beyond any last-level cache
  Tensor a({n}), b({n}), c({n});
#pragma omp parallel for num_threads(nthreads) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    b[i] = 1.0f;
    c[i] = 2.0f;
    a[i] = 0.0f;
  }
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    double t0 = now();
    float* pa = a.data();
    const float *pb = b.data(), *pc = c.data();
#pragma omp parallel for num_threads(nthreads) schedule(static)
    for (int64_t i = 0; i < n; ++i) pa[i] = pb[i] + 3.0f * pc[i];
    best = std::max(best, 12.0 * n / (now() - t0));
  }
  return best;
}

}  // namespace

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto p = line.find(':');
      if (p != std::string::npos) return line.substr(line.find_first_not_of(' ', p + 1));
    }
  }
  return "unknown";
}

const MachineInfo& machine_info() {
  static std::mutex mu;
  static std::map<int, MachineInfo> cache;
  std::lock_guard<std::mutex> lock(mu);
  int t = threads();
  auto it = cache.find(t);
  if (it != cache.end()) return it->second;
  MachineInfo m;
  m.cpu_model = cpu_model();
  m.threads = t;
  m.peak_flops = fma_peak(t);
  m.triad_bytes = triad(t);
  return cache.emplace(t, m).first->second;
}

}  // namespace pb
