// The GPU options the programs share (apps/app_support.hpp): --transfer and --staging-mb
// parsed into CudaOptions, their refusals, their help lines, the description that names pinned
// transfers, and the message for GPU options given with a CPU backend; the fused engine's
// launch-shape options.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "app_support.hpp"
#include "torusgate/gpu/device.hpp"
#include "test_support.hpp"

using namespace torusgate;

namespace {

// Runs parse_gpu_option over `args` (every one must be a GPU option) into `gpu`.
void parse_gpu_args(std::vector<std::string> args, CudaOptions& gpu) {
  args.insert(args.begin(), "program");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  for (apps::CommandLine cl(static_cast<int>(argv.size()), argv.data()); cl.next();) {
    if (!apps::parse_gpu_option(cl, gpu)) FAIL("not a GPU option: " << cl.arg());
  }
}

}  // namespace

TEST_CASE("--transfer and --staging-mb set the GPU transfers", "[apps]") {
  CudaOptions gpu;
  REQUIRE(gpu.transfer == GpuTransfer::direct);
  parse_gpu_args({"--transfer", "pinned", "--staging-mb", "16"}, gpu);
  CHECK(gpu.transfer == GpuTransfer::pinned);
  CHECK(gpu.staging_bytes == std::size_t{16} << 20);
  parse_gpu_args({"--transfer", "direct", "--staging-mb", "1024"}, gpu);
  CHECK(gpu.transfer == GpuTransfer::direct);
  CHECK(gpu.staging_bytes == std::size_t{1} << 30);
  parse_gpu_args({"--staging-mb", "1"}, gpu);
  CHECK(gpu.staging_bytes == std::size_t{1} << 20);

  CHECK(apps::parse_gpu_transfer("--transfer", "pinned") == GpuTransfer::pinned);
  CHECK(apps::parse_gpu_transfer("--transfer", "direct") == GpuTransfer::direct);
  REQUIRE_INVALID_ARGUMENT(apps::parse_gpu_transfer("--transfer", "bogus"),
                           "--transfer: unknown transfer mode 'bogus'; expected direct or pinned");
  REQUIRE_INVALID_ARGUMENT(parse_gpu_args({"--transfer", "Pinned"}, gpu),
                           "unknown transfer mode 'Pinned'");
  REQUIRE_INVALID_ARGUMENT(parse_gpu_args({"--staging-mb", "0"}, gpu),
                           "--staging-mb: 0 is out of range; expected an integer in 1..1024");
  REQUIRE_INVALID_ARGUMENT(parse_gpu_args({"--staging-mb", "1025"}, gpu), "1..1024");
  REQUIRE_INVALID_ARGUMENT(parse_gpu_args({"--staging-mb", "8MB"}, gpu), "is not a number");
  REQUIRE_INVALID_ARGUMENT(parse_gpu_args({"--transfer"}, gpu), "--transfer needs a value");
}

