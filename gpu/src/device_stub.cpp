// Built without CUDA: no GPU backend, no device.
#include "torusgate/gpu/device.hpp"

namespace torusgate::gpu {

bool built_with_cuda() { return false; }
std::vector<DeviceInfo> devices() { return {}; }

}  // namespace torusgate::gpu
