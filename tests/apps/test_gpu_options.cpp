// The GPU options the programs share (apps/app_support.hpp): --transfer and --staging-mb
// parsed into CudaOptions, their refusals, their help lines, the description that names pinned
// transfers, and the message for GPU options given with a CPU backend; the fused engine's
// launch-shape options.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "app_support.hpp"
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

  const std::string refusal = apps::gpu_options_not_for("openmp").what();
  CHECK_THAT(refusal, Catch::Matchers::Contains("--key-switching, --transfer and --staging-mb "
                                                "apply to the gpu backend, not to openmp"));
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
  CHECK_THAT(std::string(apps::gpu_options_not_for("openmp").what()),
             Catch::Matchers::Contains("--fused-cluster"));
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
  CHECK_THAT(std::string(apps::gpu_options_not_for("openmp").what()),
             Catch::Matchers::Contains("--fused-cluster, --fused-lanes, --fused-cluster-points, "
                                       "--fused-cluster-sums, --fused-bundle, "
                                       "--fused-bundle-overlap, --fused-key-stage, "
                                       "--key-switching"));
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
