// Convolution traits: integer-valued seeded inputs per direction, the fp64 reference hook-up
// and the test shrink hook.
#include "kernels/conv/traits.h"

#include "kernels/core/error.h"
#include "kernels/core/fill.h"
#include "kernels/core/quant.h"
#include "kernels/core/typed_problem.h"
#include "reference/conv.h"

namespace pb {

namespace {
struct DirIo {
  const char* in0;
  const char* in1;
  const char* out;
};
DirIo io(Dir dir) {
  switch (dir) {
    case Dir::fwd:
      return {"src", "wei", "dst"};
    case Dir::bwd_d:
      return {"diff_dst", "wei", "diff_src"};
    case Dir::bwd_w:
      return {"src", "diff_dst", "diff_wei"};
    default:
      throw InputError("dir", "conv runs fwd, bwd_d or bwd_w, not " + dir_str(dir));
  }
}
Dims dims_of(const ConvDesc& d, const std::string& name) {
  if (name == "src" || name == "diff_src") return d.src_dims();
  if (name == "dst" || name == "diff_dst") return d.dst_dims();
  return d.wei_dims();
}
}  // namespace

double ConvTraits::sum_terms(const ConvDesc& d, Dir dir) {
  switch (dir) {
    case Dir::bwd_d:
      return static_cast<double>(d.ocg()) * d.kh * d.kw;
    case Dir::bwd_w:
      return static_cast<double>(d.mb) * d.oh * d.ow;
    default:
      return static_cast<double>(d.icg()) * d.kh * d.kw;
  }
}

std::vector<NamedTensor> ConvTraits::make_inputs(const ConvDesc& d, Dir dir, uint64_t seed) {
  DirIo n = io(dir);
  std::vector<NamedTensor> v;
  v.push_back({n.in0, Tensor(dims_of(d, n.in0))});
  v.push_back({n.in1, Tensor(dims_of(d, n.in1))});
  // Integers exact in the input type whose sums stay exact in fp32 (quant.h; f32 as before).
  const int range = typed_int_range(sum_terms(d, dir), d.dt);
  for (size_t i = 0; i < v.size(); ++i) fill_int(v[i].tensor, mix_seed(seed, i), range);
  if (d.dt.integer()) {  // u8s8 (fwd): the source in [0, 2r] around its zero point r
    shift_to_u8(v[0].tensor, range);
    QuantInputs q = make_quant_inputs(d.oc, sum_terms(d, dir), range, d.dt.out);
    v.push_back({"wei_scale", std::move(q.wei_scale)});
    v.push_back({"src_scale", std::move(q.src_scale)});
    v.push_back({"src_zero", std::move(q.src_zero)});
    v.push_back({"dst_scale", std::move(q.dst_scale)});
  }
  return v;
}

std::vector<std::string> ConvTraits::output_names(const ConvDesc&, Dir dir) {
  if (dir == Dir::bwd_w) return {"diff_wei", "diff_bias"};
  return {io(dir).out};
}

bool ConvTraits::exact_data(const ConvDesc& d, Dir dir) {
  // Values in [-1, 1] at least: sums of up to 2^23 unit products are exact in fp32 (a reduced
  // type's inputs are integers of the same ranges; u8s8's scales are powers of two).
  return sum_terms(d, dir) < 8388608.0;
}

std::string ConvTraits::layout(const ConvDesc& d, Dir dir) {
  DirIo n = io(dir);
  return std::string("NCHW ") +
         (d.dt.is_f32() ? "fp32" : "dt=" + d.dt.str() + " (as fp32 values)") + ": src/diff_src " +
         dims_str(d.src_dims()) + ", dst/diff_dst " + dims_str(d.dst_dims()) + ", wei " +
         (d.g > 1 ? "goihw " : "oihw ") + dims_str(d.wei_dims()) + "; " + dir_str(dir) + ": {" +
         n.in0 + ", " + n.in1 + "} -> " + n.out + (dir == Dir::bwd_w ? " and diff_bias (oc)" : "") +
         "; pads top/left " + std::to_string(d.ph) + "/" + std::to_string(d.pw) +
         ", bottom/right " + std::to_string(d.pad_b()) + "/" + std::to_string(d.pad_r()) +
         ", dilation 0 = dense" +
         (d.dt.integer() ? "; then wei_scale (oc), src_scale, src_zero, dst_scale" : "");
}

int64_t ConvTraits::output_size(const ConvDesc& d, Dir dir, size_t output) {
  if (dir == Dir::bwd_w && output == 1) return d.oc;  // diff_bias
  return dims_product(dims_of(d, io(dir).out));
}

std::vector<Tensor64> ConvTraits::reference(const ConvDesc& d, Dir dir,
                                            const std::vector<const Tensor*>& in) {
  std::vector<Tensor64> out;
  const QuantParams q = QuantParams::from(in, 2);
  if (dir == Dir::fwd)
    out.push_back(ref::conv_fwd(d, *in[0], *in[1], d.dt.integer() ? &q : nullptr));
  else if (dir == Dir::bwd_d)
    out.push_back(ref::conv_bwd_d(d, *in[0], *in[1]));
  else {
    out.push_back(ref::conv_bwd_w(d, *in[0], *in[1]));
    out.push_back(ref::conv_bwd_b(d, *in[1]));
  }
  return out;
}

double ConvTraits::reference_at(const ConvDesc& d, Dir dir, const std::vector<const Tensor*>& in,
                                size_t output, int64_t index) {
  if (dir == Dir::fwd) {
    const QuantParams q = QuantParams::from(in, 2);
    return ref::conv_fwd_at(d, *in[0], *in[1], index, d.dt.integer() ? &q : nullptr);
  }
  if (dir == Dir::bwd_d) return ref::conv_bwd_d_at(d, *in[0], *in[1], index);
  if (output == 1) return ref::conv_bwd_b_at(d, *in[1], index);
  return ref::conv_bwd_w_at(d, *in[0], *in[1], index);
}

std::string conv_shrink(const std::string& text, double max_flops, std::string* tag) {
  ConvDesc d = ConvDesc::parse(text);
  std::vector<std::string> tags;
  if (d.mb > 2) d.mb = 2, tags.push_back("mb2");
  bool scaled = false;
  // Halving an output size and re-deriving the input size from it keeps both pads exact.
  auto halve = [](int64_t* in, int64_t* out, int64_t k, int64_t s, int64_t p, int64_t p_end,
                  int64_t dil) {
    const int64_t ext = (k - 1) * (dil + 1) + 1;
    int64_t o = (*out + 1) / 2;
    while ((o - 1) * s + ext - p - p_end < 1) ++o;
    if (o >= *out) return false;
    *out = o;
    *in = (o - 1) * s + ext - p - p_end;
    return true;
  };
  while (d.flops() > max_flops) {
    const int64_t pb = d.pad_b(), pr = d.pad_r();
    bool h_first = d.oh >= d.ow;
    bool ok = h_first ? halve(&d.ih, &d.oh, d.kh, d.sh, d.ph, pb, d.dh)
                      : halve(&d.iw, &d.ow, d.kw, d.sw, d.pw, pr, d.dw);
    if (!ok)
      ok = h_first ? halve(&d.iw, &d.ow, d.kw, d.sw, d.pw, pr, d.dw)
                   : halve(&d.ih, &d.oh, d.kh, d.sh, d.ph, pb, d.dh);
    if (!ok) break;
    scaled = true;
  }
  if (scaled) tags.push_back("scaled_hw");
  tag->clear();
  for (const auto& t : tags) *tag += (tag->empty() ? "" : "_") + t;
  d.validate();
  return d.str();
}

PrimitiveInfo conv_primitive() {
  PrimitiveInfo info = make_primitive_info<ConvTraits>(
      {Dir::fwd, Dir::bwd_d, Dir::bwd_w},
      "mb<N>[g<G>]ic<C>ih<H>[iw<W>]oc<K>[oh<P>ow<Q>]kh<R>[kw<S>][sh<>sw<>][ph<>pw<>][dh<>dw<>]"
      "[dt=f32|bf16[:bf16]|f16[:f16]|u8s8[:s8]][n\"name\"] (benchdnn; dilation 0 = dense; "
      "u8s8: fwd only)");
  info.shrink = conv_shrink;
  return info;
}

}  // namespace pb
