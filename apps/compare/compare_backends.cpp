// The comparison runs: the workloads of the published GPU TFHE tables (gates on coalesced
// bits, compound gates, adders, vector operations, multipliers, matrix products, linear
// regression; docs/comparison.md) on every requested backend and parameter set, with the
// median, min and max of repeated runs, the exact bootstraps and depth of every item, a
// decryption check of every output, and results that a killed run resumes from.
//   compare_backends --out DIR [--backends sequential,openmp,gpu] [--params tfhe_lib_80,...]
//                    [--workloads all|GROUP|WORKLOAD,...] [--quick] [--reps N] [--warmup N]
//                    [--resume | --overwrite] [--max-seconds-per-item S] [--max-memory-gib G]
//                    [--threads T] [--fft E] [--task-size S] [GPU options] [--plan]
//                    [--no-progress]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "app_support.hpp"
#include "item_runner.hpp"
#include "printable.hpp"
#include "progress.hpp"
#include "results.hpp"
#include "torusgate/core/keys.hpp"
#include "torusgate/core/plaintext_backend.hpp"
#include "torusgate/cpu/cpu_backend.hpp"
#include "torusgate/gpu/cuda_backend.hpp"
#include "workloads.hpp"

using namespace torusgate;
using namespace torusgate::apps;
using namespace torusgate::apps::compare;

