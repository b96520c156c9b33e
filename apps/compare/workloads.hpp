// The workloads of the comparison runs (docs/comparison.md): what each one measures, at which
// sizes in full and in quick mode, and how --workloads selects them. Sizes follow the
// published GPU TFHE tables where they are known (16/24/32-bit operands, vector lengths 4 to
// 32, matrices 2 to 16, the regression shapes 200x10 to 300x20); docs/comparison.md says
// where we chose.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace torusgate::apps::compare {

enum class WorkloadKind {
  GateCoalesced,      // one AND over n coalesced bits: one batch of n bootstraps
  GateOneByOne,       // the same n ANDs, one evaluate() per bit: n batches of 1
  AndXorCompound,     // AND and XOR of the same n bit pairs in one batch: 2n bootstraps, 1 level
  AndXorSeparate,     // the same gates in two batches (AND, then XOR): 2 levels
  FullAdderCompound,  // n full adders, XOR3 + MAJ in one batch: 2n bootstraps, 1 level
  FullAdderTwoInput,  // n full adders of two-input gates (XOR, AND, XOR, AND, OR): 5n in 3 levels
  CatalogOp,          // an operation of the circuit catalog on `length` elements (add.*, mul.*)
  MatMul,             // q x q times q x q, every product in one schedule (fused bit heaps)
  Cannon,             // the same product by Cannon's algorithm, q steps of one element each
  Regression,         // X^T X and X^T y (with intercept) of a synthetic dataset
};

struct Item {
  WorkloadKind kind = WorkloadKind::GateCoalesced;
  std::string group;       // gates, compound, addition, vector, multiplication, matrix, regression
  std::string workload;    // gate.coalesced, add.sklansky, vector.add, matmul, ...
  std::string operation;   // CatalogOp: the catalog's name of the operation
  std::string panel;       // the plot panel this item is drawn in
  std::string variant;     // the line within the panel ("" when the panel has one workload)
  std::size_t bits = 0;    // operand width (gate items: number of coalesced bits)
  std::size_t length = 1;  // elements per operand (vectors)
  std::size_t dimension = 0;             // matrices: q
  std::size_t rows = 0, attributes = 0;  // regression dataset shape
  bool binary = false;                   // regression: binary (1-bit) features, not numeric
  std::string size;    // canonical size: "32 bits", "u32", "u16 x8", "u16 8x8", "200x10 s8"
  std::string x_name;  // the size axis of the plots: bits, length, dimension, values
  double x = 0;        // the item's position on it

  // Identifies the item in results and for --resume: "<workload> <size>".
  std::string key() const { return workload + " " + size; }
};

// Every item in run order (group by group, small sizes first); quick: the small CI sizes.
std::vector<Item> all_items(bool quick);

// Group names in run order.
std::vector<std::string> group_names();

// The items whose group or workload is named in `names` ("all" selects every item), in run
// order. Throws InvalidArgument naming the unknown name and listing the groups and workloads.
std::vector<Item> select_items(const std::vector<Item>& items,
                               const std::vector<std::string>& names);

// The AND batch of `bits` coalesced bits that calibrates a backend's speed (gate.coalesced).
Item calibration_item(std::size_t bits);

}  // namespace torusgate::apps::compare
