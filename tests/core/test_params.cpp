// Parameter sets: the named sets' values, validation of every field, lookup by name and
// fingerprints.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "test_support.hpp"
#include "torusgate/core/params.hpp"
#include "torusgate/core/version.hpp"

using namespace torusgate;

namespace {

void check_values(const Parameters& p, std::uint32_t n, std::uint32_t k, std::uint32_t N,
                  std::uint32_t bk_base_log, std::uint32_t bk_levels, std::uint32_t ks_base_log,
                  std::uint32_t ks_levels, double sigma_lwe, double sigma_glwe, bool insecure) {
  INFO("parameter set " << p.name);
  CHECK(p.lwe_dimension == n);
  CHECK(p.glwe_dimension == k);
  CHECK(p.polynomial_size == N);
  CHECK(p.bk_base_log == bk_base_log);
  CHECK(p.bk_level_count == bk_levels);
  CHECK(p.ks_base_log == ks_base_log);
  CHECK(p.ks_level_count == ks_levels);
  CHECK(p.lwe_noise_stddev == sigma_lwe);
  CHECK(p.glwe_noise_stddev == sigma_glwe);
  CHECK(p.insecure == insecure);
  CHECK(p.extracted_lwe_dimension() == k * N);
  CHECK(p.ggsw_row_count() == (k + 1) * bk_levels);
  CHECK_NOTHROW(p.validate());
}

}  // namespace

TEST_CASE("named parameter sets have the design values", "[params]") {
  check_values(tfhe_lib_128(), 630, 1, 1024, 7, 3, 2, 8, std::ldexp(1.0, -15),
               std::ldexp(1.0, -25), false);
  CHECK(tfhe_lib_128().name == "tfhe_lib_128");
  check_values(tfhe_lib_80(), 500, 1, 1024, 10, 2, 2, 8, 2.44e-5, 7.18e-9, false);
  CHECK(tfhe_lib_80().name == "tfhe_lib_80");
  check_values(default_128(), 837, 2, 1024, 10, 2, 3, 5, 3.3747e-6, 9.3132e-10, false);
  CHECK(default_128().name == "default_128");
}

TEST_CASE("toy parameter sets are insecure and say so in their names", "[params]") {
  for (const Parameters& p : {toy_insecure(), toy_k2_insecure()}) {
    INFO("parameter set " << p.name);
    CHECK(p.insecure);
    CHECK(p.name.find("INSECURE") != std::string::npos);
    CHECK(p.lwe_dimension < 630);
    CHECK_NOTHROW(p.validate());
  }
  CHECK(toy_insecure().glwe_dimension == 1);
  CHECK(toy_k2_insecure().glwe_dimension == 2);
  CHECK(toy_insecure().polynomial_size == 256);
  CHECK(toy_insecure().lwe_dimension == 64);
}

TEST_CASE("all_parameter_sets lists each named set once and by_name finds it", "[params]") {
  const auto sets = all_parameter_sets();
  REQUIRE(sets.size() == 5);
  std::set<std::string> names;
  for (const auto& p : sets) {
    INFO("parameter set " << p.name);
    CHECK(names.insert(p.name).second);
    CHECK_NOTHROW(p.validate());
    CHECK(parameters_by_name(p.name) == p);
    CHECK(p.insecure == (p.name.find("INSECURE") != std::string::npos));
  }
  CHECK(names == std::set<std::string>{"tfhe_lib_128", "tfhe_lib_80", "default_128",
                                       "toy_INSECURE", "toy_k2_INSECURE"});
}

TEST_CASE("parameters_by_name rejects unknown names and lists the known ones", "[params]") {
  REQUIRE_THROWS_AS(parameters_by_name("tfhe_lib_129"), InvalidArgument);
  for (const auto& p : all_parameter_sets()) {
    REQUIRE_THROWS_WITH(parameters_by_name("no_such_set"), Catch::Matchers::Contains(p.name));
  }
  REQUIRE_THROWS_WITH(parameters_by_name("no_such_set"), Catch::Matchers::Contains("no_such_set"));
  REQUIRE_THROWS_AS(parameters_by_name(""), InvalidArgument);
  // Lookup is exact: case matters.
  REQUIRE_THROWS_AS(parameters_by_name("TFHE_LIB_128"), InvalidArgument);
}

