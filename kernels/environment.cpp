// Collects machine and library facts.
#include "kernels/environment.h"

#include <fftw3.h>

#include <cstdio>

#include "kernels/availability.h"
#include "kernels/core/machine.h"

#ifdef PRIMBENCH_HAVE_OPENCL
#include "kernels/opencl/runtime.h"
#endif
#ifdef PRIMBENCH_HAVE_ONEDNN
#include "kernels/vendor_onednn.h"
#endif
#ifdef PRIMBENCH_HAVE_MPI
#include <mpi.h>
#endif

extern "C" char* openblas_get_config();

namespace pb {

namespace {
std::string fmt(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}
}  // namespace

std::vector<std::pair<std::string, std::string>> environment_facts() {
  const MachineInfo& m = machine_info();
  std::vector<std::pair<std::string, std::string>> f = {
      {"cpu_model", m.cpu_model},
      {"threads", std::to_string(m.threads)},
      {"peak_gflops", fmt(m.peak_flops / 1e9)},
      {"triad_gbs", fmt(m.triad_bytes / 1e9)},
      {"openblas", openblas_get_config()},
      {"fftw", fftwf_version},
  };
#ifdef PRIMBENCH_HAVE_OPENCL
  std::string why = opencl_unavailable();
  f.push_back({"opencl_device", why.empty() ? ocl::device_summary() : "none: " + why});
#ifdef PRIMBENCH_CLBLAST_VERSION
  f.push_back({"clblast", PRIMBENCH_CLBLAST_VERSION});
#endif
#else
  f.push_back({"opencl_device", "none: " + opencl_unavailable()});
#endif
#ifdef PRIMBENCH_HAVE_ONEDNN
  f.push_back({"onednn", onednn::version()});
#endif
#ifdef PRIMBENCH_HAVE_MPI
  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(lib, &len);
  std::string s(lib, len);
  f.push_back({"mpi", s.substr(0, s.find(','))});
#endif
  return f;
}

}  // namespace pb
