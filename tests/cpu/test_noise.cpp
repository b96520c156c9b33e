// Measured noise of bootstrapped gates with real parameters: for every bootstrapped gate kind
// (the TFHE library gates, MUX and the weighted sign gates), the margin of the phase each
// bootstrap decides on and the variance of the output phase, against core/noise.hpp; and the
// model's failure probabilities in log2 (log2_erfc, input-averaged tails).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "test_support.hpp"
#include "torusgate/core/noise.hpp"
#include "torusgate/cpu/cpu_backend.hpp"

using namespace torusgate;

namespace {

// Signed torus distance from the nearest decision boundary (0 or 1/2) of phase x.
double boundary_distance(Torus32 x) {
  const double d = std::fabs(torus_to_double(x));  // [0, 1/2]
  return std::min(d, 0.5 - d);
}

}  // namespace

TEST_CASE("every bootstrapped gate kind keeps its noise margin with tfhe_lib_128", "[noise]") {
  const Parameters params = tfhe_lib_128();
  const auto& keys = test::keys_for(params);
  const NoiseModel model = noise_model(params);
  OpenMpBackend be(keys.cloud);
  const std::uint64_t seed = test::catch_seed(0x4e015e);
  INFO("seed " << seed);
  Csprng rng = test::seeded_rng(seed);

  constexpr std::size_t count = 192;
  std::vector<std::uint8_t> plain[3];
  for (auto& p : plain) {
    p.resize(count);
    for (auto& b : p) b = static_cast<std::uint8_t>(rng.uniform_bit());
  }
  // Level 1 refreshes fresh encryptions through a bootstrap (OR(x, x) = x), so the gate
  // inputs below carry bootstrapped-output noise, as inside any circuit.
  std::vector<BufferOf<CpuBackend>> inputs;
  for (auto& p : plain) {
    auto f = be.upload(encrypt_bits(keys.secret, p, rng));
    auto r = be.allocate(count);
    be.evaluate({gate::or_(f.bits(), f.bits(), r.bits())});
    inputs.push_back(std::move(r));
  }
  std::vector<std::vector<Torus32>> in_phase;
  for (auto& in : inputs) in_phase.push_back(batch_phases(keys.secret, be.download(in.bits())));

  const std::vector<GateSpec> specs = {
      GateSpec::of(GateKind::And),  GateSpec::of(GateKind::Nand),  GateSpec::of(GateKind::Or),
      GateSpec::of(GateKind::Nor),  GateSpec::of(GateKind::Xor),   GateSpec::of(GateKind::Xnor),
      GateSpec::of(GateKind::AndNY), GateSpec::of(GateKind::AndYN), GateSpec::of(GateKind::OrNY),
      GateSpec::of(GateKind::OrYN), GateSpec::of(GateKind::Mux),   GateSpec::of(GateKind::Majority),
      GateSpec::of(GateKind::Xor3), GateSpec::of(GateKind::PrefixGenerate),
      GateSpec::threshold(0, {1, 1, -1})};  // MAJ(a, b, not c) = bootstrap(a + b - c)
  auto out = be.allocate(count * specs.size());
  std::vector<GateOp<CpuStorage>> batch;
  for (std::size_t g = 0; g < specs.size(); ++g) {
    batch.push_back(gate::make(specs[g], inputs[0].bits(), inputs[1].bits(), inputs[2].bits(),
                               out.bits(g * count, count)));
  }
  be.evaluate(batch);
  const auto out_phase = batch_phases(keys.secret, be.download(out.bits()));

  for (std::size_t g = 0; g < specs.size(); ++g) {
    const GateSpec& spec = specs[g];
    INFO("gate " << gate_kind_name(spec.kind));
    double min_margin = 1, sum_sq = 0;
    std::size_t errors = 0;
    for (std::size_t e = 0; e < count; ++e) {
      const bool a = plain[0][e], b = plain[1][e], c = plain[2][e];
      // The phase the (first) bootstrap decides on, from the inputs' actual phases.
      Torus32 decision;
      if (spec.kind == GateKind::Mux) {
        decision = (Torus32{0} - (Torus32{1} << 29)) + in_phase[0][e] + in_phase[1][e];
      } else {
        decision = static_cast<Torus32>(spec.offset_eighths) * (Torus32{1} << 29);
        for (int j = 0; j < spec.arity; ++j) {
          decision += static_cast<Torus32>(spec.weights[j]) * in_phase[j][e];
        }
      }
      min_margin = std::min(min_margin, boundary_distance(decision));
      const bool want = spec.evaluate(a, b, c);
      const Torus32 phase = out_phase[g * count + e];
      errors += decode_bit(phase) != want;
      const double err = torus_to_double(phase - encode_bit(want));
      sum_sq += err * err;
    }
    const double variance = sum_sq / count;
    const double expected = model.gate_output(spec);
    const double decision_sigma = std::sqrt(model.decision(spec));
    INFO("min decision margin " << min_margin << " (= " << min_margin / decision_sigma
                                << " sigma of the model), output variance " << variance
                                << " vs model " << expected);
    CHECK(errors == 0);
    // Every decision phase stays at least 1/8 - 8 sigma from a boundary (ideal margin >= 1/8).
    CHECK(min_margin > 0.125 - 8 * decision_sigma);
    CHECK(variance > 0.5 * expected);
    CHECK(variance < 2.0 * expected);
  }
}

