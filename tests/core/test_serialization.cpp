// Tests of the native binary file format (serialization.hpp): bit-exact round trips of every
// object type, the documented byte layout, and one test per kind of bad file.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <streambuf>
#include <string>
#include <vector>

#include "torusgate/core/error.hpp"
#include "torusgate/core/glwe.hpp"
#include "torusgate/core/keys.hpp"
#include "torusgate/core/params.hpp"
#include "torusgate/core/random.hpp"
#include "torusgate/core/serialization.hpp"
#include "test_files.hpp"

using torusgate::test::bytes_of;
using torusgate::test::read_file;
using torusgate::test::TempDir;
using torusgate::test::write_file;

using torusgate::test::read_file;
using torusgate::test::TempDir;
using torusgate::test::write_file;

namespace {

using namespace torusgate;
namespace fs = std::filesystem;
using Catch::Contains;

Csprng test_rng(std::uint64_t seed) {
  return Csprng::deterministic(seed, testing::insecure_deterministic);
}

// ---- the layout of serialization.hpp, re-encoded here by hand -------------------------------

constexpr std::size_t header_prefix_bytes = 24;  // magic, version, type, fingerprint

// Where the body starts in a version 1 or 2 file: after the parameters record.
std::size_t body_offset(const Parameters& p) {
  return header_prefix_bytes + 4 + p.name.size() + 7 * 4 + 2 * 8 + 4;
}
// In a version 3 file (a secret key; a cloud key, ciphertext batch or integer array that names
// its key): after the key id.
std::size_t body_offset_v3(const Parameters& p) { return body_offset(p) + 8; }

// The cloud key without its key id: what a version 1 or 2 file holds.
CloudKey without_key_id(const CloudKey& ck) {
  return CloudKey(ck.bootstrapping_key(), ck.key_switching_key());
}

void append_u32(std::string& s, std::uint32_t v) {
  for (int b = 0; b < 4; ++b) s += static_cast<char>((v >> (8 * b)) & 0xff);
}
void append_u64(std::string& s, std::uint64_t v) {
  for (int b = 0; b < 8; ++b) s += static_cast<char>((v >> (8 * b)) & 0xff);
}
void put_u32(std::string& s, std::size_t offset, std::uint32_t v) {
  for (int b = 0; b < 4; ++b) s[offset + b] = static_cast<char>((v >> (8 * b)) & 0xff);
}
void put_u64(std::string& s, std::size_t offset, std::uint64_t v) {
  for (int b = 0; b < 8; ++b) s[offset + b] = static_cast<char>((v >> (8 * b)) & 0xff);
}
std::uint32_t get_u32(const std::string& s, std::size_t offset) {
  std::uint32_t v = 0;
  for (int b = 3; b >= 0; --b) v = (v << 8) | static_cast<unsigned char>(s[offset + b]);
  return v;
}
std::uint64_t get_u64(const std::string& s, std::size_t offset) {
  std::uint64_t v = 0;
  for (int b = 7; b >= 0; --b) v = (v << 8) | static_cast<unsigned char>(s[offset + b]);
  return v;
}

std::uint64_t fnv1a(const std::string& s, std::size_t size) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (std::size_t i = 0; i < size; ++i) {
    h ^= static_cast<unsigned char>(s[i]);
    h *= 0x100000001b3ULL;
  }
  return h;
}

// Appends the checksum of everything in `s`.
std::string seal(std::string s) {
  append_u64(s, fnv1a(s, s.size()));
  return s;
}
// Recomputes the trailing checksum after an edit, so that only the edit is wrong.
void reseal(std::string& s) { put_u64(s, s.size() - 8, fnv1a(s, s.size() - 8)); }

std::string encode_header(std::uint32_t type, const Parameters& p, std::uint64_t fingerprint) {
  std::string s = "TGATEBIN";
  append_u32(s, 1);
  append_u32(s, type);
  append_u64(s, fingerprint);
  append_u32(s, static_cast<std::uint32_t>(p.name.size()));
  s += p.name;
  for (std::uint32_t v : {p.lwe_dimension, p.glwe_dimension, p.polynomial_size, p.bk_base_log,
                          p.bk_level_count, p.ks_base_log, p.ks_level_count}) {
    append_u32(s, v);
  }
  append_u64(s, std::bit_cast<std::uint64_t>(p.lwe_noise_stddev));
  append_u64(s, std::bit_cast<std::uint64_t>(p.glwe_noise_stddev));
  append_u32(s, p.insecure ? 1 : 0);
  return s;
}

// ---- streams ---------------------------------------------------------------------------------

Parameters parameters_from(const std::string& bytes) {
  std::istringstream in(bytes, std::ios::binary);
  return read_parameters(in);
}
SecretKey secret_key_from(const std::string& bytes) {
  std::istringstream in(bytes, std::ios::binary);
  return read_secret_key(in);
}
CloudKey cloud_key_from(const std::string& bytes) {
  std::istringstream in(bytes, std::ios::binary);
  return read_cloud_key(in);
}
LweBatch ciphertexts_from(const std::string& bytes, const Parameters& expected) {
  std::istringstream in(bytes, std::ios::binary);
  return read_ciphertexts(in, expected);
}

// A read-only stream buffer that cannot seek, like a pipe: readers cannot learn its size.
class OneWayBuf : public std::streambuf {
 public:
  explicit OneWayBuf(std::string bytes) : bytes_(std::move(bytes)) {
    setg(bytes_.data(), bytes_.data(), bytes_.data() + bytes_.size());
  }

 private:
  std::string bytes_;
};

LweBatch ciphertexts_from_pipe(const std::string& bytes, const Parameters& expected) {
  OneWayBuf buf(bytes);
  std::istream in(&buf);
  return read_ciphertexts(in, expected);
}
CloudKey cloud_key_from_pipe(const std::string& bytes) {
  OneWayBuf buf(bytes);
  std::istream in(&buf);
  return read_cloud_key(in);
}

// ---- files -----------------------------------------------------------------------------------

// ---- fixtures and comparisons ----------------------------------------------------------------

struct ToyKeys {
  Csprng rng = test_rng(20240611);
  SecretKey sk{toy_insecure(), rng};
  CloudKey ck = CloudKey::generate(sk, rng);
};
const ToyKeys& toy_keys() {
  static const ToyKeys keys;
  return keys;
}

bool bit_identical(const Parameters& a, const Parameters& b) {
  return a == b && std::bit_cast<std::uint64_t>(a.lwe_noise_stddev) ==
                       std::bit_cast<std::uint64_t>(b.lwe_noise_stddev) &&
         std::bit_cast<std::uint64_t>(a.glwe_noise_stddev) ==
             std::bit_cast<std::uint64_t>(b.glwe_noise_stddev) &&
         a.fingerprint() == b.fingerprint();
}

bool same_secret_key(const SecretKey& a, const SecretKey& b) {
  return bit_identical(a.parameters(), b.parameters()) &&
         std::ranges::equal(a.lwe_key().coefficients(), b.lwe_key().coefficients()) &&
         std::ranges::equal(a.glwe_key().coefficients(), b.glwe_key().coefficients()) &&
         a.glwe_key().glwe_dimension() == b.glwe_key().glwe_dimension() &&
         a.glwe_key().polynomial_size() == b.glwe_key().polynomial_size();
}

bool same_cloud_key(const CloudKey& a, const CloudKey& b) {
  return bit_identical(a.parameters(), b.parameters()) &&
         bit_identical(a.key_switching_key().parameters(), b.key_switching_key().parameters()) &&
         a.bootstrapping_key().unroll() == b.bootstrapping_key().unroll() &&
         std::ranges::equal(a.bootstrapping_key().data(), b.bootstrapping_key().data()) &&
         std::ranges::equal(a.key_switching_key().data(), b.key_switching_key().data());
}

LweBatch toy_ciphertexts(std::size_t count, std::uint64_t seed) {
  Csprng rng = test_rng(seed);
  std::vector<std::uint8_t> bits(count);
  for (std::size_t i = 0; i < count; ++i) bits[i] = static_cast<std::uint8_t>((i * 7 + seed) % 2);
  return encrypt_bits(toy_keys().sk, bits, rng);
}

std::size_t bk_words(const Parameters& p) { return std::size_t{p.lwe_dimension} * ggsw_size(p); }

}  // namespace

// ---- round trips -----------------------------------------------------------------------------

