// cpu/packed's u8s8 GEMM on AVX2 without VNNI (packed_lowp_avx2.h), exact in int32.
//
// The AVX2 byte product (vpmaddubsw) adds two u8 x s8 products into an int16 that saturates
// (255 * 127 * 2 = 64770), so full-range data come out wrong; that is why oneDNN 2.6's AVX2 u8s8
// is not offered here. This path widens both operands to int16 while packing, the source with
// its zero point already subtracted (|B - z| <= 255), and multiplies pairs with vpmaddwd: two
// int16 x int16 products (|a (B - z)| <= 128 * 255) summed into an int32 lane, exactly. The sums
// stay int32 over the whole of k (partials of earlier KC blocks wait in an int32 panel) up to
// k = 65793, the most an int32 holds for any data (beyond it, see kMaxExactK), and the epilogue
// scales them once: C = scale[i] * sum + beta * C, as the AVX-512 path's epilogue.
//
// Loop nest and threading as the packed SGEMM (packed_sgemm.cpp): KC blocks of the sum, B packed
// into NR-column slivers shared by the threads, A into MR-row slivers per thread (a block of
// half of L2), the threads splitting the rows (gemm_row_blocks) or else the columns. The tile:
// MR = 16 rows (two vectors of 8 int32 lanes, each lane a row's pair of k) x NR = 4 columns,
// 8 accumulators; one step of the sum is a pair of k, two steps per iteration. Zen 3, 2560^3,
// ms, medians of 3 alternating runs: 16 x 6 (12 accumulators) 202, 16 x 5 154, 16 x 4 154; two
// steps per iteration: 16 x 6 176, 16 x 4 125-140 (four steps: the same). GCC kept 16 x 6's
// accumulators partly on the stack (a store-load chain per step) and copied registers around the
// madd results.
#include "kernels/gemm/cpu/packed_lowp_avx2.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/core/error.h"
#include "kernels/core/machine.h"
#include "kernels/core/threads.h"
#include "kernels/gemm/cpu/packed_sgemm.h"

// (the reduced-precision GEMMs' shared scratch and ceil_div; see its note on GCC's diagnostics)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "kernels/gemm/cpu/packed_lowp_kernels.h"

namespace pb::lowp_avx2 {
namespace {

constexpr int kMr = 16, kNr = 4;
constexpr int64_t kKc = 512;  // k per block (even): a B sliver 4 KB, an A sliver 16 KB
// The longest sum an int32 holds whatever the data: |a (b - z)| <= 128 * 255 a product. Longer
// sums (DeepBench's K = 500000) keep each block's sum in int32 (at most 512 * 32640 = 2^24 - 2^15,
// exact in fp32) and add the blocks in fp32, as the AVX-512 path adds its blocks into an fp32 C.
constexpr int64_t kMaxExactK = 2147483647 / (128 * 255);

using lowp::ceil_div;
using lowp::scratch;
using lowp::u8s8_row_scales;

// What a tile does once its sum over this KC block is done.
struct Epilogue {
  bool first, last;  // first block: start from 0, else from the panel; last: write C
  int32_t* panel;    // the tile's partial sums (column j at panel + j * ldp), whole slivers
  int64_t ldp;
  DataType::Out out;  // f32 or s8
  void* c;            // the tile's first element of C
  int64_t ldc;
  const float* scale;  // per row, padded to whole slivers
  float beta;          // on the old C, in C's units (not read when 0)
  bool trans;          // C stored transposed: tile element (r, j) at c + r * ldc + j
  bool fp32_panel;     // the panel holds fp32 partial sums (k > kMaxExactK), not int32
};

// Rows < `rows` (at most 8) of one column of C from the fp32 results x.
__attribute__((target("avx2,fma"))) inline void store8(__m256 x, int rows, const Epilogue& e,
                                                       int64_t off) {
  const __m256 vb = _mm256_set1_ps(e.beta);
  if (e.out == DataType::out_f32) {
    float* c = static_cast<float*>(e.c) + off;
    if (rows >= 8) {
      if (e.beta != 0.0f) x = _mm256_fmadd_ps(vb, _mm256_loadu_ps(c), x);
      _mm256_storeu_ps(c, x);
    } else {
      const __m256i m =
          _mm256_cmpgt_epi32(_mm256_set1_epi32(rows), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
      if (e.beta != 0.0f) x = _mm256_fmadd_ps(vb, _mm256_maskload_ps(c, m), x);
      _mm256_maskstore_ps(c, m, x);
    }
    return;
  }
  // s8: round to nearest even (MXCSR's default), saturate.
  int8_t* c = static_cast<int8_t*>(e.c) + off;
  const size_t n = static_cast<size_t>(std::min(rows, 8));
  alignas(16) int8_t old[16] = {};
  if (e.beta != 0.0f) {
    std::memcpy(old, c, n);
    const __m256i o = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(old)));
    x = _mm256_fmadd_ps(vb, _mm256_cvtepi32_ps(o), x);
  }
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-128.0f)), _mm256_set1_ps(127.0f));
  const __m256i q = _mm256_cvtps_epi32(x);
  const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(old), _mm_packs_epi16(w, w));
  std::memcpy(c, old, n);
}

