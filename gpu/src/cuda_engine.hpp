// The boundary between the backend (host C++, cuda_backend.cpp) and the CUDA code
// (cuda_engine.cu): a device, its stream, the keys on it, device memory, transfers and the
// evaluation of a planned batch. No CUDA types here; without CUDA, cuda_engine_stub.cpp
// implements it by refusing to construct.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "batch_plan.hpp"
#include "fused_rotation.hpp"
#include "torusgate/gpu/cuda_options.hpp"
#include "torusgate/gpu/device.hpp"

namespace torusgate::gpu::detail {

// Whether the fused engine may run this key's chunks on bundled keys: an unrolled key
// (unroll 2 to 4) unless fused_bundle is 1 (never); a key in fours always bundles.
inline bool may_bundle(const Shape& s, const CudaOptions& o) {
  return o.engine == GpuEngine::fused && s.unroll >= 2 && o.fused_bundle != 1;
}
// Device bytes of one rotation's bundled keys (an unrolled key; fused_rotation.hpp).
inline std::size_t bundle_bytes(const Shape& s) {
  return kernel::fused::bundle_size(s) * sizeof(kernel::Complex);
}
// The most device scratch one blind rotation of a chunk can take (the memory budget's unit):
// bytes_per_rotation, plus the rotation's bundled keys where the engine may bundle them.
inline std::size_t most_bytes_per_rotation(const Shape& s, const CudaOptions& o) {
  return bytes_per_rotation(s, o.engine) + (may_bundle(s, o) ? bundle_bytes(s) : 0);
}

// Fills `info` for CUDA device `index` (name, memory, compute capability, multiprocessors,
// clocks, bus width); false when the runtime cannot describe it (device.cu).
bool query_device(int index, DeviceInfo& info);

class CudaEngine {
 public:
  // Opens options.device, makes a stream, uploads the keys: `bk` (shape.bk_words() words,
  // coefficient form, core's BootstrappingKey layout) is transformed to the Fourier domain
  // on the device; `ksk` (shape.ksk_words()) is copied. Throws SystemError (no CUDA in this
  // build, no device, a failed CUDA or cuFFT call), InvalidArgument (device index).
  CudaEngine(const Shape& shape, const std::uint32_t* bk, const std::uint32_t* ksk,
             const CudaOptions& options);
  ~CudaEngine();
  CudaEngine(const CudaEngine&) = delete;
  CudaEngine& operator=(const CudaEngine&) = delete;

  const DeviceInfo& device() const;
  std::size_t key_bytes() const;

  // Zeroed device memory of `words` 32-bit words (null for 0), freed on this engine's stream
  // when the last copy of the pointer goes (it keeps the stream alive).
  std::shared_ptr<void> allocate(std::size_t words);
  // Host to device and back, synchronous for the caller; timed into times().
  void copy_to_device(void* dst, const std::uint32_t* src, std::size_t words);
  void copy_to_host(std::uint32_t* dst, const void* src, std::size_t words);

  // Runs a planned batch (device pointers) to completion: free gates, chunks of linear
  // combinations, blind rotations, extraction and key switching into a result buffer, then
  // every result to its output. Throws SystemError when a CUDA call fails.
  void evaluate(const BatchPlan& plan);

  const CudaPhaseTimes& times() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace torusgate::gpu::detail