TEST_CASE("serialization: parameters round trip bit-exactly for every named set",
          "[serialization]") {
  std::vector<Parameters> sets = all_parameter_sets();
  // Noise values with awkward bit patterns: a subnormal and a non-dyadic decimal.
  sets.push_back(Parameters{"custom_INSECURE", 700, 2, 512, 8, 3, 4, 4, 0.1, 4.9e-324, true});
  for (const Parameters& p : sets) {
    INFO("parameter set " << p.name);
    const std::string bytes = bytes_of([&](std::ostream& out) { write_parameters(out, p); });
    CHECK(bytes.size() == body_offset(p) + 8);
    const Parameters q = parameters_from(bytes);
    CHECK(bit_identical(q, p));
  }
}

TEST_CASE("serialization: the byte layout is the documented little-endian one",
          "[serialization]") {
  const Parameters p = toy_insecure();
  const std::string bytes = bytes_of([&](std::ostream& out) { write_parameters(out, p); });
  CHECK(bytes.substr(0, 8) == "TGATEBIN");
  CHECK(bytes.substr(8, 4) == std::string("\x01\x00\x00\x00", 4));   // version 1
  CHECK(bytes.substr(12, 4) == std::string("\x01\x00\x00\x00", 4));  // type: parameters
  CHECK(get_u64(bytes, 16) == p.fingerprint());
  CHECK(bytes.substr(24, 4) == std::string("\x0c\x00\x00\x00", 4));  // name length 12
  CHECK(bytes.substr(28, 12) == "toy_INSECURE");
  CHECK(bytes.substr(40, 4) == std::string("\x40\x00\x00\x00", 4));  // n = 64
  CHECK(bytes.substr(48, 4) == std::string("\x00\x01\x00\x00", 4));  // N = 256
  // The whole file, re-encoded by hand from the layout in serialization.hpp.
  CHECK(bytes == seal(encode_header(1, p, p.fingerprint())));

  // A ciphertext batch: count, words per sample, then the words.
  const LweBatch batch = toy_ciphertexts(3, 5);
  const std::string ct = bytes_of([&](std::ostream& out) { write_ciphertexts(out, p, batch); });
  std::string expected = encode_header(4, p, p.fingerprint());
  append_u64(expected, 3);
  append_u64(expected, 65);
  for (Torus32 w : batch.data()) append_u32(expected, w);
  CHECK(ct == seal(expected));
}

TEST_CASE("serialization: secret key round trip (toy_insecure)", "[serialization]") {
  const SecretKey& sk = toy_keys().sk;
  const std::string bytes = bytes_of([&](std::ostream& out) { write_secret_key(out, sk); });
  CHECK(bytes.size() == body_offset_v3(sk.parameters()) + 8 + 64 * 4 + 8 + 256 * 4 + 8);
  const SecretKey back = secret_key_from(bytes);
  CHECK(same_secret_key(back, sk));
  // The loaded key decrypts what the original encrypted.
  const LweBatch batch = toy_ciphertexts(16, 3);
  CHECK(decrypt_bits(back, batch) == decrypt_bits(sk, batch));
}

TEST_CASE("serialization: secret key and ciphertexts round trip (tfhe_lib_128)",
          "[serialization]") {
  Csprng rng = test_rng(128);
  const SecretKey sk(tfhe_lib_128(), rng);
  const std::vector<std::uint8_t> bits = {1, 0, 0, 1, 1, 1, 0, 1};
  const LweBatch batch = encrypt_bits(sk, bits, rng);

  const SecretKey sk_back =
      secret_key_from(bytes_of([&](std::ostream& out) { write_secret_key(out, sk); }));
  CHECK(same_secret_key(sk_back, sk));
  const std::string ct =
      bytes_of([&](std::ostream& out) { write_ciphertexts(out, sk.parameters(), batch); });
  const LweBatch batch_back = ciphertexts_from(ct, tfhe_lib_128());
  CHECK(batch_back == batch);
  CHECK(decrypt_bits(sk_back, batch_back) == bits);
}

TEST_CASE("serialization: cloud key round trip (toy_insecure)", "[serialization]") {
  const CloudKey& ck = toy_keys().ck;
  const std::string bytes = bytes_of([&](std::ostream& out) { write_cloud_key(out, ck); });
  const Parameters& p = ck.parameters();
  // Version 3: the key id, the form (1), the two keys.
  CHECK(bytes.size() ==
        body_offset_v3(p) + 4 + 8 + 4 * bk_words(p) + 8 + 4 * KeySwitchingKey::size(p) + 8);
  CHECK(same_cloud_key(cloud_key_from(bytes), ck));
  CHECK(cloud_key_from(bytes).key_id() == toy_keys().sk.key_id());
  // The same through a stream that cannot seek (payload read chunk by chunk).
  CHECK(same_cloud_key(cloud_key_from_pipe(bytes), ck));
}

TEST_CASE("serialization: an unrolled cloud key is format version 2 with its form; bad forms",
          "[serialization][unroll]") {
  Csprng rng = test_rng(77);
  // Without a key id (a key made by an older build, or from the TFHE library's cloud keyset).
  const CloudKey ck = without_key_id(CloudKey::generate(toy_keys().sk, rng, 2));
  const Parameters& p = ck.parameters();
  const std::string bytes = bytes_of([&](std::ostream& out) { write_cloud_key(out, ck); });
  const std::size_t words = BootstrappingKey::ggsw_count(p, 2) * ggsw_size(p);
  CHECK(bytes.size() == body_offset(p) + 4 + 8 + 4 * words + 8 + 4 * KeySwitchingKey::size(p) + 8);
  CHECK(bytes.substr(8, 4) == std::string("\x02\x00\x00\x00", 4));
  CHECK(bytes.substr(body_offset(p), 4) == std::string("\x02\x00\x00\x00", 4));
  const CloudKey back = cloud_key_from(bytes);
  CHECK(back.bootstrapping_key().unroll() == 2);
  CHECK(same_cloud_key(back, ck));
  CHECK(same_cloud_key(cloud_key_from_pipe(bytes), ck));
  // A standard key stays version 1, readable by older builds.
  const std::string standard =
      bytes_of([&](std::ostream& out) { write_cloud_key(out, without_key_id(toy_keys().ck)); });
  CHECK(standard.substr(8, 4) == std::string("\x01\x00\x00\x00", 4));
  // Files: describe_file names the version and the form.
  TempDir dir;
  save_cloud_key(dir / "u.tgck", ck);
  const std::string line = describe_file(dir / "u.tgck");
  CHECK_THAT(line, Contains("cloud key, format version 2") && Contains("unrolled"));
  CHECK(read_file_header(dir / "u.tgck").version == 2);
  CHECK(same_cloud_key(load_cloud_key(dir / "u.tgck"), ck));
  // Key bits in threes: the same format, form 3.
  const CloudKey threes = without_key_id(CloudKey::generate(toy_keys().sk, rng, 3));
  const std::string threes_bytes =
      bytes_of([&](std::ostream& out) { write_cloud_key(out, threes); });
  CHECK(threes_bytes.substr(body_offset(p), 4) == std::string("\x03\x00\x00\x00", 4));
  CHECK(threes_bytes.size() == body_offset(p) + 4 + 8 +
                                   4 * BootstrappingKey::ggsw_count(p, 3) * ggsw_size(p) + 8 +
                                   4 * KeySwitchingKey::size(p) + 8);
  const CloudKey threes_back = cloud_key_from(threes_bytes);
  CHECK(threes_back.bootstrapping_key().unroll() == 3);
  CHECK(same_cloud_key(threes_back, threes));
  save_cloud_key(dir / "u3.tgck", threes);
  CHECK_THAT(describe_file(dir / "u3.tgck"), Contains("unrolled (unroll 3)"));
  // Key bits in fours: form 4, read back the same.
  const CloudKey fours = without_key_id(CloudKey::generate(toy_keys().sk, rng, 4));
  const std::string fours_bytes = bytes_of([&](std::ostream& out) { write_cloud_key(out, fours); });
  CHECK(fours_bytes.substr(body_offset(p), 4) == std::string("\x04\x00\x00\x00", 4));
  CHECK(same_cloud_key(cloud_key_from(fours_bytes), fours));
  // A form other than 1 to 4, even with the right checksum.
  std::string bad = bytes;
  put_u32(bad, body_offset(p), 5);
  reseal(bad);
  CHECK_THROWS_AS(cloud_key_from(bad), FormatError);
  CHECK_THROWS_WITH(cloud_key_from(bad), Contains("bootstrapping key form (unroll) 5"));
  // Form 4 on another form's words: its count is checked (a key in fours is 15 GGSW a group).
  put_u32(bad, body_offset(p), 4);
  reseal(bad);
  CHECK_THROWS_WITH(cloud_key_from(bad), Contains("the bootstrapping key word count is"));
  put_u32(bad, body_offset(p), 0);
  reseal(bad);
  CHECK_THROWS_WITH(cloud_key_from(bad), Contains("bootstrapping key form (unroll) 0"));
  // Form 3 on a pair key's words: the count must then be the threes' key's.
  put_u32(bad, body_offset(p), 3);
  reseal(bad);
  CHECK_THROWS_WITH(cloud_key_from(bad), Contains("bootstrapping key word count"));
  // Form 1 in a version 2 file: refused, as a standard key has its own encoding (version 1).
  put_u32(bad, body_offset(p), 1);
  reseal(bad);
  CHECK_THROWS_WITH(cloud_key_from(bad),
                    Contains("bootstrapping key form (unroll) 1 in a version 2 file"));
  // The unrolled words under a version 1 header (no form field): the count is wrong for it.
  std::string v1 = bytes.substr(0, body_offset(p)) + bytes.substr(body_offset(p) + 4);
  put_u32(v1, 8, 1);
  reseal(v1);
  CHECK_THROWS_WITH(cloud_key_from(v1), Contains("bootstrapping key word count"));
  // Truncated inside the form field.
  CHECK_THROWS_WITH(cloud_key_from(bytes.substr(0, body_offset(p) + 2)),
                    Contains("truncated") && Contains("form"));
}

