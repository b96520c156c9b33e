// Key generation: secret keys, bootstrapping key (GGSW of the LWE key bits) and
// key-switching key (TFHE, J. Cryptology 2020, algorithms 1-3).
#include "torusgate/core/keys.hpp"

#include <array>

#include "sodium_init.hpp"
#include "torusgate/core/error.hpp"

namespace torusgate {
namespace {

// SecretKey::key_id: BLAKE2b (libsodium's generichash, 16-byte digest) of a domain string, the
// parameter fingerprint (8 bytes little-endian) and every coefficient as one byte (0 or 1:
// LweKey and GlweKey hold binary keys), the LWE key's then the GLWE key's; the digest's first
// 8 bytes, little-endian, with 0 taken to 1 (0 means "no key").
std::uint64_t compute_key_id(const SecretKey& key) {
  detail::ensure_sodium("SecretKey");
  crypto_generichash_state state;
  crypto_generichash_init(&state, nullptr, 0, 16);
  static constexpr char domain[] = "torusgate secret key id v1";
  crypto_generichash_update(&state, reinterpret_cast<const unsigned char*>(domain), sizeof domain - 1);
  std::array<unsigned char, 8> fingerprint{};
  const std::uint64_t f = key.parameters().fingerprint();
  for (int i = 0; i < 8; ++i) fingerprint[i] = static_cast<unsigned char>(f >> (8 * i));
  crypto_generichash_update(&state, fingerprint.data(), fingerprint.size());
  for (const auto coefficients : {key.lwe_key().coefficients(), key.glwe_key().coefficients()}) {
    std::vector<unsigned char> bytes(coefficients.size());
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      bytes[i] = static_cast<unsigned char>(coefficients[i]);
    }
    crypto_generichash_update(&state, bytes.data(), bytes.size());
  }
  std::array<unsigned char, 16> digest{};
  crypto_generichash_final(&state, digest.data(), digest.size());
  std::uint64_t id = 0;
  for (int i = 7; i >= 0; --i) id = id << 8 | digest[i];
  return id == 0 ? 1 : id;
}

std::string size_error(const char* fn, std::size_t got, std::size_t want, const Parameters& p) {
  return std::string(fn) + ": " + std::to_string(got) + " words given but parameter set '" +
         p.name + "' needs " + std::to_string(want);
}

// A default-constructed SecretKey holds no key: encrypting or decrypting with it would
// silently produce samples of dimension 0.
void check_key_made(const SecretKey& key, const char* fn) {
  EXPECTS(key.lwe_key().lwe_dimension() >= 1,
          std::string(fn) + ": the secret key is empty (default-constructed or moved from); "
                            "make one with SecretKey(params, rng) or load one");
}

}  // namespace

SecretKey::SecretKey(const Parameters& params, Csprng& rng)
    : params_(params),
      lwe_((params.validate(), params.lwe_dimension), rng),
      glwe_(params.glwe_dimension, params.polynomial_size, rng),
      id_(compute_key_id(*this)) {}

SecretKey::SecretKey(const Parameters& params, LweKey lwe_key, GlweKey glwe_key)
    : params_(params), lwe_(std::move(lwe_key)), glwe_(std::move(glwe_key)) {
  params_.validate();
  EXPECTS(lwe_.lwe_dimension() == params_.lwe_dimension,
          "SecretKey: LWE key has n=" + std::to_string(lwe_.lwe_dimension()) +
              " but parameter set '" + params_.name + "' has n=" +
              std::to_string(params_.lwe_dimension));
  EXPECTS(glwe_.glwe_dimension() == params_.glwe_dimension &&
              glwe_.polynomial_size() == params_.polynomial_size,
          "SecretKey: GLWE key has k=" + std::to_string(glwe_.glwe_dimension()) + ", N=" +
              std::to_string(glwe_.polynomial_size()) + " but parameter set '" + params_.name +
              "' has k=" + std::to_string(params_.glwe_dimension) + ", N=" +
              std::to_string(params_.polynomial_size));
  id_ = compute_key_id(*this);
}

