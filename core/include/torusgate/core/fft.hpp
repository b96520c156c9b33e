// The negacyclic FFT interface: products of polynomials mod X^N + 1 through a length-N/2
// complex FFT (DESIGN.md section 4). With M = N/2 and zeta = exp(i*pi/N):
//   forward:  c_j = (a_j + i a_{j+M}) zeta^j   (fold + twist), then an M-point FFT;
//   inverse:  M-point inverse FFT, times zeta^-j / M (the 1/M normalisation is applied here,
//             on the inverse side, and nowhere else), unfold a_j = Re, a_{j+M} = Im, and round
//             to the nearest integer modulo 2^32.
// A spectrum is 2*M 8-byte slots, split: M real parts then M imaginary parts. The order of the M
// points is engine-specific: use a spectrum only with the engine that produced it. Engines with
// custom_arithmetic() (the fixed-point model of fpga_fft/) keep their own words in the slots:
// their spectra may only be copied, and multiplied with multiply_add().
// forward/inverse are const and thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "torusgate/core/aligned.hpp"
#include "torusgate/core/decomposition.hpp"
#include "torusgate/core/torus.hpp"

namespace torusgate {

// The interface every engine implements. The public functions check sizes, then call the
// engine's protected hooks.
class NegacyclicFft {
 public:
  explicit NegacyclicFft(std::uint32_t polynomial_size);
  virtual ~NegacyclicFft() = default;
  NegacyclicFft(const NegacyclicFft&) = delete;
  NegacyclicFft& operator=(const NegacyclicFft&) = delete;

  std::uint32_t polynomial_size() const { return N_; }                   // N
  std::size_t spectrum_size() const { return std::size_t{N_}; }           // 2*M slots
  virtual std::string name() const = 0;

  // spectrum = FFT(twist(fold(poly))) for a polynomial of N signed integers (digits, or torus
  // values read as signed).
  void forward(std::span<const std::int32_t> poly, std::span<double> spectrum) const;
  void forward(std::span<const Torus32> poly, std::span<double> spectrum) const;
  // spectra[p-1] = forward(digit polynomial p of poly) for p = 1..l: the gadget decomposition,
  // fold and twist fused in one pass per level. Spectrum p-1 starts at (p-1) * stride:
  // stride 0 (consecutive spectra, l * spectrum_size() slots) or at least spectrum_size()
  // ((l-1) * stride + spectrum_size() slots; the gaps are left as they are).
  void forward_decomposed(std::span<const Torus32> poly, const GadgetDecomposition& gadget,
                          std::span<double> spectra, std::size_t stride = 0) const;
  // poly = round(unfold(untwist(IFFT(spectrum)) / M)) mod 2^32.
  void inverse(std::span<const double> spectrum, std::span<Torus32> poly) const;
  // poly += round(...) mod 2^32.
  void inverse_add(std::span<const double> spectrum, std::span<Torus32> poly) const;

  // Calls of this_thread_prefetch.drain() (prefetch.hpp) each transform makes while it
  // computes (forward_decomposed makes one transform per level, inverse and inverse_add one),
  // so that a caller can spread the prefetch of memory it will read next over them. 0: this
  // engine does not drain the queue.
  virtual std::size_t prefetch_drains() const { return 0; }

  // False: spectra are IEEE doubles and fourier_multiply_add() multiplies them (every double
  // engine). True: the slots hold this engine's own words; use multiply_add().
  virtual bool custom_arithmetic() const { return false; }
  // acc += a * b pointwise, in this engine's arithmetic (each of spectrum_size() slots).
  void multiply_add(std::span<const double> a, std::span<const double> b,
                    std::span<double> acc) const;

 protected:
  // The engine's work, on spans whose sizes were checked: poly holds N values, spectrum
  // spectrum_size() slots, spectra l spectra `stride` slots apart (stride >= spectrum_size()).
  virtual void forward_integers(const std::int32_t* poly, double* spectrum) const = 0;
  virtual void forward_torus(const Torus32* poly, double* spectrum) const = 0;
  virtual void forward_digits(const Torus32* poly, const GadgetDecomposition& gadget,
                              double* spectra, std::size_t stride) const = 0;
  virtual void inverse_to_torus(const double* spectrum, Torus32* poly, bool add) const = 0;
  virtual void multiply_add_spectra(const double* a, const double* b, double* acc) const;

  // Per-thread aligned scratch of `doubles` doubles (allocated when a thread first needs
  // that much, never in steady state).
  double* scratch(std::size_t doubles) const;
  // InvalidArgument naming `fn` unless poly == N and spectrum == spectrum_size().
  void check_sizes(std::size_t poly, std::size_t spectrum, const char* fn) const;

 private:
  std::uint32_t N_;
};

// The double-precision engines: fold and twist in double, an M-point complex FFT (the
// engine's transform_forward / transform_inverse), untwist and round. DESIGN.md section 4.
class ComplexNegacyclicFft : public NegacyclicFft {
 public:
  explicit ComplexNegacyclicFft(std::uint32_t polynomial_size);

