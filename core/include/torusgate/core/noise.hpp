// Average-case noise model of gate bootstrapping (variances as squared torus fractions),
// for comparison with measured phases. Binary keys with P(s_i = 1) = 1/2, uniform digits.
// Blind rotation (TFHE, J. Cryptology 2020, theorem 4.3, average case):
//   V_BR = n (k+1) l N E[d^2] sigma_glwe^2 + n (1 + kN/2) q^2 / 12,
//   E[d^2] = (Bg^2 + 2) / 12, q = 2^-(Bgbit l) (decomposition precision);
// key switching (algorithm 1): V_KS = kN t (1 - 1/base) sigma_lwe^2 + (kN/2) p^2 / 12,
//   p = 2^-(basebit t);
// modulus switch to Z_2N of a gate input: V_MS = (1 + n/2) / (12 (2N)^2).
#pragma once

#include "torusgate/core/gates.hpp"
#include "torusgate/core/params.hpp"

namespace torusgate {

struct NoiseModel {
  double fresh = 0;             // sigma_lwe^2: a fresh encryption
  double blind_rotation = 0;    // V_BR: one blind rotation + sample extraction
  double key_switching = 0;     // V_KS
  double modulus_switching = 0; // V_MS
  // Variance of a bootstrapped gate output: V_BR + V_KS (MUX: 2 V_BR + V_KS).
  double gate_output(const GateSpec& gate) const;
  // Variance of the phase that the next bootstrap decides on, for inputs that are outputs
  // of bootstrapped gates: variance_factor * (V_BR + V_KS) + V_MS.
  double decision(const GateSpec& gate) const;
  // Probability that one gate with such inputs decides wrongly:
  // erfc(margin / sqrt(2 V)), margin = gate.ideal_margin() (1/8, or 1/4 for XOR-like gates).
  double failure_probability(const GateSpec& gate) const;
};

NoiseModel noise_model(const Parameters& params);

}  // namespace torusgate
