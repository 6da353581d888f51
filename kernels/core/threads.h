// Thread control: one count for OpenMP and OpenBLAS alike, from --threads or PRIMBENCH_THREADS.
#pragma once

namespace pb {

// Applies PRIMBENCH_THREADS if set (else leaves the libraries' defaults). Throws InputError
// naming PRIMBENCH_THREADS when it is not a positive integer.
void init_threads_from_env();
// Sets OpenMP and OpenBLAS to n threads (n >= 1), and PoCL's thread pool unless the user set
// POCL_MAX_PTHREAD_COUNT (PoCL reads it when OpenCL starts).
void set_threads(int n);
// The thread count in force (OpenMP's max threads).
int threads();
// The CPUs this process may run on (its affinity mask; the hardware's count where unreadable).
int affinity_cpus();

// Makes BLAS calls in its scope single-threaded, so that each OpenMP thread can run its own
// GEMM. With OpenBLAS's OpenMP build nothing needs doing: a call inside a parallel region runs
// serially, and setting its thread count would also set OpenMP's. With the pthread build it
// sets OpenBLAS to one thread and restores the count at the end of the scope.
class SerialBlasScope {
 public:
  SerialBlasScope();
  ~SerialBlasScope();
  SerialBlasScope(const SerialBlasScope&) = delete;
  SerialBlasScope& operator=(const SerialBlasScope&) = delete;

 private:
  int saved_ = 0;  // 0: nothing to restore
};

}  // namespace pb
