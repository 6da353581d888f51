// bench_bnorm: every batch-norm implementation on every shape of data/bnorm/*.txt, named
// bnorm_fwd_training, bnorm_fwd_inference (lines with _inf) and bnorm_bwd, at batch 16.
#include "benchmarks/bench_common.h"
#include "kernels/bnorm/bnorm.h"

int main(int argc, char** argv) {
  pb::bench::BenchSpec spec;
  spec.prim = "bnorm";
  spec.default_batch = 16;
  spec.with_batch = [](const std::string& text, int batch) {
    pb::BnormDesc d = pb::BnormDesc::parse(text);
    d.mb = batch;
    return d.str();
  };
  spec.prefix_for = [](const pb::Problem& p, pb::Dir dir) {
    return pb::bnorm_bench_prefix(pb::BnormDesc::parse(p.desc_str()), dir);
  };
  return pb::bench::bench_main(argc, argv, spec);
}
