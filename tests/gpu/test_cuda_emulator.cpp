// The CUDA emulator's own checks (gpu/emu, docs/gpu.md 2.1): what it must reject as a device
// would, and the transforms and graphs it must get right, so that tests_gpu_emulated passing
// means something.
#include <catch2/catch.hpp>
#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <cufft.h>
#include <mma.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <string>
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

namespace cg = cooperative_groups;

// Cluster kernels keep their shared memory in dynamic shared memory (cuda_runtime.h): the
// launches below give 4 bytes per thread.
std::uint32_t* shared_words() {
  return reinterpret_cast<std::uint32_t*>(cuda_emu::dynamic_shared_memory());
}

// Block r of a cluster writes salt + 1000 r + t into its shared word t; after the middle
// barrier (the cluster's when `cluster_barrier`, else only its block's __syncthreads), thread
// t copies word t of block (r + 1) % size into out, then waits at a final cluster barrier when
// `final_barrier` (which keeps every block's shared memory alive until all have read).
__global__ void cluster_neighbour_kernel(std::uint32_t* out, std::uint32_t salt,
                                         bool cluster_barrier, bool final_barrier) {
  const cg::cluster_group cluster = cg::this_cluster();
  std::uint32_t* stage = shared_words();
  const unsigned rank = cluster.block_rank();
  stage[threadIdx.x] = salt + 1000 * rank + threadIdx.x;
  if (cluster_barrier) {
    cluster.sync();
  } else {
    __syncthreads();
  }
  const std::uint32_t* theirs = cluster.map_shared_rank(stage, (rank + 1) % cluster.num_blocks());
  out[(blockIdx.y * gridDim.x + blockIdx.x) * blockDim.x + threadIdx.x] = theirs[threadIdx.x];
  if (final_barrier) cluster.sync();
}

// Thread 0 of each block writes what its cluster says of itself: 7 words per block.
__global__ void cluster_shape_kernel(std::uint32_t* out) {
  const cg::cluster_group cluster = cg::this_cluster();
  std::uint32_t* stage = shared_words();
  stage[threadIdx.x] = threadIdx.x;
  cluster.sync();
  if (threadIdx.x != 0) return;
  std::uint32_t* o = out + 7 * blockIdx.x;
  o[0] = cluster.block_rank();
  o[1] = cluster.num_blocks();
  o[2] = cluster.dim_blocks().x;
  o[3] = cluster.dim_blocks().y;
  o[4] = cluster.dim_blocks().z;
  o[5] = cluster.block_index().x;
  o[6] = cluster.map_shared_rank(stage, cluster.block_rank()) == stage;  // its own: the same
}

// Thread 0 of each block writes what is_shared says of: its own dynamic shared memory (first
// and last byte), the next rank's, the byte past its own, and `global` (device memory).
__global__ void is_shared_kernel(std::uint32_t* out, const std::uint32_t* global) {
  const cg::cluster_group cluster = cg::this_cluster();
  std::uint32_t* stage = shared_words();
  stage[threadIdx.x] = threadIdx.x;
  cluster.sync();
  if (threadIdx.x == 0) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(stage);
    std::uint32_t* o = out + 5 * blockIdx.x;
    o[0] = cuda_emu::is_shared(stage);
    o[1] = cuda_emu::is_shared(bytes + blockDim.x * 4 - 1);
    o[2] = cuda_emu::is_shared(
        cluster.map_shared_rank(stage, (cluster.block_rank() + 1) % cluster.num_blocks()));
    o[3] = cuda_emu::is_shared(bytes + blockDim.x * 4);
    o[4] = cuda_emu::is_shared(global);
  }
  cluster.sync();
}

// Thread t asks for word t of `in` in its shared word t (copy_async), then writes what it
// reads there before its wait, after it, and (after a barrier) its neighbour's word.
__global__ void copy_async_kernel(std::uint32_t* out, const std::uint32_t* in) {
  std::uint32_t* stage = shared_words();
  const unsigned t = threadIdx.x, n = blockDim.x;
  stage[t] = 7;
  cuda_emu::copy_async(stage + t, in + t, 4);
  out[3 * t] = stage[t];
  cuda_emu::wait_async_copies();
  out[3 * t + 1] = stage[t];
  __syncthreads();
  out[3 * t + 2] = stage[(t + 1) % n];
}

// copy_async into device memory (to_global) or from shared memory: both are faults.
__global__ void copy_async_misuse_kernel(std::uint32_t* global, bool to_global) {
  std::uint32_t* stage = shared_words();
  if (to_global) cuda_emu::copy_async(global, global + 1, 4);
  else cuda_emu::copy_async(stage, stage + 1, 4);
  __syncthreads();
}

// 16 bytes, what the fused cluster program sends per store_async.
struct Words4 {
  std::uint32_t w[4];
};

// The shared memory of async_gather_kernel for a cluster of `size` blocks of `threads`:
// `size` inbox slots and a result of `threads` Words4 each, then two mbarriers.
std::size_t gather_shared_bytes(unsigned size, unsigned threads) {
  return (std::size_t{size} + 1) * threads * sizeof(Words4) + 16;
}

