// RNN layer descriptor: <lstm|gru|rnn>_h<H>n<N>t<T>[i<I>][dt=<type>][n"name"] — one layer,
// hidden size H, batch N, T time steps, input size I (= H when omitted), as DeepBench's RNN
// benchmark. dt (kernels/core/dtype.h): f32 (default); bf16 or f16 (fp32 accumulation); u8s8 (u8
// data with one scale and shift for x and h, s8 weights with one scale per gate row shared by W
// and R, int32 accumulation: oneDNN's int8 RNN). The hidden state is the recurrent input, so it
// is held in the input type: h_t is rounded to bf16/f16, or quantised to u8, after every step,
// and y holds those values; the LSTM cell state and the biases stay fp32. Reduced types run fwd
// (inference) only.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/core/dtype.h"
#include "kernels/core/impl.h"

namespace pb {

enum class Cell { lstm, gru, rnn };
std::string cell_str(Cell c);  // "lstm", "gru", "rnn"

struct RnnDesc {
  Cell cell = Cell::lstm;
  int64_t h = 0, n = 0, t = 1, i = 0;  // i = 0 in the text means "= h"; parse() fills it in
  DataType dt;                         // out is always out_f32: y is in the input type (above)
  std::string name;

  static RnnDesc parse(const std::string& text);  // throws InputError naming the token/field
  std::string str() const;                        // parse(str()) == *this
  void validate() const;
  bool operator==(const RnnDesc& o) const;

  // Gates per hidden unit in the GEMMs: LSTM 4 (i, f, c~, o), GRU 3 (u, r, o), RNN 1.
  int64_t gates() const { return cell == Cell::lstm ? 4 : cell == Cell::gru ? 3 : 1; }
  // Bias rows: the gates, plus for GRU the recurrent bias of the candidate (linear before reset).
  int64_t bias_gates() const { return gates() + (cell == Cell::gru ? 1 : 0); }
  int64_t gh() const { return gates() * h; }
  bool has_c() const { return cell == Cell::lstm; }

  // GEMM FLOPs plus pointwise operations (pointwise_ops() per hidden unit per step per sample).
  // fwd: input projection 2*T*N*GH*I + recurrent 2*T*N*GH*H. bwd: recurrent 2*T*N*GH*H for
  // dh, weight gradients 2*T*N*GH*(I + H), and dx 2*T*N*GH*I.
  double flops(Dir dir = Dir::fwd) const;
  double gemm_flops(Dir dir = Dir::fwd) const;
  double pointwise_ops(Dir dir) const;  // per (t, n, j); documented in desc.cpp
  // Inputs read + outputs written once: x, h0, W, R and y in the input type, c0, cT, b fp32.
  double bytes(Dir dir = Dir::fwd) const;
};

}  // namespace pb
