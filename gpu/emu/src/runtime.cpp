// The CUDA emulator's runtime API (gpu/emu/include/cuda_runtime.h): devices, device memory,
// streams and their captures, events, graphs, kernel attributes and launches.
//
// Streams are asynchronous, as on a device: work enqueued on a stream (kernels, copies, memsets,
// cuFFT transforms, event records, stream-ordered frees, graph launches) waits in the stream's
// queue and runs, in order, only when the host waits for it: cudaStreamSynchronize,
// cudaEventSynchronize (up to the event's record), cudaDeviceSynchronize, and the calls that
// synchronise implicitly (cudaMemcpy and cudaMemset on the legacy default stream, cudaFree). So
// host code that reads a result, reuses a host buffer or frees memory before it has waited for
// the work that uses it sees stale or wrong data here, as it may on a device.
//
// Environment: TORUSGATE_CUDA_EMU_DEVICES (how many devices, default 2; 0 means none),
// TORUSGATE_CUDA_EMU_MEMORY_MIB (each device's memory, default 4096) and
// TORUSGATE_CUDA_EMU_SYNC=1 (run stream work when it is enqueued, for debugging).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "emulator.hpp"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

struct CUstream_st {
  int device = 0;
  unsigned flags = 0;  // cudaStreamDefault (blocking) or cudaStreamNonBlocking
  bool is_default = false;
  bool capturing = false;
  bool invalidated = false;
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
  std::thread::id capture_thread;
  std::vector<std::function<void()>> nodes;
  // Work waiting to run, numbered in enqueue order; `completed` is the last number run.
  std::deque<std::pair<std::uint64_t, std::function<void()>>> pending;
  std::uint64_t enqueued = 0, completed = 0;
  std::mutex run_mutex;  // one host thread runs the queue at a time
};

struct CUevent_st {
  int device = 0;
  std::uint64_t id = 0;              // unique over the process (handles may be reused)
  std::uint64_t ticket = 0;          // cudaEventRecord calls so far; 0: never recorded
  bool recorded = false;             // its latest record has run
  CUstream_st* stream = nullptr;     // where the latest record is queued (null: in a capture)
  std::uint64_t target = 0;          // and its number there
  std::chrono::steady_clock::time_point when;
};

struct CUgraph_st {
  std::vector<std::function<void()>> nodes;
};

struct CUgraphExec_st {
  // Shared with launches still queued, so an exec may be destroyed once launched.
  std::shared_ptr<const std::vector<std::function<void()>>> nodes;
};

namespace cuda_emu {
namespace {

constexpr int max_threads_per_block = 1024;
constexpr int default_shared_per_block = 48 * 1024;
constexpr int optin_shared_per_block = 227 * 1024;
constexpr int shared_per_multiprocessor = 228 * 1024;
constexpr int max_threads_per_multiprocessor = 2048;
constexpr int max_blocks_per_multiprocessor = 32;
constexpr int multiprocessors = 4;
constexpr unsigned max_cluster_blocks = 8;  // the portable maximum (16 only with an opt-in)

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < 0 || x > (1 << 20)) {
    std::fprintf(stderr, "cuda emulator: ignoring %s=%s (not a count)\n", name, v);
    return fallback;
  }
  return static_cast<int>(x);
}

struct Allocation {
  std::size_t bytes = 0;
  int device = 0;
};

struct State {
  std::mutex mutex;
  int device_count = env_int("TORUSGATE_CUDA_EMU_DEVICES", 2);
  std::size_t capacity =
      std::size_t(env_int("TORUSGATE_CUDA_EMU_MEMORY_MIB", 4096)) * std::size_t{1} << 20;
  bool immediate = env_int("TORUSGATE_CUDA_EMU_SYNC", 0) != 0;
  std::map<std::uintptr_t, std::size_t> pinned;  // page-locked host memory (cudaMallocHost)
  std::size_t pinned_used = 0, pinned_limit = std::size_t{1} << 40;
  std::uint64_t next_event_id = 0;
  std::vector<std::size_t> used = std::vector<std::size_t>(device_count, 0);
  std::map<std::uintptr_t, Allocation> allocations;
  std::set<CUstream_st*> streams;
  std::vector<std::unique_ptr<CUstream_st>> default_streams;
  std::set<CUevent_st*> events;
  std::set<CUgraph_st*> graphs;
  std::set<CUgraphExec_st*> execs;
  std::map<const void*, int> max_dynamic_shared;  // per kernel, set by cudaFuncSetAttribute
  cudaError_t fault = cudaSuccess;
  std::string fault_message;

  State() {
    for (int d = 0; d < device_count; ++d) {
      auto s = std::make_unique<CUstream_st>();
      s->device = d;
      s->is_default = true;
      default_streams.push_back(std::move(s));
    }
  }
};

State& state() {
  static State* s = new State;  // never destroyed: buffers may be freed at process exit
  return *s;
}

thread_local cudaError_t last_error = cudaSuccess;
thread_local int this_device = 0;

// The dynamic shared memory a block of `kernel` may have: its
// cudaFuncAttributeMaxDynamicSharedMemorySize, else the default (lock held).
int dynamic_shared_limit(const State& s, const void* kernel) {
  const auto it = s.max_dynamic_shared.find(kernel);
  return it != s.max_dynamic_shared.end() ? it->second : default_shared_per_block;
}

