// The helpers of apps/ that need no backend (text_support.hpp).
#include "text_support.hpp"

#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "torusgate/core/error.hpp"

namespace torusgate::apps {

std::string utc_timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string json_number(double value) {
  if (!std::isfinite(value)) return "null";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, value);
  return std::string(buf, r.ptr);
}

std::uint64_t parse_count(const std::string& flag, const std::string& text, std::uint64_t min,
                          std::uint64_t max) {
  const std::string expected =
      "expected an integer in " + std::to_string(min) + ".." + std::to_string(max);
  std::uint64_t value = 0;
  const char* first = text.data();
  const char* last = first + text.size();
  const auto r = std::from_chars(first, last, value);
  if (text.empty() || r.ptr != last || r.ec == std::errc::invalid_argument) {
    throw InvalidArgument(flag + ": '" + text + "' is not a number; " + expected);
  }
  if (r.ec == std::errc::result_out_of_range || value < min || value > max) {
    throw InvalidArgument(flag + ": " + text + " is out of range; " + expected);
  }
  return value;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::size_t end = comma == std::string::npos ? text.size() : comma;
    items.push_back(text.substr(start, end - start));
    if (comma == std::string::npos) return items;
    start = comma + 1;
  }
}

std::string gate_label(const GateSpec& spec) {
  if (spec.kind != GateKind::Threshold) return std::string(gate_kind_name(spec.kind));
  std::string label = "T(" + std::to_string(spec.offset_eighths) + ";";
  for (int i = 0; i < spec.arity; ++i) {
    if (i > 0) label += ',';
    label += std::to_string(spec.weights[i]);
  }
  return label + ")";
}

void write_file_atomically(const std::string& path, const std::string& text) {
  namespace fs = std::filesystem;
  const std::string tmp = path + "." + std::to_string(::getpid()) + ".tmp";
  std::error_code ec;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) {
      fs::remove(tmp, ec);
      throw SystemError("writing '" + path + "' failed");
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    const std::string why = ec.message();
    fs::remove(tmp, ec);
    throw SystemError("writing '" + path + "' failed (" + why + ")");
  }
}

}  // namespace torusgate::apps
