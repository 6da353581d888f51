// Naive convolution reference (forward, backward-data, backward-weights): fp64 accumulation,
// groups, dilation, asymmetric padding; whole tensors or single elements for sampled checks.
// Every data type of desc.h: the inputs hold values exact in the type; u8s8's forward takes its
// quantisation parameters `q` (quant.h; nullptr for the other types); the output conversion of
// d.dt (bf16/f16 rounding, s8 rounding and saturation) is applied to every output.
#pragma once

#include "kernels/conv/desc.h"
#include "kernels/core/quant.h"
#include "kernels/core/tensor.h"

namespace pb::ref {

// dst (mb x oc x oh x ow) from src (mb x ic x ih x iw) and wei (g x ocg x icg x kh x kw).
Tensor64 conv_fwd(const ConvDesc& d, const Tensor& src, const Tensor& wei,
                  const QuantParams* q = nullptr);
// diff_src (mb x ic x ih x iw) from diff_dst and wei.
Tensor64 conv_bwd_d(const ConvDesc& d, const Tensor& diff_dst, const Tensor& wei);
// diff_wei (g x ocg x icg x kh x kw) from src and diff_dst.
Tensor64 conv_bwd_w(const ConvDesc& d, const Tensor& src, const Tensor& diff_dst);
// diff_bias (oc): diff_dst summed over images and output pixels.
Tensor64 conv_bwd_b(const ConvDesc& d, const Tensor& diff_dst);

// One element of each, by flat index into its output.
double conv_fwd_at(const ConvDesc& d, const Tensor& src, const Tensor& wei, int64_t index,
                   const QuantParams* q = nullptr);
double conv_bwd_d_at(const ConvDesc& d, const Tensor& diff_dst, const Tensor& wei, int64_t index);
double conv_bwd_w_at(const ConvDesc& d, const Tensor& src, const Tensor& diff_dst, int64_t index);
double conv_bwd_b_at(const ConvDesc& d, const Tensor& diff_dst, int64_t oc);

}  // namespace pb::ref
