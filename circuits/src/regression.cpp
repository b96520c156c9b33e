// Linear regression on encrypted data: the least-squares aggregates A^T A and A^T y of the
// design matrix A = [1 | X], and predictions A beta, as fused bit heaps (see regression.hpp).
#include "torusgate/circuits/regression.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "torusgate/circuits/arithmetic.hpp"
#include "torusgate/circuits/multiply.hpp"
#include "torusgate/core/error.hpp"

namespace torusgate::circuits {

namespace {

std::string shape_text(const Expr& e) {
  return std::to_string(e.rows()) + " x " + std::to_string(e.cols()) + " " + to_string(e.type());
}

struct Range {
  __int128 lo = 0, hi = 0;
};

Range range_of(IntType t) { return {min_value(t), max_value(t)}; }

// Range arithmetic on 128-bit integers: a bound past them is far past the 64 bits a result
// may have (type_for_range), so an overflow is that error, not undefined behaviour.
[[noreturn]] void too_wide() {
  throw InvalidArgument("type_for_range: the range needs more than 64 bits");
}
__int128 times(__int128 a, __int128 b) {
  __int128 r;
  if (__builtin_mul_overflow(a, b, &r)) too_wide();
  return r;
}
__int128 plus(__int128 a, __int128 b) {
  __int128 r;
  if (__builtin_add_overflow(a, b, &r)) too_wide();
  return r;
}

// The range of a * b for a, b in the given ranges: its extremes are at the corners.
Range product_range(Range a, Range b) {
  const __int128 p[4] = {times(a.lo, b.lo), times(a.lo, b.hi), times(a.hi, b.lo),
                         times(a.hi, b.hi)};
  return {*std::min_element(p, p + 4), *std::max_element(p, p + 4)};
}

Range scaled(Range r, std::size_t n) {
  return {times(r.lo, static_cast<__int128>(n)), times(r.hi, static_cast<__int128>(n))};
}

Range shifted_sum(Range r, Range b, std::size_t shift) {
  const __int128 scale = static_cast<__int128>(1) << shift;
  return {plus(r.lo, times(b.lo, scale)), plus(r.hi, times(b.hi, scale))};
}

Range hull(Range a, Range b) { return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)}; }

// first, first + stride, ..., count indices.
std::vector<std::size_t> indices(std::size_t first, std::size_t stride, std::size_t count) {
  std::vector<std::size_t> out(count);
  for (std::size_t i = 0; i < count; ++i) out[i] = first + i * stride;
  return out;
}

// Column j of an n x d matrix, as an n-element vector.
Expr column(const Expr& x, std::size_t j) {
  return x.gather(indices(j, x.cols(), x.rows()));
}

// The range arithmetic works on 64-bit types: InvalidArgument naming `who` and the operand.
void check_type(IntType t, const char* operand, const char* who) {
  EXPECTS(t.width >= 1 && t.width <= 64, std::string(who) + ": " + operand + " is " +
                                             to_string(t) +
                                             " but regression takes integers of 1 to 64 bits");
}

void check_matrix(const Expr& x, const char* who) {
  check_operand(x, who);
  EXPECTS(x.width() >= 1 && x.lanes() >= 1, std::string(who) + ": x is empty");
}

}  // namespace

__int128 min_value(IntType t) {
  EXPECTS(t.width >= 1 && t.width <= 64, "min_value: width " + std::to_string(t.width));
  return t.is_signed ? -(static_cast<__int128>(1) << (t.width - 1)) : 0;
}

__int128 max_value(IntType t) {
  EXPECTS(t.width >= 1 && t.width <= 64, "max_value: width " + std::to_string(t.width));
  return (static_cast<__int128>(1) << (t.is_signed ? t.width - 1 : t.width)) - 1;
}

IntType type_for_range(__int128 lo, __int128 hi) {
  EXPECTS(lo <= hi, "type_for_range: empty range");
  const bool is_signed = lo < 0;
  for (std::size_t width = 1; width <= 64; ++width) {
    const IntType t{width, is_signed};
    if (min_value(t) <= lo && hi <= max_value(t)) return t;
  }
  throw InvalidArgument("type_for_range: the range needs more than 64 bits");
}

