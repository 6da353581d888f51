// mpi/native: MPI_Allreduce(MPI_SUM), the baseline a user would pick. Open MPI chooses the
// algorithm by size and rank count; its order of summation is fixed for a given (n, p).
// mpi/ompi_<algorithm>: the same call on a communicator for which Open MPI's coll tuned
// component is forced to one of its own all-reduce algorithms (issue 19, part 3).
//
// How the forcing works (Open MPI 4.1, ompi/mca/coll/tuned): with coll_tuned_use_dynamic_rules
// on (read-only after MPI_Init; world.cpp sets OMPI_MCA_coll_tuned_use_dynamic_rules=1 before
// MPI_Init unless the environment already says), a communicator's tuned module copies
// coll_tuned_allreduce_algorithm when the communicator is created. That variable is settable at
// run time through MPI_T, so plan() writes the algorithm's number, duplicates the world
// communicator, and writes the previous value back: that one communicator runs the algorithm,
// every other keeps Open MPI's choice. With no algorithm forced and no rules file, the dynamic
// decision falls through to the fixed one (coll_tuned_decision_dynamic.c), so mpi/native is
// unchanged by the setting.
//
// Which algorithm mpi/native runs: counter ompi_alg (Open MPI's number, the names are in
// ompi_allreduce_algorithms()), from coll tuned's fixed decision table for a commutative op,
// identical in Open MPI 4.1.0 to 5.0.x (coll_tuned_decision_fixed.c), or the forced algorithm
// when the environment forces one; absent where neither can be known (another MPI or version,
// a rules file, coll tuned absent or outranked, one rank).
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "kernels/allreduce/mpi/comm.h"
#include "kernels/core/error.h"

namespace pb {
namespace {

// --- Open MPI's control variables through MPI_T -------------------------------------------

void mpit_init() {
  static const bool ok = [] {
    int provided = 0;
    return MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS;
  }();
  (void)ok;
}

// The control variable's index, or -1 when this MPI has none of that name.
int cvar_index(const char* name) {
  world::comm();  // MPI_Init first: Open MPI registers a component's variables when it opens
  mpit_init();
  int idx = -1;
  return MPI_T_cvar_get_index(name, &idx) == MPI_SUCCESS ? idx : -1;
}

// Reads an integer or boolean variable (strings: their length); false when it cannot.
bool cvar_read_int(const char* name, long long* out) {
  const int idx = cvar_index(name);
  if (idx < 0) return false;
  char vname[256], desc[1024];
  int name_len = sizeof vname, desc_len = sizeof desc, verbosity = 0, bind = 0, scope = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_T_enum enumtype = MPI_T_ENUM_NULL;
  if (MPI_T_cvar_get_info(idx, vname, &name_len, &verbosity, &type, &enumtype, desc, &desc_len,
                          &bind, &scope) != MPI_SUCCESS)
    return false;
  MPI_T_cvar_handle h;
  int count = 0;
  if (MPI_T_cvar_handle_alloc(idx, nullptr, &h, &count) != MPI_SUCCESS) return false;
  char buf[4096] = {};
  const bool fits = type != MPI_CHAR || count < static_cast<int>(sizeof buf);
  const bool ok = fits && MPI_T_cvar_read(h, buf) == MPI_SUCCESS;
  MPI_T_cvar_handle_free(&h);
  if (!ok) return false;
  if (type == MPI_INT) {
    int v;
    std::memcpy(&v, buf, sizeof v);
    *out = v;
  } else if (type == MPI_C_BOOL) {
    bool v;
    std::memcpy(&v, buf, sizeof v);
    *out = v ? 1 : 0;
  } else if (type == MPI_CHAR) {
    *out = static_cast<long long>(std::strlen(buf));
  } else {
    return false;
  }
  return true;
}

bool cvar_write_int(const char* name, int v) {
  const int idx = cvar_index(name);
  if (idx < 0) return false;
  MPI_T_cvar_handle h;
  int count = 0;
  if (MPI_T_cvar_handle_alloc(idx, nullptr, &h, &count) != MPI_SUCCESS) return false;
  const bool ok = MPI_T_cvar_write(h, &v) == MPI_SUCCESS;
  MPI_T_cvar_handle_free(&h);
  return ok;
}

// "" when Open MPI's coll tuned algorithms can be forced here, else why not.
std::string ompi_force_unavailable() {
  long long dynamic = 0;
  if (cvar_index("coll_tuned_allreduce_algorithm") < 0)
    return "Open MPI's coll tuned component is absent (no control variable "
           "coll_tuned_allreduce_algorithm in " +
           world::library_version() + ")";
  if (!cvar_read_int("coll_tuned_use_dynamic_rules", &dynamic) || !dynamic) {
    const char* env = std::getenv("OMPI_MCA_coll_tuned_use_dynamic_rules");
    return std::string("coll_tuned_use_dynamic_rules is off") +
           (env ? std::string(" (OMPI_MCA_coll_tuned_use_dynamic_rules=") + env + ")" : "") +
           ": Open MPI then ignores forced algorithms";
  }
  if (world::size() == 1) return "one rank: Open MPI's coll self serves it, no tuned algorithm";
  return "";
}

// coll tuned's fixed choice for MPI_Allreduce of `bytes` bytes per rank over p ranks with a
// commutative op (MPI_SUM), as ompi_coll_tuned_allreduce_intra_dec_fixed decides it in Open MPI
// 4.1.0-4.1.6 and 5.0.x.
int ompi_fixed_choice(int p, int64_t bytes) {
  struct Band {
    int p_below;                      // p below this (and not below an earlier band's)
    std::pair<int64_t, int> step[6];  // (bytes below, algorithm), in order; {0, 0} ends
  };
  static const Band table[] = {
      {4, {{8, 4}, {4096, 3}, {8192, 4}, {16384, 3}, {65536, 4}, {262144, 5}}},
      {8, {{16, 4}, {8192, 3}}},
      {16, {{8192, 3}}},
      {32, {{64, 5}, {4096, 3}}},
      {64, {{128, 5}}},
      {128, {{262144, 3}}},
      {256, {{131072, 2}, {262144, 3}}},
      {512, {{4096, 2}}},
      {2048, {{2048, 2}, {16384, 3}}},
      {4096, {{2048, 2}, {4096, 5}, {16384, 3}}},
      {1 << 30, {{2048, 2}, {16384, 5}, {32768, 3}}},
  };
  for (const Band& b : table) {
    if (p >= b.p_below) continue;
    for (const auto& [limit, alg] : b.step)
      if (limit > 0 && bytes < limit) return alg;
    return 6;  // rabenseifner: every band's choice for large messages
  }
  return 0;
}

// The algorithm coll tuned runs for mpi/native's MPI_Allreduce of `bytes` over p ranks, or 0
// when it cannot be known here.
int ompi_native_choice(int p, int64_t bytes) {
  if (p < 2 || bytes <= 0 || cvar_index("coll_tuned_allreduce_algorithm") < 0) return 0;
  const std::string lib = world::library_version();
  if (lib.find("Open MPI v4.1") == std::string::npos &&
      lib.find("Open MPI v5.0") == std::string::npos)
    return 0;
  // Another collective component above tuned would serve MPI_Allreduce instead.
  long long tuned = 0, other = 0;
  if (!cvar_read_int("coll_tuned_priority", &tuned)) return 0;
  for (const char* c : {"coll_han_priority", "coll_adapt_priority", "coll_hcoll_priority",
                        "coll_ucc_priority", "coll_cuda_priority", "coll_sm_priority"})
    if (cvar_read_int(c, &other) && other >= tuned) return 0;
  long long dynamic = 0, forced = 0, rules = 0;
  if (cvar_read_int("coll_tuned_use_dynamic_rules", &dynamic) && dynamic) {
    if (cvar_read_int("coll_tuned_dynamic_rules_filename", &rules) && rules > 0) return 0;
    if (cvar_read_int("coll_tuned_allreduce_algorithm", &forced) && forced > 0)
      return static_cast<int>(forced);
  }
  return ompi_fixed_choice(p, bytes);
}

class NativeAllreduce : public HostAllreduce {
 public:
  std::string name() const override { return "mpi/native"; }
  void plan(const AllreduceDesc& d, Dir dir, const std::vector<const Tensor*>& in) override {
    HostAllreduce::plan(d, dir, in);
    alg_ = ompi_native_choice(size_, 4 * std::min(d.n, kMaxMpiCount));
  }
  void run() override {
    const int64_t n = d_.n;
    if (n == 0) {  // still a collective call, as a user's code would make it
      world::check(MPI_Allreduce(x_->data(), y_.data(), 0, MPI_FLOAT, MPI_SUM, comm_),
                   "MPI_Allreduce");
      return;
    }
    for (int64_t o = 0; o < n; o += kMaxMpiCount)
      world::check(
          MPI_Allreduce(x_->data() + o, y_.data() + o,
                        static_cast<int>(std::min(kMaxMpiCount, n - o)), MPI_FLOAT, MPI_SUM, comm_),
          "MPI_Allreduce");
  }
  std::vector<std::pair<std::string, double>> extra_counters() const override {
    if (alg_ <= 0) return {};
    return {{"ompi_alg", alg_}};
  }

