// Vec8: eight doubles as one value (GCC/Clang vector extensions). The compiler lowers it to
// one AVX-512 register, two AVX ones or four SSE ones, whatever the target has, so code
// written on it is portable and vectorised everywhere. Loads and stores are unaligned.
#pragma once

namespace torusgate {

typedef double Vec8 __attribute__((vector_size(64)));

inline Vec8 load8(const double* p) {
  Vec8 v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}

inline void store8(double* p, Vec8 v) { __builtin_memcpy(p, &v, sizeof v); }

}  // namespace torusgate