TEST_CASE("log2_erfc matches erfc where it is representable and continues past it", "[noise]") {
  for (double x = -3.0; x <= 26.5; x += 0.25) {
    INFO("x = " << x);
    const double direct = std::log2(std::erfc(x));
    if (x >= 25) {
      // The asymptotic series takes over at 25; erfc is still a normal double up to ~26.5.
      CHECK(log2_erfc(x) == Approx(direct).epsilon(1e-12));
    } else {
      CHECK(log2_erfc(x) == direct);
    }
  }
  // Far beyond the range of doubles: -x^2 / ln 2 dominates, and the function keeps falling.
  const double at40 = log2_erfc(40.0);
  CHECK(at40 == Approx((-1600.0 - std::log(40.0 * std::sqrt(std::acos(-1.0)))) / std::log(2.0))
                    .epsilon(1e-6));
  CHECK(log2_erfc(41.0) < at40);
  CHECK(std::isfinite(log2_erfc(1e6)));
  REQUIRE_INVALID_ARGUMENT(log2_erfc(NAN), "log2_erfc: x=");
  REQUIRE_INVALID_ARGUMENT(log2_gaussian_tail(-0.1, 1e-4), "margin=");
  REQUIRE_INVALID_ARGUMENT(log2_gaussian_tail(0.125, 0), "variance=");
  CHECK(log2_gaussian_tail(0.125, 1e-4) == Approx(std::log2(std::erfc(0.125 / std::sqrt(2e-4)))));
}

