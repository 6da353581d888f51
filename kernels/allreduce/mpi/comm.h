// MPI-side helpers shared by the MPI implementations: the private communicator, error checks,
// and the base class that agrees on n and keeps the input and output vectors.
#pragma once

#include <mpi.h>

#include <vector>

#include "kernels/allreduce/allreduce.h"
#include "kernels/allreduce/world.h"
#include "kernels/core/tensor.h"

namespace pb::world {
// A duplicate of MPI_COMM_WORLD, so our messages never match a user's (initialises MPI).
MPI_Comm comm();
// Throws RuntimeError "<call> failed: <MPI error string>" when err != MPI_SUCCESS.
void check(int err, const char* call);
// Waits for n requests as set_wait_sleep_us() says for this thread (MPI_Waitall, or tests with
// sleeps between them); `call` names the wait in errors.
void wait_all(int n, MPI_Request* reqs, const char* call);
inline void wait(MPI_Request* req, const char* call) {
  wait_all(1, req, call);
}
}  // namespace pb::world

namespace pb {

// Largest element count of one MPI message: counts are int.
constexpr int64_t kMaxMpiCount = int64_t{1} << 30;

// Base of the host-memory MPI implementations: plan() agrees on n across ranks (InputError
// on mismatch) and allocates the output; result() returns it.
class HostAllreduce : public AllreduceImpl {
 public:
  Support supports(const AllreduceDesc&, Dir dir) const override {
    return dir == Dir::fwd ? Support::yes() : Support::no("allreduce runs fwd only");
  }
  void plan(const AllreduceDesc& d, Dir, const std::vector<const Tensor*>& in) override;
  std::vector<Tensor> result() override;
  const Tensor* output_view(size_t i) const override { return i == 0 ? &y_ : nullptr; }

 protected:
  AllreduceDesc d_;
  const Tensor* x_ = nullptr;
  Tensor y_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
};

// Sends scount floats to `dest` while receiving rcount floats from `source` (either may be 0 or
// MPI_PROC_NULL), in messages of at most kMaxMpiCount elements; waits for both.
void exchange(const float* send, int64_t scount, int dest, float* recv, int64_t rcount, int source,
              MPI_Comm comm, int tag);

// dst[i] = a[i] + b[i] for i < n (a may alias dst): the one host reduction loop.
void add_vectors(float* dst, const float* a, const float* b, int64_t n);

}  // namespace pb
