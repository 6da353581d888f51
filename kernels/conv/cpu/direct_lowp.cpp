// cpu/direct's forward in a reduced type (direct_common.h, LowpFwd): the fp32 forward's register
// tiles (J output columns x 16V output channels) and task loop, each kernel tap a dot product over
// a group of G input channels interleaved per pixel: bf16 pairs with vdpbf16ps (AVX512_BF16, fp32
// accumulation), u8 x s8 quadruples with vpdpbusd (AVX512_VNNI, int32 accumulation), the same
// dot() as cpu/packed's reduced-precision GEMM. Weights are repacked to
// [g][oc block][channel group][kh][kw][16V][G], zero past the channels. u8s8: the padding holds
// the source's zero point z, so sum(w * (x - z)) over the taps inside the image is the int32 sum
// minus z times the weights' sum over the kernel rows inside the image (per output row: rows
// outside are skipped, as in fp32); the per-channel scales apply in the tile's epilogue, which
// also converts to the output type.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <utility>

#include "kernels/conv/cpu/direct_common.h"
#include "kernels/core/error.h"
#include "kernels/core/vmath.h"

#if defined(__x86_64__)
#define PB_X86 1
// GCC 12's false maybe-uninitialized reports on its own intrinsics (packed_lowp_kernels.h).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "kernels/gemm/cpu/packed_lowp_kernels.h"
#endif

namespace pb::direct {

std::string LowpFwd::unsupported(const ConvDesc& d) {
  const std::string t = "dt " + d.dt.str() + ": ";
  if (d.dt.in == DataType::f16)
    return t +
           "cpu/direct has no f16 kernel (f16 products summed in fp32 have no dot-product "
           "instruction here; AVX512_FP16's accumulate in f16)";
#ifdef PB_X86
  if (std::string(vmath::isa()) != "avx512")
    return t + "cpu/direct's reduced-precision kernels need AVX-512 (SIMD path in force: " +
           vmath::isa() + ")";
  if (d.dt.in == DataType::bf16 && !__builtin_cpu_supports("avx512bf16"))
    return t + "this CPU has no AVX512_BF16 (vdpbf16ps)";
  if (d.dt.in == DataType::u8s8 && !__builtin_cpu_supports("avx512vnni"))
    return t + "this CPU has no AVX512_VNNI (vpdpbusd)";
  return "";
#else
  return t + "cpu/direct's reduced-precision kernels are x86 AVX-512 only";
#endif
}

#ifdef PB_X86
namespace {

using lowp::Acc;
using lowp::dot;

struct Bf16 {
  using T = uint16_t;  // source
  using W = uint16_t;  // weights
  static constexpr int G = 2;
};
struct U8s8 {
  using T = uint8_t;
  using W = int8_t;
  static constexpr int G = 4;
};

// The tile's per-thread inputs: the group's first channel group of image n, the oc block's
// weights, its weight sums per kernel row (u8s8) and its scales (u8s8: per channel, else null).
struct TileArgs {
  const void* in;
  const void* w;
  const int32_t* wsum;
  const float* scale;
  int32_t zero;
};

// J output columns (from ox0) x 16V output channels of output row oy into out[J][16V] as fp32.
template <class Tr, int J, int V>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512bf16"))) void tile(
    const Plan& p, const TileArgs& a, int64_t oy, int64_t ox0, float* out) {
  constexpr int G = Tr::G;
  using T = typename Tr::T;
  using A = typename Acc<G>::type;
  constexpr int64_t wstep = 16 * V * G;  // weight elements per tap
  A acc[J][V];
#pragma GCC unroll 16
  for (int j = 0; j < J; ++j)
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) acc[j][v] = A{};
  const T* in = static_cast<const T*>(a.in);
  const typename Tr::W* w = static_cast<const typename Tr::W*>(a.w);
  const int64_t* koff = p.koff.data();
  for (int64_t cg = 0; cg < p.cgroups; ++cg) {
    const T* plane = in + cg * p.cstride;
    for (int64_t ky = 0; ky < p.kh; ++ky) {
      const int64_t iy = oy * p.sh - p.ph + ky * p.dh1;
      if (iy < 0 || iy >= p.ih) continue;
      const T* row = plane + iy * p.row_stride + ox0 * G;
      const typename Tr::W* wk = w + (cg * p.kh + ky) * p.kw * wstep;
      for (int64_t kx = 0; kx < p.kw; ++kx) {
        const T* x = row + koff[kx] * G;
        __m512i wv[V];
#pragma GCC unroll 2
        for (int v = 0; v < V; ++v) wv[v] = _mm512_loadu_si512(wk + kx * wstep + 16 * G * v);
#pragma GCC unroll 16
        for (int j = 0; j < J; ++j) {
          int32_t word;
          std::memcpy(&word, x + j * G, 4);
          const __m512i b = _mm512_set1_epi32(word);
#pragma GCC unroll 2
          for (int v = 0; v < V; ++v) acc[j][v] = dot(acc[j][v], b, wv[v]);
        }
      }
    }
  }
  __m512i comp[V];
  if constexpr (G == 4) {
    for (int v = 0; v < V; ++v) comp[v] = _mm512_setzero_si512();
    if (a.zero != 0) {
      for (int64_t ky = 0; ky < p.kh; ++ky) {
        const int64_t iy = oy * p.sh - p.ph + ky * p.dh1;
        if (iy < 0 || iy >= p.ih) continue;
        for (int v = 0; v < V; ++v)
          comp[v] = _mm512_add_epi32(comp[v], _mm512_loadu_si512(a.wsum + (ky * V + v) * 16));
      }
      for (int v = 0; v < V; ++v) comp[v] = _mm512_mullo_epi32(comp[v], _mm512_set1_epi32(a.zero));
    }
  }
#pragma GCC unroll 16
  for (int j = 0; j < J; ++j)
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) {
      __m512 f;
      if constexpr (G == 4)
        f = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(acc[j][v], comp[v])),
                          _mm512_loadu_ps(a.scale + 16 * v));
      else
        f = acc[j][v];
      _mm512_storeu_ps(out + (j * V + v) * 16, f);
    }
}

