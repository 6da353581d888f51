// The process-wide oneDNN CPU engine and stream.
#include <cstdio>
#include <string>

#include "kernels/vendor_onednn.h"

namespace pb::onednn {

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::stream& stream() {
  static dnnl::stream s(engine());
  return s;
}

std::string version() {
  const dnnl_version_t* v = dnnl_version();
  char buf[64];
  std::snprintf(buf, sizeof buf, "%d.%d.%d", v->major, v->minor, v->patch);
  return buf;
}

void rethrow(const dnnl::error& e, const std::string& what) {
  if (e.status == dnnl_unimplemented) throw Unsupported(what + ": " + e.what());
  throw RuntimeError(what + ": oneDNN error (status " + std::to_string(static_cast<int>(e.status)) +
                     "): " + e.what());
}

}  // namespace pb::onednn
