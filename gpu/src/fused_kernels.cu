// The fused engine's kernels: each block runs the block program of fused_rotation.hpp (the
// same code the CPU tests run thread by thread) with DeviceBlock, its barriers __syncthreads.
#include "fused_kernels.cuh"

#include <cooperative_groups.h>

#include <algorithm>
#include <string>
#include <type_traits>

#include "cuda_resources.cuh"
#include "fused_rotation.hpp"
#include "fused_wide.hpp"

namespace torusgate::gpu::detail {
namespace {

using kernel::Complex;
using kernel::Torus32;
namespace fused = kernel::fused;

__global__ void fused_key_kernel(const std::uint32_t* bk, std::size_t polys, Shape s,
                                 const Complex* twist, const Complex* twiddles, Complex* out) {
  TG_DYNAMIC_SHARED(shared);
  Complex* buffer = reinterpret_cast<Complex*>(shared);
  fused::TransformRegs regs;
  fused::DeviceBlock<fused::TransformRegs> blk{regs, threadIdx.x};
  for (std::size_t poly = blockIdx.x; poly < polys; poly += gridDim.x) {
    fused::transform_key_polynomial(blk, bk + poly * s.N, s.N, twist, twiddles, buffer,
                                    out + poly * s.M());
    __syncthreads();  // the buffer is free for the next polynomial
  }
}

// griddepcontrol (PTX ISA 7.8, sm_90; nothing elsewhere and under the emulator, which runs
// each launch to its end before the next): allow_dependents lets the stream's next kernel, if
// launched as a programmatic dependent, start once every block of this one has run it
// (wait_primaries, with the cluster code, is the dependent's side).
__device__ inline void allow_dependents() {
#if !defined(TORUSGATE_CUDA_EMULATION) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// The bundled keys of a chunk's rotations (fused_rotation.hpp, bundle_point_at): work items
// w = blockIdx.x, + gridDim.x, ... in bundle_item's order (group step, rotation, part), a
// thread per slot of the item's part, every row and column; U = s.unroll. ready (BundleReady):
// after an item, its row set's counter counts one more part, once every thread's writes are
// visible on the device (each thread's fence, then the barrier, then thread 0's atomic add;
// the next item's writes go elsewhere, so no barrier after).
template <unsigned U>
__global__ void __launch_bounds__(fused::bundle_threads) fused_bundle_kernel(
    const std::uint32_t* powers, std::uint64_t capacity, Shape s, const Complex* key,
    const std::uint32_t* roots, const Complex* unit, Complex* bundle, std::uint64_t* ready) {
  allow_dependents();  // the rotation, launched as a dependent when ready, may start
  const std::uint64_t items = fused::bundle_items(s, capacity);
  for (std::uint64_t w = blockIdx.x; w < items; w += gridDim.x) {
    const fused::BundleItem item = fused::bundle_item(w, s, capacity);
    const std::uint32_t p = item.part * fused::bundle_threads + threadIdx.x;
    if (p < s.M()) fused::bundle_point_at<U>(item.point(s, p), s, powers, key, roots, unit, bundle);
    // The barrier in either case (one a block without counters, which takes one item): a
    // kernel reaches its barriers on every launch or on none, as the emulator requires.
    if (ready != nullptr) __threadfence();
    __syncthreads();
    if (ready != nullptr && threadIdx.x == 0) {
      atomicAdd(reinterpret_cast<unsigned long long*>(ready + item.row_set(s)), 1ull);
    }
  }
}

// k = 1: at most 384 threads per block (6 groups of 64, tfhe_lib_128's latency shape), which
// caps the registers at 168 per thread; k = 2 keeps its registers (at most 256 threads).
template <unsigned K1>
constexpr int rotation_max_threads = K1 == 2 ? 384 : 256;

// TORUSGATE_FUSED_MAX_REGISTERS (CMake, an experiment): R registers per thread instead, so
// more one-group blocks fit per SM (128: 8 blocks of 64 threads against the 6 that 166
// registers allow; ptxas spills 20 bytes for k = 1, 956 for k = 2); blocks of up to 65536/R
// threads.
// The fixed-length 1x1 kernel of an unrolled key (Unroll > 1): blocks of M/8 <= 128 threads,
// so up to 255 registers: capped at 168 for k = 1, its pair step spilled 92 bytes (N = 1024).
#if defined(TORUSGATE_FUSED_MAX_REGISTERS) && !defined(TORUSGATE_CUDA_EMULATION)
#define TG_ROTATION_BOUNDS(K1) __maxnreg__(TORUSGATE_FUSED_MAX_REGISTERS)
#define TG_FIXED_BOUNDS(K1, Unroll) __maxnreg__(TORUSGATE_FUSED_MAX_REGISTERS)
#else
#define TG_ROTATION_BOUNDS(K1) __launch_bounds__(rotation_max_threads<K1>)
#define TG_FIXED_BOUNDS(K1, Unroll) __launch_bounds__((Unroll) > 1 ? 256 : rotation_max_threads<K1>)
#endif

// The rotations of blocks blockIdx.x, blockIdx.x + gridDim.x, ... in blocks of `shape`
// (LaunchShape, or a FixedShape with FixedGroups or with lanes). Unroll > 1: an unrolled key's
// group steps (fused_rotation.hpp; one rotation slot and one lane per block).
// BlockOf: fused::DeviceBlock, or with a key stage (fused::staged_shape<LS>) DeviceStagedBlock,
// which initialises the stage's mbarrier first.
template <unsigned K1, class Groups, unsigned Unroll = 1, class LS,
          template <class> class BlockOf = fused::DeviceBlock>
__device__ void rotate_blocks(std::uint32_t* acc_global, const std::uint32_t* powers,
                              std::uint64_t capacity, const Shape& s, LS shape,
                              const Complex* key, const fused::StepInputs& in) {
  TG_DYNAMIC_SHARED(shared);
  constexpr unsigned lanes = fused::static_lanes<LS>;
  constexpr bool staged = fused::staged_shape<LS>;
  const fused::LaunchShape launch{shape.groups, shape.rotations, 1, lanes,
                                  fused::points_per_thread, fused::owner_sums,
                                  staged ? fused::key_stage : 0};
  const fused::BlockMemory mem = fused::block_memory(shared, launch, s);
  const std::uint32_t per_block = fused::block_rotations(launch);
  const std::uint32_t words = K1 * s.N, all_words = per_block * words;
  using Regs = fused::RotationRegs<K1, lanes>;
  Regs regs;
  BlockOf<Regs> blk{regs, threadIdx.x};  // (a derived block's base by brace elision)
  // Visible before the first fetch: the barrier every CMUX step starts with comes first.
  if constexpr (staged) blk.init_stage(mem.signal);
  for (std::uint64_t first = std::uint64_t{blockIdx.x} * per_block; first < capacity;
       first += std::uint64_t{gridDim.x} * per_block) {
    const auto valid = static_cast<std::uint32_t>(
        capacity - first < per_block ? capacity - first : per_block);
    // The block's accumulators (a partial block's spare slots copy its last rotation's).
    for (std::uint32_t w = threadIdx.x; w < all_words; w += blockDim.x) {
      const std::uint32_t p = w / words < valid ? w / words : valid - 1;
      mem.acc[w] = acc_global[(first + p) * words + w % words];
    }
    fused::blind_rotate<K1, Groups, Unroll>(blk, s, shape, mem, powers + first * s.n, valid,
                                            key, in);
    __syncthreads();
    for (std::uint32_t w = threadIdx.x; w < valid * words; w += blockDim.x) {
      acc_global[first * words + w] = mem.acc[w];
    }
    __syncthreads();
  }
}

// Any launch shape, any length.
template <unsigned K1, unsigned Unroll = 1>
__global__ void TG_ROTATION_BOUNDS(K1) fused_blind_rotation_kernel(
    std::uint32_t* acc_global, const std::uint32_t* powers, std::uint64_t capacity, Shape s,
    fused::LaunchShape shape, const Complex* key, fused::StepInputs in) {
  rotate_blocks<K1, fused::FftGroups, Unroll>(acc_global, powers, capacity, s, shape, key, in);
}

// The 1x1 shape (what chunks that fill the device take) at a length fixed at compile time,
// N = 2^(LogM+1): the transform's passes unrolled, its indices constants (FixedGroups). The
// same words as fused_blind_rotation_kernel; `shape` is 1x1.
template <unsigned K1, unsigned LogM, unsigned Unroll = 1>
__global__ void TG_FIXED_BOUNDS(K1, Unroll) fused_fixed_rotation_kernel(
    std::uint32_t* acc_global, const std::uint32_t* powers, std::uint64_t capacity, Shape s,
    fused::LaunchShape, const Complex* key, fused::StepInputs in) {
  rotate_blocks<K1, fused::FixedGroups<LogM>, Unroll>(acc_global, powers, capacity, s,
                                                      fused::FixedShape<1, 1>{}, key, in);
}

// Two rotations per thread (LaunchShape::lanes = 2, k = 1): one group of T = M/8 threads per
// block carries both, each thread the same points of each, so every twiddle, twist, untwist
// and key load serves two rotations. Groups: FixedGroups<log2 M> where the length has one,
// else FftGroups. Blocks of at most 256 threads (N <= 4096): the registers are not capped
// below the 255 a thread may have. Unroll > 1: an unrolled key's group steps, each key point
// of the step's 2^u - 1 GGSW loaded once for both lanes' products (each lane with its own
// factors; docs/gpu.md section 6.27).
template <class Groups, unsigned Unroll = 1>
__global__ void __launch_bounds__(256) fused_lane_rotation_kernel(
    std::uint32_t* acc_global, const std::uint32_t* powers, std::uint64_t capacity, Shape s,
    fused::LaunchShape, const Complex* key, fused::StepInputs in) {
  rotate_blocks<fused::lanes_columns, Groups, Unroll>(
      acc_global, powers, capacity, s, fused::FixedShape<1, 1, fused::max_lanes>{}, key, in);
}

// Thread block clusters: compute capability 9.0 (and the emulator). The cluster kernel's
// sm_80 code is a trap that the host never launches (fused_clusters says 0 there).
#if defined(TORUSGATE_CUDA_EMULATION) || !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
#define TG_CLUSTER_CODE 1

// The mbarrier and st.async instructions of the cluster program (PTX ISA 8.1, sm_90), or the
// CUDA emulator's versions of them.
#if !defined(TORUSGATE_CUDA_EMULATION)
__device__ inline std::uint32_t shared_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}
#endif

// mbarrier.init with one arrival per phase, then the fence that makes it visible to the
// cluster's other blocks (their sends complete on it after the cluster barrier that follows).
__device__ inline void init_signal(std::uint64_t* bar) {
#if defined(TORUSGATE_CUDA_EMULATION)
  cuda_emu::mbarrier_init(bar, 1);
#else
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(shared_address(bar)) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}

// The 16 bytes v into place p (in the caller's layout) of block b's shared memory, completing
// 16 bytes on block b's mbarrier at bar (st.async with mapa: no fence, no wait).
template <class T>
__device__ inline void send_async(T* p, unsigned b, const T& v, std::uint64_t* bar) {
  static_assert(sizeof(T) == 16);
#if defined(TORUSGATE_CUDA_EMULATION)
  const auto cluster = cooperative_groups::this_cluster();
  cuda_emu::store_async(cluster.map_shared_rank(p, b), &v, sizeof(T),
                        cluster.map_shared_rank(bar, b));
#else
  std::uint32_t w[4];
  memcpy(w, &v, sizeof(T));
  std::uint32_t dst, remote_bar;
  asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(dst) : "r"(shared_address(p)), "r"(b));
  asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote_bar) : "r"(shared_address(bar)), "r"(b));
  asm volatile(
      "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1, %2, %3, %4}, [%5];"
      ::"r"(dst), "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3]), "r"(remote_bar)
      : "memory");
