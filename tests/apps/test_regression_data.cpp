// The regression data layer: CSV parsing and its errors, synthetic datasets, quantization
// and its errors, exact plaintext aggregates, and the two least-squares solvers.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "regression_data.hpp"
#include "test_support.hpp"

using namespace torusgate;
using namespace torusgate::apps;

namespace {

Dataset parse(const std::string& text, const std::string& target = "y") {
  std::istringstream in(text);
  return parse_csv(in, target, "data.csv");
}

}  // namespace

TEST_CASE("parse_csv reads a header and numeric rows; the target column is y", "[regression]") {
  const Dataset d = parse("a, y ,b\n1,2,3\n-4.5, 5e-1 ,+6\n");
  CHECK(d.feature_names == std::vector<std::string>{"a", "b"});
  CHECK(d.target_name == "y");
  CHECK(d.rows == 2);
  CHECK(d.x == std::vector<double>{1, 3, -4.5, 6});
  CHECK(d.y == std::vector<double>{2, 0.5});
  CHECK(d.attributes() == 2);
}

TEST_CASE("parse_csv accepts CRLF, a byte order mark, quoted names and trailing blank lines",
          "[regression]") {
  const Dataset d = parse("\xEF\xBB\xBF\"size, m2\",\"price\"\r\n10,\"20\"\r\n30,40\r\n\r\n\n", "price");
  CHECK(d.feature_names == std::vector<std::string>{"size, m2"});
  CHECK(d.x == std::vector<double>{10, 30});
  CHECK(d.y == std::vector<double>{20, 40});
}

TEST_CASE("parse_csv names the file, the line and the column of every error", "[regression]") {
  REQUIRE_INVALID_ARGUMENT(parse(""), "data.csv: the file is empty");
  REQUIRE_INVALID_ARGUMENT(parse("\n\n"), "data.csv: the file is empty");
  REQUIRE_INVALID_ARGUMENT(parse("a,y\n"), "a header but no data rows");
  REQUIRE_INVALID_ARGUMENT(parse("a,b\n1,2\n"), "no column named 'y' (the target); the columns are 'a', 'b'");
  REQUIRE_INVALID_ARGUMENT(parse("y\n1\n"), "there are no features");
  REQUIRE_INVALID_ARGUMENT(parse("a,a,y\n1,2,3\n"), "column name 'a' appears twice");
  REQUIRE_INVALID_ARGUMENT(parse("a,,y\n1,2,3\n"), "column 2 has no name");
  REQUIRE_INVALID_ARGUMENT(parse("a,y\n1,2\n3\n"), "line 3 has 1 cells but the header has 2 columns");
  REQUIRE_INVALID_ARGUMENT(parse("a,y\n1,2,3\n"), "line 2 has 3 cells");
  REQUIRE_INVALID_ARGUMENT(parse("a,y\n1,two\n"), "line 2, column 'y': 'two' is not a number");
  REQUIRE_INVALID_ARGUMENT(parse("a,y\n1x,2\n"), "line 2, column 'a': '1x' is not a number");
  REQUIRE_INVALID_ARGUMENT(parse("a,y\n,2\n"), "line 2, column 'a': the cell is empty");
  REQUIRE_INVALID_ARGUMENT(parse("a,y\n1,2\n\n3,4\n"), "line 3 is empty");
  REQUIRE_INVALID_ARGUMENT(parse("a,y\nnan,2\n"), "'nan' is not a finite number");
  REQUIRE_INVALID_ARGUMENT(parse("a,y\n1,inf\n"), "'inf' is not a finite number");
  REQUIRE_INVALID_ARGUMENT(parse("a,y\n1e999,2\n"), "'1e999' is out of the range of a double");
  // One leading + only, never before another sign; a value below the smallest double is 0.
  REQUIRE_INVALID_ARGUMENT(parse("a,y\n+-1,2\n"), "line 2, column 'a': '+-1' is not a number");
  REQUIRE_INVALID_ARGUMENT(parse("a,y\n++1,2\n"), "'++1' is not a number");
  CHECK(parse("a,y\n+1,2\n").x == std::vector<double>{1.0});
  CHECK(parse("a,y\n1e-400,-1e-400\n").x == std::vector<double>{0.0});
  CHECK(parse("a,y\n1e-400,-1e-400\n").y == std::vector<double>{-0.0});
  REQUIRE_INVALID_ARGUMENT(parse("a,y\n\"1,2\n"), "a quoted cell is not closed");
}