// C stored transposed (Epilogue::trans): 8 rows from `row` of a 4-column f32 tile, each row's 4
// values (x0..x3 hold the columns) contiguous: a 4 x 8 register transpose.
__attribute__((target("avx2,fma"))) inline void store_rows4(__m256 x0, __m256 x1, __m256 x2,
                                                            __m256 x3, const Epilogue& e, int row) {
  const __m256 t0 = _mm256_unpacklo_ps(x0, x1), t1 = _mm256_unpackhi_ps(x0, x1);
  const __m256 t2 = _mm256_unpacklo_ps(x2, x3), t3 = _mm256_unpackhi_ps(x2, x3);
  const __m256 u[4] = {_mm256_shuffle_ps(t0, t2, 0x44), _mm256_shuffle_ps(t0, t2, 0xEE),
                       _mm256_shuffle_ps(t1, t3, 0x44), _mm256_shuffle_ps(t1, t3, 0xEE)};
  const __m128 vb = _mm_set1_ps(e.beta);
  for (int r = 0; r < 8; ++r) {  // row r: u[r % 4]'s low (r < 4) or high half
    __m128 y = r < 4 ? _mm256_castps256_ps128(u[r]) : _mm256_extractf128_ps(u[r - 4], 1);
    float* c = static_cast<float*>(e.c) + (row + r) * e.ldc;
    if (e.beta != 0.0f) y = _mm_fmadd_ps(vb, _mm_loadu_ps(c), y);
    _mm_storeu_ps(c, y);
  }
}

// One element of C at offset `off` (in elements) from e.c, as store8 computes it.
inline void store1(float x, const Epilogue& e, int64_t off) {
  if (e.out == DataType::out_f32) {
    float* c = static_cast<float*>(e.c) + off;
    *c = e.beta != 0.0f ? std::fma(e.beta, *c, x) : x;
    return;
  }
  int8_t* c = static_cast<int8_t*>(e.c) + off;
  if (e.beta != 0.0f) x = std::fma(e.beta, static_cast<float>(*c), x);
  x = x > -128.0f ? x : -128.0f;  // (maxps and minps: a NaN gives the bound)
  x = x < 127.0f ? x : 127.0f;
  *c = static_cast<int8_t>(std::nearbyint(x));
}

// V vectors of 8 rows, NV columns: acc(j, rows) += sum over ng pairs of k of A x B.
template <int V, int NV>
__attribute__((target("avx2,fma"))) void tile(int64_t ng, const int16_t* a, const int16_t* b,
                                              int mv, const Epilogue& e) {
  __m256i acc[NV][V];
#pragma GCC unroll 6
  for (int j = 0; j < NV; ++j)
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) acc[j][v] = _mm256_setzero_si256();
  if (e.last) {  // C's lines on their way during the sum (as the SGEMM's tile)
    const char* cb = static_cast<const char*>(e.c);
    const int eb = e.out == DataType::out_f32 ? 4 : 1;
#pragma GCC unroll 6
    for (int j = 0; j < NV; ++j) _mm_prefetch(cb + j * e.ldc * eb, _MM_HINT_T0);
  }
#pragma GCC unroll 2  // (see the top)
  for (int64_t g = 0; g < ng; ++g) {
    __m256i av[V];
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v)
      av[v] = _mm256_load_si256(reinterpret_cast<const __m256i*>(a + g * kMr * 2 + 16 * v));
