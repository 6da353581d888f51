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
// op(A) = A with at most kDirectMaxN (64) columns of C skips the packing, and so do up to 128
// where A is over half of the threads' L2: packed_lowp_direct.cpp (the driver's rule).
//
// Where the CPU has AMX (kernels/core/amx.h), the tile dot products run the products instead
// (packed_lowp_amx.cpp), except those few-column ones the in-place path keeps (the driver's rule).
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

#include "kernels/core/amx.h"
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

// Up to this many A slivers per thread, op(B) = B is read in place by the tiles (the driver's
// in_place_b), as in the SGEMM.
constexpr int64_t kInPlaceBMaxSlivers = 6;

// ng groups of the sum: a sliver holds MR words (of G elements) per group, b NR words (or, with
// InPlaceB, b is op(B) = B itself, a column's words ldb elements apart); NV columns, V vectors
// of 16 rows (rows >= mv masked at the store). u8s8's sums are compensated for the source zero
// point and converted to fp32 before the epilogue.
template <class Tr, int V, int NV, bool InPlaceB>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512bf16"))) void tile(
    int64_t ng, const typename Tr::TA* a, const typename Tr::TB* b, int64_t ldb, int mv,
    const Epilogue& e) {
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
    const typename Tr::TB* bg = InPlaceB ? b + g * G : b + g * kNr * G;
    __m512i av[V];
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) av[v] = _mm512_loadu_si512(ag + 16 * G * v);
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) {
      int32_t w;
      std::memcpy(&w, InPlaceB ? bg + j * ldb : bg + G * j, 4);
      const __m512i bj = _mm512_set1_epi32(w);
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) {
        if constexpr (std::is_same_v<Tr, U8s8A>)
          acc[j][v] = dot_u8_a(acc[j][v], bj, av[v]);
        else
          acc[j][v] = dot(acc[j][v], bj, av[v]);
      }
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
        if (e.col_comp) s = _mm512_sub_epi32(s, _mm512_set1_epi32(e.col_comp[j]));
        f[v] = _mm512_cvtepi32_ps(s);
      } else {
        f[v] = acc[j][v];
      }
    }
    store_column<V>(f, j, mv, e);
  }
}

template <class Tr>
using TileFn = void (*)(int64_t, const typename Tr::TA*, const typename Tr::TB*, int64_t, int,
                        const Epilogue&);

template <class Tr, int V, bool InPlaceB, size_t... J>
constexpr std::array<TileFn<Tr>, kNr> tile_row(std::index_sequence<J...>) {
  return {tile<Tr, V, static_cast<int>(J) + 1, InPlaceB>...};
}

// The tile for mv rows (V = ceil(mv / 16)) and nv columns, B packed or in place.
template <class Tr>
TileFn<Tr> tile_for(int mv, int nv, bool in_place_b) {
  static constexpr std::array<std::array<TileFn<Tr>, kNr>, 6> table = {
      tile_row<Tr, 1, false>(std::make_index_sequence<kNr>()),
      tile_row<Tr, 2, false>(std::make_index_sequence<kNr>()),
      tile_row<Tr, 3, false>(std::make_index_sequence<kNr>()),
      tile_row<Tr, 1, true>(std::make_index_sequence<kNr>()),
      tile_row<Tr, 2, true>(std::make_index_sequence<kNr>()),
      tile_row<Tr, 3, true>(std::make_index_sequence<kNr>())};
  return table[(in_place_b ? 3 : 0) + (mv - 1) / 16][nv - 1];
}