#endif
}

// mbarrier.arrive.expect_tx: `bytes` more to arrive in this phase, and the one arrival.
__device__ inline void expect_signal(std::uint64_t* bar, std::uint32_t bytes) {
#if defined(TORUSGATE_CUDA_EMULATION)
  cuda_emu::mbarrier_arrive_expect_tx(bar, bytes);
#else
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
               ::"r"(shared_address(bar)), "r"(bytes) : "memory");
#endif
}

// `bytes` (a multiple of 16; both addresses 16-byte aligned) from device memory at src into
// the block's own shared memory at dst, completing on its mbarrier at bar: the TMA's
// one-dimensional bulk copy (cp.async.bulk, no register holds the data, the thread goes on).
__device__ inline void bulk_copy(void* dst, const void* src, std::uint32_t bytes,
                                 std::uint64_t* bar) {
#if defined(TORUSGATE_CUDA_EMULATION)
  cuda_emu::bulk_copy_async(dst, src, bytes, bar);
#else
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
      ::"r"(shared_address(dst)), "l"(src), "r"(bytes), "r"(shared_address(bar))
      : "memory");
#endif
}

// The issuing thread of a block: expects the bytes of the phase, its one arrival, then asks
// for `segments` runs of `count` complex from device memory at src + g * stride into
// dst + g * count of the block's own shared memory, completing on its mbarrier `signal`.
__device__ inline void fetch_segments(Complex* dst, const Complex* src, std::size_t count,
                                      std::size_t stride, std::uint32_t segments,
                                      std::uint64_t* signal) {
  const auto bytes = static_cast<std::uint32_t>(count * sizeof(Complex));
  expect_signal(signal, segments * bytes);
  for (std::uint32_t g = 0; g < segments; ++g) {
    bulk_copy(dst + g * count, src + g * stride, bytes, signal);
  }
}