namespace {

struct Options {
  std::vector<std::string> backends = {"sequential", "openmp", "gpu"};
  std::vector<std::string> params = {"tfhe_lib_80", "tfhe_lib_128"};
  std::vector<std::string> workloads = {"all"};
  bool quick = false;
  std::optional<std::size_t> reps, warmup;  // defaults: 3 and 1, quick: 1 and 0
  std::string out;
  ResultStore::Mode mode = ResultStore::Mode::Fresh;
  double max_item_seconds = 0;  // 0: no limit
  double max_memory_gib = 0;    // 0: 80% of the memory available at start
  CpuOptions cpu;  // --threads (0: OpenMP default), --task-size, --fft
  CudaOptions gpu;  // --device, --gpu-engine, ... (parse_gpu_option)
  bool plan = false;
  bool progress = true;
  std::string command_line;
};

void usage(std::ostream& os) {
  os << "usage: compare_backends --out DIR [options]\n"
        "  --out DIR                 results.jsonl, results.json and results.csv go here\n"
        "  --backends B[,B...]       sequential, openmp, gpu (default all three; an unavailable\n"
        "                            backend is reported and skipped)\n"
        "  --params P[,P...]         tfhe_lib_80 (the published setup), tfhe_lib_128, "
        "default_128,\n"
        "                            toy_INSECURE, toy_k2_INSECURE (tests only) (default\n"
        "                            tfhe_lib_80,tfhe_lib_128)\n"
        "  --workloads W[,W...]      all (default), groups (gates, compound, addition, vector,\n"
        "                            multiplication, matrix, regression) or workloads "
        "(gate.coalesced,\n"
        "                            add.sklansky, vector.mul, mul.wrapping.tree, matmul, cannon,\n"
        "                            regression.binary, ...)\n"
        "  --quick                   small sizes, 1 run, no warmup: a smoke test for CI\n"
        "  --reps N                  timed runs per item: median, min and max (default 3)\n"
        "  --warmup N                untimed runs before them (default 1)\n"
        "  --resume                  keep the results in DIR and run only what is missing\n"
        "  --overwrite               delete the results in DIR and start again\n"
        "  --max-seconds-per-item S  skip an item whose estimated run time exceeds S seconds, and\n"
        "                            run fewer reps when all of them would (default: no limit)\n"
        "  --max-memory-gib G        skip an item whose ciphertexts need more (default: 80% of\n"
        "                            the memory available at start)\n"
        "  --threads T               OpenMP threads (default: the OpenMP default)\n"
        "  --fft E                   auto (default) | fftw | simd | portable\n"
        "  --task-size S             blind rotations per CPU task (default "
     << CpuOptions{}.task_size
     << ")\n"
     << gpu_options_help(28)
     << "  --plan                    print every item's exact cost and estimated time per\n"
        "                            backend, run nothing (DIR not needed)\n"
        "  --no-progress             no progress bars on stderr\n"
        "Every output is decrypted and compared with plain arithmetic; a wrong result is\n"
        "reported and makes the exit status 1. Estimates (bootstraps / measured bootstraps per\n"
        "second) only decide what to skip; they are never written as times.\n"
        "Plots and speedup tables: scripts/plot_compare.py DIR (scripts/compare.sh does all).\n";
}

// Returns false when --help was asked for.
bool parse(int argc, char** argv, Options& o) {
  for (int i = 0; i < argc; ++i) {
    if (i) o.command_line += ' ';
    o.command_line += argv[i];
  }
  bool resume = false, overwrite = false;
  std::string gpu_option;  // the first GPU option given; empty when none was
  for (CommandLine cl(argc, argv); cl.next();) {
    const std::string& arg = cl.arg();
    if (cl.is_help()) {
      usage(std::cout);
      return false;
    } else if (arg == "--backends") {
      o.backends = split_list(cl.value());
    } else if (arg == "--params") {
      o.params = split_list(cl.value());
    } else if (arg == "--workloads") {
      o.workloads = split_list(cl.value());
    } else if (arg == "--quick") {
      o.quick = true;
    } else if (arg == "--reps") {
      o.reps = parse_count(arg, cl.value(), 1, 1000);
    } else if (arg == "--warmup") {
      o.warmup = parse_count(arg, cl.value(), 0, 1000);
    } else if (arg == "--out") {
      o.out = cl.value();
    } else if (arg == "--resume") {
      resume = true;
    } else if (arg == "--overwrite") {
      overwrite = true;
    } else if (arg == "--max-seconds-per-item") {
      o.max_item_seconds = static_cast<double>(parse_count(arg, cl.value(), 1, 100000000));
    } else if (arg == "--max-memory-gib") {
      o.max_memory_gib = static_cast<double>(parse_count(arg, cl.value(), 1, 1000000));
    } else if (parse_cpu_option(cl, o.cpu)) {
    } else if (parse_gpu_option(cl, o.gpu)) {
      if (gpu_option.empty()) gpu_option = arg;
    } else if (arg == "--plan") {
      o.plan = true;
    } else if (arg == "--no-progress") {
      o.progress = false;
    } else {
      cl.reject();
    }
  }
  if (resume && overwrite) throw InvalidArgument("--resume and --overwrite exclude each other");
  if (resume) o.mode = ResultStore::Mode::Resume;
  if (overwrite) o.mode = ResultStore::Mode::Overwrite;
  if (o.out.empty() && !o.plan) throw InvalidArgument("--out DIR is required (see --help)");
  for (const std::string& b : o.backends)
    if (b != "sequential" && b != "openmp" && b != "gpu")
      throw InvalidArgument("--backends: unknown backend '" + b +
                            "'; expected sequential, openmp or gpu");
  for (const std::string& p : o.params) parameters_named("--params", p);  // lists the names
  // A name listed twice runs once (as --workloads does), not twice with fresh keys.
  for (std::vector<std::string>* list : {&o.backends, &o.params}) {
    std::vector<std::string> unique;
    for (const std::string& item : *list)
      if (std::find(unique.begin(), unique.end(), item) == unique.end()) unique.push_back(item);
    *list = std::move(unique);
  }
  if (o.cpu.threads != 0 &&
      std::find(o.backends.begin(), o.backends.end(), "openmp") == o.backends.end())
    throw InvalidArgument("--threads applies to the openmp backend, which --backends leaves out");
  if (!gpu_option.empty() &&
      std::find(o.backends.begin(), o.backends.end(), "gpu") == o.backends.end())
    throw InvalidArgument(gpu_option + " is a GPU option: it applies to the gpu backend, which "
                          "--backends leaves out");
  // The GPU options for every parameter set, before the first set's keys and CPU runs (where
  // there is a GPU: without one the gpu backend is reported unavailable and skipped).
  if (std::find(o.backends.begin(), o.backends.end(), "gpu") != o.backends.end() &&
      gpu::built_with_cuda() && !gpu::devices().empty()) {
    for (const std::string& p : o.params) {
      try {
        check_gpu_options(o.gpu, parameters_by_name(p));
      } catch (const InvalidArgument& e) {
        throw InvalidArgument("--params " + p + ": " + e.what());
      }
    }
  }
  return true;
}

std::string format_seconds(double s) {
  char buf[32];
  if (s < 1)
    std::snprintf(buf, sizeof buf, "%.1f ms", 1e3 * s);
  else if (s < 100)
    std::snprintf(buf, sizeof buf, "%.2f s", s);
  else
    return ProgressBar::format_duration(s);
  return buf;
}

// Keys of one parameter set: made once, shared by every backend.
struct KeySet {
  Parameters params;
  std::unique_ptr<SecretKey> secret;
  std::shared_ptr<const CloudKey> cloud;
  std::shared_ptr<const CpuKeyContext> cpu;  // the Fourier-domain key of the CPU backends
  double keygen_s = 0, fourier_s = 0;
};

// Makes backend `name` on `keys`; nullptr and `why_not` when it cannot run here.
std::unique_ptr<BackendRunner> make_runner(const std::string& name, KeySet& keys, const Options& o,
                                           std::string& why_not) {
  if (name == "sequential" || name == "openmp") {
    if (!keys.cpu) {  // one Fourier-domain key, shared by both CPU backends
      const auto t0 = std::chrono::steady_clock::now();
      keys.cpu = std::make_shared<const CpuKeyContext>(keys.cloud, o.cpu.fft);
      keys.fourier_s = seconds_since(t0);
    }
    CpuOptions cpu = o.cpu;
    if (name != "openmp") cpu.threads = 0;
    std::unique_ptr<CpuBackend> be = make_cpu_backend(name, keys.cpu, cpu);
    const int threads = be->threads();
    const std::string description = be->name() + ", fft " + keys.cpu->fft().name() +
                                    ", task size " + std::to_string(o.cpu.task_size) + ", " +
                                    std::to_string(threads) + " thread" + (threads == 1 ? "" : "s");
    const std::size_t calibration_bits = std::max<std::size_t>(64, 16 * threads);
    return std::make_unique<Runner<CpuBackend>>(name, description, std::move(be), *keys.secret,
                                                threads, calibration_bits);
  }
  std::string reason;  // why backend `name` cannot run here ("" when it can)
  try {
    resolve_backend(name);  // no CUDA in this build, or no device
  } catch (const InvalidArgument& e) {
    reason = e.what();
    const std::string prefix = "--backend " + name + ": ";
    if (reason.rfind(prefix, 0) == 0) reason.erase(0, prefix.size());
  }
  if (name == "gpu" && reason.empty()) {
    auto be = std::make_unique<CudaBackend>(keys.cloud, o.gpu);
    const std::string description = be->name() + ", " + gpu_engine_description(o.gpu);
    // A batch that fills a GPU; --quick (a smoke test, the quick sizes) a small one.
    const std::size_t calibration_bits = o.quick ? 1024 : std::size_t{1} << 14;
    return std::make_unique<Runner<CudaBackend>>("gpu", description, std::move(be), *keys.secret,
                                                 1, calibration_bits);
  }
  why_not = reason.empty() ? "this program has no runner for backend '" + name + "' yet" : reason;
  return nullptr;
}

// A backend's speed, measured on batches of AND gates: the estimates that decide skips.
struct Speed {
  double bootstraps_per_s = 0;  // throughput of a wide batch
  double latency_s = 0;         // one gate alone
  std::size_t batch = 0;
};

// The estimated seconds of one run: every bootstrap at full throughput, plus one gate's
// latency per level (narrow levels cannot fill the machine). An estimate, not a measurement.
double estimate_seconds(const Cost& cost, const Speed& speed) {
  return static_cast<double>(cost.bootstraps) / speed.bootstraps_per_s +
         static_cast<double>(cost.depth) * speed.latency_s;
}

class Driver {
 public:
  Driver(const Options& o, std::vector<Item> items) : o_(o), items_(std::move(items)) {
    reps_ = o.reps.value_or(o.quick ? 1 : 3);
    warmup_ = o.warmup.value_or(o.quick ? 0 : 1);
    const double available = available_memory_bytes();
    max_memory_bytes_ = o.max_memory_gib > 0 ? o.max_memory_gib * 1073741824.0
                                             : (available > 0 ? 0.8 * available : 0);
  }

