// cpu/blas in a reduced data type (bf16, u8s8; forward inference): the input projection as one
// GEMM over all steps and per step one GEMM of the recurrent weights, both on cpu/packed's
// reduced-precision GEMM (kernels/gemm/cpu/packed_lowp.h), then cpu/blas's fp32 pointwise pass,
// after which the new hidden state is stored in the type: the next step's GEMM source and y.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/core/error.h"
#include "kernels/core/problem.h"
#include "kernels/core/threads.h"
#include "kernels/core/vmath.h"
#include "kernels/gemm/cpu/packed_lowp.h"
#include "kernels/gemm/cpu/sgemm.h"
#include "kernels/rnn/cpu/blas_lowp.h"
#include "kernels/rnn/cpu/pointwise.h"

#if defined(__x86_64__)
#include <immintrin.h>
// GCC 12's false maybe-uninitialized reports on its own intrinsics (see packed_lowp.cpp).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace pb {
namespace {

using namespace rnn_cpu;

// The element types: data (x, h) and weights.
struct Bf16Types {
  using TD = uint16_t;
  using TW = uint16_t;
};
struct U8s8Types {
  using TD = uint8_t;
  using TW = int8_t;
};

#if defined(__x86_64__)
// h[0, n) into the type: bf16 (round to nearest even) at out, and h replaced by the value the
// type holds (the state the next step reads).
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void store_state(float* h,
                                                                                 uint16_t* out,
                                                                                 int64_t n, float,
                                                                                 float) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
    const __m256i b = (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(k, h + i));
    _mm256_mask_storeu_epi16(out + i, k, b);
    _mm512_mask_storeu_ps(h + i, k,
                          _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16)));
  }
}
// u8: q = h * scale + shift (one rounding), to the nearest integer (even on ties: MXCSR's
// default), saturated to [0, 255]; h becomes (q - shift) / scale.
__attribute__((target("avx512f,avx512bw,avx512vl"))) void store_state_avx512(float* h, uint8_t* out,
                                                                             int64_t n, float scale,
                                                                             float shift) {
  const __m512 vs = _mm512_set1_ps(scale), vsh = _mm512_set1_ps(shift);
  const __m512i lo = _mm512_setzero_si512(), hi = _mm512_set1_epi32(255);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
    const __m512 x = _mm512_maskz_loadu_ps(k, h + i);
    __m512i q = _mm512_cvtps_epi32(_mm512_fmadd_ps(x, vs, vsh));
    q = _mm512_min_epi32(_mm512_max_epi32(q, lo), hi);
    _mm512_mask_cvtepi32_storeu_epi8(out + i, k, q);
    _mm512_mask_storeu_ps(h + i, k, _mm512_div_ps(_mm512_sub_ps(_mm512_cvtepi32_ps(q), vsh), vs));
  }
}
// The same without AVX-512 (u8s8 on cpu/packed's AVX2 kernel), element by element, with the
// AVX-512 conversion's results: one rounding for h * scale + shift, out-of-range values to
// INT_MIN (then 0) as cvtps2dq gives them.
void store_state(float* h, uint8_t* out, int64_t n, float scale, float shift) {
  static const bool avx512 = std::string(vmath::isa()) == "avx512";
  if (avx512) return store_state_avx512(h, out, n, scale, shift);
  for (int64_t i = 0; i < n; ++i) {
    const float v = std::fma(h[i], scale, shift);
    int32_t q = std::fabs(v) < 2147483648.0f ? static_cast<int32_t>(std::nearbyint(v))
                                             : std::numeric_limits<int32_t>::min();
    q = std::min(std::max(q, 0), 255);
    out[i] = static_cast<uint8_t>(q);
    h[i] = (static_cast<float>(q) - shift) / scale;
  }
}
#else
// Never called: supports() refuses reduced types where cpu/packed's kernels are missing.
void store_state(float*, uint16_t*, int64_t, float, float) {}
void store_state(float*, uint8_t*, int64_t, float, float) {}
#endif

// A value of the type back to fp32.
inline float value_of(uint16_t v, float, float) {
  return from_bf16(v);
}
inline float value_of(uint8_t v, float scale, float shift) {
  return (static_cast<float>(v) - shift) / scale;
}
// An fp32 input value (exact in the type: RnnTraits makes it so) in the type.
inline uint16_t typed(float v, uint16_t*, float, float) {
  return to_bf16(v);
}
inline uint8_t typed(float v, uint8_t*, float scale, float shift) {
  return static_cast<uint8_t>(std::nearbyint(v * scale + shift));
}
inline int8_t typed(float v, int8_t*, float scale, float) {
  return static_cast<int8_t>(std::nearbyint(v * scale));
}

template <class Ty>
class RnnBlasLowp : public RnnImpl {
  using TD = typename Ty::TD;
  using TW = typename Ty::TW;
  static constexpr bool kU8 = std::is_same_v<TD, uint8_t>;

 public:
  std::string name() const override { return "cpu/blas"; }
  Support supports(const RnnDesc&, Dir) const override { return Support::yes(); }

