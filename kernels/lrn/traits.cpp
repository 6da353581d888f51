// LRN traits: seeded inputs of the size activations have (|x| up to 4, so that the window sums
// move the scale well away from k), the fp64 reference and the batch-shrinking hook for tests.
#include "kernels/lrn/traits.h"

#include <algorithm>

#include "kernels/core/fill.h"
#include "kernels/core/typed_problem.h"
#include "reference/lrn.h"

namespace pb {

std::vector<NamedTensor> LrnTraits::make_inputs(const LrnDesc& d, Dir dir, uint64_t seed) {
  std::vector<NamedTensor> v;
  v.push_back({"src", Tensor({d.mb, d.ic, d.ih, d.iw})});
  fill_uniform(v[0].tensor, mix_seed(seed, 0), -4, 4);
  if (dir != Dir::fwd) {
    v.push_back({"diff_dst", Tensor({d.mb, d.ic, d.ih, d.iw})});
    fill_uniform(v[1].tensor, mix_seed(seed, 1), -1, 1);
  }
  return v;
}

std::string LrnTraits::layout(const LrnDesc& d, Dir dir) {
  return "NCHW fp32: src/dst " + dims_str({d.mb, d.ic, d.ih, d.iw}) + "; across channels, " +
         std::to_string(d.ls) + " wide, " + dir_str(dir);
}

std::vector<Tensor64> LrnTraits::reference(const LrnDesc& d, Dir dir,
                                           const std::vector<const Tensor*>& in) {
  std::vector<Tensor64> out;
  out.push_back(dir == Dir::fwd ? ref::lrn_fwd(d, *in[0]) : ref::lrn_bwd(d, *in[0], *in[1]));
  return out;
}

double LrnTraits::reference_at(const LrnDesc& d, Dir dir, const std::vector<const Tensor*>& in,
                               size_t, int64_t index) {
  return dir == Dir::fwd ? ref::lrn_fwd_at(d, *in[0], index)
                         : ref::lrn_bwd_at(d, *in[0], *in[1], index);
}

namespace {
// Tests run the sets at batch 2 at most: the reference is naive.
std::string lrn_shrink(const std::string& text, double, std::string* tag) {
  LrnDesc d = LrnDesc::parse(text);
  *tag = d.mb > 2 ? "mb2" : "";
  d.mb = std::min<int64_t>(d.mb, 2);
  return d.str();
}
}  // namespace

PrimitiveInfo lrn_primitive() {
  PrimitiveInfo info = make_primitive_info<LrnTraits>(
      {Dir::fwd, Dir::bwd},
      "mb<N>ic<C>[ih<H>iw<W>][ls<odd>][_alpha<a>][_beta<b>][_k<k>][_n\"name\"]");
  info.shrink = lrn_shrink;
  return info;
}

}  // namespace pb
