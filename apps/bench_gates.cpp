// Gate-bootstrapping benchmark: latency (batch 1) and throughput (bootstraps per second) of
// batches of bootstrapped NAND gates on a CPU backend or the CUDA backend, with
// median/min/max over repetitions, key sizes in memory, and an optional JSON report
// (machine, device, commit, backend, parameters). On the GPU it also reports each phase
// (linear combination, blind rotation, sample extraction, key switching, output, op tables),
// measured with CUDA events, and the transfers of the inputs and outputs (the caller's wait,
// host clock; direct or through pinned staging buffers), for each engine and key switching
// asked for in one run (default: the cuFFT and the fused engine), with the nominal FP64 work
// per bootstrap against the device's peak. The outputs of the timed batches are decrypted and
// checked afterwards.
//   bench_gates [--backend B] [--params NAME] [--batch N[,N...]]... [--reps R] [--warmup W]
//               [--threads T] [--fft auto|fftw|simd|portable] [--task-size S]
//               [--device D] [--memory-budget-mb MB] [--no-cuda-graphs]
//               [--gpu-engine E[,E]] [--key-switching K[,K]] [--fused-groups G]
//               [--fused-rotations R] [--fused-cluster C] [--fused-lanes P]
//               [--transfer direct|pinned] [--staging-mb MB]
//               [--json PATH]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "app_support.hpp"
#include "printable.hpp"
#include "torusgate/core/bootstrap.hpp"
#include "torusgate/core/keys.hpp"
#include "torusgate/core/simd_fft.hpp"
#include "torusgate/cpu/cpu_backend.hpp"
#include "torusgate/gpu/cuda_backend.hpp"

using namespace torusgate;

