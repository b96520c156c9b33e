// The CUDA runtime API as the CUDA emulator (gpu/emu, docs/gpu.md section 2.1) provides it:
// the subset the backend uses, run on the CPU. The backend's .cu sources compile unchanged
// against this header with the host C++ compiler (target torusgate_gpu_emu), so their host
// code and their kernels run in the CPU tests. Device memory is host memory tracked by the
// emulator (every copy and FFT checks its ranges against live allocations); a kernel's
// blocks run on the CPU's cores, each block's threads as fibers that meet at __syncthreads;
// streams queue their work and run it when the host waits for it (so a missing wait shows), or
// record it into a graph while captured. Not emulated: timing, concurrency between streams, warp-synchronous behaviour without a
// barrier, per-kernel register and __launch_bounds__ limits (docs/gpu.md lists what the
// emulator checks).
//
// Thread-block clusters (compute capability 9.0), along x only: a launch with
// LaunchConfig::cluster > 1 runs each cluster's blocks together, and cooperative_groups.h's
// this_cluster() gives their barrier and map_shared_rank. A cluster kernel must keep its block
// shared memory in dynamic shared memory only: a static __shared__ array is one per OS thread
// here (see __shared__ below), so the blocks of a cluster, which share an OS thread, would
// share it, and map_shared_rank cannot map it (a device fault). The emulator cannot detect
// such an array.
#pragma once

#ifndef TORUSGATE_CUDA_EMULATION
#define TORUSGATE_CUDA_EMULATION 1
#endif

#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

// ---- qualifiers and built-in variables ---------------------------------------------------

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
// Block-shared: every thread (fiber) of a block runs on one OS thread, one block at a time
// (one cluster at a time in a cluster launch, whose blocks would therefore share the array).
#define __shared__ static thread_local
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __restrict__ __restrict

struct uint3 {
  unsigned x = 0, y = 0, z = 0;
};
struct uint4 {
  unsigned x = 0, y = 0, z = 0, w = 0;
};
struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
};

// constinit: no dynamic initialisation, so no TLS wrapper call at every use.
inline constinit thread_local uint3 threadIdx{};
inline constinit thread_local uint3 blockIdx{};
inline constinit thread_local dim3 blockDim{};
inline constinit thread_local dim3 gridDim{};

// ---- errors and handles -------------------------------------------------------------------

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInitializationError = 3,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDeviceFunction = 98,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorIllegalState = 401,
  cudaErrorNotReady = 600,
  cudaErrorIllegalAddress = 700,
  cudaErrorLaunchOutOfResources = 701,
  cudaErrorAssert = 710,
  cudaErrorHardwareStackError = 714,
  cudaErrorIllegalInstruction = 715,
  cudaErrorMisalignedAddress = 716,
  cudaErrorLaunchFailure = 719,
  cudaErrorStreamCaptureUnsupported = 900,
  cudaErrorStreamCaptureInvalidated = 901,
  cudaErrorStreamCaptureUnmatched = 903,
  cudaErrorStreamCaptureWrongThread = 908,
  cudaErrorInvalidClusterSize = 912,
};
using cudaError = cudaError_t;

struct CUstream_st;
struct CUevent_st;
struct CUgraph_st;
struct CUgraphExec_st;
using cudaStream_t = CUstream_st*;
using cudaEvent_t = CUevent_st*;
using cudaGraph_t = CUgraph_st*;
using cudaGraphExec_t = CUgraphExec_st*;

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};

enum cudaStreamCaptureMode {
  cudaStreamCaptureModeGlobal = 0,
  cudaStreamCaptureModeThreadLocal = 1,
  cudaStreamCaptureModeRelaxed = 2,
};
enum cudaStreamCaptureStatus {
  cudaStreamCaptureStatusNone = 0,
  cudaStreamCaptureStatusActive = 1,
  cudaStreamCaptureStatusInvalidated = 2,
};

constexpr unsigned cudaStreamDefault = 0;
constexpr unsigned cudaStreamNonBlocking = 1;

