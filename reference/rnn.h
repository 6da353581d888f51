// Naive RNN layer reference (LSTM, GRU linear-before-reset, ReLU RNN): step-by-step forward and
// backpropagation through time in fp64, no BLAS. Semantics and layouts: kernels/rnn/rnn.h.
#pragma once

#include <vector>

#include "kernels/core/tensor.h"
#include "kernels/rnn/desc.h"

namespace pb::ref {

// The layer's tensors in fp64 (c0 empty unless LSTM, dy empty for a forward); u8s8: the data's
// quantisation (u8 = h * data_scale + data_shift), which every new hidden state goes through.
struct RnnData {
  std::vector<double> x, h0, c0, w, r, b, dy;
  double data_scale = 0, data_shift = 0;
};
// From the problem's inputs in order x, h0, [c0], W, R, b, [dy] (u8s8: then w_scale,
// data_scale, data_shift; the weights hold their values, so w_scale is not needed here).
RnnData rnn_data(const RnnDesc& d, const std::vector<const Tensor*>& in);

struct RnnForward {
  std::vector<double> y, c_last;  // y (T, N, H); c_last (N, H) for LSTM
};
RnnForward rnn_forward(const RnnDesc& d, const RnnData& p);

struct RnnGrads {
  std::vector<double> dw, dr, db, dh0, dc0;  // dc0 for LSTM only
  std::vector<double> dx;                    // (T, N, I)
};
// Gradients of L = sum(dy * y) w.r.t. W, R, b, h0 (and c0), and x (dt = f32 only).
RnnGrads rnn_backward(const RnnDesc& d, const RnnData& p);

}  // namespace pb::ref
