// Names of directions, timing contracts and cache states (the parsers users reach).
#include "kernels/core/error.h"
#include "kernels/core/impl.h"
#include "kernels/core/problem.h"

namespace pb {

std::string dir_str(Dir d) {
  switch (d) {
    case Dir::fwd:
      return "fwd";
    case Dir::bwd_d:
      return "bwd_d";
    case Dir::bwd_w:
      return "bwd_w";
    case Dir::bwd:
      return "bwd";
  }
  return "?";
}

Dir parse_dir(const std::string& s) {
  if (s == "fwd") return Dir::fwd;
  if (s == "bwd_d") return Dir::bwd_d;
  if (s == "bwd_w") return Dir::bwd_w;
  if (s == "bwd") return Dir::bwd;
  throw InputError("dir", "unknown direction '" + s + "' (fwd, bwd_d, bwd_w, bwd)");
}

std::string timing_str(Timing t) {
  return t == Timing::kernel ? "kernel" : t == Timing::step ? "step" : "layer";
}
Timing parse_timing(const std::string& s, const std::string& field) {
  for (Timing t : {Timing::kernel, Timing::layer, Timing::step})
    if (s == timing_str(t)) return t;
  throw InputError(field, "timing contract '" + s + "' is not kernel, layer or step");
}
std::string cache_str(CacheState c) {
  return c == CacheState::cold ? "cold" : "hot";
}
CacheState parse_cache(const std::string& s, const std::string& field) {
  if (s == "hot") return CacheState::hot;
  if (s == "cold") return CacheState::cold;
  throw InputError(field, "cache state '" + s + "' is not hot or cold");
}

}  // namespace pb
