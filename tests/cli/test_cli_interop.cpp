// Tests of the torusgate CLI's import and export of the TFHE library v1.1 formats, run
// in-process: on the library's own vectors (../shared/testdata/tfhe-lib-v1.1, skipped with a
// warning when absent) import then export gives back its files byte for byte and our gates on
// its ciphertexts give plain.txt's bits; on toy keys made here, keysets and integer arrays
// round trip; and one check per kind of bad command line or bad file (message, exit code).
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "cli_test_support.hpp"
#include "test_files.hpp"
#include "tfhe_lib_testdata.hpp"
#include "torusgate/core/keys.hpp"
#include "torusgate/core/serialization.hpp"
#include "torusgate/core/tfhe_lib_format.hpp"

using namespace torusgate;
using namespace torusgate::cli;
using Catch::Contains;
using torusgate::test::data_dir;
using torusgate::test::fails;
using torusgate::test::have_data;
using torusgate::test::ok;
using torusgate::test::PlainBits;
using torusgate::test::read_file;
using torusgate::test::read_plain;
using torusgate::test::run;
using torusgate::test::Run;
using torusgate::test::TempDir;
using torusgate::test::write_file;

namespace {

namespace fs = std::filesystem;
namespace tl = torusgate::tfhe_lib;

std::string lib(const std::string& name) { return (data_dir / name).string(); }

// 'path' in quotes, as messages quote files (appended: GCC 12 warns on "'" + string).
std::string quoted(const std::string& path) {
  std::string text = "'";
  text += path;
  text += '\'';
  return text;
}

// The permission bits of `path`.
unsigned mode_of(const fs::path& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mode & 0777;
}

// The bits `decrypt` prints for an array of 1-bit integers.
std::vector<std::uint8_t> decrypted_bits(const std::string& key, const std::string& file) {
  std::istringstream in(ok({"decrypt", "-k", key, file, "-q"}).out);
  std::vector<std::uint8_t> bits;
  for (int v; in >> v;) bits.push_back(static_cast<std::uint8_t>(v));
  return bits;
}

// toy_INSECURE keys in a directory of their own, made once.
struct ToyKeys {
  TempDir dir;
  std::string sk = path("client.tgsk"), ck = path("server.tgck");
  ToyKeys() { ok({"keygen", "--params", "toy_INSECURE", "--insecure-ok", "-s", sk, "-c", ck}); }
  std::string path(const std::string& name) const { return (dir / name).string(); }
};
ToyKeys& toy() {
  static ToyKeys keys;
  return keys;
}

}  // namespace

// ---- the library's vectors ---------------------------------------------------------------------

