// The machine probe's dot-product passes (machine.cpp): the instructions the reduced data types
// run on (AMX's tile products where cpu/packed uses them), timed like the fp32 FMA loop, so that
// peak_pct divides by what this CPU does, not by what its ISA suggests (on an Emerald Rapids,
// vdpbf16ps runs at half the fp32 FMA rate).
#include "kernels/core/machine_dot.h"

#include "kernels/core/amx.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <ctime>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace pb::probe {

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// 16 independent accumulators per thread, as the FMA loop: enough to hide each instruction's
// latency on every port that runs it.
constexpr int kAcc = 16;

#if defined(__x86_64__)
PB_PROBE_LOOP __attribute__((target("avx512f,avx512bf16"))) float bf16_loop(long iters) {
  __m512 acc[kAcc];
  for (int j = 0; j < kAcc; ++j) acc[j] = _mm512_set1_ps(j * 1e-3f);
  const __m512i a = _mm512_set1_epi16(0x3F80), b = _mm512_set1_epi16(0x3380);  // 1, 6e-8
  for (long it = 0; it < iters; ++it)
#pragma GCC unroll 16
    for (int j = 0; j < kAcc; ++j) acc[j] = _mm512_dpbf16_ps(acc[j], (__m512bh)a, (__m512bh)b);
  return lanes_sum(acc, kAcc);
}
// The loop is assembly: GCC 12 copied all 16 accumulators out and back every iteration, one of
// them through the stack (32 register moves and a store-load pair per 16 vpdpbusd), which held
// it to half of the rate the GEMMs reach (Zen 5 family 26: the probe gave 1040 GOP/s on 2 cores,
// oneDNN's matmul ran 1024x32x512 at 1210-1290, and 16 chains in assembly run 7.3 G
// instructions a second on one core, 1870 GOP/s on two).
// The 16 accumulators are zmm16-31, started at a and folded into one vector at the end.
#define PB_DPBUSD(i) "vpdpbusd %[b], %[a], %%zmm" #i "\n\t"
#define PB_START(i) "vmovdqa64 %[a], %%zmm" #i "\n\t"
#define PB_FOLD(i, j) "vpaddd %%zmm" #j ", %%zmm" #i ", %%zmm" #i "\n\t"
#define PB_16(M) \
  M(16) M(17) M(18) M(19) M(20) M(21) M(22) M(23) M(24) M(25) M(26) M(27) M(28) M(29) M(30) M(31)
PB_PROBE_LOOP __attribute__((target("avx512f,avx512vnni"))) float u8s8_loop(long iters) {
  const __m512i a = _mm512_set1_epi8(1), b = _mm512_set1_epi8(2);
  __m512i sum;
  long n = iters > 0 ? iters : 1;
  asm volatile(PB_16(PB_START) "1:\n\t" PB_16(PB_DPBUSD) "dec %[n]\n\tjnz 1b\n\t"  //
               PB_FOLD(16, 17) PB_FOLD(18, 19) PB_FOLD(20, 21) PB_FOLD(22, 23) PB_FOLD(24, 25)
                   PB_FOLD(26, 27) PB_FOLD(28, 29) PB_FOLD(30, 31) PB_FOLD(16, 18) PB_FOLD(20, 22)
                       PB_FOLD(24, 26) PB_FOLD(28, 30) PB_FOLD(16, 20) PB_FOLD(24, 28)
                           PB_FOLD(16, 24) "vmovdqa64 %%zmm16, %[sum]\n\t"
               : [sum] "=v"(sum), [n] "+r"(n)
               : [a] "v"(a), [b] "v"(b)
               : "cc", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23",
                 "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31");
  const __m512 f = _mm512_castsi512_ps(sum);  // the bits as they are: the sum only keeps the
  return lanes_sum(&f, 1);                    // loop alive
}
#undef PB_16
#undef PB_FOLD
#undef PB_START
#undef PB_DPBUSD
// Without VNNI, cpu/packed's u8s8 runs on int16 pairs (packed_lowp_avx2.cpp): vpmaddwd (two
// int16 products summed into each int32 lane) and vpaddd into the accumulator, 12 of them. The
// loop is assembly: GCC kept the accumulators in memory (a store per instruction at best), which
// held it to one vpmaddwd a cycle, below what the GEMM itself reaches.
constexpr int kAccAvx2 = 12;
#define PB_MADD(i, t) \
  "vpmaddwd %[b], %[a], %%ymm" #t "\n\tvpaddd %%ymm" #t ", %[c" #i "], %[c" #i "]\n\t"
