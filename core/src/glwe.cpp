// Polynomial arithmetic mod X^N + 1, GLWE/GGSW encryption, gadget decomposition and sample
// extraction (TFHE, J. Cryptology 2020: GLWE def. 2.3, gadget decomposition lemma 3.3,
// GGSW def. 3.4, sample extraction section 4.2).
#include "torusgate/core/glwe.hpp"

#include <algorithm>

#include "torusgate/core/error.hpp"

namespace torusgate {
namespace {

void check_size(std::size_t got, std::size_t want, const char* fn, const char* what) {
  EXPECTS(got == want, std::string(fn) + ": " + what + " has " + std::to_string(got) +
                           " words but expected " + std::to_string(want));
}

}  // namespace

void negacyclic_multiply_exact(std::span<const std::int32_t> a, std::span<const Torus32> b,
                               std::span<Torus32> out) {
  const std::size_t N = a.size();
  check_size(b.size(), N, "negacyclic_multiply_exact", "b");
  check_size(out.size(), N, "negacyclic_multiply_exact", "out");
  std::vector<Torus32> r(N, 0);
  for (std::size_t i = 0; i < N; ++i) {
    const Torus32 ai = static_cast<Torus32>(a[i]);
    for (std::size_t j = 0; j < N - i; ++j) r[i + j] += ai * b[j];
    for (std::size_t j = N - i; j < N; ++j) r[i + j - N] -= ai * b[j];
  }
  std::copy(r.begin(), r.end(), out.begin());
}

void negacyclic_multiply_add_binary(std::span<const std::int32_t> s, std::span<const Torus32> b,
                                    std::span<Torus32> out) {
  const std::size_t N = s.size();
  check_size(b.size(), N, "negacyclic_multiply_add_binary", "b");
  check_size(out.size(), N, "negacyclic_multiply_add_binary", "out");
  for (std::size_t i = 0; i < N; ++i) {
    EXPECTS(s[i] == 0 || s[i] == 1, "negacyclic_multiply_add_binary: coefficient " +
                                        std::to_string(i) + " of s is " + std::to_string(s[i]) +
                                        " but expected 0 or 1");
  }
  Torus32* o = out.data();
  const Torus32* bb = b.data();
  for (std::size_t i = 0; i < N; ++i) {
    if (s[i] == 0) continue;
    // X^i * b: coefficients j < N - i move up by i; the rest wrap with a sign change.
    for (std::size_t j = 0; j < N - i; ++j) o[i + j] += bb[j];
    for (std::size_t j = N - i; j < N; ++j) o[i + j - N] -= bb[j];
  }
}

void multiply_by_monomial(std::span<const Torus32> in, std::uint32_t power,
                          std::span<Torus32> out) {
  const std::size_t N = in.size();
  check_size(out.size(), N, "multiply_by_monomial", "out");
  EXPECTS(power < 2 * N, "multiply_by_monomial: power=" + std::to_string(power) +
                             " but expected less than 2N=" + std::to_string(2 * N));
  const bool negate = power >= N;
  const std::size_t shift = negate ? power - N : power;
  for (std::size_t j = 0; j < N; ++j) {
    const std::size_t dst = j + shift;
    Torus32 v = in[j];
    if (negate) v = Torus32{0} - v;
    if (dst < N) out[dst] = v;
    else out[dst - N] = Torus32{0} - v;
  }
}

std::span<const std::int32_t> GlweKey::polynomial(std::uint32_t j) const {
  EXPECTS(j < k_, "GlweKey::polynomial: index " + std::to_string(j) + " but the key has k=" +
                      std::to_string(k_) + " polynomials");
  return std::span<const std::int32_t>(s_).subspan(std::size_t{j} * N_, N_);
}

GlweKey::GlweKey(std::uint32_t glwe_dimension, std::uint32_t polynomial_size, Csprng& rng)
    : k_(glwe_dimension), N_(polynomial_size),
      s_(std::size_t{glwe_dimension} * polynomial_size) {
  EXPECTS(k_ >= 1 && N_ >= 1, "GlweKey: glwe_dimension=" + std::to_string(k_) +
                                  ", polynomial_size=" + std::to_string(N_) +
                                  " but expected both at least 1");
  for (auto& c : s_) c = rng.uniform_bit();
}

GlweKey::GlweKey(std::uint32_t glwe_dimension, std::uint32_t polynomial_size,
                 std::vector<std::int32_t> coefficients)
    : k_(glwe_dimension), N_(polynomial_size), s_(std::move(coefficients)) {
  EXPECTS(k_ >= 1 && N_ >= 1, "GlweKey: glwe_dimension=" + std::to_string(k_) +
                                  ", polynomial_size=" + std::to_string(N_) +
                                  " but expected both at least 1");
  check_size(s_.size(), std::size_t{k_} * N_, "GlweKey", "coefficients");
  for (std::size_t i = 0; i < s_.size(); ++i) {
    EXPECTS(s_[i] == 0 || s_[i] == 1, "GlweKey: coefficient " + std::to_string(i) + " is " +
                                          std::to_string(s_[i]) + " but expected 0 or 1");
  }
}

void encrypt_glwe(std::span<Torus32> out, std::span<const Torus32> mu, const GlweKey& key,
                  double noise_stddev, Csprng& rng) {
  const std::size_t N = key.polynomial_size(), k = key.glwe_dimension();
  check_size(out.size(), (k + 1) * N, "encrypt_glwe", "output");
  EXPECTS(mu.empty() || mu.size() == N, "encrypt_glwe: message has " + std::to_string(mu.size()) +
                                            " coefficients but expected 0 or N=" +
                                            std::to_string(N));
  auto body = out.subspan(k * N, N);
  for (std::size_t j = 0; j < N; ++j) {
    body[j] = rng.gaussian_torus(noise_stddev) + (mu.empty() ? Torus32{0} : mu[j]);
  }
  for (std::size_t i = 0; i < k; ++i) {
    auto mask = out.subspan(i * N, N);
    for (auto& c : mask) c = rng.uniform_torus();
    negacyclic_multiply_add_binary(key.polynomial(static_cast<std::uint32_t>(i)), mask, body);
  }
}

void glwe_phase(std::span<const Torus32> sample, const GlweKey& key, std::span<Torus32> phase) {
  const std::size_t N = key.polynomial_size(), k = key.glwe_dimension();
  check_size(sample.size(), (k + 1) * N, "glwe_phase", "sample");
  check_size(phase.size(), N, "glwe_phase", "phase");
  std::vector<Torus32> sum(N, 0);
  for (std::size_t i = 0; i < k; ++i) {
    negacyclic_multiply_add_binary(key.polynomial(static_cast<std::uint32_t>(i)),
                                   sample.subspan(i * N, N), sum);
  }
  for (std::size_t j = 0; j < N; ++j) phase[j] = sample[k * N + j] - sum[j];
}

void sample_extract(std::span<const Torus32> glwe, std::uint32_t glwe_dimension,
                    std::uint32_t polynomial_size, std::span<Torus32> lwe_out) {
  const std::size_t N = polynomial_size, k = glwe_dimension;
  EXPECTS(N >= 1 && k >= 1, "sample_extract: k=" + std::to_string(k) + " and N=" +
                                std::to_string(N) + "; both must be at least 1");
  check_size(glwe.size(), (k + 1) * N, "sample_extract", "GLWE sample");
  check_size(lwe_out.size(), k * N + 1, "sample_extract", "LWE output");
  // Coefficient 0 of a_i(X) s_i(X) is a_i[0] s_i[0] - sum_{j>0} a_i[N-j] s_i[j].
  for (std::size_t i = 0; i < k; ++i) {
    const Torus32* a = glwe.data() + i * N;
    Torus32* o = lwe_out.data() + i * N;
    o[0] = a[0];
    for (std::size_t j = 1; j < N; ++j) o[j] = Torus32{0} - a[N - j];
  }
  lwe_out[k * N] = glwe[k * N];
}

GadgetDecomposition::GadgetDecomposition(std::uint32_t base_log, std::uint32_t level_count)
    : base_log_(base_log), level_count_(level_count) {
  EXPECTS(base_log >= 1 && base_log <= 31 && level_count >= 1 &&
              std::uint64_t{base_log} * level_count <= 32,
          "GadgetDecomposition: base_log=" + std::to_string(base_log) + ", level_count=" +
              std::to_string(level_count) +
              " but expected base_log in 1..31, level_count >= 1 and product <= 32");
  const std::uint32_t base = 1u << base_log;
  half_ = static_cast<std::int32_t>(base / 2);
  mask_ = base - 1;
  // Adding Bg/2 at every level turns the unsigned digits into [-Bg/2, Bg/2) after
  // subtracting Bg/2; half of the last level's unit rounds to nearest.
  for (std::uint32_t p = 1; p <= level_count; ++p) {
    offset_ += Torus32(base / 2) << (32 - p * base_log);
  }
  const std::uint32_t precision = base_log * level_count;
  if (precision < 32) offset_ += Torus32{1} << (32 - precision - 1);
}

void GadgetDecomposition::decompose(std::span<const Torus32> poly,
                                    std::span<std::int32_t> digits) const {
  const std::size_t N = poly.size();
  check_size(digits.size(), N * level_count_, "GadgetDecomposition::decompose", "digits");
  for (std::uint32_t p = 1; p <= level_count_; ++p) {
    std::int32_t* d = digits.data() + (p - 1) * N;
    const unsigned shift = 32 - p * base_log_;
    for (std::size_t j = 0; j < N; ++j) {
      d[j] = static_cast<std::int32_t>(((poly[j] + offset_) >> shift) & mask_) - half_;
    }
  }
}

void encrypt_ggsw(std::span<Torus32> out, std::int32_t m, const GlweKey& key,
                  const Parameters& params, double noise_stddev, Csprng& rng) {
  const std::size_t N = params.polynomial_size, k = params.glwe_dimension;
  const std::size_t l = params.bk_level_count;
  EXPECTS(key.polynomial_size() == N && key.glwe_dimension() == k,
          "encrypt_ggsw: key has k=" + std::to_string(key.glwe_dimension()) + ", N=" +
              std::to_string(key.polynomial_size()) + " but the parameters have k=" +
              std::to_string(k) + ", N=" + std::to_string(N));
  check_size(out.size(), ggsw_size(params), "encrypt_ggsw", "output");
  const GadgetDecomposition gadget(params.bk_base_log, params.bk_level_count);
  const std::size_t row = glwe_size(params);
  for (std::size_t i = 0; i <= k; ++i) {
    for (std::size_t p = 1; p <= l; ++p) {
      auto r = out.subspan((i * l + p - 1) * row, row);
      encrypt_glwe(r, {}, key, noise_stddev, rng);
      r[i * N] += static_cast<Torus32>(m) * gadget.gadget_value(static_cast<std::uint32_t>(p));
    }
  }
}

void external_product_exact(std::span<const Torus32> ggsw, std::span<const Torus32> glwe,
                            const Parameters& params, std::span<Torus32> out) {
  const std::size_t N = params.polynomial_size, k = params.glwe_dimension;
  const std::size_t l = params.bk_level_count, row = glwe_size(params);
  check_size(ggsw.size(), ggsw_size(params), "external_product_exact", "GGSW sample");
  check_size(glwe.size(), row, "external_product_exact", "GLWE sample");
  check_size(out.size(), row, "external_product_exact", "output");
  const GadgetDecomposition gadget(params.bk_base_log, params.bk_level_count);
  std::vector<std::int32_t> digits(l * N);
  std::vector<Torus32> result(row, 0), product(N);
  for (std::size_t i = 0; i <= k; ++i) {
    gadget.decompose(glwe.subspan(i * N, N), digits);
    for (std::size_t p = 0; p < l; ++p) {
      const auto r = ggsw.subspan((i * l + p) * row, row);
      for (std::size_t c = 0; c <= k; ++c) {
        negacyclic_multiply_exact(std::span<const std::int32_t>(digits).subspan(p * N, N),
                                  r.subspan(c * N, N), product);
        for (std::size_t j = 0; j < N; ++j) result[c * N + j] += product[j];
      }
    }
  }
  std::copy(result.begin(), result.end(), out.begin());
}

}  // namespace torusgate
