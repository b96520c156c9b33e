// Value text of the torusgate CLI: parsing, range checks and printing (values.hpp).
#include "values.hpp"

#include <algorithm>
#include <cstdio>

#include "printable.hpp"

namespace torusgate::cli {
namespace {

// The smallest and largest value of a type of width 1..64, as 128-bit integers.
Int128 type_min(circuits::IntType type) {
  return type.is_signed ? -(Int128{1} << (type.width - 1)) : 0;
}
Int128 type_max(circuits::IntType type) {
  return type.is_signed ? (Int128{1} << (type.width - 1)) - 1 : (Int128{1} << type.width) - 1;
}

std::string unsigned_decimal(Bits128 v) {
  if (v == 0) return "0";
  std::string digits;
  for (; v != 0; v /= 10) digits += static_cast<char>('0' + static_cast<int>(v % 10));
  std::reverse(digits.begin(), digits.end());
  return digits;
}

// "-" and the decimal digits of `magnitude` (appended: GCC 12 warns, -Wrestrict, on
// "-" + std::string).
std::string negative_decimal(Bits128 magnitude) {
  std::string text = "-";
  text += unsigned_decimal(magnitude);
  return text;
}

std::string signed_decimal(Int128 v) {
  // -v does not overflow: |v| < 2^127 for every value we print this way (widths up to 64).
  return v < 0 ? negative_decimal(static_cast<Bits128>(-v))
               : unsigned_decimal(static_cast<Bits128>(v));
}

bool is_separator(char c) { return c == ',' || c == ' ' || c == '\t' || c == '\r'; }

}  // namespace

std::string type_name(circuits::IntType type) {
  return std::to_string(type.width) + "-bit " + (type.is_signed ? "signed" : "unsigned");
}

std::string type_range(circuits::IntType type) {
  return signed_decimal(type_min(type)) + ".." + signed_decimal(type_max(type));
}

std::optional<Int128> parse_integer(std::string_view text) {
  bool negative = false;
  if (!text.empty() && (text.front() == '-' || text.front() == '+')) {
    negative = text.front() == '-';
    text.remove_prefix(1);
  }
  unsigned base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) base = 16;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'b' || text[1] == 'B')) base = 2;
  if (base != 10) text.remove_prefix(2);
  if (text.empty()) return std::nullopt;
  constexpr Bits128 limit = Bits128{1} << 127;
  Bits128 magnitude = 0;
  for (char c : text) {
    unsigned digit = 0;
    if (c >= '0' && c <= '9')
      digit = static_cast<unsigned>(c - '0');
    else if (c >= 'a' && c <= 'f')
      digit = static_cast<unsigned>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      digit = static_cast<unsigned>(c - 'A' + 10);
    else
      return std::nullopt;
    if (digit >= base) return std::nullopt;
    if (magnitude > (limit - 1 - digit) / base) return std::nullopt;  // would reach 2^127
    magnitude = magnitude * base + digit;
  }
  const auto value = static_cast<Int128>(magnitude);
  return negative ? -value : value;
}

