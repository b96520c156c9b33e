// Restoring long division (divide.hpp). Unsigned operands: quotient bit i (from the top) is
// "the partial remainder T = 2 R + x_i is at least the divisor D"; R becomes T - D where it
// is, T elsewhere. T has w = n - i bits, so T >= D exactly when D's bits w..n-1 are all zero
// and T >= D mod 2^w: one subtraction on w + 1 bits, T with a zero on top and D's low w bits
// with "some bit of D at w or above is set" on top, whose carry out is the quotient bit and
// whose low w bits are T - D. Signed operands divide their magnitudes and fix the signs.
#include "torusgate/circuits/divide.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "plane_ops.hpp"
#include "torusgate/circuits/arithmetic.hpp"
#include "torusgate/circuits/multiply.hpp"
#include "torusgate/core/error.hpp"

namespace torusgate::circuits {
namespace {

// any[w] = OR of bits[w..n-1] for every w: a Sklansky prefix tree over the bits from the top
// (depth ceil(log2 n), about (n/2) log2 n ORs).
void suffix_or(Circuit& c, std::vector<Plane>& any, std::size_t first, std::size_t last) {
  if (first >= last) return;
  const std::size_t mid = first + (last - first + 1) / 2;  // [first, mid) and [mid, last]
  suffix_or(c, any, first, mid - 1);
  suffix_or(c, any, mid, last);
  for (std::size_t w = first; w < mid; ++w) any[w] = c.or_(any[w], any[mid]);
}

// t XOR (q AND u) = bootstrap(1/8 + q + u + 2 t): AND's phase (-1 + q + u) / 8 turned a
// quarter, so that t's weight 2 (a half turn between t = 0 and 1) flips its sign. Margin 1/8,
// variance factor 6, as the prefix node's.
const GateSpec remainder_bit = GateSpec::threshold(1, {1, 1, 2});

struct PlaneDivision {
  std::vector<Plane> quotient, remainder;
  Plane divisor_nonzero;
};

PlaneDivision divide_unsigned(Circuit& c, const std::vector<Plane>& x,
                              const std::vector<Plane>& d) {
  const std::size_t n = x.size(), lanes = x.front().lanes();
  const Plane zero = Plane::constant(false, lanes), one = Plane::constant(true, lanes);
  std::vector<Plane> any = d;
  suffix_or(c, any, 0, n - 1);
  PlaneDivision out;
  out.quotient.resize(n);
  std::vector<Plane> r;  // the partial remainder, w - 1 bits before step w
  for (std::size_t w = 1; w <= n; ++w) {
    const std::size_t i = n - w;
    std::vector<Plane> t{x[i]};
    t.insert(t.end(), r.begin(), r.end());
    std::vector<Plane> a = t, b(w + 1);
    a.push_back(zero);
    for (std::size_t j = 0; j < w; ++j) b[j] = ~d[j];
    b[w] = w < n ? ~any[w] : one;
    // t + ~D' + 1 on w + 1 bits: the carry out is t >= D', the low w bits t - D.
    const detail::PlaneSum s = detail::add_planes(c, a, b, one, AdderKind::Sklansky, true);
    const Plane& q = s.carry_out;
    out.quotient[i] = q;
    // Bit j of t - D is t_j XOR u_j, u_j = ~D_j XOR (carry into j); the new remainder bit
    // t_j XOR (q AND u_j) is one sign gate (the XOR of t_j folded in with weight 2): two
    // bootstraps a bit (u_j, then it) where the difference bit and a MUX would take three.
    r.resize(w);
    for (std::size_t j = 0; j < w; ++j) {
      const Plane u = j == 0 ? d[0] : c.xor_(b[j], s.carries[j]);
      r[j] = c.gate(remainder_bit, q, u, t[j]);
    }
  }
  out.remainder = std::move(r);
  out.divisor_nonzero = any[0];
  return out;
}

// -v where s is set, v elsewhere.
Expr negate_where(Circuit& c, const Expr& s, const Expr& v) {
  return select(c, s, negate(c, v), v);
}

// x / d and x % d for unsigned x (n bits) and a constant 1 <= d < 2^n. A power of two 2^k is
// a shift and a mask (free). Otherwise q = floor(x m / 2^(n+l)) with l = ceil(log2 d) and
// m = ceil(2^(n+l) / d) < 2^(n+1): m d - 2^(n+l) < d <= 2^l, and so the error of x m / 2^(n+l)
// against x / d stays below x / 2^n < 1, inside the step to the next multiple of 1/d
// (Granlund and Montgomery, PLDI 1994, theorem 4.2). The product is one carry-save heap of
// shifted copies of x (no AND gates), and r = x - q d another.
DivisionResult divide_unsigned_constant(Circuit& c, const Expr& x, unsigned __int128 d) {
  const std::size_t n = x.width(), lanes = x.lanes();
  const auto shaped = [&](std::vector<Plane> bits) {
    return detail::with_bits(x, std::move(bits), false);
  };
  const Plane zero = Plane::constant(false, lanes);
  std::size_t l = 0;
  while ((static_cast<unsigned __int128>(1) << l) < d) ++l;
  const std::vector<Plane>& xb = x.bits();
  if ((static_cast<unsigned __int128>(1) << l) == d) {  // x >> l and x mod 2^l
    std::vector<Plane> q(xb.begin() + static_cast<std::ptrdiff_t>(l), xb.end()), r(n, zero);
    q.resize(n, zero);
    std::copy(xb.begin(), xb.begin() + static_cast<std::ptrdiff_t>(l), r.begin());
    return {shaped(std::move(q)), shaped(std::move(r))};
  }
  // 2^(n+l) - 1 fits 128 bits (n + l <= 128), and d does not divide 2^(n+l).
  const unsigned __int128 top = n + l == 128 ? ~static_cast<unsigned __int128>(0)
                                             : (static_cast<unsigned __int128>(1) << (n + l)) - 1;
  const unsigned __int128 m = top / d + 1;
  BitHeap product(2 * n + 1, lanes);  // x m < 2^(2n+1)
  product.add_multiple(x, m, false);
  const Expr full = product.sum(c, false);
  std::vector<Plane> q(full.bits().begin() + static_cast<std::ptrdiff_t>(n + l), full.bits().end());
  q.resize(n, zero);
  const Expr quotient = shaped(std::move(q));
  BitHeap rest(n, lanes);
  rest.add(x);
  rest.add_multiple(quotient, d, true);
  return {quotient, rest.sum(c, false).reshape(x.rows(), x.cols())};
}

// y's value when every element is the same constant of at most 64 bits.
std::optional<std::int64_t> uniform_constant(const Expr& y) {
  if (y.width() > 64) return std::nullopt;
  std::uint64_t bits = 0;
  for (std::size_t j = 0; j < y.width(); ++j) {
    const std::optional<bool> b = y.bit(j).constant_value();
    if (!b) return std::nullopt;
    if (*b) bits |= std::uint64_t{1} << j;
  }
  if (y.is_signed() && y.width() < 64 && ((bits >> (y.width() - 1)) & 1))
    bits |= ~std::uint64_t{0} << y.width();  // sign extension
  if (!y.is_signed() && y.width() == 64 && (bits >> 63) != 0) return std::nullopt;
  return static_cast<std::int64_t>(bits);
}

}  // namespace

DivisionResult divide_constant(Circuit& c, const Expr& x, std::int64_t d) {
  check_operand(x, "divide_constant");
  const std::size_t n = x.width();
  EXPECTS(n <= 64, "divide_constant: x is " + to_string(x.type()) +
                       "; at most 64 bits (divide() takes wider operands)");
  const bool fits = x.is_signed()
                        ? (n >= 64 || (d >= -(std::int64_t{1} << (n - 1)) &&
                                       d < (std::int64_t{1} << (n - 1))))
                        : d >= 0 && (n >= 63 || d < (std::int64_t{1} << n));
  EXPECTS(fits, "divide_constant: the divisor " + std::to_string(d) + " is not a value of " +
                    to_string(x.type()));
  if (d == 0) {  // all ones and x, as divide() gives
    return {detail::with_bits(x, std::vector<Plane>(n, Plane::constant(true, x.lanes())),
                              x.is_signed()),
            x};
  }
  const unsigned __int128 magnitude =
      d < 0 ? static_cast<unsigned __int128>(-(d + 1)) + 1 : static_cast<unsigned __int128>(d);
  if (!x.is_signed()) return divide_unsigned_constant(c, x, magnitude);
  // |x| / |d| (|d| <= 2^(n-1) fits the unsigned n bits), then the signs as divide() fixes them.
  DivisionResult u = divide_unsigned_constant(c, abs(c, x), magnitude);
  const Expr negative_dividend = detail::with_bits(x, {x.sign_bit()}, false);
  const Expr negative_quotient = d < 0 ? bit_not(negative_dividend) : negative_dividend;
  return {negate_where(c, negative_quotient, u.quotient.as_signed(true)),
          negate_where(c, negative_dividend, u.remainder.as_signed(true))};
}

DivisionResult divide_with_remainder(Circuit& c, const Expr& x, const Expr& y) {
  check_same_shape(x, y, "divide");
  check_same_shape(x, y, "divide");
  // From 16 bits the reciprocal takes fewer bootstraps too (at 16 about as many, 5 times
  // shallower); below, long division of a constant takes fewer (docs/circuits.md).
  if (const std::optional<std::int64_t> d = uniform_constant(y); d && x.width() >= 16)
    return divide_constant(c, x, *d);
  const auto shaped = [&](std::vector<Plane> bits, bool is_signed) {
    return detail::with_bits(x, std::move(bits), is_signed);
  };
  if (!x.is_signed()) {
    PlaneDivision p = divide_unsigned(c, x.bits(), y.bits());
    return {shaped(std::move(p.quotient), false), shaped(std::move(p.remainder), false)};
  }
  // |x| / |y| (abs is exact for the minimum too), then the signs: the quotient is negative
  // when the signs differ and y != 0 (so that x / 0 stays all ones), the remainder has x's.
  PlaneDivision p = divide_unsigned(c, abs(c, x).bits(), abs(c, y).bits());
  const Plane differ = c.xor_(x.sign_bit(), y.sign_bit());
  const Expr negative_quotient = shaped({c.and_(differ, p.divisor_nonzero)}, false);
  const Expr negative_dividend = shaped({x.sign_bit()}, false);
  return {negate_where(c, negative_quotient, shaped(std::move(p.quotient), true)),
          negate_where(c, negative_dividend, shaped(std::move(p.remainder), true))};
}

Expr divide(Circuit& c, const Expr& x, const Expr& y) {
  return divide_with_remainder(c, x, y).quotient;
}

Expr remainder(Circuit& c, const Expr& x, const Expr& y) {
  return divide_with_remainder(c, x, y).remainder;
}

}  // namespace torusgate::circuits
