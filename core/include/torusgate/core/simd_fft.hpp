// Our own vectorised engine for the half-length negacyclic FFT (M = N/2 >= 64 points).
// Decimation in frequency with radix-8 butterflies computed vertically on vectors of W
// doubles (GCC/Clang vector extensions), radix-2 stages for the sizes that are not powers of
// 8, and a last radix-8 stage on groups of 8 contiguous points done after an 8x8 transpose
// (in registers for W = 8, in W x W pieces otherwise), whose output stays transposed. The
// spectrum is therefore in a fixed permuted order (engine-specific, as fft.hpp allows), the
// same for every width: the widths compute the same operations on the same values, so they
// give the same words and share Fourier-domain keys. The inverse undoes every stage in
// reverse order with conjugate twiddles.
//
// W is the build's register width by default (native_width(): 8 doubles with AVX-512, 4 with
// AVX, 2 otherwise): an 8-point butterfly then holds its 16 vectors in registers.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "torusgate/core/aligned.hpp"
#include "torusgate/core/fft.hpp"

namespace torusgate {

class SimdFft final : public ComplexNegacyclicFft {
 public:
  // Throws InvalidArgument unless polynomial_size is a power of two >= 128 and width is 0
  // (native_width()), 2, 4 or 8.
  explicit SimdFft(std::uint32_t polynomial_size, unsigned width = 0);
  std::string name() const override { return "simd"; }
  // Doubles per vector of this engine.
  unsigned width() const { return width_; }
  // The width this build's registers hold: 8 with AVX-512, 4 with AVX, 2 otherwise.
  static unsigned native_width();
  // Each transform drains this_thread_prefetch (prefetch.hpp) once per butterfly of the
  // vertical stages of span above 64 and once per 64-point block: 16 times for N = 1024 with
  // W = 8.
  std::size_t prefetch_drains() const override;

  struct Stage {
    std::size_t radix;    // 2 or 8
    std::size_t half;     // h: the butterfly inputs are h points apart; span radix*h
    std::size_t twiddle;  // offset of this stage's (radix-1) x h twiddles in the tables
  };

 protected:
  void transform_forward(const double* in_re, const double* in_im, double* out_re,
                         double* out_im) const override;
  void transform_inverse(const double* in_re, const double* in_im, double* out_re,
                         double* out_im) const override;

 private:
  unsigned width_;
  std::vector<Stage> stages_;               // vertical stages, in forward order
  AlignedVector<double> tw_re_, tw_im_;     // omega_span^(j*k), k = 1..radix-1, j < h
};

}  // namespace torusgate