enum cudaDeviceAttr {
  cudaDevAttrMaxThreadsPerBlock = 1,
  cudaDevAttrMaxSharedMemoryPerBlock = 8,
  cudaDevAttrClockRate = 13,
  cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrMemoryClockRate = 36,
  cudaDevAttrGlobalMemoryBusWidth = 37,
  cudaDevAttrComputeCapabilityMajor = 75,
  cudaDevAttrComputeCapabilityMinor = 76,
  cudaDevAttrMaxSharedMemoryPerBlockOptin = 97,
  cudaDevAttrMemoryPoolsSupported = 115,
  cudaDevAttrClusterLaunch = 120,
  cudaDevAttrMaxThreadsPerMultiProcessor = 39,
  cudaDevAttrMaxRegistersPerMultiprocessor = 82,
};

enum cudaFuncAttribute {
  cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
  cudaFuncAttributePreferredSharedMemoryCarveout = 9,
};

struct cudaDeviceProp {
  char name[256] = {};
  std::size_t totalGlobalMem = 0;
  std::size_t sharedMemPerBlock = 0;
  int maxThreadsPerBlock = 0;
  int multiProcessorCount = 0;
  int memoryBusWidth = 0;
  int major = 0;
  int minor = 0;
  std::size_t sharedMemPerBlockOptin = 0;
};

struct cudaFuncAttributes {
  std::size_t sharedSizeBytes = 0;
  std::size_t constSizeBytes = 0;
  std::size_t localSizeBytes = 0;
  int maxThreadsPerBlock = 0;
  int numRegs = 0;
  int ptxVersion = 0;
  int binaryVersion = 0;
  int maxDynamicSharedSizeBytes = 0;
};

// A launch's attributes (cudaLaunchKernelEx's, cudaOccupancyMaxActiveClusters'): of CUDA's,
// the cluster dimension is emulated; programmatic stream serialization is accepted and
// changes nothing (the emulator runs a launch to its end before the next starts, so a
// programmatic dependent finds all its primary wrote).
enum cudaLaunchAttributeID {
  cudaLaunchAttributeClusterDimension = 4,
  cudaLaunchAttributeProgrammaticStreamSerialization = 6,
};
union cudaLaunchAttributeValue {
  char pad[64];
  struct {
    unsigned x, y, z;
  } clusterDim;
  int programmaticStreamSerializationAllowed;
};
struct cudaLaunchAttribute {
  cudaLaunchAttributeID id;
  cudaLaunchAttributeValue val;
};
struct cudaLaunchConfig_t {
  dim3 gridDim;
  dim3 blockDim;
  std::size_t dynamicSmemBytes = 0;
  cudaStream_t stream = nullptr;
  cudaLaunchAttribute* attrs = nullptr;
  unsigned numAttrs = 0;
};

// ---- the runtime API ----------------------------------------------------------------------

const char* cudaGetErrorName(cudaError_t error);
const char* cudaGetErrorString(cudaError_t error);
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();

cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaMemGetInfo(std::size_t* free_bytes, std::size_t* total_bytes);

cudaError_t cudaMalloc(void** ptr, std::size_t bytes);
cudaError_t cudaFree(void* ptr);
cudaError_t cudaMallocAsync(void** ptr, std::size_t bytes, cudaStream_t stream);
cudaError_t cudaFreeAsync(void* ptr, cudaStream_t stream);
cudaError_t cudaMallocHost(void** ptr, std::size_t bytes);
cudaError_t cudaFreeHost(void* ptr);
cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream = nullptr);
cudaError_t cudaMemset(void* ptr, int value, std::size_t bytes);
cudaError_t cudaMemsetAsync(void* ptr, int value, std::size_t bytes, cudaStream_t stream = nullptr);

cudaError_t cudaStreamCreate(cudaStream_t* stream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph);
cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status);

cudaError_t cudaEventCreate(cudaEvent_t* event);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = nullptr);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph,
                                 unsigned long long flags = 0);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream);

cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attributes, const void* func);
cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value);
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, const void* func,
                                                          int block_size,
                                                          std::size_t dynamic_shared_bytes);
// How many clusters of `config`'s cluster dimension (a cudaLaunchAttributeClusterDimension
// attribute, required) can be resident at once: 0 when one block of the configuration cannot
// run. cudaErrorInvalidClusterSize for a missing cluster dimension, or one not 1 to 8 blocks
// along x.
cudaError_t cudaOccupancyMaxActiveClusters(int* clusters, const void* func,
                                           const cudaLaunchConfig_t* config);

