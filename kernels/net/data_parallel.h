// Data-parallel training across MPI ranks (issue 19): one replica of the network per rank, each
// on a batch of its own; the gradients summed across ranks in buckets by one of the all-reduce
// registry's implementations, as each bucket's gradients become final during the backward (on a
// communication thread, overlapping the rest of the backward, as PyTorch DDP and Horovod do), or
// all after the backward (no overlap); the same SGD update on every rank; the weights compared
// across ranks by hash after every step.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/net/executor.h"

namespace pb {

struct DataParallelOptions {
  std::string allreduce = "mpi/ring";  // an implementation of the all-reduce registry
  // Bucket capacity in MB (1e6 bytes): gradients are packed, in the order the backward makes
  // them final, into buckets of at most this size; a larger tensor gets a bucket of its own.
  double bucket_mb = 25;
  // true: each bucket is all-reduced on a communication thread as soon as its gradients are
  // final, during the rest of the backward; false: every bucket after the backward, on the main
  // thread.
  bool overlap = true;
  // How the waiting thread waits for its all-reduce's messages (mpi/ring, mpi/rdouble,
  // ocl/ring): tests with sleeps between them of up to this many microseconds
  // (world::set_wait_sleep_us), leaving the cores to the compute threads; 0 spins in MPI_Wait.
  // MPI_Allreduce (mpi/native) waits as MPI does. Measured (VGG-16, 2 namespace hosts at
  // 1 Gbit/s, 2 cores): fixed 50 us sleeps slowed the overlapped backward by 66%, 1 ms by 13%.
  // Without overlap the waiting thread has its core to itself: spinning (0) is what callers
  // give there (ResNet-50 at 10 Gbit/s: its all-reduces 174 ms spinning, 241 ms sleeping).
  int wait_sleep_us = 1000;
};

// One data-parallel step, timed on this rank.
struct DpStepTimes {
  double step_ms = 0;       // forward, backward, the all-reduces still running, the update
  double compute_ms = 0;    // the calls (forward, backward, update) on the main thread
  double allreduce_ms = 0;  // the buckets' all-reduces, with their gradient copies in and out
  double exposed_ms = 0;    // what the main thread waited for them: step_ms - compute_ms
  double check_ms = 0;      // after the step (not in step_ms): weights hashed and compared
};

class DataParallel {
 public:
  // Plans the buckets and an all-reduce per bucket: a collective, every rank in the same order.
  // `ex` trains (NetOptions::train) and outlives this object. The process's MPI must allow a
  // communication thread (world::serialized_threads()) when overlapping.
  DataParallel(Executor& ex, const DataParallelOptions& o);
  ~DataParallel();
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  // One training step with the gradients all-reduced, then the weights' hash compared across
  // ranks: RuntimeError on every rank when they differ. `index` numbers the step in messages.
  DpStepTimes step(int index);

  struct Bucket {
    int64_t elems = 0;
    size_t ready_after = 0;            // the executor's call after which it is complete
    std::vector<std::string> tensors;  // "<layer>.<what>", in the bucket's order
  };
  // Every bucket's all-reduce once, back to back on this thread, with the gradients copied in
  // and out as a step does (`copies`) or not: the milliseconds they took, the slowest rank's (a
  // collective; the busbw of the projection). Waits as set_wait_sleep_us(wait_sleep_us) says.
  // *cpu_ms, when given: the CPU time this process spent meanwhile (user and system).
  double time_allreduces(int wait_sleep_us, bool copies = false, double* cpu_ms = nullptr);
  const std::vector<Bucket>& buckets() const;
  double gradient_bytes() const;
  const DataParallelOptions& options() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> p_;
};

// The options of the replica on rank `rank` of `ranks`: its batch (and dropout's masks) drawn
// from a seed of its own (NetOptions::data_seed), and the learning rate divided by `ranks`, so
// that the update with the gradients summed over the ranks is that of the combined batch (the
// mean loss over every rank's samples), as DDP's averaged gradients give.
NetOptions replica_options(const NetOptions& opt, int rank, int ranks);

// A 64-bit hash of the trainable tensors' bytes (for the cross-rank weights check).
uint64_t weights_hash(Executor& ex);

// The ranks' configuration must agree before anything is planned: each (field, value) is
// compared across ranks in order (a collective); a difference is an InputError naming the field
// on every rank.
void agree_across_ranks(const std::vector<std::pair<std::string, std::string>>& fields);

// A text that differs when two networks differ in any layer, shape or size.
std::string network_signature(const Network& net);

}  // namespace pb