TEST_CASE("read_csv reads files and names a missing one", "[regression]") {
  const auto dir = std::filesystem::temp_directory_path() / "torusgate_regression_test";
  std::filesystem::create_directories(dir);
  const auto path = dir / "small.csv";
  {
    std::ofstream out(path);
    out << "x,target\n1,2\n3,4\n";
  }
  const Dataset d = read_csv(path, "target");
  CHECK(d.rows == 2);
  CHECK(d.y == std::vector<double>{2, 4});
  REQUIRE_INVALID_ARGUMENT(read_csv(dir / "missing.csv", "y"), "missing.csv: no such file");
  REQUIRE_INVALID_ARGUMENT(read_csv(dir, "y"), "not a regular file");
  std::filesystem::remove_all(dir);
}

TEST_CASE("dataset shapes parse and the published ones are listed", "[regression]") {
  CHECK(published_shapes().size() == 4);
  CHECK(to_string(published_shapes()[3]) == "300x20");
  const DatasetShape s = parse_shape("200x10");
  CHECK((s.rows == 200 && s.attributes == 10));
  for (const char* bad : {"200", "x10", "200x", "0x3", "3x0", "2x3x4", "-1x2", "ax2"})
    REQUIRE_INVALID_ARGUMENT(parse_shape(bad), "expected ROWSxATTRIBUTES");
  REQUIRE_INVALID_ARGUMENT(parse_feature_kind("integer"), "numeric or binary");
  CHECK(parse_feature_kind("binary") == FeatureKind::Binary);
}

TEST_CASE("synthetic datasets have the shape, are deterministic and fit their kind",
          "[regression]") {
  for (const DatasetShape shape : published_shapes()) {
    const Dataset a = synthetic_dataset(shape, FeatureKind::Numeric, 7);
    const Dataset b = synthetic_dataset(shape, FeatureKind::Numeric, 7);
    REQUIRE(a.rows == shape.rows);
    REQUIRE(a.attributes() == shape.attributes);
    REQUIRE(a.x.size() == shape.rows * shape.attributes);
    CHECK(a.x == b.x);
    CHECK(a.y == b.y);
    for (double v : a.x) CHECK((v >= -1 && v < 1));
    for (double v : a.y) CHECK((v >= -1 && v < 1));
    CHECK(synthetic_dataset(shape, FeatureKind::Numeric, 8).x != a.x);
    const Dataset bin = synthetic_dataset(shape, FeatureKind::Binary, 7);
    std::size_t ones = 0;
    for (double v : bin.x) CHECK((v == 0 || v == 1));
    for (double v : bin.y) {
      CHECK((v == 0 || v == 1));
      ones += v == 1;
    }
    CHECK(ones >= shape.rows / 4);  // about half above the median
  }
}

