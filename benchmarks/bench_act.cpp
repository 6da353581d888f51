// bench_act: every activation implementation on every shape of data/act/*.txt, named by
// function and direction (relu_fwd, sigmoid_bwd, softmax_fwd, softmax_xent_bwd, ...), batch 16.
#include "benchmarks/bench_common.h"
#include "kernels/act/act.h"

int main(int argc, char** argv) {
  pb::bench::BenchSpec spec;
  spec.prim = "act";
  spec.default_batch = 16;
  spec.with_batch = [](const std::string& text, int batch) {
    pb::ActDesc d = pb::ActDesc::parse(text);
    d.mb = batch;
    return d.str();
  };
  spec.prefix_for = [](const pb::Problem& p, pb::Dir dir) {
    return pb::act_bench_prefix(pb::ActDesc::parse(p.desc_str()), dir);
  };
  return pb::bench::bench_main(argc, argv, spec);
}
