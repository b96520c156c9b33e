// The C++ fragments of README.md and docs/*.md that run on the CPU, compiled as written
// (tests/docs/snippets/*.inc, which docs_snippets keeps equal to the markdown) inside test
// cases that set up what each fragment assumes, with the results their comments claim
// checked. The toy parameter set stands in for tfhe_lib_128 (a macro here, not an edit of
// the fragment). The with_backend fragments and docs/gpu.md's are in test_docs_backends.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "test_support.hpp"
#include "torusgate/circuits/circuits.hpp"
#include "torusgate/core/keys.hpp"
#include "torusgate/cpu/cpu_backend.hpp"
#include "torusgate/fpga_fft/negacyclic.hpp"

using namespace torusgate;
using torusgate::test::catch_seed;
using torusgate::test::keys_for;
using torusgate::test::seeded_rng;

TEST_CASE("README.md Encrypted integers: the sums are {8, -1, 8, -2}", "[docs]") {
  const test::TestKeys& keys = keys_for(toy_insecure());
  const SecretKey& secret = keys.secret;
  OpenMpBackend be(keys.cloud);
  Csprng rng = seeded_rng(catch_seed(0xd0c5'0001));
  {
#include "snippets/readme_integers.inc"
    CHECK(sums == std::vector<std::int64_t>{8, -1, 8, -2});
    CHECK(out[1].decrypt_signed(be, secret) == std::vector<std::int64_t>{15, -42, -48, 1});
    // less (not claimed by the README): its {1, 1, 0, 0} literal is what GCC 12.2's SLP
    // vectorizer built as {1, 1, 1, 1} here (CMakeLists.txt: -fno-tree-slp-vectorize).
    CHECK(out[2].decrypt(be, secret) == std::vector<std::uint64_t>{1, 1, 0, 0});
    // "the three operations cost as many batches as the deepest one"
    std::size_t deepest = 0;
    for (const Expr& e : {add(c, ex, ey), multiply(c, ex, ey), less(c, ex, ey)}) {
      deepest = std::max(deepest, compile(c, std::array{e}).cost.batches);
    }
    CHECK(prog.last_schedule().cost.batches == deepest);
  }
}

#define tfhe_lib_128 toy_insecure  // docs/circuits.md's fragment names the secure set
TEST_CASE("docs/circuits.md: compute and a Program give the values and cost it claims",
          "[docs]") {
#include "snippets/circuits_md.inc"
  CHECK(secret.parameters() == toy_insecure());
  CHECK(s.decrypt(be, secret) == std::vector<std::uint64_t>{1234, 40002, 0});
  REQUIRE(out.size() == 3);
  CHECK(out[0].decrypt(be, secret) == std::vector<std::uint64_t>{37392, 14464, 65535});
  CHECK(out[1].decrypt(be, secret) == std::vector<std::uint64_t>{0, 1, 0});
  CHECK(out[2].decrypt(be, secret) == std::vector<std::uint64_t>{1000, 40000, 65535});
  CHECK(cost.bootstraps == 1515);
  CHECK(cost.bootstraps == 3 * (416 + 57 + 32));
  CHECK(cost.depth == 12);
  CHECK(cost.batches == 12);
}
#undef tfhe_lib_128

TEST_CASE("docs/fpga_fft.md: an OpenMP backend bootstraps through the fixed-point model",
          "[docs]") {
  const test::TestKeys& keys = keys_for(toy_insecure());
  const Parameters& params = keys.params;
  const std::shared_ptr<const CloudKey> cloud_key = keys.cloud;
  Csprng rng = seeded_rng(catch_seed(0xd0c5'0003));
  {
#include "snippets/fpga_fft_md.inc"
    // "every gate now bootstraps through the model"
    CHECK(&be.context().fft() == engine.get());
    CHECK(engine->custom_arithmetic());
    const std::vector<std::uint8_t> a = {0, 1, 0, 1}, b = {0, 0, 1, 1};
    auto A = encrypt(be, keys.secret, a, rng);
    auto B = encrypt(be, keys.secret, b, rng);
    auto out = be.allocate(a.size());
    be.evaluate({gate::nand(A.bits(), B.bits(), out.bits())});
    CHECK(decrypt(be, keys.secret, out.bits()) == std::vector<std::uint8_t>{1, 1, 1, 0});
  }
}
