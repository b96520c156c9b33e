// GPU discovery for run-time backend selection. Plain host C++: callable whether or not the
// project was built with CUDA (without it, no device is ever reported).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace torusgate::gpu {

struct DeviceInfo {
  int index = 0;
  std::string name;
  std::size_t total_memory_bytes = 0;
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  int multiprocessors = 0;
  int clock_khz = 0;         // peak SM clock
  int memory_clock_khz = 0;  // peak memory clock
  int memory_bus_bits = 0;
};

// FP64 fused multiply-add lanes per multiprocessor, from the compute capability: 32 on the
// data-centre parts of compute capability 6.0, 7.0 and 8.0 (P100, V100, A100), 64 on 9.0 and
// 10.0 (H100/H200, B200), 2 on the others (consumer and workstation parts); 0 before 6.0.
inline int fp64_lanes_per_multiprocessor(const DeviceInfo& d) {
  if (d.compute_capability_major < 6) return 0;
  if (d.compute_capability_minor != 0) return 2;
  switch (d.compute_capability_major) {
    case 6: case 7: case 8: return 32;
    case 9: case 10: return 64;
    default: return 2;
  }
}

// Peak FP64 operations per second without tensor cores (an FMA counts 2), at the peak clock.
inline double peak_fp64_flops(const DeviceInfo& d) {
  return 2.0 * fp64_lanes_per_multiprocessor(d) * d.multiprocessors * d.clock_khz * 1e3;
}

// Peak device-memory bandwidth in bytes per second (double data rate at the peak clock).
inline double peak_memory_bytes_per_s(const DeviceInfo& d) {
  return 2.0 * d.memory_clock_khz * 1e3 * d.memory_bus_bits / 8.0;
}

// True when this build contains the CUDA backend code.
bool built_with_cuda();

// The CUDA devices usable now; empty without CUDA, without a driver or without a GPU.
// Never throws for a missing driver or device: that is the normal CPU-only case.
std::vector<DeviceInfo> devices();

// Why no CUDA device can be used, or empty when one can: "this build has no CUDA backend (no
// CUDA compiler was found at configure time)", "no CUDA device is available
// (cudaGetDeviceCount: cudaErrorInsufficientDriver: ...)", "... (the driver reports 0
// devices)". Never throws.
std::string unavailable_reason();

}  // namespace torusgate::gpu
