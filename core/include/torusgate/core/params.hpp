// TFHE gate-bootstrapping parameter sets: a runtime struct with named fields, validation,
// and the named sets of DESIGN.md section 3 with their provenance and security notes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace torusgate {

struct Parameters {
  std::string name;                   // identity of the set ("tfhe_lib_128", ...)
  std::uint32_t lwe_dimension = 0;    // n: LWE secret key length (gate ciphertexts)
  std::uint32_t glwe_dimension = 0;   // k: number of mask polynomials of a GLWE sample
  std::uint32_t polynomial_size = 0;  // N: ring Z[X]/(X^N + 1), a power of two
  std::uint32_t bk_base_log = 0;      // log2(Bg): gadget base of the bootstrapping key
  std::uint32_t bk_level_count = 0;   // l: gadget levels of the bootstrapping key
  std::uint32_t ks_base_log = 0;      // log2(base) of the key-switching decomposition
  std::uint32_t ks_level_count = 0;   // t: levels of the key-switching decomposition
  double lwe_noise_stddev = 0;        // sigma_lwe: LWE encryption and key-switching key noise
  double glwe_noise_stddev = 0;       // sigma_glwe: bootstrapping-key noise
  bool insecure = false;              // true for test-only sets; their name says INSECURE

  // Throws InvalidArgument naming the first field out of range; also when a set not marked
  // insecure has noise below 2^-32 (one torus LSB: no security) or is below 80 bits by the
  // security curves (curve_security), and when a set has the name of a built-in one
  // (all_parameter_sets) but other values.
  void validate() const;

  // k*N: dimension of the LWE sample extracted from a GLWE sample (key-switching input).
  std::uint32_t extracted_lwe_dimension() const { return glwe_dimension * polynomial_size; }
  // (k+1)*l: rows of a GGSW sample.
  std::uint32_t ggsw_row_count() const { return (glwe_dimension + 1) * bk_level_count; }

  // 64-bit fingerprint of every field (name included): equal sets, equal fingerprints.
  std::uint64_t fingerprint() const;

  // Same numeric fields (name ignored).
  bool same_values(const Parameters& other) const;
  friend bool operator==(const Parameters&, const Parameters&) = default;
};

// Security of an LWE instance by Zama's security curves for Concrete, a linear fit of the
// lattice estimator (every attack it models; binary keys, modulus 2^64): an instance of
// dimension d >= minimal_dimension with noise sigma (a fraction of the modulus) has `bits` bits
// of security when log2(sigma) >= slope * d + bias. A fit, not an estimate: near a curve the
// estimator's own figure may differ by a few bits either way (docs/security.md section 2).
struct SecurityCurve {
  std::uint32_t bits = 0;
  double slope = 0;
  double bias = 0;
  std::uint32_t minimal_dimension = 0;

  // The least log2(sigma) the curve asks at `dimension`: slope * dimension + bias, or
  // +infinity below minimal_dimension (no noise is enough there).
  double least_log2_stddev(std::uint32_t dimension) const;
};

// The curves for 80, 112, 128 and 192 bits, weakest first.
const std::vector<SecurityCurve>& security_curves();

// The highest curve level (80, 112, 128 or 192; 0 below 80) that the instance of dimension
// `dimension` with noise `stddev` meets.
std::uint32_t curve_security_bits(std::uint32_t dimension, double stddev);

// A set's two instances by the curves: the LWE key (n, sigma_lwe) and the GLWE key seen as
// an LWE key of dimension k*N (sigma_glwe). The set is as strong as the weaker one.
struct CurveSecurity {
  std::uint32_t lwe_bits = 0;
  std::uint32_t glwe_bits = 0;
  std::uint32_t bits() const { return lwe_bits < glwe_bits ? lwe_bits : glwe_bits; }
};
CurveSecurity curve_security(const Parameters& params);

// v as 16 lowercase hex digits.
std::string hex_digits(std::uint64_t v);
// Text of a secret key's id (SecretKey::key_id) for messages: its hex_digits, or "unknown"
// for 0.
std::string key_id_text(std::uint64_t id);

// The TFHE library's default (v1.1): n=630, k=1, N=1024, Bg=2^7 l=3, ks 2^2 t=8.
// Rated 128 bits in its README and 129 in its source (2020); tfhe-rs now says "currently
// around 120 bits". The library states no failure probability; our noise model and the
// measured noise (docs/security.md) put every fixed gate kind at 2^-167 or below per
// bootstrap (the threshold gate T(-1;2,2,2) at 2^-89). The security curves put both its keys
// at 112 bits, not 128.
Parameters tfhe_lib_128();

// The TFHE library's older default, used by the published GPU TFHE tables (cuFHE, ...):
// n=500, k=1, N=1024, Bg=2^10 l=2, ks 2^2 t=8. About 80 bits of security (the curves: 80
// for the LWE key, 112 for the GLWE key).
Parameters tfhe_lib_80();

// tfhe-rs boolean PARAMETERS_ERROR_PROB_2_POW_MINUS_165: n=837, k=2, N=1024, Bg=2^10 l=2,
// ks 2^3 t=5. 128 bits of security by the lattice estimator (the curves: 128 for the LWE
// key, 192 for the GLWE key), failure probability 2^-165.
Parameters default_128();

// INSECURE: tiny dimensions for fast logic tests only (n=64, k=1, N=256). No security.
Parameters toy_insecure();

// INSECURE: like toy_insecure but with GLWE dimension k=2, to test general k quickly.
Parameters toy_k2_insecure();

// Every named set, in a stable order.
std::vector<Parameters> all_parameter_sets();

// The named set `name`; throws InvalidArgument listing the known names otherwise.
Parameters parameters_by_name(std::string_view name);

}  // namespace torusgate
