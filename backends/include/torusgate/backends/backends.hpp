// The backend chosen at run time: one piece of code, written once as a generic lambda over
// the backend contract, runs on the sequential or OpenMP CPU backend or the CUDA backend by a
// name the program takes from its user.
//
//   const BackendKind kind = backend_kind(argv[1]);   // "best", "sequential", "openmp", "gpu"
//   with_backend(kind, cloud, {}, [&](auto& be) {     // be: CpuBackend& or CudaBackend&
//     auto x = circuits::IntArray<std::decay_t<decltype(be)>>::encrypt(be, secret, ...);
//     ...
//   });
//
// "best" is the GPU where this build has the CUDA backend and a device is usable, else OpenMP.
// Target torusgate::backends (header only; links torusgate::cpu and torusgate::gpu).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "torusgate/core/error.hpp"
#include "torusgate/core/keys.hpp"
#include "torusgate/cpu/cpu_backend.hpp"
#include "torusgate/gpu/cuda_backend.hpp"
#include "torusgate/gpu/device.hpp"

namespace torusgate {

enum class BackendKind { sequential, openmp, gpu };

// "sequential", "openmp", "gpu".
inline std::string_view to_string(BackendKind kind) {
  switch (kind) {
    case BackendKind::sequential:
      return "sequential";
    case BackendKind::openmp:
      return "openmp";
    case BackendKind::gpu:
      return "gpu";
  }
  return "unknown";
}

// Why the CUDA backend cannot run here ("this build has no CUDA backend (...)", "no CUDA
// device is available"), or empty when it can.
inline std::string gpu_unavailable_reason() {
  if (!gpu::built_with_cuda()) {
    return "this build has no CUDA backend (no CUDA compiler was found at configure time)";
  }
  if (gpu::devices().empty()) return "no CUDA device is available";
  return {};
}

// The GPU where it can run, else OpenMP.
inline BackendKind best_backend_kind() {
  return gpu_unavailable_reason().empty() ? BackendKind::gpu : BackendKind::openmp;
}

// The kind a name asks for: "best" (best_backend_kind), "sequential", "openmp" or "gpu".
// Throws InvalidArgument for another name, and for "gpu" where it cannot run (saying why).
inline BackendKind backend_kind(std::string_view name) {
  if (name == "best") return best_backend_kind();
  if (name == "sequential") return BackendKind::sequential;
  if (name == "openmp") return BackendKind::openmp;
  if (name == "gpu") {
    const std::string reason = gpu_unavailable_reason();
    EXPECTS(reason.empty(), "backend_kind: backend 'gpu': " + reason);
    return BackendKind::gpu;
  }
  throw InvalidArgument("backend_kind: unknown backend '" + std::string(name) +
                        "'; expected best, sequential, openmp or gpu");
}

// The options of each kind; with_backend passes a CPU kind `cpu` and the GPU `gpu`.
struct BackendOptions {
  CpuOptions cpu;
  CudaOptions gpu;
};

// Calls f(be) with a backend of `kind` that holds only the cloud key, and returns what f
// returns (the same type for every kind). be is a CpuBackend& for the sequential and OpenMP
// kinds (both are one CpuBackend type to the circuits) and a CudaBackend& for the GPU; the
// backend lives until f returns, so f moves its results to the host (decrypt) before then.
// Throws what the backend's constructor throws (InvalidArgument for a null key or bad
// options), and InvalidArgument for the GPU where it cannot run, before any upload.
template <class F>
decltype(auto) with_backend(BackendKind kind, std::shared_ptr<const CloudKey> key,
                            const BackendOptions& options, F&& f) {
  EXPECTS(key != nullptr, "with_backend: the cloud key is null");
  if (kind == BackendKind::sequential) {
    SequentialBackend be(std::move(key), options.cpu);
    return std::forward<F>(f)(static_cast<CpuBackend&>(be));
  }
  if (kind == BackendKind::openmp) {
    OpenMpBackend be(std::move(key), options.cpu);
    return std::forward<F>(f)(static_cast<CpuBackend&>(be));
  }
  EXPECTS(kind == BackendKind::gpu, "with_backend: BackendKind " +
                                        std::to_string(static_cast<int>(kind)) +
                                        " is not sequential, openmp or gpu");
  const std::string reason = gpu_unavailable_reason();
  EXPECTS(reason.empty(), "with_backend: backend 'gpu': " + reason);
  CudaBackend be(std::move(key), options.gpu);
  return std::forward<F>(f)(be);
}

}  // namespace torusgate
