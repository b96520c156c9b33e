// LWE and GLWE: encryption and phases, keys, negacyclic polynomial arithmetic against an
// independent reference, gadget decomposition, sample extraction, GGSW external products.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "test_support.hpp"
#include "torusgate/core/glwe.hpp"
#include "torusgate/core/keys.hpp"
#include "torusgate/core/lwe.hpp"
#include "torusgate/core/params.hpp"
#include "torusgate/core/torus.hpp"

using namespace torusgate;
using torusgate::test::catch_seed;
using torusgate::test::seeded_rng;

namespace {

// a * b mod (X^N + 1) computed independently of the library: every product in 128-bit
// integers with b read as signed, summed, then reduced modulo 2^32.
std::vector<Torus32> reference_negacyclic(const std::vector<std::int32_t>& a,
                                          const std::vector<Torus32>& b) {
  const std::size_t N = a.size();
  std::vector<__int128> acc(N, 0);
  for (std::size_t i = 0; i < N; ++i) {
    for (std::size_t j = 0; j < N; ++j) {
      const __int128 prod = static_cast<__int128>(a[i]) * static_cast<std::int32_t>(b[j]);
      if (i + j < N) acc[i + j] += prod;
      else acc[i + j - N] -= prod;
    }
  }
  std::vector<Torus32> out(N);
  for (std::size_t j = 0; j < N; ++j) {
    out[j] = static_cast<Torus32>(static_cast<unsigned __int128>(acc[j]));  // modulo 2^32
  }
  return out;
}

std::vector<Torus32> random_torus_poly(Csprng& rng, std::size_t N) {
  std::vector<Torus32> p(N);
  for (auto& x : p) x = rng.uniform_torus();
  return p;
}

std::vector<std::int32_t> random_int_poly(Csprng& rng, std::size_t N, std::int64_t lo,
                                          std::int64_t hi) {
  std::vector<std::int32_t> p(N);
  for (auto& x : p) {
    x = static_cast<std::int32_t>(lo + static_cast<std::int64_t>(rng.uniform_below(
                                            static_cast<std::uint64_t>(hi - lo + 1))));
  }
  return p;
}

std::vector<std::int32_t> random_binary_poly(Csprng& rng, std::size_t N) {
  std::vector<std::int32_t> p(N);
  for (auto& x : p) x = rng.uniform_bit();
  return p;
}

// Signed difference x - y on the torus, in units of 2^-32.
std::int64_t signed_diff(Torus32 x, Torus32 y) { return static_cast<std::int32_t>(x - y); }

}  // namespace

TEST_CASE("encode_bit and decode_bit", "[lwe]") {
  CHECK(encode_bit(true) == torus_from_fraction(1, 8));
  CHECK(encode_bit(false) == torus_from_fraction(-1, 8));
  CHECK(decode_bit(encode_bit(true)));
  CHECK_FALSE(decode_bit(encode_bit(false)));
  CHECK(decode_bit(torus_from_fraction(1, 1000)));
  CHECK(decode_bit(torus_from_fraction(499, 1000)));
  CHECK_FALSE(decode_bit(torus_from_fraction(-1, 1000)));
  CHECK_FALSE(decode_bit(torus_from_fraction(501, 1000)));
  CHECK_FALSE(decode_bit(0));
}

TEST_CASE("LWE encryption of bits decrypts within the noise", "[lwe]") {
  const std::uint64_t seed = catch_seed(0x1e);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  for (const Parameters& p : {tfhe_lib_128(), toy_insecure()}) {
    INFO("parameter set " << p.name);
    const LweKey key(p.lwe_dimension, rng);
    REQUIRE(key.lwe_dimension() == p.lwe_dimension);
    int ones = 0;
    for (auto s : key.coefficients()) {
      REQUIRE((s == 0 || s == 1));
      ones += s;
    }
    CHECK(ones > 0);
    CHECK(ones < static_cast<int>(p.lwe_dimension));
    std::vector<Torus32> sample(p.lwe_dimension + 1);
    for (int i = 0; i < 200; ++i) {
      const bool bit = (i & 1) != 0;
      encrypt_lwe(sample, encode_bit(bit), key, p.lwe_noise_stddev, rng);
      const Torus32 phase = lwe_phase(sample, key);
      CHECK(decode_bit(phase) == bit);
      CHECK(torus_distance(phase, encode_bit(bit)) < 8 * p.lwe_noise_stddev);
    }
    // The mask is not all zero (it would be a trivial encryption).
    int nonzero = 0;
    for (std::size_t i = 0; i < p.lwe_dimension; ++i) nonzero += sample[i] != 0;
    CHECK(nonzero > static_cast<int>(p.lwe_dimension) / 2);
    // Noiseless encryption: the phase is the message exactly.
    encrypt_lwe(sample, torus_from_fraction(3, 16), key, 0.0, rng);
    CHECK(lwe_phase(sample, key) == torus_from_fraction(3, 16));
  }
}

