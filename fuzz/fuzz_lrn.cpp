// libFuzzer target: the LRN descriptor parser (LrnDesc::parse) and its round trip.
#include "fuzz/fuzz.h"
#include "kernels/lrn/desc.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  pb::fuzz::descriptor_round_trip<pb::LrnDesc>(pb::fuzz::text(data, size));
  return 0;
}
