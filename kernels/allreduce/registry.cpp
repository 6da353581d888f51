// The all-reduce registry: one line per implementation. Tests, benchmarks and the CLI iterate it.
#include "kernels/allreduce/allreduce.h"
#include "kernels/availability.h"

namespace pb {

namespace {
// ocl/ring needs MPI and an OpenCL device.
std::string mpi_opencl_unavailable() {
  std::string why = mpi_unavailable();
  return why.empty() ? opencl_unavailable() : why;
}
}  // namespace

const std::vector<std::string>& ompi_allreduce_algorithms() {
  static const std::vector<std::string> v = {"basic_linear", "nonoverlapping", "recursive_doubling",
                                             "ring",         "segmented_ring", "rabenseifner"};
  return v;
}

const Registry<AllreduceDesc>& allreduce_registry() {
  static const Registry<AllreduceDesc> r = [] {
    Registry<AllreduceDesc> v = {
        {"mpi/native", PB_MPI_FACTORY(make_allreduce_mpi_native), mpi_unavailable},
        {"mpi/ring", PB_MPI_FACTORY(make_allreduce_mpi_ring), mpi_unavailable},
        {"mpi/rdouble", PB_MPI_FACTORY(make_allreduce_mpi_rdouble), mpi_unavailable},
        {"ocl/ring", PB_MPI_FACTORY(make_allreduce_ocl_ring), mpi_opencl_unavailable},
    };
    // Open MPI's own algorithms, forced through coll tuned (skipped with the reason where it
    // cannot be: another MPI, coll tuned absent, one rank).
    const auto& algs = ompi_allreduce_algorithms();
    for (size_t i = 0; i < algs.size(); ++i) {
      const int alg = static_cast<int>(i) + 1;
      (void)alg;  // unused without MPI
      v.emplace_back("mpi/ompi_" + algs[i],
                     PB_MPI_FACTORY([alg] { return make_allreduce_mpi_ompi(alg); }),
                     mpi_unavailable);
    }
    return v;
  }();
  return r;
}

}  // namespace pb
