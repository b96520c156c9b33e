// Integer division and remainder on expressions, element-wise, by restoring long division:
// one quotient bit per operand bit, each a trial subtraction (its carry out is the bit) and a
// select of the partial remainder. The partial remainder before quotient bit i has n - i
// bits, so step i subtracts on n - i + 1 bits only: the top one compares "the divisor's bits
// at n - i and above are not all zero" (a suffix OR of the divisor, computed once), so a
// quotient bit never costs a full-width subtraction. Costs and depth: docs/circuits.md.
//
// Semantics are C++'s for every defined case (quotient truncated toward zero, remainder with
// the sign of the dividend, x == (x / y) * y + x % y) and RISC-V's for the two it leaves
// undefined: x / 0 is all ones (-1 signed, 2^n - 1 unsigned) and x % 0 is x; the signed
// MIN / -1 wraps to MIN, with remainder 0. A divisor that is a plaintext constant
// (Circuit::constant) needs no other code: its bits fold into the gates.
#pragma once

#include <cstdint>

#include "torusgate/circuits/netlist.hpp"

namespace torusgate::circuits {

struct DivisionResult {
  Expr quotient;   // the type of the operands
  Expr remainder;  // the type of the operands
};

// x / y and x % y for operands of one type and element count (InvalidArgument otherwise).
// Gates that only the unused result needs are dropped by compile().
DivisionResult divide_with_remainder(Circuit& c, const Expr& x, const Expr& y);
Expr divide(Circuit& c, const Expr& x, const Expr& y);
Expr remainder(Circuit& c, const Expr& x, const Expr& y);

// x / d and x % d for a plaintext divisor d, a value of x's type (InvalidArgument otherwise),
// with the semantics above. Not a power of two: x times a rounded-up reciprocal of d in one
// carry-save heap (no AND gates), whose top bits are the quotient, then x - q d in another;
// a logarithmic depth where long division takes n subtractions one after another. divide()
// and its kin take this path when y is one constant for every element (Circuit::constant) and
// the operands have 16 to 64 bits; narrower ones take fewer bootstraps by long division.
DivisionResult divide_constant(Circuit& c, const Expr& x, std::int64_t d);

}  // namespace torusgate::circuits
