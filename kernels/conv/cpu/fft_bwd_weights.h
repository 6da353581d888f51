// cpu/fft backward weights: diff_wei[o][c] is the correlation of src[c] with diff_dst[o] summed
// over images and overlap-save tiles, as one complex GEMM per frequency, then only the kh x kw
// lags.
#pragma once

#include <vector>

#include "kernels/conv/cpu/fft_common.h"
#include "kernels/conv/cpu/fft_geometry.h"
#include "kernels/conv/desc.h"
#include "kernels/core/impl.h"

namespace pb {
namespace fft {

class BwdWeights {
 public:
  static Support supports(const ConvDesc& d);
  void prepare(const ConvDesc& d, int nthreads);
  // diff_wei (goihw) from src and diff_dst (NCHW); deterministic: every frequency's sum over
  // tiles runs in one fixed order, whatever the thread count.
  void run(const float* src, const float* diff_dst, float* diff_wei);
  size_t workspace_bytes() const;

 private:
  void transform_block(int64_t g, int64_t t0, int64_t nt, const float* src, const float* dd);
  void accumulate(int64_t nt, bool first);
  void lags(int64_t g, float* diff_wei);

  ConvDesc d_;
  Geometry geo_;
  int nthreads_ = 1;
  int64_t bt_ = 2, tiles_ = 0, blocks_ = 0;
  Tensor spec_;               // one block's spectra: [icg + ocg channels][f][bt tiles], complex
  Tensor acc_;                // [f][icg][ocg] complex: sum over tiles of X_src conj(X_diff_dst)
  Tensor wx_, wy_;            // inverse-DFT weights of the lags: [kw][nw/2+1], [kh][nh] complex
  std::vector<Tensor> work_;  // per thread: bt real patches, or the lag stage's partial sums
  Plan plan_;                 // r2c of bt patches of one channel into spec_
};

}  // namespace fft
}  // namespace pb
