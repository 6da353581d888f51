// The executor's own steps on the OpenCL device, for the ocl backend with every layer on the
// device: buffers for the tensors the executor owns (input, weights, labels, sums) and the small
// ops between primitive calls (bias add and its gradient, residual add, SGD) on them. Buffers
// are cl_mem handles passed as void*, as Impl::bind_device takes them, so this header stays free
// of OpenCL.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/core/tensor.h"

namespace pb::net {

class DeviceOps {
 public:
  virtual ~DeviceOps() = default;
  // A device buffer holding t's contents, owned by this object.
  virtual void* alloc(const Tensor& t) = 0;
  virtual void upload(const Tensor& t, void* buf) = 0;
  virtual void download(const void* buf, Tensor& t) = 0;
  // y[n][c][...] += b[c] (NCHW, hw pixels per plane; an fc output has hw = 1).
  virtual void add_channel_bias(void* y, const void* b, int64_t mb, int64_t c, int64_t hw) = 0;
  // db[c] = sum over images and pixels of g[n][c][...], in a fixed order.
  virtual void bias_grad(const void* g, void* db, int64_t mb, int64_t c, int64_t hw) = 0;
  // out = a + b (n floats).
  virtual void add(const void* a, const void* b, void* out, int64_t n) = 0;
  // y += a * x (n floats).
  virtual void axpy(float a, const void* x, void* y, int64_t n) = 0;
  // As net::dropout (native_ops.h): the same mask for the same seed, step and element.
  virtual void dropout(const void* x, void* y, int64_t n, double p, uint64_t seed,
                       uint64_t step) = 0;
  // As net::copy_channels (native_ops.h): channel slices between NCHW tensors.
  virtual void copy_channels(const void* src, int64_t src_c, int64_t src_off, void* dst,
                             int64_t dst_c, int64_t dst_off, int64_t mb, int64_t c, int64_t hw) = 0;
  virtual void finish() = 0;
};

#ifdef PRIMBENCH_HAVE_OPENCL
// nullptr, with *why set, when no OpenCL device is usable.
std::unique_ptr<DeviceOps> make_device_ops(std::string* why);
#else
inline std::unique_ptr<DeviceOps> make_device_ops(std::string* why) {
  *why = "built without OpenCL";
  return nullptr;
}
#endif

}  // namespace pb::net
