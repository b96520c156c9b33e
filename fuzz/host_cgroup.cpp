// Fuzz harness: apps::cgroup_free_bytes (apps/host_support.hpp), what the memory limits of the
// process's control group and of the groups above it leave, on a made-up /proc/self/cgroup and
// cgroup mount written from the input into a scratch folder (v2 where the input gives the
// mount a cgroup.controllers, else v1 under memory/). It throws nothing and gives -1 (no
// limit) or a number of bytes in [1, 2^62]: a limit counts only below 2^62 (v1 writes 2^63
// less a page for none), and what a group leaves is never more than its limit.
//
// Input: text. The lines up to the first line "--- PATH" are /proc/self/cgroup; each
// "--- PATH" line starts a file of the mount at PATH (relative, no ".."; at most 32 files),
// holding the lines up to the next one: "--- memory.max", "--- job/memory.stat", ...
#include <cmath>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "fuzz_support.hpp"
#include "host_support.hpp"

namespace {

namespace fs = std::filesystem;

// Writes `text` to `path` under `mount`, making its folders; skips a path that leaves the
// mount or that a file already made blocks.
void put(const fs::path& mount, const std::string& path, const std::string& text) {
  const fs::path relative = fs::path(path).lexically_normal();
  if (path.empty() || path.size() > 200 || relative.is_absolute() || relative.empty() ||
      relative == "." || *relative.begin() == ".." || !relative.has_filename()) {
    return;
  }
  std::error_code ec;
  const fs::path file = mount / relative;
  fs::create_directories(file.parent_path(), ec);
  if (ec) return;
  std::ofstream(file, std::ios::binary) << text;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace torusgate;
  const std::string input = fuzz::as_string(data, size);
  const fs::path base = fuzz::scratch_file("host_cgroup");
  const fs::path self = fs::path(base.native() + ".cgroup"), mount = base.native() + ".sys";
  std::error_code ec;
  fs::remove_all(mount, ec);
  fs::create_directories(mount, ec);
  if (ec) fuzz::finding("host_cgroup: cannot make the scratch folder " + mount.string());

  std::string proc_cgroup, path, text;
  bool in_file = false;
  int files = 0;
  const auto flush = [&] {
    if (!in_file) {
      proc_cgroup = text;
    } else if (files++ < 32) {
      put(mount, path, text);
    }
    text.clear();
  };
  std::size_t start = 0;
  while (start < input.size()) {
    const std::size_t end = std::min(input.find('\n', start), input.size());
    const std::string line = input.substr(start, end - start);
    start = end + 1;
    if (line.rfind("--- ", 0) == 0) {
      flush();
      in_file = true;
      path = line.substr(4);
    } else {
      text += line;
      text += '\n';
    }
  }
  flush();
  std::ofstream(self, std::ios::binary) << proc_cgroup;

  fuzz::expect_only<>("host_cgroup: cgroup_free_bytes", [&] {
    const double free = apps::cgroup_free_bytes(self, mount);
    fuzz::require(free == -1 || (free >= 1 && free <= 0x1p62),
                  "host_cgroup: cgroup_free_bytes gave " + std::to_string(free) +
                      ", neither -1 nor a number of bytes in [1, 2^62]");
  });
  return 0;
}
