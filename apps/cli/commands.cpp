// The commands of the torusgate CLI: keygen, encrypt, eval, decrypt and info (commands.hpp).
// Every command checks its whole command line first (UsageError), then its files (headers
// before bodies, so a wrong or mismatched file is named before anything large is read), and
// only then does the work; outputs are written atomically at the end (files.hpp).
#include "commands.hpp"

#include <cerrno>
#include <cstdint>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <ostream>
#include <system_error>

#include "app_support.hpp"
#include "command_support.hpp"
#include "errors.hpp"
#include "files.hpp"
#include "operations.hpp"
#include "printable.hpp"
#include "progress.hpp"
#include "torusgate/circuits/circuits.hpp"
#include "torusgate/core/error.hpp"
#include "torusgate/core/keys.hpp"
#include "torusgate/core/serialization.hpp"
#include "torusgate/cpu/cpu_backend.hpp"
#include "values.hpp"

namespace torusgate::cli {
namespace {

namespace fs = std::filesystem;
using circuits::IntType;
using Clock = std::chrono::steady_clock;

// Bootstraps from which eval shows a progress bar (seconds of work with secure parameters).
constexpr std::uint64_t progress_min_bootstraps = 2000;

IntType type_of(const IntegerArrayCiphertext& a) { return IntType{a.width, a.is_signed}; }

// The values of encrypt: from --values (errors are usage errors) or from --input (errors name
// the file and line).
ValueTable read_values(const EncryptOptions& o, IntType type) {
  if (!o.values.empty()) {
    try {
      return parse_values(o.values, type);
    } catch (const ValueError& e) {
      throw UsageError("--values: " + std::string(e.what()));
    }
  }
  std::error_code ec;
  if (fs::is_directory(o.input, ec)) {
    throw CommandError("cannot read " + in_quotes(o.input) + ": it is a directory");
  }
  std::ifstream in(o.input, std::ios::binary);
  if (!in.is_open()) {
    throw CommandError("cannot read " + in_quotes(o.input) + ": " +
                       std::generic_category().message(errno));
  }
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    return parse_values(text, type);
  } catch (const ValueError& e) {
    const std::string line = e.line() > 0 ? " line " + std::to_string(e.line()) : "";
    throw CommandError(in_quotes(o.input) + line + ": " + e.what());
  }
}

// The backend of eval and its options, with a bad name or an option that does not apply as
// a command-line error.
std::string resolve_backend(const EvalOptions& o, apps::ServerOptions& server) {
  try {
    const std::string backend = apps::resolve_backend(o.backend);
    if (!o.threads.empty()) {
      server.threads_given = true;
      server.cpu.threads = static_cast<int>(parse_number("--threads", o.threads, 1, 4096));
    }
    // The GPU options, the first one given named in server.gpu_option.
    for (const auto& [flag, value] : o.gpu_options) {
      if (server.gpu_option.empty()) server.gpu_option = flag;
      apps::set_gpu_option(flag, value, server.gpu);
    }
    apps::check_server_options(backend, server);
    return backend;
  } catch (const InvalidArgument& e) {
    throw UsageError(e.what());
  }
}

}  // namespace

namespace {

// keygen --from: a new cloud key for an existing secret key (one imported from the TFHE
// library, or whose cloud key was lost).
int run_keygen_from(const KeygenOptions& o, Console& console) {
  require(o.cloud_key, "--cloud-key", "the file for the cloud key of the secret key --from");
  if (!o.secret_key.empty()) {
    throw UsageError("--from reads an existing secret key and --secret-key writes a new one; "
                     "give one of them");
  }
  if (!o.params.empty()) {
    throw UsageError("--params does not apply with --from: the cloud key is for the parameter "
                     "set of the secret key");
  }
  if (same_path(o.from, o.cloud_key)) {
    throw UsageError("--from and --cloud-key name the same file " + in_quotes(o.cloud_key));
  }
  OutputFile cloud_file(o.cloud_key, o.force);
  expect_object(o.from, ObjectType::SecretKey, "--from");
  const SecretKey secret = loading([&] { return load_secret_key(o.from); });
  const Parameters& params = secret.parameters();
  if (params.insecure) {
    warn(console, "parameter set '" + params.name +
                      "' is INSECURE: for tests only, its ciphertexts protect nothing");
  }

  const auto start = Clock::now();
  Csprng rng;
  const CloudKey cloud = CloudKey::generate(secret, rng, o.unroll);
  cloud_file.write([&](const fs::path& path) { save_cloud_key(path, cloud); });
  cloud_file.commit();
  if (!console.quiet) {
    console.out << "parameter set  " << parameters_text(params) << " (of " << in_quotes(o.from)
                << ")\n"
                << "cloud key      " << in_quotes(o.cloud_key) << ", "
                << byte_size(cloud_file.size())
                << ": give it to the server; it computes on ciphertexts but cannot decrypt\n"
                << "generated in " << seconds_text(apps::seconds_since(start)) << "\n";
  }
  return exit_success;
}

}  // namespace

