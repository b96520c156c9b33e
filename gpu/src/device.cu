// CUDA device discovery (runtime API); errors mean "no usable device", never an abort.
#include <cuda_runtime.h>

#include "torusgate/gpu/device.hpp"

namespace torusgate::gpu {

namespace detail {

bool query_device(int index, DeviceInfo& info) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, index) != cudaSuccess) return false;
  info = DeviceInfo{index, prop.name, prop.totalGlobalMem, prop.major, prop.minor};
  info.multiprocessors = prop.multiProcessorCount;
  info.memory_bus_bits = prop.memoryBusWidth;
  if (cudaDeviceGetAttribute(&info.clock_khz, cudaDevAttrClockRate, index) != cudaSuccess ||
      cudaDeviceGetAttribute(&info.memory_clock_khz, cudaDevAttrMemoryClockRate, index) !=
          cudaSuccess) {
    cudaGetLastError();
    info.clock_khz = info.memory_clock_khz = 0;  // unknown: no peak figures
  }
  return true;
}

}  // namespace detail

bool built_with_cuda() { return true; }

std::vector<DeviceInfo> devices() {
  std::vector<DeviceInfo> out;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error of a missing driver
    return out;
  }
  for (int i = 0; i < count; ++i) {
    DeviceInfo info;
    if (detail::query_device(i, info)) out.push_back(info);
    else cudaGetLastError();
  }
  return out;
}

std::string unavailable_reason() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error of a missing driver
    return std::string("no CUDA device is available (cudaGetDeviceCount: ") + cudaGetErrorName(e) +
           ": " + cudaGetErrorString(e) + ")";
  }
  if (count == 0) return "no CUDA device is available (the driver reports 0 devices)";
  DeviceInfo info;
  for (int i = 0; i < count; ++i) {
    if (detail::query_device(i, info)) return {};
    cudaGetLastError();
  }
  return "no CUDA device is available (none of the driver's " + std::to_string(count) +
         " devices could be queried)";
}

}  // namespace torusgate::gpu
