// cpu/packed's reduced-precision GEMM on AMX tiles (kernels/core/amx.h), where the CPU has them:
// the loop nest, cache blocking and threading of the AVX-512 driver (packed_lowp.cpp), with the
// tile dot products as its micro-kernel. tdpbf16ps (tdpbusd) multiplies a tile X of 16 rows x
// 16 groups (a group: G = 2 bf16 or 4 u8 consecutive in the sum) by a tile Y of 16 groups x 16
// columns, each of Y's 64-byte rows holding one group for 16 columns, into a 16 x 16 fp32
// (int32) tile. C is column-major, so the product is taken transposed: X = op(B)^T (its rows are
// columns j of C, 16 groups of the sum each) and Y = op(A) (a row per group, 16 rows i of C
// across), and the accumulator's row j is column j of C over 16 rows: one vector of the AVX-512
// epilogue (store_column), which scales, adds beta * C, rounds to the output type and stores.
//
// Both operands are packed into whole 1 KB tiles, zero-padded to 16 rows or columns and to 16
// groups of the sum (a tile past the edge computes zeros; none is loaded under another tile
// configuration): op(A) per 16 rows as the tiles of the sum in order, op(B) per 16 columns
// likewise. The micro-kernel is 2 x 2 tiles (32 rows x 32 columns of C, the 8 tile registers:
// 4 accumulators, 2 of A, 2 of B), 1 x 2, 2 x 1 or 1 x 1 at the edges. u8s8's source zero point
// is taken off as in the AVX-512 kernels: z times the row sums of A's packed tiles per KC block.
// With op(A) = A^T and at most 64 columns, A is not packed at all: its rows already hold the sum
// contiguous, so they are the row operand, loaded in place, and op(B) takes the VNNI side
// (amx_a_in_place; u8s8 then multiplies s8 by u8 with tdpbsud). Likewise op(B) = B's columns are
// loaded in place where C has at most 64 rows.
#include "kernels/gemm/cpu/packed_lowp.h"

#if defined(__x86_64__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <omp.h>

#include <algorithm>
#include <cstring>

#include "kernels/core/amx.h"
#include "kernels/core/machine.h"
#include "kernels/core/threads.h"
#include "kernels/gemm/cpu/packed_lowp_kernels.h"
#include "kernels/gemm/cpu/packed_sgemm.h"

