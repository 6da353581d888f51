// Collects machine, build and library facts.
#include "kernels/environment.h"

#include <fftw3.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "kernels/availability.h"
#include "kernels/core/amx.h"
#include "kernels/core/io.h"
#include "kernels/core/machine.h"
#include "kernels/core/meter.h"
#include "kernels/core/vmath.h"
#include "kernels/gemm/cpu/packed_sgemm.h"
#include "kernels/gemm/cpu/sgemm.h"

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
extern "C" char* openblas_get_corename();

namespace pb {

namespace {
std::string fmt(double v, const char* spec = "%.1f") {
  char b[32];
  std::snprintf(b, sizeof b, spec, v);
  return b;
}

std::string env_or(const char* name, const char* fallback = "") {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

std::string os_name() {
  std::ifstream f("/etc/os-release");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("PRETTY_NAME=", 0) == 0) {
      std::string v = line.substr(12);
      if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
      return v;
    }
  }
  return "unknown";
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
  if (!blis_version().empty()) {
    f.push_back({"blis", blis_version()});
    f.push_back({"blis_arch", blis_arch()});
  }
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
  const BuildInfo& b = build_info();
  const CpuFacts& c = cpu_facts();
  const MachineInfo& m = machine_info();
  utsname u{};
  uname(&u);
  struct sysinfo si {};
  sysinfo(&si);
  std::vector<std::pair<std::string, std::string>> f = {
      {"primbench_commit", b.commit},
      {"primbench_dirty", b.dirty},
      {"build_id", build_id()},
      {"build_type", b.build_type},
      {"compiler", b.compiler},
      {"cxx_flags", b.flags},
      {"os", os_name()},
      {"kernel", std::string(u.sysname) + " " + u.release + " " + u.machine},
      {"ram_gb", fmt(static_cast<double>(si.totalram) * si.mem_unit / (1024.0 * 1024 * 1024))},
      {"cpu_model", c.model},
      {"cpu_vendor", c.vendor},
      {"cpu_family", c.family},
      {"cpu_model_id", c.model_id},
      {"cpu_stepping", c.stepping},
      {"cpu_isa", c.isa},
      {"cpu_best_isa", c.best_isa},
      {"sockets", std::to_string(c.sockets)},
      {"cores", std::to_string(c.cores)},
      {"hw_threads", std::to_string(c.hw_threads)},
      {"affinity", c.affinity},
      {"threads", std::to_string(m.threads)},
      {"omp_proc_bind", env_or("OMP_PROC_BIND")},
      {"omp_places", env_or("OMP_PLACES")},
      {"peak_gflops", fmt(m.peak_flops / 1e9)},
      {"peak_spread_pct", fmt(m.peak_spread_pct)},
      {"peak_gops_bf16", fmt(m.bf16_ops / 1e9)},  // 0: no vdpbf16ps on this CPU
      {"peak_gops_u8s8", fmt(m.u8s8_ops / 1e9)},  // 0: no vpdpbusd
      {"triad_gbs", fmt(m.triad_bytes / 1e9)},
      {"triad_spread_pct", fmt(m.triad_spread_pct)},
      {"probe_cpu_share_pct", fmt(m.cpu_share_pct, "%.0f")},
      {"probe_scaling", fmt(m.scaling, "%.2f") + " of " + std::to_string(m.scaling_expected) +
                            " (least: " + m.scaling_of + ")"},
      {"probe", m.source},
      {"openblas_core", openblas_get_corename()},
      {"openblas_coretype_env", env_or("OPENBLAS_CORETYPE")},
      {"primbench_simd", vmath::isa()},
      {"primbench_sgemm", sgemm_library()},
      {"primbench_sgemm_packed", sgemm_packed_config()},
      {"primbench_amx", amx::summary()},
      {"energy",
       rapl().available() ? "rapl: " + rapl().zones() : "unavailable: " + rapl().why_not()},
  };
  for (auto& v : library_versions()) f.push_back(std::move(v));
#ifdef PRIMBENCH_HAVE_ONEDNN
  f.push_back({"onednn_isa", onednn::effective_isa()});
  f.push_back(
      {"onednn_max_cpu_isa_env", env_or("DNNL_MAX_CPU_ISA", env_or("ONEDNN_MAX_CPU_ISA").c_str())});
#endif
#ifdef PRIMBENCH_HAVE_OPENCL
  std::string why = opencl_unavailable();
  f.push_back({"opencl_device", why.empty() ? ocl::device_summary() : "none: " + why});
  if (why.empty()) {
    const ocl::DeviceInfo& d = ocl::device_info();
    f.push_back({"opencl_global_mem_mb", std::to_string(d.global_mem_size >> 20)});
    f.push_back({"opencl_compute_units", std::to_string(d.compute_units)});
    f.push_back({"opencl_fp64", d.fp64 ? "1" : "0"});
    f.push_back({"opencl_driver", d.driver_version});
    // The rates the OpenCL rows' percentages divide by: the host's on a CPU device, else the
    // device's own probe.
    const PeakRates r = peak_rates("ocl/");
    f.push_back({"opencl_peak_gflops", r.device ? fmt(r.flops / 1e9) : "host"});
    f.push_back({"opencl_triad_gbs", r.device ? fmt(r.bytes / 1e9) : "host"});
  }
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

PeakRates peak_rates(const std::string& impl) {
  const MachineInfo& m = machine_info();
  PeakRates r{m.peak_flops, m.triad_bytes, false, "host"};
#ifdef PRIMBENCH_HAVE_OPENCL
  if (impl.rfind("ocl/", 0) == 0 && opencl_unavailable().empty() &&
      !(ocl::device_info().type & CL_DEVICE_TYPE_CPU)) {
    const ocl::DeviceRates& d = ocl::device_rates();
    r = {d.flops, d.bytes, true, ocl::device_info().name};
  }
#else
  (void)impl;
#endif
  return r;
}

void check_environment() {
  vmath::isa();
  sgemm_library();
#ifdef PRIMBENCH_HAVE_OPENCL
  ocl::fp64_forced_off();
#endif
}

std::string environment_json() {
  std::string s = "{";
  for (const auto& [k, v] : environment_facts())
    s += (s.size() > 1 ? "," : "") + json_str(k) + ":" + json_str(v);
  return s + "}";
}

}  // namespace pb
