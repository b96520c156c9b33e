// Csprng: ChaCha20 (IETF) keystream from libsodium, keyed by randombytes_buf or a test seed.
#include "torusgate/core/random.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>

#include "sodium_init.hpp"
#include "torusgate/core/error.hpp"

namespace torusgate {
Csprng::Csprng() {
  detail::ensure_sodium("Csprng");
  randombytes_buf(key_.data(), key_.size());
}

Csprng::Csprng(SeedKey, const std::array<std::uint8_t, 32>& key, bool deterministic)
    : key_(key), deterministic_(deterministic) {
  detail::ensure_sodium("Csprng");
}

Csprng::Csprng(Csprng&& other) noexcept { take(other); }

Csprng& Csprng::operator=(Csprng&& other) noexcept {
  if (this != &other) take(other);
  return *this;
}

Csprng::~Csprng() {
  sodium_memzero(key_.data(), key_.size());
  sodium_memzero(buffer_.data(), buffer_.size());
}

void Csprng::take(Csprng& other) noexcept {
  key_ = other.key_;
  block_counter_ = other.block_counter_;
  buffer_ = other.buffer_;
  position_ = other.position_;
  deterministic_ = other.deterministic_;
  spent_ = other.spent_;
  has_spare_normal_ = other.has_spare_normal_;
  spare_normal_ = other.spare_normal_;
  sodium_memzero(other.key_.data(), other.key_.size());
  sodium_memzero(other.buffer_.data(), other.buffer_.size());
  other.position_ = other.buffer_.size();  // the next draw refills, which refuses
  other.has_spare_normal_ = false;
  other.spent_ = true;
}

Csprng Csprng::deterministic(std::uint64_t seed, testing::InsecureDeterministicTag) {
  std::array<std::uint8_t, 32> key{};
  const char label[] = "torusgate-insecure-test:";
  static_assert(sizeof label - 1 + 8 <= 32);
  std::memcpy(key.data(), label, sizeof label - 1);
  for (int i = 0; i < 8; ++i) key[24 + i] = static_cast<std::uint8_t>(seed >> (8 * i));
  return Csprng(SeedKey{}, key, true);
}

void Csprng::refill() {
  EXPECTS(!spent_, "Csprng: drawn from after being moved from; use the generator it was moved to");
  // One fresh nonce per refill: a 96-bit counter, never reused under the same key.
  std::array<std::uint8_t, crypto_stream_chacha20_ietf_NONCEBYTES> nonce{};
  for (int i = 0; i < 8; ++i) nonce[i] = static_cast<std::uint8_t>(block_counter_ >> (8 * i));
  ++block_counter_;
  crypto_stream_chacha20_ietf(buffer_.data(), buffer_.size(), nonce.data(), key_.data());
  position_ = 0;
}

void Csprng::fill_bytes(std::span<std::uint8_t> out) {
  std::size_t done = 0;
  while (done < out.size()) {
    if (position_ == buffer_.size()) refill();
    const std::size_t take = std::min(out.size() - done, buffer_.size() - position_);
    std::memcpy(out.data() + done, buffer_.data() + position_, take);
    position_ += take;
    done += take;
  }
}

std::uint32_t Csprng::uniform_u32() {
  if (buffer_.size() - position_ < 4) refill();
  std::uint32_t v;
  std::memcpy(&v, buffer_.data() + position_, 4);
  position_ += 4;
  return v;
}

std::uint64_t Csprng::uniform_u64() {
  if (buffer_.size() - position_ < 8) refill();
  std::uint64_t v;
  std::memcpy(&v, buffer_.data() + position_, 8);
  position_ += 8;
  return v;
}

std::uint64_t Csprng::uniform_below(std::uint64_t bound) {
  EXPECTS(bound >= 1, "Csprng::uniform_below: bound=0 but expected at least 1");
  const std::uint64_t limit = std::numeric_limits<std::uint64_t>::max() -
                              std::numeric_limits<std::uint64_t>::max() % bound;
  for (;;) {
    const std::uint64_t v = uniform_u64();
    if (v < limit) return v % bound;
  }
}

double Csprng::uniform_open_unit() {
  // (k + 1) / 2^53 for k uniform in [0, 2^53): never 0, so log() below is finite.
  return static_cast<double>((uniform_u64() >> 11) + 1) * 0x1.0p-53;
}

double Csprng::standard_normal() {
  if (has_spare_normal_) {
    has_spare_normal_ = false;
    return spare_normal_;
  }
  const double radius = std::sqrt(-2.0 * std::log(uniform_open_unit()));
  const double angle = 2.0 * std::numbers::pi * uniform_open_unit();
  spare_normal_ = radius * std::sin(angle);
  has_spare_normal_ = true;
  return radius * std::cos(angle);
}

Torus32 Csprng::gaussian_torus(double stddev) {
  EXPECTS(std::isfinite(stddev) && stddev >= 0,
          "Csprng::gaussian_torus: stddev=" + std::to_string(stddev) +
              " but expected a finite non-negative value");
  const double e = standard_normal() * stddev;
  return double_to_torus(e);
}

}  // namespace torusgate
