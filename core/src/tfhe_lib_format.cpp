// The TFHE library v1.1 file formats: byte-exact writers and fully validating readers for its
// parameter sets, LWE and TGSW keys and gate-bootstrapping ciphertexts (tfhe_lib_format.hpp).
#include "torusgate/core/tfhe_lib_format.hpp"

#include "byte_writer.hpp"
#include "file_io.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <fstream>
#include <istream>
#include <limits>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include "torusgate/core/error.hpp"

namespace torusgate::tfhe_lib {
namespace {

namespace fs = std::filesystem;

// Longest text line accepted; the library's lines are under 40 bytes.
constexpr std::size_t max_line_bytes = 256;
// Column width of the library's integers ("n:        630").
constexpr std::size_t int_width = 10;
// Words a keyset reader reserves before it has read them (4 MiB).
constexpr std::size_t growth_words = std::size_t{1} << 20;

// `s` for a message: printable ASCII kept, other bytes as \xNN, cut after 48 bytes.
std::string shown(std::string_view s) {
  static constexpr char digits[] = "0123456789abcdef";
  constexpr std::size_t limit = 48;
  std::string out = "'";
  for (std::size_t i = 0; i < s.size() && i < limit; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c <= 0x7e && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += std::string("\\x") + digits[c >> 4] + digits[c & 0xf];
    }
  }
  out += s.size() > limit ? "'..." : "'";
  return out;
}

std::string begin_line(std::string_view name) {
  return "-----BEGIN " + std::string(name) + "-----";
}
std::string end_line(std::string_view name) { return "-----END " + std::string(name) + "-----"; }

// ---------------------------------------------------------------------------------------------
// Matching the integer fields against the named sets

struct FieldRef {
  const char* name;  // the library's spelling
  std::optional<std::uint32_t> IntegerFields::*field;
  std::uint32_t Parameters::*ours;
};
constexpr std::array<FieldRef, 7> field_refs{{
    {"n", &IntegerFields::lwe_dimension, &Parameters::lwe_dimension},
    {"k", &IntegerFields::glwe_dimension, &Parameters::glwe_dimension},
    {"N", &IntegerFields::polynomial_size, &Parameters::polynomial_size},
    {"Bgbit", &IntegerFields::bk_base_log, &Parameters::bk_base_log},
    {"l", &IntegerFields::bk_level_count, &Parameters::bk_level_count},
    {"ks_basebit", &IntegerFields::ks_base_log, &Parameters::ks_base_log},
    {"ks_t", &IntegerFields::ks_level_count, &Parameters::ks_level_count},
}};

// "n=630 k=1 N=1024": the stated fields.
std::string describe_fields(const IntegerFields& f) {
  std::string s;
  for (const auto& r : field_refs) {
    if (f.*r.field)
      s += (s.empty() ? "" : " ") + std::string(r.name) + "=" + std::to_string(*(f.*r.field));
  }
  return s.empty() ? "no fields" : s;
}

// The same fields of a named set: "'tfhe_lib_128' (n=630 k=1 ...)".
std::string describe_set(const Parameters& p, const IntegerFields& stated) {
  std::string s = "'" + p.name + "' (";
  bool first = true;
  for (const auto& r : field_refs) {
    if (!(stated.*r.field)) continue;
    s += (first ? "" : " ") + std::string(r.name) + "=" + std::to_string(p.*r.ours);
    first = false;
  }
  return s + ")";
}

std::vector<Parameters> matching_sets(const IntegerFields& f) {
  std::vector<Parameters> out;
  for (auto& p : all_parameter_sets()) {
    const bool all_equal =
        std::all_of(field_refs.begin(), field_refs.end(),
                    [&](const FieldRef& r) { return !(f.*r.field) || *(f.*r.field) == p.*r.ours; });
    if (all_equal) out.push_back(std::move(p));
  }
  return out;
}

// "no known parameter set has n=631 ...; closest 'x' differs in n (631 here, 630 there); known
// sets: ...".
std::string no_match_message(const IntegerFields& f) {
  const auto sets = all_parameter_sets();
  std::string known;
  std::size_t best_diffs = field_refs.size() + 1;
  std::string closest;
  for (const auto& p : sets) {
    known += (known.empty() ? "" : ", ") + describe_set(p, f);
    std::size_t diffs = 0;
    std::string differs;
    for (const auto& r : field_refs) {
      if (f.*r.field && *(f.*r.field) != p.*r.ours) {
        ++diffs;
        differs += (differs.empty() ? "" : ", ") + std::string(r.name) + " (" +
                   std::to_string(*(f.*r.field)) + " in the file, " + std::to_string(p.*r.ours) +
                   " in the set)";
      }
    }
    if (diffs < best_diffs) {
      best_diffs = diffs;
      closest = "'" + p.name + "' differs in " + differs;
    }
  }
  return "no known parameter set has " + describe_fields(f) + " (matching by the integer fields " +
         "only); the closest, " + closest + "; known sets: " + known;
}

// Throws FormatError with `context` unless some named set has the stated fields.
void require_some_match(const IntegerFields& f, const std::string& context) {
  if (matching_sets(f).empty()) throw FormatError(context + ": " + no_match_message(f));
}

// The one named set with the stated fields; FormatError with `context` otherwise.
Parameters unique_match(const IntegerFields& f, const std::string& context) {
  auto sets = matching_sets(f);
  if (sets.empty()) throw FormatError(context + ": " + no_match_message(f));
  if (sets.size() > 1) {
    std::string names;
    for (const auto& p : sets) names += (names.empty() ? "'" : ", '") + p.name + "'";
    throw FormatError(context + ": " + describe_fields(f) + " matches several parameter sets (" +
                      names +
                      "); give the parameter set (for example from the parameter set file)");
  }
  return std::move(sets.front());
}

// ---------------------------------------------------------------------------------------------
// Reading

// Reads bytes and lines, counts them, and turns every short read into a FormatError naming what
// was being read and how many bytes it needed.
class Input {
 public:
  Input(std::istream& in, std::string context) : in_(in), context_(std::move(context)) {
    if (in_.fail()) throw SystemError(context_ + ": the input stream is already in a failed state");
  }

  const std::string& context() const { return context_; }
  [[noreturn]] void fail(const std::string& problem) const {
    throw FormatError(context_ + ": " + problem);
  }
  std::uint64_t offset() const { return offset_; }
  std::uint64_t line_number() const { return lines_ + 1; }

  // Up to `size` bytes; fewer only at the end of the input.
  std::size_t read_raw(unsigned char* data, std::size_t size) {
    in_.read(reinterpret_cast<char*>(data), static_cast<std::streamsize>(size));
    const auto got = static_cast<std::size_t>(in_.gcount());
    if (in_.bad()) {
      throw SystemError(context_ + ": reading failed at offset " + std::to_string(offset_ + got));
    }
    offset_ += got;
    return got;
  }

  void bytes(unsigned char* data, std::size_t size, const std::string& what) {
    const std::uint64_t start = offset_;
    const std::size_t got = read_raw(data, size);
    if (got < size) truncated(what, size, start, got);
  }
  std::int32_t i32(const std::string& what) {
    std::array<unsigned char, 4> b{};
    bytes(b.data(), b.size(), what);
    return decode_i32(b.data());
  }

  [[noreturn]] void truncated(const std::string& what, std::uint64_t need, std::uint64_t start,
                              std::uint64_t have) const {
    fail("truncated: " + what + " needs " + std::to_string(need) + " bytes at offset " +
         std::to_string(start) + " but the input ends after " + std::to_string(have) +
         " of them (at offset " + std::to_string(start + have) + ")");
  }

