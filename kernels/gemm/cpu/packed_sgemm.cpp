// BLIS-style SGEMM (see packed_sgemm.h). Loop nest, outermost first:
//   jc: NC columns of C      pc: KC of the sum: pack op(B)[pc, jc] into NR-column slivers (shared)
//   ic: MC rows of C (one thread each): pack op(A)[ic, pc] into MR-row slivers (per thread)
//   jr: NR-column slivers    ir: MR-row slivers: the micro-kernel, C tile (+)= A sliver x B sliver
// With at least 32 B slivers per thread (and with few rows) the threads split the columns instead
// of the rows: each packs its own B slivers and all of A, block by block, into its own buffers.
// The micro-kernel keeps an MR x NR tile of C in registers: MR along the columns of C (vectors,
// C is column-major) and NR broadcast values of B. A B sliver (KC x NR) stays in L1 while the
// A slivers stream from L2; the A block (MC x KC) fits half of L2, the B panel (KC x NC) a part
// of L3. With op(A) = A and N <= 64 (DeepBench's N = 16..64; 128 with M >= 4 N), full A slivers are
// read in place instead, each sliver once for all the B slivers (ir outside jr): A is the large
// operand there and packing it cost more than the few products it serves (1760x16x1760: 0.43 ->
// 0.25 ms). There each thread also packs all of B (N <= 128 columns) into its own buffer and keeps
// its rows over the whole sum (direct_block below), so the threads share nothing until the end.
// With op(A) = A^T and N <= 128 on the AVX-512 path, A is read in place too: tiles of C^T with
// op(A)'s elements broadcast; each C element a dot product where that path does not apply and
// N <= 32 (both in packed_sgemm_tn.cpp). With few rows (at most 6 slivers per thread), B is read
// in place instead of packed (b_in_place below).
#include "kernels/gemm/cpu/packed_sgemm.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "kernels/core/machine.h"
#include "kernels/core/threads.h"
#include "kernels/core/vmath.h"
#include "kernels/gemm/cpu/packed_sgemm_kernels.h"

