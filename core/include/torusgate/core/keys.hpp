// Keys: the client's SecretKey (LWE key s, GLWE key S) and the server's CloudKey
// (bootstrapping key + key-switching key). Code that evaluates gates only ever sees a
// CloudKey; the SecretKey stays with the client (encrypt_bits / decrypt_bits).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "torusgate/core/glwe.hpp"
#include "torusgate/core/lwe.hpp"
#include "torusgate/core/params.hpp"
#include "torusgate/core/random.hpp"

namespace torusgate {

class SecretKey {
 public:
  SecretKey() = default;
  // Fresh keys for `params` (validated).
  SecretKey(const Parameters& params, Csprng& rng);
  // From existing keys; throws InvalidArgument if their sizes do not match the parameters.
  SecretKey(const Parameters& params, LweKey lwe_key, GlweKey glwe_key);

  const Parameters& parameters() const { return params_; }
  const LweKey& lwe_key() const { return lwe_; }     // s, dimension n
  const GlweKey& glwe_key() const { return glwe_; }  // S, k polynomials of size N

 private:
  Parameters params_;
  LweKey lwe_;
  GlweKey glwe_;
};

// Bootstrapping key in coefficient form, in one of two forms (`unroll`):
// - 1, the standard key: n GGSW encryptions of the LWE key bits under the GLWE key (TFHE,
//   J. Cryptology 2020, algorithm 3), one CMUX per key bit;
// - 2, the unrolled key (bootstrapping key unrolling, Zhou et al., IEEE Access 2018): for each
//   pair of key bits (s, t) = (s_2p, s_2p+1), three GGSW encryptions of s*t, s*(1-t) and
//   (1-s)*t, so that one step multiplies the accumulator by X^(a s + b t) with one
//   decomposition and half as many transforms per key bit; for odd n the last bit keeps one
//   standard GGSW. ggsw_count() samples in all.
// Sample i at words [i*G, (i+1)*G), G = ggsw_size(params).
class BootstrappingKey {
 public:
  BootstrappingKey() = default;
  // Validated sizes and unroll (1 or 2).
  BootstrappingKey(const Parameters& params, std::vector<Torus32> data, std::uint32_t unroll = 1);
  static BootstrappingKey generate(const SecretKey& key, Csprng& rng, std::uint32_t unroll = 1);
  // GGSW samples of a key of this form: n (unroll 1), 3*floor(n/2) + n%2 (unroll 2).
  static std::size_t ggsw_count(const Parameters& params, std::uint32_t unroll);
  // What each GGSW sample of a key of this form encrypts (0 or 1), for the LWE key s:
  // s_i (unroll 1); s*t, s*(1-t), (1-s)*t for each pair, then s_(n-1) for odd n (unroll 2).
  static std::vector<std::int32_t> messages(std::span<const std::int32_t> s, std::uint32_t unroll);

  const Parameters& parameters() const { return params_; }
  std::uint32_t unroll() const { return unroll_; }
  std::size_t ggsw_count() const { return ggsw_count(params_, unroll_); }
  std::span<const Torus32> ggsw(std::size_t i) const;
  std::span<const Torus32> data() const { return data_; }

 private:
  Parameters params_;
  std::vector<Torus32> data_;
  std::uint32_t unroll_ = 1;
};

// Throws InvalidArgument ("<context>: unroll=U but expected 1 ... or 2 ...") unless `unroll` is
// a bootstrapping key form: 1 standard, 2 unrolled.
void check_unroll(std::uint32_t unroll, const std::string& context);

// Key-switching key from the extracted key (dimension k*N) to the LWE key (dimension n),
// base 2^ks_base_log, t = ks_level_count levels. Entry (i, j, v), v = 1..base-1, is an LWE
// encryption of v * s'_i / base^(j+1); v = 0 is not stored.
class KeySwitchingKey {
 public:
  KeySwitchingKey() = default;
  KeySwitchingKey(const Parameters& params, std::vector<Torus32> data);  // validated sizes
  static KeySwitchingKey generate(const SecretKey& key, Csprng& rng);

  const Parameters& parameters() const { return params_; }
  // Words of the whole key: k*N * t * (base-1) * (n+1).
  static std::size_t size(const Parameters& params);
  // The (base-1) samples of input coefficient i, level j, contiguous: sample v-1 at (v-1)*(n+1).
  const Torus32* level(std::size_t i, std::size_t j) const {
    return data_.data() + (i * params_.ks_level_count + j) * level_words_;
  }
  std::span<const Torus32> data() const { return data_; }

 private:
  Parameters params_;
  std::vector<Torus32> data_;
  std::size_t level_words_ = 0;
};

// What the server holds: everything needed to evaluate gates, nothing that decrypts.
class CloudKey {
 public:
  CloudKey() = default;
  CloudKey(BootstrappingKey bk, KeySwitchingKey ksk);  // throws if their parameters differ
  // unroll: the bootstrapping key's form (1 standard, 2 unrolled; see BootstrappingKey).
  static CloudKey generate(const SecretKey& key, Csprng& rng, std::uint32_t unroll = 1);

  const Parameters& parameters() const { return bk_.parameters(); }
  const BootstrappingKey& bootstrapping_key() const { return bk_; }
  const KeySwitchingKey& key_switching_key() const { return ksk_; }
  std::size_t memory_bytes() const;

 private:
  BootstrappingKey bk_;
  KeySwitchingKey ksk_;
};

// Client side: fresh gate-bootstrapping encryptions of bits (0/1, anything else throws) and
// their decryption.
LweBatch encrypt_bits(const SecretKey& key, std::span<const std::uint8_t> bits, Csprng& rng);
std::vector<std::uint8_t> decrypt_bits(const SecretKey& key, const LweBatch& batch);
// Phases of every sample of the batch (for noise measurements).
std::vector<Torus32> batch_phases(const SecretKey& key, const LweBatch& batch);

}  // namespace torusgate