template <class R, class... P>
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attributes, R (*func)(P...)) {
  return cudaFuncGetAttributes(attributes, reinterpret_cast<const void*>(func));
}
template <class R, class... P>
cudaError_t cudaFuncSetAttribute(R (*func)(P...), cudaFuncAttribute attr, int value) {
  return cudaFuncSetAttribute(reinterpret_cast<const void*>(func), attr, value);
}
template <class R, class... P>
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, R (*func)(P...),
                                                          int block_size,
                                                          std::size_t dynamic_shared_bytes) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      blocks, reinterpret_cast<const void*>(func), block_size, dynamic_shared_bytes);
}
template <class R, class... P>
cudaError_t cudaOccupancyMaxActiveClusters(int* clusters, R (*func)(P...),
                                           const cudaLaunchConfig_t* config) {
  return cudaOccupancyMaxActiveClusters(clusters, reinterpret_cast<const void*>(func), config);
}

// ---- device functions ---------------------------------------------------------------------

namespace cuda_emu {
// The block barrier: the calling fiber waits until every live thread of its block is there.
void sync_threads();
// The calling block's dynamic shared memory (the launch's third argument, in bytes).
unsigned char* dynamic_shared_memory();
// A device-side fault (an emulated trap): ends the kernel with cudaErrorLaunchFailure.
[[noreturn]] void device_fault(const char* what);
// Whether addr lies in the dynamic shared memory of a block of the calling thread's cluster
// (__isShared on a device): a load or store that names the global space (ld.global.cg, say)
// at such an address fails on a device with cudaErrorInvalidAddressSpace.
bool is_shared(const void* addr);
// cp.async (compute capability 8.0): the calling thread asks for `bytes` from device memory at
// src to be copied into shared memory at dst, and goes on; the copy is done at its next
// wait_async_copies (cp.async.wait_group 0), not before. A destination outside the block's
// dynamic shared memory, or a source inside it, is a device fault.
void copy_async(void* dst, const void* src, std::size_t bytes);
void wait_async_copies();
// The cluster barrier (cooperative_groups::cluster_group::sync): the calling fiber waits until
// every thread of every block of its cluster is there; in a launch without clusters, the block
// barrier.
void cluster_sync();
// Blocks per cluster of the running launch (1 in a launch without clusters).
unsigned cluster_blocks();
// The address at [addr, addr + bytes)'s offset in the dynamic shared memory of block `rank` of
// the calling block's cluster; a device fault unless that range lies in the calling block's
// dynamic shared memory and rank < cluster_blocks().
void* map_shared_rank(const void* addr, std::size_t bytes, unsigned rank);
// mbarrier objects (compute capability 9.0 with their transaction counts), 8 bytes aligned
// to 8 in the calling block's dynamic shared memory; the emulator keeps their state beside
// that memory, so a barrier is used only after mbarrier_init (else a device fault).
// mbarrier.init: phase 0, `count` arrivals expected per phase, no transactions.
void mbarrier_init(std::uint64_t* bar, unsigned count);
// mbarrier.arrive.expect_tx: `bytes` more transactions for the current phase, then one
// arrival; the phase completes when its arrivals are all there and its transaction count is
// back at zero (transactions may complete before they are expected: the count goes below
// zero meanwhile, as on a device).
void mbarrier_arrive_expect_tx(std::uint64_t* bar, unsigned bytes);
// mbarrier.try_wait.parity in a loop: the calling fiber waits until the phase of parity
// `parity` has completed (the current phase's parity differs).
void mbarrier_wait_parity(std::uint64_t* bar, unsigned parity);
// st.async (shared::cluster, mbarrier::complete_tx::bytes): `bytes` (4, 8 or 16, dst aligned to
// them) from src into dst, in the dynamic shared memory of a block of the calling block's
// cluster (map_shared_rank), then `bytes` transactions completed on bar, an initialised
// mbarrier in that same block's memory. When: at once in the reverse order, when no thread
// of the cluster is ready in forward (every other thread has run on until it waits), either
// at random in shuffle: a read of dst that no wait on bar orders after the store sees the old
// contents in forward, a store that overtakes a read it must follow shows in reverse.
void store_async(void* dst, const void* src, std::size_t bytes, std::uint64_t* bar);
// cp.async.bulk (shared::cluster from global, mbarrier::complete_tx::bytes; the TMA's
// one-dimensional copy): `bytes` (a positive multiple of 16, both addresses aligned to 16)
// from device memory at src into dst, in the dynamic shared memory of a block of the calling
// block's cluster, then `bytes` transactions completed on bar, an initialised mbarrier in that
// same block's memory. Delivered as store_async is (src is read then); a source in shared
// memory is a device fault.
void bulk_copy_async(void* dst, const void* src, std::size_t bytes, std::uint64_t* bar);
}  // namespace cuda_emu

