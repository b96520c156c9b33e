// SimdFft: radix-8/radix-2 decimation-in-frequency FFT on vectors of W doubles (W = 8, 4 or
// 2), with the last radix-8 stage done on transposed 8x8 blocks (see simd_fft.hpp). Each
// radix-8 butterfly is the 8-point DFT split into two 4-point DFTs (even and odd inputs) and
// the omega_8 twiddles. Every width computes the same operations on the same values in the
// same order, so all widths give the same spectrum word for word.
#include "torusgate/core/simd_fft.hpp"

#include <bit>
#include <cmath>
#include <numbers>

#include "torusgate/core/error.hpp"
#include "torusgate/core/prefetch.hpp"
#include "torusgate/core/vec8.hpp"

// Vectors wider than the target's registers are passed between these internal (inlined)
// functions only: GCC's note that their ABI changed with AVX-512 concerns nothing here.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace torusgate {
namespace {

template <class V>
struct CVec {
  V re, im;
};

template <class V>
inline CVec<V> operator+(CVec<V> a, CVec<V> b) {
  return {a.re + b.re, a.im + b.im};
}
template <class V>
inline CVec<V> operator-(CVec<V> a, CVec<V> b) {
  return {a.re - b.re, a.im - b.im};
}
template <class V>
inline CVec<V> mul(CVec<V> a, V wr, V wi) {
  return {a.re * wr - a.im * wi, a.re * wi + a.im * wr};
}
// a * (-i) for the forward transform, a * (+i) for the inverse.
template <bool Inverse, class V>
inline CVec<V> rot90(CVec<V> a) {
  if constexpr (Inverse) return {-a.im, a.re};
  else return {a.im, -a.re};
}

// In-place 8-point DFT of x[0..7] with omega = exp(-+2 pi i / 8) (Inverse: +).
template <bool Inverse, class V>
inline void dft8(CVec<V>* x) {
  constexpr double s = 0.70710678118654752440;  // 1/sqrt(2)
  const CVec<V> t0 = x[0] + x[4], t1 = x[0] - x[4];
  const CVec<V> t2 = x[2] + x[6], t3 = rot90<Inverse>(x[2] - x[6]);
  const CVec<V> t4 = x[1] + x[5], t5 = x[1] - x[5];
  const CVec<V> t6 = x[3] + x[7], t7 = rot90<Inverse>(x[3] - x[7]);
  const CVec<V> e0 = t0 + t2, e2 = t0 - t2, e1 = t1 + t3, e3 = t1 - t3;
  CVec<V> o0 = t4 + t6, o2 = t4 - t6, o1 = t5 + t7, o3 = t5 - t7;
  // o_k *= omega_8^k: omega^1 = (1 -+ i)/sqrt2, omega^2 = -+i, omega^3 = (-1 -+ i)/sqrt2.
  const V vs = V{} + s;
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

// Exact W x W transpose of v[0..W-1]: lane i of out[t] = lane t of in[i]. An involution.
inline void transpose(VecN<8>* v) {
  VecN<8> a[8], b[8];
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
inline void transpose(VecN<4>* v) {
  const VecN<4> a0 = __builtin_shufflevector(v[0], v[1], 0, 4, 2, 6);
  const VecN<4> a1 = __builtin_shufflevector(v[0], v[1], 1, 5, 3, 7);
  const VecN<4> a2 = __builtin_shufflevector(v[2], v[3], 0, 4, 2, 6);
  const VecN<4> a3 = __builtin_shufflevector(v[2], v[3], 1, 5, 3, 7);
  v[0] = __builtin_shufflevector(a0, a2, 0, 1, 4, 5);
  v[1] = __builtin_shufflevector(a1, a3, 0, 1, 4, 5);
  v[2] = __builtin_shufflevector(a0, a2, 2, 3, 6, 7);
  v[3] = __builtin_shufflevector(a1, a3, 2, 3, 6, 7);
}
inline void transpose(VecN<2>* v) {
  const VecN<2> a0 = __builtin_shufflevector(v[0], v[1], 0, 2);
  v[1] = __builtin_shufflevector(v[0], v[1], 1, 3);
  v[0] = a0;
}

// 8-point DFTs down the 8 rows of a block of 8 x 8 points (row t at 8t), W columns from
// in, to the same places of out.
template <bool Inverse, unsigned W>
inline void dft8_rows(const double* in_re, const double* in_im, double* re, double* im) {
  CVec<VecN<W>> x[8];
  for (std::size_t t = 0; t < 8; ++t) x[t] = {loadn<W>(in_re + 8 * t), loadn<W>(in_im + 8 * t)};
  dft8<Inverse>(x);
  for (std::size_t t = 0; t < 8; ++t) {
    storen<W>(re + 8 * t, x[t].re);
    storen<W>(im + 8 * t, x[t].im);
  }
}

// The transforms on vectors of W doubles. The tables are SimdFft's, for every width.
template <unsigned W>
struct Engine {
  using V = VecN<W>;
  using C = CVec<V>;
  const std::vector<SimdFft::Stage>& stages;
  const double* tw_re;
  const double* tw_im;
  std::size_t M;

  void forward(const double* in_re, const double* in_im, double* re, double* im) const;
  void inverse(const double* in_re, const double* in_im, double* re, double* im) const;
  void forward_block(const double* src_re, const double* src_im, double* re, double* im,
                     const double* wr, const double* wi) const;
  void inverse_block(const double* in_re, const double* in_im, double* re, double* im,
                     const double* wr, const double* wi) const;
};

template <unsigned W>
void Engine<W>::forward(const double* in_re, const double* in_im, double* re,
                        double* im) const {
  const double* src_re = in_re;
  const double* src_im = in_im;
  PrefetchQueue& queue = this_thread_prefetch;  // drained once per butterfly and block
  // Every stage but the last vertical one (span 64), which is merged into the block pass.
  for (std::size_t s = 0; s + 1 < stages.size(); ++s) {
    const SimdFft::Stage& st = stages[s];
    const std::size_t h = st.half, span = st.radix * h;
    const double* wr = tw_re + st.twiddle;
    const double* wi = tw_im + st.twiddle;
    for (std::size_t b = 0; b < M; b += span) {
      for (std::size_t j = 0; j < h; j += W) {
        queue.drain();
        if (st.radix == 2) {
          const C x0{loadn<W>(src_re + b + j), loadn<W>(src_im + b + j)};
          const C x1{loadn<W>(src_re + b + j + h), loadn<W>(src_im + b + j + h)};
          const C y0 = x0 + x1, y1 = mul(x0 - x1, loadn<W>(wr + j), loadn<W>(wi + j));
          storen<W>(re + b + j, y0.re);
          storen<W>(im + b + j, y0.im);
          storen<W>(re + b + j + h, y1.re);
          storen<W>(im + b + j + h, y1.im);
        } else {
          C x[8];
          for (std::size_t r = 0; r < 8; ++r) {
            x[r] = {loadn<W>(src_re + b + j + r * h), loadn<W>(src_im + b + j + r * h)};
          }
          dft8<false>(x);
          storen<W>(re + b + j, x[0].re);
          storen<W>(im + b + j, x[0].im);
          for (std::size_t k = 1; k < 8; ++k) {
            const C y = mul(x[k], loadn<W>(wr + (k - 1) * h + j), loadn<W>(wi + (k - 1) * h + j));
            storen<W>(re + b + j + k * h, y.re);
            storen<W>(im + b + j + k * h, y.im);
          }
        }
      }
    }
    src_re = re;
    src_im = im;
  }
  const SimdFft::Stage& last = stages.back();
  const double* wr = tw_re + last.twiddle;
  const double* wi = tw_im + last.twiddle;
  for (std::size_t b = 0; b < M; b += 64) {
    queue.drain();
    forward_block(src_re + b, src_im + b, re + b, im + b, wr, wi);
  }
}

// Block pass over 64 points: the radix-8 stage of span 64 (vertical, its inputs 8 points
// apart), then 8-point DFTs of 8 contiguous points (group k: points 8k..8k+7), vertically
// after a transpose; position 8t + k of the block then holds output t of group k
// (transposed). Narrower vectors take the block in W-wide slabs: the span-64 stage on W
// columns at a time, W x W transposes into a scratch block, then the DFTs on W groups at a time.
template <unsigned W>
void Engine<W>::forward_block(const double* src_re, const double* src_im, double* re,
                              double* im, const double* wr, const double* wi) const {
  if constexpr (W == 8) {
    C v[8];
    for (std::size_t r = 0; r < 8; ++r) v[r] = {loadn<8>(src_re + 8 * r), loadn<8>(src_im + 8 * r)};
    dft8<false>(v);
    V r[8], i[8];
    r[0] = v[0].re;
    i[0] = v[0].im;
    for (std::size_t k = 1; k < 8; ++k) {
      const C y = mul(v[k], loadn<8>(wr + (k - 1) * 8), loadn<8>(wi + (k - 1) * 8));
      r[k] = y.re;
      i[k] = y.im;
    }
    transpose(r);
    transpose(i);
    C x[8];
    for (std::size_t t = 0; t < 8; ++t) x[t] = {r[t], i[t]};
    dft8<false>(x);
    for (std::size_t k = 0; k < 8; ++k) {
      storen<8>(re + 8 * k, x[k].re);
      storen<8>(im + 8 * k, x[k].im);
    }
  } else {
    alignas(64) double sr[64], si[64];  // sr[8t + k]: column t of group k
    for (std::size_t cs = 0; cs < 8; cs += W) {
      C v[8];
      for (std::size_t r = 0; r < 8; ++r) {
        v[r] = {loadn<W>(src_re + 8 * r + cs), loadn<W>(src_im + 8 * r + cs)};
      }
      dft8<false>(v);
      V r[8], i[8];
      r[0] = v[0].re;
      i[0] = v[0].im;
      for (std::size_t k = 1; k < 8; ++k) {
        const C y = mul(v[k], loadn<W>(wr + (k - 1) * 8 + cs), loadn<W>(wi + (k - 1) * 8 + cs));
        r[k] = y.re;
        i[k] = y.im;
      }
      for (std::size_t kb = 0; kb < 8; kb += W) {
        transpose(r + kb);
        transpose(i + kb);
        for (std::size_t t = 0; t < W; ++t) {
          storen<W>(sr + 8 * (cs + t) + kb, r[kb + t]);
          storen<W>(si + 8 * (cs + t) + kb, i[kb + t]);
        }
      }
    }
    for (std::size_t kb = 0; kb < 8; kb += W) dft8_rows<false, W>(sr + kb, si + kb, re + kb, im + kb);
  }
}

// The block pass undone: inverse 8-point DFTs of each group, transpose back, conjugate
// twiddles of the span-64 stage, inverse 8-point DFTs across the 8 rows.
template <unsigned W>
void Engine<W>::inverse_block(const double* in_re, const double* in_im, double* re, double* im,
                              const double* wr, const double* wi) const {
  if constexpr (W == 8) {
    C x[8];
    for (std::size_t k = 0; k < 8; ++k) x[k] = {loadn<8>(in_re + 8 * k), loadn<8>(in_im + 8 * k)};
    dft8<true>(x);
    V r[8], i[8];
    for (std::size_t t = 0; t < 8; ++t) {
      r[t] = x[t].re;
      i[t] = x[t].im;
    }
    transpose(r);
    transpose(i);
    C v[8];
    v[0] = {r[0], i[0]};
    for (std::size_t k = 1; k < 8; ++k) {
      v[k] = mul(C{r[k], i[k]}, loadn<8>(wr + (k - 1) * 8), -loadn<8>(wi + (k - 1) * 8));
    }
    dft8<true>(v);
    for (std::size_t g = 0; g < 8; ++g) {
      storen<8>(re + 8 * g, v[g].re);
      storen<8>(im + 8 * g, v[g].im);
    }
  } else {
    alignas(64) double sr[64], si[64];  // sr[8t + k]: column t of group k
    for (std::size_t kb = 0; kb < 8; kb += W) dft8_rows<true, W>(in_re + kb, in_im + kb, sr + kb, si + kb);
    for (std::size_t cs = 0; cs < 8; cs += W) {
      V r[8], i[8];
      for (std::size_t kb = 0; kb < 8; kb += W) {
        for (std::size_t t = 0; t < W; ++t) {
          r[kb + t] = loadn<W>(sr + 8 * (cs + t) + kb);
          i[kb + t] = loadn<W>(si + 8 * (cs + t) + kb);
        }
        transpose(r + kb);
        transpose(i + kb);
      }
      C v[8];
      v[0] = {r[0], i[0]};
      for (std::size_t k = 1; k < 8; ++k) {
        v[k] = mul(C{r[k], i[k]}, loadn<W>(wr + (k - 1) * 8 + cs), -loadn<W>(wi + (k - 1) * 8 + cs));
      }
      dft8<true>(v);
      for (std::size_t g = 0; g < 8; ++g) {
        storen<W>(re + 8 * g + cs, v[g].re);
        storen<W>(im + 8 * g + cs, v[g].im);
      }
    }
  }
}

template <unsigned W>
void Engine<W>::inverse(const double* in_re, const double* in_im, double* re,
                        double* im) const {
  const SimdFft::Stage& last = stages.back();
  const double* lwr = tw_re + last.twiddle;
  const double* lwi = tw_im + last.twiddle;
  PrefetchQueue& queue = this_thread_prefetch;  // drained once per block and butterfly
  for (std::size_t b = 0; b < M; b += 64) {
    queue.drain();
    inverse_block(in_re + b, in_im + b, re + b, im + b, lwr, lwi);
  }
  for (auto it = stages.rbegin() + 1; it != stages.rend(); ++it) {
    const SimdFft::Stage& st = *it;
    const std::size_t h = st.half, span = st.radix * h;
    const double* wr = tw_re + st.twiddle;
    const double* wi = tw_im + st.twiddle;
    for (std::size_t b = 0; b < M; b += span) {
      for (std::size_t j = 0; j < h; j += W) {
        queue.drain();
        if (st.radix == 2) {
          const C y0{loadn<W>(re + b + j), loadn<W>(im + b + j)};
          // y1 * conj(w)
          const C y1 = mul(C{loadn<W>(re + b + j + h), loadn<W>(im + b + j + h)}, loadn<W>(wr + j),
                           -loadn<W>(wi + j));
          const C x0 = y0 + y1, x1 = y0 - y1;
          storen<W>(re + b + j, x0.re);
          storen<W>(im + b + j, x0.im);
          storen<W>(re + b + j + h, x1.re);
          storen<W>(im + b + j + h, x1.im);
        } else {
          C x[8];
          x[0] = {loadn<W>(re + b + j), loadn<W>(im + b + j)};
          for (std::size_t k = 1; k < 8; ++k) {
            x[k] = mul(C{loadn<W>(re + b + j + k * h), loadn<W>(im + b + j + k * h)},
                       loadn<W>(wr + (k - 1) * h + j), -loadn<W>(wi + (k - 1) * h + j));
          }
          dft8<true>(x);
          for (std::size_t r = 0; r < 8; ++r) {
            storen<W>(re + b + j + r * h, x[r].re);
            storen<W>(im + b + j + r * h, x[r].im);
          }
        }
      }
    }
  }
}

// One transform of M points on vectors of `width` doubles.
template <bool Inverse>
void transform(unsigned width, const std::vector<SimdFft::Stage>& stages, const double* tw_re,
               const double* tw_im, std::size_t M, const double* in_re, const double* in_im,
               double* re, double* im) {
  auto run = [&](auto engine) {
    if constexpr (Inverse) engine.inverse(in_re, in_im, re, im);
    else engine.forward(in_re, in_im, re, im);
  };
  switch (width) {
    case 8: return run(Engine<8>{stages, tw_re, tw_im, M});
    case 4: return run(Engine<4>{stages, tw_re, tw_im, M});
    default: return run(Engine<2>{stages, tw_re, tw_im, M});
  }
}

}  // namespace

unsigned SimdFft::native_width() { return native_vector_doubles; }

SimdFft::SimdFft(std::uint32_t polynomial_size, unsigned width)
    : ComplexNegacyclicFft(polynomial_size), width_(width == 0 ? native_width() : width) {
  const std::size_t M = polynomial_size / 2;
  EXPECTS(M >= 64, "SimdFft: polynomial_size=" + std::to_string(polynomial_size) +
                       " but this engine needs at least 128");
  EXPECTS(width_ == 2 || width_ == 4 || width_ == 8,
          "SimdFft: width=" + std::to_string(width) + " but the vectors hold 2, 4 or 8 doubles");
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

std::size_t SimdFft::prefetch_drains() const {
  // As Engine<W>::forward and inverse: one per butterfly of every vertical stage but the last
  // (span 64, done in the block pass), one per 64-point block.
  const std::size_t M = polynomial_size() / 2;
  std::size_t drains = M / 64;
  for (std::size_t s = 0; s + 1 < stages_.size(); ++s) drains += M / (stages_[s].radix * width_);
  return drains;
}

void SimdFft::transform_forward(const double* in_re, const double* in_im, double* re,
                                double* im) const {
  transform<false>(width_, stages_, tw_re_.data(), tw_im_.data(), polynomial_size() / 2, in_re,
                   in_im, re, im);
}

void SimdFft::transform_inverse(const double* in_re, const double* in_im, double* re,
                                double* im) const {
  transform<true>(width_, stages_, tw_re_.data(), tw_im_.data(), polynomial_size() / 2, in_re,
                  in_im, re, im);
}

}  // namespace torusgate
