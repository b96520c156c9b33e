// The native, versioned binary file format (DESIGN.md section 9): parameters, secret keys,
// cloud keys and ciphertext batches, to streams and files, validated in full on read.
//
// Layout of format versions 1 and 2 (version 3 adds a u64 key id after the parameters record;
// see native_format_version below). Every integer is little-endian and written byte by byte
// (never a host struct); f64 is the IEEE-754 binary64 bit pattern as a u64.
//
//   offset  size  field
//   0       8     magic "TGATEBIN"
//   8       4     u32 format version (1 or 2; version 2 only adds the cloud key's form)
//   12      4     u32 object type (ObjectType below)
//   16      8     u64 parameter fingerprint (Parameters::fingerprint() of the record below)
//   24      ...   parameters record:
//                   u32 name length L (1..255), then L bytes of printable ASCII (the name)
//                   u32 lwe_dimension, glwe_dimension, polynomial_size, bk_base_log,
//                       bk_level_count, ks_base_log, ks_level_count (in this order)
//                   f64 lwe_noise_stddev, f64 glwe_noise_stddev
//                   u32 insecure (0 or 1)
//   ...     ...   object body (nothing for Parameters):
//                   SecretKey:       u64 count (= n),   n   x i32 LWE key coefficients;
//                                    u64 count (= k*N), k*N x i32 GLWE key coefficients,
//                                    polynomial-major; every coefficient 0 or 1
//                   CloudKey:        version 2 only: u32 the bootstrapping key's form (unroll:
//                                    1 standard, 2 to 4 unrolled); version 1: the form is 1;
//                                    u64 count (= ggsw_count*ggsw_size), u32 bootstrapping-key words;
//                                    u64 count (= KeySwitchingKey::size), u32 key-switching-key
//                                    words (both in the in-memory order of keys.hpp)
//                   CiphertextBatch: u64 sample count, u64 words per sample (= n+1),
//                                    count*(n+1) x u32 (mask a_0..a_{n-1}, then body b)
//                   IntegerArray:    u32 width w (1..128 bits per integer), u32 signedness
//                                    (0 unsigned, 1 signed two's complement), u64 rows,
//                                    u64 cols (each >= 1), then the CiphertextBatch body with
//                                    count = w*rows*cols: bit j of element e (row-major) is
//                                    sample j*rows*cols + e (bit-coalesced, bit 0 the lowest)
//   end-8   8     u64 checksum: 64-bit FNV-1a of every byte before it
//
// Readers check, in order: magic, version, object type, the parameters record (validate()
// and the fingerprint), every count against what the parameters imply (before allocating
// anything it sizes; for an integer array also the width, signedness and shape, and the
// sample count against them), the data (truncation), the checksum, then the values (binary
// key coefficients). Every failure throws FormatError naming the problem; load_* also reject
// bytes after the object. A stream read (read_*) consumes exactly one object.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <string>
#include <string_view>

#include "torusgate/core/keys.hpp"
#include "torusgate/core/lwe.hpp"
#include "torusgate/core/params.hpp"

namespace torusgate {

// What a native file holds (the u32 at offset 12).
enum class ObjectType : std::uint32_t {
  Parameters = 1,
  SecretKey = 2,
  CloudKey = 3,
  CiphertextBatch = 4,
  IntegerArray = 5,
};

// The format versions this build reads: oldest_native_format_version to native_format_version.
// Writers use the oldest version that holds the object (so that older builds read it):
// version 3 for a secret key, and for a cloud key, a ciphertext batch or an integer array that
// names its secret key (key id not 0); version 2 for a cloud key with an unrolled
// bootstrapping key and no key id; version 1 for the rest. Version 3 adds the key id (u64, not
// 0) after the parameters record; version 2 the cloud key's form (u32 unroll) before its
// words.
inline constexpr std::uint32_t native_format_version = 3;
inline constexpr std::uint32_t oldest_native_format_version = 1;

// "parameters", "secret key", "cloud key", "ciphertext batch", "integer array" (or
// "unknown object type 9").
std::string object_type_name(ObjectType type);

// An encrypted integer array as stored: rows x cols integers of `width` bits (row-major),
// bit-coalesced like circuits::IntArray: bit j of element e is samples[j * lanes() + e].
struct IntegerArrayCiphertext {
  std::uint32_t width = 0;  // bits per integer, 1..max_integer_width
  bool is_signed = false;   // two's complement when set
  std::uint64_t rows = 0;
  std::uint64_t cols = 0;
  LweBatch samples;  // width * rows * cols samples
  // The id of the secret key the samples are under (SecretKey::key_id), 0 when not known
  // (files of format version 1 and 2, ciphertexts imported from the TFHE library).
  std::uint64_t key_id = 0;

