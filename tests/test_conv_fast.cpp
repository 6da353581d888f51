// Algorithm-specific tests of the fast convolutions (cpu/winograd_f2, cpu/winograd_f4, cpu/fft):
// transform algebra, tile edges, padding, FFT geometry, and accuracy on real-valued data; and
// cpu/im2col's row blocks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "kernels/conv/conv.h"
#include "kernels/conv/cpu/fft_geometry.h"
#include "kernels/conv/cpu/winograd_transforms.h"
#include "kernels/core/check.h"
#include "kernels/core/fill.h"
#include "kernels/core/problem.h"
#include "kernels/core/threads.h"
#include "reference/conv.h"

namespace pb {
namespace {

const char* kFast[] = {"cpu/winograd_f2", "cpu/winograd_f4", "cpu/fft"};

std::unique_ptr<ConvImpl> make_impl(const std::string& name) {
  for (const auto& e : conv_registry())
    if (e.name == name) return e.make();
  throw std::runtime_error("no conv implementation " + name);
}

// A alpha x alpha patch per lane, a 3x3 filter per lane: the transforms must give the m x m
// correlation of the patch with the filter (lane by lane).
template <int M>
void check_tile_algebra() {
  constexpr int A = wino::Tables<M>::alpha, L = wino::kLanes;
  std::mt19937 rng(M);
  std::uniform_real_distribution<float> u(-1, 1);
  alignas(64) float d[A * A * L], v[A * A * L], p[A * A * L], y[M * M * L];
  float w[L][9], uw[L][A * A];
  for (auto& x : d) x = u(rng);
  for (int l = 0; l < L; ++l) {
    for (auto& x : w[l]) x = u(rng);
    wino::filter_transform<M>(w[l], uw[l]);
  }
  wino::input_transform<M>(d, v);
  for (int q = 0; q < A * A; ++q)
    for (int l = 0; l < L; ++l) p[q * L + l] = v[q * L + l] * uw[l][q];
  wino::output_transform<M>(p, y);
  for (int l = 0; l < L; ++l)
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < M; ++j) {
        double ref = 0;
        for (int a = 0; a < 3; ++a)
          for (int b = 0; b < 3; ++b)
            ref += double(d[((i + a) * A + j + b) * L + l]) * w[l][a * 3 + b];
        EXPECT_NEAR(y[(i * M + j) * L + l], ref, 1e-5 * (1 + std::abs(ref)))
            << "F(" << M << ") lane " << l << " (" << i << "," << j << ")";
      }
}

// The 1-D kernels (shared subexpressions) compute exactly the tables' B^T and A^T.
template <int M>
void check_kernels_match_tables() {
  constexpr int A = wino::Tables<M>::alpha;
  for (int e = 0; e < A; ++e) {
    wino::Vec d[A] = {}, r[A], y[M];
    d[e] = wino::Vec{} + 1.0f;
    wino::Kernel1d<M>::in(d, r);
    for (int k = 0; k < A; ++k) EXPECT_EQ(r[k][0], wino::Tables<M>::bt[k][e]) << M << k << e;
    wino::Kernel1d<M>::out(d, y);
    for (int k = 0; k < M; ++k) EXPECT_EQ(y[k][0], wino::Tables<M>::at[k][e]) << M << k << e;
  }
}

TEST(ConvFastSmoke, conv_winograd_1d_kernels_match_tables) {
  check_kernels_match_tables<2>();
  check_kernels_match_tables<4>();
}

TEST(ConvFastSmoke, conv_winograd_f2_transforms_reproduce_correlation) {
  check_tile_algebra<2>();
}
TEST(ConvFastSmoke, conv_winograd_f4_transforms_reproduce_correlation) {
  check_tile_algebra<4>();
}

// Runs impl on desc through the registry with the conformance data (integer fills) and checks
// against the reference with the tolerance table's bound.
void expect_pass(const std::string& impl, const std::string& desc) {
  auto p = find_primitive("conv").make(desc, Dir::fwd, 7);
  std::string why;
  auto r = p->runner(impl, &why);
  ASSERT_NE(r, nullptr) << impl << " " << desc << ": " << why;
  Measured m = measure(*p, *r, 1, true);
  EXPECT_TRUE(m.check.pass) << impl << " " << desc << ": " << m.check.summary();
  EXPECT_GT(r->workspace_bytes(), 0u) << impl;
}

// Output sizes that are not multiples of 2 or 4 (partial tiles), padding larger than 1 and
// asymmetric (oh/ow given so that bottom/right pads differ from top/left), groups, output
// channel counts that are not multiples of the GEMM panel, and more than one 64-tile block.
const char* kEdgeShapes[] = {
    "mb1ic1ih1oc1kh3ph1",                  // 1x1 image: a single partial tile
    "mb1ic3ih7oc5kh3ph1",                  // 7x7: partial tiles for both F2 and F4
    "mb2ic4ih13iw9oc7kh3ph2pw2",           // pad 2 on every side
    "mb1ic2ih10iw11oc3kh3ph2pw1oh11ow10",  // pad 2 top, 1 bottom; 1 left, 0 right
    "mb1ic5ih6iw6oc4kh3ph0pw2oh6ow7",      // asymmetric: no top pad, bottom 2; left 2 right 1
    "mb2g3ic6ih9oc9kh3ph1",                // groups
    "mb3ic17ih30iw26oc13kh3ph1",           // > 64 tiles: several blocks, a partial last one
};

TEST(ConvFastSmoke, conv_winograd_tile_edges_and_padding) {
  for (const char* impl : {"cpu/winograd_f2", "cpu/winograd_f4"})
    for (const char* s : kEdgeShapes) expect_pass(impl, s);
}

TEST(ConvFastSmoke, conv_fft_tile_edges_padding_and_kernel_sizes) {
  for (const char* s : kEdgeShapes) expect_pass("cpu/fft", s);
  for (const char* s :
       {"mb2ic3ih17iw13oc5kh5ph2", "mb1ic2ih12iw20oc3kh3kw5ph0pw4", "mb1ic3ih11oc2kh11",
        "mb1ic2ih9oc3kh1", "mb1ic4ih40oc3kh7ph3", "mb2g2ic4ih15oc6kh4ph1pw2"})
    expect_pass("cpu/fft", s);
}

TEST(ConvFastSmoke, conv_fft_geometry_tiles_large_images_and_covers_the_output) {
  // 224x224 with a 3x3 kernel: overlap-save tiles beat one 226-point transform.
  ConvDesc big = ConvDesc::parse("mb1ic64ih224oc64kh3ph1");
  fft::Geometry g = fft::choose_geometry(big);
  EXPECT_GT(g.tiles_h, 1);
  EXPECT_LT(g.nh, 128);
  // A small image is one transform.
  ConvDesc small = ConvDesc::parse("mb1ic64ih7oc64kh3ph1");
  fft::Geometry s = fft::choose_geometry(small);
  EXPECT_EQ(s.tiles_h * s.tiles_w, 1);
  for (const ConvDesc& d : {big, small, ConvDesc::parse("mb1ic3ih227oc96kh11")}) {
    fft::Geometry q = fft::choose_geometry(d);
    EXPECT_TRUE(fft::smooth(q.nh) && fft::smooth(q.nw));
    EXPECT_EQ(q.th, q.nh - d.kh + 1);
    EXPECT_GE(q.th * q.tiles_h, d.oh);
    EXPECT_GE(q.tw * q.tiles_w, d.ow);
    EXPECT_LT(q.th * (q.tiles_h - 1), d.oh);  // no empty tile row
  }
}

// A large image whose FFT must tile (checks overlap-save seams), at the conformance data.
TEST(ConvFastSmoke, conv_fft_overlap_save_seams) {
  ConvDesc d = ConvDesc::parse("mb1ic2ih150iw140oc2kh3ph1");
  ASSERT_GT(fft::choose_geometry(d).tiles_h, 1);
  expect_pass("cpu/fft", d.str());
}

// cpu/im2col copies and multiplies a large image in blocks of output rows when each thread has
// whole images (2 threads): a ragged last block, padding rows in the first and last blocks,
// stride 2 and 4, few output channels (the GEMM's few-column path) and more than 64 of them, and
// an odd image count. Small images with a long column matrix (k >= 2 x 256) go in blocks of
// input channels summed into one GEMM output (at 2 threads and at 1): a ragged last block,
// groups, stride 2, 1x1.
TEST(ConvFastSmoke, conv_im2col_blocks) {
  const int saved = threads();
  for (int t : {2, 1}) {
    set_threads(t);
    for (const char* s : {"mb2ic3ih70oc16kh7sh2ph3",      // 35 rows: blocks of 25 and 10
                          "mb2ic3ih131oc20kh11sh4ph2",    // 32 rows: 24 and 8
                          "mb3ic64ih36oc72kh3ph1",        // 36 rows: 22 and 14
                          "mb3ic64ih14oc40kh3ph1",        // 64 channels: 28, 28 and 8
                          "mb2g2ic120ih15oc24kh3sh2ph1",  // 60 per group: 28, 28 and 4
                          "mb2ic600ih9oc16kh1"})          // 1x1: 256, 256 and 88
      expect_pass("cpu/im2col", s);
  }
  set_threads(saved);
}

TEST(ConvFastSmoke, conv_winograd_and_fft_say_why_not) {
  struct Case {
    const char* impl;
    const char* desc;
    Dir dir;
    const char* reason;
  };
  const Case cases[] = {
      {"cpu/winograd_f4", "mb1ic2ih9oc2kh5ph2", Dir::fwd, "3x3 kernel, got 5x5"},
      {"cpu/winograd_f2", "mb1ic2ih9oc2kh3sh2ph1", Dir::fwd, "stride 1"},
      {"cpu/winograd_f2", "mb1ic2ih9oc2kh3dh1ph2", Dir::fwd, "dilation"},
      {"cpu/winograd_f2", "mb1ic2ih9oc2kh3sh2ph1", Dir::bwd_w, "stride 1"},
      {"cpu/winograd_f2", "mb1ic2ih9oc2kh3sh2ph1", Dir::bwd_d, "stride 1"},
      {"cpu/fft", "mb1ic2ih9oc2kh3sh2ph1", Dir::fwd, "stride 1"},
      {"cpu/fft", "mb1ic2ih9oc2kh3dh1ph2", Dir::fwd, "dilation"},
      {"cpu/fft", "mb1ic2ih9oc2kh3sh2ph1", Dir::bwd_w, "stride 1"},
  };
  for (const Case& c : cases) {
    Support s = make_impl(c.impl)->supports(ConvDesc::parse(c.desc), c.dir);
    EXPECT_FALSE(s.ok) << c.impl << " " << c.desc;
    EXPECT_NE(s.reason.find(c.reason), std::string::npos) << c.impl << ": " << s.reason;
  }
}

// Real-valued data in [-1, 1] (not the integer conformance fills): the normwise error must stay
// within the table's general bound, and be well above zero for F4 (it is not exact).
TEST(ConvFastSmoke, conv_winograd_and_fft_accuracy_on_real_data) {
  ConvDesc d = ConvDesc::parse("mb2ic64ih20iw18oc32kh3ph1");
  Tensor src(d.src_dims()), wei(d.wei_dims());
  fill_uniform(src, 1, -1, 1);
  fill_uniform(wei, 2, -1, 1);
  Tensor64 ref = ref::conv_fwd(d, src, wei);
  for (const char* impl : kFast) {
    auto k = make_impl(impl);
    plan_phases(*k, d, Dir::fwd, {&src, &wei});
    run_phases(*k);
    Tensor out = std::move(k->result().at(0));
    Tolerance tol = tolerance("conv", impl, false);
    CheckResult r = compare_tensors(out, ref, tol);
    std::printf("%s normwise error on uniform reals: %.3g\n", impl, r.l2_rel);
    EXPECT_TRUE(r.pass) << impl << ": " << r.summary() << " (bound " << tol.l2_rel << ")";
    EXPECT_LT(r.l2_rel, 1e-5) << impl;  // F4's ~1e-6; a wrong transform shows as >> 1e-5
  }
}

}  // namespace
}  // namespace pb
