// Shared pieces of the libFuzzer harnesses: the input as a stream, the parameter sets a
// harness can expect, the checksum fix-up that lets the fuzzer reach the checks behind the
// native format's checksum, and the rule for exceptions (the documented ones are expected
// outcomes; anything else is a finding and aborts with its message).
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <sstream>
#include <string>
#include <typeinfo>
#include <vector>

#include "torusgate/core/error.hpp"
#include "torusgate/core/params.hpp"

namespace torusgate::fuzz {

// INSECURE: the smallest parameter set Parameters::validate accepts in every dimension but
// N (n=2, k=1, N=16, l=1, t=1), so a whole cloud key is 96 words and fits a seed file.
inline Parameters tiny_insecure() {
  return Parameters{"fuzz_tiny_INSECURE", 2, 1, 16, 8, 1, 2, 1, 0x1p-20, 0x1p-30, true};
}

// The sets a harness picks its `expected` parameters from (by a control byte).
inline std::vector<Parameters> candidate_parameter_sets() {
  std::vector<Parameters> sets{tiny_insecure()};
  for (auto& p : all_parameter_sets()) sets.push_back(std::move(p));
  return sets;
}

// The file a file-reading harness writes each input to: in memory where the system has it
// (/dev/shm), one per process and harness (`name` is part of the file name).
inline const std::filesystem::path& scratch_file(const std::string& name) {
  static const std::filesystem::path path = [&] {
    std::error_code ec;
    const std::filesystem::path dir = std::filesystem::is_directory("/dev/shm", ec)
                                          ? std::filesystem::path("/dev/shm")
                                          : std::filesystem::temp_directory_path();
    return dir / ("torusgate_fuzz_" + name + "_" + std::to_string(::getpid()) + ".bin");
  }();
  return path;
}

inline std::string as_string(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

inline std::istringstream as_stream(std::string bytes) {
  return std::istringstream(std::move(bytes), std::ios::in | std::ios::binary);
}

// Overwrites the last 8 bytes of a native file with the FNV-1a hash of the bytes before them
// (the format's checksum), so mutated bodies get past the checksum to the value checks.
inline void reseal(std::string& bytes) {
  if (bytes.size() < 8) return;
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (std::size_t i = 0; i + 8 < bytes.size(); ++i) {
    h ^= static_cast<unsigned char>(bytes[i]);
    h *= 0x100000001b3ULL;
  }
  for (int b = 0; b < 8; ++b) {
    bytes[bytes.size() - 8 + static_cast<std::size_t>(b)] = static_cast<char>(h >> (8 * b));
  }
}

[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "FUZZ FINDING: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

// Runs `fn`. The exception types listed (Expected...) are the documented outcomes of bad
// input and are swallowed; any other exception, ours or the standard library's, is a finding.
template <class... Expected, class Fn>
void expect_only(const char* harness, Fn&& fn) {
  try {
    try {
      fn();
    } catch (const std::exception& e) {
      if ((... || (dynamic_cast<const Expected*>(&e) != nullptr))) return;
      throw;
    }
  } catch (const Error& e) {
    finding(std::string(harness) + ": undocumented exception type " + typeid(e).name() +
            " (a torusgate::Error): " + e.what());
  } catch (const std::exception& e) {
    finding(std::string(harness) + ": unexpected exception " + typeid(e).name() + ": " +
            e.what());
  } catch (...) {
    finding(std::string(harness) + ": unexpected exception of unknown type");
  }
}

// A property the harness checks on a successful read.
inline void require(bool ok, const std::string& what) {
  if (!ok) finding(what);
}

}  // namespace torusgate::fuzz
