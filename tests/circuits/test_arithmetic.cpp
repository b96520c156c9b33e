// Integer operations on the plaintext backend against plain integer arithmetic: every
// operation of the catalog, each signedness it supports, exhaustively over all operand pairs
// at widths 1 to 6 (all pairs as the lanes of one run) and 8 (default operations and
// comparisons), seeded random and edge cases at 16, 32 and 64 bits (128-bit full products
// through decrypt_bits); then carries, free bit manipulations, select with a broadcast
// condition, trivial encryptions, constant operands and multiplication by constants.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "circuit_test_support.hpp"

using namespace torusgate;
using namespace torusgate::circuits;
using namespace torusgate::test;

namespace {

using PB = PlaintextBackend;
using Arr = IntArray<PB>;

// Every value of `v` against every value of `v`, as two lane vectors.
void cross_pairs(const std::vector<std::uint64_t>& v, std::vector<std::uint64_t>& xs,
                 std::vector<std::uint64_t>& ys) {
  xs.clear();
  ys.clear();
  for (std::uint64_t a : v)
    for (std::uint64_t b : v) {
      xs.push_back(a);
      ys.push_back(b);
    }
}

// All (x, y) pairs of a type as two lane vectors.
void all_pairs(IntType type, std::vector<std::uint64_t>& xs, std::vector<std::uint64_t>& ys) {
  cross_pairs(all_values(type), xs, ys);
}

// Edge pairs (every edge value against every edge value) then `random` random pairs.
void edge_and_random_pairs(Csprng& rng, IntType type, std::size_t random,
                           std::vector<std::uint64_t>& xs, std::vector<std::uint64_t>& ys) {
  cross_pairs(edge_values(type), xs, ys);
  for (std::size_t i = 0; i < random; ++i) {
    xs.push_back(random_value(rng, type));
    ys.push_back(random_value(rng, type));
  }
}

void check_exhaustive(PlaintextFixture& f, const Operation& op, IntType type, Csprng& rng) {
  std::vector<std::uint64_t> xs, ys;
  if (op.arity == 2) {
    all_pairs(type, xs, ys);
  } else {
    xs = all_values(type);
  }
  check_operation(f, op, type, xs, ys, rng);
}

std::uint64_t mask64(std::size_t width) {
  return width >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << width) - 1;
}

// Runs `record` on inputs xs (and ys) of `type` and returns the decrypted result (patterns) and
// the cost.
template <class Record>
std::vector<std::uint64_t> run2(PlaintextFixture& f, IntType type,
                                const std::vector<std::uint64_t>& xs,
                                const std::vector<std::uint64_t>& ys, Record record,
                                ScheduleCost* cost = nullptr) {
  Csprng rng = seeded_rng(1);
  const Arr ax = Arr::encrypt(f.be, f.key, xs, type, rng);
  const Arr ay = Arr::encrypt(f.be, f.key, ys, type, rng);
  Program<PB> prog(f.be);
  const Expr x = prog.input(ax), y = prog.input(ay);
  const Arr r = prog.run(record(prog.circuit(), x, y));
  if (cost) *cost = prog.last_schedule().cost;
  return r.decrypt(f.be, f.key);
}

}  // namespace

TEST_CASE("every catalog operation is exact on all operand pairs at widths 1 to 6",
          "[circuits][arithmetic][exhaustive]") {
  PlaintextFixture f;
  Csprng rng = seeded_rng(11);
  for (const Operation& op : operation_catalog())
    for (bool is_signed : signednesses(op))
      for (std::size_t w = 1; w <= 6; ++w) check_exhaustive(f, op, IntType{w, is_signed}, rng);
}

TEST_CASE("default operations and comparisons are exact on all 8-bit operand pairs",
          "[circuits][arithmetic][exhaustive]") {
  PlaintextFixture f;
  Csprng rng = seeded_rng(12);
  std::size_t checked = 0;
  for (const Operation& op : operation_catalog()) {
    const bool comparison = op.result_width(8) == 1;
    if (!op.is_default && !comparison) continue;
    for (bool is_signed : signednesses(op)) {
      check_exhaustive(f, op, IntType{8, is_signed}, rng);
      ++checked;
    }
  }
  // add, mul.wrapping, mul.full and six comparisons, signed and unsigned.
  CHECK(checked == 18);
}

