// Bitwise operations, adders (ripple, number-wise, Kogge-Stone, Sklansky), comparisons and
// free bit manipulations. The prefix adders follow Kogge and Stone (IEEE Trans. Computers,
// 1973) and Sklansky (IRE Trans. Electronic Computers, 1960) with the one-bootstrap prefix
// node G = G_hi OR (P_hi AND G_lo) of DESIGN.md section 4.
#include "torusgate/circuits/arithmetic.hpp"

#include <algorithm>
#include <string>

#include "plane_ops.hpp"
#include "torusgate/core/error.hpp"

namespace torusgate::circuits {

std::string_view adder_name(AdderKind kind) {
  switch (kind) {
    case AdderKind::Ripple: return "ripple";
    case AdderKind::NumberWise: return "number-wise";
    case AdderKind::KoggeStone: return "kogge-stone";
    case AdderKind::Sklansky: return "sklansky";
  }
  return "unknown";
}

void check_adder(AdderKind kind, std::string_view who) {
  EXPECTS(adder_name(kind) != "unknown",
          std::string(who) + ": AdderKind(" + std::to_string(static_cast<int>(kind)) +
              ") is not an adder; expected ripple, number-wise, kogge-stone or sklansky");
}

void check_operand(const Expr& x, std::string_view who) {
  EXPECTS(x.width() > 0, std::string(who) + ": an operand is an empty expression (no bits)");
}

void check_same_shape(const Expr& x, const Expr& y, std::string_view who) {
  check_operand(x, who);
  check_operand(y, who);
  EXPECTS(x.type() == y.type(), std::string(who) + ": operands are " + to_string(x.type()) +
                                    " and " + to_string(y.type()) +
                                    "; convert with resize() or as_signed()");
  EXPECTS(x.lanes() == y.lanes(), std::string(who) + ": operands have " +
                                      std::to_string(x.lanes()) + " and " +
                                      std::to_string(y.lanes()) + " elements");
}

namespace {

Expr bitwise(Circuit& c, const Expr& x, const Expr& y, GateKind kind, std::string_view who) {
  check_same_shape(x, y, who);
  std::vector<Plane> out;
  out.reserve(x.width());
  for (std::size_t j = 0; j < x.width(); ++j)
    out.push_back(c.gate(GateSpec::of(kind), x.bit(j), y.bit(j)));
  return Expr(std::move(out), x.is_signed()).reshape(x.rows(), x.cols());
}

// A 1-bit operand spread over `lanes` elements.
Plane bit_for_lanes(const Expr& bit, std::size_t lanes, std::string_view who) {
  EXPECTS(bit.width() == 1, std::string(who) + ": the condition or carry has " +
                                std::to_string(bit.width()) + " bits but must have 1");
  EXPECTS(bit.lanes() == lanes || bit.lanes() == 1,
          std::string(who) + ": the condition or carry has " + std::to_string(bit.lanes()) +
              " elements but the operands have " + std::to_string(lanes));
  return bit.lanes() == lanes ? bit.bit(0) : bit.bit(0).broadcast(lanes);
}

Expr one_bit(Plane p) { return Expr({std::move(p)}, false); }

// The operands of an unsigned comparison: signed ones with their sign bits flipped.
std::vector<Plane> comparable(const Expr& x) {
  std::vector<Plane> bits = x.bits();
  if (x.is_signed()) bits.back() = ~bits.back();
  return bits;
}

}  // namespace

// ----------------------------------------------------------------------------- bitwise

Expr bit_not(const Expr& x) {
  check_operand(x, "bit_not");
  std::vector<Plane> out;
  out.reserve(x.width());
  for (const Plane& p : x.bits()) out.push_back(~p);
  return Expr(std::move(out), x.is_signed()).reshape(x.rows(), x.cols());
}
Expr bit_and(Circuit& c, const Expr& x, const Expr& y) {
  return bitwise(c, x, y, GateKind::And, "bit_and");
}
Expr bit_or(Circuit& c, const Expr& x, const Expr& y) {
  return bitwise(c, x, y, GateKind::Or, "bit_or");
}
Expr bit_xor(Circuit& c, const Expr& x, const Expr& y) {
  return bitwise(c, x, y, GateKind::Xor, "bit_xor");
}

Expr select(Circuit& c, const Expr& cond, const Expr& if_true, const Expr& if_false) {
  check_same_shape(if_true, if_false, "select");
  const Plane s = bit_for_lanes(cond, if_true.lanes(), "select");
  std::vector<Plane> out;
  out.reserve(if_true.width());
  for (std::size_t j = 0; j < if_true.width(); ++j)
    out.push_back(c.mux(s, if_true.bit(j), if_false.bit(j)));
  return Expr(std::move(out), if_true.is_signed()).reshape(if_true.rows(), if_true.cols());
}

// ----------------------------------------------------------------------------- adders

namespace detail {

Plane and_all(Circuit& c, std::vector<Plane> planes, std::size_t lanes) {
  if (planes.empty()) return Plane::constant(true, lanes);
  while (planes.size() > 1) {
    std::vector<Plane> next;
    for (std::size_t i = 0; i + 1 < planes.size(); i += 2) next.push_back(c.and_(planes[i], planes[i + 1]));
    if (planes.size() % 2) next.push_back(planes.back());
    planes = std::move(next);
  }
  return planes.front();
}

namespace {

// Generate and propagate of a group of bits.
struct GP {
  Plane g, p;
};

GP combine(Circuit& c, const GP& hi, const GP& lo) {
  return GP{c.prefix_generate(hi.g, hi.p, lo.g), c.and_(hi.p, lo.p)};
}

// In-place prefix: gp[i] becomes the group [i : first] for i in [first, last].
void sklansky(Circuit& c, std::vector<GP>& gp, std::size_t first, std::size_t last) {
  if (first >= last) return;
  const std::size_t mid = first + (last - first) / 2;
  sklansky(c, gp, first, mid);
  sklansky(c, gp, mid + 1, last);
  for (std::size_t i = mid + 1; i <= last; ++i) gp[i] = combine(c, gp[i], gp[mid]);
}

void kogge_stone(Circuit& c, std::vector<GP>& gp, std::size_t count) {
  for (std::size_t d = 1; d < count; d *= 2) {
    std::vector<GP> next = gp;
    for (std::size_t i = d; i < count; ++i) next[i] = combine(c, gp[i], gp[i - d]);
    gp = std::move(next);
  }
}

PlaneSum ripple(Circuit& c, std::span<const Plane> x, std::span<const Plane> y, Plane carry) {
  PlaneSum r;
  for (std::size_t i = 0; i < x.size(); ++i) {
    // One compound batch per bit: both gates read the same three inputs.
    r.sum.push_back(c.xor3(x[i], y[i], carry));
    carry = c.majority(x[i], y[i], carry);
  }
  r.carry_out = carry;
  return r;
}

PlaneSum number_wise(Circuit& c, std::span<const Plane> x, std::span<const Plane> y,
                     const Plane& cin) {
  const std::size_t n = x.size(), lanes = x.front().lanes();
  std::vector<Plane> s(x.begin(), x.end()), t(y.begin(), y.end());
  Plane carry_in = cin;
  std::vector<Plane> out_carries;
  const auto all_zero = [](const std::vector<Plane>& v) {
    return std::all_of(v.begin(), v.end(), [](const Plane& p) { return p.constant_value() == false; });
  };
  while (!all_zero(t) || carry_in.constant_value() != false) {
    std::vector<Plane> s2(n), t2(n, Plane::constant(false, lanes));
    // Bit 0 also absorbs the carry-in (a full adder); the other bits are half adders.
    s2[0] = c.xor3(s[0], t[0], carry_in);
    Plane up = c.majority(s[0], t[0], carry_in);
    for (std::size_t i = 1; i <= n; ++i) {
      if (i < n) {
        t2[i] = up;
        s2[i] = c.xor_(s[i], t[i]);
        up = c.and_(s[i], t[i]);
      } else {
        out_carries.push_back(up);
      }
    }
    s = std::move(s2);
    t = std::move(t2);
    carry_in = Plane::constant(false, lanes);
  }
  PlaneSum r;
  r.sum = std::move(s);
  // At most one of the bits shifted out is 1 (the sum is below 2^(n+1)): OR them.
  Plane carry = Plane::constant(false, lanes);
  for (const Plane& p : out_carries) carry = c.or_(carry, p);
  r.carry_out = carry;
  return r;
}

}  // namespace

PlaneSum add_planes(Circuit& c, std::span<const Plane> x, std::span<const Plane> y,
                    const Plane& cin, AdderKind kind, bool want_carry_out) {
  const std::size_t n = x.size();
  if (kind == AdderKind::Ripple) return ripple(c, x, y, cin);
  if (kind == AdderKind::NumberWise) return number_wise(c, x, y, cin);
  // Bit 0 absorbs the carry-in: its generate is the carry out of a full adder.
  std::vector<GP> gp(n);
  std::vector<Plane> p(n);
  PlaneSum r;
  r.sum.resize(n);
  r.sum[0] = c.xor3(x[0], y[0], cin);
  gp[0] = GP{c.majority(x[0], y[0], cin), Plane::constant(false, cin.lanes())};
  for (std::size_t i = 1; i < n; ++i) {
    p[i] = c.xor_(x[i], y[i]);
    gp[i] = GP{c.and_(x[i], y[i]), p[i]};
  }
  // Carries into bits 1..n-1 are the prefixes of bits 0..n-2; the carry out needs bit n-1.
  const std::size_t count = want_carry_out ? n : n - 1;
  if (count > 0) {
    if (kind == AdderKind::KoggeStone)
      kogge_stone(c, gp, count);
    else
      sklansky(c, gp, 0, count - 1);
  }
  r.carries.push_back(cin);
  for (std::size_t i = 1; i < n; ++i) {
    r.carries.push_back(gp[i - 1].g);
    r.sum[i] = c.xor_(p[i], gp[i - 1].g);
  }
  if (want_carry_out) r.carry_out = gp[n - 1].g;
  return r;
}

Expr with_bits(const Expr& like, std::vector<Plane> bits, bool is_signed) {
  return Expr(std::move(bits), is_signed).reshape(like.rows(), like.cols());
}

}  // namespace detail

Expr add_with_carry(Circuit& c, const Expr& x, const Expr& y, const Expr& carry_in,
                    AdderKind kind, Expr* carry_out) {
  check_same_shape(x, y, "add_with_carry");
  check_adder(kind, "add_with_carry");
  const Plane cin = bit_for_lanes(carry_in, x.lanes(), "add_with_carry");
  detail::PlaneSum r = detail::add_planes(c, x.bits(), y.bits(), cin, kind, carry_out != nullptr);
  if (carry_out) *carry_out = one_bit(r.carry_out).reshape(x.rows(), x.cols());
  return Expr(std::move(r.sum), x.is_signed()).reshape(x.rows(), x.cols());
}

Expr add(Circuit& c, const Expr& x, const Expr& y, AdderKind kind) {
  check_same_shape(x, y, "add");
  check_adder(kind, "add");
  return add_with_carry(c, x, y, one_bit(Plane::constant(false, x.lanes())), kind);
}

Expr subtract(Circuit& c, const Expr& x, const Expr& y, AdderKind kind) {
  check_same_shape(x, y, "subtract");
  check_adder(kind, "subtract");
  return add_with_carry(c, x, bit_not(y), one_bit(Plane::constant(true, x.lanes())), kind);
}

Expr negate(Circuit& c, const Expr& x, AdderKind kind) {
  check_operand(x, "negate");
  check_adder(kind, "negate");
  const Expr zero(std::vector<Plane>(x.width(), Plane::constant(false, x.lanes())), x.is_signed());
  return add_with_carry(c, bit_not(x), zero, one_bit(Plane::constant(true, x.lanes())), kind);
}

Expr abs(Circuit& c, const Expr& x) {
  check_operand(x, "abs");
  EXPECTS(x.is_signed(), "abs: the operand is " + to_string(x.type()) + " but must be signed");
  const Expr sign = one_bit(x.sign_bit());
  return select(c, sign, negate(c, x), x).as_signed(false);
}

// ----------------------------------------------------------------------------- comparisons

Expr equal(Circuit& c, const Expr& x, const Expr& y) {
  check_same_shape(x, y, "equal");
  std::vector<Plane> same;
  for (std::size_t j = 0; j < x.width(); ++j)
    same.push_back(c.gate(GateSpec::of(GateKind::Xnor), x.bit(j), y.bit(j)));
  return one_bit(detail::and_all(c, std::move(same), x.lanes())).reshape(x.rows(), x.cols());
}

Expr not_equal(Circuit& c, const Expr& x, const Expr& y) { return bit_not(equal(c, x, y)); }

Expr less(Circuit& c, const Expr& x, const Expr& y) {
  check_same_shape(x, y, "less");
  // x < y  <=>  no carry out of x + ~y + 1 (the parallel-prefix tree of the carry only).
  std::vector<Plane> a = comparable(x), b = comparable(y);
  for (Plane& p : b) p = ~p;
  const detail::PlaneSum r = detail::add_planes(c, a, b, Plane::constant(true, x.lanes()),
                                                AdderKind::Sklansky, true);
  return one_bit(~r.carry_out).reshape(x.rows(), x.cols());
}

Expr greater(Circuit& c, const Expr& x, const Expr& y) { return less(c, y, x); }
Expr less_equal(Circuit& c, const Expr& x, const Expr& y) { return bit_not(less(c, y, x)); }
Expr greater_equal(Circuit& c, const Expr& x, const Expr& y) { return bit_not(less(c, x, y)); }

Expr min(Circuit& c, const Expr& x, const Expr& y) { return select(c, less(c, x, y), x, y); }
Expr max(Circuit& c, const Expr& x, const Expr& y) { return select(c, less(c, x, y), y, x); }

// ----------------------------------------------------------------------------- free operations

namespace {


Plane fill_bit(const Expr& x) {
  return x.is_signed() ? x.sign_bit() : Plane::constant(false, x.lanes());
}

}  // namespace

Expr shift_left(const Expr& x, std::size_t k) {
  check_operand(x, "shift_left");
  const std::size_t n = x.width();
  std::vector<Plane> bits(n, Plane::constant(false, x.lanes()));
  for (std::size_t j = k; j < n; ++j) bits[j] = x.bit(j - k);
  return detail::with_bits(x, std::move(bits), x.is_signed());
}

Expr shift_right(const Expr& x, std::size_t k) {
  check_operand(x, "shift_right");
  const std::size_t n = x.width();
  std::vector<Plane> bits(n, fill_bit(x));
  for (std::size_t j = 0; j + k < n && k < n; ++j) bits[j] = x.bit(j + k);
  return detail::with_bits(x, std::move(bits), x.is_signed());
}

Expr rotate_left(const Expr& x, std::size_t k) {
  check_operand(x, "rotate_left");
  const std::size_t n = x.width();
  std::vector<Plane> bits(n);
  k %= n;
  for (std::size_t j = 0; j < n; ++j) bits[(j + k) % n] = x.bit(j);
  return detail::with_bits(x, std::move(bits), x.is_signed());
}

Expr rotate_right(const Expr& x, std::size_t k) {
  check_operand(x, "rotate_right");
  return rotate_left(x, x.width() - k % x.width());
}

Expr resize(const Expr& x, std::size_t width) {
  check_operand(x, "resize");
  check_width(width, "resize");
  std::vector<Plane> bits(width, fill_bit(x));
  for (std::size_t j = 0; j < std::min(width, x.width()); ++j) bits[j] = x.bit(j);
  return detail::with_bits(x, std::move(bits), x.is_signed());
}

Expr bit_range(const Expr& x, std::size_t first, std::size_t count) {
  EXPECTS(count >= 1 && first <= x.width() && count <= x.width() - first,
          "bit_range: bits [" + std::to_string(first) + ", " + std::to_string(first + count) +
              ") are not a non-empty range of a " + to_string(x.type()));
  std::vector<Plane> bits(x.bits().begin() + static_cast<long>(first),
                          x.bits().begin() + static_cast<long>(first + count));
  return detail::with_bits(x, std::move(bits), false);
}

Expr concat_bits(const Expr& low, const Expr& high) {
  EXPECTS(low.lanes() == high.lanes(), "concat_bits: " + std::to_string(low.lanes()) + " and " +
                                           std::to_string(high.lanes()) + " elements");
  std::vector<Plane> bits = low.bits();
  bits.insert(bits.end(), high.bits().begin(), high.bits().end());
  return detail::with_bits(low, std::move(bits), high.is_signed());
}

Expr broadcast(const Expr& x, std::size_t lanes) {
  check_operand(x, "broadcast");
  EXPECTS(x.lanes() == 1, "broadcast: the expression has " + std::to_string(x.lanes()) +
                              " elements but only a single element can be broadcast");
  EXPECTS(lanes >= 1, "broadcast: to no elements");
  bit_count(x.type(), 1, lanes, "broadcast");  // the result's bits must fit std::size_t
  std::vector<Plane> bits;
  for (const Plane& p : x.bits()) bits.push_back(p.broadcast(lanes));
  return Expr(std::move(bits), x.is_signed());
}

Expr concat_elements(std::span<const Expr> parts) {
  EXPECTS(!parts.empty(), "concat_elements: no parts");
  for (const Expr& part : parts) check_operand(part, "concat_elements");
  for (std::size_t i = 1; i < parts.size(); ++i)
    EXPECTS(parts[i].type() == parts[0].type(),
            "concat_elements: part " + std::to_string(i) + " is " + to_string(parts[i].type()) +
                " but part 0 is " + to_string(parts[0].type()));
  std::size_t total = 0;
  for (const Expr& part : parts)
    EXPECTS(!__builtin_add_overflow(total, part.lanes(), &total),
            "concat_elements: more than 2^64 elements");
  bit_count(parts[0].type(), 1, total, "concat_elements");  // the bits must fit std::size_t
  std::vector<Plane> bits;
  for (std::size_t j = 0; j < parts[0].width(); ++j) {
    std::vector<Plane> lanes;
    for (const Expr& e : parts) lanes.push_back(e.bit(j));
    bits.push_back(Plane::concat(lanes));
  }
  return Expr(std::move(bits), parts[0].is_signed());
}

}  // namespace torusgate::circuits
