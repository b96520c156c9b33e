// Tests of the noise_study measurement and options (apps/noise_measure.hpp, noise_report.hpp):
// on toy parameters every gate kind's measured output, combination and decided-phase variances
// agree with the model; on a set whose modulus switch is very noisy the counted failures agree
// with the Gaussian tails; the statistics; every bad option is refused with its reason.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "noise_measure.hpp"
#include "noise_report.hpp"
#include "test_support.hpp"
#include "torusgate/cpu/cpu_backend.hpp"

using namespace torusgate;
using namespace torusgate::apps;

namespace {

// Parses a command line given as words (argv[0] added).
NoiseStudyOptions parse(std::vector<std::string> words) {
  words.insert(words.begin(), "noise_study");
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  return parse_noise_study_options(static_cast<int>(argv.size()), argv.data());
}

}  // namespace

TEST_CASE("noise_study: every gate kind's noise agrees with the model on toy parameters",
          "[noise_study]") {
  const auto& keys = test::keys_for(toy_insecure());
  OpenMpBackend be(keys.cloud);
  const std::uint64_t seed = test::catch_seed(0x401535);
  INFO("seed " << seed);
  Csprng rng = test::seeded_rng(seed);
  StudyConfig config;  // every default kind: 21
  REQUIRE(config.gates.size() == 21);
  config.total_gates = 200 * 21 + 5;  // 200 per kind, 5 more for the first five kinds
  config.round_size = 1024;
  std::uint64_t last_done = 0, calls = 0;
  const StudyResult r = run_noise_study(be, keys.secret, rng, config,
                                        [&](std::uint64_t done, std::uint64_t total) {
                                          CHECK(done > last_done);
                                          CHECK(total == config.total_gates);
                                          last_done = done;
                                          ++calls;
                                        });
  CHECK(last_done == config.total_gates);
  CHECK(calls == r.rounds);
  CHECK(r.rounds == 5);  // ceil(4205 / 1024)
  // One refresh per pool element, one bootstrap per gate, two per MUX.
  CHECK(r.bootstraps == 1024 + config.total_gates + 200);
  const NoiseModel model = noise_model(toy_insecure());
  const double v_out = model.blind_rotation + model.key_switching;
  CHECK(r.bootstrapped_inputs.variance() > 0.7 * v_out);
  CHECK(r.bootstrapped_inputs.variance() < 1.4 * v_out);
  for (std::size_t k = 0; k < r.gates.size(); ++k) {
    const GateMeasurement& g = r.gates[k];
    INFO("gate " << g.gate.label);
    CHECK(g.gates == (k < 5 ? 201u : 200u));
    CHECK(g.decisions == g.gates * g.gate.spec.bootstraps());
    CHECK(g.output.count() == g.gates);
    CHECK(g.decision.count() == g.decisions);
    const GateFigures f = gate_figures(g, model, r.bootstrapped_inputs, r.key_weight, 256);
    // 200 samples: the variance estimate is within about 10% (a standard deviation) of the
    // truth, so the factor of 2 fails only if the model or the measurement is wrong.
    CHECK(f.output_ratio > 0.5);
    CHECK(f.output_ratio < 2.0);
    CHECK(f.combination_ratio > 0.5);
    CHECK(f.combination_ratio < 2.0);
    CHECK(f.decision_ratio > 0.5);
    CHECK(f.decision_ratio < 2.0);
    CHECK(f.decision_from_inputs_ratio > 0.6);
    CHECK(f.decision_from_inputs_ratio < 1.6);
    CHECK(std::fabs(g.decision.mean()) < 0.5 * std::sqrt(f.model_decision));
    // Toy parameters are ~20 standard deviations from a wrong decision, even the stress gates.
    CHECK(g.decision_failures == 0);
    CHECK(g.output_failures == 0);
    CHECK(g.unexplained == 0);
    CHECK(f.log2_p_model < -100);
  }
  // Against the model of this key (its weights, less the key-switching mean its outputs
  // share): each kind within two 95% half-widths (about 4 standard errors) of 1, and the 21
  // kinds' mean ratio within 0.07 (3 standard errors of it).
  const KeyWeights& w = r.key_weights;
  CHECK(w.lwe == r.key_weight);
  CHECK(w.glwe == r.glwe_key_weight);
  CHECK(w.cmux_ones == r.key_weight);  // a standard key: every bit a CMUX step
  const NoiseModel key_model = noise_model_for_key(toy_insecure(), 1, w);
  double sum = 0;
  for (const GateMeasurement& g : r.gates) {
    INFO("gate " << g.gate.label);
    const KeyFit fit = key_fit(g, key_model);
    CHECK(fit.model == Approx(key_model.gate_output(g.gate.spec) - key_model.key_switching_bias));
    CHECK(fit.half_width_95 > 0.1);  // 200 samples: 1.96 sqrt(2 / 199) = 0.20
    CHECK(fit.half_width_95 < 0.3);
    CHECK(std::fabs(fit.ratio - 1) < 2 * fit.half_width_95);
    sum += fit.ratio;
  }
  CHECK(std::fabs(sum / static_cast<double>(r.gates.size()) - 1) < 0.07);
}