TEST_CASE("every catalog operation is exact on edge and random values at 16, 32 and 64 bits",
          "[circuits][arithmetic][random]") {
  const std::uint64_t seed = catch_seed(0xa11c0de);
  INFO("seed " << seed);
  PlaintextFixture f;
  Csprng rng = seeded_rng(seed);
  for (std::size_t w : {16, 32, 64})
    for (const Operation& op : operation_catalog())
      for (bool is_signed : signednesses(op)) {
        const IntType type{w, is_signed};
        std::vector<std::uint64_t> xs, ys;
        edge_and_random_pairs(rng, type, 64, xs, ys);
        check_operation(f, op, type, xs, ys, rng);
      }
}

TEMPLATE_TEST_CASE_SIG("64 x 64 -> 128-bit full products match unsigned __int128",
                       "[circuits][arithmetic][random]", ((MultiplierKind K), K),
                       MultiplierKind::Dadda, MultiplierKind::Tree, MultiplierKind::Karatsuba) {
  const std::uint64_t seed = catch_seed(0x128);
  INFO("seed " << seed << ", multiplier " << multiplier_name(K));
  PlaintextFixture f;
  Csprng rng = seeded_rng(seed);
  for (bool is_signed : {false, true}) {
    INFO((is_signed ? "signed" : "unsigned"));
    const IntType type{64, is_signed};
    std::vector<std::uint64_t> xs, ys;
    edge_and_random_pairs(rng, type, 32, xs, ys);
    const Arr ax = Arr::encrypt(f.be, f.key, xs, type, rng);
    const Arr ay = Arr::encrypt(f.be, f.key, ys, type, rng);
    const Arr r = compute(f.be, [](Circuit& c, Expr x, Expr y) {
      return multiply(c, x, y, Product::Full, K);
    }, ax, ay);
    REQUIRE(r.width() == 128);
    REQUIRE(r.is_signed() == is_signed);
    REQUIRE_INVALID_ARGUMENT(r.decrypt(f.be, f.key), "use decrypt_bits");
    const std::vector<u128> got = decode128(r.decrypt_bits(f.be, f.key), 128, xs.size());
    for (std::size_t e = 0; e < xs.size(); ++e) {
      u128 want;
      if (is_signed) {
        // Two's complement 128-bit product of the sign-extended operands (exact).
        const u128 a = static_cast<u128>(static_cast<i128>(static_cast<std::int64_t>(xs[e])));
        const u128 b = static_cast<u128>(static_cast<i128>(static_cast<std::int64_t>(ys[e])));
        want = a * b;
      } else {
        want = static_cast<u128>(xs[e]) * static_cast<u128>(ys[e]);
      }
      INFO("lane " << e << ": x = " << xs[e] << ", y = " << ys[e] << ", expected "
                   << hex128(want) << ", got " << hex128(got[e]));
      CHECK(got[e] == want);
    }
  }
}