  // One text line without its '\n'. `expected` says what the line should be, for messages.
  std::string line(const std::string& expected) {
    const std::uint64_t start = offset_;
    std::string s;
    for (;;) {
      char c = 0;
      if (!in_.get(c)) {
        if (in_.bad())
          throw SystemError(context_ + ": reading failed at offset " + std::to_string(offset_));
        if (offset_ == 0) fail("empty input: 0 bytes, but expected " + expected);
        fail("truncated: the input ends at offset " + std::to_string(offset_) +
             (s.empty() ? ""
                        : " inside line " + std::to_string(line_number()) + " " + shown(s) +
                              " (no end of line)") +
             ", but expected " + expected);
      }
      ++offset_;
      if (c == '\n') break;
      s += c;
      if (s.size() > max_line_bytes) {
        fail("line " + std::to_string(line_number()) + " at offset " + std::to_string(start) +
             " is longer than " + std::to_string(max_line_bytes) + " bytes (it starts " + shown(s) +
             "), but expected " + expected);
      }
    }
    ++lines_;
    return s;
  }

  static std::int32_t decode_i32(const unsigned char* b) {
    return static_cast<std::int32_t>(std::uint32_t{b[0]} | std::uint32_t{b[1]} << 8 |
                                     std::uint32_t{b[2]} << 16 | std::uint32_t{b[3]} << 24);
  }
  static double decode_f64(const unsigned char* b) {
    std::uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | b[i];
    return std::bit_cast<double>(v);
  }

 private:
  std::istream& in_;
  std::string context_;
  std::uint64_t offset_ = 0;
  std::uint64_t lines_ = 0;
};

// One "key: value" text block: the values of `keys` (each present exactly once, no other key).
struct TextBlock {
  std::string_view name;
  std::vector<std::pair<std::string_view, std::string>> values;  // in the order of `keys`

