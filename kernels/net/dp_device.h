// Data-parallel buckets and OpenCL buffers: copies between a gradient (host tensor or device
// buffer) and a bucket (host tensor or device buffer) at offsets, on the calling thread's
// queue, so that a communication thread's copies and all-reduces run beside the main thread's
// compute. Buffers are cl_mem handles as void*, as elsewhere in kernels/net.
#pragma once

#include <cstddef>
#include <memory>

namespace pb::net {

// Where `bytes` bytes are: host memory (dev == false: `p` is a float*), or an OpenCL buffer.
struct Place {
  void* p = nullptr;
  bool dev = false;
  size_t off = 0;  // bytes into p
};

// Copies bytes from src to dst, waiting for the copy.
void dp_copy(const Place& src, const Place& dst, size_t bytes);
// A device buffer of `bytes` bytes owned by the returned handle (freed when it is released).
std::shared_ptr<void> dp_device_buffer(size_t bytes);

// For its life, OpenCL work that the calling thread enqueues goes to a queue of its own (the
// communication thread's), not the main thread's; a no-op without OpenCL.
class OwnQueue {
 public:
  OwnQueue();
  ~OwnQueue();
  OwnQueue(const OwnQueue&) = delete;
  OwnQueue& operator=(const OwnQueue&) = delete;

 private:
  void* queue_ = nullptr;
};

}  // namespace pb::net
