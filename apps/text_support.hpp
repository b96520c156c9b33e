// The helpers of apps/ that need no backend: JSON text, the number and the list of a
// command-line option, a gate's label, the time stamp of a record and a file written whole.
// app_support.hpp includes this header; the readers that use these alone
// (compare/results.cpp, study_gates.cpp) and the fuzz harnesses (fuzz/) link text_support.cpp
// without the backends.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "torusgate/core/gates.hpp"

namespace torusgate::apps {

// Today's date and time in UTC, ISO 8601.
std::string utc_timestamp();

// Escapes a string for a JSON string literal (quotes included).
std::string json_string(const std::string& s);
// A finite double as the shortest JSON number that reads back exactly; non-finite: null.
std::string json_number(double value);

// Parses a command-line value `text` of option `flag` as an unsigned decimal integer in
// [min, max]; throws InvalidArgument naming the flag and the bad text otherwise.
std::uint64_t parse_count(const std::string& flag, const std::string& text, std::uint64_t min,
                          std::uint64_t max);
// The items of a comma-separated command-line list ("8,16,32" -> {"8", "16", "32"}).
std::vector<std::string> split_list(const std::string& text);

// "T(offset;w1,w2,...)" for a threshold gate, the kind name otherwise.
std::string gate_label(const GateSpec& spec);

// Writes `text` to `path` through a file beside it (PATH.PID.tmp) renamed over it, so that
// `path` holds the old text or the whole new one, never a part; throws SystemError naming
// `path`.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace torusgate::apps
