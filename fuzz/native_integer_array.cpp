// Fuzz harness: read_integer_array (native format) against one of the candidate parameter
// sets (control byte), with the round trip and the array's invariants.
#include "native_reader.hpp"
#include "torusgate/core/serialization.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace torusgate;
  fuzz::native_round_trip(
      "native_integer_array", data, size,
      [](std::istream& in, const Parameters& expected) {
        IntegerArrayCiphertext array = read_integer_array(in, expected);
        fuzz::require(array.width >= 1 && array.width <= max_integer_width && array.rows >= 1 &&
                          array.cols >= 1 &&
                          array.samples.count() == array.width * array.lanes() &&
                          array.samples.lwe_dimension() == expected.lwe_dimension,
                      "native_integer_array: the array read breaks its invariants (" +
                          array.describe() + ", " + std::to_string(array.samples.count()) +
                          " samples)");
        return array;
      },
      [](std::ostream& out, const IntegerArrayCiphertext& array, const Parameters& expected) {
        write_integer_array(out, expected, array);
      });
  return 0;
}