// What a block's thread t holds after a round, from what the round's sum gave it.
Words4 next_value(const Words4& sum, unsigned rank, unsigned t) {
  Words4 v;
  for (unsigned i = 0; i < 4; ++i) v.w[i] = sum.w[i] * 3 + rank + 7 * t;
  return v;
}

// The fused cluster program's exchange in small, for `rounds` rounds: every block's thread t
// sends its value into slot `rank` of block 0's inbox (store_async on block 0's mbarrier 0;
// block 0 keeps its own in place); block 0 waits for them (unless !leader_waits), sums slot
// by slot and sends the sum into every other block's result (their mbarrier 1); the others
// wait for it (unless !others_wait); everyone's next value comes from the sum. Each
// mbarrier completes one phase a round. out: each thread's last value.
__global__ void async_gather_kernel(Words4* out, unsigned rounds, bool leader_waits,
                                    bool others_wait) {
  const cg::cluster_group cluster = cg::this_cluster();
  const unsigned rank = cluster.block_rank(), size = cluster.num_blocks();
  const unsigned t = threadIdx.x, T = blockDim.x;
  auto* inbox = reinterpret_cast<Words4*>(cuda_emu::dynamic_shared_memory());
  Words4* result = inbox + size * T;
  auto* bars = reinterpret_cast<std::uint64_t*>(result + T);
  if (t == 0) {
    cuda_emu::mbarrier_init(&bars[0], 1);
    cuda_emu::mbarrier_init(&bars[1], 1);
  }
  cluster.sync();
  Words4 v{{rank + 1, t, rank * t, 5}};
  unsigned parity = 0;
  for (unsigned round = 0; round < rounds; ++round, parity ^= 1) {
    if (rank == 0) {
      inbox[t] = v;
    } else {
      cuda_emu::store_async(cluster.map_shared_rank(inbox + rank * T + t, 0), &v, 16,
                            cluster.map_shared_rank(&bars[0], 0));
    }
    if (rank == 0) {
      if (leader_waits) {
        if (t == 0) cuda_emu::mbarrier_arrive_expect_tx(&bars[0], (size - 1) * T * 16);
        cuda_emu::mbarrier_wait_parity(&bars[0], parity);
      }
      Words4 sum{};
      for (unsigned b = 0; b < size; ++b) {
        for (unsigned i = 0; i < 4; ++i) sum.w[i] += inbox[b * T + t].w[i] * (b + 1);
      }
      result[t] = sum;
      for (unsigned b = 1; b < size; ++b) {
        cuda_emu::store_async(cluster.map_shared_rank(result + t, b), &sum, 16,
                              cluster.map_shared_rank(&bars[1], b));
      }
    } else if (others_wait) {
      if (t == 0) cuda_emu::mbarrier_arrive_expect_tx(&bars[1], T * 16);
      cuda_emu::mbarrier_wait_parity(&bars[1], parity);
    }
    v = next_value(result[t], rank, t);
  }
  out[blockIdx.x * T + t] = v;
  cluster.sync();
}

// async_gather_kernel's values, computed on the host.
std::vector<Words4> gathered(unsigned clusters, unsigned size, unsigned threads, unsigned rounds) {
  std::vector<Words4> out(std::size_t{clusters} * size * threads);
  for (unsigned t = 0; t < threads; ++t) {
    std::vector<Words4> v(size);
    for (unsigned r = 0; r < size; ++r) v[r] = Words4{{r + 1, t, r * t, 5}};
    for (unsigned round = 0; round < rounds; ++round) {
      Words4 sum{};
      for (unsigned b = 0; b < size; ++b) {
        for (unsigned i = 0; i < 4; ++i) sum.w[i] += v[b].w[i] * (b + 1);
      }
      for (unsigned r = 0; r < size; ++r) v[r] = next_value(sum, r, t);
    }
    for (unsigned c = 0; c < clusters; ++c) {
      for (unsigned r = 0; r < size; ++r) out[(std::size_t{c} * size + r) * threads + t] = v[r];
    }
  }
  return out;
}

// Thread t reads its word (salt + t, written before a cluster barrier) into out[2t], then
// sends 1000 + t into the next rank's word t (store_async); a cluster barrier between the read
// and the store when `ordered`. Then it waits for the word from the rank below and writes it
// into out[2t + 1].
__global__ void async_overtake_kernel(std::uint32_t* out, std::uint32_t salt, bool ordered) {
  const cg::cluster_group cluster = cg::this_cluster();
  const unsigned rank = cluster.block_rank(), t = threadIdx.x, T = blockDim.x;
  std::uint32_t* words = shared_words();
  auto* bar = reinterpret_cast<std::uint64_t*>(words + T);
  words[t] = salt + t;
  if (t == 0) cuda_emu::mbarrier_init(bar, 1);
  cluster.sync();
  std::uint32_t* o = out + 2 * (std::size_t{blockIdx.x} * T + t);
  o[0] = words[t];
  if (ordered) cluster.sync();
  const unsigned next = (rank + 1) % cluster.num_blocks();
  const std::uint32_t v = 1000 + t;
  cuda_emu::store_async(cluster.map_shared_rank(words + t, next), &v, 4,
                        cluster.map_shared_rank(bar, next));
  if (t == 0) cuda_emu::mbarrier_arrive_expect_tx(bar, T * 4);
  cuda_emu::mbarrier_wait_parity(bar, 0);
  o[1] = words[t];
  cluster.sync();
}

