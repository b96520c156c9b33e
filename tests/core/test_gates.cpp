// Gate specifications: truth tables against the boolean definitions, threshold gate
// validation, bootstrap counts, and the noise model's variances and failure probabilities.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "test_support.hpp"
#include "torusgate/core/gates.hpp"
#include "torusgate/core/keys.hpp"
#include "torusgate/core/noise.hpp"
#include "torusgate/core/params.hpp"

using namespace torusgate;

namespace {

struct Definition {
  GateKind kind;
  int arity;
  std::function<bool(bool, bool, bool)> truth;
};

const std::vector<Definition>& definitions() {
  static const std::vector<Definition> defs = {
      {GateKind::Copy, 1, [](bool a, bool, bool) { return a; }},
      {GateKind::Not, 1, [](bool a, bool, bool) { return !a; }},
      {GateKind::And, 2, [](bool a, bool b, bool) { return a && b; }},
      {GateKind::Nand, 2, [](bool a, bool b, bool) { return !(a && b); }},
      {GateKind::Or, 2, [](bool a, bool b, bool) { return a || b; }},
      {GateKind::Nor, 2, [](bool a, bool b, bool) { return !(a || b); }},
      {GateKind::Xor, 2, [](bool a, bool b, bool) { return a != b; }},
      {GateKind::Xnor, 2, [](bool a, bool b, bool) { return a == b; }},
      {GateKind::AndNY, 2, [](bool a, bool b, bool) { return !a && b; }},
      {GateKind::AndYN, 2, [](bool a, bool b, bool) { return a && !b; }},
      {GateKind::OrNY, 2, [](bool a, bool b, bool) { return !a || b; }},
      {GateKind::OrYN, 2, [](bool a, bool b, bool) { return a || !b; }},
      {GateKind::Mux, 3, [](bool a, bool b, bool c) { return a ? b : c; }},
      {GateKind::Majority, 3, [](bool a, bool b, bool c) { return (a + b + c) >= 2; }},
      {GateKind::Xor3, 3, [](bool a, bool b, bool c) { return (a != b) != c; }},
      {GateKind::PrefixGenerate, 3, [](bool g_hi, bool p_hi, bool g_lo) {
         return g_hi || (p_hi && g_lo);
       }},
  };
  return defs;
}

}  // namespace

TEST_CASE("every fixed gate kind has the truth table of its boolean definition", "[gates]") {
  REQUIRE(definitions().size() == gate_kind_count - 2);  // all but Constant and Threshold
  for (const auto& def : definitions()) {
    const GateSpec spec = GateSpec::of(def.kind);
    INFO("gate " << gate_kind_name(def.kind));
    CHECK(spec.kind == def.kind);
    CHECK(spec.arity == def.arity);
    for (int x = 0; x < 8; ++x) {
      const bool a = x & 1, b = (x >> 1) & 1, c = (x >> 2) & 1;
      INFO("inputs " << a << b << c);
      // PREFIX_GENERATE is defined on inputs where not (G_hi and P_hi).
      if (def.kind == GateKind::PrefixGenerate && a && b) continue;
      CHECK(spec.evaluate(a, b, c) == def.truth(a, b, c));
      // Inputs beyond the arity are ignored.
      if (def.arity < 3) CHECK(spec.evaluate(a, b, !c) == spec.evaluate(a, b, c));
      if (def.arity < 2) CHECK(spec.evaluate(a, !b, c) == spec.evaluate(a, b, c));
    }
  }
}

TEST_CASE("sign gates never put the phase on a decision boundary", "[gates]") {
  for (const auto& def : definitions()) {
    const GateSpec spec = GateSpec::of(def.kind);
    if (!spec.is_sign_gate()) continue;
    INFO("gate " << gate_kind_name(def.kind));
    for (int x = 0; x < 8; ++x) {
      const int e = spec.phase_eighths(x & 1, (x >> 1) & 1, (x >> 2) & 1);
      CHECK(e != 0);
      CHECK(e != 4);
      CHECK(e > -4);
      CHECK(e <= 4);
      // The output is the sign of the phase.
      CHECK(spec.evaluate(x & 1, (x >> 1) & 1, (x >> 2) & 1) == (e > 0));
    }
  }
  // The TFHE library's AND: -1/8 + a + b.
  const GateSpec g = GateSpec::of(GateKind::And);
  CHECK(g.offset_eighths == -1);
  CHECK(g.phase_eighths(false, false, false) == -3);
  CHECK(g.phase_eighths(true, false, false) == -1);
  CHECK(g.phase_eighths(true, true, false) == 1);
  // XOR wraps around: 2/8 + 2a + 2b with a = b = 1 is 6/8 = -2/8.
  CHECK(GateSpec::of(GateKind::Xor).phase_eighths(true, true, false) == -2);
}

