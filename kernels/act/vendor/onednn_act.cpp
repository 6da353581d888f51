// onednn/auto activations: oneDNN's eltwise (relu, logistic, tanh; backward from src) and
// softmax (axis 1; backward from dst) on our NCHW tensors, no reorders. oneDNN has no
// cross-entropy: xent is unsupported.
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>

#include "kernels/act/act.h"
#include "kernels/core/error.h"
#include "kernels/vendor_onednn.h"

namespace pb {
namespace {

using dnnl::memory;

class ActOnednn : public ActImpl {
 public:
  std::string name() const override { return "onednn/auto"; }
  Support supports(const ActDesc& d, Dir dir) const override {
    if (dir != Dir::fwd && dir != Dir::bwd) return Support::no("act runs fwd and bwd");
    if (d.func == ActFunc::xent) return Support::no("oneDNN has no softmax cross-entropy");
    return Support::yes();
  }
  void plan(const ActDesc& d, Dir dir, const std::vector<const Tensor*>& in) override {
    d_ = d;
    out_ = Tensor({d.mb, d.ic, d.ih, d.iw});
    try {
      auto& eng = onednn::engine();
      memory::desc md({d.mb, d.ic, d.ih, d.iw}, memory::data_type::f32, memory::format_tag::nchw);
      auto mem = [&](const Tensor* t) { return memory(md, eng, const_cast<float*>(t->data())); };
      memory out(md, eng, out_.data());
      const bool fwd = dir == Dir::fwd;
      auto fprop = fwd ? dnnl::prop_kind::forward_inference : dnnl::prop_kind::forward_training;
      if (d.func == ActFunc::softmax) {
        dnnl::softmax_forward::primitive_desc fpd(dnnl::softmax_forward::desc(fprop, md, 1), eng);
        if (fwd) {
          prim_ = dnnl::softmax_forward(fpd);
          args_ = {{DNNL_ARG_SRC, mem(in[0])}, {DNNL_ARG_DST, out}};
        } else {
          dnnl::softmax_backward::primitive_desc bpd(dnnl::softmax_backward::desc(md, md, 1), eng,
                                                     fpd);
          prim_ = dnnl::softmax_backward(bpd);
          args_ = {{DNNL_ARG_DST, mem(in[0])},
                   {DNNL_ARG_DIFF_DST, mem(in[1])},
                   {DNNL_ARG_DIFF_SRC, out}};
        }
        return;
      }
      auto alg = d.func == ActFunc::relu      ? dnnl::algorithm::eltwise_relu
                 : d.func == ActFunc::sigmoid ? dnnl::algorithm::eltwise_logistic
                                              : dnnl::algorithm::eltwise_tanh;
      dnnl::eltwise_forward::primitive_desc fpd(
          dnnl::eltwise_forward::desc(fprop, alg, md, 0.f, 0.f), eng);
      if (fwd) {
        prim_ = dnnl::eltwise_forward(fpd);
        args_ = {{DNNL_ARG_SRC, mem(in[0])}, {DNNL_ARG_DST, out}};
      } else {
        dnnl::eltwise_backward::primitive_desc bpd(
            dnnl::eltwise_backward::desc(alg, md, md, 0.f, 0.f), eng, fpd);
        prim_ = dnnl::eltwise_backward(bpd);
        args_ = {
            {DNNL_ARG_SRC, mem(in[0])}, {DNNL_ARG_DIFF_DST, mem(in[1])}, {DNNL_ARG_DIFF_SRC, out}};
      }
    } catch (const dnnl::error& e) {
      onednn::rethrow(e, "oneDNN eltwise/softmax");
    }
  }
  void run() override { prim_.execute(onednn::stream(), args_); }
  void sync() override { onednn::stream().wait(); }
  std::vector<Tensor> result() override {
    std::vector<Tensor> v;
    v.push_back(out_.clone());
    return v;
  }
  const Tensor* output_view(size_t i) const override { return i == 0 ? &out_ : nullptr; }

 private:
  ActDesc d_;
  Tensor out_;
  dnnl::primitive prim_;
  std::unordered_map<int, memory> args_;
};

}  // namespace

std::unique_ptr<ActImpl> make_act_onednn() {
  return std::make_unique<ActOnednn>();
}

}  // namespace pb
