// Measured noise of bootstrapped gates with real parameters: for every bootstrapped gate kind
// (the TFHE library gates, MUX and the weighted sign gates), the margin of the phase each
// bootstrap decides on and the variance of the output phase, against core/noise.hpp.
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
