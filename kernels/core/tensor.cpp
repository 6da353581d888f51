// Host tensor storage: aligned allocation and the memory-fit check.
#include "kernels/core/tensor.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#include "kernels/core/error.h"

namespace pb {

int64_t dims_product(const Dims& dims) {
  int64_t p = 1;
  for (int64_t d : dims) {
    if (d < 0) throw InputError("dims", "negative size " + std::to_string(d));
    if (d != 0 && p > std::numeric_limits<int64_t>::max() / d)
      throw InputError("dims", "size overflows 64 bits: " + dims_str(dims));
    p *= d;
  }
  return p;
}

std::string dims_str(const Dims& dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "x" : "") + std::to_string(dims[i]);
  return s;
}

template <class T>
void HostTensor<T>::Free::operator()(T* p) const {
  std::free(p);
}

template <class T>
HostTensor<T>::HostTensor(Dims dims) : dims_(std::move(dims)), size_(dims_product(dims_)) {
  size_t bytes = std::max<size_t>(64, (static_cast<size_t>(size_) * sizeof(T) + 63) / 64 * 64);
  void* p = std::aligned_alloc(64, bytes);
  if (!p) throw RuntimeError("out of memory allocating " + std::to_string(bytes) + " bytes");
  std::memset(p, 0, bytes);
  data_.reset(static_cast<T*>(p));
}

template <class T>
HostTensor<T> HostTensor<T>::clone() const {
  HostTensor<T> t(dims_);
  if (size_) std::memcpy(t.data(), data(), bytes());
  return t;
}

template <class T>
void HostTensor<T>::fill(T value) {
  std::fill(data(), data() + size_, value);
}

template class HostTensor<float>;
template class HostTensor<double>;
template class HostTensor<int32_t>;

void check_fits_in_memory(double bytes, const std::string& field) {
  double phys = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE);
  if (bytes > 0.8 * phys) {
    // %.0f, not a cast to an integer: a descriptor's size can exceed any integer type (found by
    // tools/fuzz: the cast is undefined behaviour and printed a negative size).
    char need[64], have[64];
    std::snprintf(need, sizeof need, "%.0f", bytes / 1e6);
    std::snprintf(have, sizeof have, "%.0f", phys / 1e6);
    throw InputError(field, std::string("problem needs ") + need +
                                " MB, more than 80% of this machine's " + have + " MB");
  }
}

double available_memory_bytes() {
  const char* path = std::getenv("PRIMBENCH_MEMINFO");
  std::FILE* f = std::fopen(path && *path ? path : "/proc/meminfo", "r");
  if (!f) return -1;
  char line[256];
  double kb = -1;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "MemAvailable: %lf kB", &kb) == 1) break;
  std::fclose(f);
  return kb < 0 ? -1 : kb * 1024;
}

void check_available_memory(double bytes, const std::string& what) {
  const double avail = available_memory_bytes();
  if (avail < 0 || bytes <= avail) return;
  char msg[160];
  std::snprintf(msg, sizeof msg, " needs %.0f MB, but this machine has %.0f MB available",
                bytes / 1e6, avail / 1e6);
  throw RuntimeError(what + msg + " (MemAvailable)");
}

}  // namespace pb
