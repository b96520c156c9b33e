// Tests of the text and file helpers of the torusgate CLI: value lists, shapes, integers up to
// 128 bits, printing, messages and sizes (no keys needed).
#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "files.hpp"
#include "operations.hpp"
#include "values.hpp"

namespace {

using namespace torusgate;
using namespace torusgate::cli;
using Catch::Contains;
using Catch::EndsWith;
using circuits::IntType;

}  // namespace

TEST_CASE("cli text: integers in decimal, hex and binary", "[cli]") {
  CHECK(parse_integer("0") == Int128{0});
  CHECK(parse_integer("-12") == Int128{-12});
  CHECK(parse_integer("+7") == Int128{7});
  CHECK(parse_integer("0xff") == Int128{255});
  CHECK(parse_integer("-0X10") == Int128{-16});
  CHECK(parse_integer("0b101") == Int128{5});
  CHECK(parse_integer("18446744073709551616") == Int128{1} << 64);
  for (const char* bad : {"", "-", "0x", "1.5", "12a", "0b12", "1e3", "--1", "0xg"}) {
    INFO(bad);
    CHECK_FALSE(parse_integer(bad));
  }
  // Magnitudes from 2^127 up are refused rather than wrapped.
  CHECK(parse_integer("170141183460469231731687303715884105727"));
  CHECK_FALSE(parse_integer("170141183460469231731687303715884105728"));
}

TEST_CASE("cli text: value lists, rows and range checks", "[cli]") {
  const IntType u8{8, false}, s8{8, true};
  ValueTable t = parse_values("1,2, 3", u8);
  CHECK(t.values == std::vector<std::uint64_t>{1, 2, 3});
  CHECK(t.shape == Shape{1, 3});
  t = parse_values("1 2;3 4\n5 6 # comment ; 7\n\n", s8);
  CHECK(t.shape == Shape{3, 2});
  t = parse_values("-128 127 -1", s8);
  CHECK(t.values ==
        std::vector<std::uint64_t>{static_cast<std::uint64_t>(-128), 127, ~std::uint64_t{0}});
  t = parse_values("18446744073709551615", IntType{64, false});
  CHECK(t.values == std::vector<std::uint64_t>{~std::uint64_t{0}});

  CHECK_THROWS_WITH(parse_values("1 256", u8), "value 256 does not fit 8-bit unsigned (0..255)");
  CHECK_THROWS_WITH(parse_values("-129", s8), "value -129 does not fit 8-bit signed (-128..127)");
  CHECK_THROWS_WITH(parse_values("1 2\n3\n", u8), Contains("row 2 has 1 value but row 1 has 2"));
  CHECK_THROWS_WITH(parse_values("# nothing\n", u8), "no values");
  try {
    parse_values("1\n2\nthree\n", u8);
    FAIL("no ValueError");
  } catch (const ValueError& e) {
    CHECK(e.line() == 3);
    CHECK_THAT(e.what(), Contains("'three' is not an integer"));
  }
  // Control bytes are shown escaped (a NUL no longer cuts the message short); a byte order
  // mark at the start is skipped.
  using namespace std::string_literals;
  CHECK_THROWS_WITH(parse_values("1\0002\n"s, u8), Contains("'1\\x002' is not an integer"));
  CHECK_THROWS_WITH(parse_values("\x1B[31m", u8), Contains("'\\x1B[31m' is not an integer"));
  CHECK(parse_values("\xEF\xBB\xBF" "7 8\n", u8).values == std::vector<std::uint64_t>{7, 8});
  // Bytes that are not UTF-8 (a binary file) are escaped, UTF-8 text kept; a long token
  // shows its start and its size.
  CHECK_THROWS_WITH(parse_values("\xFF\xFE" "1", u8), Contains("'\\xFF\\xFE1' is not an integer"));
  CHECK_THROWS_WITH(parse_values("caf\xC3\xA9", u8), Contains("'caf\xC3\xA9' is not"));
  CHECK_THROWS_WITH(parse_values("\xC3", u8), Contains("'\\xC3' is not"));
  CHECK_THROWS_WITH(parse_values(std::string(1000, 'z'), u8),
                    Contains("'" + std::string(48, 'z') + "... (1000 bytes)' is not an integer"));
  // A comma stands between two values: an empty one is refused, not skipped.
  CHECK_THROWS_WITH(parse_values("1,,2", u8),
                    "row 1 misses a value: a comma with no value after it");
  CHECK_THROWS_WITH(parse_values("1, ,2", u8), Contains("a comma with no value after it"));
  CHECK_THROWS_WITH(parse_values(",1", u8),
                    "row 1 misses a value: a comma with no value before it");
  CHECK_THROWS_WITH(parse_values("1,2;3,", u8),
                    "row 2 misses a value: a comma with no value after it");
  CHECK_THROWS_WITH(parse_values("1,2,\n3,4\n", u8), Contains("row 1 misses a value"));
  CHECK_THROWS_WITH(parse_values("1,2, # c\n", u8), Contains("row 1 misses a value"));
  CHECK(parse_values("1 ,2 , 3\n4,5,6 # c\n", u8).values.size() == 6);
  CHECK_THROWS_WITH(parse_values("-1", u8), Contains("; pass --signed for negative values"));
  CHECK_THROWS_WITH(parse_values("-1", u8, "; a hint"), EndsWith("; a hint"));
  CHECK(type_range(IntType{1, true}) == "-1..0");
  CHECK(type_range(IntType{64, false}) == "0..18446744073709551615");
  CHECK(type_range(IntType{64, true}) == "-9223372036854775808..9223372036854775807");
}

