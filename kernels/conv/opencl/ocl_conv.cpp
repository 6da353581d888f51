// The shared base of the OpenCL convolutions (see ocl_conv.h).
#include "kernels/conv/opencl/ocl_conv.h"

#include <algorithm>
#include <chrono>
#include <limits>

#include "kernels/core/error.h"

namespace pb {

Support OclConv::supports(const ConvDesc& d, Dir dir) const {
  const double lim = std::numeric_limits<int>::max();
  if (static_cast<double>(d.src_size()) > lim || static_cast<double>(d.dst_size()) > lim ||
      static_cast<double>(d.wei_size()) > lim)
    return Support::no(name() + ": tensors must have < 2^31 elements (32-bit kernel indices)");
  return DirConv::supports(d, dir);
}

void OclConv::prepare_bwd_d() {
  throw Unsupported(name() + " has no bwd_d");
}
void OclConv::prepare_bwd_w() {
  throw Unsupported(name() + " has no bwd_w");
}

namespace {
ocl::Buffer output(int64_t floats) {
  return ocl::Buffer(static_cast<size_t>(floats) * sizeof(float));
}
}  // namespace

void OclConv::plan(const ConvDesc& d, Dir dir, const std::vector<const Tensor*>& in) {
  d_ = d;
  dir_ = dir;
  steps_.clear();
  ws_bytes_ = 0;
  build_ms_ = 0;
  cache_hit_ = true;
  map_tables_.clear();
  for (ocl::Buffer* b :
       {&wraw_, &src_, &wei_, &dst_, &diff_dst_, &diff_src_, &diff_wei_, &diff_bias_})
    b->reset();
  if (dir == Dir::bwd_d) {  // {diff_dst, wei} -> {diff_src}
    diff_dst_ = inputs_.get(0, *in[0]);
    wraw_ = inputs_.get(1, *in[1]);
    diff_src_ = output(d.src_size());
    prepare_bwd_d();
  } else if (dir == Dir::bwd_w) {  // {src, diff_dst} -> {diff_wei, diff_bias}
    src_ = inputs_.get(0, *in[0]);
    diff_dst_ = inputs_.get(1, *in[1]);
    diff_wei_ = output(d.wei_size());
    diff_bias_ = output(d.oc);
    prepare_bwd_w();
    add_bias_grad();
  } else {  // {src, wei} -> {dst}
    src_ = inputs_.get(0, *in[0]);
    wraw_ = inputs_.get(1, *in[1]);
    dst_ = output(d.dst_size());
    prepare_fwd();
  }
  enqueue(true);  // the weight transforms once, so that PoCL compiles them here
  ocl::finish();
  // The first enqueue of each kernel and work-group size compiles it on PoCL: run once here,
  // unless this object ran this very problem already (prepared again for new input contents).
  const std::string key = d.str() + " " + dir_str(dir);
  if (key == warmed_) return;
  warmed_ = key;
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
    s->global[i] = ocl::round_up(static_cast<int64_t>(global[i]), static_cast<int64_t>(local[i]));
  }
  steps_.push_back(std::move(s));
  return steps_.back()->kernel;
}

ocl::Buffer OclConv::workspace(size_t bytes) {
  ws_bytes_ += bytes;
  return ocl::Buffer(bytes == 0 ? sizeof(float) : bytes);
}

void OclConv::add_gemm(const GemmArgs& g) {
  const TiledParams p = gemm_params_.fitted(ocl::device_info().local_mem_size);
  cl_program prog = program("gemm/tiled.cl", p.options(false, false));
  size_t global[3] = {ocl::round_up(g.m, p.tsm) / p.tsm * p.rtsm(),
                      ocl::round_up(g.n, p.tsn) / p.tsn * p.rtsn(), static_cast<size_t>(g.batch)};
  size_t local[3] = {static_cast<size_t>(p.rtsm()), static_cast<size_t>(p.rtsn()), 1};
  ocl::Kernel& k = add_step(prog, "gemm_tiled_batched", 3, global, local);
  auto i = [](int64_t v) { return static_cast<cl_int>(v); };
  auto l = [](int64_t v) { return static_cast<cl_long>(v); };
  k.set_args(i(g.m), i(g.n), i(g.k), 1.0f, g.beta, *g.a, l(g.a_off), i(g.lda), l(g.sa), *g.b,
             l(g.b_off), i(g.ldb), l(g.sb), i(g.gb), *g.c, l(g.c_off), i(g.ldc), l(g.sc));
}

// conv_bwd.cl's work-group sizes (its WB and WS defaults).
constexpr size_t kBiasWg = 8, kSumWg = 64;

void OclConv::add_sum_partials(const ocl::Buffer& part, int64_t parts, int64_t n,
                               const ocl::Buffer& out) {
  cl_program prog = program("conv/conv_bwd.cl", "");
  size_t global[1] = {static_cast<size_t>((n + 7) / 8)}, local[1] = {kSumWg};
  add_step(prog, "sum_partials", 1, global, local)
      .set_args(part, static_cast<cl_int>(parts), static_cast<cl_int>(n), out);
}

