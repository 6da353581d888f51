// ocl/clblast: CLBlast's SGEMM on the runtime's queue; the first call's kernel build happens in
// plan() so that run() is the GEMM alone.
#include <clblast.h>

#include <chrono>
#include <string>
#include <vector>

#include "kernels/core/error.h"
#include "kernels/gemm/opencl/device_gemm.h"
#include "kernels/opencl/runtime.h"

namespace pb {
namespace {

std::string status_name(clblast::StatusCode s) {
  int code = static_cast<int>(s);
  if (code <= 0 && code > -100) return ocl::error_name(code);  // the OpenCL codes
  switch (s) {
    case clblast::StatusCode::kNotImplemented:
      return "kNotImplemented";
    case clblast::StatusCode::kInvalidMatrixA:
      return "kInvalidMatrixA";
    case clblast::StatusCode::kInvalidMatrixB:
      return "kInvalidMatrixB";
    case clblast::StatusCode::kInvalidMatrixC:
      return "kInvalidMatrixC";
    case clblast::StatusCode::kInvalidDimension:
      return "kInvalidDimension";
    case clblast::StatusCode::kInvalidLeadDimA:
      return "kInvalidLeadDimA";
    case clblast::StatusCode::kInvalidLeadDimB:
      return "kInvalidLeadDimB";
    case clblast::StatusCode::kInvalidLeadDimC:
      return "kInvalidLeadDimC";
    case clblast::StatusCode::kInsufficientMemoryA:
      return "kInsufficientMemoryA";
    case clblast::StatusCode::kInsufficientMemoryB:
      return "kInsufficientMemoryB";
    case clblast::StatusCode::kInsufficientMemoryC:
      return "kInsufficientMemoryC";
    case clblast::StatusCode::kInsufficientMemoryTemp:
      return "kInsufficientMemoryTemp";
    case clblast::StatusCode::kInvalidLocalMemUsage:
      return "kInvalidLocalMemUsage";
    case clblast::StatusCode::kDatabaseError:
      return "kDatabaseError";
    case clblast::StatusCode::kUnknownError:
      return "kUnknownError";
    case clblast::StatusCode::kUnexpectedError:
      return "kUnexpectedError";
    default:
      return "StatusCode(" + std::to_string(code) + ")";
  }
}

void check_status(clblast::StatusCode s, const char* call) {
  if (s != clblast::StatusCode::kSuccess)
    throw RuntimeError(std::string(call) + " failed: " + status_name(s));
}

class GemmClblast : public DeviceGemm {
 public:
  std::string name() const override { return "ocl/clblast"; }

  void plan(const GemmDesc& d, Dir, const std::vector<const Tensor*>& in) override {
    queue_ = ocl::queue();
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

  void run() override { gemm(c_.get(), &event_); }
  size_t workspace_bytes() const override { return temp_.bytes(); }

  std::vector<std::pair<std::string, double>> extra_counters() const override {
    // CLBlast's event covers its last kernel only (the GEMM proper, not any padding copies).
    return {{"last_kernel_ms", event_.elapsed_ms()}, {"build_ms", build_ms_}};
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

  cl_command_queue queue_ = nullptr;
  ocl::Buffer temp_;
  ocl::Event event_;
  double build_ms_ = 0;
};

}  // namespace

std::unique_ptr<GemmImpl> make_gemm_clblast() {
  return std::make_unique<GemmClblast>();
}

}  // namespace pb
