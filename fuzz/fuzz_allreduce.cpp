// libFuzzer target: the allreduce descriptor parser (AllreduceDesc::parse) and its round trip.
#include "fuzz/fuzz.h"
#include "kernels/allreduce/desc.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  pb::fuzz::descriptor_round_trip<pb::AllreduceDesc>(pb::fuzz::text(data, size));
  return 0;
}
