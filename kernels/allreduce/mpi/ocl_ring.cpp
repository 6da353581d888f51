// ocl/ring: the ring schedule of mpi/ring with the vector in OpenCL buffers: reductions run in
// an OpenCL kernel (opencl/reduce.cl), transfers are staged through host memory for MPI. The
// staging (device <-> host copies) is inside the timed run and reported on its own.
#include "kernels/allreduce/mpi/comm.h"
#include "kernels/allreduce/mpi/ring.h"
#include "kernels/allreduce/world.h"

#ifdef PRIMBENCH_HAVE_OPENCL
#include <algorithm>
#include <string>

#include "kernels/core/error.h"
#include "kernels/core/problem.h"
#include "kernels/opencl/runtime.h"

namespace pb {
namespace {

constexpr size_t kWg = 64;

// Buffers on the device: X, Y and two receive slots; on the host: two send and two receive
// slots. Times the staging copies and the reduction kernels of the last run().
class OclRingPort : public RingPort {
 public:
  // X is uploaded from `x`, or read in place from the caller's buffer `bound` (not nullptr).
  void prepare(int64_t n, int64_t slot_elems, const Tensor& x, void* bound) {
    const size_t bytes = std::max<size_t>(sizeof(float), static_cast<size_t>(n) * sizeof(float));
    const size_t sbytes =
        std::max<size_t>(sizeof(float), static_cast<size_t>(slot_elems) * sizeof(float));
    if (bound) {
      x_ = ocl::Buffer::shared(static_cast<cl_mem>(bound));
      if (x_.bytes() < static_cast<size_t>(n) * sizeof(float))
        throw RuntimeError("ocl/ring: the bound input buffer holds fewer than n floats");
    } else {
      x_ = ocl::Buffer(bytes, CL_MEM_READ_ONLY);
      if (n > 0) x_.upload(x.data(), static_cast<size_t>(n) * sizeof(float));
    }
    y_ = ocl::Buffer(bytes);
    for (int s = 0; s < 2; ++s) {
      t_[s] = ocl::Buffer(sbytes);
      hsend_[s].assign(static_cast<size_t>(slot_elems), 0.0f);
      hrecv_[s].assign(static_cast<size_t>(slot_elems), 0.0f);
    }
    n_ = n;
    kernel_ =
        ocl::Kernel(ocl::program("allreduce/reduce.cl", "-DWG=" + std::to_string(kWg), &build_ms_),
                    "add_chunk");
    // PoCL compiles for the work-group size at the first enqueue: do it here, untimed.
    const double t0 = now_seconds();
    enqueue_add(0, 0, 1, 0);
    ocl::finish();
    build_ms_ += 1e3 * (now_seconds() - t0);
  }

  const float* send_data(int64_t off, int64_t count, bool from_input, int slot,
                         int64_t soff) override {
    float* dst = hsend_[slot].data() + soff;
    const double t0 = now_seconds();
    (from_input ? x_ : y_).download(dst, bytes(count), bytes(off));
    staging_s_ += now_seconds() - t0;
    return dst;
  }
  float* recv_target(int64_t, int64_t, bool reduce, int slot, int64_t soff) override {
    return hrecv_[slot].data() + soff;  // reduce or copy, the data goes to the device after
  }
  void received(int64_t off, int64_t count, bool reduce, int slot, int64_t soff) override {
    const float* src = hrecv_[slot].data() + soff;
    double t0 = now_seconds();
    if (reduce)
      t_[slot].upload(src, bytes(count), bytes(soff));
    else
      y_.upload(src, bytes(count), bytes(off));
    double t1 = now_seconds();
    staging_s_ += t1 - t0;
    if (!reduce) return;
    enqueue_add(off, soff, count, slot);
    ocl::finish();  // the next send of this chunk downloads it
    kernel_s_ += now_seconds() - t1;
  }
  void copy_input() override {
    if (n_ > 0) y_.copy_from(x_, bytes(n_));
  }

