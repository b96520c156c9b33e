// The fused engine's own FFT (DESIGN.md section 6.1, item 2): a length-M complex transform in
// double, M = N/2 = 2^m (m >= 3), run by one group of M/8 threads of a block, each holding 8
// points in registers, with the points exchanged through shared memory between passes.
// Compiled by nvcc for the kernels (fused_kernels.cu) and by the host compiler for the CPU
// tests, which run the same code thread by thread (HostBlock below) against the exact DFT.
//
// The transform is the radix-2 decimation in frequency of Gentleman and Sande (1966): the
// stage on bit b (half-span h = 2^b) maps (x_i, x_{i+h}) for i with bit b clear to
//   (x_i + x_{i+h}, (x_i - x_{i+h}) W^{(i mod h) 2^(m-1-b)}),   W = exp(-2 pi i / M),
// for b = m-1 down to 0. Its output is X_k = sum_j x_j W^{jk} in bit-reversed order: point
// p holds X_{bitrev_m(p)}. The inverse undoes each stage in reverse order (b = 0 up to m-1):
// (u, v) -> (u + v conj(w), u - v conj(w)), so inverse(forward(x)) = M x, unscaled, without any
// bit reversal; the 1/M is in the untwist factors (kernel_math.hpp), as for cuFFT. A product
// of spectra pointwise in this order is a cyclic convolution, whatever the order.
//
// Passes: the m stages go in passes of up to 3. In a pass whose top bit is `top`, thread t of
// the group owns the 8 points whose bits top, top-1, top-2 are the register index r (bits 2,
// 1, 0) and whose other bits are t's (point_of), so the pass's stages pair registers only.
// The first pass (top m-1) takes m mod 3 stages (3 when m is a multiple of 3), the others 3;
// the last forward pass has top 2, so after the forward transform thread t holds spectrum
// points 8t .. 8t+7, which is also what the first inverse pass needs: the pointwise products
// between them stay in registers.
//
// Radix 8: the three stages of a pass with top bit T are, in exact arithmetic, one radix-8
// DIF butterfly. With h = 2^(T-2), L = 8h and n0 = i mod h (the thread's low bits), the 8
// points x_a = x_{base + a h} become
//   y at register bitrev_3(k) = W_L^{n0 k} sum_a x_a W_8^{ak},   W_L = W^{M/L},
// so a pass is an 8-point DFT whose twiddles are the constants 1, sqrt(1/2)(1 - i), -i and
// -sqrt(1/2)(1 + i) (dft_registers: the three radix-2 stages with those factors written in,
// no twiddle load, no multiplication for 1 and -i), then 7 twiddle products W^{n0 k M/L}
// (none in the last pass, where n0 = 0). The inverse pass takes the conjugate twiddles first,
// then undoes the DFT (times 8). A pass of 1 or 2 stages (the first, when 3 does not divide
// m) runs the radix-2 stages with the table's twiddles. Per thread and pass of 3 stages that
// is 7 complex multiplications by a loaded twiddle and 2 by sqrt(1/2) instead of 12 by
// loaded twiddles: for M = 512 about 220 instead of 288 FP64 instructions per thread and
// transform (docs/gpu.md section 1.1 has the counts of the compiled code).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "kernel_math.hpp"

#if defined(TORUSGATE_CUDA_EMULATION)
#include <cuda_runtime.h>  // __syncthreads of the CUDA emulator (gpu/emu)
#endif

