// Fuzz harness: tfhe_lib::read_parameter_set (the TFHE library's text blocks) on arbitrary
// bytes. A successful read must be a named set, and writing it and reading it back must give
// the same set.
#include <algorithm>

#include "fuzz_support.hpp"
#include "torusgate/core/tfhe_lib_format.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace torusgate;
  fuzz::expect_only<FormatError>("tfhe_lib_parameter_set", [&] {
    std::istringstream in = fuzz::as_stream(fuzz::as_string(data, size));
    const Parameters p = tfhe_lib::read_parameter_set(in);
    const auto sets = all_parameter_sets();
    fuzz::require(std::find(sets.begin(), sets.end(), p) != sets.end(),
                  "tfhe_lib_parameter_set: read a set that is not a named one: " + p.name);
    std::ostringstream out(std::ios::out | std::ios::binary);
    tfhe_lib::write_parameter_set(out, p);
    std::istringstream again = fuzz::as_stream(out.str());
    fuzz::require(tfhe_lib::read_parameter_set(again) == p,
                  "tfhe_lib_parameter_set: " + p.name + " does not survive a write and a read");
  });
  return 0;
}
