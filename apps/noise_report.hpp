// The noise_study program's command line and reports: options (parsed and validated before
// any work), the figures derived from a measurement and the model (variance ratios, failure
// probabilities in log2, expected and counted failures), and the JSON, markdown and console
// renderings.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "noise_measure.hpp"
#include "torusgate/core/noise.hpp"
#include "torusgate/cpu/cpu_backend.hpp"
#include "torusgate/gpu/cuda_options.hpp"

namespace torusgate::apps {

struct NoiseStudyOptions {
  std::vector<std::string> params = {"tfhe_lib_128", "tfhe_lib_80", "default_128"};
  // Per parameter set; default 10^5 on the CPU backends, 10^6 on the GPU.
  std::uint64_t gates = 100000;
  std::size_t round_size = 2048;  // default 2048 on the CPU backends, 65536 on the GPU
  std::vector<StudyGate> kinds = default_study_gates();
  std::uint32_t unroll = 1;  // --unroll: the bootstrapping key's form (1 standard, 2 to 4 unrolled)
  std::string backend = "best";  // resolved to sequential, openmp or gpu by the parser
  CpuOptions cpu;
  CudaOptions gpu;  // --device, --memory-budget-mb, --no-cuda-graphs
  std::optional<std::uint64_t> seed;  // deterministic, INSECURE randomness (tests)
  // Report paths when given (an empty one is refused when the file is made; the two must name
  // different files).
  std::optional<std::string> json_path, markdown_path;
  bool progress = true;
  bool help = false;
};

void noise_study_usage(std::ostream& os);

// Bytes of samples a run keeps until its reports are written: every gate's output,
// combination and decision errors and its inputs' noise (MUX two each), for every set.
constexpr std::uint64_t noise_study_bytes_per_gate = 48;
// Throws InvalidArgument, before anything runs, when --gates x the sets' count would keep
// more samples than `memory_bytes` (the machine's memory) holds, naming both and what to do.
void check_sample_memory(const NoiseStudyOptions& o, std::uint64_t memory_bytes);

// Parses and validates the command line; throws InvalidArgument naming the bad option (also
// for --json and --markdown naming the same file).
NoiseStudyOptions parse_noise_study_options(int argc, char** argv);
// (Its --threshold, --kinds and --params parsers: study_gates.hpp.)

// What the model and the measurement say about one gate kind.
struct GateFigures {
  double model_output = 0, model_combination = 0, model_decision = 0;
  double output_ratio = 0, combination_ratio = 0, decision_ratio = 0;
  // Decision variance predicted for this key from the measured input noise: factor x the
  // inputs' mean square (their per-key mean counts: inputs are negated at random) + the
  // modulus-switch variance of this key, (1 + |s|) / (12 (2N)^2).
  double decision_from_inputs = 0, decision_from_inputs_ratio = 0;
  double margin = 0;  // the gate's ideal margin, 1/8 or 1/4
  // NoiseModel::log2_failure_probability with the model's or the measured decision variance:
  // the margin less half a Z_2N step, the variance less the grid's own rounding.
  double log2_p_model = 0, log2_p_measured = 0;
  // log2 of the per-bootstrap probability averaged over inputs (log2_decision_failure_
  // probability) and the failures it predicts for this run's bootstraps.
  double log2_p_avg_model = 0, log2_p_avg_measured = 0;
  double expected_model = 0, expected_measured = 0;
  double max_abs_decision_sigmas = 0;  // largest |decision error| in model standard deviations
};

// `inputs`: the measured noise of the pool the inputs were drawn from; `key_weight`: |s|,
// `polynomial_size`: N.
GateFigures gate_figures(const GateMeasurement& m, const NoiseModel& model,
                         const SampleStats& inputs, std::size_t key_weight,
                         std::uint32_t polynomial_size);

// The output variance against the model for the key that was measured: its weights in the
// rounding terms (noise_model_for_key), less the key-switching bias B that one key's outputs
// share as a common mean, gate_output - B. `half_width_95`: 1.96 standard errors of the ratio,
// ratio sqrt(2 / (count - 1) + excess kurtosis / count) (NaN below 4 samples).
struct KeyFit {
  double model = 0, ratio = 0, half_width_95 = 0;
};
KeyFit key_fit(const GateMeasurement& m, const NoiseModel& key_model);

// One parameter set's run.
struct SetReport {
  Parameters params;
  NoiseModel model;
  NoiseModel key_model;  // for the key measured: noise_model_for_key(params, unroll, weights)
  StudyResult result;
  std::string backend, fft;
  int threads = 1;
  double keygen_s = 0;
};

// The whole JSON document (opening: program, date, commit, machine, backend, threads).
std::string noise_study_json(const NoiseStudyOptions& o, const std::vector<SetReport>& sets);
// The markdown report: how it was measured, then per set the model and the table.
std::string noise_study_markdown(const NoiseStudyOptions& o, const std::vector<SetReport>& sets);
// The per-set table alone (markdown), also printed on the console.
std::string noise_study_table(const SetReport& set);

}  // namespace torusgate::apps
