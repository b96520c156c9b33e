// Tests of the TFHE library v1.1 formats (tfhe_lib_format.hpp): on the library's own vectors
// (../shared/testdata/tfhe-lib-v1.1, skipped with a warning when absent) parsing, byte-identical
// writing and decryption to plain.txt; on files made here, one test per kind of bad input.
#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <sstream>
#include <streambuf>
#include <string>
#include <vector>

#include "test_files.hpp"
#include "tfhe_lib_testdata.hpp"
#include "test_support.hpp"
#include "torusgate/core/error.hpp"
#include "torusgate/core/gates.hpp"
#include "torusgate/core/keys.hpp"
#include "torusgate/core/lwe.hpp"
#include "torusgate/core/params.hpp"
#include "torusgate/core/tfhe_lib_format.hpp"

using namespace torusgate;
using Catch::Contains;
using torusgate::test::seeded_rng;

using torusgate::test::data_dir;
using torusgate::test::have_data;
using torusgate::test::PlainBits;
using torusgate::test::bytes_of;
using torusgate::test::read_file;
using torusgate::test::read_plain;
using torusgate::test::TempDir;
using torusgate::test::write_file;

namespace {

namespace fs = std::filesystem;
namespace tl = torusgate::tfhe_lib;

// Requires that `expr` throws exception type `type` whose message contains `fragment`.
#define REQUIRE_THROWS_TYPE_WITH(expr, type, fragment) \
  do {                                                 \
    REQUIRE_THROWS_AS(expr, type);                     \
    REQUIRE_THROWS_WITH(expr, Contains(fragment));     \
  } while (false)

// ---- the library's vectors -------------------------------------------------------------------


// The library's gate names and ours.
const std::map<std::string, GateKind>& library_gates() {
  static const std::map<std::string, GateKind> gates = {
      {"and", GateKind::And},     {"nand", GateKind::Nand},   {"or", GateKind::Or},
      {"nor", GateKind::Nor},     {"xor", GateKind::Xor},     {"xnor", GateKind::Xnor},
      {"andny", GateKind::AndNY}, {"andyn", GateKind::AndYN}, {"orny", GateKind::OrNY},
      {"oryn", GateKind::OrYN},   {"not", GateKind::Not},     {"mux", GateKind::Mux}};
  return gates;
}

// ---- streams and files -----------------------------------------------------------------------

tl::LweKeyFile lwe_key_from(const std::string& bytes) {
  std::istringstream in(bytes, std::ios::binary);
  return tl::read_lwe_key(in);
}
tl::TgswKeyFile tgsw_key_from(const std::string& bytes) {
  std::istringstream in(bytes, std::ios::binary);
  return tl::read_tgsw_key(in);
}
Parameters parameter_set_from(const std::string& bytes) {
  std::istringstream in(bytes, std::ios::binary);
  return tl::read_parameter_set(in);
}
LweBatch ciphertexts_from(const std::string& bytes, const Parameters& params,
                          std::vector<double>* variances = nullptr) {
  std::istringstream in(bytes, std::ios::binary);
  return tl::read_gate_ciphertexts(in, params, variances);
}

// A read-only stream buffer that cannot seek, like a pipe.
class OneWayBuf : public std::streambuf {
 public:
  explicit OneWayBuf(std::string bytes) : bytes_(std::move(bytes)) {
    setg(bytes_.data(), bytes_.data(), bytes_.data() + bytes_.size());
  }

 private:
  std::string bytes_;
};

// ---- files made here (no vectors needed) -----------------------------------------------------

// A tfhe_lib_128 secret key and 5 fresh ciphertexts, and their files in the library's format.
struct MadeHere {
  Csprng rng = seeded_rng(0x7f4e11b);
  SecretKey sk{tfhe_lib_128(), rng};
  std::vector<std::uint8_t> bits{1, 0, 0, 1, 1};
  LweBatch ct = encrypt_bits(sk, bits, rng);
  std::string params_txt =
      bytes_of([](std::ostream& o) { tl::write_parameter_set(o, tfhe_lib_128()); });
  std::string lwe_key = bytes_of([&](std::ostream& o) { tl::write_lwe_key(o, sk); });
  std::string tgsw_key = bytes_of([&](std::ostream& o) { tl::write_tgsw_key(o, sk); });
  std::string ctxt =
      bytes_of([&](std::ostream& o) { tl::write_gate_ciphertexts(o, tfhe_lib_128(), ct); });
};
const MadeHere& made() {
  static const MadeHere m;
  return m;
}

// Byte offset of the first type id in a key file: just after the last "-----\n".
std::size_t type_id_offset(const std::string& key_file) {
  const std::size_t at = key_file.rfind("-----\n");
  REQUIRE(at != std::string::npos);
  return at + 6;
}

std::int32_t get_i32(const std::string& s, std::size_t offset) {
  std::uint32_t u = 0;
  for (int b = 3; b >= 0; --b) u = (u << 8) | static_cast<unsigned char>(s[offset + b]);
  return static_cast<std::int32_t>(u);
}
void put_i32(std::string& s, std::size_t offset, std::int32_t v) {
  const auto u = static_cast<std::uint32_t>(v);
  for (int b = 0; b < 4; ++b) s[offset + b] = static_cast<char>((u >> (8 * b)) & 0xff);
}

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  const std::size_t at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

}  // namespace

// ---- the library's vectors -------------------------------------------------------------------

TEST_CASE("tfhe_lib: params.txt parses and maps to tfhe_lib_128", "[tfhe_lib]") {
  if (!have_data()) return;
  CHECK(tl::load_parameter_set(data_dir / "params.txt") == tfhe_lib_128());
  CHECK(parameter_set_from(read_file(data_dir / "params.txt")) == tfhe_lib_128());
}

TEST_CASE("tfhe_lib: writing tfhe_lib_128 reproduces params.txt byte for byte", "[tfhe_lib]") {
  if (!have_data()) return;
  const std::string written =
      bytes_of([](std::ostream& o) { tl::write_parameter_set(o, tfhe_lib_128()); });
  CHECK(written == read_file(data_dir / "params.txt"));
  TempDir dir;
  tl::save_parameter_set(dir / "params.txt", tfhe_lib_128());
  CHECK(read_file(dir / "params.txt") == read_file(data_dir / "params.txt"));
}

TEST_CASE("tfhe_lib: lwe.key and tgsw.key read, and write back byte-identical", "[tfhe_lib]") {
  if (!have_data()) return;
  const tl::LweKeyFile lwe = tl::load_lwe_key(data_dir / "lwe.key");
  CHECK(lwe.params.lwe_dimension == 630);
  CHECK(lwe.params.alpha_min == 0.00003052);  // 2^-15 printed with 8 decimals
  CHECK(lwe.params.alpha_max == 0.012467);
  REQUIRE(lwe.key.coefficients().size() == 630);
  for (std::int32_t c : lwe.key.coefficients()) REQUIRE((c == 0 || c == 1));

  const tl::TgswKeyFile tgsw = tl::load_tgsw_key(data_dir / "tgsw.key");
  CHECK(tgsw.tlwe.polynomial_size == 1024);
  CHECK(tgsw.tlwe.glwe_dimension == 1);
  CHECK(tgsw.tlwe.alpha_min == 0.00000003);  // 2^-25 printed with 8 decimals
  CHECK(tgsw.tgsw.bk_base_log == 7);
  CHECK(tgsw.tgsw.bk_level_count == 3);
  REQUIRE(tgsw.key.coefficients().size() == 1024);
  for (std::int32_t c : tgsw.key.coefficients()) REQUIRE((c == 0 || c == 1));

  const SecretKey sk = tl::to_secret_key(lwe, tgsw);
  CHECK(sk.parameters() == tfhe_lib_128());
  CHECK(sk.parameters() == tl::to_secret_key(tfhe_lib_128(), lwe, tgsw).parameters());
  // Our polynomial j is the file's words [j*N, (j+1)*N), in order.
  const std::string tgsw_bytes = read_file(data_dir / "tgsw.key");
  const std::size_t coeff0 = type_id_offset(tgsw_bytes) + 4;
  REQUIRE(get_i32(tgsw_bytes, coeff0 - 4) == tl::tgsw_key_type_id);
  REQUIRE(tgsw_bytes.size() == coeff0 + 4 * 1024);
  for (std::size_t i = 0; i < 1024; ++i) {
    REQUIRE(sk.glwe_key().polynomial(0)[i] == get_i32(tgsw_bytes, coeff0 + 4 * i));
  }

  CHECK(bytes_of([&](std::ostream& o) { tl::write_lwe_key(o, sk); }) ==
        read_file(data_dir / "lwe.key"));
  CHECK(bytes_of([&](std::ostream& o) { tl::write_tgsw_key(o, sk); }) == tgsw_bytes);
  TempDir dir;
  tl::save_lwe_key(dir / "lwe.key", sk);
  tl::save_tgsw_key(dir / "tgsw.key", sk);
  CHECK(read_file(dir / "lwe.key") == read_file(data_dir / "lwe.key"));
  CHECK(read_file(dir / "tgsw.key") == tgsw_bytes);
  const SecretKey again = tl::load_secret_key(dir / "lwe.key", dir / "tgsw.key");
  CHECK(std::ranges::equal(again.lwe_key().coefficients(), sk.lwe_key().coefficients()));
  CHECK(std::ranges::equal(again.glwe_key().coefficients(), sk.glwe_key().coefficients()));
}