// The allocation that holds p (lock held), or allocations.end().
std::map<std::uintptr_t, Allocation>::iterator find_allocation(State& s, const void* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  auto it = s.allocations.upper_bound(a);
  if (it == s.allocations.begin()) return s.allocations.end();
  --it;
  if (a >= it->first + std::max<std::size_t>(it->second.bytes, 1)) return s.allocations.end();
  return it;
}

// The stream a call names (lock held): nullptr is the current device's default stream.
CUstream_st* resolve(State& s, cudaStream_t stream) {
  if (stream == nullptr) {
    if (this_device >= s.device_count) return nullptr;
    return s.default_streams[this_device].get();
  }
  return s.streams.count(stream) != 0 ? stream : nullptr;
}

cudaError_t check_fault() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return s.fault;
}

// After waiting for queued work: the sticky fault it raised, if any.
cudaError_t finish() {
  const cudaError_t f = check_fault();
  return f == cudaSuccess ? cudaSuccess : fail(f);
}

// The stream a call names (takes the lock); nullptr when there is none.
CUstream_st* resolve_locked(cudaStream_t stream) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return resolve(s, stream);
}

// The call log (cuda_emu::start_call_log): whether it is on, and what it holds.
std::mutex call_log_mutex;
bool call_log_on = false;
std::vector<std::string> call_log;

// Appends a runtime call's name (after `prefix`) to the log while it is on.
void log_call(const char* name, const char* prefix = "") {
  std::lock_guard lock(call_log_mutex);
  if (call_log_on) call_log.push_back(std::string(prefix) + name);
}

#define EMU_ENTRY()                                   \
  do {                                                \
    const cudaError_t emu_fault_ = check_fault();     \
    if (emu_fault_ != cudaSuccess) return fail(emu_fault_); \
  } while (false)

cudaError_t check_device() {
  if (state().device_count == 0) return fail(cudaErrorNoDevice);
  return cudaSuccess;
}

void copy_bytes(void* dst, const void* src, std::size_t bytes) {
  if (bytes != 0) std::memmove(dst, src, bytes);
}

// Validates the ranges of a copy of `kind` (lock not held).
cudaError_t check_copy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
  if (bytes == 0) return cudaSuccess;
  if (dst == nullptr || src == nullptr) return fail(cudaErrorInvalidValue);
  const bool dst_device = is_device_pointer(dst), src_device = is_device_pointer(src);
  bool want_dst = dst_device, want_src = src_device;
  switch (kind) {
    case cudaMemcpyHostToHost: want_dst = want_src = false; break;
    case cudaMemcpyHostToDevice: want_dst = true, want_src = false; break;
    case cudaMemcpyDeviceToHost: want_dst = false, want_src = true; break;
    case cudaMemcpyDeviceToDevice: want_dst = want_src = true; break;
    case cudaMemcpyDefault: break;
    default: return fail(cudaErrorInvalidValue);
  }
  if (dst_device != want_dst || src_device != want_src) return fail(cudaErrorInvalidValue);
  if (dst_device && !is_device_range(dst, bytes)) return fail(cudaErrorInvalidValue);
  if (src_device && !is_device_range(src, bytes)) return fail(cudaErrorInvalidValue);
  return cudaSuccess;
}

// A new stream or event of the current device, registered in `live`.
template <class H>
cudaError_t make_handle(H** out, std::set<H*> State::*live) {
  if (out == nullptr) return fail(cudaErrorInvalidValue);
  if (const cudaError_t e = check_device(); e != cudaSuccess) return e;
  auto* h = new H;
  h->device = this_device;
  State& s = state();
  std::lock_guard lock(s.mutex);
  (s.*live).insert(h);
  *out = h;
  return cudaSuccess;
}

template <class H>
cudaError_t drop_handle(H* h, std::set<H*> State::*live) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (h == nullptr || (s.*live).erase(h) == 0) return fail(cudaErrorInvalidResourceHandle);
  delete h;
  return cudaSuccess;
}

// Stream-ordered allocation on a captured stream would be a memory node whose address exists
// only at replay; the backend never needs one, so the emulator refuses it (and invalidates
// the capture, as an illegal call does).
cudaError_t check_not_capturing(cudaStream_t stream, const char* call) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  CUstream_st* st = resolve(s, stream);
  if (st == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if (st->capturing) {
    std::fprintf(stderr, "cuda emulator: %s on a capturing stream is not emulated\n", call);
    st->invalidated = true;
    return fail(cudaErrorStreamCaptureUnsupported);
  }
  return cudaSuccess;
}

// Runs `st`'s queued work, in order, up to number `upto` (lock not held).
void run_until(CUstream_st* st, std::uint64_t upto) {
  std::lock_guard run(st->run_mutex);
  State& s = state();
  while (true) {
    std::pair<std::uint64_t, std::function<void()>> next;
    {
      std::lock_guard lock(s.mutex);
      if (st->completed >= upto || st->pending.empty()) return;
      next = std::move(st->pending.front());
      st->pending.pop_front();
    }
    next.second();
    std::lock_guard lock(s.mutex);
    st->completed = next.first;
  }
}

// Runs everything queued on `st` so far (lock not held).
void drain(CUstream_st* st) {
  std::uint64_t upto = 0;
  {
    State& s = state();
    std::lock_guard lock(s.mutex);
    upto = st->enqueued;
  }
  run_until(st, upto);
}

// Which streams of a device a synchronising call waits for.
enum class Streams { all, legacy };  // legacy: the default stream and the blocking streams

