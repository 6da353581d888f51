// RNN traits: seeded real-valued inputs (weights scaled 1/sqrt(fan-in) so that gates stay out
// of saturation), outputs per direction, the reference hook-up and the conformance shrink.
#include "kernels/rnn/traits.h"

#include <cmath>

#include "kernels/core/error.h"
#include "kernels/core/fill.h"
#include "kernels/core/typed_problem.h"
#include "reference/rnn.h"

namespace pb {

Dims rnn_dims(const RnnDesc& d, const std::string& s) {
  if (s == "x" || s == "dx") return {d.t, d.n, d.i};
  if (s == "y" || s == "dy") return {d.t, d.n, d.h};
  if (s == "W" || s == "dW") return {d.gates(), d.h, d.i};
  if (s == "R" || s == "dR") return {d.gates(), d.h, d.h};
  if (s == "b" || s == "db") return {d.bias_gates(), d.h};
  if (s == "w_scale") return {d.gates(), d.h};
  if (s == "data_scale" || s == "data_shift") return {1};
  return {d.n, d.h};  // h0, c0, cT, dh0, dc0
}

namespace {
std::vector<std::string> input_names(const RnnDesc& d, Dir dir) {
  std::vector<std::string> v = {"x", "h0"};
  if (d.has_c()) v.push_back("c0");
  for (const char* s : {"W", "R", "b"}) v.push_back(s);
  if (dir == Dir::bwd) v.push_back("dy");
  if (d.dt.integer())
    for (const char* s : {"w_scale", "data_scale", "data_shift"}) v.push_back(s);
  return v;
}

// A value rounded to bf16 or f16 (to nearest even).
float round_to(DataType::In in, float v) {
  return static_cast<float>(
      convert_output(v, in == DataType::bf16 ? DataType::out_bf16 : DataType::out_f16));
}

// u8s8: the data (x and every h) as u8 = x * kDataScale + kDataShift; powers of two, so the grid
// (u - 128) / 64 is exact in fp32 and holds [-2, 2), around tanh's range.
constexpr float kDataScale = 64, kDataShift = 128;

// u8s8 inputs: x and h0 on the u8 grid (|x| <= 1, |h0| <= 0.5); W and R as s8 integers over a
// power-of-two scale per gate row, shared by W and R (oneDNN's weights_qparams), so that
// |W|, |R| <= 1/sqrt(I + H); the scales differ from row to row (x1, x2, x4), so a kernel applying
// another row's scale fails; b and c0 fp32 reals.
std::vector<NamedTensor> quantised_inputs(const RnnDesc& d, Dir dir, uint64_t seed) {
  std::vector<NamedTensor> v;
  uint64_t stream = 0;
  const int e0 = static_cast<int>(std::ceil(std::log2(127.0 * std::sqrt(double(d.i + d.h)))));
  Tensor w_scale(rnn_dims(d, "w_scale"));
  for (int64_t r = 0; r < w_scale.size(); ++r)
    w_scale[r] = std::ldexp(1.0f, e0 + static_cast<int>(r % 3));
  for (const std::string& s : input_names(d, dir)) {
    Tensor t(rnn_dims(d, s));
    const uint64_t sd = mix_seed(seed, stream++);
    if (s == "x" || s == "h0") {
      fill_int(t, sd, s == "x" ? 64 : 32);
      for (int64_t k = 0; k < t.size(); ++k) t[k] /= kDataScale;
    } else if (s == "W" || s == "R") {
      fill_int(t, sd, 127);
      const int64_t row = s == "W" ? d.i : d.h;
      for (int64_t k = 0; k < t.size(); ++k) t[k] /= w_scale[k / row];
    } else if (s == "w_scale") {
      t = w_scale.clone();
    } else if (s == "data_scale" || s == "data_shift") {
      t[0] = s == "data_scale" ? kDataScale : kDataShift;
    } else {
      fill_uniform(t, sd, -0.5f, 0.5f);
    }
    v.push_back({s, std::move(t)});
  }
  return v;
}
}  // namespace

std::vector<NamedTensor> RnnTraits::make_inputs(const RnnDesc& d, Dir dir, uint64_t seed) {
  if (d.dt.integer()) return quantised_inputs(d, dir, seed);
  std::vector<NamedTensor> v;
  uint64_t stream = 0;
  for (const std::string& s : input_names(d, dir)) {
    Tensor t(rnn_dims(d, s));
    float lim = s == "W"                ? 1.0f / std::sqrt(static_cast<float>(d.i))
                : s == "R"              ? 1.0f / std::sqrt(static_cast<float>(d.h))
                : s == "x" || s == "dy" ? 1.0f
                                        : 0.5f;
    fill_uniform(t, mix_seed(seed, stream++), -lim, lim);
    // bf16/f16: the values of the type (x, h0, W, R; b and c0 stay fp32).
    if (!d.dt.is_f32() && (s == "x" || s == "h0" || s == "W" || s == "R"))
      for (int64_t k = 0; k < t.size(); ++k) t[k] = round_to(d.dt.in, t[k]);
    v.push_back({s, std::move(t)});
  }
  return v;
}

std::vector<std::string> RnnTraits::output_names(const RnnDesc& d, Dir dir) {
  if (dir == Dir::fwd)
    return d.has_c() ? std::vector<std::string>{"y", "cT"} : std::vector<std::string>{"y"};
  std::vector<std::string> v = {"dW", "dR", "db", "dh0"};
  if (d.has_c()) v.push_back("dc0");
  v.push_back("dx");
  return v;
}

std::string RnnTraits::layout(const RnnDesc& d, Dir dir) {
  std::string s = "row-major fp32, innermost last; " + cell_str(d.cell) +
                  (d.cell == Cell::lstm  ? " gates (i, f, c~, o)"
                   : d.cell == Cell::gru ? " linear-before-reset, gates (u, r, o), b row 3 = b_ro"
                                         : " ReLU") +
                  "; inputs:";
  for (const auto& n : input_names(d, dir)) s += " " + n + " " + dims_str(rnn_dims(d, n));
  s += "; outputs:";
  for (const auto& n : output_names(d, dir)) s += " " + n + " " + dims_str(rnn_dims(d, n));
  if (d.dt.integer())
    s += "; u8s8: x, h0 and y on the grid (u - data_shift) / data_scale (u in 0..255), W and R "
         "s8 integers / w_scale (one per gate row, shared)";
  else if (!d.dt.is_f32())
    s += "; " + d.dt.in_str() + ": x, h0, W, R and y hold " + d.dt.in_str() + " values";
  return s + (dir == Dir::bwd ? "; loss = sum(dy * y)" : "");
}

int64_t RnnTraits::output_size(const RnnDesc& d, Dir dir, size_t o) {
  return dims_product(rnn_dims(d, output_names(d, dir).at(o)));
}

namespace {
Tensor64 wrap(const RnnDesc& d, const std::string& name, const std::vector<double>& v) {
  Tensor64 t(rnn_dims(d, name));
  std::copy(v.begin(), v.end(), t.data());
  return t;
}
}  // namespace

std::vector<Tensor64> RnnTraits::reference(const RnnDesc& d, Dir dir,
                                           const std::vector<const Tensor*>& in) {
  ref::RnnData p = ref::rnn_data(d, in);
  std::vector<Tensor64> out;
  if (dir == Dir::fwd) {
    ref::RnnForward f = ref::rnn_forward(d, p);
    out.push_back(wrap(d, "y", f.y));
    if (d.has_c()) out.push_back(wrap(d, "cT", f.c_last));
    return out;
  }
  ref::RnnGrads g = ref::rnn_backward(d, p);
  out.push_back(wrap(d, "dW", g.dw));
  out.push_back(wrap(d, "dR", g.dr));
  out.push_back(wrap(d, "db", g.db));
  out.push_back(wrap(d, "dh0", g.dh0));
  if (d.has_c()) out.push_back(wrap(d, "dc0", g.dc0));
  out.push_back(wrap(d, "dx", g.dx));
  return out;
}

double RnnTraits::reference_at(const RnnDesc& d, Dir dir, const std::vector<const Tensor*>& in,
                               size_t output, int64_t index) {
  // One cached full reference (the last problem asked about).
  static std::string key;
  static std::vector<Tensor64> ref;
  std::string k = d.str() + "|" + dir_str(dir) + "|" +
                  std::to_string(reinterpret_cast<uintptr_t>(in[0]->data())) + "|" +
                  std::to_string(in[0]->data()[0]);
  if (k != key) {
    ref = reference(d, dir, in);
    key = k;
  }
  return ref.at(output)[index];
}

namespace {
// The reference costs ~flops(dir) (x2 for bwd, which reruns the forward). It runs vectorized
// fp64 dot products on all threads, ~10x the 1 GFLOP/s the conformance budget assumes, so the
// budget is scaled by 10. Halves T first (down to 4: the recurrence is still exercised), then
// H (with I when I = H), then N.
std::string rnn_shrink(const std::string& text, double max_flops, std::string* tag) {
  RnnDesc d = RnnDesc::parse(text);
  const double budget = 10 * max_flops;
  const bool square = d.i == d.h;
  std::string scaled;
  auto cost = [&] { return 3 * d.flops(Dir::fwd); };  // fwd + bwd (~2x) as the worse direction
  auto mark = [&](const char* c) {
    if (scaled.find(c) == std::string::npos) scaled += c;
  };
  while (cost() > budget && d.t > 4) d.t = (d.t + 1) / 2, mark("t");
  while (cost() > budget && d.h > 16) {
    d.h = (d.h + 1) / 2;
    if (square) d.i = d.h;
    mark("h");
  }
  while (cost() > budget && !square && d.i > 16) d.i = (d.i + 1) / 2, mark("i");
  while (cost() > budget && d.n > 2) d.n = (d.n + 1) / 2, mark("n");
  *tag = scaled.empty() ? "" : "scaled_" + scaled;
  d.validate();
  return d.str();
}
}  // namespace

PrimitiveInfo rnn_primitive() {
  PrimitiveInfo info = make_primitive_info<RnnTraits>(
      {Dir::fwd, Dir::bwd},
      "<lstm|gru|rnn>_h<H>n<N>[t<T>][i<I>][dt=f32|bf16|f16|u8s8][n\"name\"] (T = 1: one cell)");
  info.shrink = rnn_shrink;
  return info;
}

}  // namespace pb
