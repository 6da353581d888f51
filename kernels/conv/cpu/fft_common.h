// Pieces shared by cpu/fft's forward/backward-data and backward-weights passes: FFTW plans made
// under one lock, complex views of tensors, and the copy of an image region into a patch.
#pragma once

#include <fftw3.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>

#include "kernels/core/tensor.h"

namespace pb {
namespace fft {

// FFTW's planner is not thread-safe: every plan is made and destroyed under this lock.
inline std::mutex& planner_mutex() {
  static std::mutex m;
  return m;
}

struct PlanDeleter {
  void operator()(fftwf_plan_s* p) const {
    std::lock_guard<std::mutex> lock(planner_mutex());
    fftwf_destroy_plan(p);
  }
};
using Plan = std::unique_ptr<fftwf_plan_s, PlanDeleter>;

inline fftwf_complex* cplx(Tensor& t) {
  return reinterpret_cast<fftwf_complex*>(t.data());
}

// A dense nh x nw patch whose first ch rows x cw columns are rows [y0, y0 + ch) x columns
// [x0, x0 + cw) of an ih x iw plane, zero outside the plane and beyond ch x cw.
inline void copy_patch(const float* plane, int64_t ih, int64_t iw, int64_t y0, int64_t x0,
                       int64_t ch, int64_t cw, int64_t nh, int64_t nw, float* patch) {
  const int64_t c0 = std::clamp<int64_t>(-x0, 0, cw), c1 = std::clamp<int64_t>(iw - x0, c0, cw);
  for (int64_t i = 0; i < nh; ++i) {
    float* p = patch + i * nw;
    const int64_t y = y0 + i;
    if (i >= ch || y < 0 || y >= ih || c1 <= c0) {
      std::memset(p, 0, nw * sizeof(float));
      continue;
    }
    std::memset(p, 0, c0 * sizeof(float));
    std::memcpy(p + c0, plane + y * iw + x0 + c0, (c1 - c0) * sizeof(float));
    std::memset(p + c1, 0, (nw - c1) * sizeof(float));
  }
}

// out[j * rows + i] = in[i * cols + j]: a rows x cols matrix of complex floats, transposed in
// 16 x 16 blocks. Spectra go between FFTW's fast contiguous layout ([transform][frequency]) and
// the per-frequency GEMMs' ([frequency][transform]).
inline void transpose_complex(const float* in, int64_t rows, int64_t cols, float* out) {
  using C = uint64_t;  // one complex float, moved as 8 bytes
  const C* a = reinterpret_cast<const C*>(in);
  C* b = reinterpret_cast<C*>(out);
  for (int64_t i0 = 0; i0 < rows; i0 += 16)
    for (int64_t j0 = 0; j0 < cols; j0 += 16) {
      const int64_t i1 = std::min(rows, i0 + 16), j1 = std::min(cols, j0 + 16);
      for (int64_t j = j0; j < j1; ++j)
        for (int64_t i = i0; i < i1; ++i) b[j * rows + i] = a[i * cols + j];
    }
}

}  // namespace fft
}  // namespace pb
