// The 32-bit discretised torus T = R/Z: x in Z/2^32 stands for x / 2^32 (two's complement
// when read as signed). Arithmetic is modular; conversions round to nearest.
#pragma once

#include <cmath>
#include <bit>
#include <cstdint>

namespace torusgate {

// One torus element. Unsigned so that +, -, * wrap modulo 2^32 without undefined behaviour;
// read it as std::int32_t for the centred representative in [-1/2, 1/2).
using Torus32 = std::uint32_t;

// Nearest Torus32 to the real number d (taken modulo 1).
inline Torus32 double_to_torus(double d) {
  const double frac = d - std::floor(d);  // [0, 1)
  const auto v = static_cast<std::int64_t>(std::llround(frac * 4294967296.0));
  return static_cast<Torus32>(static_cast<std::uint64_t>(v));
}

// Centred real representative of x, in [-1/2, 1/2).
inline double torus_to_double(Torus32 x) {
  return static_cast<double>(static_cast<std::int32_t>(x)) / 4294967296.0;
}

// The torus element mu = numerator / denominator (denominator a positive integer).
inline Torus32 torus_from_fraction(std::int64_t numerator, std::int64_t denominator) {
  // round(numerator * 2^32 / denominator) modulo 2^32, computed exactly in 128-bit arithmetic
  const __int128 scaled = static_cast<__int128>(numerator) * (static_cast<__int128>(1) << 32);
  __int128 q = scaled / denominator;
  const __int128 r = scaled % denominator;
  if (2 * (r < 0 ? -r : r) >= denominator) q += (r < 0 ? -1 : 1);
  return static_cast<Torus32>(static_cast<std::uint64_t>(q));
}

// Rounds x to the nearest multiple of 1/msize and returns that multiple's index in
// [0, msize): the modulus switch to Z_msize used by bootstrapping (msize = 2N).
inline std::uint32_t mod_switch_from_torus(Torus32 x, std::uint32_t msize) {
  // msize is a power of two <= 2^31: add half an interval, keep the top log2(msize) bits.
  const unsigned log2m = static_cast<unsigned>(std::countr_zero(msize));
  const std::uint64_t interval = (std::uint64_t{1} << 32) >> log2m;
  const std::uint64_t rounded = (static_cast<std::uint64_t>(x) + interval / 2) >> (32 - log2m);
  return static_cast<std::uint32_t>(rounded & (msize - 1));
}

// Signed distance |x - y| on the torus, as a real in [0, 1/2].
inline double torus_distance(Torus32 x, Torus32 y) {
  return std::fabs(torus_to_double(x - y));
}

}  // namespace torusgate
