// Regression data: CSV parsing, synthetic datasets, fixed-point quantization, exact
// plaintext aggregates, and the plaintext solvers (Cholesky on the normal equations,
// Householder QR on the design matrix: G. H. Golub and C. F. Van Loan, "Matrix
// Computations", 4th ed., algorithms 4.2.1 and 5.2.1).
#include "regression_data.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <istream>
#include <random>
#include <set>
#include <sstream>
#include <tuple>

#include "printable.hpp"

#include "torusgate/circuits/regression.hpp"
#include "torusgate/core/error.hpp"

namespace torusgate::apps {

namespace {

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  const auto last = s.find_last_not_of(" \t");
  return s.substr(first, last - first + 1);
}

// The cells of one CSV line: commas separate; a cell may be double-quoted ("" is a quote).
std::vector<std::string> split_cells(const std::string& line, const std::string& where) {
  std::vector<std::string> cells;
  std::string cell;
  bool quoted = false, was_quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (quoted) {
      if (ch == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cell += '"';
        ++i;
      } else if (ch == '"') {
        quoted = false;
      } else {
        cell += ch;
      }
    } else if (ch == '"' && trim(cell).empty()) {
      quoted = was_quoted = true;
      cell.clear();
    } else if (ch == ',') {
      cells.push_back(was_quoted ? cell : trim(cell));
      cell.clear();
      was_quoted = false;
    } else {
      cell += ch;
    }
  }
  if (quoted) throw InvalidArgument(where + ": a quoted cell is not closed");
  cells.push_back(was_quoted ? cell : trim(cell));
  return cells;
}

std::string column_list(const std::vector<std::string>& names) {
  std::string out;
  constexpr std::size_t most = 20;  // a binary file's "header" can hold thousands
  for (std::size_t i = 0; i < names.size() && i < most; ++i)
    out += (out.empty() ? "" : ", ") + ("'" + printable(names[i]) + "'");
  if (names.size() > most) out += ", ... (" + std::to_string(names.size()) + " columns)";
  return out;
}

}  // namespace

Dataset parse_csv(std::istream& in, const std::string& target, const std::string& source) {
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  EXPECTS(!in.bad(), source + ": read error");
  while (!lines.empty() && trim(lines.back()).empty()) lines.pop_back();
  EXPECTS(!lines.empty(), source + ": the file is empty (expected a header row of column "
                                   "names, then rows of numbers)");
  // A UTF-8 byte order mark before the header is not part of the first name.
  if (lines[0].rfind("\xEF\xBB\xBF", 0) == 0) lines[0].erase(0, 3);

  const std::vector<std::string> header = split_cells(lines[0], source + ": line 1 (header)");
  std::set<std::string> seen;
  for (std::size_t j = 0; j < header.size(); ++j) {
    EXPECTS(!header[j].empty(), source + ": line 1 (header): column " + std::to_string(j + 1) +
                                    " has no name");
    EXPECTS(seen.insert(header[j]).second,
            source + ": line 1 (header): column name '" + printable(header[j]) +
                "' appears twice");
  }
  const auto t = std::find(header.begin(), header.end(), target);
  EXPECTS(t != header.end(), source + ": no column named '" + printable(target) +
                                 "' (the target); the columns are " + column_list(header));
  EXPECTS(header.size() >= 2, source + ": the only column is the target '" + printable(target) +
                                  "'; there are no features");
  EXPECTS(lines.size() >= 2, source + ": a header but no data rows");
  const std::size_t target_col = static_cast<std::size_t>(t - header.begin());

  Dataset data;
  data.target_name = target;
  data.source = source;
  for (std::size_t j = 0; j < header.size(); ++j)
    if (j != target_col) data.feature_names.push_back(header[j]);
  for (std::size_t r = 1; r < lines.size(); ++r) {
    const std::string where = source + ": line " + std::to_string(r + 1);
    EXPECTS(!trim(lines[r]).empty(), where + " is empty");
    const std::vector<std::string> cells = split_cells(lines[r], where);
    EXPECTS(cells.size() == header.size(), where + " has " + std::to_string(cells.size()) +
                                               " cells but the header has " +
                                               std::to_string(header.size()) + " columns");
    for (std::size_t j = 0; j < cells.size(); ++j) {
      const std::string cell = trim(cells[j]);
      const std::string at = where + ", column '" + printable(header[j]) + "'";
      EXPECTS(!cell.empty(), at + ": the cell is empty");
      double v = 0;
      const char* end = cell.data() + cell.size();
      // One leading + (from_chars takes none), never before another sign: "+-1" is no number.
      const bool plus = cell[0] == '+' && cell.size() > 1 && cell[1] != '-' && cell[1] != '+';
      const char* begin = cell.data() + (plus ? 1 : 0);
      auto [ptr, ec] = std::from_chars(begin, end, v);
      if (ec == std::errc::result_out_of_range && ptr == end) {
        // Too large, or so small that it underflows: from_chars says the same for both. A
        // value below the smallest double is 0 (or a subnormal), as strtod gives it.
        const std::string text(begin, end);
        const double parsed = std::strtod(text.c_str(), nullptr);
        if (std::isfinite(parsed) && std::abs(parsed) < 1.0) {
          v = parsed;
          ec = std::errc();
        }
      }
      EXPECTS(ec != std::errc::result_out_of_range,
              at + ": '" + printable(cell) + "' is out of the range of a double");
      EXPECTS(ec == std::errc() && ptr == end, at + ": '" + printable(cell) + "' is not a number");
      EXPECTS(std::isfinite(v), at + ": '" + printable(cell) + "' is not a finite number");
      (j == target_col ? data.y : data.x).push_back(v);
    }
    ++data.rows;
  }
  return data;
}

