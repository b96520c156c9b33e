// Verilog generator for the streaming datapath of StreamingFft (radix 2, any streaming width,
// forward or inverse, separate or merged twist, either rounding): synthesizable Verilog-2001
// that computes the functional model's outputs bit for bit with the cycle model's latency,
// plus a self-contained testbench that streams test vectors from a file and writes every
// output word with its cycle. docs/fpga_fft.md ("Verilog") describes the module and the files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "torusgate/fpga_fft/streaming.hpp"

namespace torusgate::fpga_fft {

struct VerilogDesign {
  std::string module_name;  // the datapath's top module
  std::string rtl;          // the datapath: top module, one module per unit, a delay line
  std::string testbench;    // module tb_<name>: reads input.hex, writes output.txt
};

// InvalidArgument for radix != 2 or a bad module name (a Verilog identifier is required, and
// not a reserved word of Verilog or SystemVerilog).
VerilogDesign generate_verilog(const StreamingFft& datapath, const std::string& module_name);

// Test vectors: one line per complex word, 2W bits as W/2 hex digits {im, re} (a lane's bus),
// transforms back to back in natural order: the testbench's input.hex. InvalidArgument for
// word_bits outside the datapath's 8..64 or a word that does not fit.
std::string format_vectors(const std::vector<std::vector<CWord>>& transforms, unsigned word_bits);

// The testbench's output.txt ("<cycle> <hex {im,re}>" per output word, lanes in order):
// the words of `transforms` transforms of `points` words and the cycle of the first output,
// relative to the first input cycle. FormatError naming the line when malformed or short;
// InvalidArgument for word_bits outside 8..64, points = 0 or 2^64 words or more in all.
struct SimulatedOutput {
  std::vector<std::vector<CWord>> transforms;
  std::uint64_t first_output_cycle = 0;
  std::uint64_t transform_interval = 0;  // cycles between the first words of transforms 0 and 1
};
SimulatedOutput parse_simulation_output(const std::string& text, std::size_t transforms,
                                        std::size_t points, unsigned word_bits);

}  // namespace torusgate::fpga_fft
