// cpu/packed reduced precision (AVX-512), op(A) = A^T with few columns (packed_lowp_kernels.h's
// tn_tiles): row i of op(A) is column i of A, its groups of G consecutive k already words, so A
// is read in place and never packed. The micro-kernel keeps a tile of C^T, as the SGEMM's
// (packed_sgemm_tn.cpp): R rows of op(A), each word broadcast, against up to four vectors of 16
// columns of op(B) (packed by each thread into its own buffer, [group][16 NV words]), transposed in
// registers to store C's columns through the epilogue of the packed tile. u8s8's zero point takes
// each row's sum over the block, from a pass over the rows' bytes just before the tile reads
// them. The packed path's transposing copy of A was a pass over all of A before the products
// used it: with K = 500000 it read and wrote 256 MB (u8s8) or 1 GB (bf16) more per call.
#include <omp.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#if defined(__x86_64__)
// GCC 12's false maybe-uninitialized reports on its own intrinsics (see packed_lowp.cpp).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "kernels/core/machine.h"
#include "kernels/core/transpose_avx512.h"
#include "kernels/gemm/cpu/packed_lowp_kernels.h"

namespace pb::lowp {
namespace {

// One tile spans all the columns: NV = ceil(n / 16) vectors of 16 words of op(B), against R
// rows of op(A): 7 rows up to 3 vectors, 6 with 4 (24 accumulators, 4 B vectors and the
// broadcast: 29 registers; 10 loads per 24 dot products, as the packed tile's 11 per 24). Two
// tiles of 32 columns for 64 had 9 loads per 14 and lost to the packed path where A sits in the
// caches (u8s8 3136x64x1024 0.31 -> 0.38 ms). (The SGEMM's tile takes 7 rows too: 14 rows' lines
// a power-of-two stride apart shared one L1 set.)
constexpr int kTnRows = 7;       // the most rows of a tile
constexpr int kTnMaxNv = 4;      // vectors of 16 columns
constexpr int64_t kTnMaxN = 64;  // up to here (more: the packed tile's reuse)
constexpr int64_t kTnMinN = 8;   // from here (fewer: the tile computes 16 columns)
// From this many groups of the sum (fewer: the transposes to store and the row sums cost more
// than packing A saves; u8s8 3136x64x256 0.084 -> 0.103 ms, 3136x64x512 even).
constexpr int64_t kTnMinGroups = 256;
constexpr int tn_rows(int nv) {
  return nv <= 3 ? 7 : 6;
}
constexpr int64_t kTnMinRows = 56;  // per thread (fewer: the packed path's split)

// One group of the sum: acc[r][v] += word grp of row r (broadcast) . the group's B vector v.
template <class Tr, int R, int NV>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512bf16"),
               always_inline)) inline void
tn_step(int64_t grp, const typename Tr::TA* a, int64_t lda, const int32_t* bp,
        typename Acc<Tr::G>::type (&acc)[R][NV]) {
  constexpr int G = Tr::G;
  __m512i bv[NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) bv[v] = _mm512_loadu_si512(bp + (grp * NV + v) * 16);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    int32_t w;
    std::memcpy(&w, a + r * lda + grp * G, 4);
    const __m512i aw = _mm512_set1_epi32(w);
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = dot(acc[r][v], bv[v], aw);
  }
}