template <class Tr>
using TileFn = void (*)(const Plan&, const TileArgs&, int64_t, int64_t, float*);

template <class Tr, int V, size_t... I>
constexpr std::array<TileFn<Tr>, sizeof...(I)> tiles(std::index_sequence<I...>) {
  return {&tile<Tr, static_cast<int>(I) + 1, V>...};
}
template <class Tr>
TileFn<Tr> tile_for(int v, int j) {
  static constexpr auto t1 = tiles<Tr, 1>(std::make_index_sequence<kMaxJ>());
  static constexpr auto t2 = tiles<Tr, 2>(std::make_index_sequence<kMaxJ>());
  return (v == 2 ? t2 : t1)[j - 1];
}

// A tile of fp32 values (buf[j][w16]) in the output type, in place at the front of buf.
void to_output(float* buf, int n, DataType::Out out) {
  if (out == DataType::out_bf16) {
    uint16_t* h = reinterpret_cast<uint16_t*>(buf);
    for (int i = 0; i < n; ++i) h[i] = to_bf16(buf[i]);
  } else if (out == DataType::out_s8) {
    int8_t* b = reinterpret_cast<int8_t*>(buf);
    for (int i = 0; i < n; ++i)
      b[i] = static_cast<int8_t>(convert_output(buf[i], DataType::out_s8));
  }
}