TEST_CASE("tfhe_lib: ciphertext files read as 64 samples and write back byte-identical",
          "[tfhe_lib]") {
  if (!have_data()) return;
  const Parameters p = tfhe_lib_128();
  for (const char* name : {"a", "b", "c"}) {
    INFO(name << ".ctxt");
    const fs::path path = data_dir / (std::string(name) + ".ctxt");
    const std::string bytes = read_file(path);
    REQUIRE(bytes.size() == 64 * tl::ciphertext_bytes(630));
    REQUIRE(tl::ciphertext_bytes(630) == 2536);
    std::vector<double> variances;
    const LweBatch batch = tl::load_gate_ciphertexts(path, p, &variances);
    REQUIRE(batch.count() == 64);
    REQUIRE(batch.lwe_dimension() == 630);
    // Fresh samples: the library stores alpha^2 = 2^-30, which is what we write.
    for (double v : variances) REQUIRE(v == std::ldexp(1.0, -30));
    CHECK(bytes_of([&](std::ostream& o) { tl::write_gate_ciphertexts(o, p, batch); }) == bytes);
    TempDir dir;
    tl::save_gate_ciphertexts(dir / "x.ctxt", p, batch);
    CHECK(read_file(dir / "x.ctxt") == bytes);
    // The same through a stream that cannot seek.
    OneWayBuf buf(bytes);
    std::istream pipe(&buf);
    CHECK(tl::read_gate_ciphertexts(pipe, p) == batch);
  }
  // Gate outputs carry the library's variance estimates: kept, they write back identically too.
  for (const auto& [gate, kind] : library_gates()) {
    INFO("out_" << gate << ".ctxt");
    const std::string bytes = read_file(data_dir / ("out_" + gate + ".ctxt"));
    std::vector<double> variances;
    const LweBatch batch = ciphertexts_from(bytes, p, &variances);
    REQUIRE(batch.count() == 64);
    REQUIRE(variances.size() == 64);
    CHECK(bytes_of([&](std::ostream& o) { tl::write_gate_ciphertexts(o, p, batch, variances); }) ==
          bytes);
  }
}

TEST_CASE("tfhe_lib: plain.txt's columns are the gates they name", "[tfhe_lib]") {
  if (!have_data()) return;
  const PlainBits plain = read_plain();
  REQUIRE(plain.outputs.size() == library_gates().size());
  for (const auto& name : plain.outputs) {
    INFO("gate " << name);
    REQUIRE(library_gates().count(name) == 1);
    const GateSpec spec = GateSpec::of(library_gates().at(name));
    for (std::size_t i = 0; i < 64; ++i) {
      REQUIRE(plain.expected.at(name)[i] == spec.evaluate(plain.a[i], plain.b[i], plain.c[i]));
    }
  }
}

TEST_CASE("tfhe_lib: the imported secret key decrypts the library's ciphertexts to plain.txt",
          "[tfhe_lib]") {
  if (!have_data()) return;
  const PlainBits plain = read_plain();
  const SecretKey sk = tl::load_secret_key(data_dir / "lwe.key", data_dir / "tgsw.key");
  const Parameters& p = sk.parameters();
  const std::map<std::string, const std::vector<std::uint8_t>*> inputs = {
      {"a", &plain.a}, {"b", &plain.b}, {"c", &plain.c}};
  for (const auto& [name, bits] : inputs) {
    INFO(name << ".ctxt");
    const LweBatch batch = tl::load_gate_ciphertexts(data_dir / (name + ".ctxt"), p);
    CHECK(decrypt_bits(sk, batch) == *bits);
    // Fresh encryptions: phase within 2^-10 of +-1/8 (sigma 2^-15).
    const auto phases = batch_phases(sk, batch);
    for (std::size_t i = 0; i < 64; ++i) {
      const double want = (*bits)[i] ? 0.125 : -0.125;
      const double got = static_cast<std::int32_t>(phases[i]) / 4294967296.0;
      REQUIRE(std::abs(got - want) < std::ldexp(1.0, -10));
    }
  }
  for (const auto& name : plain.outputs) {
    INFO("out_" << name << ".ctxt");
    const LweBatch batch = tl::load_gate_ciphertexts(data_dir / ("out_" + name + ".ctxt"), p);
    CHECK(decrypt_bits(sk, batch) == plain.expected.at(name));
  }
}

// ---- round trips on files made here ----------------------------------------------------------

TEST_CASE("tfhe_lib: every named set writes and reads back as itself", "[tfhe_lib]") {
  for (const Parameters& p : all_parameter_sets()) {
    INFO(p.name);
    const std::string text = bytes_of([&](std::ostream& o) { tl::write_parameter_set(o, p); });
    CHECK(parameter_set_from(text) == p);
    Csprng rng = seeded_rng(p.fingerprint());
    const SecretKey sk(p, rng);
    const auto lwe = lwe_key_from(bytes_of([&](std::ostream& o) { tl::write_lwe_key(o, sk); }));
    const auto tgsw = tgsw_key_from(bytes_of([&](std::ostream& o) { tl::write_tgsw_key(o, sk); }));
    CHECK(std::ranges::equal(lwe.key.coefficients(), sk.lwe_key().coefficients()));
    CHECK(std::ranges::equal(tgsw.key.coefficients(), sk.glwe_key().coefficients()));
    // The toy sets differ only in k, so the key pair identifies every set.
    CHECK(tl::to_secret_key(lwe, tgsw).parameters() == p);
  }
}

TEST_CASE("tfhe_lib: the text format is the library's, to the byte", "[tfhe_lib]") {
  const std::string text = made().params_txt;
  CHECK(
      text.starts_with("-----BEGIN GATEBOOTSPARAMS-----\nks_basebit:          2\nks_t:          8\n"
                       "-----END GATEBOOTSPARAMS-----\n-----BEGIN LWEPARAMS-----\n"
                       "alpha_max: 0.01246700\nalpha_min: 0.00003052\nn:        630\n"));
  CHECK(text.find("N:       1024\nalpha_max: 0.01246700\nalpha_min: 0.00000003\nk:          1\n") !=
        std::string::npos);
  CHECK(
      text.ends_with("-----BEGIN TGSWPARAMS-----\nBgbit:          7\nl:          3\n"
                     "-----END TGSWPARAMS-----\n"));
  // The reader takes the library's other spellings: keys in any order, numbers unpadded.
  CHECK(parameter_set_from(replaced(replaced(text, "ks_basebit:          2\nks_t:          8\n",
                                             "ks_t: 8\nks_basebit: 2\n"),
                                    "n:        630", "n: 630")) == tfhe_lib_128());
}

TEST_CASE("tfhe_lib: ciphertext files hold any number of samples, none included", "[tfhe_lib]") {
  const Parameters p = tfhe_lib_128();
  const MadeHere& m = made();
  REQUIRE(m.ctxt.size() == 5 * 2536);
  std::vector<double> variances;
  const LweBatch back = ciphertexts_from(m.ctxt, p, &variances);
  CHECK(back == m.ct);
  CHECK(variances == std::vector<double>(5, std::ldexp(1.0, -30)));
  CHECK(decrypt_bits(m.sk, back) == m.bits);
  // One sample at a time, appended, reads as the same batch.
  std::string one_by_one;
  for (std::size_t i = 0; i < m.ct.count(); ++i) {
    LweBatch single(630, 1);
    std::copy(m.ct.sample(i).begin(), m.ct.sample(i).end(), single.sample(0).begin());
    one_by_one += bytes_of([&](std::ostream& o) { tl::write_gate_ciphertexts(o, p, single); });
  }
  CHECK(one_by_one == m.ctxt);
  // Empty file, empty batch.
  const LweBatch none = ciphertexts_from("", p);
  CHECK(none.count() == 0);
  CHECK(none.lwe_dimension() == 630);
  CHECK(bytes_of([&](std::ostream& o) { tl::write_gate_ciphertexts(o, p, none); }).empty());
  // The variance is carried, whatever it is.
  const std::vector<double> odd = {-1.0, std::nan(""), INFINITY, 0.0, 5e-6};
  std::vector<double> odd_back;
  ciphertexts_from(bytes_of([&](std::ostream& o) { tl::write_gate_ciphertexts(o, p, m.ct, odd); }),
                   p, &odd_back);
  REQUIRE(odd_back.size() == 5);
  CHECK(odd_back[0] == -1.0);
  CHECK(std::isnan(odd_back[1]));
  CHECK(odd_back[2] == INFINITY);
}

