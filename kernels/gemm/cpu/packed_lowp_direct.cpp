// cpu/packed reduced precision, the in-place path (packed_lowp_kernels.h's direct): op(A) = A
// with at most kDirectMaxN columns of C.
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#if defined(__x86_64__)
// GCC 12's false maybe-uninitialized reports on its own intrinsics (see packed_lowp.cpp).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "kernels/core/machine.h"
#include "kernels/gemm/cpu/packed_lowp_avx2.h"
#include "kernels/gemm/cpu/packed_lowp_kernels.h"

namespace pb::lowp {
namespace {

// op(A) = A with at most kDirectMaxN columns of C (DeepBench's N = 1..64; up to twice that where A
// is large, see the driver): A is read in place,
// each weight once; packing it would cost more than the few products it feeds. Each thread takes
// a range of 64-row blocks and walks the sum in chunks: per chunk and block, the G columns of
// each k group are interleaved in registers (unpack within 128-bit lanes, which permutes the
// rows: undone at the store) into an L1 buffer, and the kernel runs every group of up to 4
// columns of C over it, each group's sums waiting in a small per-thread state between chunks.
// Within a chunk the blocks follow each other, so the chunk's columns stream through contiguous
// rows and the pages they touch stay in the TLB.
constexpr int kDirectRows = 64, kDirectCols = 4;

// A row's place in the interleaved block: vector q, element l (16 per vector) holds row
// L * 16 + q * 4 + e (u8s8: four unpacks of 16-row lanes; L = l / 4, e = l % 4) or
// (q / 2) * 32 + L * 8 + (q % 2) * 4 + e (bf16: two 32-row halves, unpacklo and unpackhi).
inline int interleaved_row(int G, int q, int l) {
  const int lane = l / 4, e = l % 4;
  return G == 4 ? lane * 16 + q * 4 + e : (q / 2) * 32 + lane * 8 + (q % 2) * 4 + e;
}

// Fetches the line `bytes` past p into L1 (the A lines a thread interleaves later; an address
// past A's end is never touched, only fetched, and a prefetch never faults).
inline void prefetch_at(const void* p, int64_t bytes) {
  _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(p) + bytes), _MM_HINT_T0);
}

// The chunk [p0, p1) of the 64-row block at a (rows past mv and k past g.k zero) interleaved
// into u: 4 vectors per k group. u8s8 also adds the block's row sums (for the zero point) to
// `sums` (4 vectors, in the interleaved order). pf: when not 0, each column's element pf bytes
// past the one read is fetched (the block this thread interleaves later; see direct()).
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"))) void interleave_u8s8(
    const int8_t* a, int64_t lda, int64_t k, int mv, int64_t p0, int64_t p1, __m512i* u,
    __m512i* sums, int64_t pf) {
  const __mmask64 rmask = mv >= 64 ? ~__mmask64(0) : (__mmask64(1) << mv) - 1;
  const __m512i ones = _mm512_set1_epi8(1);
  __m512i s[4] = {sums[0], sums[1], sums[2], sums[3]};
  for (int64_t p = p0; p < p1; p += 4, u += 4) {
    __m512i x[4];
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q)
      x[q] = p + q < k ? _mm512_maskz_loadu_epi8(rmask, a + (p + q) * lda) : _mm512_setzero_si512();
    if (pf)
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) prefetch_at(a, (p + q) * lda + pf);
    const __m512i t0 = _mm512_unpacklo_epi8(x[0], x[1]), t1 = _mm512_unpackhi_epi8(x[0], x[1]);
    const __m512i t2 = _mm512_unpacklo_epi8(x[2], x[3]), t3 = _mm512_unpackhi_epi8(x[2], x[3]);
    u[0] = _mm512_unpacklo_epi16(t0, t2);
    u[1] = _mm512_unpackhi_epi16(t0, t2);
    u[2] = _mm512_unpacklo_epi16(t1, t3);
    u[3] = _mm512_unpackhi_epi16(t1, t3);
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) s[q] = dot(s[q], ones, u[q]);
  }
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) sums[q] = s[q];
}

