// Output and input files of the torusgate CLI (files.hpp).
#include "files.hpp"

#include <sys/stat.h>  // chmod, umask
#include <unistd.h>    // close

#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>  // mkstemp
#include <cstring>
#include <fstream>
#include <set>
#include <system_error>
#include <vector>

#include "errors.hpp"
#include "printable.hpp"
#include "torusgate/core/error.hpp"
#include "torusgate/core/tfhe_lib_format.hpp"

namespace torusgate::cli {
namespace {

namespace fs = std::filesystem;

// "a secret key", "an integer array", "parameters".
std::string with_article(ObjectType type) {
  const std::string name = object_type_name(type);
  if (type == ObjectType::Parameters) return name;
  return (name.front() == 'i' ? "an " : "a ") + name;
}

// What to tell a user who passed a file holding `got` where `want` belongs, as `role`.
std::string wrong_object_hint(ObjectType want, ObjectType got, const std::string& role) {
  if (role == "--from" && want == ObjectType::SecretKey) {
    return ": keygen --from makes a cloud key from the secret key (keygen writes it with "
           "--secret-key)";
  }
  if (want == ObjectType::CloudKey && got == ObjectType::SecretKey) {
    return ": the server evaluates with the cloud key alone and never needs the secret key "
           "(keygen writes the cloud key with --cloud-key)";
  }
  if (want == ObjectType::SecretKey && got == ObjectType::CloudKey) {
    return ": encrypting and decrypting need the secret key (keygen writes it with "
           "--secret-key); a cloud key cannot decrypt";
  }
  if (want == ObjectType::IntegerArray && got == ObjectType::CiphertextBatch) {
    return ": a ciphertext batch holds encrypted bits without an integer type or shape";
  }
  if (want == ObjectType::IntegerArray) {
    return ": pass a file that 'torusgate encrypt' or 'torusgate eval' wrote";
  }
  return "";
}

std::string hex64(std::uint64_t v) {
  char buf[19];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// The first `count` bytes of the file (fewer if it is shorter).
std::string first_bytes(const fs::path& path, std::size_t count) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes(count, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(count));
  bytes.resize(static_cast<std::size_t>(in.gcount()));
  return bytes;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

std::string parameters_text(const Parameters& p) {
  return "n=" + std::to_string(p.lwe_dimension) + " k=" + std::to_string(p.glwe_dimension) +
         " N=" + std::to_string(p.polynomial_size);
}

// "the named set 'tfhe_lib_128' (n=630 k=1 N=1024)".
std::string named_set_text(const Parameters& p) {
  return "the named set '" + p.name + "' (" + parameters_text(p) + ")";
}

// The cloud key inside a library keyset, for info.
std::string keyset_text(const tfhe_lib::CloudKeySetFile& keyset) {
  const CloudKey& key = keyset.key;
  const Parameters& p = key.parameters();
  return "bootstrapping key " + std::to_string(key.bootstrapping_key().data().size()) +
         " words, key-switching key " + std::to_string(tfhe_lib::keyswitch_key_samples(p)) +
         " samples (the unused digit-0 rows " +
         (keyset.ks_digit0.empty() ? "zero" : "not zero") + ")";
}

// The TFHE library formats: a line, or an empty string when the file is none of them.
std::string describe_tfhe_lib_file(const fs::path& path) {
  namespace tl = tfhe_lib;
  const std::string lib = "TFHE library v1.1 ";
  const std::string keep = " (half of a secret key: keep it private)";
  switch (tl::identify_file(path)) {
    case tl::FileKind::ParameterSet:
      return lib + "parameter set, " + named_set_text(tl::load_parameter_set(path));
    case tl::FileKind::LweKey: {
      const tl::LweKeyFile key = tl::load_lwe_key(path);
      return lib + "LWE secret key, n=" + std::to_string(key.params.lwe_dimension) + keep;
    }
    case tl::FileKind::TgswKey: {
      const tl::TgswKeyFile key = tl::load_tgsw_key(path);
      return lib + "TGSW secret key, k=" + std::to_string(key.tlwe.glwe_dimension) +
             " N=" + std::to_string(key.tlwe.polynomial_size) +
             " Bgbit=" + std::to_string(key.tgsw.bk_base_log) +
             " l=" + std::to_string(key.tgsw.bk_level_count) + keep;
    }
    case tl::FileKind::CloudKeySet: {
      const tl::CloudKeySetFile keyset = tl::load_cloud_keyset(path);
      return lib + "cloud keyset, " + named_set_text(keyset.key.parameters()) + ", " +
             keyset_text(keyset);
    }
    case tl::FileKind::SecretKeySet: {
      const tl::SecretKeySetFile keyset = tl::load_secret_keyset(path);
      const Parameters& p = keyset.secret.parameters();
      return lib + "secret keyset, " + named_set_text(p) + ", LWE key n=" +
             std::to_string(p.lwe_dimension) + ", TGSW key k=" + std::to_string(p.glwe_dimension) +
             " N=" + std::to_string(p.polynomial_size) + ", and its cloud key: " +
             keyset_text(keyset.cloud) + " (it decrypts everything: keep it private)";
    }
    case tl::FileKind::GateCiphertexts:
      break;
    case tl::FileKind::Unknown:
      return "";
  }
  // Gate ciphertexts carry no parameters: try the dimension of every named set.
  std::set<std::uint32_t> tried;
  std::string found, problem;  // problem: why the first set's dimension does not read it
  for (const Parameters& p : all_parameter_sets()) {
    if (!tried.insert(p.lwe_dimension).second) continue;
    try {
      const LweBatch batch = tfhe_lib::load_gate_ciphertexts(path, p);
      found += (found.empty() ? "" : "; or ") + std::to_string(batch.count()) +
               " samples of dimension n=" + std::to_string(p.lwe_dimension);
    } catch (const Error& e) {
      if (problem.empty())
        problem = "n=" + std::to_string(p.lwe_dimension) + ": " + user_message(e);
    }
  }
  if (found.empty()) {
    // It starts as gate ciphertexts do, yet no known dimension reads it whole: say why,
    // rather than that it is no library file at all.
    throw CommandError(in_quotes(path) + " starts as " + lib +
                       "gate ciphertexts but no parameter set's dimension reads it (" + problem +
                       ")");
  }
  return lib + "gate ciphertexts: " + found;
}

}  // namespace

std::string in_quotes(const fs::path& path) {
  // Escaped as a message shows it (apps::terminal_text): a name with a terminal's escape
  // sequence, in the programs' output too, stays inert.
  std::string text = "'";  // appended, not "'" + string: GCC 12 warns (-Wrestrict) on that
  text += apps::terminal_text(path.string());
  text += '\'';
  return text;
}

std::string byte_size(std::uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
  static constexpr std::array<const char*, 4> units = {"KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes) / 1024;
  std::size_t unit = 0;
  while (value >= 1024 && unit + 1 < units.size()) {
    value /= 1024;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", value, units[unit]);
  return buf;
}

std::string user_message(const std::exception& e) {
  // Drop every ": "-separated part that is a function name (has '_' or "::", no spaces, no
  // quotes): the library's messages start with the function that threw.
  const std::string message = e.what();
  std::string kept;
  std::size_t start = 0;
  while (start <= message.size()) {
    std::size_t end = message.find(": ", start);
    const bool last = end == std::string::npos;
    if (last) end = message.size();
    const std::string part = message.substr(start, end - start);
    const bool function_name =
        !last && !part.empty() && part.find_first_of(" '\"") == std::string::npos &&
        (part.find('_') != std::string::npos || part.find("::") != std::string::npos);
    if (!function_name) kept += (kept.empty() ? "" : ": ") + part;
    if (last) break;
    start = end + 2;
  }
  return kept;
}

// ---- outputs -----------------------------------------------------------------------------------

namespace {

// The temporary files being written, so that a run stopped by SIGINT, SIGTERM or SIGHUP
// removes them (the destructors do not run then): a few fixed slots, read by the handler
// with async-signal-safe calls only.
constexpr int temp_slots = 8;
constexpr std::size_t temp_path_bytes = 4096;
char temp_paths[temp_slots][temp_path_bytes];
volatile std::sig_atomic_t temp_used[temp_slots];

extern "C" void remove_temps_and_stop(int signal_number) {
  for (int i = 0; i < temp_slots; ++i) {
    if (temp_used[i]) ::unlink(temp_paths[i]);
  }
  std::signal(signal_number, SIG_DFL);
  std::raise(signal_number);
}

// A slot for `path` (-1 when none is free or the path is too long: then a stopped run may
// leave that file behind, as before).
int register_temp(const std::string& path) {
  static const bool installed = [] {
    for (const int s : {SIGINT, SIGTERM, SIGHUP}) {
      // A signal ignored at the start (a background job's SIGINT, nohup's SIGHUP) stays so.
      struct sigaction before {};
      if (::sigaction(s, nullptr, &before) != 0 || before.sa_handler == SIG_IGN) continue;
      struct sigaction action {};
      action.sa_handler = remove_temps_and_stop;
      sigemptyset(&action.sa_mask);
      ::sigaction(s, &action, nullptr);
    }
    return true;
  }();
  (void)installed;
  if (path.size() >= temp_path_bytes) return -1;
  for (int i = 0; i < temp_slots; ++i) {
    if (!temp_used[i]) {
      std::memcpy(temp_paths[i], path.c_str(), path.size() + 1);
      temp_used[i] = 1;
      return i;
    }
  }
  return -1;
}

void release_temp(int& slot) {
  if (slot >= 0) temp_used[slot] = 0;
  slot = -1;
}

}  // namespace

OutputFile::OutputFile(fs::path path, bool force, bool secret)
    : path_(std::move(path)), force_(force), secret_(secret) {
  std::error_code ec;
  if (fs::is_directory(path_, ec)) {
    throw CommandError("cannot write " + in_quotes(path_) +
                       ": it is a directory; give a file name");
  }
  const fs::file_status status = fs::status(path_, ec);
  special_ = fs::exists(status) && !fs::is_regular_file(status);
  if (fs::exists(fs::symlink_status(path_, ec)) && !force_ && !special_) {
    throw CommandError("refusing to overwrite " + in_quotes(path_) +
                       ", which exists; pass --force to replace it");
  }
  const fs::path dir = path_.parent_path().empty() ? fs::path(".") : path_.parent_path();
  if (!fs::is_directory(dir, ec)) {
    throw CommandError("cannot write " + in_quotes(path_) + ": the directory " + in_quotes(dir) +
                       " does not exist");
  }
}

OutputFile::~OutputFile() {
  if (!temp_.empty() && !committed_) {
    std::error_code ec;
    fs::remove(temp_, ec);
  }
  release_temp(temp_slot_);
}

void OutputFile::write(const std::function<void(const fs::path&)>& save) {
  // Beside the file, so that commit() renames it into place; a device's or FIFO's in the
  // temporary directory (its folder, /dev say, takes no new file from most users).
  std::error_code ec;
  const fs::path dir = special_                     ? fs::temp_directory_path(ec)
                       : path_.parent_path().empty() ? fs::path(".")
                                                     : path_.parent_path();
  std::string hidden = ".";
  hidden += path_.filename().string();
  hidden += ".tmp-XXXXXX";
  std::string name = (dir / hidden).string();
  const int fd = ::mkstemp(name.data());  // mode 0600
  if (fd < 0) {
    throw CommandError("cannot write " + in_quotes(path_) + ": cannot create a temporary file in " +
                       in_quotes(dir) + ": " + std::generic_category().message(errno));
  }
  ::close(fd);
  temp_ = name;
  temp_slot_ = register_temp(fs::absolute(temp_, ec).string());
  try {
    save(temp_);
  } catch (const Error& e) {
    throw CommandError("cannot write " + in_quotes(path_) + ": " + user_message(e));
  }
}

void OutputFile::commit() {
  std::error_code ec;
  size_ = fs::file_size(temp_, ec);
  if (special_) {
    // Copied into the device or FIFO; renaming would replace it with a file.
    {
      std::ifstream in(temp_, std::ios::binary);
      std::ofstream out(path_, std::ios::binary);
      errno = 0;
      if (size_ > 0) out << in.rdbuf();  // (an empty buffer would set failbit)
      out.close();
      if (!in || !out) {
        throw CommandError("cannot write " + in_quotes(path_) +
                           (errno != 0 ? ": " + std::generic_category().message(errno) : ""));
      }
    }
    fs::remove(temp_, ec);
    release_temp(temp_slot_);
    committed_ = true;
    return;
  }
  if (!force_ && fs::exists(fs::symlink_status(path_, ec))) {
    throw CommandError("refusing to overwrite " + in_quotes(path_) +
                       ", which appeared while this command ran; pass --force to replace it");
  }
  ::mode_t mode = 0600;
  if (!secret_) {
    const ::mode_t mask = ::umask(0);
    ::umask(mask);
    mode = 0666 & ~mask;
  }
  if (::chmod(temp_.c_str(), mode) != 0) {
    throw CommandError("cannot write " + in_quotes(path_) +
                       ": cannot set the file mode: " + std::generic_category().message(errno));
  }
  fs::rename(temp_, path_, ec);
  if (ec) throw CommandError("cannot write " + in_quotes(path_) + ": " + ec.message());
  release_temp(temp_slot_);
  committed_ = true;
}

std::uint64_t OutputFile::size() const {
  if (committed_) return size_;
  std::error_code ec;
  const auto bytes = fs::file_size(temp_, ec);
  return ec ? 0 : bytes;
}

// ---- inputs ------------------------------------------------------------------------------------

FileHeader expect_object(const fs::path& path, ObjectType want, const std::string& role) {
  FileHeader header;
  try {
    header = read_file_header(path);
  } catch (const FormatError& e) {
    std::string hint;
    tfhe_lib::FileKind kind = tfhe_lib::FileKind::Unknown;
    try {
      kind = tfhe_lib::identify_file(path);
    } catch (const Error&) {
    }
    const bool library_file = kind != tfhe_lib::FileKind::Unknown;
    if (library_file || starts_with(first_bytes(path, 11), "-----BEGIN ")) {
      hint = " (it looks like a TFHE library v1.1 file" +
             (library_file ? " (" + tfhe_lib::file_kind_name(kind) + ")" : std::string()) +
             "; 'torusgate import' converts it to torusgate's own files, which the other "
             "commands read)";
    }
    throw CommandError(user_message(e) + hint);
  } catch (const Error& e) {
    throw CommandError(user_message(e));
  }
  if (header.type != want) {
    throw CommandError(in_quotes(path) + " holds " + with_article(header.type) + ", but " + role +
                       " needs " + with_article(want) + wrong_object_hint(want, header.type, role));
  }
  return header;
}

std::string parameter_mismatch(const fs::path& a, const Parameters& pa, const fs::path& b,
                               const Parameters& pb) {
  if (pa == pb) return "";
  std::string message = in_quotes(a) + " is for parameter set '" + pa.name + "' but " +
                        in_quotes(b) + " is for '" + pb.name + "'";
  if (pa.name == pb.name) {
    message += " (same name, different values: fingerprints " + hex64(pa.fingerprint()) + " and " +
               hex64(pb.fingerprint()) + ")";
  }
  return message;
}

std::string describe_any_file(const fs::path& path) {
  std::string head;
  try {
    head = first_bytes(path, 32);
    if (!starts_with(head, "TGATEBIN")) {
      const std::string line = describe_tfhe_lib_file(path);
      if (!line.empty()) return line;
    }
    return describe_file(path);  // a native file, or the reason it is not one
  } catch (const Error& e) {
    const bool foreign =
        !head.empty() && !starts_with(head, "TGATEBIN") && !starts_with(head, "-----BEGIN ");
    throw CommandError(user_message(e) + (foreign ? " (nor a TFHE library v1.1 file)" : ""));
  }
}

}  // namespace torusgate::cli
