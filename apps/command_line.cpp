// The programs' command-line walker and their CPU and GPU run options.
#include "command_line.hpp"

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "printable.hpp"
#include "text_support.hpp"

namespace torusgate::apps {

bool CommandLine::next() {
  if (++i_ >= argc_) return false;
  arg_ = argv_[i_];
  return true;
}

bool is_option_word(const std::string& word) {
  return word.size() > 2 && word.rfind("--", 0) == 0;
}

InvalidArgument option_instead_of_value(const std::string& option, const std::string& word) {
  return InvalidArgument(option + " needs a value but the next argument is the option '" +
                         printable(word) + "' (see --help)");
}

std::string CommandLine::value() {
  if (i_ + 1 >= argc_) throw InvalidArgument(arg_ + " needs a value (see --help)");
  const std::string next = argv_[i_ + 1];
  if (is_option_word(next)) throw option_instead_of_value(arg_, next);
  ++i_;
  if (std::find(repeatable_.begin(), repeatable_.end(), arg_) == repeatable_.end()) {
    for (const auto& [option, earlier] : given_) {
      if (option == arg_) {
        throw InvalidArgument(arg_ + " is given twice ('" + printable(earlier) + "', then '" +
                              printable(next) + "'); give it once");
      }
    }
    given_.emplace_back(arg_, next);
  }
  return next;
}

void CommandLine::reject() const {
  throw InvalidArgument("unknown argument '" + arg_ + "' (see --help)");
}

bool parse_cpu_option(CommandLine& cl, CpuOptions& cpu) {
  const std::string& arg = cl.arg();
  if (arg == "--threads") cpu.threads = static_cast<int>(parse_count(arg, cl.value(), 1, 4096));
  else if (arg == "--task-size") cpu.task_size = parse_count(arg, cl.value(), 2, 4096);
  else if (arg == "--fft") cpu.fft = parse_fft_engine(cl.value());
  else return false;
  return true;
}

namespace {

// The GPU options that take a count into a field of CudaOptions, with their largest value.
struct CountOption {
  std::string_view flag;
  std::uint32_t CudaOptions::*field;
  std::uint64_t max;
};
constexpr CountOption count_options[] = {
    {"--fused-groups", &CudaOptions::fused_groups, 1024},
    {"--fused-rotations", &CudaOptions::fused_rotations_per_block, 8},
    {"--fused-cluster", &CudaOptions::fused_cluster_blocks, 8},
    {"--fused-lanes", &CudaOptions::fused_lanes, 2},
    {"--fused-cluster-points", &CudaOptions::fused_cluster_points, 8},
    {"--fused-cluster-sums", &CudaOptions::fused_cluster_sums, 2},
    {"--fused-bundle", &CudaOptions::fused_bundle, 2},
    {"--fused-bundle-overlap", &CudaOptions::fused_bundle_overlap, 2},
    {"--fused-key-stage", &CudaOptions::fused_key_stage, 2}};

}  // namespace

bool set_gpu_option(const std::string& flag, const std::string& value, CudaOptions& gpu) {
  for (const CountOption& o : count_options) {
    if (o.flag != flag) continue;
    gpu.*o.field = static_cast<std::uint32_t>(parse_count(flag, value, 0, o.max));
    return true;
  }
  if (flag == "--device") {
    gpu.device = static_cast<int>(parse_count(flag, value, 0, 1023));
  } else if (flag == "--memory-budget-mb") {
    gpu.memory_budget_bytes =
        static_cast<std::size_t>(parse_count(flag, value, 0, std::uint64_t{1} << 24)) << 20;
  } else if (flag == "--no-cuda-graphs") {
    gpu.use_cuda_graphs = false;
  } else if (flag == "--gpu-engine") {
    gpu.engine = parse_gpu_engine(flag, value);
  } else if (flag == "--key-switching") {
    gpu.key_switching = parse_gpu_key_switching(flag, value);
  } else if (flag == "--transfer") {
    gpu.transfer = parse_gpu_transfer(flag, value);
  } else if (flag == "--staging-mb") {
    gpu.staging_bytes = static_cast<std::size_t>(parse_count(flag, value, 1, 1024)) << 20;
  } else {
    return false;
  }
  return true;
}

const std::vector<GpuOptionText>& gpu_option_texts() {
  // The flag, its value's name, then the help text.
  static const std::vector<GpuOptionText> texts = {
      {"--device", "D", "CUDA device index (default 0)"},
      {"--memory-budget-mb", "MB", "device scratch one batch may use (default 0: automatic)"},
      {"--no-cuda-graphs", "", "cuFFT engine: launch the CMUX steps one by one"},
      {"--gpu-engine", "E", "fused (default) | cufft"},
      {"--key-switching", "K", "automatic (default) | gather | tensor_core"},
      {"--fused-groups", "G", "fused engine: thread groups per rotation, 1, k+1 or (k+1)l"},
      {"--fused-rotations", "R", "fused engine: rotations per block, 1..8 (both 0: automatic)"},
      {"--fused-cluster", "C",
       "fused engine: blocks per thread block cluster and rotation, k+1 or "
       "(k+1)l (0: automatic, 1: none)"},
      {"--fused-lanes", "P", "fused engine: rotations per thread, 1 or 2 (k = 1; 0: automatic)"},
      {"--fused-cluster-points", "Q",
       "fused engine: points per thread in a cluster, 8 or 4 (wide: "
       "twice the threads; N = 512..2048; 0: automatic)"},
      {"--fused-cluster-sums", "S",
       "fused engine: who sums a cluster's products, 1: each column's "
       "owner, 2: every block its own column ((k+1)l blocks; 0: "
       "automatic)"},
      {"--fused-bundle", "B",
       "fused engine, key in pairs or threes: 2: each group step's GGSW "
       "bundled before a cluster's rotation, 1: never (0: automatic, 2)"},
      {"--fused-bundle-overlap", "O",
       "fused engine, bundled keys: 2: the rotation starts while "
       "they are made, 1: after (0: automatic: keys in fours whose "
       "clusters take at most half the device)"},
      {"--fused-key-stage", "K",
       "fused engine, standard key: 2: one-group blocks (1x1, two lanes) "
       "read each row's key through a stage the TMA fills (compute "
       "capability 9.0), 1: never (0: automatic, 1)"},
      {"--transfer", "T", "direct (default) | pinned: through page-locked staging buffers"},
      {"--staging-mb", "MB",
       "pinned: each of the two staging buffers, 1..1024 MiB (default " +
           std::to_string(CudaOptions{}.staging_bytes >> 20) + ")"}};
  return texts;
}

bool parse_gpu_option(CommandLine& cl, CudaOptions& gpu) {
  for (const GpuOptionText& o : gpu_option_texts()) {
    if (o.flag == cl.arg()) return set_gpu_option(o.flag, o.value.empty() ? "" : cl.value(), gpu);
  }
  return false;
}

GpuEngine parse_gpu_engine(const std::string& option, const std::string& text) {
  if (text == "cufft") return GpuEngine::cufft;
  if (text == "fused") return GpuEngine::fused;
  throw InvalidArgument(option + ": unknown GPU engine '" + text + "'; expected cufft or fused");
}

GpuKeySwitching parse_gpu_key_switching(const std::string& option, const std::string& text) {
  if (text == "gather") return GpuKeySwitching::gather;
  if (text == "tensor_core") return GpuKeySwitching::tensor_core;
  if (text == "automatic") return GpuKeySwitching::automatic;
  throw InvalidArgument(option + ": unknown key switching '" + text +
                        "'; expected automatic, gather or tensor_core");
}

GpuTransfer parse_gpu_transfer(const std::string& option, const std::string& text) {
  if (text == "direct") return GpuTransfer::direct;
  if (text == "pinned") return GpuTransfer::pinned;
  throw InvalidArgument(option + ": unknown transfer mode '" + text +
                        "'; expected direct or pinned");
}

FftEngineKind parse_fft_engine(const std::string& name) {
  if (name == "auto") return FftEngineKind::Auto;
  if (name == "fftw") return FftEngineKind::Fftw;
  if (name == "portable") return FftEngineKind::Portable;
  if (name == "simd") return FftEngineKind::Simd;
  throw InvalidArgument("--fft: unknown engine '" + name + "'; expected auto, fftw, simd or portable");
}

}  // namespace torusgate::apps
