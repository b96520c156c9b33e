// Csprng: reproducibility of the seeded test mode, independence of OS-keyed generators,
// bounds and statistics of the samplers, and argument validation.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "test_support.hpp"
#include "torusgate/core/random.hpp"
#include "torusgate/core/torus.hpp"

using namespace torusgate;
using torusgate::test::seeded_rng;

namespace {

std::vector<std::uint32_t> draw_u32(Csprng& rng, std::size_t count) {
  std::vector<std::uint32_t> v(count);
  for (auto& x : v) x = rng.uniform_u32();
  return v;
}

}  // namespace

TEST_CASE("deterministic Csprng is reproducible for equal seeds", "[random]") {
  const std::uint64_t seed = torusgate::test::catch_seed(0x1234);
  INFO("seed " << seed);
  Csprng a = seeded_rng(seed), b = seeded_rng(seed);
  // More than one 4096-byte refill.
  CHECK(draw_u32(a, 3000) == draw_u32(b, 3000));
  CHECK(a.uniform_u64() == b.uniform_u64());
  CHECK(a.gaussian_torus(1e-3) == b.gaussian_torus(1e-3));
  CHECK(a.uniform_below(1000) == b.uniform_below(1000));
  std::vector<std::uint8_t> ba(777), bb(777);
  a.fill_bytes(ba);
  b.fill_bytes(bb);
  CHECK(ba == bb);
}

TEST_CASE("deterministic Csprng streams differ for different seeds", "[random]") {
  for (std::uint64_t seed : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{0xdeadbeef},
                              ~std::uint64_t{0}}) {
    INFO("seed " << seed);
    Csprng a = seeded_rng(seed), b = seeded_rng(seed + 1), c = seeded_rng(seed ^ (1ull << 63));
    const auto va = draw_u32(a, 64), vb = draw_u32(b, 64), vc = draw_u32(c, 64);
    CHECK(va != vb);
    CHECK(va != vc);
    CHECK(vb != vc);
  }
}

TEST_CASE("fill_bytes gives one stream however it is split", "[random]") {
  const std::uint64_t seed = 77;
  INFO("seed " << seed);
  Csprng whole = seeded_rng(seed), parts = seeded_rng(seed);
  std::vector<std::uint8_t> all(10000), pieces(10000);
  whole.fill_bytes(all);
  std::size_t pos = 0;
  for (std::size_t len : {1u, 4095u, 3u, 4096u, 1805u}) {
    parts.fill_bytes(std::span<std::uint8_t>(pieces).subspan(pos, len));
    pos += len;
  }
  REQUIRE(pos == pieces.size());
  CHECK(all == pieces);
  // Not constant: a stream of zeros would pass the comparison above.
  std::array<int, 256> seen{};
  for (auto b : all) seen[b] = 1;
  int distinct = 0;
  for (int s : seen) distinct += s;
  CHECK(distinct == 256);
}

TEST_CASE("OS-keyed Csprng instances differ and are not deterministic", "[random]") {
  Csprng a, b;
  CHECK_FALSE(a.is_deterministic());
  CHECK_FALSE(b.is_deterministic());
  CHECK(seeded_rng(5).is_deterministic());
  std::array<std::uint64_t, 4> va{}, vb{};
  for (auto& x : va) x = a.uniform_u64();
  for (auto& x : vb) x = b.uniform_u64();
  CHECK(va != vb);
  // Nor equal to the seeded stream of seed 0.
  Csprng z = seeded_rng(0);
  std::array<std::uint64_t, 4> vz{};
  for (auto& x : vz) x = z.uniform_u64();
  CHECK(va != vz);
}

