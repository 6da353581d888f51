// Direction names.
#include "kernels/core/error.h"
#include "kernels/core/impl.h"

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

}  // namespace pb
