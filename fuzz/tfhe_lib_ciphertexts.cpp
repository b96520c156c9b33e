// Fuzz harness: tfhe_lib::read_gate_ciphertexts for one of the candidate parameter sets
// (control byte 0) on the rest of the input. A successful read, written back with the
// variances it read, must give exactly the input bytes.
#include "fuzz_support.hpp"
#include "torusgate/core/tfhe_lib_format.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace torusgate;
  if (size == 0) return 0;
  const auto sets = fuzz::candidate_parameter_sets();
  const Parameters& params = sets[data[0] % sets.size()];
  const std::string bytes = fuzz::as_string(data + 1, size - 1);
  fuzz::expect_only<FormatError>("tfhe_lib_ciphertexts", [&] {
    std::istringstream in = fuzz::as_stream(bytes);
    std::vector<double> variances;
    const LweBatch batch = tfhe_lib::read_gate_ciphertexts(in, params, &variances);
    fuzz::require(batch.lwe_dimension() == params.lwe_dimension &&
                      variances.size() == batch.count() &&
                      bytes.size() == batch.count() * tfhe_lib::ciphertext_bytes(params.lwe_dimension),
                  "tfhe_lib_ciphertexts: the batch read does not account for the input");
    std::ostringstream out(std::ios::out | std::ios::binary);
    tfhe_lib::write_gate_ciphertexts(out, params, batch, variances);
    fuzz::require(out.str() == bytes,
                  "tfhe_lib_ciphertexts: the batch written back differs from the input");
  });
  return 0;
}
