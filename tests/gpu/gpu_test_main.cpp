// Catch2 main of tests_gpu: where no CUDA device can be used (no GPU, no driver, or a build
// without CUDA) it prints why and exits 77, which ctest reports as skipped (SKIP_RETURN_CODE);
// otherwise (or to list the tests) it runs them as any Catch2 main does.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>

#include "torusgate/gpu/device.hpp"

int main(int argc, char** argv) {
  // Listing the tests and --help need no device.
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--list", 0) == 0 || arg == "-l" || arg == "-h" || arg == "--help") {
      return Catch::Session().run(argc, argv);
    }
  }
  const auto devices = torusgate::gpu::devices();
  if (devices.empty()) {
    std::printf("no CUDA device: skipped (%s)\n",
                torusgate::gpu::built_with_cuda() ? "no usable device or driver"
                                                  : "this build has no CUDA backend");
    return 77;
  }
  for (const auto& d : devices) {
    std::printf("CUDA device %d: %s, %.1f GiB, compute capability %d.%d\n", d.index,
                d.name.c_str(), static_cast<double>(d.total_memory_bytes) / (1 << 30),
                d.compute_capability_major, d.compute_capability_minor);
  }
  return Catch::Session().run(argc, argv);
}
