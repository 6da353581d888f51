// The machine probe's passes over the dot-product instructions of the reduced data types
// (machine_dot.cpp): bf16 pairs into fp32 (vdpbf16ps), u8 x s8 quadruples into int32 (vpdpbusd).
#pragma once

// The probe's loops touch nothing but their own registers. Left to the sanitizers, a -O1 build
// keeps their accumulator arrays in (instrumented) memory: GCC's ASan ran the fp32 FMA loop at
// a twentieth of its rate, and a probe is then no figure to divide by.
#define PB_PROBE_LOOP __attribute__((no_sanitize("address", "thread")))

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace pb::probe {

#if defined(__x86_64__)
// What a probe loop returns (the sum of its accumulators' lanes, keeping the loop alive): stored
// and added, where GCC 12's _mm512_reduce_add_* warn of an uninitialised value in its headers.
PB_PROBE_LOOP __attribute__((target("avx512f"))) inline float lanes_sum(const __m512* acc, int n) {
  alignas(64) float lanes[16];
  float s = 0;
  for (int j = 0; j < n; ++j) {
    _mm512_store_ps(lanes, acc[j]);
    for (float l : lanes) s += l;
  }
  return s;
}
#endif

enum class Dot { bf16, u8s8 };

struct DotPass {
  double ops = 0;        // operations per second, all threads (2 per product), 0: no such unit
  double cpu_share = 1;  // the least CPU time a thread got over the wall time of its loop
};

bool has_dot(Dot kind);    // whether this CPU has the instruction
long dot_iters(Dot kind);  // loop iterations for a pass of about 10 ms
DotPass dot_pass(Dot kind, int nthreads, long iters);

}  // namespace pb::probe
