// The RNN reference checked on its own: a hand-computed LSTM/GRU/RNN step, and every gradient of
// the BPTT backward (dx included) against central finite differences of L = sum(dy * y) on tiny
// shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kernels/rnn/desc.h"
#include "reference/rnn.h"

namespace pb {
namespace {

ref::RnnData random_data(const RnnDesc& d, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  auto v = [&](int64_t n, double s) {
    std::vector<double> x(n);
    for (auto& e : x) e = s * u(g);
    return x;
  };
  const int64_t G = d.gates(), NH = d.n * d.h;
  ref::RnnData p;
  p.x = v(d.t * d.n * d.i, 1);
  p.h0 = v(NH, 0.5);
  if (d.has_c()) p.c0 = v(NH, 0.5);
  p.w = v(G * d.h * d.i, 0.8);
  p.r = v(G * d.h * d.h, 0.8);
  p.b = v(d.bias_gates() * d.h, 0.5);
  p.dy = v(d.t * NH, 1);
  return p;
}

double loss(const RnnDesc& d, const ref::RnnData& p) {
  ref::RnnForward f = ref::rnn_forward(d, p);
  double l = 0;
  for (size_t i = 0; i < f.y.size(); ++i) l += p.dy[i] * f.y[i];
  return l;
}

// Central differences of every element of one parameter tensor against the analytic gradient.
void expect_fd(const RnnDesc& d, ref::RnnData p, std::vector<double> ref::RnnData::*field,
               const std::vector<double>& grad, const char* what) {
  const double eps = 1e-6;
  std::vector<double>& v = p.*field;
  ASSERT_EQ(v.size(), grad.size()) << what;
  for (size_t i = 0; i < v.size(); ++i) {
    const double keep = v[i];
    v[i] = keep + eps;
    const double lp = loss(d, p);
    v[i] = keep - eps;
    const double lm = loss(d, p);
    v[i] = keep;
    const double fd = (lp - lm) / (2 * eps);
    EXPECT_NEAR(grad[i], fd, 1e-6 * (1 + std::fabs(fd)))
        << d.str() << " " << what << "[" << i << "]";
  }
}

class RnnReferenceFd : public ::testing::TestWithParam<const char*> {};

TEST_P(RnnReferenceFd, GradientsMatchFiniteDifferences) {
  RnnDesc d = RnnDesc::parse(GetParam());
  ref::RnnData p = random_data(d, 7);
  ref::RnnGrads g = ref::rnn_backward(d, p);
  expect_fd(d, p, &ref::RnnData::w, g.dw, "dW");
  expect_fd(d, p, &ref::RnnData::r, g.dr, "dR");
  expect_fd(d, p, &ref::RnnData::b, g.db, "db");
  expect_fd(d, p, &ref::RnnData::h0, g.dh0, "dh0");
  if (d.has_c()) expect_fd(d, p, &ref::RnnData::c0, g.dc0, "dc0");
  // dx, the gradient that lets layers stack (I != H in most shapes, so a W/R or I/H mix-up
  // cannot pass; GRU's candidate takes W x_t outside the reset, R h inside).
  ASSERT_EQ(g.dx.size(), static_cast<size_t>(d.t * d.n * d.i));
  expect_fd(d, p, &ref::RnnData::x, g.dx, "dx");
  // Not all zeros: the checks above would be vacuous.
  double s = 0, sx = 0;
  for (double v : g.dr) s += std::fabs(v);
  for (double v : g.dx) sx += std::fabs(v);
  EXPECT_GT(s, 1e-3);
  EXPECT_GT(sx, 1e-2);
}

INSTANTIATE_TEST_SUITE_P(Smoke, RnnReferenceFd,
                         ::testing::Values("lstm_h3n2t4i5", "gru_h3n2t4i5", "rnn_h3n2t4i5",
                                           "lstm_h4n1t1", "gru_h2n3t6", "rnn_h5n2t6i2"));

TEST(RnnReferenceSmoke, HandComputedStep) {
  // H = N = I = T = 1, weights 0.5, biases b: one step by hand.
  const double x = 0.3, h0 = -0.2, c0 = 0.4, w = 0.5, r = 0.5;
  auto sg = [](double v) { return 1 / (1 + std::exp(-v)); };
  const double a = w * x + r * h0;  // 0.05
  {
    RnnDesc d = RnnDesc::parse("lstm_h1n1t1");
    ref::RnnData p{{x}, {h0}, {c0}, {w, w, w, w}, {r, r, r, r}, {0.1, 0.2, 0.3, 0.4}, {}};
    ref::RnnForward f = ref::rnn_forward(d, p);
    const double c = sg(a + 0.2) * c0 + sg(a + 0.1) * std::tanh(a + 0.3);
    EXPECT_NEAR(f.c_last[0], c, 1e-15);
    EXPECT_NEAR(f.y[0], sg(a + 0.4) * std::tanh(c), 1e-15);
  }
  {
    RnnDesc d = RnnDesc::parse("gru_h1n1t1");
    ref::RnnData p{{x}, {h0}, {}, {w, w, w}, {r, r, r}, {0.1, 0.2, 0.3, 0.4}, {}};
    const double u = sg(a + 0.1), rr = sg(a + 0.2);
    const double o = std::tanh(w * x + 0.3 + rr * (r * h0 + 0.4));  // linear before reset
    EXPECT_NEAR(ref::rnn_forward(d, p).y[0], u * h0 + (1 - u) * o, 1e-15);
  }
  {
    RnnDesc d = RnnDesc::parse("rnn_h1n1t2");
    ref::RnnData p{{x, -x}, {h0}, {}, {w}, {r}, {0.1}, {}};
    ref::RnnForward f = ref::rnn_forward(d, p);
    const double h1 = std::max(0.0, a + 0.1);
    EXPECT_NEAR(f.y[0], h1, 1e-15);
    EXPECT_NEAR(f.y[1], std::max(0.0, -w * x + r * h1 + 0.1), 1e-15);
  }
}

}  // namespace
}  // namespace pb