// Misuses of mbarriers and store_async, each a fault: 0 waits for 16 bytes that no one sends;
// 1 waits on an mbarrier never initialised; 2 sends to a block whose mbarrier is not
// initialised; 3 sends 16 bytes to an address aligned to 8 only; 4 sends 12 bytes.
__global__ void mbarrier_misuse_kernel(unsigned which) {
  const cg::cluster_group cluster = cg::this_cluster();
  auto* words = reinterpret_cast<Words4*>(cuda_emu::dynamic_shared_memory());
  auto* bars = reinterpret_cast<std::uint64_t*>(words + 2);
  if (threadIdx.x == 0) cuda_emu::mbarrier_init(&bars[0], 1);
  cluster.sync();
  const unsigned next = (cluster.block_rank() + 1) % cluster.num_blocks();
  const Words4 v{};
  switch (which) {
    case 0:
      if (threadIdx.x == 0) cuda_emu::mbarrier_arrive_expect_tx(&bars[0], 16);
      cuda_emu::mbarrier_wait_parity(&bars[0], 0);
      break;
    case 1:
      cuda_emu::mbarrier_wait_parity(&bars[1], 0);
      break;
    case 2:
      cuda_emu::store_async(cluster.map_shared_rank(words, next), &v, 16,
                            cluster.map_shared_rank(&bars[1], next));
      break;
    case 3:
      cuda_emu::store_async(cluster.map_shared_rank(&words[0].w[2], next), &v, 16,
                            cluster.map_shared_rank(&bars[0], next));
      break;
    default:
      cuda_emu::store_async(cluster.map_shared_rank(words, next), &v, 12,
                            cluster.map_shared_rank(&bars[0], next));
      break;
  }
  cluster.sync();
}

// The fused cluster program's key stage in small, for `rounds` rounds on one block: the
// block's last thread (the fused program's issuer) expects and asks for round r's T words
// of src (bulk_copy_async into the stage, on the block's mbarrier); every thread waits for
// the phase (unless !wait) and reads its neighbour's word into out[rT + t]; then a block
// barrier (unless !sync) before the issuer asks for the next round's.
__global__ void bulk_stage_kernel(std::uint32_t* out, const Words4* src, unsigned rounds,
                                  bool wait, bool sync) {
  const unsigned t = threadIdx.x, T = blockDim.x;
  auto* stage = reinterpret_cast<Words4*>(cuda_emu::dynamic_shared_memory());
  auto* bar = reinterpret_cast<std::uint64_t*>(stage + T);
  if (t == T - 1) cuda_emu::mbarrier_init(bar, 1);
  __syncthreads();
  for (unsigned r = 0; r < rounds; ++r) {
    if (t == T - 1) {
      cuda_emu::mbarrier_arrive_expect_tx(bar, T * 16);
      // Two copies, as the fused program's pair steps make (one per GGSW).
      cuda_emu::bulk_copy_async(stage, src + std::size_t{r} * T, T / 2 * 16, bar);
      cuda_emu::bulk_copy_async(stage + T / 2, src + std::size_t{r} * T + T / 2, T / 2 * 16, bar);
    }
    if (wait) cuda_emu::mbarrier_wait_parity(bar, r & 1u);
    out[std::size_t{r} * T + t] = stage[(t + 1) % T].w[t % 4];
    if (sync) __syncthreads();
  }
  // The last phase completes before the block returns (a device would fault on a transfer to
  // a block that has gone; here the emulator delivers it when nothing is ready).
  if (!wait) cuda_emu::mbarrier_wait_parity(bar, (rounds - 1) & 1u);
}

// Misuses of bulk_copy_async, each a fault: 0 copies 24 bytes; 1 from shared memory; 2 into
// device memory; 3 from an address aligned to 8 only; 4 on an mbarrier never initialised.
__global__ void bulk_misuse_kernel(const Words4* global, unsigned which) {
  auto* stage = reinterpret_cast<Words4*>(cuda_emu::dynamic_shared_memory());
  auto* bars = reinterpret_cast<std::uint64_t*>(stage + 2);
  if (threadIdx.x == 0) {
    cuda_emu::mbarrier_init(&bars[0], 1);
    auto* to_global = const_cast<Words4*>(global);
    const auto* misaligned = reinterpret_cast<const unsigned char*>(global) + 8;
    switch (which) {
      case 0: cuda_emu::bulk_copy_async(stage, global, 24, &bars[0]); break;
      case 1: cuda_emu::bulk_copy_async(stage, stage + 1, 16, &bars[0]); break;
      case 2: cuda_emu::bulk_copy_async(to_global, global + 1, 16, &bars[0]); break;
      case 3: cuda_emu::bulk_copy_async(stage, misaligned, 16, &bars[0]); break;
      default: cuda_emu::bulk_copy_async(stage, global, 16, &bars[1]); break;
    }
  }
  __syncthreads();
}