// Runs the queued work of `device`'s streams (lock not held).
void drain_device(int device, Streams which) {
  State& s = state();
  std::vector<CUstream_st*> list;
  {
    std::lock_guard lock(s.mutex);
    if (device >= s.device_count) return;
    list.push_back(s.default_streams[device].get());
    for (CUstream_st* st : s.streams) {
      if (st->device == device && (which == Streams::all || st->flags == cudaStreamDefault)) {
        list.push_back(st);
      }
    }
  }
  for (CUstream_st* st : list) drain(st);
}

}  // namespace

// ---- internals ----------------------------------------------------------------------------

void set_fault(cudaError_t error, const std::string& message) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (s.fault == cudaSuccess) {
    s.fault = error;
    s.fault_message = message;
  }
  std::fprintf(stderr, "cuda emulator: %s\n", message.c_str());
}

cudaError_t fault() { return check_fault(); }

std::string fault_message() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return s.fault_message;
}

void clear_fault() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.fault = cudaSuccess;
  s.fault_message.clear();
}

cudaError_t fail(cudaError_t error) {
  last_error = error;
  return error;
}

int current_device() { return this_device; }

bool is_device_pointer(const void* p) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return find_allocation(s, p) != s.allocations.end();
}

// True when p lies in page-locked host memory from cudaMallocHost.
bool is_pinned(const void* p) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  auto it = s.pinned.upper_bound(a);
  if (it == s.pinned.begin()) return false;
  --it;
  return a < it->first + it->second;
}

bool is_device_range(const void* p, std::size_t bytes) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  const auto it = find_allocation(s, p);
  if (it == s.allocations.end()) return false;
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  return a + bytes <= it->first + it->second.bytes;
}

cudaError_t allocate(void** p, std::size_t bytes) {
  if (p == nullptr) return fail(cudaErrorInvalidValue);
  *p = nullptr;
  State& s = state();
  if (this_device >= s.device_count) return fail(cudaErrorInvalidDevice);
  // A size within 255 of SIZE_MAX cannot be rounded up (the sum would wrap to a few bytes); no
  // device holds it anyway.
  if (bytes > SIZE_MAX - 255) return fail(cudaErrorMemoryAllocation);
  const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + 255) / 256 * 256;
  {
    std::lock_guard lock(s.mutex);
    if (rounded > s.capacity - s.used[this_device]) return fail(cudaErrorMemoryAllocation);
    s.used[this_device] += rounded;
  }
  void* mem = std::aligned_alloc(256, rounded);
  if (mem == nullptr) {
    std::lock_guard lock(s.mutex);
    s.used[this_device] -= rounded;
    return fail(cudaErrorMemoryAllocation);
  }
  // Fresh device memory holds garbage, not zeros: a read before any write shows.
  std::memset(mem, 0xA5, rounded);
#if defined(__SANITIZE_ADDRESS__)
  // The rounding is no device memory: AddressSanitizer reports an access to it.
  ASAN_POISON_MEMORY_REGION(static_cast<char*>(mem) + bytes, rounded - bytes);
#endif
  std::lock_guard lock(s.mutex);
  s.allocations[reinterpret_cast<std::uintptr_t>(mem)] = Allocation{bytes, this_device};
  *p = mem;
  return cudaSuccess;
}

cudaError_t release(void* p) {
  if (p == nullptr) return cudaSuccess;
  State& s = state();
  {
    std::lock_guard lock(s.mutex);
    const auto it = s.allocations.find(reinterpret_cast<std::uintptr_t>(p));
    if (it == s.allocations.end()) return fail(cudaErrorInvalidValue);
    s.used[it->second.device] -= (std::max<std::size_t>(it->second.bytes, 1) + 255) / 256 * 256;
    s.allocations.erase(it);
  }
  std::free(p);  // AddressSanitizer unpoisons the block when it hands it out again
  return cudaSuccess;
}

cudaError_t enqueue(cudaStream_t stream, std::function<void()> work, bool needs_current_device) {
  State& s = state();
  int device = 0;
  {
    std::lock_guard lock(s.mutex);
    CUstream_st* st = resolve(s, stream);
    if (st == nullptr) return fail(cudaErrorInvalidResourceHandle);
    if (needs_current_device && st->device != this_device) {
      return fail(cudaErrorInvalidResourceHandle);
    }
    if (st->capturing) {
      st->nodes.push_back(std::move(work));
      return cudaSuccess;
    }
    if (!s.immediate && !st->is_default && st->flags == cudaStreamNonBlocking) {
      st->pending.emplace_back(++st->enqueued, std::move(work));
      return cudaSuccess;
    }
    device = st->device;
  }
  if (s.immediate) {
    work();
    return cudaSuccess;
  }
  // The legacy default stream and the blocking streams are ordered with one another: work on
  // one of them waits for the others' (here: theirs runs first), then queues.
  drain_device(device, Streams::legacy);
  std::lock_guard lock(s.mutex);
  CUstream_st* st = resolve(s, stream);
  if (st == nullptr) return fail(cudaErrorInvalidResourceHandle);
  st->pending.emplace_back(++st->enqueued, std::move(work));
  return cudaSuccess;
}

