// onednn/auto LRN: oneDNN's lrn_across_channels in its blocked layout (reorders from and to
// NCHW in reorder_in/reorder_out). fwd times forward_inference; bwd runs forward_training in
// forward_state() for the workspace (untimed, as the forward's record) and times lrn_backward.
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kernels/core/error.h"
#include "kernels/lrn/cpu/host_lrn.h"
#include "kernels/vendor_onednn.h"

namespace pb {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

class LrnOnednn : public HostLrn {
 public:
  std::string name() const override { return "onednn/auto"; }
  void reorder_in() override {
    for (auto& r : in_reorders_) r.first.execute(onednn::stream(), r.second);
  }
  void run() override { prim_.execute(onednn::stream(), args_); }
  void reorder_out() override {
    if (out_reorder_) out_reorder_.execute(onednn::stream(), out_args_);
  }
  void sync() override { onednn::stream().wait(); }
  size_t workspace_bytes() const override { return ws_ ? ws_.get_desc().get_size() : 0; }

  // Backward: the forward's workspace from the new source (in oneDNN's layout).
  void forward_state() override {
    if (dir_ != Dir::bwd) return;
    reorder_in();
    fwd_.execute(onednn::stream(), fwd_args_);
    onednn::stream().wait();
  }

 protected:
  void prepare_more() override {
    try {
      const LrnDesc& d = d_;
      auto& eng = onednn::engine();
      const memory::dims dims{d.mb, d.ic, d.ih, d.iw};
      const memory::desc user(dims, dt::f32, tag::nchw);
      // oneDNN's own layout: its jit LRN (forward and backward) runs on 16- or 8-channel blocks;
      // on NCHW 2.6 has only a reference backward (about 15x slower at AlexNet's norm1). The
      // conversions are the layer contract's reorders, as for oneDNN's convolutions.
      const tag block = onednn::blocked_act_tag(d.ic);
      const memory::desc md = block != tag::undef ? memory::desc(dims, dt::f32, block)
                              : d.ic % 8 == 0     ? memory::desc(dims, dt::f32, tag::nChw8c)
                                                  : user;
      const auto alg = dnnl::algorithm::lrn_across_channels;
      const auto prop =
          dir_ == Dir::fwd ? dnnl::prop_kind::forward_inference : dnnl::prop_kind::forward_training;
      const float a = static_cast<float>(d.alpha), b = static_cast<float>(d.beta),
                  k = static_cast<float>(d.k);
      dnnl::lrn_forward::primitive_desc fpd(dnnl::lrn_forward::desc(prop, alg, md, d.ls, a, b, k),
                                            eng);
      fwd_ = dnnl::lrn_forward(fpd);
      // An input in oneDNN's layout: the user's tensor itself, or a reorder into a copy.
      auto input = [&](const Tensor* t) {
        memory u(user, eng, const_cast<float*>(t->data()));
        if (md == user) return u;
        memory m(md, eng);
        in_reorders_.push_back({dnnl::reorder(u, m), {{DNNL_ARG_FROM, u}, {DNNL_ARG_TO, m}}});
        return m;
      };
      memory out_user(user, eng, out_.data());
      memory out = md == user ? out_user : memory(md, eng);
      if (md != user) {
        out_reorder_ = dnnl::reorder(out, out_user);
        out_args_ = {{DNNL_ARG_FROM, out}, {DNNL_ARG_TO, out_user}};
      }
      const memory src = input(src_);
      if (dir_ == Dir::fwd) {
        prim_ = fwd_;
        args_ = {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, out}};
        return;
      }
      fwd_args_ = {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, memory(md, eng)}};
      if (fpd.workspace_desc().get_size()) {
        ws_ = memory(fpd.workspace_desc(), eng);
        fwd_args_[DNNL_ARG_WORKSPACE] = ws_;
      }
      dnnl::lrn_backward::primitive_desc bpd(dnnl::lrn_backward::desc(alg, md, md, d.ls, a, b, k),
                                             eng, fpd);
      prim_ = dnnl::lrn_backward(bpd);
      args_ = {{DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, input(dy_)}, {DNNL_ARG_DIFF_SRC, out}};
      if (ws_) args_[DNNL_ARG_WORKSPACE] = ws_;
    } catch (const dnnl::error& e) {
      onednn::rethrow(e, "oneDNN LRN");
    }
  }

 private:
  std::vector<std::pair<dnnl::primitive, std::unordered_map<int, memory>>> in_reorders_;
  dnnl::primitive prim_, out_reorder_;
  std::unordered_map<int, memory> args_, out_args_, fwd_args_;
  dnnl::lrn_forward fwd_;
  memory ws_;
};

}  // namespace

std::unique_ptr<LrnImpl> make_lrn_onednn() {
  return std::make_unique<LrnOnednn>();
}

}  // namespace pb
