// cpu/winograd_f2 and cpu/winograd_f4 backward weights: diff_wei = G^T [sum over tiles of
// (B^T d B) .* (A dy A^T)] G, the sum as one long-K GEMM per transform position.
#pragma once

#include <string>
#include <vector>

#include "kernels/conv/desc.h"
#include "kernels/core/impl.h"
#include "kernels/core/tensor.h"

namespace pb {
namespace wino {

template <int M>
class BwdWeights {
 public:
  // Needs what the forward needs (3x3, stride 1, dilation 0) and room for the accumulators.
  static Support supports(const ConvDesc& d, const std::string& who);
  void prepare(const ConvDesc& d, int nthreads);
  // diff_wei (goihw) from src and diff_dst (NCHW). Deterministic whatever the thread count:
  // the order of every sum depends on the shape only.
  void run(const float* src, const float* diff_dst, float* diff_wei);
  size_t workspace_bytes() const;

 private:
  void run_shared(int64_t g, const float* src, const float* dd);
  void run_slots(int64_t g, const float* src, const float* dd);
  void transform_rows(int64_t g, int64_t r0, int64_t k0, int64_t k1, const float* src,
                      const float* dd, float* s, int b);
  void sum_position(int b, int64_t nt, int64_t p, float* acc, bool first);
  void finish(int64_t g, float* diff_wei);

  ConvDesc d_;
  int nthreads_ = 1;
  int64_t th_ = 0, tw_ = 0, vs_ = 0, ws_ = 0;
  int64_t ocp_ = 0, icp_ = 0;  // accumulator rows and columns: ocg, icg rounded up to blocks
  int64_t slots_ = 1;          // partial accumulators (1: the shared path)
  int64_t rc_ = 0, cap_ = 0;   // tile rows per chunk; tiles per chunk (rc_ * tw_)
  // Chunk buffers (one shared set, or one per thread on the slot path): [position][tile][vs_]
  // B^T d B with input channels contiguous, [position][tile][ws_] A dy A^T, output channels.
  std::vector<Tensor> v_, w_;
  Tensor acc_;             // [slot][position][ocp_][icp_]: sums over tiles of the gradients
  std::vector<Tensor> s_;  // per thread: two tile rows of src and one of diff_dst, interleaved
};

extern template class BwdWeights<2>;
extern template class BwdWeights<4>;

}  // namespace wino
}  // namespace pb