TEST_CASE("cli interop: import then export gives back the library's files byte for byte",
          "[cli]") {
  if (!have_data()) return;
  TempDir dir;
  const auto at = [&](const std::string& name) { return (dir / name).string(); };

  // Parameters.
  ok({"import", lib("params.txt"), "-o", at("p.tgpr")});
  CHECK_THAT(ok({"info", at("p.tgpr")}).out, Contains("parameters") && Contains("tfhe_lib_128"));
  ok({"export", at("p.tgpr"), "-o", at("params.txt")});
  CHECK(read_file(at("params.txt")) == read_file(lib("params.txt")));

  // The secret key, from its two files in either order; written back as both, mode 0600.
  const Run imported = ok({"import", lib("tgsw.key"), lib("lwe.key"), "-o", at("client.tgsk")});
  CHECK_THAT(imported.out, Contains("secret key for tfhe_lib_128") &&
                               Contains("keygen --from " + at("client.tgsk")));
  CHECK(mode_of(at("client.tgsk")) == 0600);
  ok({"export", at("client.tgsk"), "--lwe-key", at("lwe.key"), "--tgsw-key", at("tgsw.key")});
  CHECK(read_file(at("lwe.key")) == read_file(lib("lwe.key")));
  CHECK(read_file(at("tgsw.key")) == read_file(lib("tgsw.key")));
  CHECK(mode_of(at("lwe.key")) == 0600);
  CHECK(mode_of(at("tgsw.key")) == 0600);
  // --params names the set explicitly (a name, the library's parameter file, a native file).
  for (const std::string& params : {std::string("tfhe_lib_128"), lib("params.txt"), at("p.tgpr")}) {
    ok({"import", lib("lwe.key"), lib("tgsw.key"), "--params", params, "-o", at("again.tgsk"),
        "--force", "-q"});
    CHECK(read_file(at("again.tgsk")) == read_file(at("client.tgsk")));
  }

  // Fresh ciphertexts: the library stores sigma^2 = 2^-30 for each, which export writes.
  const PlainBits plain = read_plain();
  for (const std::string name : {"a", "b", "c"}) {
    INFO(name << ".ctxt");
    ok({"import", lib(name + ".ctxt"), "--params", "tfhe_lib_128", "-o", at(name + ".tgct")});
    CHECK_THAT(ok({"info", at(name + ".tgct")}).out, Contains("1-bit unsigned, 1 x 64"));
    ok({"export", at(name + ".tgct"), "-o", at(name + ".ctxt")});
    CHECK(read_file(at(name + ".ctxt")) == read_file(lib(name + ".ctxt")));
  }
  CHECK(decrypted_bits(at("client.tgsk"), at("a.tgct")) == plain.a);
  CHECK(decrypted_bits(at("client.tgsk"), at("c.tgct")) == plain.c);

  // Bootstrapped outputs: their variance estimates are not kept (the native format has none),
  // so exactly the variance bytes differ; the samples are the same.
  const Run out_and = ok({"import", lib("out_and.ctxt"), "--params", at("client.tgsk"), "-o",
                          at("out_and.tgct")});
  CHECK_THAT(out_and.out, Contains("variance estimates of these samples are not kept"));
  CHECK(decrypted_bits(at("client.tgsk"), at("out_and.tgct")) == plain.expected.at("and"));
  ok({"export", at("out_and.tgct"), "-o", at("out_and.ctxt")});
  const std::string theirs = read_file(lib("out_and.ctxt"));
  const std::string ours = read_file(at("out_and.ctxt"));
  REQUIRE(ours.size() == theirs.size());
  const std::size_t sample = tl::ciphertext_bytes(630);
  std::size_t differing = 0;
  for (std::size_t i = 0; i < 64; ++i) {
    const std::size_t start = i * sample, variance = start + sample - 8;
    REQUIRE(ours.compare(start, sample - 8, theirs, start, sample - 8) == 0);
    double v = 0;
    std::memcpy(&v, ours.data() + variance, 8);  // little-endian host, as the library writes
    CHECK(v == std::ldexp(1.0, -30));
    differing += ours.compare(variance, 8, theirs, variance, 8) != 0 ? 1 : 0;
  }
  CHECK(differing == 64);
}

TEST_CASE("cli interop: our gates on the library's ciphertexts, with a cloud key made from its "
          "secret keys, give plain.txt's bits and export in its format",
          "[cli]") {
  if (!have_data()) return;
  TempDir dir;
  const auto at = [&](const std::string& name) { return (dir / name).string(); };
  const PlainBits plain = read_plain();
  ok({"import", lib("lwe.key"), lib("tgsw.key"), "-o", at("client.tgsk"), "-q"});
  const Run keygen = ok({"keygen", "--from", at("client.tgsk"), "--cloud-key", at("server.tgck")});
  CHECK_THAT(keygen.out, Contains("tfhe_lib_128") && Contains(quoted(at("server.tgck"))));
  for (const std::string name : {"a", "b"}) {
    ok({"import", lib(name + ".ctxt"), "--params", "tfhe_lib_128", "-o", at(name + ".tgct")});
  }
  for (const std::string op : {"and", "or", "xor", "not"}) {
    INFO("gate " << op);
    std::vector<std::string> args = {"eval", "-c", at("server.tgck"), "--op", op, at("a.tgct")};
    if (op != "not") args.push_back(at("b.tgct"));
    args.insert(args.end(), {"-o", at(op + ".tgct"), "-q"});
    ok(args);
    CHECK(decrypted_bits(at("client.tgsk"), at(op + ".tgct")) == plain.expected.at(op));
    // In the library's format: the same bits read back (the library's reader needs no more).
    ok({"export", at(op + ".tgct"), "-o", at("out_" + op + ".ctxt")});
    CHECK(fs::file_size(at("out_" + op + ".ctxt")) == 64 * 2536);
    const SecretKey sk = tl::load_secret_key(lib("lwe.key"), lib("tgsw.key"));
    CHECK(decrypt_bits(sk, tl::load_gate_ciphertexts(at("out_" + op + ".ctxt"), sk.parameters())) ==
          plain.expected.at(op));
  }
}

