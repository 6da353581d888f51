// The network tests' executor options and backend check (test_net.cpp, test_net_training.cpp).
#pragma once

#include <string>

#include "kernels/availability.h"
#include "kernels/net/executor.h"

namespace pb::test {

// Options for `backend` and `policy`, no find cache, learning rate 0 (gradients are compared at
// the initial weights; tests that train set their own).
inline NetOptions options(const std::string& backend, const std::string& policy, bool train) {
  NetOptions o;
  o.backend = backend, o.policy = policy, o.train = train, o.find_cache = "off";
  o.lr = 0;
  return o;
}

inline bool backend_available(const std::string& b) {
  if (b == "onednn") return onednn_unavailable().empty();
  if (b == "ocl") return opencl_unavailable().empty();
  return true;
}

}  // namespace pb::test
