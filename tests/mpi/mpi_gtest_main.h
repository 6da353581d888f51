// The main() of the gtest binaries ctest runs under mpirun: MPI first, only rank 0 prints the
// usual output (the others their failures, prefixed with the rank), every rank's verdict counts.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>

#include "kernels/allreduce/world.h"

namespace pb {

// On ranks other than 0 only failures are printed, prefixed with the rank.
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.failed())
      std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_,
                   r.file_name() ? r.file_name() : "?", r.line_number(), r.summary());
  }

 private:
  int rank_;
};

inline int run_mpi_gtests(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int rank = world::rank();  // initialises MPI before any test
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(rank));
  }
  const int rc = RUN_ALL_TESTS();
  return world::max_over_ranks(rc);  // every rank's verdict counts
}

}  // namespace pb
