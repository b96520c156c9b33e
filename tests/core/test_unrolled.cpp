// The unrolled bootstrapping keys (unroll 2, key bits in pairs; unroll 3, in threes): where
// each engine's spectrum slots evaluate, rotations in the Fourier domain, the keys' GGSW
// messages, exponents and sizes, and bootstrapping with them (signs, and the noise against
// the model) on toy parameters, n not a multiple of the group and tfhe_lib_128.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "test_support.hpp"
#include "torusgate/core/bootstrap.hpp"
#include "torusgate/core/fft.hpp"
#include "torusgate/core/keys.hpp"
#include "torusgate/core/noise.hpp"
#include "torusgate/core/simd_fft.hpp"
#include "torusgate/core/tfhe_lib_format.hpp"
#include "torusgate/cpu/fftw_fft.hpp"

using namespace torusgate;
using torusgate::test::catch_seed;
using torusgate::test::keys_for;
using torusgate::test::seeded_rng;

namespace {

constexpr Torus32 mu = Torus32{1} << 29;  // 1/8

// X^e * a mod X^N + 1, exactly.
std::vector<std::int64_t> times_monomial(const std::vector<std::int32_t>& a, std::uint32_t e) {
  const std::size_t N = a.size();
  std::vector<std::int64_t> out(N);
  for (std::size_t j = 0; j < N; ++j) {
    const std::size_t to = (j + e) % (2 * N);
    out[to % N] += to < N ? a[j] : -std::int64_t{a[j]};
  }
  return out;
}

// A toy set with an odd n: the last key bit keeps a standard GGSW.
Parameters toy_odd_n() {
  Parameters p = toy_insecure();
  p.name = "toy_n65_INSECURE";
  p.lwe_dimension = 65;
  return p;
}

void check_roots_and_rotation(const NegacyclicFft& fft, std::uint64_t seed) {
  INFO("engine " << fft.name() << ", N=" << fft.polynomial_size() << ", seed " << seed);
  Csprng rng = seeded_rng(seed);
  const std::size_t N = fft.polynomial_size(), M = N / 2;
  const auto roots = spectrum_root_exponents(fft);
  REQUIRE(roots.size() == M);
  std::vector<bool> seen(2 * N, false);
  for (std::uint32_t t : roots) {
    CHECK(t % 2 == 1);
    CHECK(t < 2 * N);
    CHECK_FALSE(seen[t]);
    seen[t] = true;
  }
  // Slot-wise zeta^(t_j e) on the spectrum of a is the spectrum of X^e a: the inverse
  // transform gives X^e a exactly (small integers, far from rounding).
  std::vector<std::int32_t> a(N);
  for (auto& c : a) c = static_cast<std::int32_t>(rng.uniform_below(2048)) - 1024;
  std::vector<double> spectrum(N), rotated(N);
  fft.forward(a, spectrum);
  for (std::uint32_t e : {0u, 1u, 7u, static_cast<std::uint32_t>(N - 1),
                          static_cast<std::uint32_t>(N), static_cast<std::uint32_t>(N + 3),
                          static_cast<std::uint32_t>(2 * N - 1),
                          static_cast<std::uint32_t>(rng.uniform_below(2 * N))}) {
    INFO("e = " << e);
    for (std::size_t j = 0; j < M; ++j) {
      const double angle = std::acos(-1.0) * ((std::uint64_t{roots[j]} * e) % (2 * N)) / N;
      const double wr = std::cos(angle), wi = std::sin(angle);
      rotated[j] = spectrum[j] * wr - spectrum[M + j] * wi;
      rotated[M + j] = spectrum[j] * wi + spectrum[M + j] * wr;
    }
    std::vector<Torus32> back(N);
    fft.inverse(rotated, back);
    const auto want = times_monomial(a, e);
    std::size_t wrong = 0;
    for (std::size_t j = 0; j < N; ++j) wrong += back[j] != static_cast<Torus32>(want[j]);
    CHECK(wrong == 0);
  }
}

// Bootstraps encryptions of spread phases with `key` and checks each sign, then measures the
// noise of every accumulator coefficient against the model of the key's form. Returns the
// mean square error of the coefficients (torus fractions squared).
double check_bootstrap(const Parameters& p, std::uint32_t unroll, const NegacyclicFft& fft,
                       std::size_t count, std::uint64_t seed) {
  INFO("parameter set " << p.name << ", unroll " << unroll << ", engine " << fft.name()
                        << ", seed " << seed);
  const auto& keys = keys_for(p, unroll);
  REQUIRE(keys.cloud->bootstrapping_key().unroll() == unroll);
  const BootstrappingKeyFourier fourier(keys.cloud->bootstrapping_key(), fft);
  Csprng rng = seeded_rng(seed);
  const std::size_t n1 = p.lwe_dimension + 1, big1 = p.extracted_lwe_dimension() + 1;
  std::vector<Torus32> phases, inputs(count * n1);
  while (phases.size() < count) {  // at least 1/32 from the boundaries 0 and 1/2
    const Torus32 t = rng.uniform_torus();
    const double x = torus_to_double(t);
    if (std::fmin(std::fabs(x), 0.5 - std::fabs(x)) >= 1.0 / 32) phases.push_back(t);
  }
  for (std::size_t i = 0; i < count; ++i) {
    encrypt_lwe(std::span<Torus32>(inputs).subspan(i * n1, n1), phases[i], keys.secret.lwe_key(),
                p.lwe_noise_stddev, rng);
  }
  BlindRotator rotator(fourier, fft, count);
  const std::size_t acc_words = glwe_size(p);
  std::vector<Torus32> acc(count * acc_words), extracted(count * big1);
  rotator.blind_rotate(inputs, count, mu, acc);
  rotator.bootstrap_extract(inputs, count, mu, extracted);
  const LweKey big_key = keys.secret.glwe_key().extracted_lwe_key();
  const NoiseModel model = noise_model(p, unroll);
  const double bound = 8 * std::sqrt(model.blind_rotation);
  std::vector<Torus32> coefficients(p.polynomial_size);
  double sum2 = 0;
  std::size_t samples = 0;
  for (std::size_t i = 0; i < count; ++i) {
    INFO("input phase " << torus_to_double(phases[i]));
    const Torus32 want = static_cast<std::int32_t>(phases[i]) >= 0 ? mu : Torus32{0} - mu;
    const Torus32 out =
        lwe_phase(std::span<const Torus32>(extracted).subspan(i * big1, big1), big_key);
    CHECK(torus_distance(out, want) < bound);
    // Every coefficient of X^(-phase) (mu, ..., mu) is +-mu.
    glwe_phase(std::span<const Torus32>(acc).subspan(i * acc_words, acc_words),
               keys.secret.glwe_key(), coefficients);
    for (Torus32 c : coefficients) {
      const double e = std::fmin(torus_distance(c, mu), torus_distance(c, Torus32{0} - mu));
      sum2 += e * e;
      ++samples;
    }
  }
  const double mean_square = sum2 / samples;
  INFO("mean square error " << mean_square << ", model V_BR " << model.blind_rotation
                            << " (ratio " << mean_square / model.blind_rotation << ")");
  CHECK(mean_square < 2.0 * model.blind_rotation);
  return mean_square;
}

}  // namespace

