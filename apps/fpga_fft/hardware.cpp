// fpga_fft simulate, verilog and cosim: the cycle model checked against the functional model,
// the generated RTL with its testbench and vectors, and co-simulation with an HDL simulator.
#include <algorithm>
#include <bit>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <unistd.h>

#include "app_support.hpp"
#include "commands.hpp"
#include "printable.hpp"
#include "torusgate/core/error.hpp"
#include "torusgate/core/random.hpp"
#include "torusgate/fpga_fft/verilog.hpp"

namespace torusgate::fpga_fft_app {

using namespace torusgate::fpga_fft;
namespace fs = std::filesystem;

std::uint32_t default_input_bits(const DatapathOptions& d) {
  const auto W = d.fft.word_bits;
  if (d.direction == Direction::Inverse) return W - 2;
  const auto growth = static_cast<std::uint32_t>(std::countr_zero(d.fft.size));
  return W - 2 > growth ? W - 2 - growth : 1;
}

std::vector<std::vector<CWord>> random_inputs(std::size_t transforms, std::size_t points,
                                              std::uint32_t bits, std::uint64_t seed) {
  EXPECTS(bits >= 1 && bits <= 64, "--input-bits=" + std::to_string(bits) + " but expected 1..64");
  Csprng rng = Csprng::deterministic(seed, testing::insecure_deterministic);  // test vectors
  std::vector<std::vector<CWord>> out(transforms, std::vector<CWord>(points));
  for (auto& t : out) {
    for (auto& w : t) {
      const auto draw = [&] {
        return static_cast<std::int64_t>(rng.uniform_u64()) >> (64 - bits);  // signed, `bits` bits
      };
      w.re = draw();
      w.im = draw();
    }
  }
  return out;
}

namespace {

std::vector<std::vector<CWord>> reference(const FixedFft& fft, Direction dir,
                                          const std::vector<std::vector<CWord>>& inputs,
                                          std::vector<std::uint64_t>& overflows) {
  std::vector<std::vector<CWord>> out;
  for (const auto& in : inputs) {
    std::vector<CWord> y(fft.size());
    if (dir == Direction::Forward) {
      fft.forward(in, y, overflows);
    } else {
      fft.inverse(in, y, overflows);
    }
    out.push_back(std::move(y));
  }
  return out;
}

std::string describe(const DatapathOptions& d) {
  return to_string(d.direction) + " " + d.fft.describe() + ", w=" + std::to_string(d.stream.width) +
         ", multiplier latency " + std::to_string(d.stream.multiplier_latency) +
         ", adder latency " + std::to_string(d.stream.adder_latency);
}

std::uint64_t sum(const std::vector<std::uint64_t>& v) {
  std::uint64_t s = 0;
  for (const auto x : v) s += x;
  return s;
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  if (!f) throw SystemError("cannot write " + path.string());
}

std::string read_file(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw SystemError("cannot read " + path.string());
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// "<cycle> <hex>" lines the testbench must write: transform k, block c leaves at
// latency + k*(M/w) + c.
std::string expected_output(const StreamingFft& model, const std::vector<std::vector<CWord>>& outs) {
  const std::size_t w = model.config().width, per = model.transform_interval();
  const unsigned W = model.transform().config().word_bits;
  std::string text;
  for (std::size_t k = 0; k < outs.size(); ++k) {
    const std::string vectors = format_vectors({outs[k]}, W);
    std::istringstream lines(vectors);
    std::string line;
    for (std::size_t i = 0; std::getline(lines, line); ++i) {
      text += std::to_string(model.latency_formula() + k * per + i / w) + " " + line + "\n";
    }
  }
  return text;
}

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return false;
  std::istringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (!dir.empty() && ::access((fs::path(dir) / program).c_str(), X_OK) == 0) return true;
  }
  return false;
}

std::string quoted(const fs::path& p) {
  std::string s = "'";
  for (const char c : p.string()) s += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return s + "'";
}

// Random inputs of `input_bits` (0: the default) and the functional model's outputs for them.
struct Vectors {
  std::uint32_t bits = 0;
  std::vector<std::vector<CWord>> inputs, outputs;
  std::vector<std::uint64_t> overflows;  // per stage, over all transforms
};

// The width of the random input words: input_bits, or the default of the datapath (0).
std::uint32_t input_width(const DatapathOptions& d, std::uint32_t input_bits) {
  const std::uint32_t bits = input_bits != 0 ? input_bits : default_input_bits(d);
  EXPECTS(bits <= d.fft.word_bits, "--input-bits=" + std::to_string(bits) +
                                       " but the words have " + std::to_string(d.fft.word_bits) +
                                       " bits");
  return bits;
}

Vectors make_vectors(const FixedFft& fft, const DatapathOptions& d, std::uint32_t transforms,
                     std::uint32_t input_bits, std::uint64_t seed) {
  Vectors v;
  v.bits = input_width(d, input_bits);
  v.inputs = random_inputs(transforms, fft.size(), v.bits, seed);
  v.overflows.assign(fft.stages(), 0);
  v.outputs = reference(fft, d.direction, v.inputs, v.overflows);
  return v;
}

// The directory named and the transforms of run_verilog.
void check_files_options(const VerilogOptions& o) {
  EXPECTS(!o.out_dir.empty(), o.out_flag + ": a directory is required");
  EXPECTS(o.transforms >= 1 && o.transforms <= 64,
          "--transforms=" + std::to_string(o.transforms) + " but the testbench holds 1..64");
}

// Every check of run_verilog that writes nothing (those options, the datapath, the module name,
// the input width), for cosim to make before it looks for a simulator.
void check_verilog_options(const VerilogOptions& o) {
  check_files_options(o);
  const FixedFft fft(o.datapath.fft);
  const StreamingFft model(fft, o.datapath.stream, o.datapath.direction);
  generate_verilog(model, o.name);
  input_width(o.datapath, o.input_bits);
}

}  // namespace

