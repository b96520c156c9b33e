// The CUDA emulator's own checks (gpu/emu, docs/gpu.md 2.1): what it must reject as a device
// would, and the transforms and graphs it must get right, so that tests_gpu_emulated passing
// means something.
#include <catch2/catch.hpp>
#include <cuda_runtime.h>
#include <cufft.h>
#include <mma.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <vector>

#include "emulator.hpp"

namespace {

__global__ void fill_kernel(std::uint32_t* out, std::uint32_t value) {
  out[blockIdx.x * blockDim.x + threadIdx.x] = value;
}

// Thread t writes t, then after the barrier reads its neighbour's.
__global__ void neighbour_kernel(std::uint32_t* out) {
  __shared__ std::uint32_t stage[64];
  stage[threadIdx.x] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = stage[(threadIdx.x + 1) % blockDim.x];
}

// The same without the barrier: a race (thread t may read stage[t + 1] before it is written).
// `salt` makes each launch's values its own, so a stale value from an earlier launch differs.
__global__ void racy_neighbour_kernel(std::uint32_t* out, std::uint32_t salt) {
  __shared__ std::uint32_t stage[64];
  stage[threadIdx.x] = threadIdx.x + salt;
  out[threadIdx.x] = stage[(threadIdx.x + 1) % blockDim.x];
}

// Each block writes its index; block b > 0 then reads block b - 1's output: an ordering
// between blocks that CUDA never promises.
__global__ void racy_blocks_kernel(std::uint32_t* out, std::uint32_t salt) {
  if (threadIdx.x != 0) return;
  out[blockIdx.x] = blockIdx.x + salt;
  if (blockIdx.x > 0) out[gridDim.x + blockIdx.x] = out[blockIdx.x - 1];
}

__global__ void divergent_kernel() {
  if (threadIdx.x == 0) return;
  __syncthreads();
}

__global__ void misaligned_wmma_kernel(const unsigned char* tile) {
  nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, unsigned char,
                         nvcuda::wmma::row_major> a;
  nvcuda::wmma::load_matrix_sync(a, tile + 1, 16);
}

// Expects the last launch to have faulted, then forgets the fault for the next case.
void expect_fault() {
  CHECK(cudaDeviceSynchronize() == cudaErrorLaunchFailure);  // raised when the kernel runs
  CHECK(cudaGetLastError() == cudaErrorLaunchFailure);
  CHECK(cudaMalloc(nullptr, 4) == cudaErrorLaunchFailure);  // sticky, as a broken context
  cuda_emu::clear_fault();
  cudaGetLastError();
}

}  // namespace

TEST_CASE("emulator: copies and memsets stay inside live device allocations", "[emulator]") {
  void* d = nullptr;
  REQUIRE(cudaMalloc(&d, 64) == cudaSuccess);
  std::vector<unsigned char> host(128, 1);
  CHECK(cudaMemcpy(d, host.data(), 64, cudaMemcpyHostToDevice) == cudaSuccess);
  CHECK(cudaMemcpy(d, host.data(), 65, cudaMemcpyHostToDevice) == cudaErrorInvalidValue);
  CHECK(cudaMemcpy(host.data(), d, 64, cudaMemcpyHostToDevice) == cudaErrorInvalidValue);
  CHECK(cudaMemsetAsync(static_cast<char*>(d) + 60, 0, 8, nullptr) == cudaErrorInvalidValue);
  CHECK(cudaFree(d) == cudaSuccess);
  CHECK(cudaFree(d) == cudaErrorInvalidValue);  // twice
  CHECK(cudaMemcpy(d, host.data(), 4, cudaMemcpyHostToDevice) == cudaErrorInvalidValue);
  cudaGetLastError();
}