TEST_CASE("quantize: fixed point with automatic or given fraction bits", "[regression]") {
  Dataset d;
  d.feature_names = {"a", "b"};
  d.target_name.assign(1, 'y');  // (= "y": a false GCC 12 -Wrestrict warning)
  d.rows = 2;
  d.x = {0.5, -1.0, 0.25, 0.74};
  d.y = {3.0, -2.5};
  const QuantizedData q = quantize(d, FeatureKind::Numeric, 8, std::nullopt);
  CHECK(q.x_type == circuits::IntType{8, true});
  CHECK(q.x_fraction_bits == 7);  // -1.0 * 128 = -128 fits, 0.74 * 128 = 94.7 -> 95
  CHECK(q.x == std::vector<std::int64_t>{64, -128, 32, 95});
  CHECK(q.y_fraction_bits == 5);  // 3.0 * 32 = 96 fits, 3.0 * 64 = 192 does not
  CHECK(q.y == std::vector<std::int64_t>{96, -80});

  const QuantizedData g = quantize(d, FeatureKind::Numeric, 8, 4);
  CHECK(g.x == std::vector<std::int64_t>{8, -16, 4, 12});
  CHECK(g.y == std::vector<std::int64_t>{48, -40});
  REQUIRE_INVALID_ARGUMENT(quantize(d, FeatureKind::Numeric, 8, 6),
                           "row 1, column 'y': the value 3 does not fit 8-bit signed fixed point "
                           "with 6 fraction bits (range -2 .. 1.98438)");
  d.x[3] = 200;
  REQUIRE_INVALID_ARGUMENT(quantize(d, FeatureKind::Numeric, 8, std::nullopt),
                           "the features: the value 200 does not fit a 8-bit signed integer even "
                           "with 0 fraction bits (it needs 9 bits); use --width 9, or --standardize");
  // Past the 32 bits of --width, --standardize is the only advice.
  d.x[3] = 1e12;
  REQUIRE_INVALID_ARGUMENT(quantize(d, FeatureKind::Numeric, 32, std::nullopt),
                           "the value 1e+12 does not fit a 32-bit signed integer even with 0 "
                           "fraction bits (it needs 41 bits); use --standardize");
  // A width whose sums of products over the rows would not fit 64 bits is not offered: 4096
  // rows of 31-bit values (1e9) need 61 + 12 bits.
  {
    Dataset tall;
    tall.feature_names = {"a"};
    tall.target_name.assign(1, 'y');
    tall.rows = 4096;
    tall.x.assign(tall.rows, 1e9);
    tall.y.assign(tall.rows, 0.5);
    REQUIRE_INVALID_ARGUMENT(quantize(tall, FeatureKind::Numeric, 8, std::nullopt),
                             "(it needs 31 bits, and the sums of 4096 rows of 31-bit products "
                             "would need more than 64 bits); use --standardize");
    tall.rows = 2;  // the same values in 2 rows: --width 31 fits
    tall.x.resize(2);
    tall.y.resize(2);
    REQUIRE_INVALID_ARGUMENT(quantize(tall, FeatureKind::Numeric, 8, std::nullopt),
                             "(it needs 31 bits); use --width 31, or --standardize");
  }
  d.x[3] = 200;
  REQUIRE_INVALID_ARGUMENT(quantize(d, FeatureKind::Numeric, 8, 1),
                           "row 2, column 'b': the value 200");
  // Data from a file: the file and its line (the header is line 1).
  d.source = "data.csv";
  REQUIRE_INVALID_ARGUMENT(quantize(d, FeatureKind::Numeric, 8, 1),
                           "data.csv: line 3, column 'b': the value 200");
  REQUIRE_INVALID_ARGUMENT(quantize(d, FeatureKind::Numeric, 8, std::nullopt),
                           "data.csv: the features: the value 200 does not fit");
  d.source.clear();
  REQUIRE_INVALID_ARGUMENT(quantize(d, FeatureKind::Numeric, 1, std::nullopt), "outside 2..32");
  REQUIRE_INVALID_ARGUMENT(quantize(d, FeatureKind::Numeric, 8, 8), "fraction bits");
}

TEST_CASE("quantize: binary features are 1-bit; a binary target too, else numeric",
          "[regression]") {
  Dataset d;
  d.feature_names = {"a", "b"};
  d.target_name.assign(1, 't');
  d.rows = 2;
  d.x = {0, 1, 1, 1};
  d.y = {1, 0};
  const QuantizedData q = quantize(d, FeatureKind::Binary, 8, std::nullopt);
  CHECK(q.x_type == circuits::IntType{1, false});
  CHECK(q.y_type == circuits::IntType{1, false});
  CHECK(q.x == std::vector<std::int64_t>{0, 1, 1, 1});
  d.y = {0.5, -0.5};
  const QuantizedData r = quantize(d, FeatureKind::Binary, 8, std::nullopt);
  CHECK(r.y_type == circuits::IntType{8, true});
  CHECK(r.y == std::vector<std::int64_t>{64, -64});
  d.x[2] = 0.5;
  REQUIRE_INVALID_ARGUMENT(quantize(d, FeatureKind::Binary, 8, std::nullopt),
                           "row 2, column 'a': the value 0.5 is not 0 or 1");
}

