// The network executor's accessors (see executor.h): what a step left (loss, output, calls,
// gradients), the trainable tensors, where the gradients are final, the planned memory.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kernels/core/error.h"
#include "kernels/net/executor.h"
#include "kernels/net/executor_impl.h"

namespace pb {

size_t Executor::update_begin() const {
  size_t i = p_->calls.size();
  while (i > 0 && p_->calls[i - 1]->info.phase == "sgd") --i;
  return i;
}

std::vector<size_t> Executor::grad_ready_after() const {
  const size_t update = update_begin();
  std::unordered_map<std::string, size_t> last;  // layer -> its last call before the updates
  for (size_t i = 0; i < update; ++i) last[p_->calls[i]->info.layer] = i;
  std::vector<size_t> v;
  for (size_t l = 0; l < p_->st.size(); ++l) {
    const auto& s = p_->st[l];
    const int n = (s.w.size() > 0) + (s.b.size() > 0) + (s.scale.size() > 0) +
                  (s.shift.size() > 0) + (s.r.size() > 0);
    auto it = last.find(p_->net.layers[l].name);
    if (n && it == last.end())
      throw RuntimeError("layer " + p_->net.layers[l].name + " has weights but no call");
    for (int k = 0; k < n; ++k) v.push_back(it->second);
  }
  return v;
}

const std::string& Executor::composition() const {
  return p_->composition;
}
int Executor::reorders() const {
  return p_->reorders;
}

const std::string& Executor::residency() const {
  return p_->residency;
}

double Executor::loss() const {
  p_->pull();
  for (size_t l = 0; l < p_->st.size(); ++l)
    if (p_->st[l].loss) {
      const Tensor& t = *p_->st[l].loss;
      double s = 0;
      for (int64_t i = 0; i < t.size(); ++i) s += t[i];
      return s / static_cast<double>(t.size());
    }
  return std::numeric_limits<double>::quiet_NaN();
}

const Tensor& Executor::output() const {
  p_->pull();
  const Network& n = p_->net;
  size_t l = n.layers.size() - 1;
  if (n.has_loss()) l = n.layers[l].inputs[0];
  return *p_->st[l].act;
}

std::vector<double> Executor::isolated_ms(int reps) {
  std::vector<double> v;
  for (auto& c : p_->calls) {
    double best = std::numeric_limits<double>::infinity();
    for (int r = 0; r < std::max(1, reps); ++r) best = std::min(best, Impl::time_once(*c));
    v.push_back(best);
  }
  p_->host_stale = p_->dev != nullptr;
  return v;
}

const std::vector<CallInfo>& Executor::calls() const {
  return p_->infos;
}
const Network& Executor::network() const {
  return p_->net;
}
int Executor::fallbacks() const {
  return p_->fallbacks;
}
Tensor& Executor::input() {
  p_->pull();
  p_->push_due = true;
  return p_->st[0].own;
}
Tensor& Executor::labels() {
  p_->pull();
  p_->push_due = true;
  return p_->labels;
}

int64_t Executor::baseline_rss_bytes() const {
  return p_->baseline_rss;
}
size_t Executor::baseline_device_bytes() const {
  return p_->baseline_device;
}

size_t Executor::planned_bytes() const {
  size_t b = p_->labels.bytes();
  for (const auto& c : p_->calls) b += c->bytes();
  for (const auto& c : p_->retired) b += c->bytes();
  for (const auto& s : p_->st)
    for (const Tensor* t :
         {&s.own, &s.w, &s.b, &s.scale, &s.shift, &s.rmean, &s.rvar, &s.r, &s.h0, &s.c0,
          &s.dw_fc_bias, &s.own_grad, &s.zeros, &s.zeros_w, &s.zeros_d, &s.dx})
      b += t->bytes();
  for (const auto& s : p_->st)
    for (const Tensor& t : s.parts) b += t.bytes();
  for (const auto& t : p_->typed_acts) b += t->size();  // the typed hand-off's copies
  return b;
}

std::vector<std::pair<std::string, Tensor*>> Executor::params() {
  p_->pull();
  p_->push_weights = true;
  ++p_->weights_version;  // the caller may change them
  std::vector<std::pair<std::string, Tensor*>> v;
  for (size_t l = 0; l < p_->st.size(); ++l) {
    auto& s = p_->st[l];
    const std::string& n = p_->net.layers[l].name;
    if (s.w.size()) v.push_back({n + ".w", &s.w});
    if (s.b.size()) v.push_back({n + ".b", &s.b});
    if (s.scale.size()) v.push_back({n + ".scale", &s.scale});
    if (s.shift.size()) v.push_back({n + ".shift", &s.shift});
    if (s.r.size()) v.push_back({n + ".R", &s.r});
  }
  return v;
}

std::vector<std::pair<std::string, const Tensor*>> Executor::param_values() {
  const bool due = p_->push_weights;
  const int version = p_->weights_version;
  std::vector<std::pair<std::string, const Tensor*>> v;
  for (const auto& [n, t] : params()) v.push_back({n, t});
  p_->push_weights = due, p_->weights_version = version;  // nothing was handed out for writing
  return v;
}

void* Executor::device_buffer(const Tensor* t) const {
  if (!p_->dev) return nullptr;
  auto it = p_->mirror.find(t);
  return it == p_->mirror.end() ? nullptr : it->second;
}

std::vector<const Tensor*> Executor::param_grads() {
  p_->pull();
  std::vector<const Tensor*> v;
  for (auto& s : p_->st) {
    if (s.w.size()) v.push_back(s.dw);
    if (s.b.size()) v.push_back(s.db);
    if (s.scale.size()) v.push_back(s.dscale);
    if (s.shift.size()) v.push_back(s.dshift);
    if (s.r.size()) v.push_back(s.dr);
  }
  return v;
}

}  // namespace pb