  // Runs everything; returns the exit status.
  int run() {
    if (!o_.plan) {
      store_.emplace(o_.out, o_.mode);
      if (store_->result_count() > 0)
        std::printf("resuming: %zu results already in %s\n", store_->result_count(),
                    terminal_text(o_.out).c_str());
      JsonRecord rec;
      rec.set("record", "run");
      rec.set("date", utc_timestamp());
      rec.set("commit", build_commit());
      rec.set("machine", machine_description());
      rec.set("command", o_.command_line);
      rec.set("quick", o_.quick);
      rec.set("reps", std::uint64_t{reps_});
      rec.set("warmup", std::uint64_t{warmup_});
      rec.set("max_seconds_per_item", o_.max_item_seconds);
      store_->append(rec);
    }
    std::printf("compare_backends  commit %s, %s UTC\nmachine           %s\n",
                build_commit().c_str(), utc_timestamp().c_str(), machine_description().c_str());
    std::printf("items             %zu (%s), %zu timed run%s after %zu warmup%s\n\n", items_.size(),
                o_.quick ? "quick sizes" : "full sizes", reps_, reps_ == 1 ? "" : "s", warmup_,
                o_.max_item_seconds > 0
                    ? (", budget " + format_seconds(o_.max_item_seconds) + " per item").c_str()
                    : "");
    std::fflush(stdout);
    for (const std::string& name : o_.params) run_params(parameters_by_name(name));
    if (o_.plan) return 0;

    std::printf("\n%zu measured, %zu already measured (resumed), %zu skipped, %zu WRONG\n",
                measured_, resumed_, skipped_, wrong_);
    if (remeasured_ != 0)
      std::printf(
          "note: %zu results already in %s were measured with another setup (machine, backend "
          "options, or fewer runs than this run's) and were measured again\n",
          remeasured_, terminal_text(o_.out).c_str());
    if (resumed_other_commit_ != 0)
      std::printf(
          "note: %zu of the resumed results were measured by another commit than %s "
          "(their 'commit' field says which)\n",
          resumed_other_commit_, build_commit().c_str());
    if (store_) {
      const std::string out = terminal_text(o_.out);
      std::printf(
          "results: %s/results.json, results.csv (results.jsonl: every record)\n"
          "plots:   scripts/plot_compare.py %s\n",
          out.c_str(), out.c_str());
    }
    if (wrong_ != 0) {
      std::fprintf(stderr,
                   "compare_backends: %zu item%s decrypted WRONG (see the lines marked "
                   "WRONG above and the 'check' field of the results)\n",
                   wrong_, wrong_ == 1 ? "" : "s");
      return 1;
    }
    return 0;
  }

