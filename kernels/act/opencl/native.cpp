// ocl/native activations: our own kernels (native.cl): element-wise functions one work-item per
// element, softmax and cross-entropy one work-item per (n, position).
#include <string>
#include <vector>

#include "kernels/act/act.h"
#include "kernels/core/error.h"
#include "kernels/opencl/runtime.h"

namespace pb {
namespace {

class ActOclNative : public ActImpl {
 public:
  std::string name() const override { return "ocl/native"; }

  Support supports(const ActDesc& d, Dir dir) const override {
    if (dir != Dir::fwd && dir != Dir::bwd) return Support::no("act runs fwd and bwd");
    if (d.size() >= (int64_t(1) << 31)) return Support::no("tensors must have < 2^31 elements");
    return Support::yes();
  }

  void plan(const ActDesc& d, Dir dir, const std::vector<const Tensor*>& in) override {
    d_ = d;
    dir_ = dir;
    in_.clear(), out_.clear();  // plan() may be called again (a network's next step)
    int func = d.func == ActFunc::relu ? 0 : d.func == ActFunc::sigmoid ? 1 : 2;
    cl_program prog = build_.load("act/native.cl", "-DFUNC=" + std::to_string(func));
    for (size_t i = 0; i < in.size(); ++i) in_.push_back(inputs_.get(i, *in[i]));
    out_.emplace_back(static_cast<size_t>(d.size()) * 4);
    const bool xent_fwd = d.func == ActFunc::xent && dir == Dir::fwd;
    out_.emplace_back(xent_fwd ? static_cast<size_t>(d.positions()) * 4 : 4);
    const int ic = int(d.ic), hw = int(d.hw());
    if (d.eltwise()) {
      kernel_ = ocl::Kernel(prog, dir == Dir::fwd ? "eltwise_fwd" : "eltwise_bwd");
      if (dir == Dir::fwd)
        kernel_.set_args(in_[0], out_[0]);
      else
        kernel_.set_args(in_[0], in_[1], out_[0]);
      dims_ = 1, global_[0] = d.size();
    } else if (d.func == ActFunc::softmax && dir == Dir::bwd) {
      kernel_ = ocl::Kernel(prog, "softmax_bwd");
      kernel_.set_args(ic, hw, in_[0], in_[1], out_[0]);
      dims_ = 2, global_[0] = d.hw(), global_[1] = d.mb;
    } else {
      const int mode = d.func == ActFunc::softmax ? 0 : dir == Dir::fwd ? 1 : 2;
      kernel_ = ocl::Kernel(prog, "softmax_fwd");
      kernel_.set_args(ic, hw, mode, in_[0], in_.size() > 1 ? in_[1] : in_[0], out_[0], out_[1]);
      dims_ = 2, global_[0] = d.hw(), global_[1] = d.mb;
    }
    run();  // PoCL compiles at the first enqueue: do it here, untimed
    ocl::finish();
  }

  void run() override { kernel_.enqueue(dims_, global_, nullptr, &event_); }
  void sync() override { ocl::finish(); }
  bool bind_device(const std::vector<void*>& dev) override { return inputs_.bind(dev); }
  bool reads_inputs_in_place() const override { return inputs_.any_bound(); }
  void* device_output(size_t i) const override {
    const size_t n = d_.func == ActFunc::xent && dir_ == Dir::fwd ? 2 : 1;
    return i < n ? out_[i].get() : nullptr;
  }

  std::vector<Tensor> result() override {
    std::vector<Tensor> v;
    v.emplace_back(Dims{d_.mb, d_.ic, d_.ih, d_.iw});
    out_[0].download(v[0].data(), v[0].bytes());
    if (d_.func == ActFunc::xent && dir_ == Dir::fwd) {
      v.emplace_back(Dims{d_.mb, d_.ih, d_.iw});
      out_[1].download(v[1].data(), v[1].bytes());
    }
    return v;
  }

  std::vector<std::pair<std::string, double>> extra_counters() const override {
    return build_.counters(event_.elapsed_ms());
  }

 private:
  ActDesc d_;
  Dir dir_ = Dir::fwd;
  std::vector<ocl::Buffer> in_, out_;
  ocl::Inputs inputs_;
  ocl::Kernel kernel_;
  ocl::Event event_;
  cl_uint dims_ = 1;
  size_t global_[3] = {1, 1, 1};
  ocl::BuildStats build_;
};

}  // namespace

std::unique_ptr<ActImpl> make_act_ocl_native() {
  return std::make_unique<ActOclNative>();
}

}  // namespace pb
