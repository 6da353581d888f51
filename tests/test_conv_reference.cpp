// The naive convolution reference: a hand-computed case, and the adjoint identities
// <fwd(x, w), y> = <x, bwd_d(y, w)> = <w, bwd_w(x, y)> on random shapes with groups, strides,
// dilation and asymmetric padding (which tie the three directions together).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kernels/conv/desc.h"
#include "kernels/core/fill.h"
#include "reference/conv.h"

namespace pb {
namespace {

double dot(const Tensor& a, const Tensor64& b) {
  double s = 0;
  for (int64_t i = 0; i < a.size(); ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

TEST(ConvReferenceSmoke, HandComputed) {
  // 1 image, 1 channel 3x3 = 1..9, 2x2 kernel [[1, 0], [0, -1]], pad 1 top/left only
  // (oh = ow = 3: bottom/right pad 0). out(y, x) = in(y-1, x-1) - in(y, x).
  ConvDesc d = ConvDesc::parse("mb1ic1ih3oc1oh3ow3kh2ph1");
  ASSERT_EQ(d.pad_b(), 0);
  Tensor src(d.src_dims()), wei(d.wei_dims());
  for (int i = 0; i < 9; ++i) src[i] = static_cast<float>(i + 1);
  wei[0] = 1, wei[1] = 0, wei[2] = 0, wei[3] = -1;
  Tensor64 out = ref::conv_fwd(d, src, wei);
  const double want[9] = {-1, -2, -3, -4, 1 - 5, 2 - 6, -7, 4 - 8, 5 - 9};
  for (int i = 0; i < 9; ++i) EXPECT_EQ(out[i], want[i]) << i;
  // Backward data of a single 1 at dst(0, 0): the kernel flipped and placed at (-1, -1).
  Tensor dy(d.dst_dims());
  dy.fill(0);
  dy[0] = 1;
  Tensor64 dx = ref::conv_bwd_d(d, dy, wei);
  for (int i = 0; i < 9; ++i) EXPECT_EQ(dx[i], i == 0 ? -1 : 0) << i;
  // Backward weights with dy = 1 everywhere: each tap sums the inputs it sees.
  dy.fill(1);
  Tensor64 dw = ref::conv_bwd_w(d, src, dy);
  EXPECT_EQ(dw[0], 1 + 2 + 4 + 5);  // tap (0, 0) sees in(y-1, x-1) for y, x in 1..2
  EXPECT_EQ(dw[3], 45);             // tap (1, 1) sees every input
  for (int64_t i = 0; i < 9; ++i) EXPECT_EQ(ref::conv_fwd_at(d, src, wei, i), out[i]);
}

TEST(ConvReferenceSmoke, AdjointIdentitiesOnRandomShapes) {
  std::mt19937 rng(7);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int tested = 0;
  for (int trial = 0; tested < 60 && trial < 1000; ++trial) {
    const int g = pick(1, 3), kh = pick(1, 4), kw = pick(1, 4), sh = pick(1, 3), sw = pick(1, 3);
    const int dh = pick(0, 2), dw = pick(0, 1), ih = pick(1, 12), iw = pick(1, 12);
    const int ph = pick(0, (kh - 1) * (dh + 1)), pw = pick(0, (kw - 1) * (dw + 1));
    std::string s = "mb" + std::to_string(pick(1, 3)) + "g" + std::to_string(g) + "ic" +
                    std::to_string(g * pick(1, 3)) + "oc" + std::to_string(g * pick(1, 3)) + "ih" +
                    std::to_string(ih) + "iw" + std::to_string(iw) + "kh" + std::to_string(kh) +
                    "kw" + std::to_string(kw) + "sh" + std::to_string(sh) + "sw" +
                    std::to_string(sw) + "dh" + std::to_string(dh) + "dw" + std::to_string(dw) +
                    "ph" + std::to_string(ph) + "pw" + std::to_string(pw);
    ConvDesc d;
    try {
      d = ConvDesc::parse(s);
      // Asymmetric padding: one more output row when the bottom pad allows it.
      if (pick(0, 1) && d.pad_b() + d.sh < (d.kh - 1) * (d.dh + 1) + 1) {
        ++d.oh;
        d.validate();
      }
    } catch (const std::exception&) {
      continue;  // kernel larger than the padded input: not a shape
    }
    Tensor x(d.src_dims()), w(d.wei_dims()), y(d.dst_dims());
    fill_int(x, 1 + trial, 3);
    fill_int(w, 2 + trial, 3);
    fill_int(y, 3 + trial, 3);
    const double a = dot(y, ref::conv_fwd(d, x, w));
    const double b = dot(x, ref::conv_bwd_d(d, y, w));
    const double c = dot(w, ref::conv_bwd_w(d, x, y));
    EXPECT_EQ(a, b) << d.str();  // integer data: exact in fp64
    EXPECT_EQ(a, c) << d.str();
    ++tested;
  }
  EXPECT_EQ(tested, 60);
}

TEST(ConvReferenceSmoke, ElementwiseMatchesWhole) {
  ConvDesc d = ConvDesc::parse("mb2g2ic4ih7iw6oc6oh4kh3kw2sh2sw1ph1pw0dh1");
  Tensor x(d.src_dims()), w(d.wei_dims()), y(d.dst_dims());
  fill_int(x, 11, 4);
  fill_int(w, 12, 4);
  fill_int(y, 13, 4);
  Tensor64 f = ref::conv_fwd(d, x, w), bd = ref::conv_bwd_d(d, y, w), bw = ref::conv_bwd_w(d, x, y);
  for (int64_t i = 0; i < f.size(); ++i) EXPECT_EQ(ref::conv_fwd_at(d, x, w, i), f[i]);
  for (int64_t i = 0; i < bd.size(); ++i) EXPECT_EQ(ref::conv_bwd_d_at(d, y, w, i), bd[i]);
  for (int64_t i = 0; i < bw.size(); ++i) EXPECT_EQ(ref::conv_bwd_w_at(d, x, y, i), bw[i]);
  double nz = 0;
  for (int64_t i = 0; i < f.size(); ++i) nz += f[i] != 0;
  EXPECT_GT(nz, f.size() / 2);  // a meaningful case, not mostly zeros
}

}  // namespace
}  // namespace pb