Dataset read_csv(const std::filesystem::path& path, const std::string& target) {
  std::error_code ec;
  EXPECTS(std::filesystem::is_regular_file(path, ec),
          path.string() + ": " + (std::filesystem::exists(path, ec) ? "not a regular file"
                                                                    : "no such file"));
  std::ifstream in(path, std::ios::binary);
  EXPECTS(in.good(), path.string() + ": cannot open for reading");
  return parse_csv(in, target, path.string());
}

const char* feature_kind_name(FeatureKind kind) {
  return kind == FeatureKind::Binary ? "binary" : "numeric";
}

FeatureKind parse_feature_kind(const std::string& name) {
  if (name == "numeric") return FeatureKind::Numeric;
  if (name == "binary") return FeatureKind::Binary;
  throw InvalidArgument("unknown feature kind '" + name + "' (numeric or binary)");
}

std::vector<DatasetShape> published_shapes() { return {{200, 10}, {200, 20}, {300, 10}, {300, 20}}; }

DatasetShape parse_shape(const std::string& text) {
  const auto x = text.find('x');
  const auto number = [&](const std::string& part) -> std::size_t {
    std::size_t v = 0;
    const auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    EXPECTS(!part.empty() && ec == std::errc() && ptr == part.data() + part.size() && v >= 1 &&
                v <= 100000,
            "dataset shape '" + text + "': expected ROWSxATTRIBUTES such as 200x10");
    return v;
  };
  EXPECTS(x != std::string::npos,
          "dataset shape '" + text + "': expected ROWSxATTRIBUTES such as 200x10");
  return {number(text.substr(0, x)), number(text.substr(x + 1))};
}

std::string to_string(DatasetShape shape) {
  return std::to_string(shape.rows) + "x" + std::to_string(shape.attributes);
}