template <class Tr>
void run_tiles(const ConvDesc& d, const Plan& plan, int v, int j, int64_t nb,
               const std::vector<uint8_t>& in, const std::vector<uint8_t>& wp,
               const std::vector<int32_t>& wsum, const std::vector<float>& scale, int32_t zero,
               const PostOps* post, void* out) {
  using T = typename Tr::T;
  const TileFn<Tr> fn = tile_for<Tr>(v, j);
  const int w16 = 16 * v;
  const int64_t wblock = plan.cgroups * d.kh * d.kw * w16 * Tr::G;
  const int64_t plane = d.oh * d.ow;
  const DataType::Out ot = d.dt.out;
  for_tiles(d, nb, j, [&](int64_t n, int64_t gi, int64_t b, int64_t oy, int64_t ox0, float* buf) {
    TileArgs a;
    a.in = reinterpret_cast<const T*>(in.data()) + n * d.ih * plan.row_stride +
           gi * plan.cgroups * plan.cstride;
    a.w = reinterpret_cast<const typename Tr::W*>(wp.data()) + (gi * nb + b) * wblock;
    a.wsum = wsum.empty() ? nullptr : wsum.data() + (gi * nb + b) * d.kh * w16;
    a.scale = scale.empty() ? nullptr : scale.data() + (gi * nb + b) * w16;
    a.zero = zero;
    fn(plan, a, oy, ox0, buf);
    const int64_t oc0 = b * w16, noc = std::min<int64_t>(w16, d.ocg() - oc0);
    const int64_t at = ((n * d.oc + gi * d.ocg() + oc0) * d.oh + oy) * d.ow + ox0;
    to_output(buf, j * w16, ot);
    if (ot == DataType::out_f32 && post)
      scatter_tile_post(buf, w16, noc, j, post->at(gi * d.ocg() + oc0, at, plane),
                        static_cast<float*>(out) + at, plane);
    else if (ot == DataType::out_f32)
      scatter_tile(buf, w16, noc, j, static_cast<float*>(out) + at, plane);
    else if (ot == DataType::out_s8)
      scatter_tile(reinterpret_cast<int8_t*>(buf), w16, noc, j, static_cast<int8_t*>(out) + at,
                   plane);
    else
      scatter_tile(reinterpret_cast<uint16_t*>(buf), w16, noc, j, static_cast<uint16_t*>(out) + at,
                   plane);
  });
}

// One padded row of G channels c0.. (rows[q], null past the group's channels: left as the
// padding value) into dst's pixels (phase-split when sw > 1), G elements per pixel.
template <class T, int G>
void interleave_row(const ConvDesc& d, const Plan& p, const T* const* rows, T* dst) {
  int64_t x = 0;
  if (d.sw == 1) {
    T* o = dst + d.pw * G;
    if constexpr (G == 2) {  // bf16 pairs: 8 pixels per step
      if (rows[1])
        for (; x + 8 <= d.iw; x += 8) {
          const __m128i r0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[0] + x));
          const __m128i r1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[1] + x));
          _mm_storeu_si128(reinterpret_cast<__m128i*>(o + x * G), _mm_unpacklo_epi16(r0, r1));
          _mm_storeu_si128(reinterpret_cast<__m128i*>(o + x * G) + 1, _mm_unpackhi_epi16(r0, r1));
        }
    } else {  // u8 quadruples: 16 pixels per step
      if (rows[1] && rows[2] && rows[3])
        for (; x + 16 <= d.iw; x += 16) {
          __m128i r[4];
          for (int q = 0; q < 4; ++q)
            r[q] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[q] + x));
          const __m128i a0 = _mm_unpacklo_epi8(r[0], r[1]), a1 = _mm_unpackhi_epi8(r[0], r[1]);
          const __m128i b0 = _mm_unpacklo_epi8(r[2], r[3]), b1 = _mm_unpackhi_epi8(r[2], r[3]);
          __m128i* out = reinterpret_cast<__m128i*>(o + x * G);
          _mm_storeu_si128(out, _mm_unpacklo_epi16(a0, b0));
          _mm_storeu_si128(out + 1, _mm_unpackhi_epi16(a0, b0));
          _mm_storeu_si128(out + 2, _mm_unpacklo_epi16(a1, b1));
          _mm_storeu_si128(out + 3, _mm_unpackhi_epi16(a1, b1));
        }
    }
  }
  for (; x < d.iw; ++x) {
    const int64_t xp = x + d.pw, at = (xp % d.sw) * p.phase_len + xp / d.sw;
    for (int q = 0; q < G; ++q)
      if (rows[q]) dst[at * G + q] = rows[q][x];
  }
}

template <class Tr>
void copy_rows(const ConvDesc& d, const Plan& p, const void* src, std::vector<uint8_t>& in) {
  using T = typename Tr::T;
  constexpr int G = Tr::G;
  const T* s = static_cast<const T*>(src);
  T* o = reinterpret_cast<T*>(in.data());
  const int64_t rows = d.mb * d.ih * d.g * p.cgroups, ihw = d.ih * d.iw;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {  // r = ((n * ih + iy) * g + gi) * cgroups + cg
    const int64_t cg = r % p.cgroups, gi = (r / p.cgroups) % d.g, iy = (r / p.cgroups / d.g) % d.ih,
                  n = r / p.cgroups / d.g / d.ih;
    const T* ch[G];
    for (int q = 0; q < G; ++q) {
      const int64_t c = cg * G + q;
      ch[q] = c < d.icg() ? s + (n * d.ic + gi * d.icg() + c) * ihw + iy * d.iw : nullptr;
    }
    interleave_row<T, G>(d, p, ch, o + r * p.cstride);
  }
}