// ---- keysets and integers on toy keys ----------------------------------------------------------

TEST_CASE("cli interop: cloud and secret keysets round trip through the library's formats",
          "[cli]") {
  ToyKeys& k = toy();
  TempDir dir;
  const auto at = [&](const std::string& name) { return (dir / name).string(); };

  const Run cloud = ok({"export", k.ck, "-o", at("cloud.key")});
  CHECK_THAT(cloud.out, Contains("cloud keyset for toy_INSECURE"));
  CHECK(fs::file_size(at("cloud.key")) == tl::cloud_keyset_bytes(toy_insecure()));
  CHECK(mode_of(at("cloud.key")) != 0600);
  CHECK_THAT(ok({"info", at("cloud.key")}).out,
             Contains("TFHE library v1.1 cloud keyset, the named set 'toy_INSECURE'") &&
                 Contains("key-switching key 10240 samples (the unused digit-0 rows zero)"));
  ok({"import", at("cloud.key"), "-o", at("server.tgck")});
  // The same keys; the library's cloud keyset does not name its secret key, so the imported
  // cloud key has no key id (format version 1, "made from key id unknown").
  const CloudKey imported = load_cloud_key(at("server.tgck"));
  const CloudKey original = load_cloud_key(k.ck);
  CHECK(std::ranges::equal(imported.bootstrapping_key().data(), original.bootstrapping_key().data()));
  CHECK(std::ranges::equal(imported.key_switching_key().data(), original.key_switching_key().data()));
  CHECK(imported.key_id() == 0);
  CHECK(original.key_id() != 0);
  CHECK_THAT(ok({"info", at("server.tgck")}).out,
             Contains("format version 1") && Contains("made from key id unknown"));

  const Run secret = ok({"export", k.ck, k.sk, "-o", at("secret.key")});
  CHECK_THAT(secret.out, Contains("secret keyset") && Contains("keep it private"));
  CHECK(mode_of(at("secret.key")) == 0600);
  CHECK_THAT(ok({"info", at("secret.key")}).out,
             Contains("TFHE library v1.1 secret keyset") && Contains("keep it private"));
  const Run both = ok({"import", at("secret.key"), "-o", at("client.tgsk"), "-c", at("ck.tgck")});
  CHECK_THAT(both.out, Contains("cloud key"));
  CHECK(read_file(at("client.tgsk")) == read_file(k.sk));
  CHECK(read_file(at("ck.tgck")) == read_file(k.ck));
  CHECK(mode_of(at("client.tgsk")) == 0600);
  CHECK_THAT(ok({"import", at("secret.key"), "-o", at("only.tgsk")}).out,
             Contains("its cloud key was not written"));

  // A cloud key made from the imported secret key works like the original.
  ok({"keygen", "--from", at("client.tgsk"), "-c", at("new.tgck"), "-q"});
  ok({"encrypt", "-k", k.sk, "--width", "4", "--values", "3,9", "-o", at("x.tgct")});
  ok({"eval", "-c", at("new.tgck"), "--op", "neg", at("x.tgct"), "-o", at("y.tgct"), "-q"});
  CHECK(ok({"decrypt", "-k", at("client.tgsk"), at("y.tgct")}).out == "13 7\n");
}

