// Circuit benchmark: wall time of encrypted integer operations of the catalog (adders,
// comparisons, multipliers, ...) on a backend, per operation and width, with median/min/max
// over repetitions, the bootstraps and depth of the compiled circuit, and an optional JSON
// report (machine, commit, backend, parameters; on the GPU the device and engines). Inputs are
// encrypted once on the client; each timed run uploads them to the backend, records the
// operation, compiles it and executes it (what Program::run does) and downloads the result,
// the transfers timed apart from the run (their share of a circuit run: DESIGN.md section 11),
// and the decrypted outputs of the last run are checked against the catalog's reference.
// With the parameter set's noise model (core/noise.hpp) it also states each circuit's chance of
// a wrong output bit per run, the sum over its bootstraps of their failure probabilities, which
// an unrolled bootstrapping key (--unroll) raises for the weighted gates (docs/security.md 3).
//   bench_circuits [--backend B] [--params NAME] [--unroll U] [--ops OP[,OP...]]
//                  [--widths W[,W...]] [--signedness u|s] [--lanes L] [--reps R] [--warmup W]
//                  [--threads T] [--fft E] [--task-size S] [GPU options] [--json PATH]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "app_support.hpp"
#include "printable.hpp"
#include "torusgate/circuits/catalog.hpp"
#include "torusgate/circuits/program.hpp"
#include "torusgate/circuits/schedule.hpp"
#include "torusgate/core/keys.hpp"
#include "torusgate/core/noise.hpp"
#include "torusgate/core/plaintext_backend.hpp"
#include "torusgate/cpu/cpu_backend.hpp"
#include "torusgate/gpu/cuda_backend.hpp"

using namespace torusgate;
using namespace torusgate::circuits;