TEST_CASE("serialization: cloud key round trip (tfhe_lib_128, 93 MB)", "[serialization][slow]") {
  Csprng rng = test_rng(93);
  const SecretKey sk(tfhe_lib_128(), rng);
  const CloudKey ck = CloudKey::generate(sk, rng);
  const std::string bytes = bytes_of([&](std::ostream& out) { write_cloud_key(out, ck); });
  CHECK(same_cloud_key(cloud_key_from(bytes), ck));
}

TEST_CASE("serialization: ciphertext batches round trip, empty batch included",
          "[serialization]") {
  const Parameters p = toy_insecure();
  for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{37}}) {
    INFO("count " << count);
    const LweBatch batch = toy_ciphertexts(count, count + 1);
    const std::string bytes =
        bytes_of([&](std::ostream& out) { write_ciphertexts(out, p, batch); });
    CHECK(ciphertexts_from(bytes, p) == batch);
    CHECK(ciphertexts_from_pipe(bytes, p) == batch);
  }
}

TEST_CASE("serialization: several objects in one stream, peek_object_type",
          "[serialization]") {
  const Parameters p = toy_insecure();
  const LweBatch batch = toy_ciphertexts(4, 9);
  std::stringstream io(std::ios::in | std::ios::out | std::ios::binary);
  write_parameters(io, p);
  write_secret_key(io, toy_keys().sk);
  write_ciphertexts(io, p, batch);

  CHECK(peek_object_type(io) == ObjectType::Parameters);
  CHECK(peek_object_type(io) == ObjectType::Parameters);  // peeking does not consume
  CHECK(read_parameters(io) == p);
  CHECK(peek_object_type(io) == ObjectType::SecretKey);
  CHECK(same_secret_key(read_secret_key(io), toy_keys().sk));
  CHECK(peek_object_type(io) == ObjectType::CiphertextBatch);
  CHECK(read_ciphertexts(io, p) == batch);
  CHECK(io.peek() == std::char_traits<char>::eof());

  // A stream that cannot seek cannot be peeked (the header could not be put back).
  OneWayBuf buf(bytes_of([&](std::ostream& out) { write_parameters(out, p); }));
  std::istream pipe(&buf);
  CHECK_THROWS_AS(peek_object_type(pipe), SystemError);

  CHECK(object_type_name(ObjectType::CloudKey) == "cloud key");
  CHECK(object_type_name(static_cast<ObjectType>(9)) == "unknown object type 9");
}

TEST_CASE("serialization: save and load files, describe_file", "[serialization]") {
  const TempDir dir;
  const Parameters p = toy_insecure();
  const LweBatch batch = toy_ciphertexts(5, 11);

  save_parameters(dir / "params.tg", p);
  save_secret_key(dir / "secret.tg", toy_keys().sk);
  save_cloud_key(dir / "cloud.tg", without_key_id(toy_keys().ck));
  save_ciphertexts(dir / "bits.tg", p, batch);

  CHECK(bit_identical(load_parameters(dir / "params.tg"), p));
  CHECK(same_secret_key(load_secret_key(dir / "secret.tg"), toy_keys().sk));
  CHECK(same_cloud_key(load_cloud_key(dir / "cloud.tg"), toy_keys().ck));
  CHECK(load_ciphertexts(dir / "bits.tg", p) == batch);

  // Saving over an existing file replaces it.
  save_parameters(dir / "params.tg", tfhe_lib_80());
  CHECK(bit_identical(load_parameters(dir / "params.tg"), tfhe_lib_80()));

  const std::string cloud = describe_file(dir / "cloud.tg");
  CHECK_THAT(cloud, Contains("cloud key") && Contains("format version 1") &&
                        Contains("'toy_INSECURE'") && Contains("INSECURE,") &&
                        Contains("bootstrapping key " + std::to_string(bk_words(p)) + " words") &&
                        Contains(std::to_string(fs::file_size(dir / "cloud.tg")) + " bytes"));
  CHECK(cloud.find('\n') == std::string::npos);
  CHECK_THAT(describe_file(dir / "secret.tg"),
             Contains("secret key") && Contains("LWE key 64 coefficients"));
  CHECK_THAT(describe_file(dir / "bits.tg"),
             Contains("ciphertext batch") && Contains("5 samples of 65 words"));
  CHECK_THAT(describe_file(dir / "params.tg"),
             Contains("parameters") && Contains("'tfhe_lib_80'") && Contains("n=500"));
}

// ---- bad files: one test per kind -------------------------------------------------------------

TEST_CASE("serialization: an empty input is rejected", "[serialization]") {
  CHECK_THROWS_AS(parameters_from(""), FormatError);
  CHECK_THROWS_WITH(secret_key_from(""), Contains("empty"));
  CHECK_THROWS_WITH(ciphertexts_from_pipe("", toy_insecure()), Contains("empty"));
  const TempDir dir;
  write_file(dir / "empty.tg", "");
  CHECK_THROWS_AS(load_cloud_key(dir / "empty.tg"), FormatError);
  CHECK_THROWS_WITH(load_cloud_key(dir / "empty.tg"), Contains("empty") && Contains("empty.tg"));
  CHECK_THROWS_WITH(describe_file(dir / "empty.tg"), Contains("empty"));
}

TEST_CASE("serialization: truncated input is rejected at every length", "[serialization]") {
  const Parameters p = toy_insecure();
  const std::string sk = bytes_of([&](std::ostream& out) { write_secret_key(out, toy_keys().sk); });
  const std::string ct = bytes_of(
      [&](std::ostream& out) { write_ciphertexts(out, p, toy_ciphertexts(3, 1)); });
  for (std::size_t length = 0; length < sk.size(); ++length) {
    INFO("secret key cut to " << length << " of " << sk.size() << " bytes");
    REQUIRE_THROWS_AS(secret_key_from(sk.substr(0, length)), FormatError);
  }
  for (std::size_t length = 0; length < ct.size(); ++length) {
    INFO("ciphertexts cut to " << length << " of " << ct.size() << " bytes");
    REQUIRE_THROWS_AS(ciphertexts_from(ct.substr(0, length), p), FormatError);
    REQUIRE_THROWS_AS(ciphertexts_from_pipe(ct.substr(0, length), p), FormatError);
  }
}

