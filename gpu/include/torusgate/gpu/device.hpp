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
};

// True when this build contains the CUDA backend code.
bool built_with_cuda();

// The CUDA devices usable now; empty without CUDA, without a driver or without a GPU.
// Never throws for a missing driver or device: that is the normal CPU-only case.
std::vector<DeviceInfo> devices();

}  // namespace torusgate::gpu
