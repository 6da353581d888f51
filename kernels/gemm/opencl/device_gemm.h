// Shared base of the OpenCL GEMMs: A, B and C in device buffers uploaded by plan() (or bound
// to a network's buffers: then C is updated in place, as BLAS does), clFinish as sync(), and C
// downloaded as the result.
#pragma once

#include <vector>

#include "kernels/gemm/gemm.h"
#include "kernels/opencl/runtime.h"

namespace pb {

class DeviceGemm : public GemmImpl {
 public:
  Support supports(const GemmDesc& d, Dir dir) const override {
    if (dir != Dir::fwd) return Support::no("GEMM has only the fwd direction");
    if (!d.dt.is_f32()) return Support::no(dt_reason(d.dt));
    return Support::yes();
  }
  void sync() override { ocl::finish(); }
  bool bind_device(const std::vector<void*>& dev) override { return inputs_.bind(dev); }
  bool reads_inputs_in_place() const override { return inputs_.any_bound(); }
  void* device_output(size_t i) const override { return i == 0 ? c_.get() : nullptr; }
  std::vector<Tensor> result() override {
    std::vector<Tensor> out;
    out.emplace_back(Dims{d_.n, d_.ldc});
    c_.download(out[0].data(), c_.bytes());
    return out;
  }

 protected:
  // Keeps the descriptor and uploads (or binds) A, B and C (the whole ld x cols arrays).
  void upload(const GemmDesc& d, const std::vector<const Tensor*>& in) {
    d_ = d;
    a_ = inputs_.get(0, *in[0]);
    b_ = inputs_.get(1, *in[1]);
    c_ = inputs_.get(2, *in[2], CL_MEM_READ_WRITE);
  }

  // Why a reduced type does not run: no OpenCL GEMM here has a half or integer kernel yet; for
  // f16, whether the device could run one (cl_khr_fp16) decides what is missing.
  static std::string dt_reason(const DataType& dt) {
    if (dt.in != DataType::f16)
      return "dt " + dt.in_str() +
             ": the OpenCL GEMMs run f32 only (OpenCL C has no bf16 or "
             "int8 dot-product type)";
    std::string dev;
    try {
      const ocl::DeviceInfo& info = ocl::device_info();
      dev = info.name + (info.fp16 ? " has cl_khr_fp16" : " has no cl_khr_fp16");
    } catch (const std::exception& e) {
      dev = e.what();
    }
    return "dt f16: no f16 GEMM kernel in the OpenCL GEMMs yet (device " + dev + ")";
  }

  GemmDesc d_;
  ocl::Inputs inputs_;
  ocl::Buffer a_, b_, c_;
};

}  // namespace pb
