// The operation table of `torusgate eval` and the checks on its operands (operations.hpp).
#include "operations.hpp"

#include <array>

#include "errors.hpp"
#include "torusgate/circuits/circuits.hpp"

namespace torusgate::cli {
namespace {

using circuits::Circuit;
using circuits::Expr;
using Inputs = std::span<const Expr>;

// Element-wise binary operations and their summaries.
#define TG_BINARY(name, summary, call)                          \
  Operation {                                                   \
    name, OperandRule::SameShape, false, false, summary,        \
        [](Circuit& c, Inputs in, const EvalArgs&) { return call; } \
  }

// By an unsigned amount (one per element or one for all), of any width.
#define TG_AMOUNT(name, summary, fn)                                              \
  Operation {                                                                     \
    name, OperandRule::Amount, false, false, summary,                             \
        [](Circuit& c, Inputs in, const EvalArgs&) { return fn(c, in[0], in[1]); } \
  }

// One operand of any type and shape: fn(c, x).
#define TG_UNARY(name, summary, fn)                                           \
  Operation {                                                                 \
    name, OperandRule::Single, false, false, summary,                         \
        [](Circuit& c, Inputs in, const EvalArgs&) { return fn(c, in[0]); } \
  }

const std::array<Operation, 37> operation_table = {{
    TG_BINARY("add", "x + y, modulo 2^w", circuits::add(c, in[0], in[1])),
    TG_BINARY("sub", "x - y, modulo 2^w", circuits::subtract(c, in[0], in[1])),
    TG_BINARY("mul", "x * y, modulo 2^w (w-bit product)", circuits::multiply(c, in[0], in[1])),
    Operation{"mul-full", OperandRule::SameShape, false, true,
              "x * y, exact (2w-bit product; w up to 64)",
              [](Circuit& c, Inputs in, const EvalArgs&) {
                return circuits::multiply(c, in[0], in[1], circuits::Product::Full);
              }},
    TG_BINARY("div", "x / y, truncated toward zero (x / 0: all ones)",
              circuits::divide(c, in[0], in[1])),
    TG_BINARY("rem", "x % y, with the sign of x (x % 0: x)",
              circuits::remainder(c, in[0], in[1])),
    Operation{"neg", OperandRule::Single, false, false, "-x, modulo 2^w",
              [](Circuit& c, Inputs in, const EvalArgs&) { return circuits::negate(c, in[0]); }},
    Operation{"abs", OperandRule::SignedSingle, false, false,
              "|x| of signed x, as a w-bit unsigned integer",
              [](Circuit& c, Inputs in, const EvalArgs&) { return circuits::abs(c, in[0]); }},
    TG_BINARY("lt", "x < y (1-bit result, 1 for true)", circuits::less(c, in[0], in[1])),
    TG_BINARY("le", "x <= y (1-bit)", circuits::less_equal(c, in[0], in[1])),
    TG_BINARY("gt", "x > y (1-bit)", circuits::greater(c, in[0], in[1])),
    TG_BINARY("ge", "x >= y (1-bit)", circuits::greater_equal(c, in[0], in[1])),
    TG_BINARY("eq", "x == y (1-bit)", circuits::equal(c, in[0], in[1])),
    TG_BINARY("ne", "x != y (1-bit)", circuits::not_equal(c, in[0], in[1])),
    TG_BINARY("min", "the smaller of x and y", circuits::min(c, in[0], in[1])),
    TG_BINARY("max", "the larger of x and y", circuits::max(c, in[0], in[1])),
    TG_BINARY("and", "bitwise x AND y", circuits::bit_and(c, in[0], in[1])),
    TG_BINARY("or", "bitwise x OR y", circuits::bit_or(c, in[0], in[1])),
    TG_BINARY("xor", "bitwise x XOR y", circuits::bit_xor(c, in[0], in[1])),
    TG_AMOUNT("shl", "x << s (s unsigned; 0 for s >= w)", circuits::shift_left),
    TG_AMOUNT("shr", "x >> s (arithmetic if x is signed; s unsigned)", circuits::shift_right),
    TG_AMOUNT("rotl", "x rotated left by s mod w (s unsigned)", circuits::rotate_left),
    TG_AMOUNT("rotr", "x rotated right by s mod w (s unsigned)", circuits::rotate_right),
    TG_UNARY("popcount", "the number of bits set (unsigned, w bits)", circuits::count_ones),
    TG_UNARY("clz", "zero bits above the highest set bit (w for 0; unsigned)",
             circuits::leading_zeros),
    TG_UNARY("ctz", "zero bits below the lowest set bit (w for 0; unsigned)",
             circuits::trailing_zeros),
    TG_UNARY("sort", "every row of x in ascending order (x's shape)", circuits::sort),
    Operation{"sort-desc", OperandRule::Single, false, false,
              "every row of x in descending order (x's shape)",
              [](Circuit& c, Inputs in, const EvalArgs&) { return circuits::sort(c, in[0], true); }},
    TG_UNARY("row-min", "the smallest element of every row (one column)", circuits::min_element),
    TG_UNARY("row-max", "the largest element of every row (one column)", circuits::max_element),
    TG_UNARY("argmin", "the first column of every row's smallest element (unsigned)",
             circuits::argmin),
    TG_UNARY("argmax", "the first column of every row's largest element (unsigned)",
             circuits::argmax),
    Operation{"lut", OperandRule::Single, true, false,
              "table[x] for --table, one entry per value of x from the smallest (x up to 16 "
              "bits; --width bits, default w; signed if an entry is negative)",
              [](Circuit& c, Inputs in, const EvalArgs& a) {
                return circuits::lookup(c, in[0], a.table, a.table_type);
              },
              true},
    Operation{"not", OperandRule::Single, false, false, "bitwise NOT x (free: no bootstrap)",
              [](Circuit&, Inputs in, const EvalArgs&) { return circuits::bit_not(in[0]); }},
    Operation{
        "sum", OperandRule::Single, true, false,
        "the sum of all elements of x (one result, --width bits, default w)",
        [](Circuit& c, Inputs in, const EvalArgs& a) { return circuits::sum(c, in[0], a.width); }},
    Operation{"dot", OperandRule::SameCount, true, false,
              "sum of x[i] * y[i] (one result, --width bits, default w)",
              [](Circuit& c, Inputs in, const EvalArgs& a) {
                return circuits::dot(c, in[0], in[1], a.width);
              }},
    Operation{"matmul", OperandRule::MatrixProduct, true, false,
              "matrix product of x (r x k) and y (k x s): r x s results, --width bits",
              [](Circuit& c, Inputs in, const EvalArgs& a) {
                return circuits::matmul(c, in[0], in[1], a.width);
              }},
}};

#undef TG_BINARY
#undef TG_AMOUNT
#undef TG_UNARY

std::string shape_text(const Shape& s) {
  return std::to_string(s.rows) + " x " + std::to_string(s.cols);
}

std::string operand_text(const Operand& o) {
  return "'" + o.file + "' is " + type_name(o.type) + ", " + shape_text(o.shape);
}

}  // namespace

std::span<const Operation> operations() { return operation_table; }

std::string operation_names() {
  std::string names;
  for (const Operation& op : operation_table) {
    names += (names.empty() ? "" : ", ") + std::string(op.name);
  }
  return names;
}

const Operation& find_operation(std::string_view name) {
  for (const Operation& op : operation_table) {
    if (op.name == name) return op;
  }
  throw UsageError("unknown operation '" + std::string(name) + "'; expected one of " +
                   operation_names());
}

void check_operands(const Operation& op, std::span<const Operand> operands) {
  const std::string name(op.name);
  const Operand& x = operands[0];
  if (op.rule == OperandRule::SignedSingle && !x.type.is_signed) {
    throw CommandError(name + " needs a signed operand, but '" + x.file + "' is " +
                       type_name(x.type));
  }
  if (op.doubles_width && x.type.width > 64) {
    throw CommandError(name +
                       " gives a 2w-bit product of at most 128 bits, so w is at most 64, "
                       "but '" +
                       x.file + "' is " + type_name(x.type));
  }
  if (operands.size() < 2) return;
  const Operand& y = operands[1];
  const std::string both = operand_text(x) + " and " + operand_text(y);
  if (op.rule == OperandRule::Amount) {
    if (y.type.is_signed) {
      throw CommandError(name + " needs an unsigned amount, but " + operand_text(y) +
                         " (encrypt it without --signed)");
    }
    const std::size_t amounts = y.shape.rows * y.shape.cols;
    if (amounts != 1 && !(x.shape == y.shape)) {
      throw CommandError(name + " moves every element by its own amount or all by one, but " +
                         both + " (give the amounts the shape of x, or one amount)");
    }
    return;
  }
  if (!(x.type == y.type)) {
    throw CommandError(name + " needs two operands of the same type, but " + both +
                       " (encrypt both with the same --width and --signed)");
  }
  switch (op.rule) {
    case OperandRule::SameShape:
      if (!(x.shape == y.shape)) {
        throw CommandError(name +
                           " works element by element on operands of the same shape, "
                           "but " +
                           both);
      }
      break;
    case OperandRule::SameCount:
      if (x.shape.rows * x.shape.cols != y.shape.rows * y.shape.cols) {
        throw CommandError(name + " needs operands with the same number of elements, but " + both);
      }
      break;
    case OperandRule::MatrixProduct:
      if (x.shape.cols != y.shape.rows) {
        throw CommandError(name + " multiplies an r x k matrix by a k x s matrix, but " + both +
                           ": the first has " + std::to_string(x.shape.cols) +
                           " columns and the second " + std::to_string(y.shape.rows) + " rows");
      }
      break;
    case OperandRule::Single:
    case OperandRule::SignedSingle:
    case OperandRule::Amount:
      break;
  }
}

}  // namespace torusgate::cli
