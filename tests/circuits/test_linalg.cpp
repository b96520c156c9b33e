// Vector reductions and matrix products on the plaintext backend against plain integer
// arithmetic modulo 2^width: sum, dot (also into wider results), transpose, rectangular
// matmul, Cannon's algorithm on 4x4 and 6x6 matrices with every grid (and its per-step
// costs), element-wise operations on matrices, and the bit heap's mixed-type products and
// squares.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "circuit_test_support.hpp"

using namespace torusgate;
using namespace torusgate::circuits;
using namespace torusgate::test;

namespace {

using PB = PlaintextBackend;
using Arr = IntArray<PB>;

// Random values, with the first few vectors replaced by all-max and all-min ones.
std::vector<std::uint64_t> values_for(Csprng& rng, IntType type, std::size_t count, int variant) {
  const std::vector<std::uint64_t> edges = edge_values(type);
  if (variant == 0) return std::vector<std::uint64_t>(count, edges[3]);  // max
  if (variant == 1) return std::vector<std::uint64_t>(count, edges[5]);  // min
  if (variant == 2) {                                                     // edges in turn
    std::vector<std::uint64_t> v(count);
    for (std::size_t i = 0; i < count; ++i) v[i] = edges[i % edges.size()];
    return v;
  }
  return random_values(rng, type, count);
}

// Plain r x s = (r x k) (k x s), exact.
std::vector<i128> plain_matmul(const std::vector<std::uint64_t>& a, const std::vector<std::uint64_t>& b,
                               std::size_t r, std::size_t k, std::size_t s, IntType type) {
  std::vector<i128> c(r * s, 0);
  for (std::size_t i = 0; i < r; ++i)
    for (std::size_t j = 0; j < s; ++j)
      for (std::size_t t = 0; t < k; ++t)
        c[i * s + j] += value_of(a[i * k + t], type) * value_of(b[t * s + j], type);
  return c;
}

// Checks decrypted patterns against exact values reduced to `width` bits.
void check_exact(const std::vector<std::uint64_t>& got, const std::vector<i128>& exact,
                  IntType out_type) {
  REQUIRE(got.size() == exact.size());
  for (std::size_t e = 0; e < got.size(); ++e) {
    INFO("element " << e << ": exact " << to_string128(exact[e]));
    CHECK(got[e] == pattern_of(exact[e], out_type));
  }
}

}  // namespace

TEST_CASE("sum of the elements of a vector", "[circuits][linalg]") {
  const std::uint64_t seed = catch_seed(0x5);
  INFO("seed " << seed);
  PlaintextFixture f;
  Csprng rng = seeded_rng(seed);
  for (bool is_signed : {false, true})
    for (std::size_t w = 4; w <= 8; ++w)
      for (std::size_t count : {1, 2, 8, 13})
        for (int variant = 0; variant < 5; ++variant)
          for (std::size_t width : {std::size_t{0}, std::size_t{3}, w + 4}) {
            const IntType type{w, is_signed};
            const std::size_t out_w = width == 0 ? w : width;
            INFO(count << " x " << to_string(type) << " into " << out_w << " bits, variant " << variant);
            const auto xs = values_for(rng, type, count, variant);
            const Arr ax = Arr::encrypt(f.be, f.key, xs, type, rng);
            const Arr r = compute(f.be, [&](Circuit& c, Expr x) { return sum(c, x, width); }, ax);
            REQUIRE(r.type() == (IntType{out_w, is_signed}));
            REQUIRE(r.lanes() == 1);
            i128 exact = 0;
            for (std::uint64_t x : xs) exact += value_of(x, type);
            check_exact(r.decrypt(f.be, f.key), {exact}, r.type());
          }
}

TEST_CASE("dot product, also into a wider result", "[circuits][linalg]") {
  const std::uint64_t seed = catch_seed(0xd07);
  INFO("seed " << seed);
  PlaintextFixture f;
  Csprng rng = seeded_rng(seed);
  for (bool is_signed : {false, true})
    for (std::size_t w = 4; w <= 8; ++w)
      for (std::size_t count : {1, 3, 5, 8})
        for (int variant = 0; variant < 5; ++variant)
          for (std::size_t width : {std::size_t{0}, std::size_t{3}, 2 * w + 3}) {
            const IntType type{w, is_signed};
            const std::size_t out_w = width == 0 ? w : width;
            INFO(count << " x " << to_string(type) << " into " << out_w << " bits, variant " << variant);
            const auto xs = values_for(rng, type, count, variant);
            const auto ys = values_for(rng, type, count, variant == 0 ? 1 : variant);
            const Arr ax = Arr::encrypt(f.be, f.key, xs, type, rng);
            const Arr ay = Arr::encrypt(f.be, f.key, ys, type, rng);
            const Arr r = compute(f.be, [&](Circuit& c, Expr x, Expr y) { return dot(c, x, y, width); }, ax, ay);
            REQUIRE(r.type() == (IntType{out_w, is_signed}));
            REQUIRE(r.lanes() == 1);
            i128 exact = 0;
            for (std::size_t e = 0; e < count; ++e) exact += value_of(xs[e], type) * value_of(ys[e], type);
            check_exact(r.decrypt(f.be, f.key), {exact}, r.type());
          }
}

