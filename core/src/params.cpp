// Named parameter sets and their validation (DESIGN.md section 3).
#include "torusgate/core/params.hpp"

#include <bit>
#include <cmath>
#include <cstring>

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

}  // namespace

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
  throw InvalidArgument("parameters_by_name: unknown parameter set '" + std::string(name) +
                        "'; known sets: " + known);
}

}  // namespace torusgate
