// Availability of the optional backends, for registry lines: "" when usable, else the reason.
// The factory macros keep registries free of #ifdefs when a backend is compiled out.
#pragma once

#include <string>

namespace pb {

std::string opencl_unavailable();  // no device, or built without OpenCL
std::string onednn_unavailable();  // built without oneDNN
std::string mpi_unavailable();     // built without MPI

}  // namespace pb

#ifdef PRIMBENCH_HAVE_OPENCL
#define PB_OPENCL_FACTORY(f) f
#else
#define PB_OPENCL_FACTORY(f) nullptr
#endif
#ifdef PRIMBENCH_HAVE_ONEDNN
#define PB_ONEDNN_FACTORY(f) f
#else
#define PB_ONEDNN_FACTORY(f) nullptr
#endif
#ifdef PRIMBENCH_HAVE_MPI
#define PB_MPI_FACTORY(f) f
#else
#define PB_MPI_FACTORY(f) nullptr
#endif