TEST_CASE("tfhe_lib: stream readers consume one object, so objects can follow each other",
          "[tfhe_lib]") {
  const MadeHere& m = made();
  std::istringstream in(m.params_txt + m.lwe_key + m.tgsw_key + m.ctxt, std::ios::binary);
  CHECK(tl::read_parameter_set(in) == tfhe_lib_128());
  const auto lwe = tl::read_lwe_key(in);
  const auto tgsw = tl::read_tgsw_key(in);
  CHECK(tl::read_gate_ciphertexts(in, tfhe_lib_128()) == m.ct);
  CHECK(std::ranges::equal(tl::to_secret_key(lwe, tgsw).lwe_key().coefficients(),
                           m.sk.lwe_key().coefficients()));
}

// ---- bad input -------------------------------------------------------------------------------

TEST_CASE("tfhe_lib: truncated files are rejected at every length", "[tfhe_lib]") {
  const MadeHere& m = made();
  auto check_all = [](const std::string& bytes, auto&& read) {
    for (std::size_t length = 0; length < bytes.size(); ++length) {
      INFO("length " << length << " of " << bytes.size());
      try {
        read(bytes.substr(0, length));
        FAIL("no exception");
      } catch (const FormatError& e) {
        const std::string what = e.what();
        REQUIRE((what.find("truncated") != std::string::npos ||
                 what.find("empty input") != std::string::npos));
      }
    }
  };
  check_all(m.params_txt, [](const std::string& b) { parameter_set_from(b); });
  check_all(m.lwe_key, [](const std::string& b) { lwe_key_from(b); });
  check_all(m.tgsw_key, [](const std::string& b) { tgsw_key_from(b); });
  // Ciphertexts: every length that is not a whole number of samples (the first two samples).
  for (std::size_t length = 1; length < 2 * 2536; ++length) {
    if (length == 2536) continue;
    INFO("length " << length);
    REQUIRE_THROWS_TYPE_WITH(ciphertexts_from(m.ctxt.substr(0, length), tfhe_lib_128()),
                             FormatError, "truncated");
  }
}

TEST_CASE("tfhe_lib: truncation messages name what was cut and the byte counts", "[tfhe_lib]") {
  const MadeHere& m = made();
  const Parameters p = tfhe_lib_128();
  REQUIRE_THROWS_TYPE_WITH(
      lwe_key_from(""), FormatError,
      "empty input: 0 bytes, but expected the line '-----BEGIN LWEPARAMS-----'");
  // Inside a text line.
  REQUIRE_THROWS_TYPE_WITH(lwe_key_from(m.lwe_key.substr(0, 30)), FormatError,
                           "the input ends at offset 30 inside line 2 'alph' (no end of line)");
  // At a line boundary inside the block.
  REQUIRE_THROWS_TYPE_WITH(
      lwe_key_from(m.lwe_key.substr(0, 26)), FormatError,
      "the input ends at offset 26, but expected a line of the LWEPARAMS block");
  // Between two blocks.
  const std::size_t tlwe_end = m.tgsw_key.find("-----BEGIN TGSWPARAMS");
  REQUIRE_THROWS_TYPE_WITH(tgsw_key_from(m.tgsw_key.substr(0, tlwe_end)), FormatError,
                           "but expected the line '-----BEGIN TGSWPARAMS-----'");
  // The type id.
  const std::size_t id_at = type_id_offset(m.lwe_key);
  REQUIRE_THROWS_TYPE_WITH(lwe_key_from(m.lwe_key.substr(0, id_at + 2)), FormatError,
                           "truncated: the LWE key type id needs 4 bytes at offset " +
                               std::to_string(id_at) + " but the input ends after 2 of them");
  // The coefficients.
  REQUIRE_THROWS_TYPE_WITH(lwe_key_from(m.lwe_key.substr(0, id_at + 4 + 100)), FormatError,
                           "truncated: the LWE key (630 int32) needs 2520 bytes at offset " +
                               std::to_string(id_at + 4) + " but the input ends after 100 of them");
  const std::size_t tgsw_id_at = type_id_offset(m.tgsw_key);
  REQUIRE_THROWS_TYPE_WITH(tgsw_key_from(m.tgsw_key.substr(0, m.tgsw_key.size() - 1)), FormatError,
                           "truncated: the TGSW key (1024 int32) needs 4096 bytes at offset " +
                               std::to_string(tgsw_id_at + 4) + " but the input ends after 4095");
  // A ciphertext.
  REQUIRE_THROWS_TYPE_WITH(ciphertexts_from(m.ctxt.substr(0, 2536 + 1000), p), FormatError,
                           "truncated: ciphertext 1 (a type id, 630 mask words, the body and the "
                           "variance for n=630) needs 2536 bytes at offset 2536 but the input ends "
                           "after 1000 of them");
}

TEST_CASE("tfhe_lib: wrong type ids are rejected", "[tfhe_lib]") {
  const MadeHere& m = made();
  const Parameters p = tfhe_lib_128();
  std::string lwe = m.lwe_key;
  put_i32(lwe, type_id_offset(lwe), 44);
  REQUIRE_THROWS_TYPE_WITH(lwe_key_from(lwe), FormatError,
                           "type id at offset 108 is 44 but expected 43");
  std::string tgsw = m.tgsw_key;
  put_i32(tgsw, type_id_offset(tgsw), tl::lwe_key_type_id);
  REQUIRE_THROWS_TYPE_WITH(tgsw_key_from(tgsw), FormatError,
                           "is 43 but expected 169 (that is the type id of an LWE key)");
  std::string ct = m.ctxt;
  put_i32(ct, 2 * 2536, 7);
  REQUIRE_THROWS_TYPE_WITH(ciphertexts_from(ct, p), FormatError,
                           "ciphertext 2 at offset 5072 has type id 7 but expected 42");
  put_i32(ct, 2 * 2536, tl::tgsw_key_type_id);
  REQUIRE_THROWS_TYPE_WITH(ciphertexts_from(ct, p), FormatError, "type id of a TGSW key");
  // A key file handed to the ciphertext reader, and ciphertexts of another dimension.
  REQUIRE_THROWS_TYPE_WITH(ciphertexts_from(m.lwe_key, p), FormatError,
                           "the input starts with '-----': a key or parameter file");
  REQUIRE_THROWS_TYPE_WITH(ciphertexts_from(m.ctxt, tfhe_lib_80()), FormatError,
                           "ciphertext 1 at offset 2016 has type id");
}

TEST_CASE("tfhe_lib: wrong block names and block order are rejected", "[tfhe_lib]") {
  const MadeHere& m = made();
  REQUIRE_THROWS_TYPE_WITH(
      lwe_key_from(replaced(m.lwe_key, "BEGIN LWEPARAMS", "BEGIN LWEPARAMX")), FormatError,
      "line 1 at offset 0 is '-----BEGIN LWEPARAMX-----' but expected '-----BEGIN LWEPARAMS-----'");
  REQUIRE_THROWS_TYPE_WITH(lwe_key_from(m.tgsw_key), FormatError,
                           "(a TLWEPARAMS block is not expected here)");
  REQUIRE_THROWS_TYPE_WITH(tgsw_key_from(m.lwe_key), FormatError,
                           "but expected '-----BEGIN TLWEPARAMS-----'");
  REQUIRE_THROWS_TYPE_WITH(lwe_key_from(m.ctxt), FormatError, "'*\\x00\\x00\\x00");
  // A wrong END line is neither the end nor a "key: value" line.
  REQUIRE_THROWS_TYPE_WITH(
      lwe_key_from(replaced(m.lwe_key, "-----END LWEPARAMS-----", "-----END LWEPARAMZ-----")),
      FormatError, "is '-----END LWEPARAMZ-----' but expected a line of the LWEPARAMS block");
  // The parameter set file's blocks in another order.
  const std::string text = m.params_txt;
  const std::size_t lwe_begin = text.find("-----BEGIN LWEPARAMS");
  const std::size_t tlwe_begin = text.find("-----BEGIN TLWEPARAMS");
  const std::size_t tgsw_begin = text.find("-----BEGIN TGSWPARAMS");
  const std::string swapped =
      text.substr(0, lwe_begin) + text.substr(tlwe_begin, tgsw_begin - tlwe_begin) +
      text.substr(lwe_begin, tlwe_begin - lwe_begin) + text.substr(tgsw_begin);
  REQUIRE_THROWS_TYPE_WITH(parameter_set_from(swapped), FormatError,
                           "'-----BEGIN TLWEPARAMS-----' but expected '-----BEGIN LWEPARAMS-----' "
                           "(a TLWEPARAMS block is not expected here)");
  REQUIRE_THROWS_TYPE_WITH(parameter_set_from(text.substr(lwe_begin)), FormatError,
                           "expected '-----BEGIN GATEBOOTSPARAMS-----'");
  // A binary line longer than any text line.
  REQUIRE_THROWS_TYPE_WITH(lwe_key_from(std::string(300, 'x')), FormatError,
                           "is longer than 256 bytes");
}

