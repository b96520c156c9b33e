// Keys: the client's SecretKey (LWE key s, GLWE key S) and the server's CloudKey
// (bootstrapping key + key-switching key). Code that evaluates gates only ever sees a
// CloudKey; the SecretKey stays with the client (encrypt_bits / decrypt_bits).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
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
  // A moved-from key is empty, as a default-constructed one (key id 0, no parameter set).
  SecretKey(const SecretKey&) = default;
  SecretKey& operator=(const SecretKey&) = default;
  SecretKey(SecretKey&& other) noexcept { swap(other); }
  SecretKey& operator=(SecretKey&& other) noexcept {
    SecretKey taken(std::move(other));
    swap(taken);
    return *this;
  }

  const Parameters& parameters() const { return params_; }
  const LweKey& lwe_key() const { return lwe_; }     // s, dimension n
  const GlweKey& glwe_key() const { return glwe_; }  // S, k polynomials of size N
  // The key's name: 64 bits of BLAKE2b over its parameter set's fingerprint and its
  // coefficients, never 0 (0 for a default-constructed key). A cloud key made from this key
  // and the ciphertext files written with it carry the same id, so that a secret key is told
  // apart from another one of the same parameter set. It reveals nothing a cloud key does not:
  // a cloud key already lets anyone test a guessed secret key.
  std::uint64_t key_id() const { return id_; }

 private:
  void swap(SecretKey& other) noexcept {
    std::swap(params_, other.params_);
    std::swap(lwe_, other.lwe_);
    std::swap(glwe_, other.glwe_);
    std::swap(id_, other.id_);
  }

  Parameters params_;
  LweKey lwe_;
  GlweKey glwe_;
  std::uint64_t id_ = 0;
};


// Bootstrapping key in coefficient form, in one of three forms (`unroll`):
// - 1, the standard key: n GGSW encryptions of the LWE key bits under the GLWE key (TFHE,
//   J. Cryptology 2020, algorithm 3), one CMUX per key bit;
// - 2, 3 or 4, an unrolled key (bootstrapping key unrolling, Zhou et al., IEEE Access 2018): the
//   key bits in groups of u = unroll, and for each group 2^u - 1 GGSW encryptions, one per
//   non-zero pattern v of the group's bits: the product over the group's bits m of s_m where
//   v has m's bit (bit u-1-m) set and 1 - s_m where not, patterns in decreasing order. For
//   u = 2 and bits (s, t): s*t, s*(1-t), (1-s)*t. One step then multiplies the accumulator by
//   X^(sum_m a_m s_m) with one decomposition, so 1/u of the transforms per key bit; the last
//   n % u bits keep one standard GGSW each. ggsw_count() samples in all.
// Sample i at words [i*G, (i+1)*G), G = ggsw_size(params).
class BootstrappingKey {
 public:
  BootstrappingKey() = default;
  // Validated sizes and unroll (1 to 4).
  BootstrappingKey(const Parameters& params, std::vector<Torus32> data, std::uint32_t unroll = 1);
  static BootstrappingKey generate(const SecretKey& key, Csprng& rng, std::uint32_t unroll = 1);
  // A moved-from key is empty, as a default-constructed one (no GGSW samples).
  BootstrappingKey(const BootstrappingKey&) = default;
  BootstrappingKey& operator=(const BootstrappingKey&) = default;
  BootstrappingKey(BootstrappingKey&& other) noexcept { swap(other); }
  BootstrappingKey& operator=(BootstrappingKey&& other) noexcept {
    BootstrappingKey taken(std::move(other));
    swap(taken);
    return *this;
  }
  // GGSW samples of a key of this form: n (unroll 1), (2^u - 1) floor(n/u) + n%u (unroll u).
  static std::size_t ggsw_count(const Parameters& params, std::uint32_t unroll);
  // What each GGSW sample of a key of this form encrypts (0 or 1), for the LWE key s:
  // s_i (unroll 1); each group's pattern products, then the last n % u bits (unroll u > 1).
  static std::vector<std::int32_t> messages(std::span<const std::int32_t> s, std::uint32_t unroll);

