// onednn/matmul: oneDNN's matmul primitive as the vendor baseline. Column-major C = op(A) op(B)
// is computed as row-major C^T = op(B)^T op(A)^T with strided memory descriptors (no copies).
#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/core/error.h"
#include "kernels/gemm/cpu/host_gemm.h"
#include "kernels/vendor_onednn.h"

namespace pb {

namespace {

using dnnl::memory;

class OnednnMatmul : public HostGemm {
 public:
  std::string name() const override { return "onednn/matmul"; }
  void run() override {
    prim_.execute(onednn::stream(),
                  {{DNNL_ARG_SRC, src_}, {DNNL_ARG_WEIGHTS, wei_}, {DNNL_ARG_DST, dst_}});
  }
  void sync() override { onednn::stream().wait(); }

 protected:
  void prepare_more() override {
    try {
      const memory::dim M = d_.m, N = d_.n, K = d_.k;
      memory::desc src_md({N, K}, memory::data_type::f32,
                          d_.tb ? memory::dims{1, d_.ldb} : memory::dims{d_.ldb, 1});
      memory::desc wei_md({K, M}, memory::data_type::f32,
                          d_.ta ? memory::dims{1, d_.lda} : memory::dims{d_.lda, 1});
      memory::desc dst_md({N, M}, memory::data_type::f32, memory::dims{d_.ldc, 1});
      dnnl::primitive_attr attr;
      if (d_.alpha != 1) attr.set_output_scales(0, {static_cast<float>(d_.alpha)});
      if (d_.beta != 0) {
        dnnl::post_ops po;
        po.append_sum(static_cast<float>(d_.beta));
        attr.set_post_ops(po);
      }
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src_md, wei_md, dst_md), attr,
                                      onednn::engine());
      prim_ = dnnl::matmul(pd);
      auto& eng = onednn::engine();
      src_ = memory(src_md, eng, const_cast<float*>(b_->data()));
      wei_ = memory(wei_md, eng, const_cast<float*>(a_->data()));
      dst_ = memory(dst_md, eng, c_.data());
    } catch (const dnnl::error& e) {
      onednn::rethrow(e, "oneDNN matmul");
    }
  }

 private:
  dnnl::matmul prim_;
  memory src_, wei_, dst_;
};

}  // namespace

std::unique_ptr<GemmImpl> make_gemm_onednn_matmul() {
  return std::make_unique<OnednnMatmul>();
}

}  // namespace pb
