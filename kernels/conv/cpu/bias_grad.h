// The bias gradient of a convolution on the host: diff_bias[oc] = sum over images and output
// pixels of diff_dst. OpenMP over output channels, a fixed summation order (bitwise repeatable).
#pragma once

#include <cstdint>

#include "kernels/conv/desc.h"

namespace pb {

inline void conv_bias_grad(const ConvDesc& d, const float* diff_dst, float* diff_bias) {
  const int64_t plane = d.oh * d.ow;
#pragma omp parallel for schedule(static)
  for (int64_t oc = 0; oc < d.oc; ++oc) {
    // 16 independent lanes per plane (vectorisable), then the lanes and planes in fp64.
    double acc = 0;
    for (int64_t n = 0; n < d.mb; ++n) {
      const float* p = diff_dst + (n * d.oc + oc) * plane;
      float lane[16] = {};
      int64_t i = 0;
      for (; i + 16 <= plane; i += 16)
        for (int l = 0; l < 16; ++l) lane[l] += p[i + l];
      for (; i < plane; ++i) lane[i % 16] += p[i];
      for (float v : lane) acc += v;
    }
    diff_bias[oc] = static_cast<float>(acc);
  }
}

}  // namespace pb
