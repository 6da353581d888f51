// The machine probe's dot-product passes (machine.cpp): the instructions the reduced data types
// run on, timed like the fp32 FMA loop, so that peak_pct divides by what this CPU does, not by
// what its ISA suggests (on an Emerald Rapids, vdpbf16ps runs at half the fp32 FMA rate).
#include "kernels/core/machine_dot.h"

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
PB_PROBE_LOOP __attribute__((target("avx512f,avx512vnni"))) float u8s8_loop(long iters) {
  __m512i acc[kAcc];
  for (int j = 0; j < kAcc; ++j) acc[j] = _mm512_set1_epi32(j);
  const __m512i a = _mm512_set1_epi8(1), b = _mm512_set1_epi8(1);
  for (long it = 0; it < iters; ++it)
#pragma GCC unroll 16
    for (int j = 0; j < kAcc; ++j) acc[j] = _mm512_dpbusd_epi32(acc[j], a, b);
  __m512 f[kAcc];  // the bits as they are: the sum only keeps the loop alive
  for (int j = 0; j < kAcc; ++j) f[j] = _mm512_castsi512_ps(acc[j]);
  return lanes_sum(f, kAcc);
}
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
  // About 10 ms a pass at this workplace's rates (bf16 ~85, u8s8 ~700 GOP/s per core).
  return kind == Dot::bf16 ? 1000000 : 3000000;
}

DotPass dot_pass(Dot kind, int nthreads, long iters) {
  if (!has_dot(kind)) return {};
  const double t0 = now();
  float sink = 0;
  double share = 1;
#pragma omp parallel num_threads(nthreads) reduction(+ : sink) reduction(min : share)
  {
    const double w0 = now(), c0 = thread_cpu_seconds();
#if defined(__x86_64__)
    sink += kind == Dot::bf16 ? bf16_loop(iters)
            : vnni()          ? u8s8_loop(iters)
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
#endif
  return {per_instr * acc * iters * nthreads / t, share};
}

}  // namespace pb::probe