  void reset_times() { staging_s_ = kernel_s_ = 0; }
  void* y_buffer() const { return y_.get(); }
  double staging_s() const { return staging_s_; }
  double kernel_s() const { return kernel_s_; }
  double build_ms() const { return build_ms_; }
  Tensor download_y() const {
    Tensor y({n_});
    if (n_ > 0) y_.download(y.data(), y.bytes());
    return y;
  }

 private:
  static size_t bytes(int64_t elems) { return static_cast<size_t>(elems) * sizeof(float); }
  void enqueue_add(int64_t off, int64_t soff, int64_t count, int slot) {
    kernel_.set_args(y_.get(), x_.get(), t_[slot].get(), static_cast<cl_ulong>(off),
                     static_cast<cl_ulong>(soff), static_cast<cl_ulong>(count));
    size_t global = (static_cast<size_t>(count) + kWg - 1) / kWg * kWg, local = kWg;
    kernel_.enqueue(1, &global, &local);
  }

  int64_t n_ = 0;
  ocl::Buffer x_, y_, t_[2];
  std::vector<float> hsend_[2], hrecv_[2];
  ocl::Kernel kernel_;
  double staging_s_ = 0, kernel_s_ = 0, build_ms_ = 0;
};

class OclRingAllreduce : public AllreduceImpl {
 public:
  std::string name() const override { return "ocl/ring"; }
  Support supports(const AllreduceDesc&, Dir dir) const override {
    return dir == Dir::fwd ? Support::yes() : Support::no("allreduce runs fwd only");
  }
  void plan(const AllreduceDesc& d, Dir, const std::vector<const Tensor*>& in) override {
    comm_ = world::comm();
    world::require_same(d.n, "allreduce descriptor field n");
    d_ = d;
    const int p = world::size();
    slot_elems_ = p > 1 ? ring_max_segment(d.n, p) : 0;
    // A device may be missing (or fail) on some ranks only: agree before communicating.
    std::string why;
    try {
      port_.prepare(d.n, slot_elems_, *in[0], bound_);
    } catch (const std::exception& e) {
      why = e.what();
    }
    world::require_all_ok(why.empty(), "ocl/ring set-up", why);
  }
  void run() override {
    port_.reset_times();
    const double t0 = now_seconds();
    ring_allreduce(d_.n, port_, comm_, ring_chunk_elems());
    run_s_ = now_seconds() - t0;
  }
  void sync() override { ocl::finish(); }
  // X from the caller's device buffer (kernels/net's data-parallel buckets), read in place.
  bool bind_device(const std::vector<void*>& dev) override {
    bound_ = dev.empty() ? nullptr : dev[0];
    return true;
  }
  bool reads_inputs_in_place() const override { return bound_ != nullptr; }
  void* device_output(size_t i) const override { return i == 0 ? port_.y_buffer() : nullptr; }
  std::vector<Tensor> result() override {
    std::vector<Tensor> out;
    out.push_back(port_.download_y());
    return out;
  }
  size_t workspace_bytes() const override {
    return static_cast<size_t>(slot_elems_) * sizeof(float) * 6;  // 2 device + 4 host slots
  }
  std::vector<std::pair<std::string, double>> extra_counters() const override {
    return {{"staging_ms", 1e3 * port_.staging_s()},
            {"staging_pct", run_s_ > 0 ? 100.0 * port_.staging_s() / run_s_ : 0},
            {"kernel_ms", 1e3 * port_.kernel_s()},
            {"build_ms", port_.build_ms()}};
  }

 private:
  AllreduceDesc d_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int64_t slot_elems_ = 0;
  OclRingPort port_;
  void* bound_ = nullptr;  // the caller's X buffer (bind_device), or nullptr: X uploaded
  double run_s_ = 0;
};

}  // namespace

std::unique_ptr<AllreduceImpl> make_allreduce_ocl_ring() {
  return std::make_unique<OclRingAllreduce>();
}

}  // namespace pb

#else  // built with MPI but without OpenCL: the registry reports opencl_unavailable() instead

#include "kernels/core/error.h"

namespace pb {
std::unique_ptr<AllreduceImpl> make_allreduce_ocl_ring() {
  throw Unsupported("ocl/ring: built without OpenCL");
}
}  // namespace pb

#endif