namespace {

void usage(std::ostream& os) {
  os << "usage: bench_gates [options]\n"
        "  --backend B       best (default: gpu when a CUDA device is usable, else openmp) |\n"
        "                    sequential | openmp | gpu\n"
        "  --params NAME     tfhe_lib_128 (default), tfhe_lib_80, default_128, toy_INSECURE,\n"
        "                    toy_k2_INSECURE\n"
        "  --unroll U        bootstrapping key: 1 standard (default), 2 unrolled (pairs of\n"
        "                    key bits: half the transforms per key bit, 1.5x the key), 3\n"
        "                    (threes: a third of the transforms, 2.33x the key), 4 (fours:\n"
        "                    3.75x the key; the fused engine: bundled clusters only)\n"
        "  --batch N[,N...]  gates per evaluate() call; repeatable (default 1,16,64 on a CPU\n"
        "                    backend, 1,64,1024,16384,65536 on the GPU)\n"
        "  --reps R          timed repetitions per batch size (default 5)\n"
        "  --warmup W        untimed repetitions before them (default 1)\n"
        "CPU backends:\n"
        "  --threads T       OpenMP threads (default: the OpenMP default)\n"
        "  --fft E           auto (default: simd for N >= 128 in an AVX-512 build, else fftw) |\n"
        "                    fftw | simd | portable\n"
        "  --task-size S     blind rotations per task, 2..4096 (default "
     << CpuOptions{}.task_size << ")\n"
        "GPU backend:\n"
     << apps::gpu_options_help(
            20, {{"--memory-budget-mb MB", "device scratch one batch may use; larger batches "
                                           "run in chunks (default 0: automatic)"},
                 {"--gpu-engine E[,E]", "blind-rotation engines to run one after the other: "
                                        "cufft, fused, each once (default: both)"},
                 {"--key-switching K[,K]", "automatic, gather, tensor_core (default: automatic: "
                                           "gather for small batches, tensor_core for large); "
                                           "every engine runs with every key switching listed, "
                                           "each named once"}})
     << "  --json PATH       also write the results as JSON to PATH\n"
        "  --help            this text\n"
        "Each repetition is one evaluate() of a batch of N bootstrapped NAND gates on fresh\n"
        "encryptions; batch 1 gives the latency of one gate.\n";
}

struct Options {
  std::string backend = "best";
  std::string params = "tfhe_lib_128";
  std::uint32_t unroll = 1;  // --unroll: the bootstrapping key's form
  std::vector<std::size_t> batches;
  std::size_t reps = 5;
  std::size_t warmup = 1;
  CpuOptions cpu;  // --threads (0: OpenMP default), --task-size, --fft
  CudaOptions gpu;  // --device, --memory-budget-mb, --no-cuda-graphs, --fused-groups, --transfer
  std::vector<GpuEngine> engines;                // --gpu-engine
  std::vector<GpuKeySwitching> key_switchings;  // --key-switching
  // The first CPU option (--threads, ...) and GPU option (--device, ...) given; empty: none.
  std::string cpu_option, gpu_option;
  std::optional<std::string> json_path;  // when --json was given (an empty path is refused)
};

constexpr std::uint64_t max_batch = std::uint64_t{1} << 24;

// Appends `value` (the list item `item` of `option`) to `list`; a value named twice (a run
// the report would hold twice) is refused.
template <class T>
void add_once(std::vector<T>& list, T value, const std::string& option, const std::string& item) {
  if (std::ranges::find(list, value) != list.end()) {
    throw InvalidArgument(option + ": '" + item + "' is named twice; each runs once");
  }
  list.push_back(value);
}

// Returns false when --help was asked for.
bool parse(int argc, char** argv, Options& o) {
  for (apps::CommandLine cl(argc, argv, {"--batch"}); cl.next();) {
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
    } else if (arg == "--batch") {
      for (const std::string& item : apps::split_list(cl.value()))
        o.batches.push_back(apps::parse_count("--batch", item, 1, max_batch));
    } else if (arg == "--reps") {
      o.reps = apps::parse_count(arg, cl.value(), 1, 1000000);
    } else if (arg == "--warmup") {
      o.warmup = apps::parse_count(arg, cl.value(), 0, 1000000);
    } else if (apps::parse_cpu_option(cl, o.cpu)) {
      if (o.cpu_option.empty()) o.cpu_option = arg;
    } else if (arg == "--gpu-engine") {
      for (const std::string& item : apps::split_list(cl.value()))
        add_once(o.engines, apps::parse_gpu_engine(arg, item), arg, item);
      if (o.gpu_option.empty()) o.gpu_option = arg;
    } else if (arg == "--key-switching") {
      for (const std::string& item : apps::split_list(cl.value()))
        add_once(o.key_switchings, apps::parse_gpu_key_switching(arg, item), arg, item);
      if (o.gpu_option.empty()) o.gpu_option = arg;
    } else if (apps::parse_gpu_option(cl, o.gpu)) {
      if (o.gpu_option.empty()) o.gpu_option = arg;
    } else if (arg == "--json") {
      o.json_path = cl.value();
    } else {
      cl.reject();
    }
  }
  o.backend = apps::resolve_backend(o.backend);
  if (o.batches.empty()) {
    o.batches = o.backend == "gpu" ? std::vector<std::size_t>{1, 64, 1024, 16384, 65536}
                                   : std::vector<std::size_t>{1, 16, 64};
  }
  if (o.backend == "gpu" && !o.cpu_option.empty()) {
    throw apps::cpu_options_not_for_gpu(o.cpu_option);
  }
  if (o.backend != "gpu" && !o.gpu_option.empty()) {
    throw apps::gpu_options_not_for(o.gpu_option, o.backend);
  }
  if (o.engines.empty()) o.engines = {GpuEngine::cufft, GpuEngine::fused};
  if (o.key_switchings.empty()) o.key_switchings = {GpuKeySwitching::automatic};
  if (o.cpu.threads != 0 && o.backend == "sequential") {
    throw InvalidArgument("--threads applies to the openmp backend, not to sequential");
  }
  return true;
}

// Medians over the timed repetitions of the GPU's per-phase times, and the transfers.
struct GpuPhases {
  double tables_ms = 0, linear_combination_ms = 0, blind_rotation_ms = 0,
         sample_extraction_ms = 0, key_switching_ms = 0, output_ms = 0, evaluate_ms = 0;
  double upload_inputs_ms = 0;     // both input batches, host to device (the caller's wait)
  double download_outputs_ms = 0;  // the outputs, device to host (the caller's wait)
  double setup_ms = 0;             // workspace creation, in the first (warmup) evaluate
  std::size_t chunks = 0, chunk_capacity = 0;
  std::uint32_t fused_groups = 0, fused_rotations = 0, fused_cluster = 0, fused_lanes = 0,
                fused_cluster_points = 0, fused_cluster_sums = 0, fused_bundle = 0,
                fused_key_stage = 0;
  std::uint32_t key_switching_slices = 0;  // CudaPhaseTimes::key_switching_slices
};

