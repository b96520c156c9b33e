// The native binary file format: byte-exact little-endian writers and fully validating
// readers for parameters, keys, ciphertext batches and encrypted integer arrays (layout in
// serialization.hpp).
#include "torusgate/core/serialization.hpp"

#include "byte_writer.hpp"
#include "file_io.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <fstream>
#include <istream>
#include <optional>
#include <ostream>
#include <system_error>
#include <utility>
#include <vector>

#include "torusgate/core/error.hpp"
#include "torusgate/core/glwe.hpp"

namespace torusgate {
namespace {

namespace fs = std::filesystem;

constexpr std::array<unsigned char, 8> file_magic = {'T', 'G', 'A', 'T', 'E', 'B', 'I', 'N'};
constexpr std::uint32_t max_name_length = 255;
// Far beyond any real batch; keeps count * (n+1) * 4 well inside 64 bits.
constexpr std::uint64_t max_sample_count = std::uint64_t{1} << 40;
// Bytes moved per stream call.
constexpr std::size_t io_chunk_bytes = std::size_t{1} << 16;
// Words a payload grows by when the stream cannot tell how many bytes it still holds.
constexpr std::uint64_t growth_chunk_words = std::uint64_t{1} << 20;

constexpr std::uint64_t fnv_offset_basis = 0xcbf29ce484222325ULL;
constexpr std::uint64_t fnv_prime = 0x100000001b3ULL;

void fnv1a(std::uint64_t& h, const unsigned char* data, std::size_t size) {
  for (std::size_t i = 0; i < size; ++i) {
    h ^= data[i];
    h *= fnv_prime;
  }
}

std::string hex64(std::uint64_t v) { return "0x" + hex_digits(v); }

// "parameters", "a secret key", "a cloud key", "a ciphertext batch", "an integer array", for
// messages.
std::string with_article(ObjectType type) {
  if (type == ObjectType::Parameters) return object_type_name(type);
  if (type == ObjectType::IntegerArray) return "an " + object_type_name(type);
  return "a " + object_type_name(type);
}

constexpr std::uint32_t last_object_type = static_cast<std::uint32_t>(ObjectType::IntegerArray);
bool known_type(std::uint32_t t) { return t >= 1 && t <= last_object_type; }

// "8-bit signed" (or "0-bit unsigned" for a bad width, in messages).
std::string integer_type_name(std::uint64_t width, bool is_signed) {
  return std::to_string(width) + "-bit " + (is_signed ? "signed" : "unsigned");
}

// width * rows * cols when the width is 1..max_integer_width, the shape not empty and the
// product at most max_sample_count (`problem` left empty); otherwise 0, and `problem` says
// what is wrong.
std::uint64_t integer_array_samples(std::uint64_t width, std::uint64_t rows, std::uint64_t cols,
                                    std::string& problem) {
  problem.clear();
  if (width < 1 || width > max_integer_width) {
    problem = "integer width is " + std::to_string(width) + " but expected 1 to " +
              std::to_string(max_integer_width);
  } else if (rows < 1 || cols < 1) {
    problem = "shape is " + std::to_string(rows) + " x " + std::to_string(cols) +
              " but rows and columns must be at least 1";
  } else if (rows > max_sample_count / cols || rows * cols > max_sample_count / width) {
    problem = "shape " + std::to_string(rows) + " x " + std::to_string(cols) + " of " +
              std::to_string(width) + "-bit integers needs more than 2^40 = " +
              std::to_string(max_sample_count) + " samples";
  } else {
    return width * rows * cols;
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Writing

// A ByteWriter that hashes everything it writes and appends the checksum in finish().
class Writer {
 public:
  Writer(std::ostream& out, std::string context)
      : out_(out, std::move(context),
             [this](const unsigned char* data, std::size_t size) { fnv1a(hash_, data, size); }) {}

  void bytes(const unsigned char* data, std::size_t size) { out_.bytes(data, size); }
  void u32(std::uint32_t v) { out_.u32(v); }
  void u64(std::uint64_t v) { out_.u64(v); }
  void f64(double v) { out_.f64(v); }
  void u32_array(std::span<const std::uint32_t> words) {
    for (std::uint32_t w : words) out_.u32(w);
  }
  void i32_array(std::span<const std::int32_t> values) {
    for (std::int32_t v : values) out_.i32(v);
  }

  // Writes the checksum of everything so far and flushes; throws SystemError on failure.
  void finish() {
    out_.flush();
    unsigned char checksum[8];
    for (int b = 0; b < 8; ++b) checksum[b] = static_cast<unsigned char>(hash_ >> (8 * b));
    out_.write_unobserved(checksum, sizeof checksum);
    out_.finish();
  }

 private:
  std::uint64_t hash_ = fnv_offset_basis;  // declared first: the observer uses it
  detail::ByteWriter out_;
};

// Throws InvalidArgument unless `params` can be written (and so read back).
void check_writable(const Parameters& params, const std::string& context) {
  params.validate();
  EXPECTS(params.name.size() <= max_name_length,
          context + ": parameter set name has " + std::to_string(params.name.size()) +
              " characters but expected at most " + std::to_string(max_name_length));
  for (std::size_t i = 0; i < params.name.size(); ++i) {
    const auto c = static_cast<unsigned char>(params.name[i]);
    EXPECTS(c >= 0x20 && c <= 0x7e, context + ": parameter set name has byte " +
                                        std::to_string(c) + " at position " + std::to_string(i) +
                                        " but expected printable ASCII");
  }
}

// The `expected` parameters a reader compares the file's against are the caller's argument:
// invalid ones are an InvalidArgument, not a problem of the file.
void check_expected_valid(const Parameters& expected, const std::string& context) {
  try {
    expected.validate();
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(context + ": the expected parameters are invalid: " + e.what());
  }
}

void check_batch(const Parameters& params, const LweBatch& batch, const std::string& context) {
  EXPECTS(batch.lwe_dimension() == params.lwe_dimension,
          context + ": batch has lwe_dimension=" + std::to_string(batch.lwe_dimension()) +
              " but parameter set '" + params.name + "' has " +
              std::to_string(params.lwe_dimension));
}

void check_integer_array(const Parameters& params, const IntegerArrayCiphertext& array,
                         const std::string& context) {
  check_batch(params, array.samples, context);
  std::string problem;
  const std::uint64_t samples =
      integer_array_samples(array.width, array.rows, array.cols, problem);
  EXPECTS(problem.empty(), context + ": " + problem);
  EXPECTS(array.samples.count() == samples,
          context + ": the array has " + std::to_string(array.samples.count()) +
              " samples but " + array.describe() + " needs " + std::to_string(samples));
}

// Every object is written in version 1 (readable by older builds) unless it needs a later
// version's fields: a key id (version 3, written here after the parameters) or a cloud key's
// unrolled form (version 2).
void write_header(Writer& w, ObjectType type, const Parameters& p, std::uint64_t key_id = 0,
                  std::uint32_t version = oldest_native_format_version) {
  if (key_id != 0) version = 3;
  w.bytes(file_magic.data(), file_magic.size());
  w.u32(version);
  w.u32(static_cast<std::uint32_t>(type));
  w.u64(p.fingerprint());
  w.u32(static_cast<std::uint32_t>(p.name.size()));
  w.bytes(reinterpret_cast<const unsigned char*>(p.name.data()), p.name.size());
  for (std::uint32_t v : {p.lwe_dimension, p.glwe_dimension, p.polynomial_size, p.bk_base_log,
                          p.bk_level_count, p.ks_base_log, p.ks_level_count}) {
    w.u32(v);
  }
  w.f64(p.lwe_noise_stddev);
  w.f64(p.glwe_noise_stddev);
  w.u32(p.insecure ? 1u : 0u);
  if (version >= 3) w.u64(key_id);
}

void write_parameters_impl(std::ostream& out, const Parameters& params, const std::string& ctx) {
  check_writable(params, ctx);
  Writer w(out, ctx);
  write_header(w, ObjectType::Parameters, params);
  w.finish();
}

void write_secret_key_impl(std::ostream& out, const SecretKey& key, const std::string& ctx) {
  const Parameters& p = key.parameters();
  check_writable(p, ctx);
  Writer w(out, ctx);
  write_header(w, ObjectType::SecretKey, p, key.key_id());
  const auto lwe = key.lwe_key().coefficients();
  w.u64(lwe.size());
  w.i32_array(lwe);
  const auto glwe = key.glwe_key().coefficients();
  w.u64(glwe.size());
  w.i32_array(glwe);
  w.finish();
}

void write_cloud_key_impl(std::ostream& out, const CloudKey& key, const std::string& ctx) {
  const Parameters& p = key.parameters();
  check_writable(p, ctx);
  Writer w(out, ctx);
  const std::uint32_t unroll = key.bootstrapping_key().unroll();
  const std::uint64_t key_id = key.key_id();
  write_header(w, ObjectType::CloudKey, p, key_id, unroll == 1 ? 1 : 2);
  if (unroll != 1 || key_id != 0) w.u32(unroll);  // versions 2 and 3
  const auto bk = key.bootstrapping_key().data();
  w.u64(bk.size());
  w.u32_array(bk);
  const auto ksk = key.key_switching_key().data();
  w.u64(ksk.size());
  w.u32_array(ksk);
  w.finish();
}

// The CiphertextBatch body: count, words per sample, the words.
void write_samples(Writer& w, const LweBatch& batch) {
  w.u64(batch.count());
  w.u64(batch.sample_size());
  w.u32_array(batch.data());
}

void write_ciphertexts_impl(std::ostream& out, const Parameters& params, const LweBatch& batch,
                            std::uint64_t key_id, const std::string& ctx) {
  check_writable(params, ctx);
  check_batch(params, batch, ctx);
  Writer w(out, ctx);
  write_header(w, ObjectType::CiphertextBatch, params, key_id);
  write_samples(w, batch);
  w.finish();
}

void write_integer_array_impl(std::ostream& out, const Parameters& params,
                              const IntegerArrayCiphertext& array, const std::string& ctx) {
  check_writable(params, ctx);
  check_integer_array(params, array, ctx);
  Writer w(out, ctx);
  write_header(w, ObjectType::IntegerArray, params, array.key_id);
  w.u32(array.width);
  w.u32(array.is_signed ? 1u : 0u);
  w.u64(array.rows);
  w.u64(array.cols);
  write_samples(w, array.samples);
  w.finish();
}

// ---------------------------------------------------------------------------------------------
// Reading

// Reads bytes, hashes them, counts them, and turns every short read into a FormatError that
// names what was being read and how many bytes it needed.
class Reader {
 public:
  Reader(std::istream& in, std::string context) : in_(in), context_(std::move(context)) {
    if (in_.fail()) {
      throw SystemError(context_ + ": the input stream is already in a failed state");
    }
    // Bytes left in the stream, when it can seek (files, string streams); unknown otherwise.
    if (auto* sb = in_.rdbuf()) {
      const auto bad = std::streampos(std::streamoff(-1));
      const auto here = sb->pubseekoff(0, std::ios_base::cur, std::ios_base::in);
      if (here != bad) {
        const auto end = sb->pubseekoff(0, std::ios_base::end, std::ios_base::in);
        if (sb->pubseekpos(here, std::ios_base::in) != here) {
          throw SystemError(context_ + ": the input stream cannot seek back after measuring it");
        }
        if (end != bad && end >= here) available_ = static_cast<std::uint64_t>(end - here);
      }
    }
  }

  [[noreturn]] void fail(const std::string& problem) const {
    throw FormatError(context_ + ": " + problem);
  }

  std::uint64_t offset() const { return offset_; }
  // The file's format version, once read_prefix has read it (0 before).
  std::uint32_t version = 0;
  // The key id of a version 3 header, once read_header has read it (0: none).
  std::uint64_t key_id = 0;
  std::optional<std::uint64_t> remaining() const {
    if (!available_) return std::nullopt;
    return *available_ - std::min(*available_, offset_);
  }

  void bytes(unsigned char* data, std::size_t size, const std::string& what) {
    const std::uint64_t start = offset_;
    const std::size_t got = bytes_up_to(data, size);
    if (got < size) truncated(what, size, start);
  }
  // Up to `size` bytes; fewer only at the end of the input. Returns how many were read.
  std::size_t bytes_up_to(unsigned char* data, std::size_t size) { return read_raw(data, size); }

  // Fails: `what` needed `need` bytes from offset `start` (`left`: the bytes the input still
  // held, when known before reading).
  [[noreturn]] void truncated(const std::string& what, std::uint64_t need, std::uint64_t start,
                              std::optional<std::uint64_t> left = std::nullopt) const {
    const std::uint64_t have = left ? *left : offset_ - start;
    if (start == 0 && have == 0) {
      fail("empty input: 0 bytes, but a torusgate file starts with a 24-byte header");
    }
    fail("truncated: " + what + " needs " + std::to_string(need) + " bytes at offset " +
         std::to_string(start) + " but the input ends after " + std::to_string(have) +
         " of them (at offset " + std::to_string(start + have) + ")");
  }
  std::uint32_t u32(const std::string& what) {
    std::array<unsigned char, 4> b{};
    bytes(b.data(), b.size(), what);
    return std::uint32_t{b[0]} | std::uint32_t{b[1]} << 8 | std::uint32_t{b[2]} << 16 |
           std::uint32_t{b[3]} << 24;
  }
  std::uint64_t u64(const std::string& what) {
    std::array<unsigned char, 8> b{};
    bytes(b.data(), b.size(), what);
    return decode_u64(b.data());
  }
  double f64(const std::string& what) { return std::bit_cast<double>(u64(what)); }

  // `count` words of one section (count already checked against the parameters). When the
  // stream's size is known the section is checked against it before anything is allocated;
  // otherwise the vector grows chunk by chunk as bytes arrive, so a hostile count cannot make
  // us hold much more than twice what the stream really contains.
  std::vector<std::uint32_t> u32_array(std::uint64_t count, const std::string& what) {
    const std::uint64_t start = offset_;
    const std::uint64_t need = count * 4;
    const auto left = remaining();
    if (left && need > *left) truncated(what, need, start, *left);
    std::vector<std::uint32_t> out;
    const std::uint64_t step = left ? count : growth_chunk_words;
    std::array<unsigned char, io_chunk_bytes> buffer;
    while (out.size() < count) {
      const std::size_t old = out.size();
      out.resize(old + static_cast<std::size_t>(std::min<std::uint64_t>(step, count - old)));
      for (std::size_t i = old; i < out.size();) {
        const std::size_t words = std::min(out.size() - i, buffer.size() / 4);
        const std::size_t got = read_raw(buffer.data(), words * 4);
        if (got < words * 4) truncated(what, need, start);
        for (std::size_t j = 0; j < words; ++j) {
          const unsigned char* b = buffer.data() + 4 * j;
          out[i + j] = std::uint32_t{b[0]} | std::uint32_t{b[1]} << 8 |
                       std::uint32_t{b[2]} << 16 | std::uint32_t{b[3]} << 24;
        }
        i += words;
      }
    }
    return out;
  }

  // Reads the trailing checksum and compares it with the hash of every byte before it.
  void verify_checksum() {
    const std::uint64_t computed = hash_;
    std::array<unsigned char, 8> b{};
    bytes(b.data(), b.size(), "the checksum");
    const std::uint64_t stored = decode_u64(b.data());
    if (stored != computed) {
      fail("checksum mismatch: the file stores " + hex64(stored) + " but its first " +
           std::to_string(offset_ - 8) + " bytes hash to " + hex64(computed) +
           " (the file is corrupted)");
    }
  }

 private:
  static std::uint64_t decode_u64(const unsigned char* b) {
    std::uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | b[i];
    return v;
  }

  // Up to `size` bytes; fewer only at the end of the stream.
  std::size_t read_raw(unsigned char* data, std::size_t size) {
    in_.read(reinterpret_cast<char*>(data), static_cast<std::streamsize>(size));
    const auto got = static_cast<std::size_t>(in_.gcount());
    if (in_.bad()) {
      throw SystemError(context_ + ": reading failed at offset " +
                        std::to_string(offset_ + got));
    }
    fnv1a(hash_, data, got);
    offset_ += got;
    return got;
  }

  std::istream& in_;
  std::string context_;
  std::optional<std::uint64_t> available_;
  std::uint64_t offset_ = 0;
  std::uint64_t hash_ = fnv_offset_basis;
};

// Magic, version and object type: the first 16 bytes.
ObjectType read_prefix(Reader& r, std::optional<ObjectType> want) {
  std::array<unsigned char, 8> magic{};
  const std::size_t got = r.bytes_up_to(magic.data(), magic.size());
  // A short input that starts like a torusgate file is truncated; anything else is foreign.
  if (got > 0 && !std::equal(magic.begin(), magic.begin() + got, file_magic.begin())) {
    std::string seen;
    for (std::size_t i = 0; i < got; ++i) {
      static constexpr char digits[] = "0123456789abcdef";
      seen += std::string(seen.empty() ? "" : " ") + digits[magic[i] >> 4] +
              digits[magic[i] & 0xf];
    }
    r.fail("not a torusgate file: bad magic, it starts with bytes " + seen +
           " but expected \"TGATEBIN\"");
  }
  if (got < magic.size()) r.truncated("the magic", magic.size(), 0);
  const std::uint32_t version = r.u32("the format version");
  if (version < oldest_native_format_version || version > native_format_version) {
    r.fail("file format version " + std::to_string(version) + " but this build reads versions " +
           std::to_string(oldest_native_format_version) + " to " +
           std::to_string(native_format_version));
  }
  r.version = version;
  const std::uint32_t raw_type = r.u32("the object type");
  if (!known_type(raw_type)) {
    r.fail("unknown object type " + std::to_string(raw_type) + " (expected 1 to " +
           std::to_string(last_object_type) + ")");
  }
  const auto type = static_cast<ObjectType>(raw_type);
  if (want && type != *want) {
    r.fail("expected " + with_article(*want) + " but the file holds " + with_article(type));
  }
  return type;
}

// The whole header: prefix, fingerprint and the embedded parameters, all checked. The object
// type goes to *type_out when given.
Parameters read_header(Reader& r, std::optional<ObjectType> want,
                       ObjectType* type_out = nullptr) {
  const ObjectType type = read_prefix(r, want);
  if (type_out != nullptr) *type_out = type;
  const std::uint64_t fingerprint = r.u64("the parameter fingerprint");
  Parameters p;
  const std::uint32_t name_length = r.u32("the parameter set name length");
  if (name_length == 0 || name_length > max_name_length) {
    r.fail("parameter set name length is " + std::to_string(name_length) + " but expected 1 to " +
           std::to_string(max_name_length));
  }
  std::array<unsigned char, max_name_length> name{};
  r.bytes(name.data(), name_length, "the parameter set name");
  for (std::uint32_t i = 0; i < name_length; ++i) {
    if (name[i] < 0x20 || name[i] > 0x7e) {
      r.fail("parameter set name has byte " + std::to_string(name[i]) + " at position " +
             std::to_string(i) + " but expected printable ASCII");
    }
  }
  p.name.assign(reinterpret_cast<const char*>(name.data()), name_length);
  p.lwe_dimension = r.u32("lwe_dimension");
  p.glwe_dimension = r.u32("glwe_dimension");
  p.polynomial_size = r.u32("polynomial_size");
  p.bk_base_log = r.u32("bk_base_log");
  p.bk_level_count = r.u32("bk_level_count");
  p.ks_base_log = r.u32("ks_base_log");
  p.ks_level_count = r.u32("ks_level_count");
  p.lwe_noise_stddev = r.f64("lwe_noise_stddev");
  p.glwe_noise_stddev = r.f64("glwe_noise_stddev");
  const std::uint32_t insecure = r.u32("the insecure flag");
  if (insecure > 1) {
    r.fail("insecure flag is " + std::to_string(insecure) + " but expected 0 or 1");
  }
  p.insecure = insecure == 1;
  try {
    p.validate();
  } catch (const InvalidArgument& e) {
    r.fail(std::string("invalid embedded parameters: ") + e.what());
  }
  if (p.fingerprint() != fingerprint) {
    r.fail("parameter fingerprint mismatch: the header says " + hex64(fingerprint) +
           " but the embedded parameter set '" + p.name + "' has fingerprint " +
           hex64(p.fingerprint()));
  }
  r.key_id = 0;
  // One encoding per object: version 2 only ever holds a cloud key (its unrolled form, no key
  // id); the same object in another version would write back as other bytes.
  if (r.version == 2 && type != ObjectType::CloudKey) {
    const bool has_id = type != ObjectType::Parameters;
    r.fail("format version 2, which only cloud keys use, in a file holding " +
           with_article(type) + " (expected version 1" + (has_id ? " or 3" : "") + ")");
  }
  if (r.version >= 3) {
    if (type == ObjectType::Parameters) {
      r.fail("format version 3, which parameters do not use (it adds a key id), in a file "
             "holding parameters (expected version 1)");
    }
    r.key_id = r.u64("the key id");
    if (r.key_id == 0) r.fail("key id 0 in a version 3 file (a file without one is version 1 or 2)");
  }
  return p;
}

std::uint64_t read_count(Reader& r, const std::string& what, std::uint64_t want,
                         const Parameters& p) {
  const std::uint64_t got = r.u64(what);
  if (got != want) {
    r.fail(what + " is " + std::to_string(got) + " but parameter set '" + p.name + "' needs " +
           std::to_string(want));
  }
  return got;
}

std::vector<std::int32_t> to_signed(const std::vector<std::uint32_t>& words) {
  std::vector<std::int32_t> out(words.size());
  std::transform(words.begin(), words.end(), out.begin(),
                 [](std::uint32_t w) { return static_cast<std::int32_t>(w); });
  return out;
}

Parameters read_parameters_impl(std::istream& in, const std::string& ctx) {
  Reader r(in, ctx);
  Parameters p = read_header(r, ObjectType::Parameters);
  r.verify_checksum();
  return p;
}

SecretKey read_secret_key_impl(std::istream& in, const std::string& ctx) {
  Reader r(in, ctx);
  const Parameters p = read_header(r, ObjectType::SecretKey);
  const auto n = read_count(r, "the LWE key coefficient count", p.lwe_dimension, p);
  const auto lwe = r.u32_array(n, "the LWE key coefficients");
  const auto kn = read_count(r, "the GLWE key coefficient count", p.extracted_lwe_dimension(), p);
  const auto glwe = r.u32_array(kn, "the GLWE key coefficients");
  r.verify_checksum();
  SecretKey key;
  try {
    key = SecretKey(p, LweKey(to_signed(lwe)),
                    GlweKey(p.glwe_dimension, p.polynomial_size, to_signed(glwe)));
  } catch (const InvalidArgument& e) {
    r.fail(std::string("invalid secret key: ") + e.what());
  }
  if (r.key_id != 0 && r.key_id != key.key_id()) {
    r.fail("the header names key id " + key_id_text(r.key_id) + " but the key's coefficients give " +
           key_id_text(key.key_id()));
  }
  return key;
}

CloudKey read_cloud_key_impl(std::istream& in, const std::string& ctx) {
  Reader r(in, ctx);
  const Parameters p = read_header(r, ObjectType::CloudKey);
  const std::uint64_t key_id = r.key_id;
  std::uint32_t unroll = 1;
  if (r.version >= 2) {
    unroll = r.u32("the bootstrapping key form");
    if (unroll < 1 || unroll > max_unroll) {
      r.fail("bootstrapping key form (unroll) " + std::to_string(unroll) +
             " but expected 1 (standard), 2, 3 or 4 (unrolled)");
    }
    // One encoding per key: a standard key without a key id is version 1.
    if (r.version == 2 && unroll == 1) {
      r.fail("bootstrapping key form (unroll) 1 in a version 2 file, which holds unrolled keys "
             "only (a standard key is version 1, or 3 with a key id)");
    }
  }
  const auto bk_words = read_count(r, "the bootstrapping key word count",
                                   BootstrappingKey::ggsw_count(p, unroll) * ggsw_size(p), p);
  auto bk = r.u32_array(bk_words, "the bootstrapping key");
  const auto ksk_words =
      read_count(r, "the key-switching key word count", KeySwitchingKey::size(p), p);
  auto ksk = r.u32_array(ksk_words, "the key-switching key");
  r.verify_checksum();
  try {
    return CloudKey(BootstrappingKey(p, std::move(bk), unroll), KeySwitchingKey(p, std::move(ksk)),
                    key_id);
  } catch (const InvalidArgument& e) {
    r.fail(std::string("invalid cloud key: ") + e.what());
  }
}

// Fails unless the file's parameters `p` are exactly *expected (null: accept any).
void check_expected(const Reader& r, const Parameters& p, const Parameters* expected) {
  if (expected != nullptr && !(p == *expected)) {
    std::string problem = "the ciphertexts are for parameter set '" + p.name +
                          "' but expected parameter set '" + expected->name + "'";
    if (p.name == expected->name) {
      problem += " (same name, different values: fingerprint " + hex64(p.fingerprint()) +
                 " versus " + hex64(expected->fingerprint()) + ")";
    }
    r.fail(problem);
  }
}

// The CiphertextBatch body up to the checksum. `want_count`, when given, is the sample count
// the object needs (`what_for` says why, for the message).
LweBatch read_samples(Reader& r, const Parameters& p, std::optional<std::uint64_t> want_count,
                      const std::string& what_for) {
  const std::uint64_t count = r.u64("the sample count");
  if (want_count && count != *want_count) {
    r.fail("sample count is " + std::to_string(count) + " but " + what_for + " needs " +
           std::to_string(*want_count));
  }
  if (count > max_sample_count) {
    r.fail("sample count is " + std::to_string(count) + " but at most 2^40 = " +
           std::to_string(max_sample_count) + " samples are accepted");
  }
  const std::uint64_t words_per_sample =
      read_count(r, "the words per sample", std::uint64_t{p.lwe_dimension} + 1, p);
  const auto words = r.u32_array(count * words_per_sample, "the block of ciphertext samples");
  LweBatch batch(p.lwe_dimension, static_cast<std::size_t>(count));
  std::copy(words.begin(), words.end(), batch.data().begin());
  return batch;
}

// `expected` null: accept any parameters. The file's parameters go to *params_out if given.
LweBatch read_ciphertexts_impl(std::istream& in, const std::string& ctx,
                               const Parameters* expected, Parameters* params_out,
                               std::uint64_t* key_id) {
  Reader r(in, ctx);
  const Parameters p = read_header(r, ObjectType::CiphertextBatch);
  check_expected(r, p, expected);
  const std::uint64_t id = r.key_id;
  LweBatch batch = read_samples(r, p, std::nullopt, "");
  r.verify_checksum();
  if (params_out != nullptr) *params_out = p;
  if (key_id != nullptr) *key_id = id;
  return batch;
}

IntegerArrayCiphertext read_integer_array_impl(std::istream& in, const std::string& ctx,
                                               const Parameters* expected,
                                               Parameters* params_out) {
  Reader r(in, ctx);
  const Parameters p = read_header(r, ObjectType::IntegerArray);
  check_expected(r, p, expected);
  IntegerArrayCiphertext array;
  array.key_id = r.key_id;
  const std::uint32_t width = r.u32("the integer width");
  const std::uint32_t signedness = r.u32("the signedness flag");
  if (signedness > 1) {
    r.fail("signedness flag is " + std::to_string(signedness) +
           " but expected 0 (unsigned) or 1 (signed)");
  }
  const std::uint64_t rows = r.u64("the row count");
  const std::uint64_t cols = r.u64("the column count");
  std::string problem;
  const std::uint64_t samples = integer_array_samples(width, rows, cols, problem);
  if (!problem.empty()) r.fail(problem);
  array.width = width;
  array.is_signed = signedness == 1;
  array.rows = rows;
  array.cols = cols;
  array.samples = read_samples(r, p, samples, "an array of " + array.describe());
  r.verify_checksum();
  if (params_out != nullptr) *params_out = p;
  return array;
}

// ---------------------------------------------------------------------------------------------
// Files

using detail::open_for_reading;
using detail::quoted;
using detail::save_file;

// Reads one object of `type` from `path` (see detail::load_file).
template <typename ReadFn>
auto load_file(const fs::path& path, const std::string& fn, ObjectType type, ReadFn&& read) {
  return detail::load_file(path, fn, with_article(type), std::forward<ReadFn>(read));
}

std::string describe_parameters(const Parameters& p) {
  return "parameter set '" + p.name + "' (n=" + std::to_string(p.lwe_dimension) +
         " k=" + std::to_string(p.glwe_dimension) + " N=" + std::to_string(p.polynomial_size) +
         " bk=2^" + std::to_string(p.bk_base_log) + "x" + std::to_string(p.bk_level_count) +
         " ks=2^" + std::to_string(p.ks_base_log) + "x" + std::to_string(p.ks_level_count) +
         (p.insecure ? " INSECURE" : "") + ", fingerprint " + hex64(p.fingerprint()) + ")";
}

}  // namespace

std::string IntegerArrayCiphertext::describe() const {
  return integer_type_name(width, is_signed) + ", " + std::to_string(rows) + " x " +
         std::to_string(cols);
}

std::string object_type_name(ObjectType type) {
  switch (type) {
    case ObjectType::Parameters: return "parameters";
    case ObjectType::SecretKey: return "secret key";
    case ObjectType::CloudKey: return "cloud key";
    case ObjectType::CiphertextBatch: return "ciphertext batch";
    case ObjectType::IntegerArray: return "integer array";
  }
  return "unknown object type " + std::to_string(static_cast<std::uint32_t>(type));
}

void write_parameters(std::ostream& out, const Parameters& params) {
  write_parameters_impl(out, params, "write_parameters");
}
void write_secret_key(std::ostream& out, const SecretKey& key) {
  write_secret_key_impl(out, key, "write_secret_key");
}
void write_cloud_key(std::ostream& out, const CloudKey& key) {
  write_cloud_key_impl(out, key, "write_cloud_key");
}
void write_ciphertexts(std::ostream& out, const Parameters& params, const LweBatch& batch,
                       std::uint64_t key_id) {
  write_ciphertexts_impl(out, params, batch, key_id, "write_ciphertexts");
}
void write_integer_array(std::ostream& out, const Parameters& params,
                         const IntegerArrayCiphertext& array) {
  write_integer_array_impl(out, params, array, "write_integer_array");
}

Parameters read_parameters(std::istream& in) { return read_parameters_impl(in, "read_parameters"); }
SecretKey read_secret_key(std::istream& in) { return read_secret_key_impl(in, "read_secret_key"); }
CloudKey read_cloud_key(std::istream& in) { return read_cloud_key_impl(in, "read_cloud_key"); }
LweBatch read_ciphertexts(std::istream& in, const Parameters& expected, std::uint64_t* key_id) {
  check_expected_valid(expected, "read_ciphertexts");
  return read_ciphertexts_impl(in, "read_ciphertexts", &expected, nullptr, key_id);
}
IntegerArrayCiphertext read_integer_array(std::istream& in, const Parameters& expected) {
  check_expected_valid(expected, "read_integer_array");
  return read_integer_array_impl(in, "read_integer_array", &expected, nullptr);
}

// Each save_* validates before opening, and save_file replaces a file whole or not at all, so
// neither a bad argument nor a failed write truncates an existing file.
void save_parameters(const fs::path& path, const Parameters& params) {
  check_writable(params, "save_parameters");
  save_file(path, "save_parameters", [&](std::ostream& out, const std::string& ctx) {
    write_parameters_impl(out, params, ctx);
  });
}
void save_secret_key(const fs::path& path, const SecretKey& key) {
  check_writable(key.parameters(), "save_secret_key");
  save_file(
      path, "save_secret_key",
      [&](std::ostream& out, const std::string& ctx) { write_secret_key_impl(out, key, ctx); },
      detail::FileAccess::Secret);
}
void save_cloud_key(const fs::path& path, const CloudKey& key) {
  check_writable(key.parameters(), "save_cloud_key");
  save_file(path, "save_cloud_key", [&](std::ostream& out, const std::string& ctx) {
    write_cloud_key_impl(out, key, ctx);
  });
}
void save_ciphertexts(const fs::path& path, const Parameters& params, const LweBatch& batch,
                      std::uint64_t key_id) {
  check_writable(params, "save_ciphertexts");
  check_batch(params, batch, "save_ciphertexts");
  save_file(path, "save_ciphertexts", [&](std::ostream& out, const std::string& ctx) {
    write_ciphertexts_impl(out, params, batch, key_id, ctx);
  });
}
void save_integer_array(const fs::path& path, const Parameters& params,
                        const IntegerArrayCiphertext& array) {
  check_writable(params, "save_integer_array");
  check_integer_array(params, array, "save_integer_array");
  save_file(path, "save_integer_array", [&](std::ostream& out, const std::string& ctx) {
    write_integer_array_impl(out, params, array, ctx);
  });
}

Parameters load_parameters(const fs::path& path) {
  return load_file(path, "load_parameters", ObjectType::Parameters, read_parameters_impl);
}
SecretKey load_secret_key(const fs::path& path) {
  return load_file(path, "load_secret_key", ObjectType::SecretKey, read_secret_key_impl);
}
CloudKey load_cloud_key(const fs::path& path) {
  return load_file(path, "load_cloud_key", ObjectType::CloudKey, read_cloud_key_impl);
}
LweBatch load_ciphertexts(const fs::path& path, const Parameters& expected, std::uint64_t* key_id) {
  check_expected_valid(expected, "load_ciphertexts");
  return load_file(path, "load_ciphertexts", ObjectType::CiphertextBatch,
                   [&](std::istream& in, const std::string& ctx) {
                     return read_ciphertexts_impl(in, ctx, &expected, nullptr, key_id);
                   });
}
LweBatch load_ciphertexts_for(const fs::path& path, const SecretKey& key) {
  const std::string fn = "load_ciphertexts_for";
  EXPECTS(key.key_id() != 0, fn + ": the secret key is empty");
  std::uint64_t key_id = 0;
  LweBatch batch = load_file(path, fn, ObjectType::CiphertextBatch,
                             [&](std::istream& in, const std::string& ctx) {
                               return read_ciphertexts_impl(in, ctx, &key.parameters(), nullptr,
                                                            &key_id);
                             });
  EXPECTS(key_id == 0 || key_id == key.key_id(),
          fn + ": " + quoted(path) + " is under key id " + key_id_text(key_id) +
              " but the secret key is key id " + key_id_text(key.key_id()) +
              ": it would decrypt to random bits; decrypt with the key the batch was encrypted "
              "for");
  return batch;
}
IntegerArrayCiphertext load_integer_array(const fs::path& path, const Parameters& expected) {
  check_expected_valid(expected, "load_integer_array");
  return load_file(path, "load_integer_array", ObjectType::IntegerArray,
                   [&](std::istream& in, const std::string& ctx) {
                     return read_integer_array_impl(in, ctx, &expected, nullptr);
                   });
}

ObjectType peek_object_type(std::istream& in) {
  const std::string ctx = "peek_object_type";
  if (in.fail()) throw SystemError(ctx + ": the input stream is already in a failed state");
  auto* sb = in.rdbuf();
  const auto bad = std::streampos(std::streamoff(-1));
  const auto start = sb != nullptr ? sb->pubseekoff(0, std::ios_base::cur, std::ios_base::in) : bad;
  if (start == bad) {
    throw SystemError(ctx + ": the stream cannot seek, so the header could not be put back");
  }
  Reader r(in, ctx);
  const ObjectType type = read_prefix(r, std::nullopt);
  if (sb->pubseekpos(start, std::ios_base::in) != start) {
    throw SystemError(ctx + ": the stream could not seek back to where it was");
  }
  return type;
}

FileHeader read_file_header(const fs::path& path) {
  const std::string fn = "read_file_header";
  std::ifstream in = open_for_reading(path, fn);
  Reader r(in, fn + ": " + quoted(path));
  FileHeader header;
  header.params = read_header(r, std::nullopt, &header.type);
  header.version = r.version;
  header.key_id = r.key_id;
  return header;
}

std::string describe_file(const fs::path& path) {
  const std::string fn = "describe_file";
  ObjectType type;
  {
    std::ifstream in = open_for_reading(path, fn);
    try {
      type = peek_object_type(in);
    } catch (const FormatError& e) {
      throw FormatError(fn + ": " + quoted(path) + ": " + e.what());
    }
  }
  Parameters p;
  std::string details;
  switch (type) {
    case ObjectType::Parameters:
      p = load_file(path, fn, type, read_parameters_impl);
      break;
    case ObjectType::SecretKey: {
      const SecretKey key = load_file(path, fn, type, read_secret_key_impl);
      p = key.parameters();
      details = ", key id " + key_id_text(key.key_id()) + ", LWE key " +
                std::to_string(key.lwe_key().coefficients().size()) +
                " coefficients, GLWE key " +
                std::to_string(key.glwe_key().coefficients().size()) + " coefficients";
      break;
    }
    case ObjectType::CloudKey: {
      const CloudKey key = load_file(path, fn, type, read_cloud_key_impl);
      p = key.parameters();
      details = ", made from key id " + key_id_text(key.key_id()) +
                std::string(key.bootstrapping_key().unroll() > 1
                                    ? ", unrolled (unroll " +
                                          std::to_string(key.bootstrapping_key().unroll()) + ")"
                                    : "") +
                ", bootstrapping key " + std::to_string(key.bootstrapping_key().data().size()) +
                " words, key-switching key " +
                std::to_string(key.key_switching_key().data().size()) + " words";
      break;
    }
    case ObjectType::CiphertextBatch: {
      std::uint64_t key_id = 0;
      const LweBatch batch =
          load_file(path, fn, type, [&](std::istream& in, const std::string& ctx) {
            return read_ciphertexts_impl(in, ctx, nullptr, &p, &key_id);
          });
      details = ", under key id " + key_id_text(key_id) + ", " + std::to_string(batch.count()) +
                " samples of " +
                std::to_string(batch.sample_size()) + " words";
      break;
    }
    case ObjectType::IntegerArray: {
      const IntegerArrayCiphertext array =
          load_file(path, fn, type, [&](std::istream& in, const std::string& ctx) {
            return read_integer_array_impl(in, ctx, nullptr, &p);
          });
      details = ", under key id " + key_id_text(array.key_id) + ", " + array.describe() + " (" +
                std::to_string(array.lanes()) +
                (array.lanes() == 1 ? " integer), " : " integers), ") +
                std::to_string(array.samples.count()) + " samples of " +
                std::to_string(array.samples.sample_size()) + " words";
      break;
    }
  }
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  return object_type_name(type) + ", format version " + std::to_string(read_file_header(path).version) +
         ", " + describe_parameters(p) + details +
         (ec ? std::string() : ", " + std::to_string(size) + " bytes");
}

}  // namespace torusgate
