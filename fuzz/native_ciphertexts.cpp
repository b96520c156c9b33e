// Fuzz harness: read_ciphertexts (native format) against one of the candidate parameter sets
// (control byte), with the round trip (the key id of a version 3 file included).
#include <cstdint>
#include <utility>

#include "native_reader.hpp"
#include "torusgate/core/serialization.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace torusgate;
  fuzz::native_round_trip(
      "native_ciphertexts", data, size,
      [](std::istream& in, const Parameters& expected) {
        std::uint64_t key_id = 0;
        LweBatch batch = read_ciphertexts(in, expected, &key_id);
        fuzz::require(batch.lwe_dimension() == expected.lwe_dimension &&
                          batch.data().size() == batch.count() * batch.sample_size(),
                      "native_ciphertexts: the batch read does not have the expected shape");
        return std::pair{std::move(batch), key_id};
      },
      [](std::ostream& out, const std::pair<LweBatch, std::uint64_t>& batch,
         const Parameters& expected) {
        write_ciphertexts(out, expected, batch.first, batch.second);
      });
  return 0;
}
