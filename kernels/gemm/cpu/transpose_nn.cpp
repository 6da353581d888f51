// cpu/transpose_nn: transpose the transposed operand(s) out of place, then one NN sgemm; the
// transposes are part of the timed run (the Shi et al. suggestion for slow OP_T paths).
#include <algorithm>

#include "kernels/gemm/cpu/host_gemm.h"

namespace pb {

namespace {

// dst (cols x rows, ld = cols) = src^T where src is rows x cols with leading dimension ld.
// Blocked 32x32 so both sides stay in cache; parallel over column blocks.
void transpose(const float* src, int64_t rows, int64_t cols, int64_t ld, float* dst) {
  constexpr int64_t B = 32;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t jb = 0; jb < cols; jb += B)
    for (int64_t ib = 0; ib < rows; ib += B) {
      const int64_t je = std::min(jb + B, cols), ie = std::min(ib + B, rows);
      for (int64_t j = jb; j < je; ++j)
        for (int64_t i = ib; i < ie; ++i) dst[i * cols + j] = src[j * ld + i];
    }
}

class TransposeNnGemm : public HostGemm {
 public:
  std::string name() const override { return "cpu/transpose_nn"; }
  size_t workspace_bytes() const override { return (at_.size() + bt_.size()) * sizeof(float); }
  void run() override {
    const float* a = a_->data();
    const float* b = b_->data();
    int64_t lda = d_.lda, ldb = d_.ldb;
    if (d_.ta) {  // A stored k x m -> A' m x k
      transpose(a, d_.k, d_.m, d_.lda, at_.data());
      a = at_.data();
      lda = d_.m;
    }
    if (d_.tb) {  // B stored n x k -> B' k x n
      transpose(b, d_.n, d_.k, d_.ldb, bt_.data());
      b = bt_.data();
      ldb = d_.k;
    }
    GemmDesc nn = d_;
    nn.ta = nn.tb = false;
    sgemm_colmajor(nn, a, lda, b, ldb, c_.data());
  }

 protected:
  void prepare_more() override {
    at_ = d_.ta ? Tensor({d_.k, d_.m}) : Tensor();
    bt_ = d_.tb ? Tensor({d_.n, d_.k}) : Tensor();
  }

 private:
  Tensor at_, bt_;
};

}  // namespace

std::unique_ptr<GemmImpl> make_gemm_transpose_nn() {
  return std::make_unique<TransposeNnGemm>();
}

}  // namespace pb
