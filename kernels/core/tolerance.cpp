// The one tolerance table: (primitive, algorithm) -> normwise bound, each with its reason.
#include <string>
#include <vector>

#include "kernels/core/check.h"

namespace pb {

namespace {

struct Row {
  const char* prim;
  const char* algo;  // "<backend>/<algo>", a prefix ending in '/' for a whole backend, or "*"
  double exact;      // bound when inputs are small integers (0: must match bit for bit)
  double general;    // bound for arbitrary data
  const char* why;
};

// fp32 accumulation of k terms has a normwise relative error of about sqrt(k) * 6e-8 for random
// data (Higham, ch. 3); 2e-5 covers k up to ~1e5 with margin.
const std::vector<Row> kTable = {
    {"gemm", "*", 0, 2e-5,
     "integer inputs with |partial sums| < 2^24 are exact in fp32 in any summation order; "
     "arbitrary data: fp32 accumulation error ~ sqrt(K)*eps"},
    // Reduced types (dt=, kernels/core/dtype.h): the inputs are values of the type, so their
    // rounding is part of the problem, not an error; the reference sums them in fp64 and applies
    // the output conversion the implementation applies.
    {"gemm:bf16", "*", 0, 4e-3,
     "bf16 products are exact in fp32 (8-bit significands): integer inputs with |partial sums| "
     "< 2^24 are exact in any order, and a bf16 output rounds the same exact value; arbitrary "
     "data: fp32 accumulation ~sqrt(K)*eps, and with a bf16 output a sum that lands within that "
     "error of a rounding boundary rounds the other way: one bf16 ulp (2^-8 relative) on those "
     "elements, far fewer than all, so 4e-3 normwise (f32 output: the gemm row's 2e-5 would do)"},
    {"gemm:f16", "*", 0, 1e-3,
     "f16 products are exact in fp32 (11-bit significands); integer inputs as bf16; arbitrary "
     "data: fp32 accumulation, and an f16 output one ulp (2^-11) on elements near a boundary"},
    {"gemm:u8s8", "*", 0, 0,
     "int32 accumulation is exact; the scales are powers of two (GemmTraits), so the scaled sum "
     "is exact in fp32 and the s8 rounding (to nearest even, saturated) is the reference's"},
    {"net", "*", 1e-4, 1e-4,
     "a network's output (or a weight gradient) goes through every layer: the fp32 rounding "
     "of ~30 layers (2e-5 each for Winograd and FFT) adds up, and batch-norm's division by the "
     "batch deviation amplifies it; the reference composition rounds to fp32 between layers too"},
    {"conv", "*", 0, 2e-5,
     "direct, im2col+GEMM and oneDNN's direct/GEMM kernels only add exact products: integer "
     "inputs with |partial sums| < 2^24 are exact in any order; arbitrary data: ~sqrt(K)*eps, "
     "K = icg*kh*kw (fwd), ocg*kh*kw (bwd_d), mb*oh*ow (bwd_w). The fill range shrinks with "
     "the direction's K (ConvTraits::sum_terms) so every set is exact at batch 16 (bwd_w K <= "
     "802816, range 3); past 2^23 terms (bwd_w at batch >= ~170 on 224x224) the data are not "
     "exact and this general bound applies: our bwd_w sums <= 1024 pixels per chunk in "
     "registers, then chunk totals, which keeps the growth well below sqrt(K)*eps"},
    // Reduced types (desc.h's dt): as for GEMM, the inputs are values of the type and the
    // reference applies the implementation's output conversion to the exact sum.
    {"conv:bf16", "*", 0, 4e-3,
     "bf16 products are exact in fp32 (8-bit significands): direct, im2col on the bf16 GEMM and "
     "oneDNN's bf16 kernels only add exact products in fp32, so integer inputs with |partial "
     "sums| < 2^24 are exact in any order in every direction, and a bf16 output rounds the same "
     "exact value; arbitrary data: fp32 accumulation ~sqrt(K)*eps (K as in the conv row), and a "
     "bf16 output one ulp (2^-8 relative) on the elements within that error of a rounding "
     "boundary: 4e-3 normwise"},
    // Winograd in bf16 (kernels/conv/cpu/winograd.cpp): F(4x4) runs the fp32 engine on the
    // widened inputs; F(2x2) rounds its transformed operands to bf16 for vdpbf16ps (or runs the
    // fp32 engine where the CPU has none). A bf16 output rounds the result: integer data put many
    // exact sums on ties between two bf16 neighbours (odd integers from 257 to 511, ...), and
    // an engine's error decides them, so up to every element may land one bf16 ulp away, at
    // most 2^-7 relative (just above a power of two): 8e-3 bounds that worst case.
    {"conv:bf16", "cpu/winograd_f2", 8e-3, 8e-3,
     "F(2x2,3x3) on bf16 dot products: the transforms (0, +-1, +-1/2) keep integer data exact, "
     "V = B^T d B integers up to 4x the fill range and U = G w G^T quarter-integers up to 2.25x, "
     "exact in bf16 (8 bits) for ranges up to 28, so sums are exact and a bf16 output rounds as "
     "the reference does (measured 0 on the conformance data, fwd and bwd_d); on reals the bf16 "
     "rounding of V and U adds 3.8e-3..4.0e-3 normwise at icg 16-512, about twice the 2.1e-3 "
     "that rounding fp32 data and weights to bf16 makes (fp64 model of the engine, uniform "
     "[-1, 1] data). Without AVX512_BF16, the fp32 engine (row conv cpu/winograd_f2: exact on "
     "integers below 2^22), whose error can decide the ties of a bf16 output: one bf16 ulp "
     "(<= 2^-7 relative) on such elements. 8e-3 covers both"},
    {"conv:bf16", "cpu/winograd_f4", 8e-3, 8e-3,
     "bf16 inputs widened to fp32, then the fp32 F(4x4,3x3) engine: its error grows as the fp32 "
     "one, like sqrt(icg) (measured 6e-7 at icg 3-16, 1.3e-6 at icg 64; 3.3e-6 at 512 in fp32, "
     "row conv cpu/winograd_f4), far below bf16's own input rounding (2^-9). With a bf16 output "
     "that error decides the integer sums on ties between two bf16 neighbours: measured 1.8e-3 "
     "normwise at icg 64, each element at most one bf16 ulp (<= 2^-7 relative): 8e-3 bounds "
     "the worst case"},
    {"conv:f16", "*", 0, 1e-3,
     "f16 products are exact in fp32 (11-bit significands); integer inputs as bf16; arbitrary "
     "data: fp32 accumulation, and an f16 output one ulp (2^-11) on elements near a boundary"},
    {"conv:u8s8", "*", 0, 0,
     "int32 accumulation is exact, the source's zero point is subtracted exactly (in int32, or "
     "as an integer compensation), the scales are powers of two (quant.h), so the scaled sum is "
     "exact in fp32 and the s8 rounding (to nearest even, saturated) is the reference's"},
    {"conv", "cpu/winograd_f2", 1e-6, 2e-5,
     "F(2x2,3x3): transforms use 0, +-1, +-1/2, so integer data give quarter-integer products; "
     "exact while sums stay below 2^22, which the conformance fill (|sum| < 2^23 for direct) "
     "does not guarantee after the 4x growth of B^T d B: 1e-6 (measured 0 on every set); "
     "uniform reals: 2.6e-7 measured at icg=64, like direct. bwd_w (B^T d B and A dy A^T are "
     "integer, G^T M G in fp64): measured 0 on the conformance data and at batch 16 on VGG-16 "
     "conv1_2/conv5 and ResNet-50 res2; uniform reals 1.6e-7..8.1e-7 (worst: 256 channels, 56x56)"},
    {"conv", "cpu/winograd_f4", 2e-5, 2e-5,
     "F(4x4,3x3) with points 0,+-1,+-2,inf: G has 1/6, 1/12, 1/24 (not exact even on integers) "
     "and B^T/A^T entries up to 8 amplify rounding; the error grows like sqrt(icg): measured "
     "normwise 1.3e-6 (icg 64), 1.9e-6 (128), 2.6e-6 (256), 3.3e-6 (512) on the conformance "
     "data of the VGG-16/ResNet-50 layers, 1.6e-6 on uniform reals (icg 64); 2e-5 covers "
     "icg up to ~16k. bwd_w (sums over mb*oh*ow tiles, G^T M G in fp64): integer data exact "
     "up to ~1e-17 (M is an integer sum, exact in fp32); uniform reals 3.1e-7..2.0e-6 (worst: "
     "256 channels, 56x56), well within 2e-5"},
    {"conv", "cpu/fft", 1e-5, 1e-5,
     "FFT convolution: every output mixes all nh*nw spectral terms; fp32 FFT error grows like "
     "eps*log2(nh*nw) (sizes <= 256^2): measured normwise 1.7e-7..3.3e-7 on "
     "VGG-16/ResNet-50/AlexNet layers (kernels 1..5), 2.4e-7 on uniform reals; 1e-5 "
     "covers the log growth with margin"},
    {"conv", "ocl/fft", 1e-5, 1e-5,
     "FFT convolution like cpu/fft: own radix-2 fp32 FFTs (sizes 8..32, twiddles from an fp32 "
     "table), filter spectra on the device (filter_map.cl: fp64 where the device has cl_khr_fp64, "
     "else fp32; PRIMBENCH_OCL_FP64=0 forces fp32: 3.28e-7 vs 3.25e-7 at ic256 14x14), complex "
     "products summed over icg by the fp32 "
     "tiled GEMM (3M or real embedding); error grows like eps*log2(nh*nw) plus the GEMM's "
     "~sqrt(icg)*eps: measured normwise 2.3e-7 (icg 64), 3.1e-7 (128), 3.7e-7..4.1e-7 (256), "
     "5.1e-7 (512) on the conformance data of the ResNet-50/VGG-16 3x3 layers; the cpu/fft "
     "bound applies"},
    {"conv", "ocl/winograd_f2", 1e-6, 2e-5,
     "same transforms as cpu/winograd_f2 (filters on the device, in fp64 where it has cl_khr_fp64, "
     "else fp32: exact either way, quarter-integer "
     "products), summed over icg by the tiled GEMM in another order: measured 0 on the "
     "conformance data; the cpu/winograd_f2 reasoning and bounds apply. bwd_d is the same "
     "forward pass over diff_dst with flipped, transposed filters (sums over ocg): measured 0 "
     "on the conformance data and on VGG-16 conv5 (ocg 512) at batch 16"},
    {"conv", "ocl/winograd_f4", 2e-5, 2e-5,
     "same F(4x4,3x3) transforms as cpu/winograd_f4 (G applied on the device in fp64 where it has "
     "cl_khr_fp64, else fp32: 2.45e-6 vs 2.43e-6 normwise at ic256 14x14; B^T/A^T "
     "in fp32 on the device): measured normwise 1.35e-6 at icg 64, growing like sqrt(icg) as "
     "on the CPU; the cpu/winograd_f4 bound applies; bwd_d (the same pass over diff_dst, flipped "
     "transposed filters, sums over ocg): "
     "measured 1.37e-6 at ocg 64 and 3.2e-6 at ocg 512 (VGG-16 conv5), as fwd at that icg"},
    {"conv", "onednn/winograd", 1e-4, 1e-4,
     "Winograd F(4x4,3x3) transforms use non-dyadic constants: not exact even on integers; "
     "normwise error grows with the transform's condition (~1e-5 measured on integer data)"},
    {"conv", "onednn/auto", 1e-4, 1e-4,
     "convolution_auto may pick oneDNN's Winograd (AVX-512, large batches): same bound as "
     "onednn/winograd; at small batches it is a direct kernel and exact"},
    {"allreduce", "*", 0, 2e-5,
     "integer inputs whose sums stay below 2^24 are exact in fp32 in any order; every rank "
     "must reproduce the sum bit for bit; arbitrary data: ~sqrt(p)*eps per element"},
    {"pool", "*", 0, 1e-6,
     "max pooling only moves values: exact (integer inputs, first-max ties). Averages: an "
     "integer window sum is exact, then one division by kh*kw or the count (<= 1 ulp, or 2 ulp "
     "through a rounded reciprocal); backward adds <= ceil(k/s)^2 such terms: ~sqrt(terms)*eps"},
    {"lrn", "*", 2e-6, 2e-6,
     "fp32 window sums of <= ls squares (~ls*eps/2 relative), then a power (powf, or for beta "
     "0.75 two square roots: ~2 ulp) and a product; backward adds the window sum of ls such "
     "terms with a cancelling difference (~sqrt(ls) * a few ulp normwise)"},
    {"bnorm", "*", 1e-5, 1e-5,
     "statistics over up to ~2e5 elements per channel in fp32 partial sums (shifted, two-pass): "
     "~sqrt(n)*eps relative in mean/var; rsqrt and the normalisation add a few ulp; backward "
     "sums dy and dy*xhat likewise"},
    {"act", "*", 0, 2e-6,
     "ReLU on integers is exact; exp/tanh approximations (cpu/native: SLEEF's expf at 1.0 ULP, "
     "sigmoid <= 3 ULP (on AVX2 the sigmoid and the softmax on our own exp, 1.01 ULP; the "
     "sigmoid measured 2.48 ULP), tanh <= 1.4 ULP "
     "on AVX-512 (own piecewise polynomial) and SLEEF's "
     "tanhf at 3.5 ULP elsewhere, pinned by VmathSmoke; OpenCL and oneDNN: "
     "their own, ~1-3 ULP), the softmax division and its sum over <= ~1e4 classes "
     "(~sqrt(C)*eps), the softmax backward's dot product likewise"},
    {"rnn", "*", 5e-6, 5e-6,
     "fp32 GEMMs (K = H + I) plus sigmoid/tanh in fp32 (own exp: < 2e-7 relative; OpenCL and "
     "oneDNN: their libm) vs fp64, propagated through T steps and summed over T*N for the "
     "weight gradients: measured <= 5.3e-7 on H <= 256 up to T = 200 (bwd worst), growing "
     "~sqrt(K)*eps with H; bwd's dx (a K = G*H sum through W, as dh0 through R) measured "
     "<= 6.4e-7 normwise, like dh0, on every conformance shape (H <= 384); inputs are "
     "real-valued (no exact case)"},
    // Reduced types (RnnDesc's dt): every new hidden state is held in the type (rounded to bf16,
    // or quantised to the u8 grid), in the reference as in the implementations, so the bulk of
    // y matches to fp32 rounding (measured 5e-8 on the LSTMs' cT and y); but where the fp32 h_t
    // lands within its rounding error of a boundary of the type, the two sides round it apart
    // by one step of the type, and later steps carry the difference on.
    {"rnn:bf16", "*", 4e-3, 4e-3,
     "every element within one bf16 step of the reference (2^-8 relative) keeps the normwise "
     "error under 2^-8 = 3.9e-3: states whose fp32 value lies within ~1e-7 of a rounding "
     "boundary round one step apart, and the later steps carry and multiply the difference "
     "(GRU's u*h_{t-1} path keeps it), so long sequences settle near 1e-3: measured 1.1e-4 "
     "(lstm h512 t25), 3.3e-4..4.6e-4 (lstm t100..t800), 2.9e-6..8.0e-4 (cpu/blas gru t25..t800), "
     "5.7e-4..8.8e-4 (oneDNN gru t25..t800), 9.4e-4 and 9.8e-4 (both, gru h1536 n2 t187). A wrong "
     "gate, weight or bias gives ~1e-1 and more; a GRU that reads back its unrounded fp32 state "
     "(1.0e-3..1.2e-3) is rounding-sized and passes here: RnnSmoke checks that y holds bf16 "
     "values"},
    {"rnn:u8s8", "*", 1e-2, 1e-2,
     "the int32 sums are exact and the power-of-two scales dequantise them exactly, then fp32 "
     "bias, gates and cell: where h_t * data_scale + data_shift lies within its fp32 error of a "
     "half-integer, the quantised state differs by one u8 step (1/data_scale = 1/64 here), and "
     "the later steps carry it on: measured normwise up to 1.3e-3 (lstm h33 n4 t200: cpu/blas "
     "and oneDNN alike, both one step off the fp64 reference on the same few states), 1.2e-3 "
     "(lstm and gru h512 n2 t800), 2.3e-4 (gru h256 n32 t8); a wrong scale, zero point, gate or "
     "weight gives ~1e-1 and more"},
};

bool matches(const char* pattern, const std::string& impl) {
  std::string p = pattern;
  if (p == "*") return true;
  if (!p.empty() && p.back() == '/') return impl.rfind(p, 0) == 0;
  return p == impl;
}

}  // namespace

Tolerance tolerance(const std::string& prim, const std::string& impl, bool exact_data) {
  // Most specific row wins: exact name, then backend prefix, then "*".
  const Row* best = nullptr;
  int best_rank = -1;
  for (const Row& r : kTable) {
    if (prim != r.prim || !matches(r.algo, impl)) continue;
    std::string a = r.algo;
    int rank = a == "*" ? 0 : (a.back() == '/' ? 1 : 2);
    if (rank > best_rank) best = &r, best_rank = rank;
  }
  if (!best) return {2e-5, "no entry for " + prim + " " + impl + ": fp32 rounding default"};
  return {exact_data ? best->exact : best->general, best->why};
}

}  // namespace pb
