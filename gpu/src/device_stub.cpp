// Built without CUDA: no GPU backend, no device, and the reason (TORUSGATE_CUDA_DISABLED
// from gpu/CMakeLists.txt: the option turned it off, else no CUDA compiler was found).
#include "torusgate/gpu/device.hpp"

namespace torusgate::gpu {

bool built_with_cuda() { return false; }
std::vector<DeviceInfo> devices() { return {}; }
std::string unavailable_reason() {
#if defined(TORUSGATE_CUDA_DISABLED)
  return "this build has no CUDA backend (configured with -DTORUSGATE_ENABLE_CUDA=OFF)";
#else
  return "this build has no CUDA backend (no CUDA compiler was found at configure time)";
#endif
}

}  // namespace torusgate::gpu
