// Fuzz harness: tfhe_lib::read_lwe_key on arbitrary bytes; a key read must have the dimension
// its block states and binary coefficients.
#include "fuzz_support.hpp"
#include "torusgate/core/tfhe_lib_format.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace torusgate;
  fuzz::expect_only<FormatError>("tfhe_lib_lwe_key", [&] {
    std::istringstream in = fuzz::as_stream(fuzz::as_string(data, size));
    const tfhe_lib::LweKeyFile file = tfhe_lib::read_lwe_key(in);
    fuzz::require(file.key.lwe_dimension() == file.params.lwe_dimension,
                  "tfhe_lib_lwe_key: the key's dimension differs from its LWEPARAMS block");
    for (std::int32_t c : file.key.coefficients()) {
      fuzz::require(c == 0 || c == 1, "tfhe_lib_lwe_key: a non-binary coefficient was accepted");
    }
  });
  return 0;
}
