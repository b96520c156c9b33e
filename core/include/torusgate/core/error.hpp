// Exception hierarchy and the EXPECTS validation macro used at every public boundary.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>

namespace torusgate {

// Base of every exception the library throws.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A caller passed a bad argument: wrong size, mismatched parameters, bad value.
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

// A file or byte stream is malformed: truncated, corrupted, wrong type/version/parameters.
class FormatError : public Error {
 public:
  using Error::Error;
};

// An operating-system or library call failed (I/O, FFTW planning, CSPRNG, device).
class SystemError : public Error {
 public:
  using Error::Error;
};

// Runs `make`, an allocation of `bytes` for `who`; std::bad_alloc and std::length_error
// become a SystemError naming them, so that a request too large for memory reaches the caller
// as the library's error type.
template <class Make>
auto allocating(const std::string& who, std::size_t bytes, Make&& make) {
  try {
    return make();
  } catch (const std::bad_alloc&) {
  } catch (const std::length_error&) {
  }
  // A caller whose byte count would wrap passes SIZE_MAX (saturated).
  throw SystemError(who + ": " + (bytes == SIZE_MAX ? "2^64 or more" : std::to_string(bytes)) +
                    " bytes do not fit in memory");
}

// Invalid input from the caller: throws InvalidArgument with `message` when `cond` is false.
// The message names the function, the bad value and the expected one.
#define EXPECTS(cond, message)                                     \
  do {                                                             \
    if (!(cond)) throw ::torusgate::InvalidArgument(message);      \
  } while (false)

}  // namespace torusgate