  const std::string& value(std::string_view key) const {
    for (const auto& [k, v] : values) {
      if (k == key) return v;
    }
    throw std::logic_error("TextBlock::value: no key " + std::string(key));
  }
};

TextBlock read_block(Input& in, std::string_view name,
                     std::initializer_list<std::string_view> keys) {
  TextBlock block{name, {}};
  const std::string begin = begin_line(name);
  const std::string end = end_line(name);
  const std::uint64_t begin_offset = in.offset();
  const std::string first = in.line("the line '" + begin + "'");
  if (first != begin) {
    const bool other_block = first.starts_with("-----BEGIN ") && first.ends_with("-----");
    in.fail("line " + std::to_string(in.line_number() - 1) + " at offset " +
            std::to_string(begin_offset) + " is " + shown(first) + " but expected '" + begin + "'" +
            (other_block
                 ? " (a " + first.substr(11, first.size() - 16) + " block is not expected here)"
                 : ""));
  }
  std::vector<std::optional<std::string>> seen(keys.size());
  std::string expect_more;
  for (auto k : keys)
    expect_more += (expect_more.empty() ? "'" : ", '") + std::string(k) + ": ...'";
  const std::string expected =
      "a line of the " + std::string(name) + " block (" + expect_more + ") or '" + end + "'";
  for (;;) {
    const std::uint64_t line_offset = in.offset();
    const std::string line = in.line(expected);
    const std::string where = "line " + std::to_string(in.line_number() - 1) + " at offset " +
                              std::to_string(line_offset) + " (" + std::string(name) + " block)";
    if (line == end) break;
    const std::size_t colon = line.find(": ");
    if (colon == std::string::npos) {
      in.fail(where + " is " + shown(line) + " but expected " + expected);
    }
    const std::string key = line.substr(0, colon);
    const auto it = std::find(keys.begin(), keys.end(), key);
    if (it == keys.end()) {
      in.fail(where + " has the key " + shown(key) + " but the " + std::string(name) +
              " block has only the keys " + expect_more);
    }
    auto& slot = seen[static_cast<std::size_t>(it - keys.begin())];
    if (slot) in.fail(where + " repeats the key '" + key + "'");
    slot = line.substr(colon + 2);
  }
  std::size_t i = 0;
  for (auto k : keys) {
    if (!seen[i]) {
      in.fail("the " + std::string(name) + " block that starts at offset " +
              std::to_string(begin_offset) + " has no '" + std::string(k) + "' line");
    }
    block.values.emplace_back(k, std::move(*seen[i]));
    ++i;
  }
  return block;
}

// Spaces the library's column alignment puts before a number.
std::string_view skip_spaces(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return s;
}

// A non-negative decimal integer (leading spaces allowed, nothing else around it) below 2^32.
std::uint32_t parse_uint(const Input& in, const TextBlock& block, std::string_view key) {
  const std::string& text = block.value(key);
  const std::string_view digits = skip_spaces(text);
  std::uint64_t v = 0;
  const char* const last = digits.data() + digits.size();
  const auto [end, ec] = std::from_chars(digits.data(), last, v);
  const bool all_digits = !digits.empty() && std::all_of(digits.begin(), digits.end(), [](char c) {
    return c >= '0' && c <= '9';
  });
  if (!all_digits || ec != std::errc() || end != last) {
    in.fail(std::string(block.name) + " '" + std::string(key) + "' is " + shown(text) +
            " but expected a non-negative decimal integer");
  }
  if (v > std::numeric_limits<std::uint32_t>::max()) {
    in.fail(std::string(block.name) + " '" + std::string(key) + "' is " + std::to_string(v) +
            ", far beyond any parameter set (at most 2^32-1)");
  }
  return static_cast<std::uint32_t>(v);
}

// A finite, non-negative decimal number (leading spaces allowed, nothing else around it).
double parse_double(const Input& in, const TextBlock& block, std::string_view key) {
  const std::string& text = block.value(key);
  const std::string_view number = skip_spaces(text);
  double v = 0;
  const char* const last = number.data() + number.size();
  const auto [end, ec] = std::from_chars(number.data(), last, v, std::chars_format::general);
  if (ec == std::errc::result_out_of_range && end == last) {
    in.fail(std::string(block.name) + " '" + std::string(key) + "' is " + shown(text) +
            ", out of the range of a double");
  }
  if (number.empty() || ec != std::errc() || end != last) {
    in.fail(std::string(block.name) + " '" + std::string(key) + "' is " + shown(text) +
            " but expected a decimal number");
  }
  if (!std::isfinite(v) || v < 0) {
    in.fail(std::string(block.name) + " '" + std::string(key) + "' is " + shown(text) +
            " but expected a finite non-negative standard deviation");
  }
  return v;
}

std::string format_double(double v);  // as the library prints a double (%.8f), below

// The noise fields of a file against the set its integer fields name: the library writes them
// with printf's %.8f, so a value within half a unit of the 8th decimal is the set's (2^-25
// reads back as 0.00000003). "LWE key alpha_min=0.20000000 (the set has 0.00003052)" for each
// that differs, comma-separated; empty when all fit.
std::string noise_differences(const LweParamsBlock& lwe, const std::string& lwe_name,
                              const TlweParamsBlock& tlwe, const std::string& tlwe_name,
                              const Parameters& params) {
  std::string differs;
  const auto compare = [&](const std::string& block, const char* field, double got, double want) {
    if (std::fabs(got - want) <= 0.5e-8 * (1 + 1e-9)) return;
    differs += (differs.empty() ? "" : ", ") + block + " " + field + "=" + format_double(got) +
               " (the set has " + format_double(want) + ")";
  };
  compare(lwe_name, "alpha_min", lwe.alpha_min, params.lwe_noise_stddev);
  compare(lwe_name, "alpha_max", lwe.alpha_max, library_alpha_max);
  compare(tlwe_name, "alpha_min", tlwe.alpha_min, params.glwe_noise_stddev);
  compare(tlwe_name, "alpha_max", tlwe.alpha_max, library_alpha_max);
  return differs;
}

LweParamsBlock read_lwe_params(Input& in) {
  const TextBlock b = read_block(in, "LWEPARAMS", {"alpha_max", "alpha_min", "n"});
  LweParamsBlock p;
  p.lwe_dimension = parse_uint(in, b, "n");
  p.alpha_min = parse_double(in, b, "alpha_min");
  p.alpha_max = parse_double(in, b, "alpha_max");
  return p;
}

TlweParamsBlock read_tlwe_params(Input& in) {
  const TextBlock b = read_block(in, "TLWEPARAMS", {"N", "alpha_max", "alpha_min", "k"});
  TlweParamsBlock p;
  p.polynomial_size = parse_uint(in, b, "N");
  p.glwe_dimension = parse_uint(in, b, "k");
  p.alpha_min = parse_double(in, b, "alpha_min");
  p.alpha_max = parse_double(in, b, "alpha_max");
  return p;
}

TgswParamsBlock read_tgsw_params(Input& in) {
  const TextBlock b = read_block(in, "TGSWPARAMS", {"Bgbit", "l"});
  return TgswParamsBlock{parse_uint(in, b, "Bgbit"), parse_uint(in, b, "l")};
}

// "(that is the type id of a TGSW key)" for the library's other ids.
std::string type_id_hint(std::int32_t id) {
  switch (id) {
    case lwe_key_type_id:
      return " (that is the type id of an LWE key)";
    case tgsw_key_type_id:
      return " (that is the type id of a TGSW key)";
    case ciphertext_type_id:
      return " (that is the type id of a ciphertext)";
    case keyswitch_key_type_id:
      return " (that is the type id of a key-switching key)";
    case bootstrapping_key_type_id:
      return " (that is the type id of a bootstrapping key)";
    default:
      return "";
  }
}

void read_type_id(Input& in, std::int32_t want, const std::string& object) {
  const std::uint64_t at = in.offset();
  const std::int32_t id = in.i32("the " + object + " type id");
  if (id != want) {
    in.fail("the " + object + " type id at offset " + std::to_string(at) + " is " +
            std::to_string(id) + " but expected " + std::to_string(want) + type_id_hint(id));
  }
}

// `count` int32 key coefficients, each 0 or 1 (count already checked against a named set).
std::vector<std::int32_t> read_binary_coefficients(Input& in, std::size_t count,
                                                   const std::string& what) {
  const std::uint64_t start = in.offset();
  std::vector<unsigned char> bytes(count * 4);
  const std::size_t got = in.read_raw(bytes.data(), bytes.size());
  if (got < bytes.size()) {
    in.truncated(what + " (" + std::to_string(count) + " int32)", bytes.size(), start, got);
  }
  std::vector<std::int32_t> out(count);
  for (std::size_t i = 0; i < count; ++i) {
    out[i] = Input::decode_i32(bytes.data() + 4 * i);
    if (out[i] != 0 && out[i] != 1) {
      in.fail(what + ": coefficient " + std::to_string(i) + " (offset " +
              std::to_string(start + 4 * i) + ") is " + std::to_string(out[i]) +
              " but expected 0 or 1");
    }
  }
  return out;
}

// The four blocks of a parameter set file, matched to a named set.
Parameters read_parameter_blocks(Input& in) {
  const TextBlock gb = read_block(in, "GATEBOOTSPARAMS", {"ks_basebit", "ks_t"});
  const std::uint32_t ks_basebit = parse_uint(in, gb, "ks_basebit");
  const std::uint32_t ks_t = parse_uint(in, gb, "ks_t");
  const LweParamsBlock lwe = read_lwe_params(in);
  const TlweParamsBlock tlwe = read_tlwe_params(in);
  const TgswParamsBlock tgsw = read_tgsw_params(in);
  IntegerFields f;
  f.lwe_dimension = lwe.lwe_dimension;
  f.glwe_dimension = tlwe.glwe_dimension;
  f.polynomial_size = tlwe.polynomial_size;
  f.bk_base_log = tgsw.bk_base_log;
  f.bk_level_count = tgsw.bk_level_count;
  f.ks_base_log = ks_basebit;
  f.ks_level_count = ks_t;
  Parameters params = unique_match(f, in.context());
  // The set is named by the integer fields; a file whose noise is another's would be read as it.
  const std::string differs = noise_differences(lwe, "LWEPARAMS", tlwe, "TLWEPARAMS", params);
  if (!differs.empty()) {
    in.fail("the noise does not fit parameter set '" + params.name +
            "', which the integer fields name: " + differs +
            " (this reader knows the named sets only)");
  }
  return params;
}

Parameters read_parameter_set_impl(std::istream& stream, const std::string& ctx) {
  Input in(stream, ctx);
  return read_parameter_blocks(in);
}

LweKeyFile read_lwe_key_impl(std::istream& stream, const std::string& ctx) {
  Input in(stream, ctx);
  LweKeyFile file;
  file.params = read_lwe_params(in);
  IntegerFields f;
  f.lwe_dimension = file.params.lwe_dimension;
  require_some_match(f, ctx);
  read_type_id(in, lwe_key_type_id, "LWE key");
  auto coefficients = read_binary_coefficients(in, file.params.lwe_dimension, "the LWE key");
  file.key = LweKey(std::move(coefficients));
  return file;
}

TgswKeyFile read_tgsw_key_impl(std::istream& stream, const std::string& ctx) {
  Input in(stream, ctx);
  TgswKeyFile file;
  file.tlwe = read_tlwe_params(in);
  file.tgsw = read_tgsw_params(in);
  IntegerFields f;
  f.glwe_dimension = file.tlwe.glwe_dimension;
  f.polynomial_size = file.tlwe.polynomial_size;
  f.bk_base_log = file.tgsw.bk_base_log;
  f.bk_level_count = file.tgsw.bk_level_count;
  require_some_match(f, ctx);
  read_type_id(in, tgsw_key_type_id, "TGSW key");
  const std::size_t count = std::size_t{file.tlwe.glwe_dimension} * file.tlwe.polynomial_size;
  auto coefficients = read_binary_coefficients(in, count, "the TGSW key");
  file.key = GlweKey(file.tlwe.glwe_dimension, file.tlwe.polynomial_size, std::move(coefficients));
  return file;
}

LweBatch read_gate_ciphertexts_impl(std::istream& stream, const Parameters& params,
                                    std::vector<double>* variances, const std::string& ctx) {
  params.validate();
  Input in(stream, ctx);
  const std::uint32_t n = params.lwe_dimension;
  const std::size_t sample_bytes = ciphertext_bytes(n);
  const std::size_t words_per_sample = std::size_t{n} + 1;
  std::vector<unsigned char> buffer(sample_bytes);
  std::vector<Torus32> words;
  std::vector<double> read_variances;
  for (std::size_t i = 0;; ++i) {
    const std::uint64_t start = in.offset();
    const std::size_t got = in.read_raw(buffer.data(), sample_bytes);
    if (got == 0) break;
    const std::string what =
        "ciphertext " + std::to_string(i) + " (a type id, " + std::to_string(n) +
        " mask words, the body and the variance for n=" + std::to_string(n) + ")";
    if (got < sample_bytes) in.truncated(what, sample_bytes, start, got);
    const std::int32_t id = Input::decode_i32(buffer.data());
    if (id != ciphertext_type_id) {
      std::string hint = type_id_hint(id);
      if (i == 0 && std::string_view(reinterpret_cast<const char*>(buffer.data()), 5) == "-----") {
        hint = " (the input starts with '-----': a key or parameter file, not ciphertexts)";
      } else if (hint.empty() && i > 0) {
        hint = " (ciphertexts of another dimension than n=" + std::to_string(n) + "?)";
      }
      in.fail("ciphertext " + std::to_string(i) + " at offset " + std::to_string(start) +
              " has type id " + std::to_string(id) + " but expected " +
              std::to_string(ciphertext_type_id) + hint);
    }
    for (std::size_t j = 0; j < words_per_sample; ++j) {
      words.push_back(static_cast<Torus32>(Input::decode_i32(buffer.data() + 4 + 4 * j)));
    }
    read_variances.push_back(Input::decode_f64(buffer.data() + 4 + 4 * words_per_sample));
  }
  LweBatch batch(n, read_variances.size());
  std::copy(words.begin(), words.end(), batch.data().begin());
  if (variances != nullptr) {
    variances->insert(variances->end(), read_variances.begin(), read_variances.end());
  }
  return batch;
}

// ---------------------------------------------------------------------------------------------
// Keysets: reading

// Reads a block of int32 words in pieces, naming the whole block when the input ends early.
class WordBlock {
 public:
  WordBlock(Input& in, std::uint64_t words, std::string what)
      : in_(in), start_(in.offset()), total_bytes_(4 * words), what_(std::move(what)) {}

