// Why an optional backend is unavailable in this build or on this machine.
#include "kernels/availability.h"

#ifdef PRIMBENCH_HAVE_OPENCL
#include "kernels/opencl/runtime.h"
#endif

namespace pb {

std::string opencl_unavailable() {
#ifdef PRIMBENCH_HAVE_OPENCL
  return ocl::unavailable_reason();
#else
  return "built without OpenCL (CMake did not find OpenCL and CLBlast)";
#endif
}

std::string onednn_unavailable() {
#ifdef PRIMBENCH_HAVE_ONEDNN
  return "";
#else
  return "built without oneDNN (CMake did not find dnnl)";
#endif
}

std::string mpi_unavailable() {
#ifdef PRIMBENCH_HAVE_MPI
  return "";
#else
  return "built without MPI (CMake did not find MPI)";
#endif
}

}  // namespace pb
