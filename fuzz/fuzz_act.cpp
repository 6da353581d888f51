// libFuzzer target: the act descriptor parser (ActDesc::parse) and its round trip.
#include "fuzz/fuzz.h"
#include "kernels/act/desc.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  pb::fuzz::descriptor_round_trip<pb::ActDesc>(pb::fuzz::text(data, size));
  return 0;
}
