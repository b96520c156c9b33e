// LWE key generation, encryption and phase.
#include "torusgate/core/lwe.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include "torusgate/core/error.hpp"

namespace torusgate {

LweKey::LweKey(std::uint32_t lwe_dimension, Csprng& rng) : s_(lwe_dimension) {
  EXPECTS(lwe_dimension >= 1, "LweKey: lwe_dimension=0 but expected at least 1");
  for (auto& c : s_) c = rng.uniform_bit();
}

LweKey::LweKey(std::vector<std::int32_t> coefficients) : s_(std::move(coefficients)) {
  EXPECTS(!s_.empty(), "LweKey: 0 coefficients given but expected at least 1");
  for (std::size_t i = 0; i < s_.size(); ++i) {
    EXPECTS(s_[i] == 0 || s_[i] == 1, "LweKey: coefficient " + std::to_string(i) + " is " +
                                          std::to_string(s_[i]) + " but expected 0 or 1");
  }
}

namespace {

// count * (n+1) words, checked: a product that wraps would leave a batch smaller than its count.
std::size_t batch_words(std::uint32_t lwe_dimension, std::size_t count) {
  const std::size_t per_sample = std::size_t{lwe_dimension} + 1;
  EXPECTS(count <= std::numeric_limits<std::size_t>::max() / sizeof(Torus32) / per_sample,
          "LweBatch: " + std::to_string(count) + " samples of n+1=" + std::to_string(per_sample) +
              " words do not fit in memory (the byte count exceeds 2^64)");
  return count * per_sample;
}

}  // namespace

LweBatch::LweBatch(std::uint32_t lwe_dimension, std::size_t count)
    : n_(lwe_dimension), count_(count), data_(allocating("LweBatch: " + std::to_string(count) +
                                                            " samples of n=" +
                                                            std::to_string(lwe_dimension),
                                                        batch_words(lwe_dimension, count) * 4, [&] {
        return std::vector<Torus32>(batch_words(lwe_dimension, count), 0);
      })) {}

void LweBatch::check_index(std::size_t i) const {
  EXPECTS(i < count_, "LweBatch::at: sample " + std::to_string(i) + " of a batch of " +
                          std::to_string(count_) + " samples");
}

void encrypt_lwe(std::span<Torus32> out, Torus32 mu, const LweKey& key, double noise_stddev,
                 Csprng& rng) {
  const std::size_t n = key.lwe_dimension();
  EXPECTS(out.size() == n + 1, "encrypt_lwe: output has " + std::to_string(out.size()) +
                                   " words but the key needs n+1=" + std::to_string(n + 1));
  const auto s = key.coefficients();
  Torus32 b = rng.gaussian_torus(mu, noise_stddev);
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = rng.uniform_torus();
    b += out[i] * static_cast<Torus32>(s[i]);
  }
  out[n] = b;
}

Torus32 lwe_phase(std::span<const Torus32> sample, const LweKey& key) {
  const std::size_t n = key.lwe_dimension();
  EXPECTS(sample.size() == n + 1, "lwe_phase: sample has " + std::to_string(sample.size()) +
                                      " words but the key needs n+1=" + std::to_string(n + 1));
  const auto s = key.coefficients();
  Torus32 phase = sample[n];
  for (std::size_t i = 0; i < n; ++i) phase -= sample[i] * static_cast<Torus32>(s[i]);
  return phase;
}

void trivial_lwe(std::span<Torus32> out, Torus32 mu) {
  EXPECTS(!out.empty(), "trivial_lwe: empty output sample");
  std::fill(out.begin(), out.end() - 1, Torus32{0});
  out.back() = mu;
}

}  // namespace torusgate
