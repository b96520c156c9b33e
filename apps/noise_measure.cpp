// Noise measurement with the secret key: gate list, sample statistics and the study loop
// (see noise_measure.hpp).
#include "noise_measure.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <numeric>
#include <type_traits>

#include "torusgate/core/backend.hpp"
#include "torusgate/core/error.hpp"
#include "torusgate/gpu/cuda_backend.hpp"

namespace torusgate::apps {
namespace {

constexpr Torus32 eighth = Torus32{1} << 29;

// One bootstrap of a gate: the sign gate it evaluates and which gate inputs feed it.
struct Bootstrap {
  GateSpec part;
  std::array<int, 3> inputs{0, 1, 2};
};

std::vector<Bootstrap> bootstraps_of(const GateSpec& spec) {
  if (spec.kind == GateKind::Mux) {
    // MUX(a, b, c) = KS(BR(-1/8 + a + b) + BR(-1/8 - a + c) + 1/8): AND(a, b), ANDNY(a, c).
    return {Bootstrap{GateSpec::of(GateKind::And), {0, 1, 0}},
            Bootstrap{GateSpec::of(GateKind::AndNY), {0, 2, 0}}};
  }
  return {Bootstrap{spec, {0, 1, 2}}};
}

void negate(std::span<Torus32> sample) {
  for (Torus32& w : sample) w = Torus32{0} - w;
}

// A uniformly random permutation of 0..size-1 (Fisher-Yates).
std::vector<std::size_t> permutation(std::size_t size, Csprng& rng) {
  std::vector<std::size_t> p(size);
  std::iota(p.begin(), p.end(), std::size_t{0});
  for (std::size_t i = size; i > 1; --i) std::swap(p[i - 1], p[rng.uniform_below(i)]);
  return p;
}

}  // namespace

double SampleStats::mean() const {
  if (values_.empty()) return 0;
  double s = 0;
  for (double v : values_) s += v;
  return s / static_cast<double>(values_.size());
}

double SampleStats::variance() const {
  if (values_.size() < 2) return NAN;
  const double m = mean();
  double s = 0;
  for (double v : values_) s += (v - m) * (v - m);
  return s / static_cast<double>(values_.size() - 1);
}

double SampleStats::min() const {
  return values_.empty() ? 0 : *std::min_element(values_.begin(), values_.end());
}

double SampleStats::max() const {
  return values_.empty() ? 0 : *std::max_element(values_.begin(), values_.end());
}

double SampleStats::excess_kurtosis() const {
  if (values_.size() < 4) return NAN;
  const double m = mean();
  double m2 = 0, m4 = 0;
  for (double v : values_) {
    const double d2 = (v - m) * (v - m);
    m2 += d2;
    m4 += d2 * d2;
  }
  const double count = static_cast<double>(values_.size());
  m2 /= count;
  m4 /= count;
  return m2 > 0 ? m4 / (m2 * m2) - 3.0 : NAN;
}

double SampleStats::quantile(double q) const {
  EXPECTS(!values_.empty(), "SampleStats::quantile: the sample is empty");
  EXPECTS(q >= 0 && q <= 1, "SampleStats::quantile: q=" + std::to_string(q) +
                                " but expected a value in [0, 1]");
  std::vector<double> sorted = values_;
  std::sort(sorted.begin(), sorted.end());
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

std::vector<std::uint64_t> SampleStats::histogram(double bin_width, double range) const {
  EXPECTS(bin_width > 0 && range > 0 && std::isfinite(bin_width) && std::isfinite(range),
          "SampleStats::histogram: bin_width=" + std::to_string(bin_width) + ", range=" +
              std::to_string(range) + " but expected finite values > 0");
  const auto bins = static_cast<std::size_t>(std::llround(2 * range / bin_width));
  EXPECTS(bins >= 1 && bins <= 100000 && std::fabs(bins * bin_width - 2 * range) < 1e-9 * range,
          "SampleStats::histogram: range=" + std::to_string(range) +
              " is not a multiple of bin_width=" + std::to_string(bin_width) +
              " (at most 50000 bins a side)");
  std::vector<std::uint64_t> counts(bins + 2, 0);
  for (double v : values_) {
    if (v < -range) ++counts.front();
    else if (v >= range) ++counts.back();
    else counts[1 + std::min(bins - 1, static_cast<std::size_t>((v + range) / bin_width))]++;
  }
  return counts;
}

namespace {

template <class B>
StudyResult run_study(B& be, const SecretKey& secret, Csprng& rng, const StudyConfig& config,
                      const std::function<void(std::uint64_t, std::uint64_t)>& progress) {
  static_assert(Backend<B> && std::is_same_v<typename B::HostBatch, LweBatch> &&
                std::is_same_v<typename B::ClientKey, SecretKey>);
  using S = typename B::Storage;
  const Parameters& p = secret.parameters();
  EXPECTS(p == be.parameters(), "run_noise_study: the secret key is for parameters '" + p.name +
                                    "' but the backend holds a key for '" +
                                    be.parameters().name + "'");
  EXPECTS(!config.gates.empty(), "run_noise_study: the gate list is empty");
  EXPECTS(config.total_gates > 0, "run_noise_study: total_gates=0 but expected at least 1");
  EXPECTS(config.round_size > 0, "run_noise_study: round_size=0 but expected at least 1");
  for (const StudyGate& g : config.gates) {
    g.spec.validate();
    EXPECTS(g.spec.bootstraps() > 0, "run_noise_study: gate " + g.label +
                                          " has no bootstrap; expected a bootstrapped gate");
  }
  const auto start = std::chrono::steady_clock::now();
  const std::size_t n = p.lwe_dimension, n1 = n + 1;
  const std::uint32_t N = p.polynomial_size, two_n = 2 * N;
  const unsigned shift = 32 - static_cast<unsigned>(std::countr_zero(two_n));  // Z_2N -> torus
  const LweKey& key = secret.lwe_key();
  const auto s = key.coefficients();
  const std::size_t R = config.round_size, K = config.gates.size();
  const std::uint64_t before = be.stats().bootstraps;

  StudyResult result;
  result.key_weights = key_weights(secret, config.unroll);
  result.key_weight = result.key_weights.lwe;
  result.glwe_key_weight = result.key_weights.glwe;
  for (const StudyGate& g : config.gates) {
    GateMeasurement m;
    m.gate = g;
    result.gates.push_back(std::move(m));
  }
  // An output error beyond 1/16 (or 10 model standard deviations, for very noisy sets)
  // cannot come from bootstrapping noise: the decided phases do not explain the output.
  const NoiseModel model = noise_model(p, config.unroll);
  std::vector<double> unexplained_above(K);
  for (std::size_t k = 0; k < K; ++k) {
    unexplained_above[k] =
        std::max(1.0 / 16, 10 * std::sqrt(model.gate_output(config.gates[k].spec)));
  }
  std::vector<std::uint64_t> remaining(K, config.total_gates / K);
  for (std::size_t k = 0; k < config.total_gates % K; ++k) ++remaining[k];

  // The first pool: fresh encryptions, each refreshed by one bootstrap (T(0;1) = a copy).
  LweBatch pool;
  {
    std::vector<std::uint8_t> bits(R);
    for (auto& b : bits) b = static_cast<std::uint8_t>(rng.uniform_bit());
    const auto fresh = be.upload(encrypt_bits(secret, bits, rng));
    const auto out = be.allocate(R);
    be.evaluate({gate::make<S>(GateSpec::threshold(0, {1}), fresh.bits(), {}, {}, out.bits())});
    pool = be.download(out.bits());
    for (std::size_t i = 0; i < R; ++i) {
      const Torus32 ph = lwe_phase(pool.sample(i), key);
      result.bootstrapped_inputs.add(torus_to_double(ph - encode_bit(decode_bit(ph))));
    }
  }

  std::uint64_t done = 0;
  std::size_t cursor = 0;
  while (done < config.total_gates) {
    const std::size_t m = static_cast<std::size_t>(std::min<std::uint64_t>(R, config.total_gates - done));
    // This round's share of each kind, taken round-robin from the remaining quotas.
    std::vector<std::size_t> per_kind(K, 0);
    for (std::size_t filled = 0; filled < m;) {
      const std::size_t k = cursor;
      cursor = (cursor + 1) % K;
      if (remaining[k] > 0) {
        --remaining[k];
        ++per_kind[k];
        ++filled;
      }
    }
    // Inputs: gate e of the round takes pool sample perm_j[e mod P] at position j, negated
    // with probability 1/2.
    std::array<LweBatch, 3> in;
    for (int j = 0; j < 3; ++j) {
      in[j] = LweBatch(static_cast<std::uint32_t>(n), m);
      const auto perm = permutation(pool.count(), rng);
      for (std::size_t e = 0; e < m; ++e) {
        const auto src = pool.sample(perm[e % pool.count()]);
        const auto dst = in[j].sample(e);
        std::copy(src.begin(), src.end(), dst.begin());
        if (rng.uniform_bit()) negate(dst);
      }
    }
    const auto in_a = be.upload(in[0]), in_b = be.upload(in[1]), in_c = be.upload(in[2]);
    const auto out = be.allocate(m);
    std::vector<GateOp<S>> ops;
    std::vector<std::size_t> first(K, 0);
    for (std::size_t k = 0, at = 0; k < K; at += per_kind[k], ++k) {
      first[k] = at;
      if (per_kind[k] == 0) continue;
      ops.push_back(gate::make<S>(config.gates[k].spec, in_a.bits(at, per_kind[k]),
                                  in_b.bits(at, per_kind[k]), in_c.bits(at, per_kind[k]),
                                  out.bits(at, per_kind[k])));
    }
    be.evaluate(ops);
    const LweBatch outputs = be.download(out.bits());

    // Measure every gate with the secret key.
    LweBatch next_pool(static_cast<std::uint32_t>(n), m);
    std::size_t next_count = 0;
    std::vector<Torus32> comb(n1);
    for (std::size_t k = 0; k < K; ++k) {
      GateMeasurement& meas = result.gates[k];
      const GateSpec& spec = meas.gate.spec;
      const auto boots = bootstraps_of(spec);
      for (std::size_t e = first[k]; e < first[k] + per_kind[k]; ++e) {
        bool bit[3];
        for (int j = 0; j < 3; ++j) bit[j] = decode_bit(lwe_phase(in[j].sample(e), key));
        const bool expected = spec.evaluate(bit[0], bit[1], bit[2]);
        Torus32 produced = spec.kind == GateKind::Mux ? eighth : 0;
        for (const Bootstrap& bs : boots) {
          const GateSpec& g = bs.part;
          // The bootstrap's input: trivial(offset) + sum_j w_j in_j, as the backend forms it.
          std::fill(comb.begin(), comb.end(), Torus32{0});
          comb[n] = static_cast<Torus32>(g.offset_eighths) * eighth;
          bool part_bits[3] = {false, false, false};
          for (int j = 0; j < g.arity; ++j) {
            const auto src = in[bs.inputs[j]].sample(e);
            const auto w = static_cast<Torus32>(g.weights[j]);
            for (std::size_t t = 0; t < n1; ++t) comb[t] += w * src[t];
            part_bits[j] = bit[bs.inputs[j]];
          }
          const int ideal = g.phase_eighths(part_bits[0], part_bits[1], part_bits[2]);
          const Torus32 ideal_phase = static_cast<Torus32>(ideal) * eighth;
          meas.combination.add(torus_to_double(lwe_phase(comb, key) - ideal_phase));
          // The phase in Z_2N that the blind rotation rotates by: b~ - sum a~_i s_i.
          std::uint32_t ph = mod_switch_from_torus(comb[n], two_n);
          for (std::size_t i = 0; i < n; ++i) {
            ph -= mod_switch_from_torus(comb[i], two_n) * static_cast<std::uint32_t>(s[i]);
          }
          ph &= two_n - 1;
          meas.decision.add(torus_to_double((Torus32{ph} << shift) - ideal_phase));
          const bool decided = ph < N;  // [0, 1/2) -> +1/8
          const bool want = ideal > 0 && ideal < 4;
          meas.decision_failures += decided != want;
          produced += decided ? eighth : Torus32{0} - eighth;
          ++meas.decisions;
        }
        const auto sample = outputs.sample(e);
        const Torus32 phase = lwe_phase(sample, key);
        const double err = torus_to_double(phase - produced);
        if (std::fabs(err) > unexplained_above[k]) ++meas.unexplained;
        else meas.output.add(err);
        meas.output_failures += decode_bit(phase) != expected;
        ++meas.gates;
        if (spec.bootstraps() == 1) {
          std::copy(sample.begin(), sample.end(), next_pool.sample(next_count++).begin());
          result.bootstrapped_inputs.add(err);
        }
      }
    }
    if (next_count > 0) {
      pool = LweBatch(static_cast<std::uint32_t>(n), next_count);
      std::copy(next_pool.data().begin(), next_pool.data().begin() + next_count * n1,
                pool.data().begin());
    }
    done += m;
    ++result.rounds;
    if (progress) progress(done, config.total_gates);
  }
  result.bootstraps = be.stats().bootstraps - before;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace

StudyResult run_noise_study(CpuBackend& be, const SecretKey& secret, Csprng& rng,
                            const StudyConfig& config,
                            const std::function<void(std::uint64_t, std::uint64_t)>& progress) {
  return run_study(be, secret, rng, config, progress);
}

StudyResult run_noise_study(CudaBackend& be, const SecretKey& secret, Csprng& rng,
                            const StudyConfig& config,
                            const std::function<void(std::uint64_t, std::uint64_t)>& progress) {
  return run_study(be, secret, rng, config, progress);
}

}  // namespace torusgate::apps