TEST_CASE("tfhe_lib: missing, unknown and repeated keys are rejected", "[tfhe_lib]") {
  const MadeHere& m = made();
  REQUIRE_THROWS_TYPE_WITH(lwe_key_from(replaced(m.lwe_key, "n:        630\n", "")), FormatError,
                           "the LWEPARAMS block that starts at offset 0 has no 'n' line");
  REQUIRE_THROWS_TYPE_WITH(parameter_set_from(replaced(m.params_txt, "Bgbit:          7\n", "")),
                           FormatError, "has no 'Bgbit' line");
  REQUIRE_THROWS_TYPE_WITH(lwe_key_from(replaced(m.lwe_key, "n:   ", "m:   ")), FormatError,
                           "has the key 'm' but the LWEPARAMS block has only the keys");
  REQUIRE_THROWS_TYPE_WITH(
      lwe_key_from(replaced(m.lwe_key, "n:        630\n", "n:        630\nn: 630\n")), FormatError,
      "repeats the key 'n'");
  REQUIRE_THROWS_TYPE_WITH(lwe_key_from(replaced(m.lwe_key, "n:        630", "n=630")), FormatError,
                           "is 'n=630' but expected a line of the LWEPARAMS block");
}

TEST_CASE("tfhe_lib: numbers must parse completely", "[tfhe_lib]") {
  const MadeHere& m = made();
  const std::string& key = m.lwe_key;
  for (const char* bad : {"63O", "630x", "-630", "", "+630", "6 30", "0x276", "630.0"}) {
    INFO("n: '" << bad << "'");
    REQUIRE_THROWS_TYPE_WITH(lwe_key_from(replaced(key, "n:        630", std::string("n: ") + bad)),
                             FormatError, "LWEPARAMS 'n' is");
  }
  REQUIRE_THROWS_TYPE_WITH(lwe_key_from(replaced(key, "n:        630", "n: 99999999999")),
                           FormatError, "far beyond any parameter set");
  for (const char* bad : {"0.0124x", "", "abc", "0.01 ", "nan", "inf", "-0.5"}) {
    INFO("alpha_max: '" << bad << "'");
    REQUIRE_THROWS_TYPE_WITH(
        lwe_key_from(replaced(key, "alpha_max: 0.01246700", std::string("alpha_max: ") + bad)),
        FormatError, "LWEPARAMS 'alpha_max' is");
  }
  // Beyond a double's range: said so, not "expected a decimal number".
  REQUIRE_THROWS_TYPE_WITH(
      lwe_key_from(replaced(key, "alpha_max: 0.01246700", "alpha_max: 1e400")), FormatError,
      "LWEPARAMS 'alpha_max' is '1e400', out of the range of a double");
  REQUIRE_THROWS_TYPE_WITH(
      parameter_set_from(replaced(m.params_txt, "ks_t:          8", "ks_t:          8;")),
      FormatError,
      "GATEBOOTSPARAMS 'ks_t' is '         8;' but expected a non-negative decimal integer");
}

TEST_CASE("tfhe_lib: unknown parameter sets are rejected naming the fields", "[tfhe_lib]") {
  const MadeHere& m = made();
  REQUIRE_THROWS_TYPE_WITH(
      parameter_set_from(replaced(m.params_txt, "Bgbit:          7", "Bgbit:          8")),
      FormatError,
      "no known parameter set has n=630 k=1 N=1024 Bgbit=8 l=3 ks_basebit=2 ks_t=8 (matching by "
      "the integer fields only); the closest, 'tfhe_lib_128' differs in Bgbit (8 in the file, 7 in "
      "the set)");
  // Before anything is allocated from the count: a huge n in a key file.
  REQUIRE_THROWS_TYPE_WITH(lwe_key_from(replaced(m.lwe_key, "n:        630", "n: 4000000000")),
                           FormatError, "no known parameter set has n=4000000000");
  REQUIRE_THROWS_TYPE_WITH(tgsw_key_from(replaced(m.tgsw_key, "N:       1024", "N: 1048576")),
                           FormatError, "no known parameter set has k=1 N=1048576 Bgbit=7 l=3");
  // The alphas do not take part in matching (8 decimals lose them), but must then be the
  // matched set's to the 8th decimal: a file whose noise is another's used to read as this set.
  REQUIRE_THROWS_TYPE_WITH(
      parameter_set_from(replaced(m.params_txt, "alpha_min: 0.00003052", "alpha_min: 0.5")),
      FormatError,
      "the noise does not fit parameter set 'tfhe_lib_128', which the integer fields name: "
      "LWEPARAMS alpha_min=0.50000000 (the set has 0.00003052) (this reader knows the named "
      "sets only)");
  REQUIRE_THROWS_TYPE_WITH(
      parameter_set_from(replaced(m.params_txt, "alpha_min: 0.00000003", "alpha_min: 0.00000004")),
      FormatError, "TLWEPARAMS alpha_min=0.00000004 (the set has 0.00000003)");
  REQUIRE_THROWS_TYPE_WITH(
      parameter_set_from(replaced(m.params_txt, "alpha_max: 0.01246700", "alpha_max: 0")),
      FormatError, "LWEPARAMS alpha_max=0.00000000 (the set has 0.01246700)");
  // The key pair: the LWE key's noise against the set both files name.
  REQUIRE_THROWS_TYPE_WITH(
      tl::to_secret_key(lwe_key_from(replaced(m.lwe_key, "alpha_min: 0.00003052",
                                              "alpha_min: 0.40000000")),
                        tgsw_key_from(m.tgsw_key)),
      FormatError, "LWE key alpha_min=0.40000000 (the set has 0.00003052)");
  CHECK(parameter_set_from(m.params_txt) == tfhe_lib_128());
  // Matching by hand: some fields only; several matches are an error too.
  tl::IntegerFields f;
  f.lwe_dimension = 630;
  CHECK(tl::match_parameter_set(f) == tfhe_lib_128());
  f.lwe_dimension = 64;
  REQUIRE_THROWS_TYPE_WITH(
      tl::match_parameter_set(f), FormatError,
      "n=64 matches several parameter sets ('toy_INSECURE', 'toy_k2_INSECURE')");
  f.glwe_dimension = 2;
  CHECK(tl::match_parameter_set(f) == toy_k2_insecure());
}

TEST_CASE("tfhe_lib: key files that do not fit together or a given set are rejected",
          "[tfhe_lib]") {
  const MadeHere& m = made();
  const auto lwe = lwe_key_from(m.lwe_key);
  const auto tgsw = tgsw_key_from(m.tgsw_key);
  Csprng rng = seeded_rng(0x50f7);
  const SecretKey other(tfhe_lib_80(), rng);
  const auto lwe_80 = lwe_key_from(bytes_of([&](std::ostream& o) { tl::write_lwe_key(o, other); }));
  REQUIRE_THROWS_TYPE_WITH(tl::to_secret_key(lwe_80, tgsw), FormatError,
                           "no known parameter set has n=500 k=1 N=1024 Bgbit=7 l=3");
  REQUIRE_THROWS_TYPE_WITH(tl::to_secret_key(tfhe_lib_80(), lwe, tgsw), FormatError,
                           "do not fit parameter set 'tfhe_lib_80': LWE key n=630 (the set has 500)"
                           ", TGSW key Bgbit=7 (the set has 10), TGSW key l=3 (the set has 2)");
}