// Waits until the counter at `counter` (a bundled row set's, BundleReady; counted by the
// bundling kernel still running beside) has reached `target`: an acquire load at GPU scope
// until it has, then a proxy fence, so that the TMA's bulk copies after it (the async proxy)
// read what the bundling's stores (the generic proxy) wrote. A wait of 2^24 polls traps (each
// an L2 round trip of some hundred ns and a sleep of up to 128 ns: seconds), so a count that
// never comes (a bug) ends the kernel with an error, not a hang. A rightful wait is far
// shorter: the bundling makes every rotation's row set j before any's j + 1, so no wait lasts
// longer than its time over the group steps (157 in fours), whatever the chunk.
inline constexpr std::uint32_t max_ready_polls = 1u << 24;
// In a programmatic dependent: waits until the kernel before it has ended and its writes are
// visible (at once in a kernel launched otherwise).
__device__ inline void wait_primaries() {
#if !defined(TORUSGATE_CUDA_EMULATION)
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ inline void wait_counter(const std::uint64_t* counter, std::uint64_t target) {
#if defined(TORUSGATE_CUDA_EMULATION)
  cuda_emu::wait_counter(counter, target);
#else
  for (std::uint32_t polls = 0;; ++polls) {
    std::uint64_t seen;
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(seen) : "l"(counter) : "memory");
    if (seen >= target) break;
    if (polls == max_ready_polls) __trap();
    __nanosleep(64);
  }
  asm volatile("fence.proxy.async.global;" ::: "memory");
#endif
}

// Waits until the phase of parity `parity` of the block's mbarrier at bar has completed.
// Cluster (the other blocks' st.async transfers): a relaxed try_wait at cluster scope, then
// an acquire fence at cluster scope restricted to shared memory
// (fence.acquire.sync_restrict::shared::cluster, PTX ISA 8.6): the bytes the others sent are
// visible after, and since the fence orders only shared-memory accesses it needs no L1
// invalidation, so the twiddle, twist and untwist tables stay in L1 (the acquire form,
// try_wait.acquire.cluster, compiles to a CCTL.IVALL after each wait; docs/gpu.md 6.14).
// CUDA before 12.8 (no such fence in its PTX) keeps the acquire form. Not Cluster (the
// block's own bulk copies): acquire at CTA scope, which needs no invalidation either.
#if defined(__CUDACC_VER_MAJOR__) && \
    (__CUDACC_VER_MAJOR__ > 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 8))
#define TG_SHARED_ACQUIRE_FENCE 1
#endif
template <bool Cluster = true>
__device__ inline void wait_signal_phase(std::uint64_t* bar, std::uint32_t parity) {
#if defined(TORUSGATE_CUDA_EMULATION)
  cuda_emu::mbarrier_wait_parity(bar, parity);
#else
  std::uint32_t done = 0;
  // One try_wait with semantics SEM at SCOPE (string literals): done = whether the phase
  // completed.
#define TG_TRY_WAIT(SEM, SCOPE)                                                             \
  asm volatile("{\n .reg .pred p;\n"                                                       \
               " mbarrier.try_wait.parity." SEM "." SCOPE ".shared::cta.b64 p, [%1], %2;\n" \
               " selp.u32 %0, 1, 0, p;\n}"                                                 \
               : "=r"(done) : "r"(shared_address(bar)), "r"(parity) : "memory")
  do {
    if constexpr (!Cluster) {
      TG_TRY_WAIT("acquire", "cta");
    } else {
#if defined(TG_SHARED_ACQUIRE_FENCE)
      TG_TRY_WAIT("relaxed", "cluster");
#else
      TG_TRY_WAIT("acquire", "cluster");
#endif
    }
  } while (done == 0);
#undef TG_TRY_WAIT
#if defined(TG_SHARED_ACQUIRE_FENCE)
  if constexpr (Cluster) {
    asm volatile("fence.acquire.sync_restrict::shared::cluster.cluster;" ::: "memory");
  }
#endif
#endif
}

