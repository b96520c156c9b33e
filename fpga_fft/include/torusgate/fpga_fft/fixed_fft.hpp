// Bit-accurate functional model of a fixed-point complex FFT datapath of M points, radix
// r = 2^j (j dividing log2 M), W-bit words with F fractional bits, T-bit twiddles, a rounding
// mode at every multiplier and overflow detection; the twist of the negacyclic transform
// separate (points: the roots of X^M - 1) or merged (the roots of X^M - i). DESIGN.md
// section 8; docs/fpga_fft.md has the algorithm, the arithmetic and the error bound.
//
// The algorithm: the input is a polynomial x(X) = sum_j x_j X^j reduced modulo X^M - c
// (c = 1, or c = i with the twist merged). Stage s (s = 0..S-1, S = log_r M) splits each block
// of L = M / r^s coefficients, a polynomial modulo X^L - c_b, into r blocks modulo
// X^(L/r) - rho_b w^t (t < r, rho_b^r = c_b, w = exp(-2 pi i / r)):
//   u_s' = x[b L + s' L/r + j] * rho_b^s'                   (twiddle multiplier, rounded)
//   y_t  = sum_s' w^(t s') u_s'                             (radix-r butterfly)
//   x[b L + t L/r + j] = y_t                                 (same positions, in place)
// so output p is the input polynomial evaluated at root_p (point_angle()). The inverse runs
// the stages backwards: v_s' = (1/r) sum_t w^(-t s') y_t, then x = v_s' * conj(rho_b^s');
// the 1/r of every stage makes it the exact inverse (1/M in all) and keeps words bounded.
//
// Arithmetic (every step is an integer operation, so the model is bit-exact):
//   data word:   X with x = X * 2^-F, |X| < 2^(W-1); every result is wrapped to W bits
//                (two's complement) and an overflow is counted when it did not fit;
//   twiddle:     round(cos * 2^Tf), round(sin * 2^Tf), Tf = T - 2 fractional bits (+-1 exact);
//   multiplier:  the exact complex product of a word and a twiddle, rounded by Tf bits;
//                multiplications by 1 (s' = 0, or rho_b = 1) are wires, exact;
//   butterfly:   the exact sum of the r products by the quantised w^(t s'), rounded once by Tf
//                bits (exact for r = 2, 4, where w^(t s') is +-1 or +-i); the inverse also drops
//                j bits there (the 1/r), in the same rounding.
#pragma once

#include <complex>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "torusgate/fpga_fft/fixed_point.hpp"

namespace torusgate::fpga_fft {

struct FixedFftConfig {
  std::uint32_t size = 512;        // M: complex points, a power of two in [2, 65536]
  std::uint32_t radix = 2;         // r = 2^j, j >= 1 dividing log2 M (for M = 512: 2, 8, 512)
  std::uint32_t word_bits = 64;    // W: signed word width, 8..64
  std::uint32_t frac_bits = 30;    // F: fractional bits of data words, 0..W-2
  std::uint32_t twiddle_bits = 0;  // T: signed twiddle width (Tf = T-2 fractional bits),
                                   // 4..62; 0: F + 2 clamped to 4..62 (Tf = F: twiddles
                                   // as precise as the data)
  Rounding rounding = Rounding::Nearest;
  bool merged_twist = false;       // evaluate at the roots of X^M - i instead of X^M - 1

  // The effective twiddle width (resolves 0).
  std::uint32_t twiddle_width() const;
  std::uint32_t twiddle_frac_bits() const { return twiddle_width() - 2; }
  std::uint32_t stages() const;  // S = log_r M
  // InvalidArgument naming the field, its value and what is allowed.
  void validate() const;
  std::string describe() const;  // "M=512 r=2 W=64 F=30 T=32 nearest separate-twist"
};

// Overflow sites of a transform: one per stage of each direction.
enum class Direction { Forward, Inverse };
std::string to_string(Direction d);

class FixedFft {
 public:
  explicit FixedFft(const FixedFftConfig& config);

  const FixedFftConfig& config() const { return config_; }
  std::size_t size() const { return config_.size; }     // M
  std::size_t stages() const { return stages_; }        // S
  std::size_t radix() const { return config_.radix; }   // r

