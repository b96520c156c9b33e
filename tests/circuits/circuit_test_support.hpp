// Helpers shared by the circuits/ tests: backend fixtures (plaintext, sequential, OpenMP),
// plaintext integer helpers (masks, random values, edge values), and a checker that runs an
// operation of the catalog on a backend and compares every lane with the catalog's reference.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "backend_fixtures.hpp"
#include "test_support.hpp"
#include "torusgate/circuits/circuits.hpp"
#include "torusgate/core/plaintext_backend.hpp"
#include "torusgate/cpu/cpu_backend.hpp"

namespace torusgate::test {

using u128 = unsigned __int128;
using i128 = __int128;

// ----------------------------------------------------------------------------- integers

inline u128 mask128(std::size_t width) {
  return width >= 128 ? ~u128{0} : (u128{1} << width) - 1;
}

// The value of a type as a mathematical integer from its uint64 bit pattern (signed values
// are passed as int64 bit patterns, as IntArray::encrypt takes them).
inline i128 value_of(std::uint64_t pattern, circuits::IntType type) {
  if (!type.is_signed) return static_cast<i128>(pattern);
  return static_cast<i128>(static_cast<std::int64_t>(pattern));
}

// The uint64 pattern of the n-bit value v (two's complement, sign-extended for signed types).
inline std::uint64_t pattern_of(i128 v, circuits::IntType type) {
  u128 u = static_cast<u128>(v) & mask128(type.width);
  if (type.is_signed && type.width < 128 && ((u >> (type.width - 1)) & 1)) u |= ~mask128(type.width);
  return static_cast<std::uint64_t>(u);
}

inline std::string to_string128(i128 v) {
  if (v == 0) return "0";
  const bool neg = v < 0;
  u128 u = neg ? u128(0) - static_cast<u128>(v) : static_cast<u128>(v);
  std::string s;
  while (u != 0) {
    s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(u % 10)));
    u /= 10;
  }
  return neg ? "-" + s : s;
}
inline std::string hex128(u128 v) {
  std::ostringstream out;
  out << "0x" << std::hex << static_cast<std::uint64_t>(v >> 64) << ":"
      << static_cast<std::uint64_t>(v);
  return out.str();
}

// Every value of a type (width <= 16) as uint64 patterns.
inline std::vector<std::uint64_t> all_values(circuits::IntType type) {
  std::vector<std::uint64_t> v;
  const std::uint64_t count = std::uint64_t{1} << type.width;
  for (std::uint64_t u = 0; u < count; ++u) v.push_back(pattern_of(static_cast<i128>(u), type));
  return v;
}

// 0, 1, 2, max, min, -1 (and max - 1, min + 1) of a type, as patterns (duplicates kept).
inline std::vector<std::uint64_t> edge_values(circuits::IntType type) {
  const std::size_t w = type.width;
  i128 lo = 0, hi = static_cast<i128>(mask128(w));
  if (type.is_signed) {
    hi = (i128{1} << (w - 1)) - 1;
    lo = -(i128{1} << (w - 1));
  }
  std::vector<std::uint64_t> v;
  for (i128 x : {i128{0}, i128{1}, i128{2}, hi, hi - 1, lo, lo + 1, i128{-1}})
    v.push_back(pattern_of(x, type));
  return v;
}

// A uniformly random value of a type, as a pattern.
inline std::uint64_t random_value(Csprng& rng, circuits::IntType type) {
  return pattern_of(static_cast<i128>(rng.uniform_u64()), type);
}

inline std::vector<std::uint64_t> random_values(Csprng& rng, circuits::IntType type,
                                                std::size_t count) {
  std::vector<std::uint64_t> v(count);
  for (auto& x : v) x = random_value(rng, type);
  return v;
}

// Element e of a bit-plane layout (bit j of element e at j * lanes + e), `width` <= 128 bits,
// zero-extended.
inline std::vector<u128> decode128(const std::vector<std::uint8_t>& bits, std::size_t width,
                                   std::size_t lanes) {
  REQUIRE(bits.size() == width * lanes);
  std::vector<u128> out(lanes, 0);
  for (std::size_t j = 0; j < width; ++j)
    for (std::size_t e = 0; e < lanes; ++e)
      if (bits[j * lanes + e]) out[e] |= u128{1} << j;
  return out;
}

