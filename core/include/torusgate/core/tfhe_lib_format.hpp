// The file formats of the TFHE library v1.1 (github tfhe/tfhe, src/libtfhe/io): gate-
// bootstrapping parameter sets, LWE and TGSW secret keys and gate-bootstrapping ciphertexts,
// read with full validation and written byte for byte as that library writes them.
//
// Layout (the library writes host little-endian; we read and write little-endian bytes):
//
//   text block   "-----BEGIN NAME-----\n", one "key: value\n" line per field in std::map
//                (byte) order of the keys, "-----END NAME-----\n". Integers are printed
//                right-aligned in 10 columns ("n:        630"), doubles as printf("%.8f")
//                ("alpha_min: 0.00003052"), so 2^-25 reads back as 0.00000003.
//                GATEBOOTSPARAMS: ks_basebit, ks_t            (our ks_base_log, ks_level_count)
//                LWEPARAMS:       alpha_max, alpha_min, n     (n = our lwe_dimension)
//                TLWEPARAMS:      N, alpha_max, alpha_min, k  (our polynomial_size, glwe_dimension)
//                TGSWPARAMS:      Bgbit, l                    (our bk_base_log, bk_level_count)
//                alpha_min is the noise stddev (ours: lwe/glwe_noise_stddev); alpha_max is
//                0.012467 in every set the library makes.
//   parameter set file: GATEBOOTSPARAMS, LWEPARAMS, TLWEPARAMS, TGSWPARAMS blocks.
//   LWE key:     LWEPARAMS block, int32 type id 43, n int32 coefficients (0 or 1).
//   TGSW key:    TLWEPARAMS block, TGSWPARAMS block, int32 type id 169, k*N int32
//                coefficients (0 or 1), polynomial-major: polynomial j is words [j*N, (j+1)*N).
//   ciphertext:  int32 type id 42, n int32 mask words a, int32 body b, one double (the
//                library's variance estimate): 4*n + 16 bytes, 2536 for n = 630. A ciphertext
//                file is any number of them back to back (none: an empty file).
//
// Parameters map to our named sets (all_parameter_sets()) by their integer fields only: the
// printed doubles are rounded to 8 decimals. Readers check block names and order, every key
// (each exactly once, in any order as the library reads them, no other; lines end in "\n"; the
// spaces before a number are optional), that numbers parse completely, the integer fields against
// the named sets before allocating anything they size, type ids, binary key coefficients and
// truncation, and throw FormatError naming the problem (SystemError when a stream or file
// fails). read_* consume one object from a stream (read_gate_ciphertexts: up to its end);
// load_* read a whole file and reject trailing bytes; messages from load_*/save_* name the path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <span>
#include <vector>

#include "torusgate/core/glwe.hpp"
#include "torusgate/core/keys.hpp"
#include "torusgate/core/lwe.hpp"
#include "torusgate/core/params.hpp"

