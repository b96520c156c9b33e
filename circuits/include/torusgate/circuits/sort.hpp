// Sorting and order statistics along the rows of an array (a vector is one row).
//
// sort orders the elements of every row with Batcher's odd-even merge sort (sort_by_key moves
// a second array with the keys: a record's fields, an index): for n columns,
// m (m + 1) / 2 layers of compare-exchanges with m = ceil(log2 n) (6 layers for 8 columns,
// 19 comparators), every comparator of every row of a layer at once: one `less` of all
// pairs and two MUX planes, so a layer is as deep as one comparison plus one level. The
// network is data-oblivious (the same gates whatever the values), as it must be on
// ciphertexts; widths that are not powers of two drop the comparators past the last column
// (a padded network whose padding, +infinity, never moves).
//
// min_element and max_element reduce every row in a tournament of ceil(log2 n) rounds (n - 1
// comparisons); argmin and argmax carry the column along and give the first column holding
// the row's minimum or maximum (ties go to the lower column, as std::min_element and
// std::max_element do), an unsigned integer of max(1, ceil(log2 n)) bits. Their results have
// one column and x's rows. Costs and depth: docs/circuits.md.
#pragma once

#include "torusgate/circuits/netlist.hpp"

namespace torusgate::circuits {

// The rows of x, each in ascending (or descending) order; x's type and shape.
Expr sort(Circuit& c, const Expr& x, bool descending = false);

// The keys' rows in order, and the values (any type, the keys' shape) moved with their keys:
// the values of equal keys come out in the network's order, not necessarily their own (a
// sorting network is not stable). Throws InvalidArgument when the shapes differ.
struct SortedByKey {
  Expr keys, values;
};
SortedByKey sort_by_key(Circuit& c, const Expr& keys, const Expr& values, bool descending = false);

// The smallest and largest element of every row (rows x 1, x's type).
Expr min_element(Circuit& c, const Expr& x);
Expr max_element(Circuit& c, const Expr& x);
// The first column of every row's smallest and largest element (rows x 1, unsigned).
Expr argmin(Circuit& c, const Expr& x);
Expr argmax(Circuit& c, const Expr& x);

}  // namespace torusgate::circuits