// op(A) rows [r0, r0 + mv) x sum [p0, p0 + kc) into one sliver (MR rows per group, zero-padded).
template <class Tr>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi"))) void pack_a(
    bool ta, const typename Tr::TA* a, int64_t lda, int64_t r0, int mv, int64_t p0, int64_t kc,
    typename Tr::TA* dst) {
  using T = typename Tr::TA;
  constexpr int G = Tr::G;
  const int64_t ng = ceil_div(kc, G);
  if (ta) {  // row i of op(A) is column i of A: each group of G is one word
    transpose_groups<T, G>(a, lda, r0, mv, p0, kc, ng, kMr, dst);
    return;
  }
  // Column p of A holds the rows contiguous: G columns (zero past kc) interleaved per 16 rows.
  if constexpr (G == 4) {
    // Bytes: each column's 48 rows in one (masked) load, interleaved 4 ways by unpacks, then the
    // 128-bit lanes of the four results transposed: 4 loads and 14 shuffles a group, where
    // interleave16 took 12 loads, 12 inserts and 3 permutes (u8s8 with the roles swapped packs
    // a 56x56 image of 256 channels as A: 40% of that layer's samples, Zen 5).
    const __mmask64 rows = mv >= 64 ? ~__mmask64(0) : (__mmask64(1) << mv) - 1;
    for (int64_t g = 0; g < ng; ++g) {
      __m512i x[4];
      for (int q = 0; q < 4; ++q) {
        const int64_t p = g * 4 + q;
        x[q] = p < kc ? _mm512_maskz_loadu_epi8(rows, a + (p0 + p) * lda + r0)
                      : _mm512_setzero_si512();
      }
      const __m512i t0 = _mm512_unpacklo_epi8(x[0], x[1]), t1 = _mm512_unpackhi_epi8(x[0], x[1]);
      const __m512i t2 = _mm512_unpacklo_epi8(x[2], x[3]), t3 = _mm512_unpackhi_epi8(x[2], x[3]);
      // u[h], 128-bit lane L: rows 16 L + 4 h .. + 3, 4 bytes each.
      const __m512i u0 = _mm512_unpacklo_epi16(t0, t2), u1 = _mm512_unpackhi_epi16(t0, t2);
      const __m512i u2 = _mm512_unpacklo_epi16(t1, t3), u3 = _mm512_unpackhi_epi16(t1, t3);
      const __m512i v0 = _mm512_shuffle_i32x4(u0, u1, 0x44),
                    v1 = _mm512_shuffle_i32x4(u2, u3, 0x44);
      const __m512i w0 = _mm512_shuffle_i32x4(u0, u1, 0xEE),
                    w1 = _mm512_shuffle_i32x4(u2, u3, 0xEE);
      T* out = dst + g * kMr * 4;
      _mm512_storeu_si512(out, _mm512_shuffle_i32x4(v0, v1, 0x88));        // rows 0-15
      _mm512_storeu_si512(out + 64, _mm512_shuffle_i32x4(v0, v1, 0xDD));   // 16-31
      _mm512_storeu_si512(out + 128, _mm512_shuffle_i32x4(w0, w1, 0x88));  // 32-47
    }
    return;
  }
  for (int64_t g = 0; g < ng; ++g) {
    const T* col[G];
    for (int q = 0; q < G; ++q) {
      const int64_t p = g * G + q;
      col[q] = p < kc ? a + (p0 + p) * lda + r0 : nullptr;
    }
    for (int r = 0; r < kMr; r += 16) {
      const T* rows[G];
      for (int q = 0; q < G; ++q) rows[q] = col[q] ? col[q] + r : nullptr;
      const __m512i out = interleave16<G>(rows, rows_mask(mv - r));
      _mm512_storeu_si512(dst + (g * kMr + r) * G, out);
    }
  }
}

// op(B) sum [p0, p0 + kc) x columns [c0, c0 + nv) into one sliver (NR columns per group). Whole
// groups of whole slivers are moved by vector shuffles (op(B) = B: the 8 x 8 word transposes of
// transpose_groups; op(B) = B^T, an im2col buffer's rows: G rows interleaved), the rest element
// by element.
template <class Tr>
void pack_b(bool tb, const typename Tr::TB* b, int64_t ldb, int64_t p0, int64_t kc, int64_t c0,
            int nv, typename Tr::TB* dst) {
  using T = typename Tr::TB;
  constexpr int G = Tr::G;
  const int64_t ng = ceil_div(kc, G), full = kc / G;
  if (!tb) {  // column j of B: the sum contiguous, a group is a word
    transpose_groups<T, G>(b, ldb, c0, nv, p0, kc, ng, kNr, dst);
    return;
  }
  int64_t g0 = 0;
  if (nv == kNr) {  // row p of op(B) contiguous: interleave G rows of 8 columns
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
        dst[(g * kNr + j) * G + q] = p < kc && j < nv ? b[(p0 + p) * ldb + c0 + j] : T(0);
      }
}

// comp[j] = z * (the sum of column j of a packed s8 B sliver), j < kNr: ng groups of kNr words.
inline void col_sums(const int8_t* sl, int64_t ng, int32_t z, int32_t* comp) {
  int32_t sum[kNr] = {};
  for (int64_t g = 0; g < ng; ++g)
    for (int j = 0; j < kNr; ++j)
      for (int q = 0; q < 4; ++q) sum[j] += sl[(g * kNr + j) * 4 + q];
  for (int j = 0; j < kNr; ++j) comp[j] = z * sum[j];
}
inline void col_sums(const void*, int64_t, int32_t, int32_t*) {}  // (other types: never called)