// A block of a cluster for the cluster program (fused_rotation.hpp): its own shared memory,
// the others' through the cluster (distributed shared memory), its transfers asynchronous
// stores that complete on the receiver's mbarriers.
template <class Regs>
struct DeviceClusterBlock : fused::DeviceBlock<Regs> {
  std::uint32_t parities = 0;  // bit i: the parity of the next phase mbarrier i completes
  fused::ClusterRoles roles_{};  // this block's, set once by the kernel
  unsigned half_threads = 0;     // threads per half: all of the block without product halves
  // The half of the block thread tid is in (product halves), and the first half's thread it helps.
  __device__ unsigned half(unsigned tid) const { return tid / half_threads; }
  __device__ unsigned partner(unsigned tid) const { return tid % half_threads; }
  __device__ void cluster_sync() { cooperative_groups::this_cluster().sync(); }
  __device__ unsigned rank(unsigned) const { return cooperative_groups::this_cluster().block_rank(); }
  __device__ std::uint32_t inboxes() const { return roles_.inboxes; }
  __device__ fused::ClusterRoles roles(unsigned) const { return roles_; }
  template <class U>
  __device__ U* local(U* p, unsigned) const {
    return p;
  }
  template <class U>
  __device__ U* remote(U* p, unsigned b) const {
    return cooperative_groups::this_cluster().map_shared_rank(p, b);
  }
  template <class U>
  __device__ void send(U* p, unsigned b, const U& v, std::uint64_t* signal) const {
    send_async(p, b, v, signal);
  }
  // Thread 0 initialises the block's mbarriers (a cluster barrier must follow before use).
  __device__ void init_signals(std::uint64_t* signals) const {
    if (threadIdx.x == 0) {
      for (unsigned i = 0; i < fused::cluster_signals; ++i) init_signal(signals + i);
    }
  }
  // Every thread of the block: waits until mbarrier `which` has counted `bytes` more (thread
  // 0 expects them, the one arrival of the phase).
  __device__ void wait_signal(unsigned tid, std::uint64_t* signals, unsigned which,
                              std::uint32_t bytes) {
    if (tid == 0) expect_signal(signals + which, bytes);
    wait_phase<true>(which, signals);
  }
  // Every thread of the block: waits for the next phase of mbarrier `which`, the block's own
  // fetch (acquire at CTA scope).
  __device__ void wait_fetched(unsigned, std::uint64_t* signals, unsigned which) {
    wait_phase<false>(which, signals);
  }
  template <bool Cluster>
  __device__ void wait_phase(unsigned which, std::uint64_t* signals) {
    wait_signal_phase<Cluster>(signals + which, (parities >> which) & 1u);
    parities ^= 1u << which;
  }
  // The block's last thread (the emulator's reverse order runs it first, so a fetch issued
  // before the others have read the stage shows): expects the bytes of the phase, its one
  // arrival, then asks for `segments` runs of `count` complex from device memory at
  // src + g * stride into dst + g * count of the block's own shared memory.
  // ready: null, or the counter of the rows' row set, which must reach target first
  // (wait_counter, by the issuing thread alone: the others wait for the fetch's phase).
  __device__ void fetch(unsigned tid, Complex* dst, const Complex* src, std::size_t count,
                        std::size_t stride, std::uint32_t segments, std::uint64_t* signal,
                        const std::uint64_t* ready = nullptr, std::uint64_t target = 0) const {
    if (tid != blockDim.x - 1) return;
    if (ready != nullptr) wait_counter(ready, target);
    fetch_segments(dst, src, count, stride, segments, signal);
  }
};

// A one-group block whose key rows come through a stage the TMA fills (LaunchShape::stage; the
// staged kernels below): thread 0 initialises the stage's mbarrier, the block's last thread
// asks for each row (fetch, as a cluster block's), and every thread waits for the phase
// (acquire at CTA scope), keeping the parity of the next.
template <class Regs>
struct DeviceStagedBlock : fused::DeviceBlock<Regs> {
  std::uint32_t parity = 0;
  __device__ void init_stage(std::uint64_t* signal) const {
    if (threadIdx.x == 0) init_signal(signal);
  }
  __device__ void fetch(unsigned tid, Complex* dst, const Complex* src, std::size_t count,
                        std::size_t stride, std::uint32_t segments, std::uint64_t* signal) const {
    if (tid == blockDim.x - 1) fetch_segments(dst, src, count, stride, segments, signal);
  }
  __device__ void wait_fetched(unsigned, std::uint64_t* signals, unsigned which) {
    wait_signal_phase<false>(signals + which, parity);
    parity ^= 1u;
  }
};
#endif