#pragma GCC unroll 6
    for (int j = 0; j < NV; ++j) {
      int32_t w;
      std::memcpy(&w, b + (g * kNr + j) * 2, 4);
      const __m256i bj = _mm256_set1_epi32(w);
#pragma GCC unroll 2
      for (int v = 0; v < V; ++v)
        acc[j][v] = _mm256_add_epi32(acc[j][v], _mm256_madd_epi16(av[v], bj));
    }
  }
  __m256 x[NV][V];
#pragma GCC unroll 6
  for (int j = 0; j < NV; ++j)
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) {
      int32_t* p = e.panel ? e.panel + j * e.ldp + 8 * v : nullptr;  // (none for one block)
      __m256 f;
      if (e.fp32_panel) {  // this block's sum in fp32, added to the earlier blocks' in fp32
        f = _mm256_cvtepi32_ps(acc[j][v]);
        if (!e.first) f = _mm256_add_ps(f, _mm256_loadu_ps(reinterpret_cast<float*>(p)));
        if (!e.last) {
          _mm256_storeu_ps(reinterpret_cast<float*>(p), f);
          continue;
        }
      } else {
        __m256i* q = reinterpret_cast<__m256i*>(p);
        if (!e.first) acc[j][v] = _mm256_add_epi32(acc[j][v], _mm256_loadu_si256(q));
        if (!e.last) {
          _mm256_storeu_si256(q, acc[j][v]);
          continue;
        }
        f = _mm256_cvtepi32_ps(acc[j][v]);
      }
      x[j][v] = _mm256_mul_ps(f, _mm256_loadu_ps(e.scale + 8 * v));
      if (!e.trans && mv > 8 * v) store8(x[j][v], mv - 8 * v, e, j * e.ldc + 8 * v);
    }
  if (!e.last || !e.trans) return;
#pragma GCC unroll 2
  for (int v = 0; v < V; ++v) {
    const int rows = std::min(mv - 8 * v, 8);
    if (rows <= 0) break;
    if constexpr (NV == 4) {
      if (rows == 8 && e.out == DataType::out_f32) {
        store_rows4(x[0][v], x[1][v], x[2][v], x[3][v], e, 8 * v);
        continue;
      }
    }
    // A partial tile, or s8: through memory, element by element.
    alignas(32) float t[NV][8];
    for (int j = 0; j < NV; ++j) _mm256_store_ps(t[j], x[j][v]);
    for (int r = 0; r < rows; ++r)
      for (int j = 0; j < NV; ++j) store1(t[j][r], e, (8 * v + r) * e.ldc + j);
  }
}

using TileFn = void (*)(int64_t, const int16_t*, const int16_t*, int, const Epilogue&);
template <int V>
constexpr TileFn tile_of(int nv) {
  static_assert(kNr == 4, "a tile per column count");
  switch (nv) {
    case 1:
      return tile<V, 1>;
    case 2:
      return tile<V, 2>;
    case 3:
      return tile<V, 3>;
    default:
      return tile<V, 4>;
  }
}

// The sum [p0, p0 + kc) of `rows` vectors into int16 rows of kcp (kc rounded up to even,
// zero past kc): row r's element p at src[r * rs + p * ps], minus z (the source's zero point).
template <class T>
void widen(const T* src, int64_t rs, int64_t ps, int rows, int64_t p0, int64_t kc, int64_t kcp,
           int32_t z, int16_t* dst) {
  for (int r = 0; r < rows; ++r) {
    const T* s = src + r * rs + p0 * ps;
    int16_t* d = dst + r * kcp;
    if (ps == 1)
      for (int64_t p = 0; p < kc; ++p) d[p] = static_cast<int16_t>(s[p] - z);
    else
      for (int64_t p = 0; p < kc; ++p) d[p] = static_cast<int16_t>(s[p * ps] - z);
    if (kc < kcp) d[kc] = 0;
  }
}

