// Data-parallel bucket copies and the communication thread's own OpenCL queue (dp_device.h).
#include "kernels/net/dp_device.h"

#include <cstring>

#include "kernels/core/error.h"
#ifdef PRIMBENCH_HAVE_OPENCL
#include "kernels/opencl/runtime.h"
#endif

namespace pb::net {

#ifdef PRIMBENCH_HAVE_OPENCL

void dp_copy(const Place& src, const Place& dst, size_t bytes) {
  if (bytes == 0) return;
  if (!src.dev && !dst.dev) {
    std::memcpy(static_cast<char*>(dst.p) + dst.off, static_cast<const char*>(src.p) + src.off,
                bytes);
  } else if (src.dev && dst.dev) {
    ocl::Buffer to = ocl::Buffer::shared(static_cast<cl_mem>(dst.p));
    to.copy_from(ocl::Buffer::shared(static_cast<cl_mem>(src.p)), bytes, src.off, dst.off);
    ocl::finish();
  } else if (src.dev) {
    ocl::Buffer::shared(static_cast<cl_mem>(src.p))
        .download(static_cast<char*>(dst.p) + dst.off, bytes, src.off);
  } else {
    ocl::Buffer::shared(static_cast<cl_mem>(dst.p))
        .upload(static_cast<const char*>(src.p) + src.off, bytes, dst.off);
  }
}

std::shared_ptr<void> dp_device_buffer(size_t bytes) {
  auto* b = new ocl::Buffer(bytes);
  return std::shared_ptr<void>(b->get(), [b](void*) { delete b; });
}

OwnQueue::OwnQueue() {
  cl_int err = CL_SUCCESS;
  cl_command_queue q = clCreateCommandQueue(ocl::context(), ocl::device(), 0, &err);
  ocl::check(err, "clCreateCommandQueue(communication thread)");
  queue_ = q;
  ocl::set_thread_queue(q);
}

OwnQueue::~OwnQueue() {
  ocl::set_thread_queue(nullptr);
  clFinish(static_cast<cl_command_queue>(queue_));
  clReleaseCommandQueue(static_cast<cl_command_queue>(queue_));
}

#else

void dp_copy(const Place& src, const Place& dst, size_t bytes) {
  if (src.dev || dst.dev) throw Unsupported("data-parallel device buffers: built without OpenCL");
  std::memcpy(static_cast<char*>(dst.p) + dst.off, static_cast<const char*>(src.p) + src.off,
              bytes);
}
std::shared_ptr<void> dp_device_buffer(size_t) {
  throw Unsupported("data-parallel device buffers: built without OpenCL");
}
OwnQueue::OwnQueue() {}
OwnQueue::~OwnQueue() {}

#endif

}  // namespace pb::net
