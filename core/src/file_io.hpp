// File helpers (internal to core/src) shared by the native file format and the TFHE library
// formats: opening with clear SystemErrors, and reading exactly one object from a file.
#pragma once

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "torusgate/core/error.hpp"

namespace torusgate::detail {

inline std::string quoted(const std::filesystem::path& p) { return "'" + p.string() + "'"; }

inline std::string errno_reason(int err) {
  return err != 0 ? ": " + std::generic_category().message(err) : std::string();
}

// Opens `path` for writing (truncating it), calls `write(stream, context)`, closes it.
template <typename WriteFn>
void save_file(const std::filesystem::path& path, const std::string& fn, WriteFn&& write) {
  errno = 0;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out.is_open()) {
    throw SystemError(fn + ": cannot open " + quoted(path) + " for writing" + errno_reason(errno));
  }
  write(out, fn + ": " + quoted(path));
  out.close();
  if (out.fail()) {
    throw SystemError(fn + ": writing " + quoted(path) + " failed" + errno_reason(errno));
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
