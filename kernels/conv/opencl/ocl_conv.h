// Shared base of the OpenCL convolutions: owns the device buffers of each direction (inputs,
// outputs, workspaces), builds programs, keeps the kernel launches that run() enqueues and their
// times, runs the weight transforms on the device, and adds the bias gradient (and the sum of
// per-chunk partial gradients) to bwd_w. Inputs may be bound to a network's device buffers
// (bind_device): then nothing is transferred, and weights() transforms new weights there.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/conv/conv.h"
#include "kernels/gemm/opencl/tiled_params.h"
#include "kernels/opencl/runtime.h"

namespace pb {

class OclConv : public DirConv {
 public:
  // 32-bit sizes, then DirConv's check by direction.
  Support supports(const ConvDesc& d, Dir dir) const override;
  // Uploads (or binds) the direction's inputs and allocates its outputs, calls prepare_fwd /
  // prepare_bwd_d / prepare_bwd_w (bwd_w: then adds the bias-gradient step), transforms the
  // weights and runs once (PoCL compiles at the first enqueue).
  void plan(const ConvDesc& d, Dir dir, const std::vector<const Tensor*>& in) override;
  void run() override;  // enqueues every step but the weight transforms, in order
  bool bind_device(const std::vector<void*>& dev) override { return inputs_.bind(dev); }
  bool reads_inputs_in_place() const override { return inputs_.any_bound(); }
  // Enqueues the weight transforms (repacks, flips, Winograd/FFT filter maps) on the device.
  void weights() override;
  void* device_output(size_t i) const override;
  void sync() override { ocl::finish(); }
  // fwd {dst}, bwd_d {diff_src}, bwd_w {diff_wei, diff_bias}.
  std::vector<Tensor> result() override;
  size_t workspace_bytes() const override { return ws_bytes_; }
  std::vector<std::pair<std::string, double>> extra_counters() const override;

 protected:
  // fwd: src_ and wraw_ (the weights, goihw) hold the inputs; transforms the weights as the
  // algorithm needs (add_filter_map, or wei_ = wraw_ shared), allocates workspaces, adds steps.
  virtual void prepare_fwd() = 0;
  // bwd_d: diff_dst_ and wraw_ hold the inputs; adds the weight transforms and the steps that
  // write diff_src_ (mb x ic x ih x iw).
  virtual void prepare_bwd_d();
  // bwd_w: src_ and diff_dst_ hold the inputs; adds the steps that write diff_wei_
  // (g x ocg x icg x kh x kw). The base adds the bias gradient (diff_bias_) after them.
  virtual void prepare_bwd_w();

  // One kernel launch of run(); the kernel's arguments are set once, in prepare_fwd().
  struct Step {
    std::string name;      // the kernel's name, for the per-kernel time counters
    bool weights = false;  // a weight transform: weights() runs it, run() does not
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

  // A weight transform (filter_map.cl): each filter (gi, o, c) of wraw_, its kh * kw taps t,
  // gives `a` values out[gi * sg + ooff[o] + coff[c] + aoff[j]] = sum_t coef[j * taps + t] w[t]
  // for j < a. `out` is zeroed first (positions no filter writes stay 0) unless the map is
  // dense. It runs in weights(), never in run().
  struct FilterMap {
    int64_t a = 0;
    std::vector<float> coef;                // a x taps
    std::vector<int64_t> aoff, ooff, coff;  // a, ocg, icg entries
    int64_t sg = 0;
    bool dense = false;  // writes each element of `out` exactly once: no zeroing first
  };
  // The map that copies tap t to aoff[t] = t * tap_stride (a repack; flipped: t -> taps-1-t).
  FilterMap copy_map(int64_t tap_stride, bool flip = false) const;
  void add_filter_map(const FilterMap& m, ocl::Buffer& out);

  // A launch of gemm/tiled.cl's gemm_tiled_batched (column-major, no transposes, alpha 1): for
  // b < batch, C_b (M x N) = A_b (M x K) * B_b (K x N) + beta C_b with A_b = A + a_off + b * sa,
  // B_b = B + b_off + (b % gb) * sb, C_b = C + c_off + b * sc. beta 0 never reads C.
  struct GemmArgs {
    int64_t m, n, k;
    const ocl::Buffer* a;
    int64_t a_off, lda, sa;
    const ocl::Buffer* b;
    int64_t b_off, ldb, sb, gb;
    const ocl::Buffer* c;
    int64_t c_off, ldc, sc, batch;
    float beta = 0.0f;
  };
  void add_gemm(const GemmArgs& g);
  // out[i] = part[i] + part[n + i] + ... + part[(parts - 1) * n + i] for i < n, in that order
  // (conv_bwd.cl): deterministic sum of per-chunk partial gradients.
  void add_sum_partials(const ocl::Buffer& part, int64_t parts, int64_t n, const ocl::Buffer& out);

  ConvDesc d_;
  Dir dir_ = Dir::fwd;
  ocl::Buffer wraw_;                  // fwd, bwd_d: the weights as given (goihw)
  ocl::Buffer src_, wei_, dst_;       // fwd: src, weights as the kernels read them, dst
  ocl::Buffer diff_dst_;              // bwd_d, bwd_w: the input diff_dst
  ocl::Buffer diff_src_;              // bwd_d: the output
  ocl::Buffer diff_wei_, diff_bias_;  // bwd_w: the outputs

 private:
  void add_bias_grad();        // diff_bias_ from diff_dst_ (conv_bwd.cl)
  void enqueue(bool weights);  // the weight transforms, or the other steps

  ocl::Inputs inputs_;
  std::vector<ocl::Buffer> map_tables_;  // the filter maps' coefficient and offset tables
  std::vector<std::unique_ptr<Step>> steps_;
  TiledParams gemm_params_ = TiledParams::from_env();
  size_t ws_bytes_ = 0;
  std::string warmed_;  // the problem plan() last ran once to trigger PoCL's compiles
  double build_ms_ = 0;
  bool cache_hit_ = true;
};

// Bytes a workspace may take before an algorithm splits the batch into chunks of images.
constexpr size_t kOclConvWorkspaceCap = size_t{256} << 20;

}  // namespace pb
