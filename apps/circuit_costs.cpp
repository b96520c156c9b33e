// Cost table of the circuits library: for every operation of the catalog (and sum, dot, matrix
// and Cannon products), the bootstraps (MUX counts 2) and the depth (bootstrapping levels) that
// compile() gives at several widths, for unsigned and signed operands. No keys and no backend:
// the costs come from the compiled schedule, so the table takes a few seconds. docs/circuits.md
// holds its markdown output; tests/circuits/test_costs.cpp checks the numbers.
//   circuit_costs [--widths W[,W...]] [--signedness u|s|both] [--op NAME[,NAME...]]... [--tsv]
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <iostream>
#include <span>
#include <string>
#include <vector>

#include "app_support.hpp"
#include "printable.hpp"
#include "torusgate/circuits/catalog.hpp"
#include "torusgate/circuits/linalg.hpp"
#include "torusgate/circuits/schedule.hpp"
#include "torusgate/circuits/sort.hpp"
#include "torusgate/core/error.hpp"

using namespace torusgate;
using namespace torusgate::circuits;

namespace {

void usage(std::ostream& os) {
  os << "usage: circuit_costs [options]\n"
        "  --widths W[,W...]     operand widths in bits, 1..256 (default 8,16,32,64)\n"
        "  --signedness S        u | s | both (default both: each signedness an operation takes)\n"
        "  --op NAME[,NAME...]   only these operations (--ops: the same); repeatable (default:\n"
        "                        all); each named once, and each must take the operands of\n"
        "                        --signedness. Names are\n"
        "                        those of the catalog and sum.8, dot.8, sort.8, max_element.8,\n"
        "                        argmax.8, matmul.4x4, cannon.4x4.g2\n"
        "  --tsv                 tab-separated rows (op, type, width, bootstraps, depth, gates,\n"
        "                        free_gates, batches, scratch_bits) instead of markdown tables\n"
        "  --help                this text\n"
        "Costs are those of compile() on a fresh circuit: one element per operation (the cost of\n"
        "L elements is L times the bootstraps at the same depth); the vector and matrix rows are\n"
        "for the whole operation.\n";
}

// One row source: the catalog operations, then the vector and matrix operations.
struct Entry {
  std::string name;
  std::string summary;
  bool unsigned_ok = true;
  bool signed_ok = true;
  bool is_default = false;
  bool whole = false;  // a vector or matrix operation: the cost of all of it
  // The cost at one operand type.
  std::function<ScheduleCost(IntType)> cost;
};

ScheduleCost compile_cost(const Circuit& c, const Expr& out) {
  return compile(c, std::span<const Expr>(&out, 1)).cost;
}

std::vector<Entry> entries() {
  std::vector<Entry> list;
  for (const Operation& op : operation_catalog()) {
    Entry e;
    e.name = op.name;
    e.summary = op.summary;
    e.unsigned_ok = op.unsigned_ok;
    e.signed_ok = op.signed_ok;
    e.is_default = op.is_default;
    e.cost = [&op](IntType t) {
      Circuit c;
      const Expr x = c.input(t, 1);
      const Expr y = op.arity == 2 ? c.input(t, 1) : x;
      return compile_cost(c, op.record(c, x, y));
    };
    list.push_back(std::move(e));
  }
  const auto add = [&](std::string name, std::string summary,
                       std::function<ScheduleCost(IntType)> cost) {
    Entry e;
    e.name = std::move(name);
    e.summary = std::move(summary);
    e.whole = true;
    e.cost = std::move(cost);
    list.push_back(std::move(e));
  };
  add("sum.8", "sum of 8 elements (one n-bit result)", [](IntType t) {
    Circuit c;
    return compile_cost(c, sum(c, c.input(t, 8)));
  });
  add("dot.8", "dot product of two 8-element vectors (n-bit result)", [](IntType t) {
    Circuit c;
    const Expr x = c.input(t, 8), y = c.input(t, 8);
    return compile_cost(c, dot(c, x, y));
  });
  add("sort.8", "8 elements in order (Batcher's network: 19 comparators)", [](IntType t) {
    Circuit c;
    return compile_cost(c, sort(c, c.input(t, 8)));
  });
  add("max_element.8", "the largest of 8 elements (7 comparisons)", [](IntType t) {
    Circuit c;
    return compile_cost(c, max_element(c, c.input(t, 8)));
  });
  add("argmax.8", "the first column of the largest of 8 elements (3-bit index)", [](IntType t) {
    Circuit c;
    return compile_cost(c, argmax(c, c.input(t, 8)));
  });
  add("matmul.4x4", "4x4 by 4x4 matrix product (16 n-bit results)", [](IntType t) {
    Circuit c;
    const Expr a = c.input(t, 4, 4), b = c.input(t, 4, 4);
    return compile_cost(c, matmul(c, a, b));
  });
  add("cannon.4x4.g2", "4x4 product by Cannon, 2x2 blocks: 2 runs, costs summed", [](IntType t) {
    // As cannon_multiply() runs it: each step is its own circuit with the carry-save
    // accumulator of the previous step as two inputs; the last step adds the two rows.
    constexpr std::size_t q = 4, grid = 2;
    ScheduleCost total;
    for (std::size_t step = 0; step < grid; ++step) {
      Circuit c;
      const Expr a = c.input(t, q, q), b = c.input(t, q, q);
      CannonRows acc;
      if (step > 0) {
        const IntType row{t.width, false};
        acc = CannonRows{c.input(row, q, q), c.input(row, q, q)};
      }
      const CannonRows next = cannon_step(c, a, b, acc, grid, step, t.width);
      ScheduleCost s;
      if (step + 1 == grid) {
        s = compile_cost(c, cannon_finish(c, next, t.is_signed));
      } else {
        const Expr rows[] = {next.row0, next.row1};
        s = compile(c, rows).cost;
      }
      total.depth += s.depth;
      total.batches += s.batches;
      total.bootstraps += s.bootstraps;
      total.gates += s.gates;
      total.free_gates += s.free_gates;
      total.scratch_bits = std::max(total.scratch_bits, s.scratch_bits);
    }
    return total;
  });
  return list;
}

struct Options {
  std::vector<std::size_t> widths;
  bool want_unsigned = true;
  bool want_signed = true;
  std::vector<std::string> ops;
  bool tsv = false;
};

// Returns false when --help was asked for.
bool parse(int argc, char** argv, Options& o) {
  for (apps::CommandLine cl(argc, argv, {"--op", "--ops"}); cl.next();) {
    const std::string& arg = cl.arg();
    if (cl.is_help()) {
      usage(std::cout);
      return false;
    } else if (arg == "--widths") {
      for (const std::string& w : apps::split_list(cl.value()))
        apps::append_unique(o.widths, static_cast<std::size_t>(apps::parse_count(arg, w, 1, 256)));
    } else if (arg == "--signedness") {
      const std::string s = cl.value();
      if (s != "u" && s != "s" && s != "both")
        throw InvalidArgument("--signedness: '" + s + "'; expected u, s or both");
      o.want_unsigned = s != "s";
      o.want_signed = s != "u";
    } else if (arg == "--op" || arg == "--ops") {
      for (const std::string& name : apps::split_list(cl.value())) apps::append_unique(o.ops, name);
    } else if (arg == "--tsv") {
      o.tsv = true;
    } else {
      cl.reject();
    }
  }
  if (o.widths.empty()) o.widths = {8, 16, 32, 64};
  return true;
}

// The costs of one entry at one signedness, one per width.
struct Row {
  const Entry* entry = nullptr;
  bool is_signed = false;
  std::vector<ScheduleCost> costs;
};

// Text for a markdown table cell: pipes escaped.
std::string markdown(const std::string& text) {
  std::string out;
  for (char ch : text) {
    if (ch == '|') out += '\\';
    out += ch;
  }
  return out;
}

std::string cell(const ScheduleCost& c) {
  return std::to_string(c.bootstraps) + " / " + std::to_string(c.depth);
}

bool same_costs(const Row& a, const Row& b) {
  for (std::size_t i = 0; i < a.costs.size(); ++i)
    if (a.costs[i].bootstraps != b.costs[i].bootstraps || a.costs[i].depth != b.costs[i].depth)
      return false;
  return true;
}

void print_markdown(const std::vector<Row>& rows, const Options& o, bool whole) {
  std::printf("| operation | what | type |");
  for (std::size_t w : o.widths) std::printf(" %zu bits |", w);
  std::printf("\n|---|---|---|");
  for (std::size_t i = 0; i < o.widths.size(); ++i) std::printf("--:|");
  std::printf("\n");
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const Row& row = rows[r];
    if (row.entry->whole != whole) continue;
    // Unsigned and signed in one row when their costs agree at every width.
    std::string type = row.is_signed ? "s" : "u";
    if (!row.is_signed && r + 1 < rows.size() && rows[r + 1].entry == row.entry &&
        same_costs(row, rows[r + 1])) {
      type = "u, s";
      ++r;
    }
    std::string name = "`" + row.entry->name + "`";
    if (row.entry->is_default) name += " (default)";
    std::printf("| %s | %s | %s |", name.c_str(), markdown(row.entry->summary).c_str(),
                type.c_str());
    for (const ScheduleCost& c : row.costs) std::printf(" %s |", cell(c).c_str());
    std::printf("\n");
  }
}

}  // namespace

