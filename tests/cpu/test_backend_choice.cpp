// The backend chosen at run time (torusgate/backends/backends.hpp): names to kinds and the
// refusals, "best" and "gpu" as this machine allows them, and with_backend running one generic
// lambda on each CPU kind, checked against integer arithmetic. The GPU kind's run is in
// tests/gpu/test_cuda_backend.cpp (on a device, and on the CUDA emulator).
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "test_support.hpp"
#include "torusgate/backends/backends.hpp"
#include "torusgate/circuits/circuits.hpp"

using namespace torusgate;
using torusgate::test::catch_seed;
using torusgate::test::keys_for;
using torusgate::test::seeded_rng;

TEST_CASE("backend names map to kinds, and other names are refused with the list", "[backends]") {
  for (const BackendKind kind : {BackendKind::sequential, BackendKind::openmp}) {
    CHECK(backend_kind(to_string(kind)) == kind);
  }
  CHECK(to_string(BackendKind::gpu) == "gpu");
  for (const char* name : {"", "cpu", "GPU", "best ", "openmp(2)", "plaintext"}) {
    INFO(name);
    REQUIRE_INVALID_ARGUMENT(backend_kind(name), std::string("backend_kind: unknown backend '") +
                                                     name +
                                                     "'; expected best, sequential, openmp or gpu");
  }
}

TEST_CASE("best and gpu follow what this machine can run", "[backends]") {
  const std::string reason = gpu_unavailable_reason();
  if (!gpu::built_with_cuda()) {
#if defined(TORUSGATE_CUDA_DISABLED)
    CHECK(reason == "this build has no CUDA backend (configured with -DTORUSGATE_ENABLE_CUDA=OFF)");
#else
    CHECK(reason ==
          "this build has no CUDA backend (no CUDA compiler was found at configure "
          "time)");
#endif
  } else if (gpu::devices().empty()) {
    CHECK(reason.starts_with("no CUDA device is available ("));
  } else {
    CHECK(reason.empty());
  }
  if (reason.empty()) {
    CHECK(best_backend_kind() == BackendKind::gpu);
    CHECK(backend_kind("best") == BackendKind::gpu);
    CHECK(backend_kind("gpu") == BackendKind::gpu);
  } else {
    CHECK(best_backend_kind() == BackendKind::openmp);
    CHECK(backend_kind("best") == BackendKind::openmp);
    REQUIRE_INVALID_ARGUMENT(backend_kind("gpu"), "backend_kind: backend 'gpu': " + reason);
    // with_backend refuses before it makes a backend or calls the function.
    bool called = false;
    REQUIRE_INVALID_ARGUMENT(with_backend(BackendKind::gpu, keys_for(toy_insecure()).cloud, {},
                                          [&](auto&) { called = true; }),
                             "with_backend: backend 'gpu': " + reason);
    CHECK_FALSE(called);
  }
}

TEST_CASE("with_backend runs one generic lambda on each CPU kind", "[backends]") {
  const auto& keys = keys_for(toy_insecure());
  Csprng rng = seeded_rng(catch_seed(0xbac1));
  const std::vector<std::int64_t> xs = {3, -7, 12, -1, 100, -128}, ys = {5, 6, -4, -1, 90, 1};
  // The computation, written once over the backend contract.
  const auto add_and_compare = [&](auto& be) {
    using B = std::decay_t<decltype(be)>;
    using Array = circuits::IntArray<B>;
    const circuits::IntType s8{8, true};
    const Array x = Array::encrypt_signed(be, keys.secret, xs, s8, rng);
    const Array y = Array::encrypt_signed(be, keys.secret, ys, s8, rng);
    circuits::Program<B> prog(be);
    circuits::Circuit& c = prog.circuit();
    const circuits::Expr ex = prog.input(x), ey = prog.input(y);
    auto out = prog.run({circuits::add(c, ex, ey), circuits::less(c, ex, ey)});
    return std::make_pair(be.name(), std::make_pair(out[0].decrypt_signed(be, keys.secret),
                                                    out[1].decrypt(be, keys.secret)));
  };
  BackendOptions options;
  options.cpu.threads = 2;
  for (const BackendKind kind : {BackendKind::sequential, BackendKind::openmp}) {
    INFO(to_string(kind));
    const auto [name, results] = with_backend(kind, keys.cloud, options, add_and_compare);
    CHECK(name == (kind == BackendKind::sequential ? "sequential" : "openmp(2)"));
    const auto& [sums, less_than] = results;
    REQUIRE(sums.size() == xs.size());
    REQUIRE(less_than.size() == xs.size());
    for (std::size_t i = 0; i < xs.size(); ++i) {
      CHECK(sums[i] == static_cast<std::int8_t>(static_cast<std::uint8_t>(xs[i] + ys[i])));
      CHECK(less_than[i] == static_cast<std::uint64_t>(xs[i] < ys[i]));
    }
  }
  // A lambda that returns nothing (the options left out), and the backend lives until it
  // returns.
  std::string seen;
  with_backend(BackendKind::sequential, keys.cloud, [&](auto& be) { seen = be.name(); });
  CHECK(seen == "sequential");
}

TEST_CASE("with_backend refuses a null key and a kind out of range", "[backends]") {
  const auto never = [](auto&) { FAIL("the function should not be called"); };
  REQUIRE_INVALID_ARGUMENT(with_backend(BackendKind::openmp, nullptr, {}, never),
                           "with_backend: the cloud key is null");
  REQUIRE_INVALID_ARGUMENT(
      with_backend(static_cast<BackendKind>(7), keys_for(toy_insecure()).cloud, {}, never),
      "with_backend: BackendKind 7 is not sequential, openmp or gpu");
}
