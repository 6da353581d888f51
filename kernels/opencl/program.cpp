// Program build for embedded .cl sources: an in-process cache keyed by (source, options) and an
// on-disk binary cache keyed by a hash of source, options, device, driver and platform.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "kernels/core/error.h"
#include "kernels/opencl/runtime.h"

namespace pb::ocl {
namespace {

std::mutex& cache_mutex() {
  static std::mutex m;
  return m;
}

// Programs live for the whole process (never released: kernels made from them may outlive any
// owner we could name, and drivers tear down at exit).
std::map<std::pair<std::string, std::string>, cl_program>& memory_cache() {
  static auto* m = new std::map<std::pair<std::string, std::string>, cl_program>();
  return *m;
}

std::string build_log(cl_program p) {
  size_t n = 0;
  cl_device_id dev = device();
  if (clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n) != CL_SUCCESS || n == 0)
    return "";
  std::string log(n, '\0');
  if (clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr) != CL_SUCCESS)
    return "";
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

void mkdirs(const std::string& path) {
  for (size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos == path.size() || path[pos] == '/') ::mkdir(path.substr(0, pos).c_str(), 0755);
  }
}

bool read_file(const std::string& path, std::vector<unsigned char>* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  out->assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  return !out->empty();
}

// An unwritable cache is not an error: the run goes on without it, said once per process.
void warn_cache_unwritable(const std::string& dir, int err) {
  static bool said = false;
  if (said) return;
  said = true;
  std::fprintf(stderr,
               "primbench: warning: cannot write the OpenCL binary cache in %s (%s); programs are "
               "built from source in every process (PRIMBENCH_CL_CACHE=<folder>|off)\n",
               dir.c_str(), std::strerror(err));
}

// Writes whole or not at all: a temp file in the same directory, then rename.
void write_file_atomic(const std::string& dir, const std::string& path,
                       const std::vector<unsigned char>& data) {
  mkdirs(dir);
  std::random_device rd;
  std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(rd());
  {
    errno = 0;
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return warn_cache_unwritable(dir, errno ? errno : EACCES);
    f.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
    f.close();
    if (!f) {  // disk full: nothing half-written stays
      const int err = errno ? errno : ENOSPC;
      std::remove(tmp.c_str());
      return warn_cache_unwritable(dir, err);
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    warn_cache_unwritable(dir, err);
  }
}

cl_program from_binary(const std::vector<unsigned char>& bin, const std::string& options) {
  cl_device_id dev = device();
  const unsigned char* ptr = bin.data();
  size_t size = bin.size();
  cl_int status = CL_SUCCESS, err = CL_SUCCESS;
  cl_program p = clCreateProgramWithBinary(context(), 1, &dev, &size, &ptr, &status, &err);
  if (err != CL_SUCCESS || status != CL_SUCCESS || !p) {
    if (p) clReleaseProgram(p);
    return nullptr;
  }
  if (clBuildProgram(p, 1, &dev, options.c_str(), nullptr, nullptr) != CL_SUCCESS) {
    clReleaseProgram(p);
    return nullptr;
  }
  return p;
}

std::vector<unsigned char> binary_of(cl_program p) {
  size_t size = 0;
  if (clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, nullptr) != CL_SUCCESS ||
      size == 0)
    return {};
  std::vector<unsigned char> bin(size);
  unsigned char* ptr = bin.data();
  if (clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof(ptr), &ptr, nullptr) != CL_SUCCESS) return {};
  return bin;
}

std::string hex(unsigned long long v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", v);
  return buf;
}

}  // namespace

cl_program build_source(const std::string& key, const char* src, const std::string& options) {
  cl_device_id dev = device();
  cl_int err = CL_SUCCESS;
  cl_program p = clCreateProgramWithSource(context(), 1, &src, nullptr, &err);
  check(err, "clCreateProgramWithSource");
  err = clBuildProgram(p, 1, &dev, options.c_str(), nullptr, nullptr);
  if (err != CL_SUCCESS) {
    std::string log = build_log(p);
    clReleaseProgram(p);
    throw RuntimeError("clBuildProgram failed for " + key + " [" + options +
                       "]: " + error_name(err) + (log.empty() ? "" : "\n" + log));
  }
  return p;
}

unsigned long long fnv1a64(const std::string& data, unsigned long long seed) {
  unsigned long long h = seed;
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string cache_dir() {
  const char* env = std::getenv("PRIMBENCH_CL_CACHE");
  if (env && *env) return std::string(env) == "off" ? "" : std::string(env);
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && *xdg) return std::string(xdg) + "/primbench/cl";
  const char* home = std::getenv("HOME");
  if (home && *home) return std::string(home) + "/.cache/primbench/cl";
  return "";
}

cl_program program(const std::string& key, const std::string& given_options, double* build_ms,
                   bool* cache_hit) {
  const std::string options =
      fp64_forced_off() ? given_options + " -DPRIMBENCH_NO_FP64" : given_options;
  auto t0 = std::chrono::steady_clock::now();
  auto done = [&](cl_program p, bool hit) {
    if (build_ms)
      *build_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (cache_hit) *cache_hit = hit;
    return p;
  };
  std::lock_guard<std::mutex> lock(cache_mutex());
  auto& mem = memory_cache();
  auto it = mem.find({key, options});
  if (it != mem.end()) {
    if (build_ms) *build_ms = 0;
    if (cache_hit) *cache_hit = true;
    return it->second;
  }
  const auto& sources = embedded_sources();
  auto src = sources.find(key);
  if (src == sources.end()) throw RuntimeError("no embedded OpenCL source named " + key);

  const DeviceInfo& info = device_info();
  std::string dir = cache_dir();
  std::string path;
  if (!dir.empty()) {
    std::string id = std::string(src->second) + '\x1f' + options + '\x1f' + info.name + '\x1f' +
                     info.driver_version + '\x1f' + info.platform_version + '\x1f' + info.version;
    path = dir + "/" + hex(fnv1a64(id)) + ".bin";
    std::vector<unsigned char> bin;
    if (read_file(path, &bin)) {
      if (cl_program p = from_binary(bin, options)) {
        mem[{key, options}] = p;
        return done(p, true);
      }
      std::remove(path.c_str());  // corrupt or incompatible: rebuild from source below
    }
  }
  cl_program p = build_source(key, src->second, options);
  if (!path.empty()) {
    std::vector<unsigned char> bin = binary_of(p);
    if (!bin.empty()) write_file_atomic(dir, path, bin);
  }
  mem[{key, options}] = p;
  return done(p, false);
}

cl_program BuildStats::load(const std::string& key, const std::string& options) {
  double t = 0;
  bool hit = false;
  cl_program p = program(key, options, &t, &hit);
  ms += t;
  cache_hit = cache_hit && hit;
  return p;
}

std::vector<std::pair<std::string, double>> BuildStats::counters(double kernel_ms) const {
  return {{"kernel_ms", kernel_ms}, {"build_ms", ms}, {"cache_hit", cache_hit ? 1.0 : 0.0}};
}

}  // namespace pb::ocl
