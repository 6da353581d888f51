// onednn/auto batch-norm: oneDNN's batch_normalization on our NCHW tensors (no reorders). Only
// the primitive is timed; the running-statistics update (ic values, which oneDNN does not do)
// happens in result(). Fused-ReLU backward needs oneDNN's workspace: forward_state() runs the
// forward (training) to make it.
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>

#include "kernels/bnorm/cpu/host_bnorm.h"
#include "kernels/core/error.h"
#include "kernels/vendor_onednn.h"

namespace pb {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;
using nf = dnnl::normalization_flags;

class BnormOnednn : public HostBnorm {
 public:
  std::string name() const override { return "onednn/auto"; }
  void run() override { prim_.execute(onednn::stream(), args_); }
  void sync() override { onednn::stream().wait(); }
  std::vector<Tensor> result() override {
    if (dir_ == Dir::fwd && !d_.inference)
      for (int64_t c = 0; c < d_.ic; ++c) update_running(c, out_[1][c], out_[2][c]);
    return HostBnorm::result();
  }

 protected:
  void prepare_more() override {
    try {
      fwd_ = dnnl::primitive();
      const BnormDesc& d = d_;
      auto& eng = onednn::engine();
      memory::desc data_md({d.mb, d.ic, d.ih, d.iw}, dt::f32, tag::nchw);
      memory::desc vec_md({d.ic}, dt::f32, tag::x);
      auto flags = static_cast<nf>(0);
      if (d.inference) flags |= nf::use_global_stats;
      if (d.scale) flags |= nf::use_scale;
      if (d.shift) flags |= nf::use_shift;
      if (d.relu) flags |= nf::fuse_norm_relu;
      auto mem = [&](const memory::desc& md, const Tensor* t) {
        return memory(md, eng, const_cast<float*>(t->data()));
      };
      auto eps = static_cast<float>(d.eps);
      const bool train = !d.inference;
      auto fprop = dir_ == Dir::fwd && !train ? dnnl::prop_kind::forward_inference
                                              : dnnl::prop_kind::forward_training;
      dnnl::batch_normalization_forward::primitive_desc fpd(
          dnnl::batch_normalization_forward::desc(fprop, data_md, eps, flags), eng);
      std::unordered_map<int, memory> fargs{{DNNL_ARG_SRC, mem(data_md, src_)}};
      if (d.scale) fargs[DNNL_ARG_SCALE] = mem(vec_md, scale_);
      if (d.shift) fargs[DNNL_ARG_SHIFT] = mem(vec_md, shift_);
      if (dir_ == Dir::fwd) {
        fargs[DNNL_ARG_DST] = memory(data_md, eng, out_[0].data());
        if (train) {
          fargs[DNNL_ARG_MEAN] = memory(vec_md, eng, out_[1].data());
          fargs[DNNL_ARG_VARIANCE] = memory(vec_md, eng, out_[2].data());
          if (d.relu) fargs[DNNL_ARG_WORKSPACE] = memory(fpd.workspace_desc(), eng);
        } else {
          fargs[DNNL_ARG_MEAN] = mem(vec_md, mean_);
          fargs[DNNL_ARG_VARIANCE] = mem(vec_md, var_);
        }
        prim_ = dnnl::batch_normalization_forward(fpd);
        args_ = fargs;
        return;
      }
      // Backward: the forward's workspace (ReLU mask) when the ReLU is fused.
      if (d.relu) {
        tmp_ = Tensor({d.mb, d.ic, d.ih, d.iw});
        fargs[DNNL_ARG_DST] = memory(data_md, eng, tmp_.data());
        ws_ = memory(fpd.workspace_desc(), eng);
        fargs[DNNL_ARG_WORKSPACE] = ws_;
        if (train) {
          stats_.clear();
          stats_.emplace_back(Dims{d.ic});
          stats_.emplace_back(Dims{d.ic});
          fargs[DNNL_ARG_MEAN] = memory(vec_md, eng, stats_[0].data());
          fargs[DNNL_ARG_VARIANCE] = memory(vec_md, eng, stats_[1].data());
        } else {
          fargs[DNNL_ARG_MEAN] = mem(vec_md, mean_);
          fargs[DNNL_ARG_VARIANCE] = mem(vec_md, var_);
        }
        fwd_ = dnnl::batch_normalization_forward(fpd);
        fwd_args_ = fargs;
      }
      auto bprop = d.scale || d.shift ? dnnl::prop_kind::backward : dnnl::prop_kind::backward_data;
      dnnl::batch_normalization_backward::primitive_desc bpd(
          dnnl::batch_normalization_backward::desc(bprop, data_md, data_md, eps, flags), eng, fpd);
      prim_ = dnnl::batch_normalization_backward(bpd);
      args_ = {{DNNL_ARG_SRC, mem(data_md, src_)},
               {DNNL_ARG_DIFF_DST, mem(data_md, dy_)},
               {DNNL_ARG_MEAN, mem(vec_md, mean_)},
               {DNNL_ARG_VARIANCE, mem(vec_md, var_)},
               {DNNL_ARG_DIFF_SRC, memory(data_md, eng, out_[0].data())}};
      size_t o = 1;
      if (d.scale) {
        args_[DNNL_ARG_SCALE] = mem(vec_md, scale_);
        args_[DNNL_ARG_DIFF_SCALE] = memory(vec_md, eng, out_[o++].data());
      }
      if (d.shift) {
        args_[DNNL_ARG_SHIFT] = mem(vec_md, shift_);
        args_[DNNL_ARG_DIFF_SHIFT] = memory(vec_md, eng, out_[o].data());
      }
      if (d.relu) args_[DNNL_ARG_WORKSPACE] = ws_;
    } catch (const dnnl::error& e) {
      onednn::rethrow(e, "oneDNN batch_normalization");
    }
  }

 public:
  // Backward with the ReLU fused: the forward's workspace (its ReLU mask), from the new source.
  void forward_state() override {
    if (!fwd_) return;
    fwd_.execute(onednn::stream(), fwd_args_);
    onednn::stream().wait();
  }

 private:
  dnnl::primitive fwd_;
  std::unordered_map<int, memory> fwd_args_;
  dnnl::primitive prim_;
  std::unordered_map<int, memory> args_;
  memory ws_;
  Tensor tmp_;
  std::vector<Tensor> stats_;
};

}  // namespace

std::unique_ptr<BnormImpl> make_bnorm_onednn() {
  return std::make_unique<BnormOnednn>();
}

}  // namespace pb