template <class Tr>
void driver(const LowpGemm& g) {
  using TA = typename Tr::TA;
  using TB = typename Tr::TB;
  constexpr int G = Tr::G;
  const bool quant = G == 4;
  constexpr bool sw = std::is_same_v<Tr, U8s8A>;  // the roles swapped: per-column epilogue
  const TA* a = static_cast<const TA*>(g.a);
  const TB* b = static_cast<const TB*>(g.b);
  const int64_t m = g.m, n = g.n, k = g.k;
  const int64_t kc_max = Tr::kKc;
  const int64_t kcp_max = ceil_div(kc_max, G) * G;
  // The A block takes half of L2, the B panel gemm_b_panel_bytes, as in the SGEMM.
  const int64_t l2 = static_cast<int64_t>(cache_bytes(2, 1 << 20));
  const int64_t mc_max = std::max<int64_t>(kMr, l2 / 2 / (kcp_max * sizeof(TA)) / kMr * kMr);
  const int64_t nc_max =
      std::max<int64_t>(kNr, gemm_b_panel_bytes() / (kcp_max * sizeof(TB)) / kNr * kNr);
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
  if (quant)
    scale = u8s8_row_scales(g, sw ? ceil_div(n, kNr) * kNr : n_sl * kMr, scale_buf, &beta_c);
  // Which products read op(A) = A in place (direct) instead of packing it. A packed A
  // (LowpPackedA) is read by that path alone, up to kDirectMaxN columns. Otherwise up to
  // kDirectMaxN columns, and up to twice that with at least 4 rows per column where A (unpacked)
  // is over half of the threads' L2: below it, the packed tile's reuse wins at 65-128 columns.
  // Zen 5 family 26, 2 threads (1 MB of L2 each), ms packed -> in place, alternating processes
  // (3 rounds of medians of 15), since the in-place kernel holds its vectors in registers:
  // u8s8 1024x32x512 0.033 -> 0.029, 1760x32x1760 0.20 -> 0.15, 2560x64x2560 0.71 -> 0.58,
  // 2048x64x2048 0.43 -> 0.38, 3072x64x1024 0.31 both, 2560x128x2560 1.31 -> 1.11, 512x128x4096
  // (2 MB) 0.42 -> 0.37, 1024x128x512 (0.5 MB) 0.096 -> 0.093; bf16 2560x128x2560 3.56 -> 2.32,
  // 2048x128x2048 2.05 -> 1.55, 1760x128x1760 1.23 -> 1.02, 1024x128x512 (1 MB) 0.167 -> 0.176,
  // 512x128x512 0.087 -> 0.092. Before that fix, packing won in u8s8 on 32-64 columns of an A
  // under 3 x L2 (1760x32x1760 0.39 -> 0.31 packed) and on 65-128 under 4 x L2. Earlier, over
  // 4 x L2 (before the fix too): bf16 7680x128x2560 13.5-13.8 -> 7.7-7.8, u8s8 7680x128x2560
  // 7.9-8.5 -> 5.9, 4096x128x4096 6.3-7.4 -> 5.0-5.4.
  const double a_bytes = double(m) * k * sizeof(TA), l2_all = double(l2) * nt;
  const bool in_place = !sw && !g.ta &&
                        (g.a_packed ? n <= kDirectMaxN
                                    : n <= kDirectMaxN || (n <= 2 * kDirectMaxN && m >= 4 * n &&
                                                           a_bytes > l2_all / 2));
  // AMX (packed_lowp_amx.cpp) wherever it runs the type, except for op(A) = A with few columns:
  // the in-place path reads A once, where the tiles need all of A packed first. Xeon family 6
  // model 207, 2 threads, ms of the tiles over the AVX-512 kernels for m = k = 512, 1760, 4096
  // (alternating calls in one process, medians of 11, with A's pack reading whole column lines):
  // bf16 2 columns 1.36-1.89; 4 columns 0.80-1.49; 8 columns 0.68-0.86; 16 0.43-0.55. u8s8 8
  // columns 1.22-1.39; 16 0.95-1.13; 24 0.78, 1.00, 0.92; 32 0.71-0.91; 48 0.68-0.75. With op(A)
  // = A^T (no in-place path) the tiles were even or ahead from 2 columns (1760x{2,4,16,32}:
  // 0.80-1.11).
  // With the roles swapped (U8s8A) only the packed tiles below run.
  const bool amx_few = !g.ta && (G == 2 ? n < 8 : n < 24);
  if constexpr (!sw) {
    if (!g.a_packed && !amx_few && amx::usable(G == 2 ? amx::Kind::bf16 : amx::Kind::int8))
      return amx<Tr>(g, scale, beta_c, nt);
    if (in_place) return direct<Tr>(g, scale, beta_c, nt);
    if (tn_tiles<Tr>(g, scale, beta_c, nt)) return;
  }
  // op(B) = B read in place by the tiles, each column's words ldb apart, where few A slivers per
  // thread reuse each B sliver (as in the SGEMM's b_in_place) and every group of G lies within
  // its column (k a multiple of G, as in every DeepBench shape; else a column's last word would
  // take the next column's first elements, which a zero weight does not cancel in bf16 when
  // they are not finite). Zen 5 family 26, 2 threads, ms packed -> in place (alternating
  // processes, 3 rounds of medians of 15): u8s8 35x8457x2560 1.77 -> 1.37 (onednn/matmul 1.54),
  // 35x8457x4096 with A^T 2.85 -> 2.08, 128x4096x1024 0.69 -> 0.63, 288x2048x2048 1.48 -> 1.40,
  // 576x2048x2048 (6 slivers per thread) 2.88 -> 2.80, 512x3000x2816 5.58 -> 5.37; bf16
  // 35x8457x2560 3.55 -> 2.90, 128x4096x1024 1.36 -> 1.23, 256x1024x8192 6.31 -> 5.92.
  const bool in_place_b = !sw && !g.tb && k % G == 0 && ceil_div(n_sl, nt) <= kInPlaceBMaxSlivers &&
                          (!split_rows || nt == 1 || n_sl >= 2 * nt);
  TB* bp =
      in_place_b ? nullptr : scratch<TB>(b_buf, kcp_max * ceil_div(std::min(n, nc_max), kNr) * kNr);
  float* pn = panel ? scratch<float>(panel_buf, m * std::min(n, nc_max)) : nullptr;
  // U8s8A: zero point * each packed column's sum in this KC block (the s8 operand is B).
  static thread_local std::vector<uint8_t> col_comp_buf;
  int32_t* col_comp = sw && g.b_zero != 0
                          ? scratch<int32_t>(col_comp_buf, ceil_div(std::min(n, nc_max), kNr) * kNr)
                          : nullptr;

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
        if (!in_place_b) {
#pragma omp for schedule(static)
          for (int64_t s = 0; s < n_jr; ++s) {
            const int nv = static_cast<int>(std::min<int64_t>(kNr, nc - s * kNr));
            pack_b<Tr>(g.tb, b, g.ldb, pc, kc, jc + s * kNr, nv, bp + s * kNr * ng * G);
            if (col_comp) col_sums(bp + s * kNr * ng * G, ng, g.b_zero, col_comp + s * kNr);
          }
        }
        auto pack_sliver = [&](int64_t ic, int64_t mcv, int64_t s, TA* ap, int32_t* comp) {
          const int mv = static_cast<int>(std::min<int64_t>(kMr, mcv - s * kMr));
          TA* sl = ap + s * kMr * ng * G;
          pack_a<Tr>(g.ta, a, g.lda, ic + s * kMr, mv, pc, kc, sl);
          if constexpr (G == 4 && !sw)
            if (g.b_zero != 0) row_sums<3>(sl, ng, kMr * 4, g.b_zero, comp + s * kMr);
        };
        // Every B sliver jr in [jr0, jr1) against every A sliver of the block.
        auto tiles = [&](int64_t ic, int64_t mcv, const TA* ap, const int32_t* comp, int64_t jr0,
                         int64_t jr1) {
          for_each_tile(ic, mcv, kMr, jc, nc, kNr, jr0, jr1,
                        [&](int64_t jr, int64_t ir, int64_t row, int64_t col, int mv, int nv) {
                          Epilogue e = tile_epilogue(g, sw ? nullptr : scale, beta_c, pn, panel, pc,
                                                     last, row, col, jc);
                          e.comp = quant && !sw && g.b_zero != 0 ? comp + ir * kMr : nullptr;
                          if (sw) {
                            e.col_scale = scale + col;
                            e.col_comp = col_comp ? col_comp + (col - jc) : nullptr;
                          }
                          const TB* bt = in_place_b ? b + col * g.ldb + pc : bp + jr * kNr * ng * G;
                          tile_for<Tr>(mv, nv, in_place_b)(ng, ap + ir * kMr * ng * G, bt, g.ldb,
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
  if (g.u8_a &&
      (g.dt.in != DataType::u8s8 || gemm_packed_lowp_on_avx2(g.dt) || g.a_packed || g.c_trans))
    throw RuntimeError(
        "cpu/packed reduced precision: u8_a is u8s8 on AVX-512 VNNI, with no packed A or C^T");
  if (gemm_packed_lowp_on_avx2(g.dt))
    lowp_avx2::gemm_u8s8(g);
  else if (g.dt.in == DataType::bf16)
    lowp::driver<lowp::Bf16>(g);
  else if (g.u8_a)
    lowp::driver<lowp::U8s8A>(g);
  else
    lowp::driver<lowp::U8s8>(g);
#endif
}

}  // namespace pb
#ifdef PB_X86
#pragma GCC diagnostic pop
#endif