int run_simulate(const SimulateOptions& o, std::ostream& out) {
  // The path checked before the run (given but empty: refused).
  apps::OutputFile json_file;
  if (o.json) json_file = apps::OutputFile("--json", *o.json);
  const FixedFft fft(o.datapath.fft);
  const StreamingFft model(fft, o.datapath.stream, o.datapath.direction);
  EXPECTS(o.transforms >= 1 && o.transforms <= 1024,
          "--transforms=" + std::to_string(o.transforms) + " but expected 1..1024");
  // Before the vectors are made: the run's (run_bytes), and the inputs and the functional
  // model's outputs, each as large as the run's outputs (what run_bytes grows by).
  const std::uint64_t run = model.run_bytes(o.transforms);
  apps::check_host_memory(
      "--size " + std::to_string(fft.size()) + " with --transforms " +
          std::to_string(o.transforms),
      static_cast<double>(run) + 2 * static_cast<double>(run - model.run_bytes(0)),
      "simulate fewer --transforms (two show the throughput)");
  const Vectors v = make_vectors(fft, o.datapath, o.transforms, o.input_bits, o.seed);
  const std::uint32_t bits = v.bits;
  StreamingReport report;
  const auto got = model.run(v.inputs, &report);
  const bool equal = got == v.outputs;
  const bool timing = report.latency == model.latency_formula() &&
                      (o.transforms < 2 || report.transform_interval == model.transform_interval());

  // The unit column as wide as its longest description (at least 56).
  std::size_t unit_width = 56;
  for (const auto& u : model.units()) unit_width = std::max(unit_width, u.description.size());
  out << "fpga_fft simulate: " << describe(o.datapath) << "\n"
      << "  " << o.transforms << " transforms of random " << bits << "-bit words, seed " << o.seed
      << "\n\n  " << std::left << std::setw(static_cast<int>(unit_width)) << "unit" << std::right
      << std::setw(7) << "latency" << std::setw(8) << "memory" << std::setw(6) << "mult"
      << std::setw(5) << "add" << "\n";
  std::size_t perm = 0;
  for (const auto& u : model.units()) {
    out << "  " << std::left << std::setw(static_cast<int>(unit_width)) << u.description
        << std::right
        << std::setw(7) << u.latency << std::setw(8) << u.memory_words << std::setw(6)
        << u.multipliers << std::setw(5) << u.adders;
    if (u.kind == StreamingUnit::Kind::Permutation) {
      out << "  (simulated peak " << report.memory_peaks[perm++] << ")";
    }
    out << "\n";
  }
  out << "\n  latency: simulated " << report.latency << " cycles, formula "
      << model.latency_formula() << "\n"
      << "  throughput: one transform every " << report.transform_interval
      << " cycles (M/w = " << model.transform_interval() << ")\n"
      << "  resources: " << model.multipliers() << " real multipliers, " << model.adders()
      << " real adders, " << model.memory_words() << " memory words\n"
      << "  overflows: " << sum(report.overflows) << " (functional model " << sum(v.overflows) << ")\n"
      << "  outputs: " << (equal ? "identical to the functional model, bit for bit"
                                 : "DIFFER from the functional model")
      << "\n";
  if (json_file.wanted()) {
    std::ostringstream j;
    j << apps::json_report_opening("program", "fpga_fft simulate", "cycle model", 1)
      << "  \"datapath\": " << apps::json_string(describe(o.datapath)) << ",\n"
      << "  \"transforms\": " << o.transforms << ",\n  \"input_bits\": " << bits << ",\n"
      << "  \"seed\": " << o.seed << ",\n"
      << "  \"latency_simulated\": " << report.latency << ",\n"
      << "  \"latency_formula\": " << model.latency_formula() << ",\n"
      << "  \"transform_interval\": " << report.transform_interval << ",\n"
      << "  \"multipliers\": " << model.multipliers() << ",\n  \"adders\": " << model.adders()
      << ",\n  \"memory_words\": " << model.memory_words() << ",\n"
      << "  \"overflows\": " << sum(report.overflows) << ",\n"
      << "  \"identical\": " << (equal ? "true" : "false") << ",\n  \"units\": [\n";
    for (std::size_t i = 0; i < model.units().size(); ++i) {
      const auto& u = model.units()[i];
      j << "    {\"kind\": \""
        << (u.kind == StreamingUnit::Kind::Stage ? "stage" : "permutation") << "\", \"stage\": "
        << u.stage << ", \"latency\": " << u.latency << ", \"memory_words\": " << u.memory_words
        << ", \"multipliers\": " << u.multipliers << ", \"adders\": " << u.adders << "}"
        << (i + 1 < model.units().size() ? "," : "") << "\n";
    }
    j << "  ]\n}\n";
    json_file.stream() << j.str();
    json_file.commit();
  }
  return equal && timing ? exit_ok : exit_mismatch;
}