Dataset synthetic_dataset(DatasetShape shape, FeatureKind kind, std::uint64_t seed) {
  EXPECTS(shape.rows >= 1 && shape.attributes >= 1, "synthetic_dataset: empty shape");
  // The data are public test data, not key material: a seeded generator is right here.
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::normal_distribution<double> noise(0.0, 0.1);
  Dataset data;
  data.rows = shape.rows;
  data.target_name.push_back('y');  // (not = "y": GCC 12 warns falsely, -Wrestrict)
  for (std::size_t j = 0; j < shape.attributes; ++j)
    data.feature_names.push_back(std::string(1, 'x').append(std::to_string(j + 1)));
  std::vector<double> beta(shape.attributes);
  for (double& b : beta) b = unit(gen);
  data.x.resize(shape.rows * shape.attributes);
  data.y.resize(shape.rows);
  for (std::size_t r = 0; r < shape.rows; ++r) {
    double dot = 0;
    for (std::size_t j = 0; j < shape.attributes; ++j) {
      double& v = data.x[r * shape.attributes + j];
      v = kind == FeatureKind::Binary ? static_cast<double>(gen() & 1) : unit(gen);
      dot += v * beta[j];
    }
    data.y[r] = kind == FeatureKind::Binary ? dot : 0.5 + dot + noise(gen);
  }
  if (kind == FeatureKind::Binary) {
    std::vector<double> sorted = data.y;
    std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
    const double median = sorted[sorted.size() / 2];
    for (double& v : data.y) v = v > median ? 1.0 : 0.0;
  } else {
    double largest = 0;
    for (double v : data.y) largest = std::max(largest, std::abs(v));
    for (double& v : data.y) v /= largest * (1 + 1e-9);
  }
  return data;
}

bool aggregates_fit(circuits::IntType x, circuits::IntType y, std::size_t rows) {
  try {
    (void)circuits::xtx_type(x, rows);
    (void)circuits::xty_type(x, y, rows);
    return true;
  } catch (const InvalidArgument&) {
    return false;
  }
}

bool fits_fixed_point(double v, std::size_t width, int f) {
  const double q = std::nearbyint(std::ldexp(v, f));
  const double limit = std::ldexp(1.0, static_cast<int>(width) - 1);
  return q >= -limit && q <= limit - 1;
}

namespace {

bool all_binary(const std::vector<double>& values) {
  return std::all_of(values.begin(), values.end(), [](double v) { return v == 0.0 || v == 1.0; });
}

// The most fraction bits (0..width-1) at which every value fits; throws when none does.
int auto_fraction_bits(const std::vector<double>& values, std::size_t width, std::size_t rows,
                       const std::string& what) {
  for (int f = static_cast<int>(width) - 1; f >= 0; --f)
    if (std::all_of(values.begin(), values.end(),
                    [&](double v) { return fits_fixed_point(v, width, f); }))
      return f;
  double largest = 0;
  for (double v : values) {
    EXPECTS(std::isfinite(v), what + ": a value is not a finite number");
    largest = std::max(largest, std::abs(v));
  }
  // The width it needs (a value of 1e12 needs 41 bits): past the 32 bits of --width, only
  // --standardize helps. A value of magnitude 2^e or more needs e + 1 bits at least.
  std::size_t needed = std::max<std::size_t>(width + 1, std::ilogb(largest) + 1u);
  while (!std::all_of(values.begin(), values.end(),
                      [&](double v) { return fits_fixed_point(v, needed, 0); }))
    ++needed;
  std::ostringstream text;
  text << what << ": the value " << largest << " does not fit a " << width
       << "-bit signed integer even with 0 fraction bits (it needs " << needed << " bits";
  // A width the next check (the sums of products in 64 bits) would refuse is not offered.
  const circuits::IntType needed_type{needed, true};
  if (needed <= 32 && aggregates_fit(needed_type, needed_type, rows)) {
    text << "); use --width " << needed << ", or ";
  } else if (needed <= 32) {
    text << ", and the sums of " << rows << " rows of " << needed
         << "-bit products would need more than 64 bits); use ";
  } else {
    text << "); use ";
  }
  text << "--standardize to scale each column to [-1, 1]";
  throw InvalidArgument(text.str());
}

std::string fixed_range(std::size_t width, int f) {
  std::ostringstream out;
  out << -std::ldexp(1.0, static_cast<int>(width) - 1 - f) << " .. "
      << std::ldexp(std::ldexp(1.0, static_cast<int>(width) - 1) - 1, -f);
  return out.str();
}

// Where data row `row` (0-based) is: "FILE: line L" for a CSV file (its header is line 1),
// else "row R".
std::string row_place(const std::string& source, std::size_t row) {
  return source.empty() ? "row " + std::to_string(row + 1)
                        : source + ": line " + std::to_string(row + 2);
}

// Quantizes a row-major table with `cols` columns named `names` (y: one column).
std::vector<std::int64_t> quantize_numeric(const std::vector<double>& values, std::size_t cols,
                                           const std::vector<std::string>& names,
                                           std::size_t width, int f, const std::string& source) {
  std::vector<std::int64_t> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double v = values[i];
    if (!fits_fixed_point(v, width, f)) {
      std::ostringstream msg;
      msg << row_place(source, i / cols) << ", column '" << printable(names[i % cols])
          << "': the value " << v << " does not fit " << width << "-bit signed fixed point with " << f
          << " fraction bits (range " << fixed_range(width, f)
          << "); use fewer --frac-bits or a wider --width";
      throw InvalidArgument(msg.str());
    }
    out[i] = static_cast<std::int64_t>(std::nearbyint(std::ldexp(v, f)));
  }
  return out;
}

