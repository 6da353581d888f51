// Data-parallel training (see data_parallel.h): the gradient buckets, the communication thread
// that all-reduces them while the backward goes on, the step, and the weights check.
#include "kernels/net/data_parallel.h"

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include "kernels/allreduce/allreduce.h"
#include "kernels/allreduce/world.h"
#include "kernels/core/error.h"
#include "kernels/core/fill.h"
#include "kernels/net/dp_device.h"
#include "kernels/net/report.h"
#include "kernels/net/watchdog.h"

namespace pb {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Testing the fault paths (tests/cluster/dp_faults.sh): PRIMBENCH_INJECT_DP=<rank>:<what>:<step>
// makes that rank, in that step (from 1), die by SIGKILL at the start of its first all-reduce
// (kill_allreduce) or after the first call of its forward (kill_step), or change one weight
// before the weights check (weights: the check must fail on every rank).
struct Fault {
  int rank = -1, step = -1;
  std::string what;
  bool at(const char* w, int step_index) const {
    return what == w && step == step_index && rank == world::rank();
  }
};

const Fault& fault() {
  static const Fault f = [] {
    Fault f;
    const char* e = std::getenv("PRIMBENCH_INJECT_DP");
    if (!e || !*e) return f;
    const std::string s = e;
    const size_t a = s.find(':'), b = s.rfind(':');
    if (a == std::string::npos || b == a)
      throw InputError("PRIMBENCH_INJECT_DP", "expects <rank>:<what>:<step>, got '" + s + "'");
    f.rank = std::atoi(s.substr(0, a).c_str());
    f.what = s.substr(a + 1, b - a - 1);
    f.step = std::atoi(s.substr(b + 1).c_str());
    if (f.what != "kill_allreduce" && f.what != "kill_step" && f.what != "weights")
      throw InputError("PRIMBENCH_INJECT_DP",
                       "'" + f.what + "' is not kill_allreduce, kill_step or weights");
    return f;
  }();
  return f;
}

// One gradient's place in its bucket.
struct Slice {
  net::Place grad;  // the executor's gradient tensor, or its device buffer
  size_t off = 0;   // bytes into the bucket
  size_t bytes = 0;
};

struct BucketState {
  DataParallel::Bucket info;
  std::vector<Slice> slices;
  Tensor x;                     // the bucket on the host (mpi/* all-reduces)
  std::shared_ptr<void> x_dev;  // the bucket on the device (ocl/* all-reduces)
  std::unique_ptr<AllreduceImpl> impl;
  net::Place in, out;  // the all-reduce's input and output
  double ms = 0;       // its last all-reduce, copies included
};

}  // namespace

struct DataParallel::Impl {
  Executor& ex;
  DataParallelOptions opt;
  std::vector<BucketState> b;
  std::vector<Bucket> infos;
  double grad_bytes = 0;
  bool uses_opencl = false;  // gradients or buckets on the device: the thread needs a queue
  Tensor empty;              // the input handed to a device bucket's plan (read in place)

  int step_index = 0;
  std::atomic<double> step_t0{0}, longest_step_s{0};

  // The communication thread: buckets [done, ready) are waiting for it.
  std::thread thread;
  std::mutex m;
  std::condition_variable cv, cv_done;
  size_t ready = 0, done = 0;
  bool stop = false;
  std::exception_ptr err;

  Impl(Executor& e, const DataParallelOptions& o) : ex(e), opt(o), empty({0}) {}

  // How long a wait on the other ranks may legitimately take: twice this rank's longest step so
  // far (a slower rank may be up to a step behind), or in the first step twice what this one has
  // taken so far.
  double expected_s() const {
    return 2 * std::max(longest_step_s.load(), now_s() - step_t0.load());
  }
  std::string where(size_t k) const {
    return "all-reduce of bucket " + std::to_string(k + 1) + " of " + std::to_string(b.size()) +
           " in step " + std::to_string(step_index);
  }

