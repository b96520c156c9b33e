// The body shared by the harnesses of the native stream readers: the control byte, the read,
// and the round trip (a successful read, written back, gives exactly the bytes it consumed:
// the format has one encoding per object and version; a secret key read from a version 1
// file is written in version 3, with its key id, and that encoding then round-trips exactly).
//
// Input: byte 0 is a control byte (bit 0: recompute the checksum over the file before
// reading; bits 1..6: which candidate parameter set a reader that needs one expects; bit 7:
// read through a stream that cannot seek, so the reader cannot learn the input's size and
// grows its buffers as bytes arrive), the rest is the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <streambuf>
#include <string>

#include "fuzz_support.hpp"

namespace torusgate::fuzz {

struct NativeInput {
  std::string file;
  Parameters expected;
  bool seekable = true;
};

inline NativeInput native_input(const std::uint8_t* data, std::size_t size) {
  NativeInput in;
  if (size == 0) return in;
  const std::uint8_t control = data[0];
  in.file = as_string(data + 1, size - 1);
  if (control & 1) reseal(in.file);
  const auto sets = candidate_parameter_sets();
  in.expected = sets[((control >> 1) & 63) % sets.size()];
  in.seekable = (control & 128) == 0;
  return in;
}

// A read-only stream buffer over bytes that refuses to seek (like a pipe or a socket).
class NonSeekableBuf : public std::streambuf {
 public:
  explicit NonSeekableBuf(std::string& bytes) {
    setg(bytes.data(), bytes.data(), bytes.data() + bytes.size());
  }
  std::size_t consumed() const { return static_cast<std::size_t>(gptr() - eback()); }
};

// The format version field (bytes 8..11, little-endian) of a native file of at least 12 bytes.
inline std::uint32_t version_of(const std::string& file) {
  std::uint32_t v = 0;
  for (int b = 3; b >= 0; --b) v = (v << 8) | static_cast<unsigned char>(file[8 + b]);
  return v;
}

// True when `written` (what a writer made of an object read from `read_from`) is of a later
// format version: only a secret key's (version 1 to 3), the one case of an upgrade.
inline bool upgrades_version(const std::string& read_from, const std::string& written) {
  return read_from.size() >= 12 && written.size() >= 12 &&
         version_of(written) > version_of(read_from);
}

// Reads one object with `read(stream)`; on success writes it back with `write(ostream, obj)`
// and requires the bytes to equal those the read consumed.
template <class ReadFn, class WriteFn>
void native_round_trip(const char* harness, const std::uint8_t* data, std::size_t size,
                       ReadFn&& read, WriteFn&& write) {
  if (size == 0) return;
  const NativeInput input = native_input(data, size);
  std::string bytes = input.file;
  expect_only<FormatError>(harness, [&] {
    std::size_t consumed = 0;
    std::ostringstream out(std::ios::out | std::ios::binary);
    if (input.seekable) {
      std::istringstream in = as_stream(bytes);
      const auto object = read(in, input.expected);
      const std::streamoff position = in.tellg();
      require(position >= 0 && static_cast<std::size_t>(position) <= bytes.size(),
              std::string(harness) + ": the stream position after a successful read is " +
                  std::to_string(position));
      consumed = static_cast<std::size_t>(position);
      write(out, object, input.expected);
    } else {
      NonSeekableBuf buffer(bytes);
      std::istream in(&buffer);
      const auto object = read(in, input.expected);
      consumed = buffer.consumed();
      write(out, object, input.expected);
    }
    const std::string written = out.str();
    if (upgrades_version(input.file, written)) {
      // Written in a later version than it was read from: that encoding must read back to an
      // object that writes it again, byte for byte.
      std::istringstream again = as_stream(written);
      std::ostringstream rewritten(std::ios::out | std::ios::binary);
      write(rewritten, read(again, input.expected), input.expected);
      require(rewritten.str() == written,
              std::string(harness) + ": an object read from format version " +
                  std::to_string(version_of(input.file)) + " and written in version " +
                  std::to_string(version_of(written)) + " does not round-trip in that version");
      return;
    }
    require(written == input.file.substr(0, consumed),
            std::string(harness) + ": the object read back does not write the " +
                std::to_string(consumed) + " bytes it was read from (" +
                std::to_string(written.size()) + " bytes written)");
  });
}

}  // namespace torusgate::fuzz