struct BatchResult {
  std::size_t batch = 0;
  std::vector<double> seconds;  // one per timed repetition
  apps::Summary summary;
  std::size_t errors = 0;
  GpuPhases gpu;
};

// The backend's device timings after each call; nothing for a CPU backend.
template <class B>
std::optional<CudaPhaseTimes> device_times(const B& be) {
  if constexpr (std::is_same_v<B, CudaBackend>) return be.last_times();
  else return std::nullopt;
}

template <class B>
BatchResult run_batch(B& be, const SecretKey& secret, Csprng& rng, std::size_t batch,
                      const Options& o) {
  BatchResult r;
  r.batch = batch;
  std::vector<std::uint8_t> a(batch), b(batch);
  for (std::size_t i = 0; i < batch; ++i) {
    a[i] = static_cast<std::uint8_t>(rng.uniform_bit());
    b[i] = static_cast<std::uint8_t>(rng.uniform_bit());
  }
  const LweBatch ea = encrypt_bits(secret, a, rng), eb = encrypt_bits(secret, b, rng);
  const auto A = be.upload(ea);
  if (const auto t = device_times(be)) r.gpu.upload_inputs_ms += t->upload_ms;
  const auto B_ = be.upload(eb);
  if (const auto t = device_times(be)) r.gpu.upload_inputs_ms += t->upload_ms;
  const auto out = be.allocate(batch);
  const std::vector<GateOpOf<B>> ops = {gate::nand(A.bits(), B_.bits(), out.bits())};

  for (std::size_t w = 0; w < o.warmup; ++w) {
    be.evaluate(ops);
    if (const auto t = device_times(be); t && w == 0) r.gpu.setup_ms = t->setup_ms;
  }
  be.reset_stats();
  std::vector<CudaPhaseTimes> phases;
  for (std::size_t rep = 0; rep < o.reps; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    be.evaluate(ops);
    r.seconds.push_back(apps::seconds_since(t0));
    if (const auto t = device_times(be)) phases.push_back(*t);
  }
  const std::uint64_t expected_bootstraps = std::uint64_t{batch} * o.reps;
  if (be.stats().bootstraps != expected_bootstraps) {
    throw Error("the backend counted " + std::to_string(be.stats().bootstraps) +
                " bootstraps for batch " + std::to_string(batch) + " but expected " +
                std::to_string(expected_bootstraps));
  }
  r.summary = apps::summarize(r.seconds);
  if (!phases.empty()) {
    auto median = [&](double CudaPhaseTimes::*field) {
      std::vector<double> v;
      for (const auto& t : phases) v.push_back(t.*field);
      return apps::summarize(v).median;
    };
    r.gpu.tables_ms = median(&CudaPhaseTimes::tables_ms);
    r.gpu.linear_combination_ms = median(&CudaPhaseTimes::linear_combination_ms);
    r.gpu.blind_rotation_ms = median(&CudaPhaseTimes::blind_rotation_ms);
    r.gpu.sample_extraction_ms = median(&CudaPhaseTimes::sample_extraction_ms);
    r.gpu.key_switching_ms = median(&CudaPhaseTimes::key_switching_ms);
    r.gpu.output_ms = median(&CudaPhaseTimes::output_ms);
    r.gpu.evaluate_ms = median(&CudaPhaseTimes::evaluate_ms);
    r.gpu.chunks = phases.back().chunks;
    r.gpu.chunk_capacity = phases.back().chunk_capacity;
    r.gpu.fused_groups = phases.back().fused_groups;
    r.gpu.fused_rotations = phases.back().fused_rotations_per_block;
    r.gpu.fused_cluster = phases.back().fused_cluster_blocks;
    r.gpu.fused_lanes = phases.back().fused_lanes;
    r.gpu.fused_cluster_points = phases.back().fused_cluster_points;
    r.gpu.fused_cluster_sums = phases.back().fused_cluster_sums;
    r.gpu.fused_bundle = phases.back().fused_bundle;
    r.gpu.fused_key_stage = phases.back().fused_key_stage;
    r.gpu.key_switching_slices = phases.back().key_switching_slices;
  }

  // The outputs of the last timed repetition, checked against NAND of the inputs.
  const LweBatch result = be.download(out.bits());
  if (const auto t = device_times(be)) r.gpu.download_outputs_ms = t->download_ms;
  const auto bits = decrypt_bits(secret, result);
  for (std::size_t i = 0; i < batch; ++i) r.errors += bits[i] != static_cast<int>(!(a[i] && b[i]));
  return r;
}

