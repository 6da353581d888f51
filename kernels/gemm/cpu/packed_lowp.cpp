// Reduced-precision cpu/packed (packed_lowp.h). The loop nest is the packed SGEMM's, outermost
// first: jc (NC columns), pc (KC of the sum: pack op(B) into NR-column slivers, shared), ic (MC
// rows, one thread each, or all threads on one block when the rows are few: pack op(A) into
// MR-row slivers), jr, ir: the micro-kernel. What differs is the element: the sum runs in groups
// of G = 2 (bf16) or 4 (u8s8) consecutive k, which one vdpbf16ps / vpdpbusd lane multiplies and
// adds into one fp32 / int32 accumulator, so a packed sliver stores, per group of k, MR (or NR)
// words of G elements: (group * MR + row) * G + q. A k not divisible by G is padded with zeros
// (a zero weight adds nothing whatever the source).
//
// u8s8's source zero point: sum(A * (B - z)) = sum(A * B) - z * sum(A), the row sums of A taken
// from each packed sliver by vpdpbusd against ones (per KC block, so that every KC block's
// partial result is complete). The scales (alpha * a_scale[i] * b_scale, / c_scale for an s8
// output) apply per row in the epilogue.
//
// Partial sums across KC blocks: an f32 output accumulates in C (as the SGEMM does); a bf16 or
// s8 output must round once, so the partial results go to an fp32 panel (m x NC) and the last KC
// block adds it before the conversion.
//
// op(A) = A with at most kDirectMaxN (64) columns of C skips the packing: packed_lowp_direct.cpp.
#include "kernels/gemm/cpu/packed_lowp.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__x86_64__)
#define PB_X86 1
// GCC 12 reports its own intrinsics' undefined-start vectors (_mm512_undefined_*) as maybe
// uninitialized once they are inlined into target("avx512...") functions (to the file's end).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "kernels/gemm/cpu/packed_lowp_kernels.h"
#endif

#include "kernels/core/error.h"
#include "kernels/core/machine.h"
#include "kernels/core/vmath.h"
#include "kernels/gemm/cpu/packed_lowp_avx2.h"
#include "kernels/gemm/cpu/packed_sgemm.h"

namespace pb {

namespace {
// Whether the CPU has AVX512_VNNI and AVX512_VBMI (the u8s8 kernel's dot product and its
// packing's byte shuffle).
bool has_vnni() {
#ifdef PB_X86
  return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vbmi");
#else
  return false;
#endif
}
}  // namespace

std::string gemm_packed_lowp_avx512_unsupported(const DataType& dt) {
  if (dt.is_f32()) return "";
  if (dt.in == DataType::f16)
    return "dt f16: cpu/packed has no f16 kernel (x86 has no f16 dot product accumulating in "
           "fp32: AVX512_FP16 multiplies and adds in f16)";
#ifdef PB_X86
  if (std::string(vmath::isa()) != "avx512")
    return "dt " + dt.in_str() + ": cpu/packed's reduced-precision AVX-512 kernels need " +
           "AVX-512 (SIMD path in force: " + vmath::isa() + ")";
  if (dt.in == DataType::bf16 && !__builtin_cpu_supports("avx512bf16"))
    return "dt bf16: this CPU has no AVX512_BF16 (vdpbf16ps)";
  if (dt.in == DataType::u8s8 && !has_vnni())
    return "dt u8s8: this CPU has no AVX512_VNNI (vpdpbusd) or AVX512_VBMI (the packing's "
           "byte shuffle)";
  return "";
#else
  return "dt " + dt.in_str() + ": cpu/packed's reduced-precision kernels are x86 only";
#endif
}

bool gemm_packed_lowp_on_avx2(const DataType& dt) {
#ifdef PB_X86
  if (dt.in != DataType::u8s8) return false;
  const std::string isa = vmath::isa();
  return isa == "avx2" || (isa == "avx512" && !has_vnni());
#else
  return false;
#endif
}

std::string gemm_packed_lowp_unsupported(const DataType& dt) {
  if (gemm_packed_lowp_on_avx2(dt)) return "";
  const std::string why = gemm_packed_lowp_avx512_unsupported(dt);
  if (why.empty() || std::string(vmath::isa()) == "avx512") return why;
  if (dt.in == DataType::bf16)
    return why + "; AVX2 has no bf16 arithmetic (u8s8 runs there, exactly, on vpmaddwd)";
  if (dt.in == DataType::u8s8) return why + "; its AVX2 u8s8 kernel needs the avx2 path";
  return why;
}

#ifdef PB_X86
namespace lowp {
namespace {

// ng groups of the sum: a sliver holds MR words (of G elements) per group, b NR words; NV
// columns, V vectors of 16 rows (rows >= mv masked at the store). u8s8's sums are compensated for
// the source zero point and converted to fp32 before the epilogue.
template <class Tr, int V, int NV>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512bf16"))) void tile(
    int64_t ng, const typename Tr::TA* a, const typename Tr::TB* b, int mv, const Epilogue& e) {
  constexpr int G = Tr::G;
  using A = typename Acc<G>::type;
  A acc[NV][V];
#pragma GCC unroll 8
  for (int j = 0; j < NV; ++j)
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) acc[j][v] = A{};
  // The tile's C lines (or the fp32 panel's) on their way while the sum runs, as the SGEMM's
  // micro-kernel does: the epilogue waited on them (a fifth of the tile's samples in perf on
  // 7680x3000x2560 u8s8: C is 92 MB, read again by the second KC block). That shape took
  // 99-103 ms without and 88-89 ms with (oneDNN 88), 512x3000x2816 8.3-9.3 -> 7.5-7.9 ms.
  {
    const int eb = DataType::bytes_of(e.out);
    const char* cb = static_cast<const char*>(e.c);
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j)
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) {
        _mm_prefetch(cb + (j * e.ldc + 16 * v) * eb, _MM_HINT_T0);
        if (e.panel) _mm_prefetch(e.panel + j * e.ldp + 16 * v, _MM_HINT_T0);
      }
  }
