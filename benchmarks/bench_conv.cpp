// bench_conv: every convolution implementation on every layer of data/conv/*.txt, per direction
// (conv_fwd/..., conv_bwd_d/..., conv_bwd_w/...), at each line's batch (16 in the network sets,
// the CNN batch of Shi et al.; DeepBench's inference sets keep theirs, 1 to 4) unless
// --primbench_batch says.
#include "benchmarks/bench_common.h"
#include "kernels/conv/desc.h"

int main(int argc, char** argv) {
  pb::bench::BenchSpec spec;
  spec.prim = "conv";
  spec.prefix = [](pb::Dir dir) { return "conv_" + pb::dir_str(dir); };
  spec.with_batch = [](const std::string& desc, int batch) {
    pb::ConvDesc d = pb::ConvDesc::parse(desc);
    d.mb = batch;
    d.validate();
    return d.str();
  };
  return pb::bench::bench_main(argc, argv, spec);
}
