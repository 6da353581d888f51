// primbench's own single-precision GEMM, BLIS-style: op(A) and op(B) packed into panels sized
// for the caches this machine reports, a register-blocked micro-kernel (AVX-512 48x8 or
// AVX2+FMA 24x4, chosen at run time; a portable one otherwise), OpenMP over the macro-loops.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/core/post_ops.h"

namespace pb {

// Column-major, BLAS semantics: C (m x n, ldc) = alpha * op(A) * op(B) + beta * C, where op(A)
// is m x k (A stored k x m with lda when ta), op(B) is k x n. beta == 0: C is not read. Any
// sizes (0 included: then only beta scales C) and leading dimensions >= the stored rows.
void sgemm_packed(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                  int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
// The same, then `post` (when not null) on C: column j of C is its channel j (post_ops.h), each
// tile's post-ops applied as soon as its sum is complete, while the tile is in L1 (a layer's
// bias, batch-norm, residual add and ReLU fused into its GEMM).
void sgemm_packed_post(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                       const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                       float* c, int64_t ldc, const PostOps* post);

// op(A) packed once into the micro-kernel's row slivers, for an A that many products share (an
// RNN's weights, every step): each product then streams A contiguously instead of packing it
// or reading it column by column (ldA apart). The rows are packed in groups, each from a sliver
// boundary, so that a thread can own whole groups: group g holds rows [row0, row0 + rows) of
// op(A) and its products write those rows of C. The layout follows the micro-kernel in force
// (PRIMBENCH_SIMD), fixed for the process.
class SgemmPackedA {
 public:
  struct Rows {
    int64_t row0 = 0, rows = 0;
  };
  // op(A) is m x k (A stored k x m with lda when ta, else m x k), column-major; no groups: one
  // group of all m rows. Throws InputError naming the field for rows outside op(A).
  void pack(bool ta, int64_t m, int64_t k, const float* a, int64_t lda,
            const std::vector<Rows>& groups = {});
  int64_t m() const { return m_; }
  int64_t k() const { return k_; }
  size_t groups() const { return group_first_.empty() ? 0 : group_first_.size() - 1; }
  size_t bytes() const { return data_.size() * sizeof(float); }

 private:
  friend struct PrepackedAccess;
  int mr_ = 0;
  int64_t m_ = 0, k_ = 0;
  size_t head_ = 0;                   // data() = data_.data() + head_ (64-byte aligned when packed)
  std::vector<float> data_;           // sliver s at data() + s * mr * k (MR floats per step)
  std::vector<int64_t> sliver_row_;   // the row of op(A) (and C) a sliver starts at
  std::vector<int> sliver_rows_;      // its rows (< mr for a group's last sliver)
  std::vector<int64_t> group_first_;  // group g's slivers: [group_first[g], group_first[g+1])
  const float* data() const;
};

// C = alpha * op(A)[group's rows] x op(B) + beta * C on those rows (beta == 0: C is not read),
// op(B) k x n read in place (B stored k x n with ldb, or n x k when tb), column-major C with
// ldc; on the calling thread (for threads that each own groups, inside their parallel region).
// Throws InputError naming the field for a group that is not there, n < 0 or a leading
// dimension below op(B)'s or C's rows. reverse: the group's slivers last to first (the same
// result; a caller that streams A from memory every step alternates it, so that each step
// starts on the rows the previous one left in the cache).
void sgemm_prepacked(const SgemmPackedA& a, size_t group, bool tb, int64_t n, float alpha,
                     const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
                     bool reverse = false);
// Groups groups[0 .. n_groups) one after another on the calling thread, op(B) packed once for
// all of them where the product packs it (an RNN step's gates: a thread's rows of each); reverse
// runs the groups and their slivers last to first.
void sgemm_prepacked(const SgemmPackedA& a, const size_t* groups, size_t n_groups, bool tb,
                     int64_t n, float alpha, const float* b, int64_t ldb, float beta, float* c,
                     int64_t ldc, bool reverse = false);
// Every group, the slivers split over gemm_threads() threads.
void sgemm_prepacked(const SgemmPackedA& a, bool tb, int64_t n, float alpha, const float* b,
                     int64_t ldb, float beta, float* c, int64_t ldc);

// The micro-kernel's tile (mr x nr) and the cache blocks in use, and as one line, e.g.
// "avx512 48x8, kc 256 mc 480 nc 4096". The ISA follows PRIMBENCH_SIMD (kernels/core/vmath.h).
struct SgemmBlocking {
  std::string isa;
  int mr = 0, nr = 0;
  int64_t kc = 0, mc = 0, nc = 0;
};
SgemmBlocking sgemm_packed_blocking();
// The transposing copy both packs use, for any 4-byte elements (the reduced-precision GEMM moves
// bf16 pairs and byte quadruples as words): dst[p * ds + r] = src[r * ss + p], r < rows,
// p < cols, strides in elements.
void transpose_words(const void* src, int64_t ss, int rows, int64_t cols, void* dst, int64_t ds);
// Row-major in (rows x cols) -> out (cols x rows): blocks of 64 rows through transpose_words,
// OpenMP-parallel over the blocks when `par`. Element by element (each thread reading a column
// at a stride of cols), cpu/blas RNN's two weight transposes took 38 ms a step for h1024 against
// oneDNN's 2.4 (Zen 5 family 26, 2 threads).
void transpose_matrix(const float* in, int64_t rows, int64_t cols, float* out, bool par = true);
std::string sgemm_packed_config();
// The bytes of the packed B panel (KC x NC) that a GEMM's threads share in L3 (cpu/packed, every
// type): a quarter of L3 as sysfs gives it for one core, at most 8 MiB. A VM may see its whole
// socket's L3 (an Emerald Rapids Xeon, model 207, has up to 320 MB), shared with other tenants:
// a quarter of that is a panel of tens of thousands of columns that no core keeps, and it sized
// the tests that cross one NC panel past CI's limits under TSan there. 8 MiB is a 32 MB L3's
// quarter (Zen 4/5: NC 8192 at KC 256, unchanged there); BLIS's Skylake-X SGEMM panel is 4.5 MB
// (NC 3072 x KC 384).
int64_t gemm_b_panel_bytes();
// The threads a GEMM of m x n x k runs on (cpu/packed, every type): 1 inside a parallel region
// (one level of threads) or when 2mnk is under 2^21 FLOP (about 10 us of one core here), where
// waking and joining the others costs more than they save (672 steps of a 32 x 1 x 32 RNN GEMM:
// 1.8 ms on 2 threads, 0.4 on 1); else every OpenMP thread.
int gemm_threads(int64_t m, int64_t n, int64_t k);
// How nt threads share a GEMM's m rows (cpu/packed, every type; mc: the largest row block, mr and
// nr: the micro-kernel's tile): split_rows, n_ic row blocks (whole multiples of nt); else the
// columns, each thread with all the rows (n_ic = 1): with fewer mr-row slivers than threads, or
// at most two per thread in one block with columns for two nr-column slivers per thread.
struct GemmRowBlocks {
  bool split_rows = true;
  int64_t n_ic = 1;
};
GemmRowBlocks gemm_row_blocks(int nt, int64_t m, int64_t n, int64_t mc, int mr, int nr);
// The reduced-precision drivers' tile loop: every nr-column sliver jr in [jr0, jr1) of the panel
// of nc columns from jc, against every mr-row sliver of the rows [ic, ic + mcv), as
// f(jr, ir, row, col, mv, nv): the tile's first row and column of C and its rows and columns.
template <class F>
void for_each_tile(int64_t ic, int64_t mcv, int mr, int64_t jc, int64_t nc, int nr, int64_t jr0,
                   int64_t jr1, F&& f) {
  const int64_t n_ir = (mcv + mr - 1) / mr;
  for (int64_t jr = jr0; jr < jr1; ++jr) {
    const int nv = static_cast<int>(std::min<int64_t>(nr, nc - jr * nr));
    for (int64_t ir = 0; ir < n_ir; ++ir)
      f(jr, ir, ic + ir * mr, jc + jr * nr, static_cast<int>(std::min<int64_t>(mr, mcv - ir * mr)),
        nv);
  }
}

}  // namespace pb
