// Any function of a small integer, from a plaintext table, element-wise.
//
// lookup(c, x, table, out) is table[i] for every element of x, i its rank among x's values
// (unsigned x: its value; signed x: its value + 2^(w-1), so the table runs from the smallest
// value up). Each result bit is a multiplexer tree over the table's bits, indexed by x's bits
// from the lowest: the leaves are constants, so the first level folds into x_0, NOT x_0 or a
// constant, the second into one two-input gate of x_0 and x_1 (1 bootstrap), and the levels
// above are MUXes (2 bootstraps; 3 over two levels beside a negated index bit, netlist.hpp);
// identical subtrees, within a result bit or across them, are recorded once. A random 8-bit
// to 8-bit table costs about 750 bootstraps in 8 or 9 levels, the AES S-box 745 in 9
// (docs/circuits.md).
#pragma once

#include <cstdint>
#include <span>

#include "torusgate/circuits/netlist.hpp"

namespace torusgate::circuits {

// The table has one entry per value of x (2^w for a w-bit x, w <= 16), each a value of `out`
// (1 to 64 bits; signed values as int64 bit patterns, as Circuit::constant takes them).
// Throws InvalidArgument naming the problem otherwise.
Expr lookup(Circuit& c, const Expr& x, std::span<const std::uint64_t> table, IntType out);

}  // namespace torusgate::circuits