  void read(std::span<Torus32> dst) {
    buffer_.resize(4 * dst.size());
    const std::size_t got = in_.read_raw(buffer_.data(), buffer_.size());
    if (got < buffer_.size()) in_.truncated(what_, total_bytes_, start_, done_ + got);
    done_ += got;
    for (std::size_t i = 0; i < dst.size(); ++i) {
      dst[i] = static_cast<Torus32>(Input::decode_i32(buffer_.data() + 4 * i));
    }
  }

 private:
  Input& in_;
  std::uint64_t start_, total_bytes_, done_ = 0;
  std::string what_;
  std::vector<unsigned char> buffer_;
};

// A variance double: finite and non-negative (the library stores alpha^2 or 0 there).
double read_variance(Input& in, const std::string& what) {
  const std::uint64_t at = in.offset();
  std::array<unsigned char, 8> b{};
  in.bytes(b.data(), b.size(), what);
  const double v = Input::decode_f64(b.data());
  if (!std::isfinite(v) || v < 0) {
    std::ostringstream text;
    text.precision(17);
    text << v;
    in.fail(what + " at offset " + std::to_string(at) + " is " + text.str() +
            " but expected a finite non-negative number (the library stores the square of the "
            "noise standard deviation)");
  }
  return v;
}

// The LWEKSPARAMS block, which must agree with `p`.
void read_ks_params(Input& in, const Parameters& p) {
  const std::uint64_t at = in.offset();
  const TextBlock b = read_block(in, "LWEKSPARAMS", {"basebit", "n", "t"});
  const std::uint32_t n = parse_uint(in, b, "n");
  const std::uint32_t t = parse_uint(in, b, "t");
  const std::uint32_t basebit = parse_uint(in, b, "basebit");
  std::string differs;
  auto compare = [&](const char* field, std::uint32_t got, const std::string& theirs,
                     std::uint32_t want) {
    if (got != want) {
      differs += (differs.empty() ? "" : ", ") + std::string(field) + "=" + std::to_string(got) +
                 " (the parameter blocks give " + theirs + "=" + std::to_string(want) + ")";
    }
  };
  compare("n", n, "k*N", p.extracted_lwe_dimension());
  compare("t", t, "ks_t", p.ks_level_count);
  compare("basebit", basebit, "ks_basebit", p.ks_base_log);
  if (!differs.empty()) {
    in.fail("the LWEKSPARAMS block at offset " + std::to_string(at) +
            " does not fit the parameter set '" + p.name + "': " + differs);
  }
}

// The bootstrapping key as write_lweBootstrappingKey writes it after the parameter blocks.
CloudKeySetFile read_keyset_keys(Input& in, const Parameters& p) {
  read_ks_params(in, p);
  CloudKeySetFile file;
  const std::size_t n1 = std::size_t{p.lwe_dimension} + 1;
  const std::size_t base = std::size_t{1} << p.ks_base_log;
  const std::size_t rows = std::size_t{p.extracted_lwe_dimension()} * p.ks_level_count;

  read_type_id(in, keyswitch_key_type_id, "key-switching key");
  file.ks_variance = read_variance(in, "the key-switching key's variance");
  // The vectors grow with the data read (a capacity of at most growth_words up front), so a
  // short file that names a large set costs memory in proportion to its length.
  const auto reserved = [](std::size_t words) { return std::min(words, growth_words); };
  std::vector<Torus32> ks, digit0;
  ks.reserve(reserved(KeySwitchingKey::size(p)));
  digit0.reserve(reserved(rows * n1));
  std::vector<Torus32> row(base * n1);
  WordBlock ks_block(in, keyswitch_key_samples(p) * n1,
                     "the key-switching key (" + std::to_string(keyswitch_key_samples(p)) +
                         " samples of n+1=" + std::to_string(n1) + " int32)");
  bool digit0_zero = true;
  for (std::size_t r = 0; r < rows; ++r) {
    ks_block.read(row);
    const auto v1 = row.begin() + static_cast<std::ptrdiff_t>(n1);  // where v = 1 starts
    digit0_zero = digit0_zero && std::all_of(row.begin(), v1, [](Torus32 w) { return w == 0; });
    digit0.insert(digit0.end(), row.begin(), v1);
    ks.insert(ks.end(), v1, row.end());
  }
  if (!digit0_zero) file.ks_digit0 = std::move(digit0);

  read_type_id(in, bootstrapping_key_type_id, "bootstrapping key");
  file.bk_variance = read_variance(in, "the bootstrapping key's variance");
  const std::size_t g = ggsw_size(p);
  std::vector<Torus32> bk;
  bk.reserve(reserved(std::size_t{p.lwe_dimension} * g));
  std::vector<Torus32> ggsw(g);
  WordBlock bk_block(in, std::uint64_t{p.lwe_dimension} * g,
                     "the bootstrapping key (" + std::to_string(p.lwe_dimension) +
                         " TGSW samples of " + std::to_string(g) + " int32)");
  for (std::size_t i = 0; i < p.lwe_dimension; ++i) {
    bk_block.read(ggsw);
    bk.insert(bk.end(), ggsw.begin(), ggsw.end());
  }
  file.key = CloudKey(BootstrappingKey(p, std::move(bk)), KeySwitchingKey(p, std::move(ks)));
  return file;
}

CloudKeySetFile read_cloud_keyset_impl(std::istream& stream, const std::string& ctx) {
  Input in(stream, ctx);
  const Parameters p = read_parameter_blocks(in);
  return read_keyset_keys(in, p);
}

SecretKeySetFile read_secret_keyset_impl(std::istream& stream, const std::string& ctx) {
  Input in(stream, ctx);
  const Parameters p = read_parameter_blocks(in);
  SecretKeySetFile file;
  file.cloud = read_keyset_keys(in, p);
  read_type_id(in, lwe_key_type_id, "LWE key");
  auto lwe = read_binary_coefficients(in, p.lwe_dimension, "the LWE key");
  read_type_id(in, tgsw_key_type_id, "TGSW key");
  auto tgsw = read_binary_coefficients(in, p.extracted_lwe_dimension(), "the TGSW key");
  file.secret = SecretKey(p, LweKey(std::move(lwe)),
                          GlweKey(p.glwe_dimension, p.polynomial_size, std::move(tgsw)));
  const std::string problem = key_pair_problem(file.secret, file.cloud.key);
  if (!problem.empty()) {
    in.fail("the keyset's cloud key does not belong to its secret keys: " + problem);
  }
  file.cloud.key = std::move(file.cloud.key).named(file.secret.key_id());
  return file;
}

// ---------------------------------------------------------------------------------------------
// Writing

using Output = detail::ByteWriter;
using detail::load_file;
using detail::quoted;
using detail::save_file;

// The library's value columns: integers right-aligned in 10 columns, doubles with 8 decimals.
std::string format_uint(std::uint32_t v) {
  std::array<char, 16> buf{};
  const auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  std::string digits(buf.data(), end);
  return std::string(digits.size() < int_width ? int_width - digits.size() : 0, ' ') + digits;
}
std::string format_double(double v) {
  std::array<char, 512> buf{};
  const auto [end, ec] =
      std::to_chars(buf.data(), buf.data() + buf.size(), v, std::chars_format::fixed, 8);
  return std::string(buf.data(), end);
}

// A text block; `lines` already in the library's (std::map) key order.
void write_block(Output& out, std::string_view name,
                 std::initializer_list<std::pair<std::string_view, std::string>> lines) {
  out.text(begin_line(name) + "\n");
  for (const auto& [key, value] : lines) {
    out.text(std::string(key) + ": " + value + "\n");
  }
  out.text(end_line(name) + "\n");
}

void write_lwe_params(Output& out, const Parameters& p) {
  write_block(out, "LWEPARAMS",
              {{"alpha_max", format_double(library_alpha_max)},
               {"alpha_min", format_double(p.lwe_noise_stddev)},
               {"n", format_uint(p.lwe_dimension)}});
}

void write_tlwe_params(Output& out, const Parameters& p) {
  write_block(out, "TLWEPARAMS",
              {{"N", format_uint(p.polynomial_size)},
               {"alpha_max", format_double(library_alpha_max)},
               {"alpha_min", format_double(p.glwe_noise_stddev)},
               {"k", format_uint(p.glwe_dimension)}});
}

void write_tgsw_params(Output& out, const Parameters& p) {
  write_block(out, "TGSWPARAMS",
              {{"Bgbit", format_uint(p.bk_base_log)}, {"l", format_uint(p.bk_level_count)}});
}

void write_parameter_blocks(Output& out, const Parameters& params) {
  write_block(out, "GATEBOOTSPARAMS",
              {{"ks_basebit", format_uint(params.ks_base_log)},
               {"ks_t", format_uint(params.ks_level_count)}});
  write_lwe_params(out, params);
  write_tlwe_params(out, params);
  write_tgsw_params(out, params);
}

void write_parameter_set_impl(std::ostream& stream, const Parameters& params,
                              const std::string& ctx) {
  params.validate();
  Output out(stream, ctx);
  write_parameter_blocks(out, params);
  out.finish();
}

// Throws InvalidArgument unless the key's sizes are its parameters' (a default SecretKey has
// none).
void check_key(const SecretKey& key, const std::string& ctx) {
  key.parameters().validate();
  EXPECTS(key.lwe_key().lwe_dimension() == key.parameters().lwe_dimension &&
              key.glwe_key().coefficients().size() == key.parameters().extracted_lwe_dimension(),
          ctx + ": the key's sizes do not match its parameter set '" + key.parameters().name + "'");
}

void write_lwe_key_impl(std::ostream& stream, const SecretKey& key, const std::string& ctx) {
  check_key(key, ctx);
  Output out(stream, ctx);
  write_lwe_params(out, key.parameters());
  out.i32(lwe_key_type_id);
  for (std::int32_t c : key.lwe_key().coefficients()) out.i32(c);
  out.finish();
}

void write_tgsw_key_impl(std::ostream& stream, const SecretKey& key, const std::string& ctx) {
  check_key(key, ctx);
  Output out(stream, ctx);
  write_tlwe_params(out, key.parameters());
  write_tgsw_params(out, key.parameters());
  out.i32(tgsw_key_type_id);
  for (std::int32_t c : key.glwe_key().coefficients()) out.i32(c);
  out.finish();
}

void check_ciphertext_args(const Parameters& params, const LweBatch& batch,
                           std::span<const double> variances, bool per_sample,
                           const std::string& ctx) {
  params.validate();
  EXPECTS(batch.lwe_dimension() == params.lwe_dimension,
          ctx + ": batch has lwe_dimension=" + std::to_string(batch.lwe_dimension()) +
              " but parameter set '" + params.name + "' has " +
              std::to_string(params.lwe_dimension));
  EXPECTS(!per_sample || variances.size() == batch.count(),
          ctx + ": " + std::to_string(variances.size()) + " variances given for " +
              std::to_string(batch.count()) + " samples");
}

// `variances` empty and !per_sample: every sample gets lwe_noise_stddev^2.
void write_gate_ciphertexts_impl(std::ostream& stream, const Parameters& params,
                                 const LweBatch& batch, std::span<const double> variances,
                                 bool per_sample, const std::string& ctx) {
  check_ciphertext_args(params, batch, variances, per_sample, ctx);
  const double fresh = params.lwe_noise_stddev * params.lwe_noise_stddev;
  Output out(stream, ctx);
  for (std::size_t i = 0; i < batch.count(); ++i) {
    out.i32(ciphertext_type_id);
    for (Torus32 w : batch.sample(i)) out.i32(static_cast<std::int32_t>(w));
    out.f64(per_sample ? variances[i] : fresh);
  }
  out.finish();
}

// ---------------------------------------------------------------------------------------------
// Keysets: writing

void write_ks_params(Output& out, const Parameters& p) {
  write_block(out, "LWEKSPARAMS",
              {{"basebit", format_uint(p.ks_base_log)},
               {"n", format_uint(p.extracted_lwe_dimension())},
               {"t", format_uint(p.ks_level_count)}});
}

// What a keyset writer writes beyond the parameter blocks (CloudKeySetFile without copies).
struct KeysetView {
  const CloudKey& key;
  double ks_variance;
  double bk_variance;
  std::span<const Torus32> ks_digit0;  // empty: zeros