TEST_CASE("encryption with the same seeded generator is reproducible", "[lwe]") {
  const std::uint64_t seed = 31337;
  INFO("seed " << seed);
  const Parameters p = toy_insecure();
  Csprng r1 = seeded_rng(seed), r2 = seeded_rng(seed);
  const SecretKey k1(p, r1), k2(p, r2);
  const std::vector<std::uint8_t> bits = {0, 1, 1, 0, 1};
  CHECK(encrypt_bits(k1, bits, r1) == encrypt_bits(k2, bits, r2));
  CHECK(decrypt_bits(k1, encrypt_bits(k1, bits, r1)) == bits);
}

TEST_CASE("trivial_lwe decrypts to its message under any key", "[lwe]") {
  Csprng rng = seeded_rng(3);
  const LweKey key(50, rng);
  std::vector<Torus32> sample(51, 0xabcdef01u);
  const Torus32 mu = torus_from_fraction(-3, 8);
  trivial_lwe(sample, mu);
  CHECK(lwe_phase(sample, key) == mu);
  for (std::size_t i = 0; i < 50; ++i) CHECK(sample[i] == 0u);
  std::vector<Torus32> empty;
  REQUIRE_INVALID_ARGUMENT(trivial_lwe(empty, mu), "empty");
}

TEST_CASE("LweKey and LweBatch validation and layout", "[lwe]") {
  CHECK_NOTHROW(LweKey(std::vector<std::int32_t>{0, 1, 1, 0}));
  REQUIRE_INVALID_ARGUMENT(LweKey(std::vector<std::int32_t>{0, 1, 2}), "coefficient 2");
  REQUIRE_INVALID_ARGUMENT(LweKey(std::vector<std::int32_t>{-1, 0}), "coefficient 0");
  REQUIRE_THROWS_AS(LweKey(std::vector<std::int32_t>{}), InvalidArgument);
  Csprng rng = seeded_rng(4);
  REQUIRE_THROWS_AS(LweKey(0, rng), InvalidArgument);

  const LweKey key(std::vector<std::int32_t>{1, 0, 1});
  std::vector<Torus32> short_sample(3), long_sample(5);
  REQUIRE_INVALID_ARGUMENT(encrypt_lwe(short_sample, 0, key, 0.0, rng), "n+1=4");
  REQUIRE_INVALID_ARGUMENT(lwe_phase(long_sample, key), "n+1=4");
  // phase = b - (a0 + a2)
  const std::vector<Torus32> s = {10, 1000, 100, 5};
  CHECK(lwe_phase(s, key) == Torus32{5} - 10 - 100);

  LweBatch batch(3, 4);
  CHECK(batch.lwe_dimension() == 3);
  CHECK(batch.count() == 4);
  CHECK(batch.sample_size() == 4);
  CHECK(batch.data().size() == 16);
  batch.sample(2)[3] = 42;
  CHECK(batch.data()[2 * 4 + 3] == 42u);
  for (std::size_t i = 0; i < 4; ++i) CHECK(lwe_phase(batch.sample(i), key) == (i == 2 ? 42u : 0u));
}

TEST_CASE("SecretKey validation; encrypt_bits rejects non-bits", "[lwe][keys]") {
  const Parameters p = toy_insecure();
  Csprng rng = seeded_rng(5);
  LweKey lwe(p.lwe_dimension, rng);
  GlweKey glwe(p.glwe_dimension, p.polynomial_size, rng);
  CHECK_NOTHROW(SecretKey(p, lwe, glwe));
  REQUIRE_INVALID_ARGUMENT(SecretKey(p, LweKey(p.lwe_dimension + 1, rng), glwe), "LWE key");
  REQUIRE_INVALID_ARGUMENT(SecretKey(p, lwe, GlweKey(2, p.polynomial_size, rng)), "GLWE key");
  REQUIRE_INVALID_ARGUMENT(SecretKey(p, lwe, GlweKey(1, p.polynomial_size / 2, rng)), "GLWE key");
  Parameters bad = p;
  bad.polynomial_size = 100;
  REQUIRE_THROWS_AS(SecretKey(bad, rng), InvalidArgument);
  const SecretKey key(p, lwe, glwe);
  const std::vector<std::uint8_t> bits = {0, 1, 2};
  REQUIRE_INVALID_ARGUMENT(encrypt_bits(key, bits, rng), "index 2");
  REQUIRE_INVALID_ARGUMENT(batch_phases(key, LweBatch(p.lwe_dimension + 1, 1)), "n=");
}