// The same in bf16 (a block's column is two lines; pf as for u8s8).
__attribute__((target("avx512f,avx512bw,avx512vl"))) void interleave_bf16(const uint16_t* a,
                                                                          int64_t lda, int64_t k,
                                                                          int mv, int64_t p0,
                                                                          int64_t p1, __m512i* u,
                                                                          int64_t pf) {
  const __mmask32 m0 = mv >= 32 ? ~__mmask32(0) : (__mmask32(1) << mv) - 1;
  const __mmask32 m1 = mv >= 64 ? ~__mmask32(0) : mv <= 32 ? 0 : (__mmask32(1) << (mv - 32)) - 1;
  for (int64_t p = p0; p < p1; p += 2, u += 4) {
    const uint16_t* c0 = a + p * lda;
    const bool second = p + 1 < k;
    if (pf)
      for (int q = 0; q < 2; ++q) {
        prefetch_at(a, 2 * (p + q) * lda + pf);
        prefetch_at(a, 2 * (p + q) * lda + pf + 64);
      }
    const __m512i x0 = _mm512_maskz_loadu_epi16(m0, c0), y0 = _mm512_maskz_loadu_epi16(m1, c0 + 32);
    const __m512i x1 = second ? _mm512_maskz_loadu_epi16(m0, c0 + lda) : _mm512_setzero_si512();
    const __m512i y1 =
        second ? _mm512_maskz_loadu_epi16(m1, c0 + lda + 32) : _mm512_setzero_si512();
    u[0] = _mm512_unpacklo_epi16(x0, x1);
    u[1] = _mm512_unpackhi_epi16(x0, x1);
    u[2] = _mm512_unpacklo_epi16(y0, y1);
    u[3] = _mm512_unpackhi_epi16(y0, y1);
  }
}

// NV columns of C over ng interleaved groups: acc[j * 4 + q] += u[q] . b-word of column j.
// bw: the columns' words, `ldw` apart per group.
template <int G, int NV>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512bf16"))) void direct_cols(
    const __m512i* u, int64_t ng, const int32_t* bw, int64_t ldw, __m512i* state, bool first) {
  __m512i acc[NV][4];
#pragma GCC unroll 8
  for (int j = 0; j < NV; ++j)
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) acc[j][q] = first ? _mm512_setzero_si512() : state[j * 4 + q];
  for (int64_t grp = 0; grp < ng; ++grp, u += 4, bw += ldw) {
    // The group's 4 vectors in registers: GCC folded each into its NV dot products as a memory
    // operand, 4 NV + NV loads per 4 NV dot products, which Zen 5's two 512-bit loads a cycle
    // could not feed (u8s8 4096x128x4096: 10.0 ms, 22% of the VNNI peak).
    __m512i uq[4];
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      uq[q] = _mm512_load_si512(u + q);
      asm("" : "+v"(uq[q]));
    }
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) {
      const __m512i bj = _mm512_set1_epi32(bw[j]);
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) {
        if constexpr (G == 4)
          acc[j][q] = dot(acc[j][q], bj, uq[q]);
        else  // the state holds fp32 lanes as integer vectors
          acc[j][q] = _mm512_castps_si512(dot(_mm512_castsi512_ps(acc[j][q]), bj, uq[q]));
      }
    }
  }
#pragma GCC unroll 8
  for (int j = 0; j < NV; ++j)
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) state[j * 4 + q] = acc[j][q];
}

