// RAII for the CUDA resources of the backend (device selection, streams, events,
// stream-ordered device memory, page-locked host memory, cuFFT plans, CUDA graphs) and the
// checks that turn every failed CUDA or cuFFT call and every bad kernel launch into a
// SystemError naming the call, the place and the error (DeviceOutOfMemory for an allocation
// that does not fit). Nothing here aborts; destructors never throw.
#pragma once

#include <cuda_runtime.h>
#include <cufft.h>

#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>

#include "torusgate/core/error.hpp"

namespace torusgate::gpu::detail {

// A device allocation that did not fit (cudaErrorMemoryAllocation, CUFFT_ALLOC_FAILED).
class DeviceOutOfMemory : public SystemError {
 public:
  using SystemError::SystemError;
};

[[noreturn]] void throw_cuda_error(cudaError_t error, const char* call, const char* file, int line);
[[noreturn]] void throw_cufft_error(cufftResult result, const char* call, const char* file,
                                    int line);
const char* cufft_result_name(cufftResult result);
// "1.50 GiB" and the like, for messages.
std::string format_bytes(std::size_t bytes);

// cudaFuncSetAttribute(kernel, attribute, value) on the current device, unless this process
// already set it there: the runtime keeps a kernel's attributes, and the call is host time a
// small batch waits for at every launch. A kernel's most dynamic shared memory
// (cudaFuncAttributeMaxDynamicSharedMemorySize) is only raised: a value at or below the one
// set is already allowed. Thread-safe.
void set_kernel_attribute(const void* kernel, cudaFuncAttribute attribute, int value);
template <class... P>
void set_kernel_attribute(void (*kernel)(P...), cudaFuncAttribute attribute, int value) {
  set_kernel_attribute(reinterpret_cast<const void*>(kernel), attribute, value);
}

#define CUDA_TRY(call)                                                                   \
  do {                                                                                   \
    const cudaError_t tg_cuda_error_ = (call);                                           \
    if (tg_cuda_error_ != cudaSuccess)                                                   \
      ::torusgate::gpu::detail::throw_cuda_error(tg_cuda_error_, #call, __FILE__, __LINE__); \
  } while (false)

#define CUFFT_TRY(call)                                                                    \
  do {                                                                                     \
    const cufftResult tg_cufft_result_ = (call);                                           \
    if (tg_cufft_result_ != CUFFT_SUCCESS)                                                 \
      ::torusgate::gpu::detail::throw_cufft_error(tg_cufft_result_, #call, __FILE__, __LINE__); \
  } while (false)

// After every kernel launch: a bad configuration or an earlier asynchronous fault. With the
// environment variable TORUSGATE_CUDA_DEBUG=1 it also waits for the kernel (outside graph
// capture), so a fault is reported at the launch that caused it.
void check_launch(const char* kernel_name, cudaStream_t stream, const char* file, int line);
#define CUDA_CHECK_LAUNCH(kernel_name, stream) \
  ::torusgate::gpu::detail::check_launch(#kernel_name, (stream), __FILE__, __LINE__)

// A kernel launch, TG_LAUNCH(kernel, grid, block, shared_bytes, stream)(arguments...): the
// triple-chevron launch under nvcc; under the CUDA emulator (gpu/emu), which compiles these
// sources with the host compiler, the emulator's launcher.
#if defined(TORUSGATE_CUDA_EMULATION)
#define TG_LAUNCH(kernel, grid, block, shared_bytes, stream) \
  ::cuda_emu::launcher(kernel, #kernel, grid, block, shared_bytes, stream)
// The block's dynamic shared memory as `unsigned char name[]` (16-byte aligned).
#define TG_DYNAMIC_SHARED(name) unsigned char* name = ::cuda_emu::dynamic_shared_memory()
// The same, `align` bytes aligned (at most 128; the emulator's buffers are 256-aligned).
#define TG_DYNAMIC_SHARED_ALIGNED(name, align) TG_DYNAMIC_SHARED(name)
#define TG_LAUNCH_CLUSTER(kernel, grid, block, shared_bytes, stream, cluster) \
  ::cuda_emu::launcher(kernel, #kernel, grid, block, shared_bytes, stream, cluster)
#define TG_LAUNCH_CLUSTER_AFTER(kernel, grid, block, shared_bytes, stream, cluster, programmatic) \
  ::torusgate::gpu::detail::EmulatedAfter<decltype(::cuda_emu::launcher(                     \
      kernel, #kernel, grid, block, shared_bytes, stream, cluster))>{                         \
      ::cuda_emu::launcher(kernel, #kernel, grid, block, shared_bytes, stream, cluster),       \
      programmatic}
#else
#define TG_LAUNCH(kernel, grid, block, shared_bytes, stream) \
  kernel<<<grid, block, shared_bytes, stream>>>
#define TG_DYNAMIC_SHARED(name) extern __shared__ __align__(16) unsigned char name[]
#define TG_DYNAMIC_SHARED_ALIGNED(name, align) \
  extern __shared__ __align__(align) unsigned char name[]
#define TG_LAUNCH_CLUSTER(kernel, grid, block, shared_bytes, stream, cluster)             \
  ::torusgate::gpu::detail::ClusterLaunch<std::remove_pointer_t<decltype(kernel)>>{       \
      kernel, #kernel, grid, block, shared_bytes, stream, cluster}
#define TG_LAUNCH_CLUSTER_AFTER(kernel, grid, block, shared_bytes, stream, cluster, programmatic) \
  ::torusgate::gpu::detail::ClusterLaunch<std::remove_pointer_t<decltype(kernel)>>{       \
      kernel, #kernel, grid, block, shared_bytes, stream, cluster, programmatic}
#endif

// The configuration of a launch (or of an occupancy query) in thread block clusters of
// `cluster` blocks along x; `attribute` holds the cluster dimension it points to.
inline cudaLaunchConfig_t cluster_config(cudaLaunchAttribute& attribute, dim3 grid, dim3 block,
                                         std::size_t shared_bytes, cudaStream_t stream,
                                         unsigned cluster) {
  attribute = cudaLaunchAttribute{};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = cluster;
  attribute.val.clusterDim.y = 1;
  attribute.val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  return config;
}

#if defined(TORUSGATE_CUDA_EMULATION)
// TG_LAUNCH_CLUSTER_AFTER under the emulator: the launch, which runs to its end after the
// previous one's; returns whether it was asked to be programmatic (always accepted here).
template <class Launcher>
struct EmulatedAfter {
  Launcher launch;
  bool programmatic;
  template <class... A>
  bool operator()(A&&... args) const {
    launch(std::forward<A>(args)...);
    return programmatic;
  }
};
#endif

// A launch in thread block clusters of `cluster` blocks along x (compute capability 9.0),
// TG_LAUNCH_CLUSTER(kernel, grid, block, shared_bytes, stream, cluster)(arguments...): under
// nvcc cudaLaunchKernelEx with the cluster dimension attribute, whose refusal throws here
// (CUDA_CHECK_LAUNCH after it sees the faults that come later); under the emulator its
// launcher with clusters. TG_LAUNCH_CLUSTER_AFTER(..., programmatic): where programmatic, also
// programmatic stream serialization: the kernel may start once every block of the stream's
// previous kernel has run griddepcontrol.launch_dependents (or ended), so it must wait for
// what that kernel writes itself (the emulator runs the previous kernel to its end first).
// Where the runtime refuses that attribute, the kernel is launched without it (it then starts
// after the previous kernel's end, whose writes it finds); the launch returns whether it runs
// as a programmatic dependent.
#if !defined(TORUSGATE_CUDA_EMULATION)
template <class Kernel>
struct ClusterLaunch;
template <class... P>
struct ClusterLaunch<void(P...)> {
  void (*kernel)(P...);
  const char* name;
  dim3 grid, block;
  std::size_t shared_bytes;
  cudaStream_t stream;
  unsigned cluster;
  bool programmatic = false;
  template <class... A>
  bool operator()(A&&... args) const {
    cudaLaunchAttribute attributes[2];
    cudaLaunchConfig_t config =
        cluster_config(attributes[0], grid, block, shared_bytes, stream, cluster);
    if (programmatic) {
      attributes[1] = cudaLaunchAttribute{};
      attributes[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
      attributes[1].val.programmaticStreamSerializationAllowed = 1;
      config.numAttrs = 2;
    }
    cudaError_t error = cudaLaunchKernelEx(&config, kernel, args...);
    bool after = programmatic;
    if (error != cudaSuccess && programmatic) {
      (void)cudaGetLastError();
      config.numAttrs = 1;  // without: after the previous kernel's end
      error = cudaLaunchKernelEx(&config, kernel, args...);
      after = false;
    }
    if (error != cudaSuccess) {
      (void)cudaGetLastError();  // the refusal is reported here, not at the next launch
      throw_cuda_error(error, name, __FILE__, __LINE__);
    }
    return after;
  }
};
#endif

// True when TORUSGATE_CUDA_DEBUG=1: no CUDA graphs, and a wait after every launch.
bool cuda_debug_mode();

// Makes `device` current for a scope and restores the previous one (one backend per GPU in
// one process: every public entry point selects its device).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    CUDA_TRY(cudaGetDevice(&previous_));
    if (previous_ != device) CUDA_TRY(cudaSetDevice(device));
  }
  ~DeviceGuard() {
    int now = -1;
    if (cudaGetDevice(&now) == cudaSuccess && now != previous_) cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

// A non-blocking stream of one device, shared (shared_ptr) by the engine and every device
// allocation it made, so memory can be freed on it after the engine has gone.
class Stream {
 public:
  explicit Stream(int device) : device_(device) {
    DeviceGuard guard(device);
    CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  ~Stream() {
    int previous = -1;
    cudaGetDevice(&previous);
    cudaSetDevice(device_);
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
    if (previous >= 0) cudaSetDevice(previous);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }
  int device() const { return device_; }

 private:
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
};

// A timing event.
class Event {
 public:
  Event() { CUDA_TRY(cudaEventCreate(&event_)); }
  ~Event() {
    if (event_ != nullptr) cudaEventDestroy(event_);
  }
  Event(Event&& o) noexcept : event_(std::exchange(o.event_, nullptr)) {}
  Event& operator=(Event&& o) noexcept {
    std::swap(event_, o.event_);
    return *this;
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(cudaStream_t stream) { CUDA_TRY(cudaEventRecord(event_, stream)); }
  cudaEvent_t get() const { return event_; }
  // Milliseconds from `start` to this event (both recorded and complete).
  float since(const Event& start) const {
    float ms = 0;
    CUDA_TRY(cudaEventElapsedTime(&ms, start.event_, event_));
    return ms;
  }

 private:
  cudaEvent_t event_ = nullptr;
};

// Owning, uninitialized device array; allocation and free ordered on `stream`
// (cudaMallocAsync / cudaFreeAsync). Throws DeviceOutOfMemory naming `what` and the size.
template <typename T>
class DeviceBuffer {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  DeviceBuffer() = default;
  DeviceBuffer(std::size_t count, cudaStream_t stream, const char* what) : stream_(stream) {
    if (count == 0) return;
    const cudaError_t e = cudaMallocAsync(reinterpret_cast<void**>(&data_), count * sizeof(T), stream);
    if (e != cudaSuccess) {
      data_ = nullptr;
      cudaGetLastError();  // allocation failures are not sticky; clear them
      std::size_t free_bytes = 0, total_bytes = 0;
      cudaMemGetInfo(&free_bytes, &total_bytes);
      const std::string msg = std::string("CudaBackend: cannot allocate ") +
                              format_bytes(count * sizeof(T)) + " of device memory for " + what +
                              ": " + cudaGetErrorString(e) + " (" + format_bytes(free_bytes) +
                              " free of " + format_bytes(total_bytes) + ")";
      if (e == cudaErrorMemoryAllocation) throw DeviceOutOfMemory(msg);
      throw SystemError(msg);
    }
    count_ = count;
  }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), count_(std::exchange(o.count_, 0)),
        stream_(o.stream_) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      data_ = std::exchange(o.data_, nullptr);
      count_ = std::exchange(o.count_, 0);
      stream_ = o.stream_;
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* data() const { return data_; }
  std::size_t size() const { return count_; }
  // Gives up ownership: the caller frees the memory (cudaFreeAsync).
  T* release_ownership() {
    count_ = 0;
    return std::exchange(data_, nullptr);
  }
  std::size_t bytes() const { return count_ * sizeof(T); }

 private:
  void release() noexcept {
    if (data_ != nullptr) cudaFreeAsync(data_, stream_);
    data_ = nullptr;
    count_ = 0;
  }
  T* data_ = nullptr;
  std::size_t count_ = 0;
  cudaStream_t stream_ = nullptr;
};

// Page-locked host memory (cudaMallocHost) for staged transfers. Throws SystemError naming
// `what` and the size when the system refuses it (locked memory is a limited resource).
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(std::size_t bytes, const char* what) {
    if (bytes == 0) return;
    void* p = nullptr;
    const cudaError_t e = cudaMallocHost(&p, bytes);
    if (e != cudaSuccess) {
      cudaGetLastError();
      throw SystemError(std::string("CudaBackend: cannot allocate ") + format_bytes(bytes) +
                        " of page-locked host memory for " + what + ": " +
                        cudaGetErrorString(e) +
                        " (GpuTransfer::direct needs none; a smaller staging_bytes needs less)");
    }
    data_ = static_cast<unsigned char*>(p);
    bytes_ = bytes;
  }
  ~PinnedBuffer() {
    if (data_ != nullptr) cudaFreeHost(data_);
  }
  PinnedBuffer(PinnedBuffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  unsigned char* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }

 private:
  unsigned char* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// A cuFFT plan handle (made by the owner with cufftMakePlanMany).
class CufftPlan {
 public:
  CufftPlan() { CUFFT_TRY(cufftCreate(&plan_)); }
  ~CufftPlan() {
    if (valid_) cufftDestroy(plan_);
  }
  CufftPlan(CufftPlan&& o) noexcept : plan_(o.plan_), valid_(std::exchange(o.valid_, false)) {}
  CufftPlan& operator=(CufftPlan&& o) noexcept {
    std::swap(plan_, o.plan_);
    std::swap(valid_, o.valid_);
    return *this;
  }
  CufftPlan(const CufftPlan&) = delete;
  CufftPlan& operator=(const CufftPlan&) = delete;
  cufftHandle get() const { return plan_; }

 private:
  cufftHandle plan_ = 0;
  bool valid_ = true;
};

// An instantiated CUDA graph.
class GraphExec {
 public:
  GraphExec() = default;
  explicit GraphExec(cudaGraphExec_t exec) : exec_(exec) {}
  ~GraphExec() {
    if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
  }
  GraphExec(GraphExec&& o) noexcept : exec_(std::exchange(o.exec_, nullptr)) {}
  GraphExec& operator=(GraphExec&& o) noexcept {
    std::swap(exec_, o.exec_);
    return *this;
  }
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;
  cudaGraphExec_t get() const { return exec_; }
  explicit operator bool() const { return exec_ != nullptr; }

 private:
  cudaGraphExec_t exec_ = nullptr;
};

// Captures the work `record` enqueues on `stream` into an instantiated graph. A failure
// inside ends the capture (so the stream is usable again) and rethrows.
template <class Record>
GraphExec capture_graph(cudaStream_t stream, Record&& record) {
  CUDA_TRY(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    record();
  } catch (...) {
    cudaGraph_t partial = nullptr;
    cudaStreamEndCapture(stream, &partial);
    if (partial != nullptr) cudaGraphDestroy(partial);
    cudaGetLastError();
    throw;
  }
  cudaGraph_t graph = nullptr;
  CUDA_TRY(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  if (e != cudaSuccess) throw_cuda_error(e, "cudaGraphInstantiate(&exec, graph, 0)", __FILE__, __LINE__);
  return GraphExec(exec);
}

}  // namespace torusgate::gpu::detail