TEST_CASE("tfhe_lib: non-binary key coefficients are rejected", "[tfhe_lib]") {
  const MadeHere& m = made();
  for (std::int32_t bad : {2, -1, 1 << 29}) {
    INFO("coefficient value " << bad);
    std::string lwe = m.lwe_key;
    put_i32(lwe, type_id_offset(lwe) + 4 + 4 * 17, bad);
    REQUIRE_THROWS_TYPE_WITH(lwe_key_from(lwe), FormatError,
                             "the LWE key: coefficient 17 (offset " +
                                 std::to_string(type_id_offset(lwe) + 4 + 4 * 17) + ") is " +
                                 std::to_string(bad) + " but expected 0 or 1");
    std::string tgsw = m.tgsw_key;
    put_i32(tgsw, tgsw.size() - 4, bad);
    REQUIRE_THROWS_TYPE_WITH(tgsw_key_from(tgsw), FormatError, "the TGSW key: coefficient 1023");
  }
}

TEST_CASE("tfhe_lib: trailing bytes after a whole file's object are rejected", "[tfhe_lib]") {
  const MadeHere& m = made();
  TempDir dir;
  write_file(dir / "lwe.key", m.lwe_key + "x");
  REQUIRE_THROWS_TYPE_WITH(tl::load_lwe_key(dir / "lwe.key"), FormatError,
                           "1 bytes of trailing data after the LWE key that ends at offset 2632");
  write_file(dir / "tgsw.key", m.tgsw_key + m.tgsw_key);
  REQUIRE_THROWS_TYPE_WITH(tl::load_tgsw_key(dir / "tgsw.key"), FormatError,
                           "4308 bytes of trailing data after the TGSW key");
  write_file(dir / "params.txt", m.params_txt + "\n");
  REQUIRE_THROWS_TYPE_WITH(tl::load_parameter_set(dir / "params.txt"), FormatError,
                           "trailing data after the parameter set");
  REQUIRE_THROWS_TYPE_WITH(tl::load_secret_key(dir / "tgsw.key", dir / "tgsw.key"), FormatError,
                           (dir / "tgsw.key").string());
  // Ciphertext files have no end marker: extra bytes are a truncated next sample.
  write_file(dir / "x.ctxt", m.ctxt + "xyz");
  REQUIRE_THROWS_TYPE_WITH(tl::load_gate_ciphertexts(dir / "x.ctxt", tfhe_lib_128()), FormatError,
                           "ciphertext 5 (a type id, 630 mask words, the body and the variance for "
                           "n=630) needs 2536 bytes at offset 12680 but the input ends after 3");
  // Format errors from files name the path.
  write_file(dir / "bad.key", replaced(m.lwe_key, "n:   ", "m:   "));
  REQUIRE_THROWS_TYPE_WITH(tl::load_lwe_key(dir / "bad.key"), FormatError,
                           "tfhe_lib::load_lwe_key: '" + (dir / "bad.key").string() + "': line 4");
}

TEST_CASE("tfhe_lib: unopenable paths throw SystemError naming the path", "[tfhe_lib]") {
  TempDir dir;
  const fs::path missing = dir / "missing.key";
  REQUIRE_THROWS_TYPE_WITH(tl::load_lwe_key(missing), SystemError, missing.string());
  REQUIRE_THROWS_TYPE_WITH(tl::load_tgsw_key(missing), SystemError, "cannot open");
  REQUIRE_THROWS_TYPE_WITH(tl::load_parameter_set(missing), SystemError, missing.string());
  REQUIRE_THROWS_TYPE_WITH(tl::load_gate_ciphertexts(missing, tfhe_lib_128()), SystemError,
                           missing.string());
  REQUIRE_THROWS_TYPE_WITH(tl::load_secret_key(missing, missing), SystemError, missing.string());
  fs::create_directories(dir / "d");
  REQUIRE_THROWS_TYPE_WITH(tl::load_lwe_key(dir / "d"), SystemError, "it is a directory");
  const fs::path no_dir = dir / "no" / "such" / "dir" / "x.ctxt";
  REQUIRE_THROWS_TYPE_WITH(tl::save_gate_ciphertexts(no_dir, tfhe_lib_128(), made().ct),
                           SystemError, no_dir.string());
  REQUIRE_THROWS_TYPE_WITH(tl::save_lwe_key(no_dir, made().sk), SystemError, "cannot open");
  REQUIRE_THROWS_TYPE_WITH(tl::save_parameter_set(no_dir, tfhe_lib_128()), SystemError,
                           "for writing");
}

TEST_CASE("tfhe_lib: writers validate their input", "[tfhe_lib]") {
  const MadeHere& m = made();
  std::ostringstream out;
  REQUIRE_INVALID_ARGUMENT(tl::write_gate_ciphertexts(out, tfhe_lib_80(), m.ct),
                           "batch has lwe_dimension=630 but parameter set 'tfhe_lib_80' has 500");
  const std::vector<double> three(3, 0.0);
  REQUIRE_INVALID_ARGUMENT(tl::write_gate_ciphertexts(out, tfhe_lib_128(), m.ct, three),
                           "3 variances given for 5 samples");
  Parameters bad = tfhe_lib_128();
  bad.polynomial_size = 1000;
  REQUIRE_INVALID_ARGUMENT(tl::write_parameter_set(out, bad), "polynomial_size=1000");
  std::istringstream in(m.ctxt, std::ios::binary);
  REQUIRE_INVALID_ARGUMENT(tl::read_gate_ciphertexts(in, bad), "polynomial_size=1000");
  REQUIRE_INVALID_ARGUMENT(tl::write_lwe_key(out, SecretKey{}), "default-constructed");
  CHECK(out.str().empty());
  // A failed stream is a SystemError.
  std::ostringstream failed;
  failed.setstate(std::ios::badbit);
  REQUIRE_THROWS_TYPE_WITH(tl::write_lwe_key(failed, m.sk), SystemError,
                           "tfhe_lib::write_lwe_key: the output stream failed");
  std::istringstream failed_in(m.lwe_key);
  failed_in.setstate(std::ios::failbit);
  REQUIRE_THROWS_TYPE_WITH(tl::read_lwe_key(failed_in), SystemError, "already in a failed state");
}

// ---- keysets (cloud and secret), on toy keys made here ----------------------------------------

namespace {

// toy_INSECURE keys, their keysets in the library's format, and the byte offsets of the parts.
struct MadeKeys {
  Csprng rng = seeded_rng(0x4b375e7);
  Parameters p = toy_insecure();
  SecretKey sk{p, rng};
  CloudKey ck = CloudKey::generate(sk, rng);
  std::string cloud = bytes_of([&](std::ostream& o) { tl::write_cloud_keyset(o, ck); });
  std::string secret = bytes_of([&](std::ostream& o) { tl::write_secret_keyset(o, sk, ck); });
  std::size_t n1 = p.lwe_dimension + 1;
  std::size_t base = std::size_t{1} << p.ks_base_log;
  // Offsets: the key-switching key's type id, its first sample, the bootstrapping key's type id.
  std::size_t ks_id_at = cloud.find("-----END LWEKSPARAMS-----\n") + 26;
  std::size_t ks_words_at = ks_id_at + 12;
  std::size_t bk_id_at = ks_words_at + 4 * tl::keyswitch_key_samples(p) * n1;
};
const MadeKeys& made_keys() {
  static const MadeKeys m;
  return m;
}

tl::CloudKeySetFile cloud_keyset_from(const std::string& bytes) {
  std::istringstream in(bytes, std::ios::binary);
  return tl::read_cloud_keyset(in);
}
tl::SecretKeySetFile secret_keyset_from(const std::string& bytes) {
  std::istringstream in(bytes, std::ios::binary);
  return tl::read_secret_keyset(in);
}

double get_f64(const std::string& s, std::size_t offset) {
  std::uint64_t u = 0;
  for (int b = 7; b >= 0; --b) u = (u << 8) | static_cast<unsigned char>(s[offset + b]);
  return std::bit_cast<double>(u);
}
void put_f64(std::string& s, std::size_t offset, double v) {
  const auto u = std::bit_cast<std::uint64_t>(v);
  for (int b = 0; b < 8; ++b) s[offset + b] = static_cast<char>((u >> (8 * b)) & 0xff);
}

bool same_keys(const CloudKey& a, const CloudKey& b) {
  return a.parameters() == b.parameters() &&
         std::ranges::equal(a.bootstrapping_key().data(), b.bootstrapping_key().data()) &&
         std::ranges::equal(a.key_switching_key().data(), b.key_switching_key().data());
}

}  // namespace

