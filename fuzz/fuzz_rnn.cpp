// libFuzzer target: the rnn descriptor parser (RnnDesc::parse) and its round trip.
#include "fuzz/fuzz.h"
#include "kernels/rnn/desc.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  pb::fuzz::descriptor_round_trip<pb::RnnDesc>(pb::fuzz::text(data, size));
  return 0;
}