TEST_CASE("validate rejects each field out of range", "[params]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  struct Case {
    const char* what;
    std::function<void(Parameters&)> change;
    const char* fragment;  // the message names the field
  };
  const std::vector<Case> cases = {
      {"empty name", [](Parameters& p) { p.name.clear(); }, "name"},
      {"n = 0", [](Parameters& p) { p.lwe_dimension = 0; }, "lwe_dimension"},
      {"n too large", [](Parameters& p) { p.lwe_dimension = 4097; }, "lwe_dimension"},
      {"k = 0", [](Parameters& p) { p.glwe_dimension = 0; }, "glwe_dimension"},
      {"k too large", [](Parameters& p) { p.glwe_dimension = 9; }, "glwe_dimension"},
      {"N = 0", [](Parameters& p) { p.polynomial_size = 0; }, "polynomial_size"},
      {"N not a power of two", [](Parameters& p) { p.polynomial_size = 1000; }, "polynomial_size"},
      {"N = 3 * 512", [](Parameters& p) { p.polynomial_size = 1536; }, "polynomial_size"},
      {"N too small", [](Parameters& p) { p.polynomial_size = 8; }, "polynomial_size"},
      {"N too large", [](Parameters& p) { p.polynomial_size = 32768; }, "polynomial_size"},
      {"bk_base_log = 0", [](Parameters& p) { p.bk_base_log = 0; }, "bk_base_log"},
      {"bk_base_log = 32", [](Parameters& p) { p.bk_base_log = 32; }, "bk_base_log"},
      {"bk_level_count = 0", [](Parameters& p) { p.bk_level_count = 0; }, "bk_level_count"},
      {"bk 7 * 5 > 32", [](Parameters& p) { p.bk_level_count = 5; }, "bk_level_count"},
      {"bk 11 * 3 > 32",
       [](Parameters& p) {
         p.bk_base_log = 11;
         p.bk_level_count = 3;
       },
       "bk_level_count"},
      {"ks_base_log = 0", [](Parameters& p) { p.ks_base_log = 0; }, "ks_base_log"},
      {"ks_base_log = 17", [](Parameters& p) { p.ks_base_log = 17; }, "ks_base_log"},
      {"ks_level_count = 0", [](Parameters& p) { p.ks_level_count = 0; }, "ks_level_count"},
      {"ks 2 * 17 > 32", [](Parameters& p) { p.ks_level_count = 17; }, "ks_level_count"},
      {"negative sigma_lwe", [](Parameters& p) { p.lwe_noise_stddev = -1e-5; }, "lwe_noise_stddev"},
      {"NaN sigma_lwe", [=](Parameters& p) { p.lwe_noise_stddev = nan; }, "lwe_noise_stddev"},
      {"infinite sigma_lwe", [=](Parameters& p) { p.lwe_noise_stddev = inf; }, "lwe_noise_stddev"},
      {"sigma_lwe = 1/4", [](Parameters& p) { p.lwe_noise_stddev = 0.25; }, "lwe_noise_stddev"},
      {"negative sigma_glwe", [](Parameters& p) { p.glwe_noise_stddev = -1e-9; },
       "glwe_noise_stddev"},
      {"NaN sigma_glwe", [=](Parameters& p) { p.glwe_noise_stddev = nan; }, "glwe_noise_stddev"},
      {"infinite sigma_glwe", [=](Parameters& p) { p.glwe_noise_stddev = -inf; },
       "glwe_noise_stddev"},
      {"insecure without INSECURE", [](Parameters& p) { p.insecure = true; }, "INSECURE"},
  };
  for (const auto& c : cases) {
    Parameters p = tfhe_lib_128();
    c.change(p);
    INFO("case: " << c.what);
    REQUIRE_INVALID_ARGUMENT(p.validate(), c.fragment);
  }
}

TEST_CASE("validate accepts the edges of each range", "[params]") {
  Parameters p = tfhe_lib_128();
  p.name = "edges";
  p.bk_base_log = 8;
  p.bk_level_count = 4;  // exactly 32 bits
  p.ks_base_log = 16;
  p.ks_level_count = 2;
  // One torus LSB, the least a set not marked insecure has: the 80-bit curve takes it from
  // dimension 834 (2^-32.02 at 834, 2^-31.98 at 833).
  p.lwe_dimension = 1024;
  p.lwe_noise_stddev = 0x1p-32;
  p.glwe_noise_stddev = 0x1p-32;
  CHECK_NOTHROW(p.validate());
  p.name = "edges_INSECURE";
  p.insecure = true;
  p.polynomial_size = 16;  // far below every curve: only an insecure set
  p.lwe_noise_stddev = 0;  // an insecure set may have none
  p.glwe_noise_stddev = 0;
  CHECK_NOTHROW(p.validate());
  Parameters toy = toy_insecure();
  toy.name = "my_INSECURE_set";
  CHECK_NOTHROW(toy.validate());
  Parameters mine = tfhe_lib_80();
  mine.insecure = false;  // a secure set may have any name
  mine.name = "my_set";
  CHECK_NOTHROW(mine.validate());
}

