// Fuzz harness: tfhe_lib::read_tgsw_key on arbitrary bytes; a key read must have the shape its
// TLWEPARAMS block states.
#include "fuzz_support.hpp"
#include "torusgate/core/tfhe_lib_format.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace torusgate;
  fuzz::expect_only<FormatError>("tfhe_lib_tgsw_key", [&] {
    std::istringstream in = fuzz::as_stream(fuzz::as_string(data, size));
    const tfhe_lib::TgswKeyFile file = tfhe_lib::read_tgsw_key(in);
    fuzz::require(file.key.glwe_dimension() == file.tlwe.glwe_dimension &&
                      file.key.polynomial_size() == file.tlwe.polynomial_size &&
                      file.key.coefficients().size() ==
                          std::size_t{file.tlwe.glwe_dimension} * file.tlwe.polynomial_size,
                  "tfhe_lib_tgsw_key: the key's shape differs from its TLWEPARAMS block");
  });
  return 0;
}