 private:
  // The exact cost of an item, from one run on the plaintext backend (cached).
  const Cost& cost_of(const Item& item) {
    const auto it = costs_.find(item.key());
    if (it != costs_.end()) return it->second;
    PlaintextBackend be;
    const PlaintextKey key;
    return costs_.emplace(item.key(), measure_cost(be, key, plain_rng_, item)).first->second;
  }

  KeySet make_keys(const Parameters& params) {
    KeySet keys;
    keys.params = params;
    const auto t0 = std::chrono::steady_clock::now();
    keys.secret = std::make_unique<SecretKey>(params, key_rng_);
    keys.cloud = std::make_shared<const CloudKey>(CloudKey::generate(*keys.secret, key_rng_));
    keys.keygen_s = seconds_since(t0);
    return keys;
  }

  Speed calibrate(BackendRunner& r) {
    Speed s;
    s.batch = r.calibration_bits();
    const Item wide = calibration_item(s.batch), one = calibration_item(1);
    const Measurement mw = r.measure(wide, cost_of(wide), 1, 3, false);
    const Measurement m1 = r.measure(one, cost_of(one), 1, 5, false);
    if (!mw.wrong.empty() || !m1.wrong.empty())
      throw Error("calibrating " + r.name() + ": AND gates decrypted wrong: " + mw.wrong +
                  m1.wrong);
    // The fastest runs, not the medians: another process on the machine slows some of them,
    // and an estimate made from those would skip items that fit the budget.
    s.bootstraps_per_s = static_cast<double>(s.batch) / mw.summary.min;
    s.latency_s = m1.summary.min;
    return s;
  }