int run_keygen(const KeygenOptions& o, Console& console) {
  if (!o.from.empty()) return run_keygen_from(o, console);
  require(o.secret_key, "--secret-key", "the file for the client's secret key");
  require(o.cloud_key, "--cloud-key", "the file for the server's cloud key");
  Parameters params;
  try {
    params = parameters_by_name(o.params.empty() ? default_parameter_set : o.params);
  } catch (const InvalidArgument& e) {
    throw UsageError("--params: " + user_message(e));
  }
  if (params.insecure && !o.insecure_ok) {
    throw UsageError("parameter set '" + params.name +
                     "' is INSECURE (tiny dimensions for tests, no security at all); pass "
                     "--insecure-ok to use it anyway");
  }
  if (same_path(o.secret_key, o.cloud_key)) {
    throw UsageError("--secret-key and --cloud-key name the same file " + in_quotes(o.cloud_key));
  }
  OutputFile secret_file(o.secret_key, o.force, /*secret=*/true);
  OutputFile cloud_file(o.cloud_key, o.force);
  if (params.insecure) {
    warn(console, "parameter set '" + params.name +
                      "' is INSECURE: for tests only, its ciphertexts protect nothing");
  }

  const auto start = Clock::now();
  Csprng rng;
  const SecretKey secret(params, rng);
  const CloudKey cloud = CloudKey::generate(secret, rng, o.unroll);
  secret_file.write([&](const fs::path& path) { save_secret_key(path, secret); });
  cloud_file.write([&](const fs::path& path) { save_cloud_key(path, cloud); });
  secret_file.commit();
  cloud_file.commit();

  if (!console.quiet) {
    console.out << "parameter set  " << parameters_text(params) << "\n"
                << "secret key     " << in_quotes(o.secret_key) << ", "
                << byte_size(secret_file.size())
                << ": the client keeps it private (file mode 0600); it decrypts everything\n"
                << "cloud key      " << in_quotes(o.cloud_key) << ", "
                << byte_size(cloud_file.size())
                << ": give it to the server; it computes on ciphertexts but cannot decrypt\n"
                << "generated in " << seconds_text(apps::seconds_since(start)) << "\n";
  }
  return exit_success;
}

int run_encrypt(const EncryptOptions& o, Console& console) {
  require(o.key, "--key", "the secret key file (keygen --secret-key)");
  require(o.width, "--width", "bits per integer, 1 to 64");
  require(o.output, "--output", "the file for the encrypted integers");
  if (o.values.empty() == o.input.empty()) {
    throw UsageError(o.values.empty() ? "give the integers with --values LIST (not empty) or "
                                        "--input FILE"
                                      : "give the integers with --values or --input, not both");
  }
  const IntType type{parse_number("--width", o.width, 1, 64), o.is_signed};
  std::optional<Shape> shape;
  if (!o.shape.empty()) {
    shape = parse_shape(o.shape);
    if (!shape) {
      throw UsageError("--shape: '" + o.shape +
                       "' is not a shape; expected ROWS,COLS such as 2,3 (each at least 1)");
    }
  }
  ValueTable table = read_values(o, type);
  if (shape) {
    // rows and cols have up to 12 digits each: their product may not fit 64 bits.
    const unsigned __int128 holds = static_cast<unsigned __int128>(shape->rows) * shape->cols;
    if (holds != table.values.size()) {
      throw UsageError("--shape " + std::to_string(shape->rows) + "," +
                       std::to_string(shape->cols) + " holds " +
                       (holds > UINT64_MAX ? std::string("more than 2^64")
                                           : std::to_string(static_cast<std::uint64_t>(holds))) +
                       " values but " + given(table.values.size()));
    }
    table.shape = *shape;
  }
  check_distinct({o.key, o.input}, {{"--output", o.output}});
  OutputFile out_file(o.output, o.force);
  expect_object(o.key, ObjectType::SecretKey, "--key");
  const SecretKey secret = loading([&] { return load_secret_key(o.key); });

  Csprng rng;
  IntegerArrayCiphertext array;
  array.width = static_cast<std::uint32_t>(type.width);
  array.is_signed = type.is_signed;
  array.rows = table.shape.rows;
  array.cols = table.shape.cols;
  array.samples = encrypt_bits(secret, circuits::to_bit_planes(table.values, type), rng);
  array.key_id = secret.key_id();
  out_file.write(
      [&](const fs::path& path) { save_integer_array(path, secret.parameters(), array); });
  out_file.commit();
  if (!console.quiet) {
    console.out << "encrypted " << count_text(array.lanes(), "integer") << " (" << array.describe()
                << ") with parameter set '" << secret.parameters().name << "' into "
                << in_quotes(o.output) << ": " << count_text(array.samples.count(), "ciphertext")
                << ", " << byte_size(out_file.size()) << "\n";
  }
  return exit_success;
}

