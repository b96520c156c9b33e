// Shifts and rotations by encrypted amounts and bit counts (circuits/bits.hpp): amounts of
// other widths than the operand (narrower, so no stage zeroes; wider, so amounts >= w occur),
// one amount for all elements, plaintext amounts, odd widths, the depth the header promises,
// and the checks on the amount. The catalog's exhaustive and random cases
// (test_arithmetic.cpp) cover amounts of the operand's own type.
#include <catch2/catch.hpp>

#include <bit>
#include <cstdint>
#include <vector>

#include "circuit_test_support.hpp"

using namespace torusgate;
using namespace torusgate::circuits;
using namespace torusgate::test;

namespace {

using PB = PlaintextBackend;
using Arr = IntArray<PB>;
using Shifter = Expr (*)(Circuit&, const Expr&, const Expr&);

enum class Move { Left, Right, RotateLeft, RotateRight };

struct Case {
  Move move;
  Shifter fn;
  const char* name;
};
const Case moves[] = {{Move::Left, shift_left, "shift_left"},
                      {Move::Right, shift_right, "shift_right"},
                      {Move::RotateLeft, rotate_left, "rotate_left"},
                      {Move::RotateRight, rotate_right, "rotate_right"}};

const Shifter shift_left_fn = shift_left, shift_right_fn = shift_right,
              rotate_left_fn = rotate_left;

// The integers' result of moving x (of `type`) by s, as a value of the type.
i128 moved(Move m, i128 x, u128 s, IntType type) {
  const std::size_t w = type.width;
  const u128 bits = static_cast<u128>(pattern_of(x, type)) & mask128(w);
  switch (m) {
    case Move::Left:
      return s >= w ? 0 : value_of(pattern_of(static_cast<i128>(bits << s), type), type);
    case Move::Right:
      return s >= w ? (x < 0 ? -1 : 0) : x >> static_cast<unsigned>(s);
    case Move::RotateLeft:
    case Move::RotateRight: {
      std::size_t k = static_cast<std::size_t>(s % w);
      if (m == Move::RotateRight) k = (w - k) % w;
      const u128 r = (bits << k) | (bits >> ((w - k) % w));
      return value_of(pattern_of(static_cast<i128>(r & mask128(w)), type), type);
    }
  }
  return 0;
}

// Runs fn(x, amount) on the plaintext backend; `amounts` has one value per x or one in all.
std::vector<std::uint64_t> run_move(PlaintextFixture& f, Shifter fn, IntType type,
                                    const std::vector<std::uint64_t>& xs, IntType amount_type,
                                    const std::vector<std::uint64_t>& amounts,
                                    ScheduleCost* cost = nullptr) {
  Csprng rng = seeded_rng(7);
  const Arr ax = Arr::encrypt(f.be, f.key, xs, type, rng);
  const Arr as = Arr::encrypt(f.be, f.key, amounts, amount_type, rng);
  Program<PB> prog(f.be);
  const Expr x = prog.input(ax), s = prog.input(as);
  const Arr r = prog.run(fn(prog.circuit(), x, s));
  if (cost) *cost = prog.last_schedule().cost;
  REQUIRE(r.type() == type);
  return r.decrypt(f.be, f.key);
}

// Every x of `type` against every amount of `amount_type`, lane by lane.
void check_all_pairs(PlaintextFixture& f, const Case& m, IntType type, IntType amount_type) {
  std::vector<std::uint64_t> xs, ss;
  for (std::uint64_t x : all_values(type))
    for (std::uint64_t s : all_values(amount_type)) {
      xs.push_back(x);
      ss.push_back(s);
    }
  const std::vector<std::uint64_t> got = run_move(f, m.fn, type, xs, amount_type, ss);
  std::size_t bad = 0;
  for (std::size_t e = 0; e < xs.size(); ++e) {
    const i128 want = moved(m.move, value_of(xs[e], type), ss[e], type);
    if (value_of(got[e], type) == want) continue;
    if (++bad <= 4)
      FAIL_CHECK(m.name << " of " << to_string(type) << " " << to_string128(value_of(xs[e], type))
                        << " by " << ss[e] << " (" << to_string(amount_type) << "): got "
                        << to_string128(value_of(got[e], type)) << ", want "
                        << to_string128(want));
  }
  CHECK(bad == 0);
}

// A circuit of `record` on inputs of the given types, one lane each, compiled for its cost.
template <class Record>
ScheduleCost cost_of(IntType type, IntType amount_type, Record record) {
  Circuit c;
  const Expr x = c.input(type, 1), s = c.input(amount_type, 1);
  const Expr out[] = {record(c, x, s)};
  return compile(c, out).cost;
}

}  // namespace