TEST_CASE("the GPU options' help, description and CPU-backend refusal name the transfers",
          "[apps]") {
  const std::string help = apps::gpu_options_help(22);
  CHECK_THAT(help, Catch::Matchers::Contains(
                       "\n  --transfer T        direct (default) | pinned: through page-locked"));
  CHECK_THAT(help, Catch::Matchers::Contains("\n  --staging-mb MB     pinned: each of the two "
                                             "staging buffers, 1..1024 MiB (default 8)\n"));

  CudaOptions gpu;
  CHECK(gpu.engine == GpuEngine::fused);  // the defaults
  CHECK(gpu.key_switching == GpuKeySwitching::automatic);
  CHECK(apps::gpu_engine_description(gpu) ==
        "fused blind rotation (launch shape chosen per batch), automatic key switching");
  parse_gpu_args({"--key-switching", "gather"}, gpu);
  CHECK(gpu.key_switching == GpuKeySwitching::gather);
  parse_gpu_args({"--key-switching", "automatic"}, gpu);
  CHECK(gpu.key_switching == GpuKeySwitching::automatic);
  REQUIRE_INVALID_ARGUMENT(parse_gpu_args({"--key-switching", "auto"}, gpu),
                           "unknown key switching 'auto'; expected automatic, gather or tensor_core");
  gpu.key_switching = GpuKeySwitching::gather;
  gpu.engine = GpuEngine::cufft;
  CHECK(apps::gpu_engine_description(gpu) == "cuFFT-batched blind rotation, gather key switching");
  gpu.transfer = GpuTransfer::pinned;
  CHECK(apps::gpu_engine_description(gpu) ==
        "cuFFT-batched blind rotation, gather key switching, pinned transfers (8 MiB staging)");
  gpu.staging_bytes = std::size_t{64} << 10;
  CHECK_THAT(apps::gpu_engine_description(gpu),
             Catch::Matchers::EndsWith(", pinned transfers (64 KiB staging)"));
  gpu.staging_bytes = (std::size_t{64} << 10) + 4;
  CHECK_THAT(apps::gpu_engine_description(gpu),
             Catch::Matchers::EndsWith(", pinned transfers (65540 bytes staging)"));

  // The advice depends on whether a GPU could run here (tests_apps has no emulated device).
  const std::string gpu_refusal = apps::gpu_options_not_for("--staging-mb", "openmp").what();
  const std::string applies =
      "--staging-mb is a GPU option: it applies to --backend gpu, not to openmp";
  if (!gpu::built_with_cuda()) {
    CHECK(gpu_refusal == applies + ", and this build has no CUDA backend; drop it");
  } else if (gpu::devices().empty()) {
    CHECK(gpu_refusal == applies + ", and this machine has no usable CUDA device; drop it");
  } else {
    CHECK(gpu_refusal == applies + "; drop it or run on the gpu backend");
  }
  CHECK(std::string(apps::cpu_options_not_for_gpu("--fft").what()) ==
        "--fft is a CPU option: it applies to --backend openmp or sequential, not to gpu; drop "
        "it or run on a CPU backend");
  CHECK(std::string(apps::cpu_options_not_for_gpu("--threads").what()) ==
        "--threads is a CPU option: it applies to --backend openmp, not to gpu; drop it or run "
        "on a CPU backend");
  // Several engines: a refusal is prefixed with its engine unless it starts by naming it.
  Parameters k3 = toy_insecure();
  k3.glwe_dimension = 3;
  REQUIRE_INVALID_ARGUMENT(
      apps::check_gpu_options(CudaOptions{}, k3, 1, {GpuEngine::cufft, GpuEngine::fused}),
      "--gpu-engine fused cannot run parameter set");
  try {
    apps::check_gpu_options(CudaOptions{}, k3, 1, {GpuEngine::cufft, GpuEngine::fused});
  } catch (const InvalidArgument& e) {
    CHECK_THAT(e.what(), Catch::Matchers::StartsWith("--gpu-engine fused cannot run"));
  }
  CudaOptions fours;
  fours.fused_bundle = 1;
  REQUIRE_INVALID_ARGUMENT(
      apps::check_gpu_options(fours, tfhe_lib_128(), 4, {GpuEngine::cufft, GpuEngine::fused}),
      "with --gpu-engine fused: a bootstrapping key in fours (unroll 4) runs on");
}

