// Tests of the torusgate CLI run in-process (run_cli): keygen, encrypt, eval, decrypt and info
// round trips on toy_INSECURE checked against integer arithmetic, and one test per kind of bad
// command line or bad file (message and exit code).
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "cli.hpp"
#include "cli_test_support.hpp"
#include "operations.hpp"
#include "test_files.hpp"
#include "torusgate/core/keys.hpp"
#include "torusgate/core/random.hpp"
#include "torusgate/core/serialization.hpp"
#include "torusgate/core/tfhe_lib_format.hpp"
#include "values.hpp"

using torusgate::test::read_file;
using torusgate::test::TempDir;
using torusgate::test::write_file;

namespace {

using namespace torusgate;
using namespace torusgate::cli;
namespace fs = std::filesystem;
using Catch::Contains;
using Catch::StartsWith;
using torusgate::test::fails;
using torusgate::test::ok;
using torusgate::test::run;
using torusgate::test::Run;

// Every integer in `text`, in order.
std::vector<Int128> numbers(const std::string& text) {
  std::istringstream in(text);
  std::vector<Int128> values;
  for (std::string token; in >> token;) {
    const auto v = parse_integer(token);
    REQUIRE(v);
    values.push_back(*v);
  }
  return values;
}

std::string join(const std::vector<Int128>& values, const std::string& separator = ",") {
  std::string text;
  for (Int128 v : values) {
    text += (text.empty() ? "" : separator) +
            format_value(static_cast<Bits128>(v), circuits::IntType{128, true});
  }
  return text;
}

// `value` modulo 2^width, read as `type`.
Int128 wrap(Int128 value, circuits::IntType type) {
  const Bits128 mask = (Bits128{1} << type.width) - 1;
  const Bits128 low = static_cast<Bits128>(value) & mask;
  if (type.is_signed && ((low >> (type.width - 1)) & 1) != 0) {
    return static_cast<Int128>(low) - (Int128{1} << type.width);
  }
  return static_cast<Int128>(low);
}

// One set of keys for the whole executable: toy_INSECURE, and toy_k2_INSECURE for mismatches.
struct Session {
  TempDir dir;
  std::string sk = path("client.tgsk"), ck = path("server.tgck");
  std::string sk2 = path("other.tgsk"), ck2 = path("other.tgck");
  Session() {
    ok({"keygen", "--params", "toy_INSECURE", "--insecure-ok", "-s", sk, "-c", ck});
    ok({"keygen", "--params", "toy_k2_INSECURE", "--insecure-ok", "-s", sk2, "-c", ck2});
  }
  std::string path(const std::string& name) const { return (dir / name).string(); }

  // Encrypts `values` into `name` and returns the path.
  std::string encrypt(const std::string& name, const std::vector<Int128>& values,
                      circuits::IntType type, const std::string& shape = "") {
    std::vector<std::string> args = {
        "encrypt",  "-k",         sk,   "--width",  std::to_string(type.width),
        "--values", join(values), "-o", path(name), "--force"};
    if (type.is_signed) args.push_back("--signed");
    if (!shape.empty()) args.insert(args.end(), {"--shape", shape});
    ok(args);
    return path(name);
  }
  std::vector<Int128> decrypt(const std::string& file) {
    return numbers(ok({"decrypt", "-k", sk, file}).out);
  }
  // Runs `eval --op op` on the operands (into result.tgct) and decrypts the result.
  std::vector<Int128> eval(const std::string& op, const std::vector<std::string>& operands,
                           const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"eval",    "-c",     ck, "--op", op, "-o", path("result.tgct"),
                                     "--force", "--quiet"};
    args.insert(args.end(), operands.begin(), operands.end());
    args.insert(args.end(), extra.begin(), extra.end());
    ok(args);
    return decrypt(path("result.tgct"));
  }
};

Session& session() {
  static Session s;
  return s;
}

using Reference = std::function<Int128(Int128, Int128, circuits::IntType)>;

// x's w-bit pattern, and x rotated left by y mod w in its type.
std::uint64_t pattern(Int128 x, circuits::IntType t) {
  return static_cast<std::uint64_t>(wrap(x, circuits::IntType{t.width, false}));
}
Int128 rotated(Int128 x, Int128 y, circuits::IntType t) {
  const unsigned w = static_cast<unsigned>(t.width), k = static_cast<unsigned>(y % w);
  const unsigned __int128 u = pattern(x, t);
  return wrap(static_cast<Int128>((u << k) | (u >> ((w - k) % w))), t);
}

// What each element-wise operation of operations() computes, in plain integers.
const std::map<std::string, Reference>& element_wise_references() {
  using T = circuits::IntType;
  static const std::map<std::string, Reference> refs = {
      {"add", [](Int128 x, Int128 y, T t) { return wrap(x + y, t); }},
      {"sub", [](Int128 x, Int128 y, T t) { return wrap(x - y, t); }},
      {"mul", [](Int128 x, Int128 y, T t) { return wrap(x * y, t); }},
      {"mul-full", [](Int128 x, Int128 y, T) { return x * y; }},
      {"div", [](Int128 x, Int128 y, T t) { return wrap(y == 0 ? -1 : x / y, t); }},
      {"rem", [](Int128 x, Int128 y, T t) { return wrap(y == 0 ? x : x % y, t); }},
      {"neg", [](Int128 x, Int128, T t) { return wrap(-x, t); }},
      {"abs", [](Int128 x, Int128, T) { return x < 0 ? -x : x; }},
      {"lt", [](Int128 x, Int128 y, T) { return Int128{x < y}; }},
      {"le", [](Int128 x, Int128 y, T) { return Int128{x <= y}; }},
      {"gt", [](Int128 x, Int128 y, T) { return Int128{x > y}; }},
      {"ge", [](Int128 x, Int128 y, T) { return Int128{x >= y}; }},
      {"eq", [](Int128 x, Int128 y, T) { return Int128{x == y}; }},
      {"ne", [](Int128 x, Int128 y, T) { return Int128{x != y}; }},
      {"min", [](Int128 x, Int128 y, T) { return x < y ? x : y; }},
      {"max", [](Int128 x, Int128 y, T) { return x < y ? y : x; }},
      {"and", [](Int128 x, Int128 y, T t) { return wrap(x & y, t); }},
      {"or", [](Int128 x, Int128 y, T t) { return wrap(x | y, t); }},
      {"xor", [](Int128 x, Int128 y, T t) { return wrap(x ^ y, t); }},
      {"not", [](Int128 x, Int128, T t) { return wrap(~x, t); }},
      // By an unsigned amount y; bit counts of the w-bit pattern.
      {"shl",
       [](Int128 x, Int128 y, T t) {
         return y >= Int128(t.width) ? 0 : wrap(x * (Int128{1} << y), t);
       }},
      {"shr",
       [](Int128 x, Int128 y, T t) { return y >= Int128(t.width) ? (x < 0 ? -1 : 0) : x >> y; }},
      {"rotl", [](Int128 x, Int128 y, T t) { return rotated(x, y, t); }},
      {"rotr",
       [](Int128 x, Int128 y, T t) {
         return rotated(x, Int128(t.width) - y % Int128(t.width), t);
       }},
      {"popcount", [](Int128 x, Int128, T t) { return Int128{std::popcount(pattern(x, t))}; }},
      {"clz",
       [](Int128 x, Int128, T t) { return Int128(t.width) - std::bit_width(pattern(x, t)); }},
      {"ctz",
       [](Int128 x, Int128, T t) {
         const std::uint64_t u = pattern(x, t);
         return u == 0 ? Int128(t.width) : Int128{std::countr_zero(u)};
       }},
  };
  return refs;
}

}  // namespace