TEST_CASE("serialization: truncation messages say what was cut and how many bytes it needs",
          "[serialization]") {
  const CloudKey& ck = toy_keys().ck;
  const Parameters& p = ck.parameters();
  const std::string bytes = bytes_of([&](std::ostream& out) { write_cloud_key(out, ck); });
  const std::string bk_bytes = std::to_string(4 * bk_words(p));

  // In the header (inside the fingerprint field at offset 16).
  CHECK_THROWS_WITH(cloud_key_from(bytes.substr(0, 20)),
                    Contains("truncated") && Contains("fingerprint needs 8 bytes at offset 16"));
  // In the middle of the bootstrapping key, with a seekable and a one-way stream.
  const std::string half = bytes.substr(0, body_offset_v3(p) + 4 + 8 + 2 * bk_words(p));
  CHECK_THROWS_WITH(cloud_key_from(half),
                    Contains("truncated") && Contains("bootstrapping key needs " + bk_bytes));
  CHECK_THROWS_WITH(cloud_key_from_pipe(half),
                    Contains("truncated") && Contains("bootstrapping key needs " + bk_bytes));
  // The last byte (of the checksum) missing.
  CHECK_THROWS_WITH(cloud_key_from(bytes.substr(0, bytes.size() - 1)),
                    Contains("truncated") && Contains("checksum needs 8 bytes"));
  // A truncated file names its path.
  const TempDir dir;
  write_file(dir / "cut.tg", bytes.substr(0, bytes.size() / 2));
  CHECK_THROWS_WITH(load_cloud_key(dir / "cut.tg"), Contains("cut.tg") && Contains("truncated"));
}

TEST_CASE("serialization: wrong magic is rejected", "[serialization]") {
  std::string bytes = bytes_of([&](std::ostream& out) { write_parameters(out, toy_insecure()); });
  bytes[3] = 'X';
  CHECK_THROWS_AS(parameters_from(bytes), FormatError);
  CHECK_THROWS_WITH(parameters_from(bytes), Contains("not a torusgate file") && Contains("magic"));
  CHECK_THROWS_WITH(parameters_from("this is some text, not a key file at all"),
                    Contains("magic"));
}

TEST_CASE("serialization: wrong format version is rejected", "[serialization]") {
  std::string bytes = bytes_of([&](std::ostream& out) { write_secret_key(out, toy_keys().sk); });
  put_u32(bytes, 8, 7);
  CHECK_THROWS_AS(secret_key_from(bytes), FormatError);
  CHECK_THROWS_WITH(secret_key_from(bytes),
                    Contains("version 7 but this build reads versions 1 to 3"));
  reseal(bytes);  // still rejected when the checksum is right
  CHECK_THROWS_WITH(secret_key_from(bytes), Contains("version 7"));
  std::istringstream in(bytes);
  CHECK_THROWS_WITH(peek_object_type(in), Contains("version 7"));
}

TEST_CASE("serialization: wrong object type is rejected", "[serialization]") {
  const std::string sk = bytes_of([&](std::ostream& out) { write_secret_key(out, toy_keys().sk); });
  CHECK_THROWS_AS(cloud_key_from(sk), FormatError);
  CHECK_THROWS_WITH(cloud_key_from(sk),
                    Contains("expected a cloud key but the file holds a secret key"));
  CHECK_THROWS_WITH(ciphertexts_from(sk, toy_insecure()),
                    Contains("expected a ciphertext batch but the file holds a secret key"));
  CHECK_THROWS_WITH(parameters_from(sk), Contains("expected parameters"));

  std::string unknown = sk;
  put_u32(unknown, 12, 9);
  reseal(unknown);
  CHECK_THROWS_WITH(secret_key_from(unknown), Contains("unknown object type 9"));

  const TempDir dir;
  write_file(dir / "secret.tg", sk);
  CHECK_THROWS_WITH(load_ciphertexts(dir / "secret.tg", toy_insecure()),
                    Contains("secret.tg") && Contains("holds a secret key"));
}

TEST_CASE("serialization: parameter fingerprint mismatch is rejected", "[serialization]") {
  // A set of its own (a toy set's name on other values is refused before the fingerprint); a
  // name as long as toy_INSECURE's keeps the offsets below.
  Parameters p = toy_insecure();
  p.name = "own_INSECURE";
  const std::string good = bytes_of([&](std::ostream& out) { write_parameters(out, p); });
  // A corrupted fingerprint.
  std::string bytes = good;
  bytes[17] ^= 0x10;
  CHECK_THROWS_AS(parameters_from(bytes), FormatError);
  CHECK_THROWS_WITH(parameters_from(bytes), Contains("fingerprint mismatch"));
  // Parameters edited after writing (n 64 -> 65, still a valid set): the header disagrees.
  bytes = good;
  put_u32(bytes, 40, 65);
  reseal(bytes);
  CHECK_THROWS_WITH(parameters_from(bytes), Contains("fingerprint mismatch"));
  // The noise changed in its last bit only (lwe_noise_stddev is at offset 68).
  bytes = good;
  bytes[68] ^= 0x01;
  reseal(bytes);
  CHECK_THROWS_WITH(parameters_from(bytes), Contains("fingerprint mismatch"));
}

TEST_CASE("serialization: invalid embedded parameters are rejected", "[serialization]") {
  Parameters bad = toy_insecure();
  bad.polynomial_size = 100;  // not a power of two: validate() refuses it
  std::string bytes = seal(encode_header(1, bad, bad.fingerprint()));
  CHECK_THROWS_AS(parameters_from(bytes), FormatError);
  CHECK_THROWS_WITH(parameters_from(bytes),
                    Contains("invalid embedded parameters") && Contains("polynomial_size"));

  // Name length 0, a huge name length, a control character in the name.
  bytes = seal(encode_header(1, toy_insecure(), toy_insecure().fingerprint()));
  std::string zero = bytes;
  put_u32(zero, 24, 0);
  CHECK_THROWS_WITH(parameters_from(zero), Contains("name length is 0"));
  std::string huge = bytes;
  put_u32(huge, 24, 0xffffffffu);
  CHECK_THROWS_WITH(parameters_from(huge), Contains("name length is 4294967295"));
  // The name's bound exactly: 255 bytes read (the reader's buffer holds 255), 256 refused
  // before any byte of it is read.
  Parameters longest = toy_insecure();
  longest.name = "toy_INSECURE" + std::string(243, 'x');
  REQUIRE(longest.name.size() == 255);
  CHECK(parameters_from(seal(encode_header(1, longest, longest.fingerprint()))) == longest);
  Parameters too_long = longest;
  too_long.name += 'x';
  CHECK_THROWS_WITH(parameters_from(seal(encode_header(1, too_long, too_long.fingerprint()))),
                    Contains("name length is 256"));
  Parameters control = toy_insecure();
  control.name = "toy\nINSECURE";
  CHECK_THROWS_WITH(parameters_from(seal(encode_header(1, control, control.fingerprint()))),
                    Contains("printable ASCII"));
  // The insecure flag must be 0 or 1.
  std::string flag = bytes;
  put_u32(flag, body_offset(toy_insecure()) - 4, 2);
  CHECK_THROWS_WITH(parameters_from(flag), Contains("insecure flag is 2"));
}

TEST_CASE("serialization: ciphertexts for other parameters are rejected", "[serialization]") {
  const std::string bytes = bytes_of([&](std::ostream& out) {
    write_ciphertexts(out, toy_insecure(), toy_ciphertexts(2, 4));
  });
  Parameters own = toy_insecure();
  own.name = "own_INSECURE";
  const std::string own_bytes = bytes_of([&](std::ostream& out) {
    write_ciphertexts(out, own, toy_ciphertexts(2, 4));
  });
  CHECK_THROWS_AS(ciphertexts_from(bytes, tfhe_lib_128()), FormatError);
  CHECK_THROWS_WITH(ciphertexts_from(bytes, tfhe_lib_128()),
                    Contains("'toy_INSECURE'") && Contains("'tfhe_lib_128'"));
  // Same name, different values: a built-in set's name is refused as the expected set itself;
  // a set of one's own, by the reader.
  Parameters other = toy_insecure();
  other.lwe_noise_stddev *= 2;
  CHECK_THROWS_WITH(ciphertexts_from(bytes, other),
                    Contains("expected parameters are invalid") &&
                        Contains("has the name of the built-in set but other values"));
  other = own;
  other.lwe_noise_stddev *= 2;
  CHECK_THROWS_WITH(ciphertexts_from(own_bytes, other), Contains("same name, different values"));
  // Same values, different name.
  other = toy_insecure();
  other.name = "toy_copy_INSECURE";
  CHECK_THROWS_WITH(ciphertexts_from(bytes, other), Contains("'toy_copy_INSECURE'"));
}