int run_verilog(const VerilogOptions& o, std::ostream& out) {
  check_files_options(o);
  const FixedFft fft(o.datapath.fft);
  const StreamingFft model(fft, o.datapath.stream, o.datapath.direction);
  const VerilogDesign design = generate_verilog(model, o.name);
  const Vectors v = make_vectors(fft, o.datapath, o.transforms, o.input_bits, o.seed);

  const fs::path dir(o.out_dir);
  const std::vector<std::pair<fs::path, std::string>> files = {
      {dir / (o.name + ".v"), design.rtl},
      {dir / ("tb_" + o.name + ".v"), design.testbench},
      {dir / "input.hex", format_vectors(v.inputs, o.datapath.fft.word_bits)},
      {dir / "expected.txt", expected_output(model, v.outputs)}};
  if (!o.force) {
    for (const auto& [path, text] : files) {
      if (fs::exists(path)) {
        throw InvalidArgument(path.string() + " exists; pass --force to overwrite it");
      }
    }
  }
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw InvalidArgument(o.out_flag + ": '" + dir.string() + "' is a file, not a folder");
  fs::create_directories(dir, ec);
  if (ec) throw InvalidArgument(o.out_flag + ": cannot create '" + dir.string() + "': " + ec.message());
  for (const auto& [path, text] : files) write_file(path, text);
  out << "fpga_fft verilog: " << describe(o.datapath) << "\n"
      << "  wrote " << apps::terminal_text(files[0].first.string()) << " ("
      << model.units().size() << " units, latency " << model.latency_formula() << " cycles), "
      << files[1].first.filename().string() << ", "
      << "input.hex (" << o.transforms << " transforms), expected.txt\n"
      << "  simulate: the testbench writes output.txt (run it with +transforms=" << o.transforms
      << "), which must equal expected.txt\n";
  return exit_ok;
}