// One rotation per cluster of `blocks` blocks (the grid: whole clusters), each block of one
// group: every block loads the whole accumulator into its copy, the owner of column c stores it.
// sums: who sums the products (LaunchShape::sums; cluster_roles).
// Blocks of T = N/16 <= 256 threads: the registers are never capped below what the program
// needs.
// Unroll = fused::bundled_step: each rotation's group steps on its bundled key, at
// bundle + rotation * bundle_size(s) (fused_bundle_kernel; the 8-point program only); with
// ready's counters (BundleReady) the bundling still runs, and each row set's fetch waits for
// its counter (launched as the bundling's programmatic dependent); the kernel ends only after
// the bundling has (wait_primaries), so what the stream runs next finds it done.
template <unsigned K1, class Groups, unsigned Unroll = 1>
__global__ void __launch_bounds__(256) fused_cluster_rotation_kernel(
    std::uint32_t* acc_global, const std::uint32_t* powers, std::uint64_t capacity, Shape s,
    std::uint32_t blocks, std::uint32_t sums, const Complex* key, fused::StepInputs in,
    const Complex* bundle, fused::BundleReady ready) {
#if defined(TG_CLUSTER_CODE)
  TG_DYNAMIC_SHARED(shared);
  const fused::ClusterRoles roles =
      fused::cluster_roles(s, blocks, cooperative_groups::this_cluster().block_rank(), sums);
  const fused::ClusterMemory mem = fused::cluster_memory(s, blocks, roles.inboxes, shared);
  Torus32* copy = mem.acc;
  constexpr bool wide = fused::wide::is_wide<Groups>;  // 4 points per thread (fused_wide.hpp)
  using Regs = std::conditional_t<wide, fused::wide::Regs<K1>, fused::RotationRegs<K1>>;
  Regs regs;
  // Product halves (fused::cluster_halves): the 8-point program at a fixed length.
  constexpr unsigned halves = fused::product_halves && Groups::fixed && !wide ? 2 : 1;
  DeviceClusterBlock<Regs> blk{{regs, threadIdx.x}, 0, roles, blockDim.x / halves};
  blk.init_signals(mem.signals);  // visible after the cluster barrier a rotation starts with
  for (std::uint64_t rotation = blockIdx.x / blocks; rotation < capacity;
       rotation += gridDim.x / blocks) {
    const std::size_t at = rotation * K1 * s.N;
    for (std::uint32_t w = threadIdx.x; w < K1 * s.N; w += blockDim.x) copy[w] = acc_global[at + w];
    if constexpr (wide) {
      static_assert(Unroll != fused::bundled_step, "the wide program has no bundled steps");
      fused::wide::cluster_blind_rotate<K1, Groups, Unroll>(blk, s, blocks, shared,
                                                            powers + rotation * s.n, key, in);
    } else {
      if constexpr (Unroll == fused::bundled_step) {
        const std::uint64_t* own_ready =
            ready.counters != nullptr ? ready.counters + rotation * fused::bundle_steps(s)
                                      : nullptr;
        in.ready_target = ready.target;
        fused::cluster_blind_rotate<K1, Groups, Unroll, halves>(
            blk, s, blocks, shared, powers + rotation * s.n, key, in,
            bundle + rotation * fused::bundle_size(s), own_ready);
      } else {
        fused::cluster_blind_rotate<K1, Groups, Unroll, halves>(
            blk, s, blocks, shared, powers + rotation * s.n, key, in);
      }
    }
    if (const std::uint32_t c = roles.owned; c < K1) {
      const std::size_t column = std::size_t{c} * s.N;
      for (std::uint32_t w = threadIdx.x; w < s.N; w += blockDim.x) {
        acc_global[at + column + w] = copy[column + w];
      }
    }
    __syncthreads();
  }
  if constexpr (Unroll == fused::bundled_step) wait_primaries();
#else
  __trap();
#endif
}

// The key stage (LaunchShape::stage; compute capability 9.0 and the emulator, as the cluster
// code; sm_80 code is a trap the host never launches, FusedLimits::stage): the standard key's
// 1x1 at a fixed length, N = 2^(LogM+1), and its two lanes (k = 1): each row's key spectra
// fetched by the TMA into shared memory (fused_rotation.hpp, cmux_step). The same words as
// fused_fixed_rotation_kernel and fused_lane_rotation_kernel.
template <unsigned K1, unsigned LogM>
__global__ void TG_FIXED_BOUNDS(K1, 1) fused_staged_rotation_kernel(
    std::uint32_t* acc_global, const std::uint32_t* powers, std::uint64_t capacity, Shape s,
    fused::LaunchShape, const Complex* key, fused::StepInputs in) {
#if defined(TG_CLUSTER_CODE)
  rotate_blocks<K1, fused::FixedGroups<LogM>, 1, fused::FixedShape<1, 1, 1, fused::key_stage>,
                DeviceStagedBlock>(acc_global, powers, capacity, s, {}, key, in);
#else
  __trap();
#endif
}
template <unsigned LogM>
__global__ void __launch_bounds__(256) fused_staged_lane_kernel(
    std::uint32_t* acc_global, const std::uint32_t* powers, std::uint64_t capacity, Shape s,
    fused::LaunchShape, const Complex* key, fused::StepInputs in) {
#if defined(TG_CLUSTER_CODE)
  rotate_blocks<fused::lanes_columns, fused::FixedGroups<LogM>, 1,
                fused::FixedShape<1, 1, fused::max_lanes, fused::key_stage>, DeviceStagedBlock>(
      acc_global, powers, capacity, s, {}, key, in);
#else
  __trap();
#endif
}

using RotationKernel = void (*)(std::uint32_t*, const std::uint32_t*, std::uint64_t, Shape,
                               fused::LaunchShape, const Complex*, fused::StepInputs);
using ClusterKernel = void (*)(std::uint32_t*, const std::uint32_t*, std::uint64_t, Shape,
                              std::uint32_t, std::uint32_t, const Complex*, fused::StepInputs,
                              const Complex*, fused::BundleReady);

