// libFuzzer target: the pool descriptor parser (PoolDesc::parse) and its round trip.
#include "fuzz/fuzz.h"
#include "kernels/pool/desc.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  pb::fuzz::descriptor_round_trip<pb::PoolDesc>(pb::fuzz::text(data, size));
  return 0;
}