TEST_CASE("the fused engine's launch-shape options: parsed, bounded and described", "[apps]") {
  CudaOptions gpu;
  gpu.key_switching = GpuKeySwitching::gather;
  parse_gpu_args({"--gpu-engine", "fused", "--fused-cluster", "6"}, gpu);
  CHECK(gpu.engine == GpuEngine::fused);
  CHECK(gpu.fused_cluster_blocks == 6);
  CHECK(apps::gpu_engine_description(gpu) ==
        "fused blind rotation (clusters of 6 blocks per rotation), gather key switching");
  gpu.fused_cluster_blocks = 1;
  CHECK(apps::gpu_engine_description(gpu) ==
        "fused blind rotation (launch shape chosen per batch, no clusters), gather key switching");
  gpu.fused_cluster_blocks = 0;
  CHECK(apps::gpu_engine_description(gpu) ==
        "fused blind rotation (launch shape chosen per batch), gather key switching");
  parse_gpu_args({"--fused-groups", "2", "--fused-rotations", "4"}, gpu);
  CHECK(apps::gpu_engine_description(gpu) ==
        "fused blind rotation (2 groups x 4 rotations per block), gather key switching");
  REQUIRE_INVALID_ARGUMENT(parse_gpu_args({"--fused-cluster", "9"}, gpu),
                           "--fused-cluster: 9 is out of range; expected an integer in 0..8");
  REQUIRE_INVALID_ARGUMENT(parse_gpu_args({"--fused-cluster"}, gpu),
                           "--fused-cluster needs a value");
  CHECK_THAT(apps::gpu_options_help(22),
             Catch::Matchers::Contains("\n  --fused-cluster C   fused engine: blocks per thread "
                                       "block cluster and rotation, k+1 or (k+1)l (0: "
                                       "automatic, 1: none)\n"));
  // Rotations per thread.
  parse_gpu_args({"--fused-lanes", "2"}, gpu);
  CHECK(gpu.fused_lanes == 2);
  CHECK(apps::gpu_engine_description(gpu) ==
        "fused blind rotation (2 rotations per thread), gather key switching");
  REQUIRE_INVALID_ARGUMENT(parse_gpu_args({"--fused-lanes", "3"}, gpu),
                           "--fused-lanes: 3 is out of range; expected an integer in 0..2");
  CHECK_THAT(apps::gpu_options_help(22),
             Catch::Matchers::Contains("\n  --fused-lanes P     fused engine: rotations per thread, 1 "
                                       "or 2 (k = 1; 0: automatic)\n"));
  // Points per thread of a cluster's transforms (wide clusters: 4).
  parse_gpu_args({"--fused-cluster", "6", "--fused-lanes", "0", "--fused-cluster-points", "4"}, gpu);
  CHECK(gpu.fused_cluster_points == 4);
  CHECK(apps::gpu_engine_description(gpu) ==
        "fused blind rotation (clusters of 6 blocks per rotation, 4 points per thread), gather "
        "key switching");
  parse_gpu_args({"--fused-cluster", "0", "--fused-groups", "0", "--fused-rotations", "0"}, gpu);
  CHECK(apps::gpu_engine_description(gpu) ==
        "fused blind rotation (launch shape chosen per batch, clusters of 4 points per thread), "
        "gather key switching");
  REQUIRE_INVALID_ARGUMENT(parse_gpu_args({"--fused-cluster-points", "9"}, gpu),
                           "--fused-cluster-points: 9 is out of range; expected an integer in 0..8");
  CHECK_THAT(apps::gpu_options_help(22),
             Catch::Matchers::Contains("\n  --fused-cluster-points Q fused engine: points per "
                                       "thread in a cluster, 8 or 4 (wide: twice the threads; "
                                       "N = 512..2048; 0: automatic)\n"));
  // Who sums a cluster's products (2: every block its own column).
  parse_gpu_args({"--fused-cluster-sums", "2"}, gpu);
  CHECK(gpu.fused_cluster_sums == 2);
  CHECK(apps::gpu_engine_description(gpu) ==
        "fused blind rotation (launch shape chosen per batch, clusters of 4 points per thread "
        "with every block summing its column), gather key switching");
  parse_gpu_args({"--fused-cluster", "6", "--fused-cluster-points", "8"}, gpu);
  CHECK(apps::gpu_engine_description(gpu) ==
        "fused blind rotation (clusters of 6 blocks per rotation, every block summing its "
        "column), gather key switching");
  REQUIRE_INVALID_ARGUMENT(parse_gpu_args({"--fused-cluster-sums", "3"}, gpu),
                           "--fused-cluster-sums: 3 is out of range; expected an integer in 0..2");
  CHECK_THAT(apps::gpu_options_help(22),
             Catch::Matchers::Contains("\n  --fused-cluster-sums S fused engine: who sums a "
                                       "cluster's products, 1: each column's owner, 2: every "
                                       "block its own column ((k+1)l blocks; 0: automatic)\n"));
  // The bundling options, each 0..2 (2: always, 1: never): bundled keys for an unrolled key's
  // group steps in clusters, then the rotation started while they are made.
  auto check_option = [&](const std::vector<std::string>& on, std::uint32_t CudaOptions::*field,
                          const std::string& description, const std::string& help) {
    const std::string name = on[on.size() - 2];
    parse_gpu_args(on, gpu);
    CHECK(gpu.*field == 2);
    CHECK(apps::gpu_engine_description(gpu) == description);
    parse_gpu_args({name, "1"}, gpu);
    CHECK(gpu.*field == 1);
    REQUIRE_INVALID_ARGUMENT(parse_gpu_args({name, "3"}, gpu),
                             name + ": 3 is out of range; expected an integer in 0..2");
    CHECK_THAT(apps::gpu_options_help(22), Catch::Matchers::Contains(help));
  };
  check_option({"--fused-bundle", "2"}, &CudaOptions::fused_bundle,
               "fused blind rotation (clusters of 6 blocks per rotation, every block summing its "
               "column), group steps on bundled keys in clusters, gather key switching",
               "\n  --fused-bundle B    fused engine, key in pairs or threes: 2: each group "
               "step's GGSW bundled before a cluster's rotation, 1: never (0: automatic, 2)\n");
  check_option({"--fused-bundle", "2", "--fused-bundle-overlap", "2"},
               &CudaOptions::fused_bundle_overlap,
               "fused blind rotation (clusters of 6 blocks per rotation, every block summing its "
               "column), group steps on bundled keys in clusters, rotations started while the "
               "keys are bundled, gather key switching",
               "\n  --fused-bundle-overlap O fused engine, bundled keys: 2: the rotation starts "
               "while they are made, 1: after (0: automatic: keys in fours whose clusters take at "
               "most half the device)\n");
  // The key stage (docs/gpu.md section 6.34), 0..2 (2: always, 1: never).
  check_option({"--fused-key-stage", "2"}, &CudaOptions::fused_key_stage,
               "fused blind rotation (clusters of 6 blocks per rotation, every block summing its "
               "column), group steps on bundled keys in clusters, key rows through the TMA's "
               "stage, gather key switching",
               "\n  --fused-key-stage K fused engine, standard key: 2: one-group blocks (1x1, two "
               "lanes) read each row's key through a stage the TMA fills (compute capability "
               "9.0), 1: never (0: automatic, 1)\n");
}

