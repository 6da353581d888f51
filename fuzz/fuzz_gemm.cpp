// libFuzzer target: the gemm descriptor parser (GemmDesc::parse) and its round trip.
#include "fuzz/fuzz.h"
#include "kernels/gemm/desc.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  pb::fuzz::descriptor_round_trip<pb::GemmDesc>(pb::fuzz::text(data, size));
  return 0;
}
