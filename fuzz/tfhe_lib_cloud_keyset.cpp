// Fuzz harness: tfhe_lib::read_cloud_keyset on arbitrary bytes. A keyset read, written back
// with its variances and v = 0 rows, must read back to the same key (the text blocks may be
// spelled differently, so the bytes themselves need not match).
#include <algorithm>

#include "fuzz_support.hpp"
#include "torusgate/core/tfhe_lib_format.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace torusgate;
  fuzz::expect_only<FormatError>("tfhe_lib_cloud_keyset", [&] {
    std::istringstream in = fuzz::as_stream(fuzz::as_string(data, size));
    const tfhe_lib::CloudKeySetFile file = tfhe_lib::read_cloud_keyset(in);
    std::ostringstream out(std::ios::out | std::ios::binary);
    tfhe_lib::write_cloud_keyset(out, file);
    std::istringstream again = fuzz::as_stream(out.str());
    const tfhe_lib::CloudKeySetFile back = tfhe_lib::read_cloud_keyset(again);
    fuzz::require(back.key.parameters() == file.key.parameters() &&
                      std::ranges::equal(back.key.bootstrapping_key().data(),
                                         file.key.bootstrapping_key().data()) &&
                      std::ranges::equal(back.key.key_switching_key().data(),
                                         file.key.key_switching_key().data()) &&
                      back.ks_digit0 == file.ks_digit0,
                  "tfhe_lib_cloud_keyset: the keyset does not survive a write and a read");
  });
  return 0;
}