namespace {

// The message of the InvalidArgument apps::check_gpu_options throws for `args` (GPU options)
// with `params` and a key of form `unroll`; fails the test when it throws none.
std::string refusal(std::vector<std::string> args, const Parameters& params,
                    std::uint32_t unroll = 1) {
  CudaOptions gpu;
  parse_gpu_args(std::move(args), gpu);
  try {
    apps::check_gpu_options(gpu, params, unroll);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  FAIL("no refusal");
  return {};
}

}  // namespace

TEST_CASE("the programs' refusals of GPU options name the flags, not CudaOptions' fields",
          "[apps]") {
  const Parameters p = tfhe_lib_128();
  CHECK(refusal({"--fused-groups", "3"}, p) ==
        "--fused-groups 3 but parameter set 'tfhe_lib_128' takes 0 (automatic), 1, 2 (k+1) or "
        "6 ((k+1)l)");
  CHECK(refusal({"--fused-cluster", "2", "--fused-groups", "2"}, p) ==
        "--fused-cluster 2 runs one group and one rotation per block; --fused-groups 2 and "
        "--fused-rotations 0 must be 0 or 1 with it");
  CHECK(refusal({"--gpu-engine", "cufft", "--fused-key-stage", "2"}, p) ==
        "--fused-key-stage 2 stages the fused engine's key rows for the standard key, but "
        "--gpu-engine cufft; it needs --gpu-engine fused and unroll 1 (0 or 1 otherwise)");
  Parameters k3 = toy_insecure();  // k = 3: the cuFFT engine's only
  k3.glwe_dimension = 3;
  k3.name = "k3_INSECURE";
  CHECK_THAT(refusal({"--gpu-engine", "fused"}, k3),
             Catch::Matchers::StartsWith(
                 "--gpu-engine fused cannot run parameter set 'k3_INSECURE' (k=3, N=256): "));
  CHECK_THAT(refusal({"--gpu-engine", "fused"}, k3),
             Catch::Matchers::EndsWith("; use --gpu-engine cufft"));
  CHECK_THAT(refusal({"--fused-bundle", "1"}, p, 4),
             Catch::Matchers::Contains(
                 "but --fused-bundle 1, --fused-cluster-points 0, --fused-cluster 0, "
                 "--fused-groups 0, --fused-rotations 0 and --fused-lanes 0 (--fused-bundle 0 or "
                 "2, --fused-cluster 0 or a cluster size, the others 0 or 1, "
                 "--fused-cluster-points 0 or 8; or --gpu-engine cufft)"));
  // Sizes in the flag's unit: MiB, the need rounded up (keys in threes: bundled keys).
  const std::string budget = refusal({"--memory-budget-mb", "1"}, p, 3);
  CHECK_THAT(budget, Catch::Matchers::StartsWith(
                         "--memory-budget-mb 1 but parameter set 'tfhe_lib_128' needs at least "));
  CHECK_THAT(budget, Catch::Matchers::Matches(".* needs at least [0-9]+ MiB \\(two blind "
                                              "rotations of [0-9]+ bytes each, their bundled "
                                              "keys included\\); 0 chooses "
                                              "automatically"));
  // Every refusal the flags can reach: no field names, no "CudaOptions".
  const std::vector<std::pair<std::vector<std::string>, std::uint32_t>> bad = {
      {{"--fused-groups", "5"}, 1},
      {{"--fused-rotations", "2"}, 2},
      {{"--fused-cluster", "3"}, 1},
      {{"--fused-lanes", "2", "--fused-rotations", "2"}, 1},
      {{"--fused-cluster-points", "3"}, 1},
      {{"--fused-cluster-points", "4", "--fused-cluster", "1"}, 1},
      {{"--fused-cluster-sums", "2", "--fused-cluster", "2"}, 1},
      {{"--fused-bundle", "2"}, 1},
      {{"--fused-bundle", "2", "--fused-cluster", "1"}, 2},
      {{"--fused-bundle-overlap", "2"}, 1},
      {{"--fused-bundle-overlap", "2", "--fused-bundle", "1"}, 2},
      {{"--fused-key-stage", "2"}, 2},
      {{"--fused-key-stage", "2", "--fused-groups", "2"}, 1},
      {{"--memory-budget-mb", "1"}, 3},
  };
  for (const auto& [args, unroll] : bad) {
    const std::string text = refusal(args, p, unroll);
    INFO(args[0] << " " << args[1] << ", unroll " << unroll << ": " << text);
    CHECK(text.starts_with(args[0] + " "));  // the options' refusal, not the device's
    CHECK(text.find("CudaOptions") == std::string::npos);
    CHECK(text.find("fused_") == std::string::npos);
    CHECK(text.find("engine=") == std::string::npos);
    CHECK(text.find("_bytes") == std::string::npos);
  }
  // The library's own callers still see the fields.
  CudaOptions gpu;
  gpu.fused_groups = 3;
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(gpu, p),
                           "CudaOptions: fused_groups=3 but parameter set 'tfhe_lib_128' takes");
}

