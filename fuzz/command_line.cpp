// Fuzz harness: the programs' command-line walker (apps::CommandLine: value(), flags, an
// option given twice, an option word where a value should be) and the CPU and GPU run options
// it takes (parse_cpu_option, parse_gpu_option), as a benchmark program walks them: those
// options, --out, --reps and --params with a value, --batch repeatable, --quick a flag, --help
// and -h, anything else refused (`--threads=4` among them: no option takes `=value`). The walk
// throws InvalidArgument only; the walker steps through the arguments in order, one for an
// option or flag and two for an option with its value, and every value it gives is the
// argument after its option, never an option word (--name); an option that is not repeatable
// gives a value once; the options end within their documented ranges.
//
// Input: the arguments after the program's name, each ended by a NUL or a line feed (the text
// after the last one is an argument when not empty).
#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "command_line.hpp"
#include "fuzz_support.hpp"

namespace {

using namespace torusgate;

std::vector<std::string> split_arguments(const std::string& text) {
  std::vector<std::string> args;
  std::string arg;
  for (const char c : text) {
    if (c == '\0' || c == '\n') {
      args.push_back(arg);
      arg.clear();
    } else {
      arg += c;
    }
  }
  if (!arg.empty()) args.push_back(arg);
  return args;
}

// Whether `option` takes a value when parse_cpu_option or parse_gpu_option takes it.
bool takes_value(const std::string& option) {
  if (option == "--threads" || option == "--task-size" || option == "--fft") return true;
  for (const apps::GpuOptionText& o : apps::gpu_option_texts()) {
    if (o.flag == option) return !o.value.empty();
  }
  return false;
}

bool in_range(std::uint64_t value, std::uint64_t min, std::uint64_t max) {
  return value >= min && value <= max;
}

// The options as parse_cpu_option and parse_gpu_option documented them (or the defaults).
void check_ranges(const CpuOptions& cpu, const CudaOptions& gpu) {
  const CpuOptions cpu0;
  const CudaOptions gpu0;
  fuzz::require(cpu.threads == cpu0.threads || (cpu.threads >= 1 && cpu.threads <= 4096),
                "command_line: --threads out of 1..4096: " + std::to_string(cpu.threads));
  fuzz::require(cpu.task_size == cpu0.task_size || in_range(cpu.task_size, 2, 4096),
                "command_line: --task-size out of 2..4096: " + std::to_string(cpu.task_size));
  fuzz::require(gpu.device >= 0 && gpu.device <= 1023,
                "command_line: --device out of 0..1023: " + std::to_string(gpu.device));
  const std::uint64_t mib = std::uint64_t{1} << 20;
  fuzz::require(gpu.memory_budget_bytes % mib == 0 &&
                    gpu.memory_budget_bytes <= (std::uint64_t{1} << 24) * mib,
                "command_line: --memory-budget-mb gave " +
                    std::to_string(gpu.memory_budget_bytes) + " bytes");
  fuzz::require(gpu.staging_bytes == gpu0.staging_bytes ||
                    (gpu.staging_bytes % mib == 0 && in_range(gpu.staging_bytes, mib, 1024 * mib)),
                "command_line: --staging-mb gave " + std::to_string(gpu.staging_bytes) +
                    " bytes");
  const std::uint32_t counts[] = {gpu.fused_groups,          gpu.fused_rotations_per_block,
                                  gpu.fused_cluster_blocks,  gpu.fused_lanes,
                                  gpu.fused_cluster_points,  gpu.fused_cluster_sums,
                                  gpu.fused_bundle,          gpu.fused_bundle_overlap,
                                  gpu.fused_key_stage};
  fuzz::require(std::all_of(std::begin(counts), std::end(counts),
                            [](std::uint32_t c) { return c <= 1024; }),
                "command_line: a --fused-* count above 1024");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> args = split_arguments(fuzz::as_string(data, size));
  args.insert(args.begin(), "program");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int argc = static_cast<int>(args.size());

  std::size_t at = 0;  // the argument the walker is on, as the harness counts them
  // A value the walker gave: the argument after its option, not an option word.
  const auto check_value = [&](const std::string& option, const std::string& value) {
    fuzz::require(at + 1 < args.size() && value == args[at + 1] && !apps::is_option_word(value),
                  "command_line: " + option + " (argument " + std::to_string(at) +
                      ") gave the value '" + value + "'");
  };
  fuzz::expect_only<InvalidArgument>("command_line: CommandLine", [&] {
    CpuOptions cpu;
    CudaOptions gpu;
    std::set<std::string> given;  // the options not repeatable that took a value
    for (apps::CommandLine cl(argc, argv.data(), {"--batch"}); cl.next();) {
      ++at;
      fuzz::require(at < args.size() && cl.arg() == args[at],
                    "command_line: the walker is on '" + cl.arg() + "', not on argument " +
                        std::to_string(at));
      const std::string option = cl.arg();
      const bool flag = cl.is_help() || option == "--quick";
      bool took_value = false;
      if (!flag && (apps::parse_cpu_option(cl, cpu) || apps::parse_gpu_option(cl, gpu))) {
        took_value = takes_value(option);  // the value checked at the next argument
        if (took_value) check_value(option, at + 1 < args.size() ? args[at + 1] : "");
      } else if (option == "--out" || option == "--reps" || option == "--params" ||
                 option == "--batch") {
        check_value(option, cl.value());
        took_value = true;
      } else if (!flag) {
        cl.reject();
      }
      if (took_value) {
        fuzz::require(option == "--batch" || given.insert(option).second,
                      "command_line: " + option + " gave a value twice");
        ++at;
      }
    }
    fuzz::require(at + 1 == args.size(), "command_line: the walk ended at argument " +
                                             std::to_string(at) + " of " +
                                             std::to_string(args.size() - 1));
    check_ranges(cpu, gpu);
  });
  return 0;
}