// Thread 0 at its block's barrier, the others at the cluster's: neither can open.
__global__ void mixed_barriers_kernel() {
  if (threadIdx.x == 0) {
    __syncthreads();
  } else {
    cg::this_cluster().sync();
  }
}

// Block 1 of each cluster returns; block 0 then waits for it at the cluster barrier.
__global__ void exited_block_barrier_kernel() {
  const cg::cluster_group cluster = cg::this_cluster();
  if (cluster.block_rank() == 1) return;
  cluster.sync();
}

// Maps the block's first shared word (offset 0) or its end (`past_end`) to `rank`.
__global__ void map_rank_kernel(unsigned rank, bool past_end) {
  std::uint32_t* stage = shared_words() + (past_end ? blockDim.x : 0);
  cg::this_cluster().map_shared_rank(stage, rank)[0] = 1;
}

// Maps a static __shared__ array, which the emulator cannot map.
__global__ void map_static_shared_kernel() {
  __shared__ std::uint32_t word;
  cg::this_cluster().map_shared_rank(&word, 0)[0] = 1;
}

// Restores the thread order in force when it was made (the cases below set their own).
class OrderGuard {
 public:
  OrderGuard() : saved_(cuda_emu::thread_order_name()) {}
  ~OrderGuard() { cuda_emu::set_thread_order(saved_); }
  OrderGuard(const OrderGuard&) = delete;
  OrderGuard& operator=(const OrderGuard&) = delete;

 private:
  std::string saved_;
};

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
  // Sizes near 2^64: out of memory, as on a device (the rounding to 256 bytes wrapped to a
  // small allocation before).
  for (const std::size_t bytes : {SIZE_MAX, SIZE_MAX - 255, SIZE_MAX / 2}) {
    void* big = nullptr;
    CHECK(cudaMalloc(&big, bytes) == cudaErrorMemoryAllocation);
    CHECK(big == nullptr);
    cudaGetLastError();
  }
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