namespace pb::lowp {

namespace {

constexpr int kT = 16;              // a tile's rows and columns of C
constexpr int kTileBytes = 1024;    // 16 rows of 64 bytes
constexpr int64_t kBlock = 2 * kT;  // the micro-kernel's rows and columns of C

// The sum's depth per KC block: a tile row of X is 64 bytes of the sum, so these are 32 tiles of
// the sum, 32 KB per 16 rows or columns.
template <class Tr>
constexpr int64_t kc_amx() {
  return Tr::G == 2 ? 1024 : 2048;
}

// op(A) rows [r0, r0 + mv) x sum [p0, p0 + kc) into ceil(mv / 16) row tiles of nkb tiles each
// at dst (row tile t at dst + t * nkb tiles), in order of the sum: tile row g (a group) holds 16
// rows of G elements, (g * 16 + r) * G + q.
// (Also op(B)'s columns as the VNNI operand where A is read in place: B as A^T, tb as !ta.)
template <class T, int G>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi"))) void pack_a_tiles(
    bool ta, const T* a, int64_t lda, int64_t r0, int64_t mv, int64_t p0, int64_t kc, int64_t nkb,
    T* dst) {
  constexpr int64_t tile = kTileBytes / sizeof(T);
  const int64_t groups = nkb * kT, n_rt = ceil_div(mv, kT);
  if (!ta) {
    // Column p of A holds the rows contiguous: G columns interleaved per group, every row tile
    // of a group before the next group, so that each column is read down in order (by row tile
    // first, a 16-row piece of every column of the block in turn: at lda = 4096 bytes each
    // column on its own page, 4096x2x4096 u8s8 packed at 5 GB/s).
    // Each column is read a line at a time (64 rows of u8, 32 of bf16), its G columns' lines
    // interleaved by in-lane unpacks and the 128-bit lanes put in row order by shuffles: 4 (2)
    // tile rows per step, where 16-row loads and a byte permute each took half of the time of
    // 1760x32x1760 u8s8 in perf.
    constexpr int64_t rows_per = 64 / sizeof(T), tiles_per = rows_per / kT;
    for (int64_t g = 0; g < groups; ++g) {
      const T* col[G];
      for (int q = 0; q < G; ++q) {
        const int64_t p = g * G + q;
        col[q] = p < kc ? a + (p0 + p) * lda + r0 : nullptr;
      }
      for (int64_t c = 0; c < mv; c += rows_per) {
        const int64_t bytes = std::min(rows_per, mv - c) * static_cast<int64_t>(sizeof(T));
        const __mmask64 k = bytes >= 64 ? ~__mmask64(0) : (__mmask64(1) << bytes) - 1;
        __m512i x[G];
        for (int q = 0; q < G; ++q)
          x[q] = col[q] ? _mm512_maskz_loadu_epi8(k, col[q] + c) : _mm512_setzero_si512();
        __m512i out[tiles_per];
        if constexpr (G == 4) {
          // Per lane L: r_s holds rows 16 L + 4 s .. + 3, their 4 bytes each.
          const __m512i lo01 = _mm512_unpacklo_epi8(x[0], x[1]),
                        hi01 = _mm512_unpackhi_epi8(x[0], x[1]);
          const __m512i lo23 = _mm512_unpacklo_epi8(x[2], x[3]),
                        hi23 = _mm512_unpackhi_epi8(x[2], x[3]);
          const __m512i r0 = _mm512_unpacklo_epi16(lo01, lo23),
                        r1 = _mm512_unpackhi_epi16(lo01, lo23);
          const __m512i r2 = _mm512_unpacklo_epi16(hi01, hi23),
                        r3 = _mm512_unpackhi_epi16(hi01, hi23);
          const __m512i u0 = _mm512_shuffle_i64x2(r0, r1, 0x44),
                        u1 = _mm512_shuffle_i64x2(r0, r1, 0xEE);
          const __m512i u2 = _mm512_shuffle_i64x2(r2, r3, 0x44),
                        u3 = _mm512_shuffle_i64x2(r2, r3, 0xEE);
          out[0] = _mm512_shuffle_i64x2(u0, u2, 0x88);
          out[1] = _mm512_shuffle_i64x2(u0, u2, 0xDD);
          out[2] = _mm512_shuffle_i64x2(u1, u3, 0x88);
          out[3] = _mm512_shuffle_i64x2(u1, u3, 0xDD);
        } else {
          // Per lane L: r0 holds rows 8 L .. + 3, r1 rows 8 L + 4 .. + 7, their pairs.
          const __m512i r0 = _mm512_unpacklo_epi16(x[0], x[1]),
                        r1 = _mm512_unpackhi_epi16(x[0], x[1]);
          out[0] = _mm512_shuffle_i64x2(_mm512_shuffle_i64x2(r0, r1, 0x44),
                                        _mm512_shuffle_i64x2(r0, r1, 0x44), 0xD8);
          out[1] = _mm512_shuffle_i64x2(_mm512_shuffle_i64x2(r0, r1, 0xEE),
                                        _mm512_shuffle_i64x2(r0, r1, 0xEE), 0xD8);
        }
        for (int64_t tt = 0; tt < tiles_per && c / kT + tt < n_rt; ++tt)
          _mm512_storeu_si512(dst + (c / kT + tt) * nkb * tile + g * kT * G, out[tt]);
      }
    }
    return;
  }
  // Row i of op(A) is column i of A, the sum contiguous: a group is one word.
  for (int64_t t = 0; t < n_rt; ++t)
    transpose_groups<T, G>(a, lda, r0 + t * kT,
                           static_cast<int>(std::min<int64_t>(kT, mv - t * kT)), p0, kc, groups, kT,
                           dst + t * nkb * tile);
}

// One row operand tile packed: rows r < rv of src (ld elements apart), `valid` elements each,
// zero past them; 64 bytes a row.
template <class T>
__attribute__((target("avx512f,avx512bw"))) void pack_row_tile(const T* src, int64_t ld, int rv,
                                                               int64_t valid, T* dst) {
  const int64_t bytes = std::clamp<int64_t>(valid * static_cast<int64_t>(sizeof(T)), 0, 64);
  const __mmask64 k = bytes >= 64 ? ~__mmask64(0) : (__mmask64(1) << bytes) - 1;
  for (int r = 0; r < kT; ++r)
    _mm512_storeu_si512(dst + r * (64 / sizeof(T)), r < rv && bytes > 0
                                                        ? _mm512_maskz_loadu_epi8(k, src + r * ld)
                                                        : _mm512_setzero_si512());
}

// op(B) sum [p0, p0 + kc) x columns [c0, c0 + nv) (nv <= 16) into nkb tiles at dst: tile row j
// holds column j's 16 groups of the sum, 64 bytes.
template <class Tr>
void pack_b_tiles(bool tb, const typename Tr::TB* b, int64_t ldb, int64_t p0, int64_t kc,
                  int64_t c0, int nv, int64_t nkb, typename Tr::TB* dst) {
  using T = typename Tr::TB;
  constexpr int64_t per_row = 64 / sizeof(T), tile = kTileBytes / sizeof(T);
  if (!tb) {  // column j of B: the sum contiguous, a row operand tile as it stands
    for (int64_t kb = 0; kb < nkb; ++kb)
      pack_row_tile(b + c0 * ldb + p0 + kb * per_row, ldb, nv, kc - kb * per_row, dst + kb * tile);
    return;
  }
  // Row p of op(B) contiguous over the columns: packed as A's VNNI tiles are (groups x
  // columns), each tile then word-transposed into columns x groups.
  pack_a_tiles<T, Tr::G>(false, b, ldb, c0, nv, p0, kc, nkb, dst);
  alignas(64) T tmp[tile];
  for (int64_t kb = 0; kb < nkb; ++kb) {
    std::memcpy(tmp, dst + kb * tile, kTileBytes);
    transpose_words(tmp, kT, kT, kT, dst + kb * tile, kT);
  }
}

// The row operand's tiles of one block row: the tile of the sum kb at p + kb * step, its rows
// `stride` bytes apart; `tail`, where the sum's last tile is partial and the tiles are read in
// place, that tile packed (zero-padded, rows 64 bytes apart). Packed tiles: step a tile, stride 64.
template <class T>
struct RowTiles {
  const T* p = nullptr;
  int64_t step = 0, stride = 0;
  const T* tail = nullptr;
};

// The micro-kernel: NX x NY accumulator tiles over nkb tiles of the sum, X (the row operand: 16
// rows x 16 groups) from x[0..NX), Y (the VNNI operand: 16 groups x 16 columns) packed at y and
// y + y_next. Accumulator (ix, iy) is tile register ix * 2 + iy (the sources in 4-5 and 6-7),
// stored to out + (ix * 2 + iy) * 256: X's rows by Y's columns, 32-bit. bf16 pairs (tdpbf16ps);
// u8s8 multiplies u8 X by s8 Y (tdpbusd), or with S8_X s8 X by u8 Y (tdpbsud).
template <class Tr, bool S8_X, int NX, int NY, class TX, class TY>
__attribute__((target("amx-tile,amx-bf16,amx-int8"))) void tiles(int64_t nkb, const RowTiles<TX>* x,
                                                                 const TY* y, int64_t y_next,
                                                                 int32_t* out) {
  constexpr int64_t ty = kTileBytes / sizeof(TY);
#define PB_AMX_DP(d, a, b)     \
  do {                         \
    if constexpr (Tr::G == 2)  \
      _tile_dpbf16ps(d, a, b); \
    else if constexpr (S8_X)   \
      _tile_dpbsud(d, a, b);   \
    else                       \
      _tile_dpbusd(d, a, b);   \
  } while (0)
  _tile_zero(0);
  if constexpr (NY == 2) _tile_zero(1);
  if constexpr (NX == 2) _tile_zero(2);
  if constexpr (NX == 2 && NY == 2) _tile_zero(3);
  for (int64_t kb = 0; kb < nkb; ++kb) {
    const bool tail = kb == nkb - 1;
    const bool t0 = tail && x[0].tail;
    _tile_loadd(4, t0 ? x[0].tail : x[0].p + kb * x[0].step, t0 ? 64 : x[0].stride);
    _tile_loadd(6, y + kb * ty, 64);
    PB_AMX_DP(0, 4, 6);
    if constexpr (NY == 2) {
      _tile_loadd(7, y + y_next + kb * ty, 64);
      PB_AMX_DP(1, 4, 7);
    }
    if constexpr (NX == 2) {
      const bool t1 = tail && x[1].tail;
      _tile_loadd(5, t1 ? x[1].tail : x[1].p + kb * x[1].step, t1 ? 64 : x[1].stride);
      PB_AMX_DP(2, 5, 6);
      if constexpr (NY == 2) PB_AMX_DP(3, 5, 7);
    }
  }
#undef PB_AMX_DP
  _tile_stored(0, out, 64);
  if constexpr (NY == 2) _tile_stored(1, out + 256, 64);
  if constexpr (NX == 2) _tile_stored(2, out + 512, 64);
  if constexpr (NX == 2 && NY == 2) _tile_stored(3, out + 768, 64);
}

// tiles() for 1-2 x 1-2 accumulators, by (NX - 1, NY - 1).
template <class Tr, bool S8_X, class TX, class TY>
void tiles_for(int nx, int ny, int64_t nkb, const RowTiles<TX>* x, const TY* y, int64_t y_next,
               int32_t* out) {
  using Fn = void (*)(int64_t, const RowTiles<TX>*, const TY*, int64_t, int32_t*);
  static constexpr Fn fns[2][2] = {{tiles<Tr, S8_X, 1, 1, TX, TY>, tiles<Tr, S8_X, 1, 2, TX, TY>},
                                   {tiles<Tr, S8_X, 2, 1, TX, TY>, tiles<Tr, S8_X, 2, 2, TX, TY>}};
  fns[nx - 1][ny - 1](nkb, x, y, y_next, out);
}

// The epilogue of one accumulator tile: nv columns of C (its rows j) of mv rows each.
template <class Tr>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512bf16"))) void store_tile(
    const int32_t* acc, int mv, int nv, const int32_t* comp, const Epilogue& e) {
  const __mmask16 k = rows_mask(mv);
  const __m512i cv = comp ? _mm512_maskz_loadu_epi32(k, comp) : _mm512_setzero_si512();
  for (int j = 0; j < nv; ++j) {
    const __m512i s = _mm512_load_si512(acc + j * kT);
    __m512 x;
    if constexpr (Tr::G == 4)
      x = _mm512_cvtepi32_ps(_mm512_sub_epi32(s, cv));
    else
      x = _mm512_castsi512_ps(s);
    store_column<1>(&x, j, mv, e);
  }
}