TEST_CASE("uniform_below stays below its bound and covers it", "[random]") {
  const std::uint64_t seed = torusgate::test::catch_seed(0xb0b);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  for (int i = 0; i < 100; ++i) CHECK(rng.uniform_below(1) == 0);
  const std::uint64_t bounds[] = {2, 3, 7, 10, 1000, (std::uint64_t{1} << 63) + 1,
                                  std::numeric_limits<std::uint64_t>::max()};
  for (std::uint64_t bound : bounds) {
    INFO("bound " << bound);
    std::uint64_t max_seen = 0;
    for (int i = 0; i < 2000; ++i) {
      const std::uint64_t v = rng.uniform_below(bound);
      REQUIRE(v < bound);
      max_seen = std::max(max_seen, v);
    }
    // The largest of 2000 draws is in the top 1% of the range (fails with prob. 2e-9).
    CHECK(static_cast<double>(max_seen) >= 0.99 * static_cast<double>(bound - 1));
  }
  // Every value of a small range, each about equally often (chi-square, 6 degrees of freedom).
  const int bound = 7, draws = 70000;
  std::array<int, bound> counts{};
  for (int i = 0; i < draws; ++i) counts[rng.uniform_below(bound)]++;
  double chi2 = 0;
  const double expected = static_cast<double>(draws) / bound;
  for (int c : counts) chi2 += (c - expected) * (c - expected) / expected;
  CHECK(chi2 < 30.0);  // p < 4e-5 for 6 degrees of freedom
}

TEST_CASE("uniform_below(0) throws", "[random]") {
  Csprng rng = seeded_rng(1);
  REQUIRE_INVALID_ARGUMENT(rng.uniform_below(0), "bound");
}

TEST_CASE("gaussian_torus has the requested mean and standard deviation", "[random]") {
  const std::uint64_t seed = torusgate::test::catch_seed(0x9a55);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  const double stddev = std::ldexp(1.0, -15);
  const int samples = 20000;
  double sum = 0, sum2 = 0, max_abs = 0;
  for (int i = 0; i < samples; ++i) {
    const double e = torus_to_double(rng.gaussian_torus(stddev));
    sum += e;
    sum2 += e * e;
    max_abs = std::max(max_abs, std::fabs(e));
  }
  const double mean = sum / samples;
  const double sd = std::sqrt(sum2 / samples - mean * mean);
  INFO("mean " << mean << " stddev " << sd << " max " << max_abs);
  // Mean within 5 standard errors; sample stddev within 5 of its standard errors (1/sqrt(2n)).
  CHECK(std::fabs(mean) < 5 * stddev / std::sqrt(samples));
  CHECK(std::fabs(sd / stddev - 1) < 5 / std::sqrt(2.0 * samples));
  CHECK(max_abs < 7 * stddev);
  CHECK(max_abs > 2 * stddev);

  // With a message: the noise is added to mu.
  const Torus32 mu = torus_from_fraction(3, 8);
  double sum_mu = 0;
  for (int i = 0; i < 2000; ++i) {
    const Torus32 x = rng.gaussian_torus(mu, stddev);
    CHECK(torus_distance(x, mu) < 7 * stddev);
    sum_mu += torus_to_double(x - mu);
  }
  CHECK(std::fabs(sum_mu / 2000) < 5 * stddev / std::sqrt(2000.0));
}

TEST_CASE("gaussian_torus with stddev 0 is exact; bad stddev throws", "[random]") {
  Csprng rng = seeded_rng(2);
  for (int i = 0; i < 100; ++i) CHECK(rng.gaussian_torus(0.0) == 0u);
  CHECK(rng.gaussian_torus(Torus32{12345}, 0.0) == 12345u);
  REQUIRE_INVALID_ARGUMENT(rng.gaussian_torus(-1e-5), "stddev");
  REQUIRE_INVALID_ARGUMENT(rng.gaussian_torus(std::numeric_limits<double>::quiet_NaN()), "stddev");
  REQUIRE_INVALID_ARGUMENT(rng.gaussian_torus(std::numeric_limits<double>::infinity()), "stddev");
  REQUIRE_INVALID_ARGUMENT(rng.gaussian_torus(Torus32{1}, -0.5), "stddev");
}

