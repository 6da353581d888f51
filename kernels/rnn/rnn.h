// RNN layers (LSTM, GRU, vanilla ReLU RNN): the interface, tensors per direction, the registry
// and the factories of every implementation.
//
// Semantics (DeepBench's training RNN): one unidirectional layer, T steps, batch N, hidden H,
// input I. Per step, a = W x_t + R h_{t-1} + b (all gates at once), then
//   LSTM (no peepholes; gates i, f, c~, o):  i,f,o = sigmoid, c~ = tanh;
//        c_t = f*c_{t-1} + i*c~;  h_t = o*tanh(c_t)
//   GRU, "linear before reset" (cuDNN's and DeepBench's GRU; oneDNN's lbr_gru; gates u, r, o):
//        u = sigmoid(a_u), r = sigmoid(a_r),
//        o = tanh(W_o x_t + b_o + r * (R_o h_{t-1} + b_ro)),  h_t = u*h_{t-1} + (1-u)*o
//   RNN: h_t = relu(a).
// Tensors (fp32, row-major, innermost last; gate-major weights as PyTorch's weight_ih/hh):
//   x (T, N, I), h0 (N, H), c0 (N, H; LSTM only), W (G, H, I), R (G, H, H),
//   b (Gb, H) with Gb = G, or 4 for GRU (u, r, o, then b_ro), dy (T, N, H; bwd only).
// Directions and their inputs -> outputs:
//   fwd (training forward: gate activations are kept for a backward):
//       x, h0, [c0], W, R, b          -> y (T, N, H) all hidden states, [cT (N, H)]
//   bwd (through time, weights, and x so that layers stack): the forward runs in
//       forward_state(), untimed by every contract (a network's step runs it, in this call's
//       time); run() is the backward pass alone, dx = dGates W as one GEMM over all T*N rows.
//       x, h0, [c0], W, R, b, dy -> dW (G, H, I), dR (G, H, H), db (Gb, H), dh0, [dc0],
//                                   dx (T, N, I)
#pragma once

#include <memory>

#include "kernels/core/impl.h"
#include "kernels/core/problem.h"
#include "kernels/rnn/desc.h"

namespace pb {

using RnnImpl = Impl<RnnDesc>;

// The phases of an RNN implementation that keeps its own copies of the (transposed) weights and
// of the initial states (cpu/blas, ocl/blas): weights() makes the copies of the weights,
// reorder_in() loads the initial states, forward_state() reruns the forward a backward
// differentiates (inputs read in place).
class StagedRnn : public RnnImpl {
 public:
  void weights() override { load_weights(); }
  void reorder_in() override { load_states(); }
  void forward_state() override {
    if (!is_backward()) return;
    load_states();
    run_forward();
  }

 protected:
  virtual void load_weights() = 0;
  virtual void load_states() = 0;
  virtual void run_forward() = 0;
  virtual bool is_backward() const = 0;
};

const Registry<RnnDesc>& rnn_registry();
PrimitiveInfo rnn_primitive();

std::unique_ptr<RnnImpl> make_rnn_cpu_blas();
std::unique_ptr<RnnImpl> make_rnn_ocl_blas();
std::unique_ptr<RnnImpl> make_rnn_onednn();

}  // namespace pb