bool refuse_during_capture(const char* call) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  bool refused = false;
  for (CUstream_st* st : s.streams) {
    if (st->capturing && st->mode != cudaStreamCaptureModeRelaxed &&
        (st->mode == cudaStreamCaptureModeGlobal ||
         st->capture_thread == std::this_thread::get_id())) {
      st->invalidated = true;
      refused = true;
    }
  }
  if (refused) {
    std::fprintf(stderr, "cuda emulator: %s during a stream capture invalidates the capture\n",
                 call);
  }
  return refused;
}

}  // namespace cuda_emu

using namespace cuda_emu;

// ---- errors -------------------------------------------------------------------------------

const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInitializationError: return "cudaErrorInitializationError";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDeviceFunction: return "cudaErrorInvalidDeviceFunction";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorIllegalState: return "cudaErrorIllegalState";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
    case cudaErrorLaunchOutOfResources: return "cudaErrorLaunchOutOfResources";
    case cudaErrorAssert: return "cudaErrorAssert";
    case cudaErrorHardwareStackError: return "cudaErrorHardwareStackError";
    case cudaErrorIllegalInstruction: return "cudaErrorIllegalInstruction";
    case cudaErrorMisalignedAddress: return "cudaErrorMisalignedAddress";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorStreamCaptureUnmatched: return "cudaErrorStreamCaptureUnmatched";
    case cudaErrorStreamCaptureWrongThread: return "cudaErrorStreamCaptureWrongThread";
    case cudaErrorInvalidClusterSize: return "cudaErrorInvalidClusterSize";
  }
  return "cudaErrorUnknown";
}

const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorLaunchFailure: return "unspecified launch failure (emulated device fault)";
    case cudaErrorStreamCaptureUnsupported:
      return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated:
      return "operation failed due to a previous error during capture";
    default: return cudaGetErrorName(error);
  }
}

