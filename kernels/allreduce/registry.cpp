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

const Registry<AllreduceDesc>& allreduce_registry() {
  static const Registry<AllreduceDesc> r = {
      {"mpi/native", PB_MPI_FACTORY(make_allreduce_mpi_native), mpi_unavailable},
      {"mpi/ring", PB_MPI_FACTORY(make_allreduce_mpi_ring), mpi_unavailable},
      {"mpi/rdouble", PB_MPI_FACTORY(make_allreduce_mpi_rdouble), mpi_unavailable},
      {"ocl/ring", PB_MPI_FACTORY(make_allreduce_ocl_ring), mpi_opencl_unavailable},
  };
  return r;
}

}  // namespace pb
