// RAII wrappers for device buffers, profiling events and kernels.
#include <algorithm>
#include <atomic>
#include <utility>

#include "kernels/core/error.h"
#include "kernels/opencl/runtime.h"

namespace pb::ocl {

namespace {
std::atomic<size_t> g_transfers{0};
// Bytes of the buffers primbench allocated (not CLBlast's own temporaries), live and at peak.
std::atomic<size_t> g_live{0}, g_peak{0};
}  // namespace

size_t transfer_count() {
  return g_transfers.load();
}
size_t device_bytes_live() {
  return g_live.load();
}
size_t device_bytes_peak() {
  return g_peak.load();
}
void reset_device_peak() {
  g_peak.store(g_live.load());
}

Buffer::Buffer(size_t bytes, cl_mem_flags flags) : bytes_(bytes) {
  // A reason before the driver's bare CL_INVALID_BUFFER_SIZE (or a lazy failure at first use).
  const cl_ulong max = device_info().max_mem_alloc_size;
  if (max != 0 && bytes > max)
    throw Unsupported("a buffer of " + std::to_string(bytes >> 20) + " MiB is larger than " +
                      device_info().name + "'s largest allocation, " + std::to_string(max >> 20) +
                      " MiB (CL_DEVICE_MAX_MEM_ALLOC_SIZE)");
  cl_int err = CL_SUCCESS;
  mem_ = clCreateBuffer(context(), flags, bytes == 0 ? 1 : bytes, nullptr, &err);
  check(err, "clCreateBuffer");
  owned_ = true;
  const size_t live = g_live += bytes_;
  size_t peak = g_peak.load();
  while (live > peak && !g_peak.compare_exchange_weak(peak, live)) {
  }
}

Buffer Buffer::shared(cl_mem mem) {
  Buffer b;
  check(clRetainMemObject(mem), "clRetainMemObject");
  b.mem_ = mem;
  check(clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof(b.bytes_), &b.bytes_, nullptr),
        "clGetMemObjectInfo(CL_MEM_SIZE)");
  return b;
}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    reset();
    std::swap(mem_, o.mem_);
    std::swap(bytes_, o.bytes_);
    std::swap(owned_, o.owned_);
  }
  return *this;
}

void Buffer::reset() {
  if (mem_) clReleaseMemObject(mem_);
  if (mem_ && owned_) g_live -= bytes_;
  mem_ = nullptr;
  bytes_ = 0;
  owned_ = false;
}

void Buffer::upload(const void* src, size_t bytes, size_t offset) {
  if (bytes == 0) return;
  if (offset + bytes > bytes_) throw RuntimeError("Buffer::upload: out of range");
  ++g_transfers;
  check(clEnqueueWriteBuffer(queue(), mem_, CL_TRUE, offset, bytes, src, 0, nullptr, nullptr),
        "clEnqueueWriteBuffer");
}

void Buffer::download(void* dst, size_t bytes, size_t offset) const {
  if (bytes == 0) return;
  if (offset + bytes > bytes_) throw RuntimeError("Buffer::download: out of range");
  ++g_transfers;
  check(clEnqueueReadBuffer(queue(), mem_, CL_TRUE, offset, bytes, dst, 0, nullptr, nullptr),
        "clEnqueueReadBuffer");
}

void Buffer::copy_from(const Buffer& src, size_t bytes, size_t src_offset, size_t offset) {
  if (bytes == 0) return;
  if (offset + bytes > bytes_ || src_offset + bytes > src.bytes_)
    throw RuntimeError("Buffer::copy_from: out of range");
  check(
      clEnqueueCopyBuffer(queue(), src.mem_, mem_, src_offset, offset, bytes, 0, nullptr, nullptr),
      "clEnqueueCopyBuffer");
}

void Buffer::zero() {
  if (!mem_) return;
  const cl_uchar z = 0;
  check(clEnqueueFillBuffer(queue(), mem_, &z, 1, 0, bytes_, 0, nullptr, nullptr),
        "clEnqueueFillBuffer");
}

bool Inputs::bind(const std::vector<void*>& dev) {
  dev_.clear();
  for (void* p : dev) dev_.push_back(static_cast<cl_mem>(p));
  return true;
}

bool Inputs::any_bound() const {
  return std::any_of(dev_.begin(), dev_.end(), [](cl_mem m) { return m != nullptr; });
}

