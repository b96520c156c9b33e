// The file formats of the TFHE library v1.1 (github tfhe/tfhe, src/libtfhe/io): gate-
// bootstrapping parameter sets, LWE and TGSW secret keys, gate-bootstrapping ciphertexts, and
// the cloud and secret keysets, read with full validation and written byte for byte as that
// library writes them.
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
//                LWEKSPARAMS:     basebit, n, t               (ks_base_log, k*N, ks_level_count)
//                alpha_min is the noise stddev (ours: lwe/glwe_noise_stddev); alpha_max is
//                0.012467 in every set the library makes. A file names its set by the
//                integer fields; its noise fields must be that set's to the 8th decimal
//                (FormatError otherwise: the reader knows the named sets only).
//   parameter set file: GATEBOOTSPARAMS, LWEPARAMS, TLWEPARAMS, TGSWPARAMS blocks.
//   LWE key:     LWEPARAMS block, int32 type id 43, n int32 coefficients (0 or 1).
//   TGSW key:    TLWEPARAMS block, TGSWPARAMS block, int32 type id 169, k*N int32
//                coefficients (0 or 1), polynomial-major: polynomial j is words [j*N, (j+1)*N).
//   ciphertext:  int32 type id 42, n int32 mask words a, int32 body b, one double (the
//                library's variance estimate): 4*n + 16 bytes, 2536 for n = 630. A ciphertext
//                file is any number of them back to back (none: an empty file).
//   cloud keyset (export_tfheGateBootstrappingCloudKeySet_toFile, tfhe_io.cpp
//                write_tfheGateBootstrappingCloudKeySet): the parameter set file's four blocks,
//                then the bootstrapping key as write_lweBootstrappingKey writes it without its
//                parameter blocks:
//                  LWEKSPARAMS block (n = k*N: the extracted key's dimension, t, basebit);
//                  key-switching key: int32 type id 200, one double (the largest variance of
//                    its samples), then for i < k*N, j < t, v < 2^basebit (v fastest) the
//                    sample ks[i][j][v]: n mask words then the body, n+1 int32. ks[i][j][v]
//                    encrypts v * s'_i / 2^(basebit*(j+1)) under the LWE key (s' the extracted
//                    key: s'_{p*N+q} = coefficient q of TGSW key polynomial p). Row v = 0 is
//                    never used by key switching; v1.1 writes it as the trivial sample 0 (all
//                    words 0). Our KeySwitchingKey stores no row for v = 0.
//                  bootstrapping key: int32 type id 201, one double (the largest variance of
//                    its TLWE samples), then for i < n the TGSW sample of LWE key bit s_i:
//                    (k+1)*l TLWE samples (row p*l + m, m < l, adds s_i * 2^(32-(m+1)*Bgbit)
//                    to polynomial p, coefficient 0), each k mask polynomials then the body, N
//                    int32 each: exactly our BootstrappingKey's words in order.
//                4*(k*N*t*2^basebit*(n+1) + n*(k+1)^2*l*N) + 24 bytes after the text: 113.7 MB
//                for tfhe_lib_128 (of which 20.7 MB are the v = 0 rows).
//                The variances v1.1 stores for keys it generates (and that we write by
//                default): sigma_lwe^2 for the key-switching key (lweCreateKeySwitchKey gives
//                every sample alpha_min^2, the trivial v = 0 rows 0) and sigma_glwe^2 for the
//                bootstrapping key (tGswSymEncryptInt: alpha_min^2 in every row).
//   secret keyset (export_tfheGateBootstrappingSecretKeySet_toFile): the cloud keyset, then
//                the LWE key without its block (int32 type id 43, n int32) and the TGSW key
//                without its blocks (int32 type id 169, k*N int32).
//
// Parameters map to our named sets (all_parameter_sets()) by their integer fields: the
// printed doubles are rounded to 8 decimals, and must then be the named set's (alpha_min its
// noise, alpha_max 0.012467) to that precision. Readers check block names and order, every key
// (each exactly once, in any order as the library reads them, no other; lines end in "\n"; the
// spaces before a number are optional), that numbers parse completely, the integer fields against
// the named sets before allocating anything they size, type ids, binary key coefficients and
// truncation, and throw FormatError naming the problem (SystemError when a stream or file
// fails). read_* consume one object from a stream (read_gate_ciphertexts: up to its end);
// load_* read a whole file and reject trailing bytes; messages from load_*/save_* name the path.
//
// What was checked against what: params.txt, lwe.key, tgsw.key and the ciphertext files of
// ../shared/testdata/tfhe-lib-v1.1 were written by the library; we read them and write them
// back byte for byte (tests/core/test_tfhe_lib_format.cpp). No keyset written by the library
// is among those vectors (a cloud keyset is 113.7 MB), so the keyset layout above is taken
// from the library's source (src/libtfhe: tfhe_io.cpp, lwe-keyswitch-functions.cpp,
// tgsw-functions.cpp, tlwe-functions.cpp of tfhe/tfhe at commit a65271bc) and checked in two
// ways: its text blocks come from the same writer as the library-written files', and a cloud
// key made from the library's lwe.key and tgsw.key, written in this layout and read back,
// evaluates every library gate on the library's ciphertexts to the expected bits
// (tests/cpu/test_tfhe_lib_interop.cpp). Reading a keyset file and writing it again gives the
// same bytes (the variances and any non-zero v = 0 rows are carried in CloudKeySetFile).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <span>
#include <string>
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
// LWE_KEYSWITCH_KEY_TYPE_UID and LWE_BOOTSTRAPPING_KEY_TYPE_UID (the keysets).
inline constexpr std::int32_t keyswitch_key_type_id = 200;
inline constexpr std::int32_t bootstrapping_key_type_id = 201;
// alpha_max of every parameter set the library makes (new_default_gate_bootstrapping_parameters).
inline constexpr double library_alpha_max = 0.012467;