cudaError_t cudaGetLastError() {
  log_call(__func__);
  const cudaError_t f = check_fault();
  if (f != cudaSuccess) return f;
  const cudaError_t e = last_error;
  last_error = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError() {
  log_call(__func__);
  const cudaError_t f = check_fault();
  return f != cudaSuccess ? f : last_error;
}

// ---- devices ------------------------------------------------------------------------------

cudaError_t cudaGetDeviceCount(int* count) {
  log_call(__func__);
  if (count == nullptr) return fail(cudaErrorInvalidValue);
  *count = state().device_count;
  return check_device();
}

cudaError_t cudaGetDevice(int* device) {
  log_call(__func__);
  if (device == nullptr) return fail(cudaErrorInvalidValue);
  *device = this_device;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  log_call(__func__);
  if (device < 0 || device >= state().device_count) return fail(cudaErrorInvalidDevice);
  this_device = device;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  log_call(__func__);
  if (prop == nullptr) return fail(cudaErrorInvalidValue);
  if (device < 0 || device >= state().device_count) return fail(cudaErrorInvalidDevice);
  *prop = cudaDeviceProp{};
  std::snprintf(prop->name, sizeof prop->name, "torusgate CUDA emulator (CPU)");
  prop->totalGlobalMem = state().capacity;
  prop->sharedMemPerBlock = default_shared_per_block;
  prop->sharedMemPerBlockOptin = optin_shared_per_block;
  prop->maxThreadsPerBlock = max_threads_per_block;
  prop->multiProcessorCount = multiprocessors;
  prop->memoryBusWidth = 64;
  prop->major = 9;
  prop->minor = 0;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  log_call(__func__);
  if (value == nullptr) return fail(cudaErrorInvalidValue);
  if (device < 0 || device >= state().device_count) return fail(cudaErrorInvalidDevice);
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *value = max_threads_per_block; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = default_shared_per_block; break;
    case cudaDevAttrClockRate: *value = 1000000; break;
    case cudaDevAttrMultiProcessorCount: *value = multiprocessors; break;
    case cudaDevAttrMemoryClockRate: *value = 1000000; break;
    case cudaDevAttrGlobalMemoryBusWidth: *value = 64; break;
    case cudaDevAttrComputeCapabilityMajor: *value = 9; break;
    case cudaDevAttrComputeCapabilityMinor: *value = 0; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = optin_shared_per_block; break;
    case cudaDevAttrMemoryPoolsSupported: *value = 1; break;
    case cudaDevAttrClusterLaunch: *value = 1; break;  // compute capability 9.0
    case cudaDevAttrMaxThreadsPerMultiProcessor: *value = 2048; break;
    case cudaDevAttrMaxRegistersPerMultiprocessor: *value = 65536; break;
    default: return fail(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize() {
  log_call(__func__);
  EMU_ENTRY();
  if (refuse_during_capture("cudaDeviceSynchronize")) {
    return fail(cudaErrorStreamCaptureUnsupported);
  }
  if (const cudaError_t e = check_device(); e != cudaSuccess) return e;
  drain_device(this_device, Streams::all);
  return finish();
}

cudaError_t cudaMemGetInfo(std::size_t* free_bytes, std::size_t* total_bytes) {
  log_call(__func__);
  EMU_ENTRY();
  if (free_bytes == nullptr || total_bytes == nullptr) return fail(cudaErrorInvalidValue);
  State& s = state();
  if (this_device >= s.device_count) return fail(cudaErrorInvalidDevice);
  std::lock_guard lock(s.mutex);
  *total_bytes = s.capacity;
  *free_bytes = s.capacity - s.used[this_device];
  return cudaSuccess;
}

// ---- memory -------------------------------------------------------------------------------

cudaError_t cudaMalloc(void** ptr, std::size_t bytes) {
  log_call(__func__);
  EMU_ENTRY();
  if (refuse_during_capture("cudaMalloc")) return fail(cudaErrorStreamCaptureUnsupported);
  return allocate(ptr, bytes);
}

cudaError_t cudaFree(void* ptr) {
  log_call(__func__);
  EMU_ENTRY();
  if (refuse_during_capture("cudaFree")) return fail(cudaErrorStreamCaptureUnsupported);
  drain_device(this_device, Streams::all);  // cudaFree waits for the device
  return release(ptr);
}

cudaError_t cudaMallocAsync(void** ptr, std::size_t bytes, cudaStream_t stream) {
  log_call(__func__);
  EMU_ENTRY();
  if (const cudaError_t e = check_not_capturing(stream, "cudaMallocAsync"); e != cudaSuccess) {
    return e;
  }
  const cudaError_t e = allocate(ptr, bytes);
  if (e != cudaErrorMemoryAllocation || state().immediate) return e;
  // The stream-ordered pool reuses what this stream's queued frees give back.
  drain(resolve_locked(stream));
  last_error = cudaSuccess;
  return allocate(ptr, bytes);
}

cudaError_t cudaFreeAsync(void* ptr, cudaStream_t stream) {
  log_call(__func__);
  EMU_ENTRY();
  if (const cudaError_t e = check_not_capturing(stream, "cudaFreeAsync"); e != cudaSuccess) {
    return e;
  }
  if (ptr == nullptr) return cudaSuccess;
  {
    State& s = state();
    std::lock_guard lock(s.mutex);
    if (s.allocations.count(reinterpret_cast<std::uintptr_t>(ptr)) == 0) {
      return fail(cudaErrorInvalidValue);
    }
  }
  // Freed when the stream reaches it: work queued before may still use the memory.
  return enqueue(
      stream,
      [ptr] {
        if (release(ptr) != cudaSuccess) {
          set_fault(cudaErrorIllegalAddress, "cudaFreeAsync: the memory was freed twice");
        }
      },
      false);
}

// Page-locked host memory: host memory to every check here; counted against a limit that the
// emulator's tests set (set_pinned_limit) to provoke a refusal.
cudaError_t cudaMallocHost(void** ptr, std::size_t bytes) {
  log_call(__func__);
  EMU_ENTRY();
  if (ptr == nullptr) return fail(cudaErrorInvalidValue);
  *ptr = nullptr;
  if (refuse_during_capture("cudaMallocHost")) return fail(cudaErrorStreamCaptureUnsupported);
  const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + 4095) / 4096 * 4096;
  State& s = state();
  {
    std::lock_guard lock(s.mutex);
    if (s.pinned_used + rounded > s.pinned_limit) return fail(cudaErrorMemoryAllocation);
    s.pinned_used += rounded;
  }
  void* mem = std::aligned_alloc(4096, rounded);
  std::lock_guard lock(s.mutex);
  if (mem == nullptr) {
    s.pinned_used -= rounded;
    return fail(cudaErrorMemoryAllocation);
  }
  s.pinned[reinterpret_cast<std::uintptr_t>(mem)] = rounded;
  *ptr = mem;
  return cudaSuccess;
}

cudaError_t cudaFreeHost(void* ptr) {
  log_call(__func__);
  EMU_ENTRY();
  if (ptr == nullptr) return cudaSuccess;
  State& s = state();
  {
    std::lock_guard lock(s.mutex);
    const auto it = s.pinned.find(reinterpret_cast<std::uintptr_t>(ptr));
    if (it == s.pinned.end()) return fail(cudaErrorInvalidValue);
    s.pinned_used -= it->second;
    s.pinned.erase(it);
  }
  std::free(ptr);
  return cudaSuccess;
}

namespace cuda_emu {
void set_pinned_limit(std::size_t bytes) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.pinned_limit = bytes;
}
}  // namespace cuda_emu

cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
  log_call(__func__);
  EMU_ENTRY();
  if (refuse_during_capture("cudaMemcpy")) return fail(cudaErrorStreamCaptureUnsupported);
  if (const cudaError_t e = check_copy(dst, src, bytes, kind); e != cudaSuccess) return e;
  drain_device(this_device, Streams::legacy);  // on the legacy default stream
  copy_bytes(dst, src, bytes);
  return finish();
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  log_call(__func__);
  EMU_ENTRY();
  if (const cudaError_t e = check_copy(dst, src, bytes, kind); e != cudaSuccess) return e;
  // Pageable host memory is staged by the driver, which waits for the stream and copies before
  // the call returns (so the caller may reuse its buffer at once); page-locked memory, and
  // device-to-device copies, run when the stream reaches them.
  const bool pageable = (!is_device_pointer(src) && !is_pinned(src)) ||
                        (!is_device_pointer(dst) && !is_pinned(dst));
  if (bytes != 0 && pageable && !state().immediate) {
    CUstream_st* st = resolve_locked(stream);
    if (st == nullptr) return fail(cudaErrorInvalidResourceHandle);
    bool capturing = false;
    {
      State& s = state();
      std::lock_guard lock(s.mutex);
      capturing = st->capturing;
    }
    if (!capturing) {
      drain(st);
      copy_bytes(dst, src, bytes);
      return finish();
    }
  }
  return enqueue(stream, [=] { copy_bytes(dst, src, bytes); }, false);
}