// What the report says about the backend beyond its name.
struct BackendReport {
  std::string name;
  int threads = 1;
  std::string json_fields;  // extra top-level JSON lines, each ending with ",\n"
  std::string key_bytes_json;  // the backend's own entries of "key_bytes", each ",\n"-led
};

// One engine configuration's run on the GPU.
struct GpuRun {
  CudaOptions options;
  double key_upload_s = 0;
  std::size_t device_key_bytes = 0;
  std::vector<BatchResult> results;
};

// The "results" array: one entry per batch size; on the GPU with its phases and roofline
// figures (fp64_peak and key bytes as above; 0 peak: unknown).
void write_results(std::ostream& os, const std::vector<BatchResult>& results, bool gpu,
                   const Parameters& p, std::uint32_t unroll, double fp64_peak,
                   const std::string& indent) {
  using apps::json_number;
  os << indent << "\"results\": [";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const BatchResult& r = results[i];
    const double bs = static_cast<double>(r.batch), rate = bs / r.summary.median;
    os << (i ? ",\n" : "\n") << indent << "  {\"batch\": " << r.batch
       << ", \"reps\": " << r.seconds.size() << ", \"seconds\": [";
    for (std::size_t k = 0; k < r.seconds.size(); ++k) {
      os << (k ? ", " : "") << json_number(r.seconds[k]);
    }
    os << "],\n"
       << indent << "   \"median_s\": " << json_number(r.summary.median)
       << ", \"min_s\": " << json_number(r.summary.min)
       << ", \"max_s\": " << json_number(r.summary.max) << ",\n"
       << indent << "   \"bootstraps_per_s_median\": " << json_number(rate)
       << ", \"bootstraps_per_s_min\": " << json_number(bs / r.summary.max)
       << ", \"bootstraps_per_s_max\": " << json_number(bs / r.summary.min) << ",\n"
       << indent << "   \"ms_per_bootstrap_median\": " << json_number(1e3 * r.summary.median / bs);
    if (gpu) {
      const GpuPhases& g = r.gpu;
      // The blind rotation's own rate: bootstraps per second of its device time.
      const double rotation_rate = g.blind_rotation_ms > 0 ? bs / (g.blind_rotation_ms / 1e3) : 0;
      os << ",\n" << indent << "   \"phases_ms_median\": {\"tables\": " << json_number(g.tables_ms)
         << ", \"linear_combination\": " << json_number(g.linear_combination_ms)
         << ", \"blind_rotation\": " << json_number(g.blind_rotation_ms)
         << ", \"sample_extraction\": " << json_number(g.sample_extraction_ms)
         << ", \"key_switching\": " << json_number(g.key_switching_ms)
         << ", \"output\": " << json_number(g.output_ms)
         << ", \"evaluate_total\": " << json_number(g.evaluate_ms) << "},\n"
         << indent << "   \"transfers_ms\": {\"upload_inputs\": " << json_number(g.upload_inputs_ms)
         << ", \"download_outputs\": " << json_number(g.download_outputs_ms) << "},\n"
         << indent << "   \"first_evaluate_setup_ms\": " << json_number(g.setup_ms)
         << ", \"chunks\": " << g.chunks << ", \"chunk_capacity\": " << g.chunk_capacity
         << ", \"fused_groups\": " << g.fused_groups
         << ", \"fused_rotations_per_block\": " << g.fused_rotations
         << ", \"fused_cluster_blocks\": " << g.fused_cluster
         << ", \"fused_lanes\": " << g.fused_lanes
         << ", \"fused_cluster_points\": " << g.fused_cluster_points
         << ", \"fused_cluster_sums\": " << g.fused_cluster_sums
         << ", \"fused_bundle\": " << g.fused_bundle
         << ", \"fused_key_stage\": " << g.fused_key_stage
         << ", \"key_switching_slices\": " << g.key_switching_slices << ",\n"
         << indent << "   \"nominal_fp64_per_s\": " << json_number(rate * apps::nominal_fp64_per_bootstrap(p, unroll))
         << ", \"fp64_percent_of_peak\": "
         << json_number(fp64_peak > 0 ? 100.0 * rate * apps::nominal_fp64_per_bootstrap(p, unroll) / fp64_peak : 0)
         << ", \"blind_rotation_fp64_percent_of_peak\": "
         << json_number(fp64_peak > 0 ? 100.0 * rotation_rate * apps::nominal_fp64_per_bootstrap(p, unroll) / fp64_peak : 0)
         << ", \"fourier_key_read_bytes_per_s\": "
         << json_number(rate * apps::fourier_key_bytes_per_bootstrap(p, unroll));
    }
    os << ", \"errors\": " << r.errors << "}";
  }
  os << "\n" << indent << "]";
}