TEST_CASE("transpose is a free view", "[circuits][linalg]") {
  PlaintextFixture f;
  Csprng rng = seeded_rng(0x7);
  const IntType type{6, true};
  for (auto [rows, cols] : {std::pair<std::size_t, std::size_t>{2, 3}, {3, 1}, {1, 4}, {4, 4}}) {
    INFO(rows << " x " << cols);
    const auto xs = random_values(rng, type, rows * cols);
    const Arr ax = Arr::encrypt(f.be, f.key, xs, type, rng, rows);
    Program<PB> prog(f.be);
    const Expr x = prog.input(ax);
    const Expr t = transpose(x);
    REQUIRE(t.rows() == cols);
    REQUIRE(t.cols() == rows);
    const Expr tt = transpose(t);
    CHECK(tt.rows() == rows);
    CHECK(tt.bits() == x.bits());
    const auto out = prog.run({t, tt});
    CHECK(prog.last_schedule().cost.gates == 0);
    REQUIRE(out[0].rows() == cols);
    REQUIRE(out[0].cols() == rows);
    const auto got = out[0].decrypt(f.be, f.key);
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t j = 0; j < cols; ++j) CHECK(got[j * rows + i] == xs[i * cols + j]);
    CHECK(out[1].decrypt(f.be, f.key) == xs);
  }
}

TEST_CASE("matmul of rectangular matrices, signed and unsigned", "[circuits][linalg]") {
  const std::uint64_t seed = catch_seed(0x3a73);
  INFO("seed " << seed);
  PlaintextFixture f;
  Csprng rng = seeded_rng(seed);
  struct Shape {
    std::size_t r, k, s;
  };
  for (const Shape sh : {Shape{2, 3, 4}, Shape{1, 5, 1}, Shape{4, 1, 3}, Shape{3, 2, 2}})
    for (bool is_signed : {false, true})
      for (std::size_t w = 4; w <= 8; ++w)
        for (int variant = 0; variant < 4; ++variant)
          for (std::size_t width : {std::size_t{0}, 2 * w + 2}) {
            const IntType type{w, is_signed};
            const std::size_t out_w = width == 0 ? w : width;
            INFO("(" << sh.r << " x " << sh.k << ") (" << sh.k << " x " << sh.s << ") of "
                     << to_string(type) << " into " << out_w << " bits, variant " << variant);
            const auto av = values_for(rng, type, sh.r * sh.k, variant);
            const auto bv = values_for(rng, type, sh.k * sh.s, variant == 0 ? 1 : variant + 1);
            const Arr a = Arr::encrypt(f.be, f.key, av, type, rng, sh.r);
            const Arr b = Arr::encrypt(f.be, f.key, bv, type, rng, sh.k);
            const Arr r = compute(f.be, [&](Circuit& c, Expr x, Expr y) { return matmul(c, x, y, width); }, a, b);
            REQUIRE(r.type() == (IntType{out_w, is_signed}));
            REQUIRE(r.rows() == sh.r);
            REQUIRE(r.cols() == sh.s);
            check_exact(r.decrypt(f.be, f.key), plain_matmul(av, bv, sh.r, sh.k, sh.s, type), r.type());
          }
}

