// Average-case noise model of gate bootstrapping (formulas in noise.hpp).
#include "torusgate/core/noise.hpp"

#include <cmath>

namespace torusgate {

NoiseModel noise_model(const Parameters& p) {
  p.validate();
  const double n = p.lwe_dimension, k = p.glwe_dimension, N = p.polynomial_size;
  const double l = p.bk_level_count, Bg = std::ldexp(1.0, static_cast<int>(p.bk_base_log));
  const double t = p.ks_level_count, base = std::ldexp(1.0, static_cast<int>(p.ks_base_log));
  const double q = std::ldexp(1.0, -static_cast<int>(p.bk_base_log * p.bk_level_count));
  const double pr = std::ldexp(1.0, -static_cast<int>(p.ks_base_log * p.ks_level_count));
  NoiseModel m;
  m.fresh = p.lwe_noise_stddev * p.lwe_noise_stddev;
  const double digit2 = (Bg * Bg + 2.0) / 12.0;
  m.blind_rotation = n * (k + 1) * l * N * digit2 * p.glwe_noise_stddev * p.glwe_noise_stddev +
                     n * (1 + k * N / 2) * q * q / 12.0;
  m.key_switching = k * N * t * (1 - 1 / base) * p.lwe_noise_stddev * p.lwe_noise_stddev +
                    (k * N / 2) * pr * pr / 12.0;
  m.modulus_switching = (1 + n / 2) / (12.0 * (2 * N) * (2 * N));
  return m;
}

double NoiseModel::gate_output(const GateSpec& gate) const {
  if (gate.bootstraps() == 0) return 0;
  return gate.bootstraps() * blind_rotation + key_switching;
}

double NoiseModel::decision(const GateSpec& gate) const {
  const double out = blind_rotation + key_switching;
  const int factor = gate.kind == GateKind::Mux ? 2 : gate.variance_factor();
  return factor * out + modulus_switching;
}

double NoiseModel::failure_probability(const GateSpec& gate) const {
  return std::erfc(gate.ideal_margin() / std::sqrt(2.0 * decision(gate)));
}

}  // namespace torusgate