TEST_CASE("negacyclic_multiply_exact matches an independent reference", "[glwe][poly]") {
  const std::uint64_t seed = catch_seed(0x9017);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  for (std::size_t N : {1u, 2u, 4u, 8u, 16u, 64u, 256u}) {
    INFO("N " << N);
    for (int trial = 0; trial < 5; ++trial) {
      // Large integer factors exercise the wrap-around modulo 2^32.
      const auto a = trial == 0 ? random_int_poly(rng, N, -64, 63)
                                : random_int_poly(rng, N, std::numeric_limits<std::int32_t>::min(),
                                                  std::numeric_limits<std::int32_t>::max());
      const auto b = random_torus_poly(rng, N);
      std::vector<Torus32> out(N, 0x55555555u);
      negacyclic_multiply_exact(a, b, out);
      CHECK(out == reference_negacyclic(a, b));
    }
  }
  // X * X^(N-1) = X^N = -1.
  const std::size_t N = 8;
  std::vector<std::int32_t> x(N, 0);
  x[1] = 1;
  std::vector<Torus32> xn1(N, 0), out(N);
  xn1[N - 1] = 1;
  negacyclic_multiply_exact(x, xn1, out);
  CHECK(out == std::vector<Torus32>{0xffffffffu, 0, 0, 0, 0, 0, 0, 0});
}

TEST_CASE("negacyclic multiplication validates sizes", "[glwe][poly]") {
  std::vector<std::int32_t> a(8);
  std::vector<Torus32> b(8), b7(7), out(8), out9(9);
  REQUIRE_INVALID_ARGUMENT(negacyclic_multiply_exact(a, b7, out), "b has 7");
  REQUIRE_INVALID_ARGUMENT(negacyclic_multiply_exact(a, b, out9), "out has 9");
  REQUIRE_INVALID_ARGUMENT(negacyclic_multiply_add_binary(a, b7, out), "b has 7");
  REQUIRE_INVALID_ARGUMENT(negacyclic_multiply_add_binary(a, b, out9), "out has 9");
  REQUIRE_INVALID_ARGUMENT(multiply_by_monomial(b, 3, out9), "out has 9");
  REQUIRE_INVALID_ARGUMENT(multiply_by_monomial(b, 16, out), "power=16");
}

TEST_CASE("negacyclic_multiply_add_binary equals the exact product for binary polynomials",
          "[glwe][poly]") {
  const std::uint64_t seed = catch_seed(0xb1);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  for (std::size_t N : {1u, 4u, 32u, 256u, 1024u}) {
    INFO("N " << N);
    const auto s = random_binary_poly(rng, N);
    const auto b = random_torus_poly(rng, N);
    const auto start = random_torus_poly(rng, N);
    std::vector<Torus32> product(N), sum = start;
    negacyclic_multiply_exact(s, b, product);
    negacyclic_multiply_add_binary(s, b, sum);
    for (std::size_t j = 0; j < N; ++j) REQUIRE(sum[j] == start[j] + product[j]);
  }
}

