// Fuzz harness: the CLI's value text (cli::parse_values, parse_shape, parse_integer) and its
// option numbers (apps::parse_count: --width, --threads, --seed, ...; apps::parse_shape:
// linear_regression's --shape) on arbitrary text.
// Values read must round-trip: to bit planes and back, then printed by format_values and read
// again, they are the same table. parse_values throws only ValueError; parse_shape and
// parse_integer throw nothing; parse_count throws InvalidArgument, else gives a value in its
// range that it reads back from its decimal text; apps::parse_shape throws InvalidArgument,
// else gives a shape that reads back from its text.
//
// Input: byte 0 picks the integer type (width 1 + (b & 63), signed when b & 64), the rest is
// the text.
#include <string_view>
#include <utility>

#include "fuzz_support.hpp"
#include "torusgate/circuits/int_codec.hpp"
#include "regression_data.hpp"
#include "text_support.hpp"
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
  // The ranges of the programs' options: --seed, --width, --threads.
  for (const auto& range : {std::pair<std::uint64_t, std::uint64_t>{0, UINT64_MAX}, {1, 64},
                            {1, 4096}}) {
    const std::uint64_t min = range.first, max = range.second;
    fuzz::expect_only<InvalidArgument>("cli_values: parse_count", [&] {
      const std::uint64_t v = apps::parse_count("--fuzz", text, min, max);
      fuzz::require(v >= min && v <= max && apps::parse_count("--fuzz", std::to_string(v),
                                                              min, max) == v,
                    "cli_values: parse_count gave a value out of its range or not its own");
    });
  }
  fuzz::expect_only<InvalidArgument>("cli_values: apps::parse_shape", [&] {
    const apps::DatasetShape shape = apps::parse_shape(text);
    const apps::DatasetShape again = apps::parse_shape(apps::to_string(shape));
    fuzz::require(shape.rows >= 1 && shape.attributes >= 1 && again.rows == shape.rows &&
                      again.attributes == shape.attributes,
                  "cli_values: apps::parse_shape gave an empty shape or not its own");
  });
  return 0;
}