void OclConv::add_bias_grad() {
  cl_program prog = program("conv/conv_bwd.cl", "");
  size_t global[1] = {static_cast<size_t>(d_.oc)}, local[1] = {kBiasWg};
  add_step(prog, "bias_grad", 1, global, local)
      .set_args(diff_dst_, diff_bias_, static_cast<cl_int>(d_.mb), static_cast<cl_int>(d_.oc),
                static_cast<cl_int>(d_.oh * d_.ow));
}

OclConv::FilterMap OclConv::copy_map(int64_t tap_stride, bool flip) const {
  const int64_t taps = d_.kh * d_.kw;
  FilterMap m;
  m.a = taps;
  m.coef.assign(static_cast<size_t>(taps * taps), 0.0f);
  for (int64_t t = 0; t < taps; ++t) {
    m.coef[t * taps + (flip ? taps - 1 - t : t)] = 1.0f;
    m.aoff.push_back(t * tap_stride);
  }
  return m;
}

void OclConv::add_filter_map(const FilterMap& m, ocl::Buffer& out) {
  const int64_t ocg = d_.ocg(), icg = d_.icg(), taps = d_.kh * d_.kw;
  if (static_cast<int64_t>(m.coef.size()) != m.a * taps ||
      static_cast<int64_t>(m.aoff.size()) != m.a || static_cast<int64_t>(m.ooff.size()) != ocg ||
      static_cast<int64_t>(m.coff.size()) != icg)
    throw RuntimeError(name() + ": filter map tables do not match the weights");
  // A read-only device copy of v's elements, converted to the type of `as`, kept in map_tables_.
  auto keep = [this](const auto& v, auto as) {
    std::vector<decltype(as)> t(v.begin(), v.end());
    ocl::Buffer b(t.size() * sizeof(t[0]), CL_MEM_READ_ONLY);
    b.upload(t.data(), b.bytes());
    map_tables_.push_back(std::move(b));
    return map_tables_.back().get();
  };
  cl_mem coef_mem = keep(m.coef, cl_float{}), aoff = keep(m.aoff, cl_long{}),
         ooff = keep(m.ooff, cl_long{}), coff = keep(m.coff, cl_long{});
  // Once: the positions no filter writes stay zero. A dense map writes every one (filling 500 MB
  // of FFT spectra first took a third of their preparation on PoCL).
  if (!m.dense)
    out.zero();
  else if (static_cast<size_t>(d_.g * m.a * ocg * icg) * sizeof(float) != out.bytes())
    throw RuntimeError(name() + ": a dense filter map must write every element of its output");
  // Neighbouring work-items along the index whose output offsets lie closer together.
  auto step = [](const std::vector<int64_t>& v) {
    return v.size() > 1 ? (v[1] > v[0] ? v[1] - v[0] : v[0] - v[1])
                        : std::numeric_limits<int64_t>::max();
  };
  const cl_int o_fast = step(m.ooff) < step(m.coff) ? 1 : 0;
  cl_program prog = program("conv/filter_map.cl", "");
  size_t global[3] = {static_cast<size_t>(ocg * icg), static_cast<size_t>(m.a),
                      static_cast<size_t>(d_.g)};
  size_t local[3] = {64, 1, 1};
  add_step(prog, "filter_map", 3, global, local)
      .set_args(wraw_, out, coef_mem, aoff, ooff, coff, static_cast<cl_int>(taps),
                static_cast<cl_int>(ocg), static_cast<cl_int>(icg), static_cast<cl_long>(m.sg),
                o_fast);
  steps_.back()->weights = true;
}

void OclConv::enqueue(bool weights) {
  for (auto& s : steps_)
    if (s->weights == weights) s->kernel.enqueue(s->dims, s->global, s->local, &s->event);
}

void OclConv::run() {
  enqueue(false);
}

void OclConv::weights() {
  enqueue(true);
}

void* OclConv::device_output(size_t i) const {
  if (dir_ == Dir::bwd_d) return i == 0 ? diff_src_.get() : nullptr;
  if (dir_ == Dir::bwd_w) return i == 0 ? diff_wei_.get() : i == 1 ? diff_bias_.get() : nullptr;
  return i == 0 ? dst_.get() : nullptr;
}

std::vector<Tensor> OclConv::result() {
  std::vector<Tensor> out;
  auto get = [&out](const ocl::Buffer& b, const Dims& dims) {
    Tensor t(dims);
    b.download(t.data(), t.size() * sizeof(float));
    out.push_back(std::move(t));
  };
  if (dir_ == Dir::bwd_d) {
    get(diff_src_, d_.src_dims());
  } else if (dir_ == Dir::bwd_w) {
    get(diff_wei_, d_.wei_dims());
    get(diff_bias_, {d_.oc});
  } else {
    get(dst_, d_.dst_dims());
  }
  return out;
}

std::vector<std::pair<std::string, double>> OclConv::extra_counters() const {
  // kernel_ms: every launch of the last run(); <kernel>_ms: that kernel's launches alone.
  std::vector<std::pair<std::string, double>> per;
  double kernel_ms = 0;
  for (const auto& s : steps_) {
    if (s->weights) continue;  // prepare's work
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