TEST_CASE("tfhe_lib: the cloud keyset layout, word by word", "[tfhe_lib]") {
  const MadeKeys& m = made_keys();
  const Parameters& p = m.p;
  const std::string& f = m.cloud;
  // The parameter set file's blocks, then the LWEKSPARAMS block (n = k*N).
  const std::string params_txt = bytes_of([&](std::ostream& o) { tl::write_parameter_set(o, p); });
  REQUIRE(f.starts_with(params_txt));
  CHECK(f.substr(params_txt.size(), m.ks_id_at - params_txt.size()) ==
        "-----BEGIN LWEKSPARAMS-----\nbasebit:          3\nn:        256\nt:          5\n"
        "-----END LWEKSPARAMS-----\n");
  // Key switching: type id, sigma_lwe^2, then (i, j, v) samples of n+1 words, v = 0 zero.
  CHECK(get_i32(f, m.ks_id_at) == tl::keyswitch_key_type_id);
  CHECK(get_f64(f, m.ks_id_at + 4) == std::ldexp(1.0, -40));
  const KeySwitchingKey& ksk = m.ck.key_switching_key();
  for (std::size_t i : {std::size_t{0}, std::size_t{1}, std::size_t{255}}) {
    for (std::size_t j : {std::size_t{0}, std::size_t{4}}) {
      for (std::size_t v = 0; v < m.base; ++v) {
        INFO("i=" << i << " j=" << j << " v=" << v);
        const std::size_t at =
            m.ks_words_at + 4 * (((i * p.ks_level_count + j) * m.base + v) * m.n1);
        for (std::size_t w = 0; w < m.n1; ++w) {
          const std::uint32_t want = v == 0 ? 0 : ksk.level(i, j)[(v - 1) * m.n1 + w];
          REQUIRE(static_cast<std::uint32_t>(get_i32(f, at + 4 * w)) == want);
        }
      }
    }
  }
  // Bootstrapping: type id, sigma_glwe^2, then our words in order, to the end of the file.
  CHECK(get_i32(f, m.bk_id_at) == tl::bootstrapping_key_type_id);
  CHECK(get_f64(f, m.bk_id_at + 4) == std::ldexp(1.0, -60));
  const auto bk = m.ck.bootstrapping_key().data();
  REQUIRE(f.size() == m.bk_id_at + 12 + 4 * bk.size());
  for (std::size_t w = 0; w < bk.size(); w += 97) {
    REQUIRE(static_cast<std::uint32_t>(get_i32(f, m.bk_id_at + 12 + 4 * w)) == bk[w]);
  }
  CHECK(f.size() == tl::cloud_keyset_bytes(p));
  // The library's tfhe_lib_128 keyset: 113.7 MB of keys (82.7 MB key switching, 20.7 MB of it
  // the v = 0 rows; 31.0 MB bootstrapping) after its text.
  const std::string text_128 =
      bytes_of([](std::ostream& o) { tl::write_parameter_set(o, tfhe_lib_128()); }) +
      "-----BEGIN LWEKSPARAMS-----\nbasebit:          2\nn:       1024\nt:          8\n"
      "-----END LWEKSPARAMS-----\n";
  CHECK(tl::cloud_keyset_bytes(tfhe_lib_128()) ==
        text_128.size() + 24 + 4 * (1024 * 8 * 4 * 631 + 630 * 6 * 2048));
  CHECK(4 * (1024 * 8 * 4 * 631 + 630 * 6 * 2048) == 113672192);
  CHECK(tl::keyswitch_key_samples(tfhe_lib_128()) == 1024 * 8 * 4);
}

TEST_CASE("tfhe_lib: cloud keysets read back as the same key and write back byte-identical",
          "[tfhe_lib]") {
  const MadeKeys& m = made_keys();
  const tl::CloudKeySetFile back = cloud_keyset_from(m.cloud);
  CHECK(back.key.parameters() == m.p);
  CHECK(same_keys(back.key, m.ck));
  CHECK(back.ks_variance == tl::library_ks_variance(m.p));
  CHECK(back.bk_variance == tl::library_bk_variance(m.p));
  CHECK(back.ks_digit0.empty());  // all zero
  CHECK(bytes_of([&](std::ostream& o) { tl::write_cloud_keyset(o, back); }) == m.cloud);
  CHECK(bytes_of([&](std::ostream& o) { tl::write_cloud_keyset(o, back.key); }) == m.cloud);
  TempDir dir;
  tl::save_cloud_keyset(dir / "cloud.key", m.ck);
  CHECK(read_file(dir / "cloud.key") == m.cloud);
  const tl::CloudKeySetFile loaded = tl::load_cloud_keyset(dir / "cloud.key");
  CHECK(same_keys(loaded.key, m.ck));
  tl::save_cloud_keyset(dir / "again.key", loaded);
  CHECK(read_file(dir / "again.key") == m.cloud);

  // What an older library or another writer may store: noisy v = 0 rows, other variances. Kept.
  std::string other = m.cloud;
  put_f64(other, m.ks_id_at + 4, 0.0);
  put_f64(other, m.bk_id_at + 4, 1e-17);
  put_i32(other, m.ks_words_at + 4 * 3, 12345);                             // (0, 0, 0) word 3
  put_i32(other, m.ks_words_at + 4 * (m.base * m.n1 * 7 + m.p.lwe_dimension), -9);  // (1,2,0) b
  const tl::CloudKeySetFile odd = cloud_keyset_from(other);
  CHECK(same_keys(odd.key, m.ck));  // the keys themselves do not change
  CHECK(odd.ks_variance == 0.0);
  CHECK(odd.bk_variance == 1e-17);
  REQUIRE(odd.ks_digit0.size() == 256 * 5 * m.n1);
  CHECK(odd.ks_digit0[3] == 12345);
  CHECK(static_cast<std::int32_t>(odd.ks_digit0[7 * m.n1 + m.p.lwe_dimension]) == -9);
  CHECK(bytes_of([&](std::ostream& o) { tl::write_cloud_keyset(o, odd); }) == other);
  // Our CloudKey alone carries none of that: written from it, the file is v1.1's again.
  CHECK(bytes_of([&](std::ostream& o) { tl::write_cloud_keyset(o, odd.key); }) == m.cloud);

  // Every named set with a key of its own; toy_k2 has k = 2 (extracted key of 2N).
  const Parameters k2 = toy_k2_insecure();
  Csprng rng = seeded_rng(k2.fingerprint());
  const SecretKey sk2(k2, rng);
  const CloudKey ck2 = CloudKey::generate(sk2, rng);
  const std::string f2 = bytes_of([&](std::ostream& o) { tl::write_cloud_keyset(o, ck2); });
  CHECK(f2.size() == tl::cloud_keyset_bytes(k2));
  CHECK(f2.find("n:        512\nt:          5\n") != std::string::npos);
  CHECK(same_keys(cloud_keyset_from(f2).key, ck2));
  CHECK(tl::key_pair_problem(sk2, cloud_keyset_from(f2).key).empty());
}

TEST_CASE("tfhe_lib: secret keysets hold the cloud keyset and both secret keys", "[tfhe_lib]") {
  const MadeKeys& m = made_keys();
  // The cloud keyset, then the LWE key and the TGSW key without their blocks.
  const std::string lwe = bytes_of([&](std::ostream& o) { tl::write_lwe_key(o, m.sk); });
  const std::string tgsw = bytes_of([&](std::ostream& o) { tl::write_tgsw_key(o, m.sk); });
  CHECK(m.secret == m.cloud + lwe.substr(type_id_offset(lwe)) + tgsw.substr(type_id_offset(tgsw)));
  CHECK(m.secret.size() == tl::cloud_keyset_bytes(m.p) + 8 + 4 * (64 + 256));

  const tl::SecretKeySetFile back = secret_keyset_from(m.secret);
  CHECK(back.secret.parameters() == m.p);
  CHECK(std::ranges::equal(back.secret.lwe_key().coefficients(), m.sk.lwe_key().coefficients()));
  CHECK(std::ranges::equal(back.secret.glwe_key().coefficients(), m.sk.glwe_key().coefficients()));
  CHECK(same_keys(back.cloud.key, m.ck));
  CHECK(bytes_of([&](std::ostream& o) { tl::write_secret_keyset(o, back); }) == m.secret);
  TempDir dir;
  tl::save_secret_keyset(dir / "secret.key", m.sk, m.ck);
  CHECK(read_file(dir / "secret.key") == m.secret);
  const tl::SecretKeySetFile loaded = tl::load_secret_keyset(dir / "secret.key");
  tl::save_secret_keyset(dir / "again.key", loaded);
  CHECK(read_file(dir / "again.key") == m.secret);
  // The keys it holds work: decrypt what the secret key encrypts.
  const std::vector<std::uint8_t> bits = {1, 1, 0, 1};
  Csprng rng = seeded_rng(3);
  CHECK(decrypt_bits(loaded.secret, encrypt_bits(m.sk, bits, rng)) == bits);
}