inline void __syncthreads() { cuda_emu::sync_threads(); }
inline long long __double_as_longlong(double x) { return std::bit_cast<long long>(x); }
// Blocks run on several cores at once: a real atomic read-modify-write (mod 2^32, 2^64).
inline unsigned int atomicAdd(unsigned int* address, unsigned int val) {
  return __atomic_fetch_add(address, val, __ATOMIC_RELAXED);
}
inline unsigned long long atomicAdd(unsigned long long* address, unsigned long long val) {
  return __atomic_fetch_add(address, val, __ATOMIC_RELAXED);
}
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

namespace cuda_emu {
// A wait until the counter at `counter` (device memory, counted by an earlier kernel's
// atomicAdd) reaches `target`. The emulator runs a launch to its end before the next, so the
// counter is final here: it must equal target (fewer would wait for ever on a device, more
// means the waiter counted the wrong launches), else a device fault.
inline void wait_counter(const std::uint64_t* counter, std::uint64_t target) {
  if (__atomic_load_n(counter, __ATOMIC_ACQUIRE) != target) {
    device_fault(__atomic_load_n(counter, __ATOMIC_ACQUIRE) < target
                     ? "a wait for a counter that no earlier kernel brought to its target "
                       "(on a device: a wait for ever)"
                     : "a wait for a counter already past its target (the wrong launches "
                       "counted)");
  }
}
}  // namespace cuda_emu

// ---- kernel launches ----------------------------------------------------------------------

namespace cuda_emu {

struct LaunchConfig {
  const void* kernel = nullptr;
  const char* name = "";
  dim3 grid, block;
  std::size_t shared_bytes = 0;
  cudaStream_t stream = nullptr;
  unsigned cluster = 1;  // blocks per cluster, along x (1 to 8, dividing grid.x)
};

// Validates the configuration (a bad one becomes the last error, as on a device), then runs
// `thread` for every thread of the grid, or records the launch while the stream is captured.
void launch(const LaunchConfig& config, std::function<void()> thread);

template <class... P>
struct Launcher {
  void (*kernel)(P...);
  LaunchConfig config;
  template <class... A>
  void operator()(A&&... args) const {
    static_assert(sizeof...(A) == sizeof...(P), "a kernel launch with the wrong argument count");
    // Arguments are converted and copied at the launch, as the CUDA runtime does.
    std::tuple<std::decay_t<P>...> copies(static_cast<P>(std::forward<A>(args))...);
    launch(config, [k = kernel, copies]() { std::apply(k, copies); });
  }
};

// The emulator's log of the runtime calls this process makes, for tests that bound what a
// code path asks of the runtime: start_call_log() empties and starts it, stop_call_log()
// stops it and returns the calls in order, each by its function's name (a kernel launch as
// "launch " and the name its launcher was given).
void start_call_log();
std::vector<std::string> stop_call_log();

// cluster > 1: a launch in clusters of that many blocks along x (cudaLaunchKernelEx with a
// cudaLaunchAttributeClusterDimension of (cluster, 1, 1) under nvcc).
template <class... P>
Launcher<P...> launcher(void (*kernel)(P...), const char* name, dim3 grid, dim3 block,
                        std::size_t shared_bytes, cudaStream_t stream, unsigned cluster = 1) {
  return Launcher<P...>{kernel, LaunchConfig{reinterpret_cast<const void*>(kernel), name, grid,
                                             block, shared_bytes, stream, cluster}};
}

}  // namespace cuda_emu