namespace torusgate::gpu::kernel::fused {

inline constexpr unsigned points_per_thread = 8;

// What a thread carries per point through a transform: one rotation's value (Complex), or
// the same point of P rotations (Lanes<P>), which then share every twiddle load (and in the
// block program every twist, untwist and key load). Per lane the operations are those of
// Complex, in the same order: the same words.
template <unsigned P>
struct Lanes {
  Complex lane[P];
};
template <unsigned P>
using Point = std::conditional_t<P == 1, Complex, Lanes<P>>;

template <class V>
inline constexpr unsigned lane_count = 1;
template <unsigned P>
inline constexpr unsigned lane_count<Lanes<P>> = P;

// Lane p of a point.
TG_HD Complex& lane(Complex& v, unsigned) { return v; }
TG_HD const Complex& lane(const Complex& v, unsigned) { return v; }
template <unsigned P>
TG_HD Complex& lane(Lanes<P>& v, unsigned p) {
  return v.lane[p];
}
template <unsigned P>
TG_HD const Complex& lane(const Lanes<P>& v, unsigned p) {
  return v.lane[p];
}

// Smallest and largest transform lengths of the engine (N = 16 .. 4096).
inline constexpr std::uint32_t min_transform_log2 = 3;
inline constexpr std::uint32_t max_transform_log2 = 11;

// log2 of a power of two.
TG_HD constexpr unsigned log2_exact(std::uint32_t x) {
  unsigned l = 0;
  while ((std::uint32_t{1} << l) < x) ++l;
  return l;
}

// Threads of one transform of M points.
TG_HD constexpr std::uint32_t fft_threads(std::uint32_t M) { return M / points_per_thread; }

// One pass: the owned bits are top, top-1, top-2; the forward stages are those of bits top
// down to top - stages + 1. A radix-8 pass with top > 2 reads its twiddles from the pass
// table (twiddles() below) at entry `table`.
struct Pass {
  unsigned top = 0;
  unsigned stages = 0;
  std::uint32_t table = 0;
};

TG_HD constexpr unsigned pass_count(unsigned m) { return (m + 2) / 3; }

// The pass table's entries of a pass: 7 twiddles for each of the 2^(top-2) values of the
// points' low bits n0, for a radix-8 pass with top > 2; none for the others.
TG_HD constexpr std::uint32_t pass_twiddle_count(unsigned top, unsigned stages) {
  return stages == 3 && top > 2 ? std::uint32_t{7} << (top - 2) : 0;
}

// Forward pass p < pass_count(m) (the inverse runs them from the last to the first).
TG_HD constexpr Pass forward_pass(unsigned m, unsigned p) {
  const unsigned first = m % 3 == 0 ? 3 : m % 3;
  Pass pass{m - 1, first, 0};
  for (unsigned q = 1; q <= p; ++q) {
    pass.table += pass_twiddle_count(pass.top, pass.stages);
    pass = Pass{m - 1 - first - 3 * (q - 1), 3, pass.table};
  }
  return pass;
}

// The point that register r of thread t holds in a pass with top bit `top` (top >= 2).
TG_HD std::uint32_t point_of(std::uint32_t t, unsigned r, unsigned top) {
  const unsigned low_bits = top - 2;
  const std::uint32_t low = t & ((std::uint32_t{1} << low_bits) - 1);
  const std::uint32_t high = t >> low_bits;
  return (high << (top + 1)) | (static_cast<std::uint32_t>(r) << low_bits) | low;
}

// Shared-memory slot of point p: one complex of padding after every 8, so that the strided
// accesses of the passes spread over the banks.
TG_HD std::uint32_t padded(std::uint32_t p) { return p + (p >> 3); }
TG_HD constexpr std::uint32_t buffer_points(std::uint32_t M) { return M + M / 8; }

// bitrev_3(r).
TG_HD constexpr unsigned reverse3(unsigned r) { return ((r & 1u) << 2) | (r & 2u) | ((r >> 2) & 1u); }

// Whether a twisted transform (forward_transform<true>, inverse_transform<true>) carries
// the twist in its first pass: when that pass is a radix-8 pass with twiddles (m a multiple
// of 3, m >= 6; tfhe_lib_128's M = 512). Thread t's first-pass points are j = t + rT
// (T = M/8), so the twist zeta^j = zeta^t zeta^{rT} = zeta^t exp(i pi r/16), N = 2M: the
// factor exp(i pi r/16) of register r is a constant of the code (register_twist), and zeta^t,
// common to the thread's 8 points, passes through the pass's 8-point DFT (which is linear and
// combines the thread's registers only) into its twiddles: register r's output is multiplied
// by zeta^t W^{t bitrev_3(r)}, one table entry (the twist table below). Per thread and
// transform that is 8 loads instead of 8 twist loads and 7 twiddle loads, and the same
// number of complex multiplications. The inverse undoes it in reverse: the conjugate entries
// before the DFT, the conjugate constants (with the 1/M) after it.
TG_HD constexpr bool twist_in_first_pass(unsigned m) { return m % 3 == 0 && m >= 6; }

// Where the twist table starts in the twiddle table of M = 2^m points: after the M powers of
// W and the pass table.
TG_HD constexpr std::uint32_t twist_table_offset(std::uint32_t M) {
  const unsigned m = log2_exact(M);
  const Pass last = forward_pass(m, pass_count(m) - 1);
  return M + last.table + pass_twiddle_count(last.top, last.stages);
}

// The wide transforms' passes (fused_wide.hpp: 4 points per thread, passes of up to 2
// stages owning bits top and top-1; the first takes m mod 2 stages, or 2, the others 2, the
// last has top 1). A radix-4 pass with top > 1 reads its twiddles from the wide pass table
// (twiddles() below) at entry `table`.
namespace wide {

TG_HD constexpr unsigned pass_count(unsigned m) { return (m + 1) / 2; }

// The wide pass table's entries of a pass: 3 twiddles for each of the 2^(top-1) values of the
// points' low bits n0, for a radix-4 pass with top > 1; none for the others.
TG_HD constexpr std::uint32_t pass_twiddle_count(unsigned top, unsigned stages) {
  return stages == 2 && top > 1 ? std::uint32_t{3} << (top - 1) : 0;
}

// Forward pass p < pass_count(m) (the inverse runs them from the last to the first).
TG_HD constexpr Pass forward_pass(unsigned m, unsigned p) {
  const unsigned first = m % 2 == 0 ? 2 : 1;
  Pass pass{m - 1, first, 0};
  for (unsigned q = 1; q <= p; ++q) {
    pass.table += pass_twiddle_count(pass.top, pass.stages);
    pass = Pass{m - 1 - first - 2 * (q - 1), 2, pass.table};
  }
  return pass;
}

// bitrev_2(r).
TG_HD constexpr unsigned reverse2(unsigned r) { return ((r & 1u) << 1) | ((r >> 1) & 1u); }

}  // namespace wide

// Where the wide pass table starts in the twiddle table of M = 2^m points: after the M powers
// of W, the pass table and the twist table; and its entries.
TG_HD constexpr std::uint32_t wide_table_offset(std::uint32_t M) {
  return twist_table_offset(M) + (twist_in_first_pass(log2_exact(M)) ? M : 0);
}
TG_HD constexpr std::uint32_t wide_table_size(std::uint32_t M) {
  const unsigned m = log2_exact(M);
  const Pass last = wide::forward_pass(m, wide::pass_count(m) - 1);
  return last.table + wide::pass_twiddle_count(last.top, last.stages);
}

// Entries of the twiddle table of M = 2^m points: the M powers of W, the pass table, the
// twist table (M entries where twist_in_first_pass(m), else none) and the wide pass table.
TG_HD constexpr std::uint32_t twiddle_table_size(std::uint32_t M) {
  return wide_table_offset(M) + wide_table_size(M);
}

// exp(i pi r/16) for r < 8 (register r's share of the twist in a twisted transform's first
// pass), correctly rounded to double; the CPU tests check them against long double.
TG_HD Complex register_twist(unsigned r) {
  constexpr double c1 = 0.98078528040323044912618223613424, s1 = 0.19509032201612826784828486847702;
  constexpr double c2 = 0.92387953251128675612818318939679, s2 = 0.38268343236508977172845998403040;
  constexpr double c3 = 0.83146961230254523707878837761791, s3 = 0.55557023301960222474283081394853;
  constexpr double h = 0.70710678118654752440084436210484903928;
  switch (r & 7u) {
    case 0: return Complex{1, 0};
    case 1: return Complex{c1, s1};
    case 2: return Complex{c2, s2};
    case 3: return Complex{c3, s3};
    case 4: return Complex{h, h};
    case 5: return Complex{s3, c3};
    case 6: return Complex{s2, c2};
    default: return Complex{s1, c1};
  }
}

// The twiddle table (made on the host, uploaded once): first W^e = exp(-2 pi i e/M) for
// e < M, each from its own angle in long double (the radix-2 stages use e < M/2); then the
// pass table, the radix-8 passes' twiddles in the order their threads read them: for each
// radix-8 pass with top > 2 (forward order), at entry M + pass.table + (r-1) 2^(top-2) + n0,
// W^{(n0 bitrev_3(r)) 2^(m-1-top)} for r = 1..7 and n0 < 2^(top-2) (exponents below 7M/8).
// Thread t of a group reads n0 = t mod 2^(top-2): a warp's loads of one register are
// contiguous (measured on an H200, docs/results/gpu/nvidia-h200_2026-11-26b: read from the
// powers directly, a warp's twiddle load touched up to 16 cache lines, and the FFT's
// twiddle products waited on them for a fifth of the rotation kernel's time). Last, where
// twist_in_first_pass(m), the twist table: zeta^t W^{t bitrev_3(r)} at twist_table_offset(M)
// + r T + t for r < 8 and t < T = M/8 (zeta = exp(i pi/(2M))), each from its own angle. Then
// the wide pass table (fused_wide.hpp's radix-4 passes with top > 1, in the same thread
// order): at wide_table_offset(M) + pass.table + (r-1) 2^(top-1) + n0, W^{(n0 bitrev_2(r))
// 2^(m-1-top)} for r = 1..3 and n0 < 2^(top-1).
inline std::vector<Complex> twiddles(std::uint32_t M) {
  std::vector<Complex> w(twiddle_table_size(M));
  const long double pi = 3.141592653589793238462643383279502884L;
  for (std::uint32_t e = 0; e < M; ++e) {
    const long double a = -2.0L * pi * static_cast<long double>(e) / static_cast<long double>(M);
    w[e] = Complex{static_cast<double>(std::cos(a)), static_cast<double>(std::sin(a))};
  }
  const unsigned m = log2_exact(M);
  for (unsigned p = 0; p < pass_count(m); ++p) {
    const Pass pass = forward_pass(m, p);
    if (pass_twiddle_count(pass.top, pass.stages) == 0) continue;
    const std::uint32_t h = std::uint32_t{1} << (pass.top - 2);
    for (unsigned r = 1; r < 8; ++r) {
      for (std::uint32_t n0 = 0; n0 < h; ++n0) {
        w[M + pass.table + (r - 1) * h + n0] = w[(n0 * reverse3(r)) << (m - 1 - pass.top)];
      }
    }
  }
  for (unsigned p = 0; p < wide::pass_count(m); ++p) {
    const Pass pass = wide::forward_pass(m, p);
    if (wide::pass_twiddle_count(pass.top, pass.stages) == 0) continue;
    const std::uint32_t h = std::uint32_t{1} << (pass.top - 1);
    for (unsigned r = 1; r < 4; ++r) {
      for (std::uint32_t n0 = 0; n0 < h; ++n0) {
        w[wide_table_offset(M) + pass.table + (r - 1) * h + n0] =
            w[(n0 * wide::reverse2(r)) << (m - 1 - pass.top)];
      }
    }
  }
  if (twist_in_first_pass(m)) {
    // zeta^t W^{t bitrev_3(r)} = exp(i pi t (1 - 4 bitrev_3(r)) / (2M)) at r T + t.
    const std::uint32_t T = M / 8, at = twist_table_offset(M);
    for (unsigned r = 0; r < 8; ++r) {
      for (std::uint32_t t = 0; t < T; ++t) {
        const long double a = pi * static_cast<long double>(t) *
                              static_cast<long double>(1 - 4 * static_cast<int>(reverse3(r))) /
                              static_cast<long double>(2 * M);
        w[at + r * T + t] =
            Complex{static_cast<double>(std::cos(a)), static_cast<double>(std::sin(a))};
      }
    }
  }
  return w;
}

// Twiddle exponent of the stage on bit b for the lower point i of a pair.
TG_HD std::uint32_t twiddle_exponent(std::uint32_t i, unsigned b, unsigned m) {
  return (i & ((std::uint32_t{1} << b) - 1)) << (m - 1 - b);
}

// (u, v) -> (u + v, (u - v) w).
TG_HD void dif_butterfly(Complex& u, Complex& v, Complex w) {
  const Complex d{u.re - v.re, u.im - v.im};
  u = Complex{u.re + v.re, u.im + v.im};
  v = times(d, w);
}

// (u, v) -> (u + v conj(w), u - v conj(w)): the DIF butterfly undone, times 2.
TG_HD void dit_butterfly(Complex& u, Complex& v, Complex w) {
  const Complex b = times_conj(v, w);
  v = Complex{u.re - b.re, u.im - b.im};
  u = Complex{u.re + b.re, u.im + b.im};
}

// sqrt(1/2), rounded to double (W^{M/8} = sqrt(1/2)(1 - i)).
inline constexpr double sqrt_half = 0.70710678118654752440084436210484903928;

// The DIF butterfly with w = W^{q M/8}, q < 4, as a constant: 1, sqrt(1/2)(1 - i), -i,
// -sqrt(1/2)(1 + i). After unrolling q is a compile-time constant and the switch folds.
TG_HD void eighth_dif_butterfly(Complex& u, Complex& v, unsigned q) {
  const double dr = u.re - v.re, di = u.im - v.im;
  u = Complex{u.re + v.re, u.im + v.im};
  switch (q & 3u) {
    case 0: v = Complex{dr, di}; break;
    case 1: v = Complex{(dr + di) * sqrt_half, (di - dr) * sqrt_half}; break;
    case 2: v = Complex{di, -dr}; break;
    default: v = Complex{(di - dr) * sqrt_half, -(dr + di) * sqrt_half}; break;
  }
}

// The DIT butterfly (dit_butterfly) with w = W^{q M/8} as a constant: b = v conj(w) with
// conj(w) = 1, sqrt(1/2)(1 + i), i, sqrt(1/2)(-1 + i).
TG_HD void eighth_dit_butterfly(Complex& u, Complex& v, unsigned q) {
  double br, bi;
  switch (q & 3u) {
    case 0: br = v.re; bi = v.im; break;
    case 1: br = (v.re - v.im) * sqrt_half; bi = (v.re + v.im) * sqrt_half; break;
    case 2: br = -v.im; bi = v.re; break;
    default: br = -(v.re + v.im) * sqrt_half; bi = (v.re - v.im) * sqrt_half; break;
  }
  v = Complex{u.re - br, u.im - bi};
  u = Complex{u.re + br, u.im + bi};
}

// The radix-2 butterfly of the stage on bit b for the lower point i of a pair (the stages of
// a pass of 1 or 2 stages), with W from the table: one twiddle for every lane.
template <bool Inverse, class V>
TG_HD void stage_butterfly(V& u, V& v, std::uint32_t i, unsigned b, unsigned m,
                           const Complex* W) {
TG_UNROLL
  for (unsigned p = 0; p < lane_count<V>; ++p) {
    if (Inverse) dit_butterfly(lane(u, p), lane(v, p), W[twiddle_exponent(i, b, m)]);
    else dif_butterfly(lane(u, p), lane(v, p), W[twiddle_exponent(i, b, m)]);
  }
}


// The 2^B-point DFT of a pass on the registers (P = 2^B points: B = 3, the 8-point DFT of the
// radix-8 passes; B = 2, the 4-point DFT of fused_wide.hpp's radix-4 passes): forward, the B
// DIF stages (register bits B-1 .. 0) with the constant twiddles W_P^q = W^{q' M/8}
// (eighth_dif_butterfly, q' = q 8/P), leaving sum_a v_a W_P^{ak} in register bitrev_B(k);
// inverse, the DIT stages undoing them (bits 0 .. B-1), times P.
template <bool Inverse, class V, unsigned P>
TG_HD void dft_registers(V (&v)[P]) {
  static_assert(P == 4 || P == 8);
  constexpr unsigned bits = P == 8 ? 3 : 2;
TG_UNROLL
  for (unsigned k = 0; k < bits; ++k) {
    const unsigned b = Inverse ? k : bits - 1 - k;
TG_UNROLL
    for (unsigned r = 0; r < P; ++r) {
      if (r & (1u << b)) continue;
      const unsigned q = (r & ((1u << b) - 1)) << (2 - b);
TG_UNROLL
      for (unsigned p = 0; p < lane_count<V>; ++p) {
        if (Inverse) eighth_dit_butterfly(lane(v[r], p), lane(v[r | (1u << b)], p), q);
        else eighth_dif_butterfly(lane(v[r], p), lane(v[r | (1u << b)], p), q);
      }
    }
  }
}

// Registers First.. 7 times table[(r - First) h] (forward), or by its conjugate (inverse):
// one load for every lane.
template <bool Inverse, unsigned First, class V>
TG_HD void twiddle_registers(V (&v)[points_per_thread], const Complex* table, std::uint32_t h) {
TG_UNROLL
  for (unsigned r = First; r < points_per_thread; ++r) {
    const Complex w = table[(r - First) * h];
TG_UNROLL
    for (unsigned p = 0; p < lane_count<V>; ++p) {
      lane(v[r], p) = Inverse ? times_conj(lane(v[r], p), w) : times(lane(v[r], p), w);
    }
  }
}

// A pass of 3 stages with top bit `top` on the 8 points of one radix-8 butterfly, n0 the
// points' bits below top-2: forward, the DFT then register bitrev_3(k) times
// W^{n0 k 2^(m-1-top)} (from the pass table, W: the twiddle table); inverse, the conjugate
// twiddles then the DFT undone.
template <bool Inverse, class V>
TG_HD void radix8_pass(V (&v)[points_per_thread], std::uint32_t n0, Pass pass,
                       unsigned m, const Complex* W) {
  if (!Inverse) dft_registers<false>(v);
  if (pass.top > 2) {
    twiddle_registers<Inverse, 1>(v, W + (std::uint32_t{1} << m) + pass.table + n0,
                                  std::uint32_t{1} << (pass.top - 2));
  }
  if (Inverse) dft_registers<true>(v);
}

// The first pass of a twisted transform where twist_in_first_pass(m): the radix-8 pass of
// thread t (n0 = t) with every register's twiddle times zeta^t, from the twist table.
template <bool Inverse, class V>
TG_HD void twisted_first_pass(V (&v)[points_per_thread], std::uint32_t t, unsigned m,
                              const Complex* W) {
  if (!Inverse) dft_registers<false>(v);
  const std::uint32_t M = std::uint32_t{1} << m;
  twiddle_registers<Inverse, 0>(v, W + twist_table_offset(M) + t, M / points_per_thread);
  if (Inverse) dft_registers<true>(v);
}

// The stages of one pass on thread t's registers: forward (bits top down) or inverse
// (undoing them, bits bottom up, times 2 per stage). A pass of 3 stages is a radix-8
// butterfly (radix8_pass); a shorter one (the first, when 3 does not divide m) takes the
// radix-2 stages. The loops unroll completely, so every register index is a constant on the
// device.
template <bool Inverse, class V>
TG_HD void pass_registers(V (&v)[points_per_thread], std::uint32_t t, Pass pass,
                          unsigned m, const Complex* W) {
  if (pass.stages == 3) {
    radix8_pass<Inverse>(v, t & ((std::uint32_t{1} << (pass.top - 2)) - 1), pass, m, W);
    return;
  }
TG_UNROLL
  for (unsigned k = 0; k < 3; ++k) {
    const unsigned s = Inverse ? 2 - k : k;
    if (s >= pass.stages) continue;
    const unsigned reg_bit = 2 - s, b = pass.top - s;
TG_UNROLL
    for (unsigned r = 0; r < points_per_thread; ++r) {
      if (r & (1u << reg_bit)) continue;
      stage_butterfly<Inverse>(v[r], v[r | (1u << reg_bit)], point_of(t, r, pass.top), b, m, W);
    }
  }
}

// ---- blocks: the same code on the device and, thread by thread, on the host -------------
//
// The block-level functions below are sequences of phases separated by barriers. A Block
// runs a phase as `blk.each(f)`: f(tid, regs) for the calling thread on the device, for every
// thread in turn on the host; `blk.sync()` is __syncthreads() on the device and nothing on
// the host (each phase has already run for every thread). Regs is the per-thread register
// state (it has a member `Complex v[8]`).

template <class Regs>
struct DeviceBlock {
  using registers = Regs;
  Regs& regs;
  unsigned tid;
  template <class F>
  TG_HD void each(F&& f) {
    f(tid, regs);
  }
  TG_HD void sync() {
#if defined(__CUDA_ARCH__) || defined(TORUSGATE_CUDA_EMULATION)
    __syncthreads();
#endif
  }
};

template <class Regs>
struct HostBlock {
  using registers = Regs;
  std::vector<Regs> regs;
  explicit HostBlock(std::size_t threads) : regs(threads) {}
  template <class F>
  void each(F&& f) {
    for (std::size_t t = 0; t < regs.size(); ++t) f(static_cast<unsigned>(t), regs[t]);
  }
  void sync() {}
};

// The length of a transform: M points, m = log2 M, T = M/8 threads; at run time here, as
// compile-time constants in FixedLength below.
struct RunTimeLength {
  static constexpr bool fixed = false;
  std::uint32_t M = 0;
  unsigned m = 0;
  std::uint32_t T = 0;
};

// M = 2^LogM fixed at compile time: the passes unroll, and the points' indices, shared-memory
// slots and twiddle exponents fold into constants and per-thread bases (the rotation kernels
// of the parameter sets' lengths, fused_kernels.cu). The same code, the same operations in the
// same order: the same words as the run-time length.
// Points: per thread, 8 (this file's transforms) or 4 (fused_wide.hpp's), so T = M / Points.
template <unsigned LogM, unsigned Points = points_per_thread>
struct FixedLength {
  static_assert(LogM >= min_transform_log2 && LogM <= max_transform_log2);
  static_assert(Points == 4 || Points == 8);
  static constexpr bool fixed = true;
  static constexpr std::uint32_t M = std::uint32_t{1} << LogM;
  static constexpr unsigned m = LogM;
  static constexpr unsigned points = Points;
  static constexpr std::uint32_t T = M / Points;
};

// Where the threads of a block are: `groups` groups of T = M/8 threads (Length: RunTimeLength
// or FixedLength); group g exchanges through buffers + g * stride (stride = buffer_points(M),
// the buffers side by side; a cluster's host program, whose groups are the blocks of the
// cluster, strides by a block's shared memory).
template <class Length>
struct TransformGroups : Length {
  Complex* buffers = nullptr;
  const Complex* W = nullptr;
  std::size_t stride = 0;

