// Fuzz harness: the CLI's file checks on a file holding the fuzz input (apps/cli/files.cpp):
// describe_any_file (`torusgate info`: a native file or any TFHE library v1.1 file, gate
// ciphertexts tried at every named set's dimension) and expect_object for each object type
// (what every command does to its input files before loading them). Both throw CommandError
// alone.
//
// Input: the file.
#include <filesystem>
#include <fstream>

#include "files.hpp"
#include "errors.hpp"
#include "fuzz_support.hpp"

namespace {

namespace fs = std::filesystem;

const fs::path& scratch_file() { return torusgate::fuzz::scratch_file("cli_info"); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace torusgate;
  {
    std::ofstream out(scratch_file(), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out) fuzz::finding("cli_info: cannot write the scratch file");
  }
  fuzz::expect_only<cli::CommandError>("cli_info: describe_any_file", [&] {
    fuzz::require(!cli::describe_any_file(scratch_file()).empty(),
                  "cli_info: describe_any_file returned an empty line");
  });
  for (const ObjectType type : {ObjectType::Parameters, ObjectType::SecretKey,
                                ObjectType::CloudKey, ObjectType::CiphertextBatch,
                                ObjectType::IntegerArray}) {
    fuzz::expect_only<cli::CommandError>("cli_info: expect_object", [&] {
      const FileHeader header = cli::expect_object(scratch_file(), type, "the input");
      fuzz::require(header.type == type, "cli_info: expect_object accepted another type");
    });
  }
  std::error_code ec;  // libFuzzer may exit without running atexit handlers
  fs::remove(scratch_file(), ec);
  return 0;
}