#pragma GCC unroll 2
  for (int64_t g = 0; g < ng; ++g) {
    const typename Tr::TA* ag = a + g * kMr * G;
    const typename Tr::TB* bg = b + g * kNr * G;
    __m512i av[V];
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) av[v] = _mm512_loadu_si512(ag + 16 * G * v);
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) {
      int32_t w;
      std::memcpy(&w, bg + G * j, 4);
      const __m512i bj = _mm512_set1_epi32(w);
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) acc[j][v] = dot(acc[j][v], bj, av[v]);
    }
  }
#pragma GCC unroll 8
  for (int j = 0; j < NV; ++j) {
    __m512 f[V];
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) {
      if constexpr (G == 4) {
        __m512i s = acc[j][v];
        if (e.comp)
          s = _mm512_sub_epi32(s,
                               _mm512_maskz_loadu_epi32(rows_mask(mv - 16 * v), e.comp + 16 * v));
        f[v] = _mm512_cvtepi32_ps(s);
      } else {
        f[v] = acc[j][v];
      }
    }
    store_column<V>(f, j, mv, e);
  }
}

template <class Tr>
using TileFn = void (*)(int64_t, const typename Tr::TA*, const typename Tr::TB*, int,
                        const Epilogue&);

template <class Tr, int V, size_t... J>
constexpr std::array<TileFn<Tr>, kNr> tile_row(std::index_sequence<J...>) {
  return {tile<Tr, V, static_cast<int>(J) + 1>...};
}

// The tile for mv rows (V = ceil(mv / 16)) and nv columns.
template <class Tr>
TileFn<Tr> tile_for(int mv, int nv) {
  static constexpr std::array<std::array<TileFn<Tr>, kNr>, 3> table = {
      tile_row<Tr, 1>(std::make_index_sequence<kNr>()),
      tile_row<Tr, 2>(std::make_index_sequence<kNr>()),
      tile_row<Tr, 3>(std::make_index_sequence<kNr>())};
  return table[(mv - 1) / 16][nv - 1];
}

