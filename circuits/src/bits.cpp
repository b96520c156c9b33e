// Barrel shifters and bit counts (bits.hpp).
#include "torusgate/circuits/bits.hpp"

#include <string>
#include <string_view>
#include <vector>

#include "plane_ops.hpp"
#include "torusgate/circuits/multiply.hpp"
#include "torusgate/core/error.hpp"

namespace torusgate::circuits {
namespace {

// The amount's bits over x's lanes: one amount per element, or one for all of them.
std::vector<Plane> amount_bits(const Expr& x, const Expr& amount, std::string_view who) {
  EXPECTS(!amount.is_signed(), std::string(who) + ": the amount is " + to_string(amount.type()) +
                                   " but must be unsigned (as_signed(false) reads its bits so)");
  EXPECTS(amount.lanes() == x.lanes() || amount.lanes() == 1,
          std::string(who) + ": the amount has " + std::to_string(amount.lanes()) +
              " elements but the operand has " + std::to_string(x.lanes()) +
              " (one amount per element, or one for all)");
  std::vector<Plane> bits = amount.bits();
  if (amount.lanes() != x.lanes())
    for (Plane& b : bits) b = b.broadcast(x.lanes());
  return bits;
}

// OR of the planes (a balanced tree); constant 0 for none.
Plane or_all(Circuit& c, const std::vector<Plane>& planes, std::size_t lanes) {
  std::vector<Plane> negated;
  for (const Plane& p : planes) negated.push_back(~p);
  return ~detail::and_all(c, std::move(negated), lanes);
}

// x shifted by the amount (left or right), `fill` moved in.
Expr shift(Circuit& c, const Expr& x, const Expr& amount, bool left, std::string_view who) {
  check_operand(x, who);
  check_operand(amount, who);
  const std::vector<Plane> s = amount_bits(x, amount, who);
  const std::size_t n = x.width();
  const Plane fill = left || !x.is_signed() ? Plane::constant(false, x.lanes()) : x.sign_bit();
  std::vector<Plane> bits = x.bits(), too_far;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i >= 63 || (std::size_t{1} << i) >= n) {  // any such bit set: s >= n
      too_far.push_back(s[i]);
      continue;
    }
    const std::size_t k = std::size_t{1} << i;
    std::vector<Plane> next(n);
    for (std::size_t j = 0; j < n; ++j) {
      const Plane& moved = left ? (j >= k ? bits[j - k] : fill) : (j + k < n ? bits[j + k] : fill);
      next[j] = c.mux(s[i], moved, bits[j]);
    }
    bits = std::move(next);
  }
  if (!too_far.empty()) {
    const Plane all_out = or_all(c, too_far, x.lanes());
    for (Plane& b : bits) b = c.mux(all_out, fill, b);
  }
  return detail::with_bits(x, std::move(bits), x.is_signed());
}

// x rotated by the amount modulo n: stage i rotates by 2^i mod n (rotations add up mod n).
Expr rotate(Circuit& c, const Expr& x, const Expr& amount, bool left, std::string_view who) {
  check_operand(x, who);
  check_operand(amount, who);
  const std::vector<Plane> s = amount_bits(x, amount, who);
  const std::size_t n = x.width();
  std::vector<Plane> bits = x.bits();
  std::size_t k = 1 % n;  // 2^i mod n
  for (std::size_t i = 0; i < s.size(); ++i, k = 2 * k % n) {
    if (k == 0) continue;
    std::vector<Plane> next(n);
    for (std::size_t j = 0; j < n; ++j) {
      // Left: bit j comes from j - k; right: from j + k.
      const std::size_t from = left ? (j + n - k) % n : (j + k) % n;
      next[j] = c.mux(s[i], bits[from], bits[j]);
    }
    bits = std::move(next);
  }
  return detail::with_bits(x, std::move(bits), x.is_signed());
}

// A block of 2^m bits, given from its top: `zero` says all are 0; `count` (m bits, low first)
// is the number of leading zeros when some bit is set, and 2^m - 1 when none is. Its bit 0 is
// kept complemented: so it is an input bit itself in a block of two, and every MUX of bit 0
// sees two plain planes, in padded blocks too (a MUX of one negated and one plain plane costs
// two levels).
struct LeadingZeros {
  Plane zero;
  std::vector<Plane> count;
};

LeadingZeros count_leading(Circuit& c, const std::vector<Plane>& top_first, std::size_t first,
                           std::size_t size) {
  if (size == 1) return {~top_first[first], {}};
  const LeadingZeros high = count_leading(c, top_first, first, size / 2);
  const LeadingZeros low = count_leading(c, top_first, first + size / 2, size / 2);
  // High half all zero: its size plus the low half's count; otherwise the high half's count.
  LeadingZeros out{c.and_(high.zero, low.zero), {}};
  for (std::size_t i = 0; i < high.count.size(); ++i)
    out.count.push_back(c.mux(high.zero, low.count[i], high.count[i]));
  out.count.push_back(high.count.empty() ? ~high.zero : high.zero);
  return out;
}

// The leading zeros of bits given from the top.
Expr leading_zeros_of(Circuit& c, const Expr& x, std::vector<Plane> top_first) {
  check_operand(x, "leading_zeros/trailing_zeros");
  const std::size_t n = x.width();
  std::size_t size = 1;
  while (size < n) size *= 2;
  // Ones below the lowest bit end every run of zeros there: the count of x = 0 is n, which
  // fits the tree's count (n < size), and the tree is never all zero.
  top_first.resize(size, Plane::constant(true, x.lanes()));
  const LeadingZeros t = count_leading(c, top_first, 0, size);
  // All zero (only when n == size): the count is size - 1 (all ones), the result size.
  std::vector<Plane> bits;
  for (std::size_t i = 0; i < t.count.size(); ++i)
    bits.push_back(c.and_(i == 0 ? ~t.count[0] : t.count[i], ~t.zero));
  bits.push_back(t.zero);
  bits.resize(n, Plane::constant(false, x.lanes()));  // log2(size) + 1 <= n
  return detail::with_bits(x, std::move(bits), false);
}

}  // namespace

Expr shift_left(Circuit& c, const Expr& x, const Expr& amount) {
  return shift(c, x, amount, true, "shift_left");
}
Expr shift_right(Circuit& c, const Expr& x, const Expr& amount) {
  return shift(c, x, amount, false, "shift_right");
}
Expr rotate_left(Circuit& c, const Expr& x, const Expr& amount) {
  return rotate(c, x, amount, true, "rotate_left");
}
Expr rotate_right(Circuit& c, const Expr& x, const Expr& amount) {
  return rotate(c, x, amount, false, "rotate_right");
}

Expr count_ones(Circuit& c, const Expr& x) {
  check_operand(x, "count_ones");
  const std::size_t n = x.width();
  std::size_t width = 1;
  while ((std::size_t{1} << width) <= n) ++width;  // n < 2^width
  BitHeap heap(width, x.lanes());
  for (const Plane& b : x.bits()) heap.add_bit(0, b);
  std::vector<Plane> bits = heap.sum(c, false).bits();
  bits.resize(n, Plane::constant(false, x.lanes()));  // width <= n
  return detail::with_bits(x, std::move(bits), false);
}

Expr leading_zeros(Circuit& c, const Expr& x) {
  return leading_zeros_of(c, x, std::vector<Plane>(x.bits().rbegin(), x.bits().rend()));
}

Expr trailing_zeros(Circuit& c, const Expr& x) { return leading_zeros_of(c, x, x.bits()); }

}  // namespace torusgate::circuits
