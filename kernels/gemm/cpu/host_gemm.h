// Shared base of the host-memory GEMM implementations: keeps A, B and a private copy of C.
#pragma once

#include <vector>

#include "kernels/gemm/gemm.h"

namespace pb {

class HostGemm : public GemmImpl {
 public:
  Support supports(const GemmDesc&, Dir dir) const override {
    return dir == Dir::fwd ? Support::yes() : Support::no("gemm runs fwd only");
  }
  void plan(const GemmDesc& d, Dir, const std::vector<const Tensor*>& in) override {
    d_ = d;
    a_ = in[0];
    b_ = in[1];
    c_ = in[2]->clone();
    prepare_more();
  }
  const Tensor* output_view(size_t i) const override { return i == 0 ? &c_ : nullptr; }
  std::vector<Tensor> result() override {
    std::vector<Tensor> out;
    out.push_back(c_.clone());
    return out;
  }

 protected:
  virtual void prepare_more() {}
  GemmDesc d_;
  const Tensor* a_ = nullptr;
  const Tensor* b_ = nullptr;
  Tensor c_;
};

// C = alpha*op(A)*op(B) + beta*C through the chosen SGEMM library (sgemm.h: PRIMBENCH_SGEMM)
// with d's transposes, sizes and ldc, and the given A/B pointers and leading dimensions.
void sgemm_colmajor(const GemmDesc& d, const float* a, int64_t lda, const float* b, int64_t ldb,
                    float* c);

}  // namespace pb
