// Division and remainder (circuits/divide.hpp): the reciprocal path of divide_constant on every
// divisor and dividend of small types, both paths on edge and random divisors of 16 to 64 bits,
// the choice between them, and the checks on the operands. The catalog's exhaustive and random
// cases (test_arithmetic.cpp) cover divide and remainder by encrypted divisors and by 10.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "circuit_test_support.hpp"

using namespace torusgate;
using namespace torusgate::circuits;
using namespace torusgate::test;

namespace {

using PB = PlaintextBackend;
using Arr = IntArray<PB>;

// C++'s truncated quotient and remainder, and RISC-V's for y = 0, wrapped to the type.
i128 quotient_ref(i128 x, i128 y, IntType t) {
  return value_of(pattern_of(y == 0 ? -1 : x / y, t), t);
}
i128 remainder_ref(i128 x, i128 y, IntType t) {
  return value_of(pattern_of(y == 0 ? x : x % y, t), t);
}

struct Results {
  std::vector<std::uint64_t> quotient, remainder;
  ScheduleCost cost;
};

// Quotient and remainder of xs by the divisor that `divisor` records, on the plaintext backend.
template <class Divisor>
Results run_division(PlaintextFixture& f, IntType type, const std::vector<std::uint64_t>& xs,
                     Divisor divisor) {
  Csprng rng = seeded_rng(3);
  const Arr ax = Arr::encrypt(f.be, f.key, xs, type, rng);
  Program<PB> prog(f.be);
  const Expr x = prog.input(ax);
  const DivisionResult d = divisor(prog.circuit(), x);
  const std::vector<Arr> out = prog.run({d.quotient, d.remainder});
  return {out[0].decrypt(f.be, f.key), out[1].decrypt(f.be, f.key), prog.last_schedule().cost};
}

void check_lanes(const Results& r, IntType type, const std::vector<std::uint64_t>& xs,
                 i128 divisor) {
  for (std::size_t e = 0; e < xs.size(); ++e) {
    const i128 x = value_of(xs[e], type);
    INFO(to_string(type) << ": " << to_string128(x) << " / " << to_string128(divisor));
    CHECK(value_of(r.quotient[e], type) == quotient_ref(x, divisor, type));
    CHECK(value_of(r.remainder[e], type) == remainder_ref(x, divisor, type));
  }
}

std::vector<std::uint64_t> edge_and_random(Csprng& rng, IntType type, std::size_t random) {
  std::vector<std::uint64_t> v = edge_values(type);
  for (std::size_t i = 0; i < random; ++i) v.push_back(random_value(rng, type));
  return v;
}

}  // namespace

TEST_CASE("divide_constant: every divisor and every dividend at widths 1 to 8",
          "[circuits][divide][exhaustive]") {
  PlaintextFixture f;
  std::size_t divisors = 0;
  for (bool is_signed : {false, true})
    for (std::size_t w = 1; w <= 8; ++w) {
      const IntType type{w, is_signed};
      const std::vector<std::uint64_t> xs = all_values(type);
      for (std::uint64_t pattern : xs) {
        const i128 d = value_of(pattern, type);
        const Results r = run_division(f, type, xs, [&](Circuit& c, const Expr& x) {
          return divide_constant(c, x, static_cast<std::int64_t>(d));
        });
        check_lanes(r, type, xs, d);
        ++divisors;
      }
    }
  CHECK(divisors == 2 * 510);
}