TEST_CASE("constant gates and gate kind names", "[gates]") {
  for (bool v : {false, true}) {
    const GateSpec g = GateSpec::constant(v);
    CHECK(g.kind == GateKind::Constant);
    CHECK(g.arity == 0);
    for (int x = 0; x < 8; ++x) CHECK(g.evaluate(x & 1, (x >> 1) & 1, (x >> 2) & 1) == v);
  }
  CHECK(GateSpec::constant(true) != GateSpec::constant(false));
  REQUIRE_INVALID_ARGUMENT(GateSpec::of(GateKind::Constant), "CONSTANT");
  REQUIRE_INVALID_ARGUMENT(GateSpec::of(GateKind::Threshold), "THRESHOLD");
  std::set<std::string> names;
  for (std::size_t k = 0; k < gate_kind_count; ++k) {
    names.insert(std::string(gate_kind_name(static_cast<GateKind>(k))));
  }
  CHECK(names.size() == gate_kind_count);
  CHECK(gate_kind_name(GateKind::PrefixGenerate) == "PREFIX_GENERATE");
  CHECK(gate_kind_name(GateKind::AndNY) == "ANDNY");
  CHECK(gate_kind_name(static_cast<GateKind>(200)) == "UNKNOWN");
}

TEST_CASE("threshold gates evaluate the sign of their weighted sum", "[gates]") {
  // 3-input threshold "at least 2 of (a, b, not c)".
  const GateSpec g = GateSpec::threshold(0, {1, 1, -1});
  CHECK(g.kind == GateKind::Threshold);
  CHECK(g.arity == 3);
  CHECK(g.bootstraps() == 1);
  for (int x = 0; x < 8; ++x) {
    const bool a = x & 1, b = (x >> 1) & 1, c = (x >> 2) & 1;
    CHECK(g.evaluate(a, b, c) == (a + b + !c >= 2));
  }
  // The same weights as AND give AND's truth table.
  const GateSpec t_and = GateSpec::threshold(-1, {1, 1});
  for (int x = 0; x < 4; ++x) {
    CHECK(t_and.evaluate(x & 1, x >> 1) == GateSpec::of(GateKind::And).evaluate(x & 1, x >> 1));
  }
  // Phases wrap modulo 1: 4/8 + a gives 5/8 = -3/8 for a = 1 and 3/8 for a = 0 (a NOT).
  const GateSpec wrap = GateSpec::threshold(4, {1});
  CHECK(wrap.evaluate(false));
  CHECK_FALSE(wrap.evaluate(true));
  CHECK(GateSpec::threshold(1, {3, -1, 2}).variance_factor() == 14);
  CHECK(GateSpec::of(GateKind::Xor).variance_factor() == 8);
  CHECK(GateSpec::of(GateKind::And).variance_factor() == 2);
  CHECK(GateSpec::of(GateKind::Majority).variance_factor() == 3);
  CHECK(GateSpec::of(GateKind::Mux).variance_factor() == 2);
  CHECK(GateSpec::of(GateKind::Not).variance_factor() == 1);
}

TEST_CASE("threshold rejects boundary phases, bad arity and bad weights", "[gates]") {
  // 0 + a + b (as +-1 each) is 0 when a != b: the output would be undefined.
  REQUIRE_INVALID_ARGUMENT(GateSpec::threshold(0, {1, 1}), "decision boundary");
  // 3/8 + a reaches 4/8 for a = 1.
  REQUIRE_INVALID_ARGUMENT(GateSpec::threshold(3, {1}), "decision boundary");
  REQUIRE_INVALID_ARGUMENT(GateSpec::threshold(0, {2, 2}), "decision boundary");
  REQUIRE_INVALID_ARGUMENT(GateSpec::threshold(1, {1, 1, 1}), "decision boundary");
  REQUIRE_INVALID_ARGUMENT(GateSpec::threshold(1, {}), "0 weights");
  REQUIRE_INVALID_ARGUMENT(GateSpec::threshold(0, {1, 1, 1, 1}), "4 weights");
  REQUIRE_INVALID_ARGUMENT(GateSpec::threshold(1, {0, 1}), "weight 0 is 0");
  REQUIRE_INVALID_ARGUMENT(GateSpec::threshold(1, {1, 0}), "weight 1 is 0");
  REQUIRE_INVALID_ARGUMENT(GateSpec::threshold(1, {9}), "weight 0 is 9");
  REQUIRE_INVALID_ARGUMENT(GateSpec::threshold(1, {-9}), "weight 0 is -9");
  REQUIRE_INVALID_ARGUMENT(GateSpec::threshold(9, {1}), "offset_eighths=9");
  REQUIRE_INVALID_ARGUMENT(GateSpec::threshold(-9, {1}), "offset_eighths=-9");
  CHECK_NOTHROW(GateSpec::threshold(1, {3, -1, 2}));
  CHECK_NOTHROW(GateSpec::threshold(-8, {1}));
}

