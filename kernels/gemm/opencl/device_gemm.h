// Shared base of the OpenCL GEMMs: A, B and C in device buffers uploaded by prepare(), clFinish
// as sync(), and C downloaded as the result.
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
  std::vector<Tensor> result() override {
    std::vector<Tensor> out;
    out.emplace_back(Dims{d_.n, d_.ldc});
    c_.download(out[0].data(), c_.bytes());
    return out;
  }

 protected:
  // Keeps the descriptor and uploads A, B and C (the whole ld x cols arrays).
  void upload(const GemmDesc& d, const std::vector<const Tensor*>& in) {
    d_ = d;
    a_ = ocl::Buffer(static_cast<size_t>(d.a_size()) * sizeof(float), CL_MEM_READ_ONLY);
    b_ = ocl::Buffer(static_cast<size_t>(d.b_size()) * sizeof(float), CL_MEM_READ_ONLY);
    c_ = ocl::Buffer(static_cast<size_t>(d.c_size()) * sizeof(float), CL_MEM_READ_WRITE);
    a_.upload(in[0]->data(), a_.bytes());
    b_.upload(in[1]->data(), b_.bytes());
    c_.upload(in[2]->data(), c_.bytes());
  }

  GemmDesc d_;
  ocl::Buffer a_, b_, c_;
};

}  // namespace pb