TEST_CASE("security curves: the built-in sets' levels, each curve's edge, validate's floor",
          "[params]") {
  const std::vector<SecurityCurve>& curves = security_curves();
  REQUIRE(curves.size() == 4);
  CHECK(curves[0].bits == 80);
  CHECK(curves[3].bits == 192);
  // The sets as docs/security.md and docs/parameters.md give them.
  CHECK(curve_security(tfhe_lib_128()).lwe_bits == 112);
  CHECK(curve_security(tfhe_lib_128()).glwe_bits == 112);
  CHECK(curve_security(tfhe_lib_80()).lwe_bits == 80);
  CHECK(curve_security(tfhe_lib_80()).glwe_bits == 112);
  CHECK(curve_security(tfhe_lib_80()).bits() == 80);
  CHECK(curve_security(default_128()).lwe_bits == 128);
  CHECK(curve_security(default_128()).glwe_bits == 192);
  CHECK(curve_security(default_128()).bits() == 128);
  CHECK(curve_security(toy_insecure()).bits() == 0);
  // tfhe_lib_128's LWE key: 128 bits would need sigma 2^-13.776 at n = 630.
  CHECK(curves[2].least_log2_stddev(630) == Approx(-13.7761).margin(0.0001));
  // On the curve is at the level; a hair below is not.
  for (const SecurityCurve& curve : curves) {
    INFO(curve.bits << " bits");
    const double on_curve = std::exp2(curve.least_log2_stddev(1000));
    CHECK(curve_security_bits(1000, on_curve) >= curve.bits);
    CHECK(curve_security_bits(1000, on_curve * (1 - 1e-12)) < curve.bits);
    // Below the least dimension no noise is enough.
    CHECK(curve.least_log2_stddev(curve.minimal_dimension - 1) ==
          std::numeric_limits<double>::infinity());
    CHECK(curve_security_bits(curve.minimal_dimension - 1, 0.24) < curve.bits);
  }
  CHECK(curve_security_bits(531, 0.24) == 128);  // 192 bits starts at 532
  CHECK(curve_security_bits(532, 0.24) == 192);
  CHECK(curve_security_bits(1024, 0) == 0);
  CHECK(curve_security_bits(1024, std::nan("")) == 0);

  // validate: a set not marked insecure meets the 80-bit curve with both keys.
  Parameters p = toy_insecure();
  p.insecure = false;
  p.name = "my_set";
  REQUIRE_INVALID_ARGUMENT(p.validate(),
                           "set 'my_set' is below 80 bits of security by the lattice "
                           "estimator's curves (LWE n=64 is below the least dimension 450 of "
                           "the 80-bit curve); raise the dimension or the noise, or mark it "
                           "insecure (and name it INSECURE) for tests");
  p = tfhe_lib_80();
  p.name = "my_set";
  p.lwe_noise_stddev = 0x1p-19;  // the 80-bit curve asks 2^-18.51 at n = 500
  REQUIRE_INVALID_ARGUMENT(p.validate(),
                           "(LWE n=500 has sigma=2^-19.00 but the 80-bit curve asks 2^-18.51)");
  p.lwe_noise_stddev = 0x1p-18;
  CHECK_NOTHROW(p.validate());
  p.polynomial_size = 256;  // GLWE k*N = 256: below the least dimension
  REQUIRE_INVALID_ARGUMENT(p.validate(),
                           "(GLWE k*N=256 is below the least dimension 450 of the 80-bit curve)");
  p.polynomial_size = 512;  // 512 asks 2^-19.00; 7.18e-9 is 2^-27.05
  REQUIRE_INVALID_ARGUMENT(p.validate(),
                           "(GLWE k*N=512 has sigma=2^-27.05 but the 80-bit curve asks 2^-19.00)");
  p.glwe_dimension = 2;  // k*N = 1024 again
  CHECK_NOTHROW(p.validate());
  p.polynomial_size = 256;
  p.insecure = true;  // marked insecure, any set passes
  p.name = "my_set_INSECURE";
  CHECK_NOTHROW(p.validate());
}

