// Naive convolution reference: each output element is an fp64 sum written straight from the
// definition; whole tensors evaluate every element (in parallel) with the same routine.
#include "reference/conv.h"

namespace pb::ref {

namespace {

// Flat index -> 4 coordinates of an (a x b x c x e) array, outermost first.
struct Idx4 {
  int64_t i0, i1, i2, i3;
};
Idx4 split(int64_t index, int64_t n1, int64_t n2, int64_t n3) {
  Idx4 r;
  r.i3 = index % n3;
  index /= n3;
  r.i2 = index % n2;
  index /= n2;
  r.i1 = index % n1;
  r.i0 = index / n1;
  return r;
}

template <class F>
Tensor64 evaluate(Dims dims, F at) {
  Tensor64 out(std::move(dims));
  const int64_t n = out.size();
  double* o = out.data();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) o[i] = at(i);
  return out;
}

int64_t wei_index(const ConvDesc& d, int64_t oc, int64_t icg, int64_t ky, int64_t kx) {
  return ((oc * d.icg() + icg) * d.kh + ky) * d.kw + kx;  // oc = g * ocg + ocg_index
}

// The output of d's data type from the exact sum: u8s8's scales (output channel oc), then the
// output conversion (dtype.h).
double typed(const ConvDesc& d, double acc, int64_t oc, const QuantParams* q) {
  if (q) {
    acc *= static_cast<double>(q->wei_scale[oc]) * q->src_scale;
    if (d.dt.out == DataType::out_s8) acc /= q->dst_scale;
  }
  return d.dt.out == DataType::out_f32 ? acc : convert_output(acc, d.dt.out);
}

}  // namespace

double conv_fwd_at(const ConvDesc& d, const Tensor& src, const Tensor& wei, int64_t index,
                   const QuantParams* q) {
  Idx4 p = split(index, d.oc, d.oh, d.ow);  // n, oc, oy, ox
  const int64_t grp = p.i1 / d.ocg();
  const double zero = q ? q->src_zero : 0.0;  // taps in the padding add nothing
  double acc = 0;
  for (int64_t c = 0; c < d.icg(); ++c) {
    const int64_t ic = grp * d.icg() + c;
    for (int64_t ky = 0; ky < d.kh; ++ky) {
      const int64_t iy = p.i2 * d.sh - d.ph + ky * (d.dh + 1);
      if (iy < 0 || iy >= d.ih) continue;
      for (int64_t kx = 0; kx < d.kw; ++kx) {
        const int64_t ix = p.i3 * d.sw - d.pw + kx * (d.dw + 1);
        if (ix < 0 || ix >= d.iw) continue;
        acc += (static_cast<double>(src[((p.i0 * d.ic + ic) * d.ih + iy) * d.iw + ix]) - zero) *
               static_cast<double>(wei[wei_index(d, p.i1, c, ky, kx)]);
      }
    }
  }
  return typed(d, acc, p.i1, q);
}

double conv_bwd_d_at(const ConvDesc& d, const Tensor& diff_dst, const Tensor& wei, int64_t index) {
  Idx4 p = split(index, d.ic, d.ih, d.iw);  // n, ic, iy, ix
  const int64_t grp = p.i1 / d.icg(), c = p.i1 % d.icg();
  double acc = 0;
  for (int64_t o = 0; o < d.ocg(); ++o) {
    const int64_t oc = grp * d.ocg() + o;
    for (int64_t ky = 0; ky < d.kh; ++ky) {
      const int64_t ty = p.i2 + d.ph - ky * (d.dh + 1);  // = oy * sh
      if (ty < 0 || ty % d.sh || ty / d.sh >= d.oh) continue;
      for (int64_t kx = 0; kx < d.kw; ++kx) {
        const int64_t tx = p.i3 + d.pw - kx * (d.dw + 1);
        if (tx < 0 || tx % d.sw || tx / d.sw >= d.ow) continue;
        acc += static_cast<double>(
                   diff_dst[((p.i0 * d.oc + oc) * d.oh + ty / d.sh) * d.ow + tx / d.sw]) *
               static_cast<double>(wei[wei_index(d, oc, c, ky, kx)]);
      }
    }
  }
  return typed(d, acc, 0, nullptr);
}

double conv_bwd_w_at(const ConvDesc& d, const Tensor& src, const Tensor& diff_dst, int64_t index) {
  Idx4 p = split(index, d.icg(), d.kh, d.kw);  // oc, icg, ky, kx
  const int64_t ic = (p.i0 / d.ocg()) * d.icg() + p.i1;
  double acc = 0;
  for (int64_t n = 0; n < d.mb; ++n)
    for (int64_t oy = 0; oy < d.oh; ++oy) {
      const int64_t iy = oy * d.sh - d.ph + p.i2 * (d.dh + 1);
      if (iy < 0 || iy >= d.ih) continue;
      for (int64_t ox = 0; ox < d.ow; ++ox) {
        const int64_t ix = ox * d.sw - d.pw + p.i3 * (d.dw + 1);
        if (ix < 0 || ix >= d.iw) continue;
        acc += static_cast<double>(src[((n * d.ic + ic) * d.ih + iy) * d.iw + ix]) *
               static_cast<double>(diff_dst[((n * d.oc + p.i0) * d.oh + oy) * d.ow + ox]);
      }
    }
  return typed(d, acc, 0, nullptr);
}

double conv_bwd_b_at(const ConvDesc& d, const Tensor& diff_dst, int64_t oc) {
  double acc = 0;
  for (int64_t n = 0; n < d.mb; ++n)
    for (int64_t i = 0; i < d.oh * d.ow; ++i)
      acc += static_cast<double>(diff_dst[(n * d.oc + oc) * d.oh * d.ow + i]);
  return typed(d, acc, 0, nullptr);
}

Tensor64 conv_fwd(const ConvDesc& d, const Tensor& src, const Tensor& wei, const QuantParams* q) {
  return evaluate(d.dst_dims(), [&](int64_t i) { return conv_fwd_at(d, src, wei, i, q); });
}

Tensor64 conv_bwd_d(const ConvDesc& d, const Tensor& diff_dst, const Tensor& wei) {
  return evaluate(d.src_dims(), [&](int64_t i) { return conv_bwd_d_at(d, diff_dst, wei, i); });
}

Tensor64 conv_bwd_w(const ConvDesc& d, const Tensor& src, const Tensor& diff_dst) {
  return evaluate(d.wei_dims(), [&](int64_t i) { return conv_bwd_w_at(d, src, diff_dst, i); });
}

Tensor64 conv_bwd_b(const ConvDesc& d, const Tensor& diff_dst) {
  return evaluate({d.oc}, [&](int64_t i) { return conv_bwd_b_at(d, diff_dst, i); });
}

}  // namespace pb::ref