int run_cosim(const CosimOptions& o, std::ostream& out) {
  std::string simulator = o.simulator;
  EXPECTS(simulator == "auto" || simulator == "verilator" || simulator == "iverilog",
          "--simulator '" + apps::printable(simulator) +
              "' is not known; expected auto, verilator or iverilog");
  VerilogOptions v = o.verilog;
  v.force = true;  // the work directory is ours
  v.out_flag = "--workdir";
  // Bad options are exit 2 on every machine, before the simulator is looked for (77).
  check_verilog_options(v);
  if (simulator == "auto") {
    simulator = on_path("verilator") ? "verilator" : on_path("iverilog") ? "iverilog" : "";
  } else if (!on_path(simulator == "iverilog" ? "iverilog" : "verilator")) {
    simulator.clear();
  }
  if (simulator.empty()) {
    out << "fpga_fft cosim: skipped: no HDL simulator found ("
        << (o.simulator == "auto" ? "verilator or iverilog" : o.simulator)
        << " is not on the PATH; scripts/setup.sh installs verilator)\n";
    return exit_skipped;
  }
  const int generated = run_verilog(v, out);
  if (generated != exit_ok) return generated;
  const fs::path dir = fs::absolute(v.out_dir);
  const std::string top = "tb_" + v.name;
  std::string build, run;
  if (simulator == "verilator") {
    build = "verilator --binary --timing -Wno-fatal -Wno-lint -Wno-style --top-module " + top +
            " -Mdir " + quoted(dir / "obj_dir") + " -o sim " + quoted(dir / (v.name + ".v")) + " " +
            quoted(dir / (top + ".v")) + " > " + quoted(dir / "build.log") + " 2>&1";
    run = "cd " + quoted(dir) + " && ./obj_dir/sim +transforms=" + std::to_string(v.transforms) +
          " > sim.log 2>&1";
  } else {
    build = "iverilog -g2005 -s " + top + " -o " + quoted(dir / "sim.vvp") + " " +
            quoted(dir / (v.name + ".v")) + " " + quoted(dir / (top + ".v")) + " > " +
            quoted(dir / "build.log") + " 2>&1";
    run = "cd " + quoted(dir) + " && vvp sim.vvp +transforms=" + std::to_string(v.transforms) +
          " > sim.log 2>&1";
  }
  fs::remove(dir / "output.txt");
  const auto start = std::chrono::steady_clock::now();
  if (std::system(build.c_str()) != 0) {
    throw SystemError(simulator + " could not build the design; see " + (dir / "build.log").string());
  }
  const double build_seconds = apps::seconds_since(start);
  if (std::system(run.c_str()) != 0 || !fs::exists(dir / "output.txt")) {
    throw SystemError("the simulation failed; see " + (dir / "sim.log").string());
  }
  const FixedFft fft(v.datapath.fft);
  const StreamingFft model(fft, v.datapath.stream, v.datapath.direction);
  const SimulatedOutput sim = parse_simulation_output(read_file(dir / "output.txt"), v.transforms,
                                                      fft.size(), v.datapath.fft.word_bits);
  const SimulatedOutput want = parse_simulation_output(read_file(dir / "expected.txt"),
                                                       v.transforms, fft.size(),
                                                       v.datapath.fft.word_bits);
  std::size_t differing = 0;
  for (std::size_t k = 0; k < v.transforms; ++k) {
    for (std::size_t i = 0; i < fft.size(); ++i) differing += !(sim.transforms[k][i] == want.transforms[k][i]);
  }
  const bool timing = sim.first_output_cycle == want.first_output_cycle &&
                      sim.transform_interval == want.transform_interval;
  out << "fpga_fft cosim (" << simulator << ", build " << std::fixed << std::setprecision(1)
      << build_seconds << " s): " << v.transforms * fft.size() << " words, " << differing
      << " differ from the C++ model; first output at cycle " << sim.first_output_cycle
      << " (model " << want.first_output_cycle << "), one transform every "
      << sim.transform_interval << " cycles (model " << want.transform_interval << ")\n"
      << "  " << (differing == 0 && timing ? "PASS: bit for bit and cycle for cycle" : "FAIL") << "\n";
  return differing == 0 && timing ? exit_ok : exit_mismatch;
}

}  // namespace torusgate::fpga_fft_app
