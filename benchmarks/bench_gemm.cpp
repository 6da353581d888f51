// bench_gemm: every GEMM implementation on every shape of data/gemm/*.txt.
#include "benchmarks/bench_common.h"

int main(int argc, char** argv) {
  pb::bench::BenchSpec spec;
  spec.prim = "gemm";
  return pb::bench::bench_main(argc, argv, spec);
}
