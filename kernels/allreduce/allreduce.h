// All-reduce: the sum of a float32 vector across the ranks of MPI_COMM_WORLD, result on every
// rank. The implementation interface, the registry, the factories and the design notes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kernels/allreduce/desc.h"
#include "kernels/core/impl.h"
#include "kernels/core/problem.h"

// Design (issue 8):
// - Ranks. kernels/allreduce/world.h is the MPI-free view of the process group (rank, size,
//   agreement helpers); mpi/world.cpp implements it over a private duplicate of MPI_COMM_WORLD,
//   world.cpp as one rank when built without MPI. MPI is initialised on first use
//   (MPI_Init_thread, FUNNELED), or early by a driver that runs under mpirun, and finalised
//   from atexit. Without mpirun a process is a singleton MPI job of one rank.
// - Inputs. Rank q's vector is fill_int(mix_seed(seed, q)), small integers, so every partial sum
//   is exact in fp32 and every rank can compute the reference (the sum over all ranks' inputs)
//   locally by regenerating the other ranks' vectors: the check needs no communication.
// - Agreement. Before any collective, plan() compares n across ranks (MPI_Allreduce of min
//   and max): a mismatch raises InputError("allreduce descriptor field n") on every rank, never
//   a hang. Set-up that may fail on one rank only (OpenCL) is agreed on before communicating.
// - Determinism. Every implementation fixes its summation order by rank and segment, never by
//   arrival order (ring: segment s is summed along the ring starting at rank s; recursive
//   doubling/halving: pairs combine the same two partial sums, a+b == b+a in IEEE): the same
//   inputs give bitwise the same result on every rank and in every run.
// - Out of place: run() reads the input and writes the output; it may be repeated.
// - Drivers: only rank 0 prints (the CLI redirects stdout of other ranks when launched by
//   mpirun); exit statuses and benchmark times are the maximum over ranks.

namespace pb {

// Input: X (this rank's vector). Output: Y = sum over ranks of X.
using AllreduceImpl = Impl<AllreduceDesc>;

const Registry<AllreduceDesc>& allreduce_registry();
PrimitiveInfo allreduce_primitive();

std::unique_ptr<AllreduceImpl> make_allreduce_mpi_native();
std::unique_ptr<AllreduceImpl> make_allreduce_mpi_ring();
std::unique_ptr<AllreduceImpl> make_allreduce_mpi_rdouble();
std::unique_ptr<AllreduceImpl> make_allreduce_ocl_ring();
// mpi/ompi_<name>: MPI_Allreduce with Open MPI's coll tuned forced to algorithm `alg` (1-based,
// Open MPI's numbering; mpi/native.cpp).
std::unique_ptr<AllreduceImpl> make_allreduce_mpi_ompi(int alg);
// Open MPI's all-reduce algorithms in its numbering from 1 (coll_tuned_allreduce_algorithm):
// basic_linear, nonoverlapping, recursive_doubling, ring, segmented_ring, rabenseifner.
const std::vector<std::string>& ompi_allreduce_algorithms();

}  // namespace pb