TEST_CASE("Karatsuba with small bases is exact at every width",
          "[circuits][arithmetic][exhaustive][random]") {
  const std::uint64_t seed = catch_seed(0x3a2a);
  INFO("seed " << seed);
  PlaintextFixture f;
  Csprng rng = seeded_rng(seed);
  for (std::size_t base : {3, 4, 5})
    for (Product product : {Product::Wrapping, Product::Full})
      for (bool is_signed : {false, true})
        for (std::size_t w : {1, 2, 3, 4, 5, 6, 7, 8, 13, 16, 32, 64}) {
          const IntType type{w, is_signed};
          const bool full = product == Product::Full;
          const std::size_t out_w = full ? 2 * w : w;
          INFO("base " << base << ", " << (full ? "full" : "wrapping") << " product of "
                       << to_string(type));
          std::vector<std::uint64_t> xs, ys;
          if (w <= 6)
            all_pairs(type, xs, ys);
          else
            edge_and_random_pairs(rng, type, 64, xs, ys);
          const Arr ax = Arr::encrypt(f.be, f.key, xs, type, rng);
          const Arr ay = Arr::encrypt(f.be, f.key, ys, type, rng);
          const Arr r = compute(f.be, [&](Circuit& c, Expr x, Expr y) {
            return multiply_karatsuba(c, x, y, product, base);
          }, ax, ay);
          REQUIRE(r.type() == (IntType{out_w, is_signed}));
          const std::vector<u128> got = decode128(r.decrypt_bits(f.be, f.key), out_w, xs.size());
          std::vector<i128> want(xs.size());
          for (std::size_t e = 0; e < xs.size(); ++e)
            want[e] = value_of(xs[e], type) * value_of(ys[e], type);
          // Unsigned 64 x 64 products overflow i128; compare them modulo 2^128 via u128.
          if (!is_signed && w == 64)
            for (std::size_t e = 0; e < xs.size(); ++e)
              want[e] = static_cast<i128>(static_cast<u128>(xs[e]) * static_cast<u128>(ys[e]));
          const std::string bad = compare_lanes(got, want, out_w, xs, ys, type);
          INFO(bad);
          CHECK(bad.empty());
        }
}

TEST_CASE("add_with_carry takes a carry in and gives the carry out, for every adder",
          "[circuits][arithmetic][exhaustive]") {
  PlaintextFixture f;
  Csprng rng = seeded_rng(21);
  for (AdderKind kind : {AdderKind::Ripple, AdderKind::NumberWise, AdderKind::KoggeStone,
                         AdderKind::Sklansky})
    for (bool is_signed : {false, true})
      for (std::size_t w : {1, 3, 5}) {
        const IntType type{w, is_signed};
        INFO(adder_name(kind) << " " << to_string(type));
        std::vector<std::uint64_t> xs, ys, cs;
        for (std::uint64_t cin : {0, 1}) {
          std::vector<std::uint64_t> a, b;
          all_pairs(type, a, b);
          xs.insert(xs.end(), a.begin(), a.end());
          ys.insert(ys.end(), b.begin(), b.end());
          cs.insert(cs.end(), a.size(), cin);
        }
        const Arr ax = Arr::encrypt(f.be, f.key, xs, type, rng);
        const Arr ay = Arr::encrypt(f.be, f.key, ys, type, rng);
        const Arr ac = Arr::encrypt(f.be, f.key, cs, IntType{1, false}, rng);
        Program<PB> prog(f.be);
        const Expr x = prog.input(ax), y = prog.input(ay), cin = prog.input(ac);
        Expr carry;
        const Expr sum = add_with_carry(prog.circuit(), x, y, cin, kind, &carry);
        REQUIRE(carry.width() == 1);
        REQUIRE_FALSE(carry.is_signed());
        REQUIRE(sum.type() == type);
        const auto out = prog.run({sum, carry});
        const auto s = out[0].decrypt(f.be, f.key), co = out[1].decrypt(f.be, f.key);
        for (std::size_t e = 0; e < xs.size(); ++e) {
          const std::uint64_t total = (xs[e] & mask64(w)) + (ys[e] & mask64(w)) + cs[e];
          INFO("x = " << (xs[e] & mask64(w)) << ", y = " << (ys[e] & mask64(w)) << ", carry in "
                      << cs[e]);
          CHECK((s[e] & mask64(w)) == (total & mask64(w)));
          CHECK(co[e] == (total >> w));
        }
      }
}

