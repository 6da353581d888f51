// bench_lrn: every LRN implementation on every shape of data/lrn/*.txt, fwd and bwd (names
// lrn_fwd/... and lrn_bwd/...), at batch 16 unless --primbench_batch says otherwise.
#include "benchmarks/bench_common.h"
#include "kernels/lrn/desc.h"

int main(int argc, char** argv) {
  pb::bench::BenchSpec spec;
  spec.prim = "lrn";
  spec.default_batch = 16;
  spec.with_batch = [](const std::string& text, int batch) {
    pb::LrnDesc d = pb::LrnDesc::parse(text);
    d.mb = batch;
    return d.str();
  };
  return pb::bench::bench_main(argc, argv, spec);
}
