// CUDA device discovery (runtime API); errors mean "no usable device", never an abort.
#include <cuda_runtime.h>

#include "torusgate/gpu/device.hpp"

namespace torusgate::gpu {

bool built_with_cuda() { return true; }

std::vector<DeviceInfo> devices() {
  std::vector<DeviceInfo> out;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error of a missing driver
    return out;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    out.push_back(DeviceInfo{i, prop.name, prop.totalGlobalMem, prop.major, prop.minor});
  }
  return out;
}

}  // namespace torusgate::gpu