// ----------------------------------------------------------------------------- catalog checks

// Lane-by-lane comparison of got (masked to `width` bits) with the reference values (masked);
// returns a description of the first few mismatches, or "" when all match.
inline std::string compare_lanes(const std::vector<u128>& got, const std::vector<i128>& want,
                                 std::size_t width, const std::vector<std::uint64_t>& xs,
                                 const std::vector<std::uint64_t>& ys, circuits::IntType type) {
  std::ostringstream out;
  std::size_t bad = 0;
  for (std::size_t e = 0; e < got.size(); ++e) {
    const u128 g = got[e] & mask128(width), w = static_cast<u128>(want[e]) & mask128(width);
    if (g == w) continue;
    if (bad < 5) {
      out << "lane " << e << ": x = " << to_string128(value_of(xs[e], type));
      if (!ys.empty()) out << ", y = " << to_string128(value_of(ys[e], type));
      out << ": expected " << hex128(w) << ", got " << hex128(g) << "\n";
    }
    ++bad;
  }
  if (bad > 5) out << "... " << bad << " mismatching lanes in all\n";
  return out.str();
}

// What one catalog run produced: the output bits and the schedule's cost.
struct OpRun {
  std::vector<u128> values;  // result lanes, zero-extended from result_width bits
  circuits::ScheduleCost cost;
};

// Runs `op` on lanes xs (and ys for binary operations) of `type` on a fixture's backend.
template <class F>
OpRun run_operation(F& f, const circuits::Operation& op, circuits::IntType type,
                    const std::vector<std::uint64_t>& xs, const std::vector<std::uint64_t>& ys,
                    Csprng& rng) {
  using B = typename F::Backend;
  const auto ax = circuits::IntArray<B>::encrypt(f.be, f.key, xs, type, rng);
  circuits::Program<B> prog(f.be);
  const circuits::Expr x = prog.input(ax);
  circuits::Expr out;
  std::optional<circuits::IntArray<B>> ay;
  if (op.arity == 2) {
    ay.emplace(circuits::IntArray<B>::encrypt(f.be, f.key, ys, type, rng));
    out = op.record(prog.circuit(), x, prog.input(*ay));
  } else {
    out = op.record(prog.circuit(), x, x);
  }
  const std::size_t rw = op.result_width(type.width);
  REQUIRE(out.width() == rw);
  REQUIRE(out.lanes() == xs.size());
  const circuits::IntArray<B> r = prog.run(out);
  return OpRun{decode128(r.decrypt_bits(f.be, f.key), rw, xs.size()), prog.last_schedule().cost};
}

// The reference results of `op` on the lanes.
inline std::vector<i128> reference_lanes(const circuits::Operation& op, circuits::IntType type,
                                         const std::vector<std::uint64_t>& xs,
                                         const std::vector<std::uint64_t>& ys) {
  std::vector<i128> want(xs.size());
  for (std::size_t e = 0; e < xs.size(); ++e)
    want[e] = op.reference(value_of(xs[e], type), ys.empty() ? 0 : value_of(ys[e], type), type);
  return want;
}

// Runs `op` on the lanes and checks every lane against the reference.
template <class F>
void check_operation(F& f, const circuits::Operation& op, circuits::IntType type,
                     const std::vector<std::uint64_t>& xs, const std::vector<std::uint64_t>& ys,
                     Csprng& rng) {
  INFO("operation " << op.name << " on " << circuits::to_string(type) << ", " << xs.size()
                    << " lanes, backend " << f.be.name());
  const std::vector<std::uint64_t> no_y;
  const auto& y_used = op.arity == 2 ? ys : no_y;
  const OpRun run = run_operation(f, op, type, xs, y_used, rng);
  const std::string bad = compare_lanes(run.values, reference_lanes(op, type, xs, y_used),
                                        op.result_width(type.width), xs, y_used, type);
  INFO(bad);
  CHECK(bad.empty());
}

// The signednesses an operation supports.
inline std::vector<bool> signednesses(const circuits::Operation& op) {
  std::vector<bool> s;
  if (op.unsigned_ok) s.push_back(false);
  if (op.signed_ok) s.push_back(true);
  return s;
}

}  // namespace torusgate::test
