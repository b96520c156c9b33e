// The fixed-point negacyclic multiplier engine: fold, twist, FFT, AddMul, inverse, untwist,
// unfold and rounding to Torus32, every step in the datapath's integer arithmetic.
#include "torusgate/fpga_fft/negacyclic.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <numbers>

#include "torusgate/core/error.hpp"

namespace torusgate::fpga_fft {
namespace {

FixedFftConfig sized(const NegacyclicConfig& c, std::uint32_t polynomial_size) {
  FixedFftConfig f = c.fft;
  const std::uint32_t M = c.full_length ? polynomial_size : polynomial_size / 2;
  // The datapath's size limit, said in terms of the N the caller passed (not the derived M).
  constexpr std::uint32_t max_points = 65536;
  EXPECTS(M <= max_points,
          "FixedPointNegacyclicFft: polynomial_size N=" + std::to_string(polynomial_size) +
              " but expected at most " +
              std::to_string(c.full_length ? max_points : 2 * max_points) + " (the datapath has " +
              (c.full_length ? "M=N" : "M=N/2") + " points, at most " +
              std::to_string(max_points) + ")");
  EXPECTS(f.size == 0 || f.size == M,
          "FixedPointNegacyclicFft: the datapath has size=" + std::to_string(f.size) +
              " points but N=" + std::to_string(polynomial_size) + " needs " +
              (c.full_length ? "N=" : "M=N/2=") + std::to_string(M) + " (or 0)");
  EXPECTS(!(c.full_length && f.merged_twist),
          "FixedPointNegacyclicFft: full_length supports the separate twist only");
  f.size = M;
  return f;
}

// a*b + c*d and a*b - c*d of 64-bit words modulo 2^128: each product fits 127 bits, but at
// full scale (W = 64, every word -2^63) the sum is 2^127, one past the signed 128-bit range.
// Wrapped, it still rounds and overflows the W-bit register exactly as the true sum does (a
// difference of 2^128 shifted right by F <= 62 bits is a multiple of 2^66), and the arithmetic
// is defined.
Wide products_sum(std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t d, bool subtract) {
  using Unsigned = unsigned __int128;
  const auto ab = static_cast<Unsigned>(Wide{a} * b), cd = static_cast<Unsigned>(Wide{c} * d);
  return static_cast<Wide>(subtract ? ab - cd : ab + cd);
}

std::vector<std::string> site_names(std::size_t stages) {
  std::vector<std::string> names{"input", "twist"};
  for (std::size_t s = 0; s < stages; ++s) names.push_back("forward stage " + std::to_string(s));
  names.push_back("multiply-accumulate");
  for (std::size_t s = 0; s < stages; ++s) names.push_back("inverse stage " + std::to_string(s));
  names.push_back("untwist");
  return names;
}

}  // namespace

FixedPointNegacyclicFft::FixedPointNegacyclicFft(std::uint32_t polynomial_size,
                                                 const NegacyclicConfig& config)
    : NegacyclicFft(polynomial_size), config_(config), fft_(sized(config, polynomial_size)),
      overflows_(std::make_unique<OverflowCounters>(site_names(fft_.stages()))) {
  config_.fft = fft_.config();
  if (config_.full_length) {
    // Output p evaluates the twisted polynomial at the root of X^N - 1 of angle point_angle(p)
    // (units of 2 pi / (4N)), that is the polynomial itself at angle point_angle(p) + 2 (zeta):
    // a root of X^N + 1, never real, whose conjugate has angle 4N minus it. Keep those in the
    // upper half plane (0 < angle < 2N) and remember where each one's conjugate lands.
    const std::uint32_t N = this->polynomial_size(), full = 4 * N;
    std::vector<std::uint32_t> position_of(full, 0);
    auto root = [&](std::size_t p) { return (fft_.point_angle(p) + 2) % full; };
    for (std::size_t p = 0; p < N; ++p) position_of[root(p)] = static_cast<std::uint32_t>(p);
    for (std::size_t p = 0; p < N; ++p) {
      const std::uint32_t a = root(p);
      if (a < 2 * N) {
        kept_.push_back(static_cast<std::uint32_t>(p));
        partner_.push_back(position_of[full - a]);
      }
    }
  }
}

std::string FixedPointNegacyclicFft::name() const {
  return "fixed(" + fft_.config().describe() + (config_.full_length ? " full-length" : "") +
         (config_.key_in_double ? " key-in-double" : "") + ")";
}

void FixedPointNegacyclicFft::twist(std::vector<CWord>& words, bool inverse, std::size_t site) const {
  // zeta^j = exp(i pi j / N): angle j in units of 2 pi / (4M) with M = N/2, 2j with M = N.
  const FixedFftConfig& c = fft_.config();
  const std::int64_t step = config_.full_length ? 2 : 1;
  const unsigned tf = c.twiddle_frac_bits();
  std::uint64_t count = 0;
  for (std::size_t j = 1; j < words.size(); ++j) {
    const std::int64_t angle = step * static_cast<std::int64_t>(j);
    const CWord w = fft_.twiddle(inverse ? -angle : angle);
    const CWord x = words[j];
    words[j] = {to_register(round_shift(Wide{x.re} * w.re - Wide{x.im} * w.im, tf, c.rounding),
                            c.word_bits, count),
                to_register(round_shift(Wide{x.re} * w.im + Wide{x.im} * w.re, tf, c.rounding),
                            c.word_bits, count)};
  }
  overflows_->add(site, count);
}

void FixedPointNegacyclicFft::keep_upper_half(const std::vector<CWord>& values, double* spectrum) const {
  std::vector<CWord> kept(kept_.size());
  for (std::size_t k = 0; k < kept_.size(); ++k) kept[k] = values[kept_[k]];
  store(kept, spectrum);
}

std::vector<CWord> FixedPointNegacyclicFft::restore_conjugates(const double* spectrum) const {
  const std::vector<CWord> kept = load(spectrum, kept_.size());
  std::vector<CWord> values(fft_.size());
  const unsigned W = fft_.config().word_bits;
  for (std::size_t k = 0; k < kept_.size(); ++k) {
    values[kept_[k]] = kept[k];
    // -(-2^(W-1)) wraps to itself, as a W-bit negation does.
    values[partner_[k]] = {kept[k].re, wrap(-Wide{kept[k].im}, W)};
  }
  return values;
}

void FixedPointNegacyclicFft::store(const std::vector<CWord>& words, double* spectrum) {
  const std::size_t M = words.size();
  for (std::size_t j = 0; j < M; ++j) {
    std::memcpy(spectrum + j, &words[j].re, sizeof(double));
    std::memcpy(spectrum + M + j, &words[j].im, sizeof(double));
  }
}

std::vector<CWord> FixedPointNegacyclicFft::load(const double* spectrum, std::size_t points) {
  std::vector<CWord> words(points);
  for (std::size_t j = 0; j < points; ++j) {
    std::memcpy(&words[j].re, spectrum + j, sizeof(double));
    std::memcpy(&words[j].im, spectrum + points + j, sizeof(double));
  }
  return words;
}

void FixedPointNegacyclicFft::forward_words(std::vector<CWord>& words, double* spectrum) const {
  const FixedFftConfig& c = fft_.config();
  if (!c.merged_twist) twist(words, false, twist_site);
  thread_local std::vector<std::uint64_t> stage_counts;
  stage_counts.assign(fft_.stages(), 0);
  fft_.forward(words, words, stage_counts);
  for (std::size_t s = 0; s < fft_.stages(); ++s) overflows_->add(2 + s, stage_counts[s]);
  if (config_.full_length) {
    keep_upper_half(words, spectrum);
  } else {
    store(words, spectrum);
  }
}

void FixedPointNegacyclicFft::forward_integers(const std::int32_t* poly, double* spectrum) const {
  const FixedFftConfig& c = fft_.config();
  const std::size_t M = c.size;
  thread_local std::vector<CWord> words;
  words.resize(M);
  std::uint64_t count = 0;
  for (std::size_t j = 0; j < M; ++j) {
    // Fold (a_j + i a_(j+M)), or the real coefficient alone at full length.
    words[j] = {to_register(Wide{poly[j]} << c.frac_bits, c.word_bits, count),
                config_.full_length ? 0 : to_register(Wide{poly[j + M]} << c.frac_bits, c.word_bits, count)};
  }
  overflows_->add(input_site, count);
  forward_words(words, spectrum);
}

void FixedPointNegacyclicFft::forward_torus(const Torus32* poly, double* spectrum) const {
  const FixedFftConfig& c = fft_.config();
  const std::size_t M = c.size;
  thread_local std::vector<CWord> words;
  words.resize(M);
  std::uint64_t count = 0;
  if (config_.key_in_double) {
    // The host's double-precision spectrum of the folded, twisted polynomial, in this
    // datapath's point order, rounded to nearest at F fractional bits.
    std::vector<std::complex<double>> folded(M), spectrum_d(M);
    const double pi = std::numbers::pi;
    const double N = static_cast<double>(polynomial_size());
    for (std::size_t j = 0; j < M; ++j) {
      std::complex<double> v(torus_to_double(poly[j]),
                             config_.full_length ? 0.0 : torus_to_double(poly[j + M]));
      if (!c.merged_twist) v *= std::polar(1.0, pi * static_cast<double>(j) / N);
      folded[j] = v;
    }
    fft_.forward_double(folded, spectrum_d);
    // Rounded to nearest (ties away from zero) in long double, where v * 2^F is exact; a value
    // outside the W-bit word is counted and wrapped as to_register() does, reduced modulo 2^W
    // first (exactly) so that the conversion to an integer stays defined for any magnitude.
    const long double scale = std::ldexp(1.0L, static_cast<int>(c.frac_bits));
    const long double half = std::ldexp(1.0L, static_cast<int>(c.word_bits) - 1);
    const long double modulus = 2 * half;
    auto to_word = [&](double v) -> std::int64_t {
      const long double x = std::round(static_cast<long double>(v) * scale);
      if (!std::isfinite(x)) {
        ++count;
        return 0;
      }
      if (x < -half || x >= half) ++count;
      return wrap(static_cast<Wide>(std::fmod(x, modulus)), c.word_bits);
    };
    for (std::size_t j = 0; j < M; ++j) {
      words[j] = {to_word(spectrum_d[j].real()), to_word(spectrum_d[j].imag())};
    }
    overflows_->add(input_site, count);
    if (config_.full_length) {
      keep_upper_half(words, spectrum);
    } else {
      store(words, spectrum);
    }
    return;
  }
  // t / 2^32 at F fractional bits.
  auto scale = [&](Torus32 t) -> Wide {
    const Wide v = static_cast<std::int32_t>(t);
    return c.frac_bits >= 32 ? v << (c.frac_bits - 32) : round_shift(v, 32 - c.frac_bits, c.rounding);
  };
  for (std::size_t j = 0; j < M; ++j) {
    words[j] = {to_register(scale(poly[j]), c.word_bits, count),
                config_.full_length ? 0 : to_register(scale(poly[j + M]), c.word_bits, count)};
  }
  overflows_->add(input_site, count);
  forward_words(words, spectrum);
}

void FixedPointNegacyclicFft::forward_digits(const Torus32* poly, const GadgetDecomposition& gadget,
                                             double* spectra, std::size_t stride) const {
  const std::size_t N = polynomial_size();
  thread_local std::vector<std::int32_t> digits;
  digits.resize(N);
  for (std::uint32_t p = 1; p <= gadget.level_count(); ++p) {
    for (std::size_t j = 0; j < N; ++j) digits[j] = gadget.digit(poly[j], p);
    forward_integers(digits.data(), spectra + (p - 1) * stride);
  }
}

void FixedPointNegacyclicFft::multiply_add_spectra(const double* a, const double* b,
                                                   double* acc) const {
  const FixedFftConfig& c = fft_.config();
  const std::size_t M = polynomial_size() / 2;  // spectrum points (the kept half at full length)
  const unsigned W = c.word_bits, F = c.frac_bits;
  std::uint64_t count = 0;
  for (std::size_t j = 0; j < M; ++j) {
    std::int64_t ar, ai, br, bi, cr, ci;
    std::memcpy(&ar, a + j, 8);
    std::memcpy(&ai, a + M + j, 8);
    std::memcpy(&br, b + j, 8);
    std::memcpy(&bi, b + M + j, 8);
    std::memcpy(&cr, acc + j, 8);
    std::memcpy(&ci, acc + M + j, 8);
    // AddMul: the product rounded by F bits into a W-bit register, then accumulated.
    const std::int64_t pr =
        to_register(round_shift(products_sum(ar, br, ai, bi, true), F, c.rounding), W, count);
    const std::int64_t pi =
        to_register(round_shift(products_sum(ar, bi, ai, br, false), F, c.rounding), W, count);
    cr = to_register(Wide{cr} + pr, W, count);
    ci = to_register(Wide{ci} + pi, W, count);
    std::memcpy(acc + j, &cr, 8);
    std::memcpy(acc + M + j, &ci, 8);
  }
  overflows_->add(mac_site(), count);
}

void FixedPointNegacyclicFft::inverse_to_torus(const double* spectrum, Torus32* poly,
                                               bool add) const {
  const FixedFftConfig& c = fft_.config();
  const std::size_t S = fft_.stages(), half = polynomial_size() / 2;
  thread_local std::vector<CWord> words;
  words = config_.full_length ? restore_conjugates(spectrum) : load(spectrum, half);
  thread_local std::vector<std::uint64_t> stage_counts;
  stage_counts.assign(S, 0);
  fft_.inverse(words, words, stage_counts);
  for (std::size_t s = 0; s < S; ++s) overflows_->add(3 + S + s, stage_counts[s]);
  if (!c.merged_twist) twist(words, true, untwist_site());
  // x * 2^32 modulo 2^32.
  auto to_torus = [&](std::int64_t x) -> Torus32 {
    const Wide v = c.frac_bits <= 32 ? Wide{x} << (32 - c.frac_bits)
                                     : round_shift(x, c.frac_bits - 32, c.rounding);
    return static_cast<Torus32>(static_cast<std::uint64_t>(v));
  };
  const std::size_t N = polynomial_size();
  for (std::size_t j = 0; j < N; ++j) {
    // Unfold: a_j = Re, a_(j+M) = Im; at full length the real parts are the coefficients.
    const Torus32 v = config_.full_length ? to_torus(words[j].re)
                      : j < half          ? to_torus(words[j].re)
                                          : to_torus(words[j - half].im);
    poly[j] = add ? poly[j] + v : v;
  }
}

}  // namespace torusgate::fpga_fft
