// Sorting networks and tournaments along rows (circuits/sort.hpp): the network sorts every
// 0/1 row of up to 12 columns (so, by the 0-1 principle, every row of any values), random
// signed and unsigned rows of every length to 20 against std::sort, the winners and their
// first columns against std::min_element and std::max_element on every row of small values
// (ties everywhere), and the costs the header promises.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>
#include <tuple>
#include <utility>
#include <vector>

#include "circuit_test_support.hpp"

using namespace torusgate;
using namespace torusgate::circuits;
using namespace torusgate::test;

namespace {

using PB = PlaintextBackend;
using Arr = IntArray<PB>;

// Runs fn on x (rows x cols of `type`) on the plaintext backend.
Arr run_rows(PlaintextFixture& f, const std::vector<std::uint64_t>& xs, IntType type,
             std::size_t rows, const std::function<Expr(Circuit&, const Expr&)>& fn) {
  Csprng rng = seeded_rng(5);
  const Arr a = Arr::encrypt(f.be, f.key, xs, type, rng, rows);
  Program<PB> prog(f.be);
  return prog.run(fn(prog.circuit(), prog.input(a)));
}

// Every row of `cols` values of `type` (rows * cols patterns, row-major).
std::vector<std::uint64_t> every_row(IntType type, std::size_t cols) {
  const std::vector<std::uint64_t> values = all_values(type);
  std::vector<std::uint64_t> xs;
  std::vector<std::size_t> digit(cols, 0);
  while (true) {
    for (std::size_t d : digit) xs.push_back(values[d]);
    std::size_t i = 0;
    while (i < cols && ++digit[i] == values.size()) digit[i++] = 0;
    if (i == cols) return xs;
  }
}

template <class Row>
std::vector<i128> values_of(const Row& patterns, IntType type) {
  std::vector<i128> v;
  for (std::uint64_t p : patterns) v.push_back(value_of(p, type));
  return v;
}

}  // namespace

TEST_CASE("sort: every 0/1 row of 1 to 12 columns, ascending and descending",
          "[circuits][sort][exhaustive]") {
  PlaintextFixture f;
  const IntType bit{1, false};
  for (std::size_t cols = 1; cols <= 12; ++cols)
    for (bool descending : {false, true}) {
      INFO(cols << " columns" << (descending ? ", descending" : ""));
      const std::vector<std::uint64_t> xs = every_row(bit, cols);
      const std::size_t rows = xs.size() / cols;
      const Arr out = run_rows(f, xs, bit, rows, [&](Circuit& c, const Expr& x) {
        return sort(c, x, descending);
      });
      const std::vector<std::uint64_t> got = out.decrypt(f.be, f.key);
      CHECK(out.rows() == rows);
      CHECK(out.cols() == cols);
      std::size_t bad = 0;
      for (std::size_t r = 0; r < rows; ++r) {
        std::vector<std::uint64_t> want(xs.begin() + r * cols, xs.begin() + (r + 1) * cols);
        std::sort(want.begin(), want.end());
        if (descending) std::reverse(want.begin(), want.end());
        bad += !std::equal(want.begin(), want.end(), got.begin() + r * cols);
      }
      CHECK(bad == 0);
    }
}

TEST_CASE("sort: random rows of 1 to 20 elements of 1 to 64 bits", "[circuits][sort][random]") {
  const std::uint64_t seed = catch_seed(0x5027);
  INFO("seed " << seed);
  PlaintextFixture f;
  Csprng rng = seeded_rng(seed);
  for (std::size_t w : {1, 3, 8, 17, 64})
    for (bool is_signed : {false, true}) {
      const IntType type{w, is_signed};
      for (std::size_t cols = 1; cols <= 20; ++cols)
        for (bool descending : {false, true}) {
          INFO(to_string(type) << ", " << cols << " columns" << (descending ? ", descending" : ""));
          const std::size_t rows = 3;
          std::vector<std::uint64_t> xs = random_values(rng, type, rows * cols);
          // Duplicates and extremes in the last row.
          for (std::size_t e = 0; e < cols; ++e)
            xs[2 * cols + e] = edge_values(type)[rng.uniform_u64() % 8];
          const std::vector<std::uint64_t> got =
              run_rows(f, xs, type, rows, [&](Circuit& c, const Expr& x) {
                return sort(c, x, descending);
              }).decrypt(f.be, f.key);
          for (std::size_t r = 0; r < rows; ++r) {
            std::vector<i128> want =
                values_of(std::vector<std::uint64_t>(xs.begin() + r * cols,
                                                     xs.begin() + (r + 1) * cols),
                          type);
            std::sort(want.begin(), want.end());
            if (descending) std::reverse(want.begin(), want.end());
            const std::vector<i128> row = values_of(
                std::vector<std::uint64_t>(got.begin() + r * cols, got.begin() + (r + 1) * cols),
                type);
            CHECK(row == want);
          }
        }
    }
}

