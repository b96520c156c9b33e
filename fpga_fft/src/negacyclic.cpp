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
  EXPECTS(f.size == 0 || f.size == polynomial_size / 2,
          "FixedPointNegacyclicFft: the datapath has size=" + std::to_string(f.size) +
              " points but N=" + std::to_string(polynomial_size) + " needs M=N/2=" +
              std::to_string(polynomial_size / 2) + " (or 0)");
  f.size = polynomial_size / 2;
  return f;
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
}

std::string FixedPointNegacyclicFft::name() const {
  return "fixed(" + fft_.config().describe() + (config_.key_in_double ? " key-in-double" : "") +
         ")";
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
  const std::size_t M = c.size;
  if (!c.merged_twist) {
    // b_j = c_j * zeta^j, zeta = exp(i pi / N): angle j in units of 2 pi / (4M).
    std::uint64_t count = 0;
    const unsigned tf = c.twiddle_frac_bits();
    for (std::size_t j = 1; j < M; ++j) {
      const CWord w = fft_.twiddle(static_cast<std::int64_t>(j));
      const CWord x = words[j];
      words[j] = {to_register(round_shift(Wide{x.re} * w.re - Wide{x.im} * w.im, tf, c.rounding),
                              c.word_bits, count),
                  to_register(round_shift(Wide{x.re} * w.im + Wide{x.im} * w.re, tf, c.rounding),
                              c.word_bits, count)};
    }
    overflows_->add(twist_site, count);
  }
  thread_local std::vector<std::uint64_t> stage_counts;
  stage_counts.assign(fft_.stages(), 0);
  fft_.forward(words, words, stage_counts);
  for (std::size_t s = 0; s < fft_.stages(); ++s) overflows_->add(2 + s, stage_counts[s]);
  store(words, spectrum);
}

void FixedPointNegacyclicFft::forward_integers(const std::int32_t* poly, double* spectrum) const {
  const FixedFftConfig& c = fft_.config();
  const std::size_t M = c.size;
  thread_local std::vector<CWord> words;
  words.resize(M);
  std::uint64_t count = 0;
  for (std::size_t j = 0; j < M; ++j) {
    words[j] = {to_register(Wide{poly[j]} << c.frac_bits, c.word_bits, count),
                to_register(Wide{poly[j + M]} << c.frac_bits, c.word_bits, count)};
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
    for (std::size_t j = 0; j < M; ++j) {
      std::complex<double> v(torus_to_double(poly[j]), torus_to_double(poly[j + M]));
      if (!c.merged_twist) v *= std::polar(1.0, pi * static_cast<double>(j) / (2.0 * M));
      folded[j] = v;
    }
    fft_.forward_double(folded, spectrum_d);
    const double scale = std::ldexp(1.0, static_cast<int>(c.frac_bits));
    for (std::size_t j = 0; j < M; ++j) {
      words[j] = {to_register(static_cast<Wide>(std::llround(spectrum_d[j].real() * scale)),
                              c.word_bits, count),
                  to_register(static_cast<Wide>(std::llround(spectrum_d[j].imag() * scale)),
                              c.word_bits, count)};
    }
    overflows_->add(input_site, count);
    store(words, spectrum);
    return;
  }
  // t / 2^32 at F fractional bits.
  auto scale = [&](Torus32 t) -> Wide {
    const Wide v = static_cast<std::int32_t>(t);
    return c.frac_bits >= 32 ? v << (c.frac_bits - 32) : round_shift(v, 32 - c.frac_bits, c.rounding);
  };
  for (std::size_t j = 0; j < M; ++j) {
    words[j] = {to_register(scale(poly[j]), c.word_bits, count),
                to_register(scale(poly[j + M]), c.word_bits, count)};
  }
  overflows_->add(input_site, count);
  forward_words(words, spectrum);
}

void FixedPointNegacyclicFft::forward_digits(const Torus32* poly, const GadgetDecomposition& gadget,
                                             double* spectra) const {
  const std::size_t N = polynomial_size();
  thread_local std::vector<std::int32_t> digits;
  digits.resize(N);
  for (std::uint32_t p = 1; p <= gadget.level_count(); ++p) {
    for (std::size_t j = 0; j < N; ++j) digits[j] = gadget.digit(poly[j], p);
    forward_integers(digits.data(), spectra + (p - 1) * N);
  }
}

void FixedPointNegacyclicFft::multiply_add_spectra(const double* a, const double* b,
                                                   double* acc) const {
  const FixedFftConfig& c = fft_.config();
  const std::size_t M = c.size;
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
    const std::int64_t pr = to_register(round_shift(Wide{ar} * br - Wide{ai} * bi, F, c.rounding), W, count);
    const std::int64_t pi = to_register(round_shift(Wide{ar} * bi + Wide{ai} * br, F, c.rounding), W, count);
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
  const std::size_t M = c.size, S = fft_.stages();
  thread_local std::vector<CWord> words;
  words = load(spectrum, M);
  thread_local std::vector<std::uint64_t> stage_counts;
  stage_counts.assign(S, 0);
  fft_.inverse(words, words, stage_counts);
  for (std::size_t s = 0; s < S; ++s) overflows_->add(3 + S + s, stage_counts[s]);
  if (!c.merged_twist) {
    std::uint64_t count = 0;
    const unsigned tf = c.twiddle_frac_bits();
    for (std::size_t j = 1; j < M; ++j) {
      const CWord w = fft_.twiddle(-static_cast<std::int64_t>(j));  // zeta^-j
      const CWord x = words[j];
      words[j] = {to_register(round_shift(Wide{x.re} * w.re - Wide{x.im} * w.im, tf, c.rounding),
                              c.word_bits, count),
                  to_register(round_shift(Wide{x.re} * w.im + Wide{x.im} * w.re, tf, c.rounding),
                              c.word_bits, count)};
    }
    overflows_->add(untwist_site(), count);
  }
  // x * 2^32 modulo 2^32.
  auto to_torus = [&](std::int64_t x) -> Torus32 {
    const Wide v = c.frac_bits <= 32 ? Wide{x} << (32 - c.frac_bits)
                                     : round_shift(x, c.frac_bits - 32, c.rounding);
    return static_cast<Torus32>(static_cast<std::uint64_t>(v));
  };
  for (std::size_t j = 0; j < M; ++j) {
    const Torus32 lo = to_torus(words[j].re), hi = to_torus(words[j].im);
    if (add) {
      poly[j] += lo;
      poly[j + M] += hi;
    } else {
      poly[j] = lo;
      poly[j + M] = hi;
    }
  }
}

}  // namespace torusgate::fpga_fft