void write_json(std::ostream& os, const Options& o, const Parameters& p,
                const BackendReport& backend, const CloudKey& cloud, double keygen_s,
                double backend_key_s, const std::vector<BatchResult>& results,
                const std::vector<GpuRun>& gpu_runs, double fp64_peak) {
  using apps::json_number;
  using apps::json_string;
  const std::size_t bk_bytes = cloud.bootstrapping_key().data().size_bytes();
  const std::size_t ksk_bytes = cloud.key_switching_key().data().size_bytes();
  const bool gpu = o.backend == "gpu";
  // Whether another engine's words equal these (core/bootstrap.hpp; docs/architecture.md).
  const ProductRounding rounding = product_rounding(p, cloud.bootstrapping_key().unroll());
  os << apps::json_report_opening("benchmark", "bench_gates", o.backend, backend.threads)
     << backend.json_fields
     << "  \"warmup\": " << o.warmup << ",\n"
     << "  \"gate\": \"NAND\",\n"
     << "  \"parameters\": " << apps::parameters_json(p, "    ") << ",\n"
     << "  \"bootstrapping_key_unroll\": " << cloud.bootstrapping_key().unroll() << ",\n"
     << "  \"product_rounding_margin\": " << json_number(rounding.margin) << ",\n"
     << "  \"products_round_exactly\": " << (rounding.exact() ? "true" : "false") << ",\n"
     << "  \"key_generation_s\": " << json_number(keygen_s) << ",\n";
  if (!gpu) os << "  \"fourier_key_s\": " << json_number(backend_key_s) << ",\n";
  os << "  \"key_bytes\": {\n"
     << "    \"bootstrapping_key\": " << bk_bytes << ",\n"
     << "    \"key_switching_key\": " << ksk_bytes << ",\n"
     << "    \"cloud_key\": " << cloud.memory_bytes() << backend.key_bytes_json << "\n"
     << "  },\n";
  if (!gpu) {
    write_results(os, results, false, p, o.unroll, 0, "  ");
    os << "\n}\n";
    return;
  }
  os << "  \"nominal_fp64_per_bootstrap\": " << json_number(apps::nominal_fp64_per_bootstrap(p, o.unroll)) << ",\n"
     << "  \"fourier_key_bytes_per_bootstrap\": " << json_number(apps::fourier_key_bytes_per_bootstrap(p, o.unroll))
     << ",\n  \"runs\": [";
  for (std::size_t i = 0; i < gpu_runs.size(); ++i) {
    const GpuRun& run = gpu_runs[i];
    os << (i ? ",\n" : "\n") << "    {\"engine\": " << json_string(gpu_engine_name(run.options.engine))
       << ", \"key_switching\": " << json_string(gpu_key_switching_name(run.options.key_switching))
       << ", \"transfer\": " << json_string(gpu_transfer_name(run.options.transfer))
       << ", \"staging_bytes\": " << run.options.staging_bytes
       << ", \"fused_groups_option\": " << run.options.fused_groups
       << ", \"fused_rotations_option\": " << run.options.fused_rotations_per_block
       << ", \"fused_cluster_option\": " << run.options.fused_cluster_blocks
       << ", \"fused_lanes_option\": " << run.options.fused_lanes
       << ", \"fused_cluster_points_option\": " << run.options.fused_cluster_points
       << ", \"fused_cluster_sums_option\": " << run.options.fused_cluster_sums
       << ", \"fused_bundle_option\": " << run.options.fused_bundle
       << ", \"fused_bundle_overlap_option\": " << run.options.fused_bundle_overlap
       << ", \"fused_key_stage_option\": " << run.options.fused_key_stage
       << ", \"device_key_upload_s\": " << json_number(run.key_upload_s)
       << ", \"device_key_bytes\": " << run.device_key_bytes << ",\n";
    write_results(os, run.results, true, p, o.unroll, fp64_peak, "     ");
    os << "}";
  }
  os << "\n  ]\n}\n";
}

