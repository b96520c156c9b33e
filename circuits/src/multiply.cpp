// Bit heap with Dadda reduction, and the Dadda, tree and Karatsuba multipliers
// (A. Karatsuba and Yu. Ofman, Doklady Akad. Nauk SSSR 145, 1962), multiplication by a
// constant in canonical signed digits (G. W. Reitwiesner, 1960).
#include "torusgate/circuits/multiply.hpp"

#include <algorithm>
#include <string>

#include "plane_ops.hpp"
#include "torusgate/core/error.hpp"

namespace torusgate::circuits {

std::string_view multiplier_name(MultiplierKind kind) {
  switch (kind) {
    case MultiplierKind::Dadda: return "dadda";
    case MultiplierKind::Tree: return "tree";
    case MultiplierKind::Karatsuba: return "karatsuba";
  }
  return "unknown";
}

namespace {

void check_product(Product product, std::string_view who) {
  EXPECTS(product == Product::Wrapping || product == Product::Full,
          std::string(who) + ": Product(" + std::to_string(static_cast<int>(product)) +
              ") is neither Product::Wrapping nor Product::Full");
}

// A heap's width, checked before its columns are allocated: up to a full product of two
// max_width-bit integers.
std::size_t heap_width(std::size_t width, std::size_t lanes) {
  EXPECTS(width >= 1 && width <= 2 * max_width,
          "BitHeap: width " + std::to_string(width) + " but expected 1.." +
              std::to_string(2 * max_width));
  EXPECTS(lanes >= 1, "BitHeap: no elements");
  return width;
}

}  // namespace

// ----------------------------------------------------------------------------- bit heap

BitHeap::BitHeap(std::size_t width, std::size_t lanes)
    : columns_(heap_width(width, lanes)), constant_(width, 0), lanes_(lanes) {}

void BitHeap::add_power(std::size_t column, bool negative) {
  // constant_ +-= 2^column, modulo 2^width.
  if (column >= width()) return;
  if (!negative) {
    for (std::size_t i = column; i < width(); ++i) {
      constant_[i] ^= 1;
      if (constant_[i]) break;  // no carry
    }
  } else {
    for (std::size_t i = column; i < width(); ++i) {
      constant_[i] ^= 1;
      if (!constant_[i]) break;  // no borrow
    }
  }
}

void BitHeap::add_bit(std::size_t column, const Plane& bit, bool negative) {
  EXPECTS(bit.lanes() == lanes_, "BitHeap::add_bit: a bit of " + std::to_string(bit.lanes()) +
                                     " lanes added to a heap of " + std::to_string(lanes_));
  if (column >= width()) return;
  if (const auto value = bit.constant_value()) {
    if (*value) add_power(column, negative);
    return;
  }
  if (!negative) {
    columns_[column].push_back(bit);
  } else {
    columns_[column].push_back(~bit);  // -b = (NOT b) - 1
    add_power(column, true);
  }
}

void BitHeap::add(const Expr& x, std::size_t shift, bool negative) {
  const std::size_t n = x.width();
  for (std::size_t j = 0; j < n; ++j) {
    // Two's complement: the sign bit weighs -2^(n-1).
    const bool sign = x.is_signed() && j == n - 1;
    add_bit(shift + j, x.bit(j), negative != sign);
  }
}

void BitHeap::add_product(Circuit& c, const Expr& x, const Expr& y, std::size_t shift) {
  EXPECTS(x.lanes() == y.lanes(), "BitHeap::add_product: operands have " +
                                      std::to_string(x.lanes()) + " and " +
                                      std::to_string(y.lanes()) + " elements");
  // Bit j of x times bit i of y weighs 2^(i+j), negated when exactly one of them is a sign
  // bit (weight -2^(width-1)): Baugh-Wooley, for any mix of widths and signedness.
  const std::size_t nx = x.width(), ny = y.width();
  for (std::size_t i = 0; i < ny; ++i)
    for (std::size_t j = 0; i + j + shift < width() && j < nx; ++j) {
      const bool x_sign = x.is_signed() && j == nx - 1, y_sign = y.is_signed() && i == ny - 1;
      add_bit(shift + i + j, c.and_(x.bit(j), y.bit(i)), x_sign != y_sign);
    }
}

void BitHeap::add_square(Circuit& c, const Expr& x, std::size_t shift) {
  EXPECTS(x.lanes() == lanes_, "BitHeap::add_square: x has " + std::to_string(x.lanes()) +
                                   " elements but the heap has " + std::to_string(lanes_) +
                                   " lanes");
  // x = u - s 2^(w-1) with u the low bits (s = 0 for unsigned x; then u is all of x):
  //   u^2 = sum_i u_i 2^(2i) + sum_{i<j} u_i u_j 2^(i+j+1)    (u_i^2 = u_i: no gate)
  //   x^2 = u^2 - s u 2^w + s 2^(2w-2)                         (s^2 = s)
  // w(w-1)/2 AND gates instead of w^2.
  const std::size_t w = x.width(), low = x.is_signed() ? w - 1 : w;
  for (std::size_t i = 0; i < low; ++i) {
    add_bit(shift + 2 * i, x.bit(i));
    for (std::size_t j = i + 1; j < low && shift + i + j + 1 < width(); ++j)
      add_bit(shift + i + j + 1, c.and_(x.bit(i), x.bit(j)));
  }
  if (!x.is_signed()) return;
  const Plane& s = x.sign_bit();
  for (std::size_t i = 0; i < low && shift + w + i < width(); ++i)
    add_bit(shift + w + i, c.and_(s, x.bit(i)), true);
  add_bit(shift + 2 * w - 2, s);
}

void BitHeap::add_multiple(const Expr& x, std::int64_t constant) {
  const bool negative = constant < 0;
  add_multiple(x, negative ? static_cast<unsigned __int128>(-(constant + 1)) + 1
                           : static_cast<unsigned __int128>(constant),
               negative);
}

void BitHeap::add_multiple(const Expr& x, unsigned __int128 u, bool negative) {
  EXPECTS(x.lanes() == lanes_, "BitHeap::add_multiple: x has " + std::to_string(x.lanes()) +
                                   " elements but the heap has " + std::to_string(lanes_) +
                                   " lanes");
  EXPECTS(u >> 127 == 0, "BitHeap::add_multiple: the magnitude needs 128 bits; at most 127");
  // Canonical signed digits of the magnitude: no two adjacent non-zero digits.
  for (std::size_t i = 0; u != 0 && i < width(); ++i, u >>= 1) {
    if ((u & 1) == 0) continue;
    const bool minus = (u & 3) == 3;  // ...11: digit -1 and carry
    add(x, i, minus != negative);
    if (minus)
      u += 1;
    else
      u -= 1;
  }
}

void BitHeap::add_constant(std::int64_t value) {
  const auto u = static_cast<std::uint64_t>(value);  // two's complement, mod 2^64
  for (std::size_t i = 0; i < width(); ++i)
    if (i >= 64 ? value < 0 : ((u >> i) & 1) != 0) add_power(i);
}

void BitHeap::add_lanes_to(BitHeap& sum) const {
  EXPECTS(sum.lanes() == 1 && sum.width() == width(),
          "BitHeap::add_lanes_to: the sum heap has " + std::to_string(sum.lanes()) +
              " lanes and width " + std::to_string(sum.width()) + " but needs 1 lane and width " +
              std::to_string(width()));
  for (std::size_t column = 0; column < width(); ++column) {
    for (const Plane& bit : columns_[column])
      for (std::size_t e = 0; e < lanes_; ++e) sum.add_bit(column, bit.slice(e, 1));
    if (constant_[column])
      for (std::size_t e = 0; e < lanes_; ++e) sum.add_power(column);
  }
}

std::pair<Expr, Expr> BitHeap::reduce_to_two(Circuit& c) const {
  const std::size_t w = width();
  std::vector<std::vector<Plane>> cols = columns_;
  for (std::size_t i = 0; i < w; ++i)
    if (constant_[i]) cols[i].push_back(Plane::constant(true, lanes_));
  const auto max_height = [&] {
    std::size_t h = 0;
    for (const auto& col : cols) h = std::max(h, col.size());
    return h;
  };
  for (std::size_t height = max_height(); height > 2; height = max_height()) {
    // Dadda's targets 2, 3, 4, 6, 9, 13, ...: reduce to the largest one below the height.
    std::size_t target = 2;
    while (target * 3 / 2 < height) target = target * 3 / 2;
    std::vector<std::vector<Plane>> next(w);
    for (std::size_t i = 0; i < w; ++i) {
      const std::vector<Plane>& old = cols[i];
      std::size_t used = 0, h = old.size() + next[i].size();
      const auto carry = [&](const Plane& p) {
        if (i + 1 < w) next[i + 1].push_back(p);
      };
      while (h > target) {
        if (h == target + 1 && old.size() - used >= 2) {  // half adder
          const Plane& a = old[used];
          const Plane& b = old[used + 1];
          next[i].push_back(c.xor_(a, b));
          carry(c.and_(a, b));
          used += 2;
          h -= 1;
        } else if (old.size() - used >= 3) {  // full adder: one compound batch XOR3 + MAJ
          const Plane& a = old[used];
          const Plane& b = old[used + 1];
          const Plane& d = old[used + 2];
          next[i].push_back(c.xor3(a, b, d));
          carry(c.majority(a, b, d));
          used += 3;
          h -= 2;
        } else {
          break;  // a later stage finishes this column
        }
      }
      next[i].insert(next[i].end(), old.begin() + static_cast<long>(used), old.end());
    }
    cols = std::move(next);
  }
  std::vector<Plane> r0(w), r1(w);
  for (std::size_t i = 0; i < w; ++i) {
    r0[i] = cols[i].size() > 0 ? cols[i][0] : Plane::constant(false, lanes_);
    r1[i] = cols[i].size() > 1 ? cols[i][1] : Plane::constant(false, lanes_);
  }
  return {Expr(std::move(r0), false), Expr(std::move(r1), false)};
}

Expr BitHeap::sum(Circuit& c, bool is_signed, AdderKind adder) const {
  check_adder(adder, "BitHeap::sum");
  auto [r0, r1] = reduce_to_two(c);
  detail::PlaneSum s = detail::add_planes(c, r0.bits(), r1.bits(),
                                          Plane::constant(false, lanes_), adder, false);
  return Expr(std::move(s.sum), is_signed);
}

// ----------------------------------------------------------------------------- multipliers

namespace {

// Below this width Dadda is smaller and shallower than another level of Karatsuba (measured:
// docs/circuits.md); at 64 bits full width the two are within 1% in gates.
constexpr std::size_t karatsuba_base_width = 24;

Expr dadda(Circuit& c, const Expr& x, const Expr& y, std::size_t width) {
  BitHeap heap(width, x.lanes());
  heap.add_product(c, x, y);
  return heap.sum(c, x.is_signed());
}

// Rows (x AND y_i) << i summed pairwise by prefix adders; the sign row of a signed y is
// subtracted.
Expr tree(Circuit& c, const Expr& x, const Expr& y, std::size_t width) {
  const std::size_t n = x.width();
  const Expr xw = resize(x, width);
  struct Row {
    Expr value;
    bool negative;
  };
  std::vector<Row> rows;
  for (std::size_t i = 0; i < n && i < width; ++i) {
    std::vector<Plane> bits;
    for (std::size_t j = 0; j < width; ++j) bits.push_back(c.and_(xw.bit(j), y.bit(i)));
    rows.push_back(Row{shift_left(Expr(std::move(bits), x.is_signed()), i),
                       y.is_signed() && i == n - 1});
  }
  while (rows.size() > 1) {
    std::vector<Row> next;
    for (std::size_t k = 0; k + 1 < rows.size(); k += 2) {
      const Row& a = rows[k];
      const Row& b = rows[k + 1];
      if (a.negative == b.negative)
        next.push_back(Row{add(c, a.value, b.value), a.negative});
      else if (b.negative)
        next.push_back(Row{subtract(c, a.value, b.value), false});
      else
        next.push_back(Row{subtract(c, b.value, a.value), false});
    }
    if (rows.size() % 2) next.push_back(rows.back());
    rows = std::move(next);
  }
  return rows.front().negative ? negate(c, rows.front().value) : rows.front().value;
}

// Unsigned full product (2n bits) by Karatsuba: the three half products are one vector product
// over three times the elements.
Expr karatsuba_unsigned(Circuit& c, const Expr& x, const Expr& y, std::size_t base_width) {
  const std::size_t n = x.width(), lanes = x.lanes();
  // The half sums have m + 1 bits: only operands of 4 bits or more get narrower.
  if (n <= std::max<std::size_t>(base_width, 3)) return dadda(c, x, y, 2 * n);
  const std::size_t h = n / 2, m = n - h, s = m + 1;
  const Expr x0 = resize(bit_range(x, 0, h), s), x1 = resize(bit_range(x, h, m), s);
  const Expr y0 = resize(bit_range(y, 0, h), s), y1 = resize(bit_range(y, h, m), s);
  const Expr xs = add(c, x0, x1), ys = add(c, y0, y1);  // no overflow in s = m + 1 bits
  const Expr xa[] = {x0, x1, xs}, ya[] = {y0, y1, ys};
  const Expr z = karatsuba_unsigned(c, concat_elements(xa), concat_elements(ya), base_width);
  const Expr z0 = bit_range(z.elements(0, lanes), 0, 2 * h);
  const Expr z2 = bit_range(z.elements(lanes, lanes), 0, 2 * m);
  const Expr z1 = z.elements(2 * lanes, lanes);
  // x y = z0 + (z1 - z0 - z2) 2^h + z2 2^(2h); z0 and z2 2^(2h) do not overlap: one row.
  BitHeap heap(2 * n, lanes);
  heap.add(concat_bits(z0, z2));
  heap.add(z1, h);
  heap.add(z0, h, true);
  heap.add(z2, h, true);
  return heap.sum(c, false);
}

Expr karatsuba(Circuit& c, const Expr& x, const Expr& y, std::size_t width,
               std::size_t base_width) {
  const std::size_t n = x.width();
  if (n <= std::max<std::size_t>(base_width, 3)) return dadda(c, x, y, width);
  const Expr u = karatsuba_unsigned(c, x.as_signed(false), y.as_signed(false), base_width);
  if (!x.is_signed()) return resize(u, width);
  // Signed: x y = u - x_s y 2^n - y_s x 2^n (mod 2^2n), as three heap rows.
  BitHeap heap(width, x.lanes());
  heap.add(u);
  for (std::size_t j = 0; j < n; ++j) {
    heap.add_bit(n + j, c.and_(x.sign_bit(), y.bit(j)), true);
    heap.add_bit(n + j, c.and_(y.sign_bit(), x.bit(j)), true);
  }
  return heap.sum(c, true);
}

}  // namespace

Expr multiply(Circuit& c, const Expr& x, const Expr& y, Product product, MultiplierKind kind) {
  check_operand(x, "multiply");
  check_operand(y, "multiply");
  check_same_shape(x, y, "multiply");
  check_product(product, "multiply");
  EXPECTS(multiplier_name(kind) != "unknown",
          "multiply: MultiplierKind(" + std::to_string(static_cast<int>(kind)) +
              ") is not a multiplier; expected dadda, tree or karatsuba");
  const std::size_t width = product == Product::Full ? 2 * x.width() : x.width();
  Expr out;
  switch (kind) {
    case MultiplierKind::Dadda: out = dadda(c, x, y, width); break;
    case MultiplierKind::Tree: out = tree(c, x, y, width); break;
    case MultiplierKind::Karatsuba: out = karatsuba(c, x, y, width, karatsuba_base_width); break;
  }
  return out.as_signed(x.is_signed()).reshape(x.rows(), x.cols());
}

Expr multiply_karatsuba(Circuit& c, const Expr& x, const Expr& y, Product product,
                        std::size_t base_width) {
  check_same_shape(x, y, "multiply_karatsuba");
  check_product(product, "multiply_karatsuba");
  EXPECTS(base_width >= 3, "multiply_karatsuba: base_width=" + std::to_string(base_width) +
                               " but the recursion needs at least 3 (a 3-bit operand's halves"
                               " plus their carry are 3 bits again)");
  const std::size_t width = product == Product::Full ? 2 * x.width() : x.width();
  return karatsuba(c, x, y, width, base_width).as_signed(x.is_signed()).reshape(x.rows(), x.cols());
}

Expr multiply_constant(Circuit& c, const Expr& x, std::int64_t constant, std::size_t width) {
  check_operand(x, "multiply_constant");
  if (width == 0) width = x.width();
  check_width(width, "multiply_constant");
  BitHeap heap(width, x.lanes());
  heap.add_multiple(x, constant);
  return heap.sum(c, x.is_signed()).reshape(x.rows(), x.cols());
}

}  // namespace torusgate::circuits