TEST_CASE("spectrum_root_exponents: slot-wise powers rotate exactly in every double engine",
          "[fft][unroll]") {
  const std::uint64_t seed = catch_seed(0x4007);
  check_roots_and_rotation(PortableFft(256), seed);
  check_roots_and_rotation(PortableFft(1024), seed + 1);
  check_roots_and_rotation(FftwFft(1024), seed + 2);
  check_roots_and_rotation(FftwFft(2048), seed + 3);
  check_roots_and_rotation(SimdFft(1024), seed + 4);
  check_roots_and_rotation(SimdFft(512), seed + 5);
}

TEST_CASE("unit_roots_split: zeta^x for x < 2N, the quarters exact rotations of the first",
          "[fft][unroll]") {
  for (std::uint32_t N : {2u, 16u, 1024u, 4096u}) {
    INFO("N = " << N);
    const auto u = unit_roots_split(N);
    REQUIRE(u.size() == 4 * N);
    const std::size_t quarter = N / 2;
    double worst = 0;
    for (std::size_t x = 0; x < 2 * N; ++x) {
      const double angle = std::acos(-1.0) * static_cast<double>(x) / N;
      worst = std::fmax(worst, std::fabs(u[x] - std::cos(angle)));
      worst = std::fmax(worst, std::fabs(u[2 * N + x] - std::sin(angle)));
      // zeta^(x + N/2) = i zeta^x: (re, im) -> (-im, re), the same doubles.
      if (x + quarter < 2 * N) {
        CHECK(u[x + quarter] == -u[2 * N + x]);
        CHECK(u[2 * N + x + quarter] == u[x]);
      }
    }
    CHECK(worst < 1e-15);
    CHECK(u[0] == 1.0);
    CHECK(u[2 * N] == 0.0);
    CHECK(u[N] == -1.0);
  }
  REQUIRE_INVALID_ARGUMENT(unit_roots_split(1), "power of two >= 2");
  REQUIRE_INVALID_ARGUMENT(unit_roots_split(24), "power of two >= 2");
}

