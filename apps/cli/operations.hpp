// The operations of `torusgate eval --op`: names, operand counts, what each computes, the
// checks on the operand files, and the circuit each records (circuits/ does the work).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "torusgate/circuits/netlist.hpp"
#include "values.hpp"

namespace torusgate::cli {

// An operand of eval: the file it came from (for messages), its integer type and shape.
struct Operand {
  std::string file;
  circuits::IntType type;
  Shape shape;
};

// How the operands of an operation must relate.
enum class OperandRule {
  Single,         // one operand of any type and shape
  SignedSingle,   // one signed operand
  SameShape,      // two operands of the same type and shape (element-wise)
  Amount,         // x of any type and shape, an unsigned amount per element of x or one in all
  SameCount,      // two operands of the same type and element count (dot)
  MatrixProduct,  // two operands of the same type, A (r x k) and B (k x s)
};

// What eval's options add to an operation: --width (0: none) and lut's --table (entries as
// uint64 bit patterns of table_type, one per value of x from the smallest).
struct EvalArgs {
  std::size_t width = 0;
  std::vector<std::uint64_t> table;
  circuits::IntType table_type;
};

struct Operation {
  std::string_view name;
  OperandRule rule;
  bool takes_width;          // --width sets the result width (sum, dot, matmul, lut)
  bool doubles_width;        // the result is twice as wide as the operands (mul-full)
  std::string_view summary;  // one line: what the result is
  // Records the operation on `in` (rule's operand count) with eval's options.
  circuits::Expr (*record)(circuits::Circuit& c, std::span<const circuits::Expr> in,
                           const EvalArgs& args);
  bool takes_table = false;  // --table gives the operation's table (lut)

  std::size_t arity() const {
    return rule == OperandRule::Single || rule == OperandRule::SignedSingle ? 1 : 2;
  }
};

// Every operation, in the order --help lists them.
std::span<const Operation> operations();
// The operation `name`; throws UsageError listing the names otherwise.
const Operation& find_operation(std::string_view name);
// "add, sub, mul, ..." for messages and help.
std::string operation_names();

// Throws CommandError, naming the files and what the operation needs, unless `operands` suit
// `op` (their count is checked by the caller).
void check_operands(const Operation& op, std::span<const Operand> operands);

}  // namespace torusgate::cli
