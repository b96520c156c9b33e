// Cryptographically secure randomness for keys and noise: a ChaCha20 stream (libsodium)
// keyed from the operating system's CSPRNG. A seeded, reproducible mode exists for tests
// only; it needs an explicit tag from torusgate::testing, so it cannot be chosen by accident.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "torusgate/core/torus.hpp"

namespace torusgate {

namespace testing {
// Proof that the caller asked for insecure, reproducible randomness on purpose.
struct InsecureDeterministicTag {
  explicit InsecureDeterministicTag() = default;
};
inline constexpr InsecureDeterministicTag insecure_deterministic{};
}  // namespace testing

// Not thread-safe: give each thread its own generator. Not copyable: a copy would repeat the
// original's stream, every mask and noise value, so two ciphertexts would share a mask. A
// moved-from generator is spent: its key is wiped and its next draw throws InvalidArgument.
class Csprng {
 public:
  // Keyed from the OS CSPRNG (libsodium randombytes_buf). Throws SystemError if libsodium
  // cannot be initialised.
  Csprng();

  // Reproducible stream from `seed`: INSECURE, for tests and benchmarks only.
  static Csprng deterministic(std::uint64_t seed, testing::InsecureDeterministicTag);

  Csprng(const Csprng&) = delete;
  Csprng& operator=(const Csprng&) = delete;
  Csprng(Csprng&& other) noexcept;
  Csprng& operator=(Csprng&& other) noexcept;
  ~Csprng();

  bool is_deterministic() const { return deterministic_; }

  void fill_bytes(std::span<std::uint8_t> out);
  std::uint32_t uniform_u32();
  std::uint64_t uniform_u64();
  Torus32 uniform_torus() { return uniform_u32(); }
  // Uniform in [0, bound) without modulo bias; bound >= 1.
  std::uint64_t uniform_below(std::uint64_t bound);
  // 0 or 1 with probability 1/2 each.
  std::int32_t uniform_bit() { return static_cast<std::int32_t>(uniform_u32() & 1u); }
  // Uniform double in (0, 1], 53 random bits.
  double uniform_open_unit();
  // Standard normal N(0, 1) (Box-Muller on uniform_open_unit).
  double standard_normal();
  // Gaussian torus noise: round(N(0, stddev) * 2^32) modulo 2^32; stddev is a torus fraction.
  Torus32 gaussian_torus(double stddev);
  // mu plus Gaussian noise.
  Torus32 gaussian_torus(Torus32 mu, double stddev) { return mu + gaussian_torus(stddev); }

 private:
  struct SeedKey {};
  Csprng(SeedKey, const std::array<std::uint8_t, 32>& key, bool deterministic);
  void refill();
  // Takes other's state and leaves other spent (key and buffer wiped).
  void take(Csprng& other) noexcept;

  std::array<std::uint8_t, 32> key_{};
  std::uint64_t block_counter_ = 0;
  alignas(64) std::array<std::uint8_t, 4096> buffer_{};
  std::size_t position_ = 4096;
  bool deterministic_ = false;
  bool spent_ = false;  // moved from
  bool has_spare_normal_ = false;
  double spare_normal_ = 0;
};

}  // namespace torusgate
