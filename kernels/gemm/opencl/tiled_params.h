// The tunables of gemm/tiled.cl as one struct: -D options and work sizes derive from it. Shared
// by ocl/tiled (GEMM) and the OpenCL convolutions that reuse its kernels.
#pragma once

#include <cstdlib>
#include <sstream>
#include <string>

#include "kernels/core/error.h"

namespace pb {

// The tunables of tiled.cl. Defaults measured on PoCL 3.1, 2-core Zen 4 (see the report).
// PRIMBENCH_OCL_TILED="TSM=64,TSN=128,..." overrides any of them (for tuning sweeps).
struct TiledParams {
  int tsm = 64, tsn = 64, tsk = 128, wptm = 32, wptn = 8, vw = 16;
  // op(A) = A^T: 1 transposes A once per run into a workspace (fast), 0 transposes every tile.
  int pretrans = 1;
  bool tsk_set = false;           // TSK came from PRIMBENCH_OCL_TILED
  static constexpr int kXT = 32;  // transpose tile (XT in tiled.cl)

  size_t local_bytes() const { return 4ull * tsk * (tsm + tsn); }

  // The defaults' A and B tiles take 64 KiB of local memory, which PoCL has and GPUs often do
  // not (NVIDIA's OpenCL: 48 KiB): without a TSK of the caller's, TSK is halved (down to VW)
  // until the tiles fit. Whether they fit at all is still checked where the kernel is built.
  TiledParams fitted(size_t local_mem) const {
    TiledParams p = *this;
    if (!tsk_set)
      while (p.local_bytes() > local_mem && p.tsk / 2 >= p.vw && (p.tsk / 2) % p.vw == 0)
        p.tsk /= 2;
    return p;
  }

  int rtsm() const { return tsm / wptm; }
  int rtsn() const { return tsn / wptn; }

  std::string options(bool ta, bool tb) const {
    std::ostringstream o;
    o << "-cl-mad-enable -DTSM=" << tsm << " -DTSN=" << tsn << " -DTSK=" << tsk
      << " -DWPTM=" << wptm << " -DWPTN=" << wptn << " -DVW=" << vw << " -DTA=" << ta
      << " -DTB=" << tb << " -DXT=" << kXT;
    return o.str();
  }

  void validate() const {
    auto fail = [](const std::string& why) { throw InputError("PRIMBENCH_OCL_TILED", why); };
    if (vw != 1 && vw != 2 && vw != 4 && vw != 8 && vw != 16) fail("VW must be 1, 2, 4, 8 or 16");
    if (tsm <= 0 || tsn <= 0 || tsk <= 0 || wptm <= 0 || wptn <= 0) fail("sizes must be > 0");
    if (wptm % vw || tsm % wptm || tsn % wptn)
      fail("need WPTM % VW == TSM % WPTM == TSN % WPTN == 0");
    if (tsm % vw || tsn % vw || tsk % vw) fail("TSM, TSN and TSK must be multiples of VW");
  }

  static TiledParams from_env() {
    TiledParams p;
    const char* env = std::getenv("PRIMBENCH_OCL_TILED");
    if (!env || !*env) return p;
    std::stringstream ss(env);
    std::string item;
    while (std::getline(ss, item, ',')) {
      auto eq = item.find('=');
      if (eq == std::string::npos) throw InputError("PRIMBENCH_OCL_TILED", "expected NAME=value");
      std::string key = item.substr(0, eq);
      int v = std::atoi(item.c_str() + eq + 1);
      if (key == "TSM")
        p.tsm = v;
      else if (key == "TSN")
        p.tsn = v;
      else if (key == "TSK")
        p.tsk = v, p.tsk_set = true;
      else if (key == "WPTM")
        p.wptm = v;
      else if (key == "WPTN")
        p.wptn = v;
      else if (key == "VW")
        p.vw = v;
      else if (key == "PRETRANS")
        p.pretrans = v;
      else
        throw InputError("PRIMBENCH_OCL_TILED", "unknown tunable " + key);
    }
    p.validate();
    return p;
  }
};

}  // namespace pb
