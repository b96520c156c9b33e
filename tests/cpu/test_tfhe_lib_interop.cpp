// Interoperability with the TFHE library v1.1 on its own vectors (../shared/testdata/
// tfhe-lib-v1.1, skipped with a warning when absent): our cloud key made from its secret keys
// evaluates every library gate on its ciphertexts to plain.txt's bits on the OpenMP backend,
// and our outputs exported in its ciphertext format read back to the same bits.
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "test_files.hpp"
#include "tfhe_lib_testdata.hpp"
#include "test_support.hpp"
#include "torusgate/core/backend.hpp"
#include "torusgate/core/keys.hpp"
#include "torusgate/core/tfhe_lib_format.hpp"
#include "torusgate/cpu/cpu_backend.hpp"

using namespace torusgate;
using torusgate::test::seeded_rng;

using torusgate::test::data_dir;
using torusgate::test::have_data;
using torusgate::test::PlainBits;
using torusgate::test::read_file;
using torusgate::test::read_plain;
using torusgate::test::TempDir;
using torusgate::test::write_file;

namespace {

namespace fs = std::filesystem;
namespace tl = torusgate::tfhe_lib;


using Bits = BitSpan<CpuStorage>;

// The library's gate `name` on (a, b, c) into `out`; mux is a ? b : c, not is !a.
GateOp<CpuStorage> library_gate(const std::string& name, Bits a, Bits b, Bits c, Bits out) {
  if (name == "and") return gate::and_(a, b, out);
  if (name == "nand") return gate::nand(a, b, out);
  if (name == "or") return gate::or_(a, b, out);
  if (name == "nor") return gate::nor(a, b, out);
  if (name == "xor") return gate::xor_(a, b, out);
  if (name == "xnor") return gate::xnor(a, b, out);
  if (name == "andny") return gate::andny(a, b, out);
  if (name == "andyn") return gate::andyn(a, b, out);
  if (name == "orny") return gate::orny(a, b, out);
  if (name == "oryn") return gate::oryn(a, b, out);
  if (name == "not") return gate::not_(a, out);
  if (name == "mux") return gate::mux(a, b, c, out);
  FAIL("plain.txt names an unknown gate '" << name << "'");
  return {};
}

}  // namespace

TEST_CASE(
    "tfhe_lib: our gates on the library's ciphertexts, with a cloud key made from its "
    "secret keys, give plain.txt's bits and export in its format",
    "[tfhe_lib]") {
  if (!have_data()) return;
  const PlainBits plain = read_plain();
  REQUIRE(plain.outputs.size() == 12);
  const SecretKey sk = tl::load_secret_key(data_dir / "lwe.key", data_dir / "tgsw.key");
  const Parameters& p = sk.parameters();
  REQUIRE(p == tfhe_lib_128());

  const std::uint64_t seed = 0x7f4e11b0;
  INFO("cloud key seed " << seed);
  Csprng rng = seeded_rng(seed);
  auto cloud = std::make_shared<const CloudKey>(CloudKey::generate(sk, rng));
  OpenMpBackend be(cloud);

  const auto a = be.upload(tl::load_gate_ciphertexts(data_dir / "a.ctxt", p));
  const auto b = be.upload(tl::load_gate_ciphertexts(data_dir / "b.ctxt", p));
  const auto c = be.upload(tl::load_gate_ciphertexts(data_dir / "c.ctxt", p));
  REQUIRE(a.size() == 64);
  REQUIRE(b.size() == 64);
  REQUIRE(c.size() == 64);
  auto out = be.allocate(plain.outputs.size() * 64);

  // Every library gate in one mixed batch.
  std::vector<GateOp<CpuStorage>> batch;
  for (std::size_t g = 0; g < plain.outputs.size(); ++g) {
    batch.push_back(
        library_gate(plain.outputs[g], a.bits(), b.bits(), c.bits(), out.bits(g * 64, 64)));
  }
  be.evaluate(batch);
  CHECK(be.stats().batches == 1);
  CHECK(be.stats().gates == 12 * 64);

  TempDir dir;
  for (std::size_t g = 0; g < plain.outputs.size(); ++g) {
    const std::string& name = plain.outputs[g];
    INFO("gate " << name);
    const LweBatch ours = be.download(out.bits(g * 64, 64));
    CHECK(decrypt_bits(sk, ours) == plain.expected.at(name));

    // Exported in the library's format and read back: the same samples, the same bits.
    const fs::path path = dir / ("out_" + name + ".ctxt");
    tl::save_gate_ciphertexts(path, p, ours);
    CHECK(fs::file_size(path) == 64 * 2536);
    std::vector<double> variances;
    const LweBatch back = tl::load_gate_ciphertexts(path, p, &variances);
    CHECK(back == ours);
    CHECK(variances == std::vector<double>(64, p.lwe_noise_stddev * p.lwe_noise_stddev));
    CHECK(decrypt_bits(sk, back) == plain.expected.at(name));
  }
}