  void run_bucket(size_t k) {
    BucketState& s = b[k];
    net::WatchdogWait wait(where(k), expected_s());
    if (k == 0 && fault().at("kill_allreduce", step_index)) raise(SIGKILL);
    const double t0 = now_s();
    all_reduce(s, true);
    s.ms = 1e3 * (now_s() - t0);
  }
  // The gradients copied into the bucket (when `copies`), the all-reduce, and the sums copied
  // back into the gradients.
  static void all_reduce(BucketState& s, bool copies) {
    for (const Slice& sl : s.slices) {
      net::Place to = s.in;
      to.off += sl.off;
      if (copies) net::dp_copy(sl.grad, to, sl.bytes);
    }
    run_phases(*s.impl);
    for (const Slice& sl : s.slices) {
      net::Place from = s.out;
      from.off += sl.off;
      if (copies) net::dp_copy(from, sl.grad, sl.bytes);
    }
  }

  void loop() {
    world::set_wait_sleep_us(opt.wait_sleep_us);
    std::optional<net::OwnQueue> queue;
    std::unique_lock<std::mutex> lk(m);
    try {
      if (uses_opencl) queue.emplace();
    } catch (...) {
      err = std::current_exception();
    }
    for (;;) {
      cv.wait(lk, [&] { return stop || (!err && done < ready); });
      if (stop) return;
      const size_t k = done;
      lk.unlock();
      std::exception_ptr e;
      try {
        run_bucket(k);
      } catch (...) {
        e = std::current_exception();
      }
      lk.lock();
      if (e) err = e;
      ++done;
      cv_done.notify_all();
    }
  }

  void mark_ready(size_t upto) {
    std::lock_guard<std::mutex> lk(m);
    ready = std::max(ready, upto);
    cv.notify_all();
  }

  // The main thread, before the update: until every bucket of the step is reduced.
  void wait_done() {
    mark_ready(b.size());
    net::WatchdogWait wait("the all-reduces of step " + std::to_string(step_index), expected_s());
    std::unique_lock<std::mutex> lk(m);
    cv_done.wait(lk, [&] { return err || done == b.size(); });
    if (err) std::rethrow_exception(err);
  }
};

namespace {

// Calls the communication thread (overlap) or all-reduces every bucket before the update.
struct Observer : StepObserver {
  DataParallel::Impl& p;
  size_t next = 0;  // the first bucket not yet handed to the thread
  explicit Observer(DataParallel::Impl& impl) : p(impl) {}
  void after_call(size_t i) override {
    if (i == 0 && fault().at("kill_step", p.step_index)) raise(SIGKILL);
    if (!p.opt.overlap) return;
    size_t upto = next;
    while (upto < p.b.size() && p.b[upto].info.ready_after <= i) ++upto;
    if (upto != next) p.mark_ready(upto), next = upto;
  }
  void before_update() override {
    if (p.opt.overlap) {
      p.wait_done();
      return;
    }
    net::watchdog_phase("data-parallel step " + std::to_string(p.step_index) + ": all-reduces");
    world::set_wait_sleep_us(p.opt.wait_sleep_us);
    for (size_t k = 0; k < p.b.size(); ++k) p.run_bucket(k);
  }
};

}  // namespace

