// Fuzz harness: the native file entry points on a file holding the fuzz input:
// read_file_header, describe_file (which loads and validates any object type, trailing bytes
// included) and peek_object_type on a stream, which must leave the stream where it was.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "fuzz_support.hpp"
#include "torusgate/core/serialization.hpp"

namespace {

namespace fs = std::filesystem;

const fs::path& scratch_file() { return torusgate::fuzz::scratch_file("native_file"); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace torusgate;
  const std::string bytes = fuzz::as_string(data, size);
  {
    std::ofstream out(scratch_file(), std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) fuzz::finding("native_file: cannot write the scratch file");
  }
  fuzz::expect_only<FormatError>("native_file: read_file_header", [&] {
    const FileHeader header = read_file_header(scratch_file());
    fuzz::require(header.params.fingerprint() != 0 || !header.params.name.empty(),
                  "native_file: read_file_header returned empty parameters");
  });
  fuzz::expect_only<FormatError>("native_file: describe_file", [&] {
    const std::string line = describe_file(scratch_file());
    fuzz::require(!line.empty(), "native_file: describe_file returned an empty line");
  });
  fuzz::expect_only<FormatError>("native_file: peek_object_type", [&] {
    std::istringstream in = fuzz::as_stream(bytes);
    in.seekg(0);
    peek_object_type(in);
    fuzz::require(in.good() && in.tellg() == 0,
                  "native_file: peek_object_type did not put the stream back at offset 0");
  });
  std::error_code ec;  // libFuzzer may exit without running atexit handlers
  fs::remove(scratch_file(), ec);
  return 0;
}