  // out[p] = x(root_p) for the input polynomial x (unscaled; words grow by up to r per stage).
  // in and out hold M words and may be the same span or overlap. overflows (optional) gets one
  // count per stage (S entries), added to what it holds.
  void forward(std::span<const CWord> in, std::span<CWord> out,
               std::span<std::uint64_t> overflows = {}) const;
  // The inverse of forward: coefficients from the values at the points, scaled by 1/r per stage.
  void inverse(std::span<const CWord> in, std::span<CWord> out,
               std::span<std::uint64_t> overflows = {}) const;

  // root_p = exp(2 pi i * point_angle(p) / (4M)): the point output p of forward evaluates at.
  std::uint32_t point_angle(std::size_t p) const;

  // The same algorithm with exact (unquantised) roots in double precision: the spectrum a host
  // would precompute in double, in this datapath's point order. Unscaled forward.
  void forward_double(std::span<const std::complex<double>> in,
                      std::span<std::complex<double>> out) const;

  // Upper bounds on the L2 norm of (computed - exact) over the M outputs, for an input of L2
  // norm `input_norm` (exactly representable words) and no overflow: the error analysis of
  // docs/fpga_fft.md (rounding of every multiplier and butterfly, twiddle quantisation).
  // InvalidArgument unless input_norm is finite and >= 0.
  double forward_error_bound(double input_norm) const;
  double inverse_error_bound(double input_norm) const;

  // ---- the pieces the streaming model shares (docs/fpga_fft.md) ----
  // Each takes a stage s < S and a block b < r^s; InvalidArgument naming the value and the
  // range otherwise.
  // Block length L of stage s (M / r^s) and its sub-block length L/r.
  std::size_t block_length(std::size_t stage) const;
  // True when stage s has a twiddle multiplier that is not a wire (some rho_b^s' != 1).
  bool stage_has_multiplier(std::size_t stage) const;
  // One radix-r butterfly of stage s, block b: in[s'] and out[t] are r words (in == out is
  // allowed); counts its overflows into *overflows.
  void forward_butterfly(std::size_t stage, std::size_t block, const CWord* in, CWord* out,
                         std::uint64_t& overflows) const;
  void inverse_butterfly(std::size_t stage, std::size_t block, const CWord* in, CWord* out,
                         std::uint64_t& overflows) const;
  // The quantised twiddle exp(2 pi i a / (4M)), a taken modulo 4M.
  CWord twiddle(std::int64_t angle) const;
  // Angle of rho_b^1 for block b of stage s (the multiplier of input s' is s' times it).
  std::int64_t rho_angle(std::size_t stage, std::size_t block) const;

 private:
  // InvalidArgument unless stage < S (and block < r^stage); `fn` names the caller.
  void check_stage(const char* fn, std::size_t stage) const;
  void check_block(const char* fn, std::size_t stage, std::size_t block) const;
  // The butterflies without the checks, for the transforms' loops.
  void forward_butterfly_unchecked(std::size_t stage, std::size_t block, const CWord* in,
                                   CWord* out, std::uint64_t& overflows) const;
  void inverse_butterfly_unchecked(std::size_t stage, std::size_t block, const CWord* in,
                                   CWord* out, std::uint64_t& overflows) const;
  CWord multiply(const CWord& x, const CWord& w, std::uint64_t& overflows) const;
  void transform(Direction direction, std::span<const CWord> in, std::span<CWord> out,
                 std::span<std::uint64_t> overflows) const;
  // Every butterfly of stage s on data (M words, in place).
  void run_stage(std::size_t s, Direction direction, CWord* data, std::uint64_t& count) const;

  FixedFftConfig config_;
  std::size_t stages_ = 0;
  unsigned log2_radix_ = 0;
  unsigned tf_ = 0;                                 // twiddle fractional bits
  std::vector<CWord> twiddles_;                     // 4M quantised roots of unity
  std::vector<std::vector<std::int64_t>> rho_angle_;  // [stage][block]
  std::vector<std::uint32_t> point_angle_;          // [p]
};

}  // namespace torusgate::fpga_fft
