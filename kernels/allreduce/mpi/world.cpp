// The process group over MPI_COMM_WORLD: lazy MPI_Init_thread, MPI_Finalize at exit, agreement
// collectives (see world.h), and the HostAllreduce base of the MPI implementations.
#include "kernels/allreduce/world.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "kernels/allreduce/mpi/comm.h"
#include "kernels/core/error.h"

namespace pb::world {

namespace {

struct State {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 1;
  int thread_level = MPI_THREAD_SINGLE;
  bool we_initialised = false;
};

void finalize_at_exit();

State& state() {
  static State s;
  static std::once_flag once;
  std::call_once(once, [] {
    // Open MPI's TCP transport writes to a peer's socket with writev, which raises SIGPIPE once
    // that peer has died; its default action ended this rank at once and without a word (no
    // line of its own, no watchdog, and mpirun names only the first rank that failed): seen in
    // mpi.cluster.data_parallel_fault_inject about one run in ten, when the surviving rank sent
    // to the killed one before it read the reset. Ignored (whoever initialised MPI), the write
    // fails with EPIPE, which Open MPI reports as a lost peer, and the rank ends as the others do.
    std::signal(SIGPIPE, SIG_IGN);
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) {
      // mpi/ompi_<algorithm> (native.cpp) need Open MPI's coll tuned dynamic rules, a setting
      // read only at MPI_Init; with no algorithm forced and no rules file they decide as the
      // fixed rules do. The environment's own setting wins.
      setenv("OMPI_MCA_coll_tuned_use_dynamic_rules", "1", 0);
      // SERIALIZED: data-parallel training calls MPI from its communication thread while the
      // main thread does not (Open MPI takes no locks below MPI_THREAD_MULTIPLE).
      int provided = 0;
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
      s.thread_level = provided;
      s.we_initialised = true;
      std::atexit(finalize_at_exit);
    } else {
      MPI_Query_thread(&s.thread_level);
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &s.comm);
    // Errors come back as codes (checked by check()), so they can be reported with a message.
    MPI_Comm_set_errhandler(s.comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(s.comm, &s.rank);
    MPI_Comm_size(s.comm, &s.size);
    // Testing the failure path: PRIMBENCH_INJECT_RANK_EXIT=<r> makes rank r die right after
    // MPI_Init, without finalising, as a crashed rank would; the others must not hang
    // (tests/CMakeLists.txt, mpi.allreduce.rank_exits_early).
    if (const char* r = std::getenv("PRIMBENCH_INJECT_RANK_EXIT"))
      if (*r && std::atoi(r) == s.rank) {
        std::fprintf(stderr, "rank %d: exiting early (PRIMBENCH_INJECT_RANK_EXIT)\n", s.rank);
        std::_Exit(3);
      }
  });
  return s;
}

bool g_started = false;  // state() was called: collectives are allowed

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  State& s = state();
  if (s.comm != MPI_COMM_NULL) MPI_Comm_free(&s.comm);
  MPI_Finalize();
}

State& started() {
  g_started = true;
  return state();
}

}  // namespace

bool launched() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(v)) return true;
  return false;
}

int rank() {
  return started().rank;
}
int size() {
  return started().size;
}
MPI_Comm comm() {
  return started().comm;
}

void check(int err, const char* call) {
  if (err == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(err, msg, &len);
  throw RuntimeError(std::string(call) + " failed: " + std::string(msg, len));
}

int max_over_ranks(int v) {
  if (!g_started) return v;
  int out = v;
  check(MPI_Allreduce(&v, &out, 1, MPI_INT, MPI_MAX, comm()), "MPI_Allreduce(status)");
  return out;
}

double max_over_ranks(double v) {
  if (!g_started) return v;
  double out = v;
  check(MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, comm()), "MPI_Allreduce(max)");
  return out;
}

void require_same(int64_t v, const std::string& field) {
  // One MPI_Allreduce: max of v and max of -v (= -min).
  long long in[2] = {v, -v}, out[2] = {0, 0};
  check(MPI_Allreduce(in, out, 2, MPI_LONG_LONG, MPI_MAX, comm()), "MPI_Allreduce(agree)");
  const long long hi = out[0], lo = -out[1];
  if (lo != hi)
    throw InputError(field, "differs across ranks: this rank (" + std::to_string(rank()) + " of " +
                                std::to_string(size()) + ") has " + std::to_string(v) +
                                ", the ranks range from " + std::to_string(lo) + " to " +
                                std::to_string(hi) + "; every rank must pass the same value");
}

void require_all_ok(bool ok, const std::string& what, const std::string& local_reason) {
  int bad = ok ? 0 : 1, any = 0;
  check(MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, comm()), "MPI_Allreduce(ok)");
  if (!ok) throw RuntimeError(what + " on rank " + std::to_string(rank()) + ": " + local_reason);
  if (any)
    throw RuntimeError(what + " failed on another rank (this is rank " + std::to_string(rank()) +
                       ")");
}

bool same_on_all_ranks(uint64_t hash) {
  unsigned long long in[2] = {hash, ~hash}, out[2] = {0, 0};
  check(MPI_Allreduce(in, out, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm()), "MPI_Allreduce(hash)");
  return out[0] == hash && out[1] == ~hash;  // max == min
}