TEST_CASE("add_with_carry accepts a one-element constant carry", "[circuits][arithmetic]") {
  PlaintextFixture f;
  const IntType type{6, false};
  std::vector<std::uint64_t> xs, ys;
  all_pairs(type, xs, ys);
  for (std::uint64_t cin : {0, 1}) {
    INFO("carry in " << cin);
    Expr carry;
    const auto got = run2(f, type, xs, ys, [&](Circuit& c, Expr x, Expr y) {
      return add_with_carry(c, x, y, c.constant(cin, IntType{1, false}, 1), default_adder, &carry);
    });
    for (std::size_t e = 0; e < xs.size(); ++e)
      REQUIRE(got[e] == ((xs[e] + ys[e] + cin) & 63));
  }
}

TEST_CASE("shifts, rotations, resize, bit_range and concat_bits are free views",
          "[circuits][arithmetic][exhaustive]") {
  PlaintextFixture f;
  Csprng rng = seeded_rng(31);
  for (bool is_signed : {false, true}) {
    const std::size_t w = 6;
    const IntType type{w, is_signed};
    const std::vector<std::uint64_t> xs = all_values(type);
    const Arr ax = Arr::encrypt(f.be, f.key, xs, type, rng);
    const auto run = [&](auto record) {
      Program<PB> prog(f.be);
      const Expr out = record(prog.input(ax));
      const Arr r = prog.run(out);
      CHECK(prog.last_schedule().cost.gates == 0);
      CHECK(prog.last_schedule().cost.depth == 0);
      return std::make_pair(r.decrypt(f.be, f.key), out.type());
    };
    const auto wrap = [&](i128 v, std::size_t width, bool s) {
      return pattern_of(v, IntType{width, s});
    };
    for (std::size_t k = 0; k <= 8; ++k) {
      INFO(to_string(type) << ", k = " << k);
      const auto [shl, tshl] = run([&](Expr x) { return shift_left(x, k); });
      const auto [shr, tshr] = run([&](Expr x) { return shift_right(x, k); });
      const auto [rol, trol] = run([&](Expr x) { return rotate_left(x, k); });
      const auto [ror, tror] = run([&](Expr x) { return rotate_right(x, k); });
      CHECK(tshl == type);
      CHECK(tshr == type);
      CHECK(trol == type);
      CHECK(tror == type);
      for (std::size_t e = 0; e < xs.size(); ++e) {
        const i128 v = value_of(xs[e], type);
        const std::uint64_t u = xs[e] & mask64(w);
        INFO("x = " << to_string128(v));
        CHECK(shl[e] == wrap(v * (i128{1} << k), w, is_signed));
        // Arithmetic for signed (floor division), logical for unsigned.
        CHECK(shr[e] == wrap(v >> std::min<std::size_t>(k, 100), w, is_signed));
        const std::size_t r = k % w;
        const std::uint64_t left = ((u << r) | (u >> ((w - r) % w))) & mask64(w);
        const std::uint64_t right = ((u >> r) | (u << ((w - r) % w))) & mask64(w);
        CHECK(rol[e] == wrap(left, w, is_signed));
        CHECK(ror[e] == wrap(right, w, is_signed));
      }
    }
    for (std::size_t width : {1, 3, 6, 9, 14}) {
      INFO(to_string(type) << " resized to " << width);
      const auto [res, tres] = run([&](Expr x) { return resize(x, width); });
      CHECK(tres == (IntType{width, is_signed}));
      for (std::size_t e = 0; e < xs.size(); ++e)
        CHECK(res[e] == wrap(value_of(xs[e], type), width, is_signed));
    }
    for (std::size_t first = 0; first < w; ++first)
      for (std::size_t count = 1; first + count <= w; ++count) {
        INFO(to_string(type) << " bits [" << first << ", " << first + count << ")");
        const auto [br, tbr] = run([&](Expr x) { return bit_range(x, first, count); });
        CHECK(tbr == (IntType{count, false}));
        for (std::size_t e = 0; e < xs.size(); ++e)
          CHECK(br[e] == ((xs[e] >> first) & mask64(count)));
      }
    for (bool high_signed : {false, true}) {
      INFO(to_string(type) << " below " << (high_signed ? "signed" : "unsigned") << " 3 bits");
      // High part: bits 2..4 of x, re-read with the wanted signedness.
      const auto [cat, tcat] =
          run([&](Expr x) { return concat_bits(x, bit_range(x, 2, 3).as_signed(high_signed)); });
      CHECK(tcat == (IntType{w + 3, high_signed}));
      for (std::size_t e = 0; e < xs.size(); ++e) {
        const std::uint64_t u = (xs[e] & mask64(w)) | (((xs[e] >> 2) & 7) << w);
        CHECK(cat[e] == wrap(u, w + 3, high_signed));
      }
    }
  }
}