IntType xtx_type(IntType x, std::size_t rows) {
  EXPECTS(rows >= 1, "xtx_type: no rows");
  check_type(x, "x", "xtx_type");
  const Range r = range_of(x);
  Range all = scaled(product_range(r, r), rows);
  all = hull(all, scaled(r, rows));                                // column sums
  all = hull(all, {static_cast<__int128>(rows), static_cast<__int128>(rows)});  // n
  return type_for_range(all.lo, all.hi);
}

IntType xty_type(IntType x, IntType y, std::size_t rows) {
  EXPECTS(rows >= 1, "xty_type: no rows");
  check_type(x, "x", "xty_type");
  check_type(y, "y", "xty_type");
  const Range all = hull(scaled(product_range(range_of(x), range_of(y)), rows),
                         scaled(range_of(y), rows));  // sum of y
  return type_for_range(all.lo, all.hi);
}

RegressionAggregates regression_aggregates(Circuit& c, const Expr& x, const Expr& y,
                                           bool intercept) {
  check_matrix(x, "regression_aggregates");
  check_operand(y, "regression_aggregates");
  check_type(x.type(), "x", "regression_aggregates");
  check_type(y.type(), "y", "regression_aggregates");
  const std::size_t n = x.rows(), d = x.cols();
  EXPECTS(y.lanes() == n, "regression_aggregates: x is " + shape_text(x) + " (" +
                              std::to_string(n) + " rows) but y has " +
                              std::to_string(y.lanes()) + " elements");
  const IntType ta = xtx_type(x.type(), n), tb = xty_type(x.type(), y.type(), n);

  // X^T X: the diagonal (one square per row and attribute) and one lane per pair i < j.
  BitHeap squares(ta.width, d);
  for (std::size_t t = 0; t < n; ++t) squares.add_square(c, x.elements(t * d, d));
  std::vector<Expr> gram_parts{squares.sum(c, ta.is_signed)};
  // Entry (i, j) of X^T X is element pair_index[i * d + j] of concat(gram_parts).
  std::vector<std::size_t> pair_index(d * d);
  for (std::size_t i = 0; i < d; ++i) pair_index[i * d + i] = i;
  std::vector<std::size_t> first, second;
  for (std::size_t i = 0; i < d; ++i)
    for (std::size_t j = i + 1; j < d; ++j) {
      pair_index[i * d + j] = pair_index[j * d + i] = d + first.size();
      first.push_back(i);
      second.push_back(j);
    }
  if (const std::size_t pairs = first.size(); pairs > 0) {
    BitHeap cross(ta.width, pairs);
    for (std::size_t t = 0; t < n; ++t) {
      std::vector<std::size_t> a(pairs), b(pairs);
      for (std::size_t p = 0; p < pairs; ++p) {
        a[p] = t * d + first[p];
        b[p] = t * d + second[p];
      }
      cross.add_product(c, x.gather(a), x.gather(b));
    }
    gram_parts.push_back(cross.sum(c, ta.is_signed));
  }
  const Expr g = concat_elements(gram_parts);
  // X^T y: one lane per attribute, y[t] broadcast over row t.
  BitHeap moments(tb.width, d);
  for (std::size_t t = 0; t < n; ++t)
    moments.add_product(c, x.elements(t * d, d), broadcast(y.elements(t, 1), d));
  const Expr m = moments.sum(c, tb.is_signed);

  if (!intercept) return {g.gather(pair_index).reshape(d, d), m.reshape(d, 1)};

  // With the ones column: A^T A = [[n, s^T], [s, X^T X]] with s the column sums, and
  // A^T y = [sum y; X^T y].
  BitHeap sums(ta.width, d);
  for (std::size_t t = 0; t < n; ++t) sums.add(x.elements(t * d, d));
  BitHeap y_sum(tb.width, 1);
  for (std::size_t t = 0; t < n; ++t) y_sum.add(y.elements(t, 1));
  const Expr s = sums.sum(c, ta.is_signed);
  const Expr count = c.constant(n, ta, 1);
  // Layout of the parts: [n | s (d) | g]; entry (i, j) of the (d+1) x (d+1) result.
  const Expr parts[] = {count, s, g};
  const Expr all = concat_elements(parts);
  std::vector<std::size_t> order;
  order.reserve((d + 1) * (d + 1));
  for (std::size_t i = 0; i <= d; ++i)
    for (std::size_t j = 0; j <= d; ++j) {
      if (i == 0 && j == 0) order.push_back(0);
      else if (i == 0 || j == 0) order.push_back(1 + (i + j - 1));
      else order.push_back(1 + d + pair_index[(i - 1) * d + (j - 1)]);
    }
  const Expr ms[] = {y_sum.sum(c, tb.is_signed), m};
  return {all.gather(order).reshape(d + 1, d + 1), concat_elements(ms).reshape(d + 1, 1)};
}

