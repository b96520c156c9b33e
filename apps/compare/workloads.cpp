// The item lists of the comparison runs and their selection.
#include "workloads.hpp"

#include <algorithm>

#include "torusgate/core/error.hpp"

namespace torusgate::apps::compare {

namespace {

// Sizes of one mode.
struct Sizes {
  std::vector<std::size_t> gate_bits;
  std::vector<std::size_t> adder_bits;
  std::vector<std::size_t> multiplier_bits;
  std::vector<std::size_t> vector_bits, vector_lengths;
  std::vector<std::size_t> matrix_bits, matrix_dimensions;
  std::size_t regression_bits = 0;
  std::vector<std::pair<std::size_t, std::size_t>> regression_shapes;  // rows, attributes
};

Sizes full_sizes() {
  Sizes s;
  s.gate_bits = {2, 4, 8, 16, 32};
  s.adder_bits = {16, 24, 32};
  s.multiplier_bits = {16, 24, 32};
  s.vector_bits = {16, 32};
  s.vector_lengths = {4, 8, 16, 32};
  s.matrix_bits = {16, 32};
  s.matrix_dimensions = {2, 4, 8, 16};
  s.regression_bits = 8;
  s.regression_shapes = {{200, 10}, {200, 20}, {300, 10}, {300, 20}};
  return s;
}

// Small enough that every item runs in well under a second on toy_INSECURE.
Sizes quick_sizes() {
  Sizes s;
  s.gate_bits = {2, 8};
  s.adder_bits = {8};
  s.multiplier_bits = {8};
  s.vector_bits = {8};
  s.vector_lengths = {2, 4};
  s.matrix_bits = {8};
  s.matrix_dimensions = {2};
  s.regression_bits = 4;
  s.regression_shapes = {{8, 2}, {12, 3}};
  return s;
}

// "u16", "s8": built by appending (GCC 12 warns falsely on "u" + std::to_string(...)).
std::string type_name(char prefix, std::size_t bits) {
  std::string s(1, prefix);
  s += std::to_string(bits);
  return s;
}
std::string uint_type(std::size_t bits) { return type_name('u', bits); }

Item gate_item(WorkloadKind kind, const char* group, const char* workload, const char* panel,
               const char* variant, std::size_t bits) {
  Item it;
  it.kind = kind;
  it.group = group;
  it.workload = workload;
  it.panel = panel;
  it.variant = variant;
  it.bits = bits;
  it.size = std::to_string(bits) + " bits";
  it.x_name = "bits";
  it.x = static_cast<double>(bits);
  return it;
}

Item catalog_item(const char* group, const std::string& workload, const std::string& operation,
                  std::size_t bits, std::size_t length) {
  Item it;
  it.kind = WorkloadKind::CatalogOp;
  it.group = group;
  it.workload = workload;
  it.operation = operation;
  it.bits = bits;
  it.length = length;
  if (length == 1) {
    it.panel = workload;
    it.size = uint_type(bits);
    it.x_name = "bits";
    it.x = static_cast<double>(bits);
  } else {
    it.panel = workload + " " + uint_type(bits);
    it.size = uint_type(bits) + " x" + std::to_string(length);
    it.x_name = "length";
    it.x = static_cast<double>(length);
  }
  return it;
}

Item matrix_item(WorkloadKind kind, std::size_t bits, std::size_t q) {
  Item it;
  it.kind = kind;
  it.group = "matrix";
  it.workload = kind == WorkloadKind::MatMul ? "matmul" : "cannon";
  it.panel = "matrix product " + uint_type(bits);
  it.variant = kind == WorkloadKind::MatMul ? "matmul (one schedule)" : "Cannon (q steps)";
  it.bits = bits;
  it.dimension = q;
  it.length = q * q;
  it.size = uint_type(bits) + " " + std::to_string(q) + "x" + std::to_string(q);
  it.x_name = "dimension";
  it.x = static_cast<double>(q);
  return it;
}

Item regression_item(bool binary, std::size_t bits, std::size_t rows, std::size_t attributes) {
  Item it;
  it.kind = WorkloadKind::Regression;
  it.group = "regression";
  it.workload = binary ? "regression.binary" : "regression.numeric";
  it.binary = binary;
  it.bits = binary ? 1 : bits;
  const std::string type = binary ? "u1" : type_name('s', bits);
  it.panel = "X^T X, X^T y " + std::string(binary ? "binary " : "numeric ") + type;
  it.rows = rows;
  it.attributes = attributes;
  it.length = rows * attributes;
  it.size = std::to_string(rows) + "x" + std::to_string(attributes) + " " + type;
  it.x_name = "values";  // rows x attributes
  it.x = static_cast<double>(rows * attributes);
  return it;
}

}  // namespace

std::vector<std::string> group_names() {
  return {"gates", "compound", "addition", "vector", "multiplication", "matrix", "regression"};
}

std::vector<Item> all_items(bool quick) {
  const Sizes s = quick ? quick_sizes() : full_sizes();
  std::vector<Item> items;
  using K = WorkloadKind;
  for (const std::size_t n : s.gate_bits) {
    items.push_back(gate_item(K::GateCoalesced, "gates", "gate.coalesced", "AND gate on n bits",
                              "coalesced (one batch)", n));
    items.push_back(gate_item(K::GateOneByOne, "gates", "gate.one-by-one", "AND gate on n bits",
                              "one bit per batch", n));
  }
  for (const std::size_t n : s.gate_bits) {
    items.push_back(gate_item(K::AndXorCompound, "compound", "and-xor.compound",
                              "AND + XOR of n bit pairs", "compound (one batch)", n));
    items.push_back(gate_item(K::AndXorSeparate, "compound", "and-xor.separate",
                              "AND + XOR of n bit pairs", "separate (two batches)", n));
    items.push_back(gate_item(K::FullAdderCompound, "compound", "full-adder.compound",
                              "n full adders", "compound XOR3 + MAJ (1 level)", n));
    items.push_back(gate_item(K::FullAdderTwoInput, "compound", "full-adder.two-input",
                              "n full adders", "two-input gates (3 levels)", n));
  }
  for (const char* adder : {"ripple", "number-wise", "kogge-stone", "sklansky"})
    for (const std::size_t bits : s.adder_bits)
      items.push_back(catalog_item("addition", std::string("add.") + adder,
                                   std::string("add.") + adder, bits, 1));
  for (const std::size_t bits : s.vector_bits)
    for (const std::size_t length : s.vector_lengths) {
      items.push_back(catalog_item("vector", "vector.add", "add.sklansky", bits, length));
      items.push_back(catalog_item("vector", "vector.mul", "mul.wrapping.dadda", bits, length));
    }
  for (const char* multiplier : {"dadda", "tree", "karatsuba"})
    for (const std::size_t bits : s.multiplier_bits)
      items.push_back(catalog_item("multiplication", std::string("mul.wrapping.") + multiplier,
                                   std::string("mul.wrapping.") + multiplier, bits, 1));
  for (const std::size_t bits : s.matrix_bits)
    for (const std::size_t q : s.matrix_dimensions) {
      items.push_back(matrix_item(K::MatMul, bits, q));
      items.push_back(matrix_item(K::Cannon, bits, q));
    }
  for (const bool binary : {false, true})
    for (const auto& [rows, attributes] : s.regression_shapes)
      items.push_back(regression_item(binary, s.regression_bits, rows, attributes));
  return items;
}

std::vector<Item> select_items(const std::vector<Item>& items,
                               const std::vector<std::string>& names) {
  std::vector<std::string> known = group_names();
  for (const Item& it : items)
    if (std::find(known.begin(), known.end(), it.workload) == known.end())
      known.push_back(it.workload);
  for (const std::string& name : names) {
    if (name != "all" && std::find(known.begin(), known.end(), name) == known.end()) {
      std::string list;
      for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
      throw InvalidArgument("--workloads: unknown group or workload '" + name +
                            "'; expected all or one of: " + list);
    }
  }
  const auto named = [&](const std::string& s) {
    return std::find(names.begin(), names.end(), s) != names.end();
  };
  std::vector<Item> out;
  for (const Item& it : items)
    if (named("all") || named(it.group) || named(it.workload)) out.push_back(it);
  return out;
}

Item calibration_item(std::size_t bits) {
  return gate_item(WorkloadKind::GateCoalesced, "gates", "gate.coalesced", "AND gate on n bits",
                   "coalesced (one batch)", bits);
}

}  // namespace torusgate::apps::compare