TEST_CASE("multiply_by_monomial: X^N = -1, X^2N = 1, composition", "[glwe][poly]") {
  const std::uint64_t seed = catch_seed(0x3030);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  const std::uint32_t N = 64;
  const auto p = random_torus_poly(rng, N);
  std::vector<Torus32> out(N), out2(N);
  multiply_by_monomial(p, 0, out);
  CHECK(out == p);
  multiply_by_monomial(p, N, out);
  for (std::uint32_t j = 0; j < N; ++j) REQUIRE(out[j] == Torus32{0} - p[j]);
  multiply_by_monomial(out, N, out2);  // X^N X^N = X^2N = 1
  CHECK(out2 == p);
  for (std::uint32_t power = 0; power < 2 * N; power += 7) {
    INFO("power " << power);
    // Against the exact product with the monomial +-X^(power mod N).
    std::vector<std::int32_t> mono(N, 0);
    mono[power % N] = power < N ? 1 : -1;
    std::vector<Torus32> want(N);
    negacyclic_multiply_exact(mono, p, want);
    multiply_by_monomial(p, power, out);
    REQUIRE(out == want);
    // X^power X^(2N - power) = 1.
    multiply_by_monomial(out, (2 * N - power) % (2 * N), out2);
    REQUIRE(out2 == p);
    // X^power X^q = X^((power + q) mod 2N).
    const std::uint32_t q = (power * 3 + 5) % (2 * N);
    multiply_by_monomial(out, q, out2);
    std::vector<Torus32> direct(N);
    multiply_by_monomial(p, (power + q) % (2 * N), direct);
    REQUIRE(out2 == direct);
  }
}

TEST_CASE("gadget decomposition reconstructs x to its precision with digits in range",
          "[glwe][gadget]") {
  const std::uint64_t seed = catch_seed(0x6ad);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> configs;
  for (const auto& p : all_parameter_sets()) configs.emplace_back(p.bk_base_log, p.bk_level_count);
  configs.insert(configs.end(), {{8, 4}, {16, 2}, {1, 32}, {4, 3}, {31, 1}, {2, 8}, {3, 5}});
  for (auto [base_log, levels] : configs) {
    INFO("base_log " << base_log << " levels " << levels);
    const GadgetDecomposition g(base_log, levels);
    CHECK(g.base_log() == base_log);
    CHECK(g.level_count() == levels);
    const std::uint32_t precision = base_log * levels;
    const std::int64_t bound = precision < 32 ? std::int64_t{1} << (32 - precision - 1) : 0;
    const std::int32_t half = std::int32_t{1} << (base_log - 1);
    for (std::uint32_t p = 1; p <= levels; ++p) {
      CHECK(g.gadget_value(p) == Torus32{1} << (32 - p * base_log));
    }
    // Levels are 1-based: 0 and l+1 would shift by 32 or more.
    REQUIRE_INVALID_ARGUMENT(g.gadget_value(0), "gadget_value: p=0 but the levels are 1..");
    REQUIRE_INVALID_ARGUMENT(g.gadget_value(levels + 1), "p=" + std::to_string(levels + 1));
    REQUIRE_INVALID_ARGUMENT(g.digit(123u, 0), "GadgetDecomposition::digit: p=0 but the levels");
    REQUIRE_INVALID_ARGUMENT(g.digit(123u, levels + 1), "p=" + std::to_string(levels + 1));
    CHECK(g.digit(123u, 1) == g.digit_unchecked(123u, 1));
    std::vector<Torus32> xs = {0u, 1u, 0x7fffffffu, 0x80000000u, 0x80000001u, 0xffffffffu,
                               static_cast<Torus32>(bound), static_cast<Torus32>(bound - 1),
                               static_cast<Torus32>(bound + 1),
                               static_cast<Torus32>(-bound), static_cast<Torus32>(3 * bound)};
    for (int i = 0; i < 2000; ++i) xs.push_back(rng.uniform_torus());
    for (Torus32 x : xs) {
      Torus32 sum = 0;
      for (std::uint32_t p = 1; p <= levels; ++p) {
        const std::int32_t d = g.digit(x, p);
        if (d < -half || d >= half) {
          FAIL_CHECK("x " << x << " level " << p << " digit " << d << " outside [-Bg/2, Bg/2)");
        }
        sum += static_cast<Torus32>(d) * g.gadget_value(p);
      }
      const std::int64_t err = signed_diff(sum, x);
      if (!(err >= -bound && err <= bound)) {
        FAIL_CHECK("x " << x << " reconstructs with error " << err << " > " << bound);
      }
    }
    // decompose agrees with digit().
    const std::size_t N = 16;
    std::vector<Torus32> poly(xs.begin(), xs.begin() + N);
    std::vector<std::int32_t> digits(N * levels);
    g.decompose(poly, digits);
    for (std::uint32_t p = 1; p <= levels; ++p) {
      for (std::size_t j = 0; j < N; ++j) REQUIRE(digits[(p - 1) * N + j] == g.digit(poly[j], p));
    }
    std::vector<std::int32_t> wrong(N * levels + 1);
    REQUIRE_INVALID_ARGUMENT(g.decompose(poly, wrong), "digits");
  }
}