  TG_HD std::uint32_t group(unsigned tid) const { return tid / this->T; }
  TG_HD std::uint32_t thread(unsigned tid) const { return tid % this->T; }
  TG_HD Complex* buffer(unsigned tid) const { return buffers + group(tid) * stride; }
};

using FftGroups = TransformGroups<RunTimeLength>;
template <unsigned LogM>
using FixedGroups = TransformGroups<FixedLength<LogM>>;

// The groups of a transform of M points (Groups: FftGroups, or FixedGroups<log2 M>).
template <class Groups = FftGroups>
TG_HD Groups make_groups(std::uint32_t M, Complex* buffers, const Complex* W) {
  if constexpr (Groups::fixed) {
    return Groups{{}, buffers, W, buffer_points(Groups::M)};
  } else {
    return FftGroups{{M, log2_exact(M), fft_threads(M)}, buffers, W, buffer_points(M)};
  }
}

// body(p) for each pass p of the transform, in order; unrolled for a fixed length.
template <class Groups, class F>
TG_HD void each_pass(const Groups& f, F&& body) {
  if constexpr (Groups::fixed) {
TG_UNROLL
    for (unsigned p = 0; p < pass_count(Groups::m); ++p) body(p);
  } else {
    for (unsigned p = 0; p < pass_count(f.m); ++p) body(p);
  }
}

// Every thread's registers from the layout of the pass with top bit `from` to that of `to`,
// through its group's buffer (with lanes, lane p through the p-th buffer after it: the
// group's buffers are side by side, stride P buffer_points(M)).
//
// Barriers: the first exchange of a transform starts with one, so that whatever read the
// buffer last (the previous transform's last exchange, the G > 1 partial sums) is done; then
// one between the writes and the reads. A later exchange of the same transform needs no
// barrier before its writes: each thread writes exactly the slots it read in the exchange
// before (its own points of the pass between), which no other thread reads there. No
// exchange ends with a barrier: whoever writes the buffer next waits first. So a transform of
// 3 passes has 3 barriers (it had 4), one of 4 passes 4 (it had 6).
//
// after_first(tid), where given, runs on every thread right after the first barrier (the
// staged key's fetch, cmux_step: every thread's products of the row before are done there).
struct NoHook {
  TG_HD void operator()(unsigned) const {}
};
template <class Block, class Groups, class Hook = NoHook>
TG_HD void exchange(Block& blk, const Groups& f, unsigned from, unsigned to, bool first,
                    Hook after_first = {}) {
  if (first) {
    blk.sync();
    if constexpr (!std::is_same_v<Hook, NoHook>) {
      blk.each([&](unsigned tid, auto&) { after_first(tid); });
    }
  }
  blk.each([&](unsigned tid, auto& R) {
    Complex* b = f.buffer(tid);
    const std::uint32_t t = f.thread(tid);
    constexpr unsigned lanes = lane_count<std::remove_reference_t<decltype(R.v[0])>>;
TG_UNROLL
    for (unsigned r = 0; r < points_per_thread; ++r) {
TG_UNROLL
      for (unsigned p = 0; p < lanes; ++p) {
        b[p * buffer_points(f.M) + padded(point_of(t, r, from))] = lane(R.v[r], p);
      }
    }
  });
  blk.sync();
  blk.each([&](unsigned tid, auto& R) {
    const Complex* b = f.buffer(tid);
    const std::uint32_t t = f.thread(tid);
    constexpr unsigned lanes = lane_count<std::remove_reference_t<decltype(R.v[0])>>;
TG_UNROLL
    for (unsigned r = 0; r < points_per_thread; ++r) {
TG_UNROLL
      for (unsigned p = 0; p < lanes; ++p) {
        lane(R.v[r], p) = b[p * buffer_points(f.M) + padded(point_of(t, r, to))];
      }
    }
  });
}

// Whether the twisted transforms of groups f carry the twist in their first pass: for a
// length fixed at compile time where twist_in_first_pass(m). Not for a run-time length: with
// the choice made at run time nvcc compiles both versions of the rotation's step (sm_90,
// twice the instructions of its kernels). TORUSGATE_FUSED_TWIST_TABLE (compile time) takes
// the whole twist from the tables everywhere, for an A/B on a GPU (docs/gpu.md section 6.4).
template <class Groups>
TG_HD constexpr bool first_pass_twist(const Groups&) {
#if defined(TORUSGATE_FUSED_TWIST_TABLE)
  return false;
#else
  if constexpr (Groups::fixed) return twist_in_first_pass(Groups::m);
  return false;
#endif
}

// Forward transform of every group's points: on entry register r of thread t holds point
// point_of(t, r, m-1) of its group's input; on exit spectrum point 8t + r (bit-reversed order).
// Its exchanges' barriers: exchange() (it ends without one after its last reads).
// Twisted: the transform of the input times the twist zeta^j, of which the input carries
// what twisted_input (below) gives it and the first pass the rest.
// after_first_barrier(tid): run by every thread after the transform's first barrier, its first
// exchange's; only for a length fixed at compile time with an exchange (two passes or more).
template <bool Twisted = false, class Block, class Groups, class Hook = NoHook>
TG_HD void forward_transform(Block& blk, const Groups& f, Hook after_first_barrier = {}) {
  if constexpr (!std::is_same_v<Hook, NoHook>) {
    static_assert(Groups::fixed, "a hook needs a length fixed at compile time");
    static_assert(pass_count(Groups::m) > 1, "a hook runs after the first exchange's barrier");
  }
  each_pass(f, [&](unsigned p) {
    const Pass pass = forward_pass(f.m, p);
    if (p > 0) {
      exchange(blk, f, forward_pass(f.m, p - 1).top, pass.top, p == 1, after_first_barrier);
    }
    blk.each([&](unsigned tid, auto& R) {
      if (Twisted && p == 0 && first_pass_twist(f)) {
        twisted_first_pass<false>(R.v, f.thread(tid), f.m, f.W);
      } else {
        pass_registers<false>(R.v, f.thread(tid), pass, f.m, f.W);
      }
    });
  });
}

// Inverse transform, times M: on entry register r of thread t holds spectrum point 8t + r; on
// exit point point_of(t, r, m-1) of the result. Twisted: of which untwisted_output (below)
// makes the untwisted result over M.
template <bool Twisted = false, class Block, class Groups>
TG_HD void inverse_transform(Block& blk, const Groups& f) {
  const unsigned passes = pass_count(f.m);
  each_pass(f, [&](unsigned k) {
    const Pass pass = forward_pass(f.m, passes - 1 - k);
    if (k > 0) exchange(blk, f, forward_pass(f.m, passes - k).top, pass.top, k == 1);
    blk.each([&](unsigned tid, auto& R) {
      if (Twisted && k + 1 == passes && first_pass_twist(f)) {
        twisted_first_pass<true>(R.v, f.thread(tid), f.m, f.W);
      } else {
        pass_registers<true>(R.v, f.thread(tid), pass, f.m, f.W);
      }
    });
  });
}

// (x + i y) times what input register r (point j) of a twisted forward transform of groups f
// carries of the twist zeta^j: all of it (the twist table `twist`), or where the first pass
// carries zeta^t (first_pass_twist), exp(i pi r/16) (nothing for r = 0).
template <class Groups>
TG_HD Complex twisted_input(const Groups& f, double x, double y, const Complex* twist,
                            std::uint32_t j, unsigned r) {
  if (!first_pass_twist(f)) return times(Complex{x, y}, twist[j]);
  if (r == 0) return Complex{x, y};
  return times(Complex{x, y}, register_twist(r));
}

// Output register r (point j) of a twisted inverse transform of groups f, untwisted and
// divided by M: times the untwist table's zeta^-j / M, or where the first pass carried zeta^t,
// times exp(-i pi r/16) / M (constants: the length is fixed).
template <class Groups>
TG_HD Complex untwisted_output(const Groups& f, Complex v, const Complex* untwist,
                               std::uint32_t j, unsigned r) {
  if (!first_pass_twist(f)) return times(v, untwist[j]);
  const double scale = 1.0 / f.M;  // exact
  if (r == 0) return Complex{v.re * scale, v.im * scale};
  const Complex c = register_twist(r);
  return times(v, Complex{c.re * scale, -c.im * scale});
}

}  // namespace torusgate::gpu::kernel::fused
