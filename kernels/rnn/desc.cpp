// RNN descriptor grammar, validation, round-trip printing and FLOP/byte counts.
#include "kernels/rnn/desc.h"

#include <limits>

#include "kernels/core/error.h"
#include "kernels/core/grammar.h"
#include "kernels/core/tensor.h"

namespace pb {

std::string cell_str(Cell c) {
  return c == Cell::lstm ? "lstm" : c == Cell::gru ? "gru" : "rnn";
}

RnnDesc RnnDesc::parse(const std::string& text) {
  FieldReader r("rnn descriptor", text);
  for (const char* f : {"h", "n", "t", "i"}) r.allow_int(f);
  for (const char* f : {"lstm", "gru", "rnn"}) r.allow_flag(f);
  r.allow_string("dt");
  r.read();
  RnnDesc d;
  int cells = r.flag("lstm") + r.flag("gru") + r.flag("rnn");
  if (cells != 1)
    r.fail("cell",
           "need exactly one of lstm_/gru_/rnn_ in '" + text + "' (example: lstm_h1024n64t25)");
  d.cell = r.flag("lstm") ? Cell::lstm : r.flag("gru") ? Cell::gru : Cell::rnn;
  if (!r.has("h")) r.fail("h", "missing in '" + text + "' (example: lstm_h1024n64t25)");
  if (!r.has("n")) r.fail("n", "missing (batch) in '" + text + "' (example: lstm_h1024n64t25)");
  d.h = r.get("h", 0);
  d.n = r.get("n", 0);
  d.t = r.get("t", 1);  // a cell-only descriptor: one step
  d.i = r.get("i", 0);
  d.dt = DataType::parse(r.string("dt", "f32"), "rnn descriptor field dt");
  d.name = r.name();
  d.validate();
  if (d.i == 0) d.i = d.h;
  return d;
}

void RnnDesc::validate() const {
  auto fail = [](const std::string& f, const std::string& msg) {
    throw InputError("rnn descriptor field " + f, msg);
  };
  const int64_t kMax = std::numeric_limits<int32_t>::max() / 8;  // BLAS ints, with gate room
  for (auto [f, v] : {std::pair<const char*, int64_t>{"h", h}, {"n", n}, {"t", t}}) {
    if (v < 1) fail(f, "must be >= 1, got " + std::to_string(v));
    if (v > kMax) fail(f, "too large: " + std::to_string(v));
  }
  if (i < 0 || i > kMax) fail("i", "must be >= 1, got " + std::to_string(i));
  if (dt.out != DataType::out_f32)
    fail("dt", "'" + dt.str() +
                   "': an RNN's output is its hidden state, held in the input type (bf16, f16 "
                   "values or the u8 grid), so no output type is given: write dt=" +
                   dt.in_str());
  const double ii = i ? i : h, g = static_cast<double>(gates());
  // Sequence tensors (x, dx, y, saved gates) dominate; weights G*H*(I+H).
  const double tn = static_cast<double>(t) * n;
  const double elems = tn * (2 * ii + h + g * h + h) + g * h * (ii + h) * 2 + 4.0 * n * h;
  if (tn * std::max(ii, g * h) > 1e15) fail("t", "sequence size overflows");
  // fp32 tensors, and the typed copies an implementation of a reduced type converts them into.
  check_fits_in_memory((4.0 + (dt.is_f32() ? 0.0 : dt.in_bytes())) * elems,
                       "rnn descriptor (h, n, t, i)");
}

std::string RnnDesc::str() const {
  std::string s =
      cell_str(cell) + "_h" + std::to_string(h) + "n" + std::to_string(n) + "t" + std::to_string(t);
  if (i != h) s += "i" + std::to_string(i);
  if (dt != DataType()) s += "dt=" + dt.str() + (name.empty() ? "" : "_");  // the word ends at _
  if (!name.empty()) s += name_token(name);
  return s;
}

bool RnnDesc::operator==(const RnnDesc& o) const {
  return cell == o.cell && h == o.h && n == o.n && t == o.t && i == o.i && dt == o.dt &&
         name == o.name;
}

double RnnDesc::gemm_flops(Dir dir) const {
  const double tn = static_cast<double>(t) * n, gh = static_cast<double>(gates()) * h;
  if (dir == Dir::fwd) return 2.0 * tn * gh * (i + h);
  return 2.0 * tn * gh * h + 2.0 * tn * gh * (i + h) + 2.0 * tn * gh * i;  // dh, dW dR, dx
}

// Pointwise operations per hidden unit, time step and sample (a transcendental counts as one):
// LSTM fwd: 4 gates x (x-part + h-part + bias) = 8 adds, 4 activations, c = f*c + i*g (3),
// tanh(c), o*tanh(c) -> 17. bwd: dh sum, do, dc, d tanh(c), di, df, dg, 4 activation
// derivatives (2 ops each) and dc_prev -> 24 (bias sums included).
// GRU (linear before reset) fwd: 3 pre-activations with 2 adds + 1 recurrent bias, 3 activations,
// r*(..) (1), h = u*h + (1-u)*o (3) -> 13. bwd: 20.
// RNN (ReLU) fwd: 2 adds + ReLU -> 3. bwd: dh sum, ReLU mask, bias sum -> 3.
double RnnDesc::pointwise_ops(Dir dir) const {
  const bool f = dir == Dir::fwd;
  switch (cell) {
    case Cell::lstm:
      return f ? 17 : 24;
    case Cell::gru:
      return f ? 13 : 20;
    default:
      return 3;
  }
}

double RnnDesc::flops(Dir dir) const {
  return gemm_flops(dir) + pointwise_ops(dir) * static_cast<double>(t) * n * h;
}

double RnnDesc::bytes(Dir dir) const {
  const double tn = static_cast<double>(t) * n, gh = static_cast<double>(gates()) * h;
  const double state = (has_c() ? 2.0 : 1.0) * n * h;
  const double weights = gh * (i + h) + static_cast<double>(bias_gates()) * h;
  if (dir == Dir::fwd) {  // x, h0, W, R and y in the input type; b, c0 and cT in fp32
    const double typed = tn * i + n * h + gh * (i + h) + tn * h;
    return dt.in_bytes() * typed + 4.0 * (bias_gates() * h + (has_c() ? 2.0 * n * h : 0));
  }
  double e = tn * i + state + weights;                   // x, h0 (c0), W, R, b
  return 4.0 * (e + tn * h + weights + state + tn * i);  // dy in; dW, dR, db, dh0 (dc0), dx out
}

}  // namespace pb