TEST_CASE("unrolled_exponent: the rotation of each GGSW of a group, in the messages' order",
          "[keys][unroll]") {
  const std::uint32_t mask = 2047, a = 1500, b = 900, c = 7;
  const std::uint32_t masks[3] = {a, b, c};
  CHECK(unroll_group_ggsws(1) == 1);
  CHECK(unroll_group_ggsws(2) == 3);
  CHECK(unroll_group_ggsws(3) == 7);
  CHECK(unroll_group_ggsws(4) == 15);
  CHECK(unrolled_bits(630, 1) == 0);
  CHECK(unrolled_bits(630, 4) == 628);
  CHECK(unrolled_bits(630, 2) == 630);
  CHECK(unrolled_bits(631, 2) == 630);
  CHECK(unrolled_bits(631, 3) == 630);
  CHECK(unrolled_bits(632, 3) == 630);
  CHECK(unrolled_exponent(masks, 1, 0, mask) == a);
  // s t, s (1-t), (1-s) t
  const std::uint32_t pairs[3] = {(a + b) & mask, a, b};
  for (std::uint32_t g = 0; g < 3; ++g) CHECK(unrolled_exponent(masks, 2, g, mask) == pairs[g]);
  // s t r, s t (1-r), s (1-t) r, s (1-t)(1-r), (1-s) t r, (1-s) t (1-r), (1-s)(1-t) r
  const std::uint32_t threes[7] = {(a + b + c) & mask, (a + b) & mask, a + c, a, b + c, b, c};
  for (std::uint32_t g = 0; g < 7; ++g) CHECK(unrolled_exponent(masks, 3, g, mask) == threes[g]);
  // Fours: GGSW g has pattern 15 - g, bit 3 - m for key bit m.
  const std::uint32_t four[4] = {a, b, c, 1000};
  for (std::uint32_t g = 0; g < 15; ++g) {
    std::uint32_t e = 0;
    for (std::uint32_t m = 0; m < 4; ++m) e += ((15 - g) >> (3 - m)) & 1u ? four[m] : 0;
    CHECK(unrolled_exponent(four, 4, g, mask) == (e & mask));
  }
}