namespace {

// The default operations: the default adder, less, and the default wrapping multiplier.
std::vector<std::string> default_ops() {
  std::vector<std::string> ops;
  for (const Operation& op : operation_catalog())
    if (op.is_default && op.name.rfind("add.", 0) == 0) ops.push_back(op.name);
  ops.push_back("less");
  for (const Operation& op : operation_catalog())
    if (op.is_default && op.name.rfind("mul.wrapping.", 0) == 0) ops.push_back(op.name);
  return ops;
}

std::string joined(const std::vector<std::string>& items) {
  std::string s;
  for (const std::string& item : items) s += (s.empty() ? "" : ",") + item;
  return s;
}

void usage(std::ostream& os) {
  os << "usage: bench_circuits [options]\n"
        "  --backend B         sequential | openmp | gpu | plaintext | best (default best:\n"
        "                      gpu when a CUDA device is usable, else openmp)\n"
        "  --params NAME       tfhe_lib_128 (default), tfhe_lib_80, default_128, toy_INSECURE,\n"
        "                      toy_k2_INSECURE (unused by the plaintext backend)\n"
        "  --unroll U          bootstrapping key: 1 standard (default), 2, 3 or 4: key bits in\n"
        "                      pairs, threes or fours (faster on the GPU at small batches; the\n"
        "                      weighted gates of adders and comparisons fail more often: see\n"
        "                      the 'fail/run' column and docs/security.md section 3)\n"
        "  --ops OP[,OP...]    catalog operations; repeatable (default "
     << joined(default_ops())
     << ")\n"
        "                      circuit_costs lists them, with the vector and\n"
        "                      matrix operations (sum.8, dot.8, ...), which this program\n"
        "                      does not run\n"
        "  --widths W[,W...]   operand widths in bits, 1..64; repeatable (default 8,16)\n"
        "  --signedness S      u (default) or s: unsigned or signed operands\n"
        "  --lanes L           elements per run, 1..1048576 (default 1)\n"
        "  --reps R            timed runs per operation and width (default 3)\n"
        "  --warmup W          untimed runs before them (default 1)\n"
        "  --threads T         OpenMP threads (default: the OpenMP default)\n"
        "  --fft E             auto (default) | fftw | simd | portable\n"
        "  --task-size S       blind rotations per task, 2..4096 (default "
     << CpuOptions{}.task_size
     << ")\n"
     << "GPU backend:\n"
     << apps::gpu_options_help(22)
     << "  --json PATH         also write the results as JSON to PATH\n"
        "  --help              this text\n"
        "Each timed run records the operation on L encrypted elements, compiles it (one batch\n"
        "per level) and executes it; 'compile ms' is the record + compile part of it. The\n"
        "inputs are random and encrypted once; each run uploads them to the backend before and\n"
        "downloads its result after, timed apart ('transfer ms'; 'transfers': their share of\n"
        "upload + run + download). The outputs of the last run are decrypted and checked\n"
        "against the plaintext reference (exit status 1 if any is wrong). 'fail/run': the\n"
        "noise model's chance that a run gives a wrong bit, the sum over its bootstraps of\n"
        "their failure probabilities (each gate at its worst input; an estimate).\n";
}

struct Options {
  std::string backend = "best";
  std::string params = "tfhe_lib_128";
  std::uint32_t unroll = 1;  // --unroll: the bootstrapping key's form
  bool unroll_given = false;
  std::vector<std::string> ops;
  std::vector<std::size_t> widths;
  bool is_signed = false;
  std::size_t lanes = 1;
  std::size_t reps = 3;
  std::size_t warmup = 1;
  CpuOptions cpu;  // --threads (0: OpenMP default), --task-size, --fft
  CudaOptions gpu;  // --device, --gpu-engine, ... (apps::parse_gpu_option)
  std::string cpu_option, gpu_option;  // the first CPU / GPU option given; empty when none
  std::optional<std::string> json_path;  // when --json was given (an empty path is refused)
};

// Returns false when --help was asked for.
bool parse(int argc, char** argv, Options& o) {
  for (apps::CommandLine cl(argc, argv, {"--ops", "--widths"}); cl.next();) {
    const std::string& arg = cl.arg();
    if (cl.is_help()) {
      usage(std::cout);
      return false;
    } else if (arg == "--backend") {
      o.backend = cl.value();
    } else if (arg == "--params") {
      o.params = cl.value();
    } else if (arg == "--unroll") {
      o.unroll = static_cast<std::uint32_t>(apps::parse_count(arg, cl.value(), 1, max_unroll));
      o.unroll_given = true;
    } else if (arg == "--ops") {
      for (const std::string& name : apps::split_list(cl.value())) apps::append_unique(o.ops, name);
    } else if (arg == "--widths") {
      for (const std::string& w : apps::split_list(cl.value()))
        apps::append_unique(o.widths, static_cast<std::size_t>(apps::parse_count(arg, w, 1, 64)));
    } else if (arg == "--signedness") {
      const std::string s = cl.value();
      if (s == "u") o.is_signed = false;
      else if (s == "s") o.is_signed = true;
      else throw InvalidArgument("--signedness: '" + s + "'; expected u or s");
    } else if (arg == "--lanes") {
      o.lanes = apps::parse_count(arg, cl.value(), 1, std::uint64_t{1} << 20);
    } else if (arg == "--reps") {
      o.reps = apps::parse_count(arg, cl.value(), 1, 1000000);
    } else if (arg == "--warmup") {
      o.warmup = apps::parse_count(arg, cl.value(), 0, 1000000);
    } else if (apps::parse_cpu_option(cl, o.cpu)) {
      if (o.cpu_option.empty()) o.cpu_option = arg;
    } else if (apps::parse_gpu_option(cl, o.gpu)) {
      if (o.gpu_option.empty()) o.gpu_option = arg;
    } else if (arg == "--json") {
      o.json_path = cl.value();
    } else {
      cl.reject();
    }
  }
  if (o.ops.empty()) o.ops = default_ops();
  if (o.widths.empty()) o.widths = {8, 16};
  for (const std::string& name : o.ops) {
    const Operation* found = operation_named(name);
    if (found == nullptr) {
      throw InvalidArgument("--ops: no element-wise operation '" + apps::printable(name) +
                            "' (the vector and matrix rows of circuit_costs, sum.8, dot.8, "
                            "..., are not run here); the catalog has " + operation_names());
    }
    const Operation& op = *found;
    if (o.is_signed && !op.signed_ok)
      throw InvalidArgument("--ops: " + name +
                            " takes unsigned operands only; drop --signedness s");
    if (!o.is_signed && !op.unsigned_ok)
      throw InvalidArgument("--ops: " + name + " takes signed operands only; add --signedness s");
  }
  o.backend = apps::resolve_backend(o.backend, /*plaintext_ok=*/true);
  if (o.unroll_given && o.backend == "plaintext") {
    throw InvalidArgument("--unroll applies to the encrypted backends, not to plaintext (no keys)");
  }
  if (o.cpu.threads != 0 && o.backend != "openmp") {
    throw InvalidArgument("--threads applies to the openmp backend, not to " + o.backend);
  }
  if (!o.cpu_option.empty() && o.backend == "gpu")
    throw apps::cpu_options_not_for_gpu(o.cpu_option);
  if (!o.cpu_option.empty() && o.backend == "plaintext") {
    throw InvalidArgument(o.cpu_option +
                          " applies to the sequential and openmp backends, not to plaintext");
  }
  if (!o.gpu_option.empty() && o.backend != "gpu")
    throw apps::gpu_options_not_for(o.gpu_option, o.backend);
  // Before the keys are made: the options as the GPU backend will check them.
  if (o.backend == "gpu") {
    apps::check_gpu_options(o.gpu, apps::parameters_named("--params", o.params), o.unroll);
  }
  return true;
}

// The parts of one timed run, in seconds.
struct RunTimes {
  double upload = 0, compile = 0, compute = 0, download = 0;
};

// One operation at one width.
struct OpResult {
  const Operation* op = nullptr;
  IntType type;
  std::size_t lanes = 0;
  std::size_t result_width = 0;
  ScheduleCost cost;
  std::vector<double> seconds;          // record + compile + execute
  std::vector<double> compile_seconds;  // their record + compile part
  std::vector<double> upload_seconds;   // the inputs to the backend, before each run
  std::vector<double> download_seconds; // the result back to the client, after it
  std::vector<double> transfer_shares;  // (upload + download) / (upload + download + run)
  apps::Summary total, compile, upload, download, transfer_share;
  // The noise model's chance of a wrong bit per run (log2; none for the plaintext backend)
  // and the gate whose bootstraps fail most often.
  std::optional<double> log2_failure;
  std::string worst_gate;
  double worst_gate_log2_failure = 0;
  std::size_t errors = 0;
  std::string first_error;
};

// A random value of `type`: unsigned values below 2^width, signed ones sign-extended (as the
// uint64 bit pattern of an int64).
std::uint64_t random_value(Csprng& rng, IntType type) {
  const std::uint64_t mask =
      type.width >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << type.width) - 1;
  std::uint64_t u = rng.uniform_u64() & mask;
  if (type.is_signed && ((u >> (type.width - 1)) & 1)) u |= ~mask;
  return u;
}

