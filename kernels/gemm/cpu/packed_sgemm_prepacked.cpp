// cpu/packed's products with an A packed once (SgemmPackedA, packed_sgemm.h): each sliver of A
// streams contiguously from wherever it lives, op(B) is read in place by the micro-kernel (no
// pack; on the AVX2 path with at least NR columns, packed per call, see product), and the loops
// keep a sliver's chunk of the sum in L1 across B's columns:
//   column blocks of B (the block's K x columns fit half of L2)
//     slivers of A (a thread's own, in order)
//       KC chunks of the sum: the micro-kernel over every column of the block
// The C tile of a sliver stays in cache across the chunks of the sum.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <new>
#include <string>

#include "kernels/core/error.h"
#include "kernels/core/machine.h"
#include "kernels/gemm/cpu/packed_sgemm.h"
#include "kernels/gemm/cpu/packed_sgemm_kernels.h"

namespace pb {

using namespace sgemm_kernels;

namespace {
constexpr int64_t kKcInPlace = 128;  // a 48-row chunk of the sum: 24 KB, half of L1
}  // namespace

// The packed data and its sliver table, for the products below.
struct PrepackedAccess {
  static const float* data(const SgemmPackedA& a) { return a.data(); }
  static int mr(const SgemmPackedA& a) { return a.mr_; }
  static int64_t row(const SgemmPackedA& a, int64_t s) { return a.sliver_row_[s]; }
  static int rows(const SgemmPackedA& a, int64_t s) { return a.sliver_rows_[s]; }
  static int64_t first(const SgemmPackedA& a, size_t g) { return a.group_first_[g]; }
};

// An offset, not an address: a copy keeps the layout (only its alignment may differ).
const float* SgemmPackedA::data() const {
  return data_.data() + head_;
}

void SgemmPackedA::pack(bool ta, int64_t m, int64_t k, const float* a, int64_t lda,
                        const std::vector<Rows>& groups) {
  if (m < 0) throw InputError("m", "must not be negative, got " + std::to_string(m));
  if (k < 0) throw InputError("k", "must not be negative, got " + std::to_string(k));
  const int64_t rows_stored = ta ? k : m;
  if (lda < std::max<int64_t>(1, rows_stored))
    throw InputError("lda", std::to_string(lda) + " is below A's " + std::to_string(rows_stored) +
                                " stored rows");
  std::vector<Rows> gs = groups;
  if (gs.empty()) gs.push_back({0, m});
  // Disjoint and in order: threads that own groups write their rows of C alone.
  int64_t end = 0;
  for (const Rows& g : gs) {
    if (g.row0 < end || g.rows < 0 || g.row0 + g.rows > m)
      throw InputError(
          "groups", "rows [" + std::to_string(g.row0) + ", " + std::to_string(g.row0 + g.rows) +
                        ") overlap the group before or lie outside op(A)'s " + std::to_string(m));
    end = g.row0 + g.rows;
  }
  const Config& cf = config();
  mr_ = cf.mr;
  m_ = m;
  k_ = k;
  sliver_row_.clear();
  sliver_rows_.clear();
  group_first_.assign(1, 0);
  for (const Rows& g : gs) {
    for (int64_t r = 0; r < g.rows; r += mr_) {
      sliver_row_.push_back(g.row0 + r);
      sliver_rows_.push_back(static_cast<int>(std::min<int64_t>(mr_, g.rows - r)));
    }
    group_first_.push_back(static_cast<int64_t>(sliver_row_.size()));
  }
  // Every sliver is written whole below (rows past a group's end as zero): a buffer of the same
  // size is packed again in place, with no allocation or zeroing (an RNN's weights, once a step).
  const size_t need = sliver_row_.size() * mr_ * k + 16;
  if (data_.size() != need) data_.assign(need, 0.0f);
  const uintptr_t p = reinterpret_cast<uintptr_t>(data_.data());
  head_ = (((p + 63) & ~uintptr_t(63)) - p) / sizeof(float);
  float* d = data_.data() + head_;
  const int64_t ngroups = static_cast<int64_t>(gs.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t g = 0; g < ngroups; ++g) {
    const int64_t s0 = group_first_[g], n_sl = group_first_[g + 1] - s0;
    if (n_sl && k) pack_a(ta, a, lda, gs[g].row0, gs[g].rows, 0, k, mr_, 0, n_sl, d + s0 * mr_ * k);
  }
}

namespace {

// Sliver ranges [s0, s1) of a product; `reverse` runs the ranges and their slivers last to first.
struct Span {
  int64_t s0, s1;
};

#ifdef PB_X86
// Slivers sp of `a` x NC columns (B(p, j) at b[p * bs + j * bcs], C's column j at c + j * ldc)
// on the AVX2 path, S slivers at a time (gemv_slivers_avx2); reverse: the last S first, and so on.
template <int S, int NC>
void gemv(const SgemmPackedA& a, Span sp, const float* b, int64_t bs, int64_t bcs, float alpha,
          float beta, float* c, int64_t ldc, bool reverse) {
  using P = PrepackedAccess;
  const int64_t k = a.k(), sf = P::mr(a) * k, s0 = sp.s0, s1 = sp.s1;
  for (int64_t i = s0; i < s1; i += S) {
    const int w = static_cast<int>(std::min<int64_t>(S, s1 - i));
    const int64_t first = reverse ? s1 - w - (i - s0) : i;  // the lowest of the w
    float* cp[S];
    int mv[S];
    for (int q = 0; q < w; ++q) cp[q] = c + P::row(a, first + q), mv[q] = P::rows(a, first + q);
    const float* as = P::data(a) + first * sf;
    if (w == S)
      gemv_slivers_avx2<S, NC>(k, as, sf, b, bs, bcs, cp, ldc, mv, alpha, beta);
    else if (w >= 2)  // S is 4 or 2: 2 or 3 slivers left
      (w == 3 ? gemv_slivers_avx2<3, NC> : gemv_slivers_avx2<2, NC>)(k, as, sf, b, bs, bcs, cp, ldc,
                                                                     mv, alpha, beta);
    else
      gemv_slivers_avx2<1, NC>(k, as, sf, b, bs, bcs, cp, ldc, mv, alpha, beta);
  }
}
#endif

// The slivers of `spans` x op(B)'s columns [j0, j1), on the calling thread, B's column block
// packed once for all of them.
void product(const SgemmPackedA& a, const Span* spans, size_t n_spans, int64_t j0, int64_t j1,
             bool tb, float alpha, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
             bool reverse) {
  using P = PrepackedAccess;
  const Config& cf = config();
  const int64_t k = a.k(), mr = P::mr(a);
  // op(B)(p, j) at b[j * cs + p * ps].
  const int64_t cs = tb ? 1 : ldb, ps = tb ? ldb : 1;
  // Columns per block: the block's whole sum (k x columns) in half of L2.
  static const int64_t l2 = static_cast<int64_t>(cache_bytes(2, 1 << 20));
  const int64_t nb =
      std::max<int64_t>(cf.nr, l2 / 2 / (4 * std::max<int64_t>(k, 1)) / cf.nr * cf.nr);
  // On the AVX2 path B's column block is packed (each call, by each thread, into its own buffer)
  // where it has at least one full NR-column sliver: reading 4 columns in place (H floats apart
  // in an RNN's states) ran the 24-row tiles at 58 GFLOP/s on one core where the plain
  // cpu/packed GEMM of the same shape ran at 65 (not L1 set conflicts: an LSTM with H = 1000
  // ran its steps as fast per flop as with 1024). Zen 3, GFLOP/s in place -> packed,
  // 4096x64x1024 (an LSTM h1024's step at batch 64):
  // one thread 62 -> 76-83, two 122-129 -> 165; cpu/blas LSTM forward, ms (medians of 5
  // alternating runs; onednn/auto): h1024 n64 t25 193.3 -> 170.2 (160.9), h512 n64 47.3 -> 42.6
  // (42.6), h512 n16 12.0 -> 10.7 (11.7), h1024 n4 15.8 -> 13.9 (15.4); backward h1024 n64 355.6
  // -> 336.0 (339.9). With 1 or 2 columns a packed sliver computed 4 (h512 n1 1.79 -> 2.11, n2
  // 2.40 -> 3.31): those read B in place, several slivers at a time (gemv). The AVX-512 path
  // reads B in place throughout (not measured there).
#ifdef PB_X86
  if (cf.kernel == kernel_avx2 && j1 - j0 <= 2) {  // a GEMV: 4 or 2 slivers at a time
    for (size_t i = 0; i < n_spans; ++i) {
      const Span sp = spans[reverse ? n_spans - 1 - i : i];
      if (j1 - j0 == 1)
        gemv<4, 1>(a, sp, b + j0 * cs, ps, cs, alpha, beta, c + j0 * ldc, ldc, reverse);
      else
        gemv<2, 2>(a, sp, b + j0 * cs, ps, cs, alpha, beta, c + j0 * ldc, ldc, reverse);
    }
    return;
  }
#endif
  static thread_local std::vector<float> b_own;
  float* bp = nullptr;
#ifdef PB_X86
  if (cf.kernel == kernel_avx2 && j1 - j0 >= cf.nr) {
    try {  // inside the caller's parallel region: without the buffer, B is read in place
      bp = scratch(b_own, static_cast<size_t>(k) * ceil_div(std::min(nb, j1 - j0), cf.nr) * cf.nr);
    } catch (const std::bad_alloc&) {
      bp = nullptr;
    }
  }
#endif
  const int64_t nr = cf.nr;
  for (int64_t jc = j0; jc < j1; jc += nb) {
    const int64_t nvb = std::min(nb, j1 - jc), n_jr = ceil_div(nvb, nr);
    // Packed: the block's B, chunk by chunk of the sum (chunk pc's slivers at bp + pc * n_jr * nr).
    for (int64_t pc = 0; bp && pc < k; pc += kKcInPlace)
      pack_b(tb, b, ldb, pc, std::min(kKcInPlace, k - pc), jc, nvb, static_cast<int>(nr), 0, n_jr,
             bp + pc * n_jr * nr);
    for (size_t si = 0; si < n_spans; ++si)
      for (int64_t i = 0, n_sl = spans[si].s1 - spans[si].s0; i < n_sl; ++i) {
        const int64_t s = reverse ? spans[n_spans - 1 - si].s1 - 1 - i : spans[si].s0 + i;
        const float* as = P::data(a) + s * mr * k;
        float* cs_tile = c + P::row(a, s) + jc * ldc;
        for (int64_t pc = 0; pc < k; pc += kKcInPlace) {
          const int64_t kc = std::min(kKcInPlace, k - pc);
          const float bt = pc == 0 ? beta : 1.0f;
          if (!bp) {
            cf.in_place(kc, as + pc * mr, b + jc * cs + pc * ps, cs, ps, cs_tile, ldc, alpha, bt,
                        P::rows(a, s), static_cast<int>(nvb));
            continue;
          }
          for (int64_t jr = 0; jr < n_jr; ++jr)
            cf.kernel(kc, as + pc * mr, mr, bp + pc * n_jr * nr + jr * nr * kc,
                      cs_tile + jr * nr * ldc, ldc, alpha, bt, P::rows(a, s),
                      static_cast<int>(std::min<int64_t>(nr, nvb - jr * nr)));
        }
      }
  }
}

// C rows of slivers [sp.s0, sp.s1) = beta * C (k == 0 or alpha == 0).
void scale_rows(const SgemmPackedA& a, Span sp, int64_t n, float beta, float* c, int64_t ldc) {
  using P = PrepackedAccess;
  for (int64_t s = sp.s0; s < sp.s1; ++s)
    for (int64_t j = 0; j < n; ++j) {
      float* cj = c + P::row(a, s) + j * ldc;
      for (int i = 0; i < P::rows(a, s); ++i) cj[i] = beta == 0.0f ? 0.0f : beta * cj[i];
    }
}

void check_call(const SgemmPackedA& a, bool tb, int64_t n, int64_t ldb, int64_t ldc) {
  if (n < 0) throw InputError("n", "must not be negative, got " + std::to_string(n));
  const int64_t b_rows = tb ? n : a.k();
  if (ldb < std::max<int64_t>(1, b_rows))
    throw InputError(
        "ldb", std::to_string(ldb) + " is below B's " + std::to_string(b_rows) + " stored rows");
  if (ldc < std::max<int64_t>(1, a.m()))
    throw InputError("ldc",
                     std::to_string(ldc) + " is below C's " + std::to_string(a.m()) + " rows");
}

void run_slivers(const SgemmPackedA& a, const Span* spans, size_t n_spans, bool tb, int64_t n,
                 float alpha, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
                 bool reverse = false) {
  if (n <= 0 || !n_spans) return;
  if (a.k() == 0 || alpha == 0.0f) {
    if (beta != 1.0f)
      for (size_t i = 0; i < n_spans; ++i) scale_rows(a, spans[i], n, beta, c, ldc);
    return;
  }
  product(a, spans, n_spans, 0, n, tb, alpha, b, ldb, beta, c, ldc, reverse);
}

}  // namespace

void sgemm_prepacked(const SgemmPackedA& a, size_t group, bool tb, int64_t n, float alpha,
                     const float* b, int64_t ldb, float beta, float* c, int64_t ldc, bool reverse) {
  sgemm_prepacked(a, &group, 1, tb, n, alpha, b, ldb, beta, c, ldc, reverse);
}

void sgemm_prepacked(const SgemmPackedA& a, const size_t* groups, size_t n_groups, bool tb,
                     int64_t n, float alpha, const float* b, int64_t ldb, float beta, float* c,
                     int64_t ldc, bool reverse) {
  if (!a.groups()) throw InputError("a", "is not packed (SgemmPackedA::pack)");
  static thread_local std::vector<Span> spans;  // no allocation once warm
  spans.clear();
  for (size_t i = 0; i < n_groups; ++i) {
    if (groups[i] >= a.groups())
      throw InputError("group", std::to_string(groups[i]) + " of " + std::to_string(a.groups()));
    spans.push_back(
        {PrepackedAccess::first(a, groups[i]), PrepackedAccess::first(a, groups[i] + 1)});
  }
  check_call(a, tb, n, ldb, ldc);
  run_slivers(a, spans.data(), spans.size(), tb, n, alpha, b, ldb, beta, c, ldc, reverse);
}

void sgemm_prepacked(const SgemmPackedA& a, bool tb, int64_t n, float alpha, const float* b,
                     int64_t ldb, float beta, float* c, int64_t ldc) {
  if (!a.groups()) throw InputError("a", "is not packed (SgemmPackedA::pack)");
  check_call(a, tb, n, ldb, ldc);
  const int64_t n_sl = PrepackedAccess::first(a, a.groups());
  const int nt = static_cast<int>(
      std::min<int64_t>(gemm_threads(n_sl * PrepackedAccess::mr(a), n, a.k()), n_sl));
  if (nt <= 1) {
    const Span all{0, n_sl};
    return run_slivers(a, &all, 1, tb, n, alpha, b, ldb, beta, c, ldc);
  }
#pragma omp parallel num_threads(nt)
  {
    const int t = omp_get_thread_num();
    const Span mine{n_sl * t / nt, n_sl * (t + 1) / nt};
    run_slivers(a, &mine, mine.s1 > mine.s0 ? 1 : 0, tb, n, alpha, b, ldb, beta, c, ldc);
  }
}

}  // namespace pb
