// Shared base of the host-memory GEMM implementations: keeps A, B and a private copy of C, and
// for a reduced data type (desc.h's dt) their copies in that type.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/gemm/gemm.h"

namespace pb {

class HostGemm : public GemmImpl {
 public:
  Support supports(const GemmDesc& d, Dir dir) const override {
    if (dir != Dir::fwd) return Support::no("gemm runs fwd only");
    if (!d.dt.is_f32()) {
      const std::string why = dt_unsupported(d);
      if (!why.empty()) return Support::no(why);
    }
    return Support::yes();
  }
  void plan(const GemmDesc& d, Dir, const std::vector<const Tensor*>& in) override {
    d_ = d;
    a_ = in[0];
    b_ = in[1];
    c_ = in[2]->clone();
    if (!d.dt.is_f32()) typed_inputs(in);
    prepare_more();
  }
  // An output of a reduced type lives in the typed copy: no fp32 view of it.
  const Tensor* output_view(size_t i) const override {
    return i == 0 && d_.dt.out == DataType::out_f32 ? &c_ : nullptr;
  }
  std::vector<Tensor> result() override;
  // A network's real-valued inputs into the type again (impl.h): A (0) as plan() converts it,
  // B (1, the source) from real values (u8s8: with its scale and zero point).
  bool quantise(size_t i) override;

 protected:
  // Why this implementation does not run d's data type ("" when it does); called for dt != f32.
  virtual std::string dt_unsupported(const GemmDesc&) const { return name() + " runs dt=f32 only"; }
  virtual void prepare_more() {}
  // The typed copies (dt != f32): A as bf16/f16 (uint16_t) or s8, B as bf16/f16 or u8, C as the
  // output type (fp32 outputs stay in c_); u8s8's quantisation parameters.
  const void* a_typed() const { return ta_.data(); }
  const void* b_typed() const { return tb_.data(); }
  void* c_out() {
    return d_.dt.out == DataType::out_f32 ? static_cast<void*>(c_.data()) : tc_.data();
  }
  std::vector<float> a_scale_;
  float b_scale_ = 1, c_scale_ = 1;
  int32_t b_zero_ = 0;

  GemmDesc d_;
  const Tensor* a_ = nullptr;
  const Tensor* b_ = nullptr;
  Tensor c_;

 private:
  void typed_inputs(const std::vector<const Tensor*>& in);
  std::vector<uint8_t> ta_, tb_, tc_;
};

// C = alpha*op(A)*op(B) + beta*C through the chosen SGEMM library (sgemm.h: PRIMBENCH_SGEMM)
// with d's transposes, sizes and ldc, and the given A/B pointers and leading dimensions.
void sgemm_colmajor(const GemmDesc& d, const float* a, int64_t lda, const float* b, int64_t ldb,
                    float* c);

}  // namespace pb