  void plan(const RnnDesc& d, Dir, const std::vector<const Tensor*>& in) override {
    d_ = d;
    const int64_t T = d.t, N = d.n, H = d.h, I = d.i, GH = d.gh();
    size_t k = 0;
    const Tensor* x = in[k++];
    h0_ = in[k++];
    c0_ = d.has_c() ? in[k++] : nullptr;
    w_ = in[k++];
    r_ = in[k++];
    b_ = in[k++];
    if constexpr (kU8) {
      w_scale_ = in[k];
      data_scale_ = (*in[k + 1])[0];
      data_shift_ = (*in[k + 2])[0];
    }
    // The source in its type, as benchdnn hands a primitive memory already in its type.
    xd_.resize(T * N * I);
    for (int64_t q = 0; q < T * N * I; ++q)
      xd_[q] = typed((*x)[q], static_cast<TD*>(nullptr), data_scale_, data_shift_);
    wt_.resize(I * GH);
    rt_.resize(H * GH);
    row_scale_.assign(GH, 1.0f);
    xp_.assign(T * N * GH, 0);
    ys_.resize((T + 1) * N * H);
    hf_[0].assign(N * H, 0), hf_[1].assign(N * H, 0);
    if (c0_) cs_[0].assign(N * H, 0), cs_[1].assign(N * H, 0);
    if (d.cell == Cell::gru) hr_.assign(N * GH, 0), rh_.assign(N * H, 0);
    weights();
    reorder_in();
  }

  // W^T (I x GH) and R^T (H x GH) in the type (u8s8: the s8 integers W * w_scale), and the
  // per-row scales the GEMM's epilogue applies (u8s8: 1 / w_scale).
  void weights() override {
    const double t0 = now_seconds();
    const int64_t I = d_.i, H = d_.h, GH = d_.gh();
    auto transpose_typed = [&](const Tensor& m, int64_t cols, std::vector<TW>& out) {
#pragma omp parallel for schedule(static)
      for (int64_t g = 0; g < GH; ++g) {
        const float s = kU8 ? (*w_scale_)[g] : 1.0f;
        for (int64_t c = 0; c < cols; ++c)
          out[c * GH + g] = typed(m[g * cols + c], static_cast<TW*>(nullptr), s, 0.0f);
      }
    };
    transpose_typed(*w_, I, wt_);
    transpose_typed(*r_, H, rt_);
    // R^T once more, interleaved as the recurrent GEMM's kernels read it every step (oneDNN
    // packs its RNN weights likewise), the per-step GEMM then streams it.
    rp_ = LowpPackedA(d_.dt, GH, H, rt_.data(), GH);
    // W^T too, for the input projection: without it the AVX2 u8s8 kernel widened and packed W
    // on every call (a one-step GRU h512 at batch 1 ran 0.36x its fp32 time), and the AVX-512
    // kernels re-interleave it for up to 64 columns.
    wp_ = LowpPackedA(d_.dt, GH, I, wt_.data(), GH);
    if constexpr (kU8)
      for (int64_t g = 0; g < GH; ++g) row_scale_[g] = 1.0f / (*w_scale_)[g];
    convert_ms_ = 1e3 * (now_seconds() - t0);
  }

  // The initial state h0 in the type: the first step's GEMM source (its pointwise pass reads h0
  // and c0 in place).
  void reorder_in() override {
    for (int64_t q = 0; q < d_.n * d_.h; ++q)
      ys_[q] = typed((*h0_)[q], static_cast<TD*>(nullptr), data_scale_, data_shift_);
  }

  void run() override {
    const int64_t T = d_.t, N = d_.n, H = d_.h, I = d_.i, GH = d_.gh();
    const double t0 = now_seconds();
    gemm(T * N, I, xd_.data(), I, wt_.data(), 0.0f, xp_.data(), &wp_);
    const double t1 = now_seconds();
    const bool parallel = threads() > 1;
    for (int64_t t = 0; t < T; ++t) {
      // The states of step t-1 (t = 0: h0 and c0, read in place) and of step t, alternating.
      const int cur = static_cast<int>(t % 2);
      const float* hp = t ? hf_[cur].data() : h0_->data();
      const float* cp = !c0_ ? nullptr : t ? cs_[cur].data() : c0_->data();
      float* h = hf_[1 - cur].data();
      const TD* src = &ys_[t * N * H];
      TD* dst = &ys_[(t + 1) * N * H];
      float* a = &xp_[t * N * GH];
      if (d_.cell == Cell::gru)
        gemm(N, H, src, H, rt_.data(), 0.0f, hr_.data(), &rp_);
      else
        gemm(N, H, src, H, rt_.data(), 1.0f, a, &rp_);
      for_blocks(N, H, parallel, [&](int64_t n, int64_t j0, int64_t j1) {
        FwdRow r;
        r.a = a + n * GH;
        r.hr = hr_.empty() ? nullptr : &hr_[n * GH];
        r.b = b_->data();
        r.hp = hp + n * H;
        r.h = h + n * H;
        r.cp = cp ? cp + n * H : nullptr;
        r.c = c0_ ? &cs_[1 - cur][n * H] : nullptr;
        r.rh = rh_.empty() ? nullptr : &rh_[n * H];
        cell_fwd(d_.cell, r, H, j0, j1);
        store_state(r.h + j0, dst + n * H + j0, j1 - j0, data_scale_, data_shift_);
      });
    }
    input_proj_ms_ = 1e3 * (t1 - t0);
    recurrent_ms_ = 1e3 * (now_seconds() - t1);
  }

