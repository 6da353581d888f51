// Atomic file writes, .npy encoding and JSON escaping.
#include "kernels/core/io.h"

#include <unistd.h>

#include <cstdlib>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "kernels/core/error.h"

namespace pb {

void write_file_atomic(const std::string& path, const std::string& bytes) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw RuntimeError("cannot write " + tmp);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      throw RuntimeError("cannot write " + tmp + " (disk full?)");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw RuntimeError("cannot rename " + tmp + " to " + path);
  }
}

std::string npy_bytes(const Tensor& t) {
  std::string shape;
  for (int64_t d : t.dims()) shape += std::to_string(d) + ", ";
  // "(3,)" for 1-D, "(2, 3)" otherwise, "()" for a scalar.
  if (!shape.empty()) shape.erase(shape.size() - (t.dims().size() == 1 ? 1 : 2));
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + shape + "), }";
  // magic(6) + version(2) + len(2) + header + '\n' padded to a multiple of 64
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = std::string("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out.append(reinterpret_cast<const char*>(t.data()), t.bytes());
  return out;
}

std::string json_str(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        o += "\\\"";
        break;
      case '\\':
        o += "\\\\";
        break;
      case '\n':
        o += "\\n";
        break;
      case '\t':
        o += "\\t";
        break;
      case '\r':
        o += "\\r";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          o += buf;
        } else {
          o += static_cast<char>(c);
        }
    }
  }
  return o + "\"";
}

std::string json_num(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

ProgressMode progress_mode() {
  const char* env = std::getenv("PRIMBENCH_PROGRESS");
  const std::string e = env ? env : "";
  ProgressMode m;
  m.tty = isatty(STDERR_FILENO);
  m.forced = e == "1";
  m.on = e != "0" && (m.forced || m.tty);
  return m;
}

}  // namespace pb