TEST_CASE("GadgetDecomposition rejects bad bases and level counts", "[glwe][gadget]") {
  REQUIRE_INVALID_ARGUMENT(GadgetDecomposition(0, 3), "base_log=0");
  REQUIRE_INVALID_ARGUMENT(GadgetDecomposition(7, 0), "level_count=0");
  REQUIRE_INVALID_ARGUMENT(GadgetDecomposition(7, 5), "level_count=5");
  REQUIRE_INVALID_ARGUMENT(GadgetDecomposition(33, 1), "base_log=33");
  // Regression: base_log = 32 passed the old check (product <= 32) and then shifted 1u by
  // 32, which made every digit 0.
  REQUIRE_INVALID_ARGUMENT(GadgetDecomposition(32, 1), "base_log=32");
  CHECK_NOTHROW(GadgetDecomposition(31, 1));
  CHECK_NOTHROW(GadgetDecomposition(1, 32));
}

TEST_CASE("GlweKey rejects non-binary coefficients and wrong sizes", "[glwe]") {
  CHECK_NOTHROW(GlweKey(2, 4, std::vector<std::int32_t>{0, 1, 1, 0, 1, 1, 1, 1}));
  REQUIRE_INVALID_ARGUMENT(GlweKey(1, 4, std::vector<std::int32_t>{0, 1, 0, -1}), "coefficient 3");
  REQUIRE_INVALID_ARGUMENT(GlweKey(1, 4, std::vector<std::int32_t>{0, 2, 0, 1}), "coefficient 1");
  REQUIRE_INVALID_ARGUMENT(GlweKey(1, 4, std::vector<std::int32_t>{0, 1, 0}), "coefficients");
  REQUIRE_INVALID_ARGUMENT(GlweKey(2, 4, std::vector<std::int32_t>{0, 1, 0, 1}), "coefficients");
  REQUIRE_THROWS_AS(GlweKey(0, 4, std::vector<std::int32_t>{}), InvalidArgument);
  Csprng rng = seeded_rng(6);
  REQUIRE_THROWS_AS(GlweKey(1, 0, rng), InvalidArgument);
  const GlweKey key(2, 4, std::vector<std::int32_t>{0, 1, 1, 0, 1, 0, 0, 1});
  CHECK(key.glwe_dimension() == 2);
  CHECK(key.polynomial_size() == 4);
  CHECK(key.polynomial(1)[0] == 1);
  CHECK(key.polynomial(1)[3] == 1);
  const LweKey extracted = key.extracted_lwe_key();
  CHECK(extracted.lwe_dimension() == 8);
  CHECK(std::vector<std::int32_t>(extracted.coefficients().begin(), extracted.coefficients().end()) ==
        std::vector<std::int32_t>{0, 1, 1, 0, 1, 0, 0, 1});
}

TEST_CASE("GLWE encryption decrypts to its message within the noise", "[glwe]") {
  const std::uint64_t seed = catch_seed(0x61e);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  for (const Parameters& p : {toy_insecure(), toy_k2_insecure(), tfhe_lib_128(), default_128()}) {
    INFO("parameter set " << p.name);
    const GlweKey key(p.glwe_dimension, p.polynomial_size, rng);
    const std::size_t N = p.polynomial_size;
    const auto mu = random_torus_poly(rng, N);
    std::vector<Torus32> sample(glwe_size(p)), phase(N);
    encrypt_glwe(sample, mu, key, p.glwe_noise_stddev, rng);
    glwe_phase(sample, key, phase);
    double max_err = 0;
    for (std::size_t j = 0; j < N; ++j) max_err = std::max(max_err, torus_distance(phase[j], mu[j]));
    INFO("max error " << max_err);
    CHECK(max_err < 8 * p.glwe_noise_stddev);
    CHECK(max_err > 0);  // there is noise
    // Encryption of zero (empty message), noiseless: the phase is exactly zero.
    encrypt_glwe(sample, {}, key, 0.0, rng);
    glwe_phase(sample, key, phase);
    CHECK(phase == std::vector<Torus32>(N, 0));
    // The body is masked: not the message itself.
    encrypt_glwe(sample, mu, key, 0.0, rng);
    glwe_phase(sample, key, phase);
    CHECK(phase == mu);
    CHECK(std::vector<Torus32>(sample.begin() + p.glwe_dimension * N, sample.end()) != mu);
  }
}

