// libFuzzer target: the network-file loader (Network::parse: layer lines, inputs, the chain
// check), then what the executor asks of a loaded network: parameter counts and other batches.
#include <sstream>

#include "fuzz/fuzz.h"
#include "kernels/net/network.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(pb::fuzz::text(data, size));
  pb::Network net;
  try {
    net = pb::Network::parse(in, "fuzz.txt");
  } catch (const pb::InputError&) {
    return 0;
  }
  if (net.layers.empty() || net.layers[0].kind != pb::LayerKind::input)
    pb::fuzz::fail("a network loaded without an input layer first");
  for (const pb::Layer& l : net.layers)
    for (int i : l.inputs)
      if (i < 0 || &net.layers[i] >= &l) pb::fuzz::fail("layer " + l.name + " reads a later layer");
  volatile int64_t params = net.params();
  (void)params;
  for (int64_t b : {int64_t(1), int64_t(3), int64_t(1) << 20}) {
    try {
      pb::Network other = net.with_batch(b);
      if (other.batch() != b)
        pb::fuzz::fail("with_batch(" + std::to_string(b) + ") gave another batch");
    } catch (const pb::InputError&) {
    }
  }
  return 0;
}
