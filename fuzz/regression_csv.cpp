// Fuzz harness: the linear-regression CSV reader (apps::parse_csv) and what the example does
// with the data it returns: standardization, quantization, the exact plaintext aggregates
// and both solvers (up to 64 attributes). InvalidArgument is the documented failure of each.
//
// Input: byte 0 is a control byte (width 2..32 of the fixed point, bit 7: binary features),
// then the target column's name up to the first newline, then the CSV text.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "fuzz_support.hpp"
#include "regression_data.hpp"

namespace {
// The published datasets have 10 or 20 attributes.
constexpr std::size_t max_solved_attributes = 64;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace torusgate;
  if (size == 0) return 0;
  const std::size_t width = 2 + (data[0] & 0x7f) % 31;
  const auto kind = (data[0] & 0x80) ? apps::FeatureKind::Binary : apps::FeatureKind::Numeric;
  const std::string text = fuzz::as_string(data + 1, size - 1);
  const std::size_t newline = std::min(text.find('\n'), text.size());
  const std::string target = text.substr(0, newline);
  const std::string csv = newline < text.size() ? text.substr(newline + 1) : std::string();

  apps::Dataset dataset;
  bool parsed = false;
  fuzz::expect_only<InvalidArgument>("regression_csv: parse_csv", [&] {
    std::istringstream in(csv);
    dataset = apps::parse_csv(in, target, "fuzz.csv");
    parsed = true;
  });
  if (!parsed) return 0;
  const std::size_t d = dataset.attributes();
  fuzz::require(dataset.rows >= 1 && d >= 1 && dataset.x.size() == dataset.rows * d &&
                    dataset.y.size() == dataset.rows && dataset.target_name == target,
                "regression_csv: parse_csv returned an inconsistent dataset");
  for (double v : dataset.x) fuzz::require(std::isfinite(v), "regression_csv: a non-finite x");
  for (double v : dataset.y) fuzz::require(std::isfinite(v), "regression_csv: a non-finite y");

  for (const bool scale : {false, true}) {
    fuzz::expect_only<InvalidArgument>("regression_csv: quantize and solve", [&] {
      apps::Dataset copy = dataset;
      if (scale) apps::standardize(copy, true);
      const apps::QuantizedData q = apps::quantize(copy, kind, width, std::nullopt);
      fuzz::require(q.x.size() == q.rows * q.attributes && q.y.size() == q.rows,
                    "regression_csv: quantize returned inconsistent sizes");
      // The aggregates and solvers cost rows * d^2 and d^3: a few KB of CSV with thousands of
      // columns would only time out, which says nothing about the reader.
      if (d > max_solved_attributes) return;
      const apps::IntegerAggregates agg = apps::plain_aggregates(q, true);
      const std::vector<double> xtx(agg.xtx.begin(), agg.xtx.end());
      const std::vector<double> xty(agg.xty.begin(), agg.xty.end());
      fuzz::expect_only<InvalidArgument>("regression_csv: solve_normal_equations",
                                         [&] { apps::solve_normal_equations(xtx, xty, agg.size); });
      fuzz::expect_only<InvalidArgument>("regression_csv: solve_integer_normal_equations",
                                         [&] { apps::solve_integer_normal_equations(agg, true); });
      apps::least_squares_qr(copy.x, copy.y, copy.rows, d, true);
    });
  }
  return 0;
}