TEST_CASE("the model's failure probability in log2 agrees with erfc and stays finite",
          "[noise]") {
  const NoiseModel model = noise_model(tfhe_lib_128());
  const GateSpec nand = GateSpec::of(GateKind::Nand);
  CHECK(model.combination(nand) ==
        Approx(2 * (model.blind_rotation + model.key_switching)));
  CHECK(model.decision(nand) == Approx(model.combination(nand) + model.modulus_switching));
  CHECK(model.combination(GateSpec::of(GateKind::Mux)) == Approx(model.combination(nand)));
  // The per-key mean of the key-switching noise: kN t (base-1)/base^2 sigma^2, 1/base of its
  // noise term kN t (1 - 1/base) sigma^2 (base 4 here).
  CHECK(model.key_switching_bias == Approx(1024.0 * 8 * 3 / 16 * std::ldexp(1.0, -30)));
  const GateSpec prefix = GateSpec::of(GateKind::PrefixGenerate);
  CHECK(model.log2_failure_probability(prefix) ==
        Approx(std::log2(model.failure_probability(prefix))).epsilon(1e-9));
  CHECK(model.log2_failure_probability(nand) < -400);
  // With another decided-phase variance (a measured one): the same tail, the grid's rounding
  // (1/(2N))^2 / 12 taken off; none left is refused.
  CHECK(model.grid_variance() == Approx(1.0 / (48.0 * 1024 * 1024)).epsilon(1e-12));
  CHECK(model.log2_failure_probability(nand, model.decision(nand)) ==
        model.log2_failure_probability(nand));
  CHECK(model.log2_failure_probability(nand, 2 * model.decision(nand)) >
        model.log2_failure_probability(nand));
  REQUIRE_INVALID_ARGUMENT(model.log2_failure_probability(nand, model.grid_variance()),
                           "variance=");
  // XOR with default_128 is ~68 standard deviations from its boundaries: erfc underflows to 0,
  // the log2 stays finite.
  const NoiseModel strong = noise_model(default_128());
  const GateSpec xor_gate = GateSpec::of(GateKind::Xor);
  CHECK(strong.failure_probability(xor_gate) == 0.0);
  CHECK(strong.log2_failure_probability(xor_gate) < -3000);
  CHECK(std::isfinite(strong.log2_failure_probability(xor_gate)));
}

TEST_CASE("the input-averaged failure probability sums both one-sided tails", "[noise]") {
  const double v = 0.002;
  const auto q = [&](double d) { return 0.5 * std::erfc(d / std::sqrt(2 * v)); };
  // NAND: noiseless phases 3/8 (inputs 0,0) and 1/8 (mixed inputs), -1/8 (inputs 1,1).
  const double nand = (q(3 / 8.0) + q(1 / 8.0)) * 4 / 4;  // every input: distances 1/8, 3/8
  CHECK(std::exp2(log2_decision_failure_probability(GateSpec::of(GateKind::Nand), v, 0)) ==
        Approx(nand).epsilon(1e-12));
  // XOR: phases +-1/4 and +-3/4 = -+1/4: distance 1/4 to both boundaries.
  CHECK(std::exp2(log2_decision_failure_probability(GateSpec::of(GateKind::Xor), v, 0)) ==
        Approx(2 * q(0.25)).epsilon(1e-12));
  // MUX: the average of its AND and ANDNY bootstraps, each like NAND.
  CHECK(std::exp2(log2_decision_failure_probability(GateSpec::of(GateKind::Mux), v, 0)) ==
        Approx(nand).epsilon(1e-12));
  // Tiny probabilities stay finite and ordered.
  CHECK(log2_decision_failure_probability(GateSpec::of(GateKind::Nand), 1e-6, 0) <
        log2_decision_failure_probability(GateSpec::of(GateKind::Nand), 2e-6, 0));
  REQUIRE_INVALID_ARGUMENT(
      log2_decision_failure_probability(GateSpec::of(GateKind::Not), v, 0), "has no bootstrap");
  REQUIRE_INVALID_ARGUMENT(
      log2_decision_failure_probability(GateSpec::of(GateKind::Nand), -1, 0), "variance=");
  for (double h : {-1e-3, 0.125, double{NAN}}) {
    REQUIRE_INVALID_ARGUMENT(
        log2_decision_failure_probability(GateSpec::of(GateKind::Nand), v, h), "half_step=");
  }
  REQUIRE_INVALID_ARGUMENT(
      log2_decision_failure_probability(GateSpec::of(GateKind::Nand), 1e-5, 1.0 / 64),
      "is no more than the rounding to Z_2N's grid alone");
  // Boundaries half a step h below 0 and 1/2: NAND's +1/8 and +3/8 fall h further to the
  // boundary near 0 and rise h less to the one near 1/2; its -1/8 the reverse.
  // The decided phase's variance v includes the grid's rounding, h^2 / 3: the tails take
  // the rest.
  const double h = 1.0 / 64;
  const auto qh = [&](double d) { return 0.5 * std::erfc(d / std::sqrt(2 * (v - h * h / 3))); };
  const double shifted = (qh(3 / 8.0 + h) + qh(1 / 8.0 - h)) * 1 / 4 +  // inputs 0,0: +3/8
                         (qh(1 / 8.0 + h) + qh(3 / 8.0 - h)) * 2 / 4 +  // mixed: +1/8
                         (qh(1 / 8.0 - h) + qh(3 / 8.0 + h)) * 1 / 4;   // inputs 1,1: -1/8
  CHECK(std::exp2(log2_decision_failure_probability(GateSpec::of(GateKind::Nand), v, h)) ==
        Approx(shifted).epsilon(1e-12));
}