TEST_CASE("Cannon's algorithm on 4x4 and 6x6 matrices for every grid", "[circuits][linalg][cannon]") {
  const std::uint64_t seed = catch_seed(0xca77);
  INFO("seed " << seed);
  PlaintextFixture f;
  Csprng rng = seeded_rng(seed);
  struct Case {
    std::size_t q, w;
    std::vector<std::size_t> grids;
  };
  for (const Case& cs : {Case{4, 5, {1, 2, 4}}, Case{6, 4, {1, 2, 3, 6}}})
    for (bool is_signed : {false, true})
      for (std::size_t width : {std::size_t{0}, std::size_t{3}, 2 * cs.w + 3}) {
        const IntType type{cs.w, is_signed};
        const std::size_t out_w = width == 0 ? cs.w : width;
        const auto av = values_for(rng, type, cs.q * cs.q, 3);
        const auto bv = values_for(rng, type, cs.q * cs.q, 2);
        const Arr a = Arr::encrypt(f.be, f.key, av, type, rng, cs.q);
        const Arr b = Arr::encrypt(f.be, f.key, bv, type, rng, cs.q);
        const std::vector<i128> exact = plain_matmul(av, bv, cs.q, cs.q, cs.q, type);
        const Arr ref = compute(f.be, [&](Circuit& c, Expr x, Expr y) { return matmul(c, x, y, width); }, a, b);
        std::vector<std::size_t> scratch_per_step;
        for (std::size_t grid : cs.grids) {
          INFO(cs.q << " x " << cs.q << " " << to_string(type) << " into " << out_w << " bits, grid " << grid);
          std::vector<ScheduleCost> costs;
          const Arr r = cannon_multiply(f.be, a, b, grid, width, &costs);
          REQUIRE(r.type() == (IntType{out_w, is_signed}));
          REQUIRE(r.rows() == cs.q);
          REQUIRE(r.cols() == cs.q);
          REQUIRE(costs.size() == grid);
          for (const ScheduleCost& c : costs) CHECK(c.bootstraps > 0);
          check_exact(r.decrypt(f.be, f.key), exact, r.type());
          CHECK(r.decrypt(f.be, f.key) == ref.decrypt(f.be, f.key));
          std::size_t most = 0;
          for (const ScheduleCost& c : costs) most = std::max(most, c.scratch_bits);
          scratch_per_step.push_back(most);
        }
        // Element-wise Cannon (grid q) holds the products of one step only: less scratch per
        // step than one step over everything (grid 1).
        INFO("scratch bits per step, by grid: " << ::Catch::Detail::stringify(scratch_per_step));
        INFO(cs.q << " x " << cs.q << " " << to_string(type) << " into " << out_w << " bits");
        CHECK(scratch_per_step.back() < scratch_per_step.front());
      }
}

TEST_CASE("Cannon steps written by hand keep the accumulator in carry-save form",
          "[circuits][linalg][cannon]") {
  PlaintextFixture f;
  Csprng rng = seeded_rng(0xca);
  const IntType type{4, true};
  const auto av = random_values(rng, type, 16), bv = random_values(rng, type, 16);
  const Arr a = Arr::encrypt(f.be, f.key, av, type, rng, 4);
  const Arr b = Arr::encrypt(f.be, f.key, bv, type, rng, 4);
  // All steps in one circuit: the result equals matmul.
  Program<PB> prog(f.be);
  const Expr ea = prog.input(a), eb = prog.input(b);
  CannonRows acc;
  for (std::size_t step = 0; step < 2; ++step) {
    acc = cannon_step(prog.circuit(), ea, eb, acc, 2, step, 4);
    CHECK(acc.row0.rows() == 4);
    CHECK(acc.row0.cols() == 4);
    CHECK_FALSE(acc.row0.is_signed());
    CHECK(acc.row0.width() == 4);
  }
  const Arr r = prog.run(cannon_finish(prog.circuit(), acc, true));
  CHECK(r.rows() == 4);
  CHECK(r.is_signed());
  check_exact(r.decrypt(f.be, f.key), plain_matmul(av, bv, 4, 4, 4, type), type);
}

TEST_CASE("element-wise operations on matrices give the right elements", "[circuits][linalg]") {
  PlaintextFixture f;
  Csprng rng = seeded_rng(0xadd);
  const IntType type{6, true};
  const auto av = random_values(rng, type, 6), bv = random_values(rng, type, 6);
  const Arr a = Arr::encrypt(f.be, f.key, av, type, rng, 2);
  const Arr b = Arr::encrypt(f.be, f.key, bv, type, rng, 2);
  const Arr s = compute(f.be, [](Circuit& c, Expr x, Expr y) { return add(c, x, y); }, a, b);
  const Arr p = compute(f.be, [](Circuit& c, Expr x, Expr y) { return multiply(c, x, y); }, a, b);
  const auto sv = s.decrypt(f.be, f.key), pv = p.decrypt(f.be, f.key);
  for (std::size_t e = 0; e < 6; ++e) {
    CHECK(sv[e] == pattern_of(value_of(av[e], type) + value_of(bv[e], type), type));
    CHECK(pv[e] == pattern_of(value_of(av[e], type) * value_of(bv[e], type), type));
  }
  CHECK(p.rows() == 2);
  CHECK(p.cols() == 3);
}