namespace torusgate::tfhe_lib {

// The library's type ids (LWE_KEY_TYPE_UID, TGSW_KEY_TYPE_UID, LWE_SAMPLE_TYPE_UID).
inline constexpr std::int32_t lwe_key_type_id = 43;
inline constexpr std::int32_t tgsw_key_type_id = 169;
inline constexpr std::int32_t ciphertext_type_id = 42;
// alpha_max of every parameter set the library makes (new_default_gate_bootstrapping_parameters).
inline constexpr double library_alpha_max = 0.012467;

// Bytes of one gate-bootstrapping ciphertext of dimension n: type id, a, b, variance.
constexpr std::size_t ciphertext_bytes(std::uint32_t lwe_dimension) {
  return 4 + 4 * (std::size_t{lwe_dimension} + 1) + 8;
}

// The LWEPARAMS block as read.
struct LweParamsBlock {
  std::uint32_t lwe_dimension = 0;  // "n"
  double alpha_min = 0;             // "alpha_min": noise stddev (8 decimals)
  double alpha_max = 0;             // "alpha_max"
};

// The TLWEPARAMS block as read.
struct TlweParamsBlock {
  std::uint32_t polynomial_size = 0;  // "N"
  std::uint32_t glwe_dimension = 0;   // "k"
  double alpha_min = 0;               // "alpha_min": noise stddev (8 decimals)
  double alpha_max = 0;               // "alpha_max"
};

// The TGSWPARAMS block as read.
struct TgswParamsBlock {
  std::uint32_t bk_base_log = 0;     // "Bgbit"
  std::uint32_t bk_level_count = 0;  // "l"
};

// The integer fields a file states; a key file states only some of them (unset: not stated).
struct IntegerFields {
  std::optional<std::uint32_t> lwe_dimension;    // n
  std::optional<std::uint32_t> glwe_dimension;   // k
  std::optional<std::uint32_t> polynomial_size;  // N
  std::optional<std::uint32_t> bk_base_log;      // Bgbit
  std::optional<std::uint32_t> bk_level_count;   // l
  std::optional<std::uint32_t> ks_base_log;      // ks_basebit
  std::optional<std::uint32_t> ks_level_count;   // ks_t
};

// The one named set whose fields equal every stated field. FormatError naming the fields (in
// the library's spelling) and the known sets when none matches, or the candidates when
// several do.
Parameters match_parameter_set(const IntegerFields& fields);

// A TFHE library LWE key file: its parameter block and the key.
struct LweKeyFile {
  LweParamsBlock params;
  LweKey key;
};

// A TFHE library TGSW key file: its parameter blocks and the key (k polynomials of N
// coefficients, in the file's order).
struct TgswKeyFile {
  TlweParamsBlock tlwe;
  TgswParamsBlock tgsw;
  GlweKey key;
};

// ---- streams ------------------------------------------------------------------------------

// Gate-bootstrapping parameter set (export_tfheGateBootstrappingParameterSet_toFile): the
// reader returns the matching named set; the writer prints alpha_min = our noise stddevs and
// alpha_max = library_alpha_max (InvalidArgument for parameters that do not validate).
Parameters read_parameter_set(std::istream& in);
void write_parameter_set(std::ostream& out, const Parameters& params);

// LWE key (export_lweKey_toFile). n must be the lwe_dimension of a named set.
LweKeyFile read_lwe_key(std::istream& in);
void write_lwe_key(std::ostream& out, const SecretKey& key);

// TGSW key (export_tgswKey_toFile). (N, k, Bgbit, l) must be those of a named set.
TgswKeyFile read_tgsw_key(std::istream& in);
void write_tgsw_key(std::ostream& out, const SecretKey& key);

// Our SecretKey from the library's two secret keys: the LWE key as is, our GlweKey's
// polynomial j = the TGSW key's polynomial j. The parameter set is the named set matching
// (n, k, N, Bgbit, l); FormatError when none or several match. The second form takes the set
// (for example from read_parameter_set) and throws FormatError naming each field of the key
// files that differs from it.
SecretKey to_secret_key(const LweKeyFile& lwe, const TgswKeyFile& tgsw);
SecretKey to_secret_key(const Parameters& params, const LweKeyFile& lwe, const TgswKeyFile& tgsw);

// Gate-bootstrapping ciphertexts of dimension params.lwe_dimension, read up to the end of `in`
// (export_gate_bootstrapping_ciphertext_toFile, any number of times). Each sample's variance
// double is read but not checked (the library may store anything there); it is appended to
// *variances when given. InvalidArgument for parameters that do not validate.
LweBatch read_gate_ciphertexts(std::istream& in, const Parameters& params,
                               std::vector<double>* variances = nullptr);
// Writes every sample of `batch` (dimension params.lwe_dimension). The variance double is
// params.lwe_noise_stddev^2 for every sample: what the library stores for a fresh encryption
// (2^-30 for tfhe_lib_128). It is not a noise estimate of bootstrapped outputs; the library
// only carries it along. The second form writes the given per-sample variances instead
// (variances.size() == batch.count()), to reproduce a file read with its variances.
void write_gate_ciphertexts(std::ostream& out, const Parameters& params, const LweBatch& batch);
void write_gate_ciphertexts(std::ostream& out, const Parameters& params, const LweBatch& batch,
                            std::span<const double> variances);

// ---- files --------------------------------------------------------------------------------

Parameters load_parameter_set(const std::filesystem::path& path);
void save_parameter_set(const std::filesystem::path& path, const Parameters& params);
LweKeyFile load_lwe_key(const std::filesystem::path& path);
void save_lwe_key(const std::filesystem::path& path, const SecretKey& key);
TgswKeyFile load_tgsw_key(const std::filesystem::path& path);
void save_tgsw_key(const std::filesystem::path& path, const SecretKey& key);
// Both key files, then to_secret_key.
SecretKey load_secret_key(const std::filesystem::path& lwe_key_path,
                          const std::filesystem::path& tgsw_key_path);
LweBatch load_gate_ciphertexts(const std::filesystem::path& path, const Parameters& params,
                               std::vector<double>* variances = nullptr);
void save_gate_ciphertexts(const std::filesystem::path& path, const Parameters& params,
                           const LweBatch& batch);
void save_gate_ciphertexts(const std::filesystem::path& path, const Parameters& params,
                           const LweBatch& batch, std::span<const double> variances);

}  // namespace torusgate::tfhe_lib