void require_same_text(const std::string& text, const std::string& field) {
  const uint64_t h = std::hash<std::string>{}(text);
  if (same_on_all_ranks(h)) return;
  throw InputError(field, "differs across ranks: this rank (" + std::to_string(rank()) + " of " +
                              std::to_string(size()) + ") has '" + text +
                              "'; every rank must pass the same value");
}

bool serialized_threads() {
  return started().thread_level >= MPI_THREAD_SERIALIZED;
}

void sleeping_barrier(double poll_ms) {
  MPI_Request req;
  check(MPI_Ibarrier(comm(), &req), "MPI_Ibarrier");
  const auto pause = std::chrono::microseconds(std::max<long>(1, std::lround(poll_ms * 1e3)));
  for (int done = 0;;) {
    check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test(barrier)");
    if (done) return;
    std::this_thread::sleep_for(pause);
  }
}

MachineShare machine_share() {
  std::string id;
  std::ifstream f("/proc/sys/kernel/random/boot_id");
  if (!(f >> id)) {  // no procfs: the host name decides
    char host[MPI_MAX_PROCESSOR_NAME];
    int len = 0;
    MPI_Get_processor_name(host, &len);
    id.assign(host, len);
  }
  // The ranks of this machine in one communicator, their CPU masks OR-ed there.
  const int color = static_cast<int>(std::hash<std::string>{}(id)&0x3fffffff);
  MPI_Comm here;
  check(MPI_Comm_split(comm(), color, rank(), &here), "MPI_Comm_split(machine)");
  MachineShare m;
  MPI_Comm_size(here, &m.ranks);
  cpu_set_t mine, all;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof mine, &mine) != 0) CPU_SET(0, &mine);
  const int err = MPI_Allreduce(&mine, &all, sizeof(cpu_set_t), MPI_BYTE, MPI_BOR, here);
  MPI_Comm_free(&here);
  check(err, "MPI_Allreduce(cpus)");
  m.cpus = std::max(1, CPU_COUNT(&all));
  return m;
}

int host_count() {
  char host[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(host, &len);
  std::vector<char> all(static_cast<size_t>(size()) * MPI_MAX_PROCESSOR_NAME);
  check(MPI_Allgather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME,
                      MPI_CHAR, comm()),
        "MPI_Allgather(processor names)");
  std::set<std::string> names;
  for (int r = 0; r < size(); ++r) {
    const char* name = all.data() + static_cast<size_t>(r) * MPI_MAX_PROCESSOR_NAME;
    names.emplace(name, strnlen(name, MPI_MAX_PROCESSOR_NAME));
  }
  return static_cast<int>(names.size());
}

namespace {
thread_local int t_wait_sleep_us = 0;
}  // namespace

void set_wait_sleep_us(int us) {
  t_wait_sleep_us = std::max(0, us);
}
int wait_sleep_us() {
  return t_wait_sleep_us;
}

void wait_all(int n, MPI_Request* reqs, const char* call) {
  if (t_wait_sleep_us <= 0) {
    check(MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE), call);
    return;
  }
  // Sleeps from 1/16 of the limit, doubling up to it while nothing completes: a fast link is
  // polled often, a slow one rarely (each wake-up preempts a compute thread; on a virtual
  // machine every short timer also exits to the hypervisor).
  int us = std::max(1, t_wait_sleep_us / 16);
  for (int done = 0;;) {
    check(MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE), call);
    if (done) return;
    std::this_thread::sleep_for(std::chrono::microseconds(us));
    us = std::min(2 * us, t_wait_sleep_us);
  }
}

std::string library_version() {
  char v[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(v, &len);
  std::string s(v, len);
  auto nl = s.find_first_of("\n,");
  return nl == std::string::npos ? s : s.substr(0, nl);
}

}  // namespace pb::world

namespace pb {

void HostAllreduce::plan(const AllreduceDesc& d, Dir, const std::vector<const Tensor*>& in) {
  comm_ = world::comm();
  rank_ = world::rank();
  size_ = world::size();
  world::require_same(d.n, "allreduce descriptor field n");
  d_ = d;
  x_ = in[0];
  y_ = Tensor({d.n});
}

std::vector<Tensor> HostAllreduce::result() {
  std::vector<Tensor> out;
  out.push_back(y_.clone());
  return out;
}

void exchange(const float* send, int64_t scount, int dest, float* recv, int64_t rcount, int source,
              MPI_Comm comm, int tag) {
  std::vector<MPI_Request> reqs;
  for (int64_t o = 0; o < rcount; o += kMaxMpiCount) {
    reqs.emplace_back();
    world::check(MPI_Irecv(recv + o, static_cast<int>(std::min(kMaxMpiCount, rcount - o)),
                           MPI_FLOAT, source, tag, comm, &reqs.back()),
                 "MPI_Irecv");
  }
  for (int64_t o = 0; o < scount; o += kMaxMpiCount) {
    reqs.emplace_back();
    world::check(MPI_Isend(send + o, static_cast<int>(std::min(kMaxMpiCount, scount - o)),
                           MPI_FLOAT, dest, tag, comm, &reqs.back()),
                 "MPI_Isend");
  }
  world::wait_all(static_cast<int>(reqs.size()), reqs.data(), "MPI_Waitall");
}

void add_vectors(float* dst, const float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = a[i] + b[i];
}

}  // namespace pb
