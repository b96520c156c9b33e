// noise_study: command line, derived figures and the JSON / markdown / console reports.
#include "noise_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <system_error>

#include "app_support.hpp"
#include "torusgate/core/error.hpp"

namespace torusgate::apps {
namespace {

std::string fmt(const char* format, double v) {
  if (!std::isfinite(v)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// A count that may be astronomically small: "0.0031", "12.4", or "2^-812".
std::string fmt_expected(double log2_value) {
  if (!std::isfinite(log2_value)) return "n/a";
  if (log2_value < -20) return fmt("2^%.0f", log2_value);
  return fmt("%.3g", std::exp2(log2_value));
}

double ratio(double measured, double model) { return model > 0 ? measured / model : NAN; }

// log2 of `count` times 2^log2_p.
double log2_times(std::uint64_t count, double log2_p) {
  return count == 0 ? -INFINITY : std::log2(static_cast<double>(count)) + log2_p;
}

std::string stats_json(const SampleStats& s, double model_variance, const std::string& indent) {
  const double sigma = std::sqrt(model_variance);
  std::ostringstream os;
  os << "{\"count\": " << s.count();
  if (s.count() == 0) return os.str() + "}";
  os << ", \"mean\": " << json_number(s.mean()) << ", \"variance\": " << json_number(s.variance())
     << ", \"stddev\": " << json_number(std::sqrt(s.variance()))
     << ", \"min\": " << json_number(s.min()) << ", \"max\": " << json_number(s.max())
     << ", \"excess_kurtosis\": " << json_number(s.excess_kurtosis())
     << ", \"model_variance\": " << json_number(model_variance)
     << ", \"variance_ratio\": " << json_number(ratio(s.variance(), model_variance)) << ",\n"
     << indent << " \"quantiles\": {";
  const double qs[] = {0.0001, 0.001, 0.01, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999};
  for (std::size_t i = 0; i < std::size(qs); ++i) {
    os << (i ? ", " : "") << "\"" << qs[i] << "\": " << json_number(s.quantile(qs[i]));
  }
  os << "},\n" << indent << " \"histogram\": {\"unit\": \"model standard deviation\", "
     << "\"bin_width\": 0.5, \"range\": [-6, 6], ";
  if (sigma > 0) {
    SampleStats scaled;
    for (double v : s.values()) scaled.add(v / sigma);
    const auto h = scaled.histogram(0.5, 6.0);
    os << "\"below\": " << h.front() << ", \"above\": " << h.back() << ", \"counts\": [";
    for (std::size_t i = 1; i + 1 < h.size(); ++i) os << (i > 1 ? ", " : "") << h[i];
    os << "]}}";
  } else {
    os << "\"counts\": null}}";
  }
  return os.str();
}

}  // namespace

void noise_study_usage(std::ostream& os) {
  os << "usage: noise_study [options]\n"
        "Measures the phase error of bootstrapped gates with the secret key (client side) and\n"
        "compares it with the noise model of core/noise.hpp, per parameter set and gate kind.\n"
        "  --params LIST     parameter sets, comma-separated: names, or real (tfhe_lib_128,\n"
        "                    tfhe_lib_80, default_128; the default), toy (toy_INSECURE,\n"
        "                    toy_k2_INSECURE), all\n"
        "  --gates N         gates per parameter set, split evenly over the gate kinds, the\n"
        "                    remainder to the first kinds; MUX counts one gate for its two\n"
        "                    bootstraps (default 100000 on the CPU, 1000000 on the GPU)\n"
        "  --unroll U        bootstrapping key: 1 standard (default), 2, 3 or 4 unrolled (its\n"
        "                    model: 3x, 14/3x or 15/2x the key term of the blind rotation)\n"
        "  --round R         gates per evaluate() call, 16..65536 (default 2048 on the CPU,\n"
        "                    65536 on the GPU)\n"
        "  --kinds LIST      gate kinds, comma-separated labels (AND, NAND, ..., MUX, MAJORITY,\n"
        "                    XOR3, PREFIX_GENERATE, T(0;1), ...) or groups: all (default),\n"
        "                    fixed, threshold, stress\n"
        "  --threshold O:W1[:W2[:W3]]  add the threshold gate bootstrap(O/8 + sum Wi in_i);\n"
        "                    repeatable\n"
        "  --backend B       best (default: gpu when a CUDA device is usable, else openmp) |\n"
        "                    sequential | openmp | gpu\n"
        "  --threads T       OpenMP threads (default: the OpenMP default)\n"
        "  --fft E           auto | fftw | simd | portable (CPU backends)\n"
        "  --task-size S     blind rotations per task, 2..4096 (CPU backends)\n"
        "  --device D        CUDA device (gpu); --memory-budget-mb M, --no-cuda-graphs,\n"
        "                    --gpu-engine cufft|fused, --fused-groups G, --fused-rotations R,\n"
        "                    --key-switching automatic|gather|tensor_core, --transfer direct|pinned,\n"
        "                    --staging-mb MB\n"
        "  --seed S          INSECURE deterministic keys and noise, for reproducible tests\n"
        "  --json PATH       write the full report (statistics, quantiles, histograms) as JSON\n"
        "  --markdown PATH   write the tables as markdown (a file other than --json's)\n"
        "  --no-progress     no progress bar on stderr\n"
        "  --help            this text\n"
        "Exit status: 0 done, 1 a measurement was inconsistent or the run failed, 2 bad options.\n";
}

void check_sample_memory(const NoiseStudyOptions& o, std::uint64_t memory_bytes) {
  const std::uint64_t sets = o.params.size();
  // --gates is at most 10^9 and there are at most five sets: no overflow.
  const std::uint64_t needed = o.gates * sets * noise_study_bytes_per_gate;
  if (needed <= memory_bytes) return;
  const auto gib = [](std::uint64_t bytes) {
    return std::to_string((bytes + (std::uint64_t{1} << 29)) >> 30) + " GiB";
  };
  std::string message = "--gates: " + std::to_string(o.gates) + " gates for each of ";
  message += std::to_string(sets) + " parameter set(s) keep about " + gib(needed);
  message += " of samples in memory (" + std::to_string(noise_study_bytes_per_gate);
  message += " bytes a gate, until the reports are written), more than this machine's ";
  message += gib(memory_bytes) + "; measure fewer gates, or one set per run (--params NAME)";
  throw InvalidArgument(message);
}

NoiseStudyOptions parse_noise_study_options(int argc, char** argv) {
  NoiseStudyOptions o;
  std::vector<StudyGate> extra;
  bool gates_given = false, round_given = false;
  // The first CPU option (--threads, ...) and GPU option (--device, ...) given; empty: none.
  std::string cpu_option, gpu_option;
  for (CommandLine cl(argc, argv, {"--threshold"}); cl.next();) {
    const std::string& arg = cl.arg();
    if (cl.is_help()) {
      o.help = true;
      return o;
    } else if (arg == "--params") {
      o.params = select_parameter_sets(cl.value());
    } else if (arg == "--gates") {
      o.gates = parse_count(arg, cl.value(), 1, 1000000000);
      gates_given = true;
    } else if (arg == "--unroll") {
      o.unroll = static_cast<std::uint32_t>(parse_count(arg, cl.value(), 1, max_unroll));
    } else if (arg == "--round") {
      o.round_size = parse_count(arg, cl.value(), 16, 65536);
      round_given = true;
    } else if (arg == "--kinds") {
      o.kinds = select_study_gates(cl.value());
    } else if (arg == "--threshold") {
      extra.push_back(parse_threshold_gate(cl.value()));
    } else if (arg == "--backend") {
      o.backend = cl.value();
    } else if (parse_cpu_option(cl, o.cpu)) {
      if (cpu_option.empty()) cpu_option = arg;
    } else if (parse_gpu_option(cl, o.gpu)) {
      if (gpu_option.empty()) gpu_option = arg;
    } else if (arg == "--seed") {
      o.seed = parse_count(arg, cl.value(), 0, UINT64_MAX);
    } else if (arg == "--json") {
      o.json_path = cl.value();
    } else if (arg == "--markdown") {
      o.markdown_path = cl.value();
    } else if (arg == "--no-progress") {
      o.progress = false;
    } else {
      cl.reject();
    }
  }
  // Empty paths are left to OutputFile, which names the flag.
  if (o.json_path && o.markdown_path && !o.json_path->empty() && !o.markdown_path->empty() &&
      same_report_file(*o.json_path, *o.markdown_path)) {
    throw InvalidArgument("--json '" + *o.json_path + "' and --markdown '" + *o.markdown_path +
                          "' name the same file; one report would replace the other");
  }
  for (const StudyGate& g : extra) {
    if (std::any_of(o.kinds.begin(), o.kinds.end(),
                    [&](const StudyGate& k) { return k.label == g.label; }))
      throw InvalidArgument("--threshold: gate " + g.label + " is already in the list");
    o.kinds.push_back(g);
  }
  o.backend = resolve_backend(o.backend);
  if (o.backend == "gpu") {
    if (!gates_given) o.gates = 1000000;
    if (!round_given) o.round_size = 65536;
  }
  if (o.kinds.empty()) throw InvalidArgument("--kinds: no gate kind selected");
  if (o.gates < o.kinds.size()) {
    throw InvalidArgument("--gates " + std::to_string(o.gates) + " is fewer than the " +
                          std::to_string(o.kinds.size()) + " gate kinds; expected at least " +
                          std::to_string(o.kinds.size()));
  }
  if (o.backend == "gpu" && !cpu_option.empty()) throw apps::cpu_options_not_for_gpu(cpu_option);
  if (o.backend != "gpu" && !gpu_option.empty()) {
    throw apps::gpu_options_not_for(gpu_option, o.backend);
  }
  // Before any key is made: the GPU options as the backend will check them, for every set
  // (the refusals that depend on the set name it).
  if (o.backend == "gpu") {
    for (const std::string& name : o.params) {
      check_gpu_options(o.gpu, parameters_by_name(name), o.unroll);
    }
  }
  if (o.cpu.threads != 0 && o.backend == "sequential")
    throw InvalidArgument("--threads applies to the openmp backend, not to sequential");
  return o;
}

KeyFit key_fit(const GateMeasurement& m, const NoiseModel& key_model) {
  KeyFit fit;
  fit.model = key_model.gate_output(m.gate.spec) - key_model.key_switching_bias;
  fit.ratio = ratio(m.output.variance(), fit.model);
  const double n = static_cast<double>(m.output.count());
  double kurtosis = m.output.excess_kurtosis();
  if (std::isnan(kurtosis)) kurtosis = 0;
  fit.half_width_95 = n >= 4 ? 1.96 * fit.ratio * std::sqrt(2.0 / (n - 1) + kurtosis / n) : NAN;
  return fit;
}

GateFigures gate_figures(const GateMeasurement& m, const NoiseModel& model,
                         const SampleStats& inputs, std::size_t key_weight,
                         std::uint32_t polynomial_size) {
  const GateSpec& spec = m.gate.spec;
  GateFigures f;
  f.model_output = model.gate_output(spec);
  f.model_combination = model.combination(spec);
  f.model_decision = model.decision(spec);
  f.output_ratio = ratio(m.output.variance(), f.model_output);
  f.combination_ratio = ratio(m.combination.variance(), f.model_combination);
  f.decision_ratio = ratio(m.decision.variance(), f.model_decision);
  const int factor = spec.kind == GateKind::Mux ? 2 : spec.variance_factor();
  const double mean_square = inputs.variance() + inputs.mean() * inputs.mean();
  const double two_n = 2.0 * polynomial_size;
  f.decision_from_inputs =
      factor * mean_square + (1.0 + static_cast<double>(key_weight)) / (12.0 * two_n * two_n);
  f.decision_from_inputs_ratio = ratio(m.decision.variance(), f.decision_from_inputs);
  f.margin = spec.ideal_margin();
  // The model's own figures, the measured variance in place of its decision variance (both
  // less the grid's rounding, which a measured decided phase includes as well).
  f.log2_p_model = model.log2_failure_probability(spec);
  const double measured = m.decision.variance();
  const bool measured_usable = measured > model.grid_variance();  // false for NaN
  f.log2_p_measured = measured_usable ? model.log2_failure_probability(spec, measured) : NAN;
  f.log2_p_avg_model = log2_decision_failure_probability(spec, f.model_decision, model.half_step);
  f.log2_p_avg_measured =
      measured_usable ? log2_decision_failure_probability(spec, measured, model.half_step) : NAN;
  f.expected_model = log2_times(m.decisions, f.log2_p_avg_model);
  f.expected_measured = log2_times(m.decisions, f.log2_p_avg_measured);
  const double sigma = std::sqrt(f.model_decision);
  if (m.decision.count() > 0)
    f.max_abs_decision_sigmas = std::max(std::fabs(m.decision.min()), std::fabs(m.decision.max())) / sigma;
  return f;
}

std::string noise_study_json(const NoiseStudyOptions& o, const std::vector<SetReport>& sets) {
  std::ostringstream os;
  const std::string backend = sets.empty() ? o.backend : sets.front().backend;
  const int threads = sets.empty() ? 1 : sets.front().threads;
  os << json_report_opening("program", "noise_study", backend, threads)
     << "  \"fft\": " << json_string(sets.empty() ? "" : sets.front().fft) << ",\n"
     << "  \"deterministic_seed\": " << (o.seed ? std::to_string(*o.seed) : "null") << ",\n"
     << "  \"gates_per_set\": " << o.gates << ",\n"
     << "  \"round_size\": " << o.round_size << ",\n"
     << "  \"bootstrapping_key_unroll\": " << o.unroll << ",\n"
     << "  \"split\": " << json_string("gates split evenly over the gate kinds (the remainder to "
                                       "the first kinds); MUX counts one gate for two bootstraps; "
                                       "inputs are outputs of earlier single-bootstrap gates")
     << ",\n  \"sets\": [";
  for (std::size_t si = 0; si < sets.size(); ++si) {
    const SetReport& set = sets[si];
    const NoiseModel& m = set.model;
    const double v_out = m.blind_rotation + m.key_switching;
    os << (si ? ",\n" : "\n") << "    {\n"
       << "      \"parameters\": " << parameters_json(set.params, "        ") << ",\n"
       << "      \"model\": {\"fresh\": " << json_number(m.fresh)
       << ", \"blind_rotation\": " << json_number(m.blind_rotation)
       << ", \"key_switching\": " << json_number(m.key_switching)
       << ", \"modulus_switching\": " << json_number(m.modulus_switching)
       << ", \"key_switching_bias\": " << json_number(m.key_switching_bias)
       << ", \"bootstrapped_output\": " << json_number(v_out) << "},\n"
       << "      \"lwe_key_weight\": " << set.result.key_weight << ",\n"
       << "      \"glwe_key_weight\": " << set.result.glwe_key_weight << ",\n"
       << "      \"modulus_switching_for_this_key\": "
       << json_number((1.0 + set.result.key_weight) /
                      (12.0 * 4.0 * set.params.polynomial_size * set.params.polynomial_size))
       << ",\n"
       << "      \"key_generation_s\": " << json_number(set.keygen_s) << ",\n"
       << "      \"run_s\": " << json_number(set.result.seconds) << ",\n"
       << "      \"rounds\": " << set.result.rounds << ",\n"
       << "      \"bootstraps\": " << set.result.bootstraps << ",\n"
       << "      \"bootstraps_per_s\": "
       << json_number(set.result.bootstraps / set.result.seconds) << ",\n"
       << "      \"bootstrapped_inputs\": "
       << stats_json(set.result.bootstrapped_inputs, v_out, "      ") << ",\n"
       << "      \"gates\": [";
    for (std::size_t gi = 0; gi < set.result.gates.size(); ++gi) {
      const GateMeasurement& g = set.result.gates[gi];
      const GateFigures f = gate_figures(g, m, set.result.bootstrapped_inputs,
                                         set.result.key_weight, set.params.polynomial_size);
      const KeyFit fit = key_fit(g, set.key_model);
      os << (gi ? ",\n" : "\n") << "        {\"label\": " << json_string(g.gate.label)
         << ", \"kind\": " << json_string(std::string(gate_kind_name(g.gate.spec.kind)))
         << ", \"offset_eighths\": " << int{g.gate.spec.offset_eighths} << ", \"weights\": [";
      for (int j = 0; j < g.gate.spec.arity; ++j) os << (j ? ", " : "") << int{g.gate.spec.weights[j]};
      os << "], \"variance_factor\": "
         << (g.gate.spec.kind == GateKind::Mux ? 2 : g.gate.spec.variance_factor())
         << ", \"margin\": " << json_number(f.margin)
         << ", \"stress\": " << (g.gate.stress ? "true" : "false") << ",\n"
         << "         \"gates\": " << g.gates << ", \"bootstraps\": " << g.decisions << ",\n"
         << "         \"output\": " << stats_json(g.output, f.model_output, "         ") << ",\n"
         << "         \"output_for_this_key\": {\"model_variance\": " << json_number(fit.model)
         << ", \"variance_ratio\": " << json_number(fit.ratio)
         << ", \"ratio_half_width_95\": " << json_number(fit.half_width_95) << "},\n"
         << "         \"combination\": " << stats_json(g.combination, f.model_combination, "         ")
         << ",\n"
         << "         \"decision\": " << stats_json(g.decision, f.model_decision, "         ") << ",\n"
         << "         \"decision_model_from_measured_inputs\": " << json_number(f.decision_from_inputs)
         << ", \"decision_ratio_to_it\": " << json_number(f.decision_from_inputs_ratio) << ",\n"
         << "         \"failure\": {\"log2_p_model\": " << json_number(f.log2_p_model)
         << ", \"log2_p_measured\": " << json_number(f.log2_p_measured)
         << ", \"log2_p_avg_model\": " << json_number(f.log2_p_avg_model)
         << ", \"log2_p_avg_measured\": " << json_number(f.log2_p_avg_measured)
         << ", \"log2_expected_failures_model\": " << json_number(f.expected_model)
         << ", \"log2_expected_failures_measured\": " << json_number(f.expected_measured)
         << ", \"decision_failures\": " << g.decision_failures
         << ", \"output_failures\": " << g.output_failures
         << ", \"unexplained\": " << g.unexplained << "}}";
    }
    os << "\n      ]\n    }";
  }
  os << "\n  ]\n}\n";
  return os.str();
}

std::string noise_study_table(const SetReport& set) {
  const NoiseModel& m = set.model;
  std::ostringstream os;
  os << "| gate | sum w^2 | margin | gates | output var / model "
        "| output var / this key's model (95%) | decision var / model "
        "| decision var / measured inputs | excess kurtosis | max abs error (model sd) "
        "| log2 P model | log2 P measured | expected failures (model / measured) "
        "| counted failures |\n"
     << "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const GateMeasurement& g : set.result.gates) {
    const GateFigures f = gate_figures(g, m, set.result.bootstrapped_inputs,
                                       set.result.key_weight, set.params.polynomial_size);
    const KeyFit fit = key_fit(g, set.key_model);
    std::string counted = std::to_string(g.decision_failures);
    if (g.output_failures != g.decision_failures) counted += " (outputs " + std::to_string(g.output_failures) + ")";
    if (g.unexplained) counted += ", " + std::to_string(g.unexplained) + " UNEXPLAINED";
    os << "| " << g.gate.label << (g.gate.stress ? " (stress)" : "") << " | "
       << (g.gate.spec.kind == GateKind::Mux ? 2 : g.gate.spec.variance_factor()) << " | "
       << (f.margin == 0.25 ? "1/4" : "1/8") << " | " << g.gates
       << (g.decisions != g.gates ? " (" + std::to_string(g.decisions) + " bootstraps)" : "")
       << " | " << fmt("%.3f", f.output_ratio) << " | " << fmt("%.3f", fit.ratio)
       << (std::isfinite(fit.half_width_95) ? " +- " + fmt("%.3f", fit.half_width_95) : "")
       << " | " << fmt("%.3f", f.decision_ratio) << " | "
       << fmt("%.3f", f.decision_from_inputs_ratio) << " | "
       << fmt("%.2f", g.decision.excess_kurtosis()) << " | "
       << fmt("%.1f", f.max_abs_decision_sigmas) << " | " << fmt("%.1f", f.log2_p_model) << " | "
       << fmt("%.1f", f.log2_p_measured) << " | " << fmt_expected(f.expected_model) << " / "
       << fmt_expected(f.expected_measured) << " | " << counted << " |\n";
  }
  return os.str();
}

std::string noise_study_markdown(const NoiseStudyOptions& o, const std::vector<SetReport>& sets) {
  std::ostringstream os;
  os << "# Noise and failure-rate measurement (noise_study)\n\n"
     << "Program `noise_study`, commit " << build_commit() << ", " << utc_timestamp() << ".\n"
     << "Machine: " << machine_description() << ".\n"
     << "Backend: " << (sets.empty() ? o.backend : sets.front().backend) << ", "
     << (sets.empty() ? 1 : sets.front().threads) << " thread(s), FFT "
     << (sets.empty() ? "" : sets.front().fft) << ".\n"
     << (o.seed ? "Randomness: INSECURE deterministic seed " + std::to_string(*o.seed) + ".\n"
                : std::string("Randomness: keys and noise from the OS-seeded CSPRNG.\n"))
     << "\n"
     << o.gates << " gates per parameter set, split evenly over the " << o.kinds.size()
     << " gate kinds (the remainder to the first kinds; MUX counts one gate for its two "
        "bootstraps), evaluated in rounds of up to "
     << o.round_size
     << " gates, one batch per round. Every input is the output of an earlier bootstrapped "
        "single-bootstrap gate (randomly permuted and negated), so it carries bootstrapping and "
        "key-switching noise. Errors are torus fractions measured with the secret key: "
        "*output* = output phase minus the +-1/8 its bootstrap(s) produced; *decision* = the "
        "phase in Z_2N that the blind rotation rotates by (after the modulus switch) minus the "
        "noiseless phase. The model is core/noise.hpp (decision variance = sum w^2 x (V_BR + "
        "V_KS) + V_MS). *Decision var / measured inputs*: the measured decision variance over "
        "sum w^2 x the inputs' measured mean square + this key's V_MS. *log2 P* = log2 "
        "erfc((margin - 1/(4N)) / sqrt(2 (V - 1/(48 N^2)))) per bootstrap at the gate's worst "
        "input (the rounding modulus switch puts the boundaries half a Z_2N step below 0 and "
        "1/2; the decided phase's own rounding to that grid taken off), with the model's or "
        "the measured decision variance V. *Output var / this key's model*: over the model "
        "with this key's weights in the rounding terms (core's noise_model_for_key), less B, "
        "the key-switching mean that one key's outputs share (V_BR + V_KS - B), +- 1.96 "
        "standard errors of the sample variance (with its excess kurtosis): about 1 for a "
        "model that holds. *Expected "
        "failures* = the run's bootstraps x the per-bootstrap probability averaged over the "
        "inputs (one-sided tails at both boundaries). *Counted failures* = bootstraps that "
        "decided on the wrong side (outputs that decrypted wrongly, when different).\n";
  for (const SetReport& set : sets) {
    const NoiseModel& m = set.model;
    const double v_out = m.blind_rotation + m.key_switching;
    const double v_in = set.result.bootstrapped_inputs.variance();
    const NoiseModel& km = set.key_model;
    const double v_key = km.blind_rotation + km.key_switching - km.key_switching_bias;
    os << "\n## " << set.params.name << (set.params.insecure ? " (INSECURE, tests only)" : "")
       << "\n\n"
       << "n=" << set.params.lwe_dimension << ", k=" << set.params.glwe_dimension
       << ", N=" << set.params.polynomial_size << ", bk " << set.params.bk_base_log << "/"
       << set.params.bk_level_count << ", ks " << set.params.ks_base_log << "/"
       << set.params.ks_level_count
       << (o.unroll > 1
               ? ". Unrolled bootstrapping key (`--unroll " + std::to_string(o.unroll) + "`)"
               : std::string())
       << ". Model: V_BR = " << fmt("%.3e", m.blind_rotation)
       << ", V_KS = " << fmt("%.3e", m.key_switching) << ", V_MS = "
       << fmt("%.3e", m.modulus_switching) << " (for a key of weight n/2; this key has weight "
       << set.result.key_weight << ", so "
       << fmt("%.3e", (1.0 + set.result.key_weight) /
                          (12.0 * 4.0 * set.params.polynomial_size * set.params.polynomial_size))
       << "; the GLWE key has weight " << set.result.glwe_key_weight << " of "
       << set.params.glwe_dimension * set.params.polynomial_size
       << "); bootstrapped output sd = 2^"
       << fmt("%.2f", 0.5 * std::log2(v_out)) << ". Measured output variance of the "
       << set.result.bootstrapped_inputs.count() << " single-bootstrap outputs: "
       << fmt("%.3e", v_in) << " (" << fmt("%.3f", v_in / v_out) << " x the model; "
       << fmt("%.3f", v_key / v_out)
       << " x is expected for this key: its weights in the rounding terms, less the "
          "key-switching noise's fixed mean, of standard deviation sqrt(B) = "
       << fmt("%.2e", std::sqrt(m.key_switching_bias)) << " over keys); their mean: "
       << fmt("%.2e", set.result.bootstrapped_inputs.mean()) << " ("
       << fmt("%.2f", set.result.bootstrapped_inputs.mean() / std::sqrt(v_out))
       << " model sd). "
       << set.result.bootstraps << " bootstraps in " << fmt("%.0f", set.result.seconds) << " s ("
       << fmt("%.0f", set.result.bootstraps / set.result.seconds) << " per second); keys made in "
       << fmt("%.1f", set.keygen_s) << " s.\n\n"
       << noise_study_table(set);
  }
  return os.str();
}

}  // namespace torusgate::apps