TEST_CASE("shifts and rotations by amounts narrower and wider than the operand",
          "[circuits][bits][exhaustive]") {
  PlaintextFixture f;
  for (const Case& m : moves)
    for (bool is_signed : {false, true}) {
      // 8 bits by 3-bit amounts (every stage moves, none is "too far"), by 1-bit amounts, by
      // 5-bit ones (amounts up to 31: the stages above 4 zero or fill); odd widths (the
      // rotations' stages move by 2^i mod w).
      check_all_pairs(f, m, IntType{8, is_signed}, IntType{3, false});
      check_all_pairs(f, m, IntType{8, is_signed}, IntType{1, false});
      check_all_pairs(f, m, IntType{8, is_signed}, IntType{5, false});
      for (std::size_t w : {1, 3, 5, 7})
        for (std::size_t a : {1, 2, 4, 6})
          check_all_pairs(f, m, IntType{w, is_signed}, IntType{a, false});
    }
}

TEST_CASE("shifts and rotations of 16 to 64 bits by edge and random amounts",
          "[circuits][bits][random]") {
  const std::uint64_t seed = catch_seed(0xb175);
  INFO("seed " << seed);
  PlaintextFixture f;
  Csprng rng = seeded_rng(seed);
  for (std::size_t w : {16, 31, 64})
    for (bool is_signed : {false, true})
      for (std::size_t a : {6, 7, 64}) {
        const IntType type{w, is_signed}, amount_type{a, false};
        std::vector<std::uint64_t> xs = edge_values(type), ss;
        for (std::size_t i = 0; i < 40; ++i) xs.push_back(random_value(rng, type));
        for (std::size_t e = 0; e < xs.size(); ++e) {
          // Amounts below w, at w and just above, and any value of the amount's type.
          const std::uint64_t choices[] = {e % w, w - 1, w, w + 1, random_value(rng, amount_type)};
          ss.push_back(choices[e % 5] &
                       (a >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << a) - 1));
        }
        for (const Case& m : moves) {
          INFO(m.name << " of " << to_string(type) << " by " << to_string(amount_type));
          const std::vector<std::uint64_t> got = run_move(f, m.fn, type, xs, amount_type, ss);
          for (std::size_t e = 0; e < xs.size(); ++e) {
            const i128 x = value_of(xs[e], type);
            INFO(to_string128(x) << " by " << ss[e]);
            CHECK(value_of(got[e], type) == moved(m.move, x, ss[e], type));
          }
        }
      }
}

TEST_CASE("one amount for every element, and plaintext amounts cost nothing",
          "[circuits][bits]") {
  PlaintextFixture f;
  const IntType s16{16, true}, u4{4, false};
  Csprng rng = seeded_rng(21);
  const std::vector<std::uint64_t> xs = random_values(rng, s16, 50);
  for (const Case& m : moves) {
    INFO(m.name);
    for (std::uint64_t s : {0, 1, 9, 15}) {
      const std::vector<std::uint64_t> got = run_move(f, m.fn, s16, xs, u4, {s});
      for (std::size_t e = 0; e < xs.size(); ++e)
        CHECK(value_of(got[e], s16) == moved(m.move, value_of(xs[e], s16), s, s16));
    }
    // A constant amount: the stages fold to the free moves of arithmetic.hpp.
    Circuit c;
    const Expr x = c.input(s16, 3);
    const Expr by_constant = m.fn(c, x, c.constant(5, IntType{8, false}, 3));
    const Expr out[] = {by_constant};
    CHECK(compile(c, out).cost.bootstraps == 0);
  }
  Circuit c;
  const Expr x = c.input(s16, 1);
  CHECK(shift_right(c, x, c.constant(5, u4, 1)).bits() == shift_right(x, 5).bits());
  CHECK(rotate_left(c, x, c.constant(13, u4, 1)).bits() == rotate_left(x, 13).bits());
}

TEST_CASE("barrel shifters: a level per amount bit, one more for amounts of w or more",
          "[circuits][bits]") {
  const IntType u32{32, false}, s32{32, true};
  // 5 amount bits move 1, 2, 4, 8 and 16 places: 5 levels; a MUX (2 bootstraps) per bit and
  // stage, an AND (1) where a 0 comes in.
  const ScheduleCost left5 = cost_of(u32, IntType{5, false}, shift_left_fn);
  CHECK(left5.depth == 5);
  CHECK(left5.bootstraps == 2 * 5 * 32 - (1 + 2 + 4 + 8 + 16));
  // An arithmetic right shift moves the sign in: a MUX everywhere but in the top bit, which
  // stays the sign (a MUX of the sign with itself folds).
  CHECK(cost_of(s32, IntType{5, false}, shift_right_fn).bootstraps == 2 * 5 * 31);
  // A 32-bit amount: the OR of its bits 5 to 31 (27 bits, 5 levels) in parallel, then one
  // level of ANDs.
  const ScheduleCost left32 = cost_of(u32, u32, shift_left_fn);
  CHECK(left32.depth == 6);
  CHECK(left32.bootstraps == left5.bootstraps + 26 + 32);
  // A rotation by a 32-bit amount: bits 5 and up move by multiples of 32, nothing.
  CHECK(cost_of(u32, u32, rotate_left_fn).bootstraps == 2 * 5 * 32);
  CHECK(cost_of(u32, u32, rotate_left_fn).depth == 5);
}

