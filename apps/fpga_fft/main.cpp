// fpga_fft: the command line of the FPGA FFT datapath models (docs/fpga_fft.md).
//   fpga_fft simulate [datapath]           cycle model vs functional model, latency, resources
//   fpga_fft verilog  [datapath] --out DIR  RTL, testbench, input.hex, expected.txt
//   fpga_fft cosim    [datapath] --workdir DIR   the same, built and run with an HDL simulator
//   fpga_fft study    [--frac-bits ...]    precision table of the negacyclic product and bootstrapping
// Exit codes: 0 ok, 1 a check failed, 2 bad command line or input, 77 cosim without simulator.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <iostream>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>

#include "app_support.hpp"
#include "printable.hpp"
#include "commands.hpp"
#include "torusgate/core/error.hpp"

using namespace torusgate;
using namespace torusgate::fpga_fft_app;

namespace {

struct DatapathFlags {
  std::string rounding = "nearest", direction = "forward";
};

void add_datapath(CLI::App* app, DatapathOptions& d, DatapathFlags& flags, bool streaming) {
  app->add_option("--size", d.fft.size, "complex points M (a power of two, 2..65536; M = N/2)")
      ->capture_default_str();
  app->add_option("--radix", d.fft.radix, "radix r = 2^j, log2 r dividing log2 M (512: 2, 8, 512)")
      ->capture_default_str();
  app->add_option("--word-bits", d.fft.word_bits, "signed word width W (8..64)")->capture_default_str();
  app->add_option("--frac-bits", d.fft.frac_bits, "fractional bits F of data words (0..W-2)")
      ->capture_default_str();
  app->add_option("--twiddle-bits", d.fft.twiddle_bits,
                  "signed twiddle width T, T-2 fractional bits (4..62; 0: F+2)")
      ->capture_default_str();
  app->add_option("--rounding", flags.rounding, "rounding at every multiplier: nearest or truncate")
      ->capture_default_str();
  app->add_flag("--merged-twist", d.fft.merged_twist, "evaluate at the roots of X^M - i");
  app->add_option("--direction", flags.direction, "forward or inverse")->capture_default_str();
  if (streaming) {
    app->add_option("--width", d.stream.width,
                    "complex words per cycle w (a power of two, r..min(256, M))")
        ->capture_default_str();
    app->add_option("--mul-latency", d.stream.multiplier_latency,
                    "pipeline registers of a complex multiplier (0..64)")
        ->capture_default_str();
    app->add_option("--add-latency", d.stream.adder_latency,
                    "pipeline registers of an adder layer (0..64)")
        ->capture_default_str();
  }
}

// A 64-bit --seed is taken as text and parsed by apps::parse_count: CLI11 wraps -5 and clamps
// 2^64 and more to 2^64 - 1.
CLI::Option* add_seed(CLI::App* app, std::string& text, const std::string& help) {
  return app->add_option("--seed", text, help + " (0.." + std::to_string(UINT64_MAX) + ")")
      ->type_name("UINT");
}

std::uint64_t parse_seed(const std::string& text) {
  return apps::parse_count("--seed", text, 0, UINT64_MAX);
}

// The options of the generated files (verilog and cosim).
void add_vector_options(CLI::App* app, VerilogOptions& v, std::string& seed) {
  app->add_option("--name", v.name, "top module name")->capture_default_str();
  app->add_option("--transforms", v.transforms, "transforms in the vectors (1..64)")->capture_default_str();
  app->add_option("--input-bits", v.input_bits, "bits of the random input words (0: no overflow)")
      ->capture_default_str();
  add_seed(app, seed, "seed of the random inputs")->capture_default_str();
}

// parse_rounding with the option named in its refusal.
fpga_fft::Rounding rounding_named(const std::string& text) {
  try {
    return fpga_fft::parse_rounding(text);
  } catch (const InvalidArgument&) {
    throw InvalidArgument("--rounding: '" + apps::printable(text) +
                          "' is not known; expected nearest or truncate");
  }
}

void resolve(DatapathOptions& d, const DatapathFlags& flags) {
  d.fft.rounding = rounding_named(flags.rounding);
  if (flags.direction == "forward") {
    d.direction = fpga_fft::Direction::Forward;
  } else if (flags.direction == "inverse") {
    d.direction = fpga_fft::Direction::Inverse;
  } else {
    throw InvalidArgument("--direction '" + apps::printable(flags.direction) +
                          "' is not known; expected forward or inverse");
  }
}

// A datapath refusal of the library ("FixedFftConfig: frac_bits=70 but expected at most
// word_bits - 2 = 62") as the command line gave it: "--frac-bits=70 but expected at most
// --word-bits - 2 = 62", every field of the configuration named by the flag that sets it.
// study has no --size: its datapath has M = N/2 points (N with --full-length), named M.
std::string as_flags(std::string message, bool study) {
  bool datapath = false;
  for (const std::string_view prefix : {"FixedFftConfig: ", "StreamingConfig: ",
                                        "generate_verilog: ", "FixedPointNegacyclicFft: "}) {
    if (message.starts_with(prefix)) {
      message.erase(0, prefix.size());
      datapath = true;
      break;
    }
  }
  if (!datapath) return message;
  // The module name is the user's text: only its lead-in is rewritten.
  constexpr std::string_view module = "module name '";
  if (message.starts_with(module)) return "--name '" + message.substr(module.size());
  const std::pair<std::string_view, std::string_view> flags[] = {
      {"size", study ? "M" : "--size"},
      {"radix", "--radix"},
      {"width", "--width"},
      {"word_bits", "--word-bits"},
      {"frac_bits", "--frac-bits"},
      {"twiddle_bits", "--twiddle-bits"},
      {"multiplier_latency", "--mul-latency"},
      {"adder_latency", "--add-latency"},
      {"merged_twist", "--merged-twist"},
      {"full_length", "--full-length"}};
  const auto word_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  };
  std::string out;
  for (std::size_t i = 0; i < message.size();) {
    if (!word_char(message[i])) {
      out += message[i++];
      continue;
    }
    std::size_t end = i;
    while (end < message.size() && word_char(message[end])) ++end;
    const std::string_view word(message.data() + i, end - i);
    const auto* flag = std::find_if(std::begin(flags), std::end(flags),
                                    [&](const auto& f) { return f.first == word; });
    // "radix-2 datapaths" speaks of the design, not of the option.
    const bool compound = end < message.size() && message[end] == '-';
    out += flag != std::end(flags) && !compound ? flag->second : word;
    i = end;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fpga_fft: models of a streaming fixed-point FFT datapath for TFHE bootstrapping "
               "(docs/fpga_fft.md)"};
  app.require_subcommand(1);

