// Integer operations on expressions: bitwise gates, select, adders, subtraction, negation,
// absolute value, comparisons, min/max, shifts, rotations, widening and truncation.
// Every operation is element-wise over the lanes (elements) of its operands, so a vector of
// L integers costs the same number of batches as one integer. Gate counts and depths of each
// operation are in docs/circuits.md (measured by tests/circuits/test_costs.cpp).
//
// Binary operations take operands of the same type (width and signedness) and element count;
// use resize() and as_signed() to convert. Results wrap modulo 2^width like C++ unsigned
// arithmetic; signed values are two's complement.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

#include "torusgate/circuits/netlist.hpp"

namespace torusgate::circuits {

// How sums are propagated (docs/circuits.md compares them).
enum class AdderKind {
  Ripple,      // full adders in sequence, each one compound batch XOR3 + MAJ: depth n, 2n gates
  NumberWise,  // repeated s = a XOR b, c = (a AND b) << 1 over all bits at once: depth n
  KoggeStone,  // parallel prefix, every prefix at every level: depth log2(n) + 2
  Sklansky,    // parallel prefix, divide and conquer: depth log2(n) + 2, fewer gates (default)
};
inline constexpr AdderKind default_adder = AdderKind::Sklansky;
std::string_view adder_name(AdderKind kind);

// ---- bitwise (NOT is free; AND, OR, XOR one bootstrap per bit, all bits in one batch)
Expr bit_not(const Expr& x);
Expr bit_and(Circuit& c, const Expr& x, const Expr& y);
Expr bit_or(Circuit& c, const Expr& x, const Expr& y);
Expr bit_xor(Circuit& c, const Expr& x, const Expr& y);
// cond ? if_true : if_false per element (cond: 1-bit, one element or one per element); MUX.
Expr select(Circuit& c, const Expr& cond, const Expr& if_true, const Expr& if_false);

// ---- addition and subtraction (modulo 2^width)
Expr add(Circuit& c, const Expr& x, const Expr& y, AdderKind kind = default_adder);
// x + y + carry_in (a 1-bit expression or constant); *carry_out, when given, receives the
// carry out of the top bit as a 1-bit unsigned expression.
Expr add_with_carry(Circuit& c, const Expr& x, const Expr& y, const Expr& carry_in,
                    AdderKind kind = default_adder, Expr* carry_out = nullptr);
Expr subtract(Circuit& c, const Expr& x, const Expr& y, AdderKind kind = default_adder);
Expr negate(Circuit& c, const Expr& x, AdderKind kind = default_adder);
// |x| of a signed x as an unsigned integer of the same width (exact, also for the minimum).
Expr abs(Circuit& c, const Expr& x);

// ---- comparisons: 1-bit unsigned results; signed operands compare as signed
Expr equal(Circuit& c, const Expr& x, const Expr& y);
Expr not_equal(Circuit& c, const Expr& x, const Expr& y);
Expr less(Circuit& c, const Expr& x, const Expr& y);
Expr less_equal(Circuit& c, const Expr& x, const Expr& y);
Expr greater(Circuit& c, const Expr& x, const Expr& y);
Expr greater_equal(Circuit& c, const Expr& x, const Expr& y);
Expr min(Circuit& c, const Expr& x, const Expr& y);
Expr max(Circuit& c, const Expr& x, const Expr& y);

// ---- free operations (views: no gates)
// Left shift by `k`; right shift by `k` (arithmetic for signed, logical for unsigned).
Expr shift_left(const Expr& x, std::size_t k);
Expr shift_right(const Expr& x, std::size_t k);
Expr rotate_left(const Expr& x, std::size_t k);
Expr rotate_right(const Expr& x, std::size_t k);
// Sign- or zero-extends (by signedness) or truncates to `width` bits.
Expr resize(const Expr& x, std::size_t width);
// Bits [first, first + count) as an unsigned integer.
Expr bit_range(const Expr& x, std::size_t first, std::size_t count);
// Bits of `low` then bits of `high` (low's signedness is dropped; high's is kept).
Expr concat_bits(const Expr& low, const Expr& high);
// A one-element expression repeated over `lanes` elements.
Expr broadcast(const Expr& x, std::size_t lanes);
// The elements of each expression in turn (same type), as a vector.
Expr concat_elements(std::span<const Expr> parts);

// Throws InvalidArgument naming `who` unless x and y have the same type and element count.
void check_same_shape(const Expr& x, const Expr& y, std::string_view who);
// Throws InvalidArgument naming `who` when x is an empty expression (Expr{}: no bits).
void check_operand(const Expr& x, std::string_view who);
// Throws InvalidArgument naming `who` when kind is not one of AdderKind's values.
void check_adder(AdderKind kind, std::string_view who);

}  // namespace torusgate::circuits
