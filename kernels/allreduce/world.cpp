// The single-rank process group of a build without MPI (with MPI: mpi/world.cpp).
#ifndef PRIMBENCH_HAVE_MPI
#include "kernels/allreduce/world.h"

#include "kernels/core/error.h"
#include "kernels/core/threads.h"

namespace pb::world {

bool launched() {
  return false;
}
int rank() {
  return 0;
}
int size() {
  return 1;
}
int max_over_ranks(int v) {
  return v;
}
double max_over_ranks(double v) {
  return v;
}
void require_same(int64_t, const std::string&) {}
void require_all_ok(bool ok, const std::string& what, const std::string& local_reason) {
  if (!ok) throw RuntimeError(what + ": " + local_reason);
}
bool same_on_all_ranks(uint64_t) {
  return true;
}
void require_same_text(const std::string&, const std::string&) {}
bool serialized_threads() {
  return true;
}
void sleeping_barrier(double) {}
MachineShare machine_share() {
  MachineShare m;
  m.cpus = affinity_cpus();
  return m;
}
int host_count() {
  return 1;
}
void set_wait_sleep_us(int) {}
int wait_sleep_us() {
  return 0;
}
std::string library_version() {
  return "built without MPI";
}

}  // namespace pb::world
#endif
