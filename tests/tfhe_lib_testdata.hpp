// The TFHE library v1.1 vectors of ../shared/testdata (see its README): where they are, and
// plain.txt, the bits behind every ciphertext file. Tests skip with a warning when absent.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

namespace torusgate::test {

inline const std::filesystem::path data_dir{TORUSGATE_TFHE_LIB_TESTDATA};

// True when the vectors are there; otherwise warns (the test then returns without asserting).
inline bool have_data() {
  std::error_code ec;
  if (std::filesystem::is_regular_file(data_dir / "params.txt", ec) &&
      std::filesystem::is_regular_file(data_dir / "plain.txt", ec)) {
    return true;
  }
  WARN("TFHE library vectors not found at '" << data_dir.string() << "': test skipped");
  return false;
}

// plain.txt: "# i a b c  <12 output names>", then one line per index with 16 integers.
struct PlainBits {
  std::vector<std::string> outputs;  // gate names in the header's order ("mux(a?b:c)" -> "mux")
  std::vector<std::uint8_t> a, b, c;
  std::map<std::string, std::vector<std::uint8_t>> expected;
};

inline PlainBits read_plain() {
  std::ifstream in(data_dir / "plain.txt");
  REQUIRE(in.is_open());
  std::string header;
  REQUIRE(std::getline(in, header));
  REQUIRE(header.starts_with("#"));
  std::istringstream hs(header.substr(1));
  std::vector<std::string> columns;
  for (std::string col; hs >> col;) columns.push_back(col.substr(0, col.find('(')));
  REQUIRE(columns.size() == 16);
  REQUIRE(columns[0] == "i");
  REQUIRE(columns[1] == "a");
  REQUIRE(columns[2] == "b");
  REQUIRE(columns[3] == "c");
  PlainBits plain;
  plain.outputs.assign(columns.begin() + 4, columns.end());
  std::size_t row = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    std::istringstream ls(line);
    std::vector<int> v;
    for (int x; ls >> x;) v.push_back(x);
    INFO("plain.txt row " << row << ": " << line);
    REQUIRE(ls.eof());
    REQUIRE(v.size() == 16);
    REQUIRE(v[0] == static_cast<int>(row));
    for (std::size_t j = 1; j < v.size(); ++j) REQUIRE((v[j] == 0 || v[j] == 1));
    plain.a.push_back(static_cast<std::uint8_t>(v[1]));
    plain.b.push_back(static_cast<std::uint8_t>(v[2]));
    plain.c.push_back(static_cast<std::uint8_t>(v[3]));
    for (std::size_t g = 0; g < plain.outputs.size(); ++g) {
      plain.expected[plain.outputs[g]].push_back(static_cast<std::uint8_t>(v[4 + g]));
    }
    ++row;
  }
  REQUIRE(row == 64);
  return plain;
}

}  // namespace torusgate::test