TEST_CASE("cli interop: integers travel as their bits, integer after integer", "[cli]") {
  ToyKeys& k = toy();
  TempDir dir;
  const auto at = [&](const std::string& name) { return (dir / name).string(); };
  ok({"encrypt", "-k", k.sk, "--width", "6", "--signed", "--values", "-3,17;5,-32", "-o",
      at("m.tgct")});
  const Run exported = ok({"export", at("m.tgct"), "-o", at("m.ctxt")});
  CHECK_THAT(exported.out, Contains("24 gate ciphertexts: 4 integers (6-bit signed, 2 x 2)") &&
                               Contains("each its 6 bits least significant first"));
  // Read back as integers of 6 bits: the values, now as one row.
  ok({"import", at("m.ctxt"), "--params", k.ck, "--width", "6", "--signed", "-o", at("v.tgct")});
  CHECK(ok({"decrypt", "-k", k.sk, at("v.tgct")}).out == "-3 17 5 -32\n");
  // Read back as bits: each integer's bits in a row, least significant first.
  ok({"import", at("m.ctxt"), "--params", "toy_INSECURE", "-o", at("bits.tgct")});
  const std::vector<std::uint8_t> want = {1, 0, 1, 1, 1, 1,   // -3 = 0b111101
                                          1, 0, 0, 0, 1, 0,   // 17 = 0b010001
                                          1, 0, 1, 0, 0, 0,   // 5
                                          0, 0, 0, 0, 0, 1};  // -32 = 0b100000
  CHECK(decrypted_bits(k.sk, at("bits.tgct")) == want);
  // Unsigned 3-bit integers from the same 24 bits.
  ok({"import", at("m.ctxt"), "--params", "toy_INSECURE", "-w", "3", "-o", at("u3.tgct")});
  CHECK(ok({"decrypt", "-k", k.sk, at("u3.tgct")}).out == "5 7 1 2 5 0 0 4\n");
  // A native ciphertext batch exports in order.
  Csprng rng = Csprng::deterministic(5, testing::insecure_deterministic);
  const SecretKey sk = load_secret_key(k.sk);
  save_ciphertexts(at("batch.tgcb"), sk.parameters(), encrypt_bits(sk, want, rng));
  ok({"export", at("batch.tgcb"), "-o", at("batch.ctxt")});
  ok({"import", at("batch.ctxt"), "--params", "toy_INSECURE", "-o", at("batch.tgct")});
  CHECK(decrypted_bits(k.sk, at("batch.tgct")) == want);
}

// ---- bad command lines and bad files -----------------------------------------------------------

