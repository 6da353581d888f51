// Reduced data types shared by the primitives that take one (GEMM, convolution): the exact test
// inputs (integer ranges, u8s8's quantisation parameters) and the typed copies implementations
// convert fp32 tensors into and their outputs back from.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/core/dtype.h"
#include "kernels/core/tensor.h"

namespace pb {

// The integer range r of a typed problem's inputs for sums of `terms` products: values in
// [-r, r] (u8s8's source in [0, 2r] around the zero point r) whose sums stay exact in fp32
// (f32, bf16, f16: r <= 4; u8s8: r <= 127), and with an f16 output below its largest value.
int typed_int_range(double terms, const DataType& dt);

// u8s8's quantisation parameters, in the order the problems list them after their two data
// inputs: the weights' scale per output channel, the source's scale and zero point, the
// output's scale. Scales are powers of two, so scaled integer sums stay exact in fp32 (integer
// types compare exactly); the per-channel scales differ (2^0, 2^-1, 2^-2, ...), so that a kernel
// applying the wrong channel's scale fails. The s8 output's scale makes a typical sum of `terms`
// products of values in [-range, range] about 32 units, so that most sums land inside
// [-128, 127] and the tails saturate.
struct QuantInputs {
  Tensor wei_scale, src_scale, src_zero, dst_scale;
};
QuantInputs make_quant_inputs(int64_t channels, double terms, int range, DataType::Out out);
// The u8 source from integers in [-range, range]: shifted by the zero point `range`.
void shift_to_u8(Tensor& src, int range);

// The same parameters as an implementation reads them from its inputs, `first` being the index
// of wei_scale (f32 problems: all ones, zero point 0).
struct QuantParams {
  std::vector<float> wei_scale;
  float src_scale = 1, dst_scale = 1;
  int32_t src_zero = 0;
  static QuantParams from(const std::vector<const Tensor*>& in, size_t first);
};

// The values of t (exact in `in`) stored in that type into out (resized): bf16 or f16 as
// uint16_t, u8s8 as u8 (the source) or s8 (the weights). Parallel over the elements.
void to_storage(const Tensor& t, DataType::In in, bool is_source, std::vector<uint8_t>* out);
// n values of output type `out` (not out_f32) at p as fp32 into t[0..n).
void from_storage(const void* p, DataType::Out out, int64_t n, float* t);
// And the other way: fp32 values exact in `out` into its storage.
void to_storage_out(const float* t, int64_t n, DataType::Out out, void* p);

// Real values into the type's storage (a network's activations, impl.h's quantise()): bf16/f16
// rounding to nearest even as to_storage; a u8 source round(x / scale) + zero, saturated to
// [0, 255] (to nearest even). Parallel.
void quantise_storage(const Tensor& t, DataType::In in, bool is_source, float scale, int32_t zero,
                      std::vector<uint8_t>* out);

// Networks in u8s8 (kernels/net): symmetric per-output-channel s8 weights. w has `channels`
// channels: contiguous blocks of size / channels (channel_major, a convolution's oihw) or
// interleaved, element i in channel i % channels (a column-major fc weight, out x in). scale[c] =
// max |w| of channel c / 127 (1 for an all-zero channel), wq = round(w / scale[c]).
void quantise_weights(const Tensor& w, int64_t channels, bool channel_major, Tensor* wq,
                      Tensor* scale);
// The u8 source's scale and zero point for activations in [lo, hi] (the range widened to include
// 0, so that zero is exact): scale = (hi - lo) / 255, zero = round(-lo / scale).
void calibrate_u8(float lo, float hi, float* scale, int32_t* zero);

}  // namespace pb