// rotate_left(x, k) computes bit positions as (j + k) % n, which wraps for k close to 2^64:
// rotate_left(u6, SIZE_MAX) throws "Expr: bit 5 has 0 lanes but bit 0 has 1" instead of
// rotating by SIZE_MAX % 6 = 3 (rotate_right and the shifts handle any k).
TEST_CASE("rotations and shifts by amounts close to 2^64", "[circuits][arithmetic]") {
  Circuit c;
  const Expr x = c.input(IntType{6, false}, 1);
  for (std::size_t k : {SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - 4, std::size_t{1} << 63}) {
    INFO("k = " << k);
    CHECK(shift_left(x, k).bits() == std::vector<Plane>(6, Plane::constant(false, 1)));
    CHECK(shift_right(x, k).bits() == std::vector<Plane>(6, Plane::constant(false, 1)));
    Expr left, right;
    REQUIRE_NOTHROW(right = rotate_right(x, k));
    REQUIRE_NOTHROW(left = rotate_left(x, k));
    for (std::size_t j = 0; j < 6; ++j) {
      CHECK(left.bit((j + k % 6) % 6) == x.bit(j));
      CHECK(right.bit(j) == x.bit((j + k % 6) % 6));
    }
  }
}

TEST_CASE("select with a one-element condition broadcasts it to every element",
          "[circuits][arithmetic]") {
  PlaintextFixture f;
  Csprng rng = seeded_rng(41);
  const IntType type{7, true};
  std::vector<std::uint64_t> xs, ys;
  edge_and_random_pairs(rng, type, 8, xs, ys);
  for (std::uint64_t cond : {0, 1}) {
    INFO("condition " << cond);
    const std::uint64_t cv[] = {cond};
    const Arr ac = Arr::encrypt(f.be, f.key, cv, IntType{1, false}, rng);
    const Arr ax = Arr::encrypt(f.be, f.key, xs, type, rng);
    const Arr ay = Arr::encrypt(f.be, f.key, ys, type, rng);
    const Arr r = compute(f.be, [](Circuit& c, Expr s, Expr x, Expr y) {
      return select(c, s, x, y);
    }, ac, ax, ay);
    REQUIRE(r.type() == type);
    CHECK(r.decrypt(f.be, f.key) == (cond ? xs : ys));
    // A constant condition folds: no gate at all.
    Program<PB> prog(f.be);
    const Expr x = prog.input(ax), y = prog.input(ay);
    const Arr rc = prog.run(select(prog.circuit(), prog.circuit().constant(cond, IntType{1, false}, 1), x, y));
    CHECK(prog.last_schedule().cost.gates == 0);
    CHECK(rc.decrypt(f.be, f.key) == (cond ? xs : ys));
  }
}

