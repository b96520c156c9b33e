// Fuzz harness: tfhe_lib::read_secret_keyset on arbitrary bytes; a keyset read must hold a
// secret key and a cloud key of one parameter set that belong together.
#include "fuzz_support.hpp"
#include "torusgate/core/tfhe_lib_format.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace torusgate;
  fuzz::expect_only<FormatError>("tfhe_lib_secret_keyset", [&] {
    std::istringstream in = fuzz::as_stream(fuzz::as_string(data, size));
    const tfhe_lib::SecretKeySetFile file = tfhe_lib::read_secret_keyset(in);
    fuzz::require(file.secret.parameters() == file.cloud.key.parameters() &&
                      tfhe_lib::key_pair_problem(file.secret, file.cloud.key).empty(),
                  "tfhe_lib_secret_keyset: a keyset whose keys do not belong together was read");
  });
  return 0;
}