  static KeysetView of(const CloudKeySetFile& f) {
    return {f.key, f.ks_variance, f.bk_variance, f.ks_digit0};
  }
  // `key` as v1.1 writes a key it generated: its variances, zero v = 0 rows.
  static KeysetView library_default(const CloudKey& key) {
    return {key, library_ks_variance(key.parameters()), library_bk_variance(key.parameters()), {}};
  }
};

// Throws InvalidArgument unless `file` can be written: valid parameters, variances finite and
// non-negative, ks_digit0 empty or k*N*t samples.
void check_keyset_file(const KeysetView& file, const std::string& ctx) {
  const Parameters& p = file.key.parameters();
  p.validate();
  EXPECTS(file.key.bootstrapping_key().unroll() == 1,
          ctx + ": the cloud key's bootstrapping key is unrolled (unroll " +
              std::to_string(file.key.bootstrapping_key().unroll()) + "), which the TFHE "
                "library's format cannot hold; write it in the native format, or generate a "
                "standard key (unroll 1) for the library");
  for (const auto& [name, v] : {std::pair{"ks_variance", file.ks_variance},
                                std::pair{"bk_variance", file.bk_variance}}) {
    EXPECTS(std::isfinite(v) && v >= 0, ctx + ": " + name + "=" + std::to_string(v) +
                                            " but expected a finite non-negative number");
  }
  const std::size_t digit0_words =
      std::size_t{p.extracted_lwe_dimension()} * p.ks_level_count * (p.lwe_dimension + 1);
  EXPECTS(file.ks_digit0.empty() || file.ks_digit0.size() == digit0_words,
          ctx + ": ks_digit0 has " + std::to_string(file.ks_digit0.size()) +
              " words but expected none or k*N*t*(n+1)=" + std::to_string(digit0_words));
}

void write_keyset_keys(Output& out, const KeysetView& file) {
  const Parameters& p = file.key.parameters();
  write_ks_params(out, p);
  const std::size_t n1 = std::size_t{p.lwe_dimension} + 1;
  const std::size_t base = std::size_t{1} << p.ks_base_log;
  const std::size_t rows = std::size_t{p.extracted_lwe_dimension()} * p.ks_level_count;
  const auto ks = file.key.key_switching_key().data();
  out.i32(keyswitch_key_type_id);
  out.f64(file.ks_variance);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t w = 0; w < n1; ++w) {
      out.i32(file.ks_digit0.empty() ? 0 : static_cast<std::int32_t>(file.ks_digit0[r * n1 + w]));
    }
    for (std::size_t w = 0; w < (base - 1) * n1; ++w) {
      out.i32(static_cast<std::int32_t>(ks[r * (base - 1) * n1 + w]));
    }
  }
  out.i32(bootstrapping_key_type_id);
  out.f64(file.bk_variance);
  for (Torus32 w : file.key.bootstrapping_key().data()) out.i32(static_cast<std::int32_t>(w));
}