TEST_CASE("GLWE functions validate sizes", "[glwe]") {
  const Parameters p = toy_insecure();
  Csprng rng = seeded_rng(7);
  const GlweKey key(p.glwe_dimension, p.polynomial_size, rng);
  std::vector<Torus32> sample(glwe_size(p)), bad_sample(glwe_size(p) - 1);
  std::vector<Torus32> mu(p.polynomial_size), bad_mu(p.polynomial_size + 1);
  std::vector<Torus32> phase(p.polynomial_size), bad_phase(p.polynomial_size - 1);
  REQUIRE_INVALID_ARGUMENT(encrypt_glwe(bad_sample, mu, key, 0.0, rng), "encrypt_glwe");
  REQUIRE_INVALID_ARGUMENT(encrypt_glwe(sample, bad_mu, key, 0.0, rng), "message");
  REQUIRE_INVALID_ARGUMENT(glwe_phase(bad_sample, key, phase), "glwe_phase");
  REQUIRE_INVALID_ARGUMENT(glwe_phase(sample, key, bad_phase), "phase");
  std::vector<Torus32> lwe(p.glwe_dimension * p.polynomial_size + 1);
  std::vector<Torus32> bad_lwe(p.glwe_dimension * p.polynomial_size);
  REQUIRE_INVALID_ARGUMENT(sample_extract(bad_sample, p.glwe_dimension, p.polynomial_size, lwe),
                           "GLWE sample");
  REQUIRE_INVALID_ARGUMENT(sample_extract(sample, p.glwe_dimension, p.polynomial_size, bad_lwe),
                           "LWE output");
  // Sizes that agree with N = 0 or k = 0 (1 word each way): refused, not read past.
  std::vector<Torus32> one(1);
  REQUIRE_INVALID_ARGUMENT(sample_extract({}, 1, 0, one), "sample_extract: k=1 and N=0");
  REQUIRE_INVALID_ARGUMENT(sample_extract(std::span<const Torus32>(one), 0, 1, one), "N=1");
  std::vector<Torus32> ggsw(ggsw_size(p)), bad_ggsw(ggsw_size(p) + 1);
  REQUIRE_INVALID_ARGUMENT(encrypt_ggsw(bad_ggsw, 1, key, p, 0.0, rng), "output");
  const GlweKey k2(2, p.polynomial_size, rng);
  REQUIRE_INVALID_ARGUMENT(encrypt_ggsw(ggsw, 1, k2, p, 0.0, rng), "k=2");
  std::vector<Torus32> out(glwe_size(p));
  REQUIRE_INVALID_ARGUMENT(external_product_exact(bad_ggsw, sample, p, out), "GGSW");
  REQUIRE_INVALID_ARGUMENT(external_product_exact(ggsw, bad_sample, p, out), "GLWE");
  REQUIRE_INVALID_ARGUMENT(external_product_exact(ggsw, sample, p, bad_sample), "output");
}

TEST_CASE("sample_extract gives coefficient 0 of the GLWE phase under the extracted key",
          "[glwe]") {
  const std::uint64_t seed = catch_seed(0xe77);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  for (std::uint32_t k : {1u, 2u, 3u}) {
    for (std::uint32_t N : {4u, 256u, 1024u}) {
      INFO("k " << k << " N " << N);
      const GlweKey key(k, N, rng);
      const LweKey extracted_key = key.extracted_lwe_key();
      REQUIRE(extracted_key.lwe_dimension() == k * N);
      // Any GLWE sample, uniformly random: the identity is exact.
      const auto sample = random_torus_poly(rng, std::size_t{k + 1} * N);
      std::vector<Torus32> phase(N), lwe(k * N + 1);
      glwe_phase(sample, key, phase);
      sample_extract(sample, k, N, lwe);
      CHECK(lwe_phase(lwe, extracted_key) == phase[0]);
      // Coefficient j: extract from X^(-j) times the sample.
      std::vector<Torus32> rotated(sample.size());
      for (std::uint32_t j : {1u, N / 2, N - 1}) {
        for (std::uint32_t c = 0; c <= k; ++c) {
          multiply_by_monomial(std::span<const Torus32>(sample).subspan(c * N, N), 2 * N - j,
                               std::span<Torus32>(rotated).subspan(c * N, N));
        }
        sample_extract(rotated, k, N, lwe);
        CHECK(lwe_phase(lwe, extracted_key) == phase[j]);
      }
    }
  }
}

