// Error types shared by every primitive: bad input (names the field), unsupported, runtime failure.
#pragma once

#include <stdexcept>
#include <string>

namespace pb {

// Bad user input: a malformed descriptor, an inconsistent shape, a bad flag value.
// The CLI prints what() on one line and exits 2.
class InputError : public std::runtime_error {
 public:
  InputError(const std::string& field, const std::string& message)
      : std::runtime_error(field + ": " + message), field_(field) {}
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

// An implementation cannot run this problem (no device, shape outside its domain). CLI exit 3.
class Unsupported : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Anything else that went wrong at run time (an OpenCL call failed, out of memory).
class RuntimeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace pb