TEST_CASE("noise_study: counted failures follow the Gaussian tail when the modulus switch is "
          "noisy", "[noise_study]") {
  // N = 32 and n = 256: the modulus switch to Z_64 alone gives the decided phase a standard
  // deviation of about 0.05, so a gate at margin 1/8 fails about once in 100 decisions.
  const Parameters noisy{"noisy_switch_INSECURE", 256, 1, 32, 10, 2, 3, 5,
                         std::ldexp(1.0, -20), std::ldexp(1.0, -30), true};
  const auto& keys = test::keys_for(noisy);
  OpenMpBackend be(keys.cloud);
  const std::uint64_t seed = test::catch_seed(0xfa11);
  INFO("seed " << seed);
  Csprng rng = test::seeded_rng(seed);
  StudyConfig config;
  config.gates = {{"NAND", GateSpec::of(GateKind::Nand), false},
                  {"T(0;1,1,-1)", GateSpec::threshold(0, {1, 1, -1}), false},
                  {"XOR", GateSpec::of(GateKind::Xor), false}};
  config.total_gates = 3 * 3000;
  config.round_size = 3000;
  const StudyResult r = run_noise_study(be, keys.secret, rng, config);
  NoiseModel model = noise_model(noisy);
  // The model averages over keys (Hamming weight n/2); this key's modulus switch has variance
  // (1 + |s|) / (12 (2N)^2), and here that term is nearly all of the decision variance.
  const auto s = keys.secret.lwe_key().coefficients();
  const double weight = static_cast<double>(std::count(s.begin(), s.end(), 1));
  INFO("key weight " << weight << " of " << s.size());
  model.modulus_switching = (1 + weight) / (12.0 * 64 * 64);
  for (const GateMeasurement& g : r.gates) {
    INFO("gate " << g.gate.label << ": " << g.decision_failures << " failures");
    const GateFigures f = gate_figures(g, model, r.bootstrapped_inputs, r.key_weight, 32);
    CHECK(f.decision_ratio > 0.85);
    CHECK(f.decision_from_inputs_ratio == Approx(f.decision_ratio).epsilon(0.01));
    CHECK(f.decision_ratio < 1.15);
    CHECK(g.unexplained == 0);
    // Bootstrapping noise is tiny here: an output is wrong exactly when its decision was.
    CHECK(g.output_failures == g.decision_failures);
    const double expected = std::exp2(f.expected_measured);
    INFO("expected " << expected);
    // Poisson spread plus 20% for the coarse Z_64 grid (half a step moves each margin).
    CHECK(std::fabs(static_cast<double>(g.decision_failures) - expected) <
          4 * std::sqrt(expected) + 0.2 * expected + 3);
    if (g.gate.spec.kind == GateKind::Xor) {
      CHECK(expected < 1);  // margin 1/4: about 5 standard deviations
    } else {
      CHECK(expected > 10);
      CHECK(g.decision_failures > 0);
    }
  }
}

TEST_CASE("noise_study: run_noise_study refuses what it cannot measure", "[noise_study]") {
  const auto& keys = test::keys_for(toy_insecure());
  SequentialBackend be(keys.cloud);
  Csprng rng = test::seeded_rng(1);
  StudyConfig config;
  config.total_gates = 0;
  REQUIRE_INVALID_ARGUMENT(run_noise_study(be, keys.secret, rng, config), "total_gates=0");
  config.total_gates = 10;
  config.round_size = 0;
  REQUIRE_INVALID_ARGUMENT(run_noise_study(be, keys.secret, rng, config), "round_size=0");
  config.round_size = 16;
  config.gates = {};
  REQUIRE_INVALID_ARGUMENT(run_noise_study(be, keys.secret, rng, config), "gate list is empty");
  config.gates = {{"NOT", GateSpec::of(GateKind::Not), false}};
  REQUIRE_INVALID_ARGUMENT(run_noise_study(be, keys.secret, rng, config), "has no bootstrap");
  const auto& other = test::keys_for(toy_k2_insecure());
  config.gates = default_study_gates();
  REQUIRE_INVALID_ARGUMENT(run_noise_study(be, other.secret, rng, config),
                           "the secret key is for parameters 'toy_k2_INSECURE'");
}

