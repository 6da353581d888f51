// Collects machine and library facts.
#include "kernels/environment.h"

#include <fftw3.h>

#include <cstdint>
#include <cstdio>
#include <fstream>

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

std::vector<std::pair<std::string, std::string>> library_versions() {
  std::vector<std::pair<std::string, std::string>> f = {
      {"openblas", openblas_get_config()},
      {"fftw", fftwf_version},
  };
#ifdef PRIMBENCH_CLBLAST_VERSION
  f.push_back({"clblast", PRIMBENCH_CLBLAST_VERSION});
#endif
#ifdef PRIMBENCH_HAVE_ONEDNN
  f.push_back({"onednn", onednn::version()});
#endif
  return f;
}

const std::string& build_id() {
  static const std::string id = [] {
    // FNV-1a over the running binary: a rebuild that changes any code changes the id.
    std::ifstream f("/proc/self/exe", std::ios::binary);
    uint64_t h = 1469598103934665603ull;
    std::vector<char> buf(1 << 16);
    bool read = false;
    while (f.read(buf.data(), static_cast<std::streamsize>(buf.size())) || f.gcount() > 0) {
      read = true;
      for (std::streamsize i = 0; i < f.gcount(); ++i)
        h = (h ^ static_cast<unsigned char>(buf[i])) * 1099511628211ull;
    }
    char out[24];
    std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
    return read ? std::string(out) : std::string("unknown");
  }();
  return id;
}

std::vector<std::pair<std::string, std::string>> environment_facts() {
  const MachineInfo& m = machine_info();
  std::vector<std::pair<std::string, std::string>> f = {
      {"cpu_model", m.cpu_model},
      {"threads", std::to_string(m.threads)},
      {"peak_gflops", fmt(m.peak_flops / 1e9)},
      {"triad_gbs", fmt(m.triad_bytes / 1e9)},
      {"build_id", build_id()},
  };
  for (auto& v : library_versions()) f.push_back(std::move(v));
#ifdef PRIMBENCH_HAVE_OPENCL
  std::string why = opencl_unavailable();
  f.push_back({"opencl_device", why.empty() ? ocl::device_summary() : "none: " + why});
#else
  f.push_back({"opencl_device", "none: " + opencl_unavailable()});
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
