// bench_rnn: every RNN implementation on every layer of data/rnn/*.txt, forward and backward,
// named by cell type: lstm_fwd/..., gru_bwd/..., rnn_fwd/... (DeepBench's naming).
#include "benchmarks/bench_common.h"
#include "kernels/rnn/desc.h"

int main(int argc, char** argv) {
  pb::bench::BenchSpec spec;
  spec.prim = "rnn";
  spec.prefix_for = [](const pb::Problem& p, pb::Dir dir) {
    return pb::cell_str(pb::RnnDesc::parse(p.desc_str()).cell) + "_" + pb::dir_str(dir);
  };
  // Every output depends on the whole sequence, so a check runs the full fp64 reference (once
  // per layer and direction, shared by the implementations): every shape is checked, at a cost
  // of seconds for DeepBench's largest layers.
  spec.with_batch = [](const std::string& desc, int batch) {
    pb::RnnDesc d = pb::RnnDesc::parse(desc);
    d.n = batch;
    d.validate();
    return d.str();
  };
  return pb::bench::bench_main(argc, argv, spec);
}