IntType prediction_type(IntType x, IntType beta, std::size_t attributes, bool intercept,
                        std::size_t intercept_shift) {
  EXPECTS(intercept_shift < 64, "prediction_type: intercept shift " + std::to_string(intercept_shift));
  check_type(x, "x", "prediction_type");
  check_type(beta, "beta", "prediction_type");
  Range r = scaled(product_range(range_of(x), range_of(beta)), attributes);
  if (intercept) {
    r = shifted_sum(r, range_of(beta), intercept_shift);
  }
  return type_for_range(std::min<__int128>(r.lo, 0), std::max<__int128>(r.hi, 0));
}

IntType prediction_type(IntType x, std::span<const std::int64_t> beta, bool intercept,
                        std::size_t intercept_shift) {
  EXPECTS(intercept_shift < 64, "prediction_type: intercept shift " + std::to_string(intercept_shift));
  check_type(x, "x", "prediction_type");
  Range r{0, 0};
  for (std::size_t j = intercept ? 1 : 0; j < beta.size(); ++j) {
    r = shifted_sum(r, product_range(range_of(x), {beta[j], beta[j]}), 0);
  }
  if (intercept && !beta.empty()) r = shifted_sum(r, {beta[0], beta[0]}, intercept_shift);
  return type_for_range(std::min<__int128>(r.lo, 0), std::max<__int128>(r.hi, 0));
}

namespace {

void check_model(const Expr& x, std::size_t size, bool intercept, const char* who) {
  check_operand(x, who);
  check_matrix(x, who);
  check_type(x.type(), "x", who);
  const std::size_t want = x.cols() + (intercept ? 1 : 0);
  EXPECTS(size == want, std::string(who) + ": x has " + std::to_string(x.cols()) +
                            " attributes, so beta needs " + std::to_string(want) +
                            " coefficients" + (intercept ? " (the intercept first)" : "") +
                            " but has " + std::to_string(size));
}

}  // namespace

Expr predict(Circuit& c, const Expr& x, const Expr& beta, bool intercept,
             std::size_t intercept_shift) {
  check_operand(beta, "predict");
  check_type(beta.type(), "beta", "predict");
  check_model(x, beta.lanes(), intercept, "predict");
  const std::size_t n = x.rows(), d = x.cols(), first = intercept ? 1 : 0;
  const IntType t = prediction_type(x.type(), beta.type(), d, intercept, intercept_shift);
  BitHeap heap(t.width, n);
  for (std::size_t j = 0; j < d; ++j)
    heap.add_product(c, column(x, j), broadcast(beta.elements(first + j, 1), n));
  if (intercept) heap.add(broadcast(beta.elements(0, 1), n), intercept_shift);
  return heap.sum(c, t.is_signed).reshape(n, 1);
}

Expr predict(Circuit& c, const Expr& x, std::span<const std::int64_t> beta, bool intercept,
             std::size_t intercept_shift) {
  check_model(x, beta.size(), intercept, "predict");
  const std::size_t n = x.rows(), d = x.cols(), first = intercept ? 1 : 0;
  const IntType t = prediction_type(x.type(), beta, intercept, intercept_shift);
  BitHeap heap(t.width, n);
  for (std::size_t j = 0; j < d; ++j) heap.add_multiple(column(x, j), beta[first + j]);
  if (intercept) heap.add_constant(static_cast<std::int64_t>(
                     static_cast<std::uint64_t>(beta[0]) << intercept_shift));
  return heap.sum(c, t.is_signed).reshape(n, 1);
}

}  // namespace torusgate::circuits
