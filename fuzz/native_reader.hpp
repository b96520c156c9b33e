// The body shared by the harnesses of the native stream readers: the control byte, the read,
// and the round trip (a successful read, written back, gives exactly the bytes it consumed:
// the format has one encoding per object).
//
// Input: byte 0 is a control byte (bit 0: recompute the checksum over the file before
// reading; bits 1..7: which candidate parameter set a reader that needs one expects), the
// rest is the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "fuzz_support.hpp"

namespace torusgate::fuzz {

struct NativeInput {
  std::string file;
  Parameters expected;
};

inline NativeInput native_input(const std::uint8_t* data, std::size_t size) {
  NativeInput in;
  if (size == 0) return in;
  const std::uint8_t control = data[0];
  in.file = as_string(data + 1, size - 1);
  if (control & 1) reseal(in.file);
  const auto sets = candidate_parameter_sets();
  in.expected = sets[(control >> 1) % sets.size()];
  return in;
}

// Reads one object with `read(stream)`; on success writes it back with `write(ostream, obj)`
// and requires the bytes to equal those the read consumed.
template <class ReadFn, class WriteFn>
void native_round_trip(const char* harness, const std::uint8_t* data, std::size_t size,
                       ReadFn&& read, WriteFn&& write) {
  if (size == 0) return;
  const NativeInput input = native_input(data, size);
  expect_only<FormatError>(harness, [&] {
    std::istringstream in = as_stream(input.file);
    const auto object = read(in, input.expected);
    const std::streamoff consumed = in.tellg();
    require(consumed >= 0 && static_cast<std::size_t>(consumed) <= input.file.size(),
            std::string(harness) + ": the stream position after a successful read is " +
                std::to_string(consumed));
    std::ostringstream out(std::ios::out | std::ios::binary);
    write(out, object, input.expected);
    require(out.str() == input.file.substr(0, static_cast<std::size_t>(consumed)),
            std::string(harness) + ": the object read back does not write the " +
                std::to_string(consumed) + " bytes it was read from (" +
                std::to_string(out.str().size()) + " bytes written)");
  });
}

}  // namespace torusgate::fuzz
