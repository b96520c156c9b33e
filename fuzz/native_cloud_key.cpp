// Fuzz harness: read_cloud_key (native format) on arbitrary bytes, with the round trip.
#include "native_reader.hpp"
#include "torusgate/core/serialization.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace torusgate;
  fuzz::native_round_trip(
      "native_cloud_key", data, size,
      [](std::istream& in, const Parameters&) { return read_cloud_key(in); },
      [](std::ostream& out, const CloudKey& key, const Parameters&) { write_cloud_key(out, key); });
  return 0;
}
