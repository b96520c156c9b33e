// Linear regression on encrypted data: the training aggregates of least squares and the
// predictions of a model.
//
// Least squares fits y ~ beta_0 + x_1 beta_1 + ... + x_d beta_d by solving the normal equations
// (A^T A) beta = A^T y, with A = [1 | X] the n x (d+1) design matrix (the column of ones gives
// the intercept beta_0). The server computes A^T A and A^T y exactly on encrypted integer
// (quantized) X and y; the client decrypts them and solves the (d+1) x (d+1) system in plain
// text. All products go into fused bit heaps: the d(d+1)/2 distinct entries of the symmetric
// X^T X (each an n-term dot product), the d entries of X^T y and the column sums form one
// schedule whose depth is that of a single dot product.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "torusgate/circuits/netlist.hpp"

namespace torusgate::circuits {

// The smallest integer type (signed if any value can be negative) that holds every integer
// in [lo, hi]. Throws InvalidArgument when that needs more than 64 bits.
IntType type_for_range(__int128 lo, __int128 hi);
// The range of values of a type.
__int128 min_value(IntType type);
__int128 max_value(IntType type);

// The type of the aggregates of n rows: it holds every sum of n products x_i * x_j (or x_i * y),
// every column sum and n itself exactly.
IntType xtx_type(IntType x, std::size_t rows);
IntType xty_type(IntType x, IntType y, std::size_t rows);

struct RegressionAggregates {
  Expr xtx;  // (d+1) x (d+1) with the intercept (row and column 0: the ones column), else d x d
  Expr xty;  // (d+1) x 1, else d x 1
};

// x: an n x d matrix of features (rows are samples), y: n targets (any shape of n elements).
// x and y may have different types (binary features: 1-bit unsigned). The results are exact,
// in xtx_type / xty_type; X^T X is computed once per pair i <= j and mirrored.
RegressionAggregates regression_aggregates(Circuit& c, const Expr& x, const Expr& y,
                                           bool intercept = true);

// The type of x * beta + beta_0 * 2^intercept_shift for an n x d x, exact.
IntType prediction_type(IntType x, IntType beta, std::size_t attributes, bool intercept,
                        std::size_t intercept_shift = 0);
IntType prediction_type(IntType x, std::span<const std::int64_t> beta, bool intercept,
                        std::size_t intercept_shift = 0);

// Predictions x * beta (+ beta_0 * 2^intercept_shift) for every row of x, an n x 1 result,
// exact. The model beta has d elements, or d + 1 with the intercept first; it is encrypted
// (an Expr) or plaintext (integers: multiplied as constants, no AND gates). In fixed point,
// with f fraction bits in x and g in beta, the products have f + g fraction bits: quantize
// beta_0 with g and pass intercept_shift = f (a free shift) so that beta_0 does not need the
// extra bits of the product scale.
Expr predict(Circuit& c, const Expr& x, const Expr& beta, bool intercept = true,
             std::size_t intercept_shift = 0);
Expr predict(Circuit& c, const Expr& x, std::span<const std::int64_t> beta, bool intercept = true,
             std::size_t intercept_shift = 0);

}  // namespace torusgate::circuits
