// The bit-accurate fixed-point FFT model: configuration checks, twiddle tables, evaluation
// points, forward and inverse against an exact long-double reference within the documented
// error bound, the double-precision mirror, rounding and overflow counting.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <numbers>
#include <numeric>
#include <set>
#include <span>
#include <vector>

#include "test_support.hpp"
#include "torusgate/fpga_fft/fixed_fft.hpp"

using namespace torusgate;
using namespace torusgate::fpga_fft;
using torusgate::test::catch_seed;
using torusgate::test::seeded_rng;

namespace {

using CLD = std::complex<long double>;

std::complex<long double> root(const FixedFft& fft, std::size_t p) {
  const long double turn = 2 * std::numbers::pi_v<long double> / static_cast<long double>(4 * fft.size());
  return std::polar(1.0L, turn * static_cast<long double>(fft.point_angle(p)));
}

// Exact (long double) evaluation of the input polynomial at every point of the transform.
std::vector<CLD> exact_forward(const FixedFft& fft, const std::vector<CWord>& x) {
  const std::size_t M = fft.size();
  std::vector<CLD> y(M);
  for (std::size_t p = 0; p < M; ++p) {
    const CLD z = root(fft, p);
    CLD acc = 0, power = 1;
    for (std::size_t j = 0; j < M; ++j) {
      acc += CLD(static_cast<long double>(x[j].re), static_cast<long double>(x[j].im)) * power;
      power *= z;
    }
    y[p] = acc;
  }
  return y;
}

// Exact interpolation: the coefficients whose values at the points are y.
std::vector<CLD> exact_inverse(const FixedFft& fft, const std::vector<CWord>& y) {
  const std::size_t M = fft.size();
  std::vector<CLD> x(M, 0);
  for (std::size_t p = 0; p < M; ++p) {
    const CLD zinv = std::conj(root(fft, p));
    CLD power = 1;
    const CLD v(static_cast<long double>(y[p].re), static_cast<long double>(y[p].im));
    for (std::size_t j = 0; j < M; ++j) {
      x[j] += v * power;
      power *= zinv;
    }
  }
  for (auto& v : x) v /= static_cast<long double>(M);
  return x;
}

double l2_error(const std::vector<CWord>& got, const std::vector<CLD>& want) {
  long double sum = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    sum += std::norm(CLD(static_cast<long double>(got[i].re), static_cast<long double>(got[i].im)) - want[i]);
  }
  return static_cast<double>(std::sqrt(sum));
}

std::vector<CLD> as_exact(const std::vector<CWord>& v) {
  std::vector<CLD> out;
  for (const auto& w : v) out.emplace_back(static_cast<long double>(w.re), static_cast<long double>(w.im));
  return out;
}

double l2_norm(const std::vector<CWord>& v) {
  long double sum = 0;
  for (const auto& w : v) {
    sum += static_cast<long double>(w.re) * w.re + static_cast<long double>(w.im) * w.im;
  }
  return static_cast<double>(std::sqrt(sum));
}

std::vector<CWord> random_words(Csprng& rng, std::size_t M, std::int64_t magnitude) {
  std::vector<CWord> x(M);
  for (auto& w : x) {
    w.re = static_cast<std::int64_t>(rng.uniform_below(2 * magnitude + 1)) - magnitude;
    w.im = static_cast<std::int64_t>(rng.uniform_below(2 * magnitude + 1)) - magnitude;
  }
  return x;
}

std::vector<unsigned> radices_of(unsigned M) {
  std::vector<unsigned> out;
  const unsigned lm = static_cast<unsigned>(std::countr_zero(M));
  for (unsigned j = 1; j <= lm; ++j) {
    if (lm % j == 0) out.push_back(1u << j);
  }
  return out;
}

}  // namespace