std::vector<std::int64_t> quantize_binary(const std::vector<double>& values, std::size_t cols,
                                          const std::vector<std::string>& names,
                                          const std::string& source) {
  std::vector<std::int64_t> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double v = values[i];
    if (v != 0.0 && v != 1.0) {
      std::ostringstream msg;
      msg << row_place(source, i / cols) << ", column '" << printable(names[i % cols])
          << "': the value " << v << " is not 0 or 1 (binary features); use --kind numeric";
      throw InvalidArgument(msg.str());
    }
    out[i] = static_cast<std::int64_t>(v);
  }
  return out;
}

}  // namespace

QuantizedData quantize(const Dataset& data, FeatureKind kind, std::size_t width,
                       std::optional<int> fraction_bits) {
  EXPECTS(width >= 2 && width <= 32, "quantize: width " + std::to_string(width) +
                                         " is outside 2..32 bits");
  EXPECTS(!fraction_bits || (*fraction_bits >= 0 && *fraction_bits < static_cast<int>(width)),
          "quantize: " + std::to_string(fraction_bits.value_or(0)) +
              " fraction bits for a " + std::to_string(width) + "-bit width (0.." +
              std::to_string(width - 1) + ")");
  const std::size_t d = data.attributes();
  EXPECTS(data.rows >= 1 && d >= 1 && data.x.size() == data.rows * d && data.y.size() == data.rows,
          "quantize: the dataset is empty or inconsistent");
  QuantizedData q;
  q.rows = data.rows;
  q.attributes = d;
  const std::vector<std::string> target{data.target_name};
  const std::string in = data.source.empty() ? "" : data.source + ": ";  // for messages
  if (kind == FeatureKind::Binary) {
    q.x_type = {1, false};
    q.x = quantize_binary(data.x, d, data.feature_names, data.source);
  } else {
    q.x_type = {width, true};
    q.x_fraction_bits = fraction_bits ? *fraction_bits
                                      : auto_fraction_bits(data.x, width, data.rows,
                                                           in + "the features");
    q.x = quantize_numeric(data.x, d, data.feature_names, width, q.x_fraction_bits, data.source);
  }
  if (kind == FeatureKind::Binary && all_binary(data.y)) {
    q.y_type = {1, false};
    q.y = quantize_binary(data.y, 1, target, data.source);
  } else {
    q.y_type = {width, true};
    q.y_fraction_bits = fraction_bits ? *fraction_bits
                                      : auto_fraction_bits(data.y, width, data.rows,
                                                           in + "the target");
    q.y = quantize_numeric(data.y, 1, target, width, q.y_fraction_bits, data.source);
  }
  return q;
}

