// mpi/rdouble: recursive doubling (small n: log2(p) rounds, latency-optimal) and recursive
// halving + doubling (Rabenseifner, larger n), for any rank count: with p = 2^k + rem, the
// first 2*rem ranks pair up before (even -> odd, which adds) and after (odd -> even).
#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "kernels/allreduce/mpi/comm.h"

namespace pb {
namespace {

// Up to this many elements (512 KiB) the full vector is exchanged every round.
constexpr int64_t kDoublingMax = 131072;
constexpr int kTag = 7002;

class RdoubleAllreduce : public HostAllreduce {
 public:
  std::string name() const override { return "mpi/rdouble"; }
  size_t workspace_bytes() const override { return tmp_.size() * sizeof(float); }

  void plan(const AllreduceDesc& d, Dir dir, const std::vector<const Tensor*>& in) override {
    HostAllreduce::plan(d, dir, in);
    pof2_ = 1;
    while (pof2_ * 2 <= size_) pof2_ *= 2;
    rem_ = size_ - pof2_;
    tmp_.assign(static_cast<size_t>(size_ > 1 ? d.n : 0), 0.0f);
  }

  void run() override {
    const int64_t n = d_.n;
    float* y = y_.data();
    src_ = x_->data();
    if (size_ == 1) {
      if (n > 0) std::memcpy(y, src_, x_->bytes());
      return;
    }
    // Pre-step: of each pair (2i, 2i+1), i < rem, the odd rank carries the pair's sum.
    int q = rank_ < 2 * rem_ ? (rank_ % 2 ? rank_ / 2 : -1) : rank_ - rem_;
    if (rank_ < 2 * rem_) {
      if (q < 0)
        exchange(src_, n, rank_ + 1, nullptr, 0, MPI_PROC_NULL, comm_, kTag);
      else
        reduce_from(rank_ - 1, 0, n, 0, 0);  // receive only
    }
    if (q >= 0) {
      if (n <= kDoublingMax || n < pof2_)
        doubling(q);
      else
        halving_doubling(q);
    }
    // Post-step: the odd rank of each pair hands the result to the even one.
    if (rank_ < 2 * rem_) {
      if (q < 0)
        exchange(nullptr, 0, MPI_PROC_NULL, y, n, rank_ + 1, comm_, kTag);
      else
        exchange(y, n, rank_ - 1, nullptr, 0, MPI_PROC_NULL, comm_, kTag);
    }
  }

 private:
  // The real rank of rank q of the power-of-two group.
  int real_rank(int q) const { return q < rem_ ? 2 * q + 1 : q + rem_; }

  // Sends src_[soff, soff+scount) to `partner`, receives its [off, off+count) and sets
  // y[off..] = src_[off..] + received. From then on src_ is y.
  void reduce_from(int partner, int64_t off, int64_t count, int64_t soff, int64_t scount) {
    float* y = y_.data();
    exchange(src_ + soff, scount, scount ? partner : MPI_PROC_NULL, tmp_.data() + off, count,
             partner, comm_, kTag);
    add_vectors(y + off, src_ + off, tmp_.data() + off, count);
    src_ = y;
  }

  // Every round exchanges the whole vector with the partner at distance mask; both partners
  // compute the same sum of the same two partial sums.
  void doubling(int q) {
    for (int mask = 1; mask < pof2_; mask <<= 1) {
      int partner = real_rank(q ^ mask);
      reduce_from(partner, 0, d_.n, 0, d_.n);
    }
  }

  // Reduce-scatter by recursive halving over pof2 blocks (rank q ends with block q summed),
  // then all-gather by recursive doubling in the reverse order.
  void halving_doubling(int q) {
    auto block = [&](int b) { return d_.n / pof2_ * b + std::min<int64_t>(b, d_.n % pof2_); };
    int lo = 0, hi = pof2_;
    std::vector<std::pair<int, int>> windows;
    for (int mask = pof2_ / 2; mask >= 1; mask >>= 1) {
      windows.emplace_back(lo, hi);
      const int mid = (lo + hi) / 2, partner = real_rank(q ^ mask);
      const bool lower = (q & mask) == 0;
      const int klo = lower ? lo : mid, khi = lower ? mid : hi;  // kept half
      const int slo = lower ? mid : lo, shi = lower ? hi : mid;  // sent half
      reduce_from(partner, block(klo), block(khi) - block(klo), block(slo),
                  block(shi) - block(slo));
      lo = klo, hi = khi;
    }
    float* y = y_.data();
    for (int mask = 1; mask < pof2_; mask <<= 1) {
      auto [ulo, uhi] = windows.back();  // the union of my window and the partner's
      windows.pop_back();
      const int plo = lo == ulo ? hi : ulo, phi = lo == ulo ? uhi : lo;
      exchange(y + block(lo), block(hi) - block(lo), real_rank(q ^ mask), y + block(plo),
               block(phi) - block(plo), real_rank(q ^ mask), comm_, kTag);
      lo = ulo, hi = uhi;
    }
  }

  int pof2_ = 1, rem_ = 0;
  const float* src_ = nullptr;
  std::vector<float> tmp_;
};

}  // namespace

std::unique_ptr<AllreduceImpl> make_allreduce_mpi_rdouble() {
  return std::make_unique<RdoubleAllreduce>();
}

}  // namespace pb
