// onednn/auto pooling: oneDNN's pooling primitive in the data layout it runs fastest here. On our
// NCHW tensors oneDNN 2.6 has a JIT implementation for most shapes, but not for all: VGG-16's
// pool1 (64 x 224 x 224) got its generic simple_nchw, 234-275 ms against 8-9 ms for ours, where
// its JIT pooling in nChw16c takes 17-23 ms with both conversions. So where the NCHW implementation
// is not a JIT one, the data is converted to the first of nChw16c, nChw8c and NHWC that has one:
// reorder_in() converts the source (or the gradient), reorder_out() the result back (timed in
// the layer contract, as for batch-norm and the convolutions).
// fwd times forward_inference; bwd runs forward_training in forward_state() for the workspace
// (untimed, as the forward's record, its source converted there) and times pooling_backward.
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
  void reorder_in() override { onednn::convert(act_reorders_); }
  void reorder_out() override { onednn::convert(out_reorders_); }
  void sync() override { onednn::stream().wait(); }
  size_t workspace_bytes() const override {
    return (ws_ ? ws_.get_desc().get_size() : 0) + buffer_bytes_;
  }

 protected:
  void prepare_more() override {
    try {
      act_reorders_.clear(), out_reorders_.clear(), src_reorder_.clear();
      buffer_bytes_ = 0;
      ws_ = memory();
      const PoolDesc& d = d_;
      auto& eng = onednn::engine();
      const memory::dims src_dims{d.mb, d.ic, d.ih, d.iw}, dst_dims{d.mb, d.ic, d.oh, d.ow};
      auto alg = d.alg == PoolAlg::max     ? dnnl::algorithm::pooling_max
                 : d.alg == PoolAlg::avg_p ? dnnl::algorithm::pooling_avg_include_padding
                                           : dnnl::algorithm::pooling_avg_exclude_padding;
      memory::dims strides{d.sh, d.sw}, kernel{d.kh, d.kw}, pl{d.ph, d.pw},
          pr{d.pad_b(), d.pad_r()};
      auto prop =
          dir_ == Dir::fwd ? dnnl::prop_kind::forward_inference : dnnl::prop_kind::forward_training;
      using fwd_pd_t = dnnl::pooling_forward::primitive_desc;
      using bwd_pd_t = dnnl::pooling_backward::primitive_desc;
      auto make_fwd = [&](tag t) {
        const memory::desc s_md(src_dims, dt::f32, t), d_md(dst_dims, dt::f32, t);
        return fwd_pd_t(dnnl::pooling_forward::desc(prop, alg, s_md, d_md, strides, kernel, pl, pr),
                        eng);
      };
      auto make_bwd = [&](tag t, const fwd_pd_t& f) {
        const memory::desc s_md(src_dims, dt::f32, t), d_md(dst_dims, dt::f32, t);
        return bwd_pd_t(dnnl::pooling_backward::desc(alg, s_md, d_md, strides, kernel, pl, pr), eng,
                        f);
      };
      // NCHW where oneDNN has a JIT implementation there (no conversions), else the first
      // blocked or channels-last layout that has one, else NCHW.
      const tag layout =
          onednn::first_jit_layout({tag::nchw, tag::nChw16c, tag::nChw8c, tag::nhwc}, [&](tag t) {
            fwd_pd_t f = make_fwd(t);
            return dir_ == Dir::fwd ? f.impl_info_str() : make_bwd(t, f).impl_info_str();
          });
      auto data = [&](const memory::dims& dims, const float* t,
                      std::vector<onednn::Conversion>* reorders, bool in) {
        return onednn::user_or_converted(dims, t, layout, reorders, in, &buffer_bytes_);
      };
      fwd_pd_t fpd = make_fwd(layout);
      fwd_ = dnnl::pooling_forward(fpd);
      if (dir_ == Dir::fwd) {
        msrc_ = data(src_dims, src_->data(), &act_reorders_, true);
        mdst_ = data(dst_dims, out_.data(), &out_reorders_, false);
        return;
      }
      // Backward: the forward (training) makes the workspace from the source, converted in
      // forward_state() (untimed); its output goes to a scratch buffer.
      msrc_ = data(src_dims, src_->data(), &src_reorder_, true);
      mdst_ = memory(memory::desc(dst_dims, dt::f32, layout), eng);
      buffer_bytes_ += mdst_.get_desc().get_size();
      fwd_args_ = {{DNNL_ARG_SRC, msrc_}, {DNNL_ARG_DST, mdst_}};
      if (d.alg == PoolAlg::max) {
        ws_ = memory(fpd.workspace_desc(), eng);
        fwd_args_[DNNL_ARG_WORKSPACE] = ws_;
      }
      bwd_pd_t bpd = make_bwd(layout, fpd);
      bwd_ = dnnl::pooling_backward(bpd);
      bwd_args_ = {{DNNL_ARG_DIFF_DST, data(dst_dims, dy_->data(), &act_reorders_, true)},
                   {DNNL_ARG_DIFF_SRC, data(src_dims, out_.data(), &out_reorders_, false)}};
      if (ws_) bwd_args_[DNNL_ARG_WORKSPACE] = ws_;
    } catch (const dnnl::error& e) {
      onednn::rethrow(e, "oneDNN pooling");
    }
  }

 public:
  // Backward: the forward's workspace (max pooling's argmax) from the new source.
  void forward_state() override {
    if (dir_ != Dir::bwd) return;
    onednn::convert(src_reorder_);
    fwd_.execute(onednn::stream(), fwd_args_);
    onednn::stream().wait();
  }

 private:
  std::unordered_map<int, memory> fwd_args_;
  dnnl::pooling_forward fwd_;
  dnnl::pooling_backward bwd_;
  memory msrc_, mdst_, ws_;
  std::unordered_map<int, memory> bwd_args_;
  std::vector<onednn::Conversion> act_reorders_;  // NCHW source (or gradient) -> oneDNN's layout
  std::vector<onednn::Conversion> out_reorders_;  // oneDNN's layout -> the NCHW output
  std::vector<onednn::Conversion> src_reorder_;   // backward: the source, for forward_state()
  size_t buffer_bytes_ = 0;                       // the buffers in oneDNN's layout
};

}  // namespace

std::unique_ptr<PoolImpl> make_pool_onednn() {
  return std::make_unique<PoolOnednn>();
}

}  // namespace pb