namespace pb {
namespace sgemm_kernels {

namespace {
constexpr int64_t kKc = 256;  // the sum's block: a 48 x 256 A chunk is 48 KB, a B sliver 8 KB
// The AVX2 path's: a B sliver (512 x 4) is 8 KB there too, and C is read and written half as
// often. Zen 3 family 25, 2 threads, ms kc 256 -> 512 (primbench run, medians of 3 alternating
// runs): 2560x2560x2560 188.5 -> 184.2, 2048x2048x2048 100.1 -> 95.8, 1760x7000x1760 249.0 ->
// 242.1, 512x24000x1536 237.5 -> 229.9 (A^T 236.6 -> 223.8), 35x8457x4096 (B in place) 26.3 ->
// 22.3 (medians of 7); 512x512x512 and 1024x700x512 even (1.61 -> 1.64, 4.20 -> 4.17). The A
// block keeps its bytes (half of L2: 120 rows at 512 deep), the direct path its depths.
constexpr int64_t kKc2 = 512;

Config make_config() {
  Config c{"generic", kernel_generic, in_place_generic, kMrGen, kNrGen, kKc, 0, 0};
#ifdef PB_X86
  const std::string isa = vmath::isa();  // the SIMD path in force (PRIMBENCH_SIMD narrows it)
  if (isa == "avx512")
    c = {"avx512", kernel_avx512, in_place_avx512, kMr512, kNr512, kKc, 0, 0};
  else if (isa == "avx2")
    c = {"avx2", kernel_avx2, in_place_avx2, kMr256, kNr256, kKc2, 0, 0};
#endif
  // The A block takes half of L2 (the size one core sees, from sysfs), the B panel
  // gemm_b_panel_bytes (shared by the threads).
  const int64_t l2 = static_cast<int64_t>(cache_bytes(2, 1 << 20));
  c.mc = std::max<int64_t>(c.mr, l2 / 2 / (c.kc * 4) / c.mr * c.mr);
  c.nc = std::max<int64_t>(c.nr, gemm_b_panel_bytes() / (c.kc * 4) / c.nr * c.nr);
  c.mu = c.kernel == kernel_generic ? c.mr : c.mr / 3;
  return c;
}

constexpr int64_t kDirectMaxN = 64;          // up to here, op(A) = A is read in place, not packed;
constexpr int64_t kDirectMinRowsPerCol = 4;  // up to twice that with this many rows per column
// Up to this many A slivers per thread, B is read in place, not packed (b_in_place).
constexpr int64_t kInPlaceBMaxSlivers = 6;
constexpr int64_t kInPlaceBMaxSlivers2 = 3;  // the AVX2 path's (see b_in_place)

// The depth of the sum the AVX2 path's direct blocks take when an A sliver that deep, read in
// place, fits L1 (sliver_fits_l1).
constexpr int64_t kKcL1 = 64;
// From this many B slivers an A sliver that no depth keeps in L1 is packed (the AVX2 path).
constexpr int64_t kPackedMinBSlivers = 16;

// Whether the in-place A sliver at `a` (mr floats of each of `depth` columns, lda floats apart)
// maps at most as many lines to each L1 set as the set has ways: then it stays in L1 across all
// the B slivers it serves. A column stride of a power of two lines puts every column in the same
// sets, and there no depth keeps it. L1 is indexed by the address bits within a 4 KB page, so
// the virtual address decides.
bool sliver_fits_l1(const float* a, int64_t lda, int mr, int64_t depth) {
  static const int ways = cache_ways(1, 8);
  static const int64_t sets =
      static_cast<int64_t>(cache_bytes(1, 32 << 10)) / (64 * std::max(1, ways));
  std::array<int, 1024> per;
  if (sets <= 0 || sets > static_cast<int64_t>(per.size())) return false;
  std::fill_n(per.begin(), sets, 0);
  const uintptr_t base = reinterpret_cast<uintptr_t>(a);
  for (int64_t p = 0; p < depth; ++p) {
    const uintptr_t first = base + static_cast<uintptr_t>(p * lda) * sizeof(float);
    for (uintptr_t line = first / 64; line <= (first + mr * sizeof(float) - 1) / 64; ++line)
      if (++per[line % sets] > ways) return false;
  }
  return true;
}

}  // namespace

// dst[p * ds + r] = src[r * ss + p] for r < rows, p < cols: the transposing copy of both packs
// (rows of op(A) that are columns of A; columns of op(B) that are columns of B), in 8 x 8 AVX2
// blocks where the CPU has them.
void transpose_copy(const float* src, int64_t ss, int rows, int64_t cols, float* dst, int64_t ds) {
  int r = 0;
#ifdef PB_X86
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) {
    for (; r + 8 <= rows; r += 8) {
      int64_t p = 0;
      // Two blocks per cache line of the rows, each line of the next 8 rows fetched meanwhile
      // (past the last rows: the next sliver's, which the next call copies; a prefetch never
      // faults). The 8 rows in flight are 8 streams a column stride apart, which the hardware
      // prefetchers fetched late. Zen 5 family 26, 2 threads, 4096x64x4096 with A^T (the A
      // pack was a third of the time), alternating runs, ms: 9.82-9.91 -> 8.69-8.89.
      for (; p + 16 <= cols; p += 16) {
        for (int i = 8; i < 16; ++i)
          _mm_prefetch(reinterpret_cast<const char*>(src + (r + i) * ss + p), _MM_HINT_T0);
        transpose8x8(src + r * ss + p, ss, dst + p * ds + r, ds);
        transpose8x8(src + r * ss + p + 8, ss, dst + (p + 8) * ds + r, ds);
      }
      for (; p + 8 <= cols; p += 8) transpose8x8(src + r * ss + p, ss, dst + p * ds + r, ds);
      for (; p < cols; ++p)
        for (int i = r; i < r + 8; ++i) dst[p * ds + i] = src[i * ss + p];
    }
    // Four rows: the AVX2 path's B slivers (each row block packs B's 16 columns again at every
    // step of the sum: 1760x16x1760 on one thread, perf, 10.9% of the samples element by element,
    // 5.2% in these blocks; the time is even within the noise).
    if (r + 4 <= rows) {
      int64_t p = 0;
      for (; p + 8 <= cols; p += 8) transpose4x8(src + r * ss + p, ss, dst + p * ds + r, ds);
      for (; p < cols; ++p)
        for (int i = r; i < r + 4; ++i) dst[p * ds + i] = src[i * ss + p];
      r += 4;
    }
  }
#endif
  for (; r < rows; ++r)
    for (int64_t p = 0; p < cols; ++p) dst[p * ds + r] = src[r * ss + p];
}

const Config& config() {
  static const Config c = make_config();
  return c;
}

void pack_a(bool ta, const float* a, int64_t lda, int64_t i0, int64_t mc, int64_t p0, int64_t kc,
            int mr, int64_t s_begin, int64_t s_end, float* dst) {
  if (!ta) {
    // Column p of A holds the rows contiguous: walk each column once across all the slivers.
    for (int64_t p = 0; p < kc; ++p) {
      const float* col = a + (p0 + p) * lda;
      for (int64_t s = s_begin; s < s_end; ++s) {
        const int64_t r0 = i0 + s * mr;
        const int mv = static_cast<int>(std::min<int64_t>(mr, i0 + mc - r0));
        float* d = dst + s * mr * kc + p * mr;
        std::memcpy(d, col + r0, mv * sizeof(float));
        if (mv < mr) std::fill(d + mv, d + mr, 0.0f);
      }
    }
    return;
  }
  for (int64_t s = s_begin; s < s_end; ++s) {  // row i of op(A) is column i of A
    float* d = dst + s * mr * kc;
    const int64_t r0 = i0 + s * mr;
    const int mv = static_cast<int>(std::min<int64_t>(mr, i0 + mc - r0));
    transpose_copy(a + p0 + r0 * lda, lda, mv, kc, d, mr);
    for (int64_t p = 0; mv < mr && p < kc; ++p) std::fill(d + p * mr + mv, d + (p + 1) * mr, 0.0f);
  }
}

namespace {

void scale_c(int64_t m, int64_t n, float beta, float* c, int64_t ldc) {
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) c[j * ldc + i] = beta == 0.0f ? 0.0f : beta * c[j * ldc + i];
}

}  // namespace