TEST_CASE("fpga_fft: configuration errors name the field and what is allowed", "[fpga_fft]") {
  FixedFftConfig c;
  c.radix = 4;  // log2 4 = 2 does not divide log2 512 = 9
  REQUIRE_INVALID_ARGUMENT(FixedFft{c}, "allowed radices: 2, 8, 512");
  c.radix = 16;
  REQUIRE_INVALID_ARGUMENT(FixedFft{c}, "radix=16 does not divide a 512-point FFT");
  c = {};
  c.size = 48;
  REQUIRE_INVALID_ARGUMENT(FixedFft{c}, "size=48");
  c = {};
  c.radix = 1024;
  REQUIRE_INVALID_ARGUMENT(FixedFft{c}, "radix=1024");
  c = {};
  c.word_bits = 65;
  REQUIRE_INVALID_ARGUMENT(FixedFft{c}, "word_bits=65");
  c = {};
  c.word_bits = 32;
  c.frac_bits = 31;
  REQUIRE_INVALID_ARGUMENT(FixedFft{c}, "frac_bits=31 but expected at most word_bits - 2 = 30");
  // frac_bits + 2 would wrap in 32 bits near 2^32.
  for (const std::uint32_t F : {4294967295u, 4294967294u}) {
    c = {};
    c.size = 64;
    c.frac_bits = F;
    REQUIRE_INVALID_ARGUMENT(FixedFft{c}, "frac_bits=" + std::to_string(F) +
                                              " but expected at most word_bits - 2 = 62");
  }
  c = {};
  c.twiddle_bits = 63;
  REQUIRE_INVALID_ARGUMENT(FixedFft{c}, "twiddle_bits=63");
  c = {};
  c.radix = 512;
  c.twiddle_bits = 62;  // 64 + 62 + 9 > 127
  REQUIRE_INVALID_ARGUMENT(FixedFft{c}, "128-bit accumulator");
  CHECK_NOTHROW(FixedFft{FixedFftConfig{}});
  CHECK(FixedFftConfig{}.twiddle_width() == 32);  // F + 2 by default
  CHECK(FixedFftConfig{}.describe() == "M=512 r=2 W=64 F=30 T=32 nearest separate-twist");
  CHECK(parse_rounding("floor") == Rounding::Truncate);
  CHECK(parse_rounding("nearest") == Rounding::Nearest);
  REQUIRE_INVALID_ARGUMENT(parse_rounding("up"), "rounding 'up'");
}

TEST_CASE("fpga_fft: rounding, wrapping and the 128-bit helpers", "[fpga_fft]") {
  CHECK(round_shift(7, 2, Rounding::Truncate) == 1);   // 1.75 -> 1
  CHECK(round_shift(7, 2, Rounding::Nearest) == 2);    // 1.75 -> 2
  CHECK(round_shift(-7, 2, Rounding::Truncate) == -2); // floor(-1.75)
  CHECK(round_shift(-7, 2, Rounding::Nearest) == -2);
  CHECK(round_shift(6, 2, Rounding::Nearest) == 2);    // 1.5: ties up
  CHECK(round_shift(-6, 2, Rounding::Nearest) == -1);  // -1.5: ties up
  CHECK(fits(127, 8));
  CHECK_FALSE(fits(128, 8));
  CHECK(fits(-128, 8));
  CHECK(wrap(128, 8) == -128);
  CHECK(wrap(-129, 8) == 127);
  std::uint64_t overflows = 0;
  CHECK(to_register(200, 8, overflows) == -56);
  CHECK(to_register(100, 8, overflows) == 100);
  CHECK(overflows == 1);
}

TEST_CASE("fpga_fft: twiddles are exact at +-1, +-i and conjugate-symmetric", "[fpga_fft]") {
  for (const std::uint32_t T : {4u, 18u, 32u, 62u}) {
    FixedFftConfig c;
    c.size = 64;
    c.twiddle_bits = T;
    c.frac_bits = std::min<std::uint32_t>(30, T);
    const FixedFft fft(c);
    const std::int64_t one = std::int64_t{1} << (T - 2), M = 64;
    CHECK(fft.twiddle(0) == CWord{one, 0});
    CHECK(fft.twiddle(M) == CWord{0, one});
    CHECK(fft.twiddle(2 * M) == CWord{-one, 0});
    CHECK(fft.twiddle(3 * M) == CWord{0, -one});
    for (std::int64_t a = 0; a < 4 * M; ++a) {
      const CWord w = fft.twiddle(a), v = fft.twiddle(-a);
      CHECK(v == CWord{w.re, -w.im});
      const long double angle = 2 * std::numbers::pi_v<long double> * a / (4 * M);
      const long double scale = std::ldexp(1.0L, static_cast<int>(T - 2));
      // Half an LSB, plus the long double error of this reference at 60 fractional bits.
      const long double tolerance = 0.5L + scale * 0x1p-62L;
      CHECK(std::fabs(w.re - std::cos(angle) * scale) <= tolerance);
      CHECK(std::fabs(w.im - std::sin(angle) * scale) <= tolerance);
    }
  }
}