TEST_CASE("trivial encryptions mix with encrypted inputs", "[circuits][arithmetic]") {
  PlaintextFixture f;
  Csprng rng = seeded_rng(51);
  const IntType type{8, true};
  std::vector<std::uint64_t> xs, ys;
  edge_and_random_pairs(rng, type, 16, xs, ys);
  const Arr ax = Arr::encrypt(f.be, f.key, xs, type, rng);
  const Arr ty = Arr::trivial(f.be, ys, type);
  REQUIRE(ty.type() == type);
  REQUIRE(ty.lanes() == ys.size());
  CHECK(ty.decrypt(f.be, f.key) == ys);
  const Arr s = compute(f.be, [](Circuit& c, Expr x, Expr y) { return add(c, x, y); }, ax, ty);
  const Arr p = compute(f.be, [](Circuit& c, Expr x, Expr y) { return multiply(c, y, x); }, ax, ty);
  const auto got_s = s.decrypt(f.be, f.key), got_p = p.decrypt(f.be, f.key);
  for (std::size_t e = 0; e < xs.size(); ++e) {
    const i128 x = value_of(xs[e], type), y = value_of(ys[e], type);
    INFO("x = " << to_string128(x) << ", y = " << to_string128(y));
    CHECK(got_s[e] == pattern_of(x + y, type));
    CHECK(got_p[e] == pattern_of(x * y, type));
  }
  // A trivial matrix keeps its shape.
  const std::uint64_t m[] = {1, 2, 3, 4, 5, 6};
  const Arr tm = Arr::trivial(f.be, m, IntType{4, false}, 2);
  CHECK(tm.rows() == 2);
  CHECK(tm.cols() == 3);
  CHECK(tm.decrypt(f.be, f.key) == std::vector<std::uint64_t>(std::begin(m), std::end(m)));
}

TEST_CASE("constant operands are exact and cost fewer gates than encrypted ones",
          "[circuits][arithmetic][exhaustive]") {
  PlaintextFixture f;
  for (bool is_signed : {false, true}) {
    const IntType type{6, is_signed};
    const std::vector<std::uint64_t> xs = all_values(type);
    const std::vector<std::uint64_t> ks = edge_values(type);
    for (std::uint64_t k : ks) {
      const std::vector<std::uint64_t> ys(xs.size(), k);
      const i128 kv = value_of(k, type);
      INFO(to_string(type) << " constant " << to_string128(kv));
      ScheduleCost enc_add, enc_mul, c_add, c_mul, c_lane;
      const auto add_enc = run2(f, type, xs, ys, [](Circuit& c, Expr x, Expr y) { return add(c, x, y); }, &enc_add);
      const auto add_const = run2(f, type, xs, ys, [&](Circuit& c, Expr x, Expr) {
        return add(c, x, c.constant(k, type, x.lanes()));
      }, &c_add);
      const auto mul_enc = run2(f, type, xs, ys, [](Circuit& c, Expr x, Expr y) { return multiply(c, x, y); }, &enc_mul);
      const auto mul_const = run2(f, type, xs, ys, [&](Circuit& c, Expr x, Expr) {
        return multiply(c, x, c.constant(k, type, x.lanes()));
      }, &c_mul);
      // One constant per lane (all equal here) through the span overload.
      const auto mul_lanes = run2(f, type, xs, ys, [&](Circuit& c, Expr x, Expr) {
        return multiply(c, x, c.constant(ys, type));
      }, &c_lane);
      for (std::size_t e = 0; e < xs.size(); ++e) {
        const i128 x = value_of(xs[e], type);
        INFO("x = " << to_string128(x));
        CHECK(add_enc[e] == pattern_of(x + kv, type));
        CHECK(add_const[e] == pattern_of(x + kv, type));
        CHECK(mul_enc[e] == pattern_of(x * kv, type));
        CHECK(mul_const[e] == pattern_of(x * kv, type));
        CHECK(mul_lanes[e] == pattern_of(x * kv, type));
      }
      CHECK(c_add.gates < enc_add.gates);
      CHECK(c_add.bootstraps < enc_add.bootstraps);
      CHECK(c_mul.gates < enc_mul.gates);
      CHECK(c_mul.bootstraps < enc_mul.bootstraps);
      CHECK(c_lane.gates == c_mul.gates);
    }
  }
}