void print_header(const Parameters& params, const std::string& backend_line, double keygen_s,
                  const std::string& key_line, const CloudKey& cloud,
                  const std::string& memory_tail, const Options& o) {
  std::printf("bench_gates  commit %s, %s UTC\n", apps::build_commit().c_str(),
              apps::utc_timestamp().c_str());
  std::printf("machine      %s\n", apps::machine_description().c_str());
  std::printf("parameters   %s (n=%u, k=%u, N=%u, bk %u/%u, ks %u/%u)%s\n", params.name.c_str(),
              params.lwe_dimension, params.glwe_dimension, params.polynomial_size,
              params.bk_base_log, params.bk_level_count, params.ks_base_log,
              params.ks_level_count, params.insecure ? "  -- INSECURE, for tests only" : "");
  std::printf("backend      %s\n", backend_line.c_str());
  std::printf("key gen      %.2f s, %s; %s\n", keygen_s,
              apps::key_form_text(cloud.bootstrapping_key().unroll()).c_str(), key_line.c_str());
  std::printf("key memory   cloud key %.1f MB (bootstrapping %.1f MB + key switching %.1f MB); %s\n",
              cloud.memory_bytes() / 1e6, cloud.bootstrapping_key().data().size_bytes() / 1e6,
              cloud.key_switching_key().data().size_bytes() / 1e6, memory_tail.c_str());
  std::printf("timing       %zu timed repetitions (after %zu warmup) of one evaluate() of a "
              "batch of NAND gates\n\n",
              o.reps, o.warmup);
  std::printf("%7s  %12s  %12s  %12s  %14s  %23s  %9s  %s\n", "batch", "median ms", "min ms",
              "max ms", "bootstraps/s", "(min..max)", "ms/boot", "check");
  std::fflush(stdout);
}

// Runs every batch size; prints a line per size (and the GPU's phases after them).
template <class B>
std::vector<BatchResult> run_all(B& be, const SecretKey& secret, Csprng& rng, const Options& o,
                                 std::size_t& errors) {
  std::vector<BatchResult> results;
  for (const std::size_t batch : o.batches) {
    BatchResult r = run_batch(be, secret, rng, batch, o);
    const double bs = static_cast<double>(batch);
    char spread[64], check[32];
    std::snprintf(spread, sizeof spread, "(%.1f..%.1f)", bs / r.summary.max, bs / r.summary.min);
    if (r.errors == 0) std::snprintf(check, sizeof check, "ok");
    else std::snprintf(check, sizeof check, "%zu WRONG", r.errors);
    std::printf("%7zu  %12.3f  %12.3f  %12.3f  %14.1f  %23s  %9.3f  %s\n", batch,
                1e3 * r.summary.median, 1e3 * r.summary.min, 1e3 * r.summary.max,
                bs / r.summary.median, spread, 1e3 * r.summary.median / bs, check);
    std::fflush(stdout);
    errors += r.errors;
    results.push_back(std::move(r));
  }
  if constexpr (std::is_same_v<B, CudaBackend>) {
    std::printf("\nGPU phases, medians in ms (CUDA events): lincomb = free gates and gate inputs, "
                "extract = sample extraction,\nup = both input batches to the device, down = the "
                "outputs back (the caller's wait, host clock); setup = plans and graph, first\n"
                "evaluate only; shape = the fused engine's thread groups per rotation x rotations "
                "per block,\nor cC: a cluster of C blocks per rotation (wC: 4 points per thread; a suffix e: "
                "every block sums its column; b: the group steps on bundled keys), or lP: P rotations per "
                "thread;\na suffix s: the key rows through the TMA's stage\n");
    std::printf("%7s  %9s  %10s  %9s  %9s  %9s  %9s  %10s  %9s  %9s  %9s  %6s  %7s\n", "batch",
                "tables", "lincomb", "blindrot", "extract", "keyswitch", "output", "evaluate",
                "up", "down", "setup", "chunks", "shape");
    for (const BatchResult& r : results) {
      const GpuPhases& g = r.gpu;
      char shape[32] = "-";
      if (g.fused_lanes > 1) {  // s: key rows through the TMA's stage
        std::snprintf(shape, sizeof shape, "l%u%s", g.fused_lanes, g.fused_key_stage ? "s" : "");
      } else if (g.fused_cluster > 1) {  // wC: a wide cluster (4 points per thread)
        std::snprintf(shape, sizeof shape, "%c%u%s%s", g.fused_cluster_points == 4 ? 'w' : 'c',
                      g.fused_cluster, g.fused_cluster_sums == 2 ? "e" : "",
                      g.fused_bundle == 0 ? "" : g.fused_bundle == 1 ? "b" : "bo");
      } else if (g.fused_groups != 0) {
        std::snprintf(shape, sizeof shape, "%ux%u%s", g.fused_groups, g.fused_rotations,
                      g.fused_key_stage ? "s" : "");
      }
      std::printf("%7zu  %9.3f  %10.3f  %9.3f  %9.3f  %9.3f  %9.3f  %10.3f  %9.3f  %9.3f  %9.1f  %6zu  %7s\n",
                  r.batch, g.tables_ms, g.linear_combination_ms, g.blind_rotation_ms,
                  g.sample_extraction_ms, g.key_switching_ms, g.output_ms, g.evaluate_ms,
                  g.upload_inputs_ms, g.download_outputs_ms, g.setup_ms, g.chunks, shape);
    }
    std::fflush(stdout);
  }
  return results;
}

}  // namespace

