// Files of the torusgate CLI: outputs written atomically and never over an existing file
// without --force, inputs checked for the object they must hold before they are loaded, and
// `info`'s descriptions (native files and the TFHE library v1.1 formats).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "torusgate/core/serialization.hpp"

namespace torusgate::cli {

// An output file. The constructor refuses (CommandError) a path that is a directory, whose
// directory does not exist, or that exists when `force` is false: checked before any work is
// done. write() fills a new temporary file next to it (mode 0600, so a secret key is never
// readable by others, even briefly); commit() gives it the final mode (0600 when `secret`,
// else 0666 less the umask) and renames it over `path` in one step, so a failure never leaves
// a partial file. An uncommitted temporary file is removed by the destructor, or, when
// SIGINT, SIGTERM or SIGHUP stops the program, by a signal handler. A path that exists and is
// neither a file nor a directory (a device such as /dev/null, a FIFO) is never replaced: the
// temporary file is made in the system's temporary directory and commit() writes the finished
// file into the device, with or without `force`.
class OutputFile {
 public:
  OutputFile(std::filesystem::path path, bool force, bool secret = false);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Calls `save(temporary path)`.
  void write(const std::function<void(const std::filesystem::path&)>& save);
  // Moves the written file into place (CommandError if `path` appeared meanwhile and `force`
  // is false).
  void commit();
  // The size of the written file in bytes.
  std::uint64_t size() const;

 private:
  std::filesystem::path path_, temp_;
  bool force_, secret_, committed_ = false;
  bool special_ = false;  // a device or FIFO: written into, not replaced
  int temp_slot_ = -1;    // temp_'s slot in the signal handler's list (files.cpp)
  std::uint64_t size_ = 0;
};

// The header of the native file `path`, which must hold `want`; `role` names what the command
// line uses it for ("--cloud-key", "the input"). Throws CommandError with a message that says
// what the file holds instead and which file the user wants (a secret key where a cloud key
// belongs, a ciphertext batch where an integer array belongs, a file that is not torusgate's).
FileHeader expect_object(const std::filesystem::path& path, ObjectType want,
                         const std::string& role);

// "'a.tgct' is for parameter set 'toy_INSECURE' but 'ck.tgck' is for 'tfhe_lib_128'" when the
// headers' parameter sets differ (same name, different values: the fingerprints); empty
// when they agree.
std::string parameter_mismatch(const std::filesystem::path& a, const Parameters& pa,
                               const std::filesystem::path& b, const Parameters& pb);

// One line describing any file: a native file (describe_file, fully validated), or a TFHE
// library v1.1 parameter set, LWE key, TGSW key, gate ciphertext file, cloud keyset or secret
// keyset (loaded and validated in full too). Throws CommandError when the file is none of
// those.
std::string describe_any_file(const std::filesystem::path& path);

// "1.3 KiB", "88.7 MiB", "512 bytes".
std::string byte_size(std::uint64_t bytes);

// An exception message from the library without its leading function name
// ("load_cloud_key: 'ck': truncated ..." -> "'ck': truncated ...").
std::string user_message(const std::exception& e);

// 'path' in single quotes, as every message quotes file names.
std::string in_quotes(const std::filesystem::path& path);

}  // namespace torusgate::cli