// The row operand's tiles of the 16 rows at src (ld elements apart, rv of them there, kc of the
// sum each) read in place: a partial tile of rows (rv < 16) is packed whole into `whole` (nkb
// tiles), else the tiles are loaded where they are, a partial last tile of the sum packed into
// `tail`.
template <class T>
RowTiles<T> in_place_rows(const T* src, int64_t ld, int rv, int64_t kc, int64_t nkb, T* whole,
                          T* tail) {
  constexpr int64_t per_row = 64 / sizeof(T), tile = kTileBytes / sizeof(T);
  if (rv < kT) {
    for (int64_t kb = 0; kb < nkb; ++kb)
      pack_row_tile(src + kb * per_row, ld, rv, kc - kb * per_row, whole + kb * tile);
    return {whole, tile, 64, nullptr};
  }
  RowTiles<T> x{src, per_row, ld * static_cast<int64_t>(sizeof(T)), nullptr};
  if (kc % per_row != 0) {
    pack_row_tile(src + (nkb - 1) * per_row, ld, kT, kc - (nkb - 1) * per_row, tail);
    x.tail = tail;
  }
  return x;
}

// comp[r] = z * (the sum of op(A)'s row r over `kc` elements at a, rows lda apart), r < rv (u8s8).
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void row_sums_in_place(const int8_t* a,
                                                                              int64_t lda, int rv,
                                                                              int64_t kc, int32_t z,
                                                                              int32_t* comp) {
  const __m512i ones = _mm512_set1_epi8(1);
  for (int r = 0; r < kT; ++r) {
    __m512i s = _mm512_setzero_si512();
    if (r < rv) {
      const int8_t* row = a + r * lda;
      int64_t p = 0;
      for (; p + 64 <= kc; p += 64) s = dot(s, ones, _mm512_loadu_si512(row + p));
      if (p < kc)
        s = dot(s, ones, _mm512_maskz_loadu_epi8((__mmask64(1) << (kc - p)) - 1, row + p));
    }
    comp[r] = z * _mm512_reduce_add_epi32(s);
  }
}

