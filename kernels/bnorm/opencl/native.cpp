// ocl/native batch-norm: our own kernels (native.cl): one work-group per channel for training
// forward and backward (deterministic work-group reductions, no float atomics), element-wise
// for inference forward.
#include <string>
#include <vector>

#include "kernels/bnorm/bnorm.h"
#include "kernels/core/error.h"
#include "kernels/opencl/runtime.h"

namespace pb {
namespace {

constexpr int kWG = 64;  // WG in native.cl

class BnormOclNative : public BnormImpl {
 public:
  std::string name() const override { return "ocl/native"; }

  Support supports(const BnormDesc& d, Dir dir) const override {
    if (dir != Dir::fwd && dir != Dir::bwd) return Support::no("bnorm runs fwd and bwd");
    if (d.size() >= (int64_t(1) << 31)) return Support::no("tensors must have < 2^31 elements");
    return Support::yes();
  }

  void plan(const BnormDesc& d, Dir dir, const std::vector<const Tensor*>& in) override {
    d_ = d;
    dir_ = dir;
    bufs_.clear(), outs_.clear();  // plan() may be called again (a network's next step)
    std::string opts = "-DWG=" + std::to_string(kWG) + " -DRELU=" + std::to_string(int(d.relu));
    cl_program prog = build_.load("bnorm/native.cl", opts);
    // Inputs in bnorm.h's order; gamma/beta default to 1/0 without the flags.
    const bool bwd = dir == Dir::bwd;
    for (size_t i = 0; i < in.size(); ++i) {
      const bool unit = i == (bwd ? 2u : 1u) && !d.scale, zero = i == (bwd ? 3u : 2u) && !d.shift;
      if (!unit && !zero) {
        bufs_.push_back(inputs_.get(i, *in[i], CL_MEM_READ_WRITE));
        continue;
      }
      Tensor t = in[i]->clone();
      t.fill(unit ? 1.0f : 0.0f);
      bufs_.emplace_back(t.bytes(), CL_MEM_READ_WRITE);
      bufs_.back().upload(t.data(), t.bytes());
    }
    // Outputs in bnorm.h's order, as indices into outs_.
    order_ = {0};
    if (!bwd && !d.inference) order_ = {0, 1, 2, 3, 4};
    if (bwd && d.scale) order_.push_back(1);
    if (bwd && d.shift) order_.push_back(2);
    const size_t data = static_cast<size_t>(d.size()) * 4, vec = static_cast<size_t>(d.ic) * 4;
    outs_.emplace_back(data);
    const int mb = int(d.mb), ic = int(d.ic), hw = int(d.hw());
    const float eps = float(d.eps);
    if (!bwd && d.inference) {
      kernel_ = ocl::Kernel(prog, "bn_fwd_inference");
      kernel_.set_args(ic, hw, eps, bufs_[0], bufs_[1], bufs_[2], bufs_[3], bufs_[4], outs_[0]);
      dims_ = 3, global_[0] = d.hw(), global_[1] = d.ic, global_[2] = d.mb;
      local_ = nullptr;
    } else if (!bwd) {
      for (int i = 0; i < 2; ++i) outs_.emplace_back(vec);
      kernel_ = ocl::Kernel(prog, "bn_fwd_training");
      // Running statistics: read from the inputs, written to outputs (every run is the same).
      outs_.emplace_back(vec);
      outs_.emplace_back(vec);
      kernel_.set_args(mb, ic, hw, eps, float(d.mom), bufs_[0], bufs_[1], bufs_[2], outs_[0],
                       outs_[1], outs_[2], bufs_[3], bufs_[4], outs_[3], outs_[4]);
      dims_ = 1, global_[0] = kWG * d.ic, local_ = lsize_;
    } else {
      outs_.emplace_back(vec);
      outs_.emplace_back(vec);
      kernel_ = ocl::Kernel(prog, "bn_bwd");
      kernel_.set_args(mb, ic, hw, eps, int(!d.inference), bufs_[0], bufs_[1], bufs_[2], bufs_[3],
                       bufs_[4], bufs_[5], outs_[0], outs_[1], outs_[2]);
      dims_ = 1, global_[0] = kWG * d.ic, local_ = lsize_;
    }
    run();  // PoCL compiles at the first enqueue: do it here, untimed
    ocl::finish();
  }

  void run() override { kernel_.enqueue(dims_, global_, local_, &event_); }
  void sync() override { ocl::finish(); }
  bool bind_device(const std::vector<void*>& dev) override { return inputs_.bind(dev); }
  bool reads_inputs_in_place() const override { return inputs_.any_bound(); }
  void* device_output(size_t i) const override {
    return i < order_.size() ? outs_[order_[i]].get() : nullptr;
  }

  std::vector<Tensor> result() override {
    std::vector<Tensor> v;
    for (size_t i = 0; i < order_.size(); ++i) {
      v.emplace_back(i == 0 ? Dims{d_.mb, d_.ic, d_.ih, d_.iw} : Dims{d_.ic});
      outs_[order_[i]].download(v.back().data(), v.back().bytes());
    }
    return v;
  }

  std::vector<std::pair<std::string, double>> extra_counters() const override {
    return build_.counters(event_.elapsed_ms());
  }

 private:
  BnormDesc d_;
  Dir dir_ = Dir::fwd;
  std::vector<ocl::Buffer> bufs_, outs_;
  std::vector<size_t> order_;
  ocl::Inputs inputs_;
  ocl::Kernel kernel_;
  ocl::Event event_;
  cl_uint dims_ = 1;
  size_t global_[3] = {1, 1, 1}, lsize_[3] = {kWG, 1, 1};
  const size_t* local_ = nullptr;
  ocl::BuildStats build_;
};

}  // namespace

std::unique_ptr<BnormImpl> make_bnorm_ocl_native() {
  return std::make_unique<BnormOclNative>();
}

}  // namespace pb