// The kernel of block shape `launch` for parameter set shape s: the lane kernel for lanes = 2
// (k = 1), the fixed-length one for 1x1 where there is one, else fused_blind_rotation_kernel;
// each of the key's form (Unroll = s.unroll).
template <unsigned K1, unsigned Unroll>
RotationKernel rotation_kernel_of(const fused::LaunchShape& launch, const Shape& s) {
  if constexpr (Unroll == 1) {
    if (launch.stage == fused::key_stage) {  // a fixed length (valid_shape)
      RotationKernel kernel = nullptr;
      fused::with_fixed_length(s.M(), [&](auto groups) {
        constexpr unsigned m = decltype(groups)::m;
        kernel = fused_staged_rotation_kernel<K1, m>;
        if constexpr (K1 == fused::lanes_columns) {
          if (launch.lanes == fused::max_lanes) kernel = fused_staged_lane_kernel<m>;
        }
      });
      // stage_fits admits the fixed lengths only (valid_wide: first_fixed_log2 ..
      // last_fixed_log2, the lengths with_fixed_length has kernels for).
      EXPECTS(kernel != nullptr, "rotation_kernel: no staged kernel for N=" + std::to_string(s.N));
      return kernel;
    }
  }
  if constexpr (K1 == fused::lanes_columns) {
    if (launch.lanes == fused::max_lanes) {
      RotationKernel kernel = fused_lane_rotation_kernel<fused::FftGroups, Unroll>;
      fused::with_fixed_length(s.M(), [&](auto groups) {
        kernel = fused_lane_rotation_kernel<decltype(groups), Unroll>;
      });
      return kernel;
    }
  }
  RotationKernel kernel = fused_blind_rotation_kernel<K1, Unroll>;
  if (launch.groups == 1 && launch.rotations == 1) {
    fused::with_fixed_length(s.M(), [&](auto groups) {
      kernel = fused_fixed_rotation_kernel<K1, decltype(groups)::m, Unroll>;
    });
  }
  return kernel;
}
template <unsigned K1>
RotationKernel rotation_kernel(const Shape& s, const fused::LaunchShape& launch) {
  return fused::with_unroll(s.unroll, [&](auto u) {
    return rotation_kernel_of<K1, decltype(u)::value>(launch, s);
  });
}

// The cluster kernel for s: the fixed-length one where there is one; with 4 points per thread
// the wide one (fused_wide.hpp; fixed lengths only, valid_shape).
// An unrolled key (s.unroll = 2 or 3) takes the kernels of that Unroll.
// Unroll = fused::bundled_step: the kernels of a bundled key (8 points per thread).
template <unsigned K1, unsigned Unroll>
ClusterKernel cluster_kernel_of(const Shape& s, std::uint32_t points) {
  ClusterKernel kernel = fused_cluster_rotation_kernel<K1, fused::FftGroups, Unroll>;
  if constexpr (Unroll != fused::bundled_step) {
    if (points == fused::wide_points) {
      fused::wide::with_length(s.M(), [&](auto groups) {
        kernel = fused_cluster_rotation_kernel<K1, decltype(groups), Unroll>;
      });
      return kernel;
    }
  }
  fused::with_fixed_length(s.M(), [&](auto groups) {
    kernel = fused_cluster_rotation_kernel<K1, decltype(groups), Unroll>;
  });
  return kernel;
}
template <unsigned K1>
ClusterKernel cluster_kernel(const Shape& s, std::uint32_t points = fused::points_per_thread,
                             bool bundled = false) {
  if (bundled) return cluster_kernel_of<K1, fused::bundled_step>(s, points);
  return fused::with_unroll(
      s.unroll, [&](auto u) { return cluster_kernel_of<K1, decltype(u)::value>(s, points); });
}

template <class Kernel>
void allow_shared(Kernel kernel, std::size_t bytes) {
  if (bytes > 48 * 1024) {
    set_kernel_attribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                         static_cast<int>(bytes));
  }
}

constexpr std::uint64_t max_blocks = std::uint64_t{1} << 30;

// Blocks of launch shape b that one multiprocessor keeps resident with `kernel` (occupancy
// API; its dynamic shared memory allowed first), 0 where a block has more threads than the
// kernel's registers allow or more shared memory than max_shared.
unsigned resident_blocks(RotationKernel kernel, const fused::LaunchShape& b, const Shape& shape,
                         std::size_t max_shared) {
  cudaFuncAttributes attributes{};
  CUDA_TRY(cudaFuncGetAttributes(&attributes, kernel));
  const std::size_t shared = fused::block_shared_bytes(b, shape);
  const unsigned threads = fused::block_threads(b, shape);
  if (threads > static_cast<unsigned>(attributes.maxThreadsPerBlock) || shared > max_shared) {
    return 0;
  }
  allow_shared(kernel, shared);
  int blocks = 0;
  CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel,
                                                         static_cast<int>(threads), shared));
  return static_cast<unsigned>(blocks);
}

