// Named parameter sets and their validation (DESIGN.md section 3).
#include "torusgate/core/params.hpp"

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "torusgate/core/error.hpp"

namespace torusgate {
namespace {

std::string field_error(const Parameters& p, const char* field, std::uint64_t value,
                        const char* expected) {
  return "Parameters::validate: set '" + p.name + "' has " + field + "=" + std::to_string(value) +
         " but expected " + expected;
}

void fnv_mix_byte(std::uint64_t& h, unsigned char byte) {
  h ^= byte;
  h *= 0x100000001b3ULL;
}

// Mixes v as `bytes` little-endian bytes, so the fingerprint is the same on every machine.
void fnv_mix_le(std::uint64_t& h, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) fnv_mix_byte(h, static_cast<unsigned char>(v >> (8 * i)));
}

// Why an instance misses the weakest curve: "LWE n=64 is below the least dimension 450 of the
// 80-bit curve", or "LWE n=500 has sigma=2^-19.00 but the 80-bit curve asks 2^-18.51".
std::string curve_shortfall(const char* instance, const char* dimension_name,
                            std::uint32_t dimension, double stddev) {
  const SecurityCurve& weakest = security_curves().front();
  char text[160];
  if (dimension < weakest.minimal_dimension) {
    std::snprintf(text, sizeof text, "%s %s=%u is below the least dimension %u of the %u-bit curve",
                  instance, dimension_name, dimension, weakest.minimal_dimension, weakest.bits);
  } else {
    std::snprintf(text, sizeof text, "%s %s=%u has sigma=2^%.2f but the %u-bit curve asks 2^%.2f",
                  instance, dimension_name, dimension, std::log2(stddev), weakest.bits,
                  weakest.least_log2_stddev(dimension));
  }
  return text;
}

}  // namespace

double SecurityCurve::least_log2_stddev(std::uint32_t dimension) const {
  if (dimension < minimal_dimension) return std::numeric_limits<double>::infinity();
  return slope * dimension + bias;
}

const std::vector<SecurityCurve>& security_curves() {
  // Zama's security curves for Concrete (concrete-optimizer's verified curves, lattice
  // estimator, q = 2^64, binary keys), as published in Concrete's security documentation.
  static const std::vector<SecurityCurve> curves = {
      {80, -0.04045822621883835, 1.7183812000404686, 450},
      {112, -0.029881371645803536, 2.6539316216894946, 450},
      {128, -0.026599462343105267, 2.981543184145991, 450},
      {192, -0.018894148763647572, 4.2700349965659115, 532},
  };
  return curves;
}

std::uint32_t curve_security_bits(std::uint32_t dimension, double stddev) {
  std::uint32_t bits = 0;
  if (!(stddev > 0)) return bits;  // no noise (or NaN): no level
  const double log2_stddev = std::log2(stddev);
  for (const SecurityCurve& curve : security_curves()) {
    if (log2_stddev >= curve.least_log2_stddev(dimension)) bits = curve.bits;
  }
  return bits;
}

CurveSecurity curve_security(const Parameters& params) {
  return {curve_security_bits(params.lwe_dimension, params.lwe_noise_stddev),
          curve_security_bits(params.extracted_lwe_dimension(), params.glwe_noise_stddev)};
}

std::string hex_digits(std::uint64_t v) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string text(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) text[i] = digits[v & 0xf];
  return text;
}