TEST_CASE("constants wider than 64 bits extend by signedness", "[circuits][arithmetic]") {
  PlaintextFixture f;
  for (bool is_signed : {false, true}) {
    const IntType type{80, is_signed};
    const std::uint64_t vals[] = {0, 1, ~std::uint64_t{0}, std::uint64_t{1} << 63};
    Program<PB> prog(f.be);
    const Arr r = prog.run(prog.circuit().constant(vals, type));
    REQUIRE(r.type() == type);
    const auto got = decode128(r.decrypt_bits(f.be, f.key), 80, 4);
    for (std::size_t e = 0; e < 4; ++e) {
      const u128 want = is_signed ? static_cast<u128>(static_cast<i128>(static_cast<std::int64_t>(vals[e])))
                                  : static_cast<u128>(vals[e]);
      INFO((is_signed ? "signed " : "unsigned ") << vals[e]);
      CHECK(got[e] == (want & mask128(80)));
    }
  }
}

TEST_CASE("multiply_constant is exact for zero, one, negatives, powers of two and extremes",
          "[circuits][arithmetic][random]") {
  const std::uint64_t seed = catch_seed(0xc0457);
  INFO("seed " << seed);
  PlaintextFixture f;
  Csprng rng = seeded_rng(seed);
  const std::int64_t constants[] = {0,     1,      -1,     2,      -2,     3,    -3,
                                    7,     89,     1024,   -4096,  32767,  -32768, 65536,
                                    12345, -12345, 0x5555, std::numeric_limits<std::int64_t>::max(),
                                    std::numeric_limits<std::int64_t>::min(),
                                    std::numeric_limits<std::int64_t>::min() + 1};
  for (bool is_signed : {false, true}) {
    const IntType type{16, is_signed};
    std::vector<std::uint64_t> xs = edge_values(type);
    for (std::uint64_t v : random_values(rng, type, 120)) xs.push_back(v);
    const Arr ax = Arr::encrypt(f.be, f.key, xs, type, rng);
    for (std::int64_t k : constants)
      for (std::size_t width : {0, 4, 16, 24, 32}) {
        const std::size_t out_w = width == 0 ? 16 : width;
        INFO(to_string(type) << " times " << k << " into " << out_w << " bits");
        Program<PB> prog(f.be);
        const Expr out = multiply_constant(prog.circuit(), prog.input(ax), k, width);
        REQUIRE(out.type() == (IntType{out_w, is_signed}));
        const Arr r = prog.run(out);
        const ScheduleCost cost = prog.last_schedule().cost;
        const auto got = r.decrypt(f.be, f.key);
        for (std::size_t e = 0; e < xs.size(); ++e) {
          const i128 x = value_of(xs[e], type);
          INFO("x = " << to_string128(x));
          CHECK(got[e] == pattern_of(x * static_cast<i128>(k), IntType{out_w, is_signed}));
        }
        // x * 2^i needs no gate: a shift (0 included; -2^63 is 0 modulo 2^32).
        const std::uint64_t mag = static_cast<std::uint64_t>(k);
        if (k >= 0 && (mag & (mag - 1)) == 0) CHECK(cost.gates == 0);
        if (k == std::numeric_limits<std::int64_t>::min()) CHECK(cost.gates == 0);
      }
  }
}

