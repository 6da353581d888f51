// ocl/native pooling: our own kernels (native.cl), one work-item per output element forward and
// per input element backward (a gather through the argmax workspace: deterministic, no atomics).
#include <string>
#include <vector>

#include "kernels/core/error.h"
#include "kernels/opencl/runtime.h"
#include "kernels/pool/pool.h"

namespace pb {
namespace {

class PoolOclNative : public PoolImpl {
 public:
  std::string name() const override { return "ocl/native"; }

  Support supports(const PoolDesc& d, Dir dir) const override {
    if (dir != Dir::fwd && dir != Dir::bwd) return Support::no("pool runs fwd and bwd");
    if (d.src_size() >= (int64_t(1) << 31)) return Support::no("tensors must have < 2^31 elements");
    return Support::yes();
  }

  void plan(const PoolDesc& d, Dir dir, const std::vector<const Tensor*>& in) override {
    d_ = d;
    dir_ = dir;
    const bool max = d.alg == PoolAlg::max;
    std::string opts = "-DALG=" + std::to_string(static_cast<int>(d.alg)) +
                       " -DWS_T=" + (d.ws_elem_bytes() == 1 ? "uchar" : "int");
    cl_program prog = build_.load("pool/native.cl", opts);
    src_ = inputs_.get(0, *in[0]);
    dst_ = ocl::Buffer(static_cast<size_t>(d.dst_size()) * 4);
    ws_ = ocl::Buffer(max && dir == Dir::bwd ? static_cast<size_t>(d.dst_size()) * d.ws_elem_bytes()
                                             : 1);
    fwd_ = ocl::Kernel(prog, "pool_fwd");
    set_shape(fwd_);
    fwd_.set_arg(10, src_);
    fwd_.set_arg(11, dst_);
    fwd_.set_arg(12, ws_);
    fwd_.set_arg(13, static_cast<int>(max && dir == Dir::bwd));
    gfwd_[0] = d.ow, gfwd_[1] = d.oh, gfwd_[2] = d.mb * d.ic;
    // The forward runs once here: PoCL compiles at the first enqueue, and max backward needs
    // its argmax workspace.
    fwd_.enqueue(3, gfwd_, nullptr);
    if (dir == Dir::bwd) {
      dy_ = inputs_.get(1, *in[1]);
      dx_ = ocl::Buffer(in[0]->bytes());
      bwd_ = ocl::Kernel(prog, "pool_bwd");
      set_shape(bwd_);
      bwd_.set_arg(10, dy_);
      bwd_.set_arg(11, ws_);
      bwd_.set_arg(12, dx_);
      gbwd_[0] = d.iw, gbwd_[1] = d.ih, gbwd_[2] = d.mb * d.ic;
      bwd_.enqueue(3, gbwd_, nullptr);
    }
    ocl::finish();
  }

  void run() override {
    if (dir_ == Dir::fwd)
      fwd_.enqueue(3, gfwd_, nullptr, &event_);
    else
      bwd_.enqueue(3, gbwd_, nullptr, &event_);
  }
  void sync() override { ocl::finish(); }
  bool bind_device(const std::vector<void*>& dev) override { return inputs_.bind(dev); }
  bool reads_inputs_in_place() const override { return inputs_.any_bound(); }
  // Backward: its argmax workspace from the source (the forward's record).
  void forward_state() override {
    if (dir_ == Dir::bwd) fwd_.enqueue(3, gfwd_, nullptr);
  }
  void* device_output(size_t i) const override {
    return i == 0 ? (dir_ == Dir::fwd ? dst_ : dx_).get() : nullptr;
  }

  std::vector<Tensor> result() override {
    std::vector<Tensor> v;
    if (dir_ == Dir::fwd) {
      v.emplace_back(Dims{d_.mb, d_.ic, d_.oh, d_.ow});
      dst_.download(v[0].data(), v[0].bytes());
    } else {
      v.emplace_back(Dims{d_.mb, d_.ic, d_.ih, d_.iw});
      dx_.download(v[0].data(), v[0].bytes());
    }
    return v;
  }

  size_t workspace_bytes() const override { return ws_.bytes() > 1 ? ws_.bytes() : 0; }
  std::vector<std::pair<std::string, double>> extra_counters() const override {
    return build_.counters(event_.elapsed_ms());
  }

 private:
  void set_shape(ocl::Kernel& k) const {
    const PoolDesc& d = d_;
    k.set_args(int(d.ih), int(d.iw), int(d.oh), int(d.ow), int(d.kh), int(d.kw), int(d.sh),
               int(d.sw), int(d.ph), int(d.pw));
  }

  PoolDesc d_;
  Dir dir_ = Dir::fwd;
  ocl::Buffer src_, dst_, ws_, dy_, dx_;
  ocl::Inputs inputs_;
  ocl::Kernel fwd_, bwd_;
  ocl::Event event_;
  size_t gfwd_[3] = {1, 1, 1}, gbwd_[3] = {1, 1, 1};
  ocl::BuildStats build_;
};

}  // namespace

std::unique_ptr<PoolImpl> make_pool_ocl_native() {
  return std::make_unique<PoolOclNative>();
}

}  // namespace pb
