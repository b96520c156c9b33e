// Gate-count and depth regression of circuits/. Every operation of the catalog, each
// signedness it supports, at widths 8, 16, 32 and 64 (one element, recorded in a fresh
// Circuit and compiled), plus sum and dot of 8 elements and a 4 x 4 matrix product by matmul
// and by Cannon's algorithm in 2 x 2 blocks (two runs, costs summed) at the same widths, are
// compared with the committed table tests/circuits/circuit_costs.tsv
// (columns: name, signedness u|s, width, bootstraps, depth). Any difference fails: a larger or
// deeper circuit is a regression; a smaller or shallower one is an improvement, and then
// docs/circuits.md and the table must be updated together.
//
// Regenerating the table: run this test once with the environment variable
// TORUSGATE_WRITE_COSTS set; it then writes the measured table to circuit_costs.tsv (the
// source tree's copy, path compiled in as TORUSGATE_CIRCUIT_COSTS) instead of comparing:
//
//   TORUSGATE_WRITE_COSTS=1 build/tests/tests_circuits "[costs]"
//
// Another test checks that the cost table of docs/circuits.md (between its circuit_costs
// markers) shows the same numbers, and another, at 8 bits, that the plaintext backend measures what the schedule
// predicts: bootstraps, bootstrapping batches and the depth of the outputs.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "circuit_test_support.hpp"

#ifndef TORUSGATE_CIRCUIT_COSTS
#error "TORUSGATE_CIRCUIT_COSTS (the path of circuit_costs.tsv) must be defined"
#endif

using namespace torusgate;
using namespace torusgate::circuits;
using namespace torusgate::test;