template <class Tr>
void repack_weights(const ConvDesc& d, const Plan& p, int v, int64_t nb, const void* wei,
                    std::vector<uint8_t>& wp, std::vector<int32_t>& wsum) {
  using W = typename Tr::W;
  constexpr int G = Tr::G;
  const int64_t w16 = 16 * v, kk = d.kh * d.kw;
  wp.assign(static_cast<size_t>(d.g * nb * p.cgroups * kk * w16 * G) * sizeof(W), 0);
  if (G == 4) wsum.assign(static_cast<size_t>(d.g * nb * d.kh * w16), 0);
  const W* w = static_cast<const W*>(wei);
  W* o = reinterpret_cast<W*>(wp.data());
  for (int64_t gi = 0; gi < d.g; ++gi)
    for (int64_t oc = 0; oc < d.ocg(); ++oc)
      for (int64_t c = 0; c < d.icg(); ++c)
        for (int64_t k = 0; k < kk; ++k) {
          const int64_t blk = gi * nb + oc / w16;
          const W x = w[((gi * d.ocg() + oc) * d.icg() + c) * kk + k];
          o[(((blk * p.cgroups + c / G) * kk + k) * w16 + oc % w16) * G + c % G] = x;
          if (G == 4) wsum[(blk * d.kh + k / d.kw) * w16 + oc % w16] += x;
        }
}

}  // namespace
#endif

void LowpFwd::prepare(const ConvDesc& d, const QuantParams& q) {
  d_ = d;
  const bool quant = d.dt.integer();
  const int G = quant ? 4 : 2;
  plan_ = make_plan(d, G);
  v_ = pick_v(d.ocg());
  nb_ = (d.ocg() + 16 * v_ - 1) / (16 * v_);
  j_ = pick_j(d.ow, kMaxJ);
  zero_ = quant ? q.src_zero : 0;
  // The padding (and the channels past a group's) hold 0, or u8s8's zero point.
  in_.assign(static_cast<size_t>(d.mb * d.ih * plan_.row_stride) * (quant ? 1 : 2), 0);
  if (quant) std::fill(in_.begin(), in_.end(), static_cast<uint8_t>(zero_));
  scale_.clear();
  if (quant) {
    const int64_t w16 = 16 * v_;
    scale_.assign(static_cast<size_t>(d.g * nb_ * w16), 0.0f);
    const float div = d.dt.out == DataType::out_s8 ? q.dst_scale : 1.0f;
    for (int64_t gi = 0; gi < d.g; ++gi)
      for (int64_t o = 0; o < d.ocg(); ++o)
        scale_[(gi * nb_ + o / w16) * w16 + o % w16] =
            q.wei_scale[gi * d.ocg() + o] * q.src_scale / div;
  }
}

void LowpFwd::repack(const void* wei) {
#ifdef PB_X86
  if (d_.dt.integer())
    repack_weights<U8s8>(d_, plan_, v_, nb_, wei, wp_, wsum_);
  else
    repack_weights<Bf16>(d_, plan_, v_, nb_, wei, wp_, wsum_);
#else
  (void)wei;
#endif
}

void LowpFwd::copy_input(const void* src) {
#ifdef PB_X86
  if (d_.dt.integer())
    copy_rows<U8s8>(d_, plan_, src, in_);
  else
    copy_rows<Bf16>(d_, plan_, src, in_);
#else
  (void)src;
#endif
}

void LowpFwd::run(void* out) {
#ifdef PB_X86
  if (d_.dt.integer())
    run_tiles<U8s8>(d_, plan_, v_, j_, nb_, in_, wp_, wsum_, scale_, zero_, post_, out);
  else
    run_tiles<Bf16>(d_, plan_, v_, j_, nb_, in_, wp_, wsum_, scale_, zero_, post_, out);
#else
  (void)out;
  throw Unsupported(unsupported(d_));
#endif
}

}  // namespace pb::direct

#ifdef PB_X86
#pragma GCC diagnostic pop
#endif