TEST_CASE("emulator: a cluster's blocks read one another's shared memory after cluster.sync()",
          "[emulator][cluster]") {
  const OrderGuard guard;
  constexpr unsigned threads = 32;
  std::uint32_t salt = 0;
  for (const unsigned size : {2u, 3u, 8u}) {
    const dim3 grid(4 * size, 2);  // 4 clusters per row, 2 rows
    const std::size_t words = std::size_t{grid.x} * grid.y * threads;
    std::uint32_t* d = nullptr;
    REQUIRE(cudaMalloc(reinterpret_cast<void**>(&d), words * 4) == cudaSuccess);
    std::vector<std::uint32_t> h(words);
    for (const char* order : {"forward", "reverse", "shuffle"}) {
      INFO("cluster of " << size << " blocks, order " << order);
      cuda_emu::set_thread_order(order);
      salt += 100000;
      cuda_emu::launcher(cluster_neighbour_kernel, "cluster_neighbour_kernel", grid,
                         dim3(threads), threads * 4, nullptr, size)(d, salt, true, true);
      REQUIRE(cudaGetLastError() == cudaSuccess);
      REQUIRE(cudaMemcpy(h.data(), d, words * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
      std::size_t wrong = 0;
      for (unsigned y = 0; y < grid.y; ++y) {
        for (unsigned x = 0; x < grid.x; ++x) {
          for (unsigned t = 0; t < threads; ++t) {
            const std::uint32_t want = salt + 1000 * ((x % size + 1) % size) + t;
            wrong += h[(y * grid.x + x) * threads + t] != want;
          }
        }
      }
      CHECK(wrong == 0);
    }
    CHECK(cudaFree(d) == cudaSuccess);
  }
}

TEST_CASE("emulator: the thread orders expose a missing cluster.sync() and a read after exit",
          "[emulator][cluster]") {
  const OrderGuard guard;
  constexpr unsigned threads = 32;
  constexpr std::uint32_t garbage = 0xC3C3C3C3u;  // the emulator's fresh shared memory
  std::uint32_t salt = 0;
  for (const unsigned size : {2u, 3u, 8u}) {
    const dim3 grid(4 * size);
    const std::size_t words = std::size_t{grid.x} * threads;
    std::uint32_t* d = nullptr;
    REQUIRE(cudaMalloc(reinterpret_cast<void**>(&d), words * 4) == cudaSuccess);
    std::vector<std::uint32_t> h(words);
    // Runs the kernel; counts the values that are wrong, and checks that each is garbage.
    const auto wrong_values = [&](bool cluster_barrier, bool final_barrier) {
      salt += 100000;
      cuda_emu::launcher(cluster_neighbour_kernel, "cluster_neighbour_kernel", grid,
                         dim3(threads), threads * 4, nullptr, size)(d, salt, cluster_barrier,
                                                                    final_barrier);
      REQUIRE(cudaGetLastError() == cudaSuccess);
      REQUIRE(cudaMemcpy(h.data(), d, words * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
      std::size_t wrong = 0, not_garbage = 0;
      for (unsigned x = 0; x < grid.x; ++x) {
        for (unsigned t = 0; t < threads; ++t) {
          const std::uint32_t got = h[x * threads + t];
          const bool right = got == salt + 1000 * ((x % size + 1) % size) + t;
          wrong += !right;
          not_garbage += !right && got != garbage;
        }
      }
      CHECK(not_garbage == 0);
      return wrong;
    };
    for (const char* order : {"forward", "reverse", "shuffle"}) {
      INFO("cluster of " << size << " blocks, order " << order);
      cuda_emu::set_thread_order(order);
      // Only __syncthreads between the writes and the reads of other blocks: in forward, block
      // r runs ahead of block r + 1 and reads its shared memory unwritten (all but the last
      // block of each cluster); in reverse, the last block reads block 0's.
      const std::size_t race = wrong_values(false, true);
      if (std::string(order) == "forward") CHECK(race == (size - 1) * threads * 4);
      if (std::string(order) == "reverse") CHECK(race == threads * 4);
      // No final cluster.sync(): a block exits while the next lower one still has to read its
      // shared memory (forward: block 0 before the last block; reverse: every block but 0
      // before the one below it), which then holds garbage.
      const std::size_t after_exit = wrong_values(true, false);
      if (std::string(order) == "forward") CHECK(after_exit == threads * 4);
      if (std::string(order) == "reverse") CHECK(after_exit == (size - 1) * threads * 4);
    }
    CHECK(cudaFree(d) == cudaSuccess);
  }
}

TEST_CASE("emulator: a cluster's rank, size and shape, and a launch without clusters as one",
          "[emulator][cluster]") {
  constexpr unsigned threads = 16, blocks = 12;
  std::uint32_t* d = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&d), 7 * blocks * 4) == cudaSuccess);
  std::vector<std::uint32_t> h(7 * blocks);
  for (const unsigned size : {1u, 4u}) {
    INFO("cluster of " << size << " blocks");
    REQUIRE(cudaMemset(d, 0xff, 7 * blocks * 4) == cudaSuccess);
    cuda_emu::launcher(cluster_shape_kernel, "cluster_shape_kernel", dim3(blocks), dim3(threads),
                       threads * 4, nullptr, size)(d);
    REQUIRE(cudaGetLastError() == cudaSuccess);
    REQUIRE(cudaMemcpy(h.data(), d, h.size() * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
    for (unsigned b = 0; b < blocks; ++b) {
      INFO("block " << b);
      const std::vector<std::uint32_t> got(h.begin() + 7 * b, h.begin() + 7 * b + 7);
      CHECK(got == std::vector<std::uint32_t>{b % size, size, size, 1, 1, b % size, 1});
    }
  }
  // The launcher without a cluster argument: a cluster of one block, as on a device.
  cuda_emu::launcher(cluster_shape_kernel, "cluster_shape_kernel", dim3(blocks), dim3(threads),
                     threads * 4, nullptr)(d);
  REQUIRE(cudaMemcpy(h.data(), d, h.size() * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
  for (unsigned b = 0; b < blocks; ++b) {
    INFO("block " << b);
    CHECK(std::vector<std::uint32_t>(h.begin() + 7 * b, h.begin() + 7 * b + 7) ==
          std::vector<std::uint32_t>{0, 1, 1, 1, 1, 0, 1});
  }
  CHECK(cudaFree(d) == cudaSuccess);
}

TEST_CASE("emulator: is_shared knows the cluster's dynamic shared memory from device memory",
          "[emulator][cluster]") {
  // What load_global_key (gpu/src/fused_rotation.hpp) asks before a load that names the
  // global space: on a device such a load of a shared address fails.
  constexpr unsigned threads = 8, blocks = 4;
  std::uint32_t* d = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&d), 5 * blocks * 4) == cudaSuccess);
  std::vector<std::uint32_t> h(5 * blocks);
  for (const unsigned size : {1u, 2u}) {
    INFO("cluster of " << size << " blocks");
    REQUIRE(cudaMemset(d, 0xff, 5 * blocks * 4) == cudaSuccess);
    cuda_emu::launcher(is_shared_kernel, "is_shared_kernel", dim3(blocks), dim3(threads),
                       threads * 4, nullptr, size)(d, d);
    REQUIRE(cudaGetLastError() == cudaSuccess);
    REQUIRE(cudaMemcpy(h.data(), d, h.size() * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
    for (unsigned b = 0; b < blocks; ++b) {
      INFO("block " << b);
      CHECK(std::vector<std::uint32_t>(h.begin() + 5 * b, h.begin() + 5 * b + 5) ==
            std::vector<std::uint32_t>{1, 1, 1, 0, 0});
    }
  }
  CHECK_FALSE(cuda_emu::is_shared(d));  // outside a kernel, nothing is shared memory
  CHECK(cudaFree(d) == cudaSuccess);
}

TEST_CASE("emulator: copy_async is done at the thread's wait, and only into shared memory",
          "[emulator]") {
  constexpr unsigned threads = 8;
  std::uint32_t *in = nullptr, *out = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&in), threads * 4) == cudaSuccess);
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&out), 3 * threads * 4) == cudaSuccess);
  std::vector<std::uint32_t> words(threads);
  for (unsigned t = 0; t < threads; ++t) words[t] = 100 + t;
  REQUIRE(cudaMemcpy(in, words.data(), threads * 4, cudaMemcpyHostToDevice) == cudaSuccess);
  cuda_emu::launcher(copy_async_kernel, "copy_async_kernel", dim3(1), dim3(threads), threads * 4,
                     nullptr)(out, in);
  REQUIRE(cudaGetLastError() == cudaSuccess);
  std::vector<std::uint32_t> h(3 * threads);
  REQUIRE(cudaMemcpy(h.data(), out, h.size() * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
  for (unsigned t = 0; t < threads; ++t) {
    INFO("thread " << t);
    CHECK(h[3 * t] == 7);            // before the wait: not yet copied
    CHECK(h[3 * t + 1] == 100 + t);  // after it
    CHECK(h[3 * t + 2] == 100 + (t + 1) % threads);  // the neighbour's, after the barrier
  }
  for (const bool to_global : {true, false}) {
    INFO((to_global ? "into device memory" : "from shared memory"));
    cuda_emu::launcher(copy_async_misuse_kernel, "copy_async_misuse_kernel", dim3(1),
                       dim3(threads), threads * 4, nullptr)(out, to_global);
    expect_fault();
  }
  CHECK(cudaFree(in) == cudaSuccess);
  CHECK(cudaFree(out) == cudaSuccess);
}

TEST_CASE("emulator: a cluster of 0 or above 8 blocks, or one not dividing grid.x, is refused",
          "[emulator][cluster]") {
  std::uint32_t* d = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&d), 16 * 32 * 4) == cudaSuccess);
  const auto launch = [&](unsigned grid, unsigned size) {
    cuda_emu::launcher(cluster_neighbour_kernel, "cluster_neighbour_kernel", dim3(grid),
                       dim3(32), 32 * 4, nullptr, size)(d, 0u, true, true);
    return cudaGetLastError();
  };
  CHECK(launch(8, 0) == cudaErrorInvalidValue);
  CHECK(launch(18, 9) == cudaErrorInvalidValue);
  CHECK(launch(6, 4) == cudaErrorInvalidValue);  // 6 blocks are not clusters of 4
  CHECK(launch(16, 8) == cudaSuccess);
  CHECK(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(cudaFree(d) == cudaSuccess);
}