TEST_CASE("cli interop: bad import and export command lines", "[cli]") {
  ToyKeys& k = toy();
  TempDir dir;
  const auto at = [&](const std::string& name) { return (dir / name).string(); };
  ok({"export", k.sk, "--lwe-key", at("lwe.key"), "--tgsw-key", at("tgsw.key"), "-q"});
  ok({"export", k.ck, "-o", at("cloud.key"), "-q"});
  ok({"encrypt", "-k", k.sk, "--width", "1", "--values", "1,0,1", "-o", at("x.tgct")});
  ok({"export", at("x.tgct"), "-o", at("x.ctxt"), "-q"});
  const std::string out = at("never.tgxx");

  fails(exit_usage, {"import", "-o", out}, "give the TFHE library file to import");
  // --lwe-key with a cloud key is named as such, not as a missing --output.
  fails(exit_usage, {"export", k.ck, "--lwe-key", at("l2.key")},
        "--lwe-key applies to a secret key alone, but '" + k.ck + "' holds a cloud key");
  // keygen --from with a cloud key: what --from needs.
  fails(exit_failure, {"keygen", "--from", k.ck, "-c", at("c2.tgck")},
        "but --from needs a secret key: keygen --from makes a cloud key from the secret key");
  // eval takes -w as encrypt does.
  ok({"eval", "-c", k.ck, "--op", "sum", "-w", "3", at("x.tgct"), "-o", at("s.tgct"), "-q"});
  CHECK_THAT(ok({"info", at("s.tgct")}).out, Contains("3-bit unsigned"));
  CHECK(ok({"decrypt", "-k", k.sk, at("s.tgct")}).out == "2\n");
  fails(exit_usage, {"import", at("lwe.key")}, "--output is required");
  fails(exit_usage, {"import", at("lwe.key"), at("tgsw.key"), at("x.ctxt"), "-o", out},
        "import takes one file, or an LWE key and a TGSW key, but 3 were given");
  fails(exit_usage, {"import", at("lwe.key"), "-o", out},
        "is a TFHE library v1.1 LWE key, half of a secret key: give the TGSW key file too");
  fails(exit_usage, {"import", at("x.ctxt"), at("lwe.key"), "-o", out},
        "two files import as a secret key: an LWE key and a TGSW key, but '" + at("x.ctxt") +
            "' is TFHE library v1.1 gate ciphertexts");
  fails(exit_usage, {"import", at("cloud.key"), "-o", out, "-c", at("c.tgck")},
        "--cloud-key applies to a secret keyset");
  fails(exit_usage, {"import", at("lwe.key"), at("tgsw.key"), "-o", out, "-c", at("c.tgck")},
        "make one with 'torusgate keygen --from");
  fails(exit_usage, {"import", at("cloud.key"), "-o", out, "--width", "8"},
        "--width applies to gate ciphertexts only, but '" + at("cloud.key") +
            "' is a TFHE library v1.1 cloud keyset");
  fails(exit_usage, {"import", at("cloud.key"), "-o", out, "--signed"}, "--signed applies to");
  fails(exit_usage, {"import", at("cloud.key"), "-o", out, "--params", "toy_INSECURE"},
        "which names its parameter set");
  fails(exit_usage, {"import", at("x.ctxt"), "-o", out},
        "library gate ciphertexts carry no parameters: give --params NAME (tfhe_lib_128");
  fails(exit_usage, {"import", at("x.ctxt"), "-o", out, "--params", "toy"},
        "--params: 'toy' is neither a parameter set (tfhe_lib_128");
  fails(exit_usage, {"import", at("x.ctxt"), "-o", out, "--params", "toy_INSECURE", "-w", "0"},
        "--width: 0 is out of range");
  fails(exit_usage, {"import", at("x.ctxt"), "-o", out, "--params", "toy_INSECURE", "-w", "129"},
        "--width: 129 is out of range");
  fails(exit_usage, {"import", at("x.ctxt"), "-o", at("x.ctxt"), "--params", "toy_INSECURE"},
        "--output names the input file");
  fails(exit_usage, {"import", at("x.ctxt"), "--bogus", "-o", out}, "unknown option '--bogus'");

  fails(exit_usage, {"export", "-o", out}, "give the torusgate file to export");
  fails(exit_usage, {"export", k.ck}, "--output is required");
  fails(exit_usage, {"export", k.sk, "-o", out},
        "a secret key exports as the library's two key files: give --lwe-key FILE and "
        "--tgsw-key FILE");
  fails(exit_usage, {"export", k.sk}, "give --lwe-key FILE");
  fails(exit_usage, {"export", k.ck, "-o", out, "--lwe-key", at("l.key")},
        "--lwe-key applies to a secret key alone");
  fails(exit_usage, {"export", k.ck, k.ck, "-o", out},
        "two files export as the library's secret keyset: a secret key and its cloud key, but '" +
            k.ck + "' holds a cloud key and '" + k.ck + "' holds a cloud key");
  fails(exit_usage, {"export", k.sk, "--lwe-key", at("same.key"), "--tgsw-key", at("same.key")},
        "--lwe-key and --tgsw-key name the same file");
  fails(exit_usage, {"export", k.sk, k.ck, k.ck, "-o", out}, "but 3 were given");

  fails(exit_usage, {"keygen", "--from", k.sk, "-s", at("s.tgsk"), "-c", at("c.tgck")},
        "give one of them");
  fails(exit_usage, {"keygen", "--from", k.sk, "--params", "toy_INSECURE", "-c", at("c.tgck")},
        "--params does not apply with --from");
  fails(exit_usage, {"keygen", "--from", k.sk}, "--cloud-key is required");
  fails(exit_usage, {"keygen", "--from", k.sk, "-c", k.sk}, "name the same file");
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("cli interop: bad and mismatched files", "[cli]") {
  ToyKeys& k = toy();
  TempDir dir;
  const auto at = [&](const std::string& name) { return (dir / name).string(); };
  ok({"export", k.ck, "-o", at("cloud.key"), "-q"});
  ok({"export", k.sk, k.ck, "-o", at("secret.key"), "-q"});
  ok({"export", k.sk, "--lwe-key", at("lwe.key"), "--tgsw-key", at("tgsw.key"), "-q"});
  ok({"encrypt", "-k", k.sk, "--width", "1", "--values", "1,0,1", "-o", at("x.tgct")});
  ok({"export", at("x.tgct"), "-o", at("x.ctxt"), "-q"});
  const std::string out = at("never.tgxx");

  // Not library files, or torusgate's own.
  write_file(at("notes.md"), "# notes\n");
  fails(exit_failure, {"import", at("notes.md"), "-o", out},
        quoted(at("notes.md")) + " is not a TFHE library v1.1 file");
  write_file(at("empty"), "");
  fails(exit_failure, {"import", at("empty"), "-o", out}, "(it is empty)");
  fails(exit_failure, {"import", k.ck, "-o", out},
        "is a torusgate file (cloud key) already: import reads TFHE library v1.1 files");
  fails(exit_failure, {"import", at("missing.key"), "-o", out}, "cannot open");
  fails(exit_failure, {"export", at("cloud.key"), "-o", out},
        "is a TFHE library v1.1 cloud keyset already: export reads torusgate files");
  fails(exit_failure, {"export", at("notes.md"), "-o", out}, "not a torusgate file");
  fails(exit_failure, {"keygen", "--from", k.ck, "-c", out},
        "holds a cloud key, but --from needs a secret key");

  // Damaged library files: named by what they are meant to be, then what is wrong.
  const std::string keyset = read_file(at("cloud.key"));
  write_file(at("cut.key"), keyset.substr(0, keyset.size() - 10));
  fails(exit_failure, {"import", at("cut.key"), "-o", out},
        quoted(at("cut.key")) + ": truncated: the bootstrapping key");
  fails(exit_failure, {"info", at("cut.key")}, "truncated: the bootstrapping key");
  // A secret keyset cut short reads as its first part, a parameter set or a cloud keyset; the
  // options that apply to a secret keyset only are not what is reported then.
  const std::string secret_keyset = read_file(at("secret.key"));
  for (const std::size_t cut : {std::size_t{100}, secret_keyset.size() / 2}) {
    write_file(at("cut_secret.key"), secret_keyset.substr(0, cut));
    for (const std::vector<std::string>& option :
         {std::vector<std::string>{"-c", at("c.tgck")}, {"--width", "8"}, {"--params", "toy"}}) {
      std::vector<std::string> args = {"import", at("cut_secret.key"), "-o", out};
      args.insert(args.end(), option.begin(), option.end());
      fails(exit_failure, args, quoted(at("cut_secret.key")) + ": truncated");
    }
  }
  write_file(at("long.key"), read_file(at("secret.key")) + "x");
  fails(exit_failure, {"import", at("long.key"), "-o", out},
        "1 bytes of trailing data after the secret keyset");
  fails(exit_failure, {"import", at("x.ctxt"), "-o", out, "--params", "toy_INSECURE", "-w", "2"},
        "holds 3 ciphertexts, not a multiple of --width 2");
  fails(exit_failure, {"import", at("x.ctxt"), "-o", out, "--params", "tfhe_lib_128"},
        "ciphertext 0 (a type id, 630 mask words");
  fails(exit_failure, {"import", at("x.ctxt"), "-o", out, "--params", at("notes.md")},
        "--params: '" + at("notes.md") + "' is neither a TFHE library parameter set file nor");
  // Key files of different sets; a key pair whose cloud key is another's.
  Csprng rng = Csprng::deterministic(11, testing::insecure_deterministic);
  const SecretKey k80(tfhe_lib_80(), rng);
  tl::save_tgsw_key(at("tgsw_80.key"), k80);
  fails(exit_failure, {"import", at("lwe.key"), at("tgsw_80.key"), "-o", out},
        "no known parameter set has n=64 k=1 N=1024 Bgbit=10 l=2");
  ok({"keygen", "--params", "toy_INSECURE", "--insecure-ok", "-s", at("other.tgsk"), "-c",
      at("other.tgck"), "-q"});
  fails(exit_failure, {"export", k.sk, at("other.tgck"), "-o", out},
        "the cloud key '" + at("other.tgck") + "' was not made from the secret key '" + k.sk +
            "': the key-switching key's sample");
  ok({"keygen", "--params", "toy_k2_INSECURE", "--insecure-ok", "-s", at("k2.tgsk"), "-c",
      at("k2.tgck"), "-q"});
  fails(exit_failure, {"export", k.sk, at("k2.tgck"), "-o", out},
        "the keys use different parameter sets");

  // Existing outputs are kept without --force, replaced with it.
  write_file(out, "precious");
  fails(exit_failure, {"import", at("cloud.key"), "-o", out}, "refusing to overwrite");
  fails(exit_failure, {"export", k.ck, "-o", out}, "refusing to overwrite");
  CHECK(read_file(out) == "precious");
  ok({"export", k.ck, "-o", out, "--force", "-q"});
  CHECK(read_file(out) == keyset);
}
