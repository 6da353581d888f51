// Data-parallel training under mpirun (issue 19), run by ctest with 2 and 3 ranks on one host
// and over tools/cluster's namespace hosts: after two steps every rank holds the same weights,
// and their change from the initial weights is the combined batch's, computed on every rank
// locally from every rank's batch (no communication): summed over per-rank executors (each
// rank's batch-norm statistics are its own, as in DDP without SyncBatchNorm), and for a network
// without batch-norm (tiny_lstm) also one executor on the combined batch.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kernels/allreduce/allreduce.h"
#include "kernels/allreduce/world.h"
#include "kernels/core/check.h"
#include "kernels/core/error.h"
#include "kernels/core/threads.h"
#include "kernels/net/data_parallel.h"
#include "kernels/net/dp_report.h"
#include "tests/mpi/mpi_gtest_main.h"

namespace pb {
namespace {

constexpr int kSteps = 2;

NetOptions base_options(const std::string& backend) {
  NetOptions o;
  o.backend = backend;
  o.policy = "first";
  o.train = true;
  o.find_cache = "off";
  // Large enough that a step's change of the weights stays far above their fp32 rounding
  // (the change is compared, not the weights).
  o.lr = 1.0f;
  return o;
}

std::vector<Tensor> weights_of(Executor& ex) {
  std::vector<Tensor> v;
  for (const auto& [name, t] : ex.param_values()) v.push_back(t->clone());
  return v;
}

// The change of the weights after kSteps of the combined batch, with the gradients of every
// rank's batch summed in fp64 at the same weights, and the update applied to the fp32 weights
// as the executor's SGD does (its fp32 step size, one rounding per update).
std::vector<Tensor> accumulated_change(const Network& net, const NetOptions& opt, int ranks) {
  std::vector<std::unique_ptr<Executor>> ex;
  for (int r = 0; r < ranks; ++r)
    ex.push_back(std::make_unique<Executor>(net, replica_options(opt, r, ranks)));
  const std::vector<Tensor> w0 = weights_of(*ex[0]);
  std::vector<Tensor> w = weights_of(*ex[0]);
  const float step = replica_options(opt, 0, ranks).lr / static_cast<float>(net.mb);
  for (int s = 0; s < kSteps; ++s) {
    std::vector<Tensor64> sum;
    for (const Tensor& t : w) sum.emplace_back(t.dims());
    for (auto& e : ex) {
      const auto params = e->params();  // every replica at the same weights
      for (size_t k = 0; k < params.size(); ++k)
        for (int64_t i = 0; i < w[k].size(); ++i) (*params[k].second)[i] = w[k][i];
      e->step();
      const std::vector<const Tensor*> g = e->param_grads();
      for (size_t k = 0; k < g.size(); ++k)
        for (int64_t i = 0; i < g[k]->size(); ++i) sum[k][i] += (*g[k])[i];
    }
    for (size_t k = 0; k < w.size(); ++k)
      for (int64_t i = 0; i < w[k].size(); ++i) w[k][i] += -step * static_cast<float>(sum[k][i]);
  }
  for (size_t k = 0; k < w.size(); ++k)
    for (int64_t i = 0; i < w[k].size(); ++i) w[k][i] -= w0[k][i];
  return w;
}

// The change after kSteps of one executor on the combined batch: every rank's samples in one
// batch (sequences interleave: positions are step-major).
std::vector<Tensor> combined_change(const Network& net, const NetOptions& opt, int ranks) {
  Executor whole(net.with_batch(net.batch() * ranks), opt);
  const std::vector<Tensor> w0 = weights_of(whole);
  const int64_t n = net.batch(), steps = net.seq;
  for (int r = 0; r < ranks; ++r) {
    Executor part(net, replica_options(opt, r, ranks));
    for (auto [from, to] : {std::pair<Tensor*, Tensor*>{&part.input(), &whole.input()},
                            std::pair<Tensor*, Tensor*>{&part.labels(), &whole.labels()}}) {
      const int64_t row = from->size() / (n * steps);
      for (int64_t t = 0; t < steps; ++t)
        std::memcpy(to->data() + (t * ranks * n + r * n) * row, from->data() + t * n * row,
                    static_cast<size_t>(n * row) * sizeof(float));
    }
  }
  for (int s = 0; s < kSteps; ++s) whole.step();
  std::vector<Tensor> d = weights_of(whole);
  for (size_t k = 0; k < d.size(); ++k)
    for (int64_t i = 0; i < d[k].size(); ++i) d[k][i] -= w0[k][i];
  return d;
}

struct Case {
  std::string net, backend, allreduce;
  bool overlap;
  double bucket_mb;
};

std::string case_name(const ::testing::TestParamInfo<Case>& i) {
  std::string s = i.param.net + "_" + i.param.backend + "_" + i.param.allreduce +
                  (i.param.overlap ? "_overlap" : "_no_overlap") +
                  (i.param.bucket_mb < 1 ? "_small_buckets" : "");
  for (char& c : s)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

class DataParallelTest : public ::testing::TestWithParam<Case> {};

TEST_P(DataParallelTest, WeightsMatchTheCombinedBatchOnEveryRank) {
  const Case& c = GetParam();
  const int p = world::size(), rank = world::rank();
  for (const auto& e : allreduce_registry())
    if (e.name == c.allreduce && !e.unavailable().empty()) GTEST_SKIP() << e.unavailable();
  const Network net = Network::load(c.net);
  const NetOptions opt = base_options(c.backend);
  Executor ex(net, replica_options(opt, rank, p));
  const std::vector<Tensor> w0 = weights_of(ex);
  DataParallelOptions dpo;
  dpo.allreduce = c.allreduce, dpo.overlap = c.overlap, dpo.bucket_mb = c.bucket_mb;
  std::unique_ptr<DataParallel> dp;
  try {
    dp = std::make_unique<DataParallel>(ex, dpo);
  } catch (const Unsupported& e) {
    GTEST_SKIP() << e.what();
  }
  if (c.bucket_mb < 1) {
    EXPECT_GT(dp->buckets().size(), 2u) << "small buckets: several of them";
  }
  for (int s = 1; s <= kSteps; ++s) dp->step(s);  // each checks the weights across ranks too
  // Identical on every rank, independently of DataParallel's own check.
  EXPECT_TRUE(world::same_on_all_ranks(weights_hash(ex))) << "weights differ across ranks";
  std::vector<Tensor> change = weights_of(ex);
  for (size_t k = 0; k < change.size(); ++k)
    for (int64_t i = 0; i < change[k].size(); ++i) change[k][i] -= w0[k][i];

  const Tolerance tol = tolerance("net", "*", false);
  const auto names = ex.param_values();
  const std::vector<Tensor> want = accumulated_change(net, opt, p);
  ASSERT_EQ(want.size(), change.size());
  for (size_t k = 0; k < change.size(); ++k) {
    const CheckResult r = compare_tensors(change[k], want[k], tol);
    EXPECT_TRUE(r.pass && !r.mistrusted)
        << names[k].first << " (rank " << rank << " of " << p << "): " << r.summary();
  }
  // Without batch-norm the update is exactly the combined batch's in one executor.
  bool has_bnorm = false;
  for (const Layer& l : net.layers) has_bnorm = has_bnorm || l.kind == LayerKind::bnorm;
  if (!has_bnorm) {
    const std::vector<Tensor> whole = combined_change(net, opt, p);
    for (size_t k = 0; k < change.size(); ++k) {
      const CheckResult r = compare_tensors(change[k], whole[k], tol);
      EXPECT_TRUE(r.pass && !r.mistrusted)
          << names[k].first << " against one executor on the combined batch: " << r.summary();
    }
  }
}

std::vector<Case> cases() {
  std::vector<Case> v;
  for (const char* net : {"tiny_resnet", "tiny_lstm"})
    for (const char* impl : {"mpi/ring", "mpi/native", "mpi/rdouble"})
      for (bool overlap : {true, false}) v.push_back({net, "cpu", impl, overlap, 25});
  // Many small buckets (each layer's gradients apart, overlapping the backward's later calls).
  v.push_back({"tiny_resnet", "cpu", "mpi/ring", true, 0.0005});
  v.push_back({"tiny_lstm", "cpu", "mpi/native", true, 0.0002});
  // oneDNN's fused training plan; the OpenCL backend with every tensor on the device, reduced by
  // ocl/ring on device buckets or staged through the host by mpi/ring.
  v.push_back({"tiny_resnet", "onednn", "mpi/ring", true, 0.0005});
  v.push_back({"tiny_resnet", "ocl", "ocl/ring", true, 0.0005});
  v.push_back({"tiny_resnet", "ocl", "mpi/ring", false, 25});
  v.push_back({"tiny_lstm", "ocl", "ocl/ring", true, 25});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Nets, DataParallelTest, ::testing::ValuesIn(cases()), case_name);

}  // namespace
}  // namespace pb

int main(int argc, char** argv) {
  // As primbench net --data-parallel: the ranks of a machine share its cores (OpenMP threads
  // beyond them spin against each other's ranks).
  pb::set_threads(pb::data_parallel_threads());
  return pb::run_mpi_gtests(argc, argv);
}