TEST_CASE("emulator: mixed barriers, a barrier an exited block cannot reach and a bad "
          "map_shared_rank are faults",
          "[emulator][cluster]") {
  const OrderGuard guard;
  for (const char* order : {"forward", "reverse", "shuffle"}) {
    INFO("order " << order);
    cuda_emu::set_thread_order(order);
    cuda_emu::launcher(mixed_barriers_kernel, "mixed_barriers_kernel", dim3(4), dim3(32), 0,
                       nullptr, 2)();
    expect_fault();
    cuda_emu::launcher(exited_block_barrier_kernel, "exited_block_barrier_kernel", dim3(4),
                       dim3(32), 0, nullptr, 2)();
    expect_fault();
    // Rank 2 of a cluster of 2 blocks.
    cuda_emu::launcher(map_rank_kernel, "map_rank_kernel", dim3(4), dim3(8), 8 * 4, nullptr,
                       2)(2u, false);
    expect_fault();
    // Rank 1 is right; the address one word past the block's shared memory is not.
    cuda_emu::launcher(map_rank_kernel, "map_rank_kernel", dim3(4), dim3(8), 8 * 4, nullptr,
                       2)(1u, false);
    CHECK(cudaDeviceSynchronize() == cudaSuccess);
    cuda_emu::launcher(map_rank_kernel, "map_rank_kernel", dim3(4), dim3(8), 8 * 4, nullptr,
                       2)(1u, true);
    expect_fault();
    // A static __shared__ array, in a launch with clusters and in one without.
    for (const unsigned size : {1u, 2u}) {
      cuda_emu::launcher(map_static_shared_kernel, "map_static_shared_kernel", dim3(4), dim3(8),
                         8 * 4, nullptr, size)();
      expect_fault();
    }
  }
}

