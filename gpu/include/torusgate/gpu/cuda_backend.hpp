// The CUDA backend: the backend contract (core/backend.hpp) on one GPU, with bit-coalesced
// LWE batches resident in device memory and the cuFFT-batched blind rotation of DESIGN.md
// section 6. Plain host C++ (pimpl, no CUDA types), so programs compiled by the host
// compiler include it; in a build without CUDA it still compiles and links, and
// constructing a CudaBackend throws SystemError (gpu::devices() says whether a GPU exists).
//
// Bytes cross PCIe only in upload() (the client's encryptions), download() and the small op
// descriptors of each evaluate(); one circuit level to the next stays on the device.
// Threads: one thread at a time per backend (as the CPU backends); one backend per GPU and
// thread for concurrency. allocate(), upload(), download(), evaluate() and last_times() share
// the backend's stream, staging buffers and times, so each of them refuses (InvalidArgument)
// a call that starts while another of them runs on another thread.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>

#include "torusgate/core/backend.hpp"
#include "torusgate/core/keys.hpp"
#include "torusgate/gpu/cuda_options.hpp"
#include "torusgate/gpu/device.hpp"

namespace torusgate {

class CudaBackend;

namespace gpu::detail {
class CudaEngine;
}

// A buffer of `count` LWE samples in device memory: [count][n+1] Torus32, contiguous.
struct CudaStorage {
  const CudaBackend* owner = nullptr;
  std::uint64_t owner_serial = 0;  // the owner's new_backend_serial()
  std::size_t count = 0;
  // The device allocation (null when count is 0); released on the backend's stream when
  // the storage goes, even after the backend itself.
  std::shared_ptr<void> memory;
  std::size_t size() const { return count; }
  // Device pointer to sample 0 (not dereferenceable on the host).
  Torus32* device_data() const { return static_cast<Torus32*>(memory.get()); }
};

class CudaBackend {
 public:
  using Storage = CudaStorage;
  using HostBatch = LweBatch;
  using ClientKey = SecretKey;

  // Uploads the cloud key to the device once: the bootstrapping key is transformed to the
  // Fourier domain there (N/2 complex doubles per polynomial), the key-switching key is
  // copied as it is. Throws InvalidArgument for a null key or bad options, SystemError when
  // the build has no CUDA, no device is usable, or a CUDA call fails (out of memory too).
  explicit CudaBackend(std::shared_ptr<const CloudKey> key, CudaOptions options = {});
  ~CudaBackend();
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  // "gpu(<device name>)".
  std::string name() const;
  const Parameters& parameters() const { return key_->parameters(); }
  // The id of the secret key the cloud key was made from (0: not known; CloudKey::key_id).
  std::uint64_t key_id() const { return key_->key_id(); }
  const CudaOptions& options() const { return options_; }
  const gpu::DeviceInfo& device() const;
  // Device bytes of the keys (Fourier bootstrapping key, key-switching key, tables).
  std::size_t device_key_bytes() const;
  // Device bytes of scratch one blind rotation of a batch may need (the memory budget unit):
  // with an unrolled key on the fused engine, its bundled keys included.
  std::size_t bytes_per_rotation() const;

  BitBuffer<Storage> allocate(std::size_t count);  // trivial encryptions of 0
  BitBuffer<Storage> upload(const LweBatch& batch);
  LweBatch download(BitSpan<Storage> bits) const;
  void evaluate(std::span<const GateOp<Storage>> batch);
  void evaluate(std::initializer_list<GateOp<Storage>> batch) {
    evaluate(std::span<const GateOp<Storage>>(batch.begin(), batch.size()));
  }

  const BackendStats& stats() const { return stats_; }
  void reset_stats() { stats_ = {}; }
  // Device times of the last upload(), download() and evaluate(). evaluate()'s are read from
  // their CUDA events here, at the first call after it, not in evaluate() itself (a small
  // batch's caller would wait for them); a failed read throws SystemError.
  CudaPhaseTimes last_times() const;  // a copy, read inside the call's guard

 private:
  bool owns(const Storage* s) const {
    return s != nullptr && s->owner == this && s->owner_serial == serial_;
  }
  BitBuffer<Storage> allocate_entered(std::size_t count);  // allocate() inside a call's scope
  std::uint64_t serial_ = new_backend_serial();

  std::shared_ptr<const CloudKey> key_;
  CudaOptions options_;
  std::unique_ptr<gpu::detail::CudaEngine> engine_;
  BackendStats stats_;
  // Two of allocate(), upload(), download(), evaluate() and last_times() at once: refused.
  mutable ExclusiveCalls calls_;
};

// Throws InvalidArgument naming the bad field unless the options are usable (device >= 0,
// max_cached_workspaces in 1..64, a memory budget of 0 or at least two blind rotations of
// `params`, and for an unrolled bootstrapping key (unroll 2 or 3) no lanes or staged
// rotations: the group step runs on the other launch shapes, wide clusters included; for a key
// in fours (unroll 4) on the fused engine, bundled clusters of 8 points per thread only). The
// constructor calls it first, with its key's unroll, before any CUDA call. `names`: how the
// messages name the options: as CudaOptions fields ("CudaOptions: fused_lanes=2 but ..."), or
// as the programs' command-line flags ("--fused-lanes 2 but ...", sizes in MiB as
// --memory-budget-mb and --staging-mb take them; apps/app_support.hpp).
enum class CudaOptionNames { fields, flags };
void validate_cuda_options(const CudaOptions& options, const Parameters& params,
                           std::uint32_t unroll = 1,
                           CudaOptionNames names = CudaOptionNames::fields);

}  // namespace torusgate