// What both drivers take from the GEMM and the machine: the KC block and its tiles of the sum,
// the bytes of a packed row (or column) of one, the caches, and whether a typed output waits in
// an fp32 panel across KC blocks.
template <class Tr>
struct Blocks {
  explicit Blocks(const LowpGemm& g)
      : kc_max(kc_amx<Tr>()),
        nkb_max(ceil_div(ceil_div(kc_max, Tr::G), kT)),
        row_bytes(nkb_max * 64),
        l2(static_cast<int64_t>(cache_bytes(2, 1 << 20))),
        b_panel(gemm_b_panel_bytes()),
        panel(g.dt.out != DataType::out_f32 && g.k > kc_max) {}
  int64_t kc_max, nkb_max, row_bytes, l2, b_panel;
  bool panel;
};

// The products with op(A) = A^T: row i of op(A) is column i of A with the sum contiguous, already
// the row operand's layout, so A's tiles are loaded in place (lda apart) and op(B) takes the VNNI
// side, packed as A would be (pack_a_tiles with B as A^T). op(B) packed per KC block into column
// tiles (shared), each thread a range of 32-row blocks (or, with few rows, of 32-column blocks),
// the columns in panels of half of L2 so that the packed op(B) stays there while A's rows stream.
template <class Tr>
void amx_a_in_place(const LowpGemm& g, const float* scale, float beta_c, int nt) {
  using TA = typename Tr::TA;
  using TB = typename Tr::TB;
  constexpr int G = Tr::G;
  constexpr int64_t tile_a = kTileBytes / sizeof(TA), tile_b = kTileBytes / sizeof(TB);
  const bool quant = G == 4;
  const TA* a = static_cast<const TA*>(g.a);
  const TB* b = static_cast<const TB*>(g.b);
  const int64_t m = g.m, n = g.n, k = g.k;
  const Blocks<Tr> bl(g);
  const int64_t kc_max = bl.kc_max, nkb_max = bl.nkb_max;
  const int64_t nc_max = std::max<int64_t>(kBlock, bl.l2 / 2 / bl.row_bytes / kBlock * kBlock);
  const int64_t n_rb = ceil_div(m, kBlock), n_rt_all = ceil_div(m, kT);
  const GemmRowBlocks blocks = gemm_row_blocks(nt, m, n, m, kBlock, kBlock);
  const bool panel = bl.panel;

  static thread_local std::vector<uint8_t> b_buf, panel_buf;
  TB* bp = scratch<TB>(b_buf, ceil_div(std::min(n, nc_max), kT) * nkb_max * tile_b);
  float* pn = panel ? scratch<float>(panel_buf, m * std::min(n, nc_max)) : nullptr;

  RegionErrors errors;
#pragma omp parallel num_threads(nt) if (nt > 1)
  {
    // Per thread: the packed edge tiles of a row block (the last row tile's nkb tiles, each row
    // tile's partial last tile of the sum) and its row sums.
    static thread_local std::vector<uint8_t> edge_buf;
    TA* edge = nullptr;
    errors.run([&] { edge = scratch<TA>(edge_buf, (nkb_max + 2) * tile_a, true); });
    alignas(64) int32_t acc[4 * kT * kT], tr[kT * kT], comp[kBlock];
    amx::tiles_on();
    for (int64_t jc = 0; jc < n; jc += nc_max) {
      const int64_t nc = std::min(nc_max, n - jc), n_ct = ceil_div(nc, kT);
      for (int64_t pc = 0; pc < k; pc += kc_max) {
        const int64_t kc = std::min(kc_max, k - pc), nkb = ceil_div(ceil_div(kc, G), kT);
        const bool last = pc + kc_max >= k;
#pragma omp for schedule(static)
        for (int64_t ct = 0; ct < n_ct; ++ct) {
          const int nv = static_cast<int>(std::min<int64_t>(kT, nc - ct * kT));
          pack_a_tiles<TB, G>(!g.tb, b, g.ldb, jc + ct * kT, nv, pc, kc, nkb,
                              bp + ct * nkb * tile_b);
        }
        // Rows [row0, row0 + 32) (fewer at the end) against column tiles [ct0, ct1).
        auto run = [&](int64_t rb, int64_t ct0, int64_t ct1) {
          const int64_t rt0 = rb * 2;
          const int rm = rt0 + 1 < n_rt_all ? 2 : 1;
          RowTiles<TA> x[2];
          for (int r = 0; r < rm; ++r) {
            const int64_t row = (rt0 + r) * kT;
            const int rv = static_cast<int>(std::min<int64_t>(kT, m - row));
            const TA* src = a + row * g.lda + pc;
            x[r] = in_place_rows(src, g.lda, rv, kc, nkb, edge + 2 * tile_a, edge + r * tile_a);
            if constexpr (G == 4)
              if (g.b_zero != 0)
                row_sums_in_place(reinterpret_cast<const int8_t*>(src), g.lda, rv, kc, g.b_zero,
                                  comp + r * kT);
          }
          for (int64_t ct = ct0; ct < ct1; ct += 2) {
            const int cn = ct + 1 < ct1 ? 2 : 1;
            tiles_for<Tr, true>(rm, cn, nkb, x, bp + ct * nkb * tile_b, nkb * tile_b, acc);
            for (int c = 0; c < cn; ++c)
              for (int r = 0; r < rm; ++r) {
                const int64_t row = (rt0 + r) * kT, col = jc + (ct + c) * kT;
                const int mv = static_cast<int>(std::min<int64_t>(kT, m - row));
                const int nv = static_cast<int>(std::min<int64_t>(kT, jc + nc - col));
                // rows i x columns j -> the epilogue's columns j x rows i
                transpose_words(acc + (r * 2 + c) * kT * kT, kT, kT, kT, tr, kT);
                const Epilogue e =
                    tile_epilogue(g, scale, beta_c, pn, panel, pc, last, row, col, jc);
                store_tile<Tr>(tr, mv, nv, quant && g.b_zero != 0 ? comp + r * kT : nullptr, e);
              }
          }
        };
        if (blocks.split_rows) {
#pragma omp for schedule(static)
          for (int64_t rb = 0; rb < n_rb; ++rb)
            if (!errors.failed()) run(rb, 0, n_ct);
        } else {
          const int64_t n_cp = ceil_div(n_ct, 2);
#pragma omp for schedule(static)
          for (int64_t cp = 0; cp < n_cp; ++cp)
            if (!errors.failed())
              for (int64_t rb = 0; rb < n_rb; ++rb) run(rb, 2 * cp, std::min(2 * cp + 2, n_ct));
        }
      }
    }
    amx::tiles_off();
  }
  errors.rethrow();
}

}  // namespace