// Bytes of one gate-bootstrapping ciphertext of dimension n: type id, a, b, variance.
constexpr std::size_t ciphertext_bytes(std::uint32_t lwe_dimension) {
  return 4 + 4 * (std::size_t{lwe_dimension} + 1) + 8;
}

// Samples of the library's key-switching key: k*N * t * 2^ks_base_log (the v = 0 rows
// included; ours has k*N * t * (2^ks_base_log - 1)).
std::uint64_t keyswitch_key_samples(const Parameters& params);
// Bytes of a cloud keyset file for `params` (text blocks included): 113,672,736 for
// tfhe_lib_128. A secret keyset file is 8 + 4*(n + k*N) bytes longer.
std::uint64_t cloud_keyset_bytes(const Parameters& params);

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

// A TFHE library cloud keyset as read: our CloudKey (parameters: the matching named set) and
// what the library's file holds beyond it, so that writing it back gives the same bytes.
struct CloudKeySetFile {
  CloudKey key;
  double ks_variance = 0;  // the key-switching key's variance double
  double bk_variance = 0;  // the bootstrapping key's variance double
  // The key-switching key's rows for digit v = 0, k*N*t samples of n+1 words in (i, j) order,
  // which key switching never uses. Empty means all zero (what v1.1 writes); the reader leaves
  // it empty when every word is 0.
  std::vector<Torus32> ks_digit0;
};

// A TFHE library secret keyset as read: the secret keys and the cloud keyset they carry.
struct SecretKeySetFile {
  SecretKey secret;
  CloudKeySetFile cloud;
};

// The variances v1.1 stores in a keyset it generates for `params`: sigma_lwe^2 (key switching)
// and sigma_glwe^2 (bootstrapping). `cloud_keyset_file(key)` is `key` with them and zero v = 0
// rows: what write_cloud_keyset(out, key) writes.
double library_ks_variance(const Parameters& params);
double library_bk_variance(const Parameters& params);
CloudKeySetFile cloud_keyset_file(CloudKey key);

// Empty when `cloud` was made from `secret`; otherwise why not. Checks the parameter sets, then
// decrypts every key-switching sample and coefficient 0 of every bootstrapping-key row and
// compares it with what it must encrypt, within 2^-(basebit+2) or 2^-(Bgbit+2) of the torus:
// a quarter of the step of the first key-switching or gadget level. The noise of a real key is
// far smaller; a key made from other secret keys misses with overwhelming probability.
// About n*(k+1)*l*k*N + k*N*t*2^basebit*n operations: well under a second. InvalidArgument
// when the secret key's parameters do not validate.
std::string key_pair_problem(const SecretKey& secret, const CloudKey& cloud);

// What a file in one of the library's formats holds, judged from its opening bytes (and for a
// keyset, from its text blocks and size): FileKind::Unknown for anything else. Does not
// validate the rest; load_* do. SystemError when the file cannot be read.
enum class FileKind {
  Unknown,
  ParameterSet,
  LweKey,
  TgswKey,
  GateCiphertexts,
  CloudKeySet,
  SecretKeySet,
};
// "parameter set", "LWE key", "TGSW key", "gate ciphertexts", "cloud keyset", "secret keyset",
// "unknown".
std::string file_kind_name(FileKind kind);
FileKind identify_file(const std::filesystem::path& path);

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

// Cloud keyset (export_tfheGateBootstrappingCloudKeySet_toFile). The reader matches the four
// parameter blocks to a named set, requires the LWEKSPARAMS block to agree with it (n = k*N,
// t, basebit), then reads both keys (sizes from the named set), checking type ids, truncation
// and that both variance doubles are finite and non-negative. The first writer writes `key`
// as v1.1 would (cloud_keyset_file(key)); the second reproduces a file as read
// (InvalidArgument for a negative or non-finite variance or a ks_digit0 of the wrong size).
CloudKeySetFile read_cloud_keyset(std::istream& in);
void write_cloud_keyset(std::ostream& out, const CloudKey& key);
void write_cloud_keyset(std::ostream& out, const CloudKeySetFile& file);

// Secret keyset (export_tfheGateBootstrappingSecretKeySet_toFile): the cloud keyset as above,
// then the binary LWE and TGSW keys; the reader also requires the cloud key to belong to the
// secret keys (key_pair_problem). The writers throw InvalidArgument when the keys differ in
// parameter set or the cloud key was not made from the secret key.
SecretKeySetFile read_secret_keyset(std::istream& in);
void write_secret_keyset(std::ostream& out, const SecretKey& secret, const CloudKey& cloud);
void write_secret_keyset(std::ostream& out, const SecretKeySetFile& file);

// ---- files --------------------------------------------------------------------------------
// As the native format's (serialization.hpp): each save_* replaces its file whole or not at
// all; the secret keys' files (save_lwe_key, save_tgsw_key, save_secret_keyset) are made with
// mode 0600, the others with 0666 less the umask.

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

CloudKeySetFile load_cloud_keyset(const std::filesystem::path& path);
void save_cloud_keyset(const std::filesystem::path& path, const CloudKey& key);
void save_cloud_keyset(const std::filesystem::path& path, const CloudKeySetFile& file);
SecretKeySetFile load_secret_keyset(const std::filesystem::path& path);
void save_secret_keyset(const std::filesystem::path& path, const SecretKey& secret,
                        const CloudKey& cloud);
void save_secret_keyset(const std::filesystem::path& path, const SecretKeySetFile& file);

}  // namespace torusgate::tfhe_lib