// op(A) rows [r0, r0 + mv) x sum [p0, p0 + kc) into one sliver: pair g of row r at
// dst[(g * MR + r) * 2], rows past mv zero. tmp: MR x kcp int16 scratch.
__attribute__((target("avx2"))) void pack_a(bool ta, const int8_t* a, int64_t lda, int64_t r0,
                                            int mv, int64_t p0, int64_t kc, int16_t* dst,
                                            int16_t* tmp) {
  const int64_t kcp = ceil_div(kc, 2) * 2, ng = kcp / 2;
  if (!ta && mv == kMr) {
    // Column p of A holds the rows: two columns' bytes interleaved, then sign-extended.
    for (int64_t g = 0; g < ng; ++g) {
      const int64_t p = p0 + 2 * g;
      const __m128i c0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + p * lda + r0));
      const __m128i c1 =
          2 * g + 1 < kc ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + (p + 1) * lda + r0))
                         : _mm_setzero_si128();
      __m256i* d = reinterpret_cast<__m256i*>(dst + g * kMr * 2);
      _mm256_store_si256(d, _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(c0, c1)));
      _mm256_store_si256(d + 1, _mm256_cvtepi8_epi16(_mm_unpackhi_epi8(c0, c1)));
    }
    return;
  }
  // Each row widened along the sum, then the pairs (words) transposed into the sliver.
  if (ta)
    widen(a + r0 * lda, lda, 1, mv, p0, kc, kcp, 0, tmp);
  else
    widen(a + r0, 1, lda, mv, p0, kc, kcp, 0, tmp);
  transpose_words(tmp, kcp / 2, mv, ng, dst, kMr);
  for (int64_t g = 0; g < ng && mv < kMr; ++g)
    std::memset(dst + (g * kMr + mv) * 2, 0, (kMr - mv) * 2 * sizeof(int16_t));
}

// op(B) sum [p0, p0 + kc) x columns [c0, c0 + nv) minus z into one sliver: pair g of column j at
// dst[(g * NR + j) * 2], columns past nv zero. tmp: NR x kcp int16 scratch.
__attribute__((target("avx2"))) void pack_b(bool tb, const uint8_t* b, int64_t ldb, int32_t z,
                                            int64_t p0, int64_t kc, int64_t c0, int nv,
                                            int16_t* dst, int16_t* tmp) {
  const int64_t kcp = ceil_div(kc, 2) * 2, ng = kcp / 2;
  if (tb) {
    // Row p of op(B) holds the columns: a group's two rows interleaved, widened, minus z.
    int64_t g = 0;
    if (nv == kNr) {
      const __m128i vz = _mm_set1_epi16(static_cast<int16_t>(z));
      for (; g < kc / 2; ++g) {
        const uint8_t* r = b + (p0 + 2 * g) * ldb + c0;
        int32_t w0, w1;
        std::memcpy(&w0, r, 4);
        std::memcpy(&w1, r + ldb, 4);
        const __m128i x = _mm_unpacklo_epi8(_mm_cvtsi32_si128(w0), _mm_cvtsi32_si128(w1));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + g * kNr * 2),
                         _mm_sub_epi16(_mm_cvtepu8_epi16(x), vz));
      }
    }
    for (; g < ng; ++g) {
      const uint8_t* r = b + (p0 + 2 * g) * ldb + c0;
      const bool second = 2 * g + 1 < kc;
      int16_t* d = dst + g * kNr * 2;
      for (int j = 0; j < kNr; ++j) {
        d[2 * j] = j < nv ? static_cast<int16_t>(r[j] - z) : 0;
        d[2 * j + 1] = j < nv && second ? static_cast<int16_t>(r[ldb + j] - z) : 0;
      }
    }
    return;
  }
  widen(b + c0 * ldb, ldb, 1, nv, p0, kc, kcp, z, tmp);
  transpose_words(tmp, kcp / 2, nv, ng, dst, kNr);
  for (int64_t g = 0; g < ng && nv < kNr; ++g)
    std::memset(dst + (g * kNr + nv) * 2, 0, (kNr - nv) * 2 * sizeof(int16_t));
}

// pack_b's op(B) = B^T case for four whole slivers (16 columns from c0) at dst, dst + S, ...
// (S = NR * ng * 2): 16 bytes of each row of a pair, interleaved, widened, minus z.
__attribute__((target("avx2"))) void pack_b_tb4(const uint8_t* b, int64_t ldb, int32_t z,
                                                int64_t p0, int64_t kc, int64_t c0, int16_t* dst) {
  const int64_t ng = ceil_div(kc, 2), S = kNr * ng * 2;
  const __m256i vz = _mm256_set1_epi16(static_cast<int16_t>(z));
  for (int64_t g = 0; g < ng; ++g) {
    const uint8_t* r = b + (p0 + 2 * g) * ldb + c0;
    const __m128i r0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r));
    const __m128i r1 = 2 * g + 1 < kc ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(r + ldb))
                                      : _mm_set1_epi8(static_cast<char>(z));  // (z - z = 0)
    const __m256i lo = _mm256_sub_epi16(_mm256_cvtepu8_epi16(_mm_unpacklo_epi8(r0, r1)), vz);
    const __m256i hi = _mm256_sub_epi16(_mm256_cvtepu8_epi16(_mm_unpackhi_epi8(r0, r1)), vz);
    int16_t* d = dst + g * kNr * 2;
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d), _mm256_castsi256_si128(lo));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + S), _mm256_extracti128_si256(lo, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 2 * S), _mm256_castsi256_si128(hi));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 3 * S), _mm256_extracti128_si256(hi, 1));
  }
}