Standardization standardize(Dataset& data, bool center) {
  const std::size_t n = data.rows, d = data.attributes();
  EXPECTS(n >= 1 && data.x.size() == n * d && data.y.size() == n,
          "standardize: the dataset is empty or inconsistent");
  Standardization s;
  s.centered = center;
  // Scales the values v[first + k * stride], k < n, of column `name`; returns {mean, scale}.
  const auto scale_column = [&](std::vector<double>& v, std::size_t first, std::size_t stride,
                                const std::string& name) {
    double mean = 0;
    if (center) {  // a running mean: a plain sum of values near the largest double overflows
      for (std::size_t k = 0; k < n; ++k) {
        mean += (v[first + k * stride] - mean) / static_cast<double>(k + 1);
      }
    }
    double largest = 0, magnitude = 0;
    for (std::size_t k = 0; k < n; ++k) {
      largest = std::max(largest, std::abs(v[first + k * stride] - mean));
      magnitude = std::max(magnitude, std::abs(v[first + k * stride]));
    }
    // A centered column that strays from its mean by no more than 1e-12 of its magnitude (0.3
    // beside 0.1 + 0.2) is constant but for rounding, as the QR of the unscaled data finds
    // it: it becomes 0, not rounding noise stretched to [-1, 1).
    if (center && largest <= 1e-12 * magnitude) largest = 0;
    // (the scale's margin overflows too for a largest magnitude within 1e-9 of the largest
    // double: an infinite scale would make the column 0, "constant")
    const double scale = largest > 0 ? largest * (1 + 1e-9) : 1.0;
    EXPECTS(std::isfinite(mean) && std::isfinite(scale),
            "--standardize: column '" + printable(name) +
                "' spans more than a double holds (its values minus their mean overflow)");
    for (std::size_t k = 0; k < n; ++k) {
      v[first + k * stride] = largest > 0 ? (v[first + k * stride] - mean) / scale : 0.0;
    }
    return std::pair{mean, scale};
  };
  for (std::size_t j = 0; j < d; ++j) {
    const auto [mean, scale] = scale_column(data.x, j, d, data.feature_names[j]);
    s.x_mean.push_back(mean);
    s.x_scale.push_back(scale);
  }
  std::tie(s.y_mean, s.y_scale) = scale_column(data.y, 0, 1, data.target_name);
  return s;
}

std::vector<double> to_original_units(const Standardization& s, const std::vector<double>& beta,
                                      bool intercept) {
  const std::size_t d = s.x_scale.size(), first = intercept ? 1 : 0;
  EXPECTS(beta.size() == d + first, "to_original_units: " + std::to_string(beta.size()) +
                                        " coefficients for " + std::to_string(d) + " features");
  EXPECTS(intercept || !s.centered, "to_original_units: centered data need the intercept");
  // y = y_mean + y_scale (b0 + sum_j b_j (x_j - mean_j) / scale_j).
  std::vector<double> out(beta.size());
  double b0 = intercept ? s.y_mean + s.y_scale * beta[0] : 0.0;
  for (std::size_t j = 0; j < d; ++j) {
    out[first + j] = s.y_scale * beta[first + j] / s.x_scale[j];
    b0 -= out[first + j] * s.x_mean[j];
  }
  if (intercept) out[0] = b0;
  return out;
}

IntegerAggregates plain_aggregates(const QuantizedData& data, bool intercept) {
  const std::size_t n = data.rows, d = data.attributes, p = d + (intercept ? 1 : 0);
  // Entry k of row t of A = [1 | X].
  const auto a = [&](std::size_t t, std::size_t k) -> __int128 {
    if (intercept) return k == 0 ? 1 : data.x[t * d + k - 1];
    return data.x[t * d + k];
  };
  const auto narrow = [](__int128 v) {
    EXPECTS(v >= INT64_MIN && v <= INT64_MAX, "plain_aggregates: an aggregate exceeds 64 bits");
    return static_cast<std::int64_t>(v);
  };
  IntegerAggregates out;
  out.size = p;
  out.xtx.resize(p * p);
  out.xty.resize(p);
  for (std::size_t i = 0; i < p; ++i) {
    for (std::size_t j = 0; j < p; ++j) {
      __int128 s = 0;
      for (std::size_t t = 0; t < n; ++t) s += a(t, i) * a(t, j);
      out.xtx[i * p + j] = narrow(s);
    }
    __int128 s = 0;
    for (std::size_t t = 0; t < n; ++t) s += a(t, i) * data.y[t];
    out.xty[i] = narrow(s);
  }
  return out;
}