Buffer Inputs::get(size_t i, const Tensor& t, cl_mem_flags flags) const {
  if (bound(i)) return Buffer::shared(dev_[i]);
  Buffer b(t.bytes(), flags);
  b.upload(t.data(), t.bytes());
  return b;
}

Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    reset();
    std::swap(ev_, o.ev_);
  }
  return *this;
}

void Event::reset() {
  if (ev_) clReleaseEvent(ev_);
  ev_ = nullptr;
}

void Event::wait() const {
  if (ev_) check(clWaitForEvents(1, &ev_), "clWaitForEvents");
}

double Event::elapsed_ms() const {
  if (!ev_) return 0;
  wait();
  cl_ulong start = 0, end = 0;
  check(clGetEventProfilingInfo(ev_, CL_PROFILING_COMMAND_START, sizeof(start), &start, nullptr),
        "clGetEventProfilingInfo(START)");
  check(clGetEventProfilingInfo(ev_, CL_PROFILING_COMMAND_END, sizeof(end), &end, nullptr),
        "clGetEventProfilingInfo(END)");
  return end > start ? static_cast<double>(end - start) * 1e-6 : 0.0;
}

Kernel::Kernel(cl_program program, const char* name) {
  cl_int err = CL_SUCCESS;
  k_ = clCreateKernel(program, name, &err);
  check(err, "clCreateKernel");
}

Kernel& Kernel::operator=(Kernel&& o) noexcept {
  if (this != &o) {
    reset();
    std::swap(k_, o.k_);
    std::swap(max_wg_, o.max_wg_);
  }
  return *this;
}

void Kernel::reset() {
  if (k_) clReleaseKernel(k_);
  k_ = nullptr;
  max_wg_ = 0;
}

void Kernel::check_limits(cl_uint dims, const size_t* local) const {
  if (max_wg_ == 0) {  // read once; set only when the kernel fits the device's local memory
    cl_device_id dev = device();
    size_t wg = 0;
    check(clGetKernelWorkGroupInfo(k_, dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof(wg), &wg, nullptr),
          "clGetKernelWorkGroupInfo(CL_KERNEL_WORK_GROUP_SIZE)");
    cl_ulong local_mem = 0;
    check(clGetKernelWorkGroupInfo(k_, dev, CL_KERNEL_LOCAL_MEM_SIZE, sizeof(local_mem), &local_mem,
                                   nullptr),
          "clGetKernelWorkGroupInfo(CL_KERNEL_LOCAL_MEM_SIZE)");
    if (local_mem > device_info().local_mem_size)
      throw Unsupported("kernel " + name() + " needs " + std::to_string(local_mem) +
                        " bytes of local memory, " + device_info().name + " has " +
                        std::to_string(device_info().local_mem_size) +
                        " (CL_DEVICE_LOCAL_MEM_SIZE)");
    max_wg_ = wg;
  }
  size_t items = 1;
  const size_t* max_items = device_info().max_work_item_sizes;
  for (cl_uint d = 0; d < dims; ++d) {
    items *= local[d];
    if (d < 3 && max_items[d] != 0 && local[d] > max_items[d])
      throw Unsupported("kernel " + name() + ": a work-group of " + std::to_string(local[d]) +
                        " in dimension " + std::to_string(d) + " is over " + device_info().name +
                        "'s " + std::to_string(max_items[d]) + " (CL_DEVICE_MAX_WORK_ITEM_SIZES)");
  }
  if (items > max_wg_)
    throw Unsupported("kernel " + name() + ": a work-group of " + std::to_string(items) +
                      " work-items is over the " + std::to_string(max_wg_) + " that " +
                      device_info().name + " allows it (CL_KERNEL_WORK_GROUP_SIZE)");
}

std::string Kernel::name() const {
  size_t n = 0;
  if (!k_ || clGetKernelInfo(k_, CL_KERNEL_FUNCTION_NAME, 0, nullptr, &n) != CL_SUCCESS || n == 0)
    return "?";
  std::string s(n, '\0');
  if (clGetKernelInfo(k_, CL_KERNEL_FUNCTION_NAME, n, s.data(), nullptr) != CL_SUCCESS) return "?";
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

void Kernel::enqueue(cl_uint dims, const size_t* global, const size_t* local, Event* ev) const {
  if (local) check_limits(dims, local);
  check(clEnqueueNDRangeKernel(queue(), k_, dims, nullptr, global, local, 0, nullptr,
                               ev ? ev->out() : nullptr),
        "clEnqueueNDRangeKernel");
}

}  // namespace pb::ocl
