// SimdFft: radix-8/radix-2 decimation-in-frequency FFT on vectors of 8 doubles, with the last
// radix-8 stage done on transposed 8x8 blocks (see simd_fft.hpp). Each radix-8 butterfly is
// the 8-point DFT split into two 4-point DFTs (even and odd inputs) and the omega_8 twiddles.
#include "torusgate/core/simd_fft.hpp"

#include <bit>
#include <cmath>
#include <numbers>

#include "torusgate/core/error.hpp"
#include "torusgate/core/vec8.hpp"

namespace torusgate {
namespace {

struct CVec {
  Vec8 re, im;
};

inline CVec operator+(CVec a, CVec b) { return {a.re + b.re, a.im + b.im}; }
inline CVec operator-(CVec a, CVec b) { return {a.re - b.re, a.im - b.im}; }
inline CVec mul(CVec a, Vec8 wr, Vec8 wi) {
  return {a.re * wr - a.im * wi, a.re * wi + a.im * wr};
}
// a * (-i) for the forward transform, a * (+i) for the inverse.
template <bool Inverse>
inline CVec rot90(CVec a) {
  if constexpr (Inverse) return {-a.im, a.re};
  else return {a.im, -a.re};
}

// In-place 8-point DFT of x[0..7] with omega = exp(-+2 pi i / 8) (Inverse: +).
template <bool Inverse>
inline void dft8(CVec* x) {
  constexpr double s = 0.70710678118654752440;  // 1/sqrt(2)
  const CVec t0 = x[0] + x[4], t1 = x[0] - x[4];
  const CVec t2 = x[2] + x[6], t3 = rot90<Inverse>(x[2] - x[6]);
  const CVec t4 = x[1] + x[5], t5 = x[1] - x[5];
  const CVec t6 = x[3] + x[7], t7 = rot90<Inverse>(x[3] - x[7]);
  const CVec e0 = t0 + t2, e2 = t0 - t2, e1 = t1 + t3, e3 = t1 - t3;
  CVec o0 = t4 + t6, o2 = t4 - t6, o1 = t5 + t7, o3 = t5 - t7;
  // o_k *= omega_8^k: omega^1 = (1 -+ i)/sqrt2, omega^2 = -+i, omega^3 = (-1 -+ i)/sqrt2.
  const Vec8 vs = Vec8{} + s;
  if constexpr (Inverse) {
    o1 = {(o1.re - o1.im) * vs, (o1.re + o1.im) * vs};
    o3 = {(-o3.re - o3.im) * vs, (o3.re - o3.im) * vs};
  } else {
    o1 = {(o1.re + o1.im) * vs, (o1.im - o1.re) * vs};
    o3 = {(o3.im - o3.re) * vs, (-o3.re - o3.im) * vs};
  }
  o2 = rot90<Inverse>(o2);
  x[0] = e0 + o0;
  x[4] = e0 - o0;
  x[1] = e1 + o1;
  x[5] = e1 - o1;
  x[2] = e2 + o2;
  x[6] = e2 - o2;
  x[3] = e3 + o3;
  x[7] = e3 - o3;
}

// Exact 8x8 transpose: lane i of out[t] = lane t of in[i]. An involution.
inline void transpose8(Vec8* v) {
  Vec8 a[8], b[8];
  for (int i = 0; i < 8; i += 2) {
    a[i] = __builtin_shufflevector(v[i], v[i + 1], 0, 8, 2, 10, 4, 12, 6, 14);
    a[i + 1] = __builtin_shufflevector(v[i], v[i + 1], 1, 9, 3, 11, 5, 13, 7, 15);
  }
  for (int i : {0, 1, 4, 5}) {
    b[i] = __builtin_shufflevector(a[i], a[i + 2], 0, 1, 8, 9, 4, 5, 12, 13);
    b[i + 2] = __builtin_shufflevector(a[i], a[i + 2], 2, 3, 10, 11, 6, 7, 14, 15);
  }
  for (int i = 0; i < 4; ++i) {
    v[i] = __builtin_shufflevector(b[i], b[i + 4], 0, 1, 2, 3, 8, 9, 10, 11);
    v[i + 4] = __builtin_shufflevector(b[i], b[i + 4], 4, 5, 6, 7, 12, 13, 14, 15);
  }
}

}  // namespace

SimdFft::SimdFft(std::uint32_t polynomial_size) : ComplexNegacyclicFft(polynomial_size) {
  const std::size_t M = polynomial_size / 2;
  EXPECTS(M >= 64, "SimdFft: polynomial_size=" + std::to_string(polynomial_size) +
                       " but this engine needs at least 128");
  // log2(M) = 3 (last, transposed stage) + 3 * radix-8 stages + radix-2 stages.
  std::size_t remaining = static_cast<std::size_t>(std::countr_zero(M)) - 3;
  std::size_t span = M;
  std::size_t offset = 0;
  auto add_stage = [&](std::size_t radix) {
    const std::size_t h = span / radix;
    stages_.push_back(Stage{radix, h, offset});
    for (std::size_t k = 1; k < radix; ++k) {
      for (std::size_t j = 0; j < h; ++j) {
        const double angle = -2.0 * std::numbers::pi * static_cast<double>(j * k) /
                             static_cast<double>(span);
        tw_re_.push_back(std::cos(angle));
        tw_im_.push_back(std::sin(angle));
      }
    }
    offset += (radix - 1) * h;
    span = h;
  };
  while (remaining % 3 != 0) {
    add_stage(2);
    remaining -= 1;
  }
  while (remaining > 0) {
    add_stage(8);
    remaining -= 3;
  }
}

void SimdFft::transform_forward(const double* in_re, const double* in_im, double* re,
                                double* im) const {
  const std::size_t M = polynomial_size() / 2;
  const double* src_re = in_re;
  const double* src_im = in_im;
  // Every stage but the last vertical one (span 64), which is merged into the block pass.
  for (std::size_t s = 0; s + 1 < stages_.size(); ++s) {
    const Stage& st = stages_[s];
    const std::size_t h = st.half, span = st.radix * h;
    const double* wr = tw_re_.data() + st.twiddle;
    const double* wi = tw_im_.data() + st.twiddle;
    for (std::size_t b = 0; b < M; b += span) {
      for (std::size_t j = 0; j < h; j += 8) {
        if (st.radix == 2) {
          const CVec x0{load8(src_re + b + j), load8(src_im + b + j)};
          const CVec x1{load8(src_re + b + j + h), load8(src_im + b + j + h)};
          const CVec y0 = x0 + x1, y1 = mul(x0 - x1, load8(wr + j), load8(wi + j));
          store8(re + b + j, y0.re);
          store8(im + b + j, y0.im);
          store8(re + b + j + h, y1.re);
          store8(im + b + j + h, y1.im);
        } else {
          CVec x[8];
          for (std::size_t r = 0; r < 8; ++r) {
            x[r] = {load8(src_re + b + j + r * h), load8(src_im + b + j + r * h)};
          }
          dft8<false>(x);
          store8(re + b + j, x[0].re);
          store8(im + b + j, x[0].im);
          for (std::size_t k = 1; k < 8; ++k) {
            const CVec y = mul(x[k], load8(wr + (k - 1) * h + j), load8(wi + (k - 1) * h + j));
            store8(re + b + j + k * h, y.re);
            store8(im + b + j + k * h, y.im);
          }
        }
      }
    }
    src_re = re;
    src_im = im;
  }
  // Block pass over 64 points, in registers: the radix-8 stage of span 64 (vertical, its
  // inputs 8 points apart), then 8-point DFTs of 8 contiguous points, 8 groups at a time after
  // a transpose; vector k of a block then holds output k of each of its 8 groups (transposed).
  const Stage& last = stages_.back();
  const double* wr = tw_re_.data() + last.twiddle;
  const double* wi = tw_im_.data() + last.twiddle;
  for (std::size_t b = 0; b < M; b += 64) {
    CVec v[8];
    for (std::size_t r = 0; r < 8; ++r) v[r] = {load8(src_re + b + 8 * r), load8(src_im + b + 8 * r)};
    dft8<false>(v);
    Vec8 r[8], i[8];
    r[0] = v[0].re;
    i[0] = v[0].im;
    for (std::size_t k = 1; k < 8; ++k) {
      const CVec y = mul(v[k], load8(wr + (k - 1) * 8), load8(wi + (k - 1) * 8));
      r[k] = y.re;
      i[k] = y.im;
    }
    transpose8(r);
    transpose8(i);
    CVec x[8];
    for (std::size_t t = 0; t < 8; ++t) x[t] = {r[t], i[t]};
    dft8<false>(x);
    for (std::size_t k = 0; k < 8; ++k) {
      store8(re + b + 8 * k, x[k].re);
      store8(im + b + 8 * k, x[k].im);
    }
  }
}

void SimdFft::transform_inverse(const double* in_re, const double* in_im, double* re,
                                double* im) const {
  const std::size_t M = polynomial_size() / 2;
  // Undo the block pass first: inverse 8-point DFTs, transpose back, conjugate twiddles of
  // the span-64 stage, inverse 8-point DFTs across the 8 vectors.
  const Stage& last = stages_.back();
  const double* lwr = tw_re_.data() + last.twiddle;
  const double* lwi = tw_im_.data() + last.twiddle;
  for (std::size_t b = 0; b < M; b += 64) {
    CVec x[8];
    for (std::size_t k = 0; k < 8; ++k) x[k] = {load8(in_re + b + 8 * k), load8(in_im + b + 8 * k)};
    dft8<true>(x);
    Vec8 r[8], i[8];
    for (std::size_t t = 0; t < 8; ++t) {
      r[t] = x[t].re;
      i[t] = x[t].im;
    }
    transpose8(r);
    transpose8(i);
    CVec v[8];
    v[0] = {r[0], i[0]};
    for (std::size_t k = 1; k < 8; ++k) {
      v[k] = mul(CVec{r[k], i[k]}, load8(lwr + (k - 1) * 8), -load8(lwi + (k - 1) * 8));
    }
    dft8<true>(v);
    for (std::size_t g = 0; g < 8; ++g) {
      store8(re + b + 8 * g, v[g].re);
      store8(im + b + 8 * g, v[g].im);
    }
  }
  for (auto it = stages_.rbegin() + 1; it != stages_.rend(); ++it) {
    const Stage& st = *it;
    const std::size_t h = st.half, span = st.radix * h;
    const double* wr = tw_re_.data() + st.twiddle;
    const double* wi = tw_im_.data() + st.twiddle;
    for (std::size_t b = 0; b < M; b += span) {
      for (std::size_t j = 0; j < h; j += 8) {
        if (st.radix == 2) {
          const CVec y0{load8(re + b + j), load8(im + b + j)};
          // y1 * conj(w)
          const CVec y1 = mul(CVec{load8(re + b + j + h), load8(im + b + j + h)}, load8(wr + j),
                              -load8(wi + j));
          const CVec x0 = y0 + y1, x1 = y0 - y1;
          store8(re + b + j, x0.re);
          store8(im + b + j, x0.im);
          store8(re + b + j + h, x1.re);
          store8(im + b + j + h, x1.im);
        } else {
          CVec x[8];
          x[0] = {load8(re + b + j), load8(im + b + j)};
          for (std::size_t k = 1; k < 8; ++k) {
            x[k] = mul(CVec{load8(re + b + j + k * h), load8(im + b + j + k * h)},
                       load8(wr + (k - 1) * h + j), -load8(wi + (k - 1) * h + j));
          }
          dft8<true>(x);
          for (std::size_t r = 0; r < 8; ++r) {
            store8(re + b + j + r * h, x[r].re);
            store8(im + b + j + r * h, x[r].im);
          }
        }
      }
    }
  }
}

}  // namespace torusgate
