// Our own vectorised engine for the half-length negacyclic FFT (M = N/2 >= 64 points).
// Decimation in frequency with radix-8 butterflies computed vertically on vectors of 8
// doubles (GCC/Clang vector extensions: one AVX-512 register, two AVX ones or four SSE ones),
// radix-2 stages for the sizes that are not powers of 8, and a last radix-8 stage on groups of
// 8 contiguous points done after an 8x8 in-register transpose, whose output stays transposed.
// The spectrum is therefore in a fixed permuted order (engine-specific, as fft.hpp allows);
// the inverse undoes every stage in reverse order with conjugate twiddles.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "torusgate/core/aligned.hpp"
#include "torusgate/core/fft.hpp"

namespace torusgate {

class SimdFft final : public ComplexNegacyclicFft {
 public:
  // Throws InvalidArgument unless polynomial_size is a power of two >= 128.
  explicit SimdFft(std::uint32_t polynomial_size);
  std::string name() const override { return "simd"; }

 protected:
  void transform_forward(const double* in_re, const double* in_im, double* out_re,
                         double* out_im) const override;
  void transform_inverse(const double* in_re, const double* in_im, double* out_re,
                         double* out_im) const override;

 private:
  struct Stage {
    std::size_t radix;    // 2 or 8
    std::size_t half;     // h: the butterfly inputs are h points apart; span radix*h
    std::size_t twiddle;  // offset of this stage's (radix-1) x h twiddles in the tables
  };
  std::vector<Stage> stages_;               // vertical stages, in forward order
  AlignedVector<double> tw_re_, tw_im_;     // omega_span^(j*k), k = 1..radix-1, j < h
};

}  // namespace torusgate
