// LWE samples and binary LWE secret keys. A batch of samples is bit-coalesced: one
// contiguous array [count][n+1] of Torus32, mask a_0..a_{n-1} then body b.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "torusgate/core/random.hpp"
#include "torusgate/core/torus.hpp"

namespace torusgate {

// Binary LWE secret key s in {0,1}^n.
class LweKey {
 public:
  LweKey() = default;
  // Fresh uniform binary key of dimension n.
  LweKey(std::uint32_t lwe_dimension, Csprng& rng);
  // Key from given coefficients; throws InvalidArgument unless every one is 0 or 1.
  explicit LweKey(std::vector<std::int32_t> coefficients);

  std::uint32_t lwe_dimension() const { return static_cast<std::uint32_t>(s_.size()); }  // n
  std::span<const std::int32_t> coefficients() const { return s_; }

 private:
  std::vector<std::int32_t> s_;
};

// Owning, contiguous batch of `count` LWE samples of dimension n.
class LweBatch {
 public:
  LweBatch() = default;
  // Zero-initialised (every sample the trivial encryption of 0).
  LweBatch(std::uint32_t lwe_dimension, std::size_t count);
  // A moved-from batch is empty, as a default-constructed one (never a count without words).
  LweBatch(const LweBatch&) = default;
  LweBatch& operator=(const LweBatch&) = default;
  LweBatch(LweBatch&& other) noexcept { swap(other); }
  LweBatch& operator=(LweBatch&& other) noexcept {
    LweBatch taken(std::move(other));
    swap(taken);
    return *this;
  }

  std::uint32_t lwe_dimension() const { return n_; }      // n
  std::size_t count() const { return count_; }
  std::size_t sample_size() const { return std::size_t{n_} + 1; }  // n + 1 words

  // Sample i (n+1 words), unchecked like std::vector's operator[]: the backends' loops call
  // it for every sample. i < count() is the caller's to ensure; at(i) checks it.
  std::span<Torus32> sample(std::size_t i) {
    return {data_.data() + i * sample_size(), sample_size()};
  }
  std::span<const Torus32> sample(std::size_t i) const {
    return {data_.data() + i * sample_size(), sample_size()};
  }
  // Sample i; throws InvalidArgument naming i and count() unless i < count().
  std::span<Torus32> at(std::size_t i) {
    check_index(i);
    return sample(i);
  }
  std::span<const Torus32> at(std::size_t i) const {
    check_index(i);
    return sample(i);
  }
  std::span<Torus32> data() { return data_; }
  std::span<const Torus32> data() const { return data_; }
  friend bool operator==(const LweBatch&, const LweBatch&) = default;

 private:
  void check_index(std::size_t i) const;
  void swap(LweBatch& other) noexcept {
    std::swap(n_, other.n_);
    std::swap(count_, other.count_);
    std::swap(data_, other.data_);
  }

  std::uint32_t n_ = 0;
  std::size_t count_ = 0;
  std::vector<Torus32> data_;
};

// Writes into `out` (n+1 words) a fresh encryption of message mu with noise stddev.
void encrypt_lwe(std::span<Torus32> out, Torus32 mu, const LweKey& key, double noise_stddev,
                 Csprng& rng);

// Phase b - <a, s> of `sample` (n+1 words).
Torus32 lwe_phase(std::span<const Torus32> sample, const LweKey& key);

// Trivial (noiseless, keyless) encryption of mu: a = 0, b = mu.
void trivial_lwe(std::span<Torus32> out, Torus32 mu);

// Gate-bootstrapping bit encoding: 1 -> +1/8, 0 -> -1/8.
inline Torus32 encode_bit(bool bit) { return bit ? Torus32{1u << 29} : Torus32{0u - (1u << 29)}; }
// Decoding: the sign of the phase (phase in (0, 1/2) -> 1).
inline bool decode_bit(Torus32 phase) { return static_cast<std::int32_t>(phase) > 0; }

}  // namespace torusgate