// The finished sums of nv columns (state: 4 vectors per column, interleaved rows; u8s8: `sums`
// the row sums) through the epilogue into C's columns col0.. .
template <int G>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void direct_store(
    const LowpGemm& g, const __m512i* state, const __m512i* sums, int nv, int64_t col0,
    const float* scale, float beta_c, int64_t r0, int mv) {
  Epilogue e{};
  e.out = g.dt.out;
  e.ldc = g.ldc;
  e.alpha = g.alpha;
  e.beta = beta_c;
  const auto out_size = static_cast<size_t>(g.dt.out_bytes());
  alignas(64) float vals[64], rows[64];
  for (int j = 0; j < nv; ++j) {
    for (int q = 0; q < 4; ++q) {
      __m512i v = state[j * 4 + q];
      if (G == 4) v = _mm512_sub_epi32(v, _mm512_mullo_epi32(sums[q], _mm512_set1_epi32(g.b_zero)));
      _mm512_store_ps(vals + 16 * q, G == 4 ? _mm512_cvtepi32_ps(v) : _mm512_castsi512_ps(v));
    }
    for (int q = 0; q < 4; ++q)
      for (int l = 0; l < 16; ++l) rows[interleaved_row(G, q, l)] = vals[q * 16 + l];
    for (int h = 0; h < 4 && 16 * h < mv; ++h) {
      const __m512 f = _mm512_load_ps(rows + 16 * h);
      e.scale = scale ? scale + r0 + 16 * h : nullptr;
      e.c = static_cast<char*>(g.c) + ((col0 + j) * g.ldc + r0 + 16 * h) * out_size;
      store_column<1>(&f, 0, mv - 16 * h, e);
    }
  }
}

template <int G>
using ColsFn = void (*)(const __m512i*, int64_t, const int32_t*, int64_t, __m512i*, bool);

}  // namespace

// The packed blocks of a (LowpPackedA), each 64-row block's groups over the whole sum in the
// interleave's order, then (u8s8) every block's 4 vectors of row sums.
template <class Tr>
void pack_blocks(const void* a, int64_t lda, int64_t m, int64_t k, __m512i* out, __m512i* sums) {
  constexpr int G = Tr::G;
  const int64_t ng = ceil_div(k, G), blocks = ceil_div(m, kDirectRows);
#pragma omp parallel for schedule(static)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t r0 = blk * kDirectRows;
    const int mv = static_cast<int>(std::min<int64_t>(kDirectRows, m - r0));
    __m512i* u = out + blk * ng * 4;
    if constexpr (G == 4) {
      __m512i* s = sums + blk * 4;
      std::memset(s, 0, 4 * sizeof(__m512i));  // no intrinsic outside a target function
      interleave_u8s8(static_cast<const int8_t*>(a) + r0, lda, k, mv, 0, ng * G, u, s, 0);
    } else {
      interleave_bf16(static_cast<const uint16_t*>(a) + r0, lda, k, mv, 0, ng * G, u, 0);
    }
  }
}

