// Average-case noise model of gate bootstrapping and Gaussian tails in log2 (formulas in
// noise.hpp).
#include "torusgate/core/noise.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "torusgate/core/error.hpp"
#include "torusgate/core/keys.hpp"

namespace torusgate {
namespace {

// log2(2^x + 2^y) without overflow or underflow.
double log2_add(double x, double y) {
  if (x == -INFINITY) return y;
  if (y == -INFINITY) return x;
  const double hi = std::max(x, y), lo = std::min(x, y);
  return hi + std::log2(1.0 + std::exp2(lo - hi));
}

// The model with the key-dependent counts given: `rounding_terms` external products with a
// message 1, GLWE key weight `glwe_weight`, LWE key weight `lwe_weight`.
NoiseModel model_with(const Parameters& p, std::uint32_t unroll, double rounding_terms,
                      double glwe_weight, double lwe_weight) {
  const double n = p.lwe_dimension, k = p.glwe_dimension, N = p.polynomial_size;
  const double l = p.bk_level_count, Bg = std::ldexp(1.0, static_cast<int>(p.bk_base_log));
  const double t = p.ks_level_count, base = std::ldexp(1.0, static_cast<int>(p.ks_base_log));
  const double q = std::ldexp(1.0, -static_cast<int>(p.bk_base_log * p.bk_level_count));
  const double pr = std::ldexp(1.0, -static_cast<int>(p.ks_base_log * p.ks_level_count));
  NoiseModel m;
  m.fresh = p.lwe_noise_stddev * p.lwe_noise_stddev;
  const double digit2 = (Bg * Bg + 2.0) / 12.0;
  // Key terms: one external product per CMUX; an unrolled group of u bits adds 2^u - 1, each
  // rotated by X^e - 1 (twice the variance for e != 0), so 2 (2^u - 1) per group of u bits
  // instead of u: 6 per pair, 14 per three bits.
  const double grouped = static_cast<double>(unrolled_bits(p.lwe_dimension, unroll));
  const double groups = grouped / unroll;  // 0 for the standard key
  const double key_terms = (n - grouped) + 2.0 * unroll_group_ggsws(unroll) * groups;
  m.blind_rotation =
      key_terms * (k + 1) * l * N * digit2 * p.glwe_noise_stddev * p.glwe_noise_stddev +
      rounding_terms * (1 + glwe_weight) * q * q / 12.0;
  m.key_switching = k * N * t * (1 - 1 / base) * p.lwe_noise_stddev * p.lwe_noise_stddev +
                    glwe_weight * pr * pr / 12.0;
  m.modulus_switching = (1 + lwe_weight) / (12.0 * (2 * N) * (2 * N));
  m.half_step = 1 / (4 * N);
  m.key_switching_bias = k * N * t * (base - 1) / (base * base) * p.lwe_noise_stddev *
                         p.lwe_noise_stddev;
  return m;
}

}  // namespace

NoiseModel noise_model(const Parameters& p, std::uint32_t unroll) {
  p.validate();
  check_unroll(unroll, "noise_model");
  const double n = p.lwe_dimension, kN = p.extracted_lwe_dimension();
  const double grouped = static_cast<double>(unrolled_bits(p.lwe_dimension, unroll));
  // Decomposition rounding: an external product with GGSW(m) adds m times the rounding error
  // of what it decomposes, variance (1 + |S|) q^2 / 12 (|S| ~ kN/2 ones in the GLWE key). A
  // CMUX step's message is its key bit, 1 with probability 1/2; an unrolled group decomposes
  // once, at most one of its messages is 1 (with probability 1 - 2^-u), and that product is
  // multiplied by X^e - 1 (twice the variance on average over e).
  const double rounding_terms =
      (n - grouped) * 0.5 +
      grouped / unroll * 2.0 * (1.0 - std::ldexp(1.0, -static_cast<int>(unroll)));
  return model_with(p, unroll, rounding_terms, kN / 2, n / 2);
}

KeyWeights key_weights(const SecretKey& key, std::uint32_t unroll) {
  check_unroll(unroll, "key_weights");
  const auto s = key.lwe_key().coefficients();
  const LweKey big = key.glwe_key().extracted_lwe_key();
  const auto S = big.coefficients();
  const std::size_t grouped = unrolled_bits(s.size(), unroll);
  KeyWeights w;
  w.lwe = static_cast<std::size_t>(std::count(s.begin(), s.end(), 1));
  w.glwe = static_cast<std::size_t>(std::count(S.begin(), S.end(), 1));
  w.cmux_ones = static_cast<std::size_t>(std::count(s.begin() + grouped, s.end(), 1));
  for (std::size_t g = 0; g < grouped; g += unroll) {
    w.nonzero_groups += std::any_of(s.begin() + g, s.begin() + g + unroll,
                                    [](auto bit) { return bit == 1; });
  }
  return w;
}

NoiseModel noise_model_for_key(const Parameters& p, std::uint32_t unroll,
                               const KeyWeights& w) {
  p.validate();
  check_unroll(unroll, "noise_model_for_key");
  const std::size_t n = p.lwe_dimension, grouped = unrolled_bits(n, unroll);
  EXPECTS(w.lwe <= n && w.glwe <= p.extracted_lwe_dimension() && w.cmux_ones <= n - grouped &&
              w.nonzero_groups <= grouped / unroll && w.cmux_ones <= w.lwe &&
              w.nonzero_groups <= w.lwe,
          "noise_model_for_key: weights |s|=" + std::to_string(w.lwe) +
              " |S|=" + std::to_string(w.glwe) + " cmux_ones=" + std::to_string(w.cmux_ones) +
              " nonzero_groups=" + std::to_string(w.nonzero_groups) +
              " do not fit parameter set '" + p.name + "' with unroll " + std::to_string(unroll));
  return model_with(p, unroll,
                    static_cast<double>(w.cmux_ones) + 2.0 * static_cast<double>(w.nonzero_groups),
                    static_cast<double>(w.glwe), static_cast<double>(w.lwe));
}

double NoiseModel::gate_output(const GateSpec& gate) const {
  if (gate.bootstraps() == 0) return 0;
  return gate.bootstraps() * blind_rotation + key_switching;
}

double NoiseModel::combination(const GateSpec& gate) const {
  const double out = blind_rotation + key_switching;
  const int factor = gate.kind == GateKind::Mux ? 2 : gate.variance_factor();
  return factor * out;
}

double NoiseModel::decision(const GateSpec& gate) const {
  return combination(gate) + modulus_switching;
}

double NoiseModel::decision_margin(const GateSpec& gate) const {
  return std::max(0.0, gate.ideal_margin() - half_step);
}

double NoiseModel::tail_variance(const GateSpec& gate) const {
  return decision(gate) - grid_variance();
}

double NoiseModel::failure_probability(const GateSpec& gate) const {
  return std::erfc(decision_margin(gate) / std::sqrt(2.0 * tail_variance(gate)));
}

double NoiseModel::log2_failure_probability(const GateSpec& gate) const {
  return log2_failure_probability(gate, decision(gate));
}

double NoiseModel::log2_failure_probability(const GateSpec& gate,
                                            double decision_variance) const {
  return log2_gaussian_tail(decision_margin(gate), decision_variance - grid_variance());
}

double log2_erfc(double x) {
  EXPECTS(std::isfinite(x), "log2_erfc: x=" + std::to_string(x) + " but expected a finite value");
  if (x < 25) return std::log2(std::erfc(x));
  // erfc(x) = exp(-x^2) / (x sqrt(pi)) * sum_k (-1)^k (2k-1)!! / (2x^2)^k; at x >= 25 the
  // terms fall below 1e-10 after the fourth, so five terms give full double precision (the
  // loop takes seven).
  const double inv = 1.0 / (2.0 * x * x);
  double term = 1.0, series = 1.0;
  for (int k = 1; k <= 6; ++k) {
    term *= -(2.0 * k - 1.0) * inv;
    series += term;
  }
  return (-x * x - std::log(x * std::sqrt(std::numbers::pi)) + std::log(series)) /
         std::numbers::ln2;
}

double log2_gaussian_tail(double margin, double variance) {
  EXPECTS(std::isfinite(margin) && margin >= 0,
          "log2_gaussian_tail: margin=" + std::to_string(margin) + " but expected a finite value >= 0");
  EXPECTS(std::isfinite(variance) && variance > 0,
          "log2_gaussian_tail: variance=" + std::to_string(variance) +
              " but expected a finite value > 0");
  return log2_erfc(margin / std::sqrt(2.0 * variance));
}

double log2_decision_failure_probability(const GateSpec& gate, double variance,
                                         double half_step) {
  EXPECTS(gate.bootstraps() > 0, "log2_decision_failure_probability: gate " +
                                     std::string(gate_kind_name(gate.kind)) +
                                     " has no bootstrap; expected a bootstrapped gate");
  EXPECTS(std::isfinite(variance) && variance > 0,
          "log2_decision_failure_probability: variance=" + std::to_string(variance) +
              " but expected a finite value > 0");
  EXPECTS(std::isfinite(half_step) && half_step >= 0 && half_step < 1.0 / 8,
          "log2_decision_failure_probability: half_step=" + std::to_string(half_step) +
              " but expected a finite value in [0, 1/8)");
  // The decided phase lies on Z_2N's grid, and its variance includes the grid's own rounding,
  // a step^2 / 12 = half_step^2 / 3, which the half-step shifts below account for instead.
  const double continuous = variance - half_step * half_step / 3;
  EXPECTS(continuous > 0, "log2_decision_failure_probability: variance=" +
                              std::to_string(variance) +
                              " is no more than the rounding to Z_2N's grid alone (half_step=" +
                              std::to_string(half_step) + ")");
  // The bootstraps whose decisions are averaged: the gate itself, or MUX's two halves.
  std::vector<GateSpec> parts;
  if (gate.kind == GateKind::Mux) {
    parts = {GateSpec::of(GateKind::And), GateSpec::of(GateKind::AndNY)};
  } else {
    parts = {gate};
  }
  double log2_sum = -INFINITY;
  int cases = 0;
  for (const GateSpec& g : parts) {
    for (int x = 0; x < (1 << g.arity); ++x) {
      const int e = g.phase_eighths(x & 1, (x >> 1) & 1, (x >> 2) & 1);  // in (-4, 4], not 0 or 4
      const int near = e < 0 ? -e : e;                                    // 1..3 eighths
      // The rounding modulus switch puts Z_2N's point 0 on the positive side, so the boundaries
      // sit half a step below 0 and 1/2: a positive phase has half a step more to fall to the
      // boundary near 0 and half a step less to rise to the one near 1/2, a negative one the
      // reverse (the decided phase lies on Z_2N's grid; half a step is the continuity
      // correction of the Gaussian tail).
      const double toward_zero = e > 0 ? half_step : -half_step;
      // One-sided tail Q(d / sigma) = erfc(d / sqrt(2 V)) / 2 at each boundary.
      log2_sum = log2_add(log2_sum,
                          log2_gaussian_tail(near / 8.0 + toward_zero, continuous) - 1.0);
      log2_sum = log2_add(log2_sum,
                          log2_gaussian_tail((4 - near) / 8.0 - toward_zero, continuous) - 1.0);
      ++cases;
    }
  }
  return log2_sum - std::log2(static_cast<double>(cases));
}

}  // namespace torusgate
