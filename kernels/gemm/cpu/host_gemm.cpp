// HostGemm's typed copies (plan(), never timed) and its result in fp32.
#include "kernels/gemm/cpu/host_gemm.h"

namespace pb {

namespace {
// The values of t (exact in `in`, GemmTraits makes them so) stored in that type.
std::vector<uint8_t> to_type(const Tensor& t, DataType::In in, bool is_source) {
  const int64_t n = t.size();
  std::vector<uint8_t> out;
  if (in == DataType::u8s8) {
    out.resize(n);
    for (int64_t i = 0; i < n; ++i) {
      const int v = static_cast<int>(t[i]);
      out[i] = is_source ? static_cast<uint8_t>(v) : static_cast<uint8_t>(static_cast<int8_t>(v));
    }
    return out;
  }
  out.resize(2 * n);
  uint16_t* h = reinterpret_cast<uint16_t*>(out.data());
  for (int64_t i = 0; i < n; ++i) h[i] = in == DataType::bf16 ? to_bf16(t[i]) : to_f16(t[i]);
  return out;
}
}  // namespace

void HostGemm::typed_inputs(const std::vector<const Tensor*>& in) {
  const DataType dt = d_.dt;
  ta_ = to_type(*in[0], dt.in, false);
  tb_ = to_type(*in[1], dt.in, true);
  tc_.clear();
  const int64_t nc = c_.size();
  if (dt.out == DataType::out_s8) {
    tc_.resize(nc);
    for (int64_t i = 0; i < nc; ++i)
      tc_[i] = static_cast<uint8_t>(static_cast<int8_t>(static_cast<int>(c_[i])));
  } else if (dt.out != DataType::out_f32) {
    tc_.resize(2 * nc);
    uint16_t* h = reinterpret_cast<uint16_t*>(tc_.data());
    for (int64_t i = 0; i < nc; ++i)
      h[i] = dt.out == DataType::out_bf16 ? to_bf16(c_[i]) : to_f16(c_[i]);
  }
  if (dt.in == DataType::u8s8) {
    a_scale_.assign(in[3]->data(), in[3]->data() + in[3]->size());
    b_scale_ = (*in[4])[0];
    b_zero_ = static_cast<int32_t>((*in[5])[0]);
    c_scale_ = (*in[6])[0];
  }
}

std::vector<Tensor> HostGemm::result() {
  std::vector<Tensor> out;
  out.push_back(c_.clone());
  const DataType::Out o = d_.dt.out;
  if (o != DataType::out_f32) {
    Tensor& c = out.back();
    const uint16_t* h = reinterpret_cast<const uint16_t*>(tc_.data());
    for (int64_t i = 0; i < c.size(); ++i)
      c[i] = o == DataType::out_s8     ? static_cast<float>(static_cast<int8_t>(tc_[i]))
             : o == DataType::out_bf16 ? from_bf16(h[i])
                                       : from_f16(h[i]);
  }
  return out;
}

}  // namespace pb