TEST_CASE("emulator: store_async and mbarriers: a phase a round, and a missing wait shows",
          "[emulator][cluster]") {
  const OrderGuard guard;
  constexpr unsigned threads = 32, clusters = 3, rounds = 5;
  for (const unsigned size : {2u, 3u, 6u, 8u}) {
    const unsigned blocks = clusters * size;
    Words4* d = nullptr;
    REQUIRE(cudaMalloc(reinterpret_cast<void**>(&d), blocks * threads * 16) == cudaSuccess);
    std::vector<Words4> h(std::size_t{blocks} * threads);
    // Runs the kernel; the threads whose values are wrong.
    const auto wrong_values = [&](bool leader_waits, bool others_wait, unsigned rounds) {
      const std::vector<Words4> want = gathered(clusters, size, threads, rounds);
      cuda_emu::launcher(async_gather_kernel, "async_gather_kernel", dim3(blocks),
                         dim3(threads), gather_shared_bytes(size, threads), nullptr,
                         size)(d, rounds, leader_waits, others_wait);
      REQUIRE(cudaGetLastError() == cudaSuccess);
      REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
      REQUIRE(cudaMemcpy(h.data(), d, h.size() * 16, cudaMemcpyDeviceToHost) == cudaSuccess);
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < h.size(); ++i) {
        wrong += !std::equal(h[i].w, h[i].w + 4, want[i].w);
      }
      return wrong;
    };
    for (const char* order : {"forward", "reverse", "shuffle"}) {
      INFO("cluster of " << size << " blocks, order " << order);
      cuda_emu::set_thread_order(order);
      CHECK(wrong_values(true, true, rounds) == 0);
      // forward delivers the stores only when every thread waits or has returned: a block
      // that reads without waiting reads the old contents (block 0 its inbox, the others
      // their result), and every value that depends on them is wrong. (One round: in more,
      // the block that does not wait sends its next round's values into a phase that
      // expects the last round's, which then never completes, a fault.)
      if (std::string(order) == "forward") {
        CHECK(wrong_values(false, true, 1) == h.size());
        CHECK(wrong_values(true, false, 1) == h.size() - clusters * threads);
      }
    }
    CHECK(cudaFree(d) == cudaSuccess);
  }
}

