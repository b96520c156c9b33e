// Parameter sets of the GPU backend's tests: the named sets plus INSECURE ones with the
// polynomial sizes the named sets lack (N = 512 and 2048), with k = 1 or 2 and a tiny n, so
// every N the backend supports is exercised cheaply. Their gadget is Bg = 2^8, l = 2: with
// Bg = 2^10, N = 2048 and k = 2 the products of a key in pairs or threes come too near a double
// engine's limit of exact rounding (product_rounding(), bootstrap.hpp: 6.9 and 4.5 sigma) for
// the engines' words to agree every time.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "torusgate/core/params.hpp"

namespace torusgate::gpu::test {

inline Parameters sized_insecure(std::uint32_t N, std::uint32_t k) {
  return Parameters{"test_N" + std::to_string(N) + "_k" + std::to_string(k) + "_INSECURE",
                    16, k, N, 8, 2, 3, 5, std::ldexp(1.0, -20), std::ldexp(1.0, -30), true};
}

// sized_insecure with an odd n (17): an unrolled key's last key bit takes a CMUX step.
inline Parameters odd_n_insecure(std::uint32_t N, std::uint32_t k) {
  Parameters p = sized_insecure(N, k);
  p.name = "test_N" + std::to_string(N) + "_k" + std::to_string(k) + "_n17_INSECURE";
  p.lwe_dimension = 17;
  return p;
}

// The named sets, then N = 512 (k = 1) and N = 2048 (k = 2).
inline std::vector<Parameters> every_test_set() {
  std::vector<Parameters> sets = all_parameter_sets();
  sets.push_back(sized_insecure(512, 1));
  sets.push_back(sized_insecure(2048, 2));
  return sets;
}

}  // namespace torusgate::gpu::test