ValueTable parse_values(std::string_view text, circuits::IntType type,
                        std::string_view negative_hint) {
  if (type.width < 1 || type.width > 64) {
    throw ValueError(0, "values are 1- to 64-bit integers, not " + type_name(type));
  }
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // a UTF-8 byte order mark
  ValueTable table;
  std::size_t line = 1, row_length = 0;
  const auto values_text = [](std::uint64_t count) {
    return std::to_string(count) + (count == 1 ? " value" : " values");
  };
  const auto end_row = [&] {
    if (row_length == 0) return;
    if (table.shape.rows == 0) {
      table.shape.cols = row_length;
    } else if (row_length != table.shape.cols) {
      throw ValueError(line, "row " + std::to_string(table.shape.rows + 1) + " has " +
                                 values_text(row_length) + " but row 1 has " +
                                 std::to_string(table.shape.cols) +
                                 "; every row of a matrix needs the same number of values");
    }
    ++table.shape.rows;
    row_length = 0;
  };
  // A comma stands between two values of a row: one at a row's start or end, or a second
  // one before the next value, leaves a value out.
  bool comma_pending = false;
  const auto missing_value = [&] {
    return ValueError(line, "row " + std::to_string(table.shape.rows + 1) +
                                " misses a value: a comma with no value " +
                                (row_length == 0 ? "before it" : "after it"));
  };
  std::size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '\n' || c == ';') {
      if (comma_pending) throw missing_value();
      end_row();
      if (c == '\n') ++line;
      ++i;
    } else if (c == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (c == ',') {
      if (comma_pending || row_length == 0) throw missing_value();
      comma_pending = true;
      ++i;
    } else if (is_separator(c)) {
      ++i;
    } else {
      std::size_t j = i;
      while (j < text.size() && !is_separator(text[j]) && text[j] != '\n' && text[j] != ';' &&
             text[j] != '#') {
        ++j;
      }
      const std::string_view token = text.substr(i, j - i);
      const std::optional<Int128> value = parse_integer(token);
      if (!value) {
        throw ValueError(line, "'" + apps::printable(token) +
                                   "' is not an integer (decimal, 0x hex "
                                   "or 0b binary, with an optional sign)");
      }
      if (*value < type_min(type) || *value > type_max(type)) {
        std::string hint;
        if (!type.is_signed && *value < 0) hint = negative_hint;
        throw ValueError(line, "value " + apps::printable(token) + " does not fit " +
                                   type_name(type) + " (" + type_range(type) + ")" + hint);
      }
      table.values.push_back(static_cast<std::uint64_t>(*value));
      ++row_length;
      comma_pending = false;
      i = j;
    }
  }
  if (comma_pending) throw missing_value();
  end_row();
  if (table.values.empty()) throw ValueError(0, "no values");
  return table;
}

std::optional<Shape> parse_shape(std::string_view text) {
  std::string compact;
  for (char c : text) {
    if (c != ' ') compact += c;
  }
  const std::size_t split = compact.find_first_of(",xX");
  if (split == std::string::npos) return std::nullopt;
  const auto part = [](std::string_view s) -> std::optional<std::uint64_t> {
    if (s.empty() || s.size() > 12 ||
        !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return std::nullopt;
    }
    const std::uint64_t v = std::stoull(std::string(s));
    if (v == 0) return std::nullopt;
    return v;
  };
  const auto rows = part(std::string_view(compact).substr(0, split));
  const auto cols = part(std::string_view(compact).substr(split + 1));
  if (!rows || !cols) return std::nullopt;
  return Shape{*rows, *cols};
}

std::vector<Bits128> values_from_bit_planes(std::span<const std::uint8_t> bits,
                                            circuits::IntType type, std::size_t lanes) {
  std::vector<Bits128> values(lanes, 0);
  for (std::size_t j = 0; j < type.width; ++j) {
    for (std::size_t e = 0; e < lanes; ++e) {
      values[e] |= static_cast<Bits128>(bits[j * lanes + e] & 1) << j;
    }
  }
  return values;
}

std::string format_value(Bits128 bits, circuits::IntType type) {
  if (type.width < 128) bits &= (Bits128{1} << type.width) - 1;
  const Bits128 sign = Bits128{1} << (type.width - 1);
  if (type.is_signed && (bits & sign) != 0) {
    // Two's complement magnitude within the width: 2^width - bits (2^127 at most).
    const Bits128 magnitude = type.width < 128 ? (Bits128{1} << type.width) - bits : -bits;
    return negative_decimal(magnitude);
  }
  return unsigned_decimal(bits);
}

std::string format_values(std::span<const Bits128> values, circuits::IntType type, Shape shape) {
  std::vector<std::string> cells;
  cells.reserve(values.size());
  std::size_t column_width = 0;
  for (Bits128 v : values) {
    cells.push_back(format_value(v, type));
    column_width = std::max(column_width, cells.back().size());
  }
  if (shape.rows <= 1) column_width = 0;
  std::string text;
  for (std::size_t r = 0; r < shape.rows; ++r) {
    for (std::size_t c = 0; c < shape.cols; ++c) {
      const std::string& cell = cells[r * shape.cols + c];
      if (c > 0) text += ' ';
      text.append(column_width > cell.size() ? column_width - cell.size() : 0, ' ');
      text += cell;
    }
    text += '\n';
  }
  return text;
}

}  // namespace torusgate::cli