// A matrix sum must stay a matrix to be fed to matmul; every element-wise operation of the
// catalog is checked.
TEST_CASE("element-wise operations keep the rows and columns of matrix operands",
          "[circuits][linalg]") {
  Circuit c;
  const IntType type{6, true};
  const Expr x = c.input(type, 2, 3), y = c.input(type, 2, 3);
  for (const Operation& op : operation_catalog()) {
    if (!op.signed_ok) continue;
    INFO(op.name);
    const Expr out = op.record(c, x, y);
    CHECK(out.rows() == 2);
    CHECK(out.cols() == 3);
  }
  const Expr s = add(c, x, y);
  CHECK(s.rows() == 2);
  CHECK(matmul(c, s, transpose(y)).rows() == 2);
}

TEST_CASE("BitHeap::add_lanes_to sums the lanes of a heap into a one-lane heap",
          "[circuits][linalg]") {
  const std::uint64_t seed = catch_seed(0x1a4e5);
  INFO("seed " << seed);
  PlaintextFixture f;
  Csprng rng = seeded_rng(seed);
  const IntType type{6, true};
  const std::vector<std::uint64_t> xs = random_values(rng, type, 5);
  const Arr x = Arr::encrypt(f.be, f.key, xs, type, rng);
  const Arr r = compute(
      f.be,
      [](Circuit& c, const Expr& e) {
        BitHeap lanes(10, e.lanes());
        lanes.add(e);              // signed: a negated sign bit and a constant per lane
        BitHeap total(10, 1);
        lanes.add_lanes_to(total);
        return total.sum(c, true);
      },
      x);
  i128 want = 0;
  for (std::uint64_t v : xs) want += value_of(v, type);
  CHECK(r.decrypt(f.be, f.key)[0] == pattern_of(want, IntType{10, true}));

  BitHeap lanes(10, 4), wide(10, 2), narrow(8, 1);
  REQUIRE_INVALID_ARGUMENT(lanes.add_lanes_to(wide), "needs 1 lane and width 10");
  REQUIRE_INVALID_ARGUMENT(lanes.add_lanes_to(narrow), "needs 1 lane and width 10");
}

// The bit-heap pieces of the regression circuits (apps/linear_regression), here so that the
// circuits library's own tests cover them (a dropped square term passed all but tests_apps).
TEST_CASE("BitHeap products of mixed types and squares are exact (exhaustive, small widths)",
          "[circuits][linalg]") {
  PlaintextFixture f;
  Csprng rng = seeded_rng(5);
  for (const IntType tx :
       {IntType{3, false}, IntType{3, true}, IntType{1, false}, IntType{4, true}})
    for (const IntType ty : {IntType{2, true}, IntType{4, false}, IntType{1, false}}) {
      INFO(to_string(tx) << " x " << to_string(ty));
      // Every pair of values, one pair per lane.
      std::vector<std::int64_t> xs, ys;
      for (std::int64_t a = static_cast<std::int64_t>(min_value(tx)); a <= max_value(tx); ++a)
        for (std::int64_t b = static_cast<std::int64_t>(min_value(ty)); b <= max_value(ty); ++b) {
          xs.push_back(a);
          ys.push_back(b);
        }
      const auto x = IntArray<PlaintextBackend>::encrypt_integers(f.be, f.key, xs, tx, rng, 1);
      const auto y = IntArray<PlaintextBackend>::encrypt_integers(f.be, f.key, ys, ty, rng, 1);
      Program<PlaintextBackend> prog(f.be);
      const Expr ex = prog.input(x), ey = prog.input(y);
      BitHeap product(10, xs.size()), square(10, xs.size());
      product.add_product(prog.circuit(), ex, ey);
      square.add_square(prog.circuit(), ex);
      const auto out =
          prog.run({product.sum(prog.circuit(), true), square.sum(prog.circuit(), true)});
      std::vector<std::int64_t> want_p, want_s;
      for (std::size_t e = 0; e < xs.size(); ++e) {
        want_p.push_back(xs[e] * ys[e]);
        want_s.push_back(xs[e] * xs[e]);
      }
      CHECK(out[0].decrypt_integers(f.be, f.key) == want_p);
      CHECK(out[1].decrypt_integers(f.be, f.key) == want_s);
    }
}

TEST_CASE("add_square needs half the AND gates of a product and fewer heap bits",
          "[circuits][linalg]") {
  const auto and_gates = [](bool square) {
    Circuit c;
    const Expr x = c.input(IntType{8, false}, 1, 1);
    BitHeap heap(16, 1);
    if (square) heap.add_square(c, x);
    else heap.add_product(c, x, x);
    return c.nodes().size();
  };
  CHECK(and_gates(true) == 28);   // the pairs i < j
  CHECK(and_gates(false) == 56);  // i != j (x_i AND x_i folds to x_i)
}