TEST_CASE("serialization: a corrupted byte is caught by the checksum", "[serialization]") {
  const Parameters p = toy_insecure();
  const std::string ct =
      bytes_of([&](std::ostream& out) { write_ciphertexts(out, p, toy_ciphertexts(4, 2)); });
  std::string bytes = ct;
  bytes[body_offset(p) + 16 + 100] ^= 0x04;  // inside a sample
  CHECK_THROWS_AS(ciphertexts_from(bytes, p), FormatError);
  CHECK_THROWS_WITH(ciphertexts_from(bytes, p), Contains("checksum mismatch"));
  bytes = ct;
  bytes[bytes.size() - 3] ^= 0x80;  // the checksum itself
  CHECK_THROWS_WITH(ciphertexts_from(bytes, p), Contains("checksum mismatch"));

  const std::string ck = bytes_of([&](std::ostream& out) { write_cloud_key(out, toy_keys().ck); });
  bytes = ck;
  bytes[bytes.size() / 2] ^= 0x01;  // inside the key-switching key
  CHECK_THROWS_WITH(cloud_key_from(bytes), Contains("checksum mismatch"));

  // Every single-bit flip anywhere in a secret key file is rejected.
  const std::string sk = bytes_of([&](std::ostream& out) { write_secret_key(out, toy_keys().sk); });
  for (std::size_t i = 0; i < sk.size(); ++i) {
    for (int bit : {0, 7}) {
      INFO("bit " << bit << " of byte " << i << " of " << sk.size());
      std::string flipped = sk;
      flipped[i] = static_cast<char>(flipped[i] ^ (1 << bit));
      REQUIRE_THROWS_AS(secret_key_from(flipped), FormatError);
    }
  }
}

TEST_CASE("serialization: oversized count fields are rejected before allocating",
          "[serialization]") {
  const Parameters p = toy_insecure();
  const std::size_t body = body_offset(p);
  const std::string ct =
      bytes_of([&](std::ostream& out) { write_ciphertexts(out, p, toy_ciphertexts(2, 6)); });

  // Sample count beyond the format's limit.
  std::string bytes = ct;
  put_u64(bytes, body, std::uint64_t{1} << 62);
  CHECK_THROWS_AS(ciphertexts_from(bytes, p), FormatError);
  CHECK_THROWS_WITH(ciphertexts_from(bytes, p), Contains("sample count"));
  // At the limit (2^40 samples of 65 words = 286 TB): rejected as truncated, not allocated,
  // both when the stream's size is known and when it is not.
  put_u64(bytes, body, std::uint64_t{1} << 40);
  CHECK_THROWS_WITH(ciphertexts_from(bytes, p), Contains("truncated"));
  CHECK_THROWS_WITH(ciphertexts_from_pipe(bytes, p), Contains("truncated"));
  // Words per sample other than n+1.
  bytes = ct;
  put_u64(bytes, body + 8, 1000);
  CHECK_THROWS_WITH(ciphertexts_from(bytes, p), Contains("words per sample is 1000"));

  // Key counts must be exactly what the parameters imply.
  std::string sk = bytes_of([&](std::ostream& out) { write_secret_key(out, toy_keys().sk); });
  put_u64(sk, body_offset_v3(p), std::uint64_t{1} << 63);
  CHECK_THROWS_WITH(secret_key_from(sk),
                    Contains("LWE key coefficient count is 9223372036854775808"));
  std::string ck = bytes_of([&](std::ostream& out) { write_cloud_key(out, toy_keys().ck); });
  put_u64(ck, body_offset_v3(p) + 4, std::numeric_limits<std::uint64_t>::max());
  CHECK_THROWS_WITH(cloud_key_from(ck), Contains("bootstrapping key word count"));

  // Hostile but valid parameters whose bootstrapping key would be 696 GB, with the matching
  // count: the reader must fail on the missing bytes, not try to allocate them.
  const Parameters huge{"huge", 4096, 8, 16384, 1, 32, 1, 32, 0x1p-20, 0x1p-30, false};
  REQUIRE_NOTHROW(huge.validate());
  std::string hostile = encode_header(3, huge, huge.fingerprint());
  append_u64(hostile, bk_words(huge));
  hostile += std::string(4096, '\0');
  CHECK_THROWS_WITH(cloud_key_from(hostile), Contains("truncated") && Contains("bootstrapping"));
  CHECK_THROWS_WITH(cloud_key_from_pipe(hostile),
                    Contains("truncated") && Contains("bootstrapping"));
}

TEST_CASE("serialization: trailing bytes after the object are rejected in files",
          "[serialization]") {
  const TempDir dir;
  const Parameters p = toy_insecure();
  save_ciphertexts(dir / "bits.tg", p, toy_ciphertexts(3, 8));
  const std::string bytes = read_file(dir / "bits.tg");
  write_file(dir / "bits.tg", bytes + "garbage");
  CHECK_THROWS_AS(load_ciphertexts(dir / "bits.tg", p), FormatError);
  CHECK_THROWS_WITH(load_ciphertexts(dir / "bits.tg", p),
                    Contains("7 bytes of trailing data") && Contains("bits.tg"));
  CHECK_THROWS_WITH(describe_file(dir / "bits.tg"), Contains("trailing"));
  // A stream reader reads one object and leaves the rest alone.
  std::istringstream in(bytes + "garbage");
  CHECK(read_ciphertexts(in, p) == toy_ciphertexts(3, 8));
}

TEST_CASE("serialization: non-binary key coefficients are rejected", "[serialization]") {
  const Parameters p = toy_insecure();
  const std::string good =
      bytes_of([&](std::ostream& out) { write_secret_key(out, toy_keys().sk); });
  std::string bytes = good;
  put_u32(bytes, body_offset_v3(p) + 8 + 4 * 5, 2);  // LWE coefficient 5
  reseal(bytes);
  CHECK_THROWS_AS(secret_key_from(bytes), FormatError);
  CHECK_THROWS_WITH(secret_key_from(bytes), Contains("invalid secret key") && Contains("0 or 1"));
  bytes = good;
  put_u32(bytes, body_offset_v3(p) + 8 + 4 * 64 + 8 + 4 * 200, 0xffffffffu);  // GLWE coefficient 200
  reseal(bytes);
  CHECK_THROWS_WITH(secret_key_from(bytes), Contains("GlweKey") && Contains("0 or 1"));
  // Without fixing the checksum, the corruption is reported as such.
  bytes = good;
  put_u32(bytes, body_offset_v3(p) + 8, 2);
  CHECK_THROWS_WITH(secret_key_from(bytes), Contains("checksum"));
}

TEST_CASE("serialization: unopenable paths throw SystemError naming the path",
          "[serialization]") {
  const TempDir dir;
  const fs::path missing = dir / "no_such_file.tg";
  CHECK_THROWS_AS(load_secret_key(missing), SystemError);
  CHECK_THROWS_WITH(load_secret_key(missing), Contains("no_such_file.tg"));
  CHECK_THROWS_AS(load_ciphertexts(missing, toy_insecure()), SystemError);
  CHECK_THROWS_AS(describe_file(missing), SystemError);
  const fs::path folder = dir / "folder";
  fs::create_directories(folder);
  CHECK_THROWS_AS(load_parameters(folder), SystemError);
  CHECK_THROWS_WITH(load_parameters(folder), Contains("directory"));
  const fs::path nowhere = dir / "no_such_dir" / "key.tg";
  CHECK_THROWS_AS(save_secret_key(nowhere, toy_keys().sk), SystemError);
  CHECK_THROWS_WITH(save_cloud_key(nowhere, toy_keys().ck), Contains("no_such_dir"));
}

TEST_CASE("serialization: writers validate their input", "[serialization]") {
  const Parameters p = toy_insecure();
  std::ostringstream out;
  CHECK_THROWS_AS(write_ciphertexts(out, tfhe_lib_128(), toy_ciphertexts(2, 1)),
                  InvalidArgument);
  CHECK_THROWS_AS(write_ciphertexts(out, p, LweBatch()), InvalidArgument);
  CHECK_THROWS_AS(write_secret_key(out, SecretKey()), InvalidArgument);
  Parameters named = p;
  named.name = "toy\tINSECURE";
  CHECK_THROWS_WITH(write_parameters(out, named), Contains("printable ASCII"));
  named.name = std::string(300, 'a') + "INSECURE";
  CHECK_THROWS_WITH(write_parameters(out, named), Contains("at most 255"));
  CHECK(out.str().empty());  // nothing written by a refused call

  // A refused save leaves an existing file untouched.
  const TempDir dir;
  save_parameters(dir / "p.tg", p);
  const std::string before = read_file(dir / "p.tg");
  CHECK_THROWS_AS(save_ciphertexts(dir / "p.tg", tfhe_lib_128(), toy_ciphertexts(1, 1)),
                  InvalidArgument);
  CHECK(read_file(dir / "p.tg") == before);

  // A failing output stream is a SystemError.
  std::ostringstream broken;
  broken.setstate(std::ios::badbit);
  CHECK_THROWS_AS(write_parameters(broken, p), SystemError);
}

