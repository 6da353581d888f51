// ocl/tiled: our own OpenCL SGEMM (tiled.cl), register-blocked with local-memory tiles. The host
// passes one parameter struct as -D options and derives the work sizes from it.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/core/error.h"
#include "kernels/gemm/opencl/device_gemm.h"
#include "kernels/gemm/opencl/tiled_params.h"
#include "kernels/opencl/runtime.h"

namespace pb {
namespace {

class GemmOclTiled : public DeviceGemm {
 public:
  std::string name() const override { return "ocl/tiled"; }

  Support supports(const GemmDesc& d, Dir dir) const override {
    if (Support s = DeviceGemm::supports(d, dir); !s) return s;
    const int64_t lim = std::numeric_limits<int>::max();
    if (d.m > lim || d.n > lim || d.k > lim || d.lda > lim || d.ldb > lim || d.ldc > lim)
      return Support::no("sizes and leading dimensions must fit in 32-bit int");
    return Support::yes();
  }

  void plan(const GemmDesc& d, Dir, const std::vector<const Tensor*>& in) override {
    const ocl::DeviceInfo& dev = ocl::device_info();
    p_ = TiledParams::from_env().fitted(dev.local_mem_size);
    if (static_cast<size_t>(p_.rtsm() * p_.rtsn()) > dev.max_work_group_size)
      throw InputError("PRIMBENCH_OCL_TILED", "work-group of " +
                                                  std::to_string(p_.rtsm() * p_.rtsn()) +
                                                  " work-items exceeds the device maximum");
    if (p_.local_bytes() > dev.local_mem_size)
      throw InputError("PRIMBENCH_OCL_TILED", "tiles exceed the device's local memory");
    pretrans_ = d.ta && p_.pretrans;
    upload(d, in);
    cl_program prog = nullptr;  // the transpose's program serves the GEMM too (TA=0)
    if (pretrans_) {
      // A is stored K x M; the GEMM reads its transpose At (M x K, ld M) from the workspace.
      prog = build_.load("gemm/tiled.cl", p_.options(false, d.tb));
      at_ = ocl::Buffer(static_cast<size_t>(d.m) * d.k * sizeof(float));
      transpose_ = ocl::Kernel(prog, "transpose");
      transpose_.set_args(static_cast<int>(d.k), static_cast<int>(d.m), a_, static_cast<int>(d.lda),
                          at_, static_cast<int>(d.m));
      tglobal_[0] = ocl::round_up(d.k, TiledParams::kXT);
      tglobal_[1] = ocl::round_up(d.m, TiledParams::kXT);
      size_t tlocal[2] = {TiledParams::kXT, TiledParams::kXT};
      try {
        transpose_.enqueue(2, tlocal, tlocal);  // first-enqueue compile, outside run()
        ocl::finish();
      } catch (const Unsupported&) {
        // The transpose's XT x XT work-group is over this device's limit for it (NVIDIA's
        // OpenCL allows it 256 of 1024): the GEMM transposes A's tiles as it loads them.
        pretrans_ = false;
        transpose_ = ocl::Kernel();
        at_ = ocl::Buffer();
        prog = nullptr;
      }
    }
    if (!prog) prog = build_.load("gemm/tiled.cl", p_.options(d.ta && !pretrans_, d.tb));
    kernel_ = ocl::Kernel(prog, "gemm_tiled");
    auto t0 = std::chrono::steady_clock::now();
    warm_up();
    build_.ms +=  // PoCL compiles at the first enqueue: part of the build
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const ocl::Buffer& a = pretrans_ ? at_ : a_;
    set_args(static_cast<int>(d.m), static_cast<int>(d.n), static_cast<int>(d.k), a,
             static_cast<int>(pretrans_ ? d.m : d.lda), b_, static_cast<int>(d.ldb), c_,
             static_cast<int>(d.ldc));
    global_[0] = ocl::round_up(d.m, p_.tsm) / p_.tsm * p_.rtsm();
    global_[1] = ocl::round_up(d.n, p_.tsn) / p_.tsn * p_.rtsn();
    local_[0] = p_.rtsm();
    local_[1] = p_.rtsn();
  }

  void run() override {
    if (pretrans_) {
      size_t tlocal[2] = {TiledParams::kXT, TiledParams::kXT};
      transpose_.enqueue(2, tglobal_, tlocal, &tevent_);
    }
    kernel_.enqueue(2, global_, local_, &event_);
  }
  size_t workspace_bytes() const override { return at_.bytes(); }

  std::vector<std::pair<std::string, double>> extra_counters() const override {
    auto c = build_.counters(event_.elapsed_ms() + tevent_.elapsed_ms());
    c.emplace_back("transpose_ms", tevent_.elapsed_ms());
    c.emplace_back("pretrans", pretrans_ ? 1.0 : 0.0);  // A^T transposed once per run (1)
    return c;
  }

 private:
  void set_args(int m, int n, int k, const ocl::Buffer& a, int lda, const ocl::Buffer& b, int ldb,
                const ocl::Buffer& c, int ldc) {
    kernel_.set_args(m, n, k, static_cast<float>(d_.alpha), static_cast<float>(d_.beta), a, lda, b,
                     ldb, c, ldc);
  }

  // PoCL compiles a kernel for each work-group size at its first enqueue: do it here, on a
  // 1x1x1 problem, so that run() never pays for it.
  void warm_up() {
    ocl::Buffer a(sizeof(float)), b(sizeof(float)), c(sizeof(float));
    float zero = 0;
    a.upload(&zero, sizeof zero);
    b.upload(&zero, sizeof zero);
    c.upload(&zero, sizeof zero);
    set_args(1, 1, 1, a, 1, b, 1, c, 1);
    size_t local[2] = {static_cast<size_t>(p_.rtsm()), static_cast<size_t>(p_.rtsn())};
    kernel_.enqueue(2, local, local);
    ocl::finish();
  }

  TiledParams p_;
  bool pretrans_ = false;
  ocl::Kernel kernel_, transpose_;
  ocl::Buffer at_;
  ocl::Event event_, tevent_;
  size_t global_[2] = {1, 1}, local_[2] = {1, 1}, tglobal_[2] = {1, 1};
  ocl::BuildStats build_;
};

}  // namespace

std::unique_ptr<GemmImpl> make_gemm_ocl_tiled() {
  return std::make_unique<GemmOclTiled>();
}

}  // namespace pb