TEST_CASE("GateSpec::validate accepts what of/constant/threshold make and nothing else",
          "[gates]") {
  for (const auto& def : definitions()) CHECK_NOTHROW(GateSpec::of(def.kind).validate());
  CHECK_NOTHROW(GateSpec::constant(false).validate());
  CHECK_NOTHROW(GateSpec::constant(true).validate());
  CHECK_NOTHROW(GateSpec::threshold(1, {3, -1, 2}).validate());
  CHECK_NOTHROW(GateSpec::threshold(2, {1}).validate());

  GateSpec mux = GateSpec::of(GateKind::Mux);
  mux.arity = 1;
  REQUIRE_INVALID_ARGUMENT(mux.validate(), "MUX");
  GateSpec xor_ = GateSpec::of(GateKind::Xor);
  xor_.weights[0] = 1;
  REQUIRE_INVALID_ARGUMENT(xor_.validate(), "XOR");
  GateSpec not_ = GateSpec::of(GateKind::Not);
  not_.weights[0] = 1;  // that is COPY
  REQUIRE_INVALID_ARGUMENT(not_.validate(), "NOT");
  GateSpec constant = GateSpec::constant(true);
  constant.arity = 2;
  REQUIRE_INVALID_ARGUMENT(constant.validate(), "CONSTANT has arity 2");
  GateSpec t = GateSpec::threshold(1, {1, 1});
  t.arity = 0;
  REQUIRE_INVALID_ARGUMENT(t.validate(), "THRESHOLD has arity 0");
  t = GateSpec::threshold(1, {1, 1});
  t.arity = 4;
  REQUIRE_INVALID_ARGUMENT(t.validate(), "THRESHOLD has arity 4");
  t = GateSpec::threshold(1, {1, 1});
  t.weights[2] = 1;
  REQUIRE_INVALID_ARGUMENT(t.validate(), "weight 2");
  t = GateSpec::threshold(1, {1, 1});
  t.offset_eighths = 0;
  REQUIRE_INVALID_ARGUMENT(t.validate(), "decision boundary");
  t = GateSpec::threshold(2, {1});
  t.weights[0] = 9;
  REQUIRE_INVALID_ARGUMENT(t.validate(), "weight 0 is 9");
  GateSpec unknown;
  unknown.kind = static_cast<GateKind>(gate_kind_count);
  REQUIRE_INVALID_ARGUMENT(unknown.validate(), "unknown gate kind 18");
}

// LIBRARY BUG (core/include/torusgate/core/gates.hpp:42-45): a default-constructed GateSpec
// says kind = COPY, arity 1, but its weights are {0, 0, 0} where GateSpec::of(COPY) has
// {1, 0, 0}, so GateSpec::validate (gates.cpp:116) rejects it and so does every backend for
// a default-constructed GateOp. Fix: default weights{1, 0, 0} in gates.hpp (or let validate
// ignore weights for COPY/NOT). Fails until fixed.
TEST_CASE("BUG: the default GateSpec is a valid COPY gate", "[gates][bug]") {
  CHECK(GateSpec{} == GateSpec::of(GateKind::Copy));
  CHECK_NOTHROW(GateSpec{}.validate());
}

