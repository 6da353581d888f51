// Output helpers: whole-or-nothing file writes, .npy encoding, JSON string escaping.
#pragma once

#include <string>

#include "kernels/core/tensor.h"

namespace pb {

// Writes `bytes` to `path` through a temp file in the same folder and rename(): a reader sees
// the old file or the whole new one, never a part. Throws RuntimeError naming the path.
void write_file_atomic(const std::string& path, const std::string& bytes);
// A .npy (format 1.0, little-endian '<f4') of the tensor with its dims as the shape.
std::string npy_bytes(const Tensor& t);
// "text" with JSON escapes, quotes included.
std::string json_str(const std::string& s);
// A JSON number; NaN and Inf become null.
std::string json_num(double v);

// Whether to show progress on stderr (never on stdout): PRIMBENCH_PROGRESS=1 always, 0 never,
// else when stderr is a terminal. `forced`: it was PRIMBENCH_PROGRESS=1; `tty`: stderr is a
// terminal (then progress rewrites one line with '\r').
struct ProgressMode {
  bool on = false, forced = false, tty = false;
};
ProgressMode progress_mode();

}  // namespace pb