TEST_CASE("fpga_fft: the points are the roots of X^M - 1 (separate twist) or X^M - i (merged)",
          "[fpga_fft]") {
  for (const unsigned M : {2u, 8u, 64u, 512u}) {
    for (const unsigned r : radices_of(M)) {
      for (const bool merged : {false, true}) {
        FixedFftConfig c;
        c.size = M;
        c.radix = r;
        c.merged_twist = merged;
        const FixedFft fft(c);
        std::set<std::uint32_t> seen;
        for (std::size_t p = 0; p < M; ++p) {
          const std::uint32_t a = fft.point_angle(p);
          CHECK(a % 4 == (merged ? 1u : 0u));  // M * a = M * (merged ? 1 : 0) mod 4M
          seen.insert(a);
        }
        CHECK(seen.size() == M);
        if (!merged) CHECK(fft.point_angle(0) == 0);  // the DC point first (digit-reversed order)
      }
    }
  }
  REQUIRE_INVALID_ARGUMENT(FixedFft(FixedFftConfig{}).point_angle(512), "p=512");
}

TEST_CASE("fpga_fft: forward and inverse match the exact transform within the error bound",
          "[fpga_fft]") {
  const std::uint64_t seed = catch_seed(0xf1f0);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  for (const unsigned M : {2u, 4u, 8u, 16u, 64u, 512u}) {
    for (const unsigned r : radices_of(M)) {
      for (const bool merged : {false, true}) {
        for (const Rounding mode : {Rounding::Nearest, Rounding::Truncate}) {
          for (const std::uint32_t F : {12u, 30u}) {
            if (M == 512 && r == 512 && F == 12) continue;  // one 512-point radix is enough
            FixedFftConfig c;
            c.size = M;
            c.radix = r;
            c.merged_twist = merged;
            c.rounding = mode;
            c.frac_bits = F;
            const FixedFft fft(c);
            INFO(c.describe());
            // Digits of 7 bits scaled to F fractional bits, as the negacyclic multiplier feeds.
            std::vector<CWord> x = random_words(rng, M, 64);
            for (auto& w : x) {
              w.re <<= F;
              w.im <<= F;
            }
            std::vector<std::uint64_t> overflows(fft.stages(), 0);
            std::vector<CWord> y(M);
            fft.forward(x, y, overflows);
            CHECK(std::accumulate(overflows.begin(), overflows.end(), std::uint64_t{0}) == 0);
            // slack: the long-double reference's own rounding (relative 2^-64 per operation).
            const double slack = 1e-15 * l2_norm(x) * M;
            const double err = l2_error(y, exact_forward(fft, x));
            const double bound = fft.forward_error_bound(l2_norm(x)) + slack;
            CHECK(err <= bound);
            // Inverse of the computed spectrum against its exact interpolation.
            std::vector<CWord> z(M);
            fft.inverse(y, z, overflows);
            CHECK(l2_error(z, exact_inverse(fft, y)) <= fft.inverse_error_bound(l2_norm(y)) + slack);
            // The round trip lands near the input: the inverse's own error plus the forward
            // error, which the exact inverse scales by 1/sqrt(M) in L2.
            CHECK(l2_error(z, as_exact(x)) <=
                  fft.inverse_error_bound(l2_norm(y)) + slack + bound / std::sqrt(double(M)));
          }
        }
      }
    }
  }
}

TEST_CASE("fpga_fft: in and out may be the same span or overlap in part", "[fpga_fft]") {
  const std::uint64_t seed = catch_seed(0xf1f1);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  FixedFftConfig c;
  c.size = 64;
  c.radix = 4;
  const FixedFft fft(c);
  const std::size_t M = c.size;
  const std::vector<CWord> x = random_words(rng, M, std::int64_t{1} << 30);
  for (const bool forward : {true, false}) {
    auto run = [&](std::span<const CWord> in, std::span<CWord> out) {
      if (forward) fft.forward(in, out); else fft.inverse(in, out);
    };
    std::vector<CWord> want(M);
    run(x, want);
    // out at every offset from in: before it, the same span, inside it, just past it.
    for (const std::ptrdiff_t shift : {-63, -1, 0, 1, 5, 63, 64}) {
      INFO((forward ? "forward" : "inverse") << ", out at in + " << shift);
      std::vector<CWord> buffer(3 * M);
      const std::size_t at = M;  // in at buffer[M, 2M)
      std::copy(x.begin(), x.end(), buffer.begin() + static_cast<std::ptrdiff_t>(at));
      const std::span<CWord> in(buffer.data() + at, M);
      const std::span<CWord> out(buffer.data() + static_cast<std::ptrdiff_t>(at) + shift, M);
      run(in, out);
      CHECK(std::equal(out.begin(), out.end(), want.begin(), want.end()));
    }
  }
}

