// The torusgate command line: CLI11 definitions of the global options and the seven commands,
// help texts, the parse, and the mapping of every error to one line and an exit code.
#include "cli.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <memory>
#include <ostream>
#include <string_view>

#include "app_support.hpp"
#include "commands.hpp"
#include "files.hpp"
#include "operations.hpp"
#include "printable.hpp"
#include "torusgate/core/params.hpp"
#include "torusgate/core/version.hpp"

namespace torusgate::cli {
namespace {

constexpr std::array<std::string_view, 7> command_names = {
    "keygen", "encrypt", "eval", "decrypt", "info", "import", "export"};
constexpr const char* command_list = "keygen, encrypt, eval, decrypt, info, import or export";

// The help's heading of eval's GPU options.
constexpr const char* gpu_option_group = "GPU options (--backend gpu)";

struct Options {
  bool quiet = false;
  KeygenOptions keygen;
  EncryptOptions encrypt;
  EvalOptions eval;
  DecryptOptions decrypt;
  InfoOptions info;
  ImportOptions import;
  ExportOptions export_;
};

// The GPU options given to `eval`, each once in the order of its first use, with its value
// ("" for a flag, which takes none and may be repeated; CLI11 refuses a value option given
// twice).
std::vector<std::pair<std::string, std::string>> gpu_options_given(const CLI::App& eval) {
  const std::vector<apps::GpuOptionText>& texts = apps::gpu_option_texts();
  std::vector<std::pair<std::string, std::string>> given;
  for (const CLI::Option* option : eval.parse_order()) {
    const std::string flag = option->get_name();
    const auto text = std::find_if(texts.begin(), texts.end(),
                                   [&](const apps::GpuOptionText& t) { return t.flag == flag; });
    const bool seen = std::any_of(given.begin(), given.end(),
                                  [&](const auto& g) { return g.first == flag; });
    if (text == texts.end() || seen) continue;
    given.emplace_back(flag, text->value.empty() ? "" : option->results().back());
  }
  return given;
}

// Levenshtein distance, for "did you mean" hints.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// "; did you mean 'x'?" for the closest candidate within a couple of typos, else "".
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = std::min<std::size_t>(2, word.size() / 2) + 1;
  for (const std::string& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  return best.empty() ? "" : "; did you mean '" + best + "'?";
}

std::vector<std::string> long_option_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* a = &app; a != nullptr; a = a->get_parent()) {
    for (const CLI::Option* option : a->get_options()) {
      for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
    }
  }
  return names;
}

std::string parameter_set_list() {
  std::string secure, insecure;
  for (const Parameters& p : all_parameter_sets()) {
    std::string& list = p.insecure ? insecure : secure;
    list += (list.empty() ? "" : ", ") + p.name;
  }
  return secure + " (default tfhe_lib_128); for tests only: " + insecure + " (with --insecure-ok)";
}

// The end of every command's help.
const std::string common_footer =
    "Global options, before or after the command: -q (--quiet) prints results only.\n"
    "Exit codes: 0 success, 1 a problem with a file or its data, 2 a command-line error.";

std::string operation_table() {
  std::string text = "Operations (x, y: the operand files in order; w: their width in bits):\n";
  for (const Operation& op : operations()) {
    std::string name(op.name);
    name.resize(std::max<std::size_t>(name.size(), 10), ' ');
    text += "  " + name + std::string(op.summary) + "\n";
  }
  return text +
         "Comparisons give 1-bit unsigned results. Signed operands compute as signed.\n"
         "Two operands need the same width and signedness; element-wise operations need the\n"
         "same shape. Every operand must use the cloud key's parameter set.\n" +
         common_footer;
}

const char* const keygen_footer =
    "Examples:\n"
    "  torusgate keygen --secret-key client.tgsk --cloud-key server.tgck\n"
    "  torusgate keygen --from client.tgsk --cloud-key server.tgck   # for an existing key\n"
    "The secret key decrypts everything: keep it on the client. The cloud key (tens to\n"
    "hundreds of MiB) goes to the server; it computes on ciphertexts but cannot decrypt.\n";

const char* const encrypt_footer =
    "Examples:\n"
    "  torusgate encrypt -k client.tgsk --width 8 --signed --values 3,-7,12 -o x.tgct\n"
    "  torusgate encrypt -k client.tgsk --width 16 --values \"1,2,3;4,5,6\" -o m.tgct   # 2 x 3\n"
    "  torusgate encrypt -k client.tgsk --width 16 --input m.txt -o m.tgct\n"
    "Unsigned values are 0..2^w-1; signed values -2^(w-1)..2^(w-1)-1.\n";