TEST_CASE("the decision boundaries sit half a Z_2N step below 0 and 1/2, as the model says",
          "[noise]") {
  // The exact decision rule of the blind rotation (core's rounding mod_switch_from_torus of the
  // body and of every mask word, positive when the phase in Z_2N is below N), on encryptions
  // of +-1/8 with noise large enough to fail often, at N = 16 where half a step (1/64) is an
  // eighth of the margin. A phase of -1/8 must rise 1/8 - 1/64 to fail, one of +1/8 fall
  // 1/8 + 1/64: they fail several times apart, as the model's one-sided tails say.
  const std::uint32_t two_n = 32, n = 8;
  const double sigma = 0.05, h = 1.0 / (2.0 * two_n);
  Csprng rng = test::seeded_rng(test::catch_seed(0x40b));
  const LweKey key(n, rng);
  const auto s = key.coefficients();
  const double weight = static_cast<double>(std::count(s.begin(), s.end(), 1));
  // The decided phase's variance: the noise plus this key's rounding, (1 + |s|) / (12 (2N)^2);
  // its tails are those of the unrounded phase, without the body's own rounding (the 1).
  const double variance = sigma * sigma + (1 + weight) / (12.0 * two_n * two_n);
  const double unrounded = sigma * sigma + weight / (12.0 * two_n * two_n);
  const std::size_t trials = 200000;
  std::size_t failed[2] = {0, 0};  // of -1/8, of +1/8
  std::vector<Torus32> sample(n + 1);
  for (std::size_t t = 0; t < trials; ++t) {
    for (int positive : {0, 1}) {
      encrypt_lwe(sample, encode_bit(positive == 1), key, sigma, rng);
      std::uint32_t phase = mod_switch_from_torus(sample[n], two_n);
      for (std::uint32_t i = 0; i < n; ++i) {
        phase += two_n - (s[i] == 1 ? mod_switch_from_torus(sample[i], two_n) : 0);
      }
      const bool decided_positive = phase % two_n < two_n / 2;
      failed[positive] += decided_positive != (positive == 1);
    }
  }
  const auto q = [&](double d) { return 0.5 * std::erfc(d / std::sqrt(2 * unrounded)); };
  const double rate_negative = static_cast<double>(failed[0]) / trials;
  const double rate_positive = static_cast<double>(failed[1]) / trials;
  INFO("failures of -1/8: " << failed[0] << " (model " << q(0.125 - h) * trials << "), of +1/8: "
                            << failed[1] << " (model " << q(0.125 + h) * trials << ")");
  // About 4,000 and 900 failures expected: within 10% (more than 3 standard deviations).
  CHECK(rate_negative / q(0.125 - h) == Approx(1).margin(0.10));
  CHECK(rate_positive / q(0.125 + h) == Approx(1).margin(0.10));
  CHECK(rate_negative > 2.5 * rate_positive);  // without the shift both would be q(1/8)
  // T(0;1), a bootstrapped copy: the average over its two inputs of the tails at both sides.
  const double average = (rate_negative + rate_positive) / 2;
  CHECK(std::exp2(log2_decision_failure_probability(GateSpec::threshold(0, {1}), variance, h)) ==
        Approx(average).epsilon(0.10));
}
