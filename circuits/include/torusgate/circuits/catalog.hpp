// The catalog of integer operations with their plaintext reference semantics: one list that
// the tests (exhaustive and random checks, gate-count regressions), the cost table of
// docs/circuits.md (apps/circuit_costs) and the benchmark (apps/bench_circuits) all iterate.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "torusgate/circuits/netlist.hpp"

namespace torusgate::circuits {

struct Operation {
  std::string name;       // "add.sklansky", "mul.full.dadda", "less", ...
  std::string summary;    // one line for tables
  int arity = 2;          // 1: only x is used
  bool unsigned_ok = true;
  bool signed_ok = true;
  bool unsigned_result = false;  // unsigned whatever the operands are (abs, bit counts)
  bool is_default = false;  // the default algorithm of its family (add, mul.wrapping, ...)
  // Records the operation on element-wise operands x and y (y unused when arity is 1).
  std::function<Expr(Circuit&, const Expr&, const Expr&)> record;
  // The exact result for operand values (as mathematical integers, inside their type); the
  // circuit must equal it modulo 2^(result width).
  std::function<__int128(__int128 x, __int128 y, IntType type)> reference;
  // Result width for operands of `width` bits.
  std::function<std::size_t(std::size_t width)> result_width;
};

const std::vector<Operation>& operation_catalog();
// The operation named `name`, or nullptr.
const Operation* operation_named(const std::string& name);
// Every operation's name in catalog order, comma-separated.
std::string operation_names();
// Throws InvalidArgument listing the names when `name` is not in the catalog.
const Operation& find_operation(const std::string& name);

}  // namespace torusgate::circuits
