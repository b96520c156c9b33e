// The per-element math of the CUDA kernels, compiled by nvcc for the device and by the host
// compiler for the CPU tests (tests/gpu/test_gpu_host.cpp checks every function against
// core/ and runs the kernels' whole data flow on the host). Standard headers only (and,
// compiled for the CUDA emulator, its runtime header).
//
// Each kernel of cuda_kernels.cu computes its indices and calls one of the "body" functions
// below; the host mirror calls the same bodies for every index. Layouts (all contiguous,
// row-major, M = N/2, k1 = k+1, rows = (k+1)l):
//   LWE samples            [count][n+1] Torus32
//   accumulators           [rotation][k1][N] Torus32 (GLWE: k masks, then the body)
//   digit spectra          [rotation][rows][M] Complex, row q = c*l + (p-1) as GGSW rows
//   product spectra        [rotation][k1][M] Complex
//   Fourier bootstrapping  [i < n][rows][k1][M] Complex: the coefficient key's polynomial
//   key                    order, each polynomial folded, twisted and transformed
//   key-switching key      [kN][t][base-1][n+1] Torus32 as core's KeySwitchingKey
// The transforms between them are cuFFT Z2Z (natural order, forward exp(-2 pi i/M), both
// directions unscaled); the 1/M is in the untwist factors, as in core/fft.hpp.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <numbers>
#include <vector>

#if defined(TORUSGATE_CUDA_EMULATION)
#include <cuda_runtime.h>  // copy_async of the CUDA emulator (gpu/emu)
#endif

#if defined(__CUDACC__)
#define TG_HD __host__ __device__ __forceinline__
#define TG_UNROLL _Pragma("unroll")
#define TG_NO_UNROLL _Pragma("unroll 1")
#else
#define TG_HD inline
#define TG_UNROLL
#define TG_NO_UNROLL
#endif

namespace torusgate::gpu::kernel {

using Torus32 = std::uint32_t;

// 16 bytes from device memory to shared memory (both 16-byte aligned), asynchronously where
// the device copies asynchronously (cp.async.cg, compute capability 8.0 and later: no register
// holds the bytes, the thread goes on); copy16_async_wait() waits for the calling thread's
// copies (a barrier after it makes everyone's visible). On the host both are plain (the block
// programs run thread after thread); on the CUDA emulator a copy is done at the thread's
// wait, not before, so a read before the wait sees the old contents.
TG_HD void copy16_async(void* dst, const void* src) {
#if defined(__CUDA_ARCH__) && !defined(TORUSGATE_CUDA_EMULATION) && __CUDA_ARCH__ >= 800
  const auto to = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(to), "l"(src) : "memory");
#elif defined(TORUSGATE_CUDA_EMULATION)
  cuda_emu::copy_async(dst, src, 16);
#else
  std::memcpy(dst, src, 16);
#endif
}
TG_HD void copy16_async_wait() {
#if defined(__CUDA_ARCH__) && !defined(TORUSGATE_CUDA_EMULATION) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n\tcp.async.wait_group 0;" ::: "memory");
#elif defined(TORUSGATE_CUDA_EMULATION)
  cuda_emu::wait_async_copies();
#endif
}

// Layout-compatible with cufftDoubleComplex (double2: 16 bytes, 16-byte aligned).
struct alignas(16) Complex {
  double re;
  double im;
};

// ---- torus and modulus switching --------------------------------------------------------

// e/8 of the torus (e may be negative).
TG_HD Torus32 eighths(std::int32_t e) { return static_cast<Torus32>(e) * (Torus32{1} << 29); }

// Round x to the nearest multiple of 1/2N and return its index in [0, 2N), 2N = 2^log2_2n
// (core's mod_switch_from_torus).
TG_HD std::uint32_t mod_switch(Torus32 x, std::uint32_t log2_2n) {
  const std::uint64_t interval = (std::uint64_t{1} << 32) >> log2_2n;
  const std::uint64_t rounded = (static_cast<std::uint64_t>(x) + interval / 2) >> (32 - log2_2n);
  return static_cast<std::uint32_t>(rounded & ((std::uint64_t{1} << log2_2n) - 1));
}

