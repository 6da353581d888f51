// All-reduce traits: inputs from (seed, rank), the fp64 reference summed over all ranks, and
// the PrimitiveInfo.
#include "kernels/allreduce/traits.h"

#include "kernels/allreduce/world.h"
#include "kernels/core/typed_problem.h"

namespace pb {

namespace {
uint64_t seed_from(const Tensor& s) {
  uint64_t seed = 0;
  for (int i = 3; i >= 0; --i) seed = seed << 16 | static_cast<uint64_t>(s[i]);
  return seed;
}
}  // namespace

std::vector<NamedTensor> AllreduceTraits::make_inputs(const AllreduceDesc& d, Dir, uint64_t seed) {
  std::vector<NamedTensor> v;
  v.push_back({"X", Tensor({d.n})});
  fill_int(v[0].tensor, rank_seed(seed, world::rank()), kRange);
  v.push_back({"seed", Tensor({4})});
  for (int i = 0; i < 4; ++i) v[1].tensor[i] = static_cast<float>(seed >> (16 * i) & 0xffff);
  return v;
}

std::string AllreduceTraits::layout(const AllreduceDesc& d, Dir) {
  return "X: this rank's vector of " + std::to_string(d.n) +
         " floats; seed: the problem's seed as four 16-bit pieces, low first (every rank "
         "regenerates the others' X from it for the reference); Y = sum of X over " +
         std::to_string(world::size()) + " rank(s)";
}

std::vector<Tensor64> AllreduceTraits::reference(const AllreduceDesc& d, Dir,
                                                 const std::vector<const Tensor*>& in) {
  const uint64_t seed = seed_from(*in[1]);
  Tensor64 y({d.n});
  y.fill(0);
  Tensor x({d.n});
  // Rank order, in fp64: exact for integers, and the same on every rank.
  for (int q = 0, p = world::size(); q < p; ++q) {
    fill_int(x, rank_seed(seed, q), kRange);
    for (int64_t i = 0; i < d.n; ++i) y[i] += x[i];
  }
  std::vector<Tensor64> out;
  out.push_back(std::move(y));
  return out;
}

double AllreduceTraits::reference_at(const AllreduceDesc&, Dir,
                                     const std::vector<const Tensor*>& in, size_t, int64_t index) {
  // Not reached in practice (flops() is 0, so checks are never sampled), but correct.
  const uint64_t seed = seed_from(*in[1]);
  Tensor x({index + 1});
  double s = 0;
  for (int q = 0, p = world::size(); q < p; ++q) {
    fill_int(x, rank_seed(seed, q), kRange);
    s += x[index];
  }
  return s;
}

namespace {
// The single-process conformance run caps n at 2^22 + 1 (odd, like DeepBench's 16777217): the
// whole-model gradient sets reach 138M elements, which the MPI tests need not repeat per line.
std::string allreduce_shrink(const std::string& text, double, std::string* tag) {
  AllreduceDesc d = AllreduceDesc::parse(text);
  constexpr int64_t kMax = (int64_t(1) << 22) + 1;
  *tag = d.n > kMax ? "scaled_n" : "";
  if (d.n > kMax) d.n = kMax;
  return d.str();
}
}  // namespace

PrimitiveInfo allreduce_primitive() {
  PrimitiveInfo info = make_primitive_info<AllreduceTraits>(
      {Dir::fwd}, "n<elements>[n\"name\"]  (under mpirun: summed over ranks)");
  info.shrink = allreduce_shrink;
  return info;
}

}  // namespace pb