 protected:
  int alg_ = 0;  // Open MPI's all-reduce algorithm number, 0: unknown
};

class OmpiAllreduce : public NativeAllreduce {
 public:
  explicit OmpiAllreduce(int alg) : forced_(alg) {}
  ~OmpiAllreduce() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (own_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&own_);
  }
  std::string name() const override {
    return "mpi/ompi_" + ompi_allreduce_algorithms().at(static_cast<size_t>(forced_ - 1));
  }
  Support supports(const AllreduceDesc& d, Dir dir) const override {
    Support s = HostAllreduce::supports(d, dir);
    if (!s) return s;
    const std::string why = ompi_force_unavailable();
    return why.empty() ? Support::yes() : Support::no(why);
  }
  void plan(const AllreduceDesc& d, Dir dir, const std::vector<const Tensor*>& in) override {
    HostAllreduce::plan(d, dir, in);
    long long before = 0;
    const bool ok = cvar_read_int("coll_tuned_allreduce_algorithm", &before) &&
                    cvar_write_int("coll_tuned_allreduce_algorithm", forced_);
    world::require_all_ok(ok, "forcing coll_tuned_allreduce_algorithm through MPI_T",
                          "MPI_T could not read or write it");
    const int err = MPI_Comm_dup(world::comm(), &own_);
    cvar_write_int("coll_tuned_allreduce_algorithm", static_cast<int>(before));
    world::check(err, "MPI_Comm_dup");
    MPI_Comm_set_errhandler(own_, MPI_ERRORS_RETURN);
    comm_ = own_;
    alg_ = forced_;
  }

 private:
  int forced_;
  MPI_Comm own_ = MPI_COMM_NULL;
};

}  // namespace

std::unique_ptr<AllreduceImpl> make_allreduce_mpi_native() {
  return std::make_unique<NativeAllreduce>();
}

std::unique_ptr<AllreduceImpl> make_allreduce_mpi_ompi(int alg) {
  return std::make_unique<OmpiAllreduce>(alg);
}

}  // namespace pb