// The value of a random input as a mathematical integer.
__int128 as_integer(std::uint64_t u, IntType type) {
  return type.is_signed ? static_cast<__int128>(static_cast<std::int64_t>(u))
                        : static_cast<__int128>(u);
}

std::string to_decimal(unsigned __int128 u) {
  std::string s;
  do {
    s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(u % 10)));
    u /= 10;
  } while (u != 0);
  return s;
}

std::string to_decimal(__int128 v) {
  if (v >= 0) return to_decimal(static_cast<unsigned __int128>(v));
  std::string s = to_decimal(-static_cast<unsigned __int128>(v));
  s.insert(s.begin(), '-');
  return s;
}

template <Backend B>
OpResult run_op(B& be, const typename B::ClientKey& key, Csprng& rng, const Operation& op,
                IntType type, const Options& o, const NoiseModel* model) {
  OpResult r;
  r.op = &op;
  r.type = type;
  r.lanes = o.lanes;
  r.result_width = op.result_width(type.width);
  std::vector<std::uint64_t> xs(o.lanes), ys(o.lanes);
  for (std::size_t e = 0; e < o.lanes; ++e) {
    xs[e] = random_value(rng, type);
    ys[e] = random_value(rng, type);
  }
  // The client encrypts once; every run moves the ciphertexts to the backend and the results
  // back, as a client/server round trip does.
  using HostBatch = typename B::HostBatch;
  const HostBatch host_x = encrypt_bits(key, to_bit_planes(xs, type), rng);
  const HostBatch host_y = encrypt_bits(key, to_bit_planes(ys, type), rng);
  HostBatch host_out{};

  // One run: upload, record, compile, execute (the steps of Program::run), download; the
  // transfers and the record + compile part timed apart.
  const auto run_once = [&](RunTimes* t) {
    auto t0 = std::chrono::steady_clock::now();
    const IntArray<B> X(be.upload(host_x), type, 1, o.lanes);
    std::optional<IntArray<B>> Y;
    if (op.arity == 2) Y.emplace(be.upload(host_y), type, 1, o.lanes);
    if (t) t->upload = apps::seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    Circuit c;
    const Expr x = c.input(type, 1, o.lanes);
    const Expr y = op.arity == 2 ? c.input(type, 1, o.lanes) : x;
    const Expr result = op.record(c, x, y);
    const Schedule schedule = compile(c, std::span<const Expr>(&result, 1));
    if (t) t->compile = apps::seconds_since(t0);
    std::vector<const IntArray<B>*> bound = {&X};
    if (Y) bound.push_back(&*Y);
    std::vector<IntArray<B>> outs =
        execute(be, schedule, std::span<const IntArray<B>* const>(bound));
    if (t) t->compute = apps::seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    host_out = be.download(outs.front().buffer().bits());
    if (t) t->download = apps::seconds_since(t0);
    r.cost = schedule.cost;
    if (model && !r.log2_failure) {
      const FailureBound bound = failure_bound(schedule, *model);
      if (bound.has_bootstraps()) {
        r.log2_failure = bound.log2_per_run;
        r.worst_gate = apps::gate_label(bound.worst_gate);
        r.worst_gate_log2_failure = bound.worst_gate_log2;
      }
    }
  };

  for (std::size_t w = 0; w < o.warmup; ++w) run_once(nullptr);
  be.reset_stats();
  for (std::size_t rep = 0; rep < o.reps; ++rep) {
    RunTimes t;
    run_once(&t);
    r.seconds.push_back(t.compute);
    r.compile_seconds.push_back(t.compile);
    r.upload_seconds.push_back(t.upload);
    r.download_seconds.push_back(t.download);
    const double moved = t.upload + t.download;
    r.transfer_shares.push_back(moved + t.compute > 0 ? moved / (moved + t.compute) : 0.0);
  }
  const std::uint64_t want_bootstraps = r.cost.bootstraps * o.reps;
  const std::uint64_t want_levels = std::uint64_t{r.cost.depth} * o.reps;
  if (be.stats().bootstraps != want_bootstraps || be.stats().bootstrap_batches != want_levels) {
    throw Error(op.name + " " + to_string(type) + ": the backend counted " +
                std::to_string(be.stats().bootstraps) + " bootstraps in " +
                std::to_string(be.stats().bootstrap_batches) + " bootstrapping batches over " +
                std::to_string(o.reps) + " runs but the schedule has " +
                std::to_string(r.cost.bootstraps) + " bootstraps at depth " +
                std::to_string(r.cost.depth) + " per run");
  }
  r.total = apps::summarize(r.seconds);
  r.compile = apps::summarize(r.compile_seconds);
  r.upload = apps::summarize(r.upload_seconds);
  r.download = apps::summarize(r.download_seconds);
  r.transfer_share = apps::summarize(r.transfer_shares);

  // The outputs of the last run against the reference, modulo 2^(result width).
  const std::size_t rw = r.result_width;
  const std::vector<std::uint8_t> bits = decrypt_bits(key, host_out);
  const unsigned __int128 one = 1;
  const unsigned __int128 mask = rw >= 128 ? ~static_cast<unsigned __int128>(0) : (one << rw) - 1;
  for (std::size_t e = 0; e < o.lanes; ++e) {
    unsigned __int128 got = 0;
    for (std::size_t j = 0; j < rw; ++j)
      if (bits[j * o.lanes + e]) got |= one << j;
    const __int128 x = as_integer(xs[e], type), y = as_integer(ys[e], type);
    const unsigned __int128 want = static_cast<unsigned __int128>(op.reference(x, y, type)) & mask;
    if (got == want) continue;
    if (r.errors++ == 0) {
      r.first_error = op.name + " " + to_string(type) + " element " + std::to_string(e) +
                      ": x = " + to_decimal(x) + (op.arity == 2 ? ", y = " + to_decimal(y) : "") +
                      ": expected " + to_decimal(want) + " but got " + to_decimal(got) +
                      " (as " + std::to_string(rw) + "-bit unsigned)";
    }
  }
  return r;
}