TEST_CASE("operands mixing encrypted, constant, broadcast and permuted lanes",
          "[circuits][arithmetic][random]") {
  // Each operand is 16 lanes: 4 encrypted elements, 4 per-lane constants, one encrypted
  // element broadcast 4 times and the first 4 encrypted elements in reverse order; y mixes the
  // same kinds in another order. Gates then split into pieces with different folded specs,
  // broadcast (stride 0) inputs and lanes from several sources.
  const std::uint64_t seed = catch_seed(0x313ed);
  INFO("seed " << seed);
  PlaintextFixture f;
  Csprng rng = seeded_rng(seed);
  for (std::size_t w : {3, 8})
    for (const Operation& op : operation_catalog())
      for (bool is_signed : signednesses(op)) {
        const IntType type{w, is_signed};
        INFO(op.name << " on " << to_string(type));
        const auto enc_x = random_values(rng, type, 4), enc_y = random_values(rng, type, 4);
        const auto one_x = random_values(rng, type, 1), one_y = random_values(rng, type, 1);
        auto cx = random_values(rng, type, 4), cy = random_values(rng, type, 4);
        cx[0] = edge_values(type)[0];
        cy[1] = edge_values(type)[3];
        const Arr ax = Arr::encrypt(f.be, f.key, enc_x, type, rng);
        const Arr ay = Arr::encrypt(f.be, f.key, enc_y, type, rng);
        const Arr bx = Arr::encrypt(f.be, f.key, one_x, type, rng);
        const Arr by = Arr::encrypt(f.be, f.key, one_y, type, rng);
        Program<PB> prog(f.be);
        Circuit& c = prog.circuit();
        const Expr ex = prog.input(ax), ey = prog.input(ay), sx = prog.input(bx), sy = prog.input(by);
        const std::vector<std::size_t> rev = {3, 2, 1, 0};
        const Expr xparts[] = {ex, c.constant(cx, type), broadcast(sx, 4), ex.gather(rev)};
        const Expr yparts[] = {broadcast(sy, 4), ey.gather(rev), ey, c.constant(cy, type)};
        const Expr x = concat_elements(xparts), y = concat_elements(yparts);
        std::vector<std::uint64_t> xs, ys;
        for (std::size_t e = 0; e < 4; ++e) xs.push_back(enc_x[e]);
        for (std::size_t e = 0; e < 4; ++e) xs.push_back(cx[e]);
        for (std::size_t e = 0; e < 4; ++e) xs.push_back(one_x[0]);
        for (std::size_t e = 0; e < 4; ++e) xs.push_back(enc_x[3 - e]);
        for (std::size_t e = 0; e < 4; ++e) ys.push_back(one_y[0]);
        for (std::size_t e = 0; e < 4; ++e) ys.push_back(enc_y[3 - e]);
        for (std::size_t e = 0; e < 4; ++e) ys.push_back(enc_y[e]);
        for (std::size_t e = 0; e < 4; ++e) ys.push_back(cy[e]);
        const Expr out = op.record(c, x, y);
        const std::size_t rw = op.result_width(w);
        const Arr r = prog.run(out);
        const std::vector<u128> got = decode128(r.decrypt_bits(f.be, f.key), rw, 16);
        const std::vector<std::uint64_t> no_y;
        const auto& y_used = op.arity == 2 ? ys : no_y;
        const std::string bad = compare_lanes(got, reference_lanes(op, type, xs, y_used), rw, xs, y_used, type);
        INFO(bad);
        CHECK(bad.empty());
      }
}

TEST_CASE("the bit counts' references count all bits of widths above 64",
          "[circuits][arithmetic]") {
  // Found by an audit: the references read the pattern as 64 bits, so for 2^80 as u100 they
  // said 0 ones, 100 leading and 100 trailing zeros (the circuits said 1, 19 and 80).
  const IntType u100{100, false};
  const __int128 one = 1;
  struct Want {
    __int128 x;
    __int128 ones, leading, trailing;
  };
  for (const Want& w : {Want{one << 80, 1, 19, 80}, Want{0, 0, 100, 100},
                        Want{one << 99, 1, 0, 99}, Want{(one << 100) - 1, 100, 0, 0},
                        Want{(one << 64) | 6, 3, 35, 1}, Want{one << 63, 1, 36, 63}}) {
    INFO("x = 2^64 * " << static_cast<std::uint64_t>(w.x >> 64) << " + "
                       << static_cast<std::uint64_t>(w.x));
    CHECK(find_operation("count_ones").reference(w.x, 0, u100) == w.ones);
    CHECK(find_operation("leading_zeros").reference(w.x, 0, u100) == w.leading);
    CHECK(find_operation("trailing_zeros").reference(w.x, 0, u100) == w.trailing);
  }
  // Signed: the pattern of -1 as s100 is 100 ones.
  CHECK(find_operation("count_ones").reference(-1, 0, IntType{100, true}) == 100);
  CHECK(find_operation("leading_zeros").reference(-1, 0, IntType{100, true}) == 0);
}