TEST_CASE("plain_aggregates computes A^T A and A^T y exactly", "[regression]") {
  QuantizedData q;
  q.rows = 3;
  q.attributes = 2;
  q.x = {1, 2, -3, 4, 5, -6};
  q.y = {7, -8, 9};
  const IntegerAggregates a = plain_aggregates(q, true);
  REQUIRE(a.size == 3);
  // Columns: ones, (1, -3, 5), (2, 4, -6).
  CHECK(a.xtx == std::vector<std::int64_t>{3, 3, 0, 3, 35, -40, 0, -40, 56});
  CHECK(a.xty == std::vector<std::int64_t>{8, 76, -72});
  const IntegerAggregates b = plain_aggregates(q, false);
  CHECK(b.xtx == std::vector<std::int64_t>{35, -40, -40, 56});
  CHECK(b.xty == std::vector<std::int64_t>{76, -72});
}

TEST_CASE("the solvers recover an exact linear model and agree on noisy data", "[regression]") {
  // y = 2 - 3 x1 + 0.5 x2 exactly.
  const std::vector<double> x = {1, 0, 0, 1, 2, 3, -1, 4, 5, -2};
  std::vector<double> y;
  for (std::size_t t = 0; t < 5; ++t) y.push_back(2 - 3 * x[2 * t] + 0.5 * x[2 * t + 1]);
  const std::vector<double> qr = least_squares_qr(x, y, 5, 2, true);
  REQUIRE(qr.size() == 3);
  CHECK(qr[0] == Approx(2).margin(1e-12));
  CHECK(qr[1] == Approx(-3).margin(1e-12));
  CHECK(qr[2] == Approx(0.5).margin(1e-12));
  CHECK(rms_error(x, y, 5, 2, qr, true) == Approx(0).margin(1e-12));

  const Dataset d = synthetic_dataset({200, 10}, FeatureKind::Numeric, 3);
  const std::size_t p = 11;
  std::vector<double> xtx(p * p, 0), xty(p, 0);
  for (std::size_t t = 0; t < d.rows; ++t)
    for (std::size_t i = 0; i < p; ++i) {
      const double ai = i == 0 ? 1 : d.x[t * 10 + i - 1];
      for (std::size_t j = 0; j < p; ++j) xtx[i * p + j] += ai * (j == 0 ? 1 : d.x[t * 10 + j - 1]);
      xty[i] += ai * d.y[t];
    }
  const std::vector<double> chol = solve_normal_equations(xtx, xty, p);
  const std::vector<double> ref = least_squares_qr(d.x, d.y, d.rows, 10, true);
  for (std::size_t j = 0; j < p; ++j) CHECK(chol[j] == Approx(ref[j]).margin(1e-10));
  // The least-squares fit has the smallest RMS error: moving a coefficient increases it.
  std::vector<double> moved = ref;
  moved[3] += 0.01;
  CHECK(rms_error(d.x, d.y, d.rows, 10, moved, true) > rms_error(d.x, d.y, d.rows, 10, ref, true));
}

TEST_CASE("the solvers reject singular systems", "[regression]") {
  // A constant feature duplicates the intercept column.
  const std::vector<double> x = {1, 1, 1, 1};
  const std::vector<double> y = {1, 2, 3, 4};
  REQUIRE_INVALID_ARGUMENT(least_squares_qr(x, y, 4, 1, true), "rank deficient");
  REQUIRE_INVALID_ARGUMENT(solve_normal_equations({4, 4, 4, 4}, {10, 10}, 2),
                           "singular (column 1 is a combination");
  // dependent_column names the same column, and none for a regular matrix: columns 1, x, 2x
  // over x = 1..3 (the third is twice the second), then 1, x.
  CHECK(dependent_column({4, 4, 4, 4}, 2) == 1);
  CHECK(dependent_column({3, 6, 12, 6, 14, 28, 12, 28, 56}, 3) == 2);
  CHECK(dependent_column({3, 6, 6, 14}, 2) == 2);
  CHECK(dependent_column({0}, 1) == 0);
  REQUIRE_INVALID_ARGUMENT(dependent_column({1, 2}, 2), "sizes do not match");
  REQUIRE_INVALID_ARGUMENT(least_squares_qr({1, 2}, {1}, 1, 2, true), "1 rows cannot determine 3");
}

