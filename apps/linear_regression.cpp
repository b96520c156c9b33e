// Encrypted linear regression, end to end (the README's main job).
//
// The client quantizes a dataset (a CSV file or a synthetic one of the published shapes) to
// fixed point, makes keys and encrypts X and y. The server, holding only the cloud key,
// computes the training aggregates A^T A and A^T y of A = [1 | X] exactly. The client
// decrypts them, checks them against the plaintext integer computation, solves the normal
// equations for beta and compares it with a plaintext least-squares fit (Householder QR) of
// the same quantized data. Then the server computes the predictions A beta for the model
// (beta encrypted or in plain text) and the client checks them exactly too.
//   linear_regression [--csv FILE --target NAME | --dataset ROWSxATTRS] [options]; --help
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "app_support.hpp"
#include "printable.hpp"
#include "progress.hpp"
#include "regression_data.hpp"
#include "torusgate/circuits/circuits.hpp"
#include "torusgate/core/keys.hpp"
#include "torusgate/core/plaintext_backend.hpp"
#include "torusgate/cpu/cpu_backend.hpp"

using namespace torusgate;
using namespace torusgate::circuits;
using apps::FeatureKind;

namespace {

void usage() {
  std::cout <<
      "usage: linear_regression [data] [encoding] [model] [run]\n"
      "data (default: a synthetic 12x2 numeric dataset, about a minute on 2 cores):\n"
      "  --csv FILE            a CSV file: a header row of column names, then numbers\n"
      "  --target NAME         the CSV column to predict (required with --csv)\n"
      "  --dataset ROWSxATTRS  a synthetic dataset, e.g. 200x10; the published shapes are\n"
      "                        200x10, 200x20, 300x10 and 300x20\n"
      "  --seed S              seed of the synthetic data (default 1)\n"
      "encoding:\n"
      "  --kind numeric|binary numeric: signed fixed point; binary: 0/1 features (default\n"
      "                        numeric)\n"
      "  --width BITS          fixed-point width of numeric values, 2..32 (default 8)\n"
      "  --frac-bits F|auto    fraction bits (default auto: the most that fit, for X and y\n"
      "                        separately)\n"
      "  --standardize         scale every column to [-1, 1) (centered, unless\n"
      "                        --no-intercept) before quantizing, for columns of different\n"
      "                        magnitudes; the model is reported in the original units\n"
      "  --no-intercept        fit y ~ X beta without the intercept beta_0\n"
      "model used for the encrypted predictions:\n"
      "  --beta encrypted|plain|none   the fitted model, encrypted or as plaintext constants\n"
      "                        (default encrypted); none: no prediction step\n"
      "  --beta-width BITS     width of the quantized coefficients, 2..32 (default 8)\n"
      "run:\n"
      "  --backend NAME        best (default: gpu when a CUDA device is usable, else\n"
      "                        openmp), gpu, openmp, sequential, or plaintext (no\n"
      "                        encryption: exact gate counts in seconds)\n"
      "  --params NAME         tfhe_lib_128 (default), tfhe_lib_80, default_128,\n"
      "                        toy_INSECURE, toy_k2_INSECURE (tests only)\n"
      "  --threads T           OpenMP threads (default: all cores)\n"
      "  --json FILE           write the whole report as JSON\n"
      "  --no-progress         no progress bar on stderr\n"
      "gpu backend (docs/gpu.md):\n"
     << apps::gpu_options_help(24);
}

struct Options {
  std::optional<std::string> csv, target;
  apps::DatasetShape shape{12, 2};
  bool shape_given = false;
  std::uint64_t seed = 1;
  bool seed_given = false;
  FeatureKind kind = FeatureKind::Numeric;
  std::size_t width = 8;
  std::optional<int> frac_bits;
  bool intercept = true, standardize = false;
  std::string beta = "encrypted";
  std::size_t beta_width = 8;
  bool beta_width_given = false;
  std::string backend = "best", params = "tfhe_lib_128";
  apps::ServerOptions server;  // --threads; --device, --gpu-engine, ... (the gpu backend)
  std::optional<std::string> json;
  bool progress = true;
};

Options parse_options(int argc, char** argv, bool& help) {
  Options o;
  for (apps::CommandLine cl(argc, argv); cl.next();) {
    const std::string& arg = cl.arg();
    if (arg == "--csv") {
      o.csv = cl.value();
      if (o.csv->empty()) throw InvalidArgument("--csv: the path is empty");
    }
    else if (arg == "--target") o.target = cl.value();
    else if (arg == "--dataset") {
      o.shape = apps::parse_shape(cl.value());
      o.shape_given = true;
    } else if (arg == "--seed") {
      o.seed = apps::parse_count(arg, cl.value(), 0, UINT64_MAX);
      o.seed_given = true;
    }
    else if (arg == "--kind") o.kind = apps::parse_feature_kind(cl.value());
    else if (arg == "--width") o.width = apps::parse_count(arg, cl.value(), 2, 32);
    else if (arg == "--frac-bits") {
      const std::string v = cl.value();
      if (v == "auto") o.frac_bits.reset();
      else o.frac_bits = static_cast<int>(apps::parse_count(arg, v, 0, 31));
    } else if (arg == "--no-intercept") o.intercept = false;
    else if (arg == "--standardize") o.standardize = true;
    else if (arg == "--beta") {
      o.beta = cl.value();
      if (o.beta != "encrypted" && o.beta != "plain" && o.beta != "none")
        throw InvalidArgument("--beta: '" + o.beta + "' is not encrypted, plain or none");
    } else if (arg == "--beta-width") {
      o.beta_width = apps::parse_count(arg, cl.value(), 2, 32);
      o.beta_width_given = true;
    }
    else if (arg == "--params") o.params = cl.value();
    else if (apps::parse_server_option(cl, o.backend, o.server)) continue;
    else if (arg == "--json") o.json = cl.value();
    else if (arg == "--no-progress") o.progress = false;
    else if (cl.is_help()) {
      help = true;
      return o;
    } else cl.reject();
  }
  if (o.csv && !o.target)
    throw InvalidArgument("--csv needs --target NAME: the column to predict");
  if (o.target && !o.csv) throw InvalidArgument("--target applies to --csv files only");
  if (o.csv && o.shape_given) throw InvalidArgument("give --csv or --dataset, not both");
  if (o.csv && o.seed_given) {
    throw InvalidArgument("--seed applies to synthetic --dataset data, not to a --csv file");
  }
  if (o.beta_width_given && o.beta == "none")
    throw InvalidArgument("--beta-width applies to the model's coefficients, which --beta none "
                          "does not make");
  if (o.standardize && o.kind == FeatureKind::Binary)
    throw InvalidArgument("--standardize applies to numeric data, not to --kind binary");
  if (o.frac_bits && *o.frac_bits >= static_cast<int>(o.width))
    throw InvalidArgument("--frac-bits " + std::to_string(*o.frac_bits) + " leaves no integer "
                          "bit in a " + std::to_string(o.width) + "-bit width (at most " +
                          std::to_string(o.width - 1) + ")");
  if (o.backend != "plaintext") o.backend = apps::resolve_backend(o.backend, /*plaintext_ok=*/true);
  // Refused before the data are read, on every backend (plaintext uses no parameter set, but a
  // bad name is still a mistake to report).
  (void)apps::parameters_named("--params", o.params);
  apps::check_server_options(o.backend, o.server);
  // Before the keys are made: the options as the GPU backend will check them.
  if (o.backend == "gpu") apps::check_gpu_options(o.server.gpu, parameters_by_name(o.params));
  return o;
}

// One server step of the report.
struct Step {
  std::string name;
  std::uint64_t bootstraps = 0;
  std::size_t batches = 0;
  std::uint32_t depth = 0;
  double seconds = 0;
  std::string check;
};

struct Report {
  std::string data_description, backend, backend_description, params;
  int threads = 1;
  apps::QuantizedData q;
  double keygen_s = 0, fourier_s = 0, encrypt_s = 0;
  std::vector<Step> steps;
  std::vector<std::string> names;  // "(intercept)", then the features
  std::vector<double> beta, beta_reference, beta_float;
  double max_beta_difference = 0, rmse = 0, rmse_reference = 0, rmse_float = 0;
  // max_beta_difference over the largest |coefficient| of the reference (0 when all are 0):
  // the reference's own rounding, about cond(A) 1e-16, where the fit is right.
  double max_beta_relative_difference = 0;
  // The two fits agree where the relative difference is below beta_tolerance: they solve the
  // same exact system, so a larger one is a defect of one solver and fails the run.
  bool beta_agrees = true;
  // Predictions.
  int beta_fraction_bits = 0;
  std::vector<std::int64_t> beta_int;
  double prediction_rmse = 0;
  bool all_exact = true;
};

// The largest relative difference (to the largest coefficient) of the encrypted fit and the
// plaintext QR that still passes: the QR's own rounding is about cond(A) 1e-16, and a column
// within about 1e-6 radians of the span of the ones before it is refused before the keys.
constexpr double beta_tolerance = 1e-6;

// value / 2^bits.
double scaled(double value, int bits) { return std::ldexp(value, -bits); }

std::vector<double> dequantize(const std::vector<std::int64_t>& v, int bits) {
  std::vector<double> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = scaled(static_cast<double>(v[i]), bits);
  return out;
}

// The most fraction bits (0..48) at which every coefficient fits a signed `width`-bit integer.
// Where none does, the message gives the width the largest coefficient needs and what helps:
// a wider --beta-width up to its 32 bits, beyond that --standardize (`standardized` says
// whether the columns are scaled already).
int beta_fraction_bits(const std::vector<double>& beta, std::size_t width, bool standardized) {
  const auto fits = [&](int fb, int bits) {
    const double limit = std::ldexp(1.0, bits - 1);
    for (double b : beta) {
      if (!std::isfinite(b)) return false;  // (the preflight's solve never gives one)
      const double q = std::nearbyint(std::ldexp(b, fb));
      if (q < -limit || q > limit - 1) return false;
    }
    return true;
  };
  for (int fb = 48; fb >= 0; --fb)
    if (fits(fb, static_cast<int>(width))) return fb;
  int needed = static_cast<int>(width) + 1;
  while (needed < 1100 && !fits(0, needed)) ++needed;
  double largest = 0;
  for (double b : beta) largest = std::max(largest, std::abs(b));
  char largest_text[32];
  std::snprintf(largest_text, sizeof largest_text, "%.6g", largest);
  std::string text = "the model's coefficients do not fit ";
  text.append(std::to_string(width)).append("-bit integers: the largest, ");
  text.append(largest_text).append(", needs ");
  text.append(std::to_string(needed)).append(" bits; ");
  if (needed <= 32) {
    text.append("use --beta-width ").append(std::to_string(needed)).append(" or more");
  } else {
    text.append("that is more than --beta-width allows (32)");
    text.append(standardized ? ": the columns are nearly dependent"
                             : "; use --standardize, which scales every column to the same "
                               "range");
  }
  throw InvalidArgument(text);
}

// The solution of the normal equations of the integer data in the units of the quantized
// data: y = b0 / 2^fy + x (b 2^fx / 2^fy).
std::vector<double> model_units(const std::vector<double>& beta_q, bool intercept, int fx,
                                int fy) {
  std::vector<double> beta(beta_q.size());
  for (std::size_t j = 0; j < beta.size(); ++j)
    beta[j] = std::ldexp(beta_q[j], (intercept && j == 0 ? 0 : fx) - fy);
  return beta;
}

// round(beta_j 2^bits) for every coefficient.
std::vector<std::int64_t> quantize_model(const std::vector<double>& beta, int bits) {
  std::vector<std::int64_t> out(beta.size());
  for (std::size_t j = 0; j < beta.size(); ++j)
    out[j] = static_cast<std::int64_t>(std::nearbyint(std::ldexp(beta[j], bits)));
  return out;
}

// Whether the aggregates of `rows` rows fit 64 bits with numeric values of `width` bits (the
// types of q, whose binary parts keep their 1 bit).
bool aggregates_fit(const apps::QuantizedData& q, std::size_t width, std::size_t rows) {
  const auto at = [&](IntType t) { return t.is_signed ? IntType{width, true} : t; };
  return apps::aggregates_fit(at(q.x_type), at(q.y_type), rows);
}

// Where the quantization alone made feature j one that the fit cannot tell apart (constant
// beside the intercept, 0 without it) while the data `fitted` (the columns quantized: scaled
// with --standardize) vary: the message that says so and names the options that help (those
// that give it the fraction bits it needs: a wider --width, other --frac-bits, --standardize).
// "" for any other dependence.
std::string collapsed_column_message(const Options& o, const apps::Dataset& fitted,
                                     const apps::QuantizedData& q, std::size_t j,
                                     const std::string& name) {
  const std::size_t n = q.rows, d = q.attributes;
  double lo = fitted.x[j], hi = lo;
  std::int64_t qlo = q.x[j], qhi = qlo;
  for (std::size_t t = 0; t < n; ++t) {
    lo = std::min(lo, fitted.x[t * d + j]);
    hi = std::max(hi, fitted.x[t * d + j]);
    qlo = std::min(qlo, q.x[t * d + j]);
    qhi = std::max(qhi, q.x[t * d + j]);
  }
  // What must exceed one step 2^-f: the spread beside the intercept, else the magnitude.
  const double spread = o.intercept ? hi - lo : std::max(std::abs(lo), std::abs(hi));
  const bool collapsed = qlo == qhi && (o.intercept || qlo == 0);
  if (!collapsed || !(spread > 0) || o.kind == FeatureKind::Binary) return "";
  const int fx = q.x_fraction_bits;
  // spread * 2^f >= 1 rounds its ends apart, at f and every f above.
  const int needed = std::max(0, -std::ilogb(spread));
  const auto all_fit = [](const std::vector<double>& values, std::size_t width, int f) {
    return std::all_of(values.begin(), values.end(),
                       [&](double v) { return apps::fits_fixed_point(v, width, f); });
  };
  char range[80];
  std::snprintf(range, sizeof range, "%.6g to %.6g", lo, hi);
  char value[32];
  std::snprintf(value, sizeof value, "%.6g", scaled(static_cast<double>(qlo), fx));
  std::string text = "column '";
  text.append(apps::printable(name)).append("' is ");
  text.append(o.intercept ? "constant" : "0").append(" as quantized: its values (");
  text.append(range).append(o.standardize ? ", standardized" : "");
  text.append(") all round to ").append(value).append(" at ");
  text.append(std::to_string(q.x_type.width)).append(" bits with ");
  text.append(std::to_string(fx)).append(" fraction bits");
  text.append(o.frac_bits ? "" : ", one scale for all the features set by the largest");
  text.append("; it needs ").append(std::to_string(needed)).append(" fraction bits");
  std::vector<std::string> hints;
  if (!o.standardize) {
    hints.push_back("--standardize, which scales each column to [-1, 1) before quantizing");
  }
  if (o.frac_bits && needed < static_cast<int>(o.width) && all_fit(fitted.x, o.width, needed) &&
      all_fit(fitted.y, o.width, needed)) {
    hints.push_back(std::string("--frac-bits ").append(std::to_string(needed)));
  } else {
    const auto first = std::max<std::size_t>(o.width, static_cast<std::size_t>(needed)) + 1;
    for (std::size_t w = first; w <= 32; ++w) {
      if (all_fit(fitted.x, w, needed) && aggregates_fit(q, w, n)) {
        std::string hint = "--width ";
        hint.append(std::to_string(w)).append(o.frac_bits ? " with --frac-bits auto" : "");
        hints.push_back(hint);
        break;
      }
    }
  }
  if (hints.empty()) {
    text.append(", more than the width holds beside the other features; drop the column");
    return text;
  }
  text.append("; use ").append(hints[0]);
  if (hints.size() > 1) text.append(", or ").append(hints[1]);
  return text;
}

// Runs a program's outputs with a progress bar; fills the step's costs and time.
template <Backend B>
std::vector<IntArray<B>> run_step(Program<B>& prog, std::span<const Expr> outputs, Step& step,
                                  bool progress) {
  apps::ProgressBar bar("  " + step.name, "bootstraps", progress);
  prog.on_progress([&](const RunProgress& p) { bar.update(p.bootstraps_done, p.bootstraps_total); });
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<IntArray<B>> out = prog.run(outputs);
  step.seconds = apps::seconds_since(t0);
  bar.finish();
  const ScheduleCost& cost = prog.last_schedule().cost;
  step.bootstraps = cost.bootstraps;
  step.batches = cost.batches;
  step.depth = cost.depth;
  return out;
}

// Server: the training aggregates, with the cloud key only (inside `be`).
template <Backend B>
std::vector<IntArray<B>> server_aggregates(B& be, const IntArray<B>& x, const IntArray<B>& y,
                                           bool intercept, Step& step, bool progress) {
  Program<B> prog(be);
  const RegressionAggregates agg =
      regression_aggregates(prog.circuit(), prog.input(x), prog.input(y), intercept);
  const Expr outs[] = {agg.xtx, agg.xty};
  return run_step(prog, outs, step, progress);
}

// Server: predictions for an encrypted model, or a plaintext one.
template <Backend B>
IntArray<B> server_predict(B& be, const IntArray<B>& x, const IntArray<B>* beta,
                           const std::vector<std::int64_t>& plain_beta, bool intercept,
                           std::size_t intercept_shift, Step& step, bool progress) {
  Program<B> prog(be);
  const Expr ex = prog.input(x);
  const Expr out =
      beta ? predict(prog.circuit(), ex, prog.input(*beta), intercept, intercept_shift)
           : predict(prog.circuit(), ex, std::span<const std::int64_t>(plain_beta), intercept,
                     intercept_shift);
  return std::move(run_step(prog, std::span<const Expr>(&out, 1), step, progress).front());
}

std::string exactness(bool exact, std::size_t count, const char* what) {
  return exact ? "exact (" + std::to_string(count) + " " + what + ")" : "MISMATCH";
}

template <Backend B>
void run(B& be, const typename B::ClientKey& key, const Options& o, const apps::Dataset& data,
         const std::optional<apps::Standardization>& scaling, Report& r) {
  Csprng rng;
  const apps::QuantizedData& q = r.q;
  const std::size_t n = q.rows, d = q.attributes, p = d + (o.intercept ? 1 : 0);
  const int fx = q.x_fraction_bits, fy = q.y_fraction_bits;

  // Client: encrypt the quantized X and y.
  auto t0 = std::chrono::steady_clock::now();
  const IntArray<B> x = IntArray<B>::encrypt_integers(be, key, q.x, q.x_type, rng, n);
  const IntArray<B> y = IntArray<B>::encrypt_integers(be, key, q.y, q.y_type, rng, n);
  r.encrypt_s = apps::seconds_since(t0);
  std::printf("client       encrypted %zu x %zu features and %zu targets (%zu bits) in %.2f s\n",
              n, d, n, x.buffer().size() + y.buffer().size(), r.encrypt_s);

  // Server: training aggregates.
  std::printf("server       computing A^T A and A^T y (cloud key only)\n");
  std::fflush(stdout);
  Step train;
  train.name = "training aggregates A^T A, A^T y";
  const std::vector<IntArray<B>> agg = server_aggregates(be, x, y, o.intercept, train, o.progress);

  // Client: decrypt, check, solve.
  const std::vector<std::int64_t> xtx = agg[0].decrypt_integers(be, key),
                                   xty = agg[1].decrypt_integers(be, key);
  const apps::IntegerAggregates plain = apps::plain_aggregates(q, o.intercept);
  const bool exact = xtx == plain.xtx && xty == plain.xty;
  r.all_exact = r.all_exact && exact;
  train.check = exactness(exact, xtx.size() + xty.size(), "entries");
  r.steps.push_back(train);
  std::printf("client       aggregates %s: %s\n", exact ? "equal the plaintext integer computation"
                                                        : "DIFFER from the plaintext computation",
              train.check.c_str());

  // Solved from the exact integers (not rounded to double), the intercept eliminated exactly.
  const std::vector<double> beta = model_units(
      apps::solve_integer_normal_equations(apps::IntegerAggregates{p, xtx, xty}, o.intercept),
      o.intercept, fx, fy);
  const std::vector<double> xr = dequantize(q.x, fx), yr = dequantize(q.y, fy);
  // Reported in the units of the original data, with errors on the original data.
  const auto original = [&](const std::vector<double>& b) {
    return scaling ? apps::to_original_units(*scaling, b, o.intercept) : b;
  };
  r.beta = original(beta);
  r.beta_reference = original(apps::least_squares_qr(xr, yr, n, d, o.intercept));
  // The comparison fit on the unquantized data; with --standardize on the scaled columns (the
  // same least-squares model, mapped back), as columns of very different magnitudes can look
  // rank deficient to QR in their own units.
  if (scaling) {
    apps::Dataset scaled = data;
    apps::standardize(scaled, o.intercept);
    r.beta_float = original(apps::least_squares_qr(scaled.x, scaled.y, n, d, o.intercept));
  } else {
    r.beta_float = apps::least_squares_qr(data.x, data.y, n, d, o.intercept);
  }
  for (std::size_t j = 0; j < p; ++j)
    r.max_beta_difference = std::max(r.max_beta_difference, std::abs(r.beta[j] - r.beta_reference[j]));
  double largest = 0;
  for (double b : r.beta_reference) largest = std::max(largest, std::abs(b));
  r.max_beta_relative_difference = largest > 0 ? r.max_beta_difference / largest : 0;
  r.beta_agrees = r.max_beta_relative_difference <= beta_tolerance;
  r.rmse = apps::rms_error(data.x, data.y, n, d, r.beta, o.intercept);
  r.rmse_reference = apps::rms_error(data.x, data.y, n, d, r.beta_reference, o.intercept);
  r.rmse_float = apps::rms_error(data.x, data.y, n, d, r.beta_float, o.intercept);

  if (o.beta == "none") return;
  // Client: quantize the model; server: predictions; client: check them exactly.
  // Every coefficient with the same fraction bits; the intercept is shifted by fx on the
  // server (free) to the scale of the products x_j beta_j.
  r.beta_fraction_bits = beta_fraction_bits(beta, o.beta_width, o.standardize);
  r.beta_int = quantize_model(beta, r.beta_fraction_bits);
  const IntType beta_type{o.beta_width, true};
  std::optional<IntArray<B>> beta_ct;
  if (o.beta == "encrypted") beta_ct = IntArray<B>::encrypt_integers(be, key, r.beta_int, beta_type, rng, 1);
  std::printf("server       computing the predictions A beta (beta %s)\n", o.beta.c_str());
  std::fflush(stdout);
  Step pred;
  pred.name = "predictions A beta, beta " + o.beta;
  const IntArray<B> predictions = server_predict(be, x, beta_ct ? &*beta_ct : nullptr, r.beta_int,
                                                 o.intercept, static_cast<std::size_t>(fx),
                                                 pred, o.progress);
  const std::vector<std::int64_t> got = predictions.decrypt_integers(be, key);
  std::vector<std::int64_t> want(n);
  double sum = 0;
  for (std::size_t t = 0; t < n; ++t) {
    __int128 v = o.intercept ? static_cast<__int128>(r.beta_int[0]) << fx : 0;
    for (std::size_t j = 0; j < d; ++j)
      v += static_cast<__int128>(q.x[t * d + j]) * r.beta_int[j + (o.intercept ? 1 : 0)];
    want[t] = static_cast<std::int64_t>(v);
    const double prediction = scaled(static_cast<double>(got[t]), fx + r.beta_fraction_bits);
    const double e =
        (scaling ? scaling->y_mean + scaling->y_scale * prediction : prediction) - data.y[t];
    sum += e * e;
  }
  r.prediction_rmse = std::sqrt(sum / static_cast<double>(n));
  const bool pexact = got == want;
  r.all_exact = r.all_exact && pexact;
  pred.check = exactness(pexact, n, "rows");
  r.steps.push_back(pred);
  std::printf("client       predictions %s: %s\n",
              pexact ? "equal the plaintext integer computation" : "DIFFER from plain text",
              pred.check.c_str());
}

void print_model(const Report& r, std::size_t beta_width) {
  std::printf("\nmodel (data units)   %-14s %-14s %-12s %s\n", "encrypted fit", "plaintext QR",
              "difference", "float data");
  // %g: data of any magnitude (a column near 1e300 or 1e-300) keeps the columns aligned.
  for (std::size_t j = 0; j < r.beta.size(); ++j)
    std::printf("  %-18s %14.7g %14.7g %12.2e %12.7g\n",
                apps::terminal_text(r.names[j]).c_str(), r.beta[j], r.beta_reference[j],
                std::abs(r.beta[j] - r.beta_reference[j]), r.beta_float[j]);
  std::printf("  %-18s %14.7g %14.7g %12s %12.7g\n", "RMS error", r.rmse, r.rmse_reference, "",
              r.rmse_float);
  std::printf("encrypted fit vs plaintext least squares of the same quantized data: largest "
              "coefficient difference %.2e (%.1e of the largest coefficient)%s\n",
              r.max_beta_difference, r.max_beta_relative_difference,
              r.beta_agrees ? "" : ": THE FITS DISAGREE");
  if (!r.beta_int.empty())
    std::printf("model for predictions: %zu-bit signed coefficients with %d fraction bits; "
                "RMS error of the encrypted predictions %.6f\n",
                beta_width, r.beta_fraction_bits, r.prediction_rmse);
}

void print_summary(const Report& r) {
  std::printf("\n%-36s %12s %8s %6s %10s %13s  %s\n", "server step", "bootstraps", "batches",
              "depth", "seconds", "bootstraps/s", "check");
  for (const Step& s : r.steps)
    std::printf("%-36s %12llu %8zu %6u %10.2f %13.0f  %s\n", s.name.c_str(),
                static_cast<unsigned long long>(s.bootstraps), s.batches, s.depth, s.seconds,
                s.seconds > 0 ? static_cast<double>(s.bootstraps) / s.seconds : 0.0,
                s.check.c_str());
  std::printf("%s\n", r.all_exact ? "all encrypted results are exact"
                                  : "SOME ENCRYPTED RESULTS ARE WRONG");
  if (!r.beta_agrees)
    std::printf("THE ENCRYPTED FIT DIFFERS FROM THE PLAINTEXT QR by %.1e of the largest "
                "coefficient (more than %.0e): a defect of one of the solvers\n",
                r.max_beta_relative_difference, beta_tolerance);
}

std::string json_doubles(const std::vector<double>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + apps::json_number(v[i]);
  return out + "]";
}

void write_json(std::ostream& os, const Options& o, const Report& r) {
  using apps::json_number;
  using apps::json_string;
  const apps::QuantizedData& q = r.q;
  os << apps::json_report_opening("program", "linear_regression", r.backend, r.threads)
     << "  \"backend_description\": " << json_string(r.backend_description) << ",\n"
     << "  \"parameters\": " << json_string(r.params) << ",\n"
     << "  \"data\": " << json_string(r.data_description) << ",\n"
     << "  \"rows\": " << q.rows << ",\n"
     << "  \"attributes\": " << q.attributes << ",\n"
     << "  \"kind\": " << json_string(apps::feature_kind_name(o.kind)) << ",\n"
     << "  \"x_type\": " << json_string(to_string(q.x_type)) << ",\n"
     << "  \"x_fraction_bits\": " << q.x_fraction_bits << ",\n"
     << "  \"y_type\": " << json_string(to_string(q.y_type)) << ",\n"
     << "  \"y_fraction_bits\": " << q.y_fraction_bits << ",\n"
     << "  \"intercept\": " << (o.intercept ? "true" : "false") << ",\n"
     << "  \"standardized\": " << (o.standardize ? "true" : "false") << ",\n"
     << "  \"key_generation_s\": " << json_number(r.keygen_s) << ",\n"
     << "  \"encrypt_s\": " << json_number(r.encrypt_s) << ",\n"
     << "  \"steps\": [\n";
  for (std::size_t i = 0; i < r.steps.size(); ++i) {
    const Step& s = r.steps[i];
    os << "    {\"name\": " << json_string(s.name) << ", \"bootstraps\": " << s.bootstraps
       << ", \"batches\": " << s.batches << ", \"depth\": " << s.depth
       << ", \"seconds\": " << json_number(s.seconds) << ", \"check\": " << json_string(s.check)
       << "}" << (i + 1 < r.steps.size() ? "," : "") << "\n";
  }
  os << "  ],\n  \"coefficient_names\": [";
  for (std::size_t j = 0; j < r.names.size(); ++j) os << (j ? ", " : "") << json_string(r.names[j]);
  os << "],\n"
     << "  \"beta\": " << json_doubles(r.beta) << ",\n"
     << "  \"beta_plaintext_qr\": " << json_doubles(r.beta_reference) << ",\n"
     << "  \"beta_float_data\": " << json_doubles(r.beta_float) << ",\n"
     << "  \"max_beta_difference\": " << json_number(r.max_beta_difference) << ",\n"
     << "  \"max_beta_relative_difference\": " << json_number(r.max_beta_relative_difference)
     << ",\n"
     << "  \"beta_agrees\": " << (r.beta_agrees ? "true" : "false") << ",\n"
     << "  \"rms_error\": " << json_number(r.rmse) << ",\n"
     << "  \"rms_error_plaintext_qr\": " << json_number(r.rmse_reference) << ",\n"
     << "  \"rms_error_float_data\": " << json_number(r.rmse_float) << ",\n"
     << "  \"prediction_model\": " << json_string(o.beta) << ",\n"
     << "  \"beta_width\": " << o.beta_width << ",\n"
     << "  \"beta_fraction_bits\": " << r.beta_fraction_bits << ",\n"
     << "  \"prediction_rms_error\": " << json_number(r.prediction_rmse) << ",\n"
     << "  \"all_exact\": " << (r.all_exact ? "true" : "false") << "\n"
     << "}\n";
}

}  // namespace