const char* const decrypt_footer =
    "Example:\n"
    "  torusgate decrypt -k client.tgsk p.tgct\n"
    "Signed arrays print signed values; a matrix prints one row per line. A file under another\n"
    "secret key is refused where it names its key (what encrypt and eval write); one that\n"
    "names none decrypts with another key pair to meaningless values.\n";

const char* const info_footer =
    "Example:\n"
    "  torusgate info client.tgsk server.tgck x.tgct lwe.key cloud.key\n"
    "Each file is read and checked in full (checksum included); exit 1 if any is bad.\n";

const char* const import_footer =
    "What it makes depends on what the files hold (see 'torusgate info'):\n"
    "  parameter set file        -> parameters\n"
    "  LWE key + TGSW key        -> secret key (mode 0600); --params optional\n"
    "  secret keyset             -> secret key (mode 0600); --cloud-key FILE: its cloud key too\n"
    "  cloud keyset              -> cloud key\n"
    "  gate ciphertexts          -> integer array of 1 x count/w integers of --width w (default\n"
    "                               1: bits); each integer's w samples in a row, least\n"
    "                               significant first. Needs --params (they carry none)\n"
    "Examples:\n"
    "  torusgate import lwe.key tgsw.key -o client.tgsk\n"
    "  torusgate keygen --from client.tgsk --cloud-key server.tgck\n"
    "  torusgate import a.ctxt --params tfhe_lib_128 -o a.tgct\n"
    "  torusgate import cloud.key -o server.tgck\n";

const char* const export_footer =
    "What it writes depends on what the files hold:\n"
    "  parameters                -> the library's parameter set file (-o)\n"
    "  secret key                -> its LWE key (--lwe-key) and TGSW key (--tgsw-key), mode 0600\n"
    "  secret key + cloud key    -> the library's secret keyset (-o, mode 0600)\n"
    "  cloud key                 -> the library's cloud keyset (-o)\n"
    "  integer array             -> gate ciphertexts (-o), integer after integer, each its w\n"
    "                               bits least significant first (as import reads them)\n"
    "  ciphertext batch          -> gate ciphertexts (-o), in order\n"
    "Ciphertexts get the variance of a fresh encryption (the native files keep none).\n"
    "Examples:\n"
    "  torusgate export client.tgsk --lwe-key lwe.key --tgsw-key tgsw.key\n"
    "  torusgate export server.tgck -o cloud.key\n"
    "  torusgate export out.tgct -o out.ctxt\n";

const char* const main_footer =
    "The client makes the keys, encrypts and decrypts; the server computes with the cloud\n"
    "key alone. A session with toy parameters (use tfhe_lib_128 or default_128 for data that\n"
    "matters):\n"
    "  torusgate keygen --params toy_INSECURE --insecure-ok -s client.tgsk -c server.tgck\n"
    "  torusgate encrypt -k client.tgsk --width 8 --signed --values 3,-7,12 -o x.tgct\n"
    "  torusgate encrypt -k client.tgsk --width 8 --signed --values 5,6,-4 -o y.tgct\n"
    "  torusgate eval -c server.tgck --op mul x.tgct y.tgct -o p.tgct\n"
    "  torusgate decrypt -k client.tgsk p.tgct\n"
    "  torusgate info client.tgsk server.tgck p.tgct\n"
    "TFHE library v1.1 files: 'torusgate import' converts them to torusgate's files, 'torusgate\n"
    "export' back; 'torusgate info' describes both.\n"
    "Run 'torusgate COMMAND --help' (or 'torusgate help COMMAND') for a command's options.\n"
    "Exit codes: 0 success, 1 a problem with a file or its data, 2 a command-line error.";