namespace {

// lut's table from --table: one entry per value of x (2^w, x up to 16 bits), each fitting
// --width bits (default x's), signed when some entry is negative.
void lut_table(const std::string& text, const Operand& x, EvalArgs& args) {
  if (x.type.width > 16) {
    throw CommandError("lut indexes integers of up to 16 bits, but " + in_quotes(x.file) +
                       " is " + type_name(x.type));
  }
  const std::size_t width = args.width != 0 ? args.width : x.type.width;
  ValueTable table;
  try {
    // Signed when a value is negative: read as 64-bit signed first (all of 0..2^63 - 1), then
    // against the result type for the message a value that does not fit gets.
    bool negative = false;
    try {
      for (std::uint64_t v : parse_values(text, IntType{64, true}).values)
        negative = negative || static_cast<std::int64_t>(v) < 0;
    } catch (const ValueError&) {
      // Values of 2^63 and more: unsigned, checked below.
    }
    args.table_type = IntType{width, negative};
    table = parse_values(text, args.table_type,
                         "; a table is signed when an entry is negative, unsigned otherwise, so "
                         "it cannot hold both negative entries and entries of 2^63 or more");
  } catch (const ValueError& e) {
    throw UsageError("--table: " + std::string(e.what()) +
                     (args.width == 0 ? "; --width sets the result width" : ""));
  }
  const std::size_t entries = std::size_t{1} << x.type.width;
  if (table.values.size() != entries) {
    throw UsageError("--table: lut of " + in_quotes(x.file) + " (" + type_name(x.type) +
                     ") needs " + std::to_string(entries) +
                     " entries, one per value from the smallest, but --table has " +
                     std::to_string(table.values.size()));
  }
  args.table = std::move(table.values);
}

}  // namespace