// ---- round trips
// ---------------------------------------------------------------------------------

TEST_CASE("cli: keygen writes a private secret key and a cloud key", "[cli]") {
  Session& s = session();
  struct stat st {};
  REQUIRE(::stat(s.sk.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);  // the secret key is readable by its owner only
  CHECK_THAT(ok({"info", s.sk}).out, Contains("secret key") && Contains("'toy_INSECURE'"));
  CHECK_THAT(ok({"info", s.ck, s.ck2}).out,
             Contains("cloud key") && Contains("'toy_INSECURE'") && Contains("'toy_k2_INSECURE'"));

  const TempDir dir;
  const std::string sk = (dir / "a.tgsk").string(), ck = (dir / "a.tgck").string();
  const Run r = ok({"keygen", "--params", "toy_INSECURE", "--insecure-ok", "-s", sk, "-c", ck});
  CHECK_THAT(r.out, Contains("secret key") && Contains("cloud key") && Contains("cannot decrypt"));
  CHECK_THAT(r.err, Contains("warning") && Contains("INSECURE"));
  // Refused without --force, and nothing changes; replaced with it.
  const std::string before = read_file(sk);
  fails(exit_failure, {"keygen", "--params", "toy_INSECURE", "--insecure-ok", "-s", sk, "-c", ck},
        "refusing to overwrite");
  CHECK(read_file(sk) == before);
  ok({"keygen", "--params", "toy_INSECURE", "--insecure-ok", "-s", sk, "-c", ck, "--force", "-q"});
  CHECK(read_file(sk) != before);
  // Insecure sets need --insecure-ok; the secure default needs no flag (not generated here).
  fails(exit_usage, {"keygen", "--params", "toy_INSECURE", "-s", sk, "-c", ck, "--force"},
        "pass --insecure-ok");
  fails(exit_usage, {"keygen", "--params", "tfhe_lib_256", "-s", sk, "-c", ck},
        "unknown parameter set 'tfhe_lib_256'; known sets: tfhe_lib_128");
  fails(exit_usage, {"keygen", "--params", "toy_INSECURE", "--insecure-ok", "-s", sk, "-c", sk},
        "name the same file");
  fails(exit_usage, {"keygen", "-s", sk}, "--cloud-key is required");
  // No temporary files are left behind.
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir / "")) ++files;
  CHECK(files == 2);
}

TEST_CASE("cli: keygen --unroll writes an unrolled cloud key that eval uses; bad forms refused",
          "[cli][unroll]") {
  const TempDir dir;
  const std::string sk = (dir / "u.tgsk").string(), ck = (dir / "u.tgck").string();
  const std::string x = (dir / "x.tgct").string(), y = (dir / "y.tgct").string(),
                    p = (dir / "p.tgct").string();
  for (const char* bad : {"0", "5", "abc", "02", ""}) {
    fails(exit_usage,
          {"keygen", "--params", "toy_INSECURE", "--insecure-ok", "-s", sk, "-c", ck, "--unroll",
           bad},
          "--unroll: expected 1, 2, 3 or 4, got '" + std::string(bad) + "'");
  }
  // The help names the value U, not the validator's range.
  CHECK_THAT(ok({"keygen", "--help"}).out, Contains("--unroll U ") && !Contains("INT in"));
  ok({"keygen", "--params", "toy_INSECURE", "--insecure-ok", "-s", sk, "-c", ck, "--unroll", "3",
      "-q"});
  CHECK_THAT(ok({"info", ck}).out, Contains("format version 3") && Contains("unrolled (unroll 3)"));
  ok({"encrypt", "-k", sk, "--width", "8", "--signed", "--values", "3,-7,12", "-o", x, "-q"});
  ok({"encrypt", "-k", sk, "--width", "8", "--signed", "--values", "5,6,-4", "-o", y, "-q"});
  ok({"eval", "-c", ck, "--op", "mul", x, y, "-o", p, "-q"});
  CHECK_THAT(ok({"decrypt", "-k", sk, p}).out, Contains("15 -42 -48"));
  // Key bits in fours: the same file format, form 4.
  ok({"keygen", "--params", "toy_INSECURE", "--insecure-ok", "-s", sk, "-c", ck, "--unroll", "4",
      "-q", "--force"});
  CHECK_THAT(ok({"info", ck}).out, Contains("unrolled (unroll 4)"));
}

