// Thread control for OpenMP and OpenBLAS.
#include "kernels/core/threads.h"

#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <thread>

#include <cstdlib>
#include <string>

#include "kernels/core/error.h"

extern "C" void openblas_set_num_threads(int);
extern "C" int openblas_get_num_threads(void);
extern "C" int openblas_get_parallel(void);  // 0 sequential, 1 pthreads, 2 OpenMP

namespace pb {

namespace {
bool pocl_set_by_us = false;
}  // namespace

void set_threads(int n) {
  if (n < 1) throw InputError("threads", "must be a positive integer, got " + std::to_string(n));
  omp_set_num_threads(n);
  openblas_set_num_threads(n);
  // PoCL's CPU driver has its own thread pool, sized when OpenCL starts: steer it too unless the
  // user set it (this takes effect only before the first OpenCL call).
  if (!std::getenv("POCL_MAX_PTHREAD_COUNT") || pocl_set_by_us) {
    setenv("POCL_MAX_PTHREAD_COUNT", std::to_string(n).c_str(), 1);
    pocl_set_by_us = true;
  }
}

void init_threads_from_env() {
  const char* s = std::getenv("PRIMBENCH_THREADS");
  if (!s || !*s) return;
  char* end = nullptr;
  long n = std::strtol(s, &end, 10);
  if (*end || n < 1 || n > 4096)
    throw InputError("PRIMBENCH_THREADS",
                     std::string("must be a positive integer, got '") + s + "'");
  set_threads(static_cast<int>(n));
}

int threads() {
  return omp_get_max_threads();
}

int affinity_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

SerialBlasScope::SerialBlasScope() {
  if (openblas_get_parallel() == 1) {
    saved_ = openblas_get_num_threads();
    openblas_set_num_threads(1);
  }
}

SerialBlasScope::~SerialBlasScope() {
  if (saved_ > 0) openblas_set_num_threads(saved_);
}

void RegionErrors::capture() noexcept {
  if (!taken_.test_and_set()) first_ = std::current_exception();
  failed_.store(true, std::memory_order_release);
}

void RegionErrors::rethrow() {
  if (!failed_.load(std::memory_order_acquire)) return;
  // Allocations report as the CLI's other out-of-memory errors do (one line, exit 4).
  try {
    std::rethrow_exception(first_);
  } catch (const std::bad_alloc&) {
    throw RuntimeError("out of memory in a parallel region (per-thread scratch)");
  }
}

bool inject_scratch_bad_alloc() {
  static const bool on = [] {
    const char* e = std::getenv("PRIMBENCH_INJECT_BAD_ALLOC");
    if (!e || !*e) return false;
    if (std::string(e) != "scratch")
      throw InputError("PRIMBENCH_INJECT_BAD_ALLOC", std::string("'") + e + "' is not scratch");
    return true;
  }();
  return on;
}

}  // namespace pb