namespace {

// The Cholesky factor L (row-major, lower) of the p x p matrix xtx = L L^T, in long double, up
// to the first column that is a combination of the columns before it: that column in
// `dependent`, else p. The test is relative to the column's own diagonal entry (its pivot not
// above 1e-12 of it: sin^2 of its angle to the span of the columns before it), so scaling a
// column changes nothing; a zero column is dependent. (Integer aggregates have diagonal entries
// of 0 or at least 1; an absolute floor of 1 refused any column of doubles whose squared sum
// is below 1e-12.)
std::vector<long double> cholesky(const std::vector<long double>& xtx, std::size_t p,
                                  std::size_t& dependent) {
  std::vector<long double> l(p * p, 0.0L);
  for (std::size_t j = 0; j < p; ++j) {
    long double diag = xtx[j * p + j];
    for (std::size_t k = 0; k < j; ++k) diag -= l[j * p + k] * l[j * p + k];
    if (!(diag > 1e-12L * std::abs(xtx[j * p + j]))) {
      dependent = j;
      return l;
    }
    l[j * p + j] = std::sqrt(diag);
    for (std::size_t i = j + 1; i < p; ++i) {
      long double v = xtx[i * p + j];
      for (std::size_t k = 0; k < j; ++k) v -= l[i * p + k] * l[j * p + k];
      l[i * p + j] = v / l[j * p + j];
    }
  }
  dependent = p;
  return l;
}

// Solves xtx beta = xty (p x p, positive definite) by Cholesky; `offset` is added to the
// column that a singular system names (its place in the caller's numbering).
std::vector<long double> cholesky_solve(const std::vector<long double>& xtx,
                                        const std::vector<long double>& xty, std::size_t p,
                                        std::size_t offset) {
  // Cholesky: xtx = L L^T, then L z = xty and L^T beta = z.
  std::size_t dependent = p;
  const std::vector<long double> l = cholesky(xtx, p, dependent);
  EXPECTS(dependent == p,
          "solve_normal_equations: X^T X is singular (column " +
              std::to_string(dependent + offset) +
              " is a combination of the others: a constant or repeated feature, or fewer "
              "rows than coefficients)");
  std::vector<long double> z(p);
  for (std::size_t i = 0; i < p; ++i) {
    long double v = xty[i];
    for (std::size_t k = 0; k < i; ++k) v -= l[i * p + k] * z[k];
    z[i] = v / l[i * p + i];
  }
  std::vector<long double> beta(p);
  for (std::size_t i = p; i-- > 0;) {
    long double v = z[i];
    for (std::size_t k = i + 1; k < p; ++k) v -= l[k * p + i] * beta[k];
    beta[i] = v / l[i * p + i];
  }
  return beta;
}

// The normal equations of integer aggregates in long double (exact up to 64-bit integers),
// with the ones column eliminated in exact integer arithmetic when there is one.
struct ReducedSystem {
  std::size_t size = 0;
  std::vector<long double> xtx, xty;
};

ReducedSystem reduce(const IntegerAggregates& a, bool intercept) {
  const std::size_t p = a.size;
  EXPECTS(p >= (intercept ? 2u : 1u) && a.xtx.size() == p * p && a.xty.size() == p,
          "solve_normal_equations: the aggregates' sizes do not match");
  ReducedSystem r;
  if (!intercept) {
    r.size = p;
    r.xtx.assign(a.xtx.begin(), a.xtx.end());
    r.xty.assign(a.xty.begin(), a.xty.end());
    return r;
  }
  const __int128 n = a.xtx[0];
  EXPECTS(n >= 1, std::string("solve_normal_equations: the aggregates have no rows (entry ")
                      .append("(0, 0) is ")
                      .append(std::to_string(a.xtx[0]))
                      .append(")"));
  // n a - b c in 128 bits; beyond them (far past any data that fit memory) an error.
  const auto centered = [&](std::int64_t a_, std::int64_t b, std::int64_t c) {
    __int128 nb, bc, out;
    EXPECTS(!__builtin_mul_overflow(n, static_cast<__int128>(a_), &nb) &&
                !__builtin_mul_overflow(static_cast<__int128>(b), static_cast<__int128>(c),
                                        &bc) &&
                !__builtin_sub_overflow(nb, bc, &out),
            "solve_normal_equations: the centered aggregates exceed 128 bits");
    return static_cast<long double>(out);
  };
  const std::size_t d = p - 1;
  r.size = d;
  r.xtx.resize(d * d);
  r.xty.resize(d);
  for (std::size_t i = 0; i < d; ++i) {
    for (std::size_t j = 0; j < d; ++j)
      r.xtx[i * d + j] = centered(a.xtx[(i + 1) * p + j + 1], a.xtx[i + 1], a.xtx[j + 1]);
    r.xty[i] = centered(a.xty[i + 1], a.xtx[i + 1], a.xty[0]);
  }
  return r;
}

}  // namespace