TEST_CASE("bit counts on every value of 1 to 12 bits and on edge and random values to 64",
          "[circuits][bits][exhaustive][random]") {
  const std::uint64_t seed = catch_seed(0xc0c0);
  INFO("seed " << seed);
  PlaintextFixture f;
  Csprng rng = seeded_rng(seed);
  for (std::size_t w : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 16, 17, 32, 33, 63, 64})
    for (bool is_signed : {false, true}) {
      const IntType type{w, is_signed};
      std::vector<std::uint64_t> xs = w <= 12 ? all_values(type) : edge_values(type);
      if (w > 12) {
        // Every power of two and its neighbours, and random values.
        for (std::size_t j = 0; j < w; ++j) {
          const std::uint64_t p = std::uint64_t{1} << j;
          for (std::uint64_t v : {p, p - 1, p + 1, ~(p - 1)})
            xs.push_back(pattern_of(static_cast<i128>(v), type));
        }
        for (std::size_t i = 0; i < 50; ++i) xs.push_back(random_value(rng, type));
      }
      Csprng enc = seeded_rng(3);
      const Arr ax = Arr::encrypt(f.be, f.key, xs, type, enc);
      Program<PB> prog(f.be);
      const Expr x = prog.input(ax);
      Circuit& c = prog.circuit();
      const std::vector<Arr> out =
          prog.run({count_ones(c, x), leading_zeros(c, x), trailing_zeros(c, x)});
      for (const Arr& r : out) REQUIRE(r.type() == (IntType{w, false}));
      const std::vector<std::uint64_t> ones = out[0].decrypt(f.be, f.key),
                                       lead = out[1].decrypt(f.be, f.key),
                                       trail = out[2].decrypt(f.be, f.key);
      for (std::size_t e = 0; e < xs.size(); ++e) {
        const std::uint64_t u = xs[e] & static_cast<std::uint64_t>(mask128(w));
        INFO(to_string(type) << " pattern " << u);
        CHECK(ones[e] == static_cast<std::uint64_t>(std::popcount(u)));
        CHECK(lead[e] == w - static_cast<std::uint64_t>(std::bit_width(u)));
        CHECK(trail[e] == (u == 0 ? w : static_cast<std::uint64_t>(std::countr_zero(u))));
      }
    }
}

TEST_CASE("leading and trailing zeros: a logarithmic tree", "[circuits][bits]") {
  // 32 bits: 16 + 8 * 3 + 4 * 5 + 2 * 7 + 9 bootstraps in the tree (an AND and a MUX per count
  // bit at every node), 5 ANDs for x = 0; depth 5 + 1.
  const IntType u32{32, false};
  for (auto fn : {leading_zeros, trailing_zeros}) {
    const ScheduleCost cost = cost_of(u32, u32, [fn](Circuit& c, const Expr& x, const Expr&) {
      return fn(c, x);
    });
    CHECK(cost.bootstraps == 16 + 24 + 20 + 14 + 9 + 5);
    CHECK(cost.depth == 6);
  }
  // 24 bits: padded to 32 with ones below, the tree is never all zero: no final ANDs.
  const ScheduleCost padded = cost_of(IntType{24, false}, u32, [](Circuit& c, const Expr& x,
                                                                  const Expr&) {
    return leading_zeros(c, x);
  });
  CHECK(padded.depth <= 5);
}

TEST_CASE("shift amounts must be unsigned, one per element or one for all",
          "[circuits][bits]") {
  Circuit c;
  const Expr x = c.input(IntType{8, false}, 4);
  for (const Case& m : moves) {
    CHECK_THROWS_WITH(m.fn(c, x, c.input(IntType{3, true}, 4)),
                      Catch::Contains(std::string(m.name) +
                                      ": the amount is s3 but must be unsigned"));
    CHECK_THROWS_WITH(m.fn(c, x, c.input(IntType{3, false}, 3)),
                      Catch::Contains(std::string(m.name) +
                                      ": the amount has 3 elements but the operand has 4"));
    CHECK_NOTHROW(m.fn(c, x, c.input(IntType{3, false}, 1)));
  }
}
