// onednn/auto pooling: oneDNN's pooling primitive on our NCHW tensors (no reorders needed).
// fwd times forward_inference; bwd runs forward_training in forward_state() for the workspace
// (untimed, as the forward's record) and times pooling_backward only.
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>

#include "kernels/core/error.h"
#include "kernels/pool/cpu/host_pool.h"
#include "kernels/vendor_onednn.h"

namespace pb {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

class PoolOnednn : public HostPool {
 public:
  std::string name() const override { return "onednn/auto"; }
  void run() override {
    if (dir_ == Dir::fwd)
      fwd_.execute(onednn::stream(), {{DNNL_ARG_SRC, msrc_}, {DNNL_ARG_DST, mdst_}});
    else
      bwd_.execute(onednn::stream(), bwd_args_);
  }
  void sync() override { onednn::stream().wait(); }
  size_t workspace_bytes() const override { return ws_ ? ws_.get_desc().get_size() : 0; }

 protected:
  void prepare_more() override {
    try {
      const PoolDesc& d = d_;
      auto& eng = onednn::engine();
      memory::desc src_md({d.mb, d.ic, d.ih, d.iw}, dt::f32, tag::nchw);
      memory::desc dst_md({d.mb, d.ic, d.oh, d.ow}, dt::f32, tag::nchw);
      auto alg = d.alg == PoolAlg::max     ? dnnl::algorithm::pooling_max
                 : d.alg == PoolAlg::avg_p ? dnnl::algorithm::pooling_avg_include_padding
                                           : dnnl::algorithm::pooling_avg_exclude_padding;
      memory::dims strides{d.sh, d.sw}, kernel{d.kh, d.kw}, pl{d.ph, d.pw},
          pr{d.pad_b(), d.pad_r()};
      auto prop =
          dir_ == Dir::fwd ? dnnl::prop_kind::forward_inference : dnnl::prop_kind::forward_training;
      dnnl::pooling_forward::primitive_desc fpd(
          dnnl::pooling_forward::desc(prop, alg, src_md, dst_md, strides, kernel, pl, pr), eng);
      fwd_ = dnnl::pooling_forward(fpd);
      msrc_ = memory(src_md, eng, const_cast<float*>(src_->data()));
      if (dir_ == Dir::fwd) {
        mdst_ = memory(dst_md, eng, out_.data());
        return;
      }
      tmp_ = Tensor({d.mb, d.ic, d.oh, d.ow});
      mdst_ = memory(dst_md, eng, tmp_.data());
      fwd_args_ = {{DNNL_ARG_SRC, msrc_}, {DNNL_ARG_DST, mdst_}};
      if (d.alg == PoolAlg::max) {
        ws_ = memory(fpd.workspace_desc(), eng);
        fwd_args_[DNNL_ARG_WORKSPACE] = ws_;
      }
      dnnl::pooling_backward::primitive_desc bpd(
          dnnl::pooling_backward::desc(alg, src_md, dst_md, strides, kernel, pl, pr), eng, fpd);
      bwd_ = dnnl::pooling_backward(bpd);
      bwd_args_ = {{DNNL_ARG_DIFF_DST, memory(dst_md, eng, const_cast<float*>(dy_->data()))},
                   {DNNL_ARG_DIFF_SRC, memory(src_md, eng, out_.data())}};
      if (ws_) bwd_args_[DNNL_ARG_WORKSPACE] = ws_;
    } catch (const dnnl::error& e) {
      onednn::rethrow(e, "oneDNN pooling");
    }
  }

 public:
  // Backward: the forward's workspace (max pooling's argmax) from the new source.
  void forward_state() override {
    if (dir_ != Dir::bwd) return;
    fwd_.execute(onednn::stream(), fwd_args_);
    onednn::stream().wait();
  }

 private:
  std::unordered_map<int, memory> fwd_args_;
  dnnl::pooling_forward fwd_;
  dnnl::pooling_backward bwd_;
  memory msrc_, mdst_, ws_;
  std::unordered_map<int, memory> bwd_args_;
  Tensor tmp_;
};

}  // namespace

std::unique_ptr<PoolImpl> make_pool_onednn() {
  return std::make_unique<PoolOnednn>();
}

}  // namespace pb
