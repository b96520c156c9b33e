// The bit-accurate fixed-point FFT model: configuration checks, quantised twiddles, the
// radix-r stages (forward and inverse), the double-precision mirror and the error bound.
#include "torusgate/fpga_fft/fixed_fft.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <numbers>
#include <sstream>

#include "torusgate/core/error.hpp"

namespace torusgate::fpga_fft {
namespace {

std::string field(const char* name, std::uint64_t value) {
  return std::string("FixedFftConfig: ") + name + "=" + std::to_string(value);
}

std::string number_text(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

void check_input_norm(const char* fn, double input_norm) {
  EXPECTS(std::isfinite(input_norm) && input_norm >= 0,
          std::string("FixedFft::") + fn + ": input_norm=" + number_text(input_norm) +
              " but expected a finite L2 norm >= 0");
}

}  // namespace

std::string to_string(Direction d) { return d == Direction::Forward ? "forward" : "inverse"; }

std::uint32_t FixedFftConfig::twiddle_width() const {
  // In 64 bits: frac_bits + 2 must not wrap for a (refused) frac_bits near 2^32.
  return twiddle_bits != 0 ? twiddle_bits
                           : static_cast<std::uint32_t>(
                                 std::clamp<std::uint64_t>(std::uint64_t{frac_bits} + 2, 4, 62));
}

std::uint32_t FixedFftConfig::stages() const {
  const unsigned lm = static_cast<unsigned>(std::countr_zero(size));
  const unsigned lr = static_cast<unsigned>(std::countr_zero(radix));
  return lr == 0 ? 0 : lm / lr;
}

void FixedFftConfig::validate() const {
  EXPECTS(size >= 2 && size <= 65536 && std::has_single_bit(size),
          field("size", size) + " but expected a power of two in [2, 65536]");
  const unsigned lm = static_cast<unsigned>(std::countr_zero(size));
  EXPECTS(radix >= 2 && std::has_single_bit(radix) && radix <= size,
          field("radix", radix) + " but expected a power of two in [2, size=" +
              std::to_string(size) + "]");
  const unsigned lr = static_cast<unsigned>(std::countr_zero(radix));
  if (lm % lr != 0) {
    std::string allowed;
    for (unsigned j = 1; j <= lm; ++j) {
      if (lm % j == 0) allowed += (allowed.empty() ? "" : ", ") + std::to_string(1u << j);
    }
    throw InvalidArgument(field("radix", radix) + " does not divide a " + std::to_string(size) +
                          "-point FFT into equal stages (log2 radix must divide log2 size=" +
                          std::to_string(lm) + "); allowed radices: " + allowed);
  }
  EXPECTS(word_bits >= 8 && word_bits <= 64,
          field("word_bits", word_bits) + " but expected 8..64");
  // word_bits >= 8 here, so word_bits - 2 does not wrap (frac_bits + 2 could).
  EXPECTS(frac_bits <= word_bits - 2, field("frac_bits", frac_bits) +
                                          " but expected at most word_bits - 2 = " +
                                          std::to_string(word_bits - 2));
  const std::uint32_t t = twiddle_width();
  EXPECTS(t >= 4 && t <= 62, field("twiddle_bits", t) + " but expected 4..62");
  // The butterfly's exact sum of r products of a W-bit word (< 2^(W-1)) by a twiddle
  // (<= 2^(T-2)), 2 per complex component, plus the rounding constant, must fit the signed
  // 128-bit accumulator: W + T - 2 + log2 r < 127.
  EXPECTS(word_bits + t + lr <= 127,
          "FixedFftConfig: word_bits + twiddle_bits + log2(radix) = " +
              std::to_string(word_bits + t + lr) +
              " but the model's 128-bit accumulator allows at most 127");
}

std::string FixedFftConfig::describe() const {
  return "M=" + std::to_string(size) + " r=" + std::to_string(radix) +
         " W=" + std::to_string(word_bits) + " F=" + std::to_string(frac_bits) +
         " T=" + std::to_string(twiddle_width()) + " " + to_string(rounding) + " " +
         (merged_twist ? "merged-twist" : "separate-twist");
}

FixedFft::FixedFft(const FixedFftConfig& config) : config_(config) {
  config_.validate();
  const std::size_t M = config_.size, r = config_.radix;
  stages_ = config_.stages();
  log2_radix_ = static_cast<unsigned>(std::countr_zero(config_.radix));
  tf_ = config_.twiddle_frac_bits();

  // Twiddles: first octant from long double, the rest by exact symmetries, so that +-1 and +-i
  // are exact and twiddle(-a) == conj(twiddle(a)) bit for bit.
  const long double scale = std::ldexp(1.0L, static_cast<int>(tf_));
  auto quantise = [&](long double v) { return static_cast<std::int64_t>(std::llroundl(v * scale)); };
  std::vector<CWord> octant(M / 2 + 1);  // exp(i * (pi/2) * k / M) for k = 0..M/2
  for (std::size_t k = 0; k <= M / 2; ++k) {
    const long double theta = std::numbers::pi_v<long double> / 2 * static_cast<long double>(k) /
                              static_cast<long double>(M);
    octant[k] = {quantise(std::cos(theta)), quantise(std::sin(theta))};
  }
  octant[0] = {quantise(1.0L), 0};
  if (M >= 2) {
    const std::int64_t h = quantise(std::sqrt(0.5L));
    octant[M / 2] = {h, h};
  }
  twiddles_.resize(4 * M);
  for (std::size_t a = 0; a < 4 * M; ++a) {
    const std::size_t q = a / M, k = a % M;
    const CWord base = k <= M / 2 ? octant[k] : CWord{octant[M - k].im, octant[M - k].re};
    switch (q) {
      case 0: twiddles_[a] = base; break;
      case 1: twiddles_[a] = {-base.im, base.re}; break;
      case 2: twiddles_[a] = {-base.re, -base.im}; break;
      default: twiddles_[a] = {base.im, -base.re}; break;
    }
  }

  // Block roots: c = 1 (or i: angle M) at the top; block b of stage s has root angle a_b, its
  // r-th root rho_b has angle a_b / r (exact: r^(s+1) divides M), and child t has angle
  // a_b / r - t * 4M / r.
  std::vector<std::int64_t> roots{config_.merged_twist ? static_cast<std::int64_t>(M) : 0};
  rho_angle_.resize(stages_);
  const auto quarter_turns = static_cast<std::int64_t>(4 * M / r);
  for (std::size_t s = 0; s < stages_; ++s) {
    std::vector<std::int64_t> next;
    next.reserve(roots.size() * r);
    for (const std::int64_t a : roots) {
      const std::int64_t rho = a / static_cast<std::int64_t>(r);
      rho_angle_[s].push_back(rho);
      for (std::size_t t = 0; t < r; ++t) next.push_back(rho - static_cast<std::int64_t>(t) * quarter_turns);
    }
    roots = std::move(next);
  }
  point_angle_.resize(M);
  const auto full = static_cast<std::int64_t>(4 * M);
  for (std::size_t p = 0; p < M; ++p) {
    point_angle_[p] = static_cast<std::uint32_t>(((roots[p] % full) + full) % full);
  }
}

CWord FixedFft::twiddle(std::int64_t angle) const {
  const auto full = static_cast<std::int64_t>(twiddles_.size());
  return twiddles_[static_cast<std::size_t>(((angle % full) + full) % full)];
}

std::uint32_t FixedFft::point_angle(std::size_t p) const {
  EXPECTS(p < point_angle_.size(), "FixedFft::point_angle: p=" + std::to_string(p) +
                                       " but the transform has " +
                                       std::to_string(point_angle_.size()) + " points");
  return point_angle_[p];
}

void FixedFft::check_stage(const char* fn, std::size_t stage) const {
  EXPECTS(stage < stages_, std::string("FixedFft::") + fn + ": stage=" + std::to_string(stage) +
                               " but the transform has stages 0.." +
                               std::to_string(stages_ - 1));
}

void FixedFft::check_block(const char* fn, std::size_t stage, std::size_t block) const {
  check_stage(fn, stage);
  const std::size_t blocks = rho_angle_[stage].size();  // r^stage
  EXPECTS(block < blocks, std::string("FixedFft::") + fn + ": block=" + std::to_string(block) +
                              " but stage " + std::to_string(stage) + " has blocks 0.." +
                              std::to_string(blocks - 1));
}

std::int64_t FixedFft::rho_angle(std::size_t stage, std::size_t block) const {
  check_block("rho_angle", stage, block);
  return rho_angle_[stage][block];
}

std::size_t FixedFft::block_length(std::size_t stage) const {
  check_stage("block_length", stage);
  std::size_t L = config_.size;
  for (std::size_t s = 0; s < stage; ++s) L /= config_.radix;
  return L;
}

bool FixedFft::stage_has_multiplier(std::size_t stage) const {
  check_stage("stage_has_multiplier", stage);
  const auto full = static_cast<std::int64_t>(4 * config_.size);
  for (const std::int64_t a : rho_angle_[stage]) {
    if (a % full != 0) return true;
  }
  return false;
}

CWord FixedFft::multiply(const CWord& x, const CWord& w, std::uint64_t& overflows) const {
  const Wide re = Wide{x.re} * w.re - Wide{x.im} * w.im;
  const Wide im = Wide{x.re} * w.im + Wide{x.im} * w.re;
  const unsigned W = config_.word_bits;
  return {to_register(round_shift(re, tf_, config_.rounding), W, overflows),
          to_register(round_shift(im, tf_, config_.rounding), W, overflows)};
}

void FixedFft::forward_butterfly(std::size_t stage, std::size_t block, const CWord* in, CWord* out,
                                 std::uint64_t& overflows) const {
  check_block("forward_butterfly", stage, block);
  forward_butterfly_unchecked(stage, block, in, out, overflows);
}

void FixedFft::inverse_butterfly(std::size_t stage, std::size_t block, const CWord* in, CWord* out,
                                 std::uint64_t& overflows) const {
  check_block("inverse_butterfly", stage, block);
  inverse_butterfly_unchecked(stage, block, in, out, overflows);
}

void FixedFft::forward_butterfly_unchecked(std::size_t stage, std::size_t block, const CWord* in,
                                           CWord* out, std::uint64_t& overflows) const {
  const std::size_t r = config_.radix, M = config_.size;
  const unsigned W = config_.word_bits;
  const std::int64_t rho = rho_angle_[stage][block];
  const bool wire = rho % static_cast<std::int64_t>(4 * M) == 0;
  thread_local std::vector<CWord> u;
  u.resize(r);
  for (std::size_t s = 0; s < r; ++s) {
    u[s] = (s == 0 || wire) ? in[s] : multiply(in[s], twiddle(rho * static_cast<std::int64_t>(s)), overflows);
  }
  if (r == 2) {
    out[0] = {to_register(Wide{u[0].re} + u[1].re, W, overflows),
              to_register(Wide{u[0].im} + u[1].im, W, overflows)};
    out[1] = {to_register(Wide{u[0].re} - u[1].re, W, overflows),
              to_register(Wide{u[0].im} - u[1].im, W, overflows)};
    return;
  }
  const auto step = static_cast<std::int64_t>(4 * M / r);  // angle of w = exp(-2 pi i / r)
  for (std::size_t t = 0; t < r; ++t) {
    Wide re = 0, im = 0;
    for (std::size_t s = 0; s < r; ++s) {
      const CWord w = twiddle(-step * static_cast<std::int64_t>((t * s) % r));
      re += Wide{u[s].re} * w.re - Wide{u[s].im} * w.im;
      im += Wide{u[s].re} * w.im + Wide{u[s].im} * w.re;
    }
    out[t] = {to_register(round_shift(re, tf_, config_.rounding), W, overflows),
              to_register(round_shift(im, tf_, config_.rounding), W, overflows)};
  }
}

void FixedFft::inverse_butterfly_unchecked(std::size_t stage, std::size_t block, const CWord* in,
                                           CWord* out, std::uint64_t& overflows) const {
  const std::size_t r = config_.radix, M = config_.size;
  const unsigned W = config_.word_bits;
  thread_local std::vector<CWord> v;
  v.resize(r);
  if (r == 2) {
    v[0] = {to_register(round_shift(Wide{in[0].re} + in[1].re, 1, config_.rounding), W, overflows),
            to_register(round_shift(Wide{in[0].im} + in[1].im, 1, config_.rounding), W, overflows)};
    v[1] = {to_register(round_shift(Wide{in[0].re} - in[1].re, 1, config_.rounding), W, overflows),
            to_register(round_shift(Wide{in[0].im} - in[1].im, 1, config_.rounding), W, overflows)};
  } else {
    const auto step = static_cast<std::int64_t>(4 * M / r);
    for (std::size_t s = 0; s < r; ++s) {
      Wide re = 0, im = 0;
      for (std::size_t t = 0; t < r; ++t) {
        const CWord w = twiddle(step * static_cast<std::int64_t>((t * s) % r));  // conj
        re += Wide{in[t].re} * w.re - Wide{in[t].im} * w.im;
        im += Wide{in[t].re} * w.im + Wide{in[t].im} * w.re;
      }
      v[s] = {to_register(round_shift(re, tf_ + log2_radix_, config_.rounding), W, overflows),
              to_register(round_shift(im, tf_ + log2_radix_, config_.rounding), W, overflows)};
    }
  }
  const std::int64_t rho = rho_angle_[stage][block];
  const bool wire = rho % static_cast<std::int64_t>(4 * M) == 0;
  for (std::size_t s = 0; s < r; ++s) {
    out[s] = (s == 0 || wire) ? v[s]
                              : multiply(v[s], twiddle(-rho * static_cast<std::int64_t>(s)), overflows);
  }
}

namespace {

void check_transform_args(const FixedFftConfig& c, std::size_t stages, std::span<const CWord> in,
                          std::span<CWord> out, std::span<std::uint64_t> overflows,
                          const char* fn) {
  EXPECTS(in.size() == c.size && out.size() == c.size,
          std::string("FixedFft::") + fn + ": input has " + std::to_string(in.size()) +
              " words and output " + std::to_string(out.size()) + " but the transform has M=" +
              std::to_string(c.size));
  EXPECTS(overflows.empty() || overflows.size() == stages,
          std::string("FixedFft::") + fn + ": overflow counts have " +
              std::to_string(overflows.size()) + " entries but expected 0 or S=" +
              std::to_string(stages));
  for (std::size_t j = 0; j < in.size(); ++j) {
    EXPECTS(fits(in[j].re, c.word_bits) && fits(in[j].im, c.word_bits),
            std::string("FixedFft::") + fn + ": input word " + std::to_string(j) +
                " does not fit a signed " + std::to_string(c.word_bits) + "-bit word");
  }
}

}  // namespace

void FixedFft::run_stage(std::size_t s, Direction direction, CWord* data,
                         std::uint64_t& count) const {
  const std::size_t M = config_.size, r = config_.radix, L = block_length(s), sub = L / r;
  const unsigned W = config_.word_bits;
  const Rounding mode = config_.rounding;
  const bool forward = direction == Direction::Forward;
  thread_local std::vector<CWord> group;
  group.resize(r);
  for (std::size_t b = 0; b < M / L; ++b) {
    if (r == 2) {
      // The radix-2 butterflies of forward_butterfly / inverse_butterfly, inlined (the same
      // operations in the same order).
      const std::int64_t rho = rho_angle_[s][b];
      const bool wire = rho % static_cast<std::int64_t>(4 * M) == 0;
      const CWord w = twiddle(forward ? rho : -rho);
      CWord* x0 = data + b * L;
      CWord* x1 = x0 + sub;
      for (std::size_t j = 0; j < sub; ++j) {
        if (forward) {
          const CWord u1 = wire ? x1[j] : multiply(x1[j], w, count);
          const CWord u0 = x0[j];
          x0[j] = {to_register(Wide{u0.re} + u1.re, W, count), to_register(Wide{u0.im} + u1.im, W, count)};
          x1[j] = {to_register(Wide{u0.re} - u1.re, W, count), to_register(Wide{u0.im} - u1.im, W, count)};
        } else {
          const CWord y0 = x0[j], y1 = x1[j];
          x0[j] = {to_register(round_shift(Wide{y0.re} + y1.re, 1, mode), W, count),
                   to_register(round_shift(Wide{y0.im} + y1.im, 1, mode), W, count)};
          const CWord v1 = {to_register(round_shift(Wide{y0.re} - y1.re, 1, mode), W, count),
                            to_register(round_shift(Wide{y0.im} - y1.im, 1, mode), W, count)};
          x1[j] = wire ? v1 : multiply(v1, w, count);
        }
      }
      continue;
    }
    for (std::size_t j = 0; j < sub; ++j) {
      CWord* base = data + b * L + j;
      for (std::size_t t = 0; t < r; ++t) group[t] = base[t * sub];
      if (forward) {
        forward_butterfly_unchecked(s, b, group.data(), group.data(), count);
      } else {
        inverse_butterfly_unchecked(s, b, group.data(), group.data(), count);
      }
      for (std::size_t t = 0; t < r; ++t) base[t * sub] = group[t];
    }
  }
}

void FixedFft::transform(Direction direction, std::span<const CWord> in, std::span<CWord> out,
                         std::span<std::uint64_t> overflows) const {
  check_transform_args(config_, stages_, in, out, overflows, to_string(direction).c_str());
  // Spans that overlap in part: std::copy may not start inside its source, so an out that
  // starts inside in is copied from the back.
  const std::less<const CWord*> before;
  if (before(in.data(), out.data()) && before(out.data(), in.data() + in.size())) {
    std::copy_backward(in.begin(), in.end(), out.end());
  } else if (out.data() != in.data()) {
    std::copy(in.begin(), in.end(), out.begin());
  }
  for (std::size_t k = 0; k < stages_; ++k) {
    const std::size_t s = direction == Direction::Forward ? k : stages_ - 1 - k;
    std::uint64_t count = 0;
    run_stage(s, direction, out.data(), count);
    if (!overflows.empty()) overflows[s] += count;
  }
}

void FixedFft::forward(std::span<const CWord> in, std::span<CWord> out,
                       std::span<std::uint64_t> overflows) const {
  transform(Direction::Forward, in, out, overflows);
}

void FixedFft::inverse(std::span<const CWord> in, std::span<CWord> out,
                       std::span<std::uint64_t> overflows) const {
  transform(Direction::Inverse, in, out, overflows);
}

void FixedFft::forward_double(std::span<const std::complex<double>> in,
                              std::span<std::complex<double>> out) const {
  const std::size_t M = config_.size, r = config_.radix;
  EXPECTS(in.size() == M && out.size() == M,
          "FixedFft::forward_double: input has " + std::to_string(in.size()) + " values and output " +
              std::to_string(out.size()) + " but the transform has M=" + std::to_string(M));
  using C = std::complex<long double>;
  const long double turn = 2 * std::numbers::pi_v<long double> / static_cast<long double>(4 * M);
  auto root = [&](std::int64_t a) { return std::polar(1.0L, turn * static_cast<long double>(a)); };
  std::vector<C> x(in.begin(), in.end()), u(r);
  const auto step = static_cast<std::int64_t>(4 * M / r);
  for (std::size_t s = 0; s < stages_; ++s) {
    const std::size_t L = block_length(s), sub = L / r;
    for (std::size_t b = 0; b < M / L; ++b) {
      const std::int64_t rho = rho_angle_[s][b];
      for (std::size_t j = 0; j < sub; ++j) {
        C* base = x.data() + b * L + j;
        for (std::size_t t = 0; t < r; ++t) u[t] = base[t * sub] * root(rho * static_cast<std::int64_t>(t));
        for (std::size_t t = 0; t < r; ++t) {
          C y = 0;
          for (std::size_t q = 0; q < r; ++q) y += u[q] * root(-step * static_cast<std::int64_t>((t * q) % r));
          base[t * sub] = y;
        }
      }
    }
  }
  for (std::size_t p = 0; p < M; ++p) out[p] = std::complex<double>(x[p]);
}

// The recurrences of docs/fpga_fft.md ("Error bound"), in units of the data LSB (2^-F):
// e = the per-component rounding error (1/2 to nearest, 1 truncating), eps = sqrt(2) times the
// per-component twiddle error, V = the L2 norm of the exact values, E = the error bound.
double FixedFft::forward_error_bound(double input_norm) const {
  check_input_norm("forward_error_bound", input_norm);
  const double M = config_.size, r = config_.radix;
  const double e = config_.rounding == Rounding::Nearest ? 0.5 : 1.0;
  const double eps = std::sqrt(2.0) * (std::ldexp(1.0, -static_cast<int>(tf_) - 1) + 0x1p-60);
  const double round_all = std::sqrt(2 * M) * e;  // one rounding of each of the M words
  double V = input_norm, E = 0;
  for (std::size_t s = 0; s < stages_; ++s) {
    double E1 = E;
    if (stage_has_multiplier(s)) E1 = E * (1 + eps) + eps * V + round_all;
    double E2 = std::sqrt(r) * E1;
    if (r >= 8) E2 += r * eps * (V + E1) + round_all;
    E = E2;
    V *= std::sqrt(r);
  }
  return E;
}

double FixedFft::inverse_error_bound(double input_norm) const {
  check_input_norm("inverse_error_bound", input_norm);
  const double M = config_.size, r = config_.radix;
  const double e = config_.rounding == Rounding::Nearest ? 0.5 : 1.0;
  const double eps = std::sqrt(2.0) * (std::ldexp(1.0, -static_cast<int>(tf_) - 1) + 0x1p-60);
  const double round_all = std::sqrt(2 * M) * e;
  double V = input_norm, E = 0;
  for (std::size_t s = stages_; s-- > 0;) {
    double E1 = E / std::sqrt(r) + round_all;
    if (r >= 8) E1 += eps * (V + E);
    V /= std::sqrt(r);
    double E2 = E1;
    if (stage_has_multiplier(s)) E2 = E1 * (1 + eps) + eps * V + round_all;
    E = E2;
  }
  return E;
}

}  // namespace torusgate::fpga_fft
