// Pooling traits: integer-valued seeded inputs (many ties: the tie rule is tested on every
// shape), the fp64 reference hook-up and the batch-shrinking hook for tests.
#include "kernels/pool/traits.h"

#include "kernels/core/fill.h"
#include "kernels/core/typed_problem.h"
#include "reference/pool.h"

namespace pb {

std::vector<NamedTensor> PoolTraits::make_inputs(const PoolDesc& d, Dir dir, uint64_t seed) {
  std::vector<NamedTensor> v;
  v.push_back({"src", Tensor({d.mb, d.ic, d.ih, d.iw})});
  fill_int(v[0].tensor, mix_seed(seed, 0), 4);
  if (dir != Dir::fwd) {
    // diff_dst in {-4..-1, 1..4}: never 0, so every window's gradient lands somewhere visible
    // (max-pool diff_src is sparse by nature: about 1 - oh*ow/(ih*iw) of it is zero).
    Tensor dy({d.mb, d.ic, d.oh, d.ow});
    fill_int(dy, mix_seed(seed, 1), 3);
    for (int64_t i = 0; i < dy.size(); ++i) dy[i] = dy[i] >= 0 ? dy[i] + 1 : dy[i];
    v.push_back({"diff_dst", std::move(dy)});
  }
  return v;
}

std::string PoolTraits::layout(const PoolDesc& d, Dir dir) {
  return "NCHW fp32: src " + dims_str({d.mb, d.ic, d.ih, d.iw}) + ", dst/diff_dst " +
         dims_str({d.mb, d.ic, d.oh, d.ow}) + "; " + pool_alg_str(d.alg) + " pooling, " +
         dir_str(dir);
}

std::vector<Tensor64> PoolTraits::reference(const PoolDesc& d, Dir dir,
                                            const std::vector<const Tensor*>& in) {
  std::vector<Tensor64> out;
  out.push_back(dir == Dir::fwd ? ref::pool_fwd(d, *in[0]) : ref::pool_bwd(d, *in[0], *in[1]));
  return out;
}

double PoolTraits::reference_at(const PoolDesc& d, Dir dir, const std::vector<const Tensor*>& in,
                                size_t, int64_t index) {
  return dir == Dir::fwd ? ref::pool_fwd_at(d, *in[0], index)
                         : ref::pool_bwd_at(d, *in[0], *in[1], index);
}

namespace {
// Tests run the sets at batch 2 at most: the reference is naive.
std::string pool_shrink(const std::string& text, double, std::string* tag) {
  PoolDesc d = PoolDesc::parse(text);
  *tag = d.mb > 2 ? "mb2" : "";
  d.mb = std::min<int64_t>(d.mb, 2);
  return d.str();
}
}  // namespace

PrimitiveInfo pool_primitive() {
  PrimitiveInfo info = make_primitive_info<PoolTraits>(
      {Dir::fwd, Dir::bwd},
      "mb<N>ic<C>ih<H>[iw<W>][oh<>ow<>]kh<K>[kw<>][sh<S>sw<>][ph<P>pw<>]_max|_avgp|_avgnp"
      "[_n\"name\"]");
  info.shrink = pool_shrink;
  return info;
}

}  // namespace pb
