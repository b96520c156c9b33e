// Average-case noise model of gate bootstrapping (variances as squared torus fractions),
// for comparison with measured phases, and Gaussian tail probabilities that stay finite where
// erfc underflows. Binary keys with P(s_i = 1) = 1/2, uniform digits.
// Blind rotation (TFHE, J. Cryptology 2020, theorem 4.3, average case):
//   V_BR = n (k+1) l N E[d^2] sigma_glwe^2 + (n/2) (1 + kN/2) q^2 / 12,
//   E[d^2] = (Bg^2 + 2) / 12, q = 2^-(Bgbit l) (decomposition precision); the rounding term
//   counts the steps whose key bit is 1 (the external product multiplies the rounding error by
//   its GGSW's message), n/2 on average; with an unrolled key (unroll u > 1) each group of u
//   key bits contributes 2 (2^u - 1) key terms instead of u (2^u - 1 external products, each
//   multiplied by X^e - 1): 6 instead of 2 per pair, 14 instead of 3 per three bits, and
//   2 (1 - 2^-u) rounding terms instead of u/2 (one decomposition, at most one message 1);
// key switching (algorithm 1): V_KS = kN t (1 - 1/base) sigma_lwe^2 + (kN/2) p^2 / 12,
//   p = 2^-(basebit t);
// modulus switch to Z_2N of a gate input: V_MS = (1 + n/2) / (12 (2N)^2). The switch rounds,
// and Z_2N's point 0 decides positive, so the decision boundaries sit half a step, 1/(4N),
// below 0 and 1/2: a phase that must not rise past one has its margin less half a step.
// These are variances over keys and randomness together. For one fixed key, the key-switching
// noise is not centred: each digit value v of level j of coefficient i selects its own
// key-switching sample, whose noise e_ijv is fixed, so averaged over the (uniform, unsigned)
// digits the noise has the per-key mean -(1/base) sum_ijv e_ijv, the same for every gate output
// under that key, with variance over keys B = kN t (base-1) / base^2 sigma_lwe^2 (the
// `key_switching_bias`); around it the outputs of one key vary by V_BR + V_KS - B.
#pragma once

#include <cstddef>

#include "torusgate/core/gates.hpp"
#include "torusgate/core/params.hpp"

