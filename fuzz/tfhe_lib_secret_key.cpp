// Fuzz harness: an LWE key file followed by a TGSW key file in one input, read from one stream
// and combined with tfhe_lib::to_secret_key, both with the set the keys imply and with a
// candidate parameter set given (control byte 0). FormatError is the documented failure.
#include "fuzz_support.hpp"
#include "torusgate/core/tfhe_lib_format.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace torusgate;
  if (size == 0) return 0;
  const auto sets = fuzz::candidate_parameter_sets();
  const Parameters& given = sets[data[0] % sets.size()];
  fuzz::expect_only<FormatError>("tfhe_lib_secret_key", [&] {
    std::istringstream in = fuzz::as_stream(fuzz::as_string(data + 1, size - 1));
    const tfhe_lib::LweKeyFile lwe = tfhe_lib::read_lwe_key(in);
    const tfhe_lib::TgswKeyFile tgsw = tfhe_lib::read_tgsw_key(in);
    fuzz::expect_only<FormatError>("tfhe_lib_secret_key: to_secret_key(lwe, tgsw)", [&] {
      const SecretKey key = tfhe_lib::to_secret_key(lwe, tgsw);
      fuzz::require(key.lwe_key().coefficients().size() == key.parameters().lwe_dimension,
                    "tfhe_lib_secret_key: the key does not match its parameters");
    });
    const SecretKey key = tfhe_lib::to_secret_key(given, lwe, tgsw);
    fuzz::require(key.parameters() == given,
                  "tfhe_lib_secret_key: to_secret_key(params, ...) returned other parameters");
  });
  return 0;
}
