// The half-length negacyclic multiplier of the FPGA datapath as an FFT engine of the core
// bootstrapping (NegacyclicFft with custom arithmetic): fold a_j + i a_(j+M), twist by
// zeta^j = exp(i pi j / N) (or the twist merged into the FFT), the fixed-point FFT of M = N/2
// points, the fixed-point multiply-accumulate of the (k+1)l rows ("AddMul"), the inverse FFT,
// untwist, unfold and rounding to Torus32. DESIGN.md sections 4 and 8, docs/fpga_fft.md.
//
// Scaling: a polynomial of integers (gadget digits, forward(int32)) enters as d * 2^F; a torus
// polynomial (the bootstrapping key, forward(Torus32)) enters as its value t / 2^32 in
// [-1/2, 1/2), rounded to F fractional bits. Their product is a torus value, and the inverse
// returns round(x * 2^32) mod 2^32. So this engine computes integer x torus products (the only
// kind bootstrapping makes); the scaling of other products is not the core's integer one.
//
// Full length (for comparison, full_length): the folding is skipped; the N real coefficients,
// twisted by zeta^j, go through an N-point FFT (the roots of X^N + 1), and since the
// coefficients are real the values come in conjugate pairs: the N/2 points in the upper half
// plane are kept (the spectrum has the same size), the inverse restores the others by
// conjugation, and the real parts of the untwisted result are the coefficients.
//
// Spectra: the 2M slots of a spectrum hold the M real then the M imaginary W-bit words as
// int64 bit patterns (custom_arithmetic()); multiply_add() rounds each product by F bits and
// accumulates in a W-bit register. With key_in_double, torus polynomials are transformed in
// double precision (the host precomputing the key's spectrum) and then rounded to F bits.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "torusgate/core/fft.hpp"
#include "torusgate/fpga_fft/fixed_fft.hpp"

namespace torusgate::fpga_fft {

struct NegacyclicConfig {
  // The datapath; its size is M = N/2 (N with full_length) (0, the default here: set by the
  // engine; or that size).
  FixedFftConfig fft = FixedFftConfig{.size = 0};
  bool key_in_double = false;  // torus operands: spectrum computed in double, then quantised
  bool full_length = false;    // an N-point FFT without folding (separate twist only)
};

class FixedPointNegacyclicFft final : public NegacyclicFft {
 public:
  // Overflow sites, in datapath order (overflow_counts() indices).
  static constexpr std::size_t input_site = 0;    // an operand that does not fit W bits
  static constexpr std::size_t twist_site = 1;    // the twist multiplier (separate twist)
  // 2 .. 2+S-1: forward stage s; then the multiply-accumulate; then inverse stages; untwist.

  FixedPointNegacyclicFft(std::uint32_t polynomial_size, const NegacyclicConfig& config);

  std::string name() const override;  // "fixed(M=512 r=2 W=64 F=30 T=32 nearest separate-twist)"
  bool custom_arithmetic() const override { return true; }

  const FixedFft& transform() const { return fft_; }
  const NegacyclicConfig& config() const { return config_; }
  // Overflows counted since construction (or reset), by site; thread-safe.
  const OverflowCounters& overflows() const { return *overflows_; }
  void reset_overflows() const { overflows_->reset(); }

  // Spectrum slots <-> words (for tests and tools).
  static void store(const std::vector<CWord>& words, double* spectrum);
  static std::vector<CWord> load(const double* spectrum, std::size_t points);

 protected:
  void forward_integers(const std::int32_t* poly, double* spectrum) const override;
  void forward_torus(const Torus32* poly, double* spectrum) const override;
  void forward_digits(const Torus32* poly, const GadgetDecomposition& gadget, double* spectra,
                      std::size_t stride) const override;
  void inverse_to_torus(const double* spectrum, Torus32* poly, bool add) const override;
  void multiply_add_spectra(const double* a, const double* b, double* acc) const override;

 private:
  // Folded words (already scaled) -> twist -> forward FFT -> spectrum slots.
  void forward_words(std::vector<CWord>& words, double* spectrum) const;
  // Twist (j = 1.. of the transform's input; angle step 1 half length, 2 full length).
  void twist(std::vector<CWord>& words, bool inverse, std::size_t site) const;
  // Full length: the spectrum's M words <-> the N-point transform's values.
  void keep_upper_half(const std::vector<CWord>& values, double* spectrum) const;
  std::vector<CWord> restore_conjugates(const double* spectrum) const;
  std::size_t mac_site() const { return 2 + fft_.stages(); }
  std::size_t untwist_site() const { return 3 + 2 * fft_.stages(); }

  NegacyclicConfig config_;
  FixedFft fft_;
  std::unique_ptr<OverflowCounters> overflows_;
  std::vector<std::uint32_t> kept_;     // full length: the transform positions kept (M)
  std::vector<std::uint32_t> partner_;  // full length: position of the conjugate point of kept_[k]
};

}  // namespace torusgate::fpga_fft