// The tile whose first element is C(i, j0): rows r < R of op(A) at a + r * lda (in place), ngc
// groups, against the B sliver bp ([group][16 NV words], zero past the columns); nv columns
// stored (<= 16 NV). comp: u8s8's zero point times each row's sum over the block, or nullptr.
template <class Tr, int R, int NV>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512bf16"))) void tn_tile(
    int64_t ngc, const typename Tr::TA* a, int64_t lda, const int32_t* bp, const int32_t* comp,
    int nv, const Epilogue& e, const typename Tr::TA* next) {
  constexpr int G = Tr::G;
  using A = typename Acc<G>::type;
  A acc[R][NV];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = A{};
  // 16 groups are a line of each row (64 bytes in either type). With `next` (the first sliver's
  // tile of a row group), the same line of each of the next group's kTnRows rows is fetched
  // into L2, so that the next group's rows (its row sums' first touch) come from there and not
  // from memory: row by row from memory, u8s8 7680x12x2560 ran at 0.8x the packed path.
  int64_t grp = 0;
  for (; grp + 16 <= ngc; grp += 16) {
    if (next)
#pragma GCC unroll 8
      for (int r = 0; r < kTnRows; ++r)
        _mm_prefetch(reinterpret_cast<const char*>(next + r * lda + grp * G), _MM_HINT_T1);
#pragma GCC unroll 16
    for (int q = 0; q < 16; ++q) tn_step<Tr, R, NV>(grp + q, a, lda, bp, acc);
  }
  for (; grp < ngc; ++grp) tn_step<Tr, R, NV>(grp, a, lda, bp, acc);
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    __m512 t[16];  // rows of the tile, then (transposed) t[j]: rows 0..15 of column 16 v + j
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      if constexpr (G == 4) {
        __m512i s = acc[r][v];
        if (comp) s = _mm512_sub_epi32(s, _mm512_set1_epi32(comp[r]));
        t[r] = _mm512_cvtepi32_ps(s);
      } else {
        t[r] = acc[r][v];
      }
    }
    for (int r = R; r < 16; ++r) t[r] = _mm512_setzero_ps();
    transpose16(t);
    for (int j = 0; j < 16 && 16 * v + j < nv; ++j) store_column<1>(&t[j], 16 * v + j, R, e);
  }
}

template <class Tr>
using TnFn = void (*)(int64_t, const typename Tr::TA*, int64_t, const int32_t*, const int32_t*, int,
                      const Epilogue&, const typename Tr::TA*);

template <class Tr, int NV, size_t... R>
constexpr std::array<TnFn<Tr>, kTnRows> tn_row(std::index_sequence<R...>) {
  // Rows past tn_rows(NV) are never asked for; their entries repeat the widest tile.
  return {tn_tile<Tr, std::min(static_cast<int>(R) + 1, tn_rows(NV)), NV>...};
}

// The tile for mv rows and NV vectors of columns (a partial last row group takes its own R, so
// that no row past the matrix is read).
template <class Tr>
TnFn<Tr> tn_tile_for(int mv, int nv_vectors) {
  static constexpr std::array<std::array<TnFn<Tr>, kTnRows>, kTnMaxNv> table = {
      tn_row<Tr, 1>(std::make_index_sequence<kTnRows>()),
      tn_row<Tr, 2>(std::make_index_sequence<kTnRows>()),
      tn_row<Tr, 3>(std::make_index_sequence<kTnRows>()),
      tn_row<Tr, 4>(std::make_index_sequence<kTnRows>())};
  return table[nv_vectors - 1][mv - 1];
}

// comp[r] = z * the sum of row r's bytes [0, kc), r < R (u8s8's zero point). The rows side by
// side, a chain each: this pass is the first to touch them (the tile reads them from L1 after),
// and row by row it waited on each row's lines in turn.
template <int R>
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void tn_row_sums(const int8_t* a,
                                                                        int64_t lda, int64_t kc,
                                                                        int32_t z, int32_t* comp) {
  const __m512i ones = _mm512_set1_epi8(1);
  __m512i s[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) s[r] = _mm512_setzero_si512();
  for (int64_t p = 0; p < kc; p += 64) {
    const __mmask64 k = kc - p >= 64 ? ~__mmask64(0) : (__mmask64(1) << (kc - p)) - 1;
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) s[r] = dot(s[r], ones, _mm512_maskz_loadu_epi8(k, a + r * lda + p));
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) comp[r] = z * _mm512_reduce_add_epi32(s[r]);
}