// "2^-62.4", "-" without a model or bootstraps.
std::string failure_text(const std::optional<double>& log2_p) {
  return log2_p ? apps::log2_probability_text(*log2_p) : "-";
}

void print_row(const OpResult& r) {
  const double boots = static_cast<double>(r.cost.bootstraps);
  char rate[64], check[32];
  if (r.cost.bootstraps == 0) std::snprintf(rate, sizeof rate, "-");
  else std::snprintf(rate, sizeof rate, "%.1f", boots / r.total.median);
  if (r.errors == 0) std::snprintf(check, sizeof check, "ok");
  else std::snprintf(check, sizeof check, "%zu WRONG", r.errors);
  std::printf("%-22s %4s %7zu %11llu %6u %11.3f %11.3f %11.3f %11.3f %11.3f %9.1f%% %13s %9s  %s\n",
              r.op->name.c_str(), to_string(r.type).c_str(), r.lanes,
              static_cast<unsigned long long>(r.cost.bootstraps), r.cost.depth,
              1e3 * r.total.median, 1e3 * r.total.min, 1e3 * r.total.max,
              1e3 * r.compile.median, 1e3 * (r.upload.median + r.download.median),
              100.0 * r.transfer_share.median, rate, failure_text(r.log2_failure).c_str(), check);
  std::fflush(stdout);
}

