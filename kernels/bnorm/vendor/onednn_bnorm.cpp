// onednn/auto batch-norm: oneDNN's batch_normalization in the data layout it runs fastest here.
// On our NCHW tensors oneDNN 2.6 has only its generic C++ implementation (ncsp_bnorm, 10-40x
// slower than its JIT ones), so, as a network of oneDNN convolutions hands it, the data is
// converted to the first of nChw16c, nChw8c and NHWC with a JIT implementation: reorder_in()
// converts the source (and the gradient), reorder_out() the result back (timed in the layer
// contract, as for the convolutions). The running-statistics update (ic values, which oneDNN does
// not do) happens in result(). Fused-ReLU backward needs oneDNN's workspace: forward_state()
// runs the forward (training) to make it.
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
  void reorder_in() override { onednn::convert(act_reorders_); }
  void reorder_out() override { onednn::convert(out_reorders_); }
  void sync() override { onednn::stream().wait(); }
  size_t workspace_bytes() const override { return ws_bytes_; }
  std::vector<Tensor> result() override {
    if (dir_ == Dir::fwd && !d_.inference)
      for (int64_t c = 0; c < d_.ic; ++c) update_running(c, out_[1][c], out_[2][c]);
    return HostBnorm::result();
  }

 protected:
  void prepare_more() override {
    try {
      fwd_ = dnnl::primitive();
      act_reorders_.clear(), out_reorders_.clear(), src_reorder_.clear();
      ws_bytes_ = 0;
      const BnormDesc& d = d_;
      auto& eng = onednn::engine();
      const memory::dims dims = {d.mb, d.ic, d.ih, d.iw};
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
      auto bprop = d.scale || d.shift ? dnnl::prop_kind::backward : dnnl::prop_kind::backward_data;
      using fwd_pd_t = dnnl::batch_normalization_forward::primitive_desc;
      using bwd_pd_t = dnnl::batch_normalization_backward::primitive_desc;
      auto make_fwd = [&](const memory::desc& md) {
        return fwd_pd_t(dnnl::batch_normalization_forward::desc(fprop, md, eps, flags), eng);
      };
      auto make_bwd = [&](const memory::desc& md, const fwd_pd_t& f) {
        return bwd_pd_t(dnnl::batch_normalization_backward::desc(bprop, md, md, eps, flags), eng,
                        f);
      };
      // The data layout: the first with a JIT implementation of this direction, else NCHW.
      const tag layout =
          onednn::first_jit_layout({tag::nChw16c, tag::nChw8c, tag::nhwc}, [&](tag t) {
            const memory::desc md(dims, dt::f32, t);
            fwd_pd_t f = make_fwd(md);
            return dir_ == Dir::fwd ? f.impl_info_str() : make_bwd(md, f).impl_info_str();
          });
      const memory::desc data_md(dims, dt::f32, layout);
      // A data tensor: the user's NCHW memory, or a buffer in data_md converted by `reorders`
      // (from the user's when `in`, else into it).
      auto data = [&](const Tensor* t, std::vector<onednn::Conversion>* reorders, bool in) {
        return onednn::user_or_converted(dims, t->data(), layout, reorders, in, &ws_bytes_);
      };
      fwd_pd_t fpd = make_fwd(data_md);
      const memory src = data(src_, &act_reorders_, true);
      std::unordered_map<int, memory> fargs{{DNNL_ARG_SRC, src}};
      if (d.scale) fargs[DNNL_ARG_SCALE] = mem(vec_md, scale_);
      if (d.shift) fargs[DNNL_ARG_SHIFT] = mem(vec_md, shift_);
      if (dir_ == Dir::fwd) {
        fargs[DNNL_ARG_DST] = data(&out_[0], &out_reorders_, false);
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
      // Backward: the forward's workspace (ReLU mask) when the ReLU is fused, made from the
      // source in data_md (converted untimed there: the forward's record) with the statistics
      // the backward is given, as the reference makes it: a forward recomputing them in fp32
      // flips the mask of the few outputs within rounding of zero (err 1e-3 on ResNet-50's
      // bn_conv1). That forward has use_global_stats, so its workspace must have the layout the
      // backward expects from its hint; where it does not, the batch statistics make the mask.
      if (d.relu) {
        src_reorder_ = act_reorders_;
        fwd_pd_t gpd(
            dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_training, data_md, eps,
                                                    flags | nf::use_global_stats),
            eng);
        const bool given = gpd.workspace_desc() == fpd.workspace_desc();
        tmp_ = memory(data_md, eng);
        fargs[DNNL_ARG_DST] = tmp_;
        ws_ = memory(fpd.workspace_desc(), eng);
        ws_bytes_ += data_md.get_size() + fpd.workspace_desc().get_size();
        fargs[DNNL_ARG_WORKSPACE] = ws_;
        if (train && !given) {
          stats_.clear();
          stats_.emplace_back(Dims{d.ic});
          stats_.emplace_back(Dims{d.ic});
          fargs[DNNL_ARG_MEAN] = memory(vec_md, eng, stats_[0].data());
          fargs[DNNL_ARG_VARIANCE] = memory(vec_md, eng, stats_[1].data());
        } else {
          fargs[DNNL_ARG_MEAN] = mem(vec_md, mean_);
          fargs[DNNL_ARG_VARIANCE] = mem(vec_md, var_);
        }
        fwd_ =
            given ? dnnl::batch_normalization_forward(gpd) : dnnl::batch_normalization_forward(fpd);
        fwd_args_ = fargs;
      }
      bwd_pd_t bpd = make_bwd(data_md, fpd);
      prim_ = dnnl::batch_normalization_backward(bpd);
      args_ = {{DNNL_ARG_SRC, src},
               {DNNL_ARG_DIFF_DST, data(dy_, &act_reorders_, true)},
               {DNNL_ARG_MEAN, mem(vec_md, mean_)},
               {DNNL_ARG_VARIANCE, mem(vec_md, var_)},
               {DNNL_ARG_DIFF_SRC, data(&out_[0], &out_reorders_, false)}};
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
    onednn::convert(src_reorder_);
    fwd_.execute(onednn::stream(), fwd_args_);
    onednn::stream().wait();
  }

 private:
  dnnl::primitive fwd_;
  std::unordered_map<int, memory> fwd_args_;
  dnnl::primitive prim_;
  std::unordered_map<int, memory> args_;
  std::vector<onednn::Conversion> act_reorders_;  // NCHW source (and gradient) -> oneDNN's layout
  std::vector<onednn::Conversion> out_reorders_;  // oneDNN's layout -> the NCHW output
  std::vector<onednn::Conversion> src_reorder_;   // the source alone, for forward_state()
  size_t ws_bytes_ = 0;  // the buffers in oneDNN's layout and the workspace
  memory ws_, tmp_;
  std::vector<Tensor> stats_;
};

}  // namespace

std::unique_ptr<BnormImpl> make_bnorm_onednn() {
  return std::make_unique<BnormOnednn>();
}

}  // namespace pb
