// Thread control: one count for OpenMP and OpenBLAS alike, from --threads or PRIMBENCH_THREADS.
#pragma once

#include <atomic>
#include <cstddef>
#include <exception>

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

// An exception must not leave an OpenMP parallel region (the runtime calls std::terminate): a
// region whose body may throw (an allocation, a GEMM that allocates its scratch) runs it through
// run(), which keeps the first exception; the caller rethrows it after the region. A thread whose
// body threw must still pass every barrier of the region, so bodies with worksharing loops catch
// per step (run() around each) and the others skip their work once failed() says so.
class RegionErrors {
 public:
  template <class F>
  void run(F&& body) noexcept {
    if (failed()) return;
    try {
      body();
    } catch (...) {
      capture();
    }
  }
  void capture() noexcept;  // inside a catch block: keeps the first exception
  bool failed() const { return failed_.load(std::memory_order_relaxed); }
  void rethrow();  // after the region: rethrows the first exception, if any

 private:
  std::atomic<bool> failed_{false};
  std::atomic_flag taken_ = ATOMIC_FLAG_INIT;
  std::exception_ptr first_;
};

// Test hook (PRIMBENCH_INJECT_BAD_ALLOC=scratch): true when the per-thread scratch buffers that
// grow inside parallel regions (cpu/packed) should throw std::bad_alloc instead of growing, so
// that tests reach the path a real out-of-memory takes there.
bool inject_scratch_bad_alloc();

}  // namespace pb
