// fpga_fft study: for each number of fractional bits F and rounding mode, the error of the
// fixed-point negacyclic product against the exact schoolbook product (sums of (k+1)l products
// of gadget digits by torus polynomials, as one column of an external product), and gate
// bootstrapping with the fixed-point engine: wrong decryptions over a fixed number of gates and
// the output phase error, next to the double-precision engine on the same inputs.
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <memory>
#include <optional>
#include <sstream>

#include "app_support.hpp"
#include "commands.hpp"
#include "printable.hpp"
#include "torusgate/core/error.hpp"
#include "torusgate/core/keys.hpp"
#include "torusgate/core/noise.hpp"
#include "torusgate/cpu/cpu_backend.hpp"
#include "torusgate/fpga_fft/negacyclic.hpp"
#include "torusgate/fpga_fft/precision.hpp"

namespace torusgate::fpga_fft_app {

using namespace torusgate::fpga_fft;

namespace {

struct GateStats {
  std::size_t gates = 0;
  std::size_t wrong = 0;
  double rms = 0, max = 0;  // output phase error around +-1/8 (torus fraction)
  double seconds = 0;
};

struct GateInputs {
  std::vector<std::uint8_t> a, b;
  LweBatch ca, cb;
};

GateStats run_gates(std::shared_ptr<const CpuKeyContext> ctx, const SecretKey& secret,
                    const GateInputs& in, int threads) {
  CpuOptions options;
  options.threads = threads;
  OpenMpBackend be(std::move(ctx), options);
  const auto start = std::chrono::steady_clock::now();
  auto A = be.upload(in.ca);
  auto B = be.upload(in.cb);
  auto out = be.allocate(in.a.size());
  be.evaluate({gate::nand(A.bits(), B.bits(), out.bits())});
  const LweBatch result = be.download(out.bits());
  GateStats s;
  s.gates = in.a.size();
  s.seconds = apps::seconds_since(start);
  double sum = 0;
  for (std::size_t i = 0; i < in.a.size(); ++i) {
    const bool want = !(in.a[i] && in.b[i]);
    const Torus32 phase = lwe_phase(result.sample(i), secret.lwe_key());
    const double e = torus_to_double(phase - torus_from_fraction(want ? 1 : -1, 8));
    sum += e * e;
    s.max = std::max(s.max, std::fabs(e));
    if (decode_bit(phase) != want) ++s.wrong;
  }
  s.rms = in.a.empty() ? 0 : std::sqrt(sum / static_cast<double>(in.a.size()));
  return s;
}

// log2 of the probability that a NAND whose two inputs are outputs with this mean-square
// error decides wrongly (Gaussian, averaged over its inputs): decision variance 2 rms^2 plus
// the modulus switch's V_MS (core/noise.hpp).
double log2_next_gate_failure(double rms, const NoiseModel& model) {
  if (!(rms > 0)) return -INFINITY;
  return log2_decision_failure_probability(GateSpec::of(GateKind::Nand),
                                           2 * rms * rms + model.modulus_switching,
                                           model.half_step);
}

// The fewest gates for which a row states the range of its log2 P.
constexpr std::size_t fewest_gates_for_range = 10;

// The p-quantile of the chi-square distribution with n degrees of freedom, by Wilson and
// Hilferty's cube-root normal approximation (within 1% of the exact quantile from n = 10 at
// the 2.5% and 97.5% points); z is the standard normal p-quantile.
double chi_square_quantile(double z, double n) {
  const double c = 2 / (9 * n);
  return n * std::pow(1 - c + z * std::sqrt(c), 3);
}

// log2 P(next gate fails) for the ends of the 95% range of the output noise's variance: the
// mean square of n errors around a known mean, whose n * ms / variance is chi-square with n
// degrees of freedom, so the variance lies in [n ms / q(97.5%), n ms / q(2.5%)] with 95%
// confidence. An extrapolation from n gates to a probability far below 1/n rests on the
// variance alone (Gaussian noise: a sum of many independent rounding and key terms).
// None below fewest_gates_for_range gates or without noise.
std::optional<std::pair<double, double>> log2_next_gate_failure_range(const GateStats& g,
                                                                        const NoiseModel& model) {
  if (g.gates < fewest_gates_for_range || !(g.rms > 0)) return std::nullopt;
  const double n = static_cast<double>(g.gates), z = 1.959963984540054;  // the 97.5% point
  const double ms = g.rms * g.rms;
  return std::pair{
      log2_next_gate_failure(std::sqrt(n * ms / chi_square_quantile(z, n)), model),
      log2_next_gate_failure(std::sqrt(n * ms / chi_square_quantile(-z, n)), model)};
}

// "-175 (-207..-130)": the estimate and its 95% range, or "-" without gates; the range from
// fewest_gates_for_range gates.
std::string failure_text(const GateStats& g, const NoiseModel& model) {
  if (g.gates == 0) return "-";
  std::ostringstream s;
  s << std::fixed << std::setprecision(1) << log2_next_gate_failure(g.rms, model);
  if (const auto range = log2_next_gate_failure_range(g, model)) {
    s << std::setprecision(0) << " (" << range->first << ".." << range->second << ")";
  }
  return s.str();
}

struct Row {
  std::uint32_t F = 0;
  Rounding rounding = Rounding::Nearest;
  ProductError product;
  GateStats gates;
  std::uint64_t overflows = 0;
  std::string engine;
};

std::string fmt(double v, int precision = 3) {
  std::ostringstream s;
  s << std::setprecision(precision) << v;
  return s.str();
}

}  // namespace

int run_study(const StudyOptions& o, std::ostream& out) {
  const Parameters params = apps::parameters_named("--params", o.params);
  // Both paths checked before the study (which takes long with tfhe_lib_128), each file
  // written whole at the end; a path given empty is refused (OutputFile), as is one file for
  // both reports.
  apps::OutputFile json_file, markdown_file;
  if (o.json) json_file = apps::OutputFile("--json", *o.json);
  if (o.markdown) markdown_file = apps::OutputFile("--markdown", *o.markdown);
  EXPECTS(!(o.json && o.markdown && apps::same_report_file(*o.json, *o.markdown)),
          "--json '" + o.json.value_or("") + "' and --markdown '" + o.markdown.value_or("") +
              "' name the same file; one report would replace the other");
  std::vector<std::uint32_t> frac_bits = o.frac_bits;
  if (frac_bits.empty()) {
    for (std::uint32_t F = 14; F <= 34; ++F) frac_bits.push_back(F);
  }
  EXPECTS(!o.roundings.empty(), "--rounding: at least one mode is required");
  EXPECTS(o.products >= 1 && o.products <= 100000,
          "--products=" + std::to_string(o.products) + " but expected 1..100000");
  // --gates 0: products only (documented); the gates' threads checked here, not by the backend
  // after the keys and the baseline.
  EXPECTS(o.gates <= 1000000, "--gates=" + std::to_string(o.gates) + " but expected 0..1000000");
  EXPECTS(o.threads >= 0 && o.threads <= 4096, "--threads=" + std::to_string(o.threads) +
                                                   " but expected 0..4096 (0: the OpenMP default)");
  // Every configuration is checked before the keys are made.
  auto config_for = [&](std::uint32_t F, Rounding mode) {
    NegacyclicConfig c;
    c.fft.radix = o.radix;
    c.fft.word_bits = o.word_bits;
    c.fft.frac_bits = F;
    c.fft.twiddle_bits = o.twiddle_bits;
    c.fft.rounding = mode;
    c.fft.merged_twist = o.merged_twist;
    c.key_in_double = o.key_in_double;
    c.full_length = o.full_length;
    return c;
  };
  for (const auto F : frac_bits) {
    for (const auto mode : o.roundings) FixedPointNegacyclicFft(params.polynomial_size, config_for(F, mode));
  }

  const NoiseModel model = noise_model(params);
  Csprng rng = o.seed ? Csprng::deterministic(*o.seed, testing::insecure_deterministic) : Csprng();
  out << "fpga_fft study: " << params.name << " (N=" << params.polynomial_size
      << "), radix " << o.radix << ", W=" << o.word_bits
      << (o.merged_twist ? ", merged twist" : ", separate twist")
      << (o.full_length ? ", full length (M = N)" : ", half length (M = N/2)")
      << (o.key_in_double ? ", key spectrum in double" : "") << "; " << o.products
      << " external-product columns and " << o.gates << " NAND gates per configuration\n";
  const auto keys_start = std::chrono::steady_clock::now();
  const SecretKey secret(params, rng);
  auto cloud = std::make_shared<const CloudKey>(CloudKey::generate(secret, rng));
  GateInputs inputs;
  for (std::uint32_t i = 0; i < o.gates; ++i) {
    inputs.a.push_back(static_cast<std::uint8_t>(rng.uniform_bit()));
    inputs.b.push_back(static_cast<std::uint8_t>(rng.uniform_bit()));
  }
  inputs.ca = encrypt_bits(secret, inputs.a, rng);
  inputs.cb = encrypt_bits(secret, inputs.b, rng);
  out << "  keys and " << 2 * o.gates << " encryptions: " << fmt(apps::seconds_since(keys_start), 2)
      << " s\n";

  // Every configuration's product error is measured on the same columns, as its gates are on
  // the same encryptions: each draws them from a generator of one seed (public study inputs,
  // apart from the keys' and the gates' stream; with --seed, derived from it), so a row's
  // figures do not depend on which rows run before it or on --gates, and rows compare pairwise.
  const std::uint64_t columns_seed = o.seed ? *o.seed + 0x9E3779B97F4A7C15u : rng.uniform_u64();
  auto product_error = [&](const NegacyclicFft& engine) {
    Csprng columns = Csprng::deterministic(columns_seed, testing::insecure_deterministic);
    return external_product_error(engine, params, o.products, columns);
  };

  // The double-precision engine on the same inputs: the reference noise.
  GateStats baseline;
  ProductError baseline_product;
  std::string baseline_engine;
  {
    auto ctx = std::make_shared<const CpuKeyContext>(cloud, FftEngineKind::Auto);
    baseline_engine = ctx->fft().name();
    baseline_product = product_error(ctx->fft());
    if (o.gates > 0) baseline = run_gates(ctx, secret, inputs, o.threads);
    out << "  double engine (" << baseline_engine << "): product error rms "
        << fmt(baseline_product.rms_lsb) << " LSB, max " << fmt(baseline_product.max_lsb)
        << "; gates: " << baseline.wrong << " wrong, output error rms " << fmt(baseline.rms)
        << " max " << fmt(baseline.max) << "\n\n";
  }
  out << "   F  rounding  product rms (LSB)  product max (LSB)  wrong/gates  out rms    out max   "
         "log2 P(next fails), 95% range  overflows  seconds\n";
  std::vector<Row> rows;
  for (const auto F : frac_bits) {
    for (const auto mode : o.roundings) {
      Row row;
      row.F = F;
      row.rounding = mode;
      auto engine = std::make_shared<const FixedPointNegacyclicFft>(params.polynomial_size, config_for(F, mode));
      row.engine = engine->name();
      row.product = product_error(*engine);
      if (o.gates > 0) {
        auto ctx = std::make_shared<const CpuKeyContext>(cloud, engine);
        row.gates = run_gates(ctx, secret, inputs, o.threads);
      }
      row.overflows = engine->overflows().total();
      out << std::setw(4) << F << "  " << std::left << std::setw(9) << to_string(mode) << std::right
          << std::setw(18) << fmt(row.product.rms_lsb) << std::setw(19) << fmt(row.product.max_lsb)
          << std::setw(8) << row.gates.wrong << "/" << std::left << std::setw(5) << o.gates
          << std::right << std::setw(9) << fmt(row.gates.rms) << std::setw(11) << fmt(row.gates.max)
          << std::setw(30) << failure_text(row.gates, model)
          << std::setw(11) << row.overflows << std::setw(9) << fmt(row.gates.seconds, 3) << "\n"
          << std::flush;
      rows.push_back(row);
    }
  }

  if (markdown_file.wanted()) {
    std::ostringstream md;
    md << "# Precision study of the fixed-point negacyclic FFT datapath\n\n"
       << "Made by `build/apps/fpga_fft/fpga_fft study` on " << apps::utc_timestamp()
       << ", commit " << apps::build_commit() << ", " << apps::machine_description() << ".\n\n"
       << "Parameters `" << params.name << "` (N = " << params.polynomial_size << ", Bg = 2^"
       << params.bk_base_log << ", l = " << params.bk_level_count << ", k = "
       << params.glwe_dimension << "); datapath: radix " << o.radix << ", W = " << o.word_bits
       << " bits, twiddles of " << (o.twiddle_bits == 0 ? std::string("F + 2") : std::to_string(o.twiddle_bits))
       << " bits, " << (o.merged_twist ? "merged" : "separate") << " twist, "
       << (o.full_length ? "full length (M = N, no folding)" : "half length (M = N/2)")
       << ", key spectrum "
       << (o.key_in_double ? "computed in double and rounded to F bits" : "through the fixed-point FFT")
       << ".\n\n"
       << "- Product error: " << o.products << " sums of (k+1)l = " << params.ggsw_row_count()
       << " products of random digits by uniform torus polynomials (one column of an external "
       << "product) against the exact schoolbook sum, in LSB of Torus32 (2^-32).\n"
       << "- Gates: " << o.gates << " NAND gates on fresh encryptions of random bits, the whole "
       << "bootstrapping (blind rotation with this engine, key switching) on the OpenMP backend; "
       << "wrong decryptions, and the output phase error around +-1/8 measured with the secret key "
       << "(torus fraction; the margin is 1/8). `log2 P(next gate fails)`: the probability that a NAND "
       << "fed by two such outputs decides wrongly, for Gaussian noise of that mean square "
       << "(decision variance 2 rms^2 + V_MS, core/noise.hpp); the double engine's outputs give "
       << failure_text(baseline, model) << ". In parentheses, from " << fewest_gates_for_range
       << " gates, the range that the 95% confidence interval of the output variance gives (its "
       << "estimate from " << o.gates << " gates; chi-square, Wilson-Hilferty): probabilities "
       << "far below 1/gates are extrapolations from the variance, and wide.\n"
       << "- Reference: the double-precision engine (" << baseline_engine
       << ") on the same inputs: product "
       << "error rms " << fmt(baseline_product.rms_lsb) << " LSB (max " << fmt(baseline_product.max_lsb)
       << "), gates " << baseline.wrong << "/" << o.gates << " wrong, output error rms "
       << fmt(baseline.rms) << ".\n\n"
       << "| F | rounding | product rms (LSB) | product max (LSB) | wrong / gates | output rms | "
          "output max | log2 P(next gate fails), 95% range | overflows |\n"
       << "|---:|---|---:|---:|---:|---:|---:|---:|---:|\n";
    for (const Row& r : rows) {
      md << "| " << r.F << " | " << to_string(r.rounding) << " | " << fmt(r.product.rms_lsb) << " | "
         << fmt(r.product.max_lsb) << " | " << r.gates.wrong << " / " << o.gates << " | "
         << fmt(r.gates.rms) << " | " << fmt(r.gates.max) << " | "
         << failure_text(r.gates, model) << " | " << r.overflows << " |\n";
    }
    markdown_file.stream() << md.str();
    markdown_file.commit();
    out << "markdown written to " << apps::terminal_text(*o.markdown) << "\n";
  }
  if (json_file.wanted()) {
    // [low, high] of the 95% range, or null (fewer than fewest_gates_for_range gates).
    auto failure_range_json = [&](const GateStats& g) -> std::string {
      const auto range = log2_next_gate_failure_range(g, model);
      if (!range) return "null";
      std::ostringstream text;  // not "[" + string: GCC 12 warns (-Wrestrict, wrongly)
      text << '[' << apps::json_number(range->first) << ", " << apps::json_number(range->second)
           << ']';
      return text.str();
    };
    std::ostringstream j;
    j << apps::json_report_opening("program", "fpga_fft study", "openmp", o.threads)
      << "  \"parameters\": " << apps::parameters_json(params, "    ") << ",\n"
      << "  \"radix\": " << o.radix << ",\n  \"word_bits\": " << o.word_bits << ",\n"
      << "  \"twiddle_bits\": " << o.twiddle_bits << ",\n"
      << "  \"merged_twist\": " << (o.merged_twist ? "true" : "false") << ",\n"
      << "  \"key_in_double\": " << (o.key_in_double ? "true" : "false") << ",\n"
      << "  \"full_length\": " << (o.full_length ? "true" : "false") << ",\n"
      << "  \"products\": " << o.products << ",\n  \"gates\": " << o.gates << ",\n"
      << "  \"seeded\": " << (o.seed ? "true" : "false") << ",\n"
      << "  \"baseline\": {\"engine\": " << apps::json_string(baseline_engine)
      << ", \"product_rms_lsb\": " << apps::json_number(baseline_product.rms_lsb)
      << ", \"product_max_lsb\": " << apps::json_number(baseline_product.max_lsb)
      << ", \"wrong\": " << baseline.wrong << ", \"output_rms\": " << apps::json_number(baseline.rms)
      << ", \"output_max\": " << apps::json_number(baseline.max) << "},\n  \"rows\": [\n";
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      j << "    {\"frac_bits\": " << r.F << ", \"rounding\": " << apps::json_string(to_string(r.rounding))
        << ", \"engine\": " << apps::json_string(r.engine)
        << ", \"product_rms_lsb\": " << apps::json_number(r.product.rms_lsb)
        << ", \"product_max_lsb\": " << apps::json_number(r.product.max_lsb)
        << ", \"wrong\": " << r.gates.wrong << ", \"output_rms\": " << apps::json_number(r.gates.rms)
        << ", \"output_max\": " << apps::json_number(r.gates.max)
        << ", \"log2_next_gate_failure\": " << apps::json_number(o.gates > 0 ? log2_next_gate_failure(r.gates.rms, model) : NAN)
        << ", \"log2_next_gate_failure_95\": " << failure_range_json(r.gates)
        << ", \"overflows\": " << r.overflows << ", \"seconds\": " << apps::json_number(r.gates.seconds)
        << "}" << (i + 1 < rows.size() ? "," : "") << "\n";
    }
    j << "  ]\n}\n";
    json_file.stream() << j.str();
    json_file.commit();
    out << "JSON written to " << apps::terminal_text(*o.json) << "\n";
  }
  return exit_ok;
}

}  // namespace torusgate::fpga_fft_app
