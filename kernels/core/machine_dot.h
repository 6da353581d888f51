// The machine probe's passes over the dot-product instructions of the reduced data types
// (machine_dot.cpp): bf16 pairs into fp32 (vdpbf16ps), u8 x s8 quadruples into int32 (vpdpbusd).
#pragma once

// The probe's loops touch nothing but their own registers. Left to the sanitizers, a -O1 build
// keeps their accumulator arrays in (instrumented) memory: GCC's ASan ran the fp32 FMA loop at
// a twentieth of its rate, and a probe is then no figure to divide by. UBSan too: in the
// ASan+UBSan build the FMA loop ran at a twelfth (16.6 GFLOP/s on 2 cores), while the AVX2 u8s8
// loop (assembly) did not slow, so its rate passed 16x the fp32 peak.
#define PB_PROBE_LOOP __attribute__((no_sanitize("address", "thread", "undefined")))

#include <cstring>

namespace pb::probe {

// What a probe loop returns (the sum of its accumulators' lanes, in order, keeping the loop
// alive), for any vector of floats (__m512, __m256, GCC vector types): copied out and added,
// where GCC 12's _mm512_reduce_add_* warn of an uninitialised value in its headers.
template <class V>
PB_PROBE_LOOP inline float lanes_sum(const V* acc, int n) {
  float lanes[sizeof(V) / sizeof(float)];
  float s = 0;
  for (int j = 0; j < n; ++j) {
    std::memcpy(lanes, &acc[j], sizeof lanes);
    for (float l : lanes) s += l;
  }
  return s;
}

enum class Dot { bf16, u8s8 };

struct DotPass {
  double ops = 0;        // operations per second, all threads (2 per product), 0: no such unit
  double cpu_share = 1;  // the least CPU time a thread got over the wall time of its loop
};

bool has_dot(Dot kind);    // whether this CPU has the instruction
long dot_iters(Dot kind);  // loop iterations for a pass of about 10 ms
DotPass dot_pass(Dot kind, int nthreads, long iters);

}  // namespace pb::probe