TEST_CASE("validate: a set not marked insecure has noise; a built-in set's name is that set",
          "[params]") {
  Parameters p = tfhe_lib_128();
  p.name = "mine";
  p.lwe_noise_stddev = 0;
  REQUIRE_INVALID_ARGUMENT(p.validate(), "set 'mine' has lwe_noise_stddev=0.000000 and "
                                         "glwe_noise_stddev=0.000000: a set not marked insecure "
                                         "needs at least 2^-32 (one torus LSB) in both");
  p.lwe_noise_stddev = tfhe_lib_128().lwe_noise_stddev;
  p.glwe_noise_stddev = std::nextafter(0x1p-32, 0.0);
  REQUIRE_INVALID_ARGUMENT(p.validate(), "needs at least 2^-32");
  p.insecure = true;
  p.name = "mine_INSECURE";
  CHECK_NOTHROW(p.validate());

  // The built-in name with other values (the audit's n=64, zero-noise "tfhe_lib_128"), and a
  // toy set's name on other values; the built-in sets themselves pass.
  Parameters fake = toy_insecure();
  fake.name = "tfhe_lib_128";
  fake.insecure = false;
  fake.lwe_noise_stddev = fake.glwe_noise_stddev = 0x1p-20;
  REQUIRE_INVALID_ARGUMENT(fake.validate(),
                           "set 'tfhe_lib_128' has the name of the built-in set but other "
                           "values; give a set of your own another name");
  Parameters toy = toy_insecure();
  toy.lwe_dimension = 65;
  REQUIRE_INVALID_ARGUMENT(toy.validate(), "'toy_INSECURE' has the name of the built-in set");
  for (const Parameters& known : all_parameter_sets()) CHECK_NOTHROW(known.validate());

  // -0.0 and 0.0 are equal, and so are the fingerprints.
  Parameters zero = p;
  zero.lwe_noise_stddev = 0.0;
  Parameters negative_zero = p;
  negative_zero.lwe_noise_stddev = -0.0;
  REQUIRE(zero == negative_zero);
  CHECK(zero.fingerprint() == negative_zero.fingerprint());
}

TEST_CASE("fingerprint changes with every field; same_values ignores the name", "[params]") {
  const Parameters base = tfhe_lib_128();
  const std::vector<std::function<void(Parameters&)>> changes = {
      [](Parameters& p) { p.name = "tfhe_lib_128b"; },
      [](Parameters& p) { p.lwe_dimension += 1; },
      [](Parameters& p) { p.glwe_dimension += 1; },
      [](Parameters& p) { p.polynomial_size *= 2; },
      [](Parameters& p) { p.bk_base_log += 1; },
      [](Parameters& p) { p.bk_level_count += 1; },
      [](Parameters& p) { p.ks_base_log += 1; },
      [](Parameters& p) { p.ks_level_count += 1; },
      [](Parameters& p) { p.lwe_noise_stddev = std::nextafter(p.lwe_noise_stddev, 1.0); },
      [](Parameters& p) { p.glwe_noise_stddev *= 2; },
      [](Parameters& p) { p.insecure = !p.insecure; },
  };
  CHECK(base.fingerprint() == tfhe_lib_128().fingerprint());
  std::set<std::uint64_t> seen{base.fingerprint()};
  for (std::size_t i = 0; i < changes.size(); ++i) {
    Parameters p = base;
    changes[i](p);
    INFO("change " << i);
    CHECK(p != base);
    CHECK(p.fingerprint() != base.fingerprint());
    CHECK(seen.insert(p.fingerprint()).second);
    CHECK(p.same_values(base) == (i == 0));  // only the name change keeps the values
  }
  std::set<std::uint64_t> named;
  for (const auto& p : all_parameter_sets()) CHECK(named.insert(p.fingerprint()).second);
  // toy_k2 differs from toy only in k and the name
  CHECK_FALSE(toy_insecure().same_values(toy_k2_insecure()));
}

TEST_CASE("the version header and the library agree, and the number orders versions", "[params]") {
  const std::string expected = std::to_string(TORUSGATE_VERSION_MAJOR) + "." +
                               std::to_string(TORUSGATE_VERSION_MINOR) + "." +
                               std::to_string(TORUSGATE_VERSION_PATCH);
  CHECK(std::string(TORUSGATE_VERSION_STRING) == expected);
  CHECK(std::string(version()) == expected);
  CHECK(TORUSGATE_VERSION_NUMBER == TORUSGATE_VERSION_MAJOR * 10000 +
                                        TORUSGATE_VERSION_MINOR * 100 + TORUSGATE_VERSION_PATCH);
  STATIC_REQUIRE(TORUSGATE_VERSION_MINOR < 100);
  STATIC_REQUIRE(TORUSGATE_VERSION_PATCH < 100);
}