// Round-to-nearest of v (|v| < 2^51) modulo 2^32: the 1.5 * 2^52 shift trick of core's
// round_to_torus, with the bits read the device's way or the host's.
TG_HD Torus32 round_to_torus32(double v) {
  const double shifted = v + 6755399441055744.0;
#if defined(__CUDA_ARCH__)
  return static_cast<Torus32>(static_cast<unsigned long long>(__double_as_longlong(shifted)));
#else
  std::uint64_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  return static_cast<Torus32>(bits);
#endif
}

// ---- signed gadget decomposition (core's GadgetDecomposition) ---------------------------

struct GadgetConstants {
  Torus32 offset = 0;  // Bg/2 at every level plus half of the last level's unit
  Torus32 mask = 0;    // Bg - 1
  std::int32_t half = 0;
  std::uint32_t base_log = 0;
  std::uint32_t level_count = 0;
  double digit_bias = 0;  // 2^52 + Bg/2 (gadget_digit_double)
};

inline GadgetConstants make_gadget(std::uint32_t base_log, std::uint32_t level_count) {
  GadgetConstants g;
  const std::uint32_t base = 1u << base_log;
  g.base_log = base_log;
  g.level_count = level_count;
  g.half = static_cast<std::int32_t>(base / 2);
  g.mask = base - 1;
  g.digit_bias = 4503599627370496.0 + static_cast<double>(base / 2);
  for (std::uint32_t p = 1; p <= level_count; ++p) g.offset += Torus32(base / 2) << (32 - p * base_log);
  const std::uint32_t precision = base_log * level_count;
  if (precision < 32) g.offset += Torus32{1} << (32 - precision - 1);
  return g;
}

// The bits u in [0, Bg) of the digit of level p (1-based) of x, from w = x + g.offset (an
// offset word: one addition serves all l levels of x): the digit is u - Bg/2.
TG_HD Torus32 offset_gadget_bits(const GadgetConstants& g, Torus32 w, std::uint32_t p) {
  return (w >> (32 - p * g.base_log)) & g.mask;
}
TG_HD Torus32 gadget_bits(const GadgetConstants& g, Torus32 x, std::uint32_t p) {
  return offset_gadget_bits(g, x + g.offset, p);
}

// Digit of level p (1-based) of x, in [-Bg/2, Bg/2).
TG_HD std::int32_t gadget_digit(const GadgetConstants& g, Torus32 x, std::uint32_t p) {
  return static_cast<std::int32_t>(gadget_bits(g, x, p)) - g.half;
}

// The same digit as a double, from the offset word w = x + g.offset, without an
// integer-to-double conversion: the double whose high word is 0x43300000 and whose low word
// is the digit's bits u (offset_gadget_bits) is exactly 2^52 + u,
// and subtracting 2^52 + Bg/2 leaves u - Bg/2 exactly (every value is an integer below 2^53).
// On the device that is a move and a DADD instead of an I2F.F64, which runs at a quarter of the
// DFMA rate on compute capability 8.0 and 9.0 (16 results per clock and SM against 64 on 9.0;
// the CUDA programming guide's throughput table); the rotations convert 2(k+1)lN digits a step.
TG_HD double offset_digit_double(const GadgetConstants& g, Torus32 w, std::uint32_t p) {
  const Torus32 bits = offset_gadget_bits(g, w, p);
#if defined(__CUDA_ARCH__)
  const double biased = __hiloint2double(0x43300000, static_cast<int>(bits));
#else
  const std::uint64_t word = (std::uint64_t{0x43300000} << 32) | bits;
  double biased;
  std::memcpy(&biased, &word, sizeof biased);
#endif
  return biased - g.digit_bias;
}
// The same from x itself.
TG_HD double gadget_digit_double(const GadgetConstants& g, Torus32 x, std::uint32_t p) {
  return offset_digit_double(g, x + g.offset, p);
}

