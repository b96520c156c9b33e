// Fuzz harness: read_ciphertexts (native format) against one of the candidate parameter sets
// (control byte), with the round trip.
#include "native_reader.hpp"
#include "torusgate/core/serialization.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace torusgate;
  fuzz::native_round_trip(
      "native_ciphertexts", data, size,
      [](std::istream& in, const Parameters& expected) {
        LweBatch batch = read_ciphertexts(in, expected);
        fuzz::require(batch.lwe_dimension() == expected.lwe_dimension &&
                          batch.data().size() == batch.count() * batch.sample_size(),
                      "native_ciphertexts: the batch read does not have the expected shape");
        return batch;
      },
      [](std::ostream& out, const LweBatch& batch, const Parameters& expected) {
        write_ciphertexts(out, expected, batch);
      });
  return 0;
}