  const Parameters& parameters() const { return params_; }
  std::uint32_t unroll() const { return unroll_; }
  std::size_t ggsw_count() const { return ggsw_count(params_, unroll_); }
  std::span<const Torus32> ggsw(std::size_t i) const;
  std::span<const Torus32> data() const { return data_; }

 private:
  void swap(BootstrappingKey& other) noexcept {
    std::swap(params_, other.params_);
    std::swap(data_, other.data_);
    std::swap(unroll_, other.unroll_);
  }

  Parameters params_;
  std::vector<Torus32> data_;
  std::uint32_t unroll_ = 1;
};

// The largest bootstrapping key form (`unroll`) this library makes and reads.
inline constexpr std::uint32_t max_unroll = 4;

// Throws InvalidArgument ("<context>: unroll=U but expected 1 ... 2, 3 or 4 ...") unless
// `unroll` is a bootstrapping key form: 1 standard, 2, 3 or 4 unrolled.
void check_unroll(std::uint32_t unroll, const std::string& context);

// GGSW samples of one group of an unrolled key's bits: 2^unroll - 1 (1 for the standard key).
constexpr std::uint32_t unroll_group_ggsws(std::uint32_t unroll) { return (1u << unroll) - 1; }

// Key bits that an unrolled key takes in groups: n rounded down to a multiple of unroll (0 for
// the standard key, whose steps are all CMUX steps).
constexpr std::size_t unrolled_bits(std::size_t n, std::uint32_t unroll) {
  return unroll > 1 ? n / unroll * unroll : 0;
}

// The first GGSW of the step that starts at key bit i of an n-bit key of form `unroll`: G
// (i / unroll) for a group step (i < unrolled_bits), G = unroll_group_ggsws(unroll), and one
// GGSW per key bit after the groups'; i = n gives the key's GGSW count.
constexpr std::size_t unrolled_step_ggsw(std::size_t n, std::uint32_t unroll, std::size_t i) {
  const std::size_t grouped = unrolled_bits(n, unroll), G = unroll_group_ggsws(unroll);
  return i < grouped ? i / unroll * G : grouped / unroll * G + (i - grouped);
}

// The rotation exponent of GGSW g of a group (0 <= g < unroll_group_ggsws(unroll)) whose key
// bits' switched masks are masks[0..unroll): the sum of masks[m] over the bits m of its pattern
// v = 2^unroll - 1 - g (bit unroll-1-m for bit m), reduced by `mask` (2N - 1). For unroll 2:
// a+b, a, b.
constexpr std::uint32_t unrolled_exponent(const std::uint32_t* masks, std::uint32_t unroll,
                                          std::uint32_t g, std::uint32_t mask) {
  const std::uint32_t v = unroll_group_ggsws(unroll) - g;
  std::uint32_t e = 0;
  for (std::uint32_t m = 0; m < unroll; ++m) {
    if ((v >> (unroll - 1 - m)) & 1u) e += masks[m];
  }
  return e & mask;
}

// Key-switching key from the extracted key (dimension k*N) to the LWE key (dimension n),
// base 2^ks_base_log, t = ks_level_count levels. Entry (i, j, v), v = 1..base-1, is an LWE
// encryption of v * s'_i / base^(j+1); v = 0 is not stored.
class KeySwitchingKey {
 public:
  KeySwitchingKey() = default;
  KeySwitchingKey(const Parameters& params, std::vector<Torus32> data);  // validated sizes
  static KeySwitchingKey generate(const SecretKey& key, Csprng& rng);
  // A moved-from key is empty, as a default-constructed one.
  KeySwitchingKey(const KeySwitchingKey&) = default;
  KeySwitchingKey& operator=(const KeySwitchingKey&) = default;
  KeySwitchingKey(KeySwitchingKey&& other) noexcept { swap(other); }
  KeySwitchingKey& operator=(KeySwitchingKey&& other) noexcept {
    KeySwitchingKey taken(std::move(other));
    swap(taken);
    return *this;
  }

