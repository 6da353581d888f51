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

}  // namespace pb