std::size_t dependent_column(const std::vector<double>& xtx, std::size_t p) {
  EXPECTS(p >= 1 && xtx.size() == p * p, "dependent_column: sizes do not match");
  std::size_t dependent = p;
  (void)cholesky(std::vector<long double>(xtx.begin(), xtx.end()), p, dependent);
  return dependent;
}

std::size_t integer_dependent_column(const IntegerAggregates& a, bool intercept) {
  const ReducedSystem r = reduce(a, intercept);
  std::size_t dependent = r.size;
  (void)cholesky(r.xtx, r.size, dependent);
  return dependent + (intercept ? 1 : 0);  // the ones column (n >= 1) is independent
}

std::vector<double> solve_normal_equations(const std::vector<double>& xtx,
                                           const std::vector<double>& xty, std::size_t p) {
  EXPECTS(p >= 1 && xtx.size() == p * p && xty.size() == p,
          "solve_normal_equations: sizes do not match");
  const std::vector<long double> beta =
      cholesky_solve(std::vector<long double>(xtx.begin(), xtx.end()),
                     std::vector<long double>(xty.begin(), xty.end()), p, 0);
  return std::vector<double>(beta.begin(), beta.end());
}

std::vector<double> solve_integer_normal_equations(const IntegerAggregates& a,
                                                   bool intercept) {
  const ReducedSystem r = reduce(a, intercept);
  const std::vector<long double> slopes =
      cholesky_solve(r.xtx, r.xty, r.size, intercept ? 1 : 0);
  if (!intercept) return std::vector<double>(slopes.begin(), slopes.end());
  // beta_0 = (sum y - s . slopes) / n.
  const std::size_t p = a.size;
  long double b0 = a.xty[0];
  for (std::size_t j = 0; j + 1 < p; ++j) b0 -= static_cast<long double>(a.xtx[j + 1]) * slopes[j];
  std::vector<double> beta{static_cast<double>(b0 / static_cast<long double>(a.xtx[0]))};
  for (long double b : slopes) beta.push_back(static_cast<double>(b));
  return beta;
}