int main(int argc, char** argv) try {
  Options o;
  if (!parse(argc, argv, o)) return 0;
  const std::vector<Entry> all = entries();
  std::vector<const Entry*> chosen;
  if (o.ops.empty()) {
    for (const Entry& e : all) chosen.push_back(&e);
  } else {
    for (const std::string& name : o.ops) {
      const Entry* found = nullptr;
      for (const Entry& e : all)
        if (e.name == name) found = &e;
      if (!found) {
        std::string names;
        for (const Entry& e : all) names += (names.empty() ? "" : ", ") + e.name;
        throw InvalidArgument("--op: no operation '" + apps::printable(name) + "'; known: " +
                              names);
      }
      // An operation the signedness leaves without a row is refused, not dropped.
      if (!(o.want_unsigned && found->unsigned_ok) && !(o.want_signed && found->signed_ok)) {
        throw InvalidArgument("--op: " + name + " takes " +
                              (found->signed_ok ? "signed" : "unsigned") +
                              " operands only, which --signedness " +
                              (o.want_signed ? "s" : "u") + " leaves out");
      }
      chosen.push_back(found);
    }
  }

  std::vector<Row> rows;
  for (const Entry* e : chosen) {
    for (const bool is_signed : {false, true}) {
      if (is_signed ? !(o.want_signed && e->signed_ok) : !(o.want_unsigned && e->unsigned_ok))
        continue;
      Row row{e, is_signed, {}};
      for (std::size_t w : o.widths) row.costs.push_back(e->cost(IntType{w, is_signed}));
      rows.push_back(std::move(row));
    }
  }

  if (rows.empty())
    throw InvalidArgument("no operation of --op takes " +
                          std::string(o.want_signed ? "signed" : "unsigned") + " operands");
  if (o.tsv) {
    std::printf("op\ttype\twidth\tbootstraps\tdepth\tgates\tfree_gates\tbatches\tscratch_bits\n");
    for (const Row& row : rows)
      for (std::size_t i = 0; i < o.widths.size(); ++i) {
        const ScheduleCost& c = row.costs[i];
        std::printf("%s\t%s\t%zu\t%llu\t%u\t%llu\t%llu\t%zu\t%zu\n", row.entry->name.c_str(),
                    to_string(IntType{o.widths[i], row.is_signed}).c_str(), o.widths[i],
                    static_cast<unsigned long long>(c.bootstraps), c.depth,
                    static_cast<unsigned long long>(c.gates),
                    static_cast<unsigned long long>(c.free_gates), c.batches, c.scratch_bits);
      }
    return 0;
  }
  bool any_element = false, any_reduction = false;
  for (const Row& row : rows) (row.entry->whole ? any_reduction : any_element) = true;
  if (any_element) {
    std::printf("Element-wise operations: bootstraps / depth of one element (u: unsigned, "
                "s: signed operands).\n\n");
    print_markdown(rows, o, false);
  }
  if (any_reduction) {
    std::printf("%sVector and matrix operations: bootstraps / depth of the whole operation.\n\n",
                any_element ? "\n" : "");
    print_markdown(rows, o, true);
  }
  return 0;
} catch (const std::exception& e) {
  std::cerr << "circuit_costs: " << torusgate::apps::terminal_text(e.what()) << "\n";
  return 2;
}
