// Networks in reduced precision against fp32 (lowp.cpp): what runs in the type, and how far the
// typed network's logits are from the fp32 network's on the same synthetic batch.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/core/dtype.h"
#include "kernels/core/tensor.h"

namespace pb {

struct PrecisionCheck {
  int64_t images = 0, agree = 0;  // images whose top-1 class is the fp32 network's
  double logit_err = 0;           // ||logits - fp32 logits||_2 / ||fp32 logits||_2
  double top1() const { return images ? static_cast<double>(agree) / images : 0; }
};
// Logits of `images` images, classes contiguous per image (the executor's output()).
PrecisionCheck compare_logits(const Tensor& got, const Tensor& f32, int64_t images);
// Whether a network runs dt (NetOptions): bf16 or u8s8 inputs with fp32 outputs, u8s8 for
// inference only, not on the fp64 reference backend; throws InputError(field, ...) otherwise.
void check_net_dt(const DataType& dt, bool train, const std::string& backend,
                  const std::string& field);
// One line saying which layers run in `dt` and which in fp32 (the report's).
std::string precision_summary(const DataType& dt, bool train);

}  // namespace pb
