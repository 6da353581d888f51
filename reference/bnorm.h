// Naive batch-norm reference: fp64 accumulation, two-pass variance, every mode and direction.
// Outputs in the order of kernels/bnorm/bnorm.h.
#pragma once

#include <vector>

#include "kernels/bnorm/desc.h"
#include "kernels/core/tensor.h"

namespace pb::ref {

// Training: {dst, mean, var, running_mean, running_var}; inference: {dst}. `mean`/`var` are the
// running statistics (training) or the given statistics (inference).
std::vector<Tensor64> bnorm_fwd(const BnormDesc& d, const Tensor& src, const Tensor& scale,
                                const Tensor& shift, const Tensor& mean, const Tensor& var);
// {diff_src, [diff_scale], [diff_shift]}.
std::vector<Tensor64> bnorm_bwd(const BnormDesc& d, const Tensor& src, const Tensor& diff_dst,
                                const Tensor& scale, const Tensor& shift, const Tensor& mean,
                                const Tensor& var);
// Per-channel batch mean and biased variance (two passes, fp64).
void bnorm_stats(const BnormDesc& d, const Tensor& src, std::vector<double>* mean,
                 std::vector<double>* var);

}  // namespace pb::ref