TEST_CASE("the unrolled keys: sizes, GGSW messages (pairs s*t, s*(1-t), (1-s)*t; threes), "
          "validation",
          "[bootstrap][keys][unroll]") {
  for (std::uint32_t unroll : {2u, 3u, 4u}) {
    for (const Parameters& p : {toy_insecure(), toy_odd_n()}) {
      INFO("parameter set " << p.name << ", unroll " << unroll);
      const auto& keys = keys_for(p, unroll);
      const auto& bk = keys.cloud->bootstrapping_key();
      const std::size_t n = p.lwe_dimension, groups = n / unroll;
      CHECK(bk.unroll() == unroll);
      CHECK(bk.ggsw_count() == ((1u << unroll) - 1) * groups + n % unroll);
      CHECK(BootstrappingKey::ggsw_count(p, 1) == n);
      CHECK(bk.data().size() == bk.ggsw_count() * ggsw_size(p));
      // GGSW i's last row's body phase is m_i * g_l, m_i the message, written out here.
      const auto s = keys.secret.lwe_key().coefficients();
      std::vector<std::int32_t> messages;
      std::size_t bit = 0;
      for (; unroll == 2 && bit + 1 < n; bit += 2) {
        messages.push_back(s[bit] * s[bit + 1]);
        messages.push_back(s[bit] * (1 - s[bit + 1]));
        messages.push_back((1 - s[bit]) * s[bit + 1]);
      }
      for (; unroll == 3 && bit + 2 < n; bit += 3) {
        const std::int32_t x = s[bit], y = s[bit + 1], z = s[bit + 2];
        for (std::int32_t m : {x * y * z, x * y * (1 - z), x * (1 - y) * z, x * (1 - y) * (1 - z),
                               (1 - x) * y * z, (1 - x) * y * (1 - z), (1 - x) * (1 - y) * z}) {
          messages.push_back(m);
        }
      }
      for (; unroll == 4 && bit + 3 < n; bit += 4) {  // pattern v = 15 .. 1, bit 3 - m for s[bit + m]
        for (std::uint32_t v = 15; v >= 1; --v) {
          std::int32_t m = 1;
          for (std::uint32_t b = 0; b < 4; ++b) m *= (v >> (3 - b)) & 1u ? s[bit + b] : 1 - s[bit + b];
          messages.push_back(m);
        }
      }
      for (; bit < n; ++bit) messages.push_back(s[bit]);
      CHECK(messages == BootstrappingKey::messages(s, unroll));
      REQUIRE(messages.size() == bk.ggsw_count());
      const GadgetDecomposition g(p.bk_base_log, p.bk_level_count);
      const std::size_t row = glwe_size(p), l = p.bk_level_count, k = p.glwe_dimension;
      std::vector<Torus32> phase(p.polynomial_size);
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < messages.size(); ++i) {
        const auto body_row = bk.ggsw(i).subspan((k * l + l - 1) * row, row);
        glwe_phase(body_row, keys.secret.glwe_key(), phase);
        const Torus32 want = static_cast<Torus32>(messages[i]) * g.gadget_value(l);
        wrong += torus_distance(phase[0], want) > 8 * p.glwe_noise_stddev;
      }
      CHECK(wrong == 0);
      REQUIRE_INVALID_ARGUMENT(bk.ggsw(bk.ggsw_count()), "GGSW samples");
    }
  }
  const Parameters p = toy_insecure();
  const auto& keys = keys_for(p, 2);
  Csprng rng = seeded_rng(1);
  REQUIRE_INVALID_ARGUMENT(BootstrappingKey::generate(keys.secret, rng, 5), "unroll=5");
  REQUIRE_INVALID_ARGUMENT(CloudKey::generate(keys.secret, rng, 0), "unroll=0");
  REQUIRE_INVALID_ARGUMENT(BootstrappingKey::ggsw_count(p, 5), "unroll=5");
  REQUIRE_INVALID_ARGUMENT(noise_model(p, 5), "unroll=5");
  REQUIRE_INVALID_ARGUMENT(BootstrappingKey::messages(keys.secret.lwe_key().coefficients(), 5),
                           "2, 3 or 4 (key bits in pairs, threes or fours)");
  // A standard key's words are not an unrolled key's, and the other way round.
  const auto& standard = keys_for(p).cloud->bootstrapping_key();
  std::vector<Torus32> words(standard.data().begin(), standard.data().end());
  REQUIRE_INVALID_ARGUMENT(BootstrappingKey(p, words, 2), "unroll 2");
  REQUIRE_INVALID_ARGUMENT(BootstrappingKey(p, words, 3), "unroll 3");
  const auto unrolled = keys.cloud->bootstrapping_key().data();
  REQUIRE_INVALID_ARGUMENT(
      BootstrappingKey(p, std::vector<Torus32>(unrolled.begin(), unrolled.end()), 1),
      "unroll 1");
  CHECK_NOTHROW(BootstrappingKey(p, std::vector<Torus32>(unrolled.begin(), unrolled.end()), 2));
  // key_pair_problem checks an unrolled key's products against the secret key.
  CHECK(tfhe_lib::key_pair_problem(keys.secret, *keys.cloud).empty());
  const SecretKey other(p, rng);  // an unrolled key of other secret keys, beside the right KSK
  const CloudKey mixed(BootstrappingKey::generate(other, rng, 2),
                       keys.cloud->key_switching_key());
  CHECK_THAT(tfhe_lib::key_pair_problem(keys.secret, mixed),
             Catch::Matchers::Contains("(unrolled key)") &&
                 Catch::Matchers::Contains("its product of LWE key bits"));
}