  void run_params(const Parameters& params) {
    std::printf("== %s (n=%u, k=%u, N=%u, bk %u/%u, ks %u/%u)%s\n", params.name.c_str(),
                params.lwe_dimension, params.glwe_dimension, params.polynomial_size,
                params.bk_base_log, params.bk_level_count, params.ks_base_log,
                params.ks_level_count, params.insecure ? "  -- INSECURE, for tests only" : "");
    KeySet keys = make_keys(params);
    std::printf("key generation    %.2f s\n", keys.keygen_s);
    if (store_) {
      JsonRecord r;
      r.set("record", "keys");
      r.set("params", params.name);
      std::string fields = parameters_json(params, "");
      std::replace(fields.begin(), fields.end(), '\n', ' ');
      r.set_raw("parameters", fields);
      r.set("key_generation_s", keys.keygen_s);
      r.set("date", utc_timestamp());
      store_->append(r);
    }

    std::vector<std::unique_ptr<BackendRunner>> runners;
    std::vector<Speed> speeds;
    for (const std::string& name : o_.backends) {
      std::string why_not;
      std::unique_ptr<BackendRunner> r = make_runner(name, keys, o_, why_not);
      JsonRecord rec;
      rec.set("record", "backend");
      rec.set("backend", name);
      rec.set("params", params.name);
      rec.set("date", utc_timestamp());
      if (!r) {
        std::printf("%-17s UNAVAILABLE, skipped: %s\n", name.c_str(), why_not.c_str());
        rec.set("status", "unavailable");
        rec.set("reason", why_not);
        if (store_) store_->append(rec);
        continue;
      }
      const Speed speed = calibrate(*r);
      std::printf("%-17s %s; %.1f bootstraps/s in batches of %zu, %s per lone gate\n", name.c_str(),
                  r->description().c_str(), speed.bootstraps_per_s, speed.batch,
                  format_seconds(speed.latency_s).c_str());
      rec.set("status", "ready");
      rec.set("device", r->description());
      rec.set("threads", r->threads());
      if (keys.cpu && (name == "sequential" || name == "openmp"))
        rec.set("fourier_key_s", keys.fourier_s);
      rec.set("calibration_batch", std::uint64_t{speed.batch});
      rec.set("calibration_bootstraps_per_s", speed.bootstraps_per_s);
      rec.set("calibration_latency_s", speed.latency_s);
      if (store_) store_->append(rec);
      runners.push_back(std::move(r));
      speeds.push_back(speed);
    }
    std::fflush(stdout);
    if (o_.plan) return print_plan(params, runners, speeds);

    const std::size_t total = items_.size() * runners.size();
    std::size_t step = 0;
    for (const Item& item : items_)
      for (std::size_t b = 0; b < runners.size(); ++b)
        run_item(++step, total, item, params, *runners[b], speeds[b]);
    std::printf("\n");
  }

  void print_plan(const Parameters& params,
                  const std::vector<std::unique_ptr<BackendRunner>>& runners,
                  const std::vector<Speed>& speeds) {
    std::printf("\n%-22s %-14s %12s %6s %9s", "workload", "size", "bootstraps", "depth", "memory");
    for (const auto& r : runners) std::printf(" %18s", ("est. " + r->name()).c_str());
    std::printf("\n");
    std::vector<double> totals(runners.size(), 0);
    for (const Item& item : items_) {
      const Cost& cost = cost_of(item);
      const double bytes = ciphertext_bytes(cost, params);
      std::printf("%-22s %-14s %12llu %6llu %5.1f GiB%s", item.workload.c_str(), item.size.c_str(),
                  static_cast<unsigned long long>(cost.bootstraps),
                  static_cast<unsigned long long>(cost.depth), bytes / 1073741824.0,
                  over_memory(bytes) ? "!" : " ");
      for (std::size_t b = 0; b < runners.size(); ++b) {
        const double est = estimate_seconds(cost, speeds[b]);
        const bool over = o_.max_item_seconds > 0 && est > o_.max_item_seconds;
        if (!over && !over_memory(bytes)) {
          const Runs runs = plan_runs(est);
          totals[b] += est * static_cast<double>(runs.reps + runs.warmup);
        }
        std::printf(" %17s%s", format_seconds(est).c_str(), over ? "!" : " ");
      }
      std::printf("\n");
      std::fflush(stdout);
    }
    std::printf(
        "estimated total for %s, %zu+%zu runs per item (fewer where the budget says), "
        "without the items marked ! (over --max-memory-gib or --max-seconds-per-item):",
        params.name.c_str(), warmup_, reps_);
    for (std::size_t b = 0; b < runners.size(); ++b)
      std::printf(" %s %s;", runners[b]->name().c_str(),
                  ProgressBar::format_duration(totals[b]).c_str());
    std::printf(
        "\n(estimates: bootstraps / calibrated bootstraps per second + depth x lone-gate "
        "latency; not measurements)\n\n");
  }

