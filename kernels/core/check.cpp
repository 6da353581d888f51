// Element-wise comparison with normwise, max-abs and max-rel errors, and the mistrust rule.
#include "kernels/core/check.h"

#include <cmath>
#include <cstdio>

namespace pb {

void Comparator::add(int64_t index, double got, double ref) {
  ++n_;
  if (ref == 0) ++zeros_;
  if (!std::isfinite(got) && std::isfinite(ref)) non_finite_ = true;
  double d = std::fabs(got - ref);
  if (!(d <= max_abs_)) {  // also catches NaN
    max_abs_ = std::isnan(d) ? INFINITY : d;
    worst_ = index;
    worst_got_ = got;
    worst_ref_ = ref;
  }
  if (ref != 0) max_rel_ = std::fmax(max_rel_, d / std::fabs(ref));
  err2_ += d * d;
  ref2_ += ref * ref;
}

void Comparator::merge(const Comparator& o) {
  if (o.max_abs_ > max_abs_ || worst_ < 0) {
    max_abs_ = o.max_abs_;
    worst_ = o.worst_;
    worst_got_ = o.worst_got_;
    worst_ref_ = o.worst_ref_;
  }
  n_ += o.n_;
  zeros_ += o.zeros_;
  max_rel_ = std::fmax(max_rel_, o.max_rel_);
  err2_ += o.err2_;
  ref2_ += o.ref2_;
  non_finite_ = non_finite_ || o.non_finite_;
}

CheckResult Comparator::finish(const Tolerance& tol, bool sampled) const {
  CheckResult r;
  r.checked = n_;
  r.sampled = sampled;
  r.max_abs = max_abs_;
  r.max_rel = max_rel_;
  r.l2_rel = ref2_ > 0 ? std::sqrt(err2_ / ref2_) : std::sqrt(err2_);
  if (non_finite_) r.l2_rel = INFINITY;
  r.worst_index = worst_;
  r.worst_got = worst_got_;
  r.worst_ref = worst_ref_;
  r.zero_frac = n_ ? static_cast<double>(zeros_) / n_ : 0;
  r.non_finite = non_finite_;
  // More than 95% exact zeros in the reference: an implementation that writes zeros would pass.
  r.mistrusted = n_ > 16 && r.zero_frac > 0.95;
  r.pass = !non_finite_ && r.l2_rel <= tol.l2_rel && (tol.l2_rel > 0 || max_abs_ == 0);
  return r;
}

std::string CheckResult::summary() const {
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "%s err_l2=%.3g max_abs=%.3g max_rel=%.3g worst[%lld] got=%.9g ref=%.9g "
                "zeros=%.1f%% checked=%lld%s",
                pass ? (mistrusted ? "MISTRUSTED" : "PASS") : "FAIL", l2_rel, max_abs, max_rel,
                static_cast<long long>(worst_index), worst_got, worst_ref, 100 * zero_frac,
                static_cast<long long>(checked), sampled ? " (sampled)" : "");
  return size_mismatch ? std::string(buf) + " (sizes differ)" : std::string(buf);
}

}  // namespace pb
