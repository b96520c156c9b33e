// File helpers (internal to core/src) shared by the native file format and the TFHE library
// formats: saving whole or not at all, opening with clear SystemErrors, and reading exactly
// one object from a file.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "torusgate/core/error.hpp"

namespace torusgate::detail {

inline std::string quoted(const std::filesystem::path& p) {
  std::string text(1, '\'');  // appended: GCC 12 warns (-Wrestrict) on "'" + string
  text += p.string();
  text += '\'';
  return text;
}

inline std::string errno_reason(int err) {
  return err != 0 ? ": " + std::generic_category().message(err) : std::string();
}

// Who may read a saved file: a secret key is created with mode 0600, anything else with 0666
// less the umask (as any new file).
enum class FileAccess { Public, Secret };

// Creates a new file beside `path` (mode by `access`, O_EXCL) and returns its path; an empty
// path when the directory takes no new file, with errno set.
inline std::filesystem::path create_beside(const std::filesystem::path& path, FileAccess access) {
  static std::atomic<std::uint64_t> counter{0};
  const ::mode_t mode = access == FileAccess::Secret ? 0600 : 0666;
  for (int attempt = 0; attempt < 64; ++attempt) {
    const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
    // Appended piece by piece: GCC 12 warns (-Wrestrict, a false positive) on "." + string.
    std::string name(1, '.');
    name += path.filename().string();
    name += ".tmp-";
    name += std::to_string(::getpid());
    name += '-';
    name += std::to_string(counter++);
    name += '-';
    name += std::to_string(static_cast<std::uint64_t>(now) % 1000000);
    std::filesystem::path temp = path;
    temp.replace_filename(name);
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd >= 0) {
      ::close(fd);
      return temp;
    }
    if (errno != EEXIST) break;
  }
  return {};
}

// Saves a file whole or not at all: `write(stream, context)` fills a new file beside `path`
// (mode by `access`), which then replaces `path` in one rename, so a failure (a full disk, a
// file size limit, an exception of `write`) leaves an existing file as it was and no partial
// one. A symbolic link is followed (its target is replaced); a path that exists and is no
// regular file (a device such as /dev/null, a FIFO) is written directly, as is a file in a
// directory that takes no new file. A failure is a SystemError with the system's reason.
template <typename WriteFn>
void save_file(const std::filesystem::path& path, const std::string& fn, WriteFn&& write,
               FileAccess access = FileAccess::Public) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path target = path;
  if (fs::is_symlink(fs::symlink_status(path, ec))) {
    const fs::path resolved = fs::weakly_canonical(path, ec);
    if (!ec) target = resolved;
  }
  const fs::file_status status = fs::status(target, ec);
  if (fs::is_directory(status)) {
    throw SystemError(fn + ": cannot open " + quoted(path) + " for writing: it is a directory");
  }
  const bool exists = fs::exists(status);
  fs::path temp;
  if (!exists || fs::is_regular_file(status)) {
    errno = 0;
    temp = create_beside(target, access);
    if (temp.empty() && !exists) {
      throw SystemError(fn + ": cannot open " + quoted(path) + " for writing" +
                        errno_reason(errno));
    }
  }
  const fs::path& written = temp.empty() ? target : temp;
  const auto remove_temp = [&] {
    if (!temp.empty()) fs::remove(temp, ec);
  };
  try {
    errno = 0;
    std::ofstream out(written, std::ios::binary | std::ios::trunc);
    if (!out.is_open()) {
      throw SystemError(fn + ": cannot open " + quoted(path) + " for writing" +
                        errno_reason(errno));
    }
    write(out, fn + ": " + quoted(path));
    errno = 0;
    out.close();
    if (out.fail()) {
      throw SystemError(fn + ": writing " + quoted(path) + " failed" + errno_reason(errno));
    }
  } catch (...) {
    remove_temp();
    throw;
  }
  if (temp.empty()) return;
  if (::rename(temp.c_str(), target.c_str()) != 0) {
    const int err = errno;
    remove_temp();
    throw SystemError(fn + ": cannot replace " + quoted(path) + errno_reason(err));
  }
}

inline std::ifstream open_for_reading(const std::filesystem::path& path, const std::string& fn) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw SystemError(fn + ": cannot open " + quoted(path) + " for reading: it is a directory");
  }
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in.is_open()) {
    throw SystemError(fn + ": cannot open " + quoted(path) + " for reading" + errno_reason(errno));
  }
  return in;
}

// Opens `path`, reads one object with `read(stream, context)`, and rejects trailing bytes;
// `object` names it in that message ("a secret key", "the LWE key").
template <typename ReadFn>
auto load_file(const std::filesystem::path& path, const std::string& fn,
               const std::string& object, ReadFn&& read) {
  std::ifstream in = open_for_reading(path, fn);
  const std::string ctx = fn + ": " + quoted(path);
  auto result = read(in, ctx);
  if (in.peek() != std::ifstream::traits_type::eof()) {
    const std::streamoff end_of_object = in.tellg();
    in.seekg(0, std::ios::end);
    const std::streamoff size = in.tellg();
    throw FormatError(ctx + ": " + std::to_string(size - end_of_object) +
                      " bytes of trailing data after " + object + " that ends at offset " +
                      std::to_string(end_of_object));
  }
  if (in.bad()) throw SystemError(ctx + ": reading failed");
  return result;
}

}  // namespace torusgate::detail