// ---- encrypted integer arrays (ObjectType::IntegerArray) ------------------------------------

namespace {

IntegerArrayCiphertext toy_integer_array(std::uint32_t width, bool is_signed, std::uint64_t rows,
                                         std::uint64_t cols, std::uint64_t seed) {
  IntegerArrayCiphertext array;
  array.width = width;
  array.is_signed = is_signed;
  array.rows = rows;
  array.cols = cols;
  array.samples = toy_ciphertexts(width * rows * cols, seed);
  return array;
}

bool same_integer_array(const IntegerArrayCiphertext& a, const IntegerArrayCiphertext& b) {
  return a.width == b.width && a.is_signed == b.is_signed && a.rows == b.rows &&
         a.cols == b.cols && a.samples == b.samples && a.key_id == b.key_id;
}

std::string integer_array_bytes(const IntegerArrayCiphertext& array) {
  return bytes_of([&](std::ostream& out) { write_integer_array(out, toy_insecure(), array); });
}

IntegerArrayCiphertext integer_array_from(const std::string& bytes,
                                          const Parameters& expected = toy_insecure()) {
  std::istringstream in(bytes, std::ios::binary);
  return read_integer_array(in, expected);
}

IntegerArrayCiphertext integer_array_from_pipe(const std::string& bytes) {
  OneWayBuf buf(bytes);
  std::istream in(&buf);
  return read_integer_array(in, toy_insecure());
}

// Offsets of the integer array fields after the header.
constexpr std::size_t width_field = 0, signed_field = 4, rows_field = 8, cols_field = 16,
                      count_field = 24, words_field = 32, samples_field = 40;

}  // namespace

TEST_CASE("serialization: integer arrays round trip, and the layout is the documented one",
          "[serialization]") {
  struct Shape {
    std::uint32_t width;
    bool is_signed;
    std::uint64_t rows, cols;
  };
  for (const Shape s : {Shape{1, false, 1, 1}, Shape{8, true, 2, 3}, Shape{5, false, 1, 4},
                        Shape{128, true, 1, 1}}) {
    INFO(s.width << "-bit " << (s.is_signed ? "signed " : "unsigned ") << s.rows << " x "
                 << s.cols);
    const IntegerArrayCiphertext array = toy_integer_array(s.width, s.is_signed, s.rows, s.cols, 3);
    const std::string bytes = integer_array_bytes(array);
    CHECK(same_integer_array(integer_array_from(bytes), array));
    CHECK(same_integer_array(integer_array_from_pipe(bytes), array));

    // Re-encoded by hand from serialization.hpp.
    const Parameters p = toy_insecure();
    std::string expected = encode_header(5, p, p.fingerprint());
    append_u32(expected, s.width);
    append_u32(expected, s.is_signed ? 1 : 0);
    append_u64(expected, s.rows);
    append_u64(expected, s.cols);
    append_u64(expected, array.samples.count());
    append_u64(expected, p.lwe_dimension + 1);
    for (Torus32 w : array.samples.data()) append_u32(expected, w);
    CHECK(bytes == seal(expected));
  }
  CHECK(toy_integer_array(8, true, 2, 3, 1).describe() == "8-bit signed, 2 x 3");
  CHECK(toy_integer_array(1, false, 1, 4, 1).describe() == "1-bit unsigned, 1 x 4");
  CHECK(object_type_name(ObjectType::IntegerArray) == "integer array");
}

TEST_CASE("serialization: integer array files, describe_file and read_file_header",
          "[serialization]") {
  const TempDir dir;
  const Parameters p = toy_insecure();
  const IntegerArrayCiphertext array = toy_integer_array(8, true, 2, 3, 7);
  save_integer_array(dir / "x.tgct", p, array);
  CHECK(same_integer_array(load_integer_array(dir / "x.tgct", p), array));

  const std::string line = describe_file(dir / "x.tgct");
  CHECK_THAT(line, Contains("integer array, format version 1") && Contains("'toy_INSECURE'") &&
                       Contains("8-bit signed, 2 x 3 (6 integers)") &&
                       Contains("48 samples of 65 words") &&
                       Contains(std::to_string(fs::file_size(dir / "x.tgct")) + " bytes"));
  save_integer_array(dir / "one.tgct", p, toy_integer_array(4, false, 1, 1, 2));
  CHECK_THAT(describe_file(dir / "one.tgct"), Contains("4-bit unsigned, 1 x 1 (1 integer)"));

  // The header alone, for every object type.
  save_secret_key(dir / "sk.tg", toy_keys().sk);
  save_cloud_key(dir / "ck.tg", toy_keys().ck);
  save_parameters(dir / "p.tg", tfhe_lib_80());
  save_ciphertexts(dir / "bits.tg", p, toy_ciphertexts(2, 1));
  CHECK(read_file_header(dir / "x.tgct").type == ObjectType::IntegerArray);
  CHECK(bit_identical(read_file_header(dir / "x.tgct").params, p));
  CHECK(read_file_header(dir / "sk.tg").type == ObjectType::SecretKey);
  CHECK(read_file_header(dir / "ck.tg").type == ObjectType::CloudKey);
  CHECK(read_file_header(dir / "bits.tg").type == ObjectType::CiphertextBatch);
  const FileHeader params_header = read_file_header(dir / "p.tg");
  CHECK(params_header.type == ObjectType::Parameters);
  CHECK(bit_identical(params_header.params, tfhe_lib_80()));
  // A cut body does not matter to the header; a cut header and a foreign file do.
  const std::string ck = read_file(dir / "ck.tg");
  write_file(dir / "cut.tg", ck.substr(0, body_offset(p) + 10));
  CHECK(read_file_header(dir / "cut.tg").type == ObjectType::CloudKey);
  write_file(dir / "cut.tg", ck.substr(0, 30));
  CHECK_THROWS_AS(read_file_header(dir / "cut.tg"), FormatError);
  CHECK_THROWS_WITH(read_file_header(dir / "cut.tg"), Contains("cut.tg") && Contains("truncated"));
  write_file(dir / "text.txt", "1, 2, 3\n");
  CHECK_THROWS_WITH(read_file_header(dir / "text.txt"),
                    Contains("text.txt") && Contains("not a torusgate file"));
  CHECK_THROWS_AS(read_file_header(dir / "missing.tg"), SystemError);
}

TEST_CASE("serialization: truncated integer arrays are rejected at every length",
          "[serialization]") {
  const std::string bytes = integer_array_bytes(toy_integer_array(3, false, 1, 2, 4));
  for (std::size_t length = 0; length < bytes.size(); ++length) {
    INFO("integer array cut to " << length << " of " << bytes.size() << " bytes");
    REQUIRE_THROWS_AS(integer_array_from(bytes.substr(0, length)), FormatError);
    REQUIRE_THROWS_AS(integer_array_from_pipe(bytes.substr(0, length)), FormatError);
  }
  const std::size_t body = body_offset(toy_insecure());
  CHECK_THROWS_WITH(integer_array_from(bytes.substr(0, body + rows_field + 3)),
                    Contains("truncated") && Contains("row count needs 8 bytes"));
  CHECK_THROWS_WITH(integer_array_from(bytes.substr(0, body + samples_field + 100)),
                    Contains("truncated") && Contains("the block of ciphertext samples needs"));
}