int main(int argc, char** argv) try {
  Options o;
  if (!parse(argc, argv, o)) return 0;
  const Parameters params = apps::parameters_named("--params", o.params);
  // Every engine's options, before the keys are made and before the first engine's run.
  if (o.backend == "gpu") apps::check_gpu_options(o.gpu, params, o.unroll, o.engines);
  // A batch too large for this machine's memory is refused now, not killed by the system
  // later. Per gate a CPU backend holds about 8 LWE samples (both inputs on the client and on
  // the backend, the output, the bootstrap's own); the GPU's host side the two inputs and
  // the decrypted output's download.
  const double lwe_bytes = 4.0 * (params.lwe_dimension + 1);
  const double samples_per_gate = o.backend == "gpu" ? 3 : 8;
  for (const std::size_t batch : o.batches)
    apps::check_host_memory("--batch " + std::to_string(batch),
                            static_cast<double>(batch) * samples_per_gate * lwe_bytes,
                            "use smaller batches");
  // Checked before the run, so that a bad path fails at once and not after the benchmark;
  // written whole at the end (an earlier report stays as it was if the run fails).
  apps::OutputFile json;
  if (o.json_path) json = apps::OutputFile("--json", *o.json_path);  // given but empty: refused

  // Client: fresh keys from the OS-seeded CSPRNG.
  auto t0 = std::chrono::steady_clock::now();
  Csprng rng;
  const SecretKey secret(params, rng);
  auto cloud = std::make_shared<const CloudKey>(CloudKey::generate(secret, rng, o.unroll));
  const double keygen_s = apps::seconds_since(t0);

  std::vector<BatchResult> results;
  std::vector<GpuRun> gpu_runs;
  double fp64_peak = 0;
  std::size_t errors = 0;
  BackendReport report;
  double backend_key_s = 0;
  if (o.backend == "gpu") {
    // Every engine and key switching asked for, one after the other, on the same keys.
    for (const GpuEngine engine : o.engines) {
      for (const GpuKeySwitching key_switching : o.key_switchings) {
        GpuRun run;
        run.options = o.gpu;
        run.options.engine = engine;
        run.options.key_switching = key_switching;
        // Server: the key goes to the device once (the engine's Fourier BK made there).
        t0 = std::chrono::steady_clock::now();
        CudaBackend be(cloud, run.options);
        run.key_upload_s = apps::seconds_since(t0);
        run.device_key_bytes = be.device_key_bytes();
        const gpu::DeviceInfo& d = be.device();
        if (gpu_runs.empty()) {
          fp64_peak = gpu::peak_fp64_flops(d);
          char device_line[320];
          std::snprintf(device_line, sizeof device_line,
                        "%s, device %d (%s, %.1f GiB, compute capability %d.%d, %d SMs, "
                        "FP64 peak %.1f TFLOP/s, memory %.0f GB/s), CUDA graphs %s, memory "
                        "budget %s",
                        be.name().c_str(), d.index, d.name.c_str(),
                        static_cast<double>(d.total_memory_bytes) / (1 << 30),
                        d.compute_capability_major, d.compute_capability_minor, d.multiprocessors,
                        fp64_peak / 1e12, gpu::peak_memory_bytes_per_s(d) / 1e9,
                        o.gpu.use_cuda_graphs ? "on" : "off",
                        o.gpu.memory_budget_bytes == 0
                            ? "automatic"
                            : (std::to_string(o.gpu.memory_budget_bytes >> 20) + " MiB").c_str());
          char key_line[128], memory_tail[128];
          std::snprintf(key_line, sizeof key_line, "key upload and device Fourier key %.2f s",
                        run.key_upload_s);
          std::snprintf(memory_tail, sizeof memory_tail, "on the device %.1f MB",
                        be.device_key_bytes() / 1e6);
          print_header(params, device_line, keygen_s, key_line, *cloud, memory_tail, o);
          std::ostringstream fields;
          fields << "  \"device\": " << apps::device_json(d) << ",\n"
                 << "  \"cuda_graphs\": " << (o.gpu.use_cuda_graphs ? "true" : "false") << ",\n"
                 << "  \"memory_budget_bytes\": " << o.gpu.memory_budget_bytes << ",\n"
                 << "  \"fused_max_registers\": " << fused_max_registers() << ",\n";
          report = BackendReport{be.name(), 1, fields.str(), ""};
        }
        // The description names pinned transfers (and their staging); direct ones are said here.
        std::printf("\n%s%s: device key %.1f MB, made in %.2f s\n",
                    apps::gpu_engine_description(run.options).c_str(),
                    run.options.transfer == GpuTransfer::direct ? ", direct transfers" : "",
                    be.device_key_bytes() / 1e6, run.key_upload_s);
        run.results = run_all(be, secret, rng, o, errors);
        if (fp64_peak > 0) {
          std::printf("nominal FP64 work %.1f MFLOP per bootstrap: ", apps::nominal_fp64_per_bootstrap(params, o.unroll) / 1e6);
          for (const BatchResult& r : run.results) {
            std::printf("%s%zu: %.2f%%", &r == &run.results.front() ? "" : ", ", r.batch,
                        100.0 * r.batch / r.summary.median * apps::nominal_fp64_per_bootstrap(params, o.unroll) /
                            fp64_peak);
          }
          std::printf(" of the FP64 peak\n");
        }
        gpu_runs.push_back(std::move(run));
      }
    }
  } else {
    // Server: the Fourier-domain key, made once, and the backend.
    t0 = std::chrono::steady_clock::now();
    auto ctx = std::make_shared<const CpuKeyContext>(cloud, o.cpu.fft);
    backend_key_s = apps::seconds_since(t0);
    const std::unique_ptr<CpuBackend> be = apps::make_cpu_backend(o.backend, ctx, o.cpu);
    char key_line[64], memory_tail[64];
    std::snprintf(key_line, sizeof key_line, "Fourier key %.2f s", backend_key_s);
    std::snprintf(memory_tail, sizeof memory_tail, "with Fourier BK %.1f MB",
                  ctx->memory_bytes() / 1e6);
    // SimdFft's vector width (doubles): the build's register width, 8, 4 or 2.
    const auto* simd = dynamic_cast<const SimdFft*>(&ctx->fft());
    const std::string width = simd ? " (" + std::to_string(simd->width()) + " doubles)" : "";
    print_header(params,
                 be->name() + ", fft " + ctx->fft().name() + width + ", task size " +
                     std::to_string(o.cpu.task_size),
                 keygen_s, key_line, *cloud, memory_tail, o);
    std::ostringstream fields;
    fields << "  \"fft\": " << apps::json_string(ctx->fft().name()) << ",\n";
    if (simd) fields << "  \"simd_width\": " << simd->width() << ",\n";
    fields << "  \"task_size\": " << o.cpu.task_size << ",\n";
    report = BackendReport{be->name(), be->threads(), fields.str(),
                           ",\n    \"fourier_bootstrapping_key\": " +
                               std::to_string(ctx->fourier_key().memory_bytes()) +
                               ",\n    \"backend_key_context\": " +
                               std::to_string(ctx->memory_bytes())};
    results = run_all(*be, secret, rng, o, errors);
  }

  if (json.wanted()) {
    write_json(json.stream(), o, params, report, *cloud, keygen_s, backend_key_s, results,
               gpu_runs, fp64_peak);
    json.commit();
    std::printf("\nJSON written to %s\n", apps::terminal_text(json.path()).c_str());
  }
  if (errors != 0) {
    std::fprintf(stderr, "bench_gates: %zu gate outputs decrypted WRONG\n", errors);
    return 1;
  }
  return 0;
} catch (const std::exception& e) {
  std::cerr << "bench_gates: " << torusgate::apps::terminal_text(e.what()) << "\n";
  return 2;
}