// ---- fold, twist, untwist (core/fft.hpp's ComplexNegacyclicFft) --------------------------

// zeta^j = exp(i pi j/N) for j < M: the twist table (made on the host, uploaded once).
inline std::vector<Complex> twist_factors(std::uint32_t polynomial_size) {
  const std::size_t N = polynomial_size, M = N / 2;
  std::vector<Complex> t(M);
  for (std::size_t j = 0; j < M; ++j) {
    const double angle = std::numbers::pi * static_cast<double>(j) / static_cast<double>(N);
    t[j] = Complex{std::cos(angle), std::sin(angle)};
  }
  return t;
}

// zeta^-j / M for j < M: the untwist table, with the inverse transform's 1/M.
inline std::vector<Complex> untwist_factors(std::uint32_t polynomial_size) {
  const std::size_t N = polynomial_size, M = N / 2;
  std::vector<Complex> t(M);
  for (std::size_t j = 0; j < M; ++j) {
    const double angle = std::numbers::pi * static_cast<double>(j) / static_cast<double>(N);
    t[j] = Complex{std::cos(angle) / static_cast<double>(M),
                   -std::sin(angle) / static_cast<double>(M)};
  }
  return t;
}

// v * w, and v * conj(w).
TG_HD Complex times(Complex v, Complex w) {
  return Complex{v.re * w.re - v.im * w.im, v.re * w.im + v.im * w.re};
}
TG_HD Complex times_conj(Complex v, Complex w) {
  return Complex{v.re * w.re + v.im * w.im, v.im * w.re - v.re * w.im};
}

// (x + i y) * twist: the fold c_j = a_j + i a_{j+M} and its twist by zeta^j.
TG_HD Complex fold_twist(double x, double y, Complex twist) { return times(Complex{x, y}, twist); }

// ---- layout index functions -------------------------------------------------------------

// Complex index of point j of polynomial (q, c) of GGSW i in the Fourier bootstrapping key.
TG_HD std::size_t bk_spectrum_index(std::size_t i, std::size_t q, std::size_t c, std::size_t j,
                                    std::size_t rows, std::size_t k1, std::size_t M) {
  return ((i * rows + q) * k1 + c) * M + j;
}
// Complex index of point j of digit row q of rotation r.
TG_HD std::size_t digit_index(std::size_t r, std::size_t q, std::size_t j, std::size_t rows,
                              std::size_t M) {
  return (r * rows + q) * M + j;
}
// Complex index of point j of product column c of rotation r.
TG_HD std::size_t product_index(std::size_t r, std::size_t c, std::size_t j, std::size_t k1,
                                std::size_t M) {
  return (r * k1 + c) * M + j;
}
// Word index of coefficient j of polynomial c of accumulator r.
TG_HD std::size_t accumulator_index(std::size_t r, std::size_t c, std::size_t j, std::size_t k1,
                                    std::size_t N) {
  return (r * k1 + c) * N + j;
}
// Word index of the key-switching key sample (i, level, digit), digit in 1..base-1.
TG_HD std::size_t ksk_sample_index(std::size_t i, std::size_t level, std::size_t digit,
                                   std::size_t levels, std::size_t base, std::size_t n1) {
  return ((i * levels + level) * (base - 1) + (digit - 1)) * n1;
}

// ---- batch descriptors ------------------------------------------------------------------

// Kinds of OpDesc: a bootstrapped gate (its results come from the blind rotations) or a
// free one computed directly.
enum class OpKind : std::uint32_t { Bootstrapped = 0, Constant = 1, Copy = 2, Not = 3 };

// One op of a batch with at least one output bit: its results are [first_result,
// first_result + count) of the batch's result buffer; element e of it is written to
// out + e*(n+1) at the end.
struct OpDesc {
  const Torus32* in = nullptr;  // Copy/Not: element 0 of the input span
  Torus32* out = nullptr;       // element 0 of the output span
  std::uint64_t first_result = 0;
  std::uint32_t count = 0;
  OpKind kind = OpKind::Bootstrapped;
  Torus32 constant = 0;  // Constant: the body (+-1/8)
};