  SimulateOptions simulate;
  DatapathFlags simulate_flags;
  std::string simulate_seed = "1", simulate_json;
  CLI::App* sim = app.add_subcommand("simulate", "run the cycle-level model against the functional model");
  add_datapath(sim, simulate.datapath, simulate_flags, true);
  sim->add_option("--transforms", simulate.transforms, "transforms streamed back to back (1..1024)")
      ->capture_default_str();
  sim->add_option("--input-bits", simulate.input_bits, "bits of the random input words (0: no overflow)")
      ->capture_default_str();
  add_seed(sim, simulate_seed, "seed of the random inputs")->capture_default_str();
  CLI::Option* simulate_json_option =
      sim->add_option("--json", simulate_json, "write a JSON report to this path");

  VerilogOptions verilog;
  DatapathFlags verilog_flags;
  std::string verilog_seed = "1";
  CLI::App* ver = app.add_subcommand("verilog", "generate the RTL, a testbench and test vectors (radix 2)");
  add_datapath(ver, verilog.datapath, verilog_flags, true);
  ver->add_option("--out", verilog.out_dir, "output directory")->required();
  add_vector_options(ver, verilog, verilog_seed);
  ver->add_flag("--force", verilog.force, "overwrite existing files");

  CosimOptions cosim;
  DatapathFlags cosim_flags;
  std::string cosim_seed = "1";
  CLI::App* co = app.add_subcommand("cosim", "generate, simulate with Verilator or Icarus, compare with the model");
  add_datapath(co, cosim.verilog.datapath, cosim_flags, true);
  co->add_option("--workdir", cosim.verilog.out_dir, "work directory (files are overwritten)")->required();
  add_vector_options(co, cosim.verilog, cosim_seed);
  co->add_option("--simulator", cosim.simulator, "auto, verilator or iverilog")->capture_default_str();

