// Built without CUDA: no GPU backend, no device.
#include "torusgate/gpu/device.hpp"

namespace torusgate::gpu {

bool built_with_cuda() { return false; }
std::vector<DeviceInfo> devices() { return {}; }
std::string unavailable_reason() {
  return "this build has no CUDA backend (no CUDA compiler was found at configure time)";
}

}  // namespace torusgate::gpu
