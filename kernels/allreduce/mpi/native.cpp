// mpi/native: MPI_Allreduce(MPI_SUM), the baseline a user would pick. Open MPI chooses the
// algorithm by size and rank count; its order of summation is fixed for a given (n, p).
#include <algorithm>
#include <cstring>

#include "kernels/allreduce/mpi/comm.h"

namespace pb {
namespace {

class NativeAllreduce : public HostAllreduce {
 public:
  std::string name() const override { return "mpi/native"; }
  void run() override {
    const int64_t n = d_.n;
    if (n == 0) {  // still a collective call, as a user's code would make it
      world::check(MPI_Allreduce(x_->data(), y_.data(), 0, MPI_FLOAT, MPI_SUM, comm_),
                   "MPI_Allreduce");
      return;
    }
    for (int64_t o = 0; o < n; o += kMaxMpiCount)
      world::check(
          MPI_Allreduce(x_->data() + o, y_.data() + o,
                        static_cast<int>(std::min(kMaxMpiCount, n - o)), MPI_FLOAT, MPI_SUM, comm_),
          "MPI_Allreduce");
  }
};

}  // namespace

std::unique_ptr<AllreduceImpl> make_allreduce_mpi_native() {
  return std::make_unique<NativeAllreduce>();
}

}  // namespace pb
