// The programs' command-line walker (CommandLine) and the CPU and GPU run options it takes
// (parse_cpu_option, parse_gpu_option), with the parsers of their values. No backend: the
// options are plain structs (CpuOptions of cpu_backend.hpp, whose headers are core's;
// CudaOptions of cuda_options.hpp, standard headers only). app_support.hpp includes this
// header; the fuzz harness fuzz/command_line.cpp links command_line.cpp without the backends.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "torusgate/core/error.hpp"
#include "torusgate/cpu/cpu_backend.hpp"
#include "torusgate/gpu/cuda_options.hpp"

namespace torusgate::apps {

// Walks a command line:
//   for (CommandLine cl(argc, argv); cl.next();) {
//     if (cl.arg() == "--params") name = cl.value(); ... else cl.reject();
//   }
// Whether a command-line word is an option (--name) rather than a value ("--" alone, "-1" and
// "./--name" are values), and the refusal of `option` followed by such a word instead of its
// value: shared by CommandLine and the CLI11 programs.
bool is_option_word(const std::string& word);
InvalidArgument option_instead_of_value(const std::string& option, const std::string& word);

// An option that takes a value may be given once, unless it is one of `repeatable` (options
// whose values add up, as bench_gates' --batch): a second one would silently replace the first.
class CommandLine {
 public:
  CommandLine(int argc, char** argv, std::vector<std::string> repeatable = {})
      : argc_(argc), argv_(argv), repeatable_(std::move(repeatable)) {}
  // Moves to the next argument; false when there is none.
  bool next();
  const std::string& arg() const { return arg_; }
  bool is_help() const { return arg_ == "--help" || arg_ == "-h"; }
  // The value after the current option. Throws InvalidArgument when it is missing, when the
  // next argument is an option (it starts with --: `--out --quick` names no folder; a path
  // that starts with -- can be written ./--name), or when the option was given before and is
  // not repeatable.
  std::string value();
  // Throws InvalidArgument: the current argument is not an option of this program.
  [[noreturn]] void reject() const;

 private:
  int argc_;
  char** argv_;
  int i_ = 0;
  std::string arg_;
  std::vector<std::string> repeatable_;
  std::vector<std::pair<std::string, std::string>> given_;  // option, value
};

// The CPU run options the benchmark programs share: --threads T (1..4096), --task-size S
// (2..4096) and --fft ENGINE. Takes the current argument of `cl` into `cpu` when it is one of
// them and returns true; returns false for any other argument.
bool parse_cpu_option(CommandLine& cl, CpuOptions& cpu);

// The GPU run options: --device D (0..1023), --memory-budget-mb MB (0..2^24 MiB of scratch
// one batch may use; 0, the default: automatic), --no-cuda-graphs, --gpu-engine cufft|fused,
// --fused-groups G (0..1024), --fused-rotations R (0..8; both 0: automatic),
// --fused-cluster C (0..8; 0: automatic, 1: none), --fused-lanes P (0..2; 0: automatic),
// --key-switching automatic|gather|tensor_core, --transfer direct|pinned and --staging-mb MB (1..1024
// MiB per staging buffer of pinned transfers). Takes the current argument of `cl` into `gpu`
// when it is one of them and returns true; returns false for any other argument.
bool parse_gpu_option(CommandLine& cl, CudaOptions& gpu);

// Sets the GPU option `flag` (one parse_gpu_option takes, as "--fused-lanes") from `value`
// (ignored for --no-cuda-graphs, which takes none) in `gpu` and returns true; false when
// `flag` is not a GPU option. Throws InvalidArgument naming the flag for a bad value. For
// command lines parsed by other means (torusgate eval's CLI11).
bool set_gpu_option(const std::string& flag, const std::string& value, CudaOptions& gpu);

// One GPU option as its help shows it: "--fused-lanes", its value's name "P" (empty for a
// flag that takes none) and its text.
struct GpuOptionText {
  std::string flag, value, help;
};
// Every option parse_gpu_option takes, in the order of the help.
const std::vector<GpuOptionText>& gpu_option_texts();

// "cufft" / "fused", "gather" / "tensor_core" and "direct" / "pinned"; InvalidArgument
// naming `option`, the bad text and the valid values otherwise.
GpuEngine parse_gpu_engine(const std::string& option, const std::string& text);
GpuKeySwitching parse_gpu_key_switching(const std::string& option, const std::string& text);
GpuTransfer parse_gpu_transfer(const std::string& option, const std::string& text);

// The FFT engine named by --fft: auto, fftw, simd or portable; throws InvalidArgument.
FftEngineKind parse_fft_engine(const std::string& name);

}  // namespace torusgate::apps
