// Data-parallel training without MPI: the gradient buckets (report.h plan_buckets), the replayed
// projection (replay_step, project_data_parallel's overlap fields), the buckets a trained
// executor reports, and the CLI's data-parallel options (a bad value or combination exits 2
// naming the flag). The MPI runs are tests/mpi/test_data_parallel.cpp and tests/mpi/dp_faults.sh.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/net/report.h"
#include "tests/cli_runner.h"

namespace pb {
namespace {

using test::CliResult;
using test::run_cli;

TEST(DataParallelSmoke, BucketsFollowTheBackwardAndTheCapacity) {
  // Tensors 0..4 (bytes in MB), final after calls 9, 9, 5, 7, 2: the backward finishes 4, 2, 3,
  // then 0 and 1 together (in their order).
  const std::vector<double> mb = {10e6, 1e6, 20e6, 6e6, 30e6};
  const std::vector<size_t> ready = {9, 9, 5, 7, 2};
  std::vector<GradBucket> b = plan_buckets(mb, ready, 25);
  // 30 MB alone (larger than a bucket); 20 + 6 > 25: apart; 6 + 10 + 1 fit.
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].tensors, std::vector<size_t>({4}));
  EXPECT_EQ(b[0].ready_after, 2u);
  EXPECT_EQ(b[1].tensors, std::vector<size_t>({2}));
  EXPECT_EQ(b[2].tensors, std::vector<size_t>({3, 0, 1}));
  EXPECT_EQ(b[2].ready_after, 9u);
  EXPECT_DOUBLE_EQ(b[2].bytes, 17e6);
  EXPECT_EQ(plan_buckets(mb, ready, 1000).size(), 1u);
  EXPECT_EQ(plan_buckets(mb, ready, 0.5).size(), 5u);
}

TEST(DataParallelSmoke, ReplayOverlapsTheBackward) {
  // Calls: 4 of 10 ms (forward 0-1, backward 2-3), then an update of 1 ms. Two buckets of
  // 100 MB at 1 GB/s busbw on 2 ranks: 100 ms each (2(p-1)/p = 1), plus alpha 2 ms.
  const std::vector<double> calls = {10, 10, 10, 10, 1};
  std::vector<GradBucket> b(2);
  b[0].bytes = b[1].bytes = 100e6;
  b[0].ready_after = 2, b[1].ready_after = 3;
  // No overlap: 40 + 2 x 102 + 1.
  EXPECT_NEAR(replay_step(calls, 4, b, 2, 1.0, 2, false), 245, 1e-9);
  // Overlap: bucket 0 starts at 30 (after call 2), bucket 1 at 132; the update at 234.
  EXPECT_NEAR(replay_step(calls, 4, b, 2, 1.0, 2, true), 235, 1e-9);
  // A fast link hides all but the last bucket after the backward: 40 + 2 + 0.1 + 1.
  EXPECT_NEAR(replay_step(calls, 4, b, 2, 1000.0, 2, true), 43.1, 1e-9);
  // No spare core: an all-reduce started during the backward takes its CPU work (10 ms per
  // 100 MB here) from it; bucket 1 starts after the backward, so only bucket 0's counts.
  EXPECT_NEAR(replay_step(calls, 4, b, 2, 1000.0, 2, true, 1e-7), 53.1, 1e-9);
  EXPECT_NEAR(replay_step(calls, 4, b, 2, 1000.0, 2, false, 1e-7), 45.2, 1e-9);
  // One rank: nothing to all-reduce.
  EXPECT_NEAR(replay_step(calls, 4, b, 1, 1.0, 2, true), 41, 1e-9);

  NetResult r;
  r.step_ms = 45;  // the calls (41) and 4 ms between them
  r.call_ms = calls;
  r.update_begin = 4;
  r.buckets = b;
  r.layers.push_back({});
  r.layers.back().grad_bytes = 200000000;
  const std::vector<Projection> p = project_data_parallel(r, {{2, 1.0, "", 0}}, 2);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NEAR(p[0].step_ms, 245, 1e-9);          // 45 + 200 ms: the no-overlap bound
  EXPECT_NEAR(p[0].overlap_step_ms, 239, 1e-9);  // 45 + (235 - 41) exposed
  EXPECT_NEAR(p[0].overlap_efficiency, 45.0 / 239, 1e-12);
}

// A trained executor reports its calls and buckets for the replay; inference does not.
TEST(DataParallelSmoke, TrainingResultsCarryTheirBuckets) {
  NetOptions opt;
  opt.policy = "first";
  opt.find_cache = "off";
  opt.train = true;
  Executor ex(Network::load("tiny_resnet"), opt);
  const NetResult r = measure_network(ex, opt, 0, 1);
  ASSERT_FALSE(r.buckets.empty());
  EXPECT_EQ(r.call_ms.size(), ex.calls().size());
  EXPECT_EQ(r.update_begin, ex.update_begin());
  EXPECT_LT(r.buckets.back().ready_after, r.update_begin);
  double bytes = 0;
  for (const GradBucket& b : r.buckets) bytes += b.bytes;
  EXPECT_DOUBLE_EQ(bytes, gradient_bytes(r));
  opt.train = false;
  Executor infer(Network::load("tiny_resnet"), opt);
  EXPECT_TRUE(measure_network(infer, opt, 0, 1).buckets.empty());
}

TEST(DataParallelSmoke, BadOptionsNameTheFlag) {
  for (const auto& [args, flag] : std::vector<std::pair<std::string, std::string>>{
           {"net tiny_resnet --data-parallel", "--data-parallel"},
           {"net tiny_resnet --train --no-overlap", "--no-overlap"},
           {"net tiny_resnet --train --allreduce mpi/ring", "--allreduce"},
           {"net tiny_resnet --train --data-parallel --bucket-mb 0", "--bucket-mb"},
           {"net tiny_resnet --train --data-parallel --bucket-mb x", "--bucket-mb"},
           {"net tiny_resnet --train --data-parallel --dp-timeout -1", "--dp-timeout"},
           {"net tiny_resnet --train --data-parallel --wait-sleep-us -5", "--wait-sleep-us"},
           {"net tiny_resnet --train --data-parallel --check", "--check"},
           {"net tiny_resnet --train --data-parallel --allreduce mpi/none", "--allreduce"},
       }) {
    const CliResult c = run_cli(args);
    EXPECT_EQ(c.status, 2) << args << ": " << c.out;
    EXPECT_NE(c.out.find(flag), std::string::npos) << args << ": " << c.out;
  }
  const CliResult env =
      run_cli("net tiny_resnet --train --data-parallel", "PRIMBENCH_DP_TIMEOUT=0");
  EXPECT_EQ(env.status, 2) << env.out;
  EXPECT_NE(env.out.find("PRIMBENCH_DP_TIMEOUT"), std::string::npos) << env.out;
}

}  // namespace
}  // namespace pb