namespace torusgate {

class SecretKey;

struct NoiseModel {
  double fresh = 0;             // sigma_lwe^2: a fresh encryption
  double blind_rotation = 0;    // V_BR: one blind rotation + sample extraction
  double key_switching = 0;     // V_KS
  double modulus_switching = 0; // V_MS
  double key_switching_bias = 0;  // B: variance over keys of the per-key mean of V_KS's noise
  double half_step = 0;         // 1/(4N): how far the rounding puts the boundaries below 0, 1/2
  // Variance of a bootstrapped gate output: V_BR + V_KS (MUX: 2 V_BR + V_KS).
  double gate_output(const GateSpec& gate) const;
  // Variance of the linear combination offset + sum_i w_i in_i that a bootstrap of `gate`
  // starts from, for inputs that are outputs of single-bootstrap gates:
  // variance_factor * (V_BR + V_KS) (MUX: each of its two bootstraps, factor 2).
  double combination(const GateSpec& gate) const;
  // Variance of the phase that the bootstrap decides on: the combination after the modulus
  // switch to Z_2N, combination(gate) + V_MS.
  double decision(const GateSpec& gate) const;
  // The distance from the gate's worst noiseless decided phase to the boundary it may cross:
  // gate.ideal_margin() (1/8, or 1/4 for XOR-like gates) less half_step.
  double decision_margin(const GateSpec& gate) const;
  // decision(gate) less the rounding to Z_2N's grid of the decided phase itself, a step^2 / 12
  // = half_step^2 / 3: with the boundaries moved by half a step, the tail of the decided phase
  // is that of the unrounded phase (the continuity correction of a grid-valued variable).
  double tail_variance(const GateSpec& gate) const;
  // Probability that one bootstrap of such a gate decides wrongly, at the gate's worst
  // input: erfc(decision_margin(gate) / sqrt(2 V)), V = tail_variance(gate). Two-sided at the
  // smaller distance, so an upper bound for the worst input's one-sided tails.
  double failure_probability(const GateSpec& gate) const;
  // log2 of failure_probability(gate), finite where the probability underflows a double.
  double log2_failure_probability(const GateSpec& gate) const;
  // The same for a decided phase of another variance (a measured one): log2 erfc(
  // decision_margin(gate) / sqrt(2 (decision_variance - grid_variance()))); throws
  // InvalidArgument unless decision_variance > grid_variance().
  double log2_failure_probability(const GateSpec& gate, double decision_variance) const;
  // The decided phase's own rounding to Z_2N's grid, a step^2 / 12 = half_step^2 / 3.
  double grid_variance() const { return half_step * half_step / 3; }
};

// unroll: the bootstrapping key's form (BootstrappingKey::unroll()); an unrolled key
// multiplies the key term of V_BR of its grouped bits by 2 (2^u - 1) / u: 3x for pairs (2),
// 14/3x for threes (3).
NoiseModel noise_model(const Parameters& params, std::uint32_t unroll = 1);

// What the model takes from one secret key where noise_model takes the average over keys.
struct KeyWeights {
  std::size_t lwe = 0;             // |s|, ones of the LWE key (n/2 on average)
  std::size_t glwe = 0;            // |S|, ones of the GLWE key as an extracted LWE key (kN/2)
  std::size_t cmux_ones = 0;       // ones among the key bits a CMUX step takes (all, unroll 1)
  std::size_t nonzero_groups = 0;  // an unrolled key's groups with a bit 1 (a message 1)
};
// The weights of `key` for a bootstrapping key of form `unroll`.
KeyWeights key_weights(const SecretKey& key, std::uint32_t unroll = 1);

// The model for one key: the rounding terms with this key's weights, (1 + |S|) q^2 / 12 per
// step with a message 1 (cmux_ones + 2 nonzero_groups of them), |S| p^2 / 12 in V_KS and
// (1 + |s|) / (12 (2N)^2) in V_MS. Its V_KS is still a variance over the key-switching key's
// noise: the outputs of one key vary around their common mean by gate_output - B
// (key_switching_bias). Throws InvalidArgument when a weight exceeds its key's size.
NoiseModel noise_model_for_key(const Parameters& params, std::uint32_t unroll,
                               const KeyWeights& weights);

// log2(erfc(x)) for any finite x; for x >= 25, where erfc leaves the range of doubles, the
// asymptotic series erfc(x) = exp(-x^2) / (x sqrt(pi)) (1 - 1/(2x^2) + 3/(4x^4) - ...).
double log2_erfc(double x);

// log2 of erfc(margin / sqrt(2 variance)): the probability that a centred Gaussian of
// `variance` exceeds `margin` in absolute value. Throws InvalidArgument unless margin >= 0
// and variance > 0 (both finite).
double log2_gaussian_tail(double margin, double variance);

// log2 of the probability that one bootstrap of `gate` decides wrongly when the decided
// phase carries centred Gaussian noise of `variance`, averaged over uniformly random inputs:
// for each input combination the noiseless phase e/8 lies between the boundaries 0 and 1/2
// (or -1/2 and 0), each moved down by half_step (NoiseModel::half_step, 1/(4N); 0 for boundaries
// exactly at 0 and 1/2), and the probability is the sum of the two one-sided tails at the
// distances to them, with the variance less half_step^2 / 3 (as NoiseModel::tail_variance).
// MUX: averaged over both of its bootstraps (AND(a, b) and ANDNY(a, c)). Throws
// InvalidArgument for gates without a bootstrap, a variance that is not > half_step^2 / 3 or a
// half_step outside [0, 1/8).
double log2_decision_failure_probability(const GateSpec& gate, double variance,
                                         double half_step);

}  // namespace torusgate