TEST_CASE("divide: edge and random divisors at 16, 32 and 64 bits, constant and encrypted",
          "[circuits][divide][random]") {
  const std::uint64_t seed = catch_seed(0xd1d1);
  INFO("seed " << seed);
  PlaintextFixture f;
  Csprng rng = seeded_rng(seed);
  for (std::size_t w : {16, 32, 64})
    for (bool is_signed : {false, true}) {
      const IntType type{w, is_signed};
      const std::vector<std::uint64_t> xs = edge_and_random(rng, type, 24);
      std::vector<std::uint64_t> ds = edge_and_random(rng, type, 6);
      for (std::uint64_t k : {3, 7, 10, 1000}) ds.push_back(pattern_of(k, type));
      ds.push_back(pattern_of(i128{1} << (w / 2), type));
      if (is_signed) ds.push_back(pattern_of(-10, type));
      for (std::uint64_t dp : ds) {
        const i128 d = value_of(dp, type);
        // A constant divisor (the reciprocal path from 16 bits) and the same divisor encrypted
        // in every lane (long division).
        const Results constant = run_division(f, type, xs, [&](Circuit& c, const Expr& x) {
          return divide_with_remainder(c, x, c.constant(dp, type, x.lanes()));
        });
        check_lanes(constant, type, xs, d);
        Csprng enc = seeded_rng(5);
        const std::vector<std::uint64_t> ys(xs.size(), dp);
        const Arr ay = Arr::encrypt(f.be, f.key, ys, type, enc);
        const Arr ax = Arr::encrypt(f.be, f.key, xs, type, enc);
        Program<PB> prog(f.be);
        const DivisionResult r =
            divide_with_remainder(prog.circuit(), prog.input(ax), prog.input(ay));
        const std::vector<Arr> out = prog.run({r.quotient, r.remainder});
        check_lanes({out[0].decrypt(f.be, f.key), out[1].decrypt(f.be, f.key), {}}, type, xs, d);
      }
    }
}

TEST_CASE("divide: a constant divisor of 16 bits or more takes the reciprocal path",
          "[circuits][divide]") {
  PlaintextFixture f;
  const auto costs = [&](IntType type, std::uint64_t d) {
    Circuit c;
    const Expr x = c.input(type, 1);
    const Expr by_constant = divide(c, x, c.constant(d, type, 1));
    const Expr by_reciprocal = divide_constant(c, x, static_cast<std::int64_t>(d)).quotient;
    Circuit e;
    const Expr ex = e.input(type, 1);
    const Expr by_encrypted = divide(e, ex, e.input(type, 1));
    const Expr a[] = {by_constant}, b[] = {by_reciprocal}, d_[] = {by_encrypted};
    return std::vector<ScheduleCost>{compile(c, a).cost, compile(c, b).cost, compile(e, d_).cost};
  };
  // 32 bits: the same circuit as divide_constant, a fraction of long division's depth.
  const auto c32 = costs(IntType{32, false}, 10);
  CHECK(c32[0].bootstraps == c32[1].bootstraps);
  CHECK(c32[0].depth == c32[1].depth);
  CHECK(c32[0].depth * 10 < c32[2].depth);
  // 8 bits: long division with the constant folded into its gates, fewer bootstraps.
  const auto c8 = costs(IntType{8, false}, 10);
  CHECK(c8[0].bootstraps < c8[1].bootstraps);
  CHECK(c8[0].bootstraps < c8[2].bootstraps);
  // A divisor that differs between lanes is not one constant: long division (its constants
  // folded into the gates).
  Circuit c;
  const IntType u32{32, false};
  const Expr x = c.input(u32, 2);
  const std::uint64_t two[] = {10, 11};
  const Expr q[] = {divide(c, x, c.constant(two, u32))};
  CHECK(compile(c, q).cost.depth > 5 * c32[0].depth);
}

TEST_CASE("divide: operands of different types or counts, and divisors outside the type",
          "[circuits][divide]") {
  Circuit c;
  const Expr x = c.input(IntType{8, false}, 4);
  CHECK_THROWS_WITH(divide(c, x, c.input(IntType{8, true}, 4)),
                    Catch::Contains("divide: operands are u8 and s8"));
  CHECK_THROWS_WITH(remainder(c, x, c.input(IntType{8, false}, 3)),
                    Catch::Contains("divide: operands have 4 and 3 elements"));
  const auto outside = [](const char* text) { return Catch::Contains(text); };
  CHECK_THROWS_WITH(divide_constant(c, x, 256), outside("the divisor 256 is not a value of u8"));
  CHECK_THROWS_WITH(divide_constant(c, x, -1), outside("the divisor -1 is not a value of u8"));
  const Expr s = c.input(IntType{8, true}, 4);
  CHECK_THROWS_WITH(divide_constant(c, s, 128), outside("the divisor 128 is not a value of s8"));
  CHECK_THROWS_WITH(divide_constant(c, s, -129), outside("the divisor -129 is not a value of s8"));
  CHECK_NOTHROW(divide_constant(c, s, -128));
  CHECK_THROWS_WITH(divide_constant(c, c.input(IntType{65, true}, 1), 3),
                    Catch::Contains("divide_constant: x is s65; at most 64 bits"));
  CHECK_NOTHROW(divide_constant(c, c.input(IntType{64, false}, 1), INT64_MAX));
}