// op(A) rows [r0, r0 + mv) x sum [p0, p0 + kc) into one sliver (MR rows per group, zero-padded).
template <class Tr>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi"))) void pack_a(
    bool ta, const typename Tr::TA* a, int64_t lda, int64_t r0, int mv, int64_t p0, int64_t kc,
    typename Tr::TA* dst) {
  using T = typename Tr::TA;
  constexpr int G = Tr::G;
  const int64_t ng = ceil_div(kc, G), full = kc / G;
  if (ta) {  // row i of op(A) is column i of A: each group of G is one word
    int64_t g0 = 0;
    if (lda % G == 0) {  // word-aligned: the SGEMM's 8 x 8 transposes
      transpose_words(a + r0 * lda + p0, lda / G, mv, full, dst, kMr);
      g0 = full;
    }
    for (int64_t g = g0; g < ng; ++g)
      for (int r = 0; r < mv; ++r)
        for (int q = 0; q < G; ++q) {
          const int64_t p = g * G + q;
          dst[(g * kMr + r) * G + q] = p < kc ? a[(r0 + r) * lda + p0 + p] : T(0);
        }
    for (int64_t g = 0; g < ng && mv < kMr; ++g)
      std::memset(dst + (g * kMr + mv) * G, 0, (kMr - mv) * G * sizeof(T));
    return;
  }
  // Column p of A holds the rows contiguous: G columns (zero past kc) interleaved per 16 rows.
  for (int64_t g = 0; g < ng; ++g) {
    const T* col[G];
    for (int q = 0; q < G; ++q) {
      const int64_t p = g * G + q;
      col[q] = p < kc ? a + (p0 + p) * lda + r0 : nullptr;
    }
    for (int r = 0; r < kMr; r += 16) {
      const __mmask16 k = rows_mask(mv - r);
      __m512i out;
      if constexpr (G == 2) {
        static const __m512i idx =
            _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7,
                             22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
        const __m256i x0 =
            col[0] ? _mm256_maskz_loadu_epi16(k, col[0] + r) : _mm256_setzero_si256();
        const __m256i x1 =
            col[1] ? _mm256_maskz_loadu_epi16(k, col[1] + r) : _mm256_setzero_si256();
        out = _mm512_permutexvar_epi16(idx, _mm512_inserti64x4(_mm512_castsi256_si512(x0), x1, 1));
      } else {
        static const __m512i idx = _mm512_set_epi8(
            63, 47, 31, 15, 62, 46, 30, 14, 61, 45, 29, 13, 60, 44, 28, 12, 59, 43, 27, 11, 58, 42,
            26, 10, 57, 41, 25, 9, 56, 40, 24, 8, 55, 39, 23, 7, 54, 38, 22, 6, 53, 37, 21, 5, 52,
            36, 20, 4, 51, 35, 19, 3, 50, 34, 18, 2, 49, 33, 17, 1, 48, 32, 16, 0);
        __m512i v = _mm512_setzero_si512();
        if (col[0]) v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(k, col[0] + r), 0);
        if (col[1]) v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(k, col[1] + r), 1);
        if (col[2]) v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(k, col[2] + r), 2);
        if (col[3]) v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(k, col[3] + r), 3);
        out = _mm512_permutexvar_epi8(idx, v);
      }
      _mm512_storeu_si512(dst + (g * kMr + r) * G, out);
    }
  }
}

// op(B) sum [p0, p0 + kc) x columns [c0, c0 + nv) into one sliver (NR columns per group). Whole
// groups of whole slivers are moved by vector shuffles (op(B) = B: the 8 x 8 word transposes;
// op(B) = B^T, an im2col buffer's rows: G rows interleaved), the rest element by element.
template <class Tr>
void pack_b(bool tb, const typename Tr::TB* b, int64_t ldb, int64_t p0, int64_t kc, int64_t c0,
            int nv, typename Tr::TB* dst) {
  using T = typename Tr::TB;
  constexpr int G = Tr::G;
  const int64_t ng = ceil_div(kc, G), full = kc / G;
  int64_t g0 = 0;
  if (!tb && ldb % G == 0) {  // column j of B: the sum contiguous, a group is a word
    transpose_words(b + c0 * ldb + p0, ldb / G, nv, full, dst, kNr);
    g0 = full;
    for (int64_t g = 0; g < full && nv < kNr; ++g)
      std::memset(dst + (g * kNr + nv) * G, 0, (kNr - nv) * G * sizeof(T));
  } else if (tb && nv == kNr) {  // row p of op(B) contiguous: interleave G rows of 8 columns
    for (int64_t g = 0; g < full; ++g) {
      const T* r = b + (p0 + g * G) * ldb + c0;
      __m128i lo, hi;
      if constexpr (G == 2) {
        const __m128i x0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r));
        const __m128i x1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r + ldb));
        lo = _mm_unpacklo_epi16(x0, x1), hi = _mm_unpackhi_epi16(x0, x1);
      } else {
        const __m128i x0 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(r));
        const __m128i x1 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(r + ldb));
        const __m128i x2 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(r + 2 * ldb));
        const __m128i x3 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(r + 3 * ldb));
        const __m128i a = _mm_unpacklo_epi8(x0, x1), c = _mm_unpacklo_epi8(x2, x3);
        lo = _mm_unpacklo_epi16(a, c), hi = _mm_unpackhi_epi16(a, c);
      }
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + g * kNr * G), lo);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + g * kNr * G) + 1, hi);
    }
    g0 = full;
  }
  for (int64_t g = g0; g < ng; ++g)
    for (int j = 0; j < kNr; ++j)
      for (int q = 0; q < G; ++q) {
        const int64_t p = g * G + q;
        const bool in = p < kc && j < nv;
        dst[(g * kNr + j) * G + q] = !in  ? T(0)
                                     : tb ? b[(p0 + p) * ldb + c0 + j]
                                          : b[(c0 + j) * ldb + p0 + p];
      }
}