TEST_CASE("external product with a GGSW of m in {0,1} multiplies the GLWE message by m",
          "[glwe][ggsw]") {
  const std::uint64_t seed = catch_seed(0x6657);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  for (const Parameters& p : {toy_insecure(), toy_k2_insecure(), tfhe_lib_128()}) {
    INFO("parameter set " << p.name);
    const std::size_t N = p.polynomial_size;
    const GlweKey key(p.glwe_dimension, p.polynomial_size, rng);
    // Message: multiples of 1/8 on every coefficient.
    std::vector<Torus32> mu(N);
    for (auto& m : mu) m = static_cast<Torus32>(rng.uniform_below(8)) << 29;
    std::vector<Torus32> glwe(glwe_size(p)), ggsw(ggsw_size(p)), out(glwe_size(p)), phase(N);
    encrypt_glwe(glwe, mu, key, p.glwe_noise_stddev, rng);
    for (std::int32_t m : {0, 1}) {
      INFO("m " << m);
      encrypt_ggsw(ggsw, m, key, p, p.glwe_noise_stddev, rng);
      external_product_exact(ggsw, glwe, p, out);
      glwe_phase(out, key, phase);
      double max_err = 0;
      for (std::size_t j = 0; j < N; ++j) {
        max_err = std::max(max_err, torus_distance(phase[j], static_cast<Torus32>(m) * mu[j]));
      }
      INFO("max error " << max_err);
      CHECK(max_err < 1.0 / 256);
    }
    // A noiseless GGSW of 1 reproduces the message up to the decomposition precision.
    encrypt_ggsw(ggsw, 1, key, p, 0.0, rng);
    external_product_exact(ggsw, glwe, p, out);
    glwe_phase(out, key, phase);
    double max_err = 0;
    for (std::size_t j = 0; j < N; ++j) max_err = std::max(max_err, torus_distance(phase[j], mu[j]));
    CHECK(max_err < 1.0 / 256);
  }
}

TEST_CASE("GGSW rows encrypt m times the gadget value on the right polynomial", "[glwe][ggsw]") {
  const Parameters p = toy_k2_insecure();
  Csprng rng = seeded_rng(8);
  const GlweKey key(p.glwe_dimension, p.polynomial_size, rng);
  const std::size_t N = p.polynomial_size, k = p.glwe_dimension, l = p.bk_level_count;
  std::vector<Torus32> ggsw(ggsw_size(p)), phase(N);
  encrypt_ggsw(ggsw, 1, key, p, 0.0, rng);
  const GadgetDecomposition g(p.bk_base_log, p.bk_level_count);
  // Row (i, p) = Z + g_p * (0,..,1 at polynomial i,..,0): for i = k (the body) the phase is
  // g_p at coefficient 0; for i < k it is -g_p * S_i.
  for (std::size_t i = 0; i <= k; ++i) {
    for (std::size_t lev = 1; lev <= l; ++lev) {
      INFO("row " << i << "," << lev);
      const auto row = std::span<const Torus32>(ggsw).subspan((i * l + lev - 1) * glwe_size(p),
                                                              glwe_size(p));
      glwe_phase(row, key, phase);
      const Torus32 gv = g.gadget_value(static_cast<std::uint32_t>(lev));
      for (std::size_t j = 0; j < N; ++j) {
        const Torus32 want = i == k ? (j == 0 ? gv : 0u)
                                    : Torus32{0} - gv * static_cast<Torus32>(
                                                            key.polynomial(
                                                                static_cast<std::uint32_t>(i))[j]);
        REQUIRE(phase[j] == want);
      }
    }
  }
}

