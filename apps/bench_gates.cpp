// Gate-bootstrapping benchmark: latency (batch 1) and throughput (bootstraps per second) of
// batches of bootstrapped NAND gates on a CPU backend, with median/min/max over repetitions,
// key sizes in memory, and an optional JSON report (machine, commit, backend, parameters).
// The outputs of the timed batches are decrypted and checked afterwards.
//   bench_gates [--backend B] [--params NAME] [--batch N[,N...]]... [--reps R] [--warmup W]
//               [--threads T] [--fft auto|fftw|simd|portable] [--task-size S] [--json PATH]
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "app_support.hpp"
#include "torusgate/core/keys.hpp"
#include "torusgate/cpu/cpu_backend.hpp"

using namespace torusgate;

namespace {

void usage(std::ostream& os) {
  os << "usage: bench_gates [options]\n"
        "  --backend B       sequential | openmp | best (default best; gpu: not implemented yet)\n"
        "  --params NAME     tfhe_lib_128 (default), tfhe_lib_80, default_128, toy_INSECURE,\n"
        "                    toy_k2_INSECURE\n"
        "  --batch N[,N...]  gates per evaluate() call; repeatable (default 1,16,64)\n"
        "  --reps R          timed repetitions per batch size (default 5)\n"
        "  --warmup W        untimed repetitions before them (default 1)\n"
        "  --threads T       OpenMP threads (default: the OpenMP default)\n"
        "  --fft E           auto (default: simd for N >= 128, else fftw) | fftw | simd | portable\n"
        "  --task-size S     blind rotations per task, 2..4096 (default "
     << CpuOptions{}.task_size << ")\n"
        "  --json PATH       also write the results as JSON to PATH\n"
        "  --help            this text\n"
        "Each repetition is one evaluate() of a batch of N bootstrapped NAND gates on fresh\n"
        "encryptions; batch 1 gives the latency of one gate.\n";
}

struct Options {
  std::string backend = "best";
  std::string params = "tfhe_lib_128";
  std::vector<std::size_t> batches;
  std::size_t reps = 5;
  std::size_t warmup = 1;
  CpuOptions cpu;  // --threads (0: OpenMP default), --task-size, --fft
  std::string json_path;
};

constexpr std::uint64_t max_batch = std::uint64_t{1} << 24;

// Returns false when --help was asked for.
bool parse(int argc, char** argv, Options& o) {
  for (apps::CommandLine cl(argc, argv); cl.next();) {
    const std::string& arg = cl.arg();
    if (cl.is_help()) {
      usage(std::cout);
      return false;
    } else if (arg == "--backend") {
      o.backend = cl.value();
    } else if (arg == "--params") {
      o.params = cl.value();
    } else if (arg == "--batch") {
      for (const std::string& item : apps::split_list(cl.value()))
        o.batches.push_back(apps::parse_count("--batch", item, 1, max_batch));
    } else if (arg == "--reps") {
      o.reps = apps::parse_count(arg, cl.value(), 1, 1000000);
    } else if (arg == "--warmup") {
      o.warmup = apps::parse_count(arg, cl.value(), 0, 1000000);
    } else if (apps::parse_cpu_option(cl, o.cpu)) {
    } else if (arg == "--json") {
      o.json_path = cl.value();
    } else {
      cl.reject();
    }
  }
  if (o.batches.empty()) o.batches = {1, 16, 64};
  o.backend = apps::resolve_backend(o.backend);
  if (o.backend == "gpu") {
    // "best" found a GPU, but the CUDA gate backend does not exist yet.
    std::cerr << "bench_gates: note: the GPU gate backend is not implemented yet; using openmp\n";
    o.backend = "openmp";
  }
  if (o.cpu.threads != 0 && o.backend == "sequential") {
    throw InvalidArgument("--threads applies to the openmp backend, not to sequential");
  }
  return true;
}

struct BatchResult {
  std::size_t batch = 0;
  std::vector<double> seconds;  // one per timed repetition
  apps::Summary summary;
  std::size_t errors = 0;
};

BatchResult run_batch(CpuBackend& be, const SecretKey& secret, Csprng& rng, std::size_t batch,
                      const Options& o) {
  BatchResult r;
  r.batch = batch;
  std::vector<std::uint8_t> a(batch), b(batch);
  for (std::size_t i = 0; i < batch; ++i) {
    a[i] = static_cast<std::uint8_t>(rng.uniform_bit());
    b[i] = static_cast<std::uint8_t>(rng.uniform_bit());
  }
  const auto A = be.upload(encrypt_bits(secret, a, rng));
  const auto B = be.upload(encrypt_bits(secret, b, rng));
  const auto out = be.allocate(batch);
  const std::vector<GateOp<CpuStorage>> ops = {gate::nand(A.bits(), B.bits(), out.bits())};

  for (std::size_t w = 0; w < o.warmup; ++w) be.evaluate(ops);
  be.reset_stats();
  for (std::size_t rep = 0; rep < o.reps; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    be.evaluate(ops);
    r.seconds.push_back(apps::seconds_since(t0));
  }
  const std::uint64_t expected_bootstraps = std::uint64_t{batch} * o.reps;
  if (be.stats().bootstraps != expected_bootstraps) {
    throw Error("the backend counted " + std::to_string(be.stats().bootstraps) +
                " bootstraps for batch " + std::to_string(batch) + " but expected " +
                std::to_string(expected_bootstraps));
  }
  r.summary = apps::summarize(r.seconds);

  // The outputs of the last timed repetition, checked against NAND of the inputs.
  const auto bits = decrypt_bits(secret, be.download(out.bits()));
  for (std::size_t i = 0; i < batch; ++i) r.errors += bits[i] != static_cast<int>(!(a[i] && b[i]));
  return r;
}

void write_json(std::ostream& os, const Options& o, const Parameters& p, const CpuBackend& be,
                const CloudKey& cloud, const CpuKeyContext& ctx, double keygen_s,
                double fourier_s, const std::vector<BatchResult>& results) {
  using apps::json_number;
  using apps::json_string;
  const std::size_t bk_bytes = cloud.bootstrapping_key().data().size_bytes();
  const std::size_t ksk_bytes = cloud.key_switching_key().data().size_bytes();
  os << apps::json_report_opening("benchmark", "bench_gates", o.backend, be.threads())
     << "  \"fft\": " << json_string(ctx.fft().name()) << ",\n"
     << "  \"task_size\": " << o.cpu.task_size << ",\n"
     << "  \"warmup\": " << o.warmup << ",\n"
     << "  \"gate\": \"NAND\",\n"
     << "  \"parameters\": " << apps::parameters_json(p, "    ") << ",\n"
     << "  \"key_generation_s\": " << json_number(keygen_s) << ",\n"
     << "  \"fourier_key_s\": " << json_number(fourier_s) << ",\n"
     << "  \"key_bytes\": {\n"
     << "    \"bootstrapping_key\": " << bk_bytes << ",\n"
     << "    \"key_switching_key\": " << ksk_bytes << ",\n"
     << "    \"cloud_key\": " << cloud.memory_bytes() << ",\n"
     << "    \"fourier_bootstrapping_key\": " << ctx.fourier_key().memory_bytes() << ",\n"
     << "    \"backend_key_context\": " << ctx.memory_bytes() << "\n"
     << "  },\n"
     << "  \"results\": [";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const BatchResult& r = results[i];
    const double bs = static_cast<double>(r.batch);
    os << (i ? ",\n" : "\n") << "    {\"batch\": " << r.batch << ", \"reps\": " << r.seconds.size()
       << ", \"seconds\": [";
    for (std::size_t k = 0; k < r.seconds.size(); ++k) {
      os << (k ? ", " : "") << json_number(r.seconds[k]);
    }
    os << "],\n"
       << "     \"median_s\": " << json_number(r.summary.median)
       << ", \"min_s\": " << json_number(r.summary.min)
       << ", \"max_s\": " << json_number(r.summary.max) << ",\n"
       << "     \"bootstraps_per_s_median\": " << json_number(bs / r.summary.median)
       << ", \"bootstraps_per_s_min\": " << json_number(bs / r.summary.max)
       << ", \"bootstraps_per_s_max\": " << json_number(bs / r.summary.min) << ",\n"
       << "     \"ms_per_bootstrap_median\": " << json_number(1e3 * r.summary.median / bs)
       << ", \"errors\": " << r.errors << "}";
  }
  os << "\n  ]\n}\n";
}

}  // namespace