// One bootstrapped op. Element e is job first_job + e and takes `bootstraps` rotations from
// first_rotation + e*bootstraps; rotation `which` (0 or 1) of it bootstraps
// offset_eighths[which]/8 + sum_j weights[which][j] * in[j][e].
struct BootOpDesc {
  const Torus32* in[3] = {nullptr, nullptr, nullptr};
  std::uint64_t first_job = 0;
  std::uint64_t first_rotation = 0;
  std::uint64_t first_result = 0;
  std::uint32_t count = 0;
  std::uint32_t bootstraps = 1;  // 1, or 2 for MUX
  std::int32_t weights[2][3] = {{0, 0, 0}, {0, 0, 0}};
  std::int32_t offset_eighths[2] = {0, 0};
};

// The last item whose `first` field is <= index, among `count` items sorted by it (the
// items' ranges tile [items[0].*first, ...)). Binary search; count >= 1.
template <class T>
TG_HD std::uint32_t find_item(const T* items, std::uint32_t count, std::uint64_t T::*first,
                              std::uint64_t index) {
  std::uint32_t lo = 0, hi = count;  // answer in [lo, hi)
  while (hi - lo > 1) {
    const std::uint32_t mid = lo + (hi - lo) / 2;
    if (items[mid].*first <= index) lo = mid;
    else hi = mid;
  }
  return lo;
}

// ---- kernel bodies ----------------------------------------------------------------------

// Word w of the result of free op `op`, element e (Constant, Copy, Not).
TG_HD Torus32 free_gate_word(const OpDesc& op, std::uint64_t e, std::uint32_t w, std::uint32_t n) {
  switch (op.kind) {
    case OpKind::Constant: return w == n ? op.constant : Torus32{0};
    case OpKind::Copy: return op.in[e * (n + 1) + w];
    case OpKind::Not: return Torus32{0} - op.in[e * (n + 1) + w];
    default: return 0;
  }
}

// Word w of the linear combination that rotation `rotation` (a global index) of op
// bootstraps: offset/8 on the body plus the weighted inputs (core's CPU backend).
TG_HD Torus32 linear_combination_word(const BootOpDesc& op, std::uint64_t rotation,
                                      std::uint32_t w, std::uint32_t n) {
  const std::uint64_t local = rotation - op.first_rotation;
  const std::uint64_t e = local / op.bootstraps;
  const std::uint32_t which = static_cast<std::uint32_t>(local % op.bootstraps);
  Torus32 v = w == n ? eighths(op.offset_eighths[which]) : Torus32{0};
  for (int j = 0; j < 3; ++j) {
    const std::int32_t weight = op.weights[which][j];
    if (weight != 0) v += static_cast<Torus32>(weight) * op.in[j][e * (n + 1) + w];
  }
  return v;
}

// Coefficient j of X^{-b} * (mu, ..., mu) mod X^N + 1, b in [0, 2N): the test vector's
// rotation by the switched body.
TG_HD Torus32 test_vector_coefficient(std::uint32_t b, std::uint32_t j, std::uint32_t N,
                                      Torus32 mu) {
  const std::uint32_t shift = b % N;
  const Torus32 sign = b >= N ? Torus32(0) - 1 : Torus32{1};
  return (j + shift < N ? sign : Torus32{0} - sign) * mu;
}

// Word w < (k+1)N of a fresh accumulator for an LWE sample whose body is `body`: masks 0,
// body X^{-b~} mu.
TG_HD Torus32 fresh_accumulator_word(Torus32 body, std::uint32_t w, std::uint32_t k,
                                     std::uint32_t N, std::uint32_t log2_2n, Torus32 mu) {
  if (w < k * N) return 0;
  return test_vector_coefficient(mod_switch(body, log2_2n), w - k * N, N, mu);
}

