// The fragments that choose the backend at run time (README.md's and docs/architecture.md's
// with_backend) and docs/gpu.md's CudaBackend fragment, compiled as written
// (tests/docs/snippets/*.inc) with their results checked. tests_docs runs them on the CPU
// kinds, and on the GPU where this build and machine can; tests_docs_emulated
// (TORUSGATE_DOCS_EMULATED) runs them on the CUDA emulator, where the GPU must be usable.
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "test_support.hpp"
#include "torusgate/backends/backends.hpp"
#include "torusgate/circuits/circuits.hpp"
#include "torusgate/gpu/cuda_backend.hpp"

using namespace torusgate;
using torusgate::test::catch_seed;
using torusgate::test::keys_for;
using torusgate::test::seeded_rng;

namespace {

// The backend names the fragments run with here: the CPU kinds, and "gpu" where it can run.
std::vector<std::string> names_here() {
#if defined(TORUSGATE_DOCS_EMULATED)
  REQUIRE(gpu_unavailable_reason().empty());
  return {"gpu"};
#else
  std::vector<std::string> names = {"sequential", "openmp", "best"};
  if (gpu_unavailable_reason().empty()) names.emplace_back("gpu");
  return names;
#endif
}

std::vector<std::uint64_t> readme_with_backend(const std::string& name,
                                               const std::vector<std::uint64_t>& xs) {
  using namespace torusgate::circuits;
  const test::TestKeys& keys = keys_for(toy_insecure());
  const SecretKey& secret = keys.secret;
  const std::shared_ptr<const CloudKey> cloud = keys.cloud;
  Csprng rng = seeded_rng(catch_seed(0xd0c5'0004));
#include "snippets/readme_with_backend.inc"
  return r;
}

std::vector<std::uint64_t> architecture_with_backend(const std::string& name,
                                                     const std::vector<std::uint64_t>& xs,
                                                     const std::vector<std::uint64_t>& ys) {
  const test::TestKeys& keys = keys_for(toy_insecure());
  const SecretKey& secret = keys.secret;
  const std::shared_ptr<const CloudKey> cloud = keys.cloud;
  Csprng rng = seeded_rng(catch_seed(0xd0c5'0005));
#include "snippets/architecture_with_backend.inc"
  return sums;
}

}  // namespace

TEST_CASE("README.md Backends: with_backend doubles xs on every backend here", "[docs]") {
  const std::vector<std::uint64_t> xs = {3, 200, 128, 255};
  for (const std::string& name : names_here()) {
    INFO(name);
    CHECK(readme_with_backend(name, xs) == std::vector<std::uint64_t>{6, 144, 0, 254});
  }
}

TEST_CASE("docs/architecture.md: with_backend adds xs and ys on every backend here", "[docs]") {
  const std::vector<std::uint64_t> xs = {3, 200, 128, 255}, ys = {5, 100, 128, 1};
  for (const std::string& name : names_here()) {
    INFO(name);
    CHECK(architecture_with_backend(name, xs, ys) ==
          std::vector<std::uint64_t>{8, 44, 0, 0});
  }
}

TEST_CASE("docs/gpu.md: a NAND batch on the CUDA backend", "[docs]") {
#if !defined(TORUSGATE_DOCS_EMULATED)
  if (!gpu_unavailable_reason().empty()) {
    WARN("docs/gpu.md's fragment compiled, not run: " + gpu_unavailable_reason());
    return;
  }
#endif
  const test::TestKeys& keys = keys_for(toy_insecure());
  const SecretKey& secret = keys.secret;
  Csprng rng = seeded_rng(catch_seed(0xd0c5'0006));
  const std::vector<std::uint8_t> a = {0, 1, 0, 1, 1}, b = {0, 0, 1, 1, 1};
  {
#include "snippets/gpu_md.inc"
    CHECK(bits == std::vector<std::uint8_t>{1, 1, 1, 0, 0});
  }
}
