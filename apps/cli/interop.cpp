// The import and export commands of the torusgate CLI (commands.hpp): the TFHE library v1.1
// files (core/tfhe_lib_format.hpp) to torusgate's native files and back. Like the other
// commands, each checks its command line first (UsageError), then what its files hold (before
// loading anything large), and writes its outputs atomically at the end.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "command_support.hpp"
#include "commands.hpp"
#include "errors.hpp"
#include "files.hpp"
#include "torusgate/core/error.hpp"
#include "torusgate/core/keys.hpp"
#include "torusgate/core/serialization.hpp"
#include "torusgate/core/tfhe_lib_format.hpp"

namespace torusgate::cli {
namespace {

namespace fs = std::filesystem;
namespace tl = torusgate::tfhe_lib;
using tl::FileKind;

const std::string library = "TFHE library v1.1 ";

// "a TFHE library v1.1 cloud keyset", "TFHE library v1.1 gate ciphertexts".
std::string library_kind_text(FileKind kind) {
  const std::string name = tl::file_kind_name(kind);
  if (kind == FileKind::GateCiphertexts) return library + name;
  return "a " + library + name;
}

// The kind of the library file `path`; CommandError for a missing file, a torusgate file or
// anything else that is not one of the library's formats.
FileKind library_kind(const std::string& path) {
  const FileKind kind = loading([&] { return tl::identify_file(path); });
  if (kind != FileKind::Unknown) return kind;
  std::string holds;
  try {
    holds = object_type_name(read_file_header(path).type);
  } catch (const Error&) {
  }
  if (!holds.empty()) {
    throw CommandError(in_quotes(path) + " is a torusgate file (" + holds +
                       ") already: import reads TFHE library v1.1 files; 'torusgate export' "
                       "writes them");
  }
  std::error_code ec;
  const std::string empty = fs::file_size(path, ec) == 0 && !ec ? " (it is empty)" : "";
  throw CommandError(in_quotes(path) + " is not a TFHE library v1.1 file" + empty +
                     ": import reads its parameter sets, LWE and TGSW keys, gate ciphertexts and "
                     "cloud and secret keysets");
}

// The header of the torusgate file `path`; CommandError (with a hint for library files) when
// it is not one.
FileHeader native_header(const std::string& path) {
  try {
    return read_file_header(path);
  } catch (const FormatError& e) {
    FileKind kind = FileKind::Unknown;
    try {
      kind = tl::identify_file(path);
    } catch (const Error&) {
    }
    if (kind != FileKind::Unknown) {
      throw CommandError(in_quotes(path) + " is " + library_kind_text(kind) +
                         " already: export reads torusgate files; 'torusgate import' converts "
                         "library files");
    }
    throw CommandError(user_message(e));
  } catch (const Error& e) {
    throw CommandError(user_message(e));
  }
}

std::string parameter_set_names() {
  std::string names;
  for (const Parameters& p : all_parameter_sets()) names += (names.empty() ? "" : ", ") + p.name;
  return names;
}

// --params: a parameter set name, a TFHE library parameter set file, or any torusgate file
// (its header's parameter set).
Parameters params_option(const std::string& value) {
  try {
    return parameters_by_name(value);
  } catch (const InvalidArgument&) {
  }
  std::error_code ec;
  if (!fs::is_regular_file(value, ec)) {
    throw UsageError("--params: '" + value + "' is neither a parameter set (" +
                     parameter_set_names() + ") nor a file");
  }
  if (loading([&] { return tl::identify_file(value); }) == FileKind::ParameterSet) {
    return loading([&] { return tl::load_parameter_set(value); });
  }
  try {
    return read_file_header(value).params;
  } catch (const Error& e) {
    throw CommandError("--params: " + in_quotes(value) +
                       " is neither a TFHE library parameter set file nor a torusgate file: " +
                       user_message(e));
  }
}

// Library gate ciphertexts, integer after integer (its `width` bits least significant first,
// as the library's tutorial writes an integer), as an integer array of 1 x count/width.
IntegerArrayCiphertext to_integer_array(const LweBatch& samples, std::size_t width,
                                        bool is_signed) {
  IntegerArrayCiphertext array;
  array.width = static_cast<std::uint32_t>(width);
  array.is_signed = is_signed;
  array.rows = 1;
  array.cols = samples.count() / width;
  array.samples = LweBatch(samples.lwe_dimension(), samples.count());
  const std::size_t lanes = array.cols;
  for (std::size_t e = 0; e < lanes; ++e) {
    for (std::size_t j = 0; j < width; ++j) {
      const auto from = samples.sample(e * width + j);
      std::copy(from.begin(), from.end(), array.samples.sample(j * lanes + e).begin());
    }
  }
  return array;
}

// The inverse: element after element (row-major), each element's bits least significant first.
LweBatch to_library_order(const IntegerArrayCiphertext& array) {
  const std::size_t lanes = array.lanes(), width = array.width;
  LweBatch out(array.samples.lwe_dimension(), array.samples.count());
  for (std::size_t e = 0; e < lanes; ++e) {
    for (std::size_t j = 0; j < width; ++j) {
      const auto from = array.samples.sample(j * lanes + e);
      std::copy(from.begin(), from.end(), out.sample(e * width + j).begin());
    }
  }
  return out;
}

// "'a' and 'b'" or "'a'".
std::string files_text(const std::vector<std::string>& files) {
  std::string text;
  for (std::size_t i = 0; i < files.size(); ++i) {
    text += (i == 0 ? "" : i + 1 == files.size() ? " and " : ", ") + in_quotes(files[i]);
  }
  return text;
}

const char* const secret_note = ": keep it private (file mode 0600)";

}  // namespace

int run_import(const ImportOptions& o, Console& console) {
  if (o.inputs.empty()) {
    throw UsageError("give the TFHE library file to import (or its LWE key and TGSW key)");
  }
  require(o.output, "--output", "the torusgate file to write");
  if (o.inputs.size() > 2) {
    throw UsageError("import takes one file, or an LWE key and a TGSW key, but " +
                     given(o.inputs.size()));
  }
  std::size_t width = 0;
  if (!o.width.empty()) width = parse_number("--width", o.width, 1, max_integer_width);
  std::vector<std::pair<std::string, std::string>> outputs = {{"--output", o.output}};
  if (!o.cloud_key.empty()) outputs.emplace_back("--cloud-key", o.cloud_key);
  check_distinct(o.inputs, outputs);

  // What the files hold decides what import makes, and which options apply.
  std::vector<FileKind> kinds;
  for (const std::string& input : o.inputs) kinds.push_back(library_kind(input));
  const auto describe = [&](std::size_t i) {
    return in_quotes(o.inputs[i]) + " is " + library_kind_text(kinds[i]);
  };
  if (kinds.size() == 2) {
    const bool pair = (kinds[0] == FileKind::LweKey && kinds[1] == FileKind::TgswKey) ||
                      (kinds[0] == FileKind::TgswKey && kinds[1] == FileKind::LweKey);
    if (!pair) {
      throw UsageError("two files import as a secret key: an LWE key and a TGSW key, but " +
                       describe(0) + " and " + describe(1));
    }
  } else if (kinds[0] == FileKind::LweKey || kinds[0] == FileKind::TgswKey) {
    throw UsageError(describe(0) + ", half of a secret key: give the " +
                     (kinds[0] == FileKind::LweKey ? "TGSW" : "LWE") +
                     " key file too (import lwe.key tgsw.key -o client.tgsk)");
  }
  const FileKind kind = kinds.size() == 2 ? FileKind::LweKey : kinds[0];
  const bool key_pair = kinds.size() == 2;
  const bool ciphertexts = kind == FileKind::GateCiphertexts;
  // Before an option is refused for what the file holds: a file cut short can look like a
  // smaller kind (a secret keyset begins with a parameter set, then a cloud keyset), so its
  // reading error, if it has one, is what to report (exit 1), not the option.
  const auto refuse = [&](const std::string& message) {
    if (!key_pair && kind == FileKind::ParameterSet) {
      loading([&] { return tl::load_parameter_set(o.inputs[0]); });
    } else if (!key_pair && kind == FileKind::CloudKeySet) {
      loading([&] { return tl::load_cloud_keyset(o.inputs[0]); });
    }
    throw UsageError(message);
  };
  if (!o.cloud_key.empty() && kind != FileKind::SecretKeySet) {
    refuse("--cloud-key applies to a secret keyset (it writes the cloud key the keyset holds), "
           "but " + describe(0) +
           (key_pair ? "; the library's key files hold no cloud key: make one with "
                       "'torusgate keygen --from SECRET_KEY --cloud-key FILE'"
                     : ""));
  }
  if (!ciphertexts && (!o.width.empty() || o.is_signed)) {
    refuse(std::string(o.width.empty() ? "--signed" : "--width") +
           " applies to gate ciphertexts only, but " + describe(0));
  }
  if (!o.params.empty() && !ciphertexts && !key_pair) {
    refuse("--params applies to gate ciphertexts and key files, which carry no or only some "
           "parameters, but " + describe(0) + ", which names its parameter set");
  }
  if (ciphertexts && o.params.empty()) {
    throw UsageError("library gate ciphertexts carry no parameters: give --params NAME (" +
                     parameter_set_names() +
                     ") or --params FILE (a library parameter set file or a torusgate file)");
  }
  const bool secret = key_pair || kind == FileKind::SecretKeySet;
  const Parameters given_params = o.params.empty() ? Parameters{} : params_option(o.params);
  OutputFile out_file(o.output, o.force, secret);
  std::optional<OutputFile> cloud_file;
  if (!o.cloud_key.empty()) cloud_file.emplace(o.cloud_key, o.force);

  std::string made;  // what was written, for the report
  std::string note;  // what the report adds
  switch (kind) {
    case FileKind::ParameterSet: {
      const Parameters p = loading([&] { return tl::load_parameter_set(o.inputs[0]); });
      out_file.write([&](const fs::path& path) { save_parameters(path, p); });
      made = "parameters " + parameters_text(p);
      break;
    }
    case FileKind::LweKey: {  // the key pair
      const std::size_t lwe = kinds[0] == FileKind::LweKey ? 0 : 1;
      const SecretKey key = loading([&] {
        const tl::LweKeyFile l = tl::load_lwe_key(o.inputs[lwe]);
        const tl::TgswKeyFile t = tl::load_tgsw_key(o.inputs[1 - lwe]);
        return o.params.empty() ? tl::to_secret_key(l, t) : tl::to_secret_key(given_params, l, t);
      });
      out_file.write([&](const fs::path& path) { save_secret_key(path, key); });
      made = "secret key for " + parameters_text(key.parameters());
      note = "the library's key files hold no cloud key: make one with 'torusgate keygen --from " +
             o.output + " --cloud-key FILE'";
      break;
    }
    case FileKind::SecretKeySet: {
      const tl::SecretKeySetFile keyset =
          loading([&] { return tl::load_secret_keyset(o.inputs[0]); });
      out_file.write([&](const fs::path& path) { save_secret_key(path, keyset.secret); });
      if (cloud_file) {
        cloud_file->write([&](const fs::path& path) { save_cloud_key(path, keyset.cloud.key); });
      } else {
        note = "its cloud key was not written (give --cloud-key FILE for it)";
      }
      made = "secret key for " + parameters_text(keyset.secret.parameters());
      break;
    }
    case FileKind::CloudKeySet: {
      const tl::CloudKeySetFile keyset =
          loading([&] { return tl::load_cloud_keyset(o.inputs[0]); });
      out_file.write([&](const fs::path& path) { save_cloud_key(path, keyset.key); });
      made = "cloud key for " + parameters_text(keyset.key.parameters());
      if (!keyset.ks_digit0.empty()) {
        note = "the key-switching key's unused rows for digit 0 are not zero in this file; they "
               "are not kept (torusgate's cloud key has no such rows)";
      }
      break;
    }
    case FileKind::GateCiphertexts: {
      const std::size_t w = width == 0 ? 1 : width;
      std::vector<double> variances;
      const LweBatch samples = loading(
          [&] { return tl::load_gate_ciphertexts(o.inputs[0], given_params, &variances); });
      if (samples.count() == 0 || samples.count() % w != 0) {
        throw CommandError(in_quotes(o.inputs[0]) + " holds " +
                           count_text(samples.count(), "ciphertext") + (samples.count() == 0
                               ? ", so no integer to import"
                               : ", not a multiple of --width " + std::to_string(w)));
      }
      const IntegerArrayCiphertext array = to_integer_array(samples, w, o.is_signed);
      out_file.write([&](const fs::path& path) { save_integer_array(path, given_params, array); });
      made = count_text(array.lanes(), "integer") + " (" + array.describe() +
             ") with parameter set '" + given_params.name + "'";
      const double fresh = tl::library_ks_variance(given_params);
      if (std::any_of(variances.begin(), variances.end(), [&](double v) { return v != fresh; })) {
        note = "the library's variance estimates of these samples are not kept (export writes "
               "that of a fresh encryption)";
      }
      break;
    }
    case FileKind::TgswKey:
    case FileKind::Unknown:
      throw CommandError("import: unexpected file kind");  // ruled out above
  }
  out_file.commit();
  if (cloud_file) cloud_file->commit();

  if (!console.quiet) {
    const std::string what = key_pair ? "TFHE library v1.1 LWE and TGSW keys"
                                      : library + tl::file_kind_name(kind);
    console.out << "imported " << files_text(o.inputs) << " (" << what << ") into "
                << in_quotes(o.output) << ": " << made << ", " << byte_size(out_file.size())
                << (secret ? secret_note : "") << "\n";
    if (cloud_file) {
      console.out << "cloud key      " << in_quotes(o.cloud_key) << ", "
                  << byte_size(cloud_file->size()) << ": give it to the server\n";
    }
    if (!note.empty()) console.out << "note: " << note << "\n";
  }
  return exit_success;
}

int run_export(const ExportOptions& o, Console& console) {
  if (o.inputs.empty()) {
    throw UsageError("give the torusgate file to export (or a secret key and its cloud key)");
  }
  if (o.inputs.size() > 2) {
    throw UsageError("export takes one file, or a secret key and its cloud key, but " +
                     given(o.inputs.size()));
  }
  std::vector<std::pair<std::string, std::string>> outputs;
  for (const auto& [flag, path] : {std::pair{"--output", &o.output},
                                   std::pair{"--lwe-key", &o.lwe_key},
                                   std::pair{"--tgsw-key", &o.tgsw_key}}) {
    if (!path->empty()) outputs.emplace_back(flag, *path);
  }
  check_distinct(o.inputs, outputs);

  std::vector<FileHeader> headers;
  for (const std::string& input : o.inputs) headers.push_back(native_header(input));
  const auto describe = [&](std::size_t i) {
    const std::string name = object_type_name(headers[i].type);
    const std::string article = headers[i].type == ObjectType::Parameters ? ""
                                : name.front() == 'i'                      ? "an "
                                                                           : "a ";
    return in_quotes(o.inputs[i]) + " holds " + article + name;
  };
  ObjectType type = headers[0].type;
  std::size_t secret_at = 0, cloud_at = 0;
  if (headers.size() == 2) {
    const bool pair = (headers[0].type == ObjectType::SecretKey &&
                       headers[1].type == ObjectType::CloudKey) ||
                      (headers[0].type == ObjectType::CloudKey &&
                       headers[1].type == ObjectType::SecretKey);
    if (!pair) {
      throw UsageError("two files export as the library's secret keyset: a secret key and its "
                       "cloud key, but " + describe(0) + " and " + describe(1));
    }
    secret_at = headers[0].type == ObjectType::SecretKey ? 0 : 1;
    cloud_at = 1 - secret_at;
    type = ObjectType::SecretKey;
  }
  const bool keyset = headers.size() == 2;
  const bool key_files = type == ObjectType::SecretKey && !keyset;
  if (key_files) {
    if (!o.output.empty() || (o.lwe_key.empty() && o.tgsw_key.empty())) {
      throw UsageError("a secret key exports as the library's two key files: give --lwe-key FILE "
                       "and --tgsw-key FILE (with its cloud key as a second input, --output "
                       "writes the library's secret keyset)");
    }
  } else {
    if (!o.lwe_key.empty() || !o.tgsw_key.empty()) {
      throw UsageError(std::string(o.lwe_key.empty() ? "--tgsw-key" : "--lwe-key") +
                       " applies to a secret key alone, but " + describe(0) +
                       (keyset ? " and " + describe(1) : ""));
    }
    require(o.output, "--output", "the TFHE library file to write");
  }
  if (keyset) {
    const std::string mismatch =
        parameter_mismatch(o.inputs[secret_at], headers[secret_at].params, o.inputs[cloud_at],
                           headers[cloud_at].params);
    if (!mismatch.empty()) {
      throw CommandError("the keys use different parameter sets: " + mismatch);
    }
  }
  const Parameters& params = headers[0].params;
  const bool secret = type == ObjectType::SecretKey;
  std::optional<OutputFile> out_file, lwe_file, tgsw_file;
  if (!o.output.empty()) out_file.emplace(o.output, o.force, secret);
  if (!o.lwe_key.empty()) lwe_file.emplace(o.lwe_key, o.force, true);
  if (!o.tgsw_key.empty()) tgsw_file.emplace(o.tgsw_key, o.force, true);

  std::string made;
  switch (type) {
    case ObjectType::Parameters: {
      const Parameters p = loading([&] { return load_parameters(o.inputs[0]); });
      out_file->write([&](const fs::path& path) { tl::save_parameter_set(path, p); });
      made = "parameter set " + parameters_text(p);
      break;
    }
    case ObjectType::SecretKey: {
      const SecretKey key = loading([&] { return load_secret_key(o.inputs[secret_at]); });
      if (keyset) {
        const CloudKey cloud = loading([&] { return load_cloud_key(o.inputs[cloud_at]); });
        const std::string problem = tl::key_pair_problem(key, cloud);
        if (!problem.empty()) {
          throw CommandError("the cloud key " + in_quotes(o.inputs[cloud_at]) +
                             " was not made from the secret key " +
                             in_quotes(o.inputs[secret_at]) + ": " + problem);
        }
        out_file->write([&](const fs::path& path) { tl::save_secret_keyset(path, key, cloud); });
        made = "secret keyset (secret keys and cloud key)";
      } else {
        if (lwe_file) lwe_file->write([&](const fs::path& path) { tl::save_lwe_key(path, key); });
        if (tgsw_file) {
          tgsw_file->write([&](const fs::path& path) { tl::save_tgsw_key(path, key); });
        }
        made = "secret key";
      }
      made += " for " + parameters_text(key.parameters());
      break;
    }
    case ObjectType::CloudKey: {
      const CloudKey cloud = loading([&] { return load_cloud_key(o.inputs[0]); });
      out_file->write([&](const fs::path& path) { tl::save_cloud_keyset(path, cloud); });
      made = "cloud keyset for " + parameters_text(cloud.parameters());
      break;
    }
    case ObjectType::IntegerArray: {
      const IntegerArrayCiphertext array =
          loading([&] { return load_integer_array(o.inputs[0], params); });
      const LweBatch samples = to_library_order(array);
      out_file->write(
          [&](const fs::path& path) { tl::save_gate_ciphertexts(path, params, samples); });
      made = count_text(samples.count(), "gate ciphertext") + ": " +
             count_text(array.lanes(), "integer") + " (" + array.describe() + "), " +
             (array.width == 1 ? "one bit each"
                               : "each its " + std::to_string(array.width) +
                                     " bits least significant first");
      break;
    }
    case ObjectType::CiphertextBatch: {
      const LweBatch samples = loading([&] { return load_ciphertexts(o.inputs[0], params); });
      out_file->write(
          [&](const fs::path& path) { tl::save_gate_ciphertexts(path, params, samples); });
      made = count_text(samples.count(), "gate ciphertext");
      break;
    }
  }
  for (auto* file : {&out_file, &lwe_file, &tgsw_file}) {
    if (*file) (*file)->commit();
  }

  if (!console.quiet) {
    console.out << "exported " << files_text(o.inputs) << " (" << made << ") as TFHE library v1.1";
    if (out_file) {
      console.out << " " << in_quotes(o.output) << ", " << byte_size(out_file->size());
    } else {
      std::vector<std::string> parts;
      if (lwe_file) parts.push_back("LWE key " + in_quotes(o.lwe_key));
      if (tgsw_file) parts.push_back("TGSW key " + in_quotes(o.tgsw_key));
      for (std::size_t i = 0; i < parts.size(); ++i) console.out << (i ? " and " : " ") << parts[i];
    }
    console.out << (secret ? secret_note : "") << "\n";
  }
  return exit_success;
}

}  // namespace torusgate::cli