std::unique_ptr<CLI::App> make_app(Options& o) {
  auto app = std::make_unique<CLI::App>(
      "torusgate: compute on encrypted integers with TFHE gate bootstrapping.", "torusgate");
  app->require_subcommand(0, 1);
  app->fallthrough();
  app->allow_extras();
  app->set_version_flag("--version", std::string("torusgate ") + torusgate::version() +
                                         " (commit " + apps::build_commit() + ")");
  app->add_flag("-q,--quiet", o.quiet, "Print results only: no sizes, costs or timings");

  CLI::App* keygen = app->add_subcommand(
      "keygen", "Client: make a secret key (kept private) and a cloud key (for the server)");
  keygen->add_option("--params", o.keygen.params, "Parameter set: " + parameter_set_list())
      ->type_name("NAME");
  keygen
      ->add_option("--from", o.keygen.from,
                   "Make only a cloud key, for this existing secret key (e.g. one imported from "
                   "the TFHE library)")
      ->type_name("FILE");
  keygen
      ->add_option("-s,--secret-key", o.keygen.secret_key,
                   "Write the secret key to FILE (mode 0600); required without --from")
      ->type_name("FILE");
  keygen->add_option("-c,--cloud-key", o.keygen.cloud_key, "Write the cloud key to FILE; required")
      ->type_name("FILE");
  keygen
      ->add_option("--unroll", o.keygen.unroll,
                   "Bootstrapping key form: 1 standard (default; the TFHE library's), 2 unrolled "
                   "(pairs of key bits: half the transforms per bit, 1.5x the key, 3x the key's "
                   "noise term), 3 unrolled (threes: a third of the transforms per bit, 2.33x "
                   "the key, 4.67x the noise term), 4 unrolled (fours: 3.75x the key, 7.5x the "
                   "noise term; the GPU's fused engine runs it on bundled clusters only); 2 to 4 "
                   "in native files only")
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            if (value.size() == 1 && value[0] >= '1' && value[0] <= '4') return "";
            return "expected 1, 2, 3 or 4, got '" + value + "'";
          },
          ""))  // no description: the help shows "--unroll U", not CLI11's range
      ->type_name("U");
  keygen->add_flag("-f,--force", o.keygen.force, "Replace existing files");
  keygen->add_flag("--insecure-ok", o.keygen.insecure_ok,
                   "Allow an INSECURE toy parameter set (tests only)");

  CLI::App* encrypt = app->add_subcommand(
      "encrypt", "Client: encrypt integers of a width into an integer array file");
  encrypt->add_option("-k,--key", o.encrypt.key, "The secret key (keygen --secret-key); required")
      ->type_name("FILE");
  encrypt->add_option("-w,--width", o.encrypt.width, "Bits per integer, 1 to 64; required")
      ->type_name("BITS");
  encrypt->add_flag("--signed", o.encrypt.is_signed,
                    "Signed (two's complement) integers; default unsigned");
  encrypt
      ->add_option("--values", o.encrypt.values,
                   "The integers, e.g. \"3,-7,12\"; ';' ends a row (\"1,2;3,4\" is 2 x 2). "
                   "Decimal, 0x hex or 0b binary")
      ->type_name("LIST");
  encrypt
      ->add_option("-i,--input", o.encrypt.input,
                   "Read the integers from a text file: a row per line, separated by spaces "
                   "or commas; '#' starts a comment")
      ->type_name("FILE");
  encrypt
      ->add_option("--shape", o.encrypt.shape,
                   "Matrix shape, e.g. 2,3 (default: the rows of the values; one row for a "
                   "vector)")
      ->type_name("ROWS,COLS");
  encrypt
      ->add_option("-o,--output", o.encrypt.output, "Write the encrypted array to FILE; required")
      ->type_name("FILE");
  encrypt->add_flag("-f,--force", o.encrypt.force, "Replace an existing output file");

  CLI::App* eval =
      app->add_subcommand("eval", "Server: compute on encrypted arrays with the cloud key alone");
  eval->footer(operation_table());
  eval->add_option("operands", o.eval.inputs, "One or two integer array files (x, then y)")
      ->type_name("FILE");
  eval->add_option("-c,--cloud-key", o.eval.cloud_key,
                   "The cloud key (keygen --cloud-key); required")
      ->type_name("FILE");
  eval->add_option("--op", o.eval.op, "The operation (see below); required")->type_name("OP");
  eval->add_option("-o,--output", o.eval.output, "Write the encrypted result to FILE; required")
      ->type_name("FILE");
  eval->add_option("-w,--width", o.eval.width,
                   "Result width of sum, dot and matmul, 1 to 128, and of lut, 1 to 64 "
                   "(default: the operands')")
      ->type_name("BITS");
  eval->add_option("--table", o.eval.table,
                   "lut: the result for each value of x from the smallest, as value text "
                   "(\"1,4,9,...\"; --table \"$(cat FILE)\" reads a file)")
      ->type_name("LIST");
  eval->add_option("--backend", o.eval.backend,
                   "best (default: gpu when a CUDA device is usable, else openmp), gpu, "
                   "sequential or openmp")
      ->type_name("NAME");
  eval->add_option("--threads", o.eval.threads, "OpenMP threads (default: OpenMP's choice)")
      ->type_name("N");
  // The GPU options the benchmark programs take (apps::set_gpu_option reads them after the
  // parse, in the order given: gpu_options_given).
  for (const apps::GpuOptionText& g : apps::gpu_option_texts()) {
    CLI::Option* option =
        g.value.empty() ? eval->add_flag(g.flag, g.help)->disable_flag_override()
                        : eval->add_option(g.flag, g.help)->type_name(g.value);
    option->group(gpu_option_group);
  }
  eval->add_flag("-f,--force", o.eval.force, "Replace an existing output file");

  CLI::App* decrypt = app->add_subcommand(
      "decrypt", "Client: decrypt an integer array and print its values (a row per line)");
  decrypt->add_option("input", o.decrypt.input, "The integer array file")->type_name("FILE");
  decrypt->add_option("-k,--key", o.decrypt.key, "The secret key (keygen --secret-key); required")
      ->type_name("FILE");
  decrypt
      ->add_option("-o,--output", o.decrypt.output,
                   "Write the values to FILE (text that encrypt --input reads; mode 0600) "
                   "instead of printing them")
      ->type_name("FILE");
  decrypt->add_flag("-f,--force", o.decrypt.force, "Replace an existing output file");

  CLI::App* info = app->add_subcommand(
      "info", "Describe files: kind, parameter set, sizes; checks them in full");
  info->add_option("files", o.info.files,
                   "torusgate files (keys, integer arrays, ...) or TFHE library v1.1 files")
      ->type_name("FILE");
  CLI::App* import = app->add_subcommand(
      "import", "Convert TFHE library v1.1 files (keys, keysets, ciphertexts, parameters)");
  import->add_option("files", o.import.inputs, "The library file, or its LWE key and TGSW key")
      ->type_name("FILE");
  import->add_option("-o,--output", o.import.output, "Write the torusgate file to FILE; required")
      ->type_name("FILE");
  import
      ->add_option("-c,--cloud-key", o.import.cloud_key,
                   "For a secret keyset: also write the cloud key it holds to FILE")
      ->type_name("FILE");
  import
      ->add_option("--params", o.import.params,
                   "For gate ciphertexts (required) and key files: the parameter set, by name or "
                   "from a library parameter set file or a torusgate file")
      ->type_name("NAME|FILE");
  import
      ->add_option("-w,--width", o.import.width,
                   "For gate ciphertexts: bits per integer, 1 to 128 (default 1)")
      ->type_name("BITS");
  import->add_flag("--signed", o.import.is_signed,
                   "For gate ciphertexts: signed (two's complement) integers");
  import->add_flag("-f,--force", o.import.force, "Replace existing files");

  CLI::App* export_ = app->add_subcommand(
      "export", "Write torusgate files in the TFHE library v1.1 formats");
  export_->add_option("files", o.export_.inputs, "The torusgate file, or a secret key and its "
                                                 "cloud key")
      ->type_name("FILE");
  export_->add_option("-o,--output", o.export_.output, "Write the library file to FILE")
      ->type_name("FILE");
  export_
      ->add_option("--lwe-key", o.export_.lwe_key,
                   "For a secret key: write its LWE key to FILE (mode 0600)")
      ->type_name("FILE");
  export_
      ->add_option("--tgsw-key", o.export_.tgsw_key,
                   "For a secret key: write its TGSW key to FILE (mode 0600)")
      ->type_name("FILE");
  export_->add_flag("-f,--force", o.export_.force, "Replace existing files");

  keygen->footer(keygen_footer + common_footer);
  import->footer(import_footer + common_footer);
  export_->footer(export_footer + common_footer);
  encrypt->footer(encrypt_footer + common_footer);
  decrypt->footer(decrypt_footer + common_footer);
  info->footer(info_footer + common_footer);
  app->footer(main_footer);  // after the commands: they would inherit it
  for (CLI::App* sub : app->get_subcommands({})) sub->allow_extras();
  return app;
}