template <size_t... R>
constexpr std::array<void (*)(const int8_t*, int64_t, int64_t, int32_t, int32_t*), sizeof...(R)>
row_sums_table(std::index_sequence<R...>) {
  return {tn_row_sums<static_cast<int>(R) + 1>...};
}

}  // namespace

template <class Tr>
bool tn_tiles(const LowpGemm& g, const float* scale, float beta_c, int nt) {
  using TA = typename Tr::TA;
  constexpr int G = Tr::G;
  if (!g.ta || g.a_packed || g.c_trans || g.n < kTnMinN || g.n > kTnMaxN || g.k % G != 0 ||
      g.k / G < kTnMinGroups || g.m < kTnMinRows * nt)
    return false;
  const TA* a = static_cast<const TA*>(g.a);
  const int64_t m = g.m, n = g.n, k = g.k;
  const int nvec = static_cast<int>(ceil_div(n, 16)), w = 16 * nvec, R = tn_rows(nvec);
  // The sum's block: the thread's B panel (n columns padded to 16, 4 bytes a word) in half of L2,
  // at most 2048 groups (7 rows of A: 56 KB in u8s8, 28 KB in bf16).
  const int64_t l2 = static_cast<int64_t>(cache_bytes(2, 1 << 20));
  const int64_t ngb = std::clamp<int64_t>(l2 / 2 / (4 * w) / 16 * 16, 64, 2048);
  const int64_t kcb = ngb * G;
  const bool panel = g.dt.out != DataType::out_f32 && k > kcb;  // partial sums wait in fp32
  static thread_local std::vector<uint8_t> panel_buf;
  float* pn = panel ? scratch<float>(panel_buf, m * n) : nullptr;
  const int64_t groups = ceil_div(m, int64_t(R));
  RegionErrors errors;
#pragma omp parallel num_threads(nt) if (nt > 1)
  {
    static thread_local std::vector<uint8_t> b_own;
    int32_t* bp = nullptr;
    errors.run([&] { bp = scratch<int32_t>(b_own, ngb * w, true); });
    const int t = omp_get_thread_num(), nth = omp_get_num_threads();
    const int64_t g0 = groups * t / nth, g1 = groups * (t + 1) / nth;
    for (int64_t pc = 0; pc < k && !errors.failed(); pc += kcb) {
      const int64_t kc = std::min(kcb, k - pc), ngc = kc / G;
      const bool last = pc + kcb >= k;
      b_words<typename Tr::TB, G>(static_cast<const typename Tr::TB*>(g.b), g.ldb, g.tb, k,
                                  static_cast<int>(n), pc / G, ngc, w, bp);
      for (int64_t gr = g0; gr < g1; ++gr) {
        const int64_t i = gr * R;
        const int mv = static_cast<int>(std::min<int64_t>(R, m - i));
        const TA* ap = a + i * g.lda + pc;
        int32_t comp[kTnRows];
        const int32_t* cp = nullptr;
        if constexpr (G == 4)
          if (g.b_zero != 0) {
            static constexpr auto sums = row_sums_table(std::make_index_sequence<kTnRows>());
            sums[mv - 1](ap, g.lda, kc, g.b_zero, comp);
            cp = comp;
          }
        const Epilogue e = tile_epilogue(g, scale, beta_c, pn, panel, pc, last, i, 0, 0);
        const TA* next = gr + 1 < g1 ? ap + R * g.lda : nullptr;
        tn_tile_for<Tr>(mv, nvec)(ngc, ap, g.lda, bp, cp, static_cast<int>(n), e, next);
      }
    }
  }
  errors.rethrow();
  return true;
}

template bool tn_tiles<Bf16>(const LowpGemm&, const float*, float, int);
template bool tn_tiles<U8s8>(const LowpGemm&, const float*, float, int);

}  // namespace pb::lowp
#pragma GCC diagnostic pop
#endif