TEST_CASE("the Cholesky pivot test is relative: any scale of A^T A, same answer",
          "[regression]") {
  // dependent_column and solve_normal_equations on A^T A of columns 1, x, 2x (x = 1..3)
  // scaled as a whole: a pivot of 3e-14 was refused against an absolute floor of 1e-12.
  const std::vector<double> regular = {3, 6, 6, 14}, singular = {3, 6, 12, 6, 14, 28, 12, 28, 56};
  for (const double s : {1e-300, 1e-14, 1.0, 1e14, 1e300}) {
    INFO("scale " << s);
    std::vector<double> r = regular, g = singular;
    for (double& v : r) v *= s;
    for (double& v : g) v *= s;
    CHECK(dependent_column(r, 2) == 2);
    CHECK(dependent_column(g, 3) == 2);
    // y = 1 + 2 x: A^T y = (15, 34) s.
    const std::vector<double> beta = solve_normal_equations(r, {15 * s, 34 * s}, 2);
    CHECK(beta[0] == Approx(1).epsilon(1e-12));
    CHECK(beta[1] == Approx(2).epsilon(1e-12));
  }
}

TEST_CASE("qr_dependent_column tests each column against its own norm", "[regression]") {
  // One column scaled from 1e-300 to 1e300 beside columns near 1 stays independent and its
  // coefficient scales inversely; twice it (exactly), or a constant, is dependent at every
  // scale, with and without the intercept. (Against the largest entry of the whole matrix, a
  // column of 1e-15 was dependent; near 1e-300 and 1e300 its squares underflowed, overflowed.)
  const Dataset houses = parse(
      "rooms,age,km,y\n3,1.2,2.5,3.1\n2,3.5,1.0,2.4\n4,0.5,6.0,3.3\n5,2.0,3.5,4.2\n"
      "3,4.1,0.8,2.6\n2,0.3,4.2,2.2\n4,2.7,2.2,3.6\n6,1.5,5.1,4.6\n");
  const std::size_t n = houses.rows;
  const std::vector<double> base = least_squares_qr(houses.x, houses.y, n, 3, true);
  for (const double s : {1e-300, 1e-15, 1e-9, 1e-6, 1.0, 1e6, 1e12, 1e300}) {
    INFO("scale " << s);
    std::vector<double> x = houses.x, twice, constant;
    for (std::size_t t = 0; t < n; ++t) {
      x[t * 3 + 1] *= s;
      for (const double v : {x[t * 3], x[t * 3 + 1], 2 * x[t * 3 + 1]}) twice.push_back(v);
      for (const double v : {x[t * 3], 5 * s, x[t * 3 + 2]}) constant.push_back(v);
    }
    CHECK(qr_dependent_column(x, n, 3, true) == 4);
    CHECK(qr_dependent_column(x, n, 3, false) == 3);
    const std::vector<double> beta = least_squares_qr(x, houses.y, n, 3, true);
    CHECK(beta[2] * s == Approx(base[2]).epsilon(1e-12));
    CHECK(beta[3] == Approx(base[3]).epsilon(1e-12));
    CHECK(qr_dependent_column(twice, n, 3, true) == 3);
    CHECK(qr_dependent_column(twice, n, 3, false) == 2);
    CHECK(qr_dependent_column(constant, n, 3, true) == 2);
    // Every column scaled alike, without the intercept: nothing is small beside another.
    std::vector<double> all = houses.x;
    for (double& v : all) v *= s;
    CHECK(qr_dependent_column(all, n, 3, false) == 3);
  }
}

TEST_CASE("integer_dependent_column refuses an exact multiple of any size", "[regression]") {
  // b = m a is dependent for every multiplier m; b = m a + one unit is not (its angle to a is
  // above the 1e-6 radians that refuse a column).
  for (const std::int64_t m : std::vector<std::int64_t>{1, 3, 1000, -(1 << 20)}) {
    INFO("multiplier " << m);
    QuantizedData q;
    q.rows = 6;
    q.attributes = 2;
    for (const std::int64_t a : {3, -1, 4, 1, -5, 9}) {
      q.x.push_back(a);
      q.x.push_back(m * a);
      q.y.push_back(a + 2);
    }
    CHECK(integer_dependent_column(plain_aggregates(q, true), true) == 2);
    CHECK(integer_dependent_column(plain_aggregates(q, false), false) == 1);
    if (std::abs(m) < 2000) {
      q.x[3] += 1;
      CHECK(integer_dependent_column(plain_aggregates(q, true), true) == 3);
      CHECK(integer_dependent_column(plain_aggregates(q, false), false) == 2);
    }
  }
}