// CLI11's messages for an option given without its value or more than once
// ("--width: 1 required BITS missing", "--width: At Most 1 required but received 2"), in
// plainer words; other messages unchanged.
std::string mismatch_message(const std::string& message) {
  // "no-cuda-graphs was given a disallowed flag override": a value given to a flag.
  const std::size_t flag_end = message.find(" was given a disallowed flag override");
  if (flag_end != std::string::npos) return "--" + message.substr(0, flag_end) + " takes no value";
  const std::size_t colon = message.find(": ");
  if (colon == std::string::npos || message.rfind("--", 0) != 0) return message;
  const std::string option = message.substr(0, colon);
  if (message.find(" missing", colon) != std::string::npos) {
    return option + " needs a value";
  }
  if (message.find("but received", colon) != std::string::npos) {
    return option + " is given more than once; give it once";
  }
  return message;
}

// " (see 'torusgate eval --help')", or the program's help without a command.
std::string help_hint(const std::string& command) {
  return " (see 'torusgate " + (command.empty() ? std::string() : command + " ") + "--help')";
}

// The command the arguments name (the first that is not an option), or "".
std::string command_of(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (!a.empty() && a.front() != '-') return a;
  }
  return "";
}

}  // namespace

int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string prefix = "torusgate: ";
  try {
    std::vector<std::string> argv = args;
    std::string command = command_of(args);
    // "torusgate help [COMMAND]" is "torusgate [COMMAND] --help".
    if (!argv.empty() && argv.front() == "help") {
      argv.erase(argv.begin());
      if (!argv.empty() && argv.front() == "help") argv.erase(argv.begin());  // help on help
      argv.push_back("--help");
      command = command_of(argv);
    }
    Options options;
    const std::unique_ptr<CLI::App> app = make_app(options);
    if (!command.empty() &&
        std::find(command_names.begin(), command_names.end(), command) == command_names.end()) {
      std::string hint = did_you_mean(
          command, std::vector<std::string>(command_names.begin(), command_names.end()));
      if (hint.empty()) hint = std::string("; expected ") + command_list;
      throw UsageError("unknown command '" + command + "'" + hint + help_hint(""));
    }
    if (!command.empty()) prefix = "torusgate " + command + ": ";
    std::vector<std::string> reversed(argv.rbegin(), argv.rend());  // CLI11 pops from the back
    try {
      app->parse(reversed);
    } catch (const CLI::CallForHelp&) {
      out << app->help();
      return exit_success;
    } catch (const CLI::CallForAllHelp&) {
      out << app->help("", CLI::AppFormatMode::All);
      return exit_success;
    } catch (const CLI::CallForVersion& e) {
      out << e.what() << "\n";
      return exit_success;
    } catch (const CLI::ArgumentMismatch& e) {
      throw UsageError(mismatch_message(e.what()) + help_hint(command));
    } catch (const CLI::ParseError& e) {
      throw UsageError(std::string(e.what()) + help_hint(command));
    }
    // CLI11 leaves the end-of-options marker "--" among the extras: skipped (what follows
    // it is a positional argument, e.g. decrypt's input "-x.tgct"); an extra found only
    // after it is an unexpected argument, never an option.
    const auto marker = std::find(argv.begin(), argv.end(), "--");
    bool marker_seen = false;
    for (const std::string& extra : app->remaining(true)) {
      if (extra == "--" && !marker_seen) {
        marker_seen = true;
        continue;
      }
      const bool positional = std::find(argv.begin(), marker, extra) == marker;
      const CLI::App& options_of = command.empty() ? *app : *app->get_subcommand(command);
      if (!positional && extra.size() > 1 && extra.front() == '-') {
        const std::string name = extra.substr(0, extra.find('='));
        throw UsageError("unknown option '" + name + "'" +
                         did_you_mean(name, long_option_names(options_of)) + help_hint(command));
      }
      throw UsageError("unexpected argument '" + extra + "'" + help_hint(command));
    }
    if (command.empty()) {
      err << app->help();
      throw UsageError(std::string("no command given; expected ") + command_list);
    }

    if (command == "eval") {
      options.eval.gpu_options = gpu_options_given(*app->get_subcommand("eval"));
    }
    Console console{out, err, command, options.quiet};
    if (command == "keygen") return run_keygen(options.keygen, console);
    if (command == "encrypt") return run_encrypt(options.encrypt, console);
    if (command == "eval") return run_eval(options.eval, console);
    if (command == "decrypt") return run_decrypt(options.decrypt, console);
    if (command == "import") return run_import(options.import, console);
    if (command == "export") return run_export(options.export_, console);
    return run_info(options.info, console);
  } catch (const UsageError& e) {  // (messages quote paths and values as given: escaped here)
    err << prefix << apps::terminal_text(e.what()) << "\n";
    return exit_usage;
  } catch (const CommandError& e) {
    err << prefix << apps::terminal_text(e.what()) << "\n";
    return exit_failure;
  } catch (const std::exception& e) {
    err << prefix << apps::terminal_text(user_message(e)) << "\n";
    return exit_failure;
  }
}

}  // namespace torusgate::cli