// The same for the LWE sample `sample` (n+1 words).
TG_HD Torus32 accumulator_init_word(const Torus32* sample, std::uint32_t w, std::uint32_t n,
                                    std::uint32_t k, std::uint32_t N, std::uint32_t log2_2n,
                                    Torus32 mu) {
  return fresh_accumulator_word(sample[n], w, k, N, log2_2n, mu);
}

// Coefficient j of (X^power - 1) * a for one polynomial a of N words, power in [0, 2N).
TG_HD Torus32 rotate_minus_one(const Torus32* a, std::uint32_t power, std::uint32_t j,
                               std::uint32_t N) {
  const bool negate = power >= N;
  const std::uint32_t s = negate ? power - N : power;
  const Torus32 sign_hi = negate ? Torus32(0) - 1 : Torus32{1};
  if (j < s) return Torus32{0} - sign_hi * a[j + N - s] - a[j];
  return sign_hi * a[j - s] - a[j];
}

// The same coefficient written without a branch: a[i] - a[j] or -a[i] - a[j] with
// i = (j - power) mod N, negated when exactly one of "power >= N" and "j < power mod N" holds
// (X^N = -1); one load at a computed index, then selects. The cluster programs take it (nvcc
// 13, sm_90: tfhe_lib_128's c6 step loop 2,073 instructions instead of 2,358, 48 fewer shared
// loads, straight-line code; the lanes of a warp have different j, and the branch diverged
// where j - power wraps; docs/gpu.md section 6.16). The block programs keep the branch: there
// nvcc already predicates it, and this form made the l2 kernel spill 52 bytes instead of 4.
TG_HD Torus32 rotate_minus_one_flat(const Torus32* a, std::uint32_t power, std::uint32_t j,
                                    std::uint32_t N) {
  const bool high = power >= N;
  const std::uint32_t s = high ? power - N : power;
  const bool wraps = j < s;
  const Torus32 w = a[wraps ? j + N - s : j - s];
  return (wraps != high ? Torus32{0} - w : w) - a[j];
}

// For point j < M of polynomial `a` of an accumulator: the coefficients j and j+M of
// (X^power - 1) a (rotate), or of a itself (an unrolled key's step), decomposed into l signed
// digits, folded and twisted: level p's value goes to out[(p-1) * level_stride] (digit rows
// c*l + p-1 of one rotation, stride M).
TG_HD void rotate_decompose_twist(const Torus32* a, std::uint32_t power, std::uint32_t j,
                                  std::uint32_t N, const GadgetConstants& g, Complex twist,
                                  Complex* out, std::size_t level_stride, bool rotate = true) {
  const std::uint32_t M = N / 2;
  const Torus32 lo = rotate ? rotate_minus_one(a, power, j, N) : a[j];
  const Torus32 hi = rotate ? rotate_minus_one(a, power, j + M, N) : a[j + M];
  for (std::uint32_t p = 1; p <= g.level_count; ++p) {
    out[(p - 1) * level_stride] =
        fold_twist(gadget_digit_double(g, lo, p), gadget_digit_double(g, hi, p), twist);
  }
}

// Point j of the external product in the Fourier domain for one rotation:
// product[c] = sum_q digits[q] * key[q][c] for c < k1 (digits: rows spectra of stride M;
// key: one GGSW, rows x k1 spectra; product: k1 spectra).
TG_HD void multiply_accumulate_point(const Complex* digits, const Complex* key, Complex* product,
                                     std::uint32_t j, std::uint32_t rows, std::uint32_t k1,
                                     std::uint32_t M) {
  for (std::uint32_t c = 0; c < k1; ++c) {
    double re = 0, im = 0;
    for (std::uint32_t q = 0; q < rows; ++q) {
      const Complex d = digits[std::size_t{q} * M + j];
      const Complex b = key[(std::size_t{q} * k1 + c) * M + j];
      re += d.re * b.re - d.im * b.im;
      im += d.re * b.im + d.im * b.re;
    }
    product[std::size_t{c} * M + j] = Complex{re, im};
  }
}