template <class Tr>
void direct(const LowpGemm& g, const float* scale, float beta_c, int nt) {
  using TB = typename Tr::TB;
  constexpr int G = Tr::G;
  const TB* b = static_cast<const TB*>(g.b);
  const int64_t ng = ceil_div(g.k, G);
  // op(B) as words of G consecutive k (zero past k), ldw per group: broadcast as they are.
  const int64_t ldw = ceil_div(g.n, kDirectCols) * kDirectCols;
  static thread_local std::vector<uint8_t> bw_buf;
  int32_t* bw = scratch<int32_t>(bw_buf, ng * ldw);
  b_words<TB, G>(b, g.ldb, g.tb, g.k, static_cast<int>(g.n), 0, ng, static_cast<int>(ldw), bw);
  static constexpr ColsFn<G> cols[kDirectCols] = {direct_cols<G, 1>, direct_cols<G, 2>,
                                                  direct_cols<G, 3>, direct_cols<G, 4>};
  // Chunks of the sum: short while N is small (the chunk's columns are the streams the
  // prefetchers follow: 32 measured best of 4..64 on 7680 x {1, 4} x 2560), longer when each
  // interleaved chunk serves many columns (the states' loads and stores amortised): over 64
  // columns (see the driver) 256, where u8s8 7680x128x2560 took 6.7 ms at 128 and 5.9 at 256
  // (7680 x 128 x 2560, 4096 x 128 x 4096, 1760 x 128 x 1760: 128, 256 and 512 measured).
  const int64_t kc = g.n <= 4 ? 32 : g.n <= kDirectMaxN ? 128 : 256;
  const int64_t n_cg = ceil_div(g.n, kDirectCols);
  const int64_t blocks = ceil_div(g.m, kDirectRows);
  const int threads = static_cast<int>(std::min<int64_t>(nt, blocks));
  if (g.a_packed) {
    // A packed once: each block's whole sum at once, its states in registers from the first
    // group to the store.
    const __m512i* pa = static_cast<const __m512i*>(g.a_packed->blocks());
    const __m512i* ps = static_cast<const __m512i*>(g.a_packed->row_sums());
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int64_t r0 = blk * kDirectRows;
      const int mv = static_cast<int>(std::min<int64_t>(kDirectRows, g.m - r0));
      __m512i st[kDirectCols * 4];
      for (int64_t cg = 0; cg < n_cg; ++cg) {
        const int nv = static_cast<int>(std::min<int64_t>(kDirectCols, g.n - cg * kDirectCols));
        cols[nv - 1](pa + blk * ng * 4, ng, bw + cg * kDirectCols, ldw, st, true);
        direct_store<G>(g, st, G == 4 ? ps + blk * 4 : nullptr, nv, cg * kDirectCols, scale, beta_c,
                        r0, mv);
      }
    }
    return;
  }
  // Each column's lines of a block are as many streams, lda apart, as the chunk is long: more
  // than the hardware prefetchers follow, so every interleave waited on them. The interleave
  // fetches the lines of the block this thread interleaves kAhead blocks later (in this chunk,
  // or at the start of the next), unless A fits in half of L2, where nothing waits. Zen 5 family
  // 26, 2 threads, ms without -> with the prefetch, alternating calls in one process (medians of
  // 21; 1, 3 and 4 blocks ahead measured too): u8s8 7680x32x2560 2.60-2.83 -> 1.60-1.76,
  // 7680x1x2560 0.49-0.76 -> 0.36-0.44, 8448x4x2816 0.77-2.46 -> 0.60-0.97, 6144x32x2048 1.43 ->
  // 1.07, 512x8x500000 28.2 -> 16.6; bf16 7680x32x2560 4.58-4.71 -> 2.56-2.63, 7680x4x2560 3.30
  // -> 0.94, 1024x16x500000 119 -> 78, 4096x16x4096 3.84 -> 2.31; it costs a little where A is
  // in the caches anyway: 1760x16x1760 u8s8 (3 MB) 0.150 -> 0.155, 512x16x512 (256 KB) 0.017 ->
  // 0.019, hence only from half of L2 up.
  constexpr int64_t kAhead = 2;
  static const double l2 = static_cast<double>(cache_bytes(2, 1 << 20));
  constexpr int64_t ea = sizeof(typename Tr::TA);  // bytes of an element of A
  const bool prefetch = double(g.m) * g.k * ea > l2 / 2;
  // No barrier inside: a thread that cannot grow its buffers skips its blocks, and the error is
  // rethrown after the region.
  RegionErrors errors;
