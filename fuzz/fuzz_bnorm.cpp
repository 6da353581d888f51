// libFuzzer target: the bnorm descriptor parser (BnormDesc::parse) and its round trip.
#include "fuzz/fuzz.h"
#include "kernels/bnorm/desc.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  pb::fuzz::descriptor_round_trip<pb::BnormDesc>(pb::fuzz::text(data, size));
  return 0;
}
