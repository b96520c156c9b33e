// Precision of a negacyclic FFT engine for bootstrapping: sums of (k+1)l products of random
// gadget digits by uniform torus polynomials (one column of an external product) through the
// engine, against the exact schoolbook sum. Used by the precision study and the tests.
#pragma once

#include <cstdint>

#include "torusgate/core/fft.hpp"
#include "torusgate/core/params.hpp"
#include "torusgate/core/random.hpp"

namespace torusgate::fpga_fft {

struct ProductError {
  double rms_lsb = 0;  // root mean square over every coefficient, in LSB of Torus32 (2^-32)
  double max_lsb = 0;  // largest |error|, in LSB of Torus32
};

// `columns` sums of (k+1)l products of digits uniform in [-Bg/2, Bg/2) by uniform torus
// polynomials of params.polynomial_size coefficients. InvalidArgument when the engine's size is
// not the parameters' N or columns is 0.
ProductError external_product_error(const NegacyclicFft& engine, const Parameters& params,
                                    std::uint32_t columns, Csprng& rng);

}  // namespace torusgate::fpga_fft