TEST_CASE("noise_study: sample statistics", "[noise_study]") {
  SampleStats s;
  for (double v : {4.0, 1.0, 3.0, 5.0, 2.0}) s.add(v);
  CHECK(s.mean() == 3.0);
  CHECK(s.variance() == 2.5);
  CHECK(s.min() == 1.0);
  CHECK(s.max() == 5.0);
  CHECK(s.quantile(0.5) == 3.0);
  CHECK(s.quantile(0.25) == 2.0);
  CHECK(s.quantile(0.125) == 1.5);
  CHECK(s.quantile(1.0) == 5.0);
  // Bins of width 2 over [-4, 4): {below, [-4,-2), [-2,0), [0,2), [2,4), above}.
  CHECK(s.histogram(2.0, 4.0) == std::vector<std::uint64_t>{0, 0, 0, 1, 2, 2});
  SampleStats two_point;  // +-1: m4 / m2^2 = 1, excess kurtosis -2
  for (int i = 0; i < 50; ++i) {
    two_point.add(1.0);
    two_point.add(-1.0);
  }
  CHECK(two_point.excess_kurtosis() == Approx(-2.0));
  // Undefined, not 0, below 2 (variance) and 4 (kurtosis) values or without spread.
  SampleStats one;
  one.add(0.25);
  CHECK(std::isnan(one.variance()));
  CHECK(std::isnan(one.excess_kurtosis()));
  SampleStats flat;
  for (int i = 0; i < 4; ++i) flat.add(0.5);
  CHECK(flat.variance() == 0.0);
  CHECK(std::isnan(flat.excess_kurtosis()));
  REQUIRE_INVALID_ARGUMENT(SampleStats{}.quantile(0.5), "the sample is empty");
  REQUIRE_INVALID_ARGUMENT(s.quantile(1.5), "q=1.5");
  REQUIRE_INVALID_ARGUMENT(s.histogram(0.3, 1.0), "not a multiple");
  CHECK(gate_label(GateSpec::threshold(-1, {2, 2, 2})) == "T(-1;2,2,2)");
  CHECK(gate_label(GateSpec::of(GateKind::Xor3)) == "XOR3");
}

