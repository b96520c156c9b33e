// Helpers shared by the programs in apps/.
#include "app_support.hpp"

#include <algorithm>
#include <utility>
#include <vector>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <thread>

#include <sys/resource.h>
#include <unistd.h>

#include "torusgate/backends/backends.hpp"
#include "torusgate/core/error.hpp"
#include "torusgate_commit.hpp"
#include "torusgate/gpu/device.hpp"

namespace torusgate::apps {

std::string build_commit() { return TORUSGATE_GIT_COMMIT; }

std::string machine_description() {
  std::ifstream cpuinfo_file("/proc/cpuinfo");
  std::ostringstream cpuinfo;
  cpuinfo << cpuinfo_file.rdbuf();
  const std::string model = cpu_identity(cpuinfo.str());
  std::string memory;
  const double kib = keyed_file_value("/proc/meminfo", "MemTotal:");
  if (kib >= 0) {
    std::ostringstream out;
    out.precision(1);
    out << std::fixed << kib / (1024.0 * 1024.0) << " GiB";
    memory = out.str();
  }
  std::string d = model + ", " + std::to_string(std::thread::hardware_concurrency()) +
                  " logical cores";
  if (!memory.empty()) d += ", " + memory;
  return d;
}

std::vector<std::string> backend_names() { return {"best", "sequential", "openmp", "gpu"}; }

std::string resolve_backend(const std::string& name, bool plaintext_ok) {
  if (plaintext_ok && name == "plaintext") return name;
  if (name == "best" || name == "sequential" || name == "openmp") {
    return to_string(backend_kind(name));
  }
  if (name == "gpu") {
    const std::string reason = gpu_unavailable_reason();
    if (!reason.empty()) throw InvalidArgument("--backend gpu: " + reason);
    return "gpu";
  }
  throw InvalidArgument("--backend: unknown backend '" + name + "'; expected " +
                        (plaintext_ok ? "best, gpu, openmp, sequential or plaintext"
                                      : "best, sequential, openmp or gpu"));
}

bool parse_server_option(CommandLine& cl, std::string& backend, ServerOptions& server) {
  const std::string& arg = cl.arg();
  if (arg == "--backend") {
    backend = cl.value();
  } else if (arg == "--threads") {
    server.cpu.threads = static_cast<int>(parse_count(arg, cl.value(), 1, 4096));
    server.threads_given = true;
  } else if (parse_gpu_option(cl, server.gpu)) {
    if (server.gpu_option.empty()) server.gpu_option = arg;
  } else {
    return false;
  }
  return true;
}

std::string server_options_help(std::size_t column) {
  std::string text = "  --backend NAME";
  text += std::string(column > text.size() + 1 ? column - text.size() : 1, ' ');
  text += "best (default: gpu when a CUDA device is usable, else openmp), gpu,\n";
  text += std::string(column, ' ') + "openmp or sequential\n";
  std::string threads = "  --threads T";
  threads += std::string(column > threads.size() + 1 ? column - threads.size() : 1, ' ');
  return text + threads + "OpenMP threads (openmp only; default: all cores)\n" +
         gpu_options_help(column);
}

namespace {

// Throws InvalidArgument unless --device names one of this machine's CUDA devices.
void check_device(int device) {
  const std::size_t count = gpu::devices().size();
  if (device < 0 || static_cast<std::size_t>(device) >= count) {
    throw InvalidArgument("--device " + std::to_string(device) + ": this machine has " +
                          std::to_string(count) + " CUDA device" + (count == 1 ? "" : "s") +
                          ", numbered from 0");
  }
}

}  // namespace

void check_server_options(const std::string& backend, const ServerOptions& options) {
  if (options.threads_given && backend != "openmp")
    throw InvalidArgument("--threads applies to the openmp backend, not to " + backend);
  if (!options.gpu_option.empty() && backend != "gpu")
    throw gpu_options_not_for(options.gpu_option, backend);
  // Before the keys are made (seconds to minutes), not when the backend is constructed.
  if (backend == "gpu") check_device(options.gpu.device);
}

void check_gpu_options(const CudaOptions& options, const Parameters& params, std::uint32_t unroll,
                       const std::vector<GpuEngine>& engines) {
  // The options first, then the device index.
  const std::vector<GpuEngine> each = engines.empty() ? std::vector{options.engine} : engines;
  for (const GpuEngine engine : each) {
    CudaOptions o = options;
    o.engine = engine;
    try {
      validate_cuda_options(o, params, unroll, CudaOptionNames::flags);
    } catch (const InvalidArgument& e) {
      const std::string engine_named = std::string("--gpu-engine ") + gpu_engine_name(engine);
      // A message that starts by naming the engine needs no prefix.
      if (each.size() == 1 || std::string_view(e.what()).starts_with(engine_named + " ")) throw;
      throw InvalidArgument("with " + engine_named + ": " + e.what());
    }
  }
  check_device(options.device);
}

std::string resolve_server_backend(const std::string& name, const ServerOptions& options) {
  const std::string backend = resolve_backend(name);
  check_server_options(backend, options);
  return backend;
}

std::string backend_description(const CpuBackend& be) { return be.name(); }

std::string backend_description(const CudaBackend& be) {
  return be.name() + ", " + gpu_engine_description(be.options());
}

std::unique_ptr<CpuBackend> make_cpu_backend(const std::string& name,
                                             std::shared_ptr<const CloudKey> key,
                                             CpuOptions options) {
  if (name == "sequential") return std::make_unique<SequentialBackend>(std::move(key), options);
  return std::make_unique<OpenMpBackend>(std::move(key), options);
}

std::unique_ptr<CpuBackend> make_cpu_backend(const std::string& name,
                                             std::shared_ptr<const CpuKeyContext> context,
                                             CpuOptions options) {
  if (name == "sequential") return std::make_unique<SequentialBackend>(std::move(context), options);
  return std::make_unique<OpenMpBackend>(std::move(context), options);
}

Summary summarize(std::vector<double> v) {
  EXPECTS(!v.empty(), "summarize: no values");
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  const double median = v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
  return Summary{median, v.front(), v.back()};
}

std::string gpu_options_help(std::size_t column,
                             const std::vector<std::pair<std::string, std::string>>& own) {
  const auto option_of = [](const std::string& s) { return s.substr(0, s.find(' ')); };
  std::vector<std::pair<std::string, std::string>> lines;
  for (const GpuOptionText& o : gpu_option_texts())
    lines.emplace_back(o.value.empty() ? o.flag : o.flag + " " + o.value, o.help);
  for (auto& line : lines) {
    for (const auto& replacement : own)
      if (option_of(replacement.first) == option_of(line.first)) line = replacement;
  }
  std::string text;
  for (const auto& [option, help] : lines) {
    std::string line = "  " + option;
    line += line.size() + 1 < column ? std::string(column - line.size(), ' ') : std::string(" ");
    text += line + help + "\n";
  }
  return text;
}

namespace {

// "8 MiB", "64 KiB" or "65540 bytes": a size for reports, in the largest unit it is a whole
// number of.
std::string size_text(std::size_t bytes) {
  constexpr std::size_t kib = std::size_t{1} << 10, mib = std::size_t{1} << 20;
  if (bytes != 0 && bytes % mib == 0) return std::to_string(bytes / mib) + " MiB";
  if (bytes != 0 && bytes % kib == 0) return std::to_string(bytes / kib) + " KiB";
  return std::to_string(bytes) + " bytes";
}

}  // namespace

std::string gpu_engine_description(const CudaOptions& gpu) {
  std::string d = gpu.engine == GpuEngine::fused ? "fused blind rotation" : "cuFFT-batched blind rotation";
  if (gpu.engine == GpuEngine::fused) {
    if (gpu.fused_lanes > 1) {
      d += " (" + std::to_string(gpu.fused_lanes) + " rotations per thread)";
    } else if (gpu.fused_cluster_blocks > 1) {
      d += " (clusters of " + std::to_string(gpu.fused_cluster_blocks) + " blocks per rotation" +
           (gpu.fused_cluster_points == 4 ? ", 4 points per thread" : "") +
           (gpu.fused_cluster_sums == 2 ? ", every block summing its column)" : ")");
    } else if (gpu.fused_groups == 0 && gpu.fused_rotations_per_block == 0) {
      const bool wide = gpu.fused_cluster_points == 4, every = gpu.fused_cluster_sums == 2;
      d += gpu.fused_cluster_blocks == 1 ? " (launch shape chosen per batch, no clusters)"
           : wide || every
               ? std::string(" (launch shape chosen per batch, clusters") +
                     (wide ? " of 4 points per thread" : "") +
                     (every ? " with every block summing its column)" : ")")
               : " (launch shape chosen per batch)";
    } else {
      d += " (" + std::to_string(std::max(gpu.fused_groups, 1u)) + " groups x " +
           std::to_string(std::max(gpu.fused_rotations_per_block, 1u)) + " rotations per block)";
    }
    if (gpu.fused_bundle == 2) d += ", group steps on bundled keys in clusters";
    if (gpu.fused_bundle_overlap == 2) d += ", rotations started while the keys are bundled";
    if (gpu.fused_key_stage == 2) d += ", key rows through the TMA's stage";
  }
  d += std::string(", ") + gpu_key_switching_name(gpu.key_switching) + " key switching";
  if (gpu.transfer == GpuTransfer::pinned)
    d += ", pinned transfers (" + size_text(gpu.staging_bytes) + " staging)";
  return d;
}

std::string device_json(const gpu::DeviceInfo& d) {
  std::ostringstream os;
  os << "{\"index\": " << d.index << ", \"name\": " << json_string(d.name)
     << ", \"total_memory_bytes\": " << d.total_memory_bytes << ", \"compute_capability\": \""
     << d.compute_capability_major << "." << d.compute_capability_minor
     << "\", \"multiprocessors\": " << d.multiprocessors << ", \"clock_khz\": " << d.clock_khz
     << ", \"memory_clock_khz\": " << d.memory_clock_khz
     << ", \"memory_bus_bits\": " << d.memory_bus_bits
     << ", \"peak_fp64_flops\": " << json_number(gpu::peak_fp64_flops(d))
     << ", \"peak_memory_bytes_per_s\": " << json_number(gpu::peak_memory_bytes_per_s(d)) << "}";
  return os.str();
}

std::string key_form_text(std::uint32_t unroll) {
  static const char* const names[] = {"", "pairs", "threes", "fours"};
  if (unroll <= 1) return "the standard bootstrapping key";
  const std::string form = unroll <= 4 ? std::string("key bits in ") + names[unroll - 1]
                                       : "an unrolled key";
  return form + " (--unroll " + std::to_string(unroll) + ")";
}

std::string log2_probability_text(double log2_p) {
  char text[32];
  std::snprintf(text, sizeof text, "2^%.1f", log2_p);
  return text;
}

double nominal_fp64_per_bootstrap(const Parameters& p, std::uint32_t unroll) {
  const double M = p.polynomial_size / 2.0, k1 = p.glwe_dimension + 1.0;
  const double rows = k1 * p.bk_level_count;
  const double fft = 5.0 * M * std::log2(M);
  const double step = (rows + k1) * fft + rows * k1 * M * 8.0 + (rows + k1) * M * 6.0;
  // A group step (unroll u > 1): the same transforms, G = 2^u - 1 products, and each of the
  // G product columns times its factor (a complex product: 6 flops).
  const double G = unroll_group_ggsws(unroll);
  const double group = (rows + k1) * fft + G * rows * k1 * M * 8.0 + G * k1 * M * 6.0 +
                       (rows + k1) * M * 6.0;
  const double grouped = static_cast<double>(unrolled_bits(p.lwe_dimension, unroll));
  const double groups = grouped / unroll;  // 0 for the standard key
  return group * groups + step * (p.lwe_dimension - grouped);
}

double fourier_key_bytes_per_bootstrap(const Parameters& p, std::uint32_t unroll) {
  const double k1 = p.glwe_dimension + 1.0;
  return static_cast<double>(BootstrappingKey::ggsw_count(p, unroll)) * k1 * p.bk_level_count *
         k1 * (p.polynomial_size / 2.0) * 16.0;
}

InvalidArgument gpu_options_not_for(const std::string& option, const std::string& backend) {
  // Where no GPU can run, --backend best has chosen a CPU backend: the reason, not the advice.
  if (!gpu::built_with_cuda()) {
    return InvalidArgument(option + " is a GPU option: it applies to --backend gpu, not to " +
                           backend + ", and this build has no CUDA backend; drop it");
  }
  if (gpu::devices().empty()) {
    return InvalidArgument(option + " is a GPU option: it applies to --backend gpu, not to " +
                           backend + ", and this machine has no usable CUDA device; drop it");
  }
  return InvalidArgument(option + " is a GPU option: it applies to --backend gpu, not to " +
                         backend + "; drop it or run on the gpu backend");
}

InvalidArgument cpu_options_not_for_gpu(const std::string& option) {
  return InvalidArgument(option + " is a CPU option: it applies to --backend " +
                         (option == "--threads" ? "openmp" : "openmp or sequential") +
                         ", not to gpu; drop it or run on a CPU backend");
}

std::string json_report_opening(const std::string& key, const std::string& name,
                                const std::string& backend, int threads) {
  return "{\n  " + json_string(key) + ": " + json_string(name) + ",\n" +
         "  \"date\": " + json_string(utc_timestamp()) + ",\n" +
         "  \"commit\": " + json_string(build_commit()) + ",\n" +
         "  \"machine\": " + json_string(machine_description()) + ",\n" +
         "  \"backend\": " + json_string(backend) + ",\n" +
         "  \"threads\": " + std::to_string(threads) + ",\n";
}

std::string parameters_json(const Parameters& p, const std::string& indent) {
  std::ostringstream os;
  os << "{\n"
     << indent << "\"name\": " << json_string(p.name) << ",\n"
     << indent << "\"lwe_dimension\": " << p.lwe_dimension << ",\n"
     << indent << "\"glwe_dimension\": " << p.glwe_dimension << ",\n"
     << indent << "\"polynomial_size\": " << p.polynomial_size << ",\n"
     << indent << "\"bk_base_log\": " << p.bk_base_log << ",\n"
     << indent << "\"bk_level_count\": " << p.bk_level_count << ",\n"
     << indent << "\"ks_base_log\": " << p.ks_base_log << ",\n"
     << indent << "\"ks_level_count\": " << p.ks_level_count << ",\n"
     << indent << "\"lwe_noise_stddev\": " << json_number(p.lwe_noise_stddev) << ",\n"
     << indent << "\"glwe_noise_stddev\": " << json_number(p.glwe_noise_stddev) << ",\n"
     << indent << "\"insecure\": " << (p.insecure ? "true" : "false") << "\n"
     << indent.substr(0, indent.size() >= 2 ? indent.size() - 2 : 0) << "}";
  return os.str();
}

namespace {

// What ulimit -v leaves beyond the address space the process has mapped; -1 without a limit.
double address_space_left_bytes() {
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return -1;
  const double mapped_kib = keyed_file_value("/proc/self/status", "VmSize:");
  return std::max(1.0, static_cast<double>(limit.rlim_cur) - std::max(0.0, mapped_kib) * 1024);
}

}  // namespace

Parameters parameters_named(const std::string& option, const std::string& name) {
  try {
    return parameters_by_name(name);
  } catch (const InvalidArgument& e) {
    std::string why = e.what();
    const std::string prefix = "parameters_by_name: ";
    if (why.rfind(prefix, 0) == 0) why.erase(0, prefix.size());
    throw InvalidArgument(option + ": " + why);
  }
}

double available_memory_bytes() {
  double available = std::max(0.0, keyed_file_value("/proc/meminfo", "MemAvailable:") * 1024);
  for (const double limit :
       {cgroup_free_bytes("/proc/self/cgroup", "/sys/fs/cgroup"), address_space_left_bytes()}) {
    if (limit > 0 && (available <= 0 || limit < available)) available = limit;
  }
  return available;
}

void check_host_memory(const std::string& what, double bytes, const std::string& advice) {
  const double available = available_memory_bytes();
  if (available <= 0 || bytes <= 0.9 * available) return;
  // "3.0 GiB", or "512 MiB" below a GiB.
  const auto amount = [](double b) {
    constexpr double mib = 1024.0 * 1024.0, gib = 1024.0 * mib;
    char text[32];
    if (b >= gib) {
      std::snprintf(text, sizeof text, "%.1f GiB", b / gib);
    } else {
      std::snprintf(text, sizeof text, "%.0f MiB", b / mib);
    }
    return std::string(text);
  };
  throw InvalidArgument(what + " would hold about " + amount(bytes) +
                        " in memory, more than 90% of the " + amount(available) +
                        " this program may take now; " + advice);
}

bool same_report_file(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(a, ec);
  if (fs::exists(status) && !fs::is_regular_file(status)) return false;
  if (fs::equivalent(a, b, ec)) return true;
  std::error_code ea, eb;
  const fs::path ca = fs::weakly_canonical(fs::absolute(a, ea), ea);
  const fs::path cb = fs::weakly_canonical(fs::absolute(b, eb), eb);
  return !ea && !eb && ca == cb;
}

OutputFile::OutputFile(std::string flag, std::string path)
    : flag_(std::move(flag)), path_(std::move(path)) {
  namespace fs = std::filesystem;
  if (path_.empty()) throw InvalidArgument(flag_ + ": the path is empty");
  std::error_code ec;
  const fs::path target(path_);
  const fs::file_status status = fs::status(target, ec);
  if (fs::is_directory(status))
    throw InvalidArgument(flag_ + ": cannot write to '" + path_ + "': it is a folder");
  special_ = fs::exists(status) && !fs::is_regular_file(status);
  if (special_) {
    // A device or pipe (/dev/null, /dev/stdout): written directly at commit().
    if (::access(path_.c_str(), W_OK) != 0)
      throw InvalidArgument(flag_ + ": cannot write to '" + path_ + "'");
    return;
  }
  const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
  if (!fs::is_directory(folder, ec))
    throw InvalidArgument(flag_ + ": cannot write to '" + path_ + "': " +
                          (fs::exists(folder, ec) ? "'" + folder.string() + "' is not a folder"
                                                  : "the folder '" + folder.string() +
                                                        "' does not exist"));
  if (fs::exists(status) && ::access(path_.c_str(), W_OK) != 0)
    throw InvalidArgument(flag_ + ": cannot write to '" + path_ + "': it is read-only");
  // The folder must take a new file: the report is written beside the path and renamed.
  std::string probe_name = ".";  // appended piece by piece: GCC 12 warns (-Wrestrict) on "." +
  probe_name.append(target.filename().string()).append(".");
  probe_name.append(std::to_string(::getpid())).append(".probe");
  const fs::path probe = folder / probe_name;
  {
    std::ofstream out(probe);
    if (!out)
      throw InvalidArgument(flag_ + ": cannot write to '" + path_ +
                            "': its folder takes no new file");
  }
  fs::remove(probe, ec);
}

void OutputFile::commit() {
  if (!wanted()) return;
  try {
    if (!special_) return write_file_atomically(path_, text_.str());
    std::ofstream out(path_, std::ios::binary);
    out << text_.str();
    out.close();
    if (!out) throw SystemError("writing '" + path_ + "' failed");
  } catch (const SystemError& e) {
    throw SystemError(flag_ + ": " + e.what());
  }
}

}  // namespace torusgate::apps
