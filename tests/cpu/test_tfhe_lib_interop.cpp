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

#include "test_support.hpp"
#include "torusgate/core/backend.hpp"
#include "torusgate/core/keys.hpp"
#include "torusgate/core/tfhe_lib_format.hpp"
#include "torusgate/cpu/cpu_backend.hpp"

using namespace torusgate;
using torusgate::test::seeded_rng;

namespace {

namespace fs = std::filesystem;
namespace tl = torusgate::tfhe_lib;

const fs::path data_dir{TORUSGATE_TFHE_LIB_TESTDATA};

// True when the vectors are there; otherwise warns (the test then returns without asserting).
bool have_data() {
  std::error_code ec;
  if (fs::is_regular_file(data_dir / "plain.txt", ec)) return true;
  WARN("TFHE library vectors not found at '" << data_dir.string() << "': test skipped");
  return false;
}

// plain.txt: "# i a b c  <12 output names>", then one line per index with 16 integers.
struct PlainBits {
  std::vector<std::string> outputs;  // gate names in the header's order ("mux(a?b:c)" -> "mux")
  std::vector<std::uint8_t> a, b, c;
  std::map<std::string, std::vector<std::uint8_t>> expected;
};

PlainBits read_plain() {
  std::ifstream in(data_dir / "plain.txt");
  REQUIRE(in.is_open());
  std::string header;
  REQUIRE(std::getline(in, header));
  REQUIRE(header.starts_with("#"));
  std::istringstream hs(header.substr(1));
  std::vector<std::string> columns;
  for (std::string col; hs >> col;) columns.push_back(col.substr(0, col.find('(')));
  REQUIRE(columns.size() == 16);
  REQUIRE((columns[0] == "i" && columns[1] == "a" && columns[2] == "b" && columns[3] == "c"));
  PlainBits plain;
  plain.outputs.assign(columns.begin() + 4, columns.end());
  std::size_t row = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    std::istringstream ls(line);
    std::vector<int> v;
    for (int x; ls >> x;) v.push_back(x);
    INFO("plain.txt row " << row << ": " << line);
    REQUIRE(ls.eof());
    REQUIRE(v.size() == 16);
    REQUIRE(v[0] == static_cast<int>(row));
    for (std::size_t j = 1; j < v.size(); ++j) REQUIRE((v[j] == 0 || v[j] == 1));
    plain.a.push_back(static_cast<std::uint8_t>(v[1]));
    plain.b.push_back(static_cast<std::uint8_t>(v[2]));
    plain.c.push_back(static_cast<std::uint8_t>(v[3]));
    for (std::size_t g = 0; g < plain.outputs.size(); ++g) {
      plain.expected[plain.outputs[g]].push_back(static_cast<std::uint8_t>(v[4 + g]));
    }
    ++row;
  }
  REQUIRE(row == 64);
  return plain;
}

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

// A fresh directory under the system temporary directory, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = fs::temp_directory_path() /
            ("torusgate_test_tfhe_lib_interop_" + std::to_string(rd()) + std::to_string(rd()));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

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