  StudyOptions study;
  std::string frac_bits_list, roundings_list;  // comma-separated; an empty item is refused
  std::string study_seed, study_json, study_markdown;
  CLI::App* st = app.add_subcommand("study", "precision of the negacyclic product and of bootstrapping vs F");
  st->add_option("--params", study.params, "parameter set")->capture_default_str();
  st->add_option("--frac-bits", frac_bits_list, "fractional bits to study, a comma-separated list (default 14..34)");
  st->add_option("--rounding", roundings_list, "nearest and/or truncate, comma-separated (default both)");
  st->add_option("--radix", study.radix, "FFT radix")->capture_default_str();
  st->add_option("--word-bits", study.word_bits, "word width W")->capture_default_str();
  st->add_option("--twiddle-bits", study.twiddle_bits, "twiddle width T (0: F+2)")->capture_default_str();
  st->add_flag("--merged-twist", study.merged_twist, "merge the twist into the FFT");
  st->add_flag("--key-in-double", study.key_in_double, "precompute the key spectrum in double");
  st->add_flag("--full-length", study.full_length, "an N-point FFT without folding (comparison)");
  st->add_option("--products", study.products, "external-product columns per configuration")->capture_default_str();
  st->add_option("--gates", study.gates, "bootstrapped NAND gates per configuration (0: none)")->capture_default_str();
  st->add_option("--threads", study.threads, "OpenMP threads (0: default)")->capture_default_str();
  CLI::Option* seed_option =
      add_seed(st, study_seed, "reproducible keys and inputs (INSECURE: study only)");
  CLI::Option* study_json_option =
      st->add_option("--json", study_json, "write the JSON results here");
  CLI::Option* study_markdown_option =
      st->add_option("--markdown", study_markdown, "write the markdown table here");

