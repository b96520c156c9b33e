// Data for the linear-regression programs: CSV files, the synthetic datasets of the published
// shapes, fixed-point quantization, plaintext aggregates and least-squares solvers.
//
// Quantization: a numeric value v becomes round(v * 2^f) in a signed `width`-bit integer (f
// fraction bits); a binary value must be 0 or 1 and becomes a 1-bit unsigned integer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "torusgate/circuits/netlist.hpp"

namespace torusgate::apps {

// Real-valued data: n rows of d features and a target.
struct Dataset {
  std::vector<std::string> feature_names;
  std::string target_name;
  std::size_t rows = 0;
  std::vector<double> x;  // rows x features, row-major
  std::vector<double> y;  // rows
  std::string source;     // the CSV file (parse_csv's source), for messages; "": synthetic
  std::size_t attributes() const { return feature_names.size(); }
};

// Parses CSV text: a header row of column names, then rows of numbers (decimal or scientific
// notation; surrounding spaces and a final newline allowed; \r\n line ends accepted). The
// column named `target` is y, every other column a feature. Throws InvalidArgument naming
// `source`, the line and the column for: an empty file, no data rows, a missing target
// column, duplicate or empty column names, a row with the wrong number of cells, an empty or
// non-numeric cell, a non-finite value, or a single column (no feature).
Dataset parse_csv(std::istream& in, const std::string& target, const std::string& source);
Dataset read_csv(const std::filesystem::path& path, const std::string& target);

enum class FeatureKind { Numeric, Binary };
const char* feature_kind_name(FeatureKind kind);
FeatureKind parse_feature_kind(const std::string& name);  // "numeric" | "binary"

// The published dataset shapes (rows x attributes): 200x10, 200x20, 300x10, 300x20.
struct DatasetShape {
  std::size_t rows = 0, attributes = 0;
};
std::vector<DatasetShape> published_shapes();
// "200x10" -> {200, 10}; throws InvalidArgument.
DatasetShape parse_shape(const std::string& text);
std::string to_string(DatasetShape shape);

// A synthetic dataset of the given shape, deterministic for a seed: numeric features uniform
// in [-1, 1), y = 0.5 + x . beta_true + noise with beta_true uniform in [-1, 1] and Gaussian
// noise of deviation 0.1, scaled to [-1, 1); binary features 0/1 with probability 1/2 and
// y = 1 when x . beta_true exceeds its median, else 0.
Dataset synthetic_dataset(DatasetShape shape, FeatureKind kind, std::uint64_t seed);

// Quantized data: integers ready to encrypt, with their scales.
struct QuantizedData {
  std::size_t rows = 0, attributes = 0;
  circuits::IntType x_type, y_type;
  int x_fraction_bits = 0, y_fraction_bits = 0;  // value = integer / 2^bits
  std::vector<std::int64_t> x;                   // rows x attributes, row-major
  std::vector<std::int64_t> y;
};

// Whether the aggregates of `rows` rows of features of type x and a target of type y (the sums
// of their products, circuits::xtx_type and xty_type) fit 64 bits.
bool aggregates_fit(circuits::IntType x, circuits::IntType y, std::size_t rows);

// Whether round(v * 2^f) (ties to even) fits a signed `width`-bit integer.
bool fits_fixed_point(double v, std::size_t width, int f);

// Quantizes a dataset. Numeric: signed `width`-bit fixed point with `fraction_bits` fraction
// bits for x and y alike, or, when fraction_bits is empty, for each of x and y the most
// fraction bits that make every value fit. Binary: x (and y, when all its values are 0 or 1)
// as 1-bit unsigned; a numeric y is quantized as numeric. Throws InvalidArgument naming the
// row, the column and the representable range when a value does not fit, or when a binary
// value is not 0 or 1. width: 2..32.
QuantizedData quantize(const Dataset& data, FeatureKind kind, std::size_t width,
                       std::optional<int> fraction_bits);

// Column scaling before quantization, for data whose columns differ in magnitude: every
// feature and the target become (v - mean) / scale with scale = the largest |v - mean|
// (times 1 + 1e-9, so values land in [-1, 1)); without centering, mean = 0. Constant
// columns keep scale 1 and become 0 when centered, as does a column that is constant but for
// rounding (no value strays from the mean by more than 1e-12 of the largest magnitude).
struct Standardization {
  bool centered = true;
  std::vector<double> x_mean, x_scale;
  double y_mean = 0, y_scale = 1;
};
// Scales `data` in place and returns the transform.
Standardization standardize(Dataset& data, bool center);
// Coefficients fitted on standardized data, in the units of the original data (the intercept
// first when `intercept`; centering needs the intercept).
std::vector<double> to_original_units(const Standardization& s, const std::vector<double>& beta,
                                      bool intercept);

// The exact plaintext aggregates A^T A ((d+1) x (d+1), row-major) and A^T y (d+1) of
// A = [1 | X] (without the intercept: X^T X and X^T y).
struct IntegerAggregates {
  std::size_t size = 0;  // d + 1 with the intercept, else d
  std::vector<std::int64_t> xtx, xty;
};
IntegerAggregates plain_aggregates(const QuantizedData& data, bool intercept);

// Solves the normal equations (symmetric positive definite) by Cholesky factorization in long
// double. Throws InvalidArgument when the matrix is not positive definite (collinear or
// constant features, fewer rows than unknowns).
std::vector<double> solve_normal_equations(const std::vector<double>& xtx,
                                           const std::vector<double>& xty, std::size_t size);
// The first column of the p x p normal matrix xtx that is a combination of the columns before
// it (where solve_normal_equations fails), or p when there is none: its Cholesky pivot is not
// above 1e-12 of its diagonal entry (relative to the column, so scaling columns changes
// nothing), i.e. it lies within about 1e-6 radians of the span of the columns before it.
std::size_t dependent_column(const std::vector<double>& xtx, std::size_t p);

// solve_normal_equations and dependent_column on exact integer aggregates (plain_aggregates,
// or decrypted ones), without rounding them to double (above 2^53 that loses bits). With the
// intercept (the aggregates of [1 | X]), the ones column is eliminated first in exact integer
// arithmetic: n X^T X - s s^T and n X^T y - s sum(y), s the column sums, are n^2 times the
// covariances of the centered columns, so an offset in a column costs no precision (the
// normal matrix of uncentered data is about (mean / spread)^2 worse conditioned).
std::vector<double> solve_integer_normal_equations(const IntegerAggregates& a,
                                                   bool intercept);
std::size_t integer_dependent_column(const IntegerAggregates& a, bool intercept);

// A plaintext least-squares fit by Householder QR on the design matrix (the reference the
// encrypted pipeline is compared with; it never forms A^T A). x is rows x attributes.
std::vector<double> least_squares_qr(const std::vector<double>& x, const std::vector<double>& y,
                                     std::size_t rows, std::size_t attributes, bool intercept);
// The first column of the design matrix [1 | X] (or X) that QR finds a combination of the
// columns before it (where least_squares_qr fails), or the number of columns when none is: what
// the reflections leave of it is not above 1e-12 sqrt(rows) of its own norm (relative to the
// column: a column of 1e-12 beside one of 1e6 is independent; 0 and exact multiples are not).
std::size_t qr_dependent_column(const std::vector<double>& x, std::size_t rows,
                                std::size_t attributes, bool intercept);

// Root mean square of (prediction - y) for predictions = [1 | X] beta (or X beta).
double rms_error(const std::vector<double>& x, const std::vector<double>& y, std::size_t rows,
                 std::size_t attributes, const std::vector<double>& beta, bool intercept);

}  // namespace torusgate::apps
