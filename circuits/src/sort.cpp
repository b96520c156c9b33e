// Sorting networks and tournaments along rows (sort.hpp).
#include "torusgate/circuits/sort.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "torusgate/circuits/arithmetic.hpp"
#include "torusgate/core/error.hpp"

namespace torusgate::circuits {
namespace {

using Pairs = std::vector<std::pair<std::size_t, std::size_t>>;  // columns i < j

// Batcher's odd-even merge sort of n columns as layers of disjoint comparators (Knuth, TAOCP
// vol. 3, 5.3.4, the merging network with p the size of the sorted runs and k the distance
// of the comparators), keeping those with both columns below n.
std::vector<Pairs> merge_sort_layers(std::size_t n) {
  std::vector<Pairs> layers;
  for (std::size_t p = 1; p < n; p *= 2)
    for (std::size_t k = p; k >= 1; k /= 2) {
      Pairs layer;
      for (std::size_t j = k % p; j + k < n; j += 2 * k)
        for (std::size_t i = 0; i < k && i + j + k < n; ++i)
          if ((i + j) / (2 * p) == (i + j + k) / (2 * p)) layer.emplace_back(i + j, i + j + k);
      if (!layer.empty()) layers.push_back(std::move(layer));
    }
  return layers;
}

// The lanes of columns `first` (then `second`) of every pair, in every row.
void pair_lanes(const Expr& x, const Pairs& pairs, std::vector<std::size_t>& first,
                std::vector<std::size_t>& second) {
  for (std::size_t r = 0; r < x.rows(); ++r)
    for (const auto& [i, j] : pairs) {
      first.push_back(r * x.cols() + i);
      second.push_back(r * x.cols() + j);
    }
}

// One layer of compare-exchanges: in every row, columns (i, j) of the keys (arrays[0])
// receive the smaller and the larger key (the reverse when descending), and the columns of
// every other array follow their keys; the other columns keep theirs.
void exchange(Circuit& c, std::vector<Expr>& arrays, const Pairs& pairs, bool descending) {
  const std::size_t rows = arrays.front().rows(), cols = arrays.front().cols();
  std::vector<std::size_t> lo, hi;
  pair_lanes(arrays.front(), pairs, lo, hi);
  // Every lane of a result: its own, or the first or second of its pair.
  const std::size_t m = lo.size();
  std::vector<std::size_t> from(rows * cols);
  for (std::size_t e = 0; e < from.size(); ++e) from[e] = 2 * m + e;
  for (std::size_t q = 0; q < m; ++q) {
    from[lo[q]] = q;
    from[hi[q]] = m + q;
  }
  Expr swap;  // from the keys, the first array
  for (Expr& x : arrays) {
    const Expr first = x.gather(lo), second = x.gather(hi);
    if (&x == &arrays.front()) swap = descending ? less(c, first, second) : less(c, second, first);
    const Expr parts[] = {select(c, swap, second, first), select(c, swap, first, second), x};
    x = concat_elements(parts).gather(from).reshape(rows, cols);
  }
}

// The winner of every row (and its column when `with_index`): rounds of pairs (0, 1),
// (2, 3), ...; the challenger (the higher column) wins only when strictly better, so ties
// keep the lower column; an odd last element waits for the next round.
struct Winner {
  Expr value, column;
};

Winner tournament(Circuit& c, const Expr& x, bool largest, bool with_index) {
  check_operand(x, largest ? "max_element/argmax" : "min_element/argmin");
  const std::size_t rows = x.rows();
  std::size_t n = x.cols();
  const IntType index_type{std::max<std::size_t>(1, std::bit_width(n - 1)), false};
  Winner w{x, Expr()};
  if (with_index) {
    std::vector<std::uint64_t> columns;
    for (std::size_t e = 0; e < x.lanes(); ++e) columns.push_back(e % n);
    w.column = c.constant(columns, index_type);
  }
  while (n > 1) {
    const std::size_t half = n / 2, next = n - half;
    Pairs round;
    for (std::size_t q = 0; q < half; ++q) round.emplace_back(2 * q, 2 * q + 1);
    std::vector<std::size_t> held, challenger, from;
    pair_lanes(w.value.reshape(rows, n), round, held, challenger);
    // Row r of the next round: its winners, then its odd element (lane r n + n - 1 of the
    // round, after the rows * half winners).
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t q = 0; q < next; ++q)
        from.push_back(q < half ? r * half + q : rows * half + r * n + n - 1);
    const Expr a = w.value.gather(held), b = w.value.gather(challenger);
    const Expr take = largest ? less(c, a, b) : less(c, b, a);
    const auto advance = [&](const Expr& e, const Expr& winners) {
      if (next == half) return winners;
      const Expr parts[] = {winners, e};
      return concat_elements(parts).gather(from);
    };
    w.value = advance(w.value, select(c, take, b, a));
    if (with_index) {
      const Expr ca = w.column.gather(held), cb = w.column.gather(challenger);
      w.column = advance(w.column, select(c, take, cb, ca));
    }
    n = next;
  }
  w.value = w.value.reshape(rows, 1);
  if (with_index) w.column = w.column.reshape(rows, 1);
  return w;
}

}  // namespace

Expr sort(Circuit& c, const Expr& x, bool descending) {
  check_operand(x, "sort");
  std::vector<Expr> arrays = {x};
  for (const Pairs& layer : merge_sort_layers(x.cols())) exchange(c, arrays, layer, descending);
  return arrays.front();
}

SortedByKey sort_by_key(Circuit& c, const Expr& keys, const Expr& values, bool descending) {
  check_operand(keys, "sort_by_key");
  check_operand(values, "sort_by_key");
  EXPECTS(values.rows() == keys.rows() && values.cols() == keys.cols(),
          "sort_by_key: the values are " + std::to_string(values.rows()) + " x " +
              std::to_string(values.cols()) + " but the keys " + std::to_string(keys.rows()) +
              " x " + std::to_string(keys.cols()) + " (one value per key)");
  std::vector<Expr> arrays = {keys, values};
  for (const Pairs& layer : merge_sort_layers(keys.cols()))
    exchange(c, arrays, layer, descending);
  return SortedByKey{arrays[0], arrays[1]};
}

Expr min_element(Circuit& c, const Expr& x) { return tournament(c, x, false, false).value; }
Expr max_element(Circuit& c, const Expr& x) { return tournament(c, x, true, false).value; }
Expr argmin(Circuit& c, const Expr& x) { return tournament(c, x, false, true).column; }
Expr argmax(Circuit& c, const Expr& x) { return tournament(c, x, true, true).column; }

}  // namespace torusgate::circuits
