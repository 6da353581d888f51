// mpi/ring: our ring all-reduce on host vectors, and the ring schedule it shares with ocl/ring.
#include "kernels/allreduce/mpi/ring.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/allreduce/mpi/comm.h"
#include "kernels/core/error.h"

namespace pb {

int64_t ring_segment_begin(int64_t n, int p, int s) {
  return n / p * s + std::min<int64_t>(s, n % p);
}

int64_t ring_chunk_elems() {
  static const int64_t c = [] {
    const char* e = std::getenv("PRIMBENCH_RING_CHUNK");
    if (!e || !*e) return int64_t{262144};
    char* end = nullptr;
    long long v = std::strtoll(e, &end, 10);
    if (*end || v < 1 || v > kMaxMpiCount)
      throw InputError("PRIMBENCH_RING_CHUNK",
                       "expects elements in [1, 2^30], got '" + std::string(e) + "'");
    return static_cast<int64_t>(v);
  }();
  return c;
}

namespace {

constexpr int kTag = 7001;

// The chunks of one step: segment `seg`, and the requests of its messages.
struct Step {
  int seg = 0;
  int64_t begin = 0, len = 0;
  std::vector<MPI_Request> reqs;
};

}  // namespace

void ring_allreduce(int64_t n, RingPort& port, MPI_Comm comm, int64_t chunk) {
  int p = 1, r = 0;
  world::check(MPI_Comm_size(comm, &p), "MPI_Comm_size");
  world::check(MPI_Comm_rank(comm, &r), "MPI_Comm_rank");
  if (p == 1) {
    port.copy_input();
    return;
  }
  const int next = (r + 1) % p, prev = (r + p - 1) % p;
  // Step t (0 <= t < 2(p-1)) sends segment r - t and receives segment r - t - 1 (mod p): the
  // segment received at step t is the one sent at t + 1. Steps t < p-1 reduce (reduce-scatter);
  // the rest copy (all-gather).
  const int steps = 2 * (p - 1);
  auto seg_of = [&](int t, bool send) { return ((r - t - (send ? 0 : 1)) % p + p) % p; };
  auto reduces = [&](int t) { return t < p - 1; };
  auto make_step = [&](int t, bool send) {
    Step s;
    s.seg = seg_of(t, send);
    s.begin = ring_segment_begin(n, p, s.seg);
    s.len = ring_segment_begin(n, p, s.seg + 1) - s.begin;
    s.reqs.assign(static_cast<size_t>((s.len + chunk - 1) / chunk), MPI_REQUEST_NULL);
    return s;
  };
  auto chunk_len = [&](const Step& s, size_t j) {
    return std::min<int64_t>(chunk, s.len - static_cast<int64_t>(j) * chunk);
  };
  auto post_recvs = [&](int t, Step& s) {
    for (size_t j = 0; j < s.reqs.size(); ++j) {
      const int64_t soff = static_cast<int64_t>(j) * chunk, len = chunk_len(s, j);
      float* dst = port.recv_target(s.begin + soff, len, reduces(t), t % 2, soff);
      world::check(MPI_Irecv(dst, static_cast<int>(len), MPI_FLOAT, prev, kTag, comm, &s.reqs[j]),
                   "MPI_Irecv");
    }
  };
  auto post_send = [&](int t, Step& s, size_t j) {
    const int64_t soff = static_cast<int64_t>(j) * chunk, len = chunk_len(s, j);
    const float* src = port.send_data(s.begin + soff, len, t == 0, t % 2, soff);
    world::check(MPI_Isend(src, static_cast<int>(len), MPI_FLOAT, next, kTag, comm, &s.reqs[j]),
                 "MPI_Isend");
  };
  auto wait_all = [](Step& s) {
    world::wait_all(static_cast<int>(s.reqs.size()), s.reqs.data(), "MPI_Waitall");
  };

  Step recv = make_step(0, false), send = make_step(0, true);
  post_recvs(0, recv);
  for (size_t j = 0; j < send.reqs.size(); ++j) post_send(0, send, j);
  for (int t = 0; t < steps; ++t) {
    const bool last = t + 1 == steps;
    Step next_recv, next_send = last ? Step() : make_step(t + 1, true);
    // With two ranks the all-gather receives into the segment the current step still sends
    // from: post those receives only once the sends are complete.
    const bool defer = !last && !reduces(t + 1) && p == 2;
    if (!last) next_recv = make_step(t + 1, false);
    if (!last && !defer) post_recvs(t + 1, next_recv);
    for (size_t j = 0; j < recv.reqs.size(); ++j) {
      world::wait(&recv.reqs[j], "MPI_Wait");
      const int64_t soff = static_cast<int64_t>(j) * chunk;
      port.received(recv.begin + soff, chunk_len(recv, j), reduces(t), t % 2, soff);
      if (!last) post_send(t + 1, next_send, j);  // the chunk just reduced moves on
    }
    wait_all(send);
    if (defer) post_recvs(t + 1, next_recv);
    recv = std::move(next_recv);
    send = std::move(next_send);
  }
}

namespace {

// Host vectors: sends read X or Y in place, all-gather receives land in Y, reduce-scatter
// receives land in a staging slot and are added into Y.
class HostRingPort : public RingPort {
 public:
  HostRingPort(const float* x, float* y, int64_t slot_elems) : x_(x), y_(y) {
    for (auto& s : slots_) s.resize(static_cast<size_t>(slot_elems));
  }
  const float* send_data(int64_t off, int64_t, bool from_input, int, int64_t) override {
    return (from_input ? x_ : y_) + off;
  }
  float* recv_target(int64_t off, int64_t, bool reduce, int slot, int64_t soff) override {
    return reduce ? slots_[slot].data() + soff : y_ + off;
  }
  void received(int64_t off, int64_t count, bool reduce, int slot, int64_t soff) override {
    if (reduce) add_vectors(y_ + off, x_ + off, slots_[slot].data() + soff, count);
  }
  void copy_input() override {}  // done by the caller, which knows n

 private:
  const float* x_;
  float* y_;
  std::vector<float> slots_[2];
};

class RingAllreduce : public HostAllreduce {
 public:
  std::string name() const override { return "mpi/ring"; }
  size_t workspace_bytes() const override { return 2 * slot_elems_ * sizeof(float); }
  void plan(const AllreduceDesc& d, Dir dir, const std::vector<const Tensor*>& in) override {
    HostAllreduce::plan(d, dir, in);
    slot_elems_ = static_cast<size_t>(size_ > 1 ? ring_max_segment(d.n, size_) : 0);
    port_ = std::make_unique<HostRingPort>(x_->data(), y_.data(), slot_elems_);
  }
  void run() override {
    if (size_ == 1 && d_.n > 0) std::memcpy(y_.data(), x_->data(), x_->bytes());
    ring_allreduce(d_.n, *port_, comm_, ring_chunk_elems());
  }

 private:
  size_t slot_elems_ = 0;
  std::unique_ptr<HostRingPort> port_;
};

}  // namespace

std::unique_ptr<AllreduceImpl> make_allreduce_mpi_ring() {
  return std::make_unique<RingAllreduce>();
}

}  // namespace pb