  const Parameters& parameters() const { return params_; }
  // Words of the whole key: k*N * t * (base-1) * (n+1).
  static std::size_t size(const Parameters& params);
  // The (base-1) samples of input coefficient i, level j, contiguous: sample v-1 at (v-1)*(n+1).
  const Torus32* level(std::size_t i, std::size_t j) const {
    return data_.data() + (i * params_.ks_level_count + j) * level_words_;
  }
  std::span<const Torus32> data() const { return data_; }

 private:
  void swap(KeySwitchingKey& other) noexcept {
    std::swap(params_, other.params_);
    std::swap(data_, other.data_);
    std::swap(level_words_, other.level_words_);
  }

  Parameters params_;
  std::vector<Torus32> data_;
  std::size_t level_words_ = 0;
};

// What the server holds: everything needed to evaluate gates, nothing that decrypts.
class CloudKey {
 public:
  CloudKey() = default;
  // Throws if their parameters differ. key_id: the id of the secret key both were made from
  // (SecretKey::key_id), 0 when not known (a cloud key read from the TFHE library's files).
  CloudKey(BootstrappingKey bk, KeySwitchingKey ksk, std::uint64_t key_id = 0);
  // unroll: the bootstrapping key's form (1 standard, 2 to 4 unrolled; see BootstrappingKey).
  // The cloud key carries key.key_id().
  static CloudKey generate(const SecretKey& key, Csprng& rng, std::uint32_t unroll = 1);
  // A moved-from key is empty, as a default-constructed one (key id 0).
  CloudKey(const CloudKey&) = default;
  CloudKey& operator=(const CloudKey&) = default;
  CloudKey(CloudKey&& other) noexcept { swap(other); }
  CloudKey& operator=(CloudKey&& other) noexcept {
    CloudKey taken(std::move(other));
    swap(taken);
    return *this;
  }

  const Parameters& parameters() const { return bk_.parameters(); }
  // The id of the secret key this cloud key was made from; 0 when not known.
  std::uint64_t key_id() const { return key_id_; }
  // This key, named as made from the secret key of id `key_id` (for a reader that has checked
  // that it was, such as the TFHE library's secret keyset, which holds both).
  CloudKey named(std::uint64_t key_id) && {
    key_id_ = key_id;
    return std::move(*this);
  }
  const BootstrappingKey& bootstrapping_key() const { return bk_; }
  const KeySwitchingKey& key_switching_key() const { return ksk_; }
  std::size_t memory_bytes() const;

 private:
  void swap(CloudKey& other) noexcept {
    std::swap(bk_, other.bk_);
    std::swap(ksk_, other.ksk_);
    std::swap(key_id_, other.key_id_);
  }

  BootstrappingKey bk_;
  KeySwitchingKey ksk_;
  std::uint64_t key_id_ = 0;
};

// Client side: fresh gate-bootstrapping encryptions of bits (0/1, anything else throws) and
// their decryption. decrypt_bits and batch_phases check the batch's dimension only: a batch
// encrypted under another key of that dimension (another key of the same parameter set, or of
// a set with the same n) decrypts to random bits without an error, since an LweBatch carries no
// key id; the native files do (load_ciphertexts_for refuses another key's file).
LweBatch encrypt_bits(const SecretKey& key, std::span<const std::uint8_t> bits, Csprng& rng);
std::vector<std::uint8_t> decrypt_bits(const SecretKey& key, const LweBatch& batch);
// Phases of every sample of the batch (for noise measurements).
std::vector<Torus32> batch_phases(const SecretKey& key, const LweBatch& batch);

}  // namespace torusgate