void write_cloud_keyset_impl(std::ostream& stream, const KeysetView& file,
                             const std::string& ctx) {
  check_keyset_file(file, ctx);
  Output out(stream, ctx);
  write_parameter_blocks(out, file.key.parameters());
  write_keyset_keys(out, file);
  out.finish();
}

// Throws InvalidArgument unless `secret` and `file` can be written together.
void check_secret_keyset(const SecretKey& secret, const KeysetView& file,
                         const std::string& ctx) {
  check_key(secret, ctx);
  check_keyset_file(file, ctx);
  const std::string problem = key_pair_problem(secret, file.key);
  EXPECTS(problem.empty(), ctx + ": the cloud key does not belong to the secret key: " + problem);
}

void write_secret_keyset_impl(std::ostream& stream, const SecretKey& secret,
                              const KeysetView& file, const std::string& ctx) {
  check_secret_keyset(secret, file, ctx);
  Output out(stream, ctx);
  write_parameter_blocks(out, secret.parameters());
  write_keyset_keys(out, file);
  out.i32(lwe_key_type_id);
  for (std::int32_t c : secret.lwe_key().coefficients()) out.i32(c);
  out.i32(tgsw_key_type_id);
  for (std::int32_t c : secret.glwe_key().coefficients()) out.i32(c);
  out.finish();
}

// "0.37 of the torus" for a distance in Torus32 units.
std::string torus_fraction(std::int64_t distance) {
  std::ostringstream text;
  text.precision(3);
  text << static_cast<double>(distance) / 4294967296.0 << " of the torus";
  return text.str();
}

// A quarter of 2^-bits of the torus in Torus32 units (at least 1): the tolerance of
// key_pair_problem for a first level of step 2^-bits.
std::int64_t quarter_step(std::uint32_t bits) {
  return bits >= 30 ? 1 : std::int64_t{1} << (30 - bits);
}

// |a - b| on the torus, in Torus32 units (0 .. 2^31).
std::int64_t torus_distance(Torus32 a, Torus32 b) {
  const auto d = static_cast<std::int32_t>(a - b);
  return d < 0 ? -std::int64_t{d} : std::int64_t{d};
}

// ---------------------------------------------------------------------------------------------
// Files

}  // namespace

Parameters match_parameter_set(const IntegerFields& fields) {
  return unique_match(fields, "tfhe_lib::match_parameter_set");
}

std::uint64_t keyswitch_key_samples(const Parameters& params) {
  params.validate();
  return std::uint64_t{params.extracted_lwe_dimension()} * params.ks_level_count *
         (std::uint64_t{1} << params.ks_base_log);
}

std::uint64_t cloud_keyset_bytes(const Parameters& params) {
  params.validate();
  std::ostringstream text(std::ios::binary);
  Output out(text, "tfhe_lib::cloud_keyset_bytes");
  write_parameter_blocks(out, params);
  write_ks_params(out, params);
  out.finish();
  const std::uint64_t words =
      keyswitch_key_samples(params) * (params.lwe_dimension + 1) +
      std::uint64_t{params.lwe_dimension} * ggsw_size(params);
  return text.str().size() + 2 * (4 + 8) + 4 * words;
}

double library_ks_variance(const Parameters& params) {
  return params.lwe_noise_stddev * params.lwe_noise_stddev;
}
double library_bk_variance(const Parameters& params) {
  return params.glwe_noise_stddev * params.glwe_noise_stddev;
}

CloudKeySetFile cloud_keyset_file(CloudKey key) {
  CloudKeySetFile file;
  file.ks_variance = library_ks_variance(key.parameters());
  file.bk_variance = library_bk_variance(key.parameters());
  file.key = std::move(key);
  return file;
}