void check_unroll(std::uint32_t unroll, const std::string& context) {
  EXPECTS(unroll >= 1 && unroll <= max_unroll,
          context + ": unroll=" + std::to_string(unroll) +
              " but expected 1 (the standard key), 2, 3 or 4 (key bits in pairs, threes or "
              "fours)");
}

std::size_t BootstrappingKey::ggsw_count(const Parameters& params, std::uint32_t unroll) {
  check_unroll(unroll, "BootstrappingKey::ggsw_count");
  return unrolled_step_ggsw(params.lwe_dimension, unroll, params.lwe_dimension);
}

std::vector<std::int32_t> BootstrappingKey::messages(std::span<const std::int32_t> s,
                                                     std::uint32_t unroll) {
  check_unroll(unroll, "BootstrappingKey::messages");
  std::vector<std::int32_t> out;
  const std::size_t n = s.size(), grouped = unrolled_bits(n, unroll);
  for (std::size_t i = 0; i < grouped; i += unroll) {
    for (std::uint32_t g = 0; g < unroll_group_ggsws(unroll); ++g) {
      const std::uint32_t v = unroll_group_ggsws(unroll) - g;  // the pattern, bit u-1-m for m
      std::int32_t product = 1;
      for (std::uint32_t m = 0; m < unroll; ++m) {
        product *= (v >> (unroll - 1 - m)) & 1u ? s[i + m] : 1 - s[i + m];
      }
      out.push_back(product);
    }
  }
  for (std::size_t i = grouped; i < n; ++i) out.push_back(s[i]);
  return out;
}

BootstrappingKey::BootstrappingKey(const Parameters& params, std::vector<Torus32> data,
                                   std::uint32_t unroll)
    : params_(params), data_(std::move(data)), unroll_(unroll) {
  params_.validate();
  check_unroll(unroll, "BootstrappingKey");
  const std::size_t want = ggsw_count(params_, unroll) * ggsw_size(params_);
  EXPECTS(data_.size() == want, size_error("BootstrappingKey", data_.size(), want, params_) +
                                    " (unroll " + std::to_string(unroll) + ")");
}

BootstrappingKey BootstrappingKey::generate(const SecretKey& key, Csprng& rng,
                                            std::uint32_t unroll) {
  check_unroll(unroll, "BootstrappingKey::generate");
  check_key_made(key, "BootstrappingKey::generate");
  const Parameters& p = key.parameters();
  const std::size_t g = ggsw_size(p);
  const auto m = messages(key.lwe_key().coefficients(), unroll);
  std::vector<Torus32> data(m.size() * g);
  for (std::size_t i = 0; i < m.size(); ++i) {
    encrypt_ggsw(std::span<Torus32>(data).subspan(i * g, g), m[i], key.glwe_key(), p,
                 p.glwe_noise_stddev, rng);
  }
  return BootstrappingKey(p, std::move(data), unroll);
}

std::span<const Torus32> BootstrappingKey::ggsw(std::size_t i) const {
  const std::size_t count = ggsw_count();
  EXPECTS(i < count, "BootstrappingKey::ggsw: index " + std::to_string(i) + " but the key has " +
                         std::to_string(count) + " GGSW samples");
  const std::size_t g = ggsw_size(params_);
  return std::span<const Torus32>(data_).subspan(i * g, g);
}

std::size_t KeySwitchingKey::size(const Parameters& p) {
  p.validate();  // ks_base_log <= 16 below: the shift is defined
  const std::size_t base = std::size_t{1} << p.ks_base_log;
  return std::size_t{p.extracted_lwe_dimension()} * p.ks_level_count * (base - 1) *
         (p.lwe_dimension + 1);
}

KeySwitchingKey::KeySwitchingKey(const Parameters& params, std::vector<Torus32> data)
    : params_(params), data_(std::move(data)) {
  params_.validate();
  EXPECTS(data_.size() == size(params_), size_error("KeySwitchingKey", data_.size(),
                                                    size(params_), params_));
  level_words_ = ((std::size_t{1} << params_.ks_base_log) - 1) * (params_.lwe_dimension + 1);
}

