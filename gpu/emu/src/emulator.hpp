// The CUDA emulator's internals shared by its runtime (runtime.cpp), its thread scheduler
// (threads.cpp) and its cuFFT (cufft.cpp). Not part of any API.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <string>

namespace cuda_emu {

// The sticky error of a device fault: every later call returns it (as a CUDA context that
// took a fault is unusable); the message names the kernel, the block and the thread.
void set_fault(cudaError_t error, const std::string& message);
cudaError_t fault();
// The sticky fault's message (empty when there is none).
std::string fault_message();
// Forgets the sticky fault (the emulator's own tests, which provoke faults on purpose).
void clear_fault();

// Records `error` as the calling thread's last error and returns it.
cudaError_t fail(cudaError_t error);

int current_device();

// True when [p, p + bytes) lies inside one live device allocation.
bool is_device_range(const void* p, std::size_t bytes);
bool is_device_pointer(const void* p);
// True when p lies in page-locked host memory (cudaMallocHost).
bool is_pinned(const void* p);

// Device memory of the current device, counted against its capacity.
cudaError_t allocate(void** p, std::size_t bytes);
cudaError_t release(void* p);

// Checks `stream` (nullptr: the current device's default stream) and queues `work` on it (it
// runs when the host waits for the stream; at once with TORUSGATE_CUDA_EMU_SYNC=1), or
// appends it to the stream's capture. `needs_current_device`: the stream must belong to the
// current device (kernel launches, event records).
cudaError_t enqueue(cudaStream_t stream, std::function<void()> work, bool needs_current_device);

// For a call that is not allowed while this thread has a stream in a ThreadLocal or Global
// capture: true (and every such capture invalidated) when it must fail.
bool refuse_during_capture(const char* call);

// The most page-locked host memory cudaMallocHost hands out (default 1 TiB); for the tests
// of a refused allocation.
void set_pinned_limit(std::size_t bytes);

// The order of the threads of a block between two barriers, and of the blocks of a grid:
// "forward", "reverse" or "shuffle" (TORUSGATE_CUDA_EMU_ORDER; threads.cpp); for the
// emulator's own tests. Throws std::invalid_argument for another name.
void set_thread_order(const std::string& name);
// The order now in force, by the same names (so that a test can restore it).
std::string thread_order_name();

// Runs every thread of the grid; false after a fault (then `message` says which).
bool run_grid(const LaunchConfig& config, const std::function<void()>& thread,
              std::string& message);

}  // namespace cuda_emu