void Parameters::validate() const {
  EXPECTS(*this != Parameters{},
          "Parameters::validate: the set is empty (every field 0, no name): a default-constructed "
          "Parameters, or the parameters of a default-constructed or moved-from key");
  EXPECTS(!name.empty(), "Parameters::validate: the set has an empty name");
  EXPECTS(lwe_dimension >= 1 && lwe_dimension <= 4096,
          field_error(*this, "lwe_dimension", lwe_dimension, "1..4096"));
  EXPECTS(glwe_dimension >= 1 && glwe_dimension <= 8,
          field_error(*this, "glwe_dimension", glwe_dimension, "1..8"));
  EXPECTS(polynomial_size >= 16 && polynomial_size <= 16384 &&
              std::has_single_bit(polynomial_size),
          field_error(*this, "polynomial_size", polynomial_size, "a power of two in 16..16384"));
  EXPECTS(bk_base_log >= 1 && bk_base_log <= 31,
          field_error(*this, "bk_base_log", bk_base_log, "1..31"));
  EXPECTS(bk_level_count >= 1 && std::uint64_t{bk_base_log} * bk_level_count <= 32,
          field_error(*this, "bk_level_count", bk_level_count,
                      "at least 1 with bk_base_log*bk_level_count <= 32"));
  EXPECTS(ks_base_log >= 1 && ks_base_log <= 16,
          field_error(*this, "ks_base_log", ks_base_log, "1..16"));
  EXPECTS(ks_level_count >= 1 && std::uint64_t{ks_base_log} * ks_level_count <= 32,
          field_error(*this, "ks_level_count", ks_level_count,
                      "at least 1 with ks_base_log*ks_level_count <= 32"));
  EXPECTS(std::isfinite(lwe_noise_stddev) && lwe_noise_stddev >= 0 && lwe_noise_stddev < 0.25,
          "Parameters::validate: set '" + name + "' has lwe_noise_stddev=" +
              std::to_string(lwe_noise_stddev) + " but expected a finite value in [0, 0.25)");
  EXPECTS(std::isfinite(glwe_noise_stddev) && glwe_noise_stddev >= 0 && glwe_noise_stddev < 0.25,
          "Parameters::validate: set '" + name + "' has glwe_noise_stddev=" +
              std::to_string(glwe_noise_stddev) + " but expected a finite value in [0, 0.25)");
  EXPECTS(!insecure || name.find("INSECURE") != std::string::npos,
          "Parameters::validate: set '" + name + "' is insecure but its name does not say INSECURE");
  // Below one LSB of the 32-bit torus, rounding leaves samples nearly noiseless: no lattice
  // problem protects them.
  constexpr double least_noise = 0x1p-32;
  EXPECTS(insecure || (lwe_noise_stddev >= least_noise && glwe_noise_stddev >= least_noise),
          "Parameters::validate: set '" + name + "' has lwe_noise_stddev=" +
              std::to_string(lwe_noise_stddev) + " and glwe_noise_stddev=" +
              std::to_string(glwe_noise_stddev) + ": a set not marked insecure needs at least "
              "2^-32 (one torus LSB) in both; mark it insecure (and name it INSECURE) for tests");
  // A set named as a built-in one is that set: another with its name would pass for it in
  // files, reports and key ids. (The list made once: validate runs with every key and backend.)
  static const std::vector<Parameters> built_in = all_parameter_sets();
  for (const Parameters& known : built_in) {
    EXPECTS(known.name != name || known.same_values(*this),
            "Parameters::validate: set '" + name + "' has the name of the built-in set but "
            "other values; give a set of your own another name");
  }
  // The weakest curve (80 bits) for both keys: a smaller dimension or less noise protects
  // nothing a user should trust, so such a set says it is insecure.
  if (insecure) return;
  const CurveSecurity security = curve_security(*this);
  if (security.bits() == 0) {
    std::string why = "Parameters::validate: set '";
    why += name;
    why += "' is below 80 bits of security by the lattice estimator's curves (";
    why += security.lwe_bits == 0
               ? curve_shortfall("LWE", "n", lwe_dimension, lwe_noise_stddev)
               : curve_shortfall("GLWE", "k*N", extracted_lwe_dimension(), glwe_noise_stddev);
    why += "); raise the dimension or the noise, or mark it insecure (and name it INSECURE) "
           "for tests";
    throw InvalidArgument(why);
  }
}