TEST_CASE("bootstrap counts of every gate kind", "[gates]") {
  CHECK(GateSpec::constant(true).bootstraps() == 0);
  CHECK(GateSpec::of(GateKind::Copy).bootstraps() == 0);
  CHECK(GateSpec::of(GateKind::Not).bootstraps() == 0);
  CHECK(GateSpec::of(GateKind::Mux).bootstraps() == 2);
  CHECK_FALSE(GateSpec::of(GateKind::Mux).is_sign_gate());
  CHECK_FALSE(GateSpec::of(GateKind::Not).is_sign_gate());
  for (GateKind k : {GateKind::And, GateKind::Nand, GateKind::Or, GateKind::Nor, GateKind::Xor,
                     GateKind::Xnor, GateKind::AndNY, GateKind::AndYN, GateKind::OrNY,
                     GateKind::OrYN, GateKind::Majority, GateKind::Xor3,
                     GateKind::PrefixGenerate}) {
    INFO("gate " << gate_kind_name(k));
    CHECK(GateSpec::of(k).bootstraps() == 1);
    CHECK(GateSpec::of(k).is_sign_gate());
  }
  CHECK(GateSpec::threshold(1, {1, 1}).bootstraps() == 1);
}

TEST_CASE("ideal decision margins: 1/8 for the AND family, 1/4 for the XOR family", "[gates]") {
  for (GateKind k : {GateKind::And, GateKind::Nand, GateKind::Or, GateKind::Nor, GateKind::AndNY,
                     GateKind::AndYN, GateKind::OrNY, GateKind::OrYN, GateKind::Mux,
                     GateKind::Majority, GateKind::PrefixGenerate}) {
    INFO(gate_kind_name(k));
    CHECK(GateSpec::of(k).ideal_margin() == 0.125);
  }
  for (GateKind k : {GateKind::Xor, GateKind::Xnor, GateKind::Xor3}) {
    INFO(gate_kind_name(k));
    CHECK(GateSpec::of(k).ideal_margin() == 0.25);
  }
  CHECK(GateSpec::of(GateKind::Not).ideal_margin() == 0);
  CHECK(GateSpec::constant(true).ideal_margin() == 0);
  CHECK(GateSpec::threshold(0, {1, 1, -1}).ideal_margin() == 0.125);
}

TEST_CASE("noise model: failure probability is erfc(margin / sqrt(2 V))", "[gates][noise]") {
  NoiseModel m;  // large made-up variances, so the probabilities do not underflow
  m.blind_rotation = 1e-3;
  m.key_switching = 5e-4;
  m.modulus_switching = 1e-4;
  const GateSpec and_ = GateSpec::of(GateKind::And), xor_ = GateSpec::of(GateKind::Xor);
  CHECK(m.decision(and_) == Approx(2 * 1.5e-3 + 1e-4));
  CHECK(m.decision(xor_) == Approx(8 * 1.5e-3 + 1e-4));
  CHECK(m.failure_probability(and_) == Approx(std::erfc(0.125 / std::sqrt(2 * 3.1e-3))));
  CHECK(m.failure_probability(xor_) == Approx(std::erfc(0.25 / std::sqrt(2 * 12.1e-3))));
}

TEST_CASE("noise model: positive variances and small failure probabilities", "[gates][noise]") {
  for (const Parameters& p : all_parameter_sets()) {
    INFO("parameter set " << p.name);
    const NoiseModel m = noise_model(p);
    CHECK(m.fresh == Approx(p.lwe_noise_stddev * p.lwe_noise_stddev));
    CHECK(m.blind_rotation > 0);
    CHECK(m.key_switching > 0);
    CHECK(m.modulus_switching > 0);
    const GateSpec and_ = GateSpec::of(GateKind::And), xor_ = GateSpec::of(GateKind::Xor);
    const GateSpec mux = GateSpec::of(GateKind::Mux);
    CHECK(m.gate_output(and_) == Approx(m.blind_rotation + m.key_switching));
    CHECK(m.gate_output(mux) == Approx(2 * m.blind_rotation + m.key_switching));
    CHECK(m.gate_output(GateSpec::of(GateKind::Not)) == 0);
    CHECK(m.decision(xor_) > m.decision(and_));
    // XOR decides at margin 1/4 with variance factor 8, AND at 1/8 with factor 2: XOR's
    // margin in standard deviations is the larger one.
    CHECK(xor_.ideal_margin() / std::sqrt(m.decision(xor_)) >
          and_.ideal_margin() / std::sqrt(m.decision(and_)));
    CHECK(m.failure_probability(and_) >= 0);
    // Output noise far below the 1/8 margin for every named set.
    CHECK(std::sqrt(m.gate_output(mux)) < 1.0 / 64);
  }
  const NoiseModel m = noise_model(tfhe_lib_128());
  const double limit = std::ldexp(1.0, -30);
  CHECK(m.failure_probability(GateSpec::of(GateKind::And)) < limit);
  CHECK(m.failure_probability(GateSpec::of(GateKind::Xor)) < limit);
  // Magnitudes for tfhe_lib_128 (worked by hand from the formulas of noise.hpp):
  // V_BR ~ 4.7e-6, V_KS ~ 5.7e-6, V_MS ~ 6.3e-6.
  CHECK(m.blind_rotation == Approx(4.70e-6).epsilon(0.02));
  CHECK(m.key_switching == Approx(5.73e-6).epsilon(0.02));
  CHECK(m.modulus_switching == Approx(6.28e-6).epsilon(0.02));
  Parameters bad = tfhe_lib_128();
  bad.polynomial_size = 1000;
  REQUIRE_THROWS_AS(noise_model(bad), InvalidArgument);
}

