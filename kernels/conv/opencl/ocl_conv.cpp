// The shared base of the OpenCL convolutions (see ocl_conv.h).
#include "kernels/conv/opencl/ocl_conv.h"

#include <algorithm>
#include <chrono>
#include <limits>

#include "kernels/core/error.h"

namespace pb {

size_t ocl_round_up(int64_t x, int64_t to) {
  return static_cast<size_t>((x + to - 1) / to * to);
}

Support OclConv::supports(const ConvDesc& d, Dir dir) const {
  if (dir != Dir::fwd) return Support::no(name() + " runs fwd only (backward: a later issue)");
  const double lim = std::numeric_limits<int>::max();
  if (static_cast<double>(d.src_size()) > lim || static_cast<double>(d.dst_size()) > lim ||
      static_cast<double>(d.wei_size()) > lim)
    return Support::no(name() + ": tensors must have < 2^31 elements (32-bit kernel indices)");
  return supports_fwd(d);
}

void OclConv::prepare(const ConvDesc& d, Dir, const std::vector<const Tensor*>& in) {
  d_ = d;
  steps_.clear();
  ws_bytes_ = 0;
  build_ms_ = 0;
  cache_hit_ = true;
  src_ = ocl::Buffer(static_cast<size_t>(d.src_size()) * sizeof(float), CL_MEM_READ_ONLY);
  dst_ = ocl::Buffer(static_cast<size_t>(d.dst_size()) * sizeof(float));
  src_.upload(in[0]->data(), src_.bytes());
  prepare_fwd(*in[1]);
  // The first enqueue of each kernel and work-group size compiles it on PoCL: run once here.
  auto t0 = std::chrono::steady_clock::now();
  run();
  ocl::finish();
  build_ms_ +=
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

cl_program OclConv::program(const std::string& key, const std::string& options) {
  double ms = 0;
  bool hit = false;
  cl_program p = ocl::program(key, options, &ms, &hit);
  build_ms_ += ms;
  cache_hit_ = cache_hit_ && hit;
  return p;
}

ocl::Kernel& OclConv::add_step(cl_program prog, const char* kernel, cl_uint dims,
                               const size_t* global, const size_t* local) {
  auto s = std::make_unique<Step>();
  s->name = kernel;
  s->kernel = ocl::Kernel(prog, kernel);
  s->dims = dims;
  for (cl_uint i = 0; i < dims; ++i) {
    s->local[i] = local[i];
    s->global[i] = ocl_round_up(static_cast<int64_t>(global[i]), static_cast<int64_t>(local[i]));
  }
  steps_.push_back(std::move(s));
  return steps_.back()->kernel;
}

ocl::Buffer OclConv::workspace(size_t bytes) {
  ws_bytes_ += bytes;
  return ocl::Buffer(bytes == 0 ? sizeof(float) : bytes);
}

void OclConv::add_gemm(const GemmArgs& g) {
  const TiledParams& p = gemm_params_;
  cl_program prog = program("gemm/tiled.cl", p.options(false, false));
  size_t global[3] = {ocl_round_up(g.m, p.tsm) / p.tsm * p.rtsm(),
                      ocl_round_up(g.n, p.tsn) / p.tsn * p.rtsn(), static_cast<size_t>(g.batch)};
  size_t local[3] = {static_cast<size_t>(p.rtsm()), static_cast<size_t>(p.rtsn()), 1};
  ocl::Kernel& k = add_step(prog, "gemm_tiled_batched", 3, global, local);
  auto i = [](int64_t v) { return static_cast<cl_int>(v); };
  auto l = [](int64_t v) { return static_cast<cl_long>(v); };
  k.set_args(i(g.m), i(g.n), i(g.k), 1.0f, 0.0f, *g.a, l(g.a_off), i(g.lda), l(g.sa), *g.b,
             l(g.b_off), i(g.ldb), l(g.sb), i(g.gb), *g.c, l(g.c_off), i(g.ldc), l(g.sc));
}

void OclConv::run() {
  for (auto& s : steps_) s->kernel.enqueue(s->dims, s->global, s->local, &s->event);
}

std::vector<Tensor> OclConv::result() {
  Tensor dst(d_.dst_dims());
  dst_.download(dst.data(), dst_.bytes());
  std::vector<Tensor> out;
  out.push_back(std::move(dst));
  return out;
}

std::vector<std::pair<std::string, double>> OclConv::extra_counters() const {
  // kernel_ms: every launch of the last run(); <kernel>_ms: that kernel's launches alone.
  std::vector<std::pair<std::string, double>> per;
  double kernel_ms = 0;
  for (const auto& s : steps_) {
    const double ms = s->event.elapsed_ms();
    kernel_ms += ms;
    auto it =
        std::find_if(per.begin(), per.end(), [&](const auto& p) { return p.first == s->name; });
    if (it == per.end())
      per.emplace_back(s->name, ms);
    else
      it->second += ms;
  }
  std::vector<std::pair<std::string, double>> out = {
      {"kernel_ms", kernel_ms},
      {"build_ms", build_ms_},  // program builds or cache loads + first-enqueue compiles
      {"cache_hit", cache_hit_ ? 1.0 : 0.0}};
  if (per.size() > 1)
    for (auto& p : per) out.emplace_back(p.first + "_ms", p.second);
  return out;
}

}  // namespace pb