TEST_CASE("standardize scales columns into [-1, 1) and the fit maps back exactly",
          "[regression]") {
  Dataset d = synthetic_dataset({40, 3}, FeatureKind::Numeric, 5);
  // Columns of very different magnitudes and offsets.
  for (std::size_t t = 0; t < d.rows; ++t) {
    d.x[t * 3 + 0] = 1000 + 300 * d.x[t * 3 + 0];
    d.x[t * 3 + 2] *= 0.01;
    d.y[t] = 50 * d.y[t] - 7;
  }
  const Dataset original = d;
  const std::vector<double> direct = least_squares_qr(d.x, d.y, d.rows, 3, true);
  for (const bool center : {true, false}) {
    Dataset s = original;
    const Standardization st = standardize(s, center);
    for (double v : s.x) CHECK((v >= -1 && v < 1));
    for (double v : s.y) CHECK((v >= -1 && v < 1));
    CHECK(st.centered == center);
    CHECK(st.x_scale.size() == 3);
    if (!center) CHECK(st.x_mean == std::vector<double>(3, 0.0));
    const std::vector<double> back =
        to_original_units(st, least_squares_qr(s.x, s.y, s.rows, 3, true), true);
    for (std::size_t j = 0; j < 4; ++j) CHECK(back[j] == Approx(direct[j]).epsilon(1e-9));
  }
  Dataset s = original;
  const Standardization st = standardize(s, true);
  REQUIRE_INVALID_ARGUMENT(to_original_units(st, {1, 2, 3}, false), "centered data need the intercept");
  REQUIRE_INVALID_ARGUMENT(to_original_units(st, {1, 2}, true), "2 coefficients for 3 features");
  // A constant column keeps scale 1 (and becomes 0 when centered).
  Dataset c = original;
  for (std::size_t t = 0; t < c.rows; ++t) c.x[t * 3 + 1] = 4;
  const Standardization sc = standardize(c, true);
  CHECK(sc.x_scale[1] == 1);
  CHECK(c.x[1] == 0);
  // Constant but for the last bit (0.1 + 0.2 beside 0.3): constant too when centered, not
  // rounding noise stretched to [-1, 1); a spread of 1e-9 of the mean is kept and scaled.
  Dataset u = original;
  for (std::size_t t = 0; t < u.rows; ++t) {
    u.x[t * 3 + 1] = t % 2 ? 0.3 : 0.1 + 0.2;
    u.x[t * 3 + 2] = 1000 + 1e-6 * static_cast<double>(t % 5);
  }
  REQUIRE(0.1 + 0.2 != 0.3);
  Dataset uc = u;
  const Standardization su = standardize(uc, true);
  CHECK(su.x_scale[1] == 1);
  for (std::size_t t = 0; t < uc.rows; ++t) CHECK(uc.x[t * 3 + 1] == 0);
  CHECK(su.x_scale[2] == Approx(2e-6).epsilon(1e-6));
  CHECK(qr_dependent_column(uc.x, uc.rows, 3, true) == 2);
  CHECK(qr_dependent_column(u.x, u.rows, 3, true) == 2);  // as on the unscaled data
  // Without centering nothing is constant beside an intercept: the column is scaled.
  Dataset un = u;
  const Standardization sn = standardize(un, false);
  CHECK(sn.x_scale[1] == Approx(0.3).epsilon(1e-8));
  CHECK(un.x[1] == Approx(1).epsilon(1e-8));
  // Values near the largest double: the running mean does not overflow, the scaled values
  // are finite; a column whose spread itself overflows is named.
  Dataset h = original;
  for (std::size_t t = 0; t < h.rows; ++t) h.x[t * 3] = (t % 2 ? 1.7e308 : 1.5e308);
  standardize(h, true);
  for (double v : h.x) CHECK(std::isfinite(v));
  Dataset w = original;
  // Two values near +1.7e308 for one near -1.7e308: the mean near 5.7e307, and the
  // negative values' distance from it beyond the largest double.
  for (std::size_t t = 0; t < w.rows; ++t) w.x[t * 3 + 2] = (t % 3 == 2 ? -1.7e308 : 1.7e308);
  REQUIRE(w.rows >= 3);
  REQUIRE_INVALID_ARGUMENT(standardize(w, true),
                           "--standardize: column '" + w.feature_names[2] +
                               "' spans more than a double holds");
  // Without centering, a value within 1e-9 of the largest double: the scale overflows.
  Dataset m = original;
  m.x[1] = 1.7976931348623e308;
  REQUIRE_INVALID_ARGUMENT(standardize(m, false),
                           "--standardize: column '" + m.feature_names[1] +
                               "' spans more than a double holds");
}

