// Measurement of gate-bootstrapping noise with the secret key (client side): the gate kinds
// studied, sample statistics of phase errors, and run_noise_study(), which evaluates gates on
// a CPU backend with realistic inputs (outputs of earlier bootstrapped gates) and records, per
// gate kind, the error of the output phase, of the linear combination a bootstrap starts from
// and of the phase it decides on after the modulus switch to Z_2N, with counted failures.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "app_support.hpp"
#include "study_gates.hpp"
#include "torusgate/core/gates.hpp"
#include "torusgate/core/keys.hpp"
#include "torusgate/core/noise.hpp"
#include "torusgate/cpu/cpu_backend.hpp"

namespace torusgate {
class CudaBackend;  // torusgate/gpu/cuda_backend.hpp
}

namespace torusgate::apps {

// Sample statistics of phase errors (torus fractions). Keeps every value: quantiles exact.
class SampleStats {
 public:
  void add(double x) { values_.push_back(x); }
  std::size_t count() const { return values_.size(); }
  const std::vector<double>& values() const { return values_; }
  double mean() const;
  // Unbiased sample variance (n - 1); NaN (undefined: reports print n/a, JSON null) with
  // fewer than 2 values.
  double variance() const;
  double min() const;
  double max() const;
  // m4 / m2^2 - 3 (0 for a Gaussian); NaN (undefined) with fewer than 4 values or no spread.
  double excess_kurtosis() const;
  // The q-quantile (0 <= q <= 1), linear interpolation between order statistics. Throws
  // InvalidArgument on an empty sample or q outside [0, 1].
  double quantile(double q) const;
  // Counts of values in bins of width `bin_width` covering [-range, range) (range a multiple
  // of the width), plus the counts below and at or above the range: {below, bins..., above}.
  std::vector<std::uint64_t> histogram(double bin_width, double range) const;

 private:
  std::vector<double> values_;
};

// Everything measured for one gate kind in one run.
struct GateMeasurement {
  StudyGate gate;
  std::uint64_t gates = 0;      // gates evaluated
  std::uint64_t decisions = 0;  // bootstraps (MUX: 2 per gate)
  SampleStats output;           // output phase - the bit its bootstraps produced (+-1/8)
  SampleStats combination;      // phase of offset + sum w_i in_i - the noiseless e/8
  SampleStats decision;         // the Z_2N phase decided on (as a torus fraction) - e/8
  std::uint64_t decision_failures = 0;  // bootstraps that decided on the wrong side
  std::uint64_t output_failures = 0;    // outputs that decrypt to the wrong bit
  // Outputs whose phase is further than max(1/16, 10 model standard deviations) from what
  // the decided phases imply: the measurement (or the backend) is inconsistent. Always 0 in
  // a correct run; such outputs are left out of `output`.
  std::uint64_t unexplained = 0;
};

struct StudyConfig {
  std::vector<StudyGate> gates = default_study_gates();
  std::uint64_t total_gates = 100000;  // split evenly over `gates` (remainder to the first)
  std::size_t round_size = 2048;       // gates per evaluate() call
  std::uint32_t unroll = 1;            // the cloud key's bootstrapping key form (noise model)
};

struct StudyResult {
  std::vector<GateMeasurement> gates;
  SampleStats bootstrapped_inputs;  // noise of the pool the inputs are drawn from
  std::uint64_t bootstraps = 0;     // counted by the backend, the first refresh included
  // Hamming weight |s| of the LWE key: the modulus switch of this key has variance
  // (1 + |s|) / (12 (2N)^2), where the model assumes |s| = n/2.
  std::size_t key_weight = 0;
  // Hamming weight |S| of the GLWE key (as the extracted LWE key): the key switch's rounding
  // has variance |S| p^2 / 12 and the decomposition's (1 + |S|) q^2 / 12, where the model
  // assumes |S| = kN/2.
  std::size_t glwe_key_weight = 0;
  // Every weight the model takes from the key (noise_model_for_key), for this key's form.
  KeyWeights key_weights;
  std::size_t rounds = 0;
  double seconds = 0;
};

// Runs the study on `be` (any backend of the contract whose client side is LweBatch and
// SecretKey: the CPU backends and the CUDA backend; it holds only the cloud key of
// `secret`): a pool of fresh
// encryptions is refreshed by one bootstrap each; then every round draws each gate's inputs
// from the pool (a random permutation per input position, each input negated with
// probability 1/2, a free NOT, so that input bits are uniform), evaluates one batch mixing
// every kind, measures each gate with the secret key, and makes the outputs of its
// single-bootstrap gates the next pool. `progress(done, total)` is called after each round.
// Throws InvalidArgument for an empty gate list, a gate without a bootstrap, a key that does
// not match the backend, total_gates 0 or round_size 0.
StudyResult run_noise_study(CpuBackend& be, const SecretKey& secret, Csprng& rng,
                            const StudyConfig& config,
                            const std::function<void(std::uint64_t, std::uint64_t)>& progress = {});
StudyResult run_noise_study(CudaBackend& be, const SecretKey& secret, Csprng& rng,
                            const StudyConfig& config,
                            const std::function<void(std::uint64_t, std::uint64_t)>& progress = {});

}  // namespace torusgate::apps