DataParallel::DataParallel(Executor& ex, const DataParallelOptions& o)
    : p_(std::make_unique<Impl>(ex, o)) {
  Impl& p = *p_;
  if (!(o.bucket_mb > 0)) throw InputError("--bucket-mb", "must be positive");
  const auto values = ex.param_values();
  const std::vector<const Tensor*> grads = ex.param_grads();
  const std::vector<size_t> ready = ex.grad_ready_after();
  if (grads.size() != values.size() || ready.size() != values.size())
    throw RuntimeError("data-parallel: " + std::to_string(values.size()) + " weights but " +
                       std::to_string(grads.size()) + " gradients");
  const RegistryEntry<AllreduceDesc>* entry = nullptr;
  std::string names;
  for (const auto& e : allreduce_registry()) {
    names += (names.empty() ? "" : ", ") + e.name;
    if (e.name == o.allreduce) entry = &e;
  }
  if (!entry) throw InputError("--allreduce", "'" + o.allreduce + "' is not one of " + names);
  if (!entry->unavailable().empty()) throw Unsupported(o.allreduce + ": " + entry->unavailable());
  const bool on_device = o.allreduce.rfind("ocl/", 0) == 0;

  // Gradients in the order the backward makes them final, packed into buckets (report.h).
  std::vector<double> bytes;
  for (const Tensor* g : grads) bytes.push_back(static_cast<double>(g->bytes()));
  for (const GradBucket& gb : plan_buckets(bytes, ready, o.bucket_mb)) {
    BucketState& s = p.b.emplace_back();
    s.info.ready_after = gb.ready_after;
    for (size_t i : gb.tensors) {
      Slice sl;
      sl.grad.p = ex.device_buffer(grads[i]);
      sl.grad.dev = sl.grad.p != nullptr;
      if (!sl.grad.dev) sl.grad.p = const_cast<float*>(grads[i]->data());
      p.uses_opencl = p.uses_opencl || sl.grad.dev || on_device;
      sl.off = static_cast<size_t>(s.info.elems) * sizeof(float);
      sl.bytes = grads[i]->bytes();
      s.slices.push_back(sl);
      s.info.elems += grads[i]->size();
      s.info.tensors.push_back(values[i].first);
      p.grad_bytes += static_cast<double>(sl.bytes);
    }
  }
  // The same buckets on every rank, then an all-reduce planned per bucket (each agrees on n).
  world::require_same(static_cast<int64_t>(p.b.size()),
                      "data-parallel bucket count (network, --bucket-mb)");
  for (size_t k = 0; k < p.b.size(); ++k) {
    BucketState& s = p.b[k];
    const size_t bytes = static_cast<size_t>(s.info.elems) * sizeof(float);
    AllreduceDesc d;
    d.n = s.info.elems;
    s.impl = entry->make();
    const Support sup = s.impl->supports(d, Dir::fwd);
    if (!sup) throw Unsupported(o.allreduce + ": " + sup.reason);
    if (on_device) {
      s.x_dev = net::dp_device_buffer(bytes);
      if (!s.impl->bind_device({s.x_dev.get()}))
        throw Unsupported(o.allreduce + " cannot read a device bucket in place");
      s.impl->plan(d, Dir::fwd, {&p.empty});
      s.in = {s.x_dev.get(), true, 0};
      s.out = {s.impl->device_output(0), true, 0};
    } else {
      s.x = Tensor({d.n});
      s.impl->plan(d, Dir::fwd, {&s.x});
      const Tensor* y = s.impl->output_view(0);
      s.in = {s.x.data(), false, 0};
      s.out = {y ? const_cast<float*>(y->data()) : nullptr, false, 0};
    }
    if (!s.out.p || !s.impl->reads_inputs_in_place())
      throw Unsupported(o.allreduce + " keeps no output in place for the buckets");
    p.infos.push_back(s.info);
  }
  if (o.overlap) {
    if (!world::serialized_threads())
      throw Unsupported(
          "overlap needs MPI_THREAD_SERIALIZED (a communication thread); this MPI gives less: "
          "use --no-overlap");
    p.thread = std::thread([&p] { p.loop(); });
  }
}

DataParallel::~DataParallel() {
  if (p_->thread.joinable()) {
    {
      std::lock_guard<std::mutex> lk(p_->m);
      p_->stop = true;
      p_->cv.notify_all();
    }
    p_->thread.join();
  }
}

DpStepTimes DataParallel::step(int index) {
  Impl& p = *p_;
  p.step_index = index;
  {
    std::lock_guard<std::mutex> lk(p.m);
    p.ready = p.done = 0;
    p.err = nullptr;
  }
  net::watchdog_phase("data-parallel step " + std::to_string(index) + ": forward and backward");
  p.step_t0 = now_s();
  Observer obs(p);
  DpStepTimes t;
  t.step_ms = p.ex.step(&obs);
  for (const CallInfo& c : p.ex.calls()) t.compute_ms += c.last_ms;
  for (const BucketState& s : p.b) t.allreduce_ms += s.ms;
  t.exposed_ms = std::max(0.0, t.step_ms - t.compute_ms);
  p.longest_step_s = std::max(p.longest_step_s.load(), t.step_ms / 1e3);

  const double c0 = now_s();
  net::watchdog_phase("the weights check after data-parallel step " + std::to_string(index));
  if (fault().at("weights", index)) {
    const auto v = p.ex.param_values();
    (*const_cast<Tensor*>(v[0].second))[0] += 1.0f;
  }
  const uint64_t h = weights_hash(p.ex);
  bool same = false;
  {
    net::WatchdogWait wait("the weights check after step " + std::to_string(index), p.expected_s());
    same = world::same_on_all_ranks(h);
  }
  if (!same) {
    char hex[24];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    throw RuntimeError("data-parallel step " + std::to_string(index) +
                       ": the weights differ across ranks (rank " + std::to_string(world::rank()) +
                       " of " + std::to_string(world::size()) + " has hash " + hex +
                       "): the ranks did not apply the same update");
  }
  t.check_ms = 1e3 * (now_s() - c0);
  return t;
}

