// Shared by the libFuzzer targets (tools/fuzz): a bug is a crash, a sanitizer report, an
// exception other than InputError escaping a parser, or a round-trip mismatch, which aborts with
// the input and what differed. Bad input that the parser rejects with an InputError is fine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "kernels/core/error.h"

namespace pb::fuzz {

[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz: BUG: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

inline std::string text(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// Desc::parse(s) either rejects s with an InputError or gives a descriptor whose str() parses
// back to an equal descriptor and prints the same again; its derived figures are computed too
// (what a benchmark computes before allocating), so an overflow there is a UBSan report.
template <class Desc>
void descriptor_round_trip(const std::string& s) {
  Desc d;
  try {
    d = Desc::parse(s);
  } catch (const InputError&) {
    return;
  }
  const std::string printed = d.str();
  Desc again;
  try {
    again = Desc::parse(printed);
  } catch (const InputError& e) {
    fail("'" + s + "' parses, but its str() '" + printed + "' does not: " + e.what());
  }
  if (!(again == d))
    fail("'" + s + "' prints as '" + printed + "', which parses to another descriptor");
  if (again.str() != printed)
    fail("'" + s + "' prints as '" + printed + "' and then as '" + again.str() + "'");
  volatile double sink = d.flops() + d.bytes();
  (void)sink;
}

}  // namespace pb::fuzz
