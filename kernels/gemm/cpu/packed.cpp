// cpu/packed: primbench's own BLIS-style SGEMM (packed_sgemm.h), all four transposes.
#include "kernels/gemm/cpu/host_gemm.h"
#include "kernels/gemm/cpu/packed_sgemm.h"

namespace pb {

namespace {

class PackedGemm : public HostGemm {
 public:
  std::string name() const override { return "cpu/packed"; }
  void run() override {
    sgemm_packed(d_.ta, d_.tb, d_.m, d_.n, d_.k, static_cast<float>(d_.alpha), a_->data(), d_.lda,
                 b_->data(), d_.ldb, static_cast<float>(d_.beta), c_.data(), d_.ldc);
  }
};

}  // namespace

std::unique_ptr<GemmImpl> make_gemm_packed() {
  return std::make_unique<PackedGemm>();
}

}  // namespace pb
