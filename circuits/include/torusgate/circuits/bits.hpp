// Shifts and rotations by an encrypted amount, and bit counts, element-wise.
//
// A shift or rotation by an encrypted amount is a barrel shifter: one stage per bit i of the
// amount, a MUX per bit between the value and the value moved by 2^i (two bootstraps, one
// where the bit moved in is a constant 0), so the depth is the amount's width, at most
// ceil(log2 w) stages plus one for a wider amount. The semantics are the integers' for every
// amount s, with nothing undefined: shift_left(x, s) = x * 2^s mod 2^w (0 for s >= w),
// shift_right(x, s) = floor(x / 2^s) (arithmetic for signed x: 0 or -1 for s >= w), and the
// rotations move by s mod w. The amount is an unsigned integer of any width, with one element
// per element of x or one for all of them; a plaintext amount (Circuit::constant) folds into
// the gates and costs nothing, as the shifts by a number of arithmetic.hpp do.
//
// count_ones sums the bits in a carry-save heap. leading_zeros and trailing_zeros combine
// "all zero" flags and counts of the two halves of every block in a binary tree (a MUX per
// count bit per node, Oklobdzija's leading-zero counter, IEEE Trans. VLSI 1994), logarithmic
// depth. Their results are unsigned integers of x's width and shape (a count never exceeds w,
// and w < 2^w). Costs and depth: docs/circuits.md.
#pragma once

#include "torusgate/circuits/netlist.hpp"

namespace torusgate::circuits {

Expr shift_left(Circuit& c, const Expr& x, const Expr& amount);
Expr shift_right(Circuit& c, const Expr& x, const Expr& amount);
Expr rotate_left(Circuit& c, const Expr& x, const Expr& amount);
Expr rotate_right(Circuit& c, const Expr& x, const Expr& amount);

// The number of bits set (population count).
Expr count_ones(Circuit& c, const Expr& x);
// The number of zero bits above the highest set bit (w for x = 0).
Expr leading_zeros(Circuit& c, const Expr& x);
// The number of zero bits below the lowest set bit (w for x = 0).
Expr trailing_zeros(Circuit& c, const Expr& x);

}  // namespace torusgate::circuits
