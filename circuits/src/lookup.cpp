// Table lookup by multiplexer trees (lookup.hpp).
#include "torusgate/circuits/lookup.hpp"

#include <string>
#include <vector>

#include "plane_ops.hpp"
#include "torusgate/circuits/int_codec.hpp"
#include "torusgate/core/error.hpp"

namespace torusgate::circuits {

Expr lookup(Circuit& c, const Expr& x, std::span<const std::uint64_t> table, IntType out) {
  check_operand(x, "lookup");
  const std::size_t w = x.width();
  EXPECTS(w <= 16, "lookup: x is " + to_string(x.type()) +
                       "; tables index integers of up to 16 bits (65,536 entries)");
  const std::size_t entries = std::size_t{1} << w;
  EXPECTS(table.size() == entries,
          "lookup: the table has " + std::to_string(table.size()) + " entries but x is " +
              to_string(x.type()) + ": it needs " + std::to_string(entries) +
              " (one per value of x, from the smallest)");
  check_values(table, out, "lookup");  // also refuses widths outside 1..64
  // The index bits: x's, with the sign bit flipped for signed x (value + 2^(w-1)).
  std::vector<Plane> index = x.bits();
  if (x.is_signed()) index.back() = ~index.back();
  std::vector<Plane> bits, level;
  for (std::size_t j = 0; j < out.width; ++j) {
    level.clear();
    for (std::uint64_t v : table) level.push_back(Plane::constant(((v >> j) & 1) != 0, x.lanes()));
    for (std::size_t b = 0; b < w; ++b) {
      for (std::size_t i = 0; i < level.size() / 2; ++i)
        level[i] = c.mux(index[b], level[2 * i + 1], level[2 * i]);
      level.resize(level.size() / 2);
    }
    bits.push_back(level.front());
  }
  return detail::with_bits(x, std::move(bits), out.is_signed);
}

}  // namespace torusgate::circuits
