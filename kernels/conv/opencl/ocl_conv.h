// Shared base of the OpenCL convolutions: owns the device buffers (src, weights, dst, workspaces),
// builds programs, keeps the list of kernel launches that run() enqueues, and sums their times.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/conv/conv.h"
#include "kernels/gemm/opencl/tiled_params.h"
#include "kernels/opencl/runtime.h"

namespace pb {

size_t ocl_round_up(int64_t x, int64_t to);

class OclConv : public ConvImpl {
 public:
  Support supports(const ConvDesc& d, Dir dir) const override;
  // Uploads src, calls prepare_fwd(), then runs once (PoCL compiles at the first enqueue).
  void prepare(const ConvDesc& d, Dir dir, const std::vector<const Tensor*>& in) override;
  void run() override;  // enqueues every step, in order
  void sync() override { ocl::finish(); }
  std::vector<Tensor> result() override;
  size_t workspace_bytes() const override { return ws_bytes_; }
  std::vector<std::pair<std::string, double>> extra_counters() const override;

 protected:
  // The algorithm's domain (the base already checked fwd and 32-bit sizes).
  virtual Support supports_fwd(const ConvDesc&) const { return Support::yes(); }
  // Uploads weights (transformed as the algorithm needs), allocates workspaces, adds steps.
  virtual void prepare_fwd(const Tensor& wei) = 0;

  // One kernel launch of run(); the kernel's arguments are set once, in prepare_fwd().
  struct Step {
    std::string name;  // the kernel's name, for the per-kernel time counters
    ocl::Kernel kernel;
    cl_uint dims = 1;
    size_t global[3] = {1, 1, 1}, local[3] = {1, 1, 1};
    ocl::Event event;
  };
  // Builds (or loads) `key` with `options`, counting build time and cache hits.
  cl_program program(const std::string& key, const std::string& options);
  // Adds a launch of `kernel` of `prog`; global sizes are rounded up to the local ones.
  ocl::Kernel& add_step(cl_program prog, const char* kernel, cl_uint dims, const size_t* global,
                        const size_t* local);
  ocl::Buffer workspace(size_t bytes);  // a device buffer counted in workspace_bytes()

  // A launch of gemm/tiled.cl's gemm_tiled_batched (column-major, no transposes, alpha 1, beta
  // 0): for b < batch, C_b (M x N) = A_b (M x K) * B_b (K x N) with A_b = A + a_off + b * sa,
  // B_b = B + b_off + (b % gb) * sb, C_b = C + c_off + b * sc.
  struct GemmArgs {
    int64_t m, n, k;
    const ocl::Buffer* a;
    int64_t a_off, lda, sa;
    const ocl::Buffer* b;
    int64_t b_off, ldb, sb, gb;
    const ocl::Buffer* c;
    int64_t c_off, ldc, sc, batch;
  };
  void add_gemm(const GemmArgs& g);

  ConvDesc d_;
  ocl::Buffer src_, wei_, dst_;

 private:
  std::vector<std::unique_ptr<Step>> steps_;
  TiledParams gemm_params_ = TiledParams::from_env();
  size_t ws_bytes_ = 0;
  double build_ms_ = 0;
  bool cache_hit_ = true;
};

// Bytes a workspace may take before an algorithm splits the batch into chunks of images.
constexpr size_t kOclConvWorkspaceCap = size_t{256} << 20;

}  // namespace pb