KeySwitchingKey KeySwitchingKey::generate(const SecretKey& key, Csprng& rng) {
  check_key_made(key, "KeySwitchingKey::generate");
  const Parameters& p = key.parameters();
  const std::size_t n1 = p.lwe_dimension + 1;
  const std::size_t base = std::size_t{1} << p.ks_base_log;
  const auto extracted = key.glwe_key().coefficients();  // s'_i = S_{i/N}[i%N]
  std::vector<Torus32> data(size(p));
  std::size_t pos = 0;
  for (std::size_t i = 0; i < extracted.size(); ++i) {
    for (std::size_t j = 0; j < p.ks_level_count; ++j) {
      const unsigned shift = 32 - static_cast<unsigned>((j + 1) * p.ks_base_log);
      for (std::size_t v = 1; v < base; ++v) {
        const Torus32 mu = static_cast<Torus32>(extracted[i] * v) << shift;
        encrypt_lwe(std::span<Torus32>(data).subspan(pos, n1), mu, key.lwe_key(),
                    p.lwe_noise_stddev, rng);
        pos += n1;
      }
    }
  }
  return KeySwitchingKey(p, std::move(data));
}

std::string key_id_text(std::uint64_t id) { return id == 0 ? "unknown" : hex_digits(id); }

CloudKey::CloudKey(BootstrappingKey bk, KeySwitchingKey ksk, std::uint64_t key_id)
    : bk_(std::move(bk)), ksk_(std::move(ksk)), key_id_(key_id) {
  EXPECTS(bk_.parameters() == ksk_.parameters(),
          "CloudKey: bootstrapping key is for parameter set '" + bk_.parameters().name +
              "' but the key-switching key is for '" + ksk_.parameters().name + "'");
}

CloudKey CloudKey::generate(const SecretKey& key, Csprng& rng, std::uint32_t unroll) {
  auto bk = BootstrappingKey::generate(key, rng, unroll);
  auto ksk = KeySwitchingKey::generate(key, rng);
  return CloudKey(std::move(bk), std::move(ksk), key.key_id());
}

std::size_t CloudKey::memory_bytes() const {
  return (bk_.data().size() + ksk_.data().size()) * sizeof(Torus32);
}

LweBatch encrypt_bits(const SecretKey& key, std::span<const std::uint8_t> bits, Csprng& rng) {
  check_key_made(key, "encrypt_bits");
  const Parameters& p = key.parameters();
  LweBatch batch(p.lwe_dimension, bits.size());
  for (std::size_t i = 0; i < bits.size(); ++i) {
    EXPECTS(bits[i] <= 1, "encrypt_bits: value " + std::to_string(bits[i]) + " at index " +
                              std::to_string(i) + " but expected 0 or 1");
    encrypt_lwe(batch.sample(i), encode_bit(bits[i] != 0), key.lwe_key(), p.lwe_noise_stddev,
                rng);
  }
  return batch;
}

std::vector<std::uint8_t> decrypt_bits(const SecretKey& key, const LweBatch& batch) {
  check_key_made(key, "decrypt_bits");
  std::vector<std::uint8_t> bits(batch.count());
  const auto phases = batch_phases(key, batch);
  for (std::size_t i = 0; i < bits.size(); ++i) bits[i] = decode_bit(phases[i]) ? 1 : 0;
  return bits;
}

std::vector<Torus32> batch_phases(const SecretKey& key, const LweBatch& batch) {
  check_key_made(key, "batch_phases");
  EXPECTS(batch.lwe_dimension() == key.parameters().lwe_dimension,
          "batch_phases: batch has n=" + std::to_string(batch.lwe_dimension()) +
              " but the key has n=" + std::to_string(key.parameters().lwe_dimension));
  std::vector<Torus32> phases(batch.count());
  for (std::size_t i = 0; i < phases.size(); ++i) phases[i] = lwe_phase(batch.sample(i), key.lwe_key());
  return phases;
}

}  // namespace torusgate