TEST_CASE("bootstrapping with the unrolled key: signs, and noise as modelled",
          "[bootstrap][unroll]") {
  const std::uint64_t seed = catch_seed(0x2011);
  SECTION("toy_INSECURE, portable") {
    check_bootstrap(toy_insecure(), 2, PortableFft(256), 48, seed);
  }
  SECTION("odd n, portable") { check_bootstrap(toy_odd_n(), 2, PortableFft(256), 48, seed); }
  SECTION("toy_k2_INSECURE, FFTW") {
    check_bootstrap(toy_k2_insecure(), 2, FftwFft(256), 24, seed);
  }
  SECTION("threes: toy_INSECURE (n = 64), n = 65, toy_k2_INSECURE") {
    check_bootstrap(toy_insecure(), 3, PortableFft(256), 48, seed);
    check_bootstrap(toy_odd_n(), 3, FftwFft(256), 48, seed + 1);
    check_bootstrap(toy_k2_insecure(), 3, FftwFft(256), 24, seed + 2);
  }
  SECTION("fours: toy_INSECURE (n = 64), n = 65 (a CMUX step left), toy_k2_INSECURE") {
    check_bootstrap(toy_insecure(), 4, PortableFft(256), 48, seed + 4);
    check_bootstrap(toy_odd_n(), 4, FftwFft(256), 48, seed + 5);
    check_bootstrap(toy_k2_insecure(), 4, FftwFft(256), 24, seed + 6);
  }
  SECTION("tfhe_lib_128: FFTW and SimdFft; the key term three times the standard key's") {
    const Parameters p = tfhe_lib_128();
    const double unrolled = check_bootstrap(p, 2, FftwFft(1024), 8, seed);
    check_bootstrap(p, 2, SimdFft(1024), 4, seed + 1);
    const double standard = check_bootstrap(p, 1, FftwFft(1024), 8, seed + 2);
    const double ratio = noise_model(p, 2).blind_rotation / noise_model(p, 1).blind_rotation;
    INFO("measured " << unrolled << " / " << standard << " = " << unrolled / standard
                     << ", modelled " << ratio);
    CHECK(ratio > 2.9);
    CHECK(unrolled / standard > 0.6 * ratio);
    CHECK(unrolled / standard < 1.6 * ratio);
  }
  // tfhe_lib_128 with key bits in groups of u: the measured key term against the model's ratio
  // to the standard key's, which lies in (low, high).
  auto check_ratio = [&](std::uint32_t unroll, double low, double high, std::uint64_t s) {
    const Parameters p = tfhe_lib_128();
    const double unrolled = check_bootstrap(p, unroll, FftwFft(1024), 8, s);
    const double standard = check_bootstrap(p, 1, FftwFft(1024), 8, seed + 2);
    const double ratio =
        noise_model(p, unroll).blind_rotation / noise_model(p, 1).blind_rotation;
    INFO("unroll " << unroll << ": measured " << unrolled << " / " << standard << " = "
                   << unrolled / standard << ", modelled " << ratio);
    CHECK(ratio > low);
    CHECK(ratio < high);
    CHECK(unrolled / standard > 0.6 * ratio);
    CHECK(unrolled / standard < 1.6 * ratio);
  };
  SECTION("tfhe_lib_128 in threes: the key term 14/3 times the standard key's") {
    check_ratio(3, 4.5, 14.0 / 3.0, seed + 3);
  }
  SECTION("tfhe_lib_128 in fours: the key term 15/2 times the standard key's") {
    check_ratio(4, 7.4, 7.5, seed + 7);
  }
}

