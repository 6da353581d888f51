// The executor's device steps on OpenCL (see device_ops.h): ops.cl, and conv_bwd.cl's bias_grad.
#include <algorithm>
#include <limits>

#include "kernels/core/error.h"
#include "kernels/net/device_ops.h"
#include "kernels/net/native_ops.h"
#include "kernels/opencl/runtime.h"

namespace pb::net {
namespace {

constexpr size_t kBiasWg = 8;  // conv_bwd.cl's WB

cl_int to_int(int64_t v, const char* what) {
  if (v > std::numeric_limits<cl_int>::max())
    throw Unsupported(std::string("device op: ") + what + " needs < 2^31 elements");
  return static_cast<cl_int>(v);
}

class OclDeviceOps : public DeviceOps {
 public:
  OclDeviceOps() {
    cl_program ops = ocl::program("net/ops.cl", "");
    bias_ = ocl::Kernel(ops, "add_channel_bias");
    add_ = ocl::Kernel(ops, "add");
    axpy_ = ocl::Kernel(ops, "axpy");
    copy_channels_ = ocl::Kernel(ops, "copy_channels");
    dropout_ = ocl::Kernel(ops, "dropout");
    bias_grad_ = ocl::Kernel(ocl::program("conv/conv_bwd.cl", ""), "bias_grad");
  }

  void* alloc(const Tensor& t) override {
    bufs_.emplace_back(t.bytes());
    bufs_.back().upload(t.data(), t.bytes());
    return bufs_.back().get();
  }
  void upload(const Tensor& t, void* buf) override {
    ocl::Buffer::shared(mem(buf)).upload(t.data(), t.bytes());
  }
  void download(const void* buf, Tensor& t) override {
    ocl::Buffer::shared(mem(buf)).download(t.data(), t.bytes());
  }

  void add_channel_bias(void* y, const void* b, int64_t mb, int64_t c, int64_t hw) override {
    bias_.set_args(mem(y), mem(b), to_int(c, "bias channels"), to_int(hw, "bias plane"));
    size_t global[2] = {static_cast<size_t>(hw), static_cast<size_t>(mb * c)};
    bias_.enqueue(2, global, nullptr);
  }
  void bias_grad(const void* g, void* db, int64_t mb, int64_t c, int64_t hw) override {
    bias_grad_.set_args(mem(g), mem(db), to_int(mb, "batch"), to_int(c, "channels"),
                        to_int(hw, "plane"));
    size_t global[1] = {ocl::round_up(c, kBiasWg)}, local[1] = {kBiasWg};
    bias_grad_.enqueue(1, global, local);
  }
  void add(const void* a, const void* b, void* out, int64_t n) override {
    add_.set_args(mem(a), mem(b), mem(out), to_int(n, "add"));
    size_t global[1] = {static_cast<size_t>(n)};
    add_.enqueue(1, global, nullptr);
  }
  void axpy(float a, const void* x, void* y, int64_t n) override {
    axpy_.set_args(a, mem(x), mem(y), to_int(n, "axpy"));
    size_t global[1] = {static_cast<size_t>(n)};
    axpy_.enqueue(1, global, nullptr);
  }
  void copy_channels(const void* src, int64_t src_c, int64_t src_off, void* dst, int64_t dst_c,
                     int64_t dst_off, int64_t mb, int64_t c, int64_t hw) override {
    to_int(mb * std::max(src_c, dst_c) * hw, "concat");
    copy_channels_.set_args(mem(src), to_int(src_c, "channels"), to_int(src_off, "channels"),
                            mem(dst), to_int(dst_c, "channels"), to_int(dst_off, "channels"),
                            to_int(c * hw, "slice"), to_int(hw, "plane"));
    size_t global[2] = {static_cast<size_t>(c * hw), static_cast<size_t>(mb)};
    copy_channels_.enqueue(2, global, nullptr);
  }
  void dropout(const void* x, void* y, int64_t n, double p, uint64_t seed, uint64_t step) override {
    dropout_.set_args(mem(x), mem(y), to_int(n, "dropout"),
                      static_cast<cl_uint>(net::dropout_threshold(p)),
                      static_cast<float>(1.0 / (1.0 - p)), static_cast<cl_ulong>(seed),
                      static_cast<cl_ulong>(step));
    size_t global[1] = {static_cast<size_t>(n)};
    dropout_.enqueue(1, global, nullptr);
  }
  void finish() override { ocl::finish(); }

 private:
  static cl_mem mem(const void* p) { return static_cast<cl_mem>(const_cast<void*>(p)); }

  std::vector<ocl::Buffer> bufs_;
  ocl::Kernel bias_, add_, axpy_, bias_grad_, copy_channels_, dropout_;
};

}  // namespace

std::unique_ptr<DeviceOps> make_device_ops(std::string* why) {
  *why = ocl::unavailable_reason();
  if (!why->empty()) return nullptr;
  return std::make_unique<OclDeviceOps>();
}

}  // namespace pb::net
