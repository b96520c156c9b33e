// Vec8: eight doubles as one value (GCC/Clang vector extensions). The compiler lowers it to
// one AVX-512 register, two AVX ones or four SSE ones, whatever the target has, so code
// written on it is portable and vectorised everywhere. Loads and stores are unaligned.
// VecN<W>: the same for W doubles; native_vector_doubles: the W this build's registers hold
// (8 with AVX-512, 4 with AVX, 2 otherwise). Code whose working set fills the registers at
// W = 8 is written for native_vector_doubles, or spills on narrower targets.
#pragma once

namespace torusgate {

typedef double Vec8 __attribute__((vector_size(64)));

inline Vec8 load8(const double* p) {
  Vec8 v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}

inline void store8(double* p, Vec8 v) { __builtin_memcpy(p, &v, sizeof v); }

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

#if defined(__AVX512F__)
inline constexpr unsigned native_vector_doubles = 8;
#elif defined(__AVX__)
inline constexpr unsigned native_vector_doubles = 4;
#else
inline constexpr unsigned native_vector_doubles = 2;
#endif

}  // namespace torusgate
