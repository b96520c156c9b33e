// The fpga_fft program's commands as functions (main.cpp maps the command line onto them, the
// tests call them in-process): simulate (cycle model vs functional model, latency, resources),
// verilog (RTL, testbench and vectors), cosim (generate, build with Verilator or Icarus, run,
// compare bit for bit) and study (precision of the negacyclic product and of gate
// bootstrapping for a range of fractional bits). docs/fpga_fft.md.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "torusgate/fpga_fft/streaming.hpp"

namespace torusgate::fpga_fft_app {

// Exit codes: 0 ok, 1 a check failed (a mismatch, a failed decryption where none is allowed),
// 2 bad command line or input, 77 skipped (no HDL simulator).
inline constexpr int exit_ok = 0, exit_mismatch = 1, exit_usage = 2, exit_skipped = 77;

struct DatapathOptions {
  fpga_fft::FixedFftConfig fft;
  fpga_fft::StreamingConfig stream;
  fpga_fft::Direction direction = fpga_fft::Direction::Forward;
};

struct SimulateOptions {
  DatapathOptions datapath;
  std::uint32_t transforms = 4;   // streamed back to back
  std::uint32_t input_bits = 0;   // random input words of this many bits; 0: W-2-log2(M) forward
                                  // (no overflow possible), W-2 inverse
  std::uint64_t seed = 1;
  std::optional<std::string> json;  // report path when --json was given (an empty one is refused)
};
int run_simulate(const SimulateOptions& options, std::ostream& out);

struct VerilogOptions {
  DatapathOptions datapath;
  std::string out_dir;
  std::string out_flag = "--out";  // the option that named out_dir, for messages
  std::string name = "fft_stream";
  std::uint32_t transforms = 4;
  std::uint32_t input_bits = 0;
  std::uint64_t seed = 1;
  bool force = false;  // overwrite existing files
};
// Writes <name>.v, tb_<name>.v, input.hex and expected.txt (what the testbench must write to
// output.txt: "<cycle> <hex>" per word) into out_dir.
int run_verilog(const VerilogOptions& options, std::ostream& out);

struct CosimOptions {
  VerilogOptions verilog;
  std::string simulator = "auto";  // auto (verilator, else iverilog), verilator, iverilog
};
int run_cosim(const CosimOptions& options, std::ostream& out);

struct StudyOptions {
  std::string params = "tfhe_lib_128";
  std::vector<std::uint32_t> frac_bits;  // empty: 14..34
  std::vector<fpga_fft::Rounding> roundings = {fpga_fft::Rounding::Nearest,
                                               fpga_fft::Rounding::Truncate};
  std::uint32_t radix = 2;
  std::uint32_t word_bits = 64;
  std::uint32_t twiddle_bits = 0;  // 0: F + 2
  bool merged_twist = false;
  bool key_in_double = false;
  bool full_length = false;     // N-point FFT without folding, for comparison
  std::uint32_t products = 16;  // external-product columns for the product error
  std::uint32_t gates = 64;     // bootstrapped NAND gates per configuration (0: products only)
  int threads = 0;              // OpenMP threads for the gates, 0..4096; 0: default
  std::optional<std::uint64_t> seed;  // reproducible (insecure) keys and inputs
  // Report paths when given (an empty one is refused; the two must name different files).
  std::optional<std::string> json, markdown;
};
int run_study(const StudyOptions& options, std::ostream& out);

// Random complex words of `bits` bits (signed), one vector per transform.
std::vector<std::vector<fpga_fft::CWord>> random_inputs(std::size_t transforms, std::size_t points,
                                                        std::uint32_t bits, std::uint64_t seed);
// The default input width of simulate/verilog (see SimulateOptions::input_bits).
std::uint32_t default_input_bits(const DatapathOptions& d);

}  // namespace torusgate::fpga_fft_app