TEST_CASE("tfhe_lib: key_pair_problem tells a cloud key made from other secret keys",
          "[tfhe_lib]") {
  const MadeKeys& m = made_keys();
  CHECK(tl::key_pair_problem(m.sk, m.ck).empty());
  // The tolerances: a quarter of the first level's step (2^-(3+2) for the key-switching key,
  // 2^-(10+2) for the bootstrapping key's gadget). A sample moved by half of it is accepted,
  // by twice it refused (a tolerance 4 times too wide passed the other-key cases below).
  {
    const std::size_t n = m.p.lwe_dimension, kN = m.p.extracted_lwe_dimension();
    const Torus32 ks_quarter = Torus32{1} << (32 - m.p.ks_base_log - 2);
    const Torus32 bk_quarter = Torus32{1} << (32 - m.p.bk_base_log - 2);
    const auto moved = [&](Torus32 ks_by, Torus32 bk_by) {
      std::vector<Torus32> ks(m.ck.key_switching_key().data().begin(),
                              m.ck.key_switching_key().data().end());
      std::vector<Torus32> bk(m.ck.bootstrapping_key().data().begin(),
                              m.ck.bootstrapping_key().data().end());
      ks[n] += ks_by;   // the body of sample (coefficient 0, level 1, digit 1)
      bk[kN] += bk_by;  // coefficient 0 of the body of TGSW sample 0's row 0
      return CloudKey(BootstrappingKey(m.p, std::move(bk)), KeySwitchingKey(m.p, std::move(ks)),
                      m.ck.key_id());
    };
    CHECK(tl::key_pair_problem(m.sk, moved(ks_quarter / 2, bk_quarter / 2)).empty());
    CHECK_THAT(tl::key_pair_problem(m.sk, moved(2 * ks_quarter, 0)),
               Contains("the key-switching key's sample for coefficient 0 of the extracted key, "
                        "level 1, digit 1 decrypts"));
    CHECK_THAT(tl::key_pair_problem(m.sk, moved(0, 2 * bk_quarter)),
               Contains("the bootstrapping key's TGSW sample 0") && Contains("row 0"));
  }
  Csprng rng = seeded_rng(0x0dd);
  const SecretKey other(m.p, rng);
  CHECK_THAT(tl::key_pair_problem(other, m.ck),
             Contains("the key-switching key's sample for coefficient 0 of the extracted key, "
                      "level 1, digit 1 decrypts"));
  // The same GLWE key, another LWE key: key switching fails (it outputs under s), and with the
  // key-switching key of the right LWE key the bootstrapping key's rows still give it away.
  const SecretKey mixed_lwe(m.p, other.lwe_key(), m.sk.glwe_key());
  CHECK_THAT(tl::key_pair_problem(mixed_lwe, m.ck), Contains("key-switching key's sample"));
  const CloudKey ksk_of_mixed = CloudKey::generate(mixed_lwe, rng);
  const CloudKey frankenstein(m.ck.bootstrapping_key(), ksk_of_mixed.key_switching_key());
  CHECK_THAT(tl::key_pair_problem(mixed_lwe, frankenstein),
             Contains("the bootstrapping key's TGSW sample") && Contains("does not encrypt bit"));
  const Parameters k2 = toy_k2_insecure();
  const SecretKey sk2(k2, rng);
  CHECK_THAT(tl::key_pair_problem(sk2, m.ck),
             Contains("the secret key is for parameter set 'toy_k2_INSECURE' but the cloud key "
                      "for 'toy_INSECURE'"));
  // The secret keyset writers refuse such pairs; the reader refuses such a file.
  std::ostringstream out;
  REQUIRE_INVALID_ARGUMENT(tl::write_secret_keyset(out, other, m.ck),
                           "the cloud key does not belong to the secret key");
  CHECK(out.str().empty());
  std::string swapped = m.secret;
  const std::string other_lwe = bytes_of([&](std::ostream& o) { tl::write_lwe_key(o, other); });
  const std::string other_content = other_lwe.substr(type_id_offset(other_lwe));
  swapped.replace(m.cloud.size(), other_content.size(), other_content);
  REQUIRE_THROWS_TYPE_WITH(secret_keyset_from(swapped), FormatError,
                           "the keyset's cloud key does not belong to its secret keys");
}

TEST_CASE("tfhe_lib: identify_file names every kind of library file", "[tfhe_lib]") {
  const MadeKeys& m = made_keys();
  const MadeHere& h = made();
  TempDir dir;
  const std::vector<std::pair<std::string, tl::FileKind>> files = {
      {h.params_txt, tl::FileKind::ParameterSet},
      {h.lwe_key, tl::FileKind::LweKey},
      {h.tgsw_key, tl::FileKind::TgswKey},
      {h.ctxt, tl::FileKind::GateCiphertexts},
      {m.cloud, tl::FileKind::CloudKeySet},
      {m.secret, tl::FileKind::SecretKeySet},
      // Damaged files are named by what they are meant to be; the loaders say what is wrong.
      {m.cloud.substr(0, m.cloud.size() - 5), tl::FileKind::CloudKeySet},
      {m.secret + "x", tl::FileKind::SecretKeySet},
      {replaced(m.cloud, "\nbasebit:          3", "\nbasebit: 9"), tl::FileKind::CloudKeySet},
      {h.params_txt + "junk", tl::FileKind::CloudKeySet},
      {replaced(h.params_txt, "Bgbit", "Bgbyt"), tl::FileKind::ParameterSet},
      {"", tl::FileKind::Unknown},
      {"# notes\n", tl::FileKind::Unknown},
      {"TGATEBIN", tl::FileKind::Unknown},
  };
  for (std::size_t i = 0; i < files.size(); ++i) {
    std::string name = "f";  // appended: GCC 12 warns (-Wrestrict) on "f" + string
    name += std::to_string(i);
    const fs::path path = dir / name;
    write_file(path, files[i].first);
    INFO("file " << i << ": " << files[i].first.substr(0, 40));
    CHECK(tl::file_kind_name(tl::identify_file(path)) == tl::file_kind_name(files[i].second));
  }
  REQUIRE_THROWS_TYPE_WITH(tl::identify_file(dir / "missing"), SystemError, "cannot open");
}

