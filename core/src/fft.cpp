// The engine interface (size checks), fold/twist and untwist/round shared by the double
// engines, and the portable radix-2 engine. The half-length negacyclic transform: fft.hpp,
// DESIGN.md section 4.
#include "torusgate/core/fft.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numbers>
#include <type_traits>

#include "torusgate/core/error.hpp"

namespace torusgate {

NegacyclicFft::NegacyclicFft(std::uint32_t polynomial_size) : N_(polynomial_size) {
  EXPECTS(N_ >= 4 && std::has_single_bit(N_),
          "NegacyclicFft: polynomial_size=" + std::to_string(N_) +
              " but expected a power of two >= 4");
}

void NegacyclicFft::check_sizes(std::size_t poly, std::size_t spectrum, const char* fn) const {
  EXPECTS(poly == N_, std::string("NegacyclicFft::") + fn + ": polynomial has " +
                          std::to_string(poly) + " coefficients but the engine is for N=" +
                          std::to_string(N_));
  EXPECTS(spectrum == spectrum_size(),
          std::string("NegacyclicFft::") + fn + ": spectrum has " + std::to_string(spectrum) +
              " doubles but expected 2*(N/2)=" + std::to_string(spectrum_size()));
}

double* NegacyclicFft::scratch(std::size_t doubles) const {
  thread_local AlignedVector<double> buffer;
  if (buffer.size() < doubles) buffer.resize(doubles);
  return buffer.data();
}

void NegacyclicFft::forward(std::span<const std::int32_t> poly, std::span<double> spectrum) const {
  check_sizes(poly.size(), spectrum.size(), "forward");
  forward_integers(poly.data(), spectrum.data());
}

void NegacyclicFft::forward(std::span<const Torus32> poly, std::span<double> spectrum) const {
  check_sizes(poly.size(), spectrum.size(), "forward");
  forward_torus(poly.data(), spectrum.data());
}

void NegacyclicFft::forward_decomposed(std::span<const Torus32> poly,
                                       const GadgetDecomposition& gadget,
                                       std::span<double> spectra, std::size_t stride) const {
  const std::size_t l = gadget.level_count(), size = spectrum_size();
  EXPECTS(poly.size() == N_, "NegacyclicFft::forward_decomposed: polynomial has " +
                                std::to_string(poly.size()) +
                                " coefficients but the engine is for N=" + std::to_string(N_));
  EXPECTS(stride == 0 || stride >= size,
          "NegacyclicFft::forward_decomposed: stride " + std::to_string(stride) +
              " is shorter than a spectrum (" + std::to_string(size) +
              " doubles); expected 0 (consecutive spectra) or at least " + std::to_string(size));
  if (stride == 0) {
    EXPECTS(spectra.size() == l * size,
            "NegacyclicFft::forward_decomposed: spectra hold " + std::to_string(spectra.size()) +
                " doubles but l=" + std::to_string(l) + " spectra need " +
                std::to_string(l * size));
    stride = size;
  } else {
    EXPECTS(spectra.size() == (l - 1) * stride + size,
            "NegacyclicFft::forward_decomposed: spectra hold " + std::to_string(spectra.size()) +
                " doubles but l=" + std::to_string(l) + " spectra " + std::to_string(stride) +
                " doubles apart need " + std::to_string((l - 1) * stride + size));
  }
  forward_digits(poly.data(), gadget, spectra.data(), stride);
}

std::vector<std::uint32_t> root_exponents_of_x(std::span<const double> re,
                                               std::span<const double> im,
                                               std::uint32_t polynomial_size) {
  if (re.size() != im.size()) return {};
  const std::size_t N = polynomial_size;
  std::vector<std::uint32_t> exponents(re.size());
  std::vector<bool> seen(2 * N, false);
  const double step = std::numbers::pi / static_cast<double>(N);
  for (std::size_t j = 0; j < re.size(); ++j) {
    const long t = std::lround(std::atan2(im[j], re[j]) / step);
    const auto e = static_cast<std::uint32_t>((t % static_cast<long>(2 * N) + 2 * N) % (2 * N));
    const double angle = step * e;
    if (e % 2 == 0 || seen[e] || std::abs(re[j] - std::cos(angle)) > 1e-9 ||
        std::abs(im[j] - std::sin(angle)) > 1e-9) {
      return {};
    }
    seen[e] = true;
    exponents[j] = e;
  }
  return exponents;
}

std::vector<double> unit_roots_split(std::uint32_t polynomial_size) {
  const std::size_t N = polynomial_size, quarter = N / 2;
  EXPECTS(N >= 2 && (N & (N - 1)) == 0,
          "unit_roots_split: N=" + std::to_string(N) + " but expected a power of two >= 2");
  std::vector<double> u(4 * N);
  const double step = std::numbers::pi / static_cast<double>(N);
  for (std::size_t x = 0; x < 2 * N; ++x) {
    // zeta^x = i^q zeta^r, x = q N/2 + r: times i is (re, im) -> (-im, re), exactly.
    const std::size_t q = x / quarter, r = x % quarter;
    double re = std::cos(step * static_cast<double>(r));
    double im = std::sin(step * static_cast<double>(r));
    for (std::size_t turn = 0; turn < q; ++turn) {
      const double t = re;
      re = -im;
      im = t;
    }
    u[x] = re;
    u[2 * N + x] = im;
  }
  return u;
}

std::vector<std::uint32_t> spectrum_root_exponents(const NegacyclicFft& fft) {
  EXPECTS(!fft.custom_arithmetic(),
          "spectrum_root_exponents: engine '" + fft.name() +
              "' has custom arithmetic (its spectrum slots are not complex values)");
  const std::size_t N = fft.polynomial_size(), M = N / 2;
  std::vector<std::int32_t> x(N, 0);
  x[1] = 1;
  std::vector<double> spectrum(N);
  fft.forward(x, spectrum);
  const std::span<const double> slots(spectrum);
  auto exponents = root_exponents_of_x(slots.first(M), slots.subspan(M), fft.polynomial_size());
  EXPECTS(!exponents.empty(),
          "spectrum_root_exponents: engine '" + fft.name() +
              "' transforms the polynomial X into slots that are not distinct odd powers of "
              "exp(i*pi/N)");
  return exponents;
}

void NegacyclicFft::inverse(std::span<const double> spectrum, std::span<Torus32> poly) const {
  check_sizes(poly.size(), spectrum.size(), "inverse");
  inverse_to_torus(spectrum.data(), poly.data(), false);
}

void NegacyclicFft::inverse_add(std::span<const double> spectrum, std::span<Torus32> poly) const {
  check_sizes(poly.size(), spectrum.size(), "inverse_add");
  inverse_to_torus(spectrum.data(), poly.data(), true);
}

void NegacyclicFft::multiply_add(std::span<const double> a, std::span<const double> b,
                                 std::span<double> acc) const {
  EXPECTS(a.size() == spectrum_size() && b.size() == spectrum_size() &&
              acc.size() == spectrum_size(),
          "NegacyclicFft::multiply_add: spectra have " + std::to_string(a.size()) + ", " +
              std::to_string(b.size()) + " and " + std::to_string(acc.size()) +
              " slots but expected 2*(N/2)=" + std::to_string(spectrum_size()) + " each");
  multiply_add_spectra(a.data(), b.data(), acc.data());
}

void NegacyclicFft::multiply_add_spectra(const double* a, const double* b, double* acc) const {
  const std::size_t n = spectrum_size();
  fourier_multiply_add(std::span<const double>(a, n), std::span<const double>(b, n),
                       std::span<double>(acc, n));
}

ComplexNegacyclicFft::ComplexNegacyclicFft(std::uint32_t polynomial_size)
    : NegacyclicFft(polynomial_size) {
  const std::size_t N = polynomial_size, M = N / 2;
  twist_re_.resize(M);
  twist_im_.resize(M);
  untwist_re_.resize(M);
  untwist_im_.resize(M);
  for (std::size_t j = 0; j < M; ++j) {
    const double angle = std::numbers::pi * static_cast<double>(j) / static_cast<double>(N);
    twist_re_[j] = std::cos(angle);
    twist_im_[j] = std::sin(angle);
    untwist_re_[j] = std::cos(angle) / static_cast<double>(M);
    untwist_im_[j] = -std::sin(angle) / static_cast<double>(M);
  }
}

template <class T>
void ComplexNegacyclicFft::fold_twist(const T* poly, double* spectrum) const {
  const std::size_t N = polynomial_size(), M = N / 2;
  double* __restrict re = scratch(N);
  double* __restrict im = re + M;
  const double* __restrict tr = twist_re_.data();
  const double* __restrict ti = twist_im_.data();
  for (std::size_t j = 0; j < M; ++j) {
    const double x = static_cast<double>(static_cast<std::int32_t>(poly[j]));
    const double y = static_cast<double>(static_cast<std::int32_t>(poly[j + M]));
    re[j] = x * tr[j] - y * ti[j];
    im[j] = x * ti[j] + y * tr[j];
  }
  transform_forward(re, im, spectrum, spectrum + M);
}

void ComplexNegacyclicFft::forward_integers(const std::int32_t* poly, double* spectrum) const {
  fold_twist(poly, spectrum);
}

void ComplexNegacyclicFft::forward_torus(const Torus32* poly, double* spectrum) const {
  fold_twist(poly, spectrum);
}

void ComplexNegacyclicFft::forward_digits(const Torus32* poly, const GadgetDecomposition& gadget,
                                          double* spectra, std::size_t stride) const {
  const std::size_t N = polynomial_size(), M = N / 2, l = gadget.level_count();
  double* twisted = scratch(l * N);
  const Torus32* __restrict lo = poly;
  const Torus32* __restrict hi = poly + M;
  const double* __restrict tr = twist_re_.data();
  const double* __restrict ti = twist_im_.data();
  for (std::uint32_t p = 1; p <= l; ++p) {
    double* __restrict re = twisted + (p - 1) * N;
    double* __restrict im = re + M;
    for (std::size_t j = 0; j < M; ++j) {
      const double x = gadget.digit_unchecked(lo[j], p);
      const double y = gadget.digit_unchecked(hi[j], p);
      re[j] = x * tr[j] - y * ti[j];
      im[j] = x * ti[j] + y * tr[j];
    }
  }
  for (std::size_t p = 0; p < l; ++p) {
    double* re = twisted + p * N;
    transform_forward(re, re + M, spectra + p * stride, spectra + p * stride + M);
  }
}

template <class T, bool Add>
void ComplexNegacyclicFft::untwist_to(const double* spectrum, T* poly) const {
  const std::size_t N = polynomial_size(), M = N / 2;
  double* re = scratch(N);
  double* im = re + M;
  transform_inverse(spectrum, spectrum + M, re, im);
  const double* __restrict ur = untwist_re_.data();
  const double* __restrict ui = untwist_im_.data();
  T* __restrict lo = poly;
  T* __restrict hi = poly + M;
  for (std::size_t j = 0; j < M; ++j) {
    const double x = re[j] * ur[j] - im[j] * ui[j];
    const double y = re[j] * ui[j] + im[j] * ur[j];
    if constexpr (std::is_same_v<T, double>) {
      lo[j] = x;
      hi[j] = y;
    } else if constexpr (Add) {
      lo[j] += round_to_torus(x);
      hi[j] += round_to_torus(y);
    } else {
      lo[j] = round_to_torus(x);
      hi[j] = round_to_torus(y);
    }
  }
}

void ComplexNegacyclicFft::inverse_to_torus(const double* spectrum, Torus32* poly,
                                            bool add) const {
  if (add) {
    untwist_to<Torus32, true>(spectrum, poly);
  } else {
    untwist_to<Torus32, false>(spectrum, poly);
  }
}

void ComplexNegacyclicFft::inverse_values(std::span<const double> spectrum,
                                          std::span<double> poly) const {
  check_sizes(poly.size(), spectrum.size(), "inverse_values");
  untwist_to<double, false>(spectrum.data(), poly.data());
}

PortableFft::PortableFft(std::uint32_t polynomial_size)
    : ComplexNegacyclicFft(polynomial_size) {
  const std::size_t M = polynomial_size / 2;
  w_re_.resize(M);
  w_im_.resize(M);
  for (std::size_t h = 1; h < M; h *= 2) {
    for (std::size_t j = 0; j < h; ++j) {
      const double angle = -std::numbers::pi * static_cast<double>(j) / static_cast<double>(h);
      w_re_[h - 1 + j] = std::cos(angle);
      w_im_[h - 1 + j] = std::sin(angle);
    }
  }
}

void PortableFft::transform_forward(const double* in_re, const double* in_im, double* re,
                                    double* im) const {
  const std::size_t M = polynomial_size() / 2;
  std::copy(in_re, in_re + M, re);
  std::copy(in_im, in_im + M, im);
  for (std::size_t h = M / 2; h >= 1; h /= 2) {
    const double* __restrict wr = w_re_.data() + h - 1;
    const double* __restrict wi = w_im_.data() + h - 1;
    for (std::size_t s = 0; s < M; s += 2 * h) {
      double* __restrict xr = re + s;
      double* __restrict xi = im + s;
      double* __restrict yr = re + s + h;
      double* __restrict yi = im + s + h;
      for (std::size_t j = 0; j < h; ++j) {
        const double dr = xr[j] - yr[j], di = xi[j] - yi[j];
        xr[j] += yr[j];
        xi[j] += yi[j];
        yr[j] = dr * wr[j] - di * wi[j];
        yi[j] = dr * wi[j] + di * wr[j];
      }
    }
  }
}

void PortableFft::transform_inverse(const double* in_re, const double* in_im, double* re,
                                    double* im) const {
  const std::size_t M = polynomial_size() / 2;
  std::copy(in_re, in_re + M, re);
  std::copy(in_im, in_im + M, im);
  for (std::size_t h = 1; h < M; h *= 2) {
    const double* __restrict wr = w_re_.data() + h - 1;
    const double* __restrict wi = w_im_.data() + h - 1;
    for (std::size_t s = 0; s < M; s += 2 * h) {
      double* __restrict xr = re + s;
      double* __restrict xi = im + s;
      double* __restrict yr = re + s + h;
      double* __restrict yi = im + s + h;
      for (std::size_t j = 0; j < h; ++j) {
        // v = y * conj(w): the inverse twiddle exp(+2 pi i j / (2h))
        const double vr = yr[j] * wr[j] + yi[j] * wi[j];
        const double vi = yi[j] * wr[j] - yr[j] * wi[j];
        yr[j] = xr[j] - vr;
        yi[j] = xi[j] - vi;
        xr[j] += vr;
        xi[j] += vi;
      }
    }
  }
}

}  // namespace torusgate
