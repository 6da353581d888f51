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
// This rank and the number of ranks. The first call initialises MPI (MPI_Init_thread with
// MPI_THREAD_FUNNELED; MPI_Finalize runs at exit). Without a launcher: rank 0 of 1.
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
// "Open MPI v4.1.4, ..." or "built without MPI".
std::string library_version();

}  // namespace pb::world