void pack_b(bool tb, const float* b, int64_t ldb, int64_t p0, int64_t kc, int64_t j0, int64_t nc,
            int nr, int64_t s_begin, int64_t s_end, float* dst) {
  for (int64_t s = s_begin; s < s_end; ++s) {
    float* d = dst + s * nr * kc;
    const int64_t c0 = j0 + s * nr;
    const int nv = static_cast<int>(std::min<int64_t>(nr, j0 + nc - c0));
    if (!tb) {  // column j of B: the sum index contiguous
      transpose_copy(b + p0 + c0 * ldb, ldb, nv, kc, d, nr);
      for (int64_t p = 0; nv < nr && p < kc; ++p)
        std::fill(d + p * nr + nv, d + (p + 1) * nr, 0.0f);
    } else if (nv == 8 && nr == 8) {  // row p of op(B) is column p of B: columns contiguous
      // A full AVX-512 sliver: one 32-byte move per step (a call of memcpy per 32 bytes took
      // longer than the copy).
      for (int64_t p = 0; p < kc; ++p)
        std::memcpy(d + p * 8, b + c0 + (p0 + p) * ldb, 8 * sizeof(float));
    } else if (nv == 4 && nr == 4) {  // a full AVX2 sliver: one 16-byte move per step
      for (int64_t p = 0; p < kc; ++p)
        std::memcpy(d + p * 4, b + c0 + (p0 + p) * ldb, 4 * sizeof(float));
    } else {
      for (int64_t p = 0; p < kc; ++p) {
        std::memcpy(d + p * nr, b + c0 + (p0 + p) * ldb, nv * sizeof(float));
        std::fill(d + p * nr + nv, d + (p + 1) * nr, 0.0f);
      }
    }
  }
}

}  // namespace sgemm_kernels

using namespace sgemm_kernels;

SgemmBlocking sgemm_packed_blocking() {
  const Config& c = config();
  return {c.isa, c.mr, c.nr, c.kc, c.mc, c.nc};
}

void transpose_words(const void* src, int64_t ss, int rows, int64_t cols, void* dst, int64_t ds) {
  // The 8 x 8 blocks move words through float registers, which keep every bit pattern.
  transpose_copy(static_cast<const float*>(src), ss, rows, cols, static_cast<float*>(dst), ds);
}

void transpose_matrix(const float* in, int64_t rows, int64_t cols, float* out, bool par) {
  constexpr int64_t kRows = 64;
#pragma omp parallel for schedule(static) if (par)
  for (int64_t r0 = 0; r0 < rows; r0 += kRows)
    transpose_words(in + r0 * cols, cols, static_cast<int>(std::min(kRows, rows - r0)), cols,
                    out + r0, rows);
}

std::string sgemm_packed_config() {
  const Config& c = config();
  return std::string(c.isa) + " " + std::to_string(c.mr) + "x" + std::to_string(c.nr) + ", kc " +
         std::to_string(c.kc) + " mc " + std::to_string(c.mc) + " nc " + std::to_string(c.nc);
}

int gemm_threads(int64_t m, int64_t n, int64_t k) {
  if (omp_in_parallel() || 2.0 * m * n * k < double(1 << 21)) return 1;
  return omp_get_max_threads();
}

int64_t gemm_b_panel_bytes() {
  return std::min<int64_t>(static_cast<int64_t>(cache_bytes(3, 8 << 20)) / 4, int64_t(8) << 20);
}

