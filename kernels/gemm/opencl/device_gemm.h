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
  Support supports(const GemmDesc&, Dir dir) const override {
    return dir == Dir::fwd ? Support::yes() : Support::no("GEMM has only the fwd direction");
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

  GemmDesc d_;
  ocl::Inputs inputs_;
  ocl::Buffer a_, b_, c_;
};

}  // namespace pb
