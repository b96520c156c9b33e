// The seven commands of the torusgate CLI, each on options already parsed from the command
// line (cli.cpp binds them): keygen, encrypt, eval, decrypt, info (commands.cpp), and import
// and export for the TFHE library v1.1 formats (interop.cpp). A command returns its exit
// code or throws UsageError or CommandError (errors.hpp); library errors it does not expect
// propagate.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace torusgate::cli {

// Where a command reports: `out` for results, `err` for warnings; `quiet` drops the reports
// that are not results (sizes, costs, timings).
struct Console {
  std::ostream& out;
  std::ostream& err;
  std::string command;  // "keygen", ...: prefixes warnings
  bool quiet = false;
};

// The parameter set of keygen without --params.
inline constexpr const char* default_parameter_set = "tfhe_lib_128";

struct KeygenOptions {
  std::string params;  // empty: default_parameter_set
  std::string secret_key, cloud_key;
  std::string from;  // an existing secret key: make only a cloud key for it
  std::uint32_t unroll = 1;  // the bootstrapping key's form: 1 standard, 2 to 4 unrolled
  bool force = false, insecure_ok = false;
};

struct EncryptOptions {
  std::string key, width, shape, values, input, output;
  bool is_signed = false, force = false;
};

struct EvalOptions {
  std::string cloud_key, op, output, width, threads;
  std::string table;  // lut: value text
  // The gpu backend's options as given, each once in the order of their first use: the flag
  // ("--fused-lanes") and its value ("" for one that takes none).
  std::vector<std::pair<std::string, std::string>> gpu_options;
  std::string backend = "best";
  std::vector<std::string> inputs;
  bool force = false;
};

struct DecryptOptions {
  std::string key, input, output;
  bool force = false;
};

struct InfoOptions {
  std::vector<std::string> files;
};

struct ImportOptions {
  std::vector<std::string> inputs;  // TFHE library files
  std::string output, cloud_key, params, width;
  bool is_signed = false, force = false;
};

struct ExportOptions {
  std::vector<std::string> inputs;  // torusgate files
  std::string output, lwe_key, tgsw_key;
  bool force = false;
};

int run_keygen(const KeygenOptions& options, Console& console);
int run_encrypt(const EncryptOptions& options, Console& console);
int run_eval(const EvalOptions& options, Console& console);
int run_decrypt(const DecryptOptions& options, Console& console);
int run_info(const InfoOptions& options, Console& console);
int run_import(const ImportOptions& options, Console& console);
int run_export(const ExportOptions& options, Console& console);

}  // namespace torusgate::cli
