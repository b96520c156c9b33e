// VecN<W>: W doubles as one value (GCC/Clang vector extensions), Vec8 = VecN<8>. The compiler
// lowers a vector to as many of the target's registers as it needs (Vec8: one AVX-512
// register, two AVX ones or four SSE ones), so code written on it is portable and vectorised
// everywhere. Loads and stores are unaligned. native_vector_doubles is the W this build's
// registers hold (8 with AVX-512, 4 with AVX, 2 otherwise): code whose working set fills the
// registers at W = 8 spills on narrower targets unless it is written for that W.
#pragma once

// GCC warns (-Wpsabi) that a function returning a vector wider than the target's registers
// (Vec8 without AVX-512) would pass it differently from an AVX-512 build. These helpers are
// inline and never cross a library boundary, so that ABI never applies.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace torusgate {

template <unsigned W>
struct VecOf {
  typedef double type __attribute__((vector_size(8 * W)));
};
template <unsigned W>
using VecN = typename VecOf<W>::type;

template <unsigned W>
inline VecN<W> loadn(const double* p) {
  VecN<W> v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}

template <unsigned W>
inline void storen(double* p, VecN<W> v) {
  __builtin_memcpy(p, &v, sizeof v);
}

using Vec8 = VecN<8>;
inline Vec8 load8(const double* p) { return loadn<8>(p); }
inline void store8(double* p, Vec8 v) { storen<8>(p, v); }

#if defined(__AVX512F__)
inline constexpr unsigned native_vector_doubles = 8;
#elif defined(__AVX__)
inline constexpr unsigned native_vector_doubles = 4;
#else
inline constexpr unsigned native_vector_doubles = 2;
#endif

}  // namespace torusgate

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
