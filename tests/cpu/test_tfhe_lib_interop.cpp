// Interoperability with the TFHE library v1.1 on its own vectors (../shared/testdata/
// tfhe-lib-v1.1, skipped with a warning when absent): our cloud key made from its secret keys
// evaluates every library gate on its ciphertexts to plain.txt's bits on the OpenMP backend,
// our outputs exported in its ciphertext format read back to the same bits, and the same cloud
// key written as the library's cloud keyset (and secret keyset) and read back does too.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
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

// Every gate of plain.txt on the library's a, b and c ciphertexts, in one mixed batch on
// `be`: 64 outputs per gate, gate g at bits [64 g, 64 g + 64) of the returned buffer.
BitBuffer<CpuStorage> library_gates_on_vectors(OpenMpBackend& be, const Parameters& p,
                                               const PlainBits& plain) {
  const auto a = be.upload(tl::load_gate_ciphertexts(data_dir / "a.ctxt", p));
  const auto b = be.upload(tl::load_gate_ciphertexts(data_dir / "b.ctxt", p));
  const auto c = be.upload(tl::load_gate_ciphertexts(data_dir / "c.ctxt", p));
  REQUIRE(a.size() == 64);
  REQUIRE(b.size() == 64);
  REQUIRE(c.size() == 64);
  auto out = be.allocate(plain.outputs.size() * 64);
  std::vector<GateOp<CpuStorage>> batch;
  for (std::size_t g = 0; g < plain.outputs.size(); ++g) {
    batch.push_back(
        library_gate(plain.outputs[g], a.bits(), b.bits(), c.bits(), out.bits(g * 64, 64)));
  }
  be.evaluate(batch);
  return out;
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

  // Every library gate in one mixed batch.
  const auto out = library_gates_on_vectors(be, p, plain);
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

TEST_CASE(
    "tfhe_lib: a cloud key from the library's secret keys, through its cloud keyset format, "
    "evaluates every gate on its ciphertexts to plain.txt's bits",
    "[tfhe_lib]") {
  if (!have_data()) return;
  const PlainBits plain = read_plain();
  const SecretKey sk = tl::load_secret_key(data_dir / "lwe.key", data_dir / "tgsw.key");
  const Parameters& p = sk.parameters();
  const std::uint64_t seed = 0x5e7c10d;
  INFO("cloud key seed " << seed);
  Csprng rng = seeded_rng(seed);
  const CloudKey made = CloudKey::generate(sk, rng);

  TempDir dir;
  tl::save_cloud_keyset(dir / "cloud.key", made);
  CHECK(fs::file_size(dir / "cloud.key") == tl::cloud_keyset_bytes(p));
  CHECK(tl::identify_file(dir / "cloud.key") == tl::FileKind::CloudKeySet);
  tl::CloudKeySetFile file = tl::load_cloud_keyset(dir / "cloud.key");
  CHECK(file.key.parameters() == tfhe_lib_128());
  CHECK(file.ks_variance == std::ldexp(1.0, -30));  // what v1.1 stores: alpha^2
  CHECK(file.bk_variance == std::ldexp(1.0, -50));
  CHECK(tl::key_pair_problem(sk, file.key).empty());
  auto cloud = std::make_shared<const CloudKey>(std::move(file.key));
  OpenMpBackend be(cloud);

  const auto out = library_gates_on_vectors(be, p, plain);
  for (std::size_t g = 0; g < plain.outputs.size(); ++g) {
    INFO("gate " << plain.outputs[g]);
    CHECK(decrypt_bits(sk, be.download(out.bits(g * 64, 64))) ==
          plain.expected.at(plain.outputs[g]));
  }

  // The secret keyset of the same keys: it reads back as the library's lwe.key and tgsw.key
  // (written from it byte for byte) and the same cloud key.
  tl::save_secret_keyset(dir / "secret.key", sk, *cloud);
  CHECK(tl::identify_file(dir / "secret.key") == tl::FileKind::SecretKeySet);
  const tl::SecretKeySetFile keyset = tl::load_secret_keyset(dir / "secret.key");
  CHECK(std::ranges::equal(keyset.cloud.key.key_switching_key().data(),
                           cloud->key_switching_key().data()));
  tl::save_lwe_key(dir / "lwe.key", keyset.secret);
  tl::save_tgsw_key(dir / "tgsw.key", keyset.secret);
  CHECK(read_file(dir / "lwe.key") == read_file(data_dir / "lwe.key"));
  CHECK(read_file(dir / "tgsw.key") == read_file(data_dir / "tgsw.key"));
  // Written again, the keyset is the same bytes.
  tl::save_cloud_keyset(dir / "cloud2.key", keyset.cloud);
  CHECK(read_file(dir / "cloud2.key") == read_file(dir / "cloud.key"));
}