// The noise of every kind of encryption is its parameter set's standard deviation: not only
// below a bound (a mutation that halved the LWE noise, weakening every key, passed the bounds),
// but within 10% of it over thousands of samples (the standard error of a standard deviation
// from n samples is about 1/sqrt(2n): 1.1% at 4000).
TEST_CASE("the noise of LWE, key-switching, GLWE and GGSW encryptions is the set's",
          "[lwe][glwe]") {
  const std::uint64_t seed = catch_seed(0x5d);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  // Standard deviation (torus fraction) of errors given in units of 2^-32, around zero.
  const auto stddev = [](const std::vector<std::int64_t>& errors) {
    double sum = 0;
    for (const std::int64_t e : errors) sum += static_cast<double>(e) * static_cast<double>(e);
    return std::sqrt(sum / static_cast<double>(errors.size())) * 0x1p-32;
  };
  const auto near = [](double measured, double want) {
    INFO("measured " << measured << ", the set's " << want);
    CHECK(measured > 0.9 * want);
    CHECK(measured < 1.1 * want);
  };

  // Fresh LWE samples (tfhe_lib_128) and the client's encrypt_bits (toy).
  const Parameters p = tfhe_lib_128();
  const LweKey key(p.lwe_dimension, rng);
  std::vector<Torus32> sample(p.lwe_dimension + 1);
  std::vector<std::int64_t> errors;
  for (int i = 0; i < 4000; ++i) {
    const Torus32 mu = rng.uniform_torus();
    encrypt_lwe(sample, mu, key, p.lwe_noise_stddev, rng);
    errors.push_back(signed_diff(lwe_phase(sample, key), mu));
  }
  near(stddev(errors), p.lwe_noise_stddev);

  const Parameters toy = toy_insecure();
  const SecretKey secret(toy, rng);
  const std::vector<std::uint8_t> bits(4000, 1);
  const LweBatch batch = encrypt_bits(secret, bits, rng);
  errors.clear();
  for (const Torus32 phase : batch_phases(secret, batch)) {
    errors.push_back(signed_diff(phase, encode_bit(true)));
  }
  near(stddev(errors), toy.lwe_noise_stddev);

  // The key-switching key: sample v-1 of (i, j) encrypts v * s'_i / base^(j+1).
  const KeySwitchingKey ksk = KeySwitchingKey::generate(secret, rng);
  const auto extracted = secret.glwe_key().coefficients();
  const std::size_t base = std::size_t{1} << toy.ks_base_log, n1 = toy.lwe_dimension + 1;
  errors.clear();
  for (std::size_t i = 0; i < extracted.size(); ++i) {
    for (std::size_t j = 0; j < toy.ks_level_count; ++j) {
      for (std::size_t v = 1; v < base; ++v) {
        const std::span<const Torus32> ks(ksk.level(i, j) + (v - 1) * n1, n1);
        const auto shift = 32 - toy.ks_base_log * static_cast<std::uint32_t>(j + 1);
        const Torus32 message = static_cast<Torus32>(v * extracted[i]) << shift;
        errors.push_back(signed_diff(lwe_phase(ks, secret.lwe_key()), message));
      }
    }
  }
  REQUIRE(errors.size() == 256 * 5 * 7);
  near(stddev(errors), toy.lwe_noise_stddev);

  // GLWE samples (tfhe_lib_128: 4 x 1024 coefficients) and the rows of GGSW encryptions of 0
  // (toy: 4 rows of 256 coefficients each), against the GLWE noise.
  const GlweKey glwe_key(p.glwe_dimension, p.polynomial_size, rng);
  std::vector<Torus32> glwe(glwe_size(p)), phase(p.polynomial_size);
  errors.clear();
  for (int i = 0; i < 4; ++i) {
    const auto mu = random_torus_poly(rng, p.polynomial_size);
    encrypt_glwe(glwe, mu, glwe_key, p.glwe_noise_stddev, rng);
    glwe_phase(glwe, glwe_key, phase);
    for (std::size_t c = 0; c < phase.size(); ++c) errors.push_back(signed_diff(phase[c], mu[c]));
  }
  near(stddev(errors), p.glwe_noise_stddev);

  const std::size_t rows = toy.ggsw_row_count();
  std::vector<Torus32> ggsw(ggsw_size(toy)), row_phase(toy.polynomial_size);
  errors.clear();
  for (int i = 0; i < 4; ++i) {
    encrypt_ggsw(ggsw, 0, secret.glwe_key(), toy, toy.glwe_noise_stddev, rng);
    for (std::size_t r = 0; r < rows; ++r) {
      glwe_phase(std::span<const Torus32>(ggsw).subspan(r * glwe_size(toy), glwe_size(toy)),
                 secret.glwe_key(), row_phase);
      for (const Torus32 x : row_phase) errors.push_back(static_cast<std::int32_t>(x));
    }
  }
  REQUIRE(errors.size() == 4 * 4 * 256);
  // 2^-30 is 4 units of 2^-32: rounding to the grid adds a variance of 1/12 unit^2 (0.5%).
  near(stddev(errors), toy.glwe_noise_stddev);
}
