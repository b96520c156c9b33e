// Fuzz harness: read_secret_key (native format) on arbitrary bytes, with the round trip.
#include "native_reader.hpp"
#include "torusgate/core/serialization.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace torusgate;
  fuzz::native_round_trip(
      "native_secret_key", data, size,
      [](std::istream& in, const Parameters&) { return read_secret_key(in); },
      [](std::ostream& out, const SecretKey& key, const Parameters&) {
        write_secret_key(out, key);
      });
  return 0;
}
