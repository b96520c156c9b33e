// Built without CUDA: the engine cannot be made, so CudaBackend's constructor throws a
// SystemError saying so; the rest of the backend still compiles and links.
#include "cuda_engine.hpp"

#include "torusgate/core/error.hpp"

namespace torusgate::gpu::detail {
namespace {

[[noreturn]] void no_cuda() {
  throw SystemError(
      "CudaBackend: built without CUDA (no CUDA compiler was found at configure time, or "
      "TORUSGATE_ENABLE_CUDA=OFF); use a CPU backend, or rebuild with nvcc available");
}

}  // namespace

struct CudaEngine::Impl {};

CudaEngine::CudaEngine(const Shape&, const std::uint32_t*, const std::uint32_t*,
                       const CudaOptions&) {
  no_cuda();
}
CudaEngine::~CudaEngine() = default;
const DeviceInfo& CudaEngine::device() const { no_cuda(); }
std::size_t CudaEngine::key_bytes() const { no_cuda(); }
std::shared_ptr<void> CudaEngine::allocate(std::size_t) { no_cuda(); }
void CudaEngine::copy_to_device(void*, const std::uint32_t*, std::size_t) { no_cuda(); }
void CudaEngine::copy_to_host(std::uint32_t*, const void*, std::size_t) { no_cuda(); }
void CudaEngine::evaluate(const BatchPlan&) { no_cuda(); }
const CudaPhaseTimes& CudaEngine::times() const { no_cuda(); }

}  // namespace torusgate::gpu::detail