int main(int argc, char** argv) try {
  Options o;
  if (!parse(argc, argv, o)) return 0;
  const Parameters params = parameters_by_name(o.params);
  // Opened before the run, so that a bad path fails at once and not after the benchmark.
  std::ofstream json;
  if (!o.json_path.empty()) {
    json.open(o.json_path);
    if (!json) throw SystemError("cannot open --json file '" + o.json_path + "' for writing");
  }

  // Client: fresh keys from the OS-seeded CSPRNG.
  auto t0 = std::chrono::steady_clock::now();
  Csprng rng;
  const SecretKey secret(params, rng);
  auto cloud = std::make_shared<const CloudKey>(CloudKey::generate(secret, rng));
  const double keygen_s = apps::seconds_since(t0);

  // Server: the Fourier-domain key, made once, and the backend.
  t0 = std::chrono::steady_clock::now();
  auto ctx = std::make_shared<const CpuKeyContext>(cloud, o.cpu.fft);
  const double fourier_s = apps::seconds_since(t0);
  const std::unique_ptr<CpuBackend> be = apps::make_cpu_backend(o.backend, ctx, o.cpu);

  std::printf("bench_gates  commit %s, %s UTC\n", apps::build_commit().c_str(),
              apps::utc_timestamp().c_str());
  std::printf("machine      %s\n", apps::machine_description().c_str());
  std::printf("parameters   %s (n=%u, k=%u, N=%u, bk %u/%u, ks %u/%u)%s\n", params.name.c_str(),
              params.lwe_dimension, params.glwe_dimension, params.polynomial_size,
              params.bk_base_log, params.bk_level_count, params.ks_base_log,
              params.ks_level_count, params.insecure ? "  -- INSECURE, for tests only" : "");
  std::printf("backend      %s, fft %s, task size %zu\n", be->name().c_str(),
              ctx->fft().name().c_str(), o.cpu.task_size);
  std::printf("key gen      %.2f s; Fourier key %.2f s\n", keygen_s, fourier_s);
  std::printf("key memory   cloud key %.1f MB (bootstrapping %.1f MB + key switching %.1f MB); "
              "with Fourier BK %.1f MB\n",
              cloud->memory_bytes() / 1e6,
              cloud->bootstrapping_key().data().size_bytes() / 1e6,
              cloud->key_switching_key().data().size_bytes() / 1e6, ctx->memory_bytes() / 1e6);
  std::printf("timing       %zu timed repetitions (after %zu warmup) of one evaluate() of a "
              "batch of NAND gates\n\n",
              o.reps, o.warmup);
  std::printf("%7s  %12s  %12s  %12s  %14s  %23s  %9s  %s\n", "batch", "median ms", "min ms",
              "max ms", "bootstraps/s", "(min..max)", "ms/boot", "check");
  std::fflush(stdout);

  std::vector<BatchResult> results;
  std::size_t errors = 0;
  for (const std::size_t batch : o.batches) {
    BatchResult r = run_batch(*be, secret, rng, batch, o);
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

  if (!o.json_path.empty()) {
    write_json(json, o, params, *be, *cloud, *ctx, keygen_s, fourier_s, results);
    json.close();
    if (!json) throw SystemError("writing --json file '" + o.json_path + "' failed");
    std::printf("\nJSON written to %s\n", o.json_path.c_str());
  }
  if (errors != 0) {
    std::fprintf(stderr, "bench_gates: %zu gate outputs decrypted WRONG\n", errors);
    return 1;
  }
  return 0;
} catch (const std::exception& e) {
  std::cerr << "bench_gates: " << e.what() << "\n";
  return 2;
}
