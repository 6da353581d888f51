// onednn/matmul: oneDNN's matmul primitive as the vendor baseline, in every data type oneDNN has
// (desc.h's dt: B is the source, A the weights). Column-major C = op(A) op(B) is computed as
// row-major C^T = op(B)^T op(A)^T with strided memory descriptors (no copies).
// onednn/sgemm: oneDNN's BLAS-like dnnl_sgemm (fp32), the same product. Both are oneDNN at its
// best on different shapes: on AVX-512 the matmul primitive (brgemm) ran a plain row-major
// weight, our A with no transpose, at 120-170 GFLOP/s where dnnl_sgemm ran the same product at
// 320-340 (2560x7000x2560, 5124x9124x2560, 2 threads, Xeon family 6 model 207); with A
// transposed both ran at 290-340.
#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/core/error.h"
#include "kernels/gemm/cpu/host_gemm.h"
#include "kernels/vendor_onednn.h"

namespace pb {

namespace {

using dnnl::memory;

struct MatmulDescs {
  memory::desc src, wei, dst;
};

MatmulDescs matmul_descs(const GemmDesc& d) {
  const memory::dim M = d.m, N = d.n, K = d.k;
  return {memory::desc({N, K}, onednn::data_type(d.dt.in, true),
                       d.tb ? memory::dims{1, d.ldb} : memory::dims{d.ldb, 1}),
          memory::desc({K, M}, onednn::data_type(d.dt.in, false),
                       d.ta ? memory::dims{1, d.lda} : memory::dims{d.lda, 1}),
          memory::desc({N, M}, onednn::data_type(d.dt.out), memory::dims{d.ldc, 1})};
}

// alpha (and u8s8's scales: one per column of the row-major N x M dst, i.e. per row of C) as
// output scales, the source zero point, beta as a sum post-op in C's units.
dnnl::primitive_attr matmul_attr(const GemmDesc& d, const std::vector<float>& row_scales,
                                 int32_t b_zero, float c_scale) {
  dnnl::primitive_attr attr;
  float beta = static_cast<float>(d.beta);
  if (d.dt.in == DataType::u8s8) {
    attr.set_output_scales(1 << 1, row_scales);
    if (b_zero != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {b_zero});
    if (d.dt.out != DataType::out_s8) beta *= c_scale;
  } else if (d.alpha != 1) {
    attr.set_output_scales(0, {static_cast<float>(d.alpha)});
  }
  if (d.beta != 0) {
    dnnl::post_ops po;
    po.append_sum(beta);
    attr.set_post_ops(po);
  }
  return attr;
}

class OnednnMatmul : public HostGemm {
 public:
  std::string name() const override { return "onednn/matmul"; }
  void run() override {
    prim_.execute(onednn::stream(),
                  {{DNNL_ARG_SRC, src_}, {DNNL_ARG_WEIGHTS, wei_}, {DNNL_ARG_DST, dst_}});
  }
  void sync() override { onednn::stream().wait(); }

 protected:
  // Whether this oneDNN has the type on this CPU: it creates the primitive descriptor (scales
  // of the right shape, values do not matter) and says what oneDNN answered.
  std::string dt_unsupported(const GemmDesc& d) const override {
    if (std::string why = onednn::u8s8_unsupported(d.dt.in); !why.empty()) return why;
    try {
      const MatmulDescs md = matmul_descs(d);
      dnnl::matmul::primitive_desc(dnnl::matmul::desc(md.src, md.wei, md.dst),
                                   matmul_attr(d, std::vector<float>(d.m, 1.0f), 1, 1.0f),
                                   onednn::engine());
      return "";
    } catch (const dnnl::error& e) {
      return "oneDNN " + onednn::version() + " has no dt " + d.dt.str() + " matmul on this CPU (" +
             e.what() + ")";
    }
  }
  void prepare_more() override {
    try {
      const MatmulDescs md = matmul_descs(d_);
      std::vector<float> row_scales;
      if (d_.dt.in == DataType::u8s8) {
        const float div = d_.dt.out == DataType::out_s8 ? c_scale_ : 1.0f;
        for (int64_t i = 0; i < d_.m; ++i)
          row_scales.push_back(static_cast<float>(d_.alpha) * a_scale_[i] * b_scale_ / div);
      }
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(md.src, md.wei, md.dst),
                                      matmul_attr(d_, row_scales, b_zero_, c_scale_),
                                      onednn::engine());
      prim_ = dnnl::matmul(pd);
      auto& eng = onednn::engine();
      const bool f32 = d_.dt.is_f32();
      src_ = memory(md.src, eng, const_cast<void*>(f32 ? b_->data() : b_typed()));
      wei_ = memory(md.wei, eng, const_cast<void*>(f32 ? a_->data() : a_typed()));
      dst_ = memory(md.dst, eng, c_out());
    } catch (const dnnl::error& e) {
      onednn::rethrow(e, "oneDNN matmul");
    }
  }

 private:
  dnnl::matmul prim_;
  memory src_, wei_, dst_;
};

class OnednnSgemm : public HostGemm {
 public:
  std::string name() const override { return "onednn/sgemm"; }
  void run() override {
    // Row-major: C^T (n x m, ldc) = op(B)^T op(A)^T, B read as n x k (k x n when tb), A as
    // k x m (m x k when ta).
    const GemmDesc& d = d_;
    const dnnl_status_t st = dnnl_sgemm(d.tb ? 'T' : 'N', d.ta ? 'T' : 'N', d.n, d.m, d.k,
                                        static_cast<float>(d.alpha), b_->data(), d.ldb, a_->data(),
                                        d.lda, static_cast<float>(d.beta), c_.data(), d.ldc);
    if (st != dnnl_success)
      throw RuntimeError("oneDNN " + onednn::version() + " dnnl_sgemm failed (status " +
                         std::to_string(static_cast<int>(st)) + ")");
  }
};

}  // namespace

std::unique_ptr<GemmImpl> make_gemm_onednn_sgemm() {
  return std::make_unique<OnednnSgemm>();
}

std::unique_ptr<GemmImpl> make_gemm_onednn_matmul() {
  return std::make_unique<OnednnMatmul>();
}

}  // namespace pb