// The k blocks: as even as whole pairs allow, at most kKc (576 -> 2 x 288, not 512 + 64: the
// int32 panel's store and reload then serve two full blocks).
int64_t block_k(int64_t k) {
  const int64_t nb = ceil_div(k, kKc);
  return std::min(kKc, ceil_div(ceil_div(k, nb), 2) * 2);
}

}  // namespace

int64_t packed_a_elems(int64_t m, int64_t k) {
  return ceil_div(m, kMr) * kMr * (ceil_div(k, 2) * 2);
}

void pack_a_whole(int64_t m, int64_t k, const int8_t* a, int64_t lda, int16_t* out) {
  const int64_t n_sl = ceil_div(m, kMr), mp = n_sl * kMr;
  const int64_t kb = block_k(k);
  std::vector<int16_t> tmp(kMr * kb);
  for (int64_t pc = 0; pc < k; pc += kb) {
    const int64_t kc = std::min(kb, k - pc), ng = ceil_div(kc, 2);
    for (int64_t s = 0; s < n_sl; ++s) {
      const int mv = static_cast<int>(std::min<int64_t>(kMr, m - s * kMr));
      pack_a(false, a, lda, s * kMr, mv, pc, kc, out + pc * mp + s * kMr * ng * 2, tmp.data());
    }
  }
}