namespace {

struct CostKey {
  std::string name;
  char signedness = 'u';  // 'u' or 's'
  std::size_t width = 0;
  friend bool operator<(const CostKey& a, const CostKey& b) {
    return std::tie(a.name, a.signedness, a.width) < std::tie(b.name, b.signedness, b.width);
  }
  std::string str() const { return name + " " + signedness + std::to_string(width); }
};

struct CostRow {
  CostKey key;
  std::uint64_t bootstraps = 0;
  std::uint32_t depth = 0;
};

ScheduleCost cost_of(const Circuit& c, const Expr& out) {
  return compile(c, std::span<const Expr>(&out, 1)).cost;
}

// Cannon's algorithm as cannon_multiply() runs it: one circuit per step, the carry-save rows of
// the previous step as two unsigned inputs; bootstraps and depths summed over the steps.
ScheduleCost cannon_cost(IntType type, std::size_t q, std::size_t grid) {
  ScheduleCost total;
  for (std::size_t step = 0; step < grid; ++step) {
    Circuit c;
    const Expr a = c.input(type, q, q), b = c.input(type, q, q);
    CannonRows acc;
    if (step > 0) acc = CannonRows{c.input(IntType{type.width, false}, q, q), c.input(IntType{type.width, false}, q, q)};
    const CannonRows next = cannon_step(c, a, b, acc, grid, step, type.width);
    const std::vector<Expr> outs = step + 1 == grid ? std::vector<Expr>{cannon_finish(c, next, type.is_signed)}
                                                    : std::vector<Expr>{next.row0, next.row1};
    const ScheduleCost s = compile(c, std::span<const Expr>(outs)).cost;
    total.depth += s.depth;
    total.bootstraps += s.bootstraps;
  }
  return total;
}

// Every row of the table, measured now, in table order.
std::vector<CostRow> measure_all() {
  std::vector<CostRow> rows;
  const auto push = [&](std::string name, bool is_signed, std::size_t w, const ScheduleCost& cost) {
    rows.push_back(CostRow{CostKey{std::move(name), is_signed ? 's' : 'u', w}, cost.bootstraps, cost.depth});
  };
  for (const Operation& op : operation_catalog())
    for (bool is_signed : signednesses(op))
      for (std::size_t w : {8, 16, 32, 64}) {
        Circuit c;
        const IntType type{w, is_signed};
        const Expr x = c.input(type, 1), y = c.input(type, 1);
        push(op.name, is_signed, w, cost_of(c, op.record(c, x, y)));
      }
  for (bool is_signed : {false, true})
    for (std::size_t w : {8, 16, 32, 64}) {
      const IntType type{w, is_signed};
      {
        Circuit c;
        push("sum.8", is_signed, w, cost_of(c, sum(c, c.input(type, 8))));
      }
      {
        Circuit c;
        const Expr x = c.input(type, 8), y = c.input(type, 8);
        push("dot.8", is_signed, w, cost_of(c, dot(c, x, y)));
      }
      {
        Circuit c;
        push("sort.8", is_signed, w, cost_of(c, sort(c, c.input(type, 8))));
      }
      {
        Circuit c;
        push("max_element.8", is_signed, w, cost_of(c, max_element(c, c.input(type, 8))));
      }
      {
        Circuit c;
        push("argmax.8", is_signed, w, cost_of(c, argmax(c, c.input(type, 8))));
      }
      {
        Circuit c;
        const Expr a = c.input(type, 4, 4), b = c.input(type, 4, 4);
        push("matmul.4x4", is_signed, w, cost_of(c, matmul(c, a, b)));
      }
      push("cannon.4x4.g2", is_signed, w, cannon_cost(type, 4, 2));
    }
  return rows;
}

const char* const header =
    "# Gate counts (bootstraps) and depths of circuits/ operations on one element; checked by\n"
    "# tests/circuits/test_costs.cpp. Regenerate with\n"
    "#   TORUSGATE_WRITE_COSTS=1 build/tests/tests_circuits \"[costs]\"\n"
    "# and update docs/circuits.md with it.\n"
    "name\tsignedness\twidth\tbootstraps\tdepth\n";

std::string format_table(const std::vector<CostRow>& rows) {
  std::ostringstream out;
  out << header;
  for (const CostRow& r : rows)
    out << r.key.name << '\t' << r.key.signedness << '\t' << r.key.width << '\t' << r.bootstraps
        << '\t' << r.depth << '\n';
  return out.str();
}

// Parses the table; malformed lines are reported in `errors`.
std::vector<CostRow> read_table(std::istream& in, std::vector<std::string>& errors) {
  std::vector<CostRow> rows;
  std::string line;
  std::size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#' || line.rfind("name\t", 0) == 0) continue;
    std::istringstream fields(line);
    CostRow r;
    std::string s;
    if (!(fields >> r.key.name >> s >> r.key.width >> r.bootstraps >> r.depth) ||
        (s != "u" && s != "s")) {
      errors.push_back("line " + std::to_string(number) + " is not 'name u|s width bootstraps depth': " + line);
      continue;
    }
    r.key.signedness = s[0];
    rows.push_back(r);
  }
  return rows;
}

}  // namespace

TEST_CASE("gate counts and depths match circuit_costs.tsv", "[circuits][costs]") {
  const std::vector<CostRow> measured = measure_all();
  REQUIRE(!measured.empty());
  const std::string path = TORUSGATE_CIRCUIT_COSTS;

  if (std::getenv("TORUSGATE_WRITE_COSTS") != nullptr) {
    std::ofstream out(path, std::ios::trunc);
    REQUIRE(out.good());
    out << format_table(measured);
    out.close();
    REQUIRE(out.good());
    WARN("TORUSGATE_WRITE_COSTS is set: wrote " << measured.size() << " rows to " << path
                                                << " instead of comparing");
    return;
  }

  std::ifstream in(path);
  INFO("table " << path);
  REQUIRE(in.good());
  std::vector<std::string> errors;
  const std::vector<CostRow> committed = read_table(in, errors);
  for (const std::string& e : errors) FAIL_CHECK(e);

  std::map<CostKey, CostRow> table;
  for (const CostRow& r : committed)
    if (!table.emplace(r.key, r).second) FAIL_CHECK("the table lists " << r.key.str() << " twice");

  std::vector<std::string> changes;
  for (const CostRow& m : measured) {
    const auto it = table.find(m.key);
    if (it == table.end()) {
      changes.push_back(m.key.str() + ": not in the table (measured " + std::to_string(m.bootstraps) +
                        " bootstraps, depth " + std::to_string(m.depth) + ")");
      continue;
    }
    const CostRow& t = it->second;
    if (m.bootstraps != t.bootstraps)
      changes.push_back(m.key.str() + ": " + std::to_string(m.bootstraps) + " bootstraps, the table says " +
                        std::to_string(t.bootstraps) +
                        (m.bootstraps > t.bootstraps ? " (larger: a regression)" : " (smaller)"));
    if (m.depth != t.depth)
      changes.push_back(m.key.str() + ": depth " + std::to_string(m.depth) + ", the table says " +
                        std::to_string(t.depth) +
                        (m.depth > t.depth ? " (deeper: a regression)" : " (shallower)"));
    table.erase(it);
  }
  for (const auto& [key, row] : table)
    changes.push_back(key.str() + ": in the table but no longer measured (operation renamed or removed?)");

  std::ostringstream msg;
  for (const std::string& c : changes) msg << c << "\n";
  msg << changes.size() << " differences. If intended, update docs/circuits.md and "
      << path << " (regenerate: TORUSGATE_WRITE_COSTS=1 tests_circuits \"[costs]\").";
  INFO(msg.str());
  CHECK(changes.empty());
  CHECK(committed.size() == measured.size());
}