template <unsigned K1>
FusedLimits fused_limits_k(const Shape& shape, int device, bool staged) {
  cudaFuncAttributes attributes{};
  CUDA_TRY(cudaFuncGetAttributes(&attributes, fused_blind_rotation_kernel<K1>));
  int optin = 0, multiprocessors = 0;
  CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  CUDA_TRY(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device));
  FusedLimits limits;
  limits.max_threads = static_cast<std::uint32_t>(attributes.maxThreadsPerBlock);
  limits.max_shared_bytes = static_cast<std::size_t>(optin) > attributes.sharedSizeBytes
                                ? static_cast<std::size_t>(optin) - attributes.sharedSizeBytes
                                : 0;
  const auto sms = static_cast<unsigned>(multiprocessors);
  // The key stage's kernels: code from compute capability 9.0 or later (as the cluster kernel's).
  fused::LaunchShape one{1, 1};
  one.stage = fused::key_stage;
  if (fused::stage_fits(one, shape)) {
    cudaFuncAttributes staged_attributes{};
    CUDA_TRY(cudaFuncGetAttributes(&staged_attributes, rotation_kernel<K1>(shape, one)));
    limits.stage = staged_attributes.ptxVersion >= 90;
  }
  if (!staged || !limits.stage) one.stage = 0;
  const unsigned blocks =
      resident_blocks(rotation_kernel<K1>(shape, one), one, shape, limits.max_shared_bytes);
  if (blocks == 0) return limits;
  limits.resident_threads = std::uint64_t{blocks} * sms * fused::block_threads(one, shape);
  // Lane room for the standard key and keys in pairs: on an H200 (docs/gpu.md sections 6.31
  // and 6.38) pairs' rotation on two lanes was 1.10x that of 1x1, the shape they took without,
  // at 65,536 (1.08x at 16,384), in one call. Keys in threes run two lanes where fused_lanes
  // = 2 asks for it, until a call measures them against their 1x1 (the `lanes` step).
  if (const fused::LaunchShape lanes{1, 1, 1, fused::max_lanes, fused::points_per_thread,
                                     fused::owner_sums, one.stage};
      fused::valid_lanes(lanes.lanes, shape) && shape.unroll <= 2) {
    limits.lane_rotations =
        std::uint64_t{resident_blocks(rotation_kernel<K1>(shape, lanes), lanes, shape,
                                      limits.max_shared_bytes)} *
        sms * fused::block_rotations(lanes);
  }
  return limits;
}

template <unsigned K1>
std::uint64_t fused_clusters_k(const Shape& shape, std::uint32_t blocks, std::uint32_t points,
                               int device) {
  int cluster_launch = 0;
  CUDA_TRY(cudaDeviceGetAttribute(&cluster_launch, cudaDevAttrClusterLaunch, device));
  if (cluster_launch == 0 || blocks < 2) return 0;
  // The kernel's code must come from compute capability 9.0 or later: a build for 8.x alone
  // runs on a 9.0 device from its 8.x PTX, whose cluster kernel is the trap.
  const ClusterKernel kernel = cluster_kernel<K1>(shape, points);
  cudaFuncAttributes attributes{};
  CUDA_TRY(cudaFuncGetAttributes(&attributes, kernel));
  if (attributes.ptxVersion < 90) return 0;
  const fused::LaunchShape shape_c{1, 1, blocks, 1, points};
  const std::size_t shared = fused::block_shared_bytes(shape_c, shape);
  // A block's inbox grows with the cluster (section 6.12): N = 4096 with 6 blocks needs more
  // shared memory than a block may have, and such a cluster runs nowhere.
  int optin = 0;
  CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  if (shared + static_cast<std::size_t>(attributes.sharedSizeBytes) > static_cast<std::size_t>(optin)) {
    return 0;
  }
  allow_shared(kernel, shared);
  cudaLaunchAttribute attribute;
  const cudaLaunchConfig_t config = cluster_config(
      attribute, dim3(blocks), dim3(fused::block_threads(shape_c, shape)), shared, nullptr, blocks);
  int clusters = 0;
  CUDA_TRY(cudaOccupancyMaxActiveClusters(&clusters, kernel, &config));
  return static_cast<unsigned>(clusters);
}

}  // namespace

std::uint64_t fused_clusters(const Shape& shape, std::uint32_t blocks, std::uint32_t points,
                             int device) {
  return shape.k1() == 2 ? fused_clusters_k<2>(shape, blocks, points, device)
                         : fused_clusters_k<3>(shape, blocks, points, device);
}

FusedLimits fused_limits(const Shape& shape, int device, bool staged) {
  return shape.k1() == 2 ? fused_limits_k<2>(shape, device, staged)
                         : fused_limits_k<3>(shape, device, staged);
}

void launch_fused_key(const std::uint32_t* bk, std::size_t polys, const Shape& shape,
                      const Complex* twist, const Complex* twiddles, Complex* out,
                      cudaStream_t stream) {
  if (polys == 0) return;
  const std::size_t shared = fused::buffer_points(shape.M()) * sizeof(Complex);
  allow_shared(fused_key_kernel, shared);
  const auto blocks = static_cast<unsigned>(std::min<std::uint64_t>(polys, max_blocks));
  TG_LAUNCH(fused_key_kernel, blocks, fused::fft_threads(shape.M()), shared, stream)
  (bk, polys, shape, twist, twiddles, out);
  CUDA_CHECK_LAUNCH(fused_key_kernel, stream);
}

void launch_fused_bundle(const std::uint32_t* powers, std::uint64_t capacity, const Shape& shape,
                         const Complex* key, const std::uint32_t* roots, const Complex* unit,
                         Complex* bundle, std::uint64_t* ready, std::uint64_t blocks,
                         cudaStream_t stream) {
  EXPECTS(shape.unroll >= 2 && shape.unroll <= fused::max_bundle_unroll,
          "launch_fused_bundle: an unrolled key (unroll 2 to 4), not unroll " +
              std::to_string(shape.unroll));
  const std::uint64_t items = fused::bundle_items(shape, capacity);
  if (items == 0) return;
  const auto grid = static_cast<unsigned>(
      std::min<std::uint64_t>(blocks == 0 ? items : std::min(blocks, items), max_blocks));
  fused::with_bundle_unroll(shape.unroll, [&](auto u) {
    const auto kernel = fused_bundle_kernel<decltype(u)::value>;
    // Beside the rotation (ready), multiprocessors that run bundling blocks keep the most
    // shared memory, so that a cluster block of the rotation fits beside them (a carveout
    // changes only on an idle one); else no preference, the driver's default.
    set_kernel_attribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                         ready != nullptr ? 100 : -1);
    TG_LAUNCH(kernel, grid, fused::bundle_threads, 0, stream)
    (powers, capacity, shape, key, roots, unit, bundle, ready);
    CUDA_CHECK_LAUNCH(fused_bundle_kernel, stream);
  });
}