void gemm_u8s8(const LowpGemm& g) {
  const int8_t* a = static_cast<const int8_t*>(g.a);
  const uint8_t* b = static_cast<const uint8_t*>(g.b);
  const int64_t m = g.m, n = g.n, k = g.k;
  const int64_t kb = block_k(k), kcp_max = kb;
  // The A block takes half of L2, the B panel gemm_b_panel_bytes, as in the SGEMM.
  const int64_t l2 = static_cast<int64_t>(cache_bytes(2, 1 << 20));
  const int64_t mc_max = std::max<int64_t>(kMr, l2 / 2 / (kcp_max * 2) / kMr * kMr);
  const int64_t nc_max = std::max<int64_t>(kNr, gemm_b_panel_bytes() / (kcp_max * 2) / kNr * kNr);
  const int nt = gemm_threads(m, n, k);
  const int64_t n_sl = ceil_div(m, kMr), mp = n_sl * kMr;
  const GemmRowBlocks blocks = gemm_row_blocks(nt, m, n, mc_max, kMr, kNr);
  const bool split_rows = blocks.split_rows;
  const int64_t n_ic = blocks.n_ic;
  const bool panel = k > kb;  // partial sums across KC blocks (int32; fp32 past kMaxExactK)
  // A packed once (pack_a_whole): KC block pc's slivers at pre + pc * mp, as a block's here.
  const int16_t* pre =
      g.a_packed && !g.ta ? static_cast<const int16_t*>(g.a_packed->blocks()) : nullptr;

  // Per-row scales (u8s8_row_scales), padded to whole slivers.
  static thread_local std::vector<uint8_t> scale_buf, b_buf, panel_buf;
  float beta_c = 0;
  const float* scale = u8s8_row_scales(g, mp, scale_buf, &beta_c);
  const int64_t ncb = std::min(n, nc_max);
  int16_t* bp = scratch<int16_t>(b_buf, kcp_max * ceil_div(ncb, kNr) * kNr);
  int32_t* pn = panel ? scratch<int32_t>(panel_buf, mp * ceil_div(ncb, kNr) * kNr) : nullptr;
  const size_t out_size = DataType::bytes_of(g.dt.out);

  RegionErrors errors;
#pragma omp parallel num_threads(nt) if (nt > 1)
  {
    static thread_local std::vector<uint8_t> a_buf, tmp_buf;
    int16_t* ap_own = nullptr;
    int16_t* tmp = nullptr;
    errors.run([&] {
      const int64_t rows = split_rows ? ceil_div(n_sl, n_ic) * kMr : mp;
      if (!pre) ap_own = scratch<int16_t>(a_buf, rows * kcp_max, true);
      tmp = scratch<int16_t>(tmp_buf, kMr * kcp_max, true);
    });
    for (int64_t jc = 0; jc < n; jc += nc_max) {
      const int64_t nc = std::min(nc_max, n - jc), n_jr = ceil_div(nc, kNr);
      for (int64_t pc = 0; pc < k; pc += kb) {
        const int64_t kc = std::min(kb, k - pc), ng = ceil_div(kc, 2);
        // Four slivers at a time: op(B) = B^T's rows then give 16 contiguous bytes a step.
#pragma omp for schedule(static)
        for (int64_t q = 0; q < ceil_div(n_jr, 4); ++q) {
          if (errors.failed()) continue;
          if (g.tb && nc - q * 4 * kNr >= 4 * kNr) {
            pack_b_tb4(b, g.ldb, g.b_zero, pc, kc, jc + q * 4 * kNr, bp + q * 4 * kNr * ng * 2);
            continue;
          }
          for (int64_t s = q * 4; s < std::min(n_jr, q * 4 + 4); ++s) {
            const int nv = static_cast<int>(std::min<int64_t>(kNr, nc - s * kNr));
            pack_b(g.tb, b, g.ldb, g.b_zero, pc, kc, jc + s * kNr, nv, bp + s * kNr * ng * 2, tmp);
          }
        }
        // Every B sliver jr in [jr0, jr1) against the block's A slivers (rows [ic, ic + mcv)).
        auto tiles = [&](int64_t ic, int64_t mcv, const int16_t* ap, int64_t jr0, int64_t jr1) {
          for_each_tile(ic, mcv, kMr, jc, nc, kNr, jr0, jr1,
                        [&](int64_t jr, int64_t ir, int64_t row, int64_t col, int mv, int nv) {
                          Epilogue e{};
                          e.fp32_panel = k > kMaxExactK;
                          e.first = pc == 0;
                          e.last = pc + kb >= k;
                          e.panel = pn ? pn + jr * kNr * mp + row : nullptr;
                          e.ldp = mp;
                          e.out = g.dt.out;
                          e.trans = g.c_trans;
                          e.c = static_cast<char*>(g.c) +
                                (g.c_trans ? row * g.ldc + col : col * g.ldc + row) * out_size;
                          e.ldc = g.ldc;
                          e.scale = scale + row;
                          e.beta = beta_c;
                          const TileFn f = mv > 8 ? tile_of<2>(nv) : tile_of<1>(nv);
                          f(ng, ap + ir * kMr * ng * 2, bp + jr * kNr * ng * 2, mv, e);
                        });
        };
        auto pack_rows = [&](int64_t ic, int64_t mcv) {
          for (int64_t s = 0; s < ceil_div(mcv, kMr); ++s) {
            const int mv = static_cast<int>(std::min<int64_t>(kMr, mcv - s * kMr));
            pack_a(g.ta, a, g.lda, ic + s * kMr, mv, pc, kc, ap_own + s * kMr * ng * 2, tmp);
          }
        };
        if (split_rows) {
#pragma omp for schedule(dynamic, 1)
          for (int64_t blk = 0; blk < n_ic; ++blk) {
            if (errors.failed()) continue;
            const int64_t s0 = blk * n_sl / n_ic, s1 = (blk + 1) * n_sl / n_ic;
            const int64_t ic = s0 * kMr, mcv = std::min(s1 * kMr, m) - ic;
            if (pre) {
              tiles(ic, mcv, pre + pc * mp + ic * ng * 2, 0, n_jr);
              continue;
            }
            pack_rows(ic, mcv);
            tiles(ic, mcv, ap_own, 0, n_jr);
          }
        } else {
          // Columns split: each thread packs all the rows into its own buffer (as the SGEMM).
          if (!errors.failed() && !pre) pack_rows(0, m);
          const int16_t* ap = pre ? pre + pc * mp : ap_own;
#pragma omp for schedule(static)
          for (int64_t jr = 0; jr < n_jr; ++jr)
            if (!errors.failed()) tiles(0, m, ap, jr, jr + 1);
        }
      }
    }
  }
  errors.rethrow();
}

}  // namespace pb::lowp_avx2
#pragma GCC diagnostic pop
#endif