  // The runs of an item estimated at `est` seconds each (at most the budget): fewer timed
  // runs, then no warmup, when all of them would exceed the budget.
  struct Runs {
    std::size_t warmup = 0, reps = 1;
  };
  Runs plan_runs(double est) const {
    if (o_.max_item_seconds <= 0 ||
        est * static_cast<double>(reps_ + warmup_) <= o_.max_item_seconds)
      return Runs{warmup_, reps_};
    const auto fit = static_cast<std::size_t>(o_.max_item_seconds / est);  // >= 1
    const std::size_t warmup = fit > reps_ ? std::min(warmup_, fit - reps_) : 0;
    return Runs{warmup, std::max<std::size_t>(1, std::min(reps_, fit - warmup))};
  }

  // Bytes of the ciphertexts alive at the peak of a run of an item.
  static double ciphertext_bytes(const Cost& cost, const Parameters& params) {
    return static_cast<double>(cost.ciphertext_bits) * (params.lwe_dimension + 1.0) *
           sizeof(Torus32);
  }
  bool over_memory(double bytes) const {
    return max_memory_bytes_ > 0 && bytes > max_memory_bytes_;
  }

  JsonRecord item_record(const Item& item, const Parameters& params, const BackendRunner& r) {
    JsonRecord rec;
    rec.set("record", "result");
    rec.set("group", item.group);
    rec.set("panel", item.panel);
    rec.set("variant", item.variant);
    rec.set("workload", item.workload);
    rec.set("size", item.size);
    rec.set("x_name", item.x_name);
    rec.set("x", item.x);
    rec.set("bits", std::uint64_t{item.bits});
    rec.set("length", std::uint64_t{item.length});
    rec.set("dimension", std::uint64_t{item.dimension});
    rec.set("rows", std::uint64_t{item.rows});
    rec.set("attributes", std::uint64_t{item.attributes});
    rec.set("backend", r.name());
    rec.set("params", params.name);
    rec.set("threads", r.threads());
    rec.set("device", r.description());
    return rec;
  }

  void set_cost(JsonRecord& rec, const Cost& cost) {
    rec.set("bootstraps", cost.bootstraps);
    rec.set("gates", cost.gates);
    rec.set("depth", cost.depth);
    rec.set("batches", cost.batches);
    rec.set("ciphertext_bits", cost.ciphertext_bits);
  }

  void finish(JsonRecord& rec) {
    rec.set("machine", machine_description());
    rec.set("commit", build_commit());
    rec.set("date", utc_timestamp());
    store_->append(rec);
  }

  // Whether a stored result was measured as this run would measure it: the same backend
  // options (its description: engine, FFT, task size, threads), machine, and at least this
  // run's warmup and timed runs, or fewer because a time budget cut them and this run has one.
  bool same_setup(const JsonRecord& done, const BackendRunner& r) const {
    if (done.text("threads") != std::to_string(r.threads()) ||
        done.text("device") != r.description() || done.text("machine") != machine_description())
      return false;
    const std::optional<double> reps = done.number("reps"), warmup = done.number("warmup");
    if (reps && warmup && *reps >= static_cast<double>(reps_) &&
        *warmup >= static_cast<double>(warmup_))
      return true;
    return o_.max_item_seconds > 0 && done.text("note").rfind("runs reduced", 0) == 0;
  }