// With at most two slivers per thread in one row block (and columns enough for two slivers per
// thread), or fewer slivers than threads, the threads split the columns instead, each with all
// the rows: by rows, 3 slivers on 2 threads ran 2 against 1, and each thread streamed all of B
// for its few rows. Interleaved in one process (medians of 15-51), 2 threads, Xeon family 6
// model 207, fp32 GFLOP/s rows -> columns: 128x128x128 99 -> 135, 96x4096x1024 184 -> 270,
// 144x2048x2048 193 -> 289, 192x2048x4096 259 -> 294, 160x700x2560 238 -> 273, 96x1024x8192 with
// B^T 155 -> 145 (the one loss); at 3 slivers per thread it was even (256x256x256 246 -> 241),
// hence 2. bf16/u8s8 against onednn/matmul (medians of 3), 128x128x128: bf16 0.62 -> 0.92, u8s8
// 0.39 -> 0.76; 256 and 512 even (0.49-0.89 both ways).
GemmRowBlocks gemm_row_blocks(int nt, int64_t m, int64_t n, int64_t mc, int mr, int nr) {
  const int64_t n_sl = ceil_div(m, mr);
  if (nt > 1 && (n_sl < nt || (m <= mc && n_sl <= 2 * nt && ceil_div(n, nr) >= 2 * nt)))
    return {false, 1};
  return {true, std::min(n_sl, ceil_div(ceil_div(m, mc), nt) * nt)};
}

void sgemm_packed(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                  int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  sgemm_packed_post(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nullptr);
}

