// The readers of the kernel's text about this machine (host_support.hpp).
#include "host_support.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <system_error>
#include <vector>

namespace torusgate::apps {
namespace {

// AMD's core generation from the family and model numbers (x86 CPUID), where known.
std::string amd_generation(long family, long model) {
  if (family == 0x17) return model < 0x30 ? "Zen/Zen+" : "Zen 2";
  if (family == 0x19) {
    const bool zen4 = (model >= 0x10 && model <= 0x1f) || (model >= 0x60 && model <= 0x7f) ||
                      (model >= 0xa0 && model <= 0xaf);
    return zen4 ? "Zen 4" : "Zen 3";
  }
  if (family == 0x1a) return "Zen 5";
  return "";
}

// Reads the file at `path` into `text`; false when it cannot be opened.
bool read_text(const std::filesystem::path& path, std::string& text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream all;
  all << in.rdbuf();
  text = all.str();
  return true;
}

// Whether `c` separates the fields of the kernel's text.
bool blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The count at the start of `text` after blanks, as the kernel writes its counters: decimal
// digits ending at the end of the text or a blank (a unit may follow: " kB"); -1 for anything
// else (a sign, a fraction, an exponent, junk, "max", a value of 2^64 or more).
double count_at(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size() && blank(text[i])) ++i;
  const char* first = text.data() + i;
  const char* last = text.data() + text.size();
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(first, last, value);
  if (ec != std::errc() || (end != last && !blank(*end))) return -1;
  return static_cast<double>(value);
}

// The count a file holds, or -1 when it cannot be read or holds none ("max").
double number_in_file(const std::filesystem::path& path) {
  std::string text;
  return read_text(path, text) ? count_at(text) : -1;
}

}  // namespace

std::string cpu_identity(const std::string& cpuinfo) {
  std::map<std::string, std::string> fields;  // of the first processor
  std::istringstream in(cpuinfo);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() && !fields.empty()) break;  // the first processor's block ends
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.pop_back();
    std::string value = colon + 1 < line.size() ? line.substr(colon + 1) : "";
    if (!value.empty() && value.front() == ' ') value.erase(0, 1);
    fields.emplace(key, value);
  }
  const auto field = [&](const char* key) {
    const auto it = fields.find(key);
    return it == fields.end() ? std::string() : it->second;
  };
  const auto number = [&](const char* key) -> long {
    const std::string text = field(key);
    long value = -1;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    return error == std::errc() && end == text.data() + text.size() ? value : -1;
  };
  std::string model = field("model name");
  if (model.empty()) model = "unknown CPU";
  std::vector<std::string> parts;
  const long family = number("cpu family"), model_number = number("model");
  if (family >= 0 && model_number >= 0) {
    std::string id = "family " + std::to_string(family) + ", model " + std::to_string(model_number);
    const std::string generation =
        field("vendor_id") == "AuthenticAMD" ? amd_generation(family, model_number) : "";
    if (!generation.empty()) id += ": " + generation;
    parts.push_back(id);
  }
  std::istringstream flags(field("flags"));
  bool avx512 = false, avx2 = false, sse2 = false;
  for (std::string flag; flags >> flag;) {
    avx512 |= flag == "avx512f";
    avx2 |= flag == "avx2";
    sse2 |= flag == "sse2";
  }
  if (avx512 || avx2 || sse2) parts.push_back(avx512 ? "AVX-512" : avx2 ? "AVX2" : "SSE2");
  if (parts.empty()) return model;
  std::string joined;
  for (const std::string& part : parts) joined += (joined.empty() ? "" : "; ") + part;
  return model + " (" + joined + ")";
}

double keyed_value(std::string_view text, std::string_view key) {
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    if (line.size() <= key.size() || line.compare(0, key.size(), key) != 0) continue;
    return count_at(std::string_view(line).substr(key.size()));
  }
  return -1;
}

double keyed_file_value(const std::filesystem::path& path, std::string_view key) {
  std::string text;
  return read_text(path, text) ? keyed_value(text, key) : -1;
}

double cgroup_free_bytes(const std::filesystem::path& proc_cgroup,
                         const std::filesystem::path& mount) {
  namespace fs = std::filesystem;
  std::ifstream groups(proc_cgroup);
  std::string v2_path, v1_path;
  for (std::string line; std::getline(groups, line);) {
    // "ID:CONTROLLERS:PATH", the path free to hold colons: v2's line is "0::PATH"; v1's memory
    // controller may share its hierarchy with others ("5:cpuset,memory:PATH", mounted at
    // cpuset,memory/ with a link memory/ to it).
    const std::size_t first = line.find(':');
    const std::size_t second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    std::string controllers = ",";
    controllers.append(line, first + 1, second - first - 1);
    controllers += ',';
    if (controllers == ",," && line.compare(0, first, "0") == 0) {
      v2_path = line.substr(second + 1);
    } else if (controllers.find(",memory,") != std::string::npos) {
      v1_path = line.substr(second + 1);
    }
  }
  const auto least_free = [](const fs::path& root, std::string path, const char* limit,
                             const char* usage, const char* inactive) {
    std::error_code ec;
    const auto relative_of = [](const std::string& p) {
      return fs::path(p).relative_path().lexically_normal();
    };
    // The kernel marks a v2 group that was removed " (deleted)"; its folder is gone, but the
    // groups above it still bind, so the walk starts at the nearest folder left above it. (A
    // live group may bear such a name: its folder exists.)
    constexpr std::string_view deleted = " (deleted)";
    const bool removed = path.ends_with(deleted) && !fs::is_directory(root / relative_of(path), ec);
    if (removed) path.resize(path.size() - deleted.size());
    // The group's folder as the process sees it, else the mount's root (a container's
    // namespace shows its own group there); then each folder above it up to the root.
    const fs::path relative = relative_of(path);
    fs::path dir = root / relative;
    const bool outside = !relative.empty() && *relative.begin() == "..";
    while (removed && !outside && dir.native().size() > root.native().size() &&
           !fs::is_directory(dir, ec)) {
      dir = dir.parent_path();
    }
    if (relative.empty() || relative == "." || outside || !fs::is_directory(dir, ec)) dir = root;
    double least = -1;
    for (std::size_t level = 0; level < 64; ++level) {
      const double max = number_in_file(dir / limit);  // -1 for v2 "max"
      const double used = number_in_file(dir / usage);
      if (max >= 0 && max < 0x1p62 && used >= 0) {  // v1 "no limit": 2^63 less a page
        // The cache is part of the use, so it frees at most the use.
        const double cache =
            std::clamp(keyed_file_value(dir / "memory.stat", inactive), 0.0, used);
        const double free = std::max(1.0, max - used + cache);
        if (least < 0 || free < least) least = free;
      }
      if (dir.native().size() <= root.native().size()) break;
      dir = dir.parent_path();
    }
    return least;
  };
  std::error_code ec;
  if (fs::exists(mount / "cgroup.controllers", ec)) {
    return least_free(mount, v2_path, "memory.max", "memory.current", "inactive_file ");
  }
  return least_free(mount / "memory", v1_path, "memory.limit_in_bytes", "memory.usage_in_bytes",
                    "total_inactive_file ");
}

}  // namespace torusgate::apps