std::string key_pair_problem(const SecretKey& secret, const CloudKey& cloud) {
  const Parameters& p = secret.parameters();
  p.validate();
  if (!(cloud.parameters() == p)) {
    return "the secret key is for parameter set '" + p.name + "' but the cloud key for '" +
           cloud.parameters().name + "'";
  }
  const LweKey& s = secret.lwe_key();
  const auto extracted = secret.glwe_key().coefficients();  // s'
  const std::size_t n1 = std::size_t{p.lwe_dimension} + 1;
  const std::size_t N = p.polynomial_size, k = p.glwe_dimension, l = p.bk_level_count;

  // Key switching: sample (i, j, v) encrypts v * s'_i / base^(j+1) under s.
  const KeySwitchingKey& ksk = cloud.key_switching_key();
  const std::size_t base = std::size_t{1} << p.ks_base_log;
  const std::int64_t ks_tolerance = quarter_step(p.ks_base_log);
  for (std::size_t i = 0; i < extracted.size(); ++i) {
    for (std::size_t j = 0; j < p.ks_level_count; ++j) {
      const unsigned shift = 32 - static_cast<unsigned>((j + 1) * p.ks_base_log);
      for (std::size_t v = 1; v < base; ++v) {
        const std::span<const Torus32> sample(ksk.level(i, j) + (v - 1) * n1, n1);
        const Torus32 want = static_cast<Torus32>(extracted[i] * v) << shift;
        const std::int64_t off = torus_distance(lwe_phase(sample, s), want);
        if (off >= ks_tolerance) {
          return "the key-switching key's sample for coefficient " + std::to_string(i) +
                 " of the extracted key, level " + std::to_string(j + 1) + ", digit " +
                 std::to_string(v) + " decrypts " + torus_fraction(off) +
                 " away from what it must encrypt (a key made from these secret keys is "
                 "within " + torus_fraction(ks_tolerance) + ")";
        }
      }
    }
  }

  // Bootstrapping: row p*l+m of TGSW sample i adds s_i * 2^(32-(m+1)*Bgbit) to coefficient 0 of
  // polynomial p; coefficient 0 of its phase is that for p = k, and minus it times S_p[0] for
  // p < k (the mask term a_p S_p carries it).
  const BootstrappingKey& bk = cloud.bootstrapping_key();
  const std::int64_t bk_tolerance = quarter_step(p.bk_base_log);
  const std::size_t row_words = (k + 1) * N;
  const auto messages = BootstrappingKey::messages(s.coefficients(), bk.unroll());
  const std::string form = bk.unroll() > 1 ? " (unrolled key)" : "";
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const auto ggsw = bk.ggsw(i);
    const auto bit = static_cast<std::uint32_t>(messages[i]);
    for (std::size_t r = 0; r < (k + 1) * l; ++r) {
      const Torus32* row = ggsw.data() + r * row_words;
      Torus32 phase0 = row[k * N];
      for (std::size_t q = 0; q < k; ++q) {
        const Torus32* a = row + q * N;
        const std::int32_t* S = extracted.data() + q * N;
        Torus32 dot = a[0] * static_cast<Torus32>(S[0]);
        for (std::size_t t = 1; t < N; ++t) dot -= a[N - t] * static_cast<Torus32>(S[t]);
        phase0 -= dot;
      }
      const std::size_t block = r / l, m = r % l;
      const unsigned shift = 32 - static_cast<unsigned>((m + 1) * p.bk_base_log);
      const Torus32 h = Torus32{1} << shift;
      const Torus32 message = bit * h;
      const Torus32 want =
          block == k ? message : Torus32{0} - message * static_cast<Torus32>(extracted[block * N]);
      const std::int64_t off = torus_distance(phase0, want);
      if (off >= bk_tolerance) {
        return "the bootstrapping key's TGSW sample " + std::to_string(i) + form + ", row " +
               std::to_string(r) + ", does not encrypt " +
               (bk.unroll() > 1 ? std::string("its product of LWE key bits")
                                 : "bit " + std::to_string(i) + " of the LWE key") +
               " (" + std::to_string(bit) +
               ") under the TGSW key: coefficient 0 of its phase is " + torus_fraction(off) +
               " away from it (a key made from these secret keys is within " +
               torus_fraction(bk_tolerance) + ")";
      }
    }
  }
  return "";
}

std::string file_kind_name(FileKind kind) {
  switch (kind) {
    case FileKind::ParameterSet:
      return "parameter set";
    case FileKind::LweKey:
      return "LWE key";
    case FileKind::TgswKey:
      return "TGSW key";
    case FileKind::GateCiphertexts:
      return "gate ciphertexts";
    case FileKind::CloudKeySet:
      return "cloud keyset";
    case FileKind::SecretKeySet:
      return "secret keyset";
    case FileKind::Unknown:
      break;
  }
  return "unknown";
}

FileKind identify_file(const fs::path& path) {
  const std::string fn = "tfhe_lib::identify_file";
  std::ifstream stream = detail::open_for_reading(path, fn);
  std::array<char, 32> head{};
  stream.read(head.data(), head.size());
  const std::string_view opening(head.data(), static_cast<std::size_t>(stream.gcount()));
  if (stream.bad()) throw SystemError(fn + ": " + quoted(path) + ": reading failed");
  if (opening.starts_with(begin_line("LWEPARAMS") + "\n")) return FileKind::LweKey;
  if (opening.starts_with(begin_line("TLWEPARAMS") + "\n")) return FileKind::TgswKey;
  if (opening.size() >= 4 &&
      Input::decode_i32(reinterpret_cast<const unsigned char*>(opening.data())) ==
          ciphertext_type_id) {
    return FileKind::GateCiphertexts;
  }
  if (!opening.starts_with(begin_line("GATEBOOTSPARAMS") + "\n")) return FileKind::Unknown;
  // A parameter set file ends after its four blocks; a keyset goes on with LWEKSPARAMS and is
  // as long as cloud_keyset_bytes says (a secret keyset longer).
  stream.clear();
  stream.seekg(0);
  bool parameters_read = false;
  try {
    Input in(stream, fn);
    const Parameters p = read_parameter_blocks(in);
    parameters_read = true;
    if (stream.peek() == std::ifstream::traits_type::eof()) return FileKind::ParameterSet;
    read_ks_params(in, p);
    std::error_code ec;
    const std::uint64_t size = fs::file_size(path, ec);
    if (!ec && size > cloud_keyset_bytes(p)) return FileKind::SecretKeySet;
    return FileKind::CloudKeySet;
  } catch (const FormatError&) {
    // The loaders say what is wrong. A file that goes on after its parameter blocks is meant
    // as a keyset.
    return parameters_read ? FileKind::CloudKeySet : FileKind::ParameterSet;
  }
}

Parameters read_parameter_set(std::istream& in) {
  return read_parameter_set_impl(in, "tfhe_lib::read_parameter_set");
}
void write_parameter_set(std::ostream& out, const Parameters& params) {
  write_parameter_set_impl(out, params, "tfhe_lib::write_parameter_set");
}
LweKeyFile read_lwe_key(std::istream& in) {
  return read_lwe_key_impl(in, "tfhe_lib::read_lwe_key");
}
void write_lwe_key(std::ostream& out, const SecretKey& key) {
  write_lwe_key_impl(out, key, "tfhe_lib::write_lwe_key");
}
TgswKeyFile read_tgsw_key(std::istream& in) {
  return read_tgsw_key_impl(in, "tfhe_lib::read_tgsw_key");
}
void write_tgsw_key(std::ostream& out, const SecretKey& key) {
  write_tgsw_key_impl(out, key, "tfhe_lib::write_tgsw_key");
}

SecretKey to_secret_key(const LweKeyFile& lwe, const TgswKeyFile& tgsw) {
  IntegerFields f;
  f.lwe_dimension = lwe.params.lwe_dimension;
  f.glwe_dimension = tgsw.tlwe.glwe_dimension;
  f.polynomial_size = tgsw.tlwe.polynomial_size;
  f.bk_base_log = tgsw.tgsw.bk_base_log;
  f.bk_level_count = tgsw.tgsw.bk_level_count;
  return to_secret_key(unique_match(f, "tfhe_lib::to_secret_key: the LWE and TGSW key files"), lwe,
                       tgsw);
}

SecretKey to_secret_key(const Parameters& params, const LweKeyFile& lwe, const TgswKeyFile& tgsw) {
  params.validate();
  const std::string fn = "tfhe_lib::to_secret_key";
  std::string differs;
  auto compare = [&](const char* file, const char* field, std::uint32_t got, std::uint32_t want) {
    if (got != want) {
      differs += (differs.empty() ? "" : ", ") + std::string(file) + " " + field + "=" +
                 std::to_string(got) + " (the set has " + std::to_string(want) + ")";
    }
  };
  compare("LWE key", "n", lwe.params.lwe_dimension, params.lwe_dimension);
  compare("TGSW key", "N", tgsw.tlwe.polynomial_size, params.polynomial_size);
  compare("TGSW key", "k", tgsw.tlwe.glwe_dimension, params.glwe_dimension);
  compare("TGSW key", "Bgbit", tgsw.tgsw.bk_base_log, params.bk_base_log);
  compare("TGSW key", "l", tgsw.tgsw.bk_level_count, params.bk_level_count);
  compare("LWE key", "key size", lwe.key.lwe_dimension(), params.lwe_dimension);
  compare("TGSW key", "key polynomials", tgsw.key.glwe_dimension(), params.glwe_dimension);
  compare("TGSW key", "key polynomial size", tgsw.key.polynomial_size(), params.polynomial_size);
  const std::string noise =
      noise_differences(lwe.params, "LWE key", tgsw.tlwe, "TGSW key", params);
  differs += (differs.empty() || noise.empty() ? "" : ", ") + noise;
  if (!differs.empty()) {
    throw FormatError(fn + ": the key files do not fit parameter set '" + params.name +
                      "': " + differs);
  }
  return SecretKey(params, lwe.key, tgsw.key);
}