  std::uint64_t lanes() const { return rows * cols; }
  // "8-bit signed, 2 x 3".
  std::string describe() const;
};

// The widest integer an IntegerArray file holds (a full 64 x 64 -> 128-bit product).
inline constexpr std::uint32_t max_integer_width = 128;

// Writers validate their input (InvalidArgument: invalid parameters, a name that is not
// 1..255 printable ASCII characters, a batch whose dimension is not the parameters' n) and
// throw SystemError when the stream fails.
void write_parameters(std::ostream& out, const Parameters& params);
void write_secret_key(std::ostream& out, const SecretKey& key);
void write_cloud_key(std::ostream& out, const CloudKey& key);
// `batch` must hold samples of dimension params.lwe_dimension. key_id: the id of the secret
// key the samples are under (SecretKey::key_id), which a reader can check against the key that
// will decrypt them; 0 when not known (the file is then version 1, as before).
void write_ciphertexts(std::ostream& out, const Parameters& params, const LweBatch& batch,
                       std::uint64_t key_id = 0);
// InvalidArgument also for a width outside 1..max_integer_width, an empty shape, or a sample
// count other than width * rows * cols.
void write_integer_array(std::ostream& out, const Parameters& params,
                         const IntegerArrayCiphertext& array);

// Readers consume one object from `in` and throw FormatError when the bytes are not a valid
// object of the requested type (SystemError when the stream itself fails).
Parameters read_parameters(std::istream& in);
SecretKey read_secret_key(std::istream& in);
CloudKey read_cloud_key(std::istream& in);
// Throws FormatError naming both parameter sets when the file's parameters are not exactly
// `expected` (every field, name included); InvalidArgument when `expected` itself does not
// validate.
// read_ciphertexts and load_ciphertexts store the file's key id (0: none) in *key_id when
// key_id is not null.
LweBatch read_ciphertexts(std::istream& in, const Parameters& expected,
                          std::uint64_t* key_id = nullptr);
IntegerArrayCiphertext read_integer_array(std::istream& in, const Parameters& expected);

// Files. save_* write a new file beside `path` and rename it over `path` when it is complete:
// a failure (a bad argument, a full disk) leaves an existing file as it was and no partial
// one (a symbolic link's target is replaced; a device or FIFO is written directly). The
// secret key's file is made with mode 0600 (readable by its owner only), every other file with
// 0666 less the umask. load_* read the whole file and reject trailing bytes. SystemError
// (naming the path and the system's reason) when the file cannot be opened, written or read;
// FormatError messages from load_* also name the path.
void save_parameters(const std::filesystem::path& path, const Parameters& params);
void save_secret_key(const std::filesystem::path& path, const SecretKey& key);
void save_cloud_key(const std::filesystem::path& path, const CloudKey& key);
void save_ciphertexts(const std::filesystem::path& path, const Parameters& params,
                      const LweBatch& batch, std::uint64_t key_id = 0);
void save_integer_array(const std::filesystem::path& path, const Parameters& params,
                        const IntegerArrayCiphertext& array);
Parameters load_parameters(const std::filesystem::path& path);
SecretKey load_secret_key(const std::filesystem::path& path);
CloudKey load_cloud_key(const std::filesystem::path& path);
LweBatch load_ciphertexts(const std::filesystem::path& path, const Parameters& expected,
                          std::uint64_t* key_id = nullptr);
// The batch at `path` for decryption with `key`: load_ciphertexts with key's parameters, and
// InvalidArgument naming both ids when the file names a secret key other than `key` (its
// samples would decrypt to random bits); a file that names none is taken as it is.
LweBatch load_ciphertexts_for(const std::filesystem::path& path, const SecretKey& key);
IntegerArrayCiphertext load_integer_array(const std::filesystem::path& path,
                                          const Parameters& expected);

// Reads the first 16 bytes (magic, version, type), checks them, and seeks `in` back to where
// it was. FormatError for a bad header; SystemError if `in` cannot seek back.
ObjectType peek_object_type(std::istream& in);

// The header of a native file: its object type and parameter set.
struct FileHeader {
  ObjectType type = ObjectType::Parameters;
  std::uint32_t version = 0;  // the file's format version
  Parameters params;
  // The secret key's id (format version 3: a secret key's own, the one a cloud key was made
  // from, the one a ciphertext batch or an integer array is under); 0 when the file does not
  // name one.
  std::uint64_t key_id = 0;
};
// Reads and checks the header of the file at `path` (magic, version, object type, parameters
// record and fingerprint) without reading the body: a cheap look at what a file holds before
// loading it. Throws like load_* (FormatError naming the path for a bad header).
FileHeader read_file_header(const std::filesystem::path& path);

// Loads and fully validates the file at `path` and returns one line for humans: type,
// version, parameter set, sizes, e.g. "cloud key, format version 1, parameter set
// 'tfhe_lib_128' (n=630 k=1 N=1024 bk=2^7x3 ks=2^2x8, fingerprint 0x...), bootstrapping key
// 7741440 words, key-switching key 15507456 words, 92995696 bytes"; an integer array reads
// "integer array, ..., 8-bit signed, 2 x 3 (6 integers), 48 samples of 631 words, ...".
// Throws like load_*.
std::string describe_file(const std::filesystem::path& path);

}  // namespace torusgate