TEST_CASE("serialization: integer arrays with a bad width, signedness, shape or count",
          "[serialization]") {
  const std::string good = integer_array_bytes(toy_integer_array(4, true, 2, 2, 5));
  const std::size_t body = body_offset(toy_insecure());
  // Edits with the checksum fixed, so that only the edited field is wrong.
  const auto edited = [&](std::size_t field, std::uint64_t value, bool wide) {
    std::string bytes = good;
    if (wide) put_u64(bytes, body + field, value);
    else put_u32(bytes, body + field, static_cast<std::uint32_t>(value));
    reseal(bytes);
    return bytes;
  };
  CHECK_THROWS_AS(integer_array_from(edited(width_field, 0, false)), FormatError);
  struct Edit {
    std::size_t field;
    std::uint64_t value;
    bool wide;  // a u64 field
    const char* problem;
  };
  const Edit edits[] = {
      {width_field, 0, false, "integer width is 0 but expected 1 to 128"},
      {width_field, 129, false, "integer width is 129"},
      {signed_field, 2, false, "signedness flag is 2"},
      {rows_field, 0, true, "shape is 0 x 2"},
      {cols_field, 0, true, "shape is 2 x 0"},
      // A shape whose sample count overflows 64 bits, and one beyond the format's limit.
      {cols_field, std::uint64_t{1} << 63, true, "needs more than 2^40"},
      {rows_field, std::uint64_t{1} << 39, true, "needs more than 2^40"},
      // The sample count must be width * rows * cols (here 16): the shape is checked against it.
      {count_field, 15, true, "sample count is 15 but an array of 4-bit signed, 2 x 2 needs 16"},
      {rows_field, 3, true, "sample count is 16 but an array of 4-bit signed, 3 x 2 needs 24"},
      {width_field, 8, false, "needs 32"},
      {words_field, 64, true, "words per sample is 64"},
  };
  for (const Edit& e : edits) {
    INFO("field at " << e.field << " set to " << e.value);
    CHECK_THROWS_WITH(integer_array_from(edited(e.field, e.value, e.wide)), Contains(e.problem));
  }
  // At the limit (2^40 samples): rejected as truncated, not allocated.
  std::string hostile = edited(rows_field, std::uint64_t{1} << 37, true);  // 2^40 samples
  put_u64(hostile, body + count_field, std::uint64_t{1} << 40);
  reseal(hostile);
  CHECK_THROWS_WITH(integer_array_from(hostile), Contains("truncated"));
  CHECK_THROWS_WITH(integer_array_from_pipe(hostile), Contains("truncated"));
  // A changed byte without a fixed checksum.
  std::string corrupted = good;
  corrupted[body + samples_field + 9] ^= 0x20;
  CHECK_THROWS_WITH(integer_array_from(corrupted), Contains("checksum mismatch"));
}

TEST_CASE("serialization: integer arrays of another type or parameter set are rejected",
          "[serialization]") {
  const IntegerArrayCiphertext array = toy_integer_array(2, false, 1, 3, 6);
  const std::string bytes = integer_array_bytes(array);
  CHECK_THROWS_WITH(ciphertexts_from(bytes, toy_insecure()),
                    Contains("expected a ciphertext batch but the file holds an integer array"));
  CHECK_THROWS_WITH(cloud_key_from(bytes), Contains("holds an integer array"));
  const std::string batch =
      bytes_of([&](std::ostream& out) { write_ciphertexts(out, toy_insecure(), array.samples); });
  CHECK_THROWS_AS(integer_array_from(batch), FormatError);
  CHECK_THROWS_WITH(integer_array_from(batch),
                    Contains("expected an integer array but the file holds a ciphertext batch"));
  CHECK_THROWS_WITH(integer_array_from(bytes, tfhe_lib_128()),
                    Contains("'toy_INSECURE'") && Contains("'tfhe_lib_128'"));
  // Type 5 is known; 6 is not.
  std::string unknown = bytes;
  put_u32(unknown, 12, 6);
  reseal(unknown);
  CHECK_THROWS_WITH(integer_array_from(unknown),
                    Contains("unknown object type 6 (expected 1 to 5)"));

  const TempDir dir;
  write_file(dir / "x.tgct", bytes + "tail");
  CHECK_THROWS_WITH(load_integer_array(dir / "x.tgct", toy_insecure()),
                    Contains("x.tgct") &&
                        Contains("4 bytes of trailing data after an integer array"));
}

TEST_CASE("serialization: the integer array writer validates its input", "[serialization]") {
  const Parameters p = toy_insecure();
  std::ostringstream out;
  IntegerArrayCiphertext array = toy_integer_array(4, false, 1, 2, 8);
  array.rows = 2;  // 8 samples for 16 bits
  CHECK_THROWS_AS(write_integer_array(out, p, array), InvalidArgument);
  CHECK_THROWS_WITH(write_integer_array(out, p, array),
                    Contains("has 8 samples but 4-bit unsigned, 2 x 2 needs 16"));
  array = toy_integer_array(4, false, 1, 2, 8);
  array.width = 0;
  CHECK_THROWS_WITH(write_integer_array(out, p, array), Contains("integer width is 0"));
  array = toy_integer_array(4, false, 1, 2, 8);
  array.cols = 0;
  CHECK_THROWS_WITH(write_integer_array(out, p, array), Contains("shape is 1 x 0"));
  array = toy_integer_array(4, false, 1, 2, 8);
  CHECK_THROWS_WITH(write_integer_array(out, tfhe_lib_128(), array), Contains("lwe_dimension=64"));
  CHECK(out.str().empty());

  // A refused save leaves an existing file untouched.
  const TempDir dir;
  save_integer_array(dir / "x.tgct", p, array);
  const std::string before = read_file(dir / "x.tgct");
  array.width = 200;
  CHECK_THROWS_AS(save_integer_array(dir / "x.tgct", p, array), InvalidArgument);
  CHECK(read_file(dir / "x.tgct") == before);
}

TEST_CASE("serialization: a file shorter than the magic is foreign or truncated by its bytes",
          "[serialization]") {
  // A short text file is not a torusgate file; a short start of one is truncated.
  CHECK_THROWS_WITH(parameters_from("hello\n"),
                    Contains("not a torusgate file") && Contains("68 65 6c 6c 6f 0a"));
  CHECK_THROWS_WITH(integer_array_from_pipe("x"), Contains("not a torusgate file"));
  CHECK_THROWS_WITH(parameters_from("TGA"),
                    Contains("truncated: the magic needs 8 bytes at offset 0") &&
                        Contains("ends after 3 of them"));
  CHECK_THROWS_WITH(parameters_from(""), Contains("empty input"));
  const TempDir dir;
  write_file(dir / "note.txt", "hi");
  CHECK_THROWS_WITH(describe_file(dir / "note.txt"),
                    Contains("note.txt") && Contains("not a torusgate file"));
}

