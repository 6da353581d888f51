// ocl/clblast: CLBlast's SGEMM on the runtime's queue, with parameters tuned for the device by
// CLBlast's own tuners (clblast_tuning.h; ocl/clblast_default keeps CLBlast's). Tuning and the
// first call's kernel build happen in plan() so that run() is the GEMM alone.
#include <clblast.h>

#include <chrono>
#include <string>
#include <vector>

#include "kernels/core/error.h"
#include "kernels/gemm/opencl/clblast_tuning.h"
#include "kernels/gemm/opencl/device_gemm.h"
#include "kernels/opencl/runtime.h"

namespace pb {
namespace {

void check_status(clblast::StatusCode s, const char* call) {
  if (s != clblast::StatusCode::kSuccess)
    throw RuntimeError(std::string(call) + " failed: " + clblast_tuning::status_name(s));
}

class GemmClblast : public DeviceGemm {
 public:
  explicit GemmClblast(bool tuned) : tuned_(tuned) {}
  std::string name() const override { return tuned_ ? "ocl/clblast" : "ocl/clblast_default"; }

  void plan(const GemmDesc& d, Dir, const std::vector<const Tensor*>& in) override {
    queue_ = ocl::queue();
    // The parameters go in first: the temporary buffer's size and the kernels depend on them.
    if (tuned_) {
      const clblast_tuning::Tuning& t = clblast_tuning::tuned(&tune_ms_);
      params_ = &t.params;
      fallbacks_ = static_cast<double>(t.fallbacks.size());
    } else {
      params_ = &clblast_tuning::library_defaults();
    }
    clblast_tuning::apply(*params_);
    upload(d, in);
    // CLBlast would allocate its temporary (padded copies) inside every call: allocate it here.
    size_t temp = 0;
    check_status(
        clblast::GemmTempBufferSize<float>(clblast::Layout::kColMajor, ta(), tb(), d.m, d.n, d.k, 0,
                                           d.lda, 0, d.ldb, 0, d.ldc, &queue_, temp),
        "clblast::GemmTempBufferSize");
    if (temp > 0) temp_ = ocl::Buffer(temp);
    // The first call builds CLBlast's kernels (seconds): run it once on a scratch copy of C.
    auto t0 = std::chrono::steady_clock::now();
    {
      ocl::Buffer scratch(c_.bytes());
      scratch.copy_from(c_, c_.bytes());
      gemm(scratch.get(), nullptr);
      ocl::finish();
    }
    build_ms_ =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }

  // The override is process-wide: put this GEMM's parameters back should another instance (say
  // ocl/clblast_default in a network) have changed them since (a comparison when it has not).
  void run() override {
    clblast_tuning::apply(*params_);
    gemm(c_.get(), &event_);
  }
  size_t workspace_bytes() const override { return temp_.bytes(); }

  std::vector<std::pair<std::string, double>> extra_counters() const override {
    // CLBlast's event covers its last kernel only (the GEMM proper, not any padding copies).
    // tuned: 1 on tuned parameters, 0 on CLBlast's own; tune_ms: the tuning this plan() ran (0
    // when the parameters came from the cache or an earlier call); tune_fallbacks: kernels kept
    // on CLBlast's own parameters because the tuner's choice was unusable (named on stderr and in
    // the cache file).
    return {{"last_kernel_ms", event_.elapsed_ms()},
            {"build_ms", build_ms_},
            {"tuned", tuned_ ? 1.0 : 0.0},
            {"tune_ms", tune_ms_},
            {"tune_fallbacks", fallbacks_}};
  }

 private:
  clblast::Transpose ta() const {
    return d_.ta ? clblast::Transpose::kYes : clblast::Transpose::kNo;
  }
  clblast::Transpose tb() const {
    return d_.tb ? clblast::Transpose::kYes : clblast::Transpose::kNo;
  }

  void gemm(cl_mem c, ocl::Event* ev) {
    check_status(clblast::Gemm<float>(clblast::Layout::kColMajor, ta(), tb(), d_.m, d_.n, d_.k,
                                      static_cast<float>(d_.alpha), a_.get(), 0, d_.lda, b_.get(),
                                      0, d_.ldb, static_cast<float>(d_.beta), c, 0, d_.ldc, &queue_,
                                      ev ? ev->out() : nullptr, temp_.get()),
                 "clblast::Gemm");
  }

  bool tuned_;
  const clblast_tuning::Params* params_ = nullptr;
  cl_command_queue queue_ = nullptr;
  ocl::Buffer temp_;
  ocl::Event event_;
  double build_ms_ = 0, tune_ms_ = 0, fallbacks_ = 0;
};

}  // namespace

std::unique_ptr<GemmImpl> clblast_tuning::make_gemm(bool tuned) {
  return std::make_unique<GemmClblast>(tuned);
}

std::unique_ptr<GemmImpl> make_gemm_clblast() {
  return clblast_tuning::make_gemm(true);
}

}  // namespace pb