  // CLI11 answers an unknown first word with "A subcommand is required"; name it instead.
  if (argc > 1 && argv[1][0] != '-') {
    const std::string word = argv[1];
    if (word != "simulate" && word != "verilog" && word != "cosim" && word != "study") {
      std::cerr << "fpga_fft: unknown command '" << torusgate::apps::printable(word)
                << "'; expected simulate, verilog, cosim or study (--help lists them)\n";
      return exit_usage;
    }
  }
  // As CommandLine::value() in the other programs: an option's value is never the next option
  // (CLI11 would take `--json --merged-twist` as a file named --merged-twist and drop the flag).
  if (argc > 1 && argv[1][0] != '-') {
    const CLI::App* sub = app.get_subcommand(argv[1]);
    for (int i = 2; i + 1 < argc; ++i) {
      const std::string arg = argv[i], next = argv[i + 1];
      if (arg.rfind("--", 0) != 0 || arg.find('=') != std::string::npos) continue;
      const CLI::Option* opt = sub->get_option_no_throw(arg);
      if (opt == nullptr || opt->get_items_expected_max() == 0) continue;  // unknown, a flag
      if (apps::is_option_word(next)) {
        std::cerr << "fpga_fft " << argv[1] << ": "
                  << apps::terminal_text(apps::option_instead_of_value(arg, next).what()) << "\n";
        return exit_usage;
      }
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e) == 0 ? exit_ok : exit_usage;
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e) == 0 ? exit_ok : exit_usage;
  } catch (const CLI::ParseError& e) {
    // One line, naming the command, as every other error.
    const std::string command = argc > 1 && argv[1][0] != '-' ? std::string(argv[1]) : "";
    std::string line = "fpga_fft";
    if (!command.empty()) line.append(" ").append(command);
    line.append(": ").append(e.what()).append(" (see 'fpga_fft ");
    if (!command.empty()) line.append(command).append(" ");
    line.append("--help')");
    std::cerr << torusgate::apps::terminal_text(line) << "\n";
    return exit_usage;
  }
  // CLI11 reads an empty number (`--size ''`, `--size=`) as 0, which a range check would then
  // report as "--size=0"; name the empty value instead.
  for (const CLI::App* sub : app.get_subcommands()) {
    for (const CLI::Option* opt : sub->get_options()) {
      const std::string type = opt->get_type_name();
      if (type != "INT" && type != "UINT" && type != "FLOAT") continue;
      for (const std::string& value : opt->results()) {
        if (!value.empty()) continue;
        std::cerr << "fpga_fft " << sub->get_name() << ": " << opt->get_name()
                  << ": the value is empty; expected a number\n";
        return exit_usage;
      }
    }
  }
  try {
    // Report paths: given (even empty, which OutputFile refuses) or not, by the option's count.
    if (sim->parsed()) {
      resolve(simulate.datapath, simulate_flags);
      simulate.seed = parse_seed(simulate_seed);
      if (simulate_json_option->count() > 0) simulate.json = simulate_json;
      return run_simulate(simulate, std::cout);
    }
    if (ver->parsed()) {
      resolve(verilog.datapath, verilog_flags);
      verilog.seed = parse_seed(verilog_seed);
      return run_verilog(verilog, std::cout);
    }
    if (co->parsed()) {
      resolve(cosim.verilog.datapath, cosim_flags);
      cosim.verilog.seed = parse_seed(cosim_seed);
      return run_cosim(cosim, std::cout);
    }
    if (st->count("--frac-bits") > 0) {
      for (const std::string& item : apps::split_list(frac_bits_list)) {
        const auto f = static_cast<std::uint32_t>(apps::parse_count("--frac-bits", item, 0, 62));
        if (std::find(study.frac_bits.begin(), study.frac_bits.end(), f) != study.frac_bits.end())
          throw InvalidArgument("--frac-bits: " + item + " is listed twice");
        study.frac_bits.push_back(f);
      }
    }
    if (st->count("--rounding") > 0) {
      study.roundings.clear();
      for (const std::string& item : apps::split_list(roundings_list)) {
        const fpga_fft::Rounding r = rounding_named(item);
        if (std::find(study.roundings.begin(), study.roundings.end(), r) != study.roundings.end())
          throw InvalidArgument("--rounding: " + item + " is listed twice");
        study.roundings.push_back(r);
      }
    }
    if (seed_option->count() > 0) study.seed = parse_seed(study_seed);
    if (study_json_option->count() > 0) study.json = study_json;
    if (study_markdown_option->count() > 0) study.markdown = study_markdown;
    return run_study(study, std::cout);
  } catch (const InvalidArgument& e) {
    std::cerr << "fpga_fft: "
              << torusgate::apps::terminal_text(as_flags(e.what(), st->parsed())) << "\n";
    return exit_usage;
  } catch (const FormatError& e) {
    std::cerr << "fpga_fft: " << torusgate::apps::terminal_text(e.what()) << "\n";
    return exit_usage;
  } catch (const std::exception& e) {
    std::cerr << "fpga_fft: " << torusgate::apps::terminal_text(e.what()) << "\n";
    return exit_mismatch;
  }
}
