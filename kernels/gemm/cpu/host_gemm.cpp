// HostGemm's typed copies (plan(), never timed) and its result in fp32.
#include "kernels/gemm/cpu/host_gemm.h"

#include "kernels/core/quant.h"

namespace pb {

void HostGemm::typed_inputs(const std::vector<const Tensor*>& in) {
  const DataType dt = d_.dt;
  to_storage(*in[0], dt.in, false, &ta_);
  to_storage(*in[1], dt.in, true, &tb_);
  tc_.clear();
  if (dt.out != DataType::out_f32) {
    tc_.resize(static_cast<size_t>(dt.out_bytes() * c_.size()));
    to_storage_out(c_.data(), c_.size(), dt.out, tc_.data());
  }
  if (dt.in == DataType::u8s8) {
    const QuantParams q = QuantParams::from(in, 3);
    a_scale_ = q.wei_scale;
    b_scale_ = q.src_scale;
    b_zero_ = q.src_zero;
    c_scale_ = q.dst_scale;
  }
}

bool HostGemm::quantise(size_t i) {
  if (d_.dt.is_f32() || i > 1) return false;
  if (i == 0)
    to_storage(*a_, d_.dt.in, false, &ta_);
  else
    quantise_storage(*b_, d_.dt.in, true, b_scale_, b_zero_, &tb_);
  return true;
}

std::vector<Tensor> HostGemm::result() {
  std::vector<Tensor> out;
  out.push_back(c_.clone());
  if (d_.dt.out != DataType::out_f32) from_storage(tc_.data(), d_.dt.out, c_.size(), out[0].data());
  return out;
}

}  // namespace pb