// Format version 3: a secret key, a cloud key made from it and a ciphertext batch or an integer
// array under it name the key (SecretKey::key_id), so that a secret key of the same parameter
// set but another generation is told apart.
TEST_CASE("serialization: format version 3 names the secret key; versions 1 and 2 name none",
          "[serialization][key_id]") {
  const Parameters p = toy_insecure();
  const SecretKey& sk = toy_keys().sk;
  Csprng rng = test_rng(3003);
  const SecretKey other(p, rng);
  // The id: from the coefficients and the parameter set, never 0, the same when read back.
  REQUIRE(sk.key_id() != 0);
  CHECK(sk.key_id() != other.key_id());
  CHECK(SecretKey(p, sk.lwe_key(), sk.glwe_key()).key_id() == sk.key_id());
  // Both halves of the key name it: the same LWE key with another GLWE key is another key
  // (an id of the LWE key alone passed every other test).
  CHECK(SecretKey(p, sk.lwe_key(), other.glwe_key()).key_id() != sk.key_id());
  CHECK(SecretKey(p, other.lwe_key(), sk.glwe_key()).key_id() != sk.key_id());
  // A known answer (BLAKE2b-128 of the domain, the set's fingerprint and the coefficients,
  // the digest's first 8 bytes little-endian; computed apart with Python's hashlib): ids in
  // files stay readable across versions.
  std::vector<std::int32_t> lwe_bits(64), glwe_bits(256);
  for (std::size_t i = 0; i < lwe_bits.size(); ++i) lwe_bits[i] = static_cast<int>(i % 3 == 0);
  for (std::size_t i = 0; i < glwe_bits.size(); ++i) glwe_bits[i] = static_cast<int>(i % 2);
  const SecretKey fixed(p, LweKey(lwe_bits), GlweKey(1, 256, glwe_bits));
  CHECK(key_id_text(fixed.key_id()) == "c60d112cf1372476");
  CHECK(SecretKey().key_id() == 0);
  CHECK(key_id_text(0) == "unknown");
  CHECK(key_id_text(0x1f) == "000000000000001f");
  CHECK(toy_keys().ck.key_id() == sk.key_id());
  CHECK(CloudKey::generate(other, rng).key_id() == other.key_id());

  // Secret key: version 3, the id after the parameters record, checked against the key.
  std::string sk_bytes = bytes_of([&](std::ostream& out) { write_secret_key(out, sk); });
  CHECK(sk_bytes.substr(8, 4) == std::string("\x03\x00\x00\x00", 4));
  CHECK(get_u64(sk_bytes, body_offset(p)) == sk.key_id());
  CHECK(secret_key_from(sk_bytes).key_id() == sk.key_id());
  std::string bad = sk_bytes;
  put_u64(bad, body_offset(p), other.key_id());
  reseal(bad);
  CHECK_THROWS_WITH(secret_key_from(bad),
                    Contains("the header names key id " + key_id_text(other.key_id()) +
                             " but the key's coefficients give " + key_id_text(sk.key_id())));
  put_u64(bad, body_offset(p), 0);
  reseal(bad);
  CHECK_THROWS_WITH(secret_key_from(bad), Contains("key id 0 in a version 3 file"));

  // Cloud key: version 3, the id then the form; without an id version 1 as before.
  const std::string ck_bytes =
      bytes_of([&](std::ostream& out) { write_cloud_key(out, toy_keys().ck); });
  CHECK(ck_bytes.substr(8, 4) == std::string("\x03\x00\x00\x00", 4));
  CHECK(get_u64(ck_bytes, body_offset(p)) == sk.key_id());
  CHECK(get_u32(ck_bytes, body_offset_v3(p)) == 1);
  const CloudKey anonymous = cloud_key_from(
      bytes_of([&](std::ostream& out) { write_cloud_key(out, without_key_id(toy_keys().ck)); }));
  CHECK(anonymous.key_id() == 0);
  CHECK(same_cloud_key(anonymous, toy_keys().ck));

  // Integer array: version 3 with an id, version 1 without.
  IntegerArrayCiphertext array = toy_integer_array(4, false, 1, 2, 9);
  CHECK(integer_array_bytes(array).substr(8, 4) == std::string("\x01\x00\x00\x00", 4));
  array.key_id = sk.key_id();
  const std::string array_bytes = integer_array_bytes(array);
  CHECK(array_bytes.substr(8, 4) == std::string("\x03\x00\x00\x00", 4));
  CHECK(get_u64(array_bytes, body_offset(p)) == sk.key_id());
  CHECK(same_integer_array(integer_array_from(array_bytes), array));
  CHECK(same_integer_array(integer_array_from_pipe(array_bytes), array));

  // Ciphertext batch: version 3 with an id (read back with it), version 1 without.
  const LweBatch batch = toy_ciphertexts(3, 11);
  CHECK(bytes_of([&](std::ostream& out) { write_ciphertexts(out, p, batch); }).substr(8, 4) ==
        std::string("\x01\x00\x00\x00", 4));
  const std::string batch_bytes =
      bytes_of([&](std::ostream& out) { write_ciphertexts(out, p, batch, sk.key_id()); });
  CHECK(batch_bytes.substr(8, 4) == std::string("\x03\x00\x00\x00", 4));
  CHECK(get_u64(batch_bytes, body_offset(p)) == sk.key_id());
  CHECK(ciphertexts_from(batch_bytes, p) == batch);
  CHECK(ciphertexts_from_pipe(batch_bytes, p) == batch);
  {
    std::istringstream in(batch_bytes);
    std::uint64_t id = 1;
    CHECK(read_ciphertexts(in, p, &id) == batch);
    CHECK(id == sk.key_id());
    std::istringstream v1(bytes_of([&](std::ostream& out) { write_ciphertexts(out, p, batch); }));
    CHECK(read_ciphertexts(v1, p, &id) == batch);
    CHECK(id == 0);
  }
  std::string zero_id = batch_bytes;
  put_u64(zero_id, body_offset(p), 0);
  reseal(zero_id);
  CHECK_THROWS_WITH(ciphertexts_from(zero_id, p), Contains("key id 0 in a version 3 file"));

  // Parameters have no version 3 fields.
  std::string params_bytes = bytes_of([&](std::ostream& out) { write_parameters(out, p); });
  put_u32(params_bytes, 8, 3);
  reseal(params_bytes);
  CHECK_THROWS_WITH(parameters_from(params_bytes),
                    Contains("format version 3, which parameters do not use (it adds a key id), "
                             "in a file holding parameters (expected version 1)"));
  // Version 2 holds cloud keys only (an unrolled form): any other object in it is refused, so
  // that every object has one encoding (a fuzzer found a version 2 parameters file that read
  // and wrote back as version 1).
  put_u32(params_bytes, 8, 2);
  reseal(params_bytes);
  CHECK_THROWS_WITH(parameters_from(params_bytes),
                    Contains("format version 2, which only cloud keys use, in a file holding "
                             "parameters (expected version 1)"));
  std::string v2_array = array_bytes;
  put_u32(v2_array, 8, 2);
  reseal(v2_array);
  CHECK_THROWS_WITH(integer_array_from(v2_array),
                    Contains("format version 2, which only cloud keys use, in a file holding an "
                             "integer array (expected version 1 or 3)"));
  std::string v2_batch = batch_bytes;
  put_u32(v2_batch, 8, 2);
  reseal(v2_batch);
  CHECK_THROWS_WITH(ciphertexts_from(v2_batch, p),
                    Contains("format version 2, which only cloud keys use, in a file holding a "
                             "ciphertext batch (expected version 1 or 3)"));

  // Files: read_file_header and describe_file name the id.
  const TempDir dir;
  save_secret_key(dir / "k.tgsk", sk);
  save_cloud_key(dir / "k.tgck", toy_keys().ck);
  save_integer_array(dir / "a.tgct", p, array);
  save_ciphertexts(dir / "b.tgcb", p, batch, sk.key_id());
  for (const char* name : {"k.tgsk", "k.tgck", "a.tgct", "b.tgcb"}) {
    INFO(name);
    CHECK(read_file_header(dir / name).key_id == sk.key_id());
    CHECK(read_file_header(dir / name).version == 3);
    CHECK_THAT(describe_file(dir / name), Contains("format version 3") &&
                                              Contains("key id " + key_id_text(sk.key_id())));
  }
  CHECK(load_integer_array(dir / "a.tgct", p).key_id == sk.key_id());
  std::uint64_t batch_id = 0;
  CHECK(load_ciphertexts(dir / "b.tgcb", p, &batch_id) == batch);
  CHECK(batch_id == sk.key_id());
  CHECK_THAT(describe_file(dir / "b.tgcb"),
             Contains("under key id " + key_id_text(sk.key_id()) + ", 3 samples of 65 words"));
  save_ciphertexts(dir / "anon.tgcb", p, batch);
  CHECK(load_ciphertexts(dir / "anon.tgcb", p, &batch_id) == batch);
  CHECK(batch_id == 0);
  CHECK_THAT(describe_file(dir / "anon.tgcb"), Contains("format version 1") &&
                                                   Contains("under key id unknown, 3 samples"));
  // For decryption: the key's parameters, and its id where the file names one.
  CHECK(load_ciphertexts_for(dir / "b.tgcb", sk) == batch);
  CHECK(load_ciphertexts_for(dir / "anon.tgcb", other) == batch);
  CHECK_THROWS_AS(load_ciphertexts_for(dir / "b.tgcb", other), InvalidArgument);
  CHECK_THROWS_WITH(load_ciphertexts_for(dir / "b.tgcb", other),
                    Contains("b.tgcb' is under key id " + key_id_text(sk.key_id()) +
                             " but the secret key is key id " + key_id_text(other.key_id()) +
                             ": it would decrypt to random bits"));
  CHECK_THROWS_AS(load_ciphertexts_for(dir / "b.tgcb", SecretKey()), InvalidArgument);
  CHECK_THROWS_WITH(load_ciphertexts_for(dir / "b.tgcb", SecretKey()),
                    Contains("load_ciphertexts_for: the secret key is empty"));
  Csprng rng_k2 = test_rng(3004);
  const SecretKey k2_key(toy_k2_insecure(), rng_k2);
  CHECK_THROWS_AS(load_ciphertexts_for(dir / "b.tgcb", k2_key), FormatError);
  save_cloud_key(dir / "anon.tgck", anonymous);
  CHECK(read_file_header(dir / "anon.tgck").key_id == 0);
  CHECK_THAT(describe_file(dir / "anon.tgck"), Contains("made from key id unknown"));
}
