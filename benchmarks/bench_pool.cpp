// bench_pool: every pooling implementation on every shape of data/pool/*.txt, fwd and bwd
// (names pool_fwd/... and pool_bwd/...), at batch 16 unless --primbench_batch says otherwise.
#include "benchmarks/bench_common.h"
#include "kernels/pool/desc.h"

int main(int argc, char** argv) {
  pb::bench::BenchSpec spec;
  spec.prim = "pool";
  spec.default_batch = 16;
  spec.with_batch = [](const std::string& text, int batch) {
    pb::PoolDesc d = pb::PoolDesc::parse(text);
    d.mb = batch;
    return d.str();
  };
  return pb::bench::bench_main(argc, argv, spec);
}