TEST_CASE("the cost table format round-trips", "[circuits][costs]") {
  const std::vector<CostRow> rows = {{{"add.sklansky", 'u', 8}, 30, 5}, {{"mul.full.dadda", 's', 64}, 12345, 40}};
  std::istringstream in(format_table(rows) + "bad line\nx q 8 1 1\n");
  std::vector<std::string> errors;
  const std::vector<CostRow> back = read_table(in, errors);
  REQUIRE(back.size() == 2);
  CHECK(back[1].key.str() == "mul.full.dadda s64");
  CHECK(back[1].bootstraps == 12345);
  CHECK(back[1].depth == 40);
  CHECK(errors.size() == 2);
}

TEST_CASE("the plaintext backend measures what the schedule predicts at 8 bits",
          "[circuits][costs]") {
  PlaintextFixture f;
  Csprng rng = seeded_rng(0xc057);
  std::size_t checked = 0;
  for (const Operation& op : operation_catalog())
    for (bool is_signed : signednesses(op)) {
      const IntType type{8, is_signed};
      INFO(op.name << " on " << to_string(type));
      const std::vector<std::uint64_t> xs = {random_value(rng, type)}, ys = {random_value(rng, type)};
      const auto ax = IntArray<PlaintextBackend>::encrypt(f.be, f.key, xs, type, rng);
      const auto ay = IntArray<PlaintextBackend>::encrypt(f.be, f.key, ys, type, rng);
      Program<PlaintextBackend> prog(f.be);
      const Expr out = op.record(prog.circuit(), prog.input(ax), prog.input(ay));
      f.be.reset_stats();
      const auto r = prog.run(out);
      const ScheduleCost cost = prog.last_schedule().cost;
      CHECK(f.be.stats().bootstraps == cost.bootstraps);
      CHECK(f.be.stats().bootstrap_batches == cost.depth);
      CHECK(f.be.stats().batches == cost.batches);
      CHECK(f.be.stats().gates == cost.gates + cost.free_gates);
      std::uint32_t depth = 0;
      for (std::size_t j = 0; j < r.width(); ++j) depth = std::max(depth, f.be.depth(r.bit(j)));
      CHECK(depth == cost.depth);
      CHECK(f.be.depth(r.buffer().bits()) == cost.depth);
      ++checked;
    }
  CHECK(checked > 30);

  // Cannon's algorithm: the steps cannon_multiply() runs cost what the table counts.
  for (bool is_signed : {false, true}) {
    const IntType type{8, is_signed};
    INFO("cannon.4x4.g2 on " << to_string(type));
    const auto av = random_values(rng, type, 16), bv = random_values(rng, type, 16);
    const auto a = IntArray<PlaintextBackend>::encrypt(f.be, f.key, av, type, rng, 4);
    const auto b = IntArray<PlaintextBackend>::encrypt(f.be, f.key, bv, type, rng, 4);
    std::vector<ScheduleCost> steps;
    f.be.reset_stats();
    const auto r = cannon_multiply(f.be, a, b, 2, 0, &steps);
    REQUIRE(steps.size() == 2);
    const ScheduleCost want = cannon_cost(type, 4, 2);
    CHECK(steps[0].bootstraps + steps[1].bootstraps == want.bootstraps);
    CHECK(steps[0].depth + steps[1].depth == want.depth);
    CHECK(f.be.stats().bootstraps == want.bootstraps);
    CHECK(f.be.stats().bootstrap_batches == want.depth);
  }
}

