// Shared helpers of the Catch2 tests: seeded generators, keys made once per executable for
// each parameter set, and a check that a call throws InvalidArgument naming what is wrong.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "torusgate/core/error.hpp"
#include "torusgate/core/keys.hpp"
#include "torusgate/core/params.hpp"
#include "torusgate/core/random.hpp"

namespace torusgate::test {

// Reproducible generator for tests (print the seed with INFO on failure).
inline Csprng seeded_rng(std::uint64_t seed) {
  return Csprng::deterministic(seed, testing::insecure_deterministic);
}

// A seed derived from Catch's --rng-seed and a per-test salt, so that runs with
// --rng-seed time cover new cases while a printed seed reproduces a failure.
inline std::uint64_t catch_seed(std::uint64_t salt) {
  return (static_cast<std::uint64_t>(Catch::rngSeed()) << 32) ^ salt;
}

// `count` random bits (0 or 1) from `rng`.
inline std::vector<std::uint8_t> random_bits(Csprng& rng, std::size_t count) {
  std::vector<std::uint8_t> bits(count);
  for (auto& x : bits) x = static_cast<std::uint8_t>(rng.uniform_bit());
  return bits;
}

// Client and cloud keys of one parameter set, generated once per test executable from a
// deterministic generator seeded by the parameter set's fingerprint. unroll 2: a cloud key
// with an unrolled bootstrapping key for the same secret key as unroll 1.
struct TestKeys {
  Parameters params;
  SecretKey secret;
  std::shared_ptr<const CloudKey> cloud;
};

inline const TestKeys& keys_for(const Parameters& params, std::uint32_t unroll = 1) {
  static std::map<std::string, std::unique_ptr<TestKeys>> cache;
  const std::string name = params.name + (unroll == 1 ? "" : "/unroll" + std::to_string(unroll));
  auto it = cache.find(name);
  if (it == cache.end()) {
    std::unique_ptr<TestKeys> keys;
    if (unroll == 1) {
      Csprng rng = seeded_rng(params.fingerprint());
      SecretKey secret(params, rng);
      auto cloud = std::make_shared<const CloudKey>(CloudKey::generate(secret, rng));
      keys = std::make_unique<TestKeys>(TestKeys{params, std::move(secret), std::move(cloud)});
    } else {
      const TestKeys& standard = keys_for(params);
      Csprng rng = seeded_rng(params.fingerprint() ^ unroll);
      auto cloud = std::make_shared<const CloudKey>(
          CloudKey::generate(standard.secret, rng, unroll));
      keys = std::make_unique<TestKeys>(TestKeys{params, standard.secret, std::move(cloud)});
    }
    it = cache.emplace(name, std::move(keys)).first;
  }
  REQUIRE(it->second->params == params);
  return *it->second;
}

}  // namespace torusgate::test

// Requires that `expr` throws torusgate::InvalidArgument whose message contains `fragment`.
#define REQUIRE_INVALID_ARGUMENT(expr, fragment)                                   \
  do {                                                                            \
    REQUIRE_THROWS_AS(expr, ::torusgate::InvalidArgument);                        \
    REQUIRE_THROWS_WITH(expr, Catch::Matchers::Contains(fragment));               \
  } while (false)
