// The operation catalog.
#include "torusgate/circuits/catalog.hpp"

#include <bit>
#include <cstdint>

#include "torusgate/circuits/arithmetic.hpp"
#include "torusgate/circuits/bits.hpp"
#include "torusgate/circuits/divide.hpp"
#include "torusgate/circuits/multiply.hpp"
#include "torusgate/core/error.hpp"

namespace torusgate::circuits {
namespace {

using Record = std::function<Expr(Circuit&, const Expr&, const Expr&)>;
using Reference = std::function<__int128(__int128, __int128, IntType)>;

std::size_t same_width(std::size_t w) { return w; }
std::size_t one_bit(std::size_t) { return 1; }
std::size_t double_width(std::size_t w) { return 2 * w; }

// The two's complement bits of v in `width` bits, read back in the type.
__int128 wrap(__int128 v, IntType type) {
  const unsigned w = static_cast<unsigned>(type.width);
  unsigned __int128 u = static_cast<unsigned __int128>(v);
  if (w < 128) u &= (static_cast<unsigned __int128>(1) << w) - 1;
  if (type.is_signed && w < 128 && ((u >> (w - 1)) & 1)) u |= ~static_cast<unsigned __int128>(0) << w;
  return static_cast<__int128>(u);
}

Operation op(std::string name, std::string summary, int arity, Record record, Reference reference,
             std::size_t (*result_width)(std::size_t) = same_width) {
  Operation o;
  o.name = std::move(name);
  o.summary = std::move(summary);
  o.arity = arity;
  o.record = std::move(record);
  o.reference = std::move(reference);
  o.result_width = result_width;
  return o;
}

std::vector<Operation> build() {
  std::vector<Operation> ops;
  ops.push_back(op("not", "bitwise NOT (free)", 1,
                   [](Circuit&, const Expr& x, const Expr&) { return bit_not(x); },
                   [](__int128 x, __int128, IntType) { return ~x; }));
  ops.push_back(op("and", "bitwise AND", 2,
                   [](Circuit& c, const Expr& x, const Expr& y) { return bit_and(c, x, y); },
                   [](__int128 x, __int128 y, IntType) { return x & y; }));
  ops.push_back(op("or", "bitwise OR", 2,
                   [](Circuit& c, const Expr& x, const Expr& y) { return bit_or(c, x, y); },
                   [](__int128 x, __int128 y, IntType) { return x | y; }));
  ops.push_back(op("xor", "bitwise XOR", 2,
                   [](Circuit& c, const Expr& x, const Expr& y) { return bit_xor(c, x, y); },
                   [](__int128 x, __int128 y, IntType) { return x ^ y; }));
  ops.push_back(op("select", "x_0 ? x : y (MUX per bit)", 2,
                   [](Circuit& c, const Expr& x, const Expr& y) {
                     return select(c, bit_range(x, 0, 1), x, y);
                   },
                   [](__int128 x, __int128 y, IntType) { return (x & 1) ? x : y; }));
  for (AdderKind kind : {AdderKind::Ripple, AdderKind::NumberWise, AdderKind::KoggeStone,
                         AdderKind::Sklansky}) {
    Operation o = op("add." + std::string(adder_name(kind)), "x + y", 2,
                     [kind](Circuit& c, const Expr& x, const Expr& y) { return add(c, x, y, kind); },
                     [](__int128 x, __int128 y, IntType) { return x + y; });
    o.is_default = kind == default_adder;
    ops.push_back(std::move(o));
  }
  ops.push_back(op("subtract", "x - y", 2,
                   [](Circuit& c, const Expr& x, const Expr& y) { return subtract(c, x, y); },
                   [](__int128 x, __int128 y, IntType) { return x - y; }));
  ops.push_back(op("negate", "-x", 1,
                   [](Circuit& c, const Expr& x, const Expr&) { return negate(c, x); },
                   [](__int128 x, __int128, IntType) { return -x; }));
  {
    Operation o = op("abs", "|x| (unsigned result)", 1,
                     [](Circuit& c, const Expr& x, const Expr&) { return abs(c, x); },
                     [](__int128 x, __int128, IntType) { return x < 0 ? -x : x; });
    o.unsigned_ok = false;
    o.unsigned_result = true;
    ops.push_back(std::move(o));
  }
  const auto cmp = [&](std::string name, std::string summary,
                       Expr (*fn)(Circuit&, const Expr&, const Expr&),
                       bool (*ref)(__int128, __int128)) {
    ops.push_back(op(std::move(name), std::move(summary), 2,
                     [fn](Circuit& c, const Expr& x, const Expr& y) { return fn(c, x, y); },
                     [ref](__int128 x, __int128 y, IntType) -> __int128 { return ref(x, y) ? 1 : 0; },
                     one_bit));
  };
  cmp("equal", "x == y", equal, [](__int128 x, __int128 y) { return x == y; });
  cmp("not_equal", "x != y", not_equal, [](__int128 x, __int128 y) { return x != y; });
  cmp("less", "x < y", less, [](__int128 x, __int128 y) { return x < y; });
  cmp("less_equal", "x <= y", less_equal, [](__int128 x, __int128 y) { return x <= y; });
  cmp("greater", "x > y", greater, [](__int128 x, __int128 y) { return x > y; });
  cmp("greater_equal", "x >= y", greater_equal, [](__int128 x, __int128 y) { return x >= y; });
  ops.push_back(op("min", "min(x, y)", 2,
                   [](Circuit& c, const Expr& x, const Expr& y) { return min(c, x, y); },
                   [](__int128 x, __int128 y, IntType) { return x < y ? x : y; }));
  ops.push_back(op("max", "max(x, y)", 2,
                   [](Circuit& c, const Expr& x, const Expr& y) { return max(c, x, y); },
                   [](__int128 x, __int128 y, IntType) { return x < y ? y : x; }));
  // x's n-bit pattern (unsigned); shift amounts are y's, bit counts count x's.
  const auto pattern = [](__int128 x, IntType t) {
    return static_cast<unsigned __int128>(wrap(x, IntType{t.width, false}));
  };
  // x's n-bit pattern rotated by s mod n.
  const auto rotated = [pattern](__int128 x, unsigned __int128 s, IntType t,
                                 bool left) -> __int128 {
    const unsigned w = static_cast<unsigned>(t.width);
    const unsigned __int128 u = pattern(x, t);
    unsigned k = static_cast<unsigned>(s % w);
    if (!left) k = (w - k) % w;
    const unsigned __int128 r = (u << k) | (u >> ((w - k) % w));
    return static_cast<__int128>(pattern(static_cast<__int128>(r), t));
  };
  ops.push_back(op("shift_left.1", "x << 1 (free)", 1,
                   [](Circuit&, const Expr& x, const Expr&) { return shift_left(x, 1); },
                   [](__int128 x, __int128, IntType) { return x * 2; }));
  ops.push_back(op("shift_right.1", "x >> 1, arithmetic if signed (free)", 1,
                   [](Circuit&, const Expr& x, const Expr&) { return shift_right(x, 1); },
                   [](__int128 x, __int128, IntType) { return x >> 1; }));
  ops.push_back(op("rotate_left.3", "rotate x left by 3 (free)", 1,
                   [](Circuit&, const Expr& x, const Expr&) { return rotate_left(x, 3); },
                   [rotated](__int128 x, __int128, IntType t) { return rotated(x, 3, t, true); }));
  // By an encrypted amount: y's bits read as unsigned, nothing undefined (bits.hpp).
  ops.push_back(op("shift_left", "x << y (y unsigned; 0 for y >= n)", 2,
                   [](Circuit& c, const Expr& x, const Expr& y) {
                     return shift_left(c, x, y.as_signed(false));
                   },
                   [pattern](__int128 x, __int128 y, IntType t) -> __int128 {
                     const unsigned __int128 s = pattern(y, t);
                     if (s >= t.width) return 0;
                     return static_cast<__int128>(static_cast<unsigned __int128>(x) << s);
                   }));
  ops.push_back(op("shift_right", "x >> y (arithmetic if signed; y unsigned)", 2,
                   [](Circuit& c, const Expr& x, const Expr& y) {
                     return shift_right(c, x, y.as_signed(false));
                   },
                   [pattern](__int128 x, __int128 y, IntType t) -> __int128 {
                     const unsigned __int128 s = pattern(y, t);
                     if (s >= t.width) return x < 0 ? -1 : 0;
                     return x >> static_cast<unsigned>(s);
                   }));
  ops.push_back(op("rotate_left", "x rotated left by y mod n", 2,
                   [](Circuit& c, const Expr& x, const Expr& y) {
                     return rotate_left(c, x, y.as_signed(false));
                   },
                   [rotated, pattern](__int128 x, __int128 y, IntType t) {
                     return rotated(x, pattern(y, t), t, true);
                   }));
  ops.push_back(op("rotate_right", "x rotated right by y mod n", 2,
                   [](Circuit& c, const Expr& x, const Expr& y) {
                     return rotate_right(c, x, y.as_signed(false));
                   },
                   [rotated, pattern](__int128 x, __int128 y, IntType t) {
                     return rotated(x, pattern(y, t), t, false);
                   }));
  // Bit counts of the n-bit pattern (all 128 bits of it: widths above 64 too), as unsigned
  // n-bit results.
  using U128 = unsigned __int128;
  const auto count = [&](std::string name, std::string summary, Expr (*fn)(Circuit&, const Expr&),
                         __int128 (*ref)(std::uint64_t lo, std::uint64_t hi, unsigned width)) {
    Operation o = op(
        std::move(name), std::move(summary), 1,
        [fn](Circuit& c, const Expr& x, const Expr&) { return fn(c, x); },
        [pattern, ref](__int128 x, __int128, IntType t) {
          const U128 u = pattern(x, t);
          return ref(static_cast<std::uint64_t>(u), static_cast<std::uint64_t>(u >> 64),
                     static_cast<unsigned>(t.width));
        });
    o.unsigned_result = true;
    ops.push_back(std::move(o));
  };
  count("count_ones", "bits set in x", count_ones,
        [](std::uint64_t lo, std::uint64_t hi, unsigned) -> __int128 {
          return std::popcount(lo) + std::popcount(hi);
        });
  count("leading_zeros", "zero bits above x's highest set bit (n for 0)", leading_zeros,
        [](std::uint64_t lo, std::uint64_t hi, unsigned w) -> __int128 {
          return w - (hi != 0 ? 64 + std::bit_width(hi) : std::bit_width(lo));
        });
  count("trailing_zeros", "zero bits below x's lowest set bit (n for 0)", trailing_zeros,
        [](std::uint64_t lo, std::uint64_t hi, unsigned w) -> __int128 {
          if (lo != 0) return std::countr_zero(lo);
          return hi == 0 ? w : 64 + static_cast<unsigned>(std::countr_zero(hi));
        });
  ops.push_back(op("widen", "x extended to 2n bits (free)", 1,
                   [](Circuit&, const Expr& x, const Expr&) { return resize(x, 2 * x.width()); },
                   [](__int128 x, __int128, IntType) { return x; }, double_width));
  for (MultiplierKind kind : {MultiplierKind::Dadda, MultiplierKind::Tree, MultiplierKind::Karatsuba}) {
    for (Product product : {Product::Wrapping, Product::Full}) {
      const bool full = product == Product::Full;
      Operation o = op(std::string(full ? "mul.full." : "mul.wrapping.") +
                           std::string(multiplier_name(kind)),
                       full ? "x * y, 2n-bit result" : "x * y mod 2^n", 2,
                       [kind, product](Circuit& c, const Expr& x, const Expr& y) {
                         return multiply(c, x, y, product, kind);
                       },
                       // 64 x 64-bit operands: multiply without signed overflow.
                       [](__int128 x, __int128 y, IntType) {
                         return static_cast<__int128>(static_cast<unsigned __int128>(x) *
                                                      static_cast<unsigned __int128>(y));
                       },
                       full ? double_width : same_width);
      o.is_default = kind == default_multiplier;
      ops.push_back(std::move(o));
    }
  }
  ops.push_back(op("mul.constant", "x * 89 mod 2^n (no AND gates)", 1,
                   [](Circuit& c, const Expr& x, const Expr&) { return multiply_constant(c, x, 89); },
                   [](__int128 x, __int128, IntType) { return x * 89; }));
  ops.push_back(op("mul.constant.negative", "x * -3 mod 2^n (no AND gates)", 1,
                   [](Circuit& c, const Expr& x, const Expr&) { return multiply_constant(c, x, -3); },
                   [](__int128 x, __int128, IntType) { return x * -3; }));
  // Division: C++'s truncation, and RISC-V's results where C++ leaves them undefined.
  const auto quotient_of = [](__int128 x, __int128 y) -> __int128 { return y == 0 ? -1 : x / y; };
  const auto remainder_of = [](__int128 x, __int128 y) -> __int128 { return y == 0 ? x : x % y; };
  ops.push_back(op("divide", "x / y, truncated (x / 0: all ones)", 2,
                   [](Circuit& c, const Expr& x, const Expr& y) { return divide(c, x, y); },
                   [quotient_of](__int128 x, __int128 y, IntType) { return quotient_of(x, y); }));
  ops.push_back(op("remainder", "x % y, sign of x (x % 0 = x)", 2,
                   [](Circuit& c, const Expr& x, const Expr& y) { return remainder(c, x, y); },
                   [remainder_of](__int128 x, __int128 y, IntType) { return remainder_of(x, y); }));
  // By the constant 10 as an n-bit value of the operand's type (0 at 1 bit, -6 as s4, ...).
  const auto ten = [](IntType t) { return wrap(10, t); };
  const auto ten_for = [ten](Circuit& c, const Expr& x) {
    const std::uint64_t bits = static_cast<std::uint64_t>(ten(x.type()));
    const std::uint64_t mask =
        x.width() >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << x.width()) - 1;
    return c.constant(bits & mask, IntType{x.width(), false}, x.lanes())
        .as_signed(x.is_signed())
        .reshape(x.rows(), x.cols());
  };
  ops.push_back(op("divide.constant", "x / 10 (10 wrapped to n bits)", 1,
                   [ten_for](Circuit& c, const Expr& x, const Expr&) {
                     return divide(c, x, ten_for(c, x));
                   },
                   [quotient_of, ten](__int128 x, __int128, IntType t) {
                     return quotient_of(x, ten(t));
                   }));
  ops.push_back(op("remainder.constant", "x % 10 (10 wrapped to n bits)", 1,
                   [ten_for](Circuit& c, const Expr& x, const Expr&) {
                     return remainder(c, x, ten_for(c, x));
                   },
                   [remainder_of, ten](__int128 x, __int128, IntType t) {
                     return remainder_of(x, ten(t));
                   }));
  // References wrap to the result type (two's complement) so that callers compare bits.
  for (Operation& o : ops) {
    auto ref = o.reference;
    auto rw = o.result_width;
    const bool is_compare = o.result_width(8) == 1;
    const bool unsigned_result = o.unsigned_result;
    o.reference = [ref, rw, is_compare, unsigned_result](__int128 x, __int128 y, IntType t) {
      const IntType out{rw(t.width), t.is_signed && !is_compare && !unsigned_result};
      return wrap(ref(x, y, t), out);
    };
  }
  return ops;
}

}  // namespace

const std::vector<Operation>& operation_catalog() {
  static const std::vector<Operation> ops = build();
  return ops;
}

const Operation* operation_named(const std::string& name) {
  for (const Operation& o : operation_catalog())
    if (o.name == name) return &o;
  return nullptr;
}

std::string operation_names() {
  std::string names;
  for (const Operation& o : operation_catalog()) names += (names.empty() ? "" : ", ") + o.name;
  return names;
}

const Operation& find_operation(const std::string& name) {
  if (const Operation* o = operation_named(name)) return *o;
  throw InvalidArgument("find_operation: no operation '" + name + "'; the catalog has " +
                        operation_names());
}

}  // namespace torusgate::circuits
