// Host tensor: a 64-byte aligned buffer plus its dims (row-major listing, innermost last).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pb {

using Dims = std::vector<int64_t>;

int64_t dims_product(const Dims& dims);  // throws InputError on overflow
std::string dims_str(const Dims& dims);  // "16x64x56x56"

// Owning, aligned, non-copyable (copy with clone()) buffer of T, zero-filled on construction.
template <class T>
class HostTensor {
 public:
  HostTensor() = default;
  explicit HostTensor(Dims dims);
  HostTensor(HostTensor&&) noexcept = default;
  HostTensor& operator=(HostTensor&&) noexcept = default;

  HostTensor clone() const;
  const Dims& dims() const { return dims_; }
  int64_t size() const { return size_; }
  size_t bytes() const { return static_cast<size_t>(size_) * sizeof(T); }
  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  T& operator[](int64_t i) { return data_.get()[i]; }
  const T& operator[](int64_t i) const { return data_.get()[i]; }
  void fill(T value);

 private:
  struct Free {
    void operator()(T* p) const;
  };
  Dims dims_;
  int64_t size_ = 0;
  std::unique_ptr<T[], Free> data_;
};

using Tensor = HostTensor<float>;
using Tensor64 = HostTensor<double>;

// Bytes a set of tensors would need; throws InputError naming `field` if it exceeds the
// memory this process may reasonably take (80% of physical memory).
void check_fits_in_memory(double bytes, const std::string& field);
// What this machine has free now: MemAvailable of /proc/meminfo (or of $PRIMBENCH_MEMINFO, a file
// in its format, for tests), in bytes; negative when it cannot be read.
double available_memory_bytes();
// Before allocating `bytes` for `what`: throws RuntimeError naming what and both sizes when they
// are more than the machine has available (a clear error instead of an allocation that fails
// half-way or sends the machine into swap and its OOM killer). Nothing when it cannot be read.
void check_available_memory(double bytes, const std::string& what);

}  // namespace pb
