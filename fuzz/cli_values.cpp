// Fuzz harness: the CLI's value text (cli::parse_values, parse_shape, parse_integer) on
// arbitrary text. Values read must round-trip: to bit planes and back, then printed by
// format_values and read again, they are the same table. parse_values throws only ValueError;
// parse_shape and parse_integer throw nothing.
//
// Input: byte 0 picks the integer type (width 1 + (b & 63), signed when b & 64), the rest is
// the text.
#include <string_view>

#include "fuzz_support.hpp"
#include "torusgate/circuits/int_codec.hpp"
#include "values.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace torusgate;
  if (size == 0) return 0;
  const circuits::IntType type{1 + static_cast<std::size_t>(data[0] & 63), (data[0] & 64) != 0};
  const std::string text = fuzz::as_string(data + 1, size - 1);

  fuzz::expect_only<cli::ValueError>("cli_values: parse_values", [&] {
    const cli::ValueTable table = cli::parse_values(text, type);
    fuzz::require(!table.values.empty() &&
                      table.shape.rows * table.shape.cols == table.values.size(),
                  "cli_values: the table's shape does not hold its values");
    circuits::check_values(table.values, type, "cli_values");
    const std::vector<std::uint8_t> planes = circuits::to_bit_planes(table.values, type);
    const std::vector<cli::Bits128> back =
        cli::values_from_bit_planes(planes, type, table.values.size());
    const std::string printed = cli::format_values(back, type, table.shape);
    const cli::ValueTable again = cli::parse_values(printed, type);
    fuzz::require(again.values == table.values && again.shape == table.shape,
                  "cli_values: values printed by format_values read back differently: '" +
                      printed + "'");
  });
  fuzz::expect_only<>("cli_values: parse_shape", [&] {
    if (const auto shape = cli::parse_shape(text)) {
      fuzz::require(shape->rows >= 1 && shape->cols >= 1, "cli_values: parse_shape gave 0");
    }
  });
  fuzz::expect_only<>("cli_values: parse_integer", [&] {
    if (const auto v = cli::parse_integer(text)) {
      const auto again = cli::parse_integer(cli::format_value(static_cast<cli::Bits128>(*v),
                                                              circuits::IntType{128, true}));
      fuzz::require(again && *again == *v, "cli_values: parse_integer does not round-trip");
    }
  });
  return 0;
}