template <class Tr>
void amx(const LowpGemm& g, const float* scale, float beta_c, int nt) {
  // op(A) = A^T with few columns: A's tiles read in place, op(B) packed. Xeon family 6 model 207,
  // 2 threads, alternating calls in one process (medians of 9), ms packed A -> in place: bf16
  // 4096x16x4096 3.13 -> 1.45, 1760x16x1760 0.38 -> 0.17, 1760x64x1760 0.87 -> 0.76, 4096x64x4096
  // 4.00 -> 4.10; u8s8 1760x32x1760 0.41 -> 0.27, 6144x16x2048 1.19 -> 0.72, 4096x64x4096 2.58
  // -> 2.47, 1760x96x1760 even; from 128 columns packing won (u8s8 2560x128x2560 1.60 -> 1.77,
  // 7680x128x2560 4.95 -> 6.65; bf16 1024x700x512 1.28 -> 1.62): each panel of columns reads
  // all of A again.
  if (g.ta && g.n <= 64) return amx_a_in_place<Tr>(g, scale, beta_c, nt);
  using TA = typename Tr::TA;
  using TB = typename Tr::TB;
  constexpr int G = Tr::G;
  constexpr int64_t tile_a = kTileBytes / sizeof(TA), tile_b = kTileBytes / sizeof(TB);
  const bool quant = G == 4;
  const TA* a = static_cast<const TA*>(g.a);
  const TB* b = static_cast<const TB*>(g.b);
  const int64_t m = g.m, n = g.n, k = g.k;
  const Blocks<Tr> bl(g);
  const int64_t kc_max = bl.kc_max, nkb_max = bl.nkb_max;
  // The A block takes half of L2, the B panel gemm_b_panel_bytes, as in the AVX-512 driver.
  const int64_t mc_max = std::max<int64_t>(kBlock, bl.l2 / 2 / bl.row_bytes / kBlock * kBlock);
  const int64_t nc_max = std::max<int64_t>(kBlock, bl.b_panel / bl.row_bytes / kBlock * kBlock);
  const int64_t n_rb = ceil_div(m, kBlock);  // 32-row blocks
  const GemmRowBlocks blocks = gemm_row_blocks(nt, m, n, mc_max, kBlock, kBlock);
  const int64_t n_ic = blocks.n_ic;
  const int64_t mc = ceil_div(n_rb, n_ic) * kBlock;
  const bool panel = bl.panel;
  // op(B) = B with at most 64 rows of C: B's columns are the row operand's layout already, and
  // so few row tiles reuse each packed column tile too little to pay for its packing, so they
  // are loaded in place (in_place_rows). Xeon family 6 model 207, 2 threads, alternating calls
  // in one process (medians of 9), ms packed -> in place: bf16 35x8457x1760 6.59 -> 3.82,
  // 35x1500x2560 1.41 -> 1.05; u8s8 35x1500x2560 0.48 -> 0.35, 64x3000x2048 0.88 -> 0.72; even
  // at 128-256 rows (1.03-1.04), behind at 512 (bf16 512x1500x2048 5.06 -> 6.16).
  const bool b_in_place = !g.tb && m <= 64;

  static thread_local std::vector<uint8_t> b_buf, panel_buf;
  const int64_t n_ct_max = ceil_div(std::min(n, nc_max), kT);
  TB* bp = b_in_place ? nullptr : scratch<TB>(b_buf, n_ct_max * nkb_max * tile_b);
  float* pn = panel ? scratch<float>(panel_buf, m * std::min(n, nc_max)) : nullptr;

  RegionErrors errors;
#pragma omp parallel num_threads(nt) if (nt > 1)
  {
    static thread_local std::vector<uint8_t> a_buf, comp_buf, b_edge_buf;
    TA* ap = nullptr;
    int32_t* comp = nullptr;
    TB* b_edge = nullptr;  // B in place: its edge tiles (in_place_rows)
    errors.run([&] {
      if (b_in_place) b_edge = scratch<TB>(b_edge_buf, (nkb_max + 2) * tile_b, true);
      ap = scratch<TA>(a_buf, ceil_div(blocks.split_rows ? mc : m, kT) * nkb_max * tile_a, true);
      if (quant)
        comp = scratch<int32_t>(comp_buf, ceil_div(blocks.split_rows ? mc : m, kT) * kT, true);
    });
    alignas(64) int32_t acc[4 * kT * kT];
    amx::tiles_on();
    for (int64_t jc = 0; jc < n; jc += nc_max) {
      const int64_t nc = std::min(nc_max, n - jc), n_ct = ceil_div(nc, kT);
      for (int64_t pc = 0; pc < k; pc += kc_max) {
        const int64_t kc = std::min(kc_max, k - pc), nkb = ceil_div(ceil_div(kc, G), kT);
        const bool last = pc + kc_max >= k;
        if (!b_in_place) {
#pragma omp for schedule(static)
          for (int64_t ct = 0; ct < n_ct; ++ct) {
            const int nv = static_cast<int>(std::min<int64_t>(kT, nc - ct * kT));
            pack_b_tiles<Tr>(g.tb, b, g.ldb, pc, kc, jc + ct * kT, nv, nkb, bp + ct * nkb * tile_b);
          }
        }
        // The rows [ic, ic + mcv) of A into this thread's tiles (and row sums).
        auto pack_rows = [&](int64_t ic, int64_t mcv) {
          pack_a_tiles<TA, G>(g.ta, a, g.lda, ic, mcv, pc, kc, nkb, ap);
          if constexpr (G == 4)
            if (g.b_zero != 0)
              for (int64_t rt = 0; rt < ceil_div(mcv, kT); ++rt)
                row_sums<1>(reinterpret_cast<const int8_t*>(ap + rt * nkb * tile_a), nkb * kT, 64,
                            g.b_zero, comp + rt * kT);
        };
        // Column tiles [ct0, ct1) against every row tile of the rows [ic, ic + mcv), in blocks
        // of 2 x 2 tiles: a pair of B's column tiles stays while A's row tiles pass.
        auto run = [&](int64_t ic, int64_t mcv, int64_t ct0, int64_t ct1) {
          const int64_t n_rt = ceil_div(mcv, kT);
          for (int64_t ct = ct0; ct < ct1; ct += 2) {
            const int cn = ct + 1 < ct1 ? 2 : 1;
            // X: B's column tiles (C's columns as rows), Y: A's row tiles.
            RowTiles<TB> x[2];
            for (int c = 0; c < cn; ++c) {
              const int64_t col = jc + (ct + c) * kT;
              x[c] = b_in_place ? in_place_rows(b + col * g.ldb + pc, g.ldb,
                                                static_cast<int>(std::min<int64_t>(kT, n - col)),
                                                kc, nkb, b_edge + 2 * tile_b, b_edge + c * tile_b)
                                : RowTiles<TB>{bp + (ct + c) * nkb * tile_b, tile_b, 64, nullptr};
            }
            for (int64_t rt = 0; rt < n_rt; rt += 2) {
              const int rm = rt + 1 < n_rt ? 2 : 1;
              tiles_for<Tr, false>(cn, rm, nkb, x, ap + rt * nkb * tile_a, nkb * tile_a, acc);
              for (int c = 0; c < cn; ++c)
                for (int r = 0; r < rm; ++r) {
                  const int64_t row = ic + (rt + r) * kT, col = jc + (ct + c) * kT;
                  const int mv = static_cast<int>(std::min<int64_t>(kT, ic + mcv - row));
                  const int nv = static_cast<int>(std::min<int64_t>(kT, jc + nc - col));
                  const Epilogue e =
                      tile_epilogue(g, scale, beta_c, pn, panel, pc, last, row, col, jc);
                  const int32_t* cm = quant && g.b_zero != 0 ? comp + (rt + r) * kT : nullptr;
                  store_tile<Tr>(acc + (c * 2 + r) * kT * kT, mv, nv, cm, e);
                }
            }
          }
        };
        if (blocks.split_rows) {
#pragma omp for schedule(dynamic, 1)
          for (int64_t blk = 0; blk < n_ic; ++blk) {
            if (errors.failed()) continue;
            const int64_t s0 = blk * n_rb / n_ic, s1 = (blk + 1) * n_rb / n_ic;
            const int64_t ic = s0 * kBlock, mcv = std::min(s1 * kBlock, m) - ic;
            pack_rows(ic, mcv);
            run(ic, mcv, 0, n_ct);
          }
        } else {
          // Columns split: each thread packs all the rows (m <= mc here) into its own tiles.
          if (!errors.failed()) pack_rows(0, m);
          const int64_t n_cp = ceil_div(n_ct, 2);
#pragma omp for schedule(static)
          for (int64_t cp = 0; cp < n_cp; ++cp)
            if (!errors.failed()) run(0, m, 2 * cp, std::min(2 * cp + 2, n_ct));
        }
      }
    }
    amx::tiles_off();
  }
  errors.rethrow();
}

template void amx<Bf16>(const LowpGemm&, const float*, float, int);
template void amx<U8s8>(const LowpGemm&, const float*, float, int);

}  // namespace pb::lowp

#pragma GCC diagnostic pop
#endif
