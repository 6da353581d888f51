// The ring all-reduce schedule (Baidu's ring: reduce-scatter then all-gather over 2(p-1) steps),
// chunked and pipelined with MPI_Isend/Irecv, shared by mpi/ring (host vectors) and ocl/ring
// (OpenCL buffers staged through host memory). Where the vector lives is a RingPort.
#pragma once

#include <mpi.h>

#include <cstdint>

namespace pb {

// The vector's home as the ring sees it: input X, output Y, and two staging slots (step parity)
// of one segment each for data in flight. Offsets are elements of the vector (`off`) and of the
// slot (`soff`).
class RingPort {
 public:
  virtual ~RingPort() = default;
  // Elements [off, off + count) to send, of X when `from_input` else of Y; valid until the send
  // completes (a port may copy them into send slot `slot` at soff).
  virtual const float* send_data(int64_t off, int64_t count, bool from_input, int slot,
                                 int64_t soff) = 0;
  // Where to receive [off, off + count): receive slot `slot` when `reduce`, else Y itself.
  virtual float* recv_target(int64_t off, int64_t count, bool reduce, int slot, int64_t soff) = 0;
  // The data of recv_target() arrived: when `reduce`, Y[off + i] = X[off + i] + received[i].
  virtual void received(int64_t off, int64_t count, bool reduce, int slot, int64_t soff) = 0;
  // One rank: Y = X.
  virtual void copy_input() = 0;
};

// Segment s of p covers [ring_segment_begin(n, p, s), ring_segment_begin(n, p, s + 1)): sizes
// differ by at most one, and are 0 when n < p.
int64_t ring_segment_begin(int64_t n, int p, int s);
// Elements of the largest segment: what a staging slot must hold.
inline int64_t ring_max_segment(int64_t n, int p) {
  return (n + p - 1) / p;
}

// Y = sum over the ranks of `comm` of X. Segment s is summed along the ring starting at rank s
// (x_s + x_{s+1} + ... in that order), so the result is bitwise the same on every rank and run.
// Messages carry at most `chunk` elements; the reduction of chunk j overlaps the transfer of
// the following chunks, and each reduced chunk is forwarded at once (pipelined across steps).
void ring_allreduce(int64_t n, RingPort& port, MPI_Comm comm, int64_t chunk);

// Default chunk: PRIMBENCH_RING_CHUNK (elements) when set, else 262144 (1 MiB).
int64_t ring_chunk_elems();

}  // namespace pb
