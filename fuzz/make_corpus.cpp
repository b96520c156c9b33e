// Writes the seed corpus of every harness (fuzz/corpus/<harness>/) with the library's own
// writers and a fixed seed: small valid objects (the tiny and toy INSECURE sets; tfhe_lib_128
// where the object is small) and interesting invalid ones (truncated, corrupted, oversized
// counts, wrong types). Usage: make_fuzz_corpus <corpus directory>. Deterministic: running it
// again rewrites the same bytes.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "torusgate/core/keys.hpp"
#include "torusgate/core/random.hpp"
#include "torusgate/core/serialization.hpp"
#include "torusgate/core/tfhe_lib_format.hpp"
#include "torusgate/fpga_fft/verilog.hpp"

namespace {

using namespace torusgate;
namespace fs = std::filesystem;

fs::path root;
std::size_t files = 0, total_bytes = 0;

void put(const std::string& harness, const std::string& name, const std::string& bytes) {
  const fs::path dir = root / harness;
  fs::create_directories(dir);
  std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw SystemError("make_fuzz_corpus: cannot write " + (dir / name).string());
  ++files;
  total_bytes += bytes.size();
}

std::string bytes_of(const std::function<void(std::ostream&)>& write) {
  std::ostringstream out(std::ios::out | std::ios::binary);
  write(out);
  return out.str();
}

void put_u32(std::string& s, std::size_t offset, std::uint32_t v) {
  for (int b = 0; b < 4; ++b) s[offset + b] = static_cast<char>(v >> (8 * b));
}
void put_u64(std::string& s, std::size_t offset, std::uint64_t v) {
  for (int b = 0; b < 8; ++b) s[offset + b] = static_cast<char>(v >> (8 * b));
}

// Offset of the object body in a native file of parameters `p` (format versions 1 and 2).
std::size_t body_offset(const Parameters& p) { return 24 + 4 + p.name.size() + 7 * 4 + 16 + 4; }
// In format version 3 (secret keys; cloud keys, ciphertext batches and integer arrays that name
// their key): the key id at body_offset, the body after it.
std::size_t body_v3(const Parameters& p) { return body_offset(p) + 8; }

// Index of `p` among fuzz::candidate_parameter_sets(), as the harnesses' control byte wants it.
std::uint8_t candidate_index(const Parameters& p) {
  const auto sets = fuzz::candidate_parameter_sets();
  for (std::size_t i = 0; i < sets.size(); ++i) {
    if (sets[i] == p) return static_cast<std::uint8_t>(i);
  }
  throw InvalidArgument("make_fuzz_corpus: " + p.name + " is not a candidate set");
}

// Control byte of the native harnesses: `reseal` in bit 0, the candidate set in bits 1..6,
// a stream that cannot seek in bit 7.
std::string native(const Parameters& expected, bool reseal, const std::string& file,
                   bool seekable = true) {
  const auto control = static_cast<char>((candidate_index(expected) << 1) | (reseal ? 1 : 0) |
                                         (seekable ? 0 : 128));
  return std::string(1, control) + file;
}

std::string truncated(const std::string& s, std::size_t size) { return s.substr(0, size); }

void native_seeds(const SecretKey& tiny_key, const CloudKey& tiny_cloud, const SecretKey& toy_key,
                  const CloudKey& toy_cloud, Csprng& rng) {
  const Parameters tiny = tiny_key.parameters(), toy = toy_key.parameters();

  // Parameters: every named set and the tiny one; then broken headers.
  for (const Parameters& p : fuzz::candidate_parameter_sets()) {
    put("native_parameters", "valid_" + p.name,
        native(tiny, false, bytes_of([&](std::ostream& o) { write_parameters(o, p); })));
  }
  const std::string params = bytes_of([&](std::ostream& o) { write_parameters(o, toy); });
  put("native_parameters", "empty", std::string(1, '\0'));
  put("native_parameters", "truncated_in_name", native(tiny, false, truncated(params, 30)));
  put("native_parameters", "truncated_before_checksum",
      native(tiny, false, truncated(params, params.size() - 8)));
  {
    std::string s = params;
    s[0] = 'X';
    put("native_parameters", "bad_magic", native(tiny, true, s));
    s = params;
    put_u32(s, 8, 3);  // versions 1 to 3 are read, but parameters are version 1 only
    put("native_parameters", "version_3", native(tiny, true, s));
    s = params;
    put_u32(s, 8, 4);
    put("native_parameters", "version_4", native(tiny, true, s));
    s = params;
    put_u32(s, 12, 9);
    put("native_parameters", "unknown_type", native(tiny, true, s));
    s = params;
    put_u32(s, 24, 0);
    put("native_parameters", "name_length_0", native(tiny, true, s));
    s = params;
    put_u32(s, 24, 256);
    put("native_parameters", "name_length_256", native(tiny, true, s));
    s = params;
    put_u64(s, 16, 0x0123456789abcdefULL);
    put("native_parameters", "fingerprint_mismatch", native(tiny, true, s));
    s = params;
    put_u32(s, body_offset(toy) - 4, 2);
    put("native_parameters", "insecure_flag_2", native(tiny, true, s));
    s = params;
    put_u32(s, 24 + 4 + toy.name.size() + 8, 100);  // polynomial_size
    put("native_parameters", "polynomial_size_100", native(tiny, true, s));
    s = params;
    s[s.size() - 1] ^= 1;
    put("native_parameters", "bad_checksum", native(tiny, false, s));
    s = params;
    s[24 + 4 + 1] = 0x1f;  // the name's second byte: not printable
    put("native_parameters", "name_byte_1f", native(tiny, true, s));
  }

  // Secret keys.
  const std::string tiny_sk = bytes_of([&](std::ostream& o) { write_secret_key(o, tiny_key); });
  const std::string toy_sk = bytes_of([&](std::ostream& o) { write_secret_key(o, toy_key); });
  put("native_secret_key", "valid_tiny", native(tiny, false, tiny_sk));
  put("native_secret_key", "valid_toy", native(tiny, false, toy_sk));
  put("native_secret_key", "truncated_toy", native(tiny, false, truncated(toy_sk, 700)));
  put("native_secret_key", "valid_toy_unseekable", native(tiny, false, toy_sk, false));
  {
    std::string s = tiny_sk;
    put_u32(s, body_v3(tiny) + 8, 2);  // LWE coefficient 0
    put("native_secret_key", "coefficient_2_resealed", native(tiny, true, s));
    s = tiny_sk;
    put_u64(s, body_v3(tiny), 3);
    put("native_secret_key", "lwe_count_3", native(tiny, true, s));
    s = tiny_sk;
    put_u64(s, body_offset(tiny), 0x0123456789abcdefULL);  // another key's id
    put("native_secret_key", "key_id_mismatch", native(tiny, true, s));
    s = tiny_sk;
    put_u64(s, body_offset(tiny), 0);
    put("native_secret_key", "key_id_0", native(tiny, true, s));
    // The same key in format version 1 (no key id), as builds before key ids wrote it.
    s = tiny_sk.substr(0, body_offset(tiny)) + tiny_sk.substr(body_v3(tiny));
    put_u32(s, 8, 1);
    put("native_secret_key", "valid_tiny_version_1", native(tiny, true, s));
    s = tiny_sk;
    put_u32(s, 12, static_cast<std::uint32_t>(ObjectType::CloudKey));
    put("native_secret_key", "says_cloud_key", native(tiny, true, s));
  }

  // Cloud keys: the whole tiny key, the start of the toy one, hostile counts.
  const std::string tiny_ck = bytes_of([&](std::ostream& o) { write_cloud_key(o, tiny_cloud); });
  const std::string toy_ck = bytes_of([&](std::ostream& o) { write_cloud_key(o, toy_cloud); });
  put("native_cloud_key", "valid_tiny", native(tiny, false, tiny_ck));
  put("native_cloud_key", "truncated_toy", native(tiny, false, truncated(toy_ck, 2048)));
  put("native_cloud_key", "valid_tiny_unseekable", native(tiny, false, tiny_ck, false));
  put("native_cloud_key", "truncated_toy_unseekable",
      native(tiny, false, truncated(toy_ck, 2048), false));
  {
    std::string s = tiny_ck;
    put_u64(s, body_v3(tiny) + 4, std::uint64_t{1} << 62);  // after the key id and the form
    put("native_cloud_key", "bk_count_2p62", native(tiny, true, s));
    const std::size_t ksk_count_at =
        body_v3(tiny) + 4 + 8 + 4 * tiny_cloud.bootstrapping_key().data().size();
    s = tiny_ck;
    put_u64(s, ksk_count_at, 1);
    put("native_cloud_key", "ksk_count_1", native(tiny, true, s));
    s = tiny_ck;
    s[body_v3(tiny) + 20] ^= 0x40;
    put("native_cloud_key", "flipped_bit", native(tiny, false, s));
    // Without a key id: format version 1, as a cloud key imported from the TFHE library.
    put("native_cloud_key", "valid_tiny_version_1",
        native(tiny, false, bytes_of([&](std::ostream& o) {
          write_cloud_key(o, CloudKey(tiny_cloud.bootstrapping_key(),
                                      tiny_cloud.key_switching_key()));
        })));
  }
  {
    // An unrolled key (format version 2, with its form field), from a generator of its own
    // so that the seeds after it do not change; and forms that are none of 1 to 4.
    Csprng own = Csprng::deterministic(20261126, testing::insecure_deterministic);
    const CloudKey unrolled = CloudKey::generate(tiny_key, own, 2);
    std::string s = bytes_of([&](std::ostream& o) { write_cloud_key(o, unrolled); });
    put("native_cloud_key", "valid_tiny_unrolled", native(tiny, false, s));
    put_u32(s, body_v3(tiny), 4);  // a valid form, but not the one the key's size is for
    put("native_cloud_key", "unroll_4", native(tiny, true, s));
    for (const std::uint32_t form : {0u, 5u}) {  // none of the forms 1 to 4
      put_u32(s, body_v3(tiny), form);
      put("native_cloud_key", "unroll_" + std::to_string(form), native(tiny, true, s));
    }
    // Version 2: the form field without a key id.
    s = bytes_of([&](std::ostream& o) {
      write_cloud_key(o, CloudKey(unrolled.bootstrapping_key(), unrolled.key_switching_key()));
    });
    put("native_cloud_key", "valid_tiny_unrolled_version_2", native(tiny, false, s));
    put_u32(s, body_offset(tiny), 1);  // a standard key in version 2: version 1's encoding
    put("native_cloud_key", "unroll_1_version_2", native(tiny, true, s));
    // Key bits in threes (form 3; the tiny set's n = 2 is left to two standard GGSW).
    const CloudKey threes = CloudKey::generate(tiny_key, own, 3);
    put("native_cloud_key", "valid_tiny_threes",
        native(tiny, false, bytes_of([&](std::ostream& o) { write_cloud_key(o, threes); })));
  }

  // Ciphertext batches.
  const LweBatch tiny_batch = encrypt_bits(tiny_key, std::vector<std::uint8_t>{1, 0, 1}, rng);
  const LweBatch toy_batch = encrypt_bits(toy_key, std::vector<std::uint8_t>{0, 1}, rng);
  const std::string tiny_ct =
      bytes_of([&](std::ostream& o) { write_ciphertexts(o, tiny, tiny_batch); });
  const std::string toy_ct = bytes_of([&](std::ostream& o) { write_ciphertexts(o, toy, toy_batch); });
  put("native_ciphertexts", "valid_tiny", native(tiny, false, tiny_ct));
  put("native_ciphertexts", "valid_toy", native(toy, false, toy_ct));
  put("native_ciphertexts", "valid_toy_unseekable", native(toy, false, toy_ct, false));
  // Version 3: the batch names its secret key.
  put("native_ciphertexts", "valid_toy_key_id",
      native(toy, false, bytes_of([&](std::ostream& o) {
               write_ciphertexts(o, toy, toy_batch, toy_key.key_id());
             })));
  put("native_ciphertexts", "valid_empty",
      native(tiny, false, bytes_of([&](std::ostream& o) { write_ciphertexts(o, tiny, LweBatch(tiny.lwe_dimension, 0)); })));
  put("native_ciphertexts", "toy_expected_tiny", native(tiny, false, toy_ct));
  {
    std::string s = tiny_ct;
    put_u64(s, body_offset(tiny), std::uint64_t{1} << 40);
    put("native_ciphertexts", "count_2p40", native(tiny, true, s));
    put("native_ciphertexts", "count_2p40_unseekable", native(tiny, true, s, false));
    s = tiny_ct;
    put_u64(s, body_offset(tiny), ~std::uint64_t{0});
    put("native_ciphertexts", "count_max", native(tiny, true, s));
    s = tiny_ct;
    put_u64(s, body_offset(tiny) + 8, 4);
    put("native_ciphertexts", "words_per_sample_4", native(tiny, true, s));
  }

  // Integer arrays.
  const auto array_bytes = [&](const SecretKey& key, std::uint32_t width, bool is_signed,
                               std::uint64_t rows, std::uint64_t cols) {
    IntegerArrayCiphertext a;
    a.width = width;
    a.is_signed = is_signed;
    a.rows = rows;
    a.cols = cols;
    std::vector<std::uint8_t> bits(width * rows * cols);
    for (std::size_t i = 0; i < bits.size(); ++i) bits[i] = static_cast<std::uint8_t>(i % 3 == 0);
    a.samples = encrypt_bits(key, bits, rng);
    return bytes_of([&](std::ostream& o) { write_integer_array(o, key.parameters(), a); });
  };
  const std::string tiny_arr = array_bytes(tiny_key, 8, true, 1, 3);
  put("native_integer_array", "valid_tiny_s8_1x3", native(tiny, false, tiny_arr));
  put("native_integer_array", "valid_tiny_s8_1x3_unseekable", native(tiny, false, tiny_arr, false));
  put("native_integer_array", "valid_tiny_u3_2x2",
      native(tiny, false, array_bytes(tiny_key, 3, false, 2, 2)));
  put("native_integer_array", "valid_toy_u2_1x2",
      native(toy, false, array_bytes(toy_key, 2, false, 1, 2)));
  {
    const std::size_t at = body_offset(tiny);
    std::string s = tiny_arr;
    put_u32(s, at, 0);
    put("native_integer_array", "width_0", native(tiny, true, s));
    s = tiny_arr;
    put_u32(s, at, 129);
    put("native_integer_array", "width_129", native(tiny, true, s));
    s = tiny_arr;
    put_u32(s, at + 4, 2);
    put("native_integer_array", "signedness_2", native(tiny, true, s));
    s = tiny_arr;
    put_u64(s, at + 8, 0);
    put("native_integer_array", "rows_0", native(tiny, true, s));
    s = tiny_arr;
    put_u64(s, at + 8, std::uint64_t{1} << 33);
    put_u64(s, at + 16, std::uint64_t{1} << 33);
    put("native_integer_array", "shape_2p66", native(tiny, true, s));
    s = tiny_arr;
    put_u64(s, at + 24, 25);
    put("native_integer_array", "sample_count_25", native(tiny, true, s));
  }
  {
    // Format version 3: the array names its secret key (a generator of its own, so that the
    // seeds after it do not change).
    Csprng own = Csprng::deterministic(20261206, testing::insecure_deterministic);
    IntegerArrayCiphertext a;
    a.width = 2;
    a.rows = 1;
    a.cols = 2;
    a.samples = encrypt_bits(tiny_key, std::vector<std::uint8_t>{1, 0, 0, 1}, own);
    a.key_id = tiny_key.key_id();
    std::string s = bytes_of([&](std::ostream& o) { write_integer_array(o, tiny, a); });
    put("native_integer_array", "valid_tiny_u2_keyed", native(tiny, false, s));
    put_u64(s, body_offset(tiny), 0);
    put("native_integer_array", "key_id_0", native(tiny, true, s));
  }

  // Files: each valid object as a whole file, one with trailing bytes, one foreign.
  put("native_file", "parameters", params);
  put("native_file", "secret_key", tiny_sk);
  put("native_file", "cloud_key", tiny_ck);
  put("native_file", "ciphertexts", tiny_ct);
  put("native_file", "integer_array", tiny_arr);
  put("native_file", "trailing_bytes", tiny_ct + "xyz");
  put("native_file", "short_foreign", "TGA");
  put("native_file", "empty", "");

  // The CLI's checks of its input files: native files (tfhe_lib_seeds adds library ones).
  put("cli_info", "secret_key", tiny_sk);
  put("cli_info", "cloud_key", tiny_ck);
  put("cli_info", "ciphertexts", tiny_ct);
  put("cli_info", "integer_array", tiny_arr);
  put("cli_info", "truncated_cloud_key", truncated(tiny_ck, tiny_ck.size() / 2));
  put("cli_info", "foreign", "PK\x03\x04 not ours");
}

void tfhe_lib_seeds(const SecretKey& toy_secret, const CloudKey& toy_cloud, Csprng& rng) {
  namespace tl = tfhe_lib;
  for (const Parameters& p : all_parameter_sets()) {
    put("tfhe_lib_parameter_set", "valid_" + p.name,
        bytes_of([&](std::ostream& o) { tl::write_parameter_set(o, p); }));
  }
  const Parameters toy = toy_insecure(), toy_k2 = toy_k2_insecure();
  const std::string toy_text = bytes_of([&](std::ostream& o) { tl::write_parameter_set(o, toy); });
  put("tfhe_lib_parameter_set", "tiny_not_named",
      bytes_of([&](std::ostream& o) { tl::write_parameter_set(o, fuzz::tiny_insecure()); }));
  {
    std::string s = toy_text;
    s.replace(s.find("n:  "), 4, "n:");
    put("tfhe_lib_parameter_set", "no_column_spaces", s);
    s = toy_text;
    const std::size_t at = s.find("ks_t:");
    s.insert(at, s.substr(at, s.find('\n', at) - at + 1));
    put("tfhe_lib_parameter_set", "repeated_key", s);
    put("tfhe_lib_parameter_set", "truncated", truncated(toy_text, toy_text.size() / 2));
    s = toy_text;
    s.replace(s.find("alpha_min: "), 11, "alpha_min: -");
    put("tfhe_lib_parameter_set", "negative_alpha", s);
    // One line changed: each of the block and number checks.
    const auto edited = [&](const std::string& name, const std::string& from,
                            const std::string& to) {
      std::string t = toy_text;
      const std::size_t at = t.find(from);
      if (at == std::string::npos) throw InvalidArgument("make_fuzz_corpus: no '" + from + "'");
      t.replace(at, from.size(), to);
      put("tfhe_lib_parameter_set", name, t);
    };
    edited("no_colon", "Bgbit:", "Bgbit");
    edited("unknown_key", "l:   ", "q:   ");
    edited("missing_key", "ks_t:          5\n", "");
    edited("block_out_of_order", "-----BEGIN GATEBOOTSPARAMS-----", "-----BEGIN LWEPARAMS-----");
    edited("n_not_a_number", "n:         64", "n:         6x4");
    edited("n_2p32", "n:         64", "n: 4294967360");
    edited("alpha_out_of_range", "alpha_max: 0.01246700", "alpha_max: 1e999");
    edited("alpha_not_a_number", "alpha_max: 0.01246700", "alpha_max: 0.012.467");
    edited("noise_of_another_set", "alpha_max: 0.01246700", "alpha_max: 0.02");
  }

  const SecretKey toy_key(toy, rng), toy_k2_key(toy_k2, rng), lib_key(tfhe_lib_128(), rng);
  for (const SecretKey* k : {&toy_key, &toy_k2_key, &lib_key}) {
    const std::string name = k->parameters().name;
    const std::string lwe = bytes_of([&](std::ostream& o) { tl::write_lwe_key(o, *k); });
    const std::string tgsw = bytes_of([&](std::ostream& o) { tl::write_tgsw_key(o, *k); });
    put("tfhe_lib_lwe_key", "valid_" + name, lwe);
    put("tfhe_lib_tgsw_key", "valid_" + name, tgsw);
    put("tfhe_lib_secret_key", "valid_" + name,
        std::string(1, static_cast<char>(candidate_index(k->parameters()))) + lwe + tgsw);
    if (k == &toy_key) {
      put("tfhe_lib_lwe_key", "truncated_" + name, truncated(lwe, lwe.size() - 3));
      std::string s = lwe;
      s[s.size() - 4] = 2;
      put("tfhe_lib_lwe_key", "coefficient_2", s);
      put("tfhe_lib_tgsw_key", "lwe_key_instead", lwe);
      put("tfhe_lib_secret_key", "given_other_set", std::string(1, 0) + lwe + tgsw);
      put("tfhe_lib_secret_key", "keys_swapped", std::string(1, 4) + tgsw + lwe);
    }
  }

  for (const Parameters& p : {fuzz::tiny_insecure(), toy, tfhe_lib_128()}) {
    const SecretKey key(p, rng);
    const LweBatch batch = encrypt_bits(key, std::vector<std::uint8_t>{1, 0}, rng);
    const std::string bytes = bytes_of([&](std::ostream& o) { tl::write_gate_ciphertexts(o, p, batch); });
    const std::string control(1, static_cast<char>(candidate_index(p)));
    put("tfhe_lib_ciphertexts", "valid_" + p.name, control + bytes);
    if (p == toy) {
      put("tfhe_lib_ciphertexts", "truncated_" + p.name, control + truncated(bytes, bytes.size() - 5));
      std::string s = bytes;
      s[0] = 43;
      put("tfhe_lib_ciphertexts", "type_id_43", control + s);
    }
  }
  put("tfhe_lib_ciphertexts", "empty", std::string(1, 0));

  // Keysets: even the toy ones are megabytes, so their openings (the text blocks and the first
  // samples), cut at a few points, and a few corrupted blocks.
  const std::string cloud =
      bytes_of([&](std::ostream& o) { tl::write_cloud_keyset(o, toy_cloud); });
  const std::string secret =
      bytes_of([&](std::ostream& o) { tl::write_secret_keyset(o, toy_secret, toy_cloud); });
  const std::size_t text_end = cloud.find("-----END LWEKSPARAMS-----\n") + 26;
  for (const std::size_t cut : {text_end, text_end + 4, text_end + 12, text_end + 2048}) {
    put("tfhe_lib_cloud_keyset", "toy_cut_" + std::to_string(cut), truncated(cloud, cut));
    put("tfhe_lib_secret_keyset", "toy_cut_" + std::to_string(cut), truncated(secret, cut));
  }
  {
    std::string s = truncated(cloud, text_end + 64);
    const std::size_t t_line = s.find("\nt:", s.find("BEGIN LWEKSPARAMS")) + 1;
    s.replace(t_line, s.find('\n', t_line) - t_line, "t: 9");
    put("tfhe_lib_cloud_keyset", "ks_t_mismatch", s);
    s = truncated(cloud, text_end + 64);
    s[text_end] = static_cast<char>(201);  // bootstrapping-key id where the KS key's belongs
    put("tfhe_lib_cloud_keyset", "swapped_type_id", s);
  }
  put("tfhe_lib_cloud_keyset", "parameter_set_only", toy_text);

  // Files: one of each kind identify_file knows.
  put("tfhe_lib_file", "parameter_set", toy_text);
  put("tfhe_lib_file", "lwe_key", bytes_of([&](std::ostream& o) { tl::write_lwe_key(o, toy_secret); }));
  put("tfhe_lib_file", "tgsw_key", bytes_of([&](std::ostream& o) { tl::write_tgsw_key(o, toy_secret); }));
  put("tfhe_lib_file", "gate_ciphertexts",
      bytes_of([&](std::ostream& o) {
        tl::write_gate_ciphertexts(o, toy, encrypt_bits(toy_secret, std::vector<std::uint8_t>{1}, rng));
      }));
  put("tfhe_lib_file", "cloud_keyset_cut", truncated(cloud, text_end + 256));
  put("tfhe_lib_file", "parameter_set_trailing", toy_text + "x");

  put("cli_info", "tfhe_lib_parameter_set", toy_text);
  put("cli_info", "tfhe_lib_lwe_key",
      bytes_of([&](std::ostream& o) { tl::write_lwe_key(o, toy_secret); }));
  const std::string gates = bytes_of([&](std::ostream& o) {
    tl::write_gate_ciphertexts(o, toy, encrypt_bits(toy_secret, std::vector<std::uint8_t>{1}, rng));
  });
  put("cli_info", "tfhe_lib_gate_ciphertexts", gates);
  // Starts as gate ciphertexts, but no named set's dimension reads it whole.
  put("cli_info", "tfhe_lib_gate_ciphertexts_cut", truncated(gates, gates.size() - 1));
  put("cli_info", "tfhe_lib_cloud_keyset_cut", truncated(cloud, text_end + 256));
  put("cli_info", "tfhe_lib_begin_only", "-----BEGIN LWEPARAMS-----\n");
}

void text_seeds() {
  const auto csv = [](int width, bool binary, const std::string& target, const std::string& text) {
    return std::string(1, static_cast<char>((binary ? 0x80 : 0) | (width - 2))) + target + "\n" +
           text;
  };
  put("regression_csv", "houses",
      csv(8, false, "price_100k",
          "rooms,age_decades,distance_km,price_100k\n3,1.2,2.5,3.1\n2,3.5,1.0,2.4\n"
          "4,0.5,5.0,4.2\n3,2.0,3.0,3.0\n5,1.0,8.0,5.1\n"));
  put("regression_csv", "binary",
      csv(4, true, "y", "a,b,y\n0,1,1\n1,0,0\n1,1,1\n0,0,0\n1,1,0\n"));
  put("regression_csv", "quoted_crlf_bom",
      csv(16, false, "t", "\xEF\xBB\xBF\"x,1\",\"a\"\"b\",t\r\n1e3, -2.5 ,+7\r\n0.1,2,3\r\n4,5,6\r\n"));
  put("regression_csv", "scientific_32bit",
      csv(32, false, "y", "x,y\n1e-300,1e300\n-4.5E+2,3\n1.7976931348623157e308,0\n"));
  put("regression_csv", "ragged", csv(8, false, "y", "x,y\n1,2\n3\n"));
  put("regression_csv", "no_target", csv(8, false, "z", "x,y\n1,2\n"));

  const auto values = [](int width, bool is_signed, const std::string& text) {
    return std::string(1, static_cast<char>((is_signed ? 64 : 0) | (width - 1))) + text;
  };
  put("cli_values", "list", values(8, false, "1,2,3,255"));
  put("cli_values", "matrix", values(8, true, "1 -2; 3 4\n-128 127 # row 3\n"));
  put("cli_values", "hex_binary", values(16, true, "0x7fff, -0x8000, +0b101, 0XfF\n"));
  put("cli_values", "u64", values(64, false, "18446744073709551615 0"));
  put("cli_values", "s64", values(64, true, "-9223372036854775808,9223372036854775807"));
  put("cli_values", "too_big", values(4, false, "16"));
  put("cli_values", "shape", values(1, false, "3 x 4"));
  put("cli_values", "ragged", values(8, false, "1 2\n3\n"));
  put("cli_values", "int128_edge", values(1, false, "-170141183460469231731687303715884105727"));
  put("cli_values", "not_an_integer", values(8, false, "1 2 0x\n3 4 5"));
  put("cli_values", "comma_missing_value", values(8, false, "1,,2"));
  put("cli_values", "comma_at_row_end", values(8, false, "1,2,\n3,4"));
  put("cli_values", "count_4096", values(8, false, "4096"));
  put("cli_values", "dataset_shape", values(8, false, "200x10"));
  put("cli_values", "count_u64_max_plus_1", values(8, false, "18446744073709551616"));

  // results.jsonl of compare_backends: records as it writes them, a resumed run's damaged
  // last line, escapes, and lines that are no JSON object.
  const std::string run =
      "{\"record\": \"run\", \"date\": \"2026-12-01T10:00:00Z\", \"argv\": [\"a\", \"b\"]}\n";
  const std::string result =
      "{\"record\": \"result\", \"workload\": \"gates\", \"size\": \"1\", "
      "\"backend\": \"openmp\", \"params\": \"toy_INSECURE\", \"status\": \"ok\", "
      "\"median_s\": 0.0125, \"times\": [0.0125, 0.013], \"note\": \"a \\\"b\\\" \\u0041\\n\", "
      "\"device\": null, \"check\": true, \"extra\": {\"x\": [1, {\"y\": \"]\"}]}}\n";
  put("compare_results", "run_and_result", run + result + result);
  put("compare_results", "unfinished_last_line", run + result.substr(0, result.size() / 2));
  put("compare_results", "damaged_middle_line", run + "{\"record\": \"run\",\n" + result);
  put("compare_results", "empty_object", "{}\n{ }\n");
  put("compare_results", "bad_values",
      "{\"a\": 1abc}\n{\"a\": -}\n{\"a\": [}\n{\"a\": \"\\u00zz\"}\n{\"a\" 1}\n{\"a\": 1,}\n"
      "{\"a\": 1} x\n{\"a\": x}\n{\"a\": [1, 2\n{\"a\": \"\\\n");
  put("compare_results", "empty", "");

  // The FPGA testbench's output.txt: two transforms of 4 points, 16-bit words.
  {
    std::vector<std::vector<fpga_fft::CWord>> words(2);
    for (std::int64_t i = 0; i < 8; ++i) {
      words[static_cast<std::size_t>(i / 4)].push_back(fpga_fft::CWord{i * 1000 - 32768, -i});
    }
    const std::string vectors = fpga_fft::format_vectors(words, 16);
    std::string lines;
    std::size_t cycle = 17;
    for (std::size_t start = 0; start < vectors.size(); ++cycle) {
      const std::size_t end = vectors.find('\n', start);
      lines += std::to_string(cycle) + " " + vectors.substr(start, end - start + 1);
      start = end + 1;
    }
    const std::string control = {static_cast<char>(16 - 8), static_cast<char>((2 << 2) | 1)};
    put("fpga_simulation_output", "valid_2x4_w16", control + lines);
    put("fpga_simulation_output", "short_2x4_w16", control + truncated(lines, lines.size() / 2));
    std::string s = lines;
    s[s.find(' ') + 1] = 'x';
    put("fpga_simulation_output", "undefined_bit", control + s);
    put("fpga_simulation_output", "no_cycle", control + lines.substr(lines.find(' ')));
    put("fpga_simulation_output", "cycle_too_big", control + "99999999999999999999 0000\n");
    put("fpga_simulation_output", "too_few_digits", control + "17 0000\n");
  }
}

// The kernel's text about this machine (host_text) and made-up control groups (host_cgroup:
// /proc/self/cgroup, then "--- PATH" and each file of the mount), as Linux and container
// runtimes write them; noise_study's --threshold, --kinds and --params (noise_study_options).
void host_seeds() {
  put("host_text", "cpuinfo_amd",
      "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\n"
      "model name\t: AMD EPYC\nstepping\t: 1\ncpu MHz\t\t: 2596.148\n"
      "flags\t\t: fpu vme sse sse2 avx avx2 avx512f\nbogomips\t: 5192.29\n\n"
      "processor\t: 1\nvendor_id\t: AuthenticAMD\n\n");
  put("host_text", "cpuinfo_intel",
      "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\n"
      "model name\t: Intel(R) Xeon(R) Platinum 8480+\nflags\t\t: sse2 avx2\n");
  put("host_text", "cpuinfo_arm",
      "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm\nCPU implementer\t: 0x41\n");
  put("host_text", "meminfo",
      "MemTotal:       24683772 kB\nMemFree:        23226852 kB\n"
      "MemAvailable:   23949052 kB\nBuffers:           16080 kB\nCached:           763380 kB\n"
      "Inactive(file):   397068 kB\nSwapTotal:             0 kB\n");
  put("host_text", "status", "Name:\tgrep\nVmPeak:\t    3908 kB\nVmSize:\t    3908 kB\n");
  put("host_text", "memory_stat",
      "anon 289132\nfile 763380\ninactive_file 397068\nactive_file 372088\n"
      "total_inactive_file 397068\n");
  put("host_text", "odd_numbers",
      "MemAvailable: 1e999 kB\nMemTotal: -5 kB\nVmSize: 0x10\ninactive_file nan\n"
      "total_inactive_file 18446744073709551616\n");

  put("host_cgroup", "v2_nested",
      "0::/job/task\n--- cgroup.controllers\nmemory\n--- job/memory.max\n1048576000\n"
      "--- job/memory.current\n734003200\n--- job/memory.stat\nanon 1\ninactive_file 104857600\n"
      "--- job/task/memory.max\nmax\n--- job/task/memory.current\n4096\n");
  put("host_cgroup", "v2_namespace_root",
      "0::/\n--- cgroup.controllers\ncpu memory\n--- memory.max\n536870912\n"
      "--- memory.current\n12582912\n");
  put("host_cgroup", "v2_hidden_group",
      "0::/../outside/group\n--- cgroup.controllers\nmemory\n--- memory.max\n536870912\n"
      "--- memory.current\n1\n");
  put("host_cgroup", "v2_deleted_group",
      "0::/job/gone (deleted)\n--- cgroup.controllers\nmemory\n--- job/memory.max\n1000\n"
      "--- job/memory.current\n10\n");
  put("host_cgroup", "v1_slurm",
      "9:cpu:/\n4:memory:/slurm/job_7/step_0\n0::/\n"
      "--- memory/memory.limit_in_bytes\n9223372036854771712\n"
      "--- memory/memory.usage_in_bytes\n1\n"
      "--- memory/slurm/job_7/memory.limit_in_bytes\n2147483648\n"
      "--- memory/slurm/job_7/memory.usage_in_bytes\n1073741824\n"
      "--- memory/slurm/job_7/memory.stat\ntotal_inactive_file 25165824\n"
      "--- memory/slurm/job_7/step_0/memory.limit_in_bytes\n9223372036854771712\n"
      "--- memory/slurm/job_7/step_0/memory.usage_in_bytes\n1\n");
  put("host_cgroup", "v1_comounted",
      "5:cpuset,memory:/docker/abc\n1:name=systemd:/docker/abc\n"
      "--- memory/docker/abc/memory.limit_in_bytes\n268435456\n"
      "--- memory/docker/abc/memory.usage_in_bytes\n1048576\n");
  put("host_cgroup", "odd_numbers",
      "0::/a\n--- cgroup.controllers\nmemory\n--- a/memory.max\n-5\n--- a/memory.current\n1e999\n"
      "--- memory.max\n100\n--- memory.current\nmax\n--- memory.stat\ninactive_file 1e300\n");
  put("host_cgroup", "none", "");

  put("noise_study_options", "threshold_two", "1:2:2");
  put("noise_study_options", "threshold_three", "-1:2:-8:8");
  put("noise_study_options", "threshold_boundary", "1:1");
  put("noise_study_options", "threshold_out_of_range", "99999999999:1");
  put("noise_study_options", "kinds", "nand,Xor,stress,T(0;1)");
  put("noise_study_options", "kinds_groups", "fixed,threshold");
  put("noise_study_options", "params", "real,toy");
  put("noise_study_options", "params_names", "tfhe_lib_128,toy_k2_INSECURE");
}

// The programs' command lines (command_line): the arguments after the program's name, each
// ended by a NUL or a line feed.
void command_line_seeds() {
  const auto arguments = [](std::initializer_list<std::string> args) {
    std::string text;
    for (const std::string& a : args) {
      text += a;
      text += '\0';
    }
    return text;
  };
  put("command_line", "cpu_options",
      arguments({"--threads", "4", "--task-size", "32", "--fft", "simd", "--out", "dir"}));
  put("command_line", "gpu_options",
      arguments({"--device", "0", "--gpu-engine", "fused", "--fused-lanes", "2",
                 "--no-cuda-graphs", "--transfer", "pinned", "--staging-mb", "8",
                 "--memory-budget-mb", "1024", "--key-switching", "tensor_core"}));
  put("command_line", "values_like_options",
      arguments({"--out", "./--name", "--reps", "-1", "--params", "--", "--quick", "-h"}));
  put("command_line", "repeatable", arguments({"--batch", "1", "--reps", "2", "--batch", "16"}));
  put("command_line", "given_twice", "--reps\n1\n--reps\n2\n");
  put("command_line", "option_as_value", "--out\n--quick\n");
  put("command_line", "missing_value", "--threads");
  put("command_line", "equals_value", "--threads=4\n--out=dir\n");
  put("command_line", "out_of_range", arguments({"--threads", "0", "--fused-groups", "1025"}));
  put("command_line", "empty_value", arguments({"--out", "", "--fft", "bogus"}));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_fuzz_corpus <corpus directory>\n");
    return 2;
  }
  root = argv[1];
  try {
    Csprng rng = Csprng::deterministic(20240601, testing::insecure_deterministic);
    const SecretKey tiny_key(fuzz::tiny_insecure(), rng);
    const CloudKey tiny_cloud = CloudKey::generate(tiny_key, rng);
    const SecretKey toy_key(toy_insecure(), rng);
    const CloudKey toy_cloud = CloudKey::generate(toy_key, rng);
    native_seeds(tiny_key, tiny_cloud, toy_key, toy_cloud, rng);
    tfhe_lib_seeds(toy_key, toy_cloud, rng);
    text_seeds();
    host_seeds();
    command_line_seeds();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_fuzz_corpus: %s\n", e.what());
    return 1;
  }
  std::printf("make_fuzz_corpus: %zu files, %zu bytes under %s\n", files, total_bytes,
              root.string().c_str());
  return 0;
}