TEST_CASE("the cost table of docs/circuits.md shows the measured costs", "[circuits][costs]") {
  // The table's columns: | `name` (default) | what | u, s | 8 bits | 16 | 32 | 64 |, each
  // width "bootstraps / depth"; a "u, s" row stands for both signednesses.
  const std::filesystem::path docs =
      std::filesystem::path(TORUSGATE_CIRCUIT_COSTS).parent_path().parent_path().parent_path() /
      "docs" / "circuits.md";
  INFO("reading " << docs.string());
  std::ifstream in(docs);
  REQUIRE(in.good());
  std::map<CostKey, CostRow> measured;
  for (const CostRow& r : measure_all()) measured.emplace(r.key, r);

  const auto trim = [](std::string t) {
    const auto b = t.find_first_not_of(" `"), e = t.find_last_not_of(" `");
    return b == std::string::npos ? std::string() : t.substr(b, e - b + 1);
  };
  std::vector<std::string> problems;
  std::set<CostKey> shown;
  bool inside = false, seen_begin = false, seen_end = false;
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("<!-- circuit_costs: begin -->") != std::string::npos) {
      inside = seen_begin = true;
      continue;
    }
    if (line.find("<!-- circuit_costs: end -->") != std::string::npos) {
      inside = false;
      seen_end = true;
      continue;
    }
    if (!inside || line.rfind("| `", 0) != 0) continue;
    // Escaped pipes (the abs row's \|x\|) are part of a cell.
    std::string row;
    for (std::size_t i = 1; i < line.size(); ++i) {
      const bool escaped_pipe = line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '|';
      row += escaped_pipe ? '/' : line[i];
      if (escaped_pipe) ++i;
    }
    std::vector<std::string> cells;
    std::istringstream fields(row);
    std::string cell;
    while (std::getline(fields, cell, '|')) cells.push_back(cell);
    if (cells.size() < 7) {
      problems.push_back("unreadable row: " + line);
      continue;
    }
    std::string name = trim(cells[0]);
    if (const auto p = name.find("` (default)"); p != std::string::npos) name = name.substr(0, p);
    const std::string types = trim(cells[2]);
    std::vector<char> sign;
    if (types.find('u') != std::string::npos) sign.push_back('u');
    if (types.find('s') != std::string::npos) sign.push_back('s');
    const std::size_t widths[] = {8, 16, 32, 64};
    for (std::size_t i = 0; i < 4; ++i) {
      std::uint64_t boots = 0;
      std::uint32_t depth = 0;
      char slash = 0;
      std::istringstream value(cells[3 + i]);
      if (!(value >> boots >> slash >> depth) || slash != '/') {
        problems.push_back(name + ": unreadable cell '" + cells[3 + i] + "'");
        continue;
      }
      for (char sg : sign) {
        const CostKey key{name, sg, widths[i]};
        shown.insert(key);
        const auto it = measured.find(key);
        if (it == measured.end()) {
          problems.push_back(key.str() + ": in docs/circuits.md but not measured");
        } else if (it->second.bootstraps != boots || it->second.depth != depth) {
          problems.push_back(key.str() + ": docs/circuits.md says " + std::to_string(boots) + " / " +
                             std::to_string(depth) + ", measured " +
                             std::to_string(it->second.bootstraps) + " / " +
                             std::to_string(it->second.depth));
        }
      }
    }
  }
  CHECK(seen_begin);
  CHECK(seen_end);
  for (const auto& [key, row] : measured)
    if (!shown.count(key)) problems.push_back(key.str() + ": measured but not in docs/circuits.md");
  std::ostringstream msg;
  for (const std::string& p : problems) msg << p << "\n";
  msg << "regenerate the table with build/apps/circuit_costs and paste it between the markers";
  INFO(msg.str());
  CHECK(problems.empty());
}