TEST_CASE("cli: encrypt and decrypt round trip values of every width, signed and unsigned",
          "[cli]") {
  Session& s = session();
  using T = circuits::IntType;
  const std::vector<std::pair<T, std::vector<Int128>>> cases = {
      {T{1, false}, {0, 1, 1, 0}},
      {T{5, true}, {-16, 15, 0, -1, 7}},
      {T{8, false}, {0, 255, 128, 1}},
      {T{16, true}, {-32768, 32767, -2, 1000}},
      {T{64, false}, {0, (Int128{1} << 64) - 1, Int128{1} << 63}},
      {T{64, true}, {-(Int128{1} << 63), (Int128{1} << 63) - 1, -1}},
  };
  for (const auto& [type, values] : cases) {
    INFO(type_name(type));
    const std::string file = s.encrypt("x.tgct", values, type);
    CHECK(s.decrypt(file) == values);
    CHECK_THAT(ok({"info", file}).out,
               Contains(type_name(type) + ", 1 x " + std::to_string(values.size())));
  }

  SECTION("matrices: rows from ';', from --shape, and from the lines of an input file") {
    const std::string m = s.path("m.tgct");
    ok({"encrypt", "-k", s.sk, "--width", "8", "--signed", "--values", "1, -2, 3; 4 5 -6", "-o", m,
        "--force"});
    CHECK(ok({"decrypt", "-k", s.sk, m}).out == " 1 -2  3\n 4  5 -6\n");
    ok({"encrypt", "-k", s.sk, "--width", "8", "--values", "1,2,3,4,5,6", "--shape", "3x2", "-o", m,
        "--force"});
    CHECK(ok({"decrypt", "-k", s.sk, m}).out == "1 2\n3 4\n5 6\n");
    write_file(s.path("values.txt"), "# a 2 x 3 matrix\n0x10, 0b11, +7\n\n-1 -2 -3  # last\n");
    ok({"encrypt", "-k", s.sk, "--width", "6", "--signed", "--input", s.path("values.txt"), "-o", m,
        "--force"});
    CHECK_THAT(ok({"info", m}).out, Contains("6-bit signed, 2 x 3"));
    // decrypt -o writes text that encrypt --input reads back.
    ok({"decrypt", "-k", s.sk, m, "-o", s.path("back.txt"), "--force"});
    CHECK(read_file(s.path("back.txt")) == "16  3  7\n-1 -2 -3\n");
    struct stat st {};
    REQUIRE(::stat(s.path("back.txt").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);  // the plaintext, like the secret key, is private
    fails(exit_failure, {"decrypt", "-k", s.sk, m, "-o", s.path("back.txt")},
          "refusing to overwrite");
    ok({"encrypt", "-k", s.sk, "--width", "6", "--signed", "-i", s.path("back.txt"), "-o",
        s.path("again.tgct"), "--force"});
    CHECK(s.decrypt(s.path("again.tgct")) == numbers("16 3 7 -1 -2 -3"));
  }
}

TEST_CASE("cli: every element-wise operation matches integer arithmetic", "[cli]") {
  Session& s = session();
  using T = circuits::IntType;
  struct Case {
    T type;
    std::vector<Int128> x, y;
  };
  const std::vector<Case> cases = {
      {T{8, false}, {0, 1, 200, 255, 37, 128}, {0, 255, 100, 255, 37, 127}},
      {T{6, true}, {0, -1, 31, -32, 5, -7}, {0, 1, -32, -32, 5, 9}},
  };
  for (const Case& c : cases) {
    const std::string x = s.encrypt("x.tgct", c.x, c.type, "2,3");
    const std::string y = s.encrypt("y.tgct", c.y, c.type, "2,3");
    // Shift amounts: unsigned 4-bit, some of them the width or more.
    const std::vector<Int128> amounts = {0, 1, 5, 7, 9, 15};
    const std::string a = s.encrypt("a.tgct", amounts, T{4, false}, "2,3");
    for (const Operation& op : operations()) {
      const auto ref = element_wise_references().find(std::string(op.name));
      if (ref == element_wise_references().end()) continue;  // reductions: below
      if (op.rule == OperandRule::SignedSingle && !c.type.is_signed) continue;
      INFO(op.name << " on " << type_name(c.type));
      const bool by_amount = op.rule == OperandRule::Amount;
      std::vector<Int128> want;
      for (std::size_t e = 0; e < c.x.size(); ++e)
        want.push_back(ref->second(c.x[e], by_amount ? amounts[e] : c.y[e], c.type));
      std::vector<std::string> operands = {x};
      if (op.arity() == 2) operands.push_back(by_amount ? a : y);
      CHECK(s.eval(std::string(op.name), operands) == want);
      if (!by_amount) continue;
      // One amount for every element.
      const std::string one = s.encrypt("one.tgct", {3}, T{2, false});
      want.clear();
      for (std::size_t e = 0; e < c.x.size(); ++e) want.push_back(ref->second(c.x[e], 3, c.type));
      CHECK(s.eval(std::string(op.name), {x, one}) == want);
    }
  }
  // Every element-wise operation of the table has a reference above (the reductions and
  // the operations along rows have their own cases below).
  const std::set<std::string_view> along_rows = {"sort",   "sort-desc", "row-min",
                                                 "row-max", "argmin",    "argmax"};
  for (const Operation& op : operations()) {
    if (op.takes_width || along_rows.count(op.name)) continue;
    CHECK(element_wise_references().count(std::string(op.name)) == 1);
  }
}

TEST_CASE("cli: sum, dot and matmul, with shapes and --width", "[cli]") {
  Session& s = session();
  const circuits::IntType s8{8, true};
  const std::vector<Int128> a = {3, -7, 12, -1, 5, 2};  // 2 x 3
  const std::vector<Int128> b = {5, 6, -4, -1, 2, 9};   // 3 x 2
  const std::string fa = s.encrypt("a.tgct", a, s8, "2,3");
  const std::string fb = s.encrypt("b.tgct", b, s8, "3,2");

  CHECK(s.eval("sum", {fa}) == std::vector<Int128>{14});
  Int128 dot = 0;
  for (std::size_t e = 0; e < a.size(); ++e) dot += a[e] * b[e];
  CHECK(s.eval("dot", {fa, fb}, {"--width", "16"}) == std::vector<Int128>{dot});
  // Default width: the operands' (8 bits, wrapping); dot needs only equal element counts.
  CHECK(s.eval("dot", {fa, fb}) == std::vector<Int128>{wrap(dot, s8)});

  // (2 x 3) * (3 x 2) = 2 x 2, printed as a matrix.
  std::vector<Int128> want;
  for (int r = 0; r < 2; ++r) {
    for (int c = 0; c < 2; ++c) {
      Int128 v = 0;
      for (int k = 0; k < 3; ++k) v += a[r * 3 + k] * b[k * 2 + c];
      want.push_back(v);
    }
  }
  CHECK(s.eval("matmul", {fa, fb}, {"--width", "12"}) == want);
  CHECK_THAT(ok({"info", s.path("result.tgct")}).out, Contains("12-bit signed, 2 x 2"));
  const Run report = ok({"eval", "-c", s.ck, "--op", "matmul", fa, fb, "-o", s.path("mm.tgct"),
                         "--force", "--backend", "sequential"});
  CHECK_THAT(report.out, Contains("bootstraps in") && Contains("depth") &&
                             Contains("8-bit signed, 2 x 2") && Contains("sequential") &&
                             Contains("a wrong output bit: 2^-") && Contains("noise model"));
  CHECK(report.err.empty());  // toy_INSECURE's margins: no warning
}

TEST_CASE("cli: eval warns when the noise model gives its run a likely wrong bit",
          "[cli][unroll]") {
  // tfhe_lib_80 with key bits in fours: the adder's prefix gates fail with about 2^-28 each
  // (docs/security.md section 3), above eval's 2^-40 a run; its 2-bit add has no prefix gate.
  const TempDir dir;
  const std::string sk = (dir / "k.tgsk").string(), ck = (dir / "k.tgck").string();
  const std::string x = (dir / "x.tgct").string(), y = (dir / "y.tgct").string(),
                    r = (dir / "r.tgct").string();
  ok({"keygen", "--params", "tfhe_lib_80", "-s", sk, "-c", ck, "--unroll", "4", "-q"});
  ok({"encrypt", "-k", sk, "--width", "8", "--values", "100,27", "-o", x, "-q"});
  const Run risky = ok({"eval", "-c", ck, "--op", "add", x, x, "-o", r});
  CHECK_THAT(risky.err,
             Contains("torusgate eval: warning: by the noise model this run gives a wrong output "
                      "bit with probability 2^-") &&
                 Contains("its PREFIX_GENERATE bootstraps each fail with probability 2^-") &&
                 Contains("with key bits in fours (--unroll 4); a cloud key made without "
                          "--unroll gives 2^-") &&
                 Contains("its result may be wrong"));
  // The warning goes to stderr with -q too; the result is still written and (here) right.
  const Run quiet = ok({"eval", "-c", ck, "--op", "add", x, x, "-o", r, "--force", "-q"});
  CHECK(quiet.out.empty());
  CHECK_THAT(quiet.err, Contains("warning: by the noise model"));
  CHECK_THAT(ok({"decrypt", "-k", sk, r}).out, Contains("200 54"));
  ok({"encrypt", "-k", sk, "--width", "2", "--values", "1,2", "-o", y, "-q"});
  const Run safe = ok({"eval", "-c", ck, "--op", "add", y, y, "-o", r, "--force"});
  CHECK(safe.err.empty());
  CHECK_THAT(safe.out, Contains("a wrong output bit: 2^-"));
}

TEST_CASE("cli: sort, row-min, row-max, argmin and argmax work along every row", "[cli]") {
  Session& s = session();
  const circuits::IntType s6{6, true};
  // 3 x 5, with ties: the first column of an extreme is the answer.
  const std::vector<Int128> m = {4, -7, 12, -7, 5, 0, 0, 0, 0, 0, -32, 31, 9, 31, -32};
  const std::string fm = s.encrypt("m.tgct", m, s6, "3,5");
  std::vector<Int128> up, down, lo, hi, at_lo, at_hi;
  for (std::size_t r = 0; r < 3; ++r) {
    std::vector<Int128> row(m.begin() + 5 * r, m.begin() + 5 * (r + 1));
    const auto min_at = std::min_element(row.begin(), row.end());
    const auto max_at = std::max_element(row.begin(), row.end());
    lo.push_back(*min_at);
    hi.push_back(*max_at);
    at_lo.push_back(min_at - row.begin());
    at_hi.push_back(max_at - row.begin());
    std::sort(row.begin(), row.end());
    up.insert(up.end(), row.begin(), row.end());
    down.insert(down.end(), row.rbegin(), row.rend());
  }
  CHECK(s.eval("sort", {fm}) == up);
  CHECK_THAT(ok({"info", s.path("result.tgct")}).out, Contains("6-bit signed, 3 x 5"));
  CHECK(s.eval("sort-desc", {fm}) == down);
  CHECK(s.eval("row-min", {fm}) == lo);
  CHECK(s.eval("row-max", {fm}) == hi);
  CHECK_THAT(ok({"info", s.path("result.tgct")}).out, Contains("6-bit signed, 3 x 1"));
  CHECK(s.eval("argmin", {fm}) == at_lo);
  CHECK(s.eval("argmax", {fm}) == at_hi);
  CHECK_THAT(ok({"info", s.path("result.tgct")}).out, Contains("3-bit unsigned, 3 x 1"));
  // A vector is one row.
  const std::string fv = s.encrypt("v.tgct", {9, 2, 7}, circuits::IntType{4, false});
  CHECK(s.eval("sort", {fv}) == std::vector<Int128>{2, 7, 9});
  CHECK(s.eval("argmin", {fv}) == std::vector<Int128>{1});
}

TEST_CASE("cli: lut applies a table to every element", "[cli]") {
  Session& s = session();
  const circuits::IntType s3{3, true};
  const std::string x = s.encrypt("x.tgct", {-4, -1, 0, 3, 2, -3}, s3, "2,3");
  // Squares (from -4 up), unsigned, 5 bits; signs, signed since entries are negative.
  CHECK(s.eval("lut", {x}, {"--table", "16,9,4,1,0,1,4,9", "--width", "5"}) ==
        std::vector<Int128>{16, 1, 0, 9, 4, 9});
  CHECK_THAT(ok({"info", s.path("result.tgct")}).out, Contains("5-bit unsigned, 2 x 3"));
  CHECK(s.eval("lut", {x}, {"--table", "-1 -1 -1 -1 0 1 1 1"}) ==
        std::vector<Int128>{-1, -1, 0, 1, 1, -1});
  CHECK_THAT(ok({"info", s.path("result.tgct")}).out, Contains("3-bit signed, 2 x 3"));
  // Value text: rows, hexadecimal, comments.
  const std::string u2 = s.encrypt("u.tgct", {0, 1, 2, 3}, circuits::IntType{2, false});
  CHECK(s.eval("lut", {u2}, {"--table", "0x63 0x7c # two\n0x77 0x7b", "--width", "8"}) ==
        std::vector<Int128>{0x63, 0x7c, 0x77, 0x7b});

  const auto eval = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"eval", "-c", s.ck, "--op", "lut", x, "-o",
                                     s.path("lut.tgct"), "--force"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  fails(exit_usage, eval({}), "lut needs --table");
  fails(exit_usage, eval({"--table", "1,2,3"}),
        "lut of '" + x + "' (3-bit signed) needs 8 entries, one per value from the smallest, "
        "but --table has 3");
  fails(exit_usage, eval({"--table", "16,9,4,1,0,1,4,9"}),
        "--table: value 16 does not fit 3-bit unsigned (0..7); --width sets the result width");
  fails(exit_usage, eval({"--table", "1,2,x,4,5,6,7,8"}), "--table:");
  fails(exit_usage, eval({"--table", "1", "--width", "65"}), "--width: 65 is out of range");
  fails(exit_usage, {"eval", "-c", s.ck, "--op", "neg", x, "-o", s.path("n.tgct"), "--table", "1"},
        "--table applies to lut only");
  const std::string wide = s.encrypt("w.tgct", {1}, circuits::IntType{17, false});
  fails(exit_failure,
        {"eval", "-c", s.ck, "--op", "lut", wide, "-o", s.path("n.tgct"), "--table", "1"},
        "lut indexes integers of up to 16 bits, but '" + wide + "' is 17-bit unsigned");
}

TEST_CASE("cli: mul-full gives products wider than 64 bits, up to 128", "[cli]") {
  Session& s = session();
  const circuits::IntType u33{33, false};
  const Int128 big = (Int128{1} << 33) - 1;
  const std::string x = s.encrypt("x.tgct", {big}, u33);
  const std::string y = s.encrypt("y.tgct", {big - 2}, u33);
  CHECK(s.eval("mul-full", {x, y}) == std::vector<Int128>{big * (big - 2)});
  CHECK_THAT(ok({"info", s.path("result.tgct")}).out, Contains("66-bit unsigned, 1 x 1"));

  // The widest: 64 x 64 -> 128 bits, signed (about 13000 bootstraps, a second on toy keys).
  const circuits::IntType s64{64, true};
  const Int128 low = -(Int128{1} << 63), high = (Int128{1} << 63) - 1;
  const std::string wx = s.encrypt("x.tgct", {low}, s64);
  const std::string wy = s.encrypt("y.tgct", {high}, s64);
  CHECK(s.eval("mul-full", {wx, wy}) == std::vector<Int128>{low * high});
}

// ---- bad command lines -------------------------------------------------------------------------

TEST_CASE("cli: help, version, and bad command lines", "[cli]") {
  Session& s = session();
  CHECK_THAT(ok({"--help"}).out, Contains("keygen") && Contains("Exit codes"));
  CHECK_THAT(ok({"help", "eval"}).out, Contains("--cloud-key") && Contains("matmul"));
  CHECK_THAT(ok({"help", "help"}).out, Contains("keygen") && Contains("decrypt"));
  CHECK_THAT(ok({"encrypt", "--help"}).out,
             Contains("--width") && Contains("--shape") && Contains("--quiet"));
  CHECK_THAT(ok({"keygen", "-h"}).out, Contains("toy_INSECURE") && !Contains("torusgate eval"));
  CHECK_THAT(ok({"--version"}).out, StartsWith("torusgate "));

  const Run none = run({});
  CHECK(none.code == exit_usage);
  CHECK_THAT(none.err, Contains("no command given"));
  fails(exit_usage, {"encrpyt"}, "unknown command 'encrpyt'; did you mean 'encrypt'?");
  fails(exit_usage, {"encrypt", "-k", s.sk, "--widht", "8"},
        "unknown option '--widht'; did you mean '--width'?");
  fails(exit_usage, {"info", "--bogus=1", s.sk}, "unknown option '--bogus'");
  fails(exit_usage, {"keygen", "stray"}, "unexpected argument 'stray'");
  fails(exit_usage, {"encrypt", "-k", s.sk, "--values", "1"}, "--width is required");
  fails(exit_usage, {"encrypt", "-k", s.sk, "--width"}, "--width needs a value");
  fails(exit_usage, {"encrypt", "-k", s.sk, "--width", "8", "-w", "9"},
        "--width is given more than once");
  fails(exit_usage, {"frobnicate"}, "unknown command 'frobnicate'; expected keygen, encrypt");
  fails(exit_usage, {"--bogus"}, "unknown option '--bogus' (see 'torusgate --help')");
  fails(exit_usage, {"encrypt", "-k", s.sk, "--width", "65", "--values", "1", "-o", "x"},
        "--width: 65 is out of range; expected an integer in 1..64");
  fails(exit_usage, {"encrypt", "-k", s.sk, "--width", "8", "-o", "x"},
        "give the integers with --values LIST (not empty) or --input FILE");
  fails(exit_usage, {"encrypt", "-k", s.sk, "--width", "8", "--values", "", "-o", "x"},
        "give the integers with --values LIST (not empty) or --input FILE");
  fails(exit_usage, {"encrypt", "-k", s.sk, "--width", "8", "--values", "1", "-i", "f", "-o", "x"},
        "not both");
  fails(exit_usage,
        {"encrypt", "-k", s.sk, "--width", "8", "--values", "1", "--shape", "2x", "-o", "x"},
        "--shape: '2x' is not a shape");
  fails(exit_usage, {"eval", "-c", s.ck, "-o", "x"}, "--op is required");
  fails(exit_usage, {"eval", "-c", s.ck, "--op", "pow", "a", "b", "-o", "x"},
        "unknown operation 'pow'; expected one of add, sub");
  fails(exit_usage, {"eval", "-c", s.ck, "--op", "add", "a", "-o", "x"},
        "add takes two input files but 1 was given");
  fails(exit_usage, {"eval", "-c", s.ck, "--op", "neg", "a", "b", "-o", "x"},
        "neg takes one input file but 2 were given");
  fails(exit_usage, {"eval", "-c", s.ck, "--op", "add", "a", "b", "-o", "x", "--width", "9"},
        "--width applies to sum, dot, matmul and lut only");
  // eval's option refusals: the arguments after "eval -c CK --op sum a -o x", the message.
  const std::vector<std::pair<std::vector<std::string>, std::string>> eval_refusals = {
      {{"--width", "129"}, "--width: 129 is out of range"},
      {{"--backend", "cuda"}, "unknown backend 'cuda'"},
      {{"--backend", "sequential", "--threads", "2"}, "--threads applies to the openmp backend"},
      {{"--threads", "zero"}, "--threads: 'zero' is not a number"},
      {{"--backend", "sequential", "--gpu-engine", "fused"},
       "--gpu-engine is a GPU option: it applies to --backend gpu, not to sequential"},
      {{"--backend", "openmp", "--device", "0"},
       "--device is a GPU option: it applies to --backend gpu, not to openmp"},
      {{"--gpu-engine", "cuda"},
       "--gpu-engine: unknown GPU engine 'cuda'; expected cufft or fused"},
      {{"--key-switching", "dense"}, "--key-switching: unknown key switching 'dense'"},
      {{"--device", "-1"}, "--device"},
      // Every GPU option the benchmark programs take; the first one given is named.
      {{"--backend", "openmp", "--fused-lanes", "2", "--device", "0"},
       "--fused-lanes is a GPU option: it applies to --backend gpu, not to openmp"},
      {{"--backend", "sequential", "--no-cuda-graphs", "--transfer", "pinned"},
       "--no-cuda-graphs is a GPU option: it applies to --backend gpu, not to sequential"},
      {{"--fused-key-stage", "3"}, "--fused-key-stage: 3 is out of range"},
      {{"--memory-budget-mb", "lots"}, "--memory-budget-mb: 'lots' is not a number"},
      {{"--transfer", "dma"}, "--transfer: unknown"},
      {{"--no-cuda-graphs=no"}, "--no-cuda-graphs takes no value"},
      {{"--fused-lanes", "1", "--fused-lanes", "2"},
       "--fused-lanes is given more than once; give it once"},
  };
  for (const auto& [extra, message] : eval_refusals) {
    std::vector<std::string> args = {"eval", "-c", s.ck, "--op", "sum", "a", "-o", "x"};
    args.insert(args.end(), extra.begin(), extra.end());
    fails(exit_usage, args, message);
  }
  fails(exit_usage, {"decrypt", "-k", s.sk}, "give the file to decrypt");
  fails(exit_usage, {"decrypt", "-k", s.sk, "a.tgct", "b.tgct"}, "unexpected argument 'b.tgct'");
  fails(exit_usage, {"info"}, "give one or more files");
  // "--" ends the options: what follows is an argument, even when it begins with '-'.
  fails(exit_usage, {"decrypt", "-k", s.sk, "--", "a.tgct", "-b.tgct"},
        "unexpected argument '-b.tgct'");
  fails(exit_usage, {"encrypt", "--", "-k", s.sk}, "unexpected argument '-k'");
  fails(exit_usage, {"encrypt", "--bogus", "--", "-k"}, "unknown option '--bogus'");
  fails(exit_failure, {"decrypt", "-k", s.sk, "--", "-missing.tgct"},
        "cannot open '-missing.tgct'");
}

TEST_CASE("cli: values that do not fit or do not parse", "[cli]") {
  Session& s = session();
  const std::string out = s.path("never_values.tgct");
  const auto enc = [&](const std::string& width, bool is_signed, const std::string& values) {
    std::vector<std::string> args = {"encrypt",  "-k",   s.sk, "--width", width,
                                     "--values", values, "-o", out,       "--force"};
    if (is_signed) args.push_back("--signed");
    return args;
  };
  fails(exit_usage, enc("8", false, "1,300"),
        "--values: value 300 does not fit 8-bit unsigned (0..255)");
  fails(exit_usage, enc("8", false, "-1"), "does not fit 8-bit unsigned (0..255); pass --signed");
  fails(exit_usage, enc("8", true, "128"), "value 128 does not fit 8-bit signed (-128..127)");
  fails(exit_usage, enc("64", false, "18446744073709551616"), "does not fit 64-bit unsigned");
  fails(exit_usage, enc("8", false, "1,2x"), "'2x' is not an integer");
  fails(exit_usage, enc("8", false, "1,2;3"), "row 2 has 1 value but row 1 has 2");
  fails(exit_usage, enc("8", false, " ;\n ;"), "--values: no values");
  fails(exit_usage, enc("8", false, " , ;"),
        "--values: row 1 misses a value: a comma with no value before it");
  fails(exit_usage,
        {"encrypt", "-k", s.sk, "--width", "8", "--values", "1,2,3", "--shape", "2,2", "-o", out},
        "--shape 2,2 holds 4 values but 3 were given");
  // 467443687 * 39463029637 = 2^64 + 3: a 64-bit product would wrap to the 3 values given.
  fails(exit_usage,
        {"encrypt", "-k", s.sk, "--width", "8", "--values", "1,2,3", "--shape",
         "467443687,39463029637", "-o", out},
        "--shape 467443687,39463029637 holds more than 2^64 values but 3 were given");
  // In a file: a failure of the data (exit 1) naming the file and line.
  write_file(s.path("bad.txt"), "1 2\n3 999\n");
  fails(exit_failure,
        {"encrypt", "-k", s.sk, "--width", "8", "-i", s.path("bad.txt"), "-o", out, "--force"},
        "bad.txt' line 2: value 999 does not fit 8-bit unsigned");
  fails(exit_failure,
        {"encrypt", "-k", s.sk, "--width", "8", "-i", s.path("none.txt"), "-o", out, "--force"},
        "cannot read");
  CHECK_FALSE(fs::exists(out));  // nothing was written by any of them
}

// ---- bad files
// -----------------------------------------------------------------------------------

TEST_CASE("cli: missing, foreign, corrupted and truncated files", "[cli]") {
  Session& s = session();
  const circuits::IntType u4{4, false};
  const std::string x = s.encrypt("x.tgct", {1, 2, 3}, u4);
  const std::string out = s.path("never_files.tgct");
  const auto eval_add = [&](const std::string& a, const std::string& b) {
    return std::vector<std::string>{"eval", "-c", s.ck, "--op", "add", a, b, "-o", out, "--force"};
  };

  fails(exit_failure, eval_add(x, s.path("missing.tgct")),
        "cannot open '" + s.path("missing.tgct") + "' for reading: No such file");
  // A name with a terminal's escape sequence reaches the message escaped.
  fails(exit_failure, eval_add(x, s.path("a\x1b[2Jb.tgct")),
        "cannot open '" + s.path("a\\x1B[2Jb.tgct") + "' for reading");
  fails(exit_failure, {"decrypt", "-k", s.path("nokey.tgsk"), x}, "nokey.tgsk");
  fails(exit_failure, eval_add(x, s.path("")), "it is a directory");

  write_file(s.path("text.txt"), "3, 4, 5\n");
  fails(exit_failure, eval_add(x, s.path("text.txt")), "text.txt': not a torusgate file");
  write_file(s.path("lib.txt"), "-----BEGIN LWEPARAMS-----\n");
  fails(exit_failure, {"decrypt", "-k", s.path("lib.txt"), x}, "looks like a TFHE library");
  write_file(s.path("empty.tgct"), "");
  fails(exit_failure, {"decrypt", "-k", s.sk, s.path("empty.tgct")}, "empty input");

  const std::string bytes = read_file(x);
  write_file(s.path("cut.tgct"), bytes.substr(0, bytes.size() - 100));
  fails(exit_failure, eval_add(x, s.path("cut.tgct")), "cut.tgct': truncated");
  write_file(s.path("cut.tgct"), bytes.substr(0, 30));
  fails(exit_failure, {"decrypt", "-k", s.sk, s.path("cut.tgct")}, "truncated");
  std::string flipped = bytes;
  flipped[bytes.size() / 2] ^= 0x10;
  write_file(s.path("flip.tgct"), flipped);
  fails(exit_failure, eval_add(x, s.path("flip.tgct")), "flip.tgct': checksum mismatch");
  fails(exit_failure, {"decrypt", "-k", s.sk, s.path("flip.tgct")}, "the file is corrupted");
  write_file(s.path("long.tgct"), bytes + "++");
  fails(exit_failure, {"decrypt", "-k", s.sk, s.path("long.tgct")}, "2 bytes of trailing data");
  const std::string ck = read_file(s.ck);
  write_file(s.path("cut.tgck"), ck.substr(0, ck.size() / 2));
  fails(exit_failure, {"eval", "-c", s.path("cut.tgck"), "--op", "neg", x, "-o", out, "--force"},
        "cut.tgck': truncated: the key-switching key");

  // info describes what it can and names what it cannot; exit 1 if any file failed.
  const Run info = run({"info", x, s.path("text.txt"), s.path("flip.tgct")});
  CHECK(info.code == exit_failure);
  CHECK_THAT(info.out, Contains("x.tgct: integer array") && Contains("4-bit unsigned, 1 x 3"));
  CHECK_THAT(info.err, Contains("not a torusgate file") && Contains("checksum mismatch"));
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("cli: files of the wrong kind are named as such", "[cli]") {
  Session& s = session();
  const std::string x = s.encrypt("x.tgct", {1, 2}, circuits::IntType{4, false});
  const std::string out = s.path("never_kinds.tgct");
  fails(exit_failure, {"eval", "-c", s.sk, "--op", "neg", x, "-o", out},
        "holds a secret key, but --cloud-key needs a cloud key: the server evaluates with the "
        "cloud key alone");
  fails(exit_failure, {"decrypt", "-k", s.ck, x},
        "holds a cloud key, but --key needs a secret key");
  fails(exit_failure, {"encrypt", "-k", s.ck, "--width", "4", "--values", "1", "-o", out},
        "a cloud key cannot decrypt");
  fails(exit_failure, {"eval", "-c", s.ck, "--op", "add", x, s.ck, "-o", out},
        "holds a cloud key, but an operand of eval needs an integer array");
  fails(exit_failure, {"decrypt", "-k", s.sk, s.sk},
        "holds a secret key, but decrypt needs an "
        "integer array");
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("cli: mismatched parameter sets, types and shapes", "[cli]") {
  Session& s = session();
  const circuits::IntType u4{4, false}, s4{4, true};
  const std::string x = s.encrypt("x.tgct", {1, 2, 3}, u4);
  const std::string y = s.encrypt("y.tgct", {1, 2, 3, 4}, u4);
  const std::string z = s.encrypt("z.tgct", {1, 2, 3}, s4);
  const std::string m = s.encrypt("m.tgct", {1, 2, 3, 4, 5, 6}, u4, "2,3");
  // An array of the other parameter set (encrypted with the other secret key).
  ok({"encrypt", "-k", s.sk2, "--width", "4", "--values", "1,2,3", "-o", s.path("k2.tgct"),
      "--force"});
  const std::string out = s.path("never_mismatch.tgct");
  const auto eval = [&](const std::string& op, const std::vector<std::string>& operands,
                        const std::string& ck) {
    std::vector<std::string> args = {"eval", "-c", ck, "--op", op, "-o", out, "--force"};
    args.insert(args.end(), operands.begin(), operands.end());
    return args;
  };

  fails(exit_failure, eval("add", {x, s.path("k2.tgct")}, s.ck),
        "different parameter sets: '" + s.path("k2.tgct") +
            "' is for parameter set 'toy_k2_INSECURE' but '" + s.ck + "' is for 'toy_INSECURE'");
  fails(exit_failure, eval("neg", {x}, s.ck2), "is for parameter set 'toy_INSECURE' but");
  fails(exit_failure, {"decrypt", "-k", s.sk2, x},
        "is for parameter set 'toy_INSECURE' but '" + s.sk2 + "' is for 'toy_k2_INSECURE'");

  fails(exit_failure, eval("add", {x, y}, s.ck),
        "add works element by element on operands of the same shape, but '" + x +
            "' is 4-bit unsigned, 1 x 3 and '" + y + "' is 4-bit unsigned, 1 x 4");
  fails(exit_failure, eval("lt", {x, z}, s.ck), "lt needs two operands of the same type");
  fails(exit_failure, eval("dot", {x, y}, s.ck), "same number of elements");
  fails(exit_failure, eval("matmul", {m, m}, s.ck),
        "the first has 3 columns and the second 2 rows");
  fails(exit_failure, eval("abs", {x}, s.ck), "abs needs a signed operand");
  // Shift amounts: unsigned, one per element or one for all.
  fails(exit_failure, eval("shl", {x, z}, s.ck), "shl needs an unsigned amount, but '" + z + "'");
  fails(exit_failure, eval("rotr", {x, y}, s.ck),
        "rotr moves every element by its own amount or all by one, but '" + x +
            "' is 4-bit unsigned, 1 x 3 and '" + y + "' is 4-bit unsigned, 1 x 4");
  // Element-wise operations need one shape (2 x 3 is not 1 x 6); dot only one element count.
  const std::string v = s.encrypt("v.tgct", {1, 2, 3, 4, 5, 6}, u4);
  fails(exit_failure, eval("add", {m, v}, s.ck), "same shape");
  CHECK(s.eval("dot", {m, v}) == std::vector<Int128>{wrap(1 + 4 + 9 + 16 + 25 + 36, u4)});
  CHECK_FALSE(fs::exists(out));
}

// A second key pair of the same parameter set: the parameter checks pass, and only the key ids
// (format version 3) tell its files from the session's.
TEST_CASE("cli: files of another secret key of the same parameter set are refused by key id",
          "[cli][key_id]") {
  Session& s = session();
  TempDir dir;
  const auto at = [&](const std::string& name) { return (dir / name).string(); };
  ok({"keygen", "--params", "toy_INSECURE", "--insecure-ok", "-s", at("b.tgsk"), "-c",
      at("b.tgck"), "-q"});
  const std::string x = s.encrypt("kx.tgct", {1, 2, 3}, circuits::IntType{4, false});
  ok({"encrypt", "-k", at("b.tgsk"), "--width", "4", "--values", "5,6,7", "-o", at("y.tgct")});
  const std::string x_id = key_id_text(read_file_header(x).key_id);
  const std::string b_id = key_id_text(read_file_header(at("b.tgsk")).key_id);
  REQUIRE(x_id != b_id);
  REQUIRE(read_file_header(s.ck).key_id == read_file_header(x).key_id);
  CHECK_THAT(ok({"info", x}).out, Contains("under key id " + x_id));

  // eval: an operand under another key than the cloud key's.
  fails(exit_failure, {"eval", "-c", at("b.tgck"), "--op", "neg", x, "-o", at("r.tgct")},
        "'" + x + "' is encrypted under key id " + x_id + " but '" + at("b.tgck") +
            "' was made from key id " + b_id + ": the result would decrypt to random bits");
  const std::string y = at("y.tgct");
  fails(exit_failure, {"eval", "-c", s.ck, "--op", "add", x, y, "-o", at("r.tgct")},
        "'" + y + "' is encrypted under key id " + b_id);
  CHECK_FALSE(fs::exists(at("r.tgct")));
  // decrypt: a file under another key.
  fails(exit_failure, {"decrypt", "-k", at("b.tgsk"), x},
        "'" + x + "' is under key id " + x_id + " but '" + at("b.tgsk") + "' is key id " + b_id +
            ": it would decrypt to random bits");
  // A cloud key that names no key (imported from the library's keyset) checks the operands
  // against each other, and its result is under theirs.
  ok({"export", at("b.tgck"), "-o", at("b_cloud.key")});
  ok({"import", at("b_cloud.key"), "-o", at("anon.tgck")});
  fails(exit_failure, {"eval", "-c", at("anon.tgck"), "--op", "add", at("y.tgct"), x, "-o",
                       at("r.tgct")},
        "'" + x + "' is encrypted under key id " + x_id + " but '" + at("y.tgct") +
            "' is under key id " + b_id);
  ok({"eval", "-c", at("anon.tgck"), "--op", "neg", at("y.tgct"), "-o", at("r.tgct"), "-q"});
  CHECK(read_file_header(at("r.tgct")).key_id == read_file_header(at("b.tgsk")).key_id);
  CHECK(ok({"decrypt", "-k", at("b.tgsk"), at("r.tgct")}).out == "11 10 9\n");
  // The result of eval is under the cloud key's secret key.
  ok({"eval", "-c", s.ck, "--op", "neg", x, "-o", at("n.tgct"), "-q"});
  CHECK(read_file_header(at("n.tgct")).key_id == read_file_header(x).key_id);
}

TEST_CASE("cli: outputs are never overwritten without --force and never left half written",
          "[cli]") {
  Session& s = session();
  const circuits::IntType u4{4, false};
  const std::string x = s.encrypt("x.tgct", {1, 2}, u4);
  const std::string out = s.path("kept.tgct");
  write_file(out, "precious");
  fails(exit_failure, {"eval", "-c", s.ck, "--op", "neg", x, "-o", out},
        "refusing to overwrite '" + out + "', which exists; pass --force");
  fails(exit_failure, {"encrypt", "-k", s.sk, "--width", "4", "--values", "1", "-o", out},
        "refusing to overwrite");
  CHECK(read_file(out) == "precious");
  // A failing command with --force leaves the old file alone too.
  fails(exit_failure, {"eval", "-c", s.ck, "--op", "abs", x, "-o", out, "--force"},
        "abs needs a signed operand");
  CHECK(read_file(out) == "precious");
  ok({"eval", "-c", s.ck, "--op", "neg", x, "-o", out, "--force", "-q"});
  CHECK(s.decrypt(out) == std::vector<Int128>{15, 14});
  fails(exit_failure, {"eval", "-c", s.ck, "--op", "neg", x, "-o", s.path("no/dir/r.tgct")},
        "the directory");
  fails(exit_failure, {"eval", "-c", s.ck, "--op", "neg", x, "-o", s.path("")},
        "it is a directory");
  // An output is never one of the command's own inputs, even with --force: a key, the
  // values, the array decrypted. An eval result may replace an operand.
  const std::string values = s.path("values.txt");
  write_file(values, "1 2\n");
  fails(exit_usage, {"encrypt", "-k", s.sk, "-w", "4", "--values", "1", "-o", s.sk, "-f"},
        "--output names the input file '" + s.sk + "'");
  fails(exit_usage, {"encrypt", "-k", s.sk, "-w", "4", "--input", values, "-o", values, "-f"},
        "--output names the input file '" + values + "'");
  fails(exit_usage, {"decrypt", "-k", s.sk, x, "-o", s.sk, "-f"}, "--output names the input file");
  fails(exit_usage, {"decrypt", "-k", s.sk, x, "-o", x, "-f"}, "--output names the input file");
  fails(exit_usage, {"eval", "-c", s.ck, "--op", "neg", x, "-o", s.ck, "-f"},
        "--output names the input file '" + s.ck + "'");
  CHECK(read_file(values) == "1 2\n");
  const std::string y = s.encrypt("y.tgct", {3, 4}, u4);
  ok({"eval", "-c", s.ck, "--op", "neg", y, "-o", y, "-f", "-q"});
  CHECK(s.decrypt(y) == std::vector<Int128>{13, 12});
  // A link to the key is the key.
  const std::string link = s.path("key_link.tgsk");
  fs::remove(link);
  fs::create_symlink(s.sk, link);
  fails(exit_usage, {"encrypt", "-k", s.sk, "-w", "4", "--values", "1", "-o", link, "-f"},
        "--output names the input file");
  CHECK(s.decrypt(x) == std::vector<Int128>{1, 2});  // the key still decrypts
  // A device is written into; a failed write says why.
  ok({"encrypt", "-k", s.sk, "-w", "4", "--values", "1", "-o", "/dev/null"});
  if (fs::exists("/dev/full")) {
    fails(exit_failure, {"encrypt", "-k", s.sk, "-w", "4", "--values", "1", "-o", "/dev/full"},
          "cannot write '/dev/full': No space left on device");
  }
  // No temporary file is left in the session directory.
  for (const auto& entry : fs::directory_iterator(s.path(""))) {
    CHECK(entry.path().filename().string().find(".tmp-") == std::string::npos);
  }
}

TEST_CASE("cli: info describes TFHE library v1.1 files too", "[cli]") {
  Session& s = session();
  Csprng rng = Csprng::deterministic(7, testing::insecure_deterministic);
  const SecretKey key(toy_insecure(), rng);
  tfhe_lib::save_parameter_set(s.path("params.txt"), toy_insecure());
  tfhe_lib::save_lwe_key(s.path("lwe.key"), key);
  tfhe_lib::save_tgsw_key(s.path("tgsw.key"), key);
  const std::vector<std::uint8_t> bits = {1, 0, 1};
  tfhe_lib::save_gate_ciphertexts(s.path("bits.ctxt"), toy_insecure(),
                                  encrypt_bits(key, bits, rng));
  const Run r = ok(
      {"info", s.path("params.txt"), s.path("lwe.key"), s.path("tgsw.key"), s.path("bits.ctxt")});
  CHECK_THAT(r.out, Contains("TFHE library v1.1 parameter set, the named set 'toy_INSECURE'") &&
                        Contains("LWE secret key, n=64") &&
                        Contains("TGSW secret key, k=1 N=256") &&
                        Contains("gate ciphertexts: 3 samples of dimension n=64"));
  // The other commands read native files only, and say so, naming what the file holds.
  fails(exit_failure, {"decrypt", "-k", s.path("lwe.key"), s.path("bits.ctxt")},
        "looks like a TFHE library v1.1 file");
  fails(exit_failure, {"eval", "-c", s.ck, "--op", "not", s.path("bits.ctxt"), "-o",
                       s.path("never.tgct")},
        "(it looks like a TFHE library v1.1 file (gate ciphertexts); 'torusgate import' "
        "converts it");
  // Gate ciphertexts cut short: why no dimension reads them, not "no library file".
  const std::string whole = read_file(s.path("bits.ctxt"));
  write_file(s.path("cut.ctxt"), whole.substr(0, whole.size() - 7));
  fails(exit_failure, {"info", s.path("cut.ctxt")},
        "starts as TFHE library v1.1 gate ciphertexts but no parameter set's dimension reads it");
  write_file(s.path("notes.md"), "# notes\n");
  fails(
      exit_failure, {"info", s.path("notes.md")},
      "not a torusgate file: bad magic, it starts with bytes 23 20 6e 6f 74 65 73 0a but expected "
      "\"TGATEBIN\" (nor a TFHE library v1.1 file)");
}
