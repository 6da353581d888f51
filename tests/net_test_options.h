// The network tests' executor options, backend check, temporary network files and reference
// comparisons (test_net.cpp, test_net_fused.cpp, test_net_training.cpp).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "kernels/availability.h"
#include "kernels/core/check.h"
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

// A network file with `body` in the test temp folder; returns its path.
inline std::string temp_net(const std::string& body) {
  static int n = 0;
  // The pid too: ctest -j runs the tests of this file as parallel processes.
  const std::string path = testing::TempDir() + "pb_net_" + std::to_string(::getpid()) + "_" +
                           std::to_string(n++) + ".txt";
  std::ofstream(path) << body;
  return path;
}

inline CheckResult compare(const Tensor& got, const Tensor& ref) {
  return compare_tensors(got, ref, tolerance("net", "*", false));
}

// Each backend x policy of `runs` against the fp64 reference composition of network `name`,
// inference and training: output, loss and (training) every gradient after two steps at lr 0.
using Runs = std::vector<std::pair<std::string, std::vector<std::string>>>;
inline void expect_matches_reference(const Network& net, const Runs& runs) {
  const std::string& name = net.name;
  for (bool train : {false, true}) {
    Executor ref(net, options("ref", "first", train));
    ref.step();
    ref.step();  // as many steps as below: a dropout mask is drawn per step
    std::vector<const Tensor*> ref_grads = ref.param_grads();
    for (const auto& [backend, policies] : runs) {
      if (!backend_available(backend)) continue;
      for (const std::string& policy : policies) {
        SCOPED_TRACE(name + " " + backend + " " + policy + (train ? " train" : " infer"));
        Executor ex(net, options(backend, policy, train));
        if (backend == "ocl") {
          EXPECT_EQ(ex.residency(), "device");
        }
        ex.step();
        ex.step();  // a second step must give the same (lr 0): nothing stale, nothing doubled
        CheckResult r = compare(ex.output(), ref.output());
        EXPECT_TRUE(r.pass) << r.summary();
        EXPECT_NEAR(ex.loss(), ref.loss(), 1e-4 * std::fabs(ref.loss()));
        if (!train) continue;
        std::vector<const Tensor*> g = ex.param_grads();
        auto names = ex.params();
        ASSERT_EQ(g.size(), ref_grads.size());
        for (size_t i = 0; i < g.size(); ++i) {
          CheckResult rg = compare(*g[i], *ref_grads[i]);
          EXPECT_TRUE(rg.pass) << names[i].first << ": " << rg.summary();
        }
      }
    }
  }
}

}  // namespace pb::test