cudaError_t cudaMemset(void* ptr, int value, std::size_t bytes) {
  log_call(__func__);
  EMU_ENTRY();
  if (refuse_during_capture("cudaMemset")) return fail(cudaErrorStreamCaptureUnsupported);
  if (bytes == 0) return cudaSuccess;
  if (!is_device_range(ptr, bytes)) return fail(cudaErrorInvalidValue);
  drain_device(this_device, Streams::legacy);
  std::memset(ptr, value, bytes);
  return finish();
}

cudaError_t cudaMemsetAsync(void* ptr, int value, std::size_t bytes, cudaStream_t stream) {
  log_call(__func__);
  EMU_ENTRY();
  if (bytes == 0) return cudaSuccess;
  if (!is_device_range(ptr, bytes)) return fail(cudaErrorInvalidValue);
  return enqueue(stream, [=] { std::memset(ptr, value, bytes); }, false);
}

// ---- streams and captures -----------------------------------------------------------------

cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  return cudaStreamCreateWithFlags(stream, cudaStreamDefault);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags) {
  log_call(__func__);
  EMU_ENTRY();
  if (flags > cudaStreamNonBlocking) return fail(cudaErrorInvalidValue);
  const cudaError_t e = make_handle(stream, &State::streams);
  if (e == cudaSuccess) (*stream)->flags = flags;
  return e;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  log_call(__func__);
  {
    State& s = state();
    std::lock_guard lock(s.mutex);
    if (stream == nullptr || s.streams.count(stream) == 0) {
      return fail(cudaErrorInvalidResourceHandle);
    }
  }
  drain(stream);  // its queued work still runs, as on a device
  return drop_handle(stream, &State::streams);
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  log_call(__func__);
  EMU_ENTRY();
  CUstream_st* st = nullptr;
  {
    State& s = state();
    std::lock_guard lock(s.mutex);
    st = resolve(s, stream);
    if (st == nullptr) return fail(cudaErrorInvalidResourceHandle);
  }
  if (refuse_during_capture("cudaStreamSynchronize")) {
    return fail(cudaErrorStreamCaptureUnsupported);
  }
  drain(st);
  return finish();
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
  log_call(__func__);
  EMU_ENTRY();
  State& s = state();
  std::lock_guard lock(s.mutex);
  CUstream_st* st = resolve(s, stream);
  if (st == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if (st->is_default) return fail(cudaErrorStreamCaptureUnsupported);
  if (st->capturing) return fail(cudaErrorIllegalState);
  st->capturing = true;
  st->invalidated = false;
  st->mode = mode;
  st->capture_thread = std::this_thread::get_id();
  st->nodes.clear();
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  log_call(__func__);
  if (graph == nullptr) return fail(cudaErrorInvalidValue);
  *graph = nullptr;
  State& s = state();
  std::lock_guard lock(s.mutex);
  CUstream_st* st = resolve(s, stream);
  if (st == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if (!st->capturing) return fail(cudaErrorIllegalState);
  if (st->mode != cudaStreamCaptureModeRelaxed &&
      st->capture_thread != std::this_thread::get_id()) {
    return fail(cudaErrorStreamCaptureWrongThread);
  }
  st->capturing = false;
  std::vector<std::function<void()>> nodes;
  nodes.swap(st->nodes);
  if (st->invalidated) return fail(cudaErrorStreamCaptureInvalidated);
  auto* g = new CUgraph_st;
  g->nodes = std::move(nodes);
  s.graphs.insert(g);
  *graph = g;
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  log_call(__func__);
  if (status == nullptr) return fail(cudaErrorInvalidValue);
  State& s = state();
  std::lock_guard lock(s.mutex);
  CUstream_st* st = resolve(s, stream);
  if (st == nullptr) return fail(cudaErrorInvalidResourceHandle);
  *status = !st->capturing    ? cudaStreamCaptureStatusNone
            : st->invalidated ? cudaStreamCaptureStatusInvalidated
                              : cudaStreamCaptureStatusActive;
  return cudaSuccess;
}

// ---- events -------------------------------------------------------------------------------

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  log_call(__func__);
  EMU_ENTRY();
  const cudaError_t e = make_handle(event, &State::events);
  if (e == cudaSuccess) {
    State& s = state();
    std::lock_guard lock(s.mutex);
    (*event)->id = ++s.next_event_id;
  }
  return e;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  log_call(__func__);
  return drop_handle(event, &State::events);
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  log_call(__func__);
  EMU_ENTRY();
  State& s = state();
  std::uint64_t id = 0, ticket = 0;
  {
    std::lock_guard lock(s.mutex);
    if (s.events.count(event) == 0) return fail(cudaErrorInvalidResourceHandle);
    CUstream_st* st = resolve(s, stream);
    if (st == nullptr || st->device != event->device) return fail(cudaErrorInvalidResourceHandle);
    id = event->id;
    ticket = ++event->ticket;
    event->recorded = false;  // until this record runs
    event->stream = nullptr;
  }
  const cudaError_t e = enqueue(
      stream,
      [event, id, ticket] {
        // Only the latest record of a live event counts (a destroyed one's handle may be reused).
        State& st = state();
        std::lock_guard lock(st.mutex);
        if (st.events.count(event) == 0 || event->id != id || event->ticket != ticket) return;
        event->recorded = true;
        event->when = std::chrono::steady_clock::now();
      },
      false);
  if (e != cudaSuccess) return e;
  std::lock_guard lock(s.mutex);
  CUstream_st* st = resolve(s, stream);
  if (event->ticket == ticket && !event->recorded && st != nullptr && !st->capturing) {
    event->stream = st;
    event->target = st->enqueued;
  }
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  log_call(__func__);
  EMU_ENTRY();
  if (refuse_during_capture("cudaEventSynchronize")) {
    return fail(cudaErrorStreamCaptureUnsupported);
  }
  CUstream_st* st = nullptr;
  std::uint64_t target = 0;
  {
    State& s = state();
    std::lock_guard lock(s.mutex);
    if (s.events.count(event) == 0) return fail(cudaErrorInvalidResourceHandle);
    if (!event->recorded) st = event->stream, target = event->target;
  }
  if (st != nullptr) run_until(st, target);  // that stream's work up to the record
  return finish();
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  log_call(__func__);
  EMU_ENTRY();
  if (ms == nullptr) return fail(cudaErrorInvalidValue);
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (s.events.count(start) == 0 || s.events.count(end) == 0) {
    return fail(cudaErrorInvalidResourceHandle);
  }
  if (start->ticket == 0 || end->ticket == 0) return fail(cudaErrorInvalidResourceHandle);
  if (!start->recorded || !end->recorded) return fail(cudaErrorNotReady);  // not waited for
  *ms = std::chrono::duration<float, std::milli>(end->when - start->when).count();
  return cudaSuccess;
}

// ---- graphs -------------------------------------------------------------------------------

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  log_call(__func__);
  EMU_ENTRY();
  if (exec == nullptr) return fail(cudaErrorInvalidValue);
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (s.graphs.count(graph) == 0) return fail(cudaErrorInvalidResourceHandle);
  auto* e = new CUgraphExec_st;
  e->nodes = std::make_shared<const std::vector<std::function<void()>>>(graph->nodes);
  s.execs.insert(e);
  *exec = e;
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  log_call(__func__);
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (s.graphs.erase(graph) == 0) return fail(cudaErrorInvalidResourceHandle);
  delete graph;
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  log_call(__func__);
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (s.execs.erase(exec) == 0) return fail(cudaErrorInvalidResourceHandle);
  delete exec;
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  log_call(__func__);
  EMU_ENTRY();
  std::shared_ptr<const std::vector<std::function<void()>>> nodes;
  {
    State& s = state();
    std::lock_guard lock(s.mutex);
    if (s.execs.count(exec) == 0) return fail(cudaErrorInvalidResourceHandle);
    nodes = exec->nodes;
  }
  return enqueue(
      stream,
      [nodes] {
        for (const auto& node : *nodes) {
          if (check_fault() != cudaSuccess) return;
          node();
        }
      },
      true);
}

