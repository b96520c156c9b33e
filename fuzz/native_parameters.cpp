// Fuzz harness: read_parameters (native format) on arbitrary bytes, with the round trip.
#include "native_reader.hpp"
#include "torusgate/core/serialization.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace torusgate;
  fuzz::native_round_trip(
      "native_parameters", data, size,
      [](std::istream& in, const Parameters&) { return read_parameters(in); },
      [](std::ostream& out, const Parameters& p, const Parameters&) { write_parameters(out, p); });
  return 0;
}