std::uint64_t Parameters::fingerprint() const {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : name) fnv_mix_byte(h, static_cast<unsigned char>(c));
  const std::uint32_t ints[] = {lwe_dimension, glwe_dimension, polynomial_size, bk_base_log,
                                bk_level_count, ks_base_log,    ks_level_count,
                                insecure ? 1u : 0u};
  for (std::uint32_t v : ints) fnv_mix_le(h, v, 4);
  for (double d : {lwe_noise_stddev, glwe_noise_stddev}) {
    // -0.0 == 0.0: equal sets, equal fingerprints.
    fnv_mix_le(h, std::bit_cast<std::uint64_t>(d == 0 ? 0.0 : d), 8);
  }
  return h;
}

bool Parameters::same_values(const Parameters& o) const {
  return lwe_dimension == o.lwe_dimension && glwe_dimension == o.glwe_dimension &&
         polynomial_size == o.polynomial_size && bk_base_log == o.bk_base_log &&
         bk_level_count == o.bk_level_count && ks_base_log == o.ks_base_log &&
         ks_level_count == o.ks_level_count && lwe_noise_stddev == o.lwe_noise_stddev &&
         glwe_noise_stddev == o.glwe_noise_stddev && insecure == o.insecure;
}

Parameters tfhe_lib_128() {
  // TFHE library v1.1 new_default_gate_bootstrapping_parameters(128):
  // alpha_lwe = 2^-15, alpha_bk = 2^-25 (standard deviations as fractions of the torus).
  return Parameters{"tfhe_lib_128", 630, 1, 1024, 7, 3, 2, 8,
                    std::ldexp(1.0, -15), std::ldexp(1.0, -25), false};
}

Parameters tfhe_lib_80() {
  // TFHE library before v1.1 (and the cuFHE / published GPU tables): n=500, N=1024,
  // Bgbit=10 l=2, ks basebit=2 t=8, alpha_lwe=2.44e-5, alpha_bk=7.18e-9.
  return Parameters{"tfhe_lib_80", 500, 1, 1024, 10, 2, 2, 8, 2.44e-5, 7.18e-9, false};
}

Parameters default_128() {
  // tfhe-rs boolean PARAMETERS_ERROR_PROB_2_POW_MINUS_165 (128-bit security, p_fail 2^-165).
  return Parameters{"default_128", 837, 2, 1024, 10, 2, 3, 5, 3.3747e-6, 9.3132e-10, false};
}

Parameters toy_insecure() {
  // Tiny, fast, no security at all: for logic tests. Noise kept small so gates never fail.
  return Parameters{"toy_INSECURE", 64, 1, 256, 10, 2, 3, 5,
                    std::ldexp(1.0, -20), std::ldexp(1.0, -30), true};
}

Parameters toy_k2_insecure() {
  return Parameters{"toy_k2_INSECURE", 64, 2, 256, 10, 2, 3, 5,
                    std::ldexp(1.0, -20), std::ldexp(1.0, -30), true};
}

std::vector<Parameters> all_parameter_sets() {
  return {tfhe_lib_128(), tfhe_lib_80(), default_128(), toy_insecure(), toy_k2_insecure()};
}

Parameters parameters_by_name(std::string_view name) {
  std::string known;
  for (auto& p : all_parameter_sets()) {
    if (p.name == name) return p;
    known += (known.empty() ? "" : ", ") + p.name;
  }
  // The name as a message shows it: bytes outside printable ASCII as \xNN (a terminal's
  // escape sequence stays inert), at most 64 of them.
  std::string shown;
  for (const char c : name.substr(0, 64)) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7F && byte != '\\') {
      shown += c;
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02X", byte);
      shown += escaped;
    }
  }
  if (name.size() > 64) shown.append("... (").append(std::to_string(name.size())).append(" bytes)");
  std::string text = "parameters_by_name: unknown parameter set '";
  text.append(shown).append("'; known sets: ").append(known);
  throw InvalidArgument(text);
}

}  // namespace torusgate