TEST_CASE("cli text: shapes", "[cli]") {
  CHECK(parse_shape("2,3") == Shape{2, 3});
  CHECK(parse_shape("4x1") == Shape{4, 1});
  CHECK(parse_shape("2 x 5") == Shape{2, 5});
  for (const char* bad : {"", "2", "2,", ",3", "0,3", "2,0", "a,b", "2,3,4", "-1,2"}) {
    INFO(bad);
    CHECK_FALSE(parse_shape(bad));
  }
}

TEST_CASE("cli text: decoding and printing values up to 128 bits", "[cli]") {
  // Two 3-bit elements, bit-coalesced: bit j of element e at j * 2 + e. Values 5 and 2.
  const std::vector<std::uint8_t> bits = {1, 0, 0, 1, 1, 0};
  const std::vector<Bits128> values = values_from_bit_planes(bits, IntType{3, false}, 2);
  CHECK(values == std::vector<Bits128>{5, 2});
  CHECK(format_value(5, IntType{3, false}) == "5");
  CHECK(format_value(5, IntType{3, true}) == "-3");
  CHECK(format_value(4, IntType{3, true}) == "-4");
  const Bits128 all = ~Bits128{0};
  CHECK(format_value(all, IntType{128, false}) == "340282366920938463463374607431768211455");
  CHECK(format_value(all, IntType{128, true}) == "-1");
  CHECK(format_value(Bits128{1} << 127, IntType{128, true}) ==
        "-170141183460469231731687303715884105728");
  CHECK(format_value(all, IntType{64, true}) == "-1");  // bits above the width are ignored

  const std::vector<Bits128> m = {1, 250, 3, 4};
  CHECK(format_values(m, IntType{8, true}, Shape{2, 2}) == " 1 -6\n 3  4\n");
  CHECK(format_values(m, IntType{8, false}, Shape{1, 4}) == "1 250 3 4\n");
}

TEST_CASE("cli text: library messages lose their function names; sizes", "[cli]") {
  const std::runtime_error e(
      "describe_file: 'x.tgct': peek_object_type: not a torusgate file: bad magic");
  CHECK(user_message(e) == "'x.tgct': not a torusgate file: bad magic");
  const std::runtime_error kept("--width: 0 is out of range: toy_INSECURE");
  CHECK(user_message(kept) == "--width: 0 is out of range: toy_INSECURE");
  CHECK(user_message(std::runtime_error("IntArray::encrypt: no values")) == "no values");
  CHECK(byte_size(1) == "1 byte");
  CHECK(byte_size(1023) == "1023 bytes");
  CHECK(byte_size(1536) == "1.5 KiB");
  CHECK(byte_size(92995696) == "88.7 MiB");
}

TEST_CASE("cli text: the operation table", "[cli]") {
  CHECK(find_operation("matmul").rule == OperandRule::MatrixProduct);
  CHECK(find_operation("neg").arity() == 1);
  CHECK(find_operation("dot").takes_width);
  CHECK_THROWS_WITH(find_operation("pow"),
                    Contains("unknown operation 'pow'") && Contains("mul-full"));
  for (const char* name :
       {"add", "sub", "mul", "mul-full", "neg", "lt",  "le",  "gt",  "ge",  "eq",
        "ne",  "min", "max", "and",      "or",  "xor", "not", "dot", "sum", "matmul"}) {
    INFO(name);
    CHECK(find_operation(name).name == name);
  }
}