double DataParallel::time_allreduces(int wait_sleep_us, bool copies, double* cpu_ms) {
  Impl& p = *p_;
  net::WatchdogWait wait("timing the all-reduces", p.expected_s());
  world::set_wait_sleep_us(wait_sleep_us);
  world::max_over_ranks(0);  // line up
  auto cpu_s = [] {
    rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  };
  const double c0 = cpu_s(), t0 = now_s();
  for (BucketState& s : p.b) Impl::all_reduce(s, copies);
  const double ms = 1e3 * (now_s() - t0);
  if (cpu_ms) *cpu_ms = 1e3 * (cpu_s() - c0);
  return world::max_over_ranks(ms);
}

const std::vector<DataParallel::Bucket>& DataParallel::buckets() const {
  return p_->infos;
}
double DataParallel::gradient_bytes() const {
  return p_->grad_bytes;
}
const DataParallelOptions& DataParallel::options() const {
  return p_->opt;
}

NetOptions replica_options(const NetOptions& opt, int rank, int ranks) {
  NetOptions o = opt;
  o.data_seed = mix_seed(opt.seed, 0xda7a0000ull + static_cast<uint64_t>(rank));
  o.lr = opt.lr / static_cast<float>(ranks);
  return o;
}

uint64_t weights_hash(Executor& ex) {
  // Four FNV-style lanes over 64-bit words (vectorisable), folded per tensor with its size.
  constexpr uint64_t kPrime = 0x100000001b3ull;
  uint64_t h = 0xcbf29ce484222325ull;
  for (const auto& [name, t] : ex.param_values()) {
    const size_t bytes = t->bytes(), words = bytes / 8;
    const char* data = reinterpret_cast<const char*>(t->data());
    uint64_t lane[4] = {h, h ^ 1, h ^ 2, h ^ 3};
    size_t i = 0;
    for (; i + 4 <= words; i += 4)
      for (int j = 0; j < 4; ++j) {
        uint64_t w;
        std::memcpy(&w, data + 8 * (i + j), 8);
        lane[j] = (lane[j] ^ w) * kPrime;
      }
    for (; i < words; ++i) {
      uint64_t w;
      std::memcpy(&w, data + 8 * i, 8);
      lane[0] = (lane[0] ^ w) * kPrime;
    }
    for (size_t k = 8 * words; k < bytes; ++k)
      lane[1] = (lane[1] ^ static_cast<unsigned char>(data[k])) * kPrime;
    for (uint64_t l : lane) h = (h ^ l) * kPrime;
    h = (h ^ bytes) * kPrime;
  }
  return h;
}

void agree_across_ranks(const std::vector<std::pair<std::string, std::string>>& fields) {
  for (const auto& [field, value] : fields) {
    net::WatchdogWait wait("agreeing on " + field + " with the other ranks", 0);
    world::require_same_text(value, field);
  }
}

std::string network_signature(const Network& net) {
  std::string s = net.name + "|" + std::to_string(net.mb) + "|" + std::to_string(net.seq);
  for (const Layer& l : net.layers) {
    s += "|" + l.name + ":" + layer_kind_str(l.kind) + ":" + l.in.str() + ">" + l.out.str() + ":" +
         std::to_string(l.params());
    for (int i : l.inputs) s += "<" + std::to_string(i);
  }
  char hex[24];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(std::hash<std::string>{}(s)));
  return net.name + " (" + std::to_string(net.layers.size()) + " layers, " +
         std::to_string(net.params()) + " parameters, batch " + std::to_string(net.batch()) +
         ", layout " + hex + ")";
}

}  // namespace pb
