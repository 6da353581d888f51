// The activation reference backward against finite differences of the reference forward:
// L = sum(diff_dst * f(src)) for the element-wise functions and softmax, and L = sum(loss) for
// softmax cross-entropy (whose gradient is softmax - onehot).
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/core/fill.h"
#include "reference/act.h"

namespace pb {
namespace {

void expect_act_fd_matches(const std::string& text) {
  ActDesc d = ActDesc::parse(text);
  Tensor x({d.mb, d.ic, d.ih, d.iw}), dy({d.mb, d.ic, d.ih, d.iw}), labels({d.mb, d.ih, d.iw});
  // Multiples of 1/16 plus 1/32: never 0 (the ReLU kink), and x +- h exact.
  fill_int(x, 1, 48);
  for (int64_t i = 0; i < x.size(); ++i) x[i] = x[i] / 16 + 1.0f / 32;
  fill_uniform(dy, 2, -1, 1);
  for (int64_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<float>((i * 5) % d.ic);
  const bool xent = d.func == ActFunc::xent;
  auto loss = [&]() {
    std::vector<const Tensor*> in = {&x};
    if (xent) in.push_back(&labels);
    auto y = ref::act_fwd(d, in);
    double s = 0;
    if (xent)
      for (int64_t i = 0; i < y[1].size(); ++i) s += y[1][i];
    else
      for (int64_t i = 0; i < y[0].size(); ++i) s += y[0][i] * dy[i];
    return s;
  };
  // The backward's inputs: softmax takes its own output, the others src.
  Tensor y0 = x.clone();
  if (d.func == ActFunc::softmax) {
    Tensor64 y = std::move(ref::act_fwd(d, {&x})[0]);
    for (int64_t i = 0; i < y.size(); ++i) y0[i] = static_cast<float>(y[i]);
  }
  Tensor64 g = std::move(ref::act_bwd(d, {&y0, xent ? &labels : &dy})[0]);
  const float h = 1.0f / 1024;
  // softmax's input is the rounded fp32 softmax: allow for that rounding.
  const double tol = d.func == ActFunc::softmax ? 1e-5 : 1e-6;
  for (int64_t i = 0; i < x.size(); ++i) {
    const float x0 = x[i];
    x[i] = x0 + h;
    const double up = loss();
    x[i] = x0 - h;
    const double down = loss();
    x[i] = x0;
    EXPECT_NEAR((up - down) / (2 * h), g[i], tol + 1e-6 * std::fabs(g[i]))
        << text << " element " << i;
  }
}

TEST(ActReferenceSmoke, BackwardMatchesFiniteDifferences) {
  for (const char* s : {"relu_mb2ic3ih2", "sigmoid_mb2ic3ih2", "tanh_mb2ic3ih2", "softmax_mb2ic5",
                        "softmax_mb1ic4ih2iw3", "xent_mb3ic6", "xent_mb1ic3ih2"})
    expect_act_fd_matches(s);
}

}  // namespace
}  // namespace pb