TEST_CASE("emulator: a store_async that overtakes a read shows in the reverse order",
          "[emulator][cluster]") {
  const OrderGuard guard;
  constexpr unsigned threads = 16, size = 4, blocks = 2 * size;
  std::uint32_t* d = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&d), 2 * blocks * threads * 4) == cudaSuccess);
  std::vector<std::uint32_t> h(2 * blocks * threads);
  const auto overtaken = [&](bool ordered) {
    cuda_emu::launcher(async_overtake_kernel, "async_overtake_kernel", dim3(blocks),
                       dim3(threads), threads * 4 + 8, nullptr, size)(d, 77u, ordered);
    REQUIRE(cudaGetLastError() == cudaSuccess);
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    REQUIRE(cudaMemcpy(h.data(), d, h.size() * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
    std::size_t before = 0;
    for (unsigned i = 0; i < blocks * threads; ++i) {
      const unsigned t = i % threads;
      CHECK(h[2 * i + 1] == 1000 + t);  // what the wait gave it, in every order
      before += h[2 * i] != 77 + t;     // the read before the store saw the store
    }
    return before;
  };
  for (const char* order : {"forward", "reverse", "shuffle"}) {
    INFO("order " << order);
    cuda_emu::set_thread_order(order);
    CHECK(overtaken(true) == 0);
    // forward: the stores land after everyone's reads; reverse: at once, and the blocks run
    // from the last, whose store into block 0 lands before block 0 reads.
    if (std::string(order) == "forward") CHECK(overtaken(false) == 0);
    if (std::string(order) == "reverse") CHECK(overtaken(false) == 2 * threads);
  }
  CHECK(cudaFree(d) == cudaSuccess);
}

TEST_CASE("emulator: mbarrier and store_async misuses are faults that say what happened",
          "[emulator][cluster]") {
  const OrderGuard guard;
  const std::vector<std::string> says = {"which nothing left can complete", "no mbarrier_init",
                                         "not an initialised one", "not aligned",
                                         "12 bytes (4, 8 or 16)"};
  for (const char* order : {"forward", "reverse", "shuffle"}) {
    cuda_emu::set_thread_order(order);
    for (unsigned which = 0; which < says.size(); ++which) {
      INFO("order " << order << ", misuse " << which);
      cuda_emu::launcher(mbarrier_misuse_kernel, "mbarrier_misuse_kernel", dim3(4), dim3(8),
                         2 * 16 + 16, nullptr, 2)(which);
      CHECK(cudaDeviceSynchronize() == cudaErrorLaunchFailure);
      CHECK(cuda_emu::fault_message().find(says[which]) != std::string::npos);
      cuda_emu::clear_fault();
      cudaGetLastError();
    }
  }
}

TEST_CASE("emulator: bulk_copy_async fills a stage on an mbarrier; a missing wait or barrier shows",
          "[emulator][cluster]") {
  const OrderGuard guard;
  constexpr unsigned threads = 16, rounds = 4;
  Words4* src = nullptr;
  std::uint32_t* out = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&src), rounds * threads * 16) == cudaSuccess);
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&out), rounds * threads * 4) == cudaSuccess);
  std::vector<Words4> words(rounds * threads);
  for (unsigned i = 0; i < words.size(); ++i) {
    for (unsigned w = 0; w < 4; ++w) words[i].w[w] = 1000 * i + w;
  }
  REQUIRE(cudaMemcpy(src, words.data(), words.size() * 16, cudaMemcpyHostToDevice) == cudaSuccess);
  // Runs the kernel; how many threads' words are not their neighbour's of their round.
  const auto wrong_words = [&](bool wait, bool sync, unsigned rounds) {
    cuda_emu::launcher(bulk_stage_kernel, "bulk_stage_kernel", dim3(1), dim3(threads),
                       threads * 16 + 8, nullptr)(out, src, rounds, wait, sync);
    REQUIRE(cudaGetLastError() == cudaSuccess);
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    std::vector<std::uint32_t> h(rounds * threads);
    REQUIRE(cudaMemcpy(h.data(), out, h.size() * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
    std::size_t wrong = 0;
    for (unsigned r = 0; r < rounds; ++r) {
      for (unsigned t = 0; t < threads; ++t) {
        wrong += h[r * threads + t] != words[r * threads + (t + 1) % threads].w[t % 4];
      }
    }
    return wrong;
  };
  for (const char* order : {"forward", "reverse", "shuffle"}) {
    INFO("order " << order);
    cuda_emu::set_thread_order(order);
    CHECK(wrong_words(true, true, rounds) == 0);
    // forward delivers a copy only when no thread is ready: every read before the wait sees
    // the uninitialised stage. (One round: in more, the issuer would expect the next round's
    // bytes in a phase that still waits for this round's.)
    if (std::string(order) == "forward") CHECK(wrong_words(false, true, 1) == threads);
    // reverse runs the issuer first and delivers at once: without the barrier it runs ahead,
    // its copies overwrite the stage and complete the phases, and the other threads then wait
    // for a phase that nothing can complete: a fault.
    if (std::string(order) == "reverse") {
      cuda_emu::launcher(bulk_stage_kernel, "bulk_stage_kernel", dim3(1), dim3(threads),
                         threads * 16 + 8, nullptr)(out, src, rounds, true, false);
      CHECK(cudaDeviceSynchronize() == cudaErrorLaunchFailure);
      CHECK(cuda_emu::fault_message().find("nothing left can complete") != std::string::npos);
      cuda_emu::clear_fault();
      cudaGetLastError();
    }
  }
  const std::vector<std::string> says = {"24 bytes (a positive multiple of 16",
                                         "the source is shared memory",
                                         "the destination is not in the dynamic shared memory",
                                         "not aligned to 16 bytes", "not an initialised one"};
  for (unsigned which = 0; which < says.size(); ++which) {
    INFO("misuse " << which);
    cuda_emu::launcher(bulk_misuse_kernel, "bulk_misuse_kernel", dim3(1), dim3(4), 2 * 16 + 16,
                       nullptr)(src, which);
    CHECK(cudaDeviceSynchronize() == cudaErrorLaunchFailure);
    CHECK(cuda_emu::fault_message().find(says[which]) != std::string::npos);
    cuda_emu::clear_fault();
    cudaGetLastError();
  }
  CHECK(cudaFree(src) == cudaSuccess);
  CHECK(cudaFree(out) == cudaSuccess);
}

TEST_CASE("emulator: cudaOccupancyMaxActiveClusters and cudaDevAttrClusterLaunch",
          "[emulator][cluster]") {
  int launchable = 0;
  REQUIRE(cudaDeviceGetAttribute(&launchable, cudaDevAttrClusterLaunch, 0) == cudaSuccess);
  CHECK(launchable == 1);
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = 2;
  attribute.val.clusterDim.y = 1;
  attribute.val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(8);
  config.blockDim = dim3(128);
  config.dynamicSmemBytes = 4096;
  config.attrs = &attribute;
  config.numAttrs = 1;
  int clusters = -1;
  CHECK(cudaOccupancyMaxActiveClusters(&clusters, cluster_neighbour_kernel, &config) ==
        cudaSuccess);
  CHECK(clusters > 0);
  attribute.val.clusterDim.x = 8;  // the portable maximum: always launchable
  CHECK(cudaOccupancyMaxActiveClusters(&clusters, cluster_neighbour_kernel, &config) ==
        cudaSuccess);
  CHECK(clusters > 0);
  config.dynamicSmemBytes = 64 * 1024;  // above the 48 KiB a kernel gets without the opt-in
  CHECK(cudaOccupancyMaxActiveClusters(&clusters, cluster_neighbour_kernel, &config) ==
        cudaSuccess);
  CHECK(clusters == 0);
  config.dynamicSmemBytes = 4096;
  config.blockDim = dim3(2048);  // above 1024 threads
  CHECK(cudaOccupancyMaxActiveClusters(&clusters, cluster_neighbour_kernel, &config) ==
        cudaSuccess);
  CHECK(clusters == 0);
  config.blockDim = dim3(128);
  for (const unsigned size : {0u, 9u}) {
    attribute.val.clusterDim.x = size;
    CHECK(cudaOccupancyMaxActiveClusters(&clusters, cluster_neighbour_kernel, &config) ==
          cudaErrorInvalidClusterSize);
  }
  attribute.val.clusterDim.x = 2;
  config.numAttrs = 0;  // no cluster dimension: a kernel without a compiled-in one needs it
  CHECK(cudaOccupancyMaxActiveClusters(&clusters, cluster_neighbour_kernel, &config) ==
        cudaErrorInvalidClusterSize);
  CHECK(cudaOccupancyMaxActiveClusters(&clusters, cluster_neighbour_kernel, nullptr) ==
        cudaErrorInvalidValue);
  cudaGetLastError();
}
