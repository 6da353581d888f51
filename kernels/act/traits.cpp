// Activation traits: centred seeded inputs (half the ReLU inputs positive, so its output is not
// mostly zeros), softmax backward fed the softmax of seeded logits, and the fp64 reference.
#include "kernels/act/traits.h"

#include <cmath>

#include "kernels/core/fill.h"
#include "kernels/core/typed_problem.h"
#include "reference/act.h"

namespace pb {

std::vector<NamedTensor> ActTraits::make_inputs(const ActDesc& d, Dir dir, uint64_t seed) {
  std::vector<NamedTensor> v;
  Tensor x({d.mb, d.ic, d.ih, d.iw});
  switch (d.func) {
    case ActFunc::relu:
      fill_int(x, mix_seed(seed, 0), 4);
      break;
    case ActFunc::sigmoid:
    case ActFunc::tanh:
      fill_uniform(x, mix_seed(seed, 0), -6, 6);
      break;
    default:
      fill_uniform(x, mix_seed(seed, 0), -10, 10);
      break;
  }
  if (d.func == ActFunc::xent) {
    Tensor labels({d.mb, d.ih, d.iw});
    fill_uniform(labels, mix_seed(seed, 2), 0, static_cast<float>(d.ic));
    for (int64_t i = 0; i < labels.size(); ++i)
      labels[i] = std::min(std::floor(labels[i]), static_cast<float>(d.ic - 1));
    v.push_back({"src", std::move(x)});
    v.push_back({"labels", std::move(labels)});
    return v;
  }
  if (dir == Dir::fwd) {
    v.push_back({"src", std::move(x)});
    return v;
  }
  Tensor dy({d.mb, d.ic, d.ih, d.iw});
  if (d.func == ActFunc::relu)
    fill_int(dy, mix_seed(seed, 1), 4);
  else
    fill_uniform(dy, mix_seed(seed, 1), -1, 1);
  if (d.func == ActFunc::softmax) {  // backward reads the forward's output
    Tensor64 y = std::move(ref::act_fwd(d, {&x})[0]);
    for (int64_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(y[i]);
  }
  v.push_back({d.func == ActFunc::softmax ? "dst" : "src", std::move(x)});
  v.push_back({"diff_dst", std::move(dy)});
  return v;
}

std::vector<std::string> ActTraits::output_names(const ActDesc& d, Dir dir) {
  if (dir != Dir::fwd) return {"diff_src"};
  if (d.func == ActFunc::xent) return {"dst", "loss"};
  return {"dst"};
}

std::string ActTraits::layout(const ActDesc& d, Dir dir) {
  return "NCHW fp32 " + dims_str({d.mb, d.ic, d.ih, d.iw}) + "; " + act_func_str(d.func) +
         (d.eltwise() ? "" : " over the channel axis") + ", " + dir_str(dir) +
         (d.func == ActFunc::xent ? "; labels and loss are " + dims_str({d.mb, d.ih, d.iw}) : "");
}

std::vector<Tensor64> ActTraits::reference(const ActDesc& d, Dir dir,
                                           const std::vector<const Tensor*>& in) {
  return dir == Dir::fwd ? ref::act_fwd(d, in) : ref::act_bwd(d, in);
}

// Never used in practice (flops() is 0, so checks are never sampled); computes everything.
double ActTraits::reference_at(const ActDesc& d, Dir dir, const std::vector<const Tensor*>& in,
                               size_t output, int64_t index) {
  return reference(d, dir, in)[output][index];
}

std::string act_bench_prefix(const ActDesc& d, Dir dir) {
  return (d.func == ActFunc::xent ? std::string("softmax_xent") : act_func_str(d.func)) + "_" +
         dir_str(dir);
}

namespace {
std::string act_shrink(const std::string& text, double, std::string* tag) {
  ActDesc d = ActDesc::parse(text);
  *tag = d.mb > 2 ? "mb2" : "";
  d.mb = std::min<int64_t>(d.mb, 2);
  return d.str();
}
}  // namespace

PrimitiveInfo act_primitive() {
  PrimitiveInfo info = make_primitive_info<ActTraits>(
      {Dir::fwd, Dir::bwd}, "relu|sigmoid|tanh|softmax|xent_mb<N>ic<C>[ih<H>iw<W>][n\"name\"]");
  info.shrink = act_shrink;
  return info;
}

}  // namespace pb