TEST_CASE("the integer normal equations are solved without rounding the aggregates",
          "[regression]") {
  // x = 2^27 - 200 + t, y = 2 x - 268435000: exactly linear, aggregates past 2^53 (n x^2 is
  // about 2^61). Rounded to double their Cholesky finds x constant (its spread is below 1e-6
  // of its mean); the exact elimination of the intercept gives the model exactly.
  QuantizedData q;
  q.rows = 200;
  q.attributes = 1;
  for (std::int64_t t = 0; t < 200; ++t) {
    q.x.push_back((std::int64_t{1} << 27) - 200 + t);
    q.y.push_back(2 * q.x.back() - 268435000);
  }
  const IntegerAggregates a = plain_aggregates(q, true);
  REQUIRE(a.xtx[3] > (std::int64_t{1} << 53));
  REQUIRE_INVALID_ARGUMENT(
      solve_normal_equations(std::vector<double>(a.xtx.begin(), a.xtx.end()),
                             std::vector<double>(a.xty.begin(), a.xty.end()), 2),
      "singular (column 1");
  CHECK(integer_dependent_column(a, true) == 2);
  CHECK(solve_integer_normal_equations(a, true) == std::vector<double>{-268435000.0, 2.0});
  // Without the intercept: the same exact integers, no elimination.
  const IntegerAggregates b = plain_aggregates(q, false);
  CHECK(integer_dependent_column(b, false) == 1);
  CHECK(solve_integer_normal_equations(b, false)[0] ==
        Approx(static_cast<double>(b.xty[0]) / static_cast<double>(b.xtx[0])).epsilon(1e-15));
  // A constant column beside the intercept, and a repeated one, are dependent; a singular
  // system names the column as the double solver does.
  QuantizedData c;
  c.rows = 4;
  c.attributes = 3;
  c.x = {5, 1, 1, 5, 2, 2, 5, 4, 4, 5, 7, 7};
  c.y = {1, 2, 3, 4};
  CHECK(integer_dependent_column(plain_aggregates(c, true), true) == 1);
  c.x = {1, 5, 1, 2, 6, 2, 4, 1, 4, 7, 3, 7};
  CHECK(integer_dependent_column(plain_aggregates(c, true), true) == 3);
  CHECK(integer_dependent_column(plain_aggregates(c, false), false) == 2);
  REQUIRE_INVALID_ARGUMENT(solve_integer_normal_equations(plain_aggregates(c, true), true),
                           "singular (column 3 is a combination");
}

TEST_CASE("qr_dependent_column names the column where least_squares_qr fails", "[regression]") {
  // Columns 1, a, 3a: the third of [1 | X] (index 2); without the intercept, the second.
  const std::vector<double> x = {0.1, 0.3, 0.2, 0.6, 0.4, 1.2, 0.7, 2.1};
  CHECK(qr_dependent_column(x, 4, 2, true) == 2);
  CHECK(qr_dependent_column(x, 4, 2, false) == 1);
  REQUIRE_INVALID_ARGUMENT(least_squares_qr(x, {1, 2, 3, 5}, 4, 2, true),
                           "rank deficient at column 2");
  const std::vector<double> y = {0.1, 0.3, 0.2, 0.5, 0.4, 1.2, 0.7, 2.0};
  CHECK(qr_dependent_column(y, 4, 2, true) == 3);
}