  // unfold(untwist(IFFT(spectrum)) / M): the N doubles that inverse() rounds, before the
  // rounding. For the spectrum of a product of integer polynomials, their distances from the
  // exact integers are this engine's rounding errors (product_rounding(), bootstrap.hpp).
  void inverse_values(std::span<const double> spectrum, std::span<double> poly) const;

 protected:
  // The M-point complex transforms, out of place on split arrays (64-byte aligned, input
  // left unchanged): forward with exp(-2 pi i/M), inverse with exp(+2 pi i/M), unscaled.
  virtual void transform_forward(const double* in_re, const double* in_im, double* out_re,
                                 double* out_im) const = 0;
  virtual void transform_inverse(const double* in_re, const double* in_im, double* out_re,
                                 double* out_im) const = 0;

  void forward_integers(const std::int32_t* poly, double* spectrum) const override;
  void forward_torus(const Torus32* poly, double* spectrum) const override;
  void forward_digits(const Torus32* poly, const GadgetDecomposition& gadget, double* spectra,
                      std::size_t stride) const override;
  void inverse_to_torus(const double* spectrum, Torus32* poly, bool add) const override;

 private:
  template <class T>
  void fold_twist(const T* poly, double* spectrum) const;
  // T = Torus32: rounded modulo 2^32, stored or (Add) added; T = double: stored unrounded.
  template <class T, bool Add>
  void untwist_to(const double* spectrum, T* poly) const;

  std::vector<double> twist_re_, twist_im_;      // zeta^j
  std::vector<double> untwist_re_, untwist_im_;  // zeta^-j / M
};

// Where each spectrum slot evaluates: slot j (j < M) of forward(a) holds a(zeta^t_j), zeta =
// exp(i*pi/N), for an odd t_j in [1, 2N) (the negacyclic transform evaluates at the N/2 roots
// of X^N + 1 it keeps). Probed once from the engine's own forward(X) and checked (odd, distinct,
// the value within 1e-9 of zeta^t_j), so it holds for any slot order. Multiplying a spectrum
// slot-wise by zeta^(t_j e) multiplies the polynomial by X^e. Throws InvalidArgument for an
// engine with custom_arithmetic() (its slots are not complex values).
std::vector<std::uint32_t> spectrum_root_exponents(const NegacyclicFft& fft);

// The check behind spectrum_root_exponents, for any engine's transform of the polynomial X
// given as slot values (re[j], im[j]) (the GPU engines' too): each slot's exponent t_j, or an
// empty vector unless they are distinct odd powers of zeta within 1e-9.
std::vector<std::uint32_t> root_exponents_of_x(std::span<const double> re,
                                               std::span<const double> im,
                                               std::uint32_t polynomial_size);

// zeta^x, x < 2N, split: 2N real parts, then 2N imaginary parts (the factors zeta^(t_j e) - 1
// of an unrolled key's group steps are read from it). Made from the first quadrant: cos and
// sin of pi r / N for r < N/2, and zeta^(q N/2 + r) = i^q zeta^r exactly (a swap and signs),
// so that a reader of the first quarter alone (the GPU kernels' rotation_factor)
// gets the same doubles. Needs N >= 2.
std::vector<double> unit_roots_split(std::uint32_t polynomial_size);

// acc += a * b pointwise on split spectra (complex multiply-accumulate).
inline void fourier_multiply_add(std::span<const double> a, std::span<const double> b,
                                 std::span<double> acc) {
  const std::size_t M = acc.size() / 2;
  const double* __restrict ar = a.data();
  const double* __restrict ai = a.data() + M;
  const double* __restrict br = b.data();
  const double* __restrict bi = b.data() + M;
  double* __restrict cr = acc.data();
  double* __restrict ci = acc.data() + M;
  for (std::size_t j = 0; j < M; ++j) {
    cr[j] += ar[j] * br[j] - ai[j] * bi[j];
    ci[j] += ar[j] * bi[j] + ai[j] * br[j];
  }
}

// Portable iterative radix-2 engine in plain C++ (no dependency): decimation in frequency
// forward (bit-reversed spectrum order), decimation in time inverse.
class PortableFft final : public ComplexNegacyclicFft {
 public:
  explicit PortableFft(std::uint32_t polynomial_size);
  std::string name() const override { return "portable"; }

 protected:
  void transform_forward(const double* in_re, const double* in_im, double* out_re,
                         double* out_im) const override;
  void transform_inverse(const double* in_re, const double* in_im, double* out_re,
                         double* out_im) const override;

 private:
  std::vector<double> w_re_, w_im_;  // stage tables: for half-length h, h entries at h-1
};

// Round-to-nearest of v (|v| < 2^51) modulo 2^32, branch-free (1.5 * 2^52 shift trick).
inline Torus32 round_to_torus(double v) {
  const double shifted = v + 6755399441055744.0;
  std::uint64_t bits;
  static_assert(sizeof bits == sizeof shifted);
  __builtin_memcpy(&bits, &shifted, sizeof bits);
  return static_cast<Torus32>(bits);
}

}  // namespace torusgate