// What the report says about the run besides the results.
struct RunInfo {
  std::string backend;
  int threads = 1;
  std::optional<Parameters> params;  // none for the plaintext backend
  std::uint32_t unroll = 1;          // the bootstrapping key's form
  std::string fft;
  double keygen_s = 0, fourier_s = 0;
  std::string json_fields;  // the backend's own top-level JSON lines, each ending ",\n"
};

// A JSON array of numbers on one line.
std::string json_array(const std::vector<double>& values) {
  std::string s = "[";
  for (std::size_t k = 0; k < values.size(); ++k)
    s += (k ? ", " : "") + apps::json_number(values[k]);
  return s + "]";
}

void write_json(std::ostream& os, const Options& o, const RunInfo& info,
                const std::vector<OpResult>& results) {
  using apps::json_number;
  using apps::json_string;
  os << apps::json_report_opening("benchmark", "bench_circuits", info.backend, info.threads)
     << info.json_fields;
  if (info.params) {
    const Parameters& p = *info.params;
    os << "  \"fft\": " << json_string(info.fft) << ",\n"
       << "  \"task_size\": "
       << (info.backend == "gpu" ? std::string("null") : std::to_string(o.cpu.task_size))
       << ",\n";
    os << "  \"parameters\": " << apps::parameters_json(p, "    ") << ",\n"
       << "  \"bootstrapping_key_unroll\": " << info.unroll << ",\n"
       << "  \"key_generation_s\": " << json_number(info.keygen_s) << ",\n"
       << "  \"fourier_key_s\": " << json_number(info.fourier_s) << ",\n";
  } else {
    os << "  \"fft\": null,\n  \"task_size\": null,\n  \"parameters\": null,\n"
       << "  \"bootstrapping_key_unroll\": null,\n";
  }
  os << "  \"warmup\": " << o.warmup << ",\n"
     << "  \"timing\": \"one run = record + compile + execute of the operation on 'lanes' "
        "elements; compile_* is the record + compile part; upload_* (the inputs to the backend "
        "before the run) and download_* (the result to the client after it) are timed apart; "
        "transfer_share = (upload + download) / (upload + download + run), per run\",\n"
     << "  \"failure\": \"log2_failure_per_run: log2 of the noise model's chance of a wrong "
        "output bit in one run, the sum over the circuit's bootstraps of their failure "
        "probabilities at each gate's worst input (core/noise.hpp; an estimate); worst_gate: the "
        "gate whose bootstraps fail most often, worst_gate_log2_failure its log2 per "
        "bootstrap\",\n"
     << "  \"results\": [";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const OpResult& r = results[i];
    const double boots = static_cast<double>(r.cost.bootstraps);
    const double lanes = static_cast<double>(r.lanes);
    os << (i ? ",\n" : "\n") << "    {\"op\": " << json_string(r.op->name)
       << ", \"type\": " << json_string(to_string(r.type)) << ", \"width\": " << r.type.width
       << ", \"signed\": " << (r.type.is_signed ? "true" : "false")
       << ", \"result_width\": " << r.result_width << ", \"lanes\": " << r.lanes << ",\n"
       << "     \"bootstraps\": " << r.cost.bootstraps << ", \"gates\": " << r.cost.gates
       << ", \"free_gates\": " << r.cost.free_gates << ", \"depth\": " << r.cost.depth
       << ", \"batches\": " << r.cost.batches << ", \"scratch_bits\": " << r.cost.scratch_bits
       << ",\n"
       << "     \"reps\": " << r.seconds.size() << ", \"seconds\": " << json_array(r.seconds)
       << ",\n"
       << "     \"median_s\": " << json_number(r.total.median)
       << ", \"min_s\": " << json_number(r.total.min)
       << ", \"max_s\": " << json_number(r.total.max) << ",\n"
       << "     \"compile_median_s\": " << json_number(r.compile.median)
       << ", \"compile_min_s\": " << json_number(r.compile.min)
       << ", \"compile_max_s\": " << json_number(r.compile.max) << ",\n"
       << "     \"upload_s\": " << json_array(r.upload_seconds)
       << ", \"download_s\": " << json_array(r.download_seconds) << ",\n"
       << "     \"upload_median_s\": " << json_number(r.upload.median)
       << ", \"download_median_s\": " << json_number(r.download.median)
       << ", \"transfer_share_median\": " << json_number(r.transfer_share.median)
       << ", \"transfer_share_max\": " << json_number(r.transfer_share.max) << ",\n"
       << "     \"ms_per_element_median\": " << json_number(1e3 * r.total.median / lanes) << ",\n"
       << "     \"bootstraps_per_s_median\": "
       << (r.cost.bootstraps ? json_number(boots / r.total.median) : "null")
       << ", \"bootstraps_per_s_min\": "
       << (r.cost.bootstraps ? json_number(boots / r.total.max) : "null")
       << ", \"bootstraps_per_s_max\": "
       << (r.cost.bootstraps ? json_number(boots / r.total.min) : "null") << ",\n"
       << "     \"log2_failure_per_run\": "
       << (r.log2_failure ? json_number(*r.log2_failure) : "null") << ", \"worst_gate\": "
       << (r.log2_failure ? json_string(r.worst_gate) : "null")
       << ", \"worst_gate_log2_failure\": "
       << (r.log2_failure ? json_number(r.worst_gate_log2_failure) : "null") << ",\n"
       << "     \"errors\": " << r.errors << "}";
  }
  os << "\n  ]\n}\n";
}