// ---- unrolled bootstrapping keys (core/bootstrap.hpp, BlindRotator::unrolled_group) ------
//
// A group step of rotation r (u = unroll key bits, G = 2^u - 1 GGSW) adds sum_g (X^e_g - 1)
// (GGSW_Gp+g [x] ACC), e_g the sum of the group's switched masks over the bits of pattern
// G - g (core's unrolled_exponent: (a+b, a, b) for pairs): the products of one decomposition of
// ACC with the group's G GGSW, each multiplied slot-wise by zeta^(t e_g) - 1, t the slot's
// root exponent (the odd t < 2N where the engine's transform evaluates that slot, probed from
// its transform of the polynomial X by core's root_exponents_of_x), zeta = exp(i pi/N), read
// from a table of zeta^x, x < 2N (core's unit_roots_split, interleaved). (The fused engine
// reads the single key bits' powers and multiplies them for the others: group_factors in
// fused_rotation.hpp.)

// GGSW samples of a group of u key bits: 2^u - 1 (core's unroll_group_ggsws).
TG_HD constexpr std::uint32_t group_ggsw_count(std::uint32_t u) { return (1u << u) - 1; }
template <unsigned U>
inline constexpr unsigned group_ggsws = group_ggsw_count(U);

// The exponent of GGSW g of a group of u bits with switched masks masks[0..u) (each < 2N):
// core's unrolled_exponent, the same sum, not reduced mod 2N (rotation_factor reduces
// root * e, which is the same mod 2N since 2N divides 2^32).
TG_HD std::uint32_t group_exponent(const std::uint32_t* masks, std::uint32_t u,
                                   std::uint32_t g) {
  const std::uint32_t v = group_ggsw_count(u) - g;
  std::uint32_t e = 0;
  for (std::uint32_t m = 0; m < u; ++m) {
    if ((v >> (u - 1 - m)) & 1u) e += masks[m];
  }
  return e;
}

// The G = 2^U - 1 exponents of a group step of U key bits (group_exponent).
template <unsigned U>
struct GroupExponents {
  std::uint32_t e[group_ggsws<U>];
};
// masks(m): the group's switched mask of key bit m < U.
template <unsigned U, class Masks>
TG_HD GroupExponents<U> group_exponents(Masks masks) {
  std::uint32_t m[U];
  for (unsigned b = 0; b < U; ++b) m[b] = masks(b);
  GroupExponents<U> x;
  for (unsigned g = 0; g < group_ggsws<U>; ++g) x.e[g] = group_exponent(m, U, g);
  return x;
}