TEST_CASE("the decomposition rounding adds noise only where the GGSW's message is 1",
          "[bootstrap][unroll][noise]") {
  // No key noise at all (insecure): what the blind rotation adds is the decomposition's
  // rounding alone. Each external product multiplies the rounding error of what it
  // decomposes, variance (1 + |S|) q^2 / 12, by its GGSW's message: a CMUX step adds it when
  // its key bit is 1, an unrolled group (one decomposition, at most one message 1) twice (the
  // factor X^e - 1, averaged over e) when any of its bits is 1. The model averages |s| over
  // keys (n/2); this key's weights give the figure to compare with.
  const Parameters p{"rounding_only_INSECURE", 64, 1, 256, 6, 2, 4, 8, 0.0, 0.0, true};
  const std::uint64_t seed = catch_seed(0x2033);
  const auto& keys = keys_for(p);
  const auto s = keys.secret.lwe_key().coefficients();
  const auto big = keys.secret.glwe_key().extracted_lwe_key().coefficients();
  const double weight_big = static_cast<double>(std::count(big.begin(), big.end(), 1));
  const double q = std::ldexp(1.0, -12);
  const double unit = (1 + weight_big) * q * q / 12;
  for (std::uint32_t unroll : {1u, 2u, 3u}) {
    double terms = 0;  // this key's rounding terms: 1 per CMUX bit that is 1, 2 per group not 0
    std::size_t i = 0;
    if (unroll > 1) {
      for (; i + unroll <= s.size(); i += unroll) {
        terms += std::any_of(s.begin() + i, s.begin() + i + unroll, [](auto b) { return b == 1; })
                     ? 2
                     : 0;
      }
    }
    for (; i < s.size(); ++i) terms += s[i] == 1 ? 1 : 0;
    const double measured = check_bootstrap(p, unroll, PortableFft(256), 1024, seed + unroll);
    const double model = noise_model(p, unroll).blind_rotation;
    INFO("unroll " << unroll << ": measured " << measured << ", this key's " << terms * unit
                   << " (" << terms << " terms), the model's " << model);
    CHECK(measured / (terms * unit) > 0.93);
    CHECK(measured / (terms * unit) < 1.07);
    // The model: n/2 terms for the standard key, 2 (1 - 2^-u) per group of u bits.
    const double expected = unroll == 1 ? 32 : 2 * (1 - std::ldexp(1.0, -int(unroll))) *
                                                   static_cast<double>(64 / unroll) +
                                               (64 % unroll) * 0.5;
    CHECK(model == Approx(expected * (1 + 128.0) * q * q / 12).epsilon(1e-12));
  }
}