TEST_CASE("fpga_fft: the double-precision mirror evaluates at the same points", "[fpga_fft]") {
  const std::uint64_t seed = catch_seed(0xf1f1);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  for (const unsigned r : {2u, 8u, 512u}) {
    for (const bool merged : {false, true}) {
      FixedFftConfig c;
      c.radix = r;
      c.merged_twist = merged;
      const FixedFft fft(c);
      const std::vector<CWord> x = random_words(rng, 512, 1000);
      std::vector<std::complex<double>> in(512), out(512);
      for (std::size_t j = 0; j < 512; ++j) in[j] = {double(x[j].re), double(x[j].im)};
      fft.forward_double(in, out);
      const std::vector<CLD> want = exact_forward(fft, x);
      long double worst = 0;
      for (std::size_t p = 0; p < 512; ++p) {
        worst = std::max(worst, std::abs(CLD(out[p].real(), out[p].imag()) - want[p]));
      }
      CHECK(worst < 1e-7L);  // values up to about 5e5: double rounding only
    }
  }
  const FixedFft fft{FixedFftConfig{}};
  std::vector<std::complex<double>> shorter(256), out(512);
  REQUIRE_INVALID_ARGUMENT(fft.forward_double(shorter, out), "input has 256 values");
}

TEST_CASE("fpga_fft: finer fractional bits give smaller errors; truncation is biased", "[fpga_fft]") {
  const std::uint64_t seed = catch_seed(0xf1f2);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  std::vector<CWord> x = random_words(rng, 512, 64);
  double previous = 1e300;
  for (const std::uint32_t F : {14u, 20u, 26u, 34u}) {
    FixedFftConfig c;
    c.frac_bits = F;
    const FixedFft fft(c);
    std::vector<CWord> xs = x, y(512);
    for (auto& w : xs) {
      w.re <<= F;
      w.im <<= F;
    }
    fft.forward(xs, y);
    // Error relative to the scale 2^F of the data: shrinks with every extra bit.
    const double relative = l2_error(y, exact_forward(fft, xs)) / std::ldexp(1.0, int(F));
    CHECK(relative < previous / 8);
    previous = relative;
  }
  // Truncation drops bits towards -infinity: the inverse (which rounds at every stage) of a
  // spectrum lands below the exact interpolation on average.
  FixedFftConfig c;
  c.rounding = Rounding::Truncate;
  const FixedFft fft(c);
  std::vector<CWord> y = random_words(rng, 512, std::int64_t{1} << 40), z(512);
  fft.inverse(y, z);
  const std::vector<CLD> exact = exact_inverse(fft, y);
  long double mean = 0;
  for (std::size_t j = 0; j < 512; ++j) mean += (z[j].re - exact[j].real()) + (z[j].im - exact[j].imag());
  CHECK(mean / 1024 < -0.25L);  // about -0.5 LSB per stage's floor, averaged
}

TEST_CASE("fpga_fft: overflows are counted per stage and wrap like a register", "[fpga_fft]") {
  FixedFftConfig c;
  c.size = 16;
  c.word_bits = 16;
  c.frac_bits = 4;
  const FixedFft fft(c);
  std::vector<CWord> big(16, CWord{4000, -4000}), y(16);  // the sum of 16 words needs 17 bits
  std::vector<std::uint64_t> overflows(fft.stages(), 0);
  fft.forward(big, y, overflows);
  CHECK(overflows[0] == 0);  // sums of 2 words: 8000 fits 16 bits
  CHECK(overflows[1] == 0);  // of 4: 16000
  CHECK(overflows[2] == 0);  // of 8: 32000 < 32768
  CHECK(overflows[3] > 0);   // of 16: 64000 does not
  for (const auto& w : y) {
    CHECK(fits(w.re, 16));
    CHECK(fits(w.im, 16));
  }
  std::vector<CWord> small(16, CWord{100, 100});
  std::vector<std::uint64_t> none(fft.stages(), 0);
  fft.forward(small, y, none);
  CHECK(std::accumulate(none.begin(), none.end(), std::uint64_t{0}) == 0);
  // Bad calls.
  std::vector<CWord> wide(16, CWord{std::int64_t{1} << 20, 0});
  REQUIRE_INVALID_ARGUMENT(fft.forward(wide, y), "input word 0 does not fit a signed 16-bit word");
  std::vector<CWord> shorter(8);
  REQUIRE_INVALID_ARGUMENT(fft.forward(shorter, y), "input has 8 words");
  std::vector<std::uint64_t> wrong(2);
  REQUIRE_INVALID_ARGUMENT(fft.inverse(small, y, wrong), "overflow counts have 2 entries but expected 0 or S=4");
}

