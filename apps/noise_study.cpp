// noise_study: the noise and failure-rate measurement of bootstrapped gates. For each
// parameter set and gate kind it measures, with the secret key, the output phase error and
// the decided phase error of gates whose inputs are outputs of earlier bootstrapped gates,
// compares their variances with the model of core/noise.hpp, turns both into failure
// probabilities and counts the failures (apps/noise_measure.hpp, apps/noise_report.hpp).
//   noise_study [--params LIST] [--gates N] [--kinds LIST] [--json PATH] [--markdown PATH] ...
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>

#include <unistd.h>

#include "app_support.hpp"
#include "noise_measure.hpp"
#include "noise_report.hpp"
#include "printable.hpp"
#include "progress.hpp"
#include "torusgate/core/error.hpp"
#include "torusgate/core/keys.hpp"
#include "torusgate/gpu/cuda_backend.hpp"

using namespace torusgate;
using namespace torusgate::apps;

namespace {

// Measures on `be` (holding only the cloud key) and fills `set`.
template <class B>
void measure(const NoiseStudyOptions& o, B& be, const SecretKey& secret, Csprng& rng,
             SetReport& set) {
  set.backend = be.name();
  const Parameters& params = set.params;
  std::printf("\n%s%s: n=%u k=%u N=%u, keys in %.1f s; %llu gates over %zu kinds on %s "
              "(%d thread%s, fft %s)\n",
              params.name.c_str(), params.insecure ? " (INSECURE, tests only)" : "",
              params.lwe_dimension, params.glwe_dimension, params.polynomial_size, set.keygen_s,
              static_cast<unsigned long long>(o.gates), o.kinds.size(), set.backend.c_str(),
              set.threads, set.threads == 1 ? "" : "s", set.fft.c_str());
  std::fflush(stdout);
  StudyConfig config;
  config.gates = o.kinds;
  config.total_gates = o.gates;
  config.round_size = o.round_size;
  config.unroll = o.unroll;
  ProgressBar bar(params.name, "gates", o.progress);
  set.result = run_noise_study(be, secret, rng, config,
                               [&](std::uint64_t done, std::uint64_t total) { bar.update(done, total); });
  bar.finish();
  set.key_model = noise_model_for_key(set.params, o.unroll, set.result.key_weights);
}

SetReport run_set(const NoiseStudyOptions& o, const Parameters& params) {
  SetReport set;
  set.params = params;
  set.model = noise_model(params, o.unroll);
  // Client: keys. Deterministic only with --seed (INSECURE, reproducible tests).
  const auto t0 = std::chrono::steady_clock::now();
  Csprng rng = o.seed ? Csprng::deterministic(*o.seed ^ params.fingerprint(),
                                              testing::insecure_deterministic)
                      : Csprng();
  const SecretKey secret(params, rng);
  auto cloud = std::make_shared<const CloudKey>(CloudKey::generate(secret, rng, o.unroll));
  // Server: the backend holds only the cloud key.
  if (o.backend == "gpu") {
    CudaBackend be(cloud, o.gpu);
    set.keygen_s = seconds_since(t0);
    set.threads = 1;
    set.fft = "cuFFT";
    measure(o, be, secret, rng, set);
  } else {
    auto ctx = std::make_shared<const CpuKeyContext>(cloud, o.cpu.fft);
    set.keygen_s = seconds_since(t0);
    const std::unique_ptr<CpuBackend> be = make_cpu_backend(o.backend, ctx, o.cpu);
    set.threads = be->threads();
    set.fft = ctx->fft().name();
    measure(o, *be, secret, rng, set);
  }
  return set;
}

}  // namespace

int main(int argc, char** argv) {
  NoiseStudyOptions o;
  // Both paths checked before the run (neither file touched until the end), each written
  // whole when the run is done.
  OutputFile json, markdown;
  try {
    o = parse_noise_study_options(argc, argv);
    if (o.help) {
      noise_study_usage(std::cout);
      return 0;
    }
    const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
    if (pages > 0 && page_size > 0) {
      check_sample_memory(o, static_cast<std::uint64_t>(pages) *
                                 static_cast<std::uint64_t>(page_size));
    }
    // Given but empty: refused by OutputFile, before the run.
    if (o.json_path) json = OutputFile("--json", *o.json_path);
    if (o.markdown_path) markdown = OutputFile("--markdown", *o.markdown_path);
  } catch (const InvalidArgument& e) {
    std::cerr << "noise_study: " << torusgate::apps::terminal_text(e.what()) << "\n";
    return 2;
  }
  try {
    std::printf("noise_study  commit %s, %s UTC\nmachine      %s\n", build_commit().c_str(),
                utc_timestamp().c_str(), machine_description().c_str());
    if (o.seed) {
      std::printf("randomness   INSECURE deterministic seed %llu (reproducible tests only)\n",
                  static_cast<unsigned long long>(*o.seed));
    }
    std::printf("key          %s\n", apps::key_form_text(o.unroll).c_str());
    std::vector<SetReport> sets;
    std::uint64_t unexplained = 0;
    for (const std::string& name : o.params) {
      sets.push_back(run_set(o, parameters_by_name(name)));
      const SetReport& set = sets.back();
      std::printf("%s", noise_study_table(set).c_str());
      std::printf("%llu bootstraps in %.1f s (%.0f per second)\n",
                  static_cast<unsigned long long>(set.result.bootstraps), set.result.seconds,
                  set.result.bootstraps / set.result.seconds);
      std::fflush(stdout);
      for (const auto& g : set.result.gates) unexplained += g.unexplained;
    }
    if (json.wanted()) {
      json.stream() << noise_study_json(o, sets);
      json.commit();
      std::printf("\nJSON written to %s\n", terminal_text(json.path()).c_str());
    }
    if (markdown.wanted()) {
      markdown.stream() << noise_study_markdown(o, sets);
      markdown.commit();
      std::printf("markdown written to %s\n", terminal_text(markdown.path()).c_str());
    }
    if (unexplained != 0) {
      std::fprintf(stderr,
                   "noise_study: %llu outputs are further from what their decided phases imply "
                   "than noise explains: the measurement or the backend is inconsistent\n",
                   static_cast<unsigned long long>(unexplained));
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "noise_study: " << torusgate::apps::terminal_text(e.what()) << "\n";
    return 1;
  }
}