// ---- kernels ------------------------------------------------------------------------------

cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attributes, const void* func) {
  log_call(__func__);
  EMU_ENTRY();
  if (attributes == nullptr || func == nullptr) return fail(cudaErrorInvalidDeviceFunction);
  State& s = state();
  std::lock_guard lock(s.mutex);
  *attributes = cudaFuncAttributes{};
  attributes->maxThreadsPerBlock = max_threads_per_block;
  // Compiled for the emulated device's compute capability (9.0), as PTX and as code.
  attributes->ptxVersion = 90;
  attributes->binaryVersion = 90;
  attributes->maxDynamicSharedSizeBytes = dynamic_shared_limit(s, func);
  return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value) {
  log_call(__func__);
  EMU_ENTRY();
  if (func == nullptr) return fail(cudaErrorInvalidDeviceFunction);
  if (attr == cudaFuncAttributePreferredSharedMemoryCarveout) {  // a hint: -1 or a percentage
    return value < -1 || value > 100 ? fail(cudaErrorInvalidValue) : cudaSuccess;
  }
  if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize || value < 0 ||
      value > optin_shared_per_block) {
    return fail(cudaErrorInvalidValue);
  }
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.max_dynamic_shared[func] = value;
  return cudaSuccess;
}

namespace {

// Blocks of `block_size` threads and `dynamic_shared_bytes` that one multiprocessor holds at once
// (each block also takes 1 KiB of shared memory for the system, as on compute capability 9.0).
int blocks_per_multiprocessor(int block_size, std::size_t dynamic_shared_bytes) {
  const int by_threads = max_threads_per_multiprocessor / block_size;
  const int by_shared =
      static_cast<int>(shared_per_multiprocessor / (dynamic_shared_bytes + 1024));
  return std::min({by_threads, by_shared, max_blocks_per_multiprocessor});
}

}  // namespace

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, const void* func,
                                                          int block_size,
                                                          std::size_t dynamic_shared_bytes) {
  log_call(__func__);
  EMU_ENTRY();
  if (blocks == nullptr || func == nullptr || block_size <= 0 ||
      block_size > max_threads_per_block) {
    return fail(cudaErrorInvalidValue);
  }
  *blocks = blocks_per_multiprocessor(block_size, dynamic_shared_bytes);
  return cudaSuccess;
}