TEST_CASE("fpga_fft: the shared pieces check their stage, block and site", "[fpga_fft]") {
  const FixedFft fft{FixedFftConfig{}};  // M = 512, r = 2: stages 0..8, r^s blocks in stage s
  REQUIRE(fft.stages() == 9);
  CHECK(fft.block_length(0) == 512);
  CHECK(fft.block_length(8) == 2);
  REQUIRE_INVALID_ARGUMENT(fft.block_length(9), "block_length: stage=9 but the transform has stages 0..8");
  REQUIRE_INVALID_ARGUMENT(fft.block_length(10), "stage=10");
  CHECK_FALSE(fft.stage_has_multiplier(0));  // separate twist: the first stage is wires
  CHECK(fft.stage_has_multiplier(8));
  REQUIRE_INVALID_ARGUMENT(fft.stage_has_multiplier(9), "stage_has_multiplier: stage=9");
  CHECK_NOTHROW(fft.rho_angle(8, 255));
  REQUIRE_INVALID_ARGUMENT(fft.rho_angle(8, 256), "rho_angle: block=256 but stage 8 has blocks 0..255");
  REQUIRE_INVALID_ARGUMENT(fft.rho_angle(9, 0), "rho_angle: stage=9");
  std::vector<CWord> in{{1, 2}, {3, 4}}, out(2);
  std::uint64_t overflows = 0;
  fft.forward_butterfly(1, 1, in.data(), out.data(), overflows);
  REQUIRE_INVALID_ARGUMENT(fft.forward_butterfly(1, 2, in.data(), out.data(), overflows),
                           "forward_butterfly: block=2 but stage 1 has blocks 0..1");
  REQUIRE_INVALID_ARGUMENT(fft.inverse_butterfly(0, 1, in.data(), out.data(), overflows),
                           "inverse_butterfly: block=1 but stage 0 has blocks 0..0");
  REQUIRE_INVALID_ARGUMENT(fft.inverse_butterfly(9, 0, in.data(), out.data(), overflows),
                           "inverse_butterfly: stage=9");

  OverflowCounters counters({"a", "b", "c"});
  counters.add(2, 5);
  CHECK(counters.count(2) == 5);
  CHECK(counters.site(1) == "b");
  CHECK(counters.total() == 5);
  REQUIRE_INVALID_ARGUMENT(counters.add(3, 1), "OverflowCounters::add: site=3 but the sites are 0..2");
  REQUIRE_INVALID_ARGUMENT(counters.count(7), "OverflowCounters::count: site=7");
  REQUIRE_INVALID_ARGUMENT(counters.site(3), "OverflowCounters::site: site=3");
  const OverflowCounters none({});
  REQUIRE_INVALID_ARGUMENT(none.count(0), "site=0 but there are no sites");
}

TEST_CASE("fpga_fft: the error bounds take a finite norm >= 0", "[fpga_fft]") {
  const FixedFft fft{FixedFftConfig{}};
  CHECK(fft.forward_error_bound(0) >= 0);
  CHECK(fft.inverse_error_bound(1e6) > fft.inverse_error_bound(0));
  REQUIRE_INVALID_ARGUMENT(fft.forward_error_bound(-1), "forward_error_bound: input_norm=-1 but expected");
  REQUIRE_INVALID_ARGUMENT(fft.forward_error_bound(std::nan("")), "input_norm=nan");
  REQUIRE_INVALID_ARGUMENT(fft.inverse_error_bound(INFINITY), "inverse_error_bound: input_norm=inf");
}
