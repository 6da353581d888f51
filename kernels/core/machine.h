// Machine probe: measured fp32 FMA peak and triad bandwidth for the thread count in use.
#pragma once

#include <string>

namespace pb {

struct MachineInfo {
  std::string cpu_model;
  int threads = 0;
  double peak_flops = 0;   // fp32 FLOP/s, FMA loop, all threads
  double triad_bytes = 0;  // bytes/s, a[i] = b[i] + s*c[i] (12 bytes per element, STREAM rule)
};

// Measured once per process and thread count, then cached (takes about 0.5 s).
const MachineInfo& machine_info();
std::string cpu_model();

}  // namespace pb