// zeta^(root e) - 1: X^e - 1 at the slot of root exponent `root`, from the whole table
// (2N entries).
TG_HD Complex rotation_factor_full(const Complex* unit, std::uint32_t root, std::uint32_t e,
                                   std::uint32_t N) {
  const Complex u = unit[(root * e) & (2 * N - 1)];
  return Complex{u.re - 1.0, u.im};
}
// The same from the table's first quarter alone (N/2 entries, a quarter of the cache lines):
// zeta^x = i^q zeta^r for x = q N/2 + r, which is how core's unit_roots_split makes the other
// three quarters, so the doubles are the same.
// unit_power_quarter: zeta^(root e) itself, rotation_factor_quarter: less 1.
TG_HD Complex unit_power_quarter(const Complex* unit, std::uint32_t root, std::uint32_t e,
                                 std::uint32_t N) {
  const std::uint32_t x = (root * e) & (2 * N - 1);
  const Complex u = unit[x & (N / 2 - 1)];
  Complex v = (x & (N / 2)) != 0 ? Complex{-u.im, u.re} : u;  // times i
  if ((x & N) != 0) v = Complex{-v.re, -v.im};                 // times i^2
  return v;
}
TG_HD Complex rotation_factor_quarter(const Complex* unit, std::uint32_t root, std::uint32_t e,
                                      std::uint32_t N) {
  const Complex v = unit_power_quarter(unit, root, e, N);
  return Complex{v.re - 1.0, v.im};
}
// x with its sign flipped where `flip` (an integer operation on its sign bit; x and -x as
// unary minus gives them).
TG_HD double flip_sign(double x, bool flip) {
#if defined(__CUDA_ARCH__) && !defined(TORUSGATE_CUDA_EMULATION)
  return __longlong_as_double(__double_as_longlong(x) ^
                              (static_cast<long long>(flip) << 63));
#else
  std::uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  bits ^= static_cast<std::uint64_t>(flip) << 63;
  std::memcpy(&x, &bits, sizeof bits);
  return x;
#endif
}
// unit_power_quarter with the quadrant by selects and sign bits: i^q (c + i s) = (c, s),
// (-s, c), (-c, -s), (s, -c) for q = 0 .. 3. The same doubles.
TG_HD Complex unit_power_quarter_bits(const Complex* unit, std::uint32_t root, std::uint32_t e,
                                      std::uint32_t N) {
  const std::uint32_t x = (root * e) & (2 * N - 1);
  const Complex u = unit[x & (N / 2 - 1)];
  const bool swap = (x & (N / 2)) != 0, negate_im = (x & N) != 0;
  return Complex{flip_sign(swap ? u.im : u.re, swap != negate_im),
                 flip_sign(swap ? u.re : u.im, negate_im)};
}
// The kernels' choice: the table's first quarter (8 KiB instead of 32 for N = 1024), or with
// TORUSGATE_FUSED_FULL_UNIT (compile time, for an A/B build) the whole table. Measured on an
// H100 with tfhe_lib_128 (docs/gpu.md section 6.20): the quarter's unrolled 1x1 rotation at
// 16,384 took 317 ms instead of 340 (pairs) and 429 instead of 452 (threes), the threes' c6
// at batch 1 1.492 ms instead of 1.534, the pairs' c6 1.614 instead of 1.602. Only unrolled
// keys' steps read the table.
TG_HD Complex rotation_factor(const Complex* unit, std::uint32_t root, std::uint32_t e,
                              std::uint32_t N) {
#if defined(TORUSGATE_FUSED_FULL_UNIT)
  return rotation_factor_full(unit, root, e, N);
#else
  return rotation_factor_quarter(unit, root, e, N);
#endif
}

// Point j of a group step's product for one rotation: product[c] = sum_g f_g sum_q digits[q] *
// key_g[q][c] (key: the group's G = 2^u - 1 GGSW, contiguous; f_g = rotation_factor(e_g) at
// slot j, e_g = group_exponent(masks, u, g)).
TG_HD void multiply_accumulate_group_point(const Complex* digits, const Complex* key,
                                           Complex* product, std::uint32_t j, std::uint32_t rows,
                                           std::uint32_t k1, std::uint32_t M,
                                           const std::uint32_t* masks, std::uint32_t u,
                                           std::uint32_t root, const Complex* unit) {
  const std::size_t ggsw = std::size_t{rows} * k1 * M;
  const std::uint32_t G = group_ggsw_count(u);
  for (std::uint32_t c = 0; c < k1; ++c) {
    double re = 0, im = 0;
    for (std::uint32_t g = 0; g < G; ++g) {
      double gr = 0, gi = 0;
      for (std::uint32_t q = 0; q < rows; ++q) {
        const Complex d = digits[std::size_t{q} * M + j];
        const Complex b = key[g * ggsw + (std::size_t{q} * k1 + c) * M + j];
        gr += d.re * b.re - d.im * b.im;
        gi += d.re * b.im + d.im * b.re;
      }
      const Complex f = rotation_factor(unit, root, group_exponent(masks, u, g), 2 * M);
      const Complex v = times(Complex{gr, gi}, f);
      re += v.re;
      im += v.im;
    }
    product[std::size_t{c} * M + j] = Complex{re, im};
  }
}

// Point j < M of a product polynomial already untwisted, rounded to Torus32 and added into
// the accumulator polynomial a: coefficient j (real part) and j+M (imaginary part).
TG_HD void round_add(Complex untwisted, Torus32* a, std::uint32_t j, std::uint32_t M) {
  a[j] += round_to_torus32(untwisted.re);
  a[j + M] += round_to_torus32(untwisted.im);
}