// Refuses, before any key is made, an operation and width whose run would not fit this
// machine's memory (the system would kill it without a message). Encrypted bits held at once:
// the inputs and the result on the client and on the backend, the schedule's scratch, and
// the bootstraps' own samples for its widest batch (about 3 each); on the GPU's host side,
// the client's inputs and result only.
void check_memory(const Options& o, const Parameters& params) {
  // An encrypted bit is an LWE sample; a plaintext bit takes 5 bytes (PlaintextBackend's
  // allocation: the bit and its gate count).
  const double bit_bytes = o.backend == "plaintext" ? 5.0 : 4.0 * (params.lwe_dimension + 1);
  for (const std::string& name : o.ops) {
    const Operation& op = find_operation(name);
    for (const std::size_t width : o.widths) {
      const IntType type{width, o.is_signed};
      Circuit c;
      const Expr x = c.input(type, 1, o.lanes);
      const Expr y = op.arity == 2 ? c.input(type, 1, o.lanes) : x;
      const Expr result = op.record(c, x, y);
      const Schedule schedule = compile(c, std::span<const Expr>(&result, 1));
      std::size_t widest = 0;
      for (const auto& batch : schedule.batches) {
        std::size_t gates = 0;
        for (const ScheduledOp& g : batch) gates += g.count;
        widest = std::max(widest, gates);
      }
      const double io_bits = static_cast<double>(o.lanes) *
                             (static_cast<double>(op.arity * width) + op.result_width(width));
      const double bits = o.backend == "gpu"
                              ? io_bits
                              : 2 * io_bits + static_cast<double>(schedule.scratch_bits) +
                                    3.0 * static_cast<double>(widest);
      apps::check_host_memory(name + " on " + std::to_string(o.lanes) + " elements of " +
                                  std::to_string(width) + " bits",
                              bits * bit_bytes, "use fewer --lanes");
    }
  }
}

