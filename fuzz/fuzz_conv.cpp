// libFuzzer target: the conv descriptor parser (ConvDesc::parse) and its round trip.
#include "fuzz/fuzz.h"
#include "kernels/conv/desc.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  pb::fuzz::descriptor_round_trip<pb::ConvDesc>(pb::fuzz::text(data, size));
  return 0;
}
