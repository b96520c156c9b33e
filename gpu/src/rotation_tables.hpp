// The host-side tables of an unrolled key's group steps (kernel_math.hpp) for the GPU engines
// and their host mirror, from core's: each slot's root exponent, from the engine's transform
// of the polynomial X (core's root_exponents_of_x), and zeta^x, x < 2N (core's
// unit_roots_split), as the kernels' interleaved Complex.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kernel_math.hpp"
#include "torusgate/core/fft.hpp"

namespace torusgate::gpu::detail {

// Empty unless the slots hold distinct odd powers of zeta (a wrong probe).
inline std::vector<std::uint32_t> slot_root_exponents(
    const std::vector<kernel::Complex>& x_spectrum, std::uint32_t polynomial_size) {
  std::vector<double> re(x_spectrum.size()), im(x_spectrum.size());
  for (std::size_t j = 0; j < x_spectrum.size(); ++j) {
    re[j] = x_spectrum[j].re;
    im[j] = x_spectrum[j].im;
  }
  return root_exponents_of_x(re, im, polynomial_size);
}

inline std::vector<kernel::Complex> unit_roots_complex(std::uint32_t polynomial_size) {
  const std::vector<double> split = unit_roots_split(polynomial_size);
  const std::size_t count = split.size() / 2;
  std::vector<kernel::Complex> u(count);
  for (std::size_t x = 0; x < count; ++x) u[x] = kernel::Complex{split[x], split[count + x]};
  return u;
}

}  // namespace torusgate::gpu::detail