TEST_CASE("noise model for one key: its weights in place of the averages", "[gates][noise]") {
  // Average weights give the average model exactly (n even, standard key).
  for (const Parameters& p : all_parameter_sets()) {
    INFO("parameter set " << p.name);
    const std::size_t n = p.lwe_dimension, kN = p.extracted_lwe_dimension();
    if (n % 2 != 0) continue;  // default_128: n = 837 has no integer n/2
    const NoiseModel average = noise_model(p);
    const NoiseModel key = noise_model_for_key(p, 1, KeyWeights{n / 2, kN / 2, n / 2, 0});
    CHECK(key.blind_rotation == Approx(average.blind_rotation).epsilon(1e-12));
    CHECK(key.key_switching == Approx(average.key_switching).epsilon(1e-12));
    CHECK(key.modulus_switching == Approx(average.modulus_switching).epsilon(1e-12));
    CHECK(key.key_switching_bias == average.key_switching_bias);
  }
  // A key of known weights: n = 64 with bits 1 at 0, 1 and 5 (pairs: groups {0,1} and {4,5}
  // are not all 0), the GLWE key's first 10 coefficients 1.
  const Parameters p = toy_insecure();
  std::vector<std::int32_t> s(p.lwe_dimension, 0), S(p.extracted_lwe_dimension(), 0);
  s[0] = s[1] = s[5] = 1;
  for (int i = 0; i < 10; ++i) S[static_cast<std::size_t>(i)] = 1;
  const SecretKey key(p, LweKey(s), GlweKey(p.glwe_dimension, p.polynomial_size, S));
  const KeyWeights one = key_weights(key, 1), pairs = key_weights(key, 2);
  CHECK(one.lwe == 3);
  CHECK(one.glwe == 10);
  CHECK(one.cmux_ones == 3);
  CHECK(one.nonzero_groups == 0);
  CHECK(pairs.cmux_ones == 0);  // 64 bits: all in pairs
  CHECK(pairs.nonzero_groups == 2);
  const double q = std::ldexp(1.0, -static_cast<int>(p.bk_base_log * p.bk_level_count));
  const double pr = std::ldexp(1.0, -static_cast<int>(p.ks_base_log * p.ks_level_count));
  const double N = p.polynomial_size;
  const NoiseModel standard = noise_model_for_key(p, 1, one);
  const NoiseModel paired = noise_model_for_key(p, 2, pairs);
  // The rounding terms: 3 CMUX steps with a message 1; 2 groups, each 2 (X^e - 1); the key
  // terms (GLWE noise) do not depend on the key.
  const double rounding = (1 + 10) * q * q / 12;
  CHECK(standard.blind_rotation - noise_model_for_key(p, 1, {3, 10, 0, 0}).blind_rotation ==
        Approx(3 * rounding).epsilon(1e-9));
  CHECK(paired.blind_rotation - noise_model_for_key(p, 2, {3, 10, 0, 0}).blind_rotation ==
        Approx(4 * rounding).epsilon(1e-9));
  CHECK(standard.key_switching - noise_model_for_key(p, 1, {3, 0, 3, 0}).key_switching ==
        Approx(10 * pr * pr / 12).epsilon(1e-9));
  CHECK(standard.modulus_switching == Approx(4 / (12 * 4 * N * N)).epsilon(1e-12));
  REQUIRE_INVALID_ARGUMENT(noise_model_for_key(p, 1, {65, 10, 3, 0}),
                           "noise_model_for_key: weights |s|=65 |S|=10 cmux_ones=3 "
                           "nonzero_groups=0 do not fit parameter set 'toy_INSECURE' with "
                           "unroll 1");
  REQUIRE_INVALID_ARGUMENT(noise_model_for_key(p, 2, {3, 10, 3, 2}), "cmux_ones=3");
}
