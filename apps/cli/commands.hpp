// The five commands of the torusgate CLI, each on options already parsed from the command
// line (cli.cpp binds them). A command returns its exit code or throws UsageError or
// CommandError (errors.hpp); library errors it does not expect propagate.
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

struct KeygenOptions {
  std::string params = "tfhe_lib_128";
  std::string secret_key, cloud_key;
  bool force = false, insecure_ok = false;
};

struct EncryptOptions {
  std::string key, width, shape, values, input, output;
  bool is_signed = false, force = false;
};

struct EvalOptions {
  std::string cloud_key, op, output, width, threads;
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

int run_keygen(const KeygenOptions& options, Console& console);
int run_encrypt(const EncryptOptions& options, Console& console);
int run_eval(const EvalOptions& options, Console& console);
int run_decrypt(const DecryptOptions& options, Console& console);
int run_info(const InfoOptions& options, Console& console);

}  // namespace torusgate::cli
