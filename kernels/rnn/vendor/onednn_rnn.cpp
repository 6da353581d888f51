// onednn/auto: oneDNN's vanilla_rnn (ReLU), lstm and lbr_gru primitives, forward training and
// backward. Weights are reordered from our gate-major layout (ldgoi) into the formats oneDNN
// picks in weights() (reported as convert_ms); the backward's forward runs in forward_state(),
// its dW and dR come back to our layout in reorder_out(). Outputs are host tensors oneDNN
// writes in place; the backward's gradient w.r.t. x is oneDNN's diff_src_layer. A reduced data
// type (dt=bf16, u8s8) runs onednn_rnn_lowp.cpp's forward inference instead.
#include <oneapi/dnnl/dnnl.hpp>

#include <cstring>

#include "kernels/core/error.h"
#include "kernels/core/problem.h"
#include "kernels/rnn/rnn.h"
#include "kernels/rnn/vendor/onednn_rnn_lowp.h"
#include "kernels/vendor_onednn.h"

namespace pb {
namespace {

using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;
using dnnl::prop_kind;
constexpr auto kL2R = dnnl::rnn_direction::unidirectional_left2right;

class RnnOnednn : public RnnImpl {
 public:
  std::string name() const override { return "onednn/auto"; }
  Support supports(const RnnDesc& d, Dir dir) const override {
    if (dir != Dir::fwd && dir != Dir::bwd) return Support::no("rnn runs fwd or bwd");
    if (d.dt.is_f32()) return Support::yes();
    const std::string why = rnn_onednn_lowp_unsupported(d, dir);
    return why.empty() ? Support::yes() : Support::no(why);
  }

  void plan(const RnnDesc& d, Dir dir, const std::vector<const Tensor*>& in) override {
    lowp_.reset();
    if (!d.dt.is_f32()) {
      lowp_ = make_rnn_onednn_lowp();
      lowp_->plan(d, dir, in);
      return;
    }
    try {
      prepare_dnnl(d, dir, in);
    } catch (const dnnl::error& e) {
      onednn::rethrow(e, "oneDNN rnn");
    }
  }

  // Weights from our gate-major layout (ldgoi) into the formats oneDNN picked.
  void weights() override {
    if (lowp_) return lowp_->weights();
    const double t0 = now_seconds();
    onednn::convert(wei_reorders_);
    onednn::stream().wait();
    convert_ms_ = 1e3 * (now_seconds() - t0);
  }
  // The backward's forward outputs and workspace, from the inputs (read in place).
  void forward_state() override {
    if (dir_ != Dir::bwd) return;
    fwd_.execute(onednn::stream(), fwd_args_);
    onednn::stream().wait();
  }
  void run() override {
    if (lowp_) return lowp_->run();
    auto& s = onednn::stream();
    if (dir_ == Dir::fwd) {
      fwd_.execute(s, fwd_args_);
      return;
    }
    for (memory* m : {&dw_, &dr_}) zero(*m);  // oneDNN accumulates weight gradients
    std::memset(outs_[2].data(), 0, outs_[2].bytes());
    bwd_.execute(s, bwd_args_);
  }
  // bwd: dW and dR from oneDNN's formats into ours.
  void reorder_out() override { onednn::convert(out_reorders_); }
  void sync() override { onednn::stream().wait(); }
  const Tensor* output_view(size_t i) const override {
    return i < outs_.size() ? &outs_[i] : nullptr;
  }
  // A reduced type's plan() converts the data into its type: new contents need a new plan.
  bool reads_inputs_in_place() const override { return !lowp_; }
  std::vector<Tensor> result() override {
    if (lowp_) return lowp_->result();
    std::vector<Tensor> out;
    for (const Tensor& t : outs_) out.push_back(t.clone());
    return out;
  }

  size_t workspace_bytes() const override {
    if (lowp_) return lowp_->workspace_bytes();
    return ws_.get(true) ? ws_.get_desc().get_size() : 0;
  }
  std::vector<std::pair<std::string, double>> extra_counters() const override {
    if (lowp_) return lowp_->extra_counters();
    return {{"convert_ms", convert_ms_}};
  }

 private:
  static void zero(memory& m) { std::memset(m.get_data_handle(), 0, m.get_desc().get_size()); }
  static memory mem(const memory::desc& md) { return memory(md, onednn::engine()); }
  static memory user(const memory::desc& md, const Tensor* t) {
    return memory(md, onednn::engine(), const_cast<float*>(t->data()));
  }
  // A host tensor of `dims` (one of the outputs, in rnn.h's order) and a oneDNN memory on it.
  memory output(const memory::desc& md, Dims dims) {
    outs_.emplace_back(std::move(dims));
    return memory(md, onednn::engine(), outs_.back().data());
  }
  // A copy of `src` in the layout `want`, filled by weights() (src itself when they agree).
  memory reordered(const memory& src, const memory::desc& want) {
    if (src.get_desc() == want) return src;
    memory m = mem(want);
    wei_reorders_.push_back({src, m});
    return m;
  }