std::uint64_t fused_bundle_overlap_blocks(const Shape& shape, std::uint32_t cluster_blocks,
                                          int device) {
  int sm_registers = 0, sm_threads = 0, multiprocessors = 0;
  CUDA_TRY(cudaDeviceGetAttribute(&sm_registers, cudaDevAttrMaxRegistersPerMultiprocessor, device));
  CUDA_TRY(cudaDeviceGetAttribute(&sm_threads, cudaDevAttrMaxThreadsPerMultiProcessor, device));
  CUDA_TRY(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device));
  cudaFuncAttributes rotation{}, bundling{};
  const ClusterKernel cluster =
      shape.k1() == 2 ? cluster_kernel<2>(shape, fused::points_per_thread, true)
                      : cluster_kernel<3>(shape, fused::points_per_thread, true);
  CUDA_TRY(cudaFuncGetAttributes(&rotation, cluster));
  fused::with_bundle_unroll(shape.unroll, [&](auto u) {
    CUDA_TRY(cudaFuncGetAttributes(&bundling, fused_bundle_kernel<decltype(u)::value>));
  });
  const fused::LaunchShape launch{1, 1, cluster_blocks, 1, fused::points_per_thread};
  const std::uint32_t per_sm = fused::bundle_blocks_beside(
      static_cast<std::uint32_t>(sm_registers), static_cast<std::uint32_t>(sm_threads),
      fused::block_threads(launch, shape), static_cast<std::uint32_t>(rotation.numRegs),
      static_cast<std::uint32_t>(bundling.numRegs));
  return std::uint64_t{per_sm} * static_cast<std::uint64_t>(multiprocessors);
}

bool launch_fused_blind_rotation(std::uint32_t* acc, const std::uint32_t* powers,
                                 std::uint64_t capacity, const Shape& shape,
                                 const kernel::fused::LaunchShape& launch, const Complex* key,
                                 const Complex* twist, const Complex* untwist,
                                 const Complex* twiddles, const kernel::GadgetConstants& gadget,
                                 const std::uint32_t* roots, const Complex* unit,
                                 const Complex* bundle, const fused::BundleReady& ready,
                                 cudaStream_t stream) {
  if (capacity == 0) return false;
  // A key in fours runs the bundled kernels only (its bundle null where it has no group step).
  const bool bundled = bundle != nullptr || shape.unroll > fused::max_kernel_unroll;
  EXPECTS(shape.unroll <= fused::max_kernel_unroll ||
              bundle != nullptr || fused::bundle_size(shape) == 0,
          "launch_fused_blind_rotation: a key in fours (unroll " + std::to_string(shape.unroll) +
              ") runs on bundled keys only");
  EXPECTS(!bundled || (launch.cluster > 1 && launch.points == fused::points_per_thread &&
                       shape.unroll > 1),
          "launch_fused_blind_rotation: a bundled key runs on clusters of 8 points per thread "
          "with an unrolled key, not cluster=" + std::to_string(launch.cluster) + ", points=" +
              std::to_string(launch.points) + ", unroll " + std::to_string(shape.unroll));
  EXPECTS(ready.counters == nullptr || (bundled && bundle != nullptr),
          "launch_fused_blind_rotation: counters of bundled row sets without bundled keys");
  EXPECTS(fused::valid_shape(launch, shape) && shape.k1() >= 2 && shape.k1() <= 3 &&
              (shape.unroll == 1 || fused::valid_unrolled(launch)),
          "launch_fused_blind_rotation: groups=" + std::to_string(launch.groups) +
              ", rotations=" + std::to_string(launch.rotations) +
              ", lanes=" + std::to_string(launch.lanes) + ", points=" +
              std::to_string(launch.points) + ", sums=" + std::to_string(launch.sums) +
              " with k+1=" + std::to_string(shape.k1()) +
              ", unroll " + std::to_string(shape.unroll));
  const std::size_t shared = fused::block_shared_bytes(launch, shape);
  const unsigned threads = fused::block_threads(launch, shape);
  const std::uint32_t per_block = fused::block_rotations(launch);
  const std::uint64_t needed = (capacity + per_block - 1) / per_block;
  const auto blocks = static_cast<unsigned>(std::min<std::uint64_t>(needed, max_blocks));
  fused::StepInputs in;
  in.twist = twist;
  in.untwist = untwist;
  in.W = twiddles;
  in.gadget = gadget;
  in.roots = roots;
  in.unit = unit;
  if (launch.cluster > 1) {
    const std::uint64_t clusters = std::min<std::uint64_t>(capacity, max_blocks / launch.cluster);
    const auto grid = static_cast<unsigned>(clusters * launch.cluster);
    const ClusterKernel fused_cluster_rotation =
        shape.k1() == 2 ? cluster_kernel<2>(shape, launch.points, bundled)
                        : cluster_kernel<3>(shape, launch.points, bundled);
    allow_shared(fused_cluster_rotation, shared);
    const bool after =
        TG_LAUNCH_CLUSTER_AFTER(fused_cluster_rotation, grid, threads, shared, stream,
                                launch.cluster, ready.counters != nullptr)(
            acc, powers, capacity, shape, launch.cluster, launch.sums, key, in, bundle, ready);
    CUDA_CHECK_LAUNCH(fused_cluster_rotation_kernel, stream);
    return after;
  }
  const RotationKernel fused_rotation =
      shape.k1() == 2 ? rotation_kernel<2>(shape, launch) : rotation_kernel<3>(shape, launch);
  allow_shared(fused_rotation, shared);
  TG_LAUNCH(fused_rotation, blocks, threads, shared, stream)
  (acc, powers, capacity, shape, launch, key, in);
  CUDA_CHECK_LAUNCH(fused_blind_rotation_kernel, stream);
  return false;
}

}  // namespace torusgate::gpu::detail