TEST_CASE("tfhe_lib: bad keysets are rejected naming the problem", "[tfhe_lib]") {
  const MadeKeys& m = made_keys();
  // Truncated: inside the text, at and around every part boundary, and through the keys.
  std::vector<std::size_t> lengths;
  for (std::size_t l = 0; l < m.ks_words_at + 8; ++l) lengths.push_back(l);
  for (std::size_t at : {m.bk_id_at, m.cloud.size()}) {
    for (std::size_t l = at - 16; l < at + 16 && l < m.cloud.size(); ++l) lengths.push_back(l);
  }
  for (std::size_t l = m.ks_words_at; l < m.cloud.size(); l += 4099) lengths.push_back(l);
  for (std::size_t length : lengths) {
    INFO("length " << length << " of " << m.cloud.size());
    try {
      cloud_keyset_from(m.cloud.substr(0, length));
      FAIL("no exception");
    } catch (const FormatError& e) {
      const std::string what = e.what();
      REQUIRE((what.find("truncated") != std::string::npos ||
               what.find("empty input") != std::string::npos));
    }
  }
  REQUIRE_THROWS_TYPE_WITH(
      cloud_keyset_from(m.cloud.substr(0, m.ks_words_at + 1000)), FormatError,
      "truncated: the key-switching key (10240 samples of n+1=65 int32) needs 2662400 bytes at "
      "offset " + std::to_string(m.ks_words_at) + " but the input ends after 1000 of them");
  REQUIRE_THROWS_TYPE_WITH(cloud_keyset_from(m.cloud.substr(0, m.cloud.size() - 1)), FormatError,
                           "truncated: the bootstrapping key (64 TGSW samples of 2048 int32) "
                           "needs 524288 bytes");
  REQUIRE_THROWS_TYPE_WITH(secret_keyset_from(m.cloud), FormatError,
                           "truncated: the LWE key type id needs 4 bytes at offset " +
                               std::to_string(m.cloud.size()));
  // A short file that names the largest set: the sizes are the set's, the memory the file's.
  std::string big = bytes_of([](std::ostream& o) { tl::write_parameter_set(o, default_128()); }) +
                    "-----BEGIN LWEKSPARAMS-----\nbasebit: 3\nn: 2048\nt: 5\n"
                    "-----END LWEKSPARAMS-----\n" + std::string(12 + 100, '\0');
  put_i32(big, big.size() - 112, tl::keyswitch_key_type_id);
  REQUIRE_THROWS_TYPE_WITH(cloud_keyset_from(big), FormatError,
                           "truncated: the key-switching key (81920 samples of n+1=838 int32) "
                           "needs 274595840 bytes at offset " + std::to_string(big.size() - 100) +
                               " but the input ends after 100 of them");

  // Type ids.
  std::string bad = m.cloud;
  put_i32(bad, m.ks_id_at, tl::bootstrapping_key_type_id);
  REQUIRE_THROWS_TYPE_WITH(cloud_keyset_from(bad), FormatError,
                           "the key-switching key type id at offset " +
                               std::to_string(m.ks_id_at) +
                               " is 201 but expected 200 (that is the type id of a "
                               "bootstrapping key)");
  bad = m.cloud;
  put_i32(bad, m.bk_id_at, 7);
  REQUIRE_THROWS_TYPE_WITH(cloud_keyset_from(bad), FormatError,
                           "the bootstrapping key type id at offset " +
                               std::to_string(m.bk_id_at) + " is 7 but expected 201");
  bad = m.secret;
  put_i32(bad, m.cloud.size(), tl::tgsw_key_type_id);
  REQUIRE_THROWS_TYPE_WITH(secret_keyset_from(bad), FormatError,
                           "the LWE key type id at offset " + std::to_string(m.cloud.size()) +
                               " is 169 but expected 43");

  // Variances.
  for (double v : {-1.0, std::nan(""), double{INFINITY}}) {
    INFO("variance " << v);
    bad = m.cloud;
    put_f64(bad, m.ks_id_at + 4, v);
    REQUIRE_THROWS_TYPE_WITH(cloud_keyset_from(bad), FormatError,
                             "the key-switching key's variance at offset " +
                                 std::to_string(m.ks_id_at + 4) + " is");
    bad = m.cloud;
    put_f64(bad, m.bk_id_at + 4, v);
    REQUIRE_THROWS_TYPE_WITH(cloud_keyset_from(bad), FormatError,
                             "but expected a finite non-negative number");
  }

  // The LWEKSPARAMS block must fit the parameter blocks, and must be there.
  REQUIRE_THROWS_TYPE_WITH(
      cloud_keyset_from(replaced(m.cloud, "n:        256\nt:          5", "n: 512\nt: 4")),
      FormatError,
      "does not fit the parameter set 'toy_INSECURE': n=512 (the parameter blocks give "
      "k*N=256), t=4 (the parameter blocks give ks_t=5)");
  REQUIRE_THROWS_TYPE_WITH(
      cloud_keyset_from(replaced(m.cloud, "\nbasebit:          3", "\nbasebit: 2")),
      FormatError, "basebit=2 (the parameter blocks give ks_basebit=3)");
  const std::size_t ks_block = m.cloud.find("-----BEGIN LWEKSPARAMS");
  REQUIRE_THROWS_TYPE_WITH(
      cloud_keyset_from(m.cloud.substr(0, ks_block) + m.cloud.substr(m.ks_id_at)), FormatError,
      "but expected the line '-----BEGIN LWEKSPARAMS-----'");
  // An unknown parameter set, found before anything is allocated.
  REQUIRE_THROWS_TYPE_WITH(
      cloud_keyset_from(replaced(m.cloud, "N:        256", "N: 1073741824")), FormatError,
      "no known parameter set has n=64 k=1 N=1073741824");

  // Secret keyset coefficients; trailing bytes after whole files.
  bad = m.secret;
  put_i32(bad, bad.size() - 4, 2);
  REQUIRE_THROWS_TYPE_WITH(secret_keyset_from(bad), FormatError,
                           "the TGSW key: coefficient 255");
  TempDir dir;
  write_file(dir / "cloud.key", m.cloud + "+");
  REQUIRE_THROWS_TYPE_WITH(tl::load_cloud_keyset(dir / "cloud.key"), FormatError,
                           "1 bytes of trailing data after the cloud keyset");
  write_file(dir / "secret.key", m.secret);
  REQUIRE_THROWS_TYPE_WITH(tl::load_cloud_keyset(dir / "secret.key"), FormatError,
                           "1288 bytes of trailing data after the cloud keyset");
  write_file(dir / "secret.key", m.secret + m.secret.substr(0, 3));
  REQUIRE_THROWS_TYPE_WITH(tl::load_secret_keyset(dir / "secret.key"), FormatError,
                           "3 bytes of trailing data after the secret keyset");
  REQUIRE_THROWS_TYPE_WITH(tl::load_cloud_keyset(dir / "missing.key"), SystemError,
                           (dir / "missing.key").string());
}

TEST_CASE("tfhe_lib: keyset writers validate their input", "[tfhe_lib]") {
  const MadeKeys& m = made_keys();
  std::ostringstream out;
  REQUIRE_INVALID_ARGUMENT(tl::write_cloud_keyset(out, CloudKey{}), "default-constructed");
  tl::CloudKeySetFile file = tl::cloud_keyset_file(m.ck);
  file.ks_variance = -1;
  REQUIRE_INVALID_ARGUMENT(tl::write_cloud_keyset(out, file), "ks_variance=-1");
  file.ks_variance = 0;
  file.bk_variance = std::nan("");
  REQUIRE_INVALID_ARGUMENT(tl::write_cloud_keyset(out, file), "bk_variance=nan");
  file.bk_variance = 0;
  file.ks_digit0.assign(10, 0);
  REQUIRE_INVALID_ARGUMENT(tl::write_cloud_keyset(out, file),
                           "ks_digit0 has 10 words but expected none or k*N*t*(n+1)=83200");
  REQUIRE_INVALID_ARGUMENT(tl::write_secret_keyset(out, SecretKey{}, m.ck), "default-constructed");
  CHECK(out.str().empty());
  // A bad argument never truncates an existing file.
  TempDir dir;
  write_file(dir / "keep.key", "precious");
  REQUIRE_INVALID_ARGUMENT(tl::save_cloud_keyset(dir / "keep.key", file), "ks_digit0");
  Csprng rng = seeded_rng(9);
  REQUIRE_INVALID_ARGUMENT(tl::save_secret_keyset(dir / "keep.key", SecretKey(m.p, rng), m.ck),
                           "does not belong");
  CHECK(read_file(dir / "keep.key") == "precious");
  std::ostringstream failed;
  failed.setstate(std::ios::badbit);
  REQUIRE_THROWS_TYPE_WITH(tl::write_cloud_keyset(failed, m.ck), SystemError,
                           "tfhe_lib::write_cloud_keyset: the output stream failed");
}

TEST_CASE("tfhe_lib: keyset stream readers consume one object", "[tfhe_lib]") {
  const MadeKeys& m = made_keys();
  std::istringstream in(m.secret + m.cloud + made().params_txt, std::ios::binary);
  CHECK(same_keys(tl::read_secret_keyset(in).cloud.key, m.ck));
  CHECK(same_keys(tl::read_cloud_keyset(in).key, m.ck));
  CHECK(tl::read_parameter_set(in) == tfhe_lib_128());
  CHECK(in.peek() == std::char_traits<char>::eof());
}

// The saved fuzzing regression inputs of the keyset reader (fuzz/regressions/): a 572-byte file
// whose text blocks name tfhe_lib_128 or default_128 and whose key bytes stop after 72. The
// reader must say "truncated" without first allocating the whole 62 MB / 240 MB key (the
// fuzzer replays them under a 32 MB allocation limit; here: the error itself).
TEST_CASE("tfhe_lib: keyset inputs that name a large set but hold no key are refused",
          "[tfhe_lib][fuzz]") {
  const std::filesystem::path dir =
      std::filesystem::path(TORUSGATE_FUZZ_REGRESSIONS) / "tfhe_lib_cloud_keyset";
  std::size_t seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    INFO(entry.path().string());
    const std::string bytes = read_file(entry.path());
    std::istringstream in(bytes);
    CHECK_THROWS_AS(tl::read_cloud_keyset(in), FormatError);
    std::istringstream again(bytes);
    CHECK_THROWS_WITH(tl::read_cloud_keyset(again), Contains("truncated"));
    ++seen;
  }
  CHECK(seen == 2);
}