int main(int argc, char** argv) try {
  bool help = false;
  const Options o = parse_options(argc, argv, help);
  if (help) {
    usage();
    return 0;
  }
  // Refuse an unwritable JSON path before hours of work, not after; the report is written
  // whole at the end (an earlier one stays as it was if the run fails).
  apps::OutputFile json;
  if (o.json) json = apps::OutputFile("--json", *o.json);

  // Client: data, quantization. A synthetic dataset is held as doubles, a scaled copy and two
  // integer copies: refused up front where that would not fit (100000x100000 is 80 GB each).
  if (!o.csv) {
    apps::check_host_memory("--dataset " + apps::to_string(o.shape),
                            4.0 * 8 * static_cast<double>(o.shape.rows) *
                                static_cast<double>(o.shape.attributes + 1),
                            "use a smaller --dataset");
  }
  Report r;
  const apps::Dataset data =
      o.csv ? apps::read_csv(*o.csv, *o.target) : apps::synthetic_dataset(o.shape, o.kind, o.seed);
  r.data_description = o.csv ? *o.csv + " (target '" + *o.target + "')"
                             : "synthetic " + apps::to_string(o.shape) + " " +
                                   apps::feature_kind_name(o.kind) + ", seed " + std::to_string(o.seed);
  // With --standardize the client quantizes scaled columns and maps the model back.
  std::optional<apps::Standardization> scaling;
  apps::Dataset scaled_data;
  if (o.standardize) {
    scaled_data = data;
    scaling = apps::standardize(scaled_data, o.intercept);
  }
  r.q = apps::quantize(scaling ? scaled_data : data, o.kind, o.width, o.frac_bits);
  const std::size_t p = r.q.attributes + (o.intercept ? 1 : 0);
  if (r.q.rows < p)
    throw InvalidArgument(std::to_string(r.q.rows) + " rows cannot determine " +
                          std::to_string(p) + " coefficients");
  if (!apps::aggregates_fit(r.q.x_type, r.q.y_type, r.q.rows)) {
    std::size_t widest = o.width;  // the widest numeric width whose sums fit, if any
    while (widest > 2 && !aggregates_fit(r.q, widest, r.q.rows)) --widest;
    std::string text = "the sums of ";
    text.append(std::to_string(r.q.rows)).append(" products of ");
    text.append(std::to_string(o.width)).append("-bit values need more than 64 bits; use ");
    if (aggregates_fit(r.q, widest, r.q.rows)) {
      text.append("--width ").append(std::to_string(widest)).append(" or less");
      if (!o.standardize && o.kind == FeatureKind::Numeric) {
        text.append(" (with --standardize if the values need more)");
      }
    } else {
      text.append("fewer rows");
    }
    throw InvalidArgument(text);
  }
  if (o.intercept) r.names.push_back("(intercept)");
  for (const auto& name : data.feature_names) r.names.push_back(name);
  // The fit must be unique: checked on the quantized data in the clear, before any key is
  // made, rather than on the decrypted aggregates after the encrypted step.
  const apps::IntegerAggregates plain = apps::plain_aggregates(r.q, o.intercept);
  std::size_t dependent = apps::integer_dependent_column(plain, o.intercept);
  // The comparison fit by QR of the same quantized data, after the training step, must find
  // the columns independent too (its threshold differs from the Cholesky's).
  if (dependent >= p)
    dependent = apps::qr_dependent_column(dequantize(r.q.x, r.q.x_fraction_bits), r.q.rows,
                                          r.q.attributes, o.intercept);
  // The first column that the unquantized data (scaled with --standardize) make a combination
  // of the columns before it, or p.
  const apps::Dataset& fitted = scaling ? scaled_data : data;
  const std::size_t data_dependent =
      apps::qr_dependent_column(fitted.x, fitted.rows, fitted.attributes(), o.intercept);
  // A column that only the quantization made constant (or 0), independent in the data: the
  // message names that cause and what gives the column the bits it needs.
  if (dependent < data_dependent && (dependent > 0 || !o.intercept)) {
    const std::size_t j = dependent - (o.intercept ? 1 : 0);
    const std::string text = collapsed_column_message(o, fitted, r.q, j, r.names[dependent]);
    if (!text.empty()) throw InvalidArgument(text);
  }
  if (dependent < p) {
    const bool binary = o.kind == apps::FeatureKind::Binary;
    // --standardize can help only numeric columns that the quantization made dependent:
    // where the reference fit (QR on the unquantized data) finds the columns independent.
    bool standardize_helps = false;
    if (!binary && !o.standardize) {
      try {
        (void)apps::least_squares_qr(data.x, data.y, data.rows, data.attributes(), o.intercept);
        standardize_helps = true;
      } catch (const InvalidArgument&) {
      }
    }
    throw InvalidArgument(
        "column '" + apps::printable(r.names[dependent]) + "' is, " +
        (binary ? std::string("as 0/1 values")
                : "as quantized to " + std::to_string(o.width) + " bits") +
        ", a combination of the columns before it (a constant or repeated feature" +
        (binary ? "" : ", or one too small for the width") +
        "): the least-squares fit is not unique; drop the column" +
        (standardize_helps ? " or try --standardize" : ""));
  }
  // The comparison fit of the unquantized data (on the scaled columns with --standardize)
  // must be unique too: a column that the data make a combination of the others, which only
  // the rounding separates, gives a fit of rounding noise.
  if (data_dependent < p) {
    std::string text = "column '";
    text.append(apps::printable(r.names[data_dependent]));
    text.append("' is a combination of the columns before it in the data (only their rounding ");
    text.append("to fixed point separates them): the least-squares fit is not unique; drop the ");
    text.append("column");
    throw InvalidArgument(text);
  }
  // The model and its predictions, from the plaintext aggregates (the decrypted ones equal
  // them, or the run reports the mismatch): refused now, not after the training step.
  if (o.beta != "none") {
    const std::vector<double> beta =
        model_units(apps::solve_integer_normal_equations(plain, o.intercept), o.intercept,
                    r.q.x_fraction_bits, r.q.y_fraction_bits);
    const int g = beta_fraction_bits(beta, o.beta_width, o.standardize);
    const auto shift = static_cast<std::size_t>(r.q.x_fraction_bits);
    try {
      if (o.beta == "encrypted")
        (void)prediction_type(r.q.x_type, IntType{o.beta_width, true}, r.q.attributes,
                              o.intercept, shift);
      else
        (void)prediction_type(r.q.x_type, quantize_model(beta, g), o.intercept, shift);
    } catch (const InvalidArgument&) {
      std::string text = "the predictions (sums of ";
      text.append(std::to_string(r.q.attributes)).append(" products of ");
      text.append(to_string(r.q.x_type)).append(" values and ");
      text.append(std::to_string(o.beta_width));
      text.append("-bit coefficients) need more than 64 bits; use a smaller --width or ");
      text.append("--beta-width");
      throw InvalidArgument(text);
    }
  }

  std::printf("torusgate linear regression (commit %s)\n", apps::build_commit().c_str());
  // The CSV's path and target as the terminal shows them (the JSON report keeps them as
  // they are).
  std::printf("data         %s: %zu rows, %zu attributes\n",
              apps::terminal_text(r.data_description).c_str(), r.q.rows, r.q.attributes);
  std::printf("quantized    %sx: %s, %d fraction bits; y: %s, %d fraction bits\n",
              scaling ? "standardized columns, " : "",
              to_string(r.q.x_type).c_str(), r.q.x_fraction_bits, to_string(r.q.y_type).c_str(),
              r.q.y_fraction_bits);

  int status = 0;
  if (o.backend == "plaintext") {
    r.backend = r.backend_description = "plaintext";
    r.params = "none (no encryption)";
    std::printf("backend      plaintext: no encryption, exact gate counts\n");
    PlaintextBackend be;
    run(be, PlaintextKey{}, o, data, scaling, r);
  } else {
    const Parameters params = parameters_by_name(o.params);
    r.params = params.name;
    // The encrypted X and y alone: one LWE sample (n + 1 words) per bit, before the circuits'
    // own buffers; refused before the keys rather than killed by the system while encrypting.
    const double input_bits =
        static_cast<double>(r.q.rows) *
        (static_cast<double>(r.q.attributes) * r.q.x_type.width + r.q.y_type.width);
    apps::check_host_memory(std::to_string(r.q.rows) + " rows of " +
                                std::to_string(r.q.attributes) + " attributes encrypted",
                            input_bits * 4.0 * (params.lwe_dimension + 1),
                            "use fewer rows or attributes, or a smaller --width");
    auto t0 = std::chrono::steady_clock::now();
    Csprng rng;
    const SecretKey secret(params, rng);
    auto cloud = std::make_shared<const CloudKey>(CloudKey::generate(secret, rng));
    r.keygen_s = apps::seconds_since(t0);
    std::printf("parameters   %s%s; keys made in %.2f s\n", params.name.c_str(),
                params.insecure ? "  -- INSECURE, for tests only" : "", r.keygen_s);
    // The server's backend holds only the cloud key (on a GPU: uploaded to the device once).
    t0 = std::chrono::steady_clock::now();
    apps::with_server_backend(o.backend, cloud, o.server, [&](auto& be) {
      r.fourier_s = apps::seconds_since(t0);
      r.backend = be.name();
      r.backend_description = apps::backend_description(be);
      r.threads = apps::backend_threads(be);
      std::printf("backend      %s; server key ready in %.2f s\n",
                  r.backend_description.c_str(), r.fourier_s);
      run(be, secret, o, data, scaling, r);
    });
  }
  print_model(r, o.beta_width);
  print_summary(r);
  if (!r.all_exact || !r.beta_agrees) status = 1;
  if (o.json) {
    write_json(json.stream(), o, r);
    json.commit();
    std::printf("report written to %s\n", apps::terminal_text(*o.json).c_str());
  }
  return status;
} catch (const InvalidArgument& e) {  // a bad argument or input file
  std::cerr << "linear_regression: " << torusgate::apps::terminal_text(e.what()) << "\n";
  return 2;
} catch (const std::exception& e) {  // a failure while running (a write, memory, a device)
  std::cerr << "linear_regression: " << torusgate::apps::terminal_text(e.what()) << "\n";
  return 1;
}