  void run_item(std::size_t step, std::size_t total, const Item& item, const Parameters& params,
                BackendRunner& r, const Speed& speed) {
    char head[160];
    std::snprintf(head, sizeof head, "[%*zu/%zu] %-10s %-22s %-14s", total >= 100 ? 3 : 2, step,
                  total, r.name().c_str(), item.workload.c_str(), item.size.c_str());
    const std::string key = item.key() + " | " + r.name() + " | " + params.name;
    if (const JsonRecord* done = store_->find_result(key);
        done != nullptr && done->text("status") == "ok") {
      const std::optional<double> median = done->number("median_s");
      if (median && same_setup(*done, r)) {
        ++resumed_;
        if (done->text("commit") != build_commit()) ++resumed_other_commit_;
        std::printf("%s already measured: median %s (resumed)\n", head,
                    format_seconds(*median).c_str());
        std::fflush(stdout);
        return;
      }
      ++remeasured_;
    }
    const Cost& cost = cost_of(item);
    const double est = estimate_seconds(cost, speed);
    JsonRecord rec = item_record(item, params, r);
    set_cost(rec, cost);

    // Skips, by memory and by the time budget (estimates, labelled as such).
    const double bytes = ciphertext_bytes(cost, params);
    std::string skip;
    if (over_memory(bytes)) {
      char buf[200];
      std::snprintf(buf, sizeof buf,
                    "skipped: its ciphertexts need about %.1f GiB > the limit of %.1f GiB "
                    "(--max-memory-gib)",
                    bytes / 1073741824.0, max_memory_bytes_ / 1073741824.0);
      skip = buf;
    } else if (o_.max_item_seconds > 0 && est > o_.max_item_seconds) {
      skip = "skipped: estimated " + format_seconds(est) + " per run > budget " +
             format_seconds(o_.max_item_seconds) + " (--max-seconds-per-item)";
    }
    if (!skip.empty()) {
      ++skipped_;
      rec.set("status", "skipped");
      rec.set("estimated_s", est);
      rec.set("note", skip);
      finish(rec);
      std::printf("%s %llu bootstraps, depth %llu: %s\n", head,
                  static_cast<unsigned long long>(cost.bootstraps),
                  static_cast<unsigned long long>(cost.depth), skip.c_str());
      std::fflush(stdout);
      return;
    }
    const Runs runs = plan_runs(est);
    const std::size_t reps = runs.reps, warmup = runs.warmup;
    std::string note;
    if (reps != reps_ || warmup != warmup_) {
      note = "runs reduced to " + std::to_string(warmup) + " warmup + " + std::to_string(reps) +
             " timed to fit the budget of " + format_seconds(o_.max_item_seconds) + " (estimated " +
             format_seconds(est) + " per run)";
    }
    if (est > 2 || !note.empty()) {
      std::printf("%s %llu bootstraps, depth %llu, estimated %s per run x %zu%s ...\n", head,
                  static_cast<unsigned long long>(cost.bootstraps),
                  static_cast<unsigned long long>(cost.depth), format_seconds(est).c_str(),
                  reps + warmup, note.empty() ? "" : " (fewer runs: the budget)");
      std::fflush(stdout);
    }
    const Measurement m = r.measure(item, cost, warmup, reps, o_.progress && est > 2);
    const bool ok = m.wrong.empty();
    ok ? ++measured_ : ++wrong_;
    rec.set("status", ok ? "ok" : "wrong");
    rec.set("reps", std::uint64_t{reps});
    rec.set("warmup", std::uint64_t{warmup});
    rec.set("seconds", m.seconds);
    rec.set("median_s", m.summary.median);
    rec.set("min_s", m.summary.min);
    rec.set("max_s", m.summary.max);
    rec.set("bootstraps_per_s", static_cast<double>(cost.bootstraps) / m.summary.median);
    if (m.compile_s > 0) rec.set("compile_s", m.compile_s);
    rec.set("check", ok ? std::string("ok") : "WRONG: " + m.wrong);
    if (!note.empty()) rec.set("note", note);
    finish(rec);
    std::printf("%s %10llu boots %5llu lvl  median %10s  (%s .. %s)  %8.1f boots/s  %s\n", head,
                static_cast<unsigned long long>(cost.bootstraps),
                static_cast<unsigned long long>(cost.depth),
                format_seconds(m.summary.median).c_str(), format_seconds(m.summary.min).c_str(),
                format_seconds(m.summary.max).c_str(),
                static_cast<double>(cost.bootstraps) / m.summary.median, ok ? "ok" : "WRONG");
    if (!ok)
      std::fprintf(stderr, "compare_backends: WRONG RESULT on %s: %s\n", key.c_str(),
                   m.wrong.c_str());
    std::fflush(stdout);
  }

  const Options& o_;
  std::vector<Item> items_;
  std::size_t reps_ = 3, warmup_ = 1;
  double max_memory_bytes_ = 0;
  std::optional<ResultStore> store_;
  std::map<std::string, Cost> costs_;
  Csprng key_rng_, plain_rng_;
  std::size_t measured_ = 0, resumed_ = 0, resumed_other_commit_ = 0, remeasured_ = 0;
  std::size_t skipped_ = 0, wrong_ = 0;
};

}  // namespace

int main(int argc, char** argv) try {
  Options o;
  if (!parse(argc, argv, o)) return 0;
  Driver driver(o, select_items(all_items(o.quick), o.workloads));
  return driver.run();
} catch (const std::exception& e) {
  std::cerr << "compare_backends: " << torusgate::apps::terminal_text(e.what()) << "\n";
  return 2;
}