  std::vector<Tensor> result() override {
    const int64_t T = d_.t, NH = d_.n * d_.h;
    std::vector<Tensor> out;
    out.emplace_back(Dims{T, d_.n, d_.h});
    for (int64_t q = 0; q < T * NH; ++q)
      out.back()[q] = value_of(ys_[NH + q], data_scale_, data_shift_);
    if (c0_) {
      out.emplace_back(Dims{d_.n, d_.h});
      const std::vector<float>& c = cs_[d_.t % 2];
      std::copy(c.begin(), c.end(), out.back().data());
    }
    return out;
  }

  size_t workspace_bytes() const override {
    return sizeof(TD) * (xd_.size() + ys_.size()) + sizeof(TW) * (wt_.size() + rt_.size()) +
           4 * (xp_.size() + 2 * hf_[0].size() + 2 * cs_[0].size() + hr_.size() + rh_.size());
  }
  std::vector<std::pair<std::string, double>> extra_counters() const override {
    return {{"input_proj_ms", input_proj_ms_},
            {"recurrent_ms", recurrent_ms_},
            {"convert_ms", convert_ms_}};
  }

 private:
  // Row-major C (rows x GH) (+)= S (rows x k, the data in the type) op W^T (k x GH): in
  // cpu/packed's column-major terms C^T (GH x rows) = (W^T)^T-stored A (GH x k, lda GH) times
  // B (k x rows, ldb = k), A's rows the gates with their scales, B's zero point the data shift.
  void gemm(int64_t rows, int64_t k, const TD* s, int64_t lds, const TW* wt, float beta, float* c,
            const LowpPackedA* packed = nullptr) const {
    LowpGemm g;
    g.dt = d_.dt;
    g.m = d_.gh(), g.n = rows, g.k = k;
    g.a = wt, g.lda = d_.gh();
    g.b = s, g.ldb = lds;
    g.c = c, g.ldc = d_.gh();
    g.alpha = 1, g.beta = beta;
    g.a_packed = packed;
    if constexpr (kU8) {
      g.a_scale = row_scale_.data();
      g.b_scale = 1.0f / data_scale_;
      g.b_zero = static_cast<int32_t>(data_shift_);
    }
    gemm_packed_lowp(g);
  }

  RnnDesc d_;
  const Tensor *h0_ = nullptr, *c0_ = nullptr, *w_ = nullptr, *r_ = nullptr, *b_ = nullptr,
               *w_scale_ = nullptr;
  float data_scale_ = 1, data_shift_ = 0;
  std::vector<TD> xd_, ys_;  // ys_: h0, h_1 .. h_T in the type
  std::vector<TW> wt_, rt_;
  LowpPackedA rp_, wp_;  // rt_ and wt_ interleaved for the per-step GEMM and the projection
  std::vector<float> row_scale_, xp_, hr_, rh_;
  std::vector<float> hf_[2], cs_[2];  // the fp32 states of the previous and the current step
  double convert_ms_ = 0, input_proj_ms_ = 0, recurrent_ms_ = 0;
};

}  // namespace

std::string rnn_blas_lowp_unsupported(const RnnDesc& d, Dir dir) {
  if (dir != Dir::fwd)
    return "dt " + d.dt.str() + ": reduced-precision RNNs run fwd (inference) only";
  // Only cpu/packed has reduced-precision GEMMs: another PRIMBENCH_SGEMM would be misnamed.
  if (sgemm_library() != "packed")
    return "dt " + d.dt.str() + ": cpu/blas's reduced-precision GEMMs are cpu/packed's, and " +
           "PRIMBENCH_SGEMM=" + sgemm_library() + " asks for another library";
  const std::string why = gemm_packed_lowp_unsupported(d.dt);
  return why.empty() ? "" : "cpu/blas runs its GEMMs on cpu/packed: " + why;
}

std::unique_ptr<RnnImpl> make_rnn_blas_lowp(const RnnDesc& d) {
  if (d.dt.in == DataType::bf16) return std::make_unique<RnnBlasLowp<Bf16Types>>();
  if (d.dt.in == DataType::u8s8) return std::make_unique<RnnBlasLowp<U8s8Types>>();
  throw Unsupported(rnn_blas_lowp_unsupported(d, Dir::fwd));
}

}  // namespace pb

#if defined(__x86_64__)
#pragma GCC diagnostic pop
#endif