TEST_CASE("emulator: launches run every thread, barriers order them, bad ones are refused",
          "[emulator]") {
  std::uint32_t* d = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&d), 64 * 4) == cudaSuccess);
  cuda_emu::launcher(fill_kernel, "fill_kernel", dim3(4), dim3(16), 0, nullptr)(d, 7u);
  std::vector<std::uint32_t> h(64);
  REQUIRE(cudaMemcpy(h.data(), d, 256, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(h == std::vector<std::uint32_t>(64, 7));
  cuda_emu::launcher(neighbour_kernel, "neighbour_kernel", dim3(1), dim3(64), 0, nullptr)(d);
  REQUIRE(cudaMemcpy(h.data(), d, 256, cudaMemcpyDeviceToHost) == cudaSuccess);
  for (std::uint32_t t = 0; t < 64; ++t) CHECK(h[t] == (t + 1) % 64);
  cuda_emu::launcher(fill_kernel, "fill_kernel", dim3(1), dim3(2048), 0, nullptr)(d, 1u);
  CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
  cuda_emu::launcher(fill_kernel, "fill_kernel", dim3(1), dim3(16), 64 * 1024, nullptr)(d, 1u);
  CHECK(cudaGetLastError() == cudaErrorInvalidValue);  // above 48 KiB without the opt-in
  CHECK(cudaSetDevice(1) == cudaSuccess);
  cudaStream_t other = nullptr;
  REQUIRE(cudaStreamCreate(&other) == cudaSuccess);
  CHECK(cudaSetDevice(0) == cudaSuccess);
  cuda_emu::launcher(fill_kernel, "fill_kernel", dim3(1), dim3(16), 0, other)(d, 1u);
  CHECK(cudaGetLastError() == cudaErrorInvalidResourceHandle);  // a stream of device 1
  CHECK(cudaStreamDestroy(other) == cudaSuccess);
  CHECK(cudaFree(d) == cudaSuccess);
}

TEST_CASE("emulator: a barrier in divergent code and a misaligned wmma load are faults",
          "[emulator]") {
  cuda_emu::launcher(divergent_kernel, "divergent_kernel", dim3(1), dim3(32), 0, nullptr)();
  expect_fault();
  void* d = nullptr;
  REQUIRE(cudaMalloc(&d, 512) == cudaSuccess);
  cuda_emu::launcher(misaligned_wmma_kernel, "misaligned_wmma_kernel", dim3(1), dim3(32), 0,
                     nullptr)(static_cast<const unsigned char*>(d));
  expect_fault();
  CHECK(cudaFree(d) == cudaSuccess);
}

TEST_CASE("emulator: captures record and replay; unsafe calls invalidate them", "[emulator]") {
  cudaStream_t s = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  std::uint32_t* d = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&d), 64) == cudaSuccess);
  REQUIRE(cudaMemset(d, 0, 64) == cudaSuccess);
  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
  cuda_emu::launcher(fill_kernel, "fill_kernel", dim3(1), dim3(16), 0, s)(d, 9u);
  std::uint32_t first = 1;
  REQUIRE(cudaMemcpy(&first, d, 4, cudaMemcpyDeviceToHost) == cudaErrorStreamCaptureUnsupported);
  cudaGraph_t g = nullptr;
  CHECK(cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureInvalidated);
  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
  cuda_emu::launcher(fill_kernel, "fill_kernel", dim3(1), dim3(16), 0, s)(d, 9u);
  REQUIRE(cudaStreamEndCapture(s, &g) == cudaSuccess);
  REQUIRE(cudaMemcpy(&first, d, 4, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(first == 0);  // recorded, not run
  cudaGraphExec_t e = nullptr;
  REQUIRE(cudaGraphInstantiate(&e, g, 0) == cudaSuccess);
  REQUIRE(cudaGraphLaunch(e, s) == cudaSuccess);
  REQUIRE(cudaMemcpy(&first, d, 4, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(first == 0);  // queued on a non-blocking stream, which cudaMemcpy does not wait for
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  REQUIRE(cudaMemcpy(&first, d, 4, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(first == 9);
  CHECK(cudaGraphExecDestroy(e) == cudaSuccess);
  CHECK(cudaGraphDestroy(g) == cudaSuccess);
  CHECK(cudaFree(d) == cudaSuccess);
  CHECK(cudaStreamDestroy(s) == cudaSuccess);
  cudaGetLastError();
}

TEST_CASE("emulator: cuFFT transforms as cuFFT defines them and wants its work area",
          "[emulator]") {
  const int n = 16, batch = 3;
  cufftHandle plan = 0;
  REQUIRE(cufftCreate(&plan) == CUFFT_SUCCESS);
  REQUIRE(cufftSetAutoAllocation(plan, 0) == CUFFT_SUCCESS);
  std::size_t work = 0;
  int size = n;
  REQUIRE(cufftMakePlanMany(plan, 1, &size, nullptr, 1, n, nullptr, 1, n, CUFFT_Z2Z, batch,
                            &work) == CUFFT_SUCCESS);
  CHECK(cufftSetAutoAllocation(plan, 1) == CUFFT_INVALID_VALUE);  // too late
  cufftDoubleComplex* d = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&d), n * batch * sizeof *d) == cudaSuccess);
  std::vector<cufftDoubleComplex> x(n * batch);
  for (int i = 0; i < n * batch; ++i) x[i] = {std::sin(i * 0.7), std::cos(i * 1.3)};
  REQUIRE(cudaMemcpy(d, x.data(), x.size() * sizeof *d, cudaMemcpyHostToDevice) == cudaSuccess);
  CHECK(cufftExecZ2Z(plan, d, d, CUFFT_FORWARD) == CUFFT_EXEC_FAILED);  // no work area
  void* area = nullptr;
  REQUIRE(cudaMalloc(&area, work) == cudaSuccess);
  REQUIRE(cufftSetWorkArea(plan, area) == CUFFT_SUCCESS);
  REQUIRE(cufftExecZ2Z(plan, d, d, CUFFT_FORWARD) == CUFFT_SUCCESS);
  std::vector<cufftDoubleComplex> y(x.size());
  REQUIRE(cudaMemcpy(y.data(), d, y.size() * sizeof *d, cudaMemcpyDeviceToHost) == cudaSuccess);
  for (int b = 0; b < batch; ++b) {
    for (int k = 0; k < n; ++k) {
      std::complex<double> want = 0;
      for (int j = 0; j < n; ++j) {
        want += std::complex<double>(x[b * n + j].x, x[b * n + j].y) *
                std::polar(1.0, -2 * M_PI * j * k / n);
      }
      CHECK(std::abs(std::complex<double>(y[b * n + k].x, y[b * n + k].y) - want) < 1e-12);
    }
  }
  CHECK(cufftExecZ2Z(plan, d + 1, d + 1, CUFFT_INVERSE) == CUFFT_INVALID_VALUE);  // past the end
  CHECK(cufftDestroy(plan) == CUFFT_SUCCESS);
  CHECK(cudaFree(area) == cudaSuccess);
  CHECK(cudaFree(d) == cudaSuccess);
}

TEST_CASE("emulator: the forward and reverse thread orders expose a missing barrier",
          "[emulator]") {
  std::uint32_t* d = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&d), 64 * 4) == cudaSuccess);
  std::vector<std::uint32_t> h(64);
  const auto right = [](const std::vector<std::uint32_t>& v, std::uint32_t salt) {
    std::size_t n = 0;
    for (std::uint32_t t = 0; t < 64; ++t) n += v[t] == (t + 1) % 64 + salt;
    return n;
  };
  std::uint32_t salt = 1000;
  for (const char* order : {"forward", "reverse", "shuffle"}) {
    INFO("order " << order);
    cuda_emu::set_thread_order(order);
    // With the barrier: right in every order.
    cuda_emu::launcher(neighbour_kernel, "neighbour_kernel", dim3(1), dim3(64), 0, nullptr)(d);
    REQUIRE(cudaMemcpy(h.data(), d, 256, cudaMemcpyDeviceToHost) == cudaSuccess);
    for (std::uint32_t t = 0; t < 64; ++t) CHECK(h[t] == (t + 1) % 64);
    // Without it: forward, 63 threads read before their neighbour wrote; reverse, one does.
    salt += 1000;
    cuda_emu::launcher(racy_neighbour_kernel, "racy_neighbour_kernel", dim3(1), dim3(64), 0,
                       nullptr)(d, salt);
    REQUIRE(cudaGetLastError() == cudaSuccess);
    REQUIRE(cudaMemcpy(h.data(), d, 256, cudaMemcpyDeviceToHost) == cudaSuccess);
    const std::size_t correct = right(h, salt);
    if (std::string(order) == "forward") CHECK(correct == 1);
    if (std::string(order) == "reverse") CHECK(correct == 63);
    CHECK(correct < 64);  // shuffled: some thread runs before its neighbour
  }
  // Blocks from the last: block b reads block b - 1's output, which (taken later) is not there
  // yet, but for the blocks another worker thread may run at the same moment.
  cuda_emu::set_thread_order("reverse");
  constexpr std::uint32_t nb = 256;
  std::uint32_t* blocks = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&blocks), 2 * nb * 4) == cudaSuccess);
  REQUIRE(cudaMemset(blocks, 0, 2 * nb * 4) == cudaSuccess);
  cuda_emu::launcher(racy_blocks_kernel, "racy_blocks_kernel", dim3(nb), dim3(32), 0, nullptr)(
      blocks, 7u);
  std::vector<std::uint32_t> hb(2 * nb);
  REQUIRE(cudaMemcpy(hb.data(), blocks, 2 * nb * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
  std::size_t stale = 0;
  for (std::uint32_t b = 1; b < nb; ++b) stale += hb[nb + b] != b - 1 + 7;
  CHECK(stale > 0);
  CHECK_THROWS_WITH(cuda_emu::set_thread_order("backwards"),
                    Catch::Contains("'backwards' is not forward, reverse or shuffle"));
  cuda_emu::set_thread_order("forward");
  CHECK(cudaFree(blocks) == cudaSuccess);
  CHECK(cudaFree(d) == cudaSuccess);
}

TEST_CASE("emulator: streams run their work when the host waits for it, as on a device",
          "[emulator]") {
  cudaStream_t s = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  std::uint32_t* d = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&d), 64 * 4) == cudaSuccess);
  REQUIRE(cudaMemset(d, 0, 64 * 4) == cudaSuccess);
  std::uint32_t* pinned = nullptr;
  REQUIRE(cudaMallocHost(reinterpret_cast<void**>(&pinned), 64 * 4) == cudaSuccess);
  std::fill(pinned, pinned + 64, 0xffffffffu);
  const auto fill = [&](std::uint32_t* out, std::uint32_t value) {
    cuda_emu::launcher(fill_kernel, "fill_kernel", dim3(4), dim3(16), 0, s)(out, value);
    REQUIRE(cudaGetLastError() == cudaSuccess);
  };

  // A kernel, a copy into page-locked memory and two records: queued, nothing run yet.
  cudaEvent_t a = nullptr, b = nullptr;
  REQUIRE(cudaEventCreate(&a) == cudaSuccess);
  REQUIRE(cudaEventCreate(&b) == cudaSuccess);
  fill(d, 5);
  REQUIRE(cudaMemcpyAsync(pinned, d, 64 * 4, cudaMemcpyDeviceToHost, s) == cudaSuccess);
  REQUIRE(cudaEventRecord(a, s) == cudaSuccess);
  fill(d, 6);
  REQUIRE(cudaEventRecord(b, s) == cudaSuccess);
  CHECK(pinned[0] == 0xffffffffu);
  CHECK(d[0] == 0);  // (the emulator's device memory is host memory)
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, a, b) == cudaErrorNotReady);
  cudaGetLastError();
  // Waiting for an event runs the stream up to its record, no further.
  REQUIRE(cudaEventSynchronize(a) == cudaSuccess);
  CHECK(pinned[0] == 5);
  CHECK(pinned[63] == 5);
  CHECK(d[0] == 5);
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  CHECK(d[0] == 6);
  CHECK(cudaEventElapsedTime(&ms, a, b) == cudaSuccess);
  CHECK(ms >= 0);

  // Pageable host memory: the copy waits for the stream and is done when the call returns.
  fill(d, 8);
  std::vector<std::uint32_t> h(64, 0);
  REQUIRE(cudaMemcpyAsync(h.data(), d, 64 * 4, cudaMemcpyDeviceToHost, s) == cudaSuccess);
  CHECK(h[0] == 8);
  std::vector<std::uint32_t> src(64, 3);
  REQUIRE(cudaMemcpyAsync(d, src.data(), 64 * 4, cudaMemcpyHostToDevice, s) == cudaSuccess);
  src.assign(64, 4);  // the caller may reuse its buffer at once
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  CHECK(d[0] == 3);
  // Page-locked memory is read when the copy runs: a write before the wait shows.
  std::fill(pinned, pinned + 64, 10u);
  REQUIRE(cudaMemcpyAsync(d, pinned, 64 * 4, cudaMemcpyHostToDevice, s) == cudaSuccess);
  pinned[0] = 11;
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  CHECK(d[0] == 11);
  CHECK(d[1] == 10);

  // A stream-ordered free waits for the work queued before it.
  void* scratch = nullptr;
  REQUIRE(cudaMallocAsync(&scratch, 64 * 4, s) == cudaSuccess);
  fill(static_cast<std::uint32_t*>(scratch), 1);
  REQUIRE(cudaFreeAsync(scratch, s) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);  // the kernel ran, then the free
  CHECK(cudaFreeAsync(scratch, s) == cudaErrorInvalidValue);  // gone
  cudaGetLastError();

  // Page-locked memory: freed once, refused above the limit.
  CHECK(cudaFreeHost(pinned) == cudaSuccess);
  CHECK(cudaFreeHost(pinned) == cudaErrorInvalidValue);
  cudaGetLastError();
  cuda_emu::set_pinned_limit(4096);
  void* big = nullptr;
  CHECK(cudaMallocHost(&big, 8192) == cudaErrorMemoryAllocation);
  CHECK(big == nullptr);
  cudaGetLastError();
  cuda_emu::set_pinned_limit(std::size_t{1} << 40);

  CHECK(cudaEventDestroy(a) == cudaSuccess);
  CHECK(cudaEventDestroy(b) == cudaSuccess);
  CHECK(cudaStreamDestroy(s) == cudaSuccess);
  CHECK(cudaFree(d) == cudaSuccess);
}