template <Backend B>
std::vector<OpResult> run_all(B& be, const typename B::ClientKey& key, Csprng& rng,
                              const Options& o, const NoiseModel* model) {
  std::printf("%-22s %4s %7s %11s %6s %11s %11s %11s %11s %11s %10s %13s %9s  %s\n", "operation",
              "type", "elems", "bootstraps", "depth", "median ms", "min ms", "max ms",
              "compile ms", "transfer ms", "transfers", "bootstraps/s", "fail/run", "check");
  std::fflush(stdout);
  std::vector<OpResult> results;
  for (const std::string& name : o.ops) {
    const Operation& op = find_operation(name);
    for (const std::size_t width : o.widths) {
      OpResult r = run_op(be, key, rng, op, IntType{width, o.is_signed}, o, model);
      print_row(r);
      if (r.errors != 0) std::fprintf(stderr, "bench_circuits: WRONG: %s\n", r.first_error.c_str());
      results.push_back(std::move(r));
    }
  }
  return results;
}

void print_header(const Options& o, const RunInfo& info, const std::string& backend_line) {
  std::printf("bench_circuits  commit %s, %s UTC\n", apps::build_commit().c_str(),
              apps::utc_timestamp().c_str());
  std::printf("machine         %s\n", apps::machine_description().c_str());
  if (info.params) {
    const Parameters& p = *info.params;
    std::printf("parameters      %s (n=%u, k=%u, N=%u, bk %u/%u, ks %u/%u)%s\n", p.name.c_str(),
                p.lwe_dimension, p.glwe_dimension, p.polynomial_size, p.bk_base_log,
                p.bk_level_count, p.ks_base_log, p.ks_level_count,
                p.insecure ? "  -- INSECURE, for tests only" : "");
  } else {
    std::printf("parameters      none (plaintext backend: cleartext bits, no encryption)\n");
  }
  std::printf("backend         %s\n", backend_line.c_str());
  if (info.params)
    std::printf("key gen         %.2f s, %s; Fourier key %.2f s\n", info.keygen_s,
                apps::key_form_text(info.unroll).c_str(), info.fourier_s);
  std::printf("timing          %zu timed run%s (after %zu warmup) of record + compile + "
              "execute, %zu element%s per run\n\n",
              o.reps, o.reps == 1 ? "" : "s", o.warmup, o.lanes, o.lanes == 1 ? "" : "s");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) try {
  Options o;
  if (!parse(argc, argv, o)) return 0;
  const Parameters params = apps::parameters_named("--params", o.params);  // validates the name
  check_memory(o, params);
  // Checked before the run, so that a bad path fails at once and not after the benchmark;
  // written whole at the end (an earlier report stays as it was if the run fails).
  apps::OutputFile json;
  if (o.json_path) json = apps::OutputFile("--json", *o.json_path);  // given but empty: refused

  RunInfo info;
  info.backend = o.backend;
  std::vector<OpResult> results;
  Csprng rng;
  if (o.backend == "plaintext") {
    PlaintextBackend be;
    print_header(o, info, be.name());
    results = run_all(be, PlaintextKey{}, rng, o, nullptr);
  } else {
    // Client: fresh keys from the OS-seeded CSPRNG.
    auto t0 = std::chrono::steady_clock::now();
    const SecretKey secret(params, rng);
    auto cloud = std::make_shared<const CloudKey>(CloudKey::generate(secret, rng, o.unroll));
    info.keygen_s = apps::seconds_since(t0);
    info.params = params;
    info.unroll = o.unroll;
    const NoiseModel model = noise_model(params, o.unroll);
    if (o.backend == "gpu") {
      // Server: the cloud key to the device once (the Fourier key is made there).
      t0 = std::chrono::steady_clock::now();
      CudaBackend be(cloud, o.gpu);
      info.fourier_s = apps::seconds_since(t0);
      info.threads = 1;
      info.fft = gpu_engine_name(o.gpu.engine);
      info.json_fields = "  \"device\": " + apps::device_json(be.device()) + ",\n" +
                         "  \"gpu_engine\": " + apps::json_string(gpu_engine_name(o.gpu.engine)) +
                         ",\n  \"key_switching\": " +
                         apps::json_string(gpu_key_switching_name(o.gpu.key_switching)) + ",\n" +
                         "  \"transfer\": " + apps::json_string(gpu_transfer_name(o.gpu.transfer)) +
                         ",\n  \"staging_bytes\": " + std::to_string(o.gpu.staging_bytes) + ",\n" +
                         "  \"backend_description\": " +
                         apps::json_string(apps::gpu_engine_description(o.gpu)) + ",\n";
      print_header(o, info, be.name() + ", " + apps::gpu_engine_description(o.gpu));
      results = run_all(be, secret, rng, o, &model);
    } else {
      // Server: the Fourier-domain key, made once, and the backend.
      t0 = std::chrono::steady_clock::now();
      auto ctx = std::make_shared<const CpuKeyContext>(cloud, o.cpu.fft);
      info.fourier_s = apps::seconds_since(t0);
      const std::unique_ptr<CpuBackend> be = apps::make_cpu_backend(o.backend, ctx, o.cpu);
      info.threads = be->threads();
      info.fft = ctx->fft().name();
      std::ostringstream line;
      line << be->name() << ", fft " << info.fft << ", task size " << o.cpu.task_size;
      print_header(o, info, line.str());
      results = run_all(*be, secret, rng, o, &model);
    }
  }

  if (json.wanted()) {
    write_json(json.stream(), o, info, results);
    json.commit();
    std::printf("\nJSON written to %s\n", apps::terminal_text(json.path()).c_str());
  }
  std::size_t wrong = 0;
  for (const OpResult& r : results) wrong += r.errors;
  if (wrong != 0) {
    std::fprintf(stderr, "bench_circuits: %zu outputs decrypted WRONG\n", wrong);
    return 1;
  }
  return 0;
} catch (const std::exception& e) {
  std::cerr << "bench_circuits: " << torusgate::apps::terminal_text(e.what()) << "\n";
  return 2;
}
