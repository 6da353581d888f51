// Per-channel sums of an n x c x hw tensor: the bias gradient of a convolution (diff_dst summed
// over images and pixels) or of a fully connected layer (hw = 1). OpenMP over channels, a fixed
// summation order (bitwise repeatable for any thread count).
#pragma once

#include <cstdint>

namespace pb {

inline void channel_sums(const float* x, int64_t n, int64_t c, int64_t hw, float* out) {
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < c; ++k) {
    // 16 independent lanes per plane (vectorisable), then the lanes and planes in fp64.
    double acc = 0;
    for (int64_t i0 = 0; i0 < n; ++i0) {
      const float* p = x + (i0 * c + k) * hw;
      float lane[16] = {};
      int64_t i = 0;
      for (; i + 16 <= hw; i += 16)
        for (int l = 0; l < 16; ++l) lane[l] += p[i + l];
      for (; i < hw; ++i) lane[i % 16] += p[i];
      for (float v : lane) acc += v;
    }
    out[k] = static_cast<float>(acc);
  }
}

}  // namespace pb
