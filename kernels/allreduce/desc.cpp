// All-reduce descriptor grammar, validation and round-trip printing.
#include "kernels/allreduce/desc.h"

#include "kernels/core/error.h"
#include "kernels/core/grammar.h"
#include "kernels/core/tensor.h"

namespace pb {

AllreduceDesc AllreduceDesc::parse(const std::string& text) {
  FieldReader r("allreduce descriptor", text);
  r.allow_int("n");
  r.read();
  if (!r.has("n")) r.fail("n", "missing in '" + text + "' (example: n16777217n\"deepbench:16M\")");
  AllreduceDesc d;
  d.n = r.get("n", 0);
  d.name = r.name();
  d.validate();
  return d;
}

void AllreduceDesc::validate() const {
  if (n < 0)
    throw InputError("allreduce descriptor field n", "must be >= 0, got " + std::to_string(n));
  // Input, output and about two more vectors of staging or reference per rank.
  check_fits_in_memory(4.0 * 4.0 * static_cast<double>(n), "allreduce descriptor field n");
}

std::string AllreduceDesc::str() const {
  return "n" + std::to_string(n) + name_token(name);
}

}  // namespace pb