// comp[r] = z * (sum of the packed sliver's row r), r < MR (u8s8).
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void row_sums(const int8_t* sliver,
                                                                     int64_t ng, int32_t z,
                                                                     int32_t* comp) {
  const __m512i ones = _mm512_set1_epi8(1);
  __m512i s[3] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512()};
  for (int64_t g = 0; g < ng; ++g)
    for (int v = 0; v < 3; ++v)
      s[v] = dot(s[v], ones, _mm512_loadu_si512(sliver + g * kMr * 4 + 64 * v));
  for (int v = 0; v < 3; ++v)
    _mm512_storeu_si512(comp + 16 * v, _mm512_mullo_epi32(s[v], _mm512_set1_epi32(z)));
}

template <class Tr>
void driver(const LowpGemm& g) {
  using TA = typename Tr::TA;
  using TB = typename Tr::TB;
  constexpr int G = Tr::G;
  const bool quant = G == 4;
  const TA* a = static_cast<const TA*>(g.a);
  const TB* b = static_cast<const TB*>(g.b);
  const int64_t m = g.m, n = g.n, k = g.k;
  const int64_t kc_max = Tr::kKc;
  const int64_t kcp_max = ceil_div(kc_max, G) * G;
  // The A block takes half of L2, the B panel a quarter of L3, as in the SGEMM.
  const int64_t l2 = static_cast<int64_t>(cache_bytes(2, 1 << 20));
  const int64_t l3 = static_cast<int64_t>(cache_bytes(3, 8 << 20));
  const int64_t mc_max = std::max<int64_t>(kMr, l2 / 2 / (kcp_max * sizeof(TA)) / kMr * kMr);
  const int64_t nc_max = std::max<int64_t>(kNr, l3 / 4 / (kcp_max * sizeof(TB)) / kNr * kNr);
  const int nt = gemm_threads(m, n, k);
  const int64_t n_sl = ceil_div(m, kMr);
  const GemmRowBlocks blocks = gemm_row_blocks(nt, m, n, mc_max, kMr, kNr);
  const bool split_rows = blocks.split_rows;
  const int64_t n_ic = blocks.n_ic;
  const int64_t mc = ceil_div(n_sl, n_ic) * kMr;
  const bool typed_out = g.dt.out != DataType::out_f32;
  const bool panel = typed_out && k > kc_max;  // partial sums wait in fp32

  // Per-row scales (u8s8_row_scales), padded to whole slivers.
  static thread_local std::vector<uint8_t> scale_buf, b_buf, panel_buf;
  float* scale = nullptr;
  float beta_c = g.beta;  // beta on C in C's units
  if (quant) scale = u8s8_row_scales(g, n_sl * kMr, scale_buf, &beta_c);
  if (!g.ta && n <= kDirectMaxN) return direct<Tr>(g, scale, beta_c, nt);
  TB* bp = scratch<TB>(b_buf, kcp_max * ceil_div(std::min(n, nc_max), kNr) * kNr);
  float* pn = panel ? scratch<float>(panel_buf, m * std::min(n, nc_max)) : nullptr;
  const auto out_size = static_cast<size_t>(g.dt.out_bytes());

  // A thread that cannot grow its buffers still passes every barrier; once one failed, no thread
  // computes, and the error is rethrown after the region.
  RegionErrors errors;
#pragma omp parallel num_threads(nt) if (nt > 1)
  {
    static thread_local std::vector<uint8_t> a_buf, comp_buf;
    TA* ap_own = nullptr;
    int32_t* comp_own = nullptr;
    errors.run([&] {
      ap_own = scratch<TA>(a_buf, mc * kcp_max, true);
      if (quant) comp_own = scratch<int32_t>(comp_buf, mc, true);
    });
    for (int64_t jc = 0; jc < n; jc += nc_max) {
      const int64_t nc = std::min(nc_max, n - jc), n_jr = ceil_div(nc, kNr);
      for (int64_t pc = 0; pc < k; pc += kc_max) {
        const int64_t kc = std::min(kc_max, k - pc), ng = ceil_div(kc, G);
        const bool last = pc + kc_max >= k;
#pragma omp for schedule(static)
        for (int64_t s = 0; s < n_jr; ++s) {
          const int nv = static_cast<int>(std::min<int64_t>(kNr, nc - s * kNr));
          pack_b<Tr>(g.tb, b, g.ldb, pc, kc, jc + s * kNr, nv, bp + s * kNr * ng * G);
        }
        auto pack_sliver = [&](int64_t ic, int64_t mcv, int64_t s, TA* ap, int32_t* comp) {
          const int mv = static_cast<int>(std::min<int64_t>(kMr, mcv - s * kMr));
          TA* sl = ap + s * kMr * ng * G;
          pack_a<Tr>(g.ta, a, g.lda, ic + s * kMr, mv, pc, kc, sl);
          if constexpr (G == 4)
            if (g.b_zero != 0) row_sums(sl, ng, g.b_zero, comp + s * kMr);
        };
        // Every B sliver jr in [jr0, jr1) against every A sliver of the block.
        auto tiles = [&](int64_t ic, int64_t mcv, const TA* ap, const int32_t* comp, int64_t jr0,
                         int64_t jr1) {
          for_each_tile(ic, mcv, kMr, jc, nc, kNr, jr0, jr1,
                        [&](int64_t jr, int64_t ir, int64_t row, int64_t col, int mv, int nv) {
                          Epilogue e{};
                          e.scale = scale ? scale + row : nullptr;
                          e.alpha = g.alpha;
                          e.comp = quant && g.b_zero != 0 ? comp + ir * kMr : nullptr;
                          float* pt = pn ? pn + (jr * kNr) * m + row : nullptr;
                          if (panel && !last) {  // an fp32 partial into the panel
                            e.out = DataType::out_f32;
                            e.c = pt;
                            e.ldc = m;
                            e.beta = pc == 0 ? 0.0f : 1.0f;
                          } else {
                            e.out = g.dt.out;
                            e.c = static_cast<char*>(g.c) + (col * g.ldc + row) * out_size;
                            e.ldc = g.ldc;
                            // An f32 output accumulates in C across KC blocks.
                            e.beta = pc == 0 || panel ? beta_c : 1.0f;
                            e.panel = panel ? pt : nullptr;
                            e.ldp = m;
                          }
                          tile_for<Tr>(mv, nv)(ng, ap + ir * kMr * ng * G, bp + jr * kNr * ng * G,
                                               mv, e);
                        });
        };
        if (split_rows) {
#pragma omp for schedule(dynamic, 1)
          for (int64_t blk = 0; blk < n_ic; ++blk) {
            if (errors.failed()) continue;
            const int64_t s0 = blk * n_sl / n_ic, s1 = (blk + 1) * n_sl / n_ic;
            const int64_t ic = s0 * kMr, mcv = std::min(s1 * kMr, m) - ic;
            for (int64_t s = 0; s < ceil_div(mcv, kMr); ++s)
              pack_sliver(ic, mcv, s, ap_own, comp_own);
            tiles(ic, mcv, ap_own, comp_own, 0, n_jr);
          }
        } else {
          // Columns split: each thread packs all the rows into its own buffers; one shared pack
          // had every packed line written by one core and read by both (see the SGEMM).
          if (!errors.failed())
            for (int64_t s = 0; s < n_sl; ++s) pack_sliver(0, m, s, ap_own, comp_own);
#pragma omp for schedule(static)
          for (int64_t jr = 0; jr < n_jr; ++jr)
            if (!errors.failed()) tiles(0, m, ap_own, comp_own, jr, jr + 1);
        }
      }
    }
  }
  errors.rethrow();
}

}  // namespace
}  // namespace lowp
#endif

void gemm_packed_lowp(const LowpGemm& g) {
  const std::string why = gemm_packed_lowp_unsupported(g.dt);
  if (!why.empty()) throw Unsupported(why);
  if (g.m <= 0 || g.n <= 0 || g.k <= 0)
    throw InputError("gemm", "cpu/packed reduced precision needs m, n, k >= 1");
  if (g.a_packed &&
      (g.a_packed->dt.in != g.dt.in || g.a_packed->m != g.m || g.a_packed->k != g.k || g.ta))
    throw RuntimeError("cpu/packed reduced precision: the packed A is of another type or shape");
  if (g.c_trans && !gemm_packed_lowp_on_avx2(g.dt))
    throw RuntimeError("cpu/packed reduced precision: a transposed C needs the AVX2 u8s8 kernel");
#ifdef PB_X86
  if (gemm_packed_lowp_on_avx2(g.dt))
    lowp_avx2::gemm_u8s8(g);
  else if (g.dt.in == DataType::bf16)
    lowp::driver<lowp::Bf16>(g);
  else
    lowp::driver<lowp::U8s8>(g);
#endif
}

}  // namespace pb
#ifdef PB_X86
#pragma GCC diagnostic pop
#endif