CloudKeySetFile read_cloud_keyset(std::istream& in) {
  return read_cloud_keyset_impl(in, "tfhe_lib::read_cloud_keyset");
}
void write_cloud_keyset(std::ostream& out, const CloudKey& key) {
  write_cloud_keyset_impl(out, KeysetView::library_default(key), "tfhe_lib::write_cloud_keyset");
}
void write_cloud_keyset(std::ostream& out, const CloudKeySetFile& file) {
  write_cloud_keyset_impl(out, KeysetView::of(file), "tfhe_lib::write_cloud_keyset");
}
SecretKeySetFile read_secret_keyset(std::istream& in) {
  return read_secret_keyset_impl(in, "tfhe_lib::read_secret_keyset");
}
void write_secret_keyset(std::ostream& out, const SecretKey& secret, const CloudKey& cloud) {
  write_secret_keyset_impl(out, secret, KeysetView::library_default(cloud),
                           "tfhe_lib::write_secret_keyset");
}
void write_secret_keyset(std::ostream& out, const SecretKeySetFile& file) {
  write_secret_keyset_impl(out, file.secret, KeysetView::of(file.cloud),
                           "tfhe_lib::write_secret_keyset");
}

LweBatch read_gate_ciphertexts(std::istream& in, const Parameters& params,
                               std::vector<double>* variances) {
  return read_gate_ciphertexts_impl(in, params, variances, "tfhe_lib::read_gate_ciphertexts");
}
void write_gate_ciphertexts(std::ostream& out, const Parameters& params, const LweBatch& batch) {
  write_gate_ciphertexts_impl(out, params, batch, {}, false, "tfhe_lib::write_gate_ciphertexts");
}
void write_gate_ciphertexts(std::ostream& out, const Parameters& params, const LweBatch& batch,
                            std::span<const double> variances) {
  write_gate_ciphertexts_impl(out, params, batch, variances, true,
                              "tfhe_lib::write_gate_ciphertexts");
}

// Each save_* validates before opening, so a bad argument never truncates an existing file.
Parameters load_parameter_set(const fs::path& path) {
  return load_file(path, "tfhe_lib::load_parameter_set", "the parameter set",
                   read_parameter_set_impl);
}
void save_parameter_set(const fs::path& path, const Parameters& params) {
  params.validate();
  save_file(path, "tfhe_lib::save_parameter_set", [&](std::ostream& out, const std::string& ctx) {
    write_parameter_set_impl(out, params, ctx);
  });
}
LweKeyFile load_lwe_key(const fs::path& path) {
  return load_file(path, "tfhe_lib::load_lwe_key", "the LWE key", read_lwe_key_impl);
}
void save_lwe_key(const fs::path& path, const SecretKey& key) {
  check_key(key, "tfhe_lib::save_lwe_key");
  save_file(
      path, "tfhe_lib::save_lwe_key",
      [&](std::ostream& out, const std::string& ctx) { write_lwe_key_impl(out, key, ctx); },
      detail::FileAccess::Secret);
}
TgswKeyFile load_tgsw_key(const fs::path& path) {
  return load_file(path, "tfhe_lib::load_tgsw_key", "the TGSW key", read_tgsw_key_impl);
}
void save_tgsw_key(const fs::path& path, const SecretKey& key) {
  check_key(key, "tfhe_lib::save_tgsw_key");
  save_file(
      path, "tfhe_lib::save_tgsw_key",
      [&](std::ostream& out, const std::string& ctx) { write_tgsw_key_impl(out, key, ctx); },
      detail::FileAccess::Secret);
}
SecretKey load_secret_key(const fs::path& lwe_key_path, const fs::path& tgsw_key_path) {
  const LweKeyFile lwe = load_lwe_key(lwe_key_path);
  const TgswKeyFile tgsw = load_tgsw_key(tgsw_key_path);
  try {
    return to_secret_key(lwe, tgsw);
  } catch (const FormatError& e) {
    throw FormatError("tfhe_lib::load_secret_key: " + quoted(lwe_key_path) + " and " +
                      quoted(tgsw_key_path) + ": " + e.what());
  }
}
LweBatch load_gate_ciphertexts(const fs::path& path, const Parameters& params,
                               std::vector<double>* variances) {
  params.validate();
  return load_file(path, "tfhe_lib::load_gate_ciphertexts", "the ciphertexts",
                   [&](std::istream& in, const std::string& ctx) {
                     return read_gate_ciphertexts_impl(in, params, variances, ctx);
                   });
}
void save_gate_ciphertexts(const fs::path& path, const Parameters& params, const LweBatch& batch) {
  const std::string fn = "tfhe_lib::save_gate_ciphertexts";
  check_ciphertext_args(params, batch, {}, false, fn);
  save_file(path, fn, [&](std::ostream& out, const std::string& ctx) {
    write_gate_ciphertexts_impl(out, params, batch, {}, false, ctx);
  });
}
void save_gate_ciphertexts(const fs::path& path, const Parameters& params, const LweBatch& batch,
                           std::span<const double> variances) {
  const std::string fn = "tfhe_lib::save_gate_ciphertexts";
  check_ciphertext_args(params, batch, variances, true, fn);
  save_file(path, fn, [&](std::ostream& out, const std::string& ctx) {
    write_gate_ciphertexts_impl(out, params, batch, variances, true, ctx);
  });
}

CloudKeySetFile load_cloud_keyset(const fs::path& path) {
  return load_file(path, "tfhe_lib::load_cloud_keyset", "the cloud keyset",
                   read_cloud_keyset_impl);
}
static void save_cloud_keyset_view(const fs::path& path, const KeysetView& file) {
  const std::string fn = "tfhe_lib::save_cloud_keyset";
  check_keyset_file(file, fn);
  save_file(path, fn, [&](std::ostream& out, const std::string& ctx) {
    write_cloud_keyset_impl(out, file, ctx);
  });
}
void save_cloud_keyset(const fs::path& path, const CloudKey& key) {
  save_cloud_keyset_view(path, KeysetView::library_default(key));
}
void save_cloud_keyset(const fs::path& path, const CloudKeySetFile& file) {
  save_cloud_keyset_view(path, KeysetView::of(file));
}
SecretKeySetFile load_secret_keyset(const fs::path& path) {
  return load_file(path, "tfhe_lib::load_secret_keyset", "the secret keyset",
                   read_secret_keyset_impl);
}
static void save_secret_keyset_view(const fs::path& path, const SecretKey& secret,
                             const KeysetView& file) {
  const std::string fn = "tfhe_lib::save_secret_keyset";
  check_secret_keyset(secret, file, fn);
  save_file(
      path, fn,
      [&](std::ostream& out, const std::string& ctx) {
        write_secret_keyset_impl(out, secret, file, ctx);
      },
      detail::FileAccess::Secret);
}
void save_secret_keyset(const fs::path& path, const SecretKey& secret, const CloudKey& cloud) {
  save_secret_keyset_view(path, secret, KeysetView::library_default(cloud));
}
void save_secret_keyset(const fs::path& path, const SecretKeySetFile& file) {
  save_secret_keyset_view(path, file.secret, KeysetView::of(file.cloud));
}

}  // namespace torusgate::tfhe_lib