TEST_CASE("set_gpu_option takes every option of gpu_option_texts as parse_gpu_option does",
          "[apps]") {
  const std::vector<apps::GpuOptionText> texts = apps::gpu_option_texts();
  REQUIRE(texts.size() == 16);
  CHECK(texts.front().flag == "--device");
  CHECK(texts.front().value == "D");
  // A value each option takes, other than its default.
  const std::vector<std::pair<std::string, std::string>> values = {
      {"--device", "1"},          {"--memory-budget-mb", "64"}, {"--no-cuda-graphs", ""},
      {"--gpu-engine", "cufft"},  {"--key-switching", "gather"}, {"--fused-groups", "2"},
      {"--fused-rotations", "2"}, {"--fused-cluster", "2"},      {"--fused-lanes", "2"},
      {"--fused-cluster-points", "4"}, {"--fused-cluster-sums", "2"}, {"--fused-bundle", "1"},
      {"--fused-bundle-overlap", "1"}, {"--fused-key-stage", "2"}, {"--transfer", "pinned"},
      {"--staging-mb", "2"}};
  for (const apps::GpuOptionText& text : texts) {
    INFO(text.flag);
    CHECK(text.flag.starts_with("--"));
    CHECK_FALSE(text.help.empty());
    const auto value = std::find_if(values.begin(), values.end(),
                                    [&](const auto& v) { return v.first == text.flag; });
    REQUIRE(value != values.end());
    CHECK(text.value.empty() == value->second.empty());
    CudaOptions parsed, set;
    std::vector<std::string> args = {text.flag};
    if (!value->second.empty()) args.push_back(value->second);
    parse_gpu_args(args, parsed);
    CHECK(apps::set_gpu_option(text.flag, value->second, set));
    CHECK(parsed == set);
    CHECK_FALSE(parsed == CudaOptions{});
  }
  CudaOptions gpu;
  CHECK_FALSE(apps::set_gpu_option("--threads", "2", gpu));
  REQUIRE_INVALID_ARGUMENT(apps::set_gpu_option("--fused-lanes", "3", gpu),
                           "--fused-lanes: 3 is out of range");
}