#pragma omp parallel num_threads(threads) if (threads > 1)
  errors.run([&] {
    const int t = omp_get_thread_num(), tn = omp_get_num_threads();
    const int64_t b0 = blocks * t / tn, b1 = blocks * (t + 1) / tn;
    // Per block: 4 vectors per column of C, and 4 of row sums (u8s8).
    const int64_t per_block = n_cg * kDirectCols * 4 + 4;
    static thread_local std::vector<uint8_t> state_buf, u_buf;
    __m512i* state = scratch<__m512i>(state_buf, (b1 - b0) * per_block, true);
    __m512i* u = scratch<__m512i>(u_buf, ceil_div(kc, G) * 4, true);
    for (int64_t p0 = 0; p0 < g.k; p0 += kc) {
      const int64_t p1 = std::min(g.k, p0 + kc), ngc = ceil_div(p1 - p0, G);
      const bool first = p0 == 0, last = p1 == g.k;
      for (int64_t blk = b0; blk < b1; ++blk) {
        const int64_t r0 = blk * kDirectRows;
        const int mv = static_cast<int>(std::min<int64_t>(kDirectRows, g.m - r0));
        __m512i* st = state + (blk - b0) * per_block;
        __m512i* sums = st + n_cg * kDirectCols * 4;
        // The block kAhead later in this thread's order, as an offset in bytes from this one.
        int64_t pf = 0;
        if (prefetch) {
          const int64_t later = blk + kAhead;
          if (later < b1)
            pf = kAhead * kDirectRows;
          else if (p1 < g.k)
            pf = (std::min(b0 + later - b1, b1 - 1) - blk) * kDirectRows + kc * g.lda;
          pf *= ea;
        }
        if constexpr (G == 4) {
          if (first) std::memset(sums, 0, 4 * sizeof(__m512i));
          interleave_u8s8(static_cast<const int8_t*>(g.a) + r0, g.lda, g.k, mv, p0, p1, u, sums,
                          pf);
        } else {
          interleave_bf16(static_cast<const uint16_t*>(g.a) + r0, g.lda, g.k, mv, p0, p1, u, pf);
        }
        for (int64_t cg = 0; cg < n_cg; ++cg) {
          const int nv = static_cast<int>(std::min<int64_t>(kDirectCols, g.n - cg * kDirectCols));
          __m512i* sc = st + cg * kDirectCols * 4;
          cols[nv - 1](u, ngc, bw + (p0 / G) * ldw + cg * kDirectCols, ldw, sc, first);
          if (last) direct_store<G>(g, sc, sums, nv, cg * kDirectCols, scale, beta_c, r0, mv);
        }
      }
    }
  });
  errors.rethrow();
}

template void direct<Bf16>(const LowpGemm&, const float*, float, int);
template void direct<U8s8>(const LowpGemm&, const float*, float, int);

}  // namespace pb::lowp

namespace pb {

void LowpPackedA::Free::operator()(uint8_t* p) const {
  std::free(p);
}

LowpPackedA::LowpPackedA(const DataType& type, int64_t rows, int64_t cols, const void* a,
                         int64_t lda)
    : dt(type), m(rows), k(cols) {
  if (gemm_packed_lowp_on_avx2(dt)) {  // the AVX2 u8s8 kernel's slivers
    const size_t bytes = static_cast<size_t>(lowp_avx2::packed_a_elems(m, k)) * 2;
    data_.reset(static_cast<uint8_t*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64)));
    if (!data_) throw std::bad_alloc();
    lowp_avx2::pack_a_whole(m, k, static_cast<const int8_t*>(a), lda,
                            reinterpret_cast<int16_t*>(data_.get()));
    head_ = sums_ = 0;
    return;
  }
  if (!gemm_packed_lowp_avx512_unsupported(dt).empty()) return;  // no kernel reads blocks
  const int G = dt.in == DataType::u8s8 ? 4 : 2;
  const int64_t blocks = lowp::ceil_div(m, lowp::kDirectRows), ng = lowp::ceil_div(k, G);
  const size_t vec = sizeof(__m512i);
  head_ = 0;
  sums_ = static_cast<size_t>(blocks * ng * 4) * vec;
  const size_t bytes = sums_ + static_cast<size_t>(blocks * 4) * vec;
  data_.reset(static_cast<uint8_t*>(std::aligned_alloc(64, bytes)));
  if (!data_) throw std::bad_alloc();
  __m512i* out = reinterpret_cast<__m512i*>(data_.get());
  __m512i* sums = reinterpret_cast<__m512i*>(data_.get() + sums_);
  if (G == 4)
    lowp::pack_blocks<lowp::U8s8>(a, lda, m, k, out, sums);
  else
    lowp::pack_blocks<lowp::Bf16>(a, lda, m, k, out, sums);
}

}  // namespace pb
#pragma GCC diagnostic pop
#endif