namespace {

// Householder QR of the design matrix: the fit, or, where the design matrix is rank
// deficient, the first such column in `dependent` (else p) and no fit.
std::vector<double> householder_fit(const std::vector<double>& x, const std::vector<double>& y,
                                    std::size_t n, std::size_t d, bool intercept,
                                    std::size_t& dependent) {
  const std::size_t p = d + (intercept ? 1 : 0);
  EXPECTS(x.size() == n * d && y.size() == n, "least_squares_qr: sizes do not match");
  EXPECTS(n >= p, "least_squares_qr: " + std::to_string(n) + " rows cannot determine " +
                      std::to_string(p) + " coefficients");
  dependent = p;
  // Column-major design matrix A = [1 | X] and right-hand side, reduced in place.
  std::vector<double> a(n * p), b = y;
  for (std::size_t t = 0; t < n; ++t)
    for (std::size_t k = 0; k < p; ++k)
      a[k * n + t] = intercept ? (k == 0 ? 1.0 : x[t * d + k - 1]) : x[t * d + k];
  // Each column (and b) divided by a power of two near its largest magnitude: exact, and the
  // QR of the scaled columns is the scaled QR (every step is linear in each column), but no
  // square of a value near 1e-300 or 1e300 underflows or overflows. beta_k is scaled back.
  const auto exponent_of = [](const double* v, std::size_t count) {
    double largest = 0;
    for (std::size_t t = 0; t < count; ++t) largest = std::max(largest, std::abs(v[t]));
    return largest > 0 ? std::ilogb(largest) : 0;
  };
  std::vector<int> exponent(p);
  for (std::size_t k = 0; k < p; ++k) {
    exponent[k] = exponent_of(&a[k * n], n);
    for (std::size_t t = 0; t < n; ++t) a[k * n + t] = std::ldexp(a[k * n + t], -exponent[k]);
  }
  const int b_exponent = exponent_of(b.data(), n);
  for (double& v : b) v = std::ldexp(v, -b_exponent);
  // A column is dependent where what the reflections leave of it is not above 1e-12 sqrt(n)
  // of its own norm (the sine of its angle to the span of the columns before it): relative to
  // the column itself, so a column of 1e-12 beside one of 1e6 is as independent as at 1.
  std::vector<double> column_norm(p);
  for (std::size_t k = 0; k < p; ++k) {
    double sum = 0;
    for (std::size_t t = 0; t < n; ++t) sum += a[k * n + t] * a[k * n + t];
    column_norm[k] = std::sqrt(sum);
  }
  for (std::size_t k = 0; k < p; ++k) {
    double* col = &a[k * n];
    double norm = 0;
    for (std::size_t t = k; t < n; ++t) norm += col[t] * col[t];
    norm = std::sqrt(norm);
    if (!(norm > 1e-12 * std::sqrt(static_cast<double>(n)) * column_norm[k])) {
      dependent = k;
      return {};
    }
    // Householder vector v = col[k..] + sign(col[k]) norm e_1; H = I - 2 v v^T / v^T v.
    const double alpha = col[k] > 0 ? -norm : norm;
    std::vector<double> v(col + k, col + n);
    v[0] -= alpha;
    double vv = 0;
    for (double e : v) vv += e * e;
    const auto reflect = [&](double* target) {
      double dot = 0;
      for (std::size_t t = k; t < n; ++t) dot += v[t - k] * target[t];
      const double f = 2 * dot / vv;
      for (std::size_t t = k; t < n; ++t) target[t] -= f * v[t - k];
    };
    if (vv > 0) {
      for (std::size_t j = k; j < p; ++j) reflect(&a[j * n]);
      reflect(b.data());
    }
  }
  // Back substitution with R (the upper p x p of a).
  std::vector<double> beta(p);
  for (std::size_t i = p; i-- > 0;) {
    double v = b[i];
    for (std::size_t k = i + 1; k < p; ++k) v -= a[k * n + i] * beta[k];
    beta[i] = v / a[i * n + i];
  }
  for (std::size_t k = 0; k < p; ++k) beta[k] = std::ldexp(beta[k], b_exponent - exponent[k]);
  return beta;
}

}  // namespace

std::vector<double> least_squares_qr(const std::vector<double>& x, const std::vector<double>& y,
                                     std::size_t n, std::size_t d, bool intercept) {
  std::size_t dependent = 0;
  std::vector<double> beta = householder_fit(x, y, n, d, intercept, dependent);
  EXPECTS(!beta.empty(), "least_squares_qr: the design matrix is rank deficient at column " +
                             std::to_string(dependent));
  return beta;
}

std::size_t qr_dependent_column(const std::vector<double>& x, std::size_t n, std::size_t d,
                                bool intercept) {
  std::size_t dependent = 0;
  (void)householder_fit(x, std::vector<double>(n, 0.0), n, d, intercept, dependent);
  return dependent;
}

double rms_error(const std::vector<double>& x, const std::vector<double>& y, std::size_t n,
                 std::size_t d, const std::vector<double>& beta, bool intercept) {
  EXPECTS(beta.size() == d + (intercept ? 1 : 0) && x.size() == n * d && y.size() == n && n > 0,
          "rms_error: sizes do not match");
  double sum = 0;
  for (std::size_t t = 0; t < n; ++t) {
    double pred = intercept ? beta[0] : 0.0;
    for (std::size_t j = 0; j < d; ++j) pred += x[t * d + j] * beta[j + (intercept ? 1 : 0)];
    sum += (pred - y[t]) * (pred - y[t]);
  }
  return std::sqrt(sum / static_cast<double>(n));
}

}  // namespace torusgate::apps
