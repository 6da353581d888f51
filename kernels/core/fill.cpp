// Counter-based (splitmix64) fills: reproducible regardless of threads and order.
#include "kernels/core/fill.h"

#include <cmath>

namespace pb {

namespace {
inline uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
}  // namespace

uint64_t mix_seed(uint64_t seed, uint64_t stream) {
  return splitmix(seed ^ splitmix(stream));
}

void fill_int(Tensor& t, uint64_t seed, int range) {
  const uint64_t span = 2 * static_cast<uint64_t>(range) + 1;
  float* p = t.data();
  const int64_t n = t.size();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i)
    p[i] = static_cast<float>(static_cast<int64_t>(splitmix(seed + i) % span) - range);
}

void fill_uniform(Tensor& t, uint64_t seed, float lo, float hi) {
  float* p = t.data();
  const int64_t n = t.size();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    double u = (splitmix(seed + i) >> 11) * (1.0 / 9007199254740992.0);
    p[i] = static_cast<float>(lo + (hi - lo) * u);
  }
}

int exact_int_range(double terms, int cap) {
  int r = cap;
  while (r > 1 && terms * r * r >= 8388608.0) --r;
  return r;
}

}  // namespace pb