TEST_CASE("standard_normal and uniform_open_unit have the right ranges and moments",
          "[random]") {
  const std::uint64_t seed = torusgate::test::catch_seed(0x5e);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  const int samples = 20000;
  double sum = 0, sum2 = 0, usum = 0;
  for (int i = 0; i < samples; ++i) {
    const double z = rng.standard_normal();
    sum += z;
    sum2 += z * z;
    const double u = rng.uniform_open_unit();
    REQUIRE(u > 0.0);
    REQUIRE(u <= 1.0);
    usum += u;
  }
  CHECK(std::fabs(sum / samples) < 5 / std::sqrt(samples));
  CHECK(std::fabs(sum2 / samples - 1) < 5 * std::sqrt(2.0 / samples));
  CHECK(std::fabs(usum / samples - 0.5) < 5 * std::sqrt(1.0 / 12 / samples));
}

TEST_CASE("uniform_bit is 0 or 1 and balanced", "[random]") {
  const std::uint64_t seed = torusgate::test::catch_seed(0xb17);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  const int samples = 20000;
  int ones = 0, runs = 0, prev = -1;
  for (int i = 0; i < samples; ++i) {
    const std::int32_t b = rng.uniform_bit();
    REQUIRE((b == 0 || b == 1));
    ones += b;
    if (b != prev) ++runs;
    prev = b;
  }
  // 5 standard deviations of a binomial(20000, 1/2): 5 * sqrt(5000) ~ 354.
  CHECK(std::abs(ones - samples / 2) < 354);
  // Number of runs of a fair independent sequence: mean n/2, stddev sqrt(n)/2.
  CHECK(std::abs(runs - samples / 2) < 5 * std::sqrt(samples) / 2);
}

TEST_CASE("Csprng: consecutive blocks differ (a fresh nonce per refill)", "[random]") {
  // A nonce reused under the key would repeat the 4096-byte keystream block, so masks of
  // later encryptions would equal earlier ones.
  const auto check_blocks = [](Csprng rng) {
    std::vector<std::uint8_t> first(4096), second(4096), third(4096);
    rng.fill_bytes(first);
    rng.fill_bytes(second);
    rng.fill_bytes(third);
    CHECK(first != second);
    CHECK(second != third);
    CHECK(first != third);
  };
  check_blocks(seeded_rng(0xb10c));
  check_blocks(Csprng());
}

TEST_CASE("Csprng: not copyable; a moved-from generator refuses to draw", "[random]") {
  // A copy would repeat the stream: every mask and noise value of the original.
  STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<Csprng>);
  STATIC_REQUIRE_FALSE(std::is_copy_assignable_v<Csprng>);
  STATIC_REQUIRE(std::is_nothrow_move_constructible_v<Csprng>);
  Csprng a = seeded_rng(77), reference = seeded_rng(77);
  CHECK(a.uniform_u32() == reference.uniform_u32());
  Csprng b = std::move(a);  // b goes on with a's stream, from where a stopped
  CHECK(draw_u32(b, 2000) == draw_u32(reference, 2000));
  REQUIRE_INVALID_ARGUMENT(a.uniform_u32(), "Csprng: drawn from after being moved from");
  std::vector<std::uint8_t> bytes(8);
  REQUIRE_INVALID_ARGUMENT(a.fill_bytes(bytes), "after being moved from");
  REQUIRE_INVALID_ARGUMENT(a.gaussian_torus(1e-3), "after being moved from");
  Csprng c = seeded_rng(5);
  c = std::move(b);
  CHECK(c.uniform_u64() == reference.uniform_u64());
  REQUIRE_INVALID_ARGUMENT(b.uniform_u64(), "after being moved from");
  c = Csprng();  // a spent or used generator takes a fresh one's state
  CHECK(draw_u32(c, 4) != std::vector<std::uint32_t>(4, 0));
}
