// The reduced-precision convolution kernels at the edges of their blocks, against the fp64
// reference (exact: integer data): cpu/direct's register tile (output widths one below, at and one
// above the tile widths it picks, output channels around its 16/32-channel vectors, input channels
// around its groups of 2 (bf16) and 4 (u8s8) per dot product), cpu/im2col on the packed GEMM (rows
// around the 48-row micro-tile, columns around the 8-column one, sums around the 1024 (bf16) and
// 2048 (u8s8) k blocks; its stride-2 row copies, fp32 too) and the Winograd tiles in bf16 (widths
// around the 2 and 4 output tiles).
// Each runs twice: the second run must give the same outputs. Skipped, with the reason, where this
// CPU cannot run a type.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/core/check.h"
#include "kernels/core/problem.h"

namespace pb {
namespace {

// Every case of `descs` (without dt) in each of `dts` on `impl`, checked against the reference
// within the tolerance table's bound (exact for direct and im2col); returns how many ran, and in
// *why_not the reason of a type this CPU does not run.
int check_all(const std::string& impl, const std::vector<std::string>& descs,
              const std::vector<std::string>& dts, std::string* why_not, Dir dir = Dir::fwd) {
  int ran = 0;
  for (const std::string& dt : dts)
    for (const std::string& d : descs) {
      const std::string text = d + "_dt=" + dt;
      auto p = find_primitive("conv").make(text, dir, 7);
      std::string why;
      auto r = p->runner(impl, &why);
      if (!r) {
        *why_not = why;
        continue;
      }
      MeasureOptions o;
      o.check = true, o.ref_budget_flops = INFINITY;
      std::vector<Tensor> first;
      const Measured m = measure(*p, *r, o, &first);
      // A second run gives the same outputs (nothing accumulates across runs).
      r->reorder_in(), r->run(), r->reorder_out(), r->sync();
      const std::vector<Tensor> again = r->result();
      EXPECT_EQ(again.size(), first.size());
      for (size_t i = 0; i < again.size() && i < first.size(); ++i)
        EXPECT_EQ(compare_tensors(again[i], first[i], {0, ""}).max_abs, 0)
            << impl << " " << text << " " << dir_str(dir) << " output " << i << " run twice";
      EXPECT_TRUE(m.check.pass) << impl << " " << text << " " << dir_str(dir) << ": "
                                << m.check.summary();
      EXPECT_FALSE(m.check.mistrusted)
          << impl << " " << text << " " << dir_str(dir) << ": " << m.check.summary();
      ++ran;
    }
  return ran;
}

#define PB_RUN_OR_SKIP(impl, descs, ...)                                             \
  do {                                                                               \
    std::string why_not;                                                             \
    if (check_all(impl, descs, __VA_ARGS__, &why_not) == 0) GTEST_SKIP() << why_not; \
  } while (0)

std::vector<int64_t> around(int64_t x) {
  return {x - 1, x, x + 1};
}

TEST(ConvLowpSmoke, DirectTileEdges) {
  std::vector<std::string> descs;
  // Output widths around the tile widths (pick_j: 13 -> 13, 14 -> 14, 15 -> 8, 27 -> 14, 28 ->
  // 14, 29 -> 10) with 3x3 kernels; output channels around 16 and 32 (one or two vectors per
  // tile, a partial last block).
  for (int64_t ow : {1, 2, 13, 14, 15, 27, 28, 29})
    descs.push_back("mb1ic8ih3iw" + std::to_string(ow + 2) + "oc16kh3");
  for (int64_t oc : {1, 15, 16, 17, 31, 32, 33, 47, 48, 49, 63, 64, 65})
    descs.push_back("mb1ic8ih6oc" + std::to_string(oc) + "kh3ph1");
  // Input channels around the groups of 2 and 4, and groups whose icg straddles them.
  for (int64_t ic : {1, 2, 3, 4, 5, 7, 8, 9})
    descs.push_back("mb2ic" + std::to_string(ic) + "ih7oc16kh3ph1");
  for (int64_t icg : {3, 5, 6})
    descs.push_back("mb1g2ic" + std::to_string(2 * icg) + "ih7oc34kh3ph1");
  // Stride phases and dilation with widths around a vector of the input copy (8 bf16 pixels,
  // 16 u8 pixels per step).
  for (int64_t iw : {7, 8, 9, 15, 16, 17, 33})
    descs.push_back("mb1ic4ih5iw" + std::to_string(iw) + "oc16kh3ph1sw2");
  descs.push_back("mb1ic5ih9iw17oc16kh3ph2dh1dw1");
  PB_RUN_OR_SKIP("cpu/direct", descs, {"bf16", "bf16:bf16", "u8s8", "u8s8:s8"});
}

TEST(ConvLowpSmoke, Im2colGemmBlockEdges) {
  std::vector<std::string> descs;
  // Output channels (the GEMM's rows) around the 48-row tile; pixels (its columns) around the
  // 8-column tile (1x1 in place: ohw >= 256, else the column copy).
  for (int64_t oc : around(48)) descs.push_back("mb1ic8ih5oc" + std::to_string(oc) + "kh3");
  for (int64_t oc : around(96)) descs.push_back("mb1ic8ih5oc" + std::to_string(oc) + "kh3");
  for (int64_t ow : around(8)) descs.push_back("mb1ic8ih3iw" + std::to_string(ow + 2) + "oc8kh3");
  for (int64_t hw : {16, 17}) descs.push_back("mb2ic8ih" + std::to_string(hw) + "oc20kh1");
  // The sum (icg*kh*kw) around the k blocks and around multiples of the groups of 2 and 4.
  for (int64_t ic : {1023, 1024, 1025, 2047, 2048, 2049})
    descs.push_back("mb1ic" + std::to_string(ic) + "ih3oc5kh1");
  for (int64_t ic : {1, 2, 3, 5}) descs.push_back("mb1ic" + std::to_string(ic) + "ih6oc9kh3");
  descs.push_back("mb1ic3ih12oc24kh7sh2ph3");
  // bf16 with one image per GEMM has the pixels as its rows: ohw around the 48-row tile and its
  // double; batched small images (several per GEMM) keep the output channels as rows.
  for (int64_t hw : around(48)) descs.push_back("mb1ic8ih1iw" + std::to_string(hw) + "oc9kh1");
  for (int64_t hw : around(96)) descs.push_back("mb1ic8ih3iw" + std::to_string(hw + 2) + "oc9kh3");
  descs.push_back("mb4ic8ih5oc50kh3");
  // bf16 1x1 layers of at least 128 pixels have the pixels as rows too, one GEMM per image of a
  // chunk of several (in place at stride 1, from the column copy at stride 2); below 128 the
  // channels stay rows, and the transpose to NCHW moves 16 x 16 blocks: output channels around
  // 16 and 32, 49 pixels (3 blocks and one row).
  for (int64_t hw : {127, 128, 129}) descs.push_back("mb3ic8ih1iw" + std::to_string(hw) + "oc9kh1");
  descs.push_back("mb3ic8ih24oc9kh1sh2");
  for (int64_t oc : {15, 16, 17, 31, 32, 33})
    descs.push_back("mb3ic8ih7oc" + std::to_string(oc) + "kh1");
  PB_RUN_OR_SKIP("cpu/im2col", descs, {"bf16", "bf16:bf16", "u8s8", "u8s8:s8"});
  // bf16's backward on the same GEMM: bwd_d (pixels as rows, ocg as the sum), bwd_w (the sum
  // over pixels: around the 1024 k block with 32 x 32 images).
  std::vector<std::string> bwd = descs;
  for (int64_t hw : {31, 32, 33}) bwd.push_back("mb1ic8ih" + std::to_string(hw) + "oc49kh3ph1");
  for (Dir dir : {Dir::bwd_d, Dir::bwd_w}) {
    std::string why_not;
    if (check_all("cpu/im2col", bwd, {"bf16", "bf16:bf16"}, &why_not, dir) == 0)
      GTEST_SKIP() << why_not;
  }
}

TEST(ConvLowpSmoke, Im2colStride2RowCopies) {
  // cpu/im2col's stride-2 row copies (AVX-512: 16 fp32, 32 bf16 or 32 u8 per step, the rest
  // under masks): output widths around those steps, 1x1 (each row's last even column the last
  // of the image) and 3x3 padded.
  std::vector<std::string> descs;
  for (int64_t ow : {1, 15, 16, 17, 31, 32, 33, 64, 65}) {
    descs.push_back("mb1ic2ih3iw" + std::to_string(2 * ow - 1) + "oc5kh1sh2");
    descs.push_back("mb1ic2ih5iw" + std::to_string(2 * ow) + "oc5kh3sh2ph1");
  }
  PB_RUN_OR_SKIP("cpu/im2col", descs, {"f32", "bf16", "u8s8"});
}

TEST(ConvLowpSmoke, WinogradBf16TileEdges) {
  std::vector<std::string> descs;
  // Output sizes around the 2x2 and 4x4 tiles, channels around 16 (the interleave) and 32 (the
  // GEMM panel).
  for (int64_t o : {1, 2, 3, 4, 5, 7, 8, 9})
    descs.push_back("mb1ic4ih" + std::to_string(o) + "oc8kh3ph1");
  for (int64_t c : {15, 16, 17, 31, 32, 33})
    descs.push_back("mb1ic" + std::to_string(c) + "ih6oc" + std::to_string(c) + "kh3ph1");
  PB_RUN_OR_SKIP("cpu/winograd_f2", descs, {"bf16", "bf16:bf16"});
  PB_RUN_OR_SKIP("cpu/winograd_f4", descs, {"bf16", "bf16:bf16"});
}

}  // namespace
}  // namespace pb