int run_eval(const EvalOptions& o, Console& console) {
  require(o.cloud_key, "--cloud-key", "the cloud key file (keygen --cloud-key)");
  require(o.op, "--op", "the operation, one of " + operation_names());
  require(o.output, "--output", "the file for the result");
  const Operation& op = find_operation(o.op);
  const std::string name(op.name);
  if (o.inputs.size() != op.arity()) {
    throw UsageError(name + " takes " + (op.arity() == 1 ? "one input file" : "two input files") +
                     " but " + given(o.inputs.size()));
  }
  EvalArgs args;
  if (!o.width.empty()) {
    if (!op.takes_width) {
      throw UsageError("--width applies to sum, dot, matmul and lut only; the result of " +
                       name + " has the width its operands give it");
    }
    // A table's entries are 64-bit values at most.
    args.width = parse_number("--width", o.width, 1, op.takes_table ? 64 : max_integer_width);
  }
  if (!o.table.empty() && !op.takes_table) throw UsageError("--table applies to lut only");
  if (op.takes_table && o.table.empty()) {
    throw UsageError(name + " needs --table: the results for the values of x, from the smallest");
  }
  apps::ServerOptions server;
  const std::string backend_name = resolve_backend(o, server);
  // The result may replace an operand (written whole, after the operands are read), never
  // the cloud key.
  check_distinct({o.cloud_key}, {{"--output", o.output}});
  OutputFile out_file(o.output, o.force);

  // Headers first: what each file holds and its parameter set, before anything is loaded.
  const FileHeader key_header = expect_object(o.cloud_key, ObjectType::CloudKey, "--cloud-key");
  // The secret key the result is under: the cloud key's, else the operands' (format version 3
  // files name it; 0: not known).
  std::uint64_t key_id = key_header.key_id;
  std::string key_id_from = o.cloud_key;
  for (const std::string& input : o.inputs) {
    const FileHeader header = expect_object(input, ObjectType::IntegerArray, "an operand of eval");
    const std::string mismatch =
        parameter_mismatch(input, header.params, o.cloud_key, key_header.params);
    if (!mismatch.empty()) {
      throw CommandError("the files use different parameter sets: " + mismatch +
                         "; encrypt the operands with the secret key made with this cloud key");
    }
    if (header.key_id != 0 && key_id != 0 && header.key_id != key_id) {
      throw CommandError(in_quotes(input) + " is encrypted under key id " +
                         key_id_text(header.key_id) + " but " + in_quotes(key_id_from) +
                         (key_id_from == o.cloud_key ? " was made from key id "
                                                     : " is under key id ") +
                         key_id_text(key_id) +
                         ": the result would decrypt to random bits; encrypt the operands with "
                         "the secret key this cloud key was made from");
    }
    if (key_id == 0 && header.key_id != 0) {
      key_id = header.key_id;
      key_id_from = input;
    }
  }
  std::vector<IntegerArrayCiphertext> arrays;
  std::vector<Operand> operands;
  for (const std::string& input : o.inputs) {
    arrays.push_back(loading([&] { return load_integer_array(input, key_header.params); }));
    const IntegerArrayCiphertext& a = arrays.back();
    operands.push_back(Operand{input, type_of(a), Shape{a.rows, a.cols}});
  }
  check_operands(op, operands);
  if (op.takes_table) lut_table(o.table, operands[0], args);

  // The server's side: the cloud key only.
  const auto start = Clock::now();
  const auto cloud =
      std::make_shared<const CloudKey>(loading([&] { return load_cloud_key(o.cloud_key); }));
  double setup_seconds = 0, seconds = 0;
  std::string backend_description;
  circuits::ScheduleCost cost;
  circuits::FailureBound failure, failure_standard;
  const std::uint32_t unroll = cloud->bootstrapping_key().unroll();
  if (backend_name == "gpu") {
    // The GPU options against the key's parameter set and form (a command-line error), before
    // the key goes to the device.
    try {
      apps::check_gpu_options(server.gpu, key_header.params, unroll);
    } catch (const InvalidArgument& e) {
      throw UsageError(e.what());
    }
  }
  IntegerArrayCiphertext out;
  apps::with_server_backend(backend_name, cloud, server, [&](auto& be) {
    using Server = std::decay_t<decltype(be)>;
    setup_seconds = apps::seconds_since(start);
    backend_description = apps::backend_description(be);
    using Array = circuits::IntArray<Server>;
    std::vector<Array> inputs;
    for (const IntegerArrayCiphertext& a : arrays) {
      inputs.emplace_back(be.upload(a.samples), type_of(a), a.rows, a.cols);
    }
    circuits::Program<Server> prog(be);
    std::vector<circuits::Expr> exprs;
    for (const Array& a : inputs) exprs.push_back(prog.input(a));
    const circuits::Expr expr = op.record(prog.circuit(), exprs, args);
    apps::ProgressBar bar("eval " + name, "bootstraps", !console.quiet);
    prog.on_progress([&](const circuits::RunProgress& p) {
      if (p.bootstraps_total >= progress_min_bootstraps) {
        bar.update(p.bootstraps_done, p.bootstraps_total);
      }
    });
    const auto run_start = Clock::now();
    const Array result = prog.run(expr);
    seconds = apps::seconds_since(run_start);
    bar.finish();
    cost = prog.last_schedule().cost;
    failure = circuits::failure_bound(prog.last_schedule(),
                                      noise_model(key_header.params, unroll));
    // What a standard key would give, for the warning only.
    failure_standard = failure;
    if (unroll != 1 && failure.log2_per_run > failure_warning_log2) {
      failure_standard =
          circuits::failure_bound(prog.last_schedule(), noise_model(key_header.params, 1));
    }
    out.width = static_cast<std::uint32_t>(result.width());
    out.is_signed = result.is_signed();
    out.rows = result.rows();
    out.cols = result.cols();
    out.samples = be.download(result.buffer().bits());
    out.key_id = key_id;
  });
  out_file.write([&](const fs::path& path) { save_integer_array(path, key_header.params, out); });
  out_file.commit();

  if (!console.quiet) {
    console.out << name << ":";
    for (std::size_t i = 0; i < arrays.size(); ++i) {
      console.out << (i > 0 ? "," : "") << " " << in_quotes(o.inputs[i]) << " ("
                  << arrays[i].describe() << ")";
    }
    console.out << " -> " << in_quotes(o.output) << " (" << out.describe() << ", "
                << byte_size(out_file.size()) << ")\n"
                << "  " << count_text(cost.bootstraps, "bootstrap") << " in "
                << count_text(cost.batches, "batch", "es") << " (depth " << cost.depth << ") in "
                << seconds_text(seconds) << " on " << backend_description << "; cloud key loaded in "
                << seconds_text(setup_seconds) << "\n";
    if (failure.has_bootstraps()) {
      console.out << "  a wrong output bit: " << apps::log2_probability_text(failure.log2_per_run)
                  << " by the noise model (docs/security.md section 3)\n";
    }
  }
  if (failure.has_bootstraps() && failure.log2_per_run > failure_warning_log2) {
    std::string because = "its " + apps::gate_label(failure.worst_gate) +
                          " bootstraps each fail with probability " +
                          apps::log2_probability_text(failure.worst_gate_log2);
    if (failure_standard.log2_per_run < failure.log2_per_run) {
      because += ", with " + apps::key_form_text(unroll) +
                 "; a cloud key made without --unroll gives " +
                 apps::log2_probability_text(failure_standard.log2_per_run);
    }
    warn(console, "by the noise model this run gives a wrong output bit with probability " +
                      apps::log2_probability_text(failure.log2_per_run) + " (" + because +
                      "): its result may be wrong");
  }
  return exit_success;
}

