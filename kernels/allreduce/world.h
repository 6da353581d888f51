// The process group all-reduce runs over, without MPI headers: MPI_COMM_WORLD when built with
// MPI (mpi/world.cpp), else a single rank (world.cpp). Drivers use it to print on rank 0 only
// and to combine exit statuses.
#pragma once

#include <cstdint>
#include <string>

namespace pb::world {

// True when this process was started by a launcher (mpirun/mpiexec sets OMPI_COMM_WORLD_SIZE,
// PMI_SIZE or PMIX_RANK). Cheap; initialises nothing.
bool launched();
// This rank and the number of ranks. The first call initialises MPI (MPI_Init_thread asking for
// MPI_THREAD_SERIALIZED; MPI_Finalize runs at exit). Without a launcher: rank 0 of 1.
int rank();
int size();
// The maximum of v over ranks (a collective: every rank must call it). Returns v when MPI was
// never initialised in this process, so it is safe to call from drivers that did not use MPI.
int max_over_ranks(int v);
double max_over_ranks(double v);
// Throws InputError(field, ...) on every rank when v differs across ranks (a collective).
void require_same(int64_t v, const std::string& field);
// Throws RuntimeError on every rank when `ok` is false on any rank (a collective); `what` and
// the local reason (when !ok) go into the message. For set-up that may fail on some ranks only.
void require_all_ok(bool ok, const std::string& what, const std::string& local_reason);
// True when `hash` is the same on every rank (a collective).
bool same_on_all_ranks(uint64_t hash);
// Throws InputError(field, ...) on every rank when `text` differs across ranks (a collective);
// the message quotes this rank's value.
void require_same_text(const std::string& text, const std::string& field);
// True when MPI lets threads other than the main one call it, one at a time
// (MPI_THREAD_SERIALIZED or more): data-parallel training's communication thread needs it.
bool serialized_threads();
// A barrier whose waiting sleeps (MPI_Ibarrier tested every `poll_ms`), so that the waiting
// ranks leave the machine's cores to the ones with work (a collective).
void sleeping_barrier(double poll_ms);
// What this rank shares its machine with (a collective): the ranks whose kernel has the same
// boot id (/proc/sys/kernel/random/boot_id; so the network namespaces of one machine count as
// one machine, as they share its cores), this one included, and the CPUs those ranks may run
// on together (the union of their affinity masks).
struct MachineShare {
  int ranks = 1, cpus = 1;
};
MachineShare machine_share();
// The number of hosts the ranks run on: distinct MPI processor names (host names; each of
// tools/cluster's namespace hosts has its own), a collective. 1 without MPI.
int host_count();
// How the calling thread waits for its point-to-point requests in mpi/ring, mpi/rdouble and
// ocl/ring: 0 (the default) spins in MPI_Wait; us > 0 tests the requests and sleeps between
// tests, from us/16 microseconds doubling up to `us`, leaving the core to other threads (a
// communication thread beside compute). MPI_Allreduce (mpi/native, mpi/ompi_*) always waits as
// the MPI library does.
void set_wait_sleep_us(int us);
int wait_sleep_us();
// "Open MPI v4.1.4, ..." or "built without MPI".
std::string library_version();

}  // namespace pb::world
