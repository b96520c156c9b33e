// The backend chosen at run time: one piece of code, written once as a generic lambda over
// the backend contract, runs on the sequential or OpenMP CPU backend or the CUDA backend by a
// name the program takes from its user.
//
//   const BackendKind kind = backend_kind(argv[1]);   // "best", "sequential", "openmp", "gpu"
//   auto sums = with_backend(kind, cloud, {}, [&](auto& be) {  // CpuBackend& or CudaBackend&
//     using B = std::decay_t<decltype(be)>;
//     const auto x = circuits::IntArray<B>::encrypt(be, secret, xs, circuits::IntType{8, false},
//                                                   rng);
//     ...
//     return out.decrypt(be, secret);   // plain values: the backend goes when f returns
//   });
//
// The kind is chosen at run time, so f is compiled for every backend type in every build: it
// takes `auto&`, returns the same plain type for each (decrypted values, not ciphertexts or
// references into the backend), and uses only what the backend contract and both backends
// have (`if constexpr (std::is_same_v<B, CpuBackend>)` around the rest). "best" is the GPU
// where this build has the CUDA backend and a device is usable, else OpenMP.
// Target torusgate::backends (header only; links torusgate::cpu and torusgate::gpu).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "torusgate/core/error.hpp"
#include "torusgate/core/keys.hpp"
#include "torusgate/cpu/cpu_backend.hpp"
#include "torusgate/gpu/cuda_backend.hpp"
#include "torusgate/gpu/device.hpp"

namespace torusgate {

enum class BackendKind { sequential, openmp, gpu };

// "sequential", "openmp", "gpu".
inline std::string to_string(BackendKind kind) {
  switch (kind) {
    case BackendKind::sequential:
      return "sequential";
    case BackendKind::openmp:
      return "openmp";
    case BackendKind::gpu:
      return "gpu";
  }
  return "BackendKind " + std::to_string(static_cast<int>(kind));
}

// Why the CUDA backend cannot run here, or empty when it can (gpu::unavailable_reason: "this
// build has no CUDA backend (...)", "no CUDA device is available (cudaGetDeviceCount: ...)").
inline std::string gpu_unavailable_reason() { return gpu::unavailable_reason(); }

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

// The options of the backends: `cpu` for the sequential and OpenMP kinds, `gpu` for the GPU
// (CudaOptions::device names the device).
struct BackendOptions {
  CpuOptions cpu;
  CudaOptions gpu;
};

// Calls f(be) with a backend of `kind` that holds only the cloud key, and returns what f
// returns, by value. be is a CpuBackend& for the sequential and OpenMP kinds (both are one
// CpuBackend type to the circuits) and a CudaBackend& for the GPU. The backend lives until f
// returns, so f brings its results to the host (decrypts) before then.
// Throws InvalidArgument for a null key, for the GPU where it cannot run (before any upload)
// and what the backend's constructor throws (InvalidArgument for bad options; SystemError
// when a CUDA call fails).
template <class F>
auto with_backend(BackendKind kind, std::shared_ptr<const CloudKey> key,
                  const BackendOptions& options, F&& f) {
  static_assert(std::is_invocable_v<F&, CpuBackend&> && std::is_invocable_v<F&, CudaBackend&>,
                "with_backend: f is called with a CpuBackend& or a CudaBackend&, chosen at run "
                "time: take the backend as auto& and use only what both backends have "
                "(if constexpr around the rest)");
  using Result = std::invoke_result_t<F&, CpuBackend&>;
  static_assert(std::is_same_v<Result, std::invoke_result_t<F&, CudaBackend&>>,
                "with_backend: f must return the same type on every backend: decrypt inside f "
                "and return plain values, not ciphertexts of one backend");
  static_assert(!std::is_reference_v<Result>,
                "with_backend: f must return a value, not a reference: the backend is gone "
                "when with_backend returns");
  EXPECTS(key != nullptr, "with_backend: the cloud key is null");
  if (kind == BackendKind::sequential) {
    SequentialBackend be(std::move(key), options.cpu);
    return f(static_cast<CpuBackend&>(be));
  }
  if (kind == BackendKind::openmp) {
    OpenMpBackend be(std::move(key), options.cpu);
    return f(static_cast<CpuBackend&>(be));
  }
  EXPECTS(kind == BackendKind::gpu,
          "with_backend: " + to_string(kind) + " is not sequential, openmp or gpu");
  const std::string reason = gpu_unavailable_reason();
  EXPECTS(reason.empty(), "with_backend: backend 'gpu': " + reason);
  CudaBackend be(std::move(key), options.gpu);
  return f(be);
}

// The same with the backends' default options.
template <class F>
auto with_backend(BackendKind kind, std::shared_ptr<const CloudKey> key, F&& f) {
  return with_backend(kind, std::move(key), BackendOptions{}, std::forward<F>(f));
}

}  // namespace torusgate