int run_decrypt(const DecryptOptions& o, Console& console) {
  require(o.key, "--key", "the secret key file (keygen --secret-key)");
  if (o.input.empty()) throw UsageError("give the file to decrypt");
  const std::string& input = o.input;
  std::optional<OutputFile> out_file;
  if (!o.output.empty()) {
    check_distinct({o.key, input}, {{"--output", o.output}});
    // The decrypted values are the client's plaintext: readable by their owner only.
    out_file.emplace(o.output, o.force, /*secret=*/true);
  }

  const FileHeader key_header = expect_object(o.key, ObjectType::SecretKey, "--key");
  const FileHeader header = expect_object(input, ObjectType::IntegerArray, "decrypt");
  const std::string mismatch = parameter_mismatch(input, header.params, o.key, key_header.params);
  if (!mismatch.empty()) {
    throw CommandError(mismatch + "; decrypt with the secret key the file was encrypted for");
  }
  const SecretKey secret = loading([&] { return load_secret_key(o.key); });
  const IntegerArrayCiphertext array =
      loading([&] { return load_integer_array(input, key_header.params); });
  if (array.key_id != 0 && array.key_id != secret.key_id()) {
    throw CommandError(in_quotes(input) + " is under key id " + key_id_text(array.key_id) +
                       " but " + in_quotes(o.key) + " is key id " + key_id_text(secret.key_id()) +
                       ": it would decrypt to random bits; decrypt with the secret key the file "
                       "was encrypted for");
  }
  const IntType type = type_of(array);
  const std::vector<Bits128> values =
      values_from_bit_planes(decrypt_bits(secret, array.samples), type, array.lanes());
  const std::string text = format_values(values, type, Shape{array.rows, array.cols});
  if (!out_file) {
    console.out << text;
    return exit_success;
  }
  out_file->write([&](const fs::path& path) {
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file << text;
    file.close();
    if (!file) throw SystemError("writing the values failed");
  });
  out_file->commit();
  if (!console.quiet) {
    console.out << "decrypted " << count_text(array.lanes(), "integer") << " (" << array.describe()
                << ") into " << in_quotes(o.output) << "\n";
  }
  return exit_success;
}

int run_info(const InfoOptions& o, Console& console) {
  if (o.files.empty()) throw UsageError("give one or more files to describe");
  int status = exit_success;
  for (const std::string& file : o.files) {
    try {
      const std::string description = describe_any_file(file);
      console.out << apps::terminal_text(file) << ": " << description << "\n";
    } catch (const CommandError& e) {
      console.err << "torusgate info: " << apps::terminal_text(e.what()) << "\n";
      status = exit_failure;
    }
  }
  return status;
}

}  // namespace torusgate::cli
