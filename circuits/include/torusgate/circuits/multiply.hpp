// Multipliers and the bit heap they share.
//
// A BitHeap holds a sum of weighted bits, sum_i +-b_i 2^(c_i) mod 2^width. It is reduced by
// Dadda's carry-save scheme (L. Dadda, "Some schemes for parallel multipliers", Alta
// Frequenza 1965): every stage is one batch of full adders, each the compound gate
// XOR3 + MAJ (two bootstraps, depth 1), and half adders (XOR + AND), until two rows remain;
// a parallel-prefix adder adds them. A negative bit -b 2^c is stored as (NOT b) 2^c - 2^c
// (NOT is free) and the constants are summed, so signed products (Baugh-Wooley), sign
// extension, subtraction of rows and constant corrections cost no extra gates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "torusgate/circuits/arithmetic.hpp"
#include "torusgate/circuits/netlist.hpp"

namespace torusgate::circuits {

class BitHeap {
 public:
  // A sum modulo 2^width over `lanes` elements.
  BitHeap(std::size_t width, std::size_t lanes);

  std::size_t width() const { return columns_.size(); }
  std::size_t lanes() const { return lanes_; }

  // Adds +-bit * 2^column (nothing when column >= width).
  void add_bit(std::size_t column, const Plane& bit, bool negative = false);
  // Adds +-x * 2^shift, x read as signed or unsigned by its type (sign extension is free).
  void add(const Expr& x, std::size_t shift = 0, bool negative = false);
  // Adds the partial products of x * y (element-wise, any widths and signedness; Baugh-Wooley
  // for signed operands): one AND per bit pair below the heap's width.
  void add_product(Circuit& c, const Expr& x, const Expr& y, std::size_t shift = 0);
  // Adds x * x (element-wise): about half the AND gates of add_product(x, x).
  void add_square(Circuit& c, const Expr& x, std::size_t shift = 0);
  // Adds x * constant without AND gates: the constant in canonical signed digits, one shifted
  // copy of x (negated for a -1 digit) per non-zero digit.
  void add_multiple(const Expr& x, std::int64_t constant);
  // The same for the constant +-magnitude (negative: minus); magnitude < 2^127.
  void add_multiple(const Expr& x, unsigned __int128 magnitude, bool negative);
  // Adds +-2^column.
  void add_power(std::size_t column, bool negative = false);
  // Adds a constant (mod 2^width).
  void add_constant(std::int64_t value);
  // Adds the bits of every lane of this heap, and its constant once per lane, to `sum`, a
  // one-lane heap of the same width: sum += the sum over lanes of this heap's values.
  void add_lanes_to(BitHeap& sum) const;

  // Carry-save reduction to at most two rows (unsigned, `width` bits each).
  std::pair<Expr, Expr> reduce_to_two(Circuit& c) const;
  // The sum, as a `width`-bit integer of the given signedness.
  Expr sum(Circuit& c, bool is_signed, AdderKind adder = default_adder) const;

 private:
  std::vector<std::vector<Plane>> columns_;
  std::vector<std::uint8_t> constant_;  // bits of the constant term, mod 2^width
  std::size_t lanes_;
};

enum class MultiplierKind {
  Dadda,      // partial products into a Dadda carry-save tree, prefix final adder (default)
  Tree,       // partial-product rows summed pairwise by prefix adders in a binary tree
  Karatsuba,  // three half-size products, stacked as one vector product; Dadda up to 24 bits
};
inline constexpr MultiplierKind default_multiplier = MultiplierKind::Dadda;
std::string_view multiplier_name(MultiplierKind kind);

enum class Product {
  Wrapping,  // n x n -> n bits (the product modulo 2^n)
  Full,      // n x n -> 2n bits (exact)
};

// Element-wise x * y of operands of the same type; the result has that signedness.
Expr multiply(Circuit& c, const Expr& x, const Expr& y, Product product = Product::Wrapping,
              MultiplierKind kind = default_multiplier);

// Karatsuba with an explicit base width: operands of at most base_width bits are
// multiplied by Dadda (base_width >= 3: a 3-bit operand's half sums are 3 bits again).
// multiply(..., MultiplierKind::Karatsuba) uses 24; small bases exercise
// the recursion at small widths (tests, studies).
Expr multiply_karatsuba(Circuit& c, const Expr& x, const Expr& y, Product product,
                        std::size_t base_width);

// x * constant modulo 2^width (width 0: x's width), without AND gates: the constant is
// recoded in canonical signed digits and the shifted copies of x are summed in a bit heap.
Expr multiply_constant(Circuit& c, const Expr& x, std::int64_t constant, std::size_t width = 0);

}  // namespace torusgate::circuits