PB_PROBE_LOOP __attribute__((target("avx2"))) float u8s8_avx2_loop(long iters) {
  __m256i c[kAccAvx2];
  for (int j = 0; j < kAccAvx2; ++j) c[j] = _mm256_set1_epi32(j);
  const __m256i a = _mm256_set1_epi16(1), b = _mm256_set1_epi16(1);
  long n = iters > 0 ? iters : 1;
  asm volatile("1:\n\t" PB_MADD(0, 14) PB_MADD(1, 15) PB_MADD(2, 14) PB_MADD(3, 15) PB_MADD(4, 14)
                   PB_MADD(5, 15) PB_MADD(6, 14) PB_MADD(7, 15) PB_MADD(8, 14) PB_MADD(9, 15)
                       PB_MADD(10, 14) PB_MADD(11, 15) "dec %[n]\n\tjnz 1b\n\t"
               : [c0] "+x"(c[0]), [c1] "+x"(c[1]), [c2] "+x"(c[2]), [c3] "+x"(c[3]),
                 [c4] "+x"(c[4]), [c5] "+x"(c[5]), [c6] "+x"(c[6]), [c7] "+x"(c[7]),
                 [c8] "+x"(c[8]), [c9] "+x"(c[9]), [c10] "+x"(c[10]), [c11] "+x"(c[11]), [n] "+r"(n)
               : [a] "x"(a), [b] "x"(b)
               : "xmm14", "xmm15", "cc");
  int32_t sum = 0;  // the sum only keeps the loop alive
  for (int j = 0; j < kAccAvx2; ++j) sum += _mm256_extract_epi32(c[j], 0);
  return static_cast<float>(sum);
}
#undef PB_MADD
bool vnni() {
  return __builtin_cpu_supports("avx512vnni") != 0;
}

// Where AMX runs the type (kernels/core/amx.h), cpu/packed's GEMM runs on its tile dot products,
// so that is what the probe times: 4 accumulator tiles of 16 x 16, each tdpbf16ps (tdpbusd) a
// 16 x 16 x 32 (x 64) product, 2 source tiles per product, as the GEMM's 2 x 2 block.
bool amx_runs(Dot kind) {
  return amx::usable(kind == Dot::bf16 ? amx::Kind::bf16 : amx::Kind::int8);
}
PB_PROBE_LOOP __attribute__((target("amx-tile,amx-bf16,amx-int8"))) float amx_loop(Dot kind,
                                                                                   long iters) {
  alignas(64) uint8_t src[1024] = {};  // zeros: the sums stay finite
  alignas(64) float out[256];
  amx::tiles_on();
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, src, 64);
  _tile_loadd(5, src, 64);
  _tile_loadd(6, src, 64);
  _tile_loadd(7, src, 64);
  if (kind == Dot::bf16)
    for (long it = 0; it < iters; ++it) {
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
  else
    for (long it = 0; it < iters; ++it) {
      _tile_dpbusd(0, 4, 6);
      _tile_dpbusd(1, 4, 7);
      _tile_dpbusd(2, 5, 6);
      _tile_dpbusd(3, 5, 7);
    }
  _tile_stored(3, out, 64);
  amx::tiles_off();
  return out[0];
}
#endif

}  // namespace

bool has_dot(Dot kind) {
#if defined(__x86_64__)
  return kind == Dot::bf16 ? __builtin_cpu_supports("avx512bf16") != 0
                           : vnni() || __builtin_cpu_supports("avx2") != 0;
#else
  (void)kind;
  return false;
#endif
}

long dot_iters(Dot kind) {
#if defined(__x86_64__)
  // About 10 ms a pass at the AMX rates seen here (Xeon family 6 model 207: ~500 bf16, ~1000
  // u8s8 GOP/s per core in a loaded first try).
  if (amx_runs(kind)) return 80000;
#endif
  // About 10 ms a pass at this workplace's rates (bf16 ~85, u8s8 ~700 GOP/s per core).
  return kind == Dot::bf16 ? 1000000 : 3000000;
}

DotPass dot_pass(Dot kind, int nthreads, long iters) {
  if (!has_dot(kind)) return {};
#if defined(__x86_64__)
  const bool amx = amx_runs(kind);  // once, outside the region (PRIMBENCH_AMX may be an error)
#endif
  const double t0 = now();
  float sink = 0;
  double share = 1;
#pragma omp parallel num_threads(nthreads) reduction(+ : sink) reduction(min : share)
  {
    const double w0 = now(), c0 = thread_cpu_seconds();
#if defined(__x86_64__)
    sink += amx                 ? amx_loop(kind, iters)
            : kind == Dot::bf16 ? bf16_loop(iters)
            : vnni()            ? u8s8_loop(iters)
                                : u8s8_avx2_loop(iters);
#endif
    const double wall = now() - w0;
    share = wall > 0 ? std::min(1.0, (thread_cpu_seconds() - c0) / wall) : 1.0;
  }
  double t = now() - t0;
  if (sink == 12345.f) t += 1;  // keep the loops alive
  // Per instruction and lane: 2 bf16 products or 4 u8 x s8 products, 2 operations each; without
  // VNNI (u8s8_avx2_loop), 2 int16 products in each of 8 lanes.
  double per_instr = 16.0 * (kind == Dot::bf16 ? 4 : 8);
  int acc = kAcc;
#if defined(__x86_64__)
  if (kind == Dot::u8s8 && !vnni()) per_instr = 16.0 * 2, acc = kAccAvx2;
  // A tile product: 16 x 16 sums of 32 bf16 (64 u8 x s8) products, 4 a loop iteration.
  if (amx) per_instr = 2.0 * 16 * 16 * (kind == Dot::bf16 ? 32 : 64), acc = 4;
#endif
  return {per_instr * acc * iters * nthreads / t, share};
}

}  // namespace pb::probe