TEST_CASE("noise_study: options, and every bad one refused with its reason", "[noise_study]") {
  const NoiseStudyOptions d = parse({});
  CHECK(d.params == std::vector<std::string>{"tfhe_lib_128", "tfhe_lib_80", "default_128"});
  CHECK(d.kinds.size() == 21);
  // best: the GPU where this build has CUDA and a device, else OpenMP; 10^6 gates on the GPU.
  if (d.backend == "gpu") {
    CHECK(d.gates == 1000000);
    CHECK(d.round_size == 65536);
  } else {
    CHECK(d.backend == "openmp");
    CHECK(d.gates == 100000);
    CHECK(d.round_size == 2048);
  }
  const NoiseStudyOptions o = parse({"--params", "toy", "--gates", "420", "--kinds",
                                     "nand,Xor,stress", "--threshold", "1:2:2", "--seed", "7",
                                     "--backend", "sequential", "--round", "64"});
  CHECK(o.params == std::vector<std::string>{"toy_INSECURE", "toy_k2_INSECURE"});
  CHECK(o.gates == 420);
  REQUIRE(o.kinds.size() == 5);
  CHECK(o.kinds[0].label == "NAND");
  CHECK(o.kinds[1].label == "XOR");
  CHECK(o.kinds[2].stress);
  CHECK(o.kinds[4].label == "T(1;2,2)");
  CHECK(o.seed == 7u);
  CHECK(o.round_size == 64);
  CHECK(o.unroll == 1);
  CHECK(parse({"--unroll", "2"}).unroll == 2);
  CHECK(parse({"--unroll", "3"}).unroll == 3);
  CHECK(parse({"--unroll", "4"}).unroll == 4);
  REQUIRE_INVALID_ARGUMENT(parse({"--unroll", "5"}), "--unroll: 5 is out of range");
  CHECK(parse({"--help"}).help);
  CHECK(select_study_gates("fixed").size() == 14);
  CHECK(select_study_gates("threshold").size() == 5);
  CHECK(select_parameter_sets("all").size() == 5);

  REQUIRE_INVALID_ARGUMENT(parse({"--params", "tfhe_lib_64"}), "unknown parameter set 'tfhe_lib_64'");
  REQUIRE_INVALID_ARGUMENT(parse({"--params", "real,tfhe_lib_80"}), "tfhe_lib_80 is listed twice");
  // A name that contains "twice" is an unknown set like any other (it used to lose the hint).
  REQUIRE_INVALID_ARGUMENT(parse({"--params", "twice"}),
                           "--params: unknown parameter set 'twice'; expected real, toy, all");
  // Every sample is kept until the reports: refused before the run when it cannot fit.
  const std::uint64_t gib = std::uint64_t{1} << 30;
  const NoiseStudyOptions huge = parse({"--gates", "1000000000"});  // 3 sets: 134 GiB
  REQUIRE_INVALID_ARGUMENT(check_sample_memory(huge, 24 * gib),
                           "--gates: 1000000000 gates for each of 3 parameter set(s) keep about "
                           "134 GiB of samples in memory (48 bytes a gate, until the reports are "
                           "written), more than this machine's 24 GiB; measure fewer gates");
  check_sample_memory(huge, 256 * gib);
  check_sample_memory(parse({"--gates", "100000"}), 24 * gib);
  REQUIRE_INVALID_ARGUMENT(parse({"--gates", "0"}), "--gates: 0 is out of range");
  REQUIRE_INVALID_ARGUMENT(parse({"--gates", "1e5"}), "--gates: '1e5' is not a number");
  REQUIRE_INVALID_ARGUMENT(parse({"--gates", "20"}), "fewer than the 21 gate kinds");
  REQUIRE_INVALID_ARGUMENT(parse({"--round", "8"}), "--round: 8 is out of range");
  REQUIRE_INVALID_ARGUMENT(parse({"--kinds", "NAND,FOO"}), "unknown gate kind 'FOO'");
  REQUIRE_INVALID_ARGUMENT(parse({"--kinds", "fixed,XOR"}), "XOR is listed twice");
  REQUIRE_INVALID_ARGUMENT(parse({"--kinds", ""}), "unknown gate kind ''");
  REQUIRE_INVALID_ARGUMENT(parse({"--threshold", "1:1"}), "decision boundary");
  REQUIRE_INVALID_ARGUMENT(parse({"--threshold", "0:a"}), "'a' is not an integer");
  REQUIRE_INVALID_ARGUMENT(parse({"--threshold", "99999999999:1"}),
                           "99999999999 is out of range; expected an integer in -8..8");
  REQUIRE_INVALID_ARGUMENT(parse({"--threshold", "0:-99999999999"}), "-99999999999 is out of range");
  REQUIRE_INVALID_ARGUMENT(parse({"--threshold", "0"}), "expected OFFSET and 1 to 3 weights");
  REQUIRE_INVALID_ARGUMENT(parse({"--threshold", "0:1:1:1:1"}), "expected OFFSET and 1 to 3");
  REQUIRE_INVALID_ARGUMENT(parse({"--threshold", "0:9"}), "expected a non-zero value in -8..8");
  REQUIRE_INVALID_ARGUMENT(parse({"--threshold", "0:1"}), "T(0;1) is already in the list");
  REQUIRE_INVALID_ARGUMENT(parse({"--backend", "cuda"}), "unknown backend 'cuda'");
  REQUIRE_INVALID_ARGUMENT(parse({"--backend", "sequential", "--threads", "2"}),
                           "--threads applies to the openmp backend");
  REQUIRE_INVALID_ARGUMENT(parse({"--seed", "-1"}), "--seed: '-1' is not a number");
  REQUIRE_INVALID_ARGUMENT(parse({"--backend", "openmp", "--device", "0"}),
                           "--device is a GPU option: it applies to --backend gpu, not to openmp");
  REQUIRE_INVALID_ARGUMENT(parse({"--json"}), "--json needs a value");
  // Given but empty: kept as given, for OutputFile to refuse before the run.
  CHECK(parse({"--json", ""}).json_path == std::optional<std::string>(""));
  CHECK_FALSE(parse({}).markdown_path.has_value());
  REQUIRE_INVALID_ARGUMENT(parse({"--json", "report.md", "--markdown", "./report.md"}),
                           "--json 'report.md' and --markdown './report.md' name the same file");
  CHECK(parse({"--json", "r.json", "--markdown", "r.md"}).markdown_path ==
        std::optional<std::string>("r.md"));
  REQUIRE_INVALID_ARGUMENT(parse({"--frobnicate"}), "unknown argument '--frobnicate'");
}