void sgemm_packed_post(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                       const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                       float* c, int64_t ldc, const PostOps* post) {
  if (m <= 0 || n <= 0) return;
  // The post-ops of the tile of rows [i0, i0 + mv) and columns [j0, j0 + nv) at ct, once its sum
  // is complete: while it is still in L1.
  auto post_tile = [post](int64_t i0, int64_t j0, int64_t mv, int64_t nv, float* ct, int64_t ldct) {
    apply_post_ops(post->at(j0, i0 + j0 * post->ldr, post->ldr), mv, nv, ct, ldct, ct, ldct);
  };
  if (k <= 0 || alpha == 0.0f) {
    if (beta != 1.0f) scale_c(m, n, beta, c, ldc);
    if (post) post_tile(0, 0, m, n, c, ldc);
    return;
  }
  const Config& cf = config();
  const int nt = gemm_threads(m, n, k);
#ifdef PB_X86
  if (ta && (cf.kernel == kernel_avx512 || cf.kernel == kernel_avx2) &&
      gemm_tn_few_columns(cf.kernel == kernel_avx512, tb, m, n, k, alpha, a, lda, b, ldb, beta, c,
                          ldc, nt)) {
    if (post) post_tile(0, 0, m, n, c, ldc);  // afterwards (a path for few columns)
    return;
  }
#endif
  const int mr = cf.mr, nr = cf.nr;
  const int64_t kc_max = cf.kc, nc_max = cf.nc;
  // Row blocks: at most mc rows, the same number of blocks per thread; one block per thread is
  // cut at a multiple of the micro-kernel's vector rows (mu, below), so that its last sliver
  // computes only the vectors it needs: in whole slivers, 256 rows on 2 threads ran as 144 against
  // 112. Interleaved in one process (medians of 11-15), 2 threads, Xeon family 6 model 207, GFLOP/s
  // slivers -> vectors: 256x256x256 251-262 -> 287-293, 256x256x256 (A^T) 228 -> 242, 512x512x512
  // even (264-276 -> 258-285); on the AVX2 path even (256x256x256 144 -> 144, 200x1000x1000 134-148
  // -> 142-148).
  const int64_t n_sl = ceil_div(m, mr);
  // A not transposed and few B slivers: packing A would cost more than the product saves.
  // Up to 128 columns where A has at least 4 rows per column (DeepBench's N = 128, the fully
  // connected layers at batch 128). Zen 5 family 26, 2 threads, ms packed A -> in place (each
  // process both ways against oneDNN, medians of 3): 1760x128x1760 3.11 -> 2.27, 2560x128x2560
  // 6.97 -> 4.61, 4096x128x4096 18.3 -> 12.6, 7680x128x2560 19.9 -> 13.9, 3072x128x1024 2.88 ->
  // 2.28, AlexNet fc6 at batch 128 115 -> 82; 128x128x128 lost (0.018 -> 0.021), hence the rows.
  // On the AVX2 path the direct blocks sum 64 deep where an A sliver that deep fits L1's sets
  // (sliver_fits_l1): 256 columns of a 24-row sliver are 512 lines, all of a 32 KB L1, so each of
  // the B slivers after the first read A from L2. Zen 3 family 25 (32 KB 8-way L1), GFLOP/s kc
  // 256 (or 128 unaligned) -> 64, one thread: 784x128x512 (ResNet-50's 1x1 512 -> 128 at 28x28,
  // an image) 38 -> 80, 3136x64x256 65 -> 81 (onednn/matmul 95); two threads: 1760x16x1760 105
  // -> 127, 1760x64x1760 120 -> 152, 26752x64x2048 123 -> 143. Where no depth fits (column strides
  // of 2048, 2560, 4096, 7680 floats: 128, 160, 256, 480 lines, 0 or 32 mod L1's 64 sets, so all
  // columns share 2 to 4 sets), 64 lost (2048x64x2048 104 -> 88); there, from 16 B slivers (64
  // columns) on, the packed path below took over from the in-place reads (medians of 5 alternating
  // runs, GFLOP/s in place -> packed, two threads: 4096x64x4096 110 -> 120, 7680x128x2560 140 ->
  // 150; one thread, the 7x7 stem's 12544x64x147 58 -> 74; a copy of each sliver inside the direct
  // block reached 115, 137 and 59), and below 16 the in-place reads stay (4096x16x4096 76 against
  // 44 packed, 2048x32x2048 102 against 96).
#ifdef PB_X86
  const bool avx2_path = cf.kernel == kernel_avx2;
#else
  const bool avx2_path = false;
#endif
  const bool direct_shape =
      !ta && (n <= kDirectMaxN || (n <= 2 * kDirectMaxN && m >= kDirectMinRowsPerCol * n));
  const bool l1_depth =
      direct_shape && avx2_path && sliver_fits_l1(a, lda, static_cast<int>(mr), kKcL1);
  const bool direct_a =
      direct_shape && !(avx2_path && !l1_depth && ceil_div(n, nr) >= kPackedMinBSlivers);
  // A row block holds mc x kc floats at the full depth; at most kKc deep it holds the rows of kKc
  // (the AVX-512 path's blocks, and the AVX2 path's before its kc grew, whatever k).
  const int64_t kc1 = std::min(k, kc_max);
  const int64_t mc_rows = std::max<int64_t>(mr, cf.mc * kc_max / std::max(kc1, kKc) / mr * mr);
  GemmRowBlocks blocks = gemm_row_blocks(nt, m, n, mc_rows, mr, nr);
  // At least 32 B slivers (256 columns) per thread: the threads split the columns. Each packs its
  // own B slivers into its own buffer and all the rows of A, block by block, into its own: nothing
  // is shared, so there is no barrier, each B line is packed and read by one core, B is streamed
  // once in all (split by rows, each thread streamed all of it, and half of each packed panel came
  // from the other core), and each thread writes one contiguous run of C (column-major).
  // First (60bb90e) for one step of the sum only, with all the rows in one block: Zen 5 family 26,
  // 2 threads, ms rows -> columns (primbench run, medians of 20-50): AlexNet fc8's weight gradient
  // 1000x4096x16 (B^T) 1.10 -> 0.48 (oneDNN 0.50), fc7's 4096x4096x16 3.68 -> 2.32; against
  // onednn/matmul, the 13 weight gradients of alexnet_fc and fcn5 geomean 1.34-1.38 -> 1.68-1.69.
  // For every sum, with A in blocks (the same machine, primbench run, medians of 10, two rounds
  // alternating, ms rows -> columns): 512x512x512 0.95-0.98 -> 0.80-0.82, 1024x1024x1024 6.75 ->
  // 5.64-5.95, 2048x2048x2048 47.5-48.1 -> 44.0-45.6, 1760x7000x1760 133-135 -> 113, 2560x7000x2560
  // 266-275 -> 240-252, 512x24000x1536 (A^T) 123-124 -> 98-99, 384x6000x2048 32-36 -> 26,
  // 256x3136x1152 5.9-6.0 -> 5.1; DeepBench's inference server set (75 shapes, the same way):
  // geomean 1.07x, its M = 512 and 1024 shapes with N >= 1500 1.14-1.33x, nothing slower beyond
  // the noise of the shapes the rule does not take (N <= 4). On the AVX2 path (PRIMBENCH_SIMD=avx2)
  // even or faster: 256x3136x1152 13.3-14.7 -> 10.0-10.6, 1024x1024x1024 12.2-12.5 -> 11.5-11.7.
  // Fewer columns lost: each thread packs all of A for them (with 4 slivers per thread and one
  // step of the sum: 50176x64x27 (A^T) 0.68-0.71 -> 0.90-0.95, 12544x128x147 (A^T) 1.31-1.49 ->
  // 1.66-1.69, 3136x256x64 0.27 -> 0.28-0.29, 256x256x256 0.11 -> 0.12-0.16; with 16 per thread
  // for every sum, 5124x400x2048 27.1-27.5 -> 28.3-29.3).
  if (nt > 1 && !direct_a && ceil_div(n, nr) >= 32 * nt) blocks = {false, 1};
  const bool split_rows = blocks.split_rows;
  const int64_t n_ic = blocks.n_ic;
  // Blocks cut at vector rows only when each thread has one: with several per thread the
  // dynamic schedule evens them out, and more blocks ended in a partial sliver. Interleaved
  // (medians of 9), GFLOP/s every split cut at vectors -> only one block per thread:
  // 4096x64x4096 (A^T) 194 -> 208, 512x24000x2560 271 -> 279, 1024x48000x2560 (A^T) 291 -> 288.
  const int64_t mu = n_ic <= nt ? cf.mu : mr, units = ceil_div(m, mu);
  const int64_t mc = ceil_div(ceil_div(units, n_ic) * mu, mr) * mr;  // the largest block
  // Columns split: each thread packs A in n_cb blocks of at most the capacity of one row block
  // (mc x kc floats), so that more rows go in one block where the sum is short (all of AlexNet
  // fc8's 1000 rows at k = 16: each thread then writes C column after column).
  const int64_t n_cb = ceil_div(n_sl, std::max<int64_t>(1, cf.mc * kc_max / kc1 / mr));
  const int64_t mc_cb = ceil_div(n_sl, n_cb) * mr;
  auto block_rows = [&](int64_t blk, int64_t* ic, int64_t* mcv) {
    const int64_t u0 = blk * units / n_ic, u1 = (blk + 1) * units / n_ic;
    *ic = u0 * mu;
    *mcv = std::min(u1 * mu, m) - *ic;
  };

  const bool direct = direct_a && split_rows;  // the threads split the rows (direct_block)
  // With A's columns off 64-byte alignment (lda not a multiple of 16), every other column's
  // vectors straddle two cache lines, and a sliver of kc columns then spans a third more lines:
  // half the kc keeps it in L1 beside the B slivers. Zen 5 family 26, 2 threads, alternating
  // processes (medians of 10, two rounds), ms kc 256 -> 128: 1000x16x4096 (AlexNet fc8 forward)
  // 0.41-0.42 -> 0.38-0.41, 1000x64x4096 1.57-1.61 -> 1.50, 1000x128x4096 3.08-3.10 -> 2.87-2.89,
  // 1768x64x1760 1.18 -> 1.06, 2056x32x2048 0.83-0.85 -> 0.78; AVX2 path 1768x64x1760 2.34 ->
  // 2.05-2.09, 1000x64x4096 2.78-2.80 -> 2.63-2.66. With aligned columns the half lost
  // (7680x16x2560 2.04 -> 2.23, 1760x16x1760 0.27 -> 0.29). The AVX2 path sums 64 deep where
  // that keeps the sliver in L1 (l1_depth, above).
  // (The AVX2 path's longer blocks, kKc2, are not for A in place: its depths stay as they were.)
  const int64_t kc_dir = std::min(kc_max, kKc);
  const int64_t kc_direct = l1_depth   ? std::min(kc_dir, kKcL1)
                            : lda % 16 ? std::max<int64_t>(1, kc_dir / 2)
                                       : kc_dir;
  const int64_t n_jd = ceil_div(n, nr);  // B slivers of the direct path (n <= 128)
  // The AVX-512 kernel's partial tiles load A only as far as row mv, so there a partial last
  // sliver is read in place too (packing it each KC step took a tenth of 512x16x512). Alternating
  // runs (medians of 9), GFLOP/s packed -> in place: 512x16x512 238-258 -> 279-288, with B^T
  // 240-248 -> 288-293, 1000x16x1000 210-221 -> 234-236; full slivers unchanged.
#ifdef PB_X86
  const bool tail_in_place = cf.kernel == kernel_avx512;
#else
  const bool tail_in_place = false;
#endif
  // B read in place, not packed, when each thread has few A slivers (or the threads share
  // them): a packed B sliver then served only those few, and packing it (a transposing copy
  // through memory, a barrier per KC step) cost up to a fifth of the product. One sliver per
  // thread keeps the pack: every thread would stream all of B for one tile each. Interleaved
  // A/B runs (medians of 7), 2 threads, Xeon family 6 model 207, M x N x K, GFLOP/s packed ->
  // in place: 35x8457x1760 105 -> 132, 48x4096x4000 150 -> 198, 256x1024x8192 193 -> 210,
  // 512x24000x1536 178 -> 200, 256x1024x16384 (A^T) 206 -> 195 (the one loss); with 8 slivers
  // per thread it lost (768x2048x2048: 230 -> 224, with A^T B^T 210 -> 190), hence 6.
  // On the AVX2 path (24-row slivers) the packed B won from 4 slivers per thread: Zen 3, medians
  // of 5 alternating runs, 2 threads, GFLOP/s in place -> packed: 256x2048x1024 (cpu/blas
  // LSTM's dx, h256) 135 -> 148, 192x2048x1024 136 -> 162, 168x4096x1024 131 -> 144,
  // 256x1024x8192 132 -> 159; at 3 per thread in place stays ahead (128x4096x1024 117 against
  // 108, 35x8457x4096 94 against 59).
  const int64_t b_in_place_max = avx2_path ? kInPlaceBMaxSlivers2 : kInPlaceBMaxSlivers;
  const bool b_in_place = !direct_a && ceil_div(n_sl, nt) <= b_in_place_max &&
                          (!split_rows || nt == 1 || n_sl >= 2 * nt);
  // op(B)(p, j) at b[j * b_cs + p * b_ps].
  const int64_t b_cs = tb ? 1 : ldb, b_ps = tb ? ldb : 1;
  static thread_local std::vector<float> b_buf;
  float* bp =
      b_in_place || direct || !split_rows
          ? nullptr
          : scratch(b_buf, static_cast<size_t>(kc_max) * ceil_div(std::min(n, nc_max), nr) * nr);

  // A thread that cannot grow its A block still passes every barrier; once one failed, no
  // thread computes, and the error is rethrown after the region.
  RegionErrors errors;
#pragma omp parallel num_threads(nt) if (nt > 1)
  {
    static thread_local std::vector<float> a_buf;
    float* ap_own = nullptr;
    errors.run([&] { ap_own = scratch(a_buf, size_t(split_rows ? mc : mc_cb) * kc1, true); });
    static thread_local std::vector<float> b_own;
    float* bp_own = nullptr;
    if (direct) errors.run([&] { bp_own = scratch(b_own, size_t(kc_max) * n_jd * nr, true); });
    // Columns split: each thread packs its own B slivers into its own buffer, with no barrier.
    if (!split_rows && !b_in_place && !direct)
      errors.run([&] {
        const int64_t per = ceil_div(ceil_div(std::min(n, nc_max), nr), omp_get_num_threads());
        bp_own = scratch(b_own, size_t(kc_max) * per * nr, true);
      });
    // A in place, B (at most 128 columns) packed by each thread into its own buffer: nothing is
    // shared, so no barrier until the end. Each thread keeps its rows over the whole sum; one
    // block per thread is that thread's at every call (its rows stay in its caches when a
    // caller repeats a product), more are shared out dynamically. The B panel packed once and
    // shared had a barrier after each pack and each KC step, and the blocks moved between the
    // threads from call to call. Alternating runs of both builds (medians of 7, three runs
    // each), 2 threads, Xeon family 6 model 207, GFLOP/s shared -> own (with tile_avx512's
    // new prefetch): 512x16x512 177-181 -> 238-258, 1760x16x1760 197-202 -> 236-241,
    // 4096x64x4096 237-246 -> 265-278, 6144x32x2048 178-190 -> 201-212, 1024x16x500000 95-97
    // -> 125-126, 1760x64x1760 (B^T) 268-279 -> 281-301, 512x16x512 (B^T) 180-184 -> 240-245;
    // B read in place instead of packed lost on B^T and on most large A (1760x64x1760 B^T 272
    // against 242, 6144x32x2048 192 against 171). The AVX2 path is even (512x16x512 116 ->
    // 125, 2048x32x2048 124 -> 117, the rest within 3%).
    auto direct_block = [&](int64_t blk) {
      if (errors.failed()) return;
      int64_t ic, mcv;
      block_rows(blk, &ic, &mcv);
      const int64_t n_ir = ceil_div(mcv, mr);
      for (int64_t pc = 0; pc < k; pc += kc_direct) {
        const int64_t kc = std::min(kc_direct, k - pc);
        // A partial last sliver is packed (reading 48 rows there would pass the end of A) unless
        // the kernel reads it as far as its rows go.
        if (mcv % mr && !tail_in_place)
          pack_a(ta, a, lda, ic, mcv, pc, kc, mr, n_ir - 1, n_ir, ap_own);
        pack_b(tb, b, ldb, pc, kc, 0, n, nr, 0, n_jd, bp_own);
        for (int64_t ir = 0; ir < n_ir; ++ir) {
          const int mv = static_cast<int>(std::min<int64_t>(mr, mcv - ir * mr));
          const bool in_place = mv == mr || tail_in_place;
          const float* as = in_place ? a + ic + ir * mr + pc * lda : ap_own + ir * mr * kc;
          for (int64_t jr = 0; jr < n_jd; ++jr) {
            const int nv = static_cast<int>(std::min<int64_t>(nr, n - jr * nr));
            float* ct = c + jr * nr * ldc + ic + ir * mr;
            cf.kernel(kc, as, in_place ? lda : mr, bp_own + jr * nr * kc, ct, ldc, alpha,
                      pc == 0 ? beta : 1.0f, mv, nv);
            if (post && pc + kc >= k) post_tile(ic + ir * mr, jr * nr, mv, nv, ct, ldc);
          }
        }
      }
    };
    if (direct && n_ic == omp_get_num_threads()) {
      direct_block(omp_get_thread_num());
    } else if (direct) {
#pragma omp for schedule(dynamic, 1) nowait
      for (int64_t blk = 0; blk < n_ic; ++blk) direct_block(blk);
    } else {
      for (int64_t jc = 0; jc < n; jc += nc_max) {
        const int64_t nc = std::min(nc_max, n - jc), n_jr = ceil_div(nc, nr);
        for (int64_t pc = 0; pc < k; pc += kc_max) {
          const int64_t kc = std::min(kc_max, k - pc);
          const float beta_eff = pc == 0 ? beta : 1.0f;
          if (!b_in_place && split_rows) {
#pragma omp for schedule(static)
            for (int64_t s = 0; s < n_jr; ++s) pack_b(tb, b, ldb, pc, kc, jc, nc, nr, s, s + 1, bp);
          }
          // The tiles of one A block: every B sliver (jr) against every A sliver (ir).
          // B sliver jr at bq + (jr - jq) * nr * kc.
          auto tiles = [&](int64_t ic, int64_t mcv, const float* ap, int64_t jr0, int64_t jr1,
                           const float* bq, int64_t jq) {
            const int64_t n_ir = ceil_div(mcv, mr);
            for (int64_t jr = jr0; jr < jr1; ++jr) {
              const int nv = static_cast<int>(std::min<int64_t>(nr, nc - jr * nr));
              float* cj = c + (jc + jr * nr) * ldc + ic;
              const float* bs = b + (jc + jr * nr) * b_cs + pc * b_ps;
              for (int64_t ir = 0; ir < n_ir; ++ir) {
                const int mv = static_cast<int>(std::min<int64_t>(mr, mcv - ir * mr));
                if (b_in_place)
                  cf.in_place(kc, ap + ir * mr * kc, bs, b_cs, b_ps, cj + ir * mr, ldc, alpha,
                              beta_eff, mv, nv);
                else
                  cf.kernel(kc, ap + ir * mr * kc, mr, bq + (jr - jq) * nr * kc, cj + ir * mr, ldc,
                            alpha, beta_eff, mv, nv);
                if (post && pc + kc >= k)
                  post_tile(ic + ir * mr, jc + jr * nr, mv, nv, cj + ir * mr, ldc);
              }
            }
          };
          if (split_rows) {
#pragma omp for schedule(dynamic, 1)
            for (int64_t blk = 0; blk < n_ic; ++blk) {
              if (errors.failed()) continue;
              int64_t ic, mcv;
              block_rows(blk, &ic, &mcv);
              pack_a(ta, a, lda, ic, mcv, pc, kc, mr, 0, ceil_div(mcv, mr), ap_own);
              tiles(ic, mcv, ap_own, 0, n_jr, bp, 0);
            }
          } else {
            // Columns split: each thread packs A (block by block) and its B slivers into its own
            // buffers, and takes the same columns at every step of the sum, so nothing is shared
            // and there is no barrier. One shared A pack (each thread some slivers, then a
            // barrier) had every packed line written by one core and read by both, each call:
            // 128x128x128 spent 12 us packing 64 KB that takes 3 us alone. Interleaved in one
            // process (medians of 11-21), 2 threads, Xeon family 6 model 207, GFLOP/s shared ->
            // own: 128x128x128 128-134 -> 200-237, 64x64x512 83 -> 146, 128x128x128 (A^T B^T)
            // 117 -> 213, 160x700x2560 274 -> 291, 96x4096x1024 293 -> 299.
            const int t = omp_get_thread_num(), nth = omp_get_num_threads();
            const int64_t jr0 = t * n_jr / nth, jr1 = (t + 1) * n_jr / nth;
            if (errors.failed()) continue;
            if (!b_in_place)
              pack_b(tb, b, ldb, pc, kc, jc + jr0 * nr, nc - jr0 * nr, nr, 0, jr1 - jr0, bp_own);
            for (int64_t blk = 0; blk < n_cb; ++blk) {
              const int64_t s0 = blk * n_sl / n_cb, s1 = (blk + 1) * n_sl / n_cb;
              const int64_t ic = s0 * mr, mcv = std::min(s1 * mr, m) - ic;
              pack_a(ta, a, lda, ic, mcv, pc, kc, mr, 0, s1 - s0, ap_own);
              tiles(ic, mcv, ap_own, jr0, jr1, bp_own, jr0);
            }
          }
        }
      }
    }
  }
  errors.rethrow();
}

}  // namespace pb
