// Exception hierarchy and the EXPECTS validation macro used at every public boundary.
#pragma once

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

// Invalid input from the caller: throws InvalidArgument with `message` when `cond` is false.
// The message names the function, the bad value and the expected one.
#define EXPECTS(cond, message)                                     \
  do {                                                             \
    if (!(cond)) throw ::torusgate::InvalidArgument(message);      \
  } while (false)

}  // namespace torusgate