// Point j < M of an inverse-transformed product polynomial: untwist, round and add into a.
TG_HD void untwist_round_add(Complex v, Complex untwist, Torus32* a, std::uint32_t j,
                             std::uint32_t M) {
  round_add(times(v, untwist), a, j, M);
}

// Word w <= kN of the LWE sample extracted (coefficient 0) from the accumulator acc
// ((k+1)N words): core's sample_extract.
TG_HD Torus32 sample_extract_word(const Torus32* acc, std::uint32_t w, std::uint32_t k,
                                  std::uint32_t N) {
  if (w == k * N) return acc[k * N];
  const std::uint32_t c = w / N, j = w % N;
  const Torus32* a = acc + std::size_t{c} * N;
  return j == 0 ? a[0] : Torus32{0} - a[N - j];
}

// Word w of a gate's key-switching input: its extracted sample, or for a MUX the sum of its
// two plus 1/8 on the body (`acc` points to the gate's first accumulator).
TG_HD Torus32 gate_extract_word(const Torus32* acc, std::uint32_t bootstraps, std::uint32_t w,
                                std::uint32_t k, std::uint32_t N) {
  Torus32 v = sample_extract_word(acc, w, k, N);
  if (bootstraps == 2) {
    v += sample_extract_word(acc + std::size_t{k + 1} * N, w, k, N);
    if (w == k * N) v += eighths(1);
  }
  return v;
}

// ---- key switching (core's key_switch) ---------------------------------------------------

struct KeySwitchConstants {
  Torus32 round_offset = 0;  // half of the last level's unit
  Torus32 mask = 0;          // base - 1
  std::uint32_t base_log = 0;
  std::uint32_t level_count = 0;
  std::uint32_t n = 0;       // output dimension
  std::uint32_t input_dimension = 0;  // kN
};

inline KeySwitchConstants make_key_switch(std::uint32_t base_log, std::uint32_t level_count,
                                          std::uint32_t n, std::uint32_t input_dimension) {
  KeySwitchConstants ks;
  ks.base_log = base_log;
  ks.level_count = level_count;
  ks.mask = (Torus32{1} << base_log) - 1;
  const std::uint32_t precision = base_log * level_count;
  ks.round_offset = precision < 32 ? Torus32{1} << (32 - precision - 1) : 0;
  ks.n = n;
  ks.input_dimension = input_dimension;
  return ks;
}

// Unsigned digit of level j (0-based) of an input coefficient that already has the rounding
// offset added; 0 selects no key sample (the row that is not stored).
TG_HD std::uint32_t key_switch_digit(const KeySwitchConstants& ks, Torus32 rounded,
                                     std::uint32_t level) {
  return (rounded >> (32 - (level + 1) * ks.base_log)) & ks.mask;
}

// acc (word w of one output) minus the key samples that input coefficient i selects; a is
// the coefficient plus ks.round_offset, key_i the key's samples of coefficient i.
TG_HD Torus32 key_switch_step(Torus32 acc, Torus32 rounded, const Torus32* key_i,
                              std::uint32_t w, const KeySwitchConstants& ks) {
  const std::size_t n1 = ks.n + 1, base = std::size_t{1} << ks.base_log;
  for (std::uint32_t level = 0; level < ks.level_count; ++level) {
    const std::uint32_t digit = key_switch_digit(ks, rounded, level);
    if (digit != 0) acc -= key_i[ksk_sample_index(0, level, digit, ks.level_count, base, n1) + w];
  }
  return acc;
}

// Words of the key-switching key's samples for one input coefficient: t * (base-1) * (n+1).
TG_HD std::size_t ksk_coefficient_words(const KeySwitchConstants& ks) {
  return std::size_t{ks.level_count} * ((std::size_t{1} << ks.base_log) - 1) * (ks.n + 1);
}

}  // namespace torusgate::gpu::kernel
