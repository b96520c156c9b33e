// Shared helpers of the example and benchmark programs: backend names, machine description,
// build commit, timing and small formatting utilities.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "torusgate/core/gates.hpp"
#include "torusgate/core/params.hpp"
#include "torusgate/cpu/cpu_backend.hpp"
#include "torusgate/gpu/cuda_backend.hpp"
#include "torusgate/gpu/cuda_options.hpp"
#include "command_line.hpp"
#include "host_support.hpp"
#include "text_support.hpp"

namespace torusgate::apps {

// The commit the binaries were built from (short hash, or "unknown").
std::string build_commit();
// CPU model, logical cores and memory of this machine, as one line: "AMD EPYC (family 26,
// model 2: Zen 5; AVX-512), 2 logical cores, 23.5 GiB". Hosts that report the same model name
// differ by 2x (docs/results/cpu_rerun_2026-12-06/), so the family and model numbers, the
// core generation where known and the widest vector instructions are part of it.
std::string machine_description();
// (cpu_identity, host_support.hpp, is its CPU part.)

// Backend names accepted by --backend: "sequential", "openmp", "gpu" and "best" (the best
// backend this machine has: gpu if built with CUDA and a device exists, else openmp).
std::vector<std::string> backend_names();
// Resolves "best"; returns "sequential", "openmp" or "gpu" (the CUDA backend), or
// "plaintext" where the program takes it (`plaintext_ok`). Throws InvalidArgument for unknown
// names (listing the program's), and for "gpu" in a build without CUDA or on a machine
// without a usable CUDA device, saying which.
std::string resolve_backend(const std::string& name, bool plaintext_ok = false);

// The CPU backend of a resolved name ("sequential", else OpenMP), holding only the cloud key
// (or a key context made from it).
std::unique_ptr<CpuBackend> make_cpu_backend(const std::string& name,
                                             std::shared_ptr<const CloudKey> key,
                                             CpuOptions options = {});
std::unique_ptr<CpuBackend> make_cpu_backend(const std::string& name,
                                             std::shared_ptr<const CpuKeyContext> context,
                                             CpuOptions options = {});

// The parameter set named `name` for the command-line option `option` ("--params"); throws
// InvalidArgument "--params: unknown parameter set 'x'; known sets: ..." for an unknown name.
Parameters parameters_named(const std::string& option, const std::string& name);

// Bytes of memory a program may still take now, or 0 where unknown: the least of
// MemAvailable of /proc/meminfo, what the memory limits of the process's control group and
// of each group above it leave (cgroup v2 memory.max, v1 memory.limit_in_bytes, less what the
// group uses beyond its inactive file cache) and what the address-space limit (ulimit -v)
// leaves beyond the process's own address space.
double available_memory_bytes();
// (cgroup_free_bytes, host_support.hpp, reads the control groups' limits.)
// Throws InvalidArgument when `bytes`, an estimate of the host memory a run will hold, exceeds
// 90% of available_memory_bytes() (no check where that is unknown): such a run would be killed
// by the system without a message. `what` names the run ("--batch 16777216"), `advice` says
// what to do instead.
void check_host_memory(const std::string& what, double bytes, const std::string& advice);

// Seconds since `start`.
inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Median, minimum and maximum of a non-empty sample.
struct Summary {
  double median = 0, min = 0, max = 0;
};
Summary summarize(std::vector<double> values);

// (CommandLine, parse_cpu_option and parse_gpu_option: command_line.hpp.)

// Help lines for the options parse_gpu_option takes (each line starts with two spaces and
// the option, its text from column `column`). A program that takes one of them its own way
// gives that line in `own` ({"--gpu-engine E[,E]", "..."}), which replaces the line of the
// same option.
std::string gpu_options_help(
    std::size_t column, const std::vector<std::pair<std::string, std::string>>& own = {});

// The options a program that runs on every backend takes beside --backend: the CPU ones
// (--threads, ...) and the GPU ones (--device, --gpu-engine, ...; parse_gpu_option).
struct ServerOptions {
  CpuOptions cpu;
  CudaOptions gpu;
  bool threads_given = false;
  // The first GPU option given ("--fused-lanes"); empty when none was.
  std::string gpu_option;
};
// Takes the current argument of `cl` when it is --backend NAME (into `backend`), --threads T
// (1..4096) or a GPU option (parse_gpu_option) and returns true; false for any other.
bool parse_server_option(CommandLine& cl, std::string& backend, ServerOptions& server);
// Help lines for those options (--backend, --threads and the GPU ones), text from `column`.
std::string server_options_help(std::size_t column);
// Throws InvalidArgument when an option does not apply to the resolved `backend` (--threads
// with sequential or gpu, a GPU option with a CPU backend) or names a device this machine
// lacks.
void check_server_options(const std::string& backend, const ServerOptions& options);
// Before any key is made: GPU options for a run of `params` with a bootstrapping key of form
// `unroll` on each engine of `engines` (empty: options.engine alone), as the CudaBackend
// constructor will check them (validate_cuda_options), and the device index. Throws
// InvalidArgument naming the engine when there are several.
void check_gpu_options(const CudaOptions& options, const Parameters& params,
                       std::uint32_t unroll = 1, const std::vector<GpuEngine>& engines = {});
// resolve_backend(name), then check_server_options: the backend a program's server runs on.
std::string resolve_server_backend(const std::string& name, const ServerOptions& options);

// Calls f(backend) with the server's backend of a resolved name holding only the cloud key:
// a CudaBackend for "gpu" (the key goes to the device once), else the CPU backend of
// make_cpu_backend. Returns what f returns.
template <class F>
decltype(auto) with_server_backend(const std::string& name, std::shared_ptr<const CloudKey> key,
                                   const ServerOptions& options, F&& f) {
  if (name == "gpu") {
    // The options as the command line named them (the constructor would name the fields).
    validate_cuda_options(options.gpu, key->parameters(), key->bootstrapping_key().unroll(),
                          CudaOptionNames::flags);
    CudaBackend be(std::move(key), options.gpu);
    return f(be);
  }
  const std::unique_ptr<CpuBackend> be = make_cpu_backend(name, std::move(key), options.cpu);
  return f(*be);
}

// One line for reports: the CPU backend's name ("openmp(2)", "sequential"), or the GPU's
// with its engines ("gpu(NVIDIA H100 80GB HBM3), cuFFT-batched blind rotation, gather key
// switching").
std::string backend_description(const CpuBackend& be);
std::string backend_description(const CudaBackend& be);
// Threads of a backend for reports (a GPU backend: 1, the host thread that drives it).
inline int backend_threads(const CpuBackend& be) { return be.threads(); }
inline int backend_threads(const CudaBackend&) { return 1; }

// "the standard bootstrapping key", "key bits in pairs (--unroll 2)", ... for reports.
std::string key_form_text(std::uint32_t unroll);

// A probability given as its log2, for reports: "2^-62.8".
std::string log2_probability_text(double log2_p);

// "cuFFT-batched blind rotation, gather key switching", "fused blind rotation (launch shape
// chosen per batch), tensor_core key switching, pinned transfers (8 MiB staging)" and the
// like, for reports (the transfers named only when pinned).
std::string gpu_engine_description(const CudaOptions& gpu);

// The "device" object of the GPU benchmark reports: index, name, memory, compute capability,
// multiprocessors, clocks, bus width and the peak FP64 and memory figures derived from them
// (gpu::peak_fp64_flops, gpu::peak_memory_bytes_per_s); one line, no trailing comma.
std::string device_json(const gpu::DeviceInfo& d);

// The work of one bootstrap, counted the same way for every engine (nominal, not measured):
// per CMUX step (k+1)l forward and k+1 inverse complex FFTs of M = N/2 points at 5 M log2 M
// flops each, (k+1)l(k+1)M complex multiply-adds at 8 and (k+1)(l+1)M twists and untwists at
// 6 (tfhe_lib_128: 162,570,240 flops); and the bytes of Fourier key one bootstrap reads (from
// L2 or device memory), n (k+1)l (k+1) M complex doubles (tfhe_lib_128: 61,931,520).
double nominal_fp64_per_bootstrap(const Parameters& p, std::uint32_t unroll = 1);
double fourier_key_bytes_per_bootstrap(const Parameters& p, std::uint32_t unroll = 1);

// The InvalidArgument for a GPU option (`option`: the first one given, "--fused-lanes")
// with a CPU backend.
InvalidArgument gpu_options_not_for(const std::string& option, const std::string& backend);
// The same for a CPU option (--threads, --task-size, --fft) with the gpu backend.
InvalidArgument cpu_options_not_for_gpu(const std::string& option);

// Appends `value` unless `values` holds it already (a name or width listed twice runs once).
template <class T>
void append_unique(std::vector<T>& values, const T& value) {
  if (std::find(values.begin(), values.end(), value) == values.end()) values.push_back(value);
}

// The opening of a JSON report: "{" and the lines "<key>": "<name>", date, commit, machine,
// backend and threads, each ending with ",\n" (two-space indentation).
std::string json_report_opening(const std::string& key, const std::string& name,
                                const std::string& backend, int threads);

// The "parameters" object of the benchmark JSON reports (every field, one per line), with
// the given indentation of its fields; no trailing comma or newline.
std::string parameters_json(const Parameters& p, const std::string& indent);

// A report file of a command-line flag (--json, --markdown, ...), written whole or not at
// all. Made before the run, it checks the path at once: a directory, a missing or read-only
// folder, or a file that cannot be written is refused with InvalidArgument naming the flag.
// True when two report paths name one file (after ".", "..", symbolic and hard links of what
// exists), so that one report would replace the other. A device or pipe (/dev/stdout) is
// written into, not replaced: both reports reach it.
bool same_report_file(const std::string& a, const std::string& b);

// The text goes to stream() in memory; commit() writes it to a file beside the path and
// renames that over it. So a run that fails or is stopped leaves an earlier report as it was,
// and no empty or partial one.
class OutputFile {
 public:
  OutputFile() = default;  // no file asked for
  OutputFile(std::string flag, std::string path);
  OutputFile(OutputFile&&) = default;
  OutputFile& operator=(OutputFile&&) = default;
  bool wanted() const { return !path_.empty(); }
  const std::string& path() const { return path_; }
  std::ostream& stream() { return text_; }
  // Writes the text and renames it into place; throws SystemError naming the flag and path.
  void commit();

 private:
  std::string flag_, path_;
  bool special_ = false;  // a device or pipe (/dev/null): written into, not replaced
  std::ostringstream text_;
};

}  // namespace torusgate::apps