cudaError_t cudaOccupancyMaxActiveClusters(int* clusters, const void* func,
                                           const cudaLaunchConfig_t* config) {
  log_call(__func__);
  EMU_ENTRY();
  if (clusters == nullptr || func == nullptr || config == nullptr ||
      (config->numAttrs != 0 && config->attrs == nullptr)) {
    return fail(cudaErrorInvalidValue);
  }
  const cudaLaunchAttribute* cluster = nullptr;
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    if (config->attrs[i].id != cudaLaunchAttributeClusterDimension) {
      std::fprintf(stderr,
                   "cuda emulator: cudaOccupancyMaxActiveClusters: launch attribute %d is not "
                   "emulated (only cudaLaunchAttributeClusterDimension)\n",
                   static_cast<int>(config->attrs[i].id));
      return fail(cudaErrorInvalidValue);
    }
    cluster = &config->attrs[i];
  }
  // A kernel without a compile-time cluster size (the emulator knows none) needs the attribute.
  if (cluster == nullptr) {
    std::fprintf(stderr, "cuda emulator: cudaOccupancyMaxActiveClusters: no "
                         "cudaLaunchAttributeClusterDimension in the configuration\n");
    return fail(cudaErrorInvalidClusterSize);
  }
  const auto& dim = cluster->val.clusterDim;
  if (dim.x == 0 || dim.x > max_cluster_blocks || dim.y != 1 || dim.z != 1) {
    std::fprintf(stderr,
                 "cuda emulator: cudaOccupancyMaxActiveClusters: cluster (%u, %u, %u) is not "
                 "1 to %u blocks along x\n",
                 dim.x, dim.y, dim.z, max_cluster_blocks);
    return fail(cudaErrorInvalidClusterSize);
  }
  const dim3 b = config->blockDim;
  const unsigned long long threads = 1ull * b.x * b.y * b.z;
  if (threads == 0) return fail(cudaErrorInvalidValue);
  int shared_limit = 0;
  {
    State& s = state();
    std::lock_guard lock(s.mutex);
    shared_limit = dynamic_shared_limit(s, func);
  }
  if (threads > max_threads_per_block ||
      config->dynamicSmemBytes > static_cast<std::size_t>(shared_limit)) {
    *clusters = 0;  // one block cannot run, so no cluster can
    return cudaSuccess;
  }
  // An emulator approximation: the co-resident blocks of the emulated multiprocessors, in
  // clusters of dim.x, but at least 1, since the emulator runs any portable cluster size (8 fits
  // one GPC of a device of compute capability 9.0, while the emulated device has 4
  // multiprocessors). The emulator itself runs clusters as CPU work, so the count only tells a
  // host program that sizes a persistent grid by it something of the device's kind.
  const int per_multiprocessor =
      blocks_per_multiprocessor(static_cast<int>(threads), config->dynamicSmemBytes);
  const int resident = multiprocessors * per_multiprocessor;
  *clusters = std::max(1, resident / static_cast<int>(dim.x));
  return cudaSuccess;
}

namespace cuda_emu {

void launch(const LaunchConfig& config, std::function<void()> thread) {
  log_call(config.name, "launch ");
  if (const cudaError_t f = check_fault(); f != cudaSuccess) {
    fail(f);
    return;
  }
  const dim3 g = config.grid, b = config.block;
  const unsigned long long threads = 1ull * b.x * b.y * b.z;
  if (g.x == 0 || g.y == 0 || g.z == 0 || g.x > 0x7fffffffu || g.y > 65535 || g.z > 65535 ||
      threads == 0 || threads > max_threads_per_block || b.x > 1024 || b.y > 1024 || b.z > 64) {
    std::fprintf(stderr, "cuda emulator: %s: grid (%u, %u, %u) x block (%u, %u, %u) is invalid\n",
                 config.name, g.x, g.y, g.z, b.x, b.y, b.z);
    fail(cudaErrorInvalidConfiguration);
    return;
  }
  int shared_limit = 0;
  {
    State& s = state();
    std::lock_guard lock(s.mutex);
    shared_limit = dynamic_shared_limit(s, config.kernel);
  }
  if (config.shared_bytes > static_cast<std::size_t>(shared_limit)) {
    std::fprintf(stderr,
                 "cuda emulator: %s: %zu bytes of dynamic shared memory above the kernel's "
                 "limit of %d (cudaFuncAttributeMaxDynamicSharedMemorySize)\n",
                 config.name, config.shared_bytes, shared_limit);
    fail(cudaErrorInvalidValue);
    return;
  }
  // Clusters along x only (the emulator's; CUDA's may also extend along y and z).
  if (config.cluster == 0 || config.cluster > max_cluster_blocks || g.x % config.cluster != 0) {
    std::fprintf(stderr,
                 "cuda emulator: %s: a cluster of %u blocks along x with grid (%u, %u, %u) is "
                 "invalid (1 to %u blocks, dividing grid.x)\n",
                 config.name, config.cluster, g.x, g.y, g.z, max_cluster_blocks);
    fail(cudaErrorInvalidValue);
    return;
  }
  const cudaError_t e = enqueue(
      config.stream,
      [config, thread = std::move(thread)] {
        if (check_fault() != cudaSuccess) return;
        std::string message;
        if (!run_grid(config, thread, message)) set_fault(cudaErrorLaunchFailure, message);
      },
      true);
  if (e != cudaSuccess) {
    std::fprintf(stderr, "cuda emulator: %s: launched on a stream of another device\n",
                 config.name);
  }
}

void start_call_log() {
  std::lock_guard lock(call_log_mutex);
  call_log.clear();
  call_log_on = true;
}

std::vector<std::string> stop_call_log() {
  std::lock_guard lock(call_log_mutex);
  call_log_on = false;
  return std::move(call_log);
}

}  // namespace cuda_emu