TEST_CASE("sort_by_key: values follow their keys", "[circuits][sort][random]") {
  const std::uint64_t seed = catch_seed(0x50b7);
  INFO("seed " << seed);
  PlaintextFixture f;
  Csprng rng = seeded_rng(seed);
  const IntType u6{6, false}, s11{11, true}, u2{2, false}, u4{4, false};
  const auto run = [&](const std::vector<std::uint64_t>& ks, IntType kt,
                       const std::vector<std::uint64_t>& vs, IntType vt, std::size_t rows,
                       bool descending) {
    Csprng enc = seeded_rng(6);
    const Arr K = Arr::encrypt(f.be, f.key, ks, kt, enc, rows);
    const Arr V = Arr::encrypt(f.be, f.key, vs, vt, enc, rows);
    Program<PB> prog(f.be);
    const SortedByKey out =
        sort_by_key(prog.circuit(), prog.input(K), prog.input(V), descending);
    const std::vector<Arr> r = prog.run({out.keys, out.values});
    REQUIRE(r[1].type() == vt);
    return std::pair{r[0].decrypt(f.be, f.key), r[1].decrypt(f.be, f.key)};
  };
  for (std::size_t cols = 1; cols <= 12; ++cols)
    for (bool descending : {false, true}) {
      INFO(cols << " columns" << (descending ? ", descending" : ""));
      const std::size_t rows = 3;
      // Distinct keys in a row (u6 values drawn without repeats): one right order.
      std::vector<std::uint64_t> ks, vs = random_values(rng, s11, rows * cols);
      for (std::size_t r = 0; r < rows; ++r) {
        std::vector<std::uint64_t> pool(64);
        for (std::uint64_t k = 0; k < 64; ++k) pool[k] = k;
        for (std::size_t i = 0; i < cols; ++i) {
          std::swap(pool[i], pool[i + rng.uniform_u64() % (64 - i)]);
          ks.push_back(pool[i]);
        }
      }
      const auto [got_k, got_v] = run(ks, u6, vs, s11, rows, descending);
      for (std::size_t r = 0; r < rows; ++r) {
        std::vector<std::pair<std::uint64_t, std::uint64_t>> want;
        for (std::size_t i = 0; i < cols; ++i)
          want.emplace_back(ks[r * cols + i], vs[r * cols + i]);
        std::sort(want.begin(), want.end());
        if (descending) std::reverse(want.begin(), want.end());
        for (std::size_t i = 0; i < cols; ++i) {
          CHECK(got_k[r * cols + i] == want[i].first);
          CHECK(got_v[r * cols + i] == want[i].second);
        }
      }
      // Equal keys (u2): keys in order, and every row keeps its (key, value) pairs.
      std::vector<std::uint64_t> tied = random_values(rng, u2, rows * cols), index;
      for (std::size_t e = 0; e < rows * cols; ++e) index.push_back(e % cols);
      const auto [tk, tv] = run(tied, u2, index, u4, rows, descending);
      for (std::size_t r = 0; r < rows; ++r) {
        std::vector<std::pair<std::uint64_t, std::uint64_t>> before, after;
        for (std::size_t i = 0; i < cols; ++i) {
          before.emplace_back(tied[r * cols + i], index[r * cols + i]);
          after.emplace_back(tk[r * cols + i], tv[r * cols + i]);
          if (i > 0) {
            CHECK((descending ? tk[r * cols + i - 1] >= tk[r * cols + i]
                              : tk[r * cols + i - 1] <= tk[r * cols + i]));
          }
        }
        std::sort(before.begin(), before.end());
        std::sort(after.begin(), after.end());
        CHECK(after == before);
      }
    }
  Circuit c;
  CHECK_THROWS_WITH(sort_by_key(c, c.input(u6, 2, 3), c.input(s11, 2, 4)),
                    Catch::Contains("sort_by_key: the values are 2 x 4 but the keys 2 x 3 "
                                    "(one value per key)"));
}

