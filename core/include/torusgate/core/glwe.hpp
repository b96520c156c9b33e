// Polynomials mod X^N + 1, GLWE samples and keys, signed gadget decomposition, GGSW samples
// and sample extraction (TFHE: Chillotti, Gama, Georgieva, Izabachene, J. Cryptology 2020,
// sections 2-4). A GLWE sample is k mask polynomials then the body, contiguous.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "torusgate/core/decomposition.hpp"
#include "torusgate/core/lwe.hpp"
#include "torusgate/core/params.hpp"
#include "torusgate/core/random.hpp"
#include "torusgate/core/torus.hpp"

namespace torusgate {

// out = a * b mod (X^N + 1), integer polynomial a times torus polynomial b, by schoolbook
// multiplication in exact modular arithmetic: the slow exact reference for FFT engines.
void negacyclic_multiply_exact(std::span<const std::int32_t> a, std::span<const Torus32> b,
                               std::span<Torus32> out);

// out += s * b mod (X^N + 1) for a binary polynomial s (coefficients 0 or 1): exact and fast
// (one shifted add per non-zero coefficient). Used by encryption.
void negacyclic_multiply_add_binary(std::span<const std::int32_t> s, std::span<const Torus32> b,
                                    std::span<Torus32> out);

// out = X^power * in mod (X^N + 1), power in [0, 2N).
void multiply_by_monomial(std::span<const Torus32> in, std::uint32_t power, std::span<Torus32> out);

// Binary GLWE secret key: k polynomials of N coefficients in {0, 1}.
class GlweKey {
 public:
  GlweKey() = default;
  GlweKey(std::uint32_t glwe_dimension, std::uint32_t polynomial_size, Csprng& rng);
  // From coefficients (k*N values, polynomial-major); throws unless each is 0 or 1.
  GlweKey(std::uint32_t glwe_dimension, std::uint32_t polynomial_size,
          std::vector<std::int32_t> coefficients);
  // A moved-from key is empty, as a default-constructed one.
  GlweKey(const GlweKey&) = default;
  GlweKey& operator=(const GlweKey&) = default;
  GlweKey(GlweKey&& other) noexcept { swap(other); }
  GlweKey& operator=(GlweKey&& other) noexcept {
    GlweKey taken(std::move(other));
    swap(taken);
    return *this;
  }

  std::uint32_t glwe_dimension() const { return k_; }     // k
  std::uint32_t polynomial_size() const { return N_; }    // N
  // Polynomial j < k; throws InvalidArgument otherwise.
  std::span<const std::int32_t> polynomial(std::uint32_t j) const;
  std::span<const std::int32_t> coefficients() const { return s_; }
  // The LWE key of dimension k*N under which sample_extract's output decrypts.
  LweKey extracted_lwe_key() const { return LweKey(s_); }

 private:
  void swap(GlweKey& other) noexcept {
    std::swap(k_, other.k_);
    std::swap(N_, other.N_);
    std::swap(s_, other.s_);
  }

  std::uint32_t k_ = 0, N_ = 0;
  std::vector<std::int32_t> s_;
};

// Writes into `out` ((k+1)*N words) a GLWE encryption of the polynomial mu (N words, or
// empty for zero) with Gaussian noise of stddev on every body coefficient.
void encrypt_glwe(std::span<Torus32> out, std::span<const Torus32> mu, const GlweKey& key,
                  double noise_stddev, Csprng& rng);

// Phase b - sum_j a_j s_j of a GLWE sample ((k+1)*N words) into `phase` (N words).
void glwe_phase(std::span<const Torus32> sample, const GlweKey& key, std::span<Torus32> phase);

// LWE sample of dimension k*N (k*N + 1 words) whose phase is coefficient 0 of the GLWE phase.
void sample_extract(std::span<const Torus32> glwe, std::uint32_t glwe_dimension,
                    std::uint32_t polynomial_size, std::span<Torus32> lwe_out);

// GGSW sample: (k+1)*l rows, row (i, p) a GLWE sample ((k+1)*N words) encrypting zero plus
// m * 2^(32 - p*Bgbit) on polynomial i, coefficient 0. Rows are stored i-major: row i*l+(p-1).
void encrypt_ggsw(std::span<Torus32> out, std::int32_t m, const GlweKey& key,
                  const Parameters& params, double noise_stddev, Csprng& rng);

// Words of one GGSW sample: (k+1)*l*(k+1)*N.
inline std::size_t ggsw_size(const Parameters& p) {
  return std::size_t{p.ggsw_row_count()} * (p.glwe_dimension + 1) * p.polynomial_size;
}
// Words of one GLWE sample: (k+1)*N.
inline std::size_t glwe_size(const Parameters& p) {
  return std::size_t{p.glwe_dimension + 1} * p.polynomial_size;
}

// Exact external product out = ggsw [x] glwe with the schoolbook multiplier (test reference).
void external_product_exact(std::span<const Torus32> ggsw, std::span<const Torus32> glwe,
                            const Parameters& params, std::span<Torus32> out);

}  // namespace torusgate
