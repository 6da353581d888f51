// ocl/native LRN: our own kernels (native.cl), one work-item per element, forward and backward
// (the backward recomputes the window sums: no workspace).
#include <string>
#include <vector>

#include "kernels/core/error.h"
#include "kernels/lrn/lrn.h"
#include "kernels/opencl/runtime.h"

namespace pb {
namespace {

class LrnOclNative : public LrnImpl {
 public:
  std::string name() const override { return "ocl/native"; }

  Support supports(const LrnDesc& d, Dir dir) const override {
    if (dir != Dir::fwd && dir != Dir::bwd) return Support::no("lrn runs fwd and bwd");
    if (d.size() >= (int64_t(1) << 31)) return Support::no("tensors must have < 2^31 elements");
    return Support::yes();
  }

  void plan(const LrnDesc& d, Dir dir, const std::vector<const Tensor*>& in) override {
    d_ = d;
    dir_ = dir;
    cl_program prog = build_.load("lrn/native.cl", "-DHALF=" + std::to_string(d.half()) +
                                                       (d.beta == 0.75 ? " -DBETA075" : ""));
    src_ = inputs_.get(0, *in[0]);
    out_ = ocl::Buffer(in[0]->bytes());
    const float a = static_cast<float>(d.alpha / d.ls), k = static_cast<float>(d.k),
                beta = static_cast<float>(d.beta);
    global_[0] = static_cast<size_t>(d.hw()), global_[1] = static_cast<size_t>(d.ic),
    global_[2] = static_cast<size_t>(d.mb);
    if (dir == Dir::fwd) {
      kernel_ = ocl::Kernel(prog, "lrn_fwd");
      kernel_.set_args(src_, out_, int(d.ic), int(d.hw()), a, k, beta);
    } else {
      dy_ = inputs_.get(1, *in[1]);
      kernel_ = ocl::Kernel(prog, "lrn_bwd");
      kernel_.set_args(src_, dy_, out_, int(d.ic), int(d.hw()), a, k, beta,
                       static_cast<float>(2 * d.alpha * d.beta / d.ls));
    }
    kernel_.enqueue(3, global_, nullptr);  // PoCL compiles at the first enqueue
    ocl::finish();
  }

  void run() override { kernel_.enqueue(3, global_, nullptr, &event_); }
  void sync() override { ocl::finish(); }
  bool bind_device(const std::vector<void*>& dev) override { return inputs_.bind(dev); }
  bool reads_inputs_in_place() const override { return inputs_.any_bound(); }
  void* device_output(size_t i) const override { return i == 0 ? out_.get() : nullptr; }

  std::vector<Tensor> result() override {
    std::vector<Tensor> v;
    v.emplace_back(Dims{d_.mb, d_.ic, d_.ih, d_.iw});
    out_.download(v[0].data(), v[0].bytes());
    return v;
  }
  std::vector<std::pair<std::string, double>> extra_counters() const override {
    return build_.counters(event_.elapsed_ms());
  }

 private:
  LrnDesc d_;
  Dir dir_ = Dir::fwd;
  ocl::Buffer src_, dy_, out_;
  ocl::Inputs inputs_;
  ocl::Kernel kernel_;
  ocl::Event event_;
  size_t global_[3] = {1, 1, 1};
  ocl::BuildStats build_;
};

}  // namespace

std::unique_ptr<LrnImpl> make_lrn_ocl_native() {
  return std::make_unique<LrnOclNative>();
}

}  // namespace pb
