// Vector reductions and matrix products over bit-coalesced integer arrays.
//
// Products and sums are fused into one bit heap: all partial products of all products that
// feed one result go into a single Dadda carry-save tree with one final adder, so a dot
// product of K n-bit terms has the depth of one multiplication plus log_1.5(K) full-adder
// levels. Results are modulo 2^width (width 0: the operands' width); signed operands give
// signed results.
#pragma once

#include <cstddef>

#include "torusgate/circuits/netlist.hpp"

namespace torusgate::circuits {

// Sum of the elements of x (a one-element result).
Expr sum(Circuit& c, const Expr& x, std::size_t width = 0);
// Sum over elements of x[e] * y[e] (a one-element result).
Expr dot(Circuit& c, const Expr& x, const Expr& y, std::size_t width = 0);

// Matrix shapes: an Expr's rows() x cols() (row-major elements).
Expr transpose(const Expr& a);
// A (r x k) times B (k x s): all r * s * k products in one batch per level.
Expr matmul(Circuit& c, const Expr& a, const Expr& b, std::size_t width = 0);

// One step of Cannon's algorithm on q x q matrices split into a grid x grid array of blocks:
// every block (I, J) multiplies A(I, K) by B(K, J) with K = (I + J + step) mod grid and adds it
// to the accumulator. The accumulator is kept in carry-save form (two rows, `width` bits, no
// final adder) between steps; pass empty expressions for the first step. Returns the two rows,
// or with `finish` the sum.
struct CannonRows {
  Expr row0, row1;
};
CannonRows cannon_step(Circuit& c, const Expr& a, const Expr& b, const CannonRows& acc,
                       std::size_t grid, std::size_t step, std::size_t width);
Expr cannon_finish(Circuit& c, const CannonRows& acc, bool is_signed);

}  // namespace torusgate::circuits
