// Fuzz harness: the FPGA testbench's output reader (fpga_fft::parse_simulation_output), which
// `fpga_fft cosim` runs on the simulator's output.txt. FormatError is its documented failure
// on text. The words it reads, written again as "<cycle> <hex>" lines (format_vectors), read
// back the same.
//
// Input: byte 0 the word width (8 + b % 57 bits), byte 1 the shape (1 + (b & 3) transforms of
// 2^(b >> 2 & 7) points), then the text.
#include <string_view>

#include "fuzz_support.hpp"
#include "torusgate/fpga_fft/verilog.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace torusgate;
  if (size < 2) return 0;
  const unsigned word_bits = 8 + data[0] % 57;
  const std::size_t transforms = 1 + (data[1] & 3);
  const std::size_t points = std::size_t{1} << ((data[1] >> 2) & 7);
  const std::string text = fuzz::as_string(data + 2, size - 2);

  fuzz::expect_only<FormatError>("fpga_simulation_output: parse_simulation_output", [&] {
    const fpga_fft::SimulatedOutput out =
        fpga_fft::parse_simulation_output(text, transforms, points, word_bits);
    fuzz::require(out.transforms.size() == transforms,
                  "fpga_simulation_output: wrong number of transforms");
    for (const auto& t : out.transforms) {
      fuzz::require(t.size() == points, "fpga_simulation_output: a transform of wrong size");
    }
    // Written again, one word a cycle from cycle 0, they read back the same.
    const std::string vectors = fpga_fft::format_vectors(out.transforms, word_bits);
    std::string lines;
    std::size_t cycle = 0;
    for (std::size_t start = 0; start < vectors.size(); ++cycle) {
      const std::size_t end = vectors.find('\n', start);
      lines += std::to_string(cycle);
      lines += ' ';
      lines += vectors.substr(start, end - start + 1);
      start = end + 1;
    }
    const fpga_fft::SimulatedOutput again =
        fpga_fft::parse_simulation_output(lines, transforms, points, word_bits);
    fuzz::require(again.transforms == out.transforms,
                  "fpga_simulation_output: the words written again read back differently");
  });
  return 0;
}
