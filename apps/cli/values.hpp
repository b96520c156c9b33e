// Integers as text for the torusgate CLI: value lists and shapes read from the command line
// or a file, range checks against an integer type, and decrypted values (up to 128 bits)
// printed as rows.
//
// Value text: integers in decimal with an optional sign, or 0x (hexadecimal) / 0b (binary)
// with an optional sign; separated by commas and/or white space; a row ends at ';' or a
// newline; '#' starts a comment that runs to the end of the line. Empty rows are skipped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "torusgate/circuits/netlist.hpp"

namespace torusgate::cli {

// Raw integer bits of values up to 128 bits wide (a GCC/Clang extension, as unsigned
// __int128 and __int128).
__extension__ typedef unsigned __int128 Bits128;
__extension__ typedef __int128 Int128;

// A problem with value text: `line` is the 1-based line it is on (0: not known).
class ValueError : public std::runtime_error {
 public:
  ValueError(std::size_t line, const std::string& message)
      : std::runtime_error(message), line_(line) {}
  std::size_t line() const { return line_; }

 private:
  std::size_t line_;
};

// A matrix shape: rows x cols, row-major.
struct Shape {
  std::uint64_t rows = 0;
  std::uint64_t cols = 0;
  friend bool operator==(const Shape&, const Shape&) = default;
};

// "8-bit signed", "1-bit unsigned".
std::string type_name(circuits::IntType type);
// The values a type holds, as text: "0..255", "-128..127".
std::string type_range(circuits::IntType type);

// An integer token ("-12", "0xff", "+0b101"); nullopt when it is not an integer or its
// magnitude is 2^127 or more.
std::optional<Int128> parse_integer(std::string_view text);

// Integers of `type` (width 1..64) read from value text, as the uint64 bit patterns
// circuits::to_bit_planes takes (signed values two's complement), with the shape the rows of
// the text give (every row the same length; a single row is a 1 x n vector). Throws
// ValueError naming the line for a token that is not an integer, a value that does not fit
// the type ("value 300 does not fit 8-bit unsigned (0..255)"), rows of different lengths, or
// no values at all. `negative_hint` ends the message of a negative value in an unsigned type
// (encrypt's: "; pass --signed for negative values").
struct ValueTable {
  std::vector<std::uint64_t> values;
  Shape shape;
};
ValueTable parse_values(std::string_view text, circuits::IntType type,
                        std::string_view negative_hint = "; pass --signed for negative values");

// A shape "R,C", "RxC" or "R x C" with R, C >= 1; nullopt otherwise.
std::optional<Shape> parse_shape(std::string_view text);

// Integers of `type` (width 1..128) from bit planes: bit j of element e at j * lanes + e.
// Each result holds the width's bits, zero-extended (format_value reads the sign).
std::vector<Bits128> values_from_bit_planes(std::span<const std::uint8_t> bits,
                                            circuits::IntType type, std::size_t lanes);

// One value of `type` (its low `width` bits, two's complement when signed) in decimal.
std::string format_value(Bits128 bits, circuits::IntType type);

// Values as text that parse_values reads back: one line per row, values separated by a space;
// with more than one row the columns are right-aligned.
std::string format_values(std::span<const Bits128> values, circuits::IntType type, Shape shape);

}  // namespace torusgate::cli