TEST_CASE("min_element, max_element, argmin, argmax: every row of 1 to 5 small values",
          "[circuits][sort][exhaustive]") {
  PlaintextFixture f;
  for (const IntType type : {IntType{2, false}, IntType{2, true}, IntType{3, true}})
    for (std::size_t cols = 1; cols <= (type.width == 3 ? 4u : 5u); ++cols) {
      INFO(to_string(type) << ", " << cols << " columns");
      const std::vector<std::uint64_t> xs = every_row(type, cols);
      const std::size_t rows = xs.size() / cols;
      const std::size_t index_bits = std::max<std::size_t>(1, std::bit_width(cols - 1));
      const auto run = [&](Expr (*fn)(Circuit&, const Expr&), IntType want_type) {
        const Arr out = run_rows(f, xs, type, rows, fn);
        CHECK(out.type() == want_type);
        CHECK(out.rows() == rows);
        CHECK(out.cols() == 1);
        return out.decrypt(f.be, f.key);
      };
      const std::vector<std::uint64_t> lo = run(min_element, type), hi = run(max_element, type),
                                       at_lo = run(argmin, IntType{index_bits, false}),
                                       at_hi = run(argmax, IntType{index_bits, false});
      std::size_t bad = 0;
      for (std::size_t r = 0; r < rows; ++r) {
        const std::vector<i128> row = values_of(
            std::vector<std::uint64_t>(xs.begin() + r * cols, xs.begin() + (r + 1) * cols), type);
        const auto min_at = std::min_element(row.begin(), row.end());
        const auto max_at = std::max_element(row.begin(), row.end());
        bad += value_of(lo[r], type) != *min_at;
        bad += value_of(hi[r], type) != *max_at;
        bad += at_lo[r] != static_cast<std::uint64_t>(min_at - row.begin());
        bad += at_hi[r] != static_cast<std::uint64_t>(max_at - row.begin());
      }
      CHECK(bad == 0);
    }
}

TEST_CASE("sorting networks and tournaments: comparators, layers and depth",
          "[circuits][sort]") {
  const IntType u8{8, false};
  const auto cost = [&](std::size_t cols, const std::function<Expr(Circuit&, const Expr&)>& fn) {
    Circuit c;
    const Expr out[] = {fn(c, c.input(u8, 1, cols))};
    return compile(c, out).cost;
  };
  // u8 less: 26 bootstraps in 4 levels; a compare-exchange adds two MUX planes (32) in one.
  Circuit one;
  const Expr a = one.input(u8, 1), b = one.input(u8, 1);
  const Expr lt[] = {less(one, a, b)};
  const ScheduleCost less_cost = compile(one, lt).cost;
  REQUIRE(less_cost.bootstraps == 26);
  REQUIRE(less_cost.depth == 4);
  const auto sorter = [](Circuit& c, const Expr& x) { return sort(c, x); };
  // Batcher's network: 19 comparators in 6 layers for 8 columns, 63 in 10 for 16, and for
  // 6 columns the 8-column network without the comparators past column 5: 12 in 6 layers.
  for (const auto& [cols, comparators, layers] :
       {std::tuple<std::size_t, unsigned, unsigned>{2, 1, 1}, {4, 5, 3}, {6, 12, 6}, {8, 19, 6},
        {16, 63, 10}}) {
    INFO(cols << " columns");
    const ScheduleCost s = cost(cols, sorter);
    CHECK(s.bootstraps == comparators * (26 + 2 * 16));
    CHECK(s.depth == layers * (4 + 1));
  }
  CHECK(cost(1, sorter).bootstraps == 0);
  // With values (u8): two MUX planes more a comparator, the same depth.
  const ScheduleCost by_key = cost(8, [&](Circuit& c, const Expr& k) {
    const SortedByKey s = sort_by_key(c, k, c.input(u8, 1, 8));
    return concat_elements(std::vector<Expr>{s.keys, s.values});
  });
  CHECK(by_key.bootstraps == 19 * (26 + 4 * 16));
  CHECK(by_key.depth == 30);
  // Tournaments: n - 1 comparisons in ceil(log2 n) rounds; the final round's losers and the
  // columns of the first round are free (a select between two constants is the comparison).
  const ScheduleCost top = cost(8, [](Circuit& c, const Expr& x) { return max_element(c, x); });
  CHECK(top.bootstraps == 7 * (26 + 16));
  CHECK(top.depth == 3 * 5);
  const ScheduleCost where = cost(8, [](Circuit& c, const Expr& x) { return argmax(c, x); });
  // Values of rounds 1 and 2 (6 selects), no value in round 3, column bits: round 2 one MUX
  // per comparison, round 3 two.
  CHECK(where.bootstraps == 7 * 26 + 6 * 16 + 2 * 2 + 2 * 2);
  CHECK(where.depth == 3 * 5);
}
