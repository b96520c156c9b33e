// Internal plane-level building blocks shared by the operation files.
#pragma once

#include <span>
#include <vector>

#include "torusgate/circuits/arithmetic.hpp"
#include "torusgate/circuits/netlist.hpp"

namespace torusgate::circuits::detail {

struct PlaneSum {
  std::vector<Plane> sum;
  Plane carry_out;  // empty unless asked for
  // Prefix adders: the carry into each bit (carries[0] is the carry-in); empty otherwise.
  std::vector<Plane> carries;
};

// x + y + cin over equal-length plane lists (bit 0 first); cin is a plane of the same lanes.
PlaneSum add_planes(Circuit& c, std::span<const Plane> x, std::span<const Plane> y,
                    const Plane& cin, AdderKind kind, bool want_carry_out);

// An integer of these bits, shaped (rows x cols) like `like`.
Expr with_bits(const Expr& like, std::vector<Plane> bits, bool is_signed);

// AND of all planes as a balanced tree (depth ceil(log2 n)); constant 1 for none.
Plane and_all(Circuit& c, std::vector<Plane> planes, std::size_t lanes);

}  // namespace torusgate::circuits::detail
