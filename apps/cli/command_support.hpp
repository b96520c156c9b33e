// Helpers shared by the torusgate commands (commands.cpp, interop.cpp): option checks, the
// mapping of library errors to CommandError, warnings, and the wording of sizes and counts.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "app_support.hpp"
#include "commands.hpp"
#include "errors.hpp"
#include "files.hpp"
#include "torusgate/core/error.hpp"
#include "torusgate/core/params.hpp"

namespace torusgate::cli {

// `text` of option `flag` as an integer in [min, max].
inline std::uint64_t parse_number(const std::string& flag, const std::string& text,
                                  std::uint64_t min, std::uint64_t max) {
  try {
    return apps::parse_count(flag, text, min, max);
  } catch (const InvalidArgument& e) {
    throw UsageError(e.what());
  }
}

inline void require(const std::string& value, const std::string& flag, const std::string& what) {
  if (value.empty()) throw UsageError(flag + " is required: " + what);
}

// eval warns when the noise model's chance of a wrong output bit in its run is above 2^this.
inline constexpr double failure_warning_log2 = -40;

inline void warn(Console& console, const std::string& message) {
  console.err << "torusgate " << console.command << ": warning: " << message << "\n";
}

// Runs a library call that reads files, with its errors as CommandError.
template <typename Load>
auto loading(Load&& load) {
  try {
    return load();
  } catch (const Error& e) {
    throw CommandError(user_message(e));
  }
}

inline std::string parameters_text(const Parameters& p) {
  return p.name + " (n=" + std::to_string(p.lwe_dimension) +
         " k=" + std::to_string(p.glwe_dimension) + " N=" + std::to_string(p.polynomial_size) +
         ")" + (p.insecure ? ", INSECURE" : "");
}

inline std::string seconds_text(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f s", seconds);
  return buf;
}

// "1 integer", "6 integers", "5 batches".
inline std::string count_text(std::uint64_t count, const std::string& noun,
                              const std::string& plural_ending = "s") {
  return std::to_string(count) + " " + noun + (count == 1 ? "" : plural_ending);
}

// "1 was given", "3 were given".
inline std::string given(std::size_t count) {
  return std::to_string(count) + (count == 1 ? " was given" : " were given");
}

// True when `a` and `b` name the same file: the same path, or (both existing) a link to it.
inline bool same_path(const std::filesystem::path& a, const std::filesystem::path& b) {
  std::error_code ec;
  if (std::filesystem::equivalent(a, b, ec) && !ec) return true;
  return std::filesystem::absolute(a).lexically_normal() ==
         std::filesystem::absolute(b).lexically_normal();
}

// Refuses an output path that is also an input or another output (each output: its option
// and path), so that --force never replaces a key or an input with the command's result.
inline void check_distinct(const std::vector<std::string>& inputs,
                           const std::vector<std::pair<std::string, std::string>>& outputs) {
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].second.empty()) continue;
    for (const std::string& input : inputs) {
      if (!input.empty() && same_path(input, outputs[i].second)) {
        throw UsageError(outputs[i].first + " names the input file " + in_quotes(input));
      }
    }
    for (std::size_t j = i + 1; j < outputs.size(); ++j) {
      if (same_path(outputs[i].second, outputs[j].second)) {
        throw UsageError(outputs[i].first + " and " + outputs[j].first + " name the same file " +
                         in_quotes(outputs[i].second));
      }
    }
  }
}

}  // namespace torusgate::cli