  void prepare_dnnl(const RnnDesc& d, Dir dir, const std::vector<const Tensor*>& in) {
    d_ = d, dir_ = dir;
    outs_.clear();
    outs_.reserve(6);
    wei_reorders_.clear();
    out_reorders_.clear();
    const memory::dim T = d.t, N = d.n, H = d.h, I = d.i, G = d.gates(), Gb = d.bias_gates();
    memory::desc src_layer_md({T, N, I}, dt::f32, tag::tnc);
    memory::desc dst_layer_md({T, N, H}, dt::f32, tag::tnc);
    memory::desc iter_md({1, 1, N, H}, dt::f32, tag::ldnc);
    wl_user_md_ = memory::desc({1, 1, I, G, H}, dt::f32, tag::ldgoi);
    wi_user_md_ = memory::desc({1, 1, H, G, H}, dt::f32, tag::ldgoi);
    memory::desc bias_md({1, 1, Gb, H}, dt::f32, tag::ldgo);
    memory::desc wl_any({1, 1, I, G, H}, dt::f32, tag::any);
    memory::desc wi_any({1, 1, H, G, H}, dt::f32, tag::any);
    const bool lstm = d.cell == Cell::lstm;
    const memory::desc none;

    size_t k = 0;
    memory x = user(src_layer_md, in[k++]);
    memory h0 = user(iter_md, in[k++]);
    memory c0 = lstm ? user(iter_md, in[k++]) : memory();
    memory w = user(wl_user_md_, in[k++]);
    memory r = user(wi_user_md_, in[k++]);
    memory b = user(bias_md, in[k++]);

    auto& eng = onednn::engine();
    const prop_kind fk = prop_kind::forward_training;
    dnnl::primitive_desc_base* fpd_base = nullptr;
    dnnl::lstm_forward::primitive_desc lstm_pd;
    dnnl::lbr_gru_forward::primitive_desc gru_pd;
    dnnl::vanilla_rnn_forward::primitive_desc rnn_pd;
    if (lstm) {
      lstm_pd = {{fk, kL2R, src_layer_md, iter_md, iter_md, wl_any, wi_any, bias_md, dst_layer_md,
                  iter_md, iter_md},
                 eng};
      fwd_ = dnnl::lstm_forward(lstm_pd), fpd_base = &lstm_pd;
    } else if (d.cell == Cell::gru) {
      gru_pd = {{fk, kL2R, src_layer_md, iter_md, wl_any, wi_any, bias_md, dst_layer_md, iter_md},
                eng};
      fwd_ = dnnl::lbr_gru_forward(gru_pd), fpd_base = &gru_pd;
    } else {
      rnn_pd = {{fk, dnnl::algorithm::eltwise_relu, kL2R, src_layer_md, iter_md, wl_any, wi_any,
                 bias_md, dst_layer_md, iter_md},
                eng};
      fwd_ = dnnl::vanilla_rnn_forward(rnn_pd), fpd_base = &rnn_pd;
    }
    auto q = [&](dnnl::query what, int idx = 0) { return fpd_base->query_md(what, idx); };
    memory fw = reordered(w, q(dnnl::query::weights_md, 0));
    memory fr = reordered(r, q(dnnl::query::weights_md, 1));
    // fwd outputs {y, cT} are host tensors (output_view()); a backward keeps them to itself.
    const bool fwd = dir == Dir::fwd;
    dst_layer_ = fwd ? output(dst_layer_md, {T, N, H}) : mem(dst_layer_md);
    memory dst_iter = mem(iter_md);
    dst_iter_c_ = !lstm ? memory() : fwd ? output(iter_md, {N, H}) : mem(iter_md);
    ws_ = mem(q(dnnl::query::workspace_md));
    fwd_args_ = {
        {DNNL_ARG_SRC_LAYER, x},       {DNNL_ARG_SRC_ITER, h0},  {DNNL_ARG_WEIGHTS_LAYER, fw},
        {DNNL_ARG_WEIGHTS_ITER, fr},   {DNNL_ARG_BIAS, b},       {DNNL_ARG_DST_LAYER, dst_layer_},
        {DNNL_ARG_DST_ITER, dst_iter}, {DNNL_ARG_WORKSPACE, ws_}};
    if (lstm) fwd_args_[DNNL_ARG_SRC_ITER_C] = c0, fwd_args_[DNNL_ARG_DST_ITER_C] = dst_iter_c_;
    keep_ = {x, h0, c0, w, r, b, fw, fr, dst_iter};
    if (dir == Dir::fwd) return;

    // Backward: the forward's outputs and workspace (forward_state()), zero gradients w.r.t.
    // the last state (dy already holds dL/dh_T), weight formats as the backward wants them.
    memory dy = user(dst_layer_md, in[k]);
    const prop_kind bk = prop_kind::backward;
    dnnl::primitive_desc_base* bpd_base = nullptr;
    dnnl::lstm_backward::primitive_desc lstm_bpd;
    dnnl::lbr_gru_backward::primitive_desc gru_bpd;
    dnnl::vanilla_rnn_backward::primitive_desc rnn_bpd;
    if (lstm) {
      lstm_bpd = {
          {bk,      kL2R,         src_layer_md, iter_md,      iter_md,      wl_any,  wi_any,
           bias_md, dst_layer_md, iter_md,      iter_md,      src_layer_md, iter_md, iter_md,
           wl_any,  wi_any,       bias_md,      dst_layer_md, iter_md,      iter_md},
          eng,
          lstm_pd};
      bwd_ = dnnl::lstm_backward(lstm_bpd), bpd_base = &lstm_bpd;
    } else if (d.cell == Cell::gru) {
      gru_bpd = {{bk, kL2R, src_layer_md, iter_md, wl_any, wi_any, bias_md, dst_layer_md, iter_md,
                  src_layer_md, iter_md, wl_any, wi_any, bias_md, dst_layer_md, iter_md},
                 eng,
                 gru_pd};
      bwd_ = dnnl::lbr_gru_backward(gru_bpd), bpd_base = &gru_bpd;
    } else {
      rnn_bpd = {{bk, dnnl::algorithm::eltwise_relu, kL2R, src_layer_md, iter_md, wl_any, wi_any,
                  bias_md, dst_layer_md, iter_md, src_layer_md, iter_md, wl_any, wi_any, bias_md,
                  dst_layer_md, iter_md},
                 eng,
                 rnn_pd};
      bwd_ = dnnl::vanilla_rnn_backward(rnn_bpd), bpd_base = &rnn_bpd;
    }
    auto bq = [&](dnnl::query what, int idx = 0) { return bpd_base->query_md(what, idx); };
    memory bw = reordered(w, bq(dnnl::query::weights_md, 0));
    memory br = reordered(r, bq(dnnl::query::weights_md, 1));
    // Outputs {dW, dR, db, dh0, [dc0], dx} as host tensors; dW and dR reach ours from oneDNN's
    // formats in reorder_out().
    dw_ = mem(bq(dnnl::query::diff_weights_md, 0));
    dr_ = mem(bq(dnnl::query::diff_weights_md, 1));
    out_reorders_.push_back({dw_, output(wl_user_md_, {G, H, I})});
    out_reorders_.push_back({dr_, output(wi_user_md_, {G, H, H})});
    memory db = output(bq(dnnl::query::diff_weights_md, 2), {Gb, H});
    memory diff_src_iter = output(iter_md, {N, H});
    memory diff_src_iter_c = lstm ? output(iter_md, {N, H}) : memory();
    memory diff_src_layer = output(src_layer_md, {T, N, I});  // tnc, as x
    memory ddst_iter = mem(iter_md), ddst_iter_c = mem(iter_md);
    zero(ddst_iter), zero(ddst_iter_c);
    bwd_args_ = {{DNNL_ARG_SRC_LAYER, x},
                 {DNNL_ARG_SRC_ITER, h0},
                 {DNNL_ARG_WEIGHTS_LAYER, bw},
                 {DNNL_ARG_WEIGHTS_ITER, br},
                 {DNNL_ARG_BIAS, b},
                 {DNNL_ARG_DST_LAYER, dst_layer_},
                 {DNNL_ARG_DST_ITER, dst_iter},
                 {DNNL_ARG_WORKSPACE, ws_},
                 {DNNL_ARG_DIFF_SRC_LAYER, diff_src_layer},
                 {DNNL_ARG_DIFF_SRC_ITER, diff_src_iter},
                 {DNNL_ARG_DIFF_WEIGHTS_LAYER, dw_},
                 {DNNL_ARG_DIFF_WEIGHTS_ITER, dr_},
                 {DNNL_ARG_DIFF_BIAS, db},
                 {DNNL_ARG_DIFF_DST_LAYER, dy},
                 {DNNL_ARG_DIFF_DST_ITER, ddst_iter}};
    if (lstm) {
      bwd_args_[DNNL_ARG_SRC_ITER_C] = c0;
      bwd_args_[DNNL_ARG_DST_ITER_C] = dst_iter_c_;
      bwd_args_[DNNL_ARG_DIFF_SRC_ITER_C] = diff_src_iter_c;
      bwd_args_[DNNL_ARG_DIFF_DST_ITER_C] = ddst_iter_c;
    }
  }

  RnnDesc d_;
  Dir dir_ = Dir::fwd;
  std::unique_ptr<RnnImpl> lowp_;  // dt != f32
  dnnl::primitive fwd_, bwd_;
  std::unordered_map<int, memory> fwd_args_, bwd_args_;
  memory dst_layer_, dst_iter_c_, ws_, dw_, dr_;
  memory::desc wl_user_md_, wi_user_md_;
  std::vector<Tensor> outs_;  // the outputs in rnn.h's order, in our layouts
  std::vector<onednn::Conversion> wei_reorders_, out_reorders_;
  std::vector<memory> keep_;
  double convert_ms_ = 0;
};

}  // namespace

std::unique_ptr<RnnImpl> make_rnn_onednn() {
  return std::make_unique<RnnOnednn>();
}

}  // namespace pb
