// Launchers of the fused blind-rotation engine's kernels (fused_kernels.cu): the fused Fourier
// key made on the device, and the whole blind rotation of a chunk in one kernel (one block per
// rotation, fused_rotation.hpp). Each checks its launch and throws on failure.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "batch_plan.hpp"
#include "fused_rotation.hpp"
#include "kernel_math.hpp"

namespace torusgate::gpu::detail {

// What the engine needs to know about the rotation kernel of k+1 = shape.k1() columns on the
// current device: its thread limit for its registers, the shared memory a block may use, and
// the threads of one-group blocks the whole device keeps resident at once, and the rotations
// the lane kernel (two per thread) keeps resident at once: 0 where k+1 != 2, for keys in
// threes and fours (docs/gpu.md section 6.38) or where it cannot run (occupancy API); with
// `staged`, those of the key stage's kernels where they run. stage: whether the key stage's
// kernels (LaunchShape::stage) run on this device for this shape (stage_fits, and code from
// compute capability 9.0).
struct FusedLimits {
  std::uint32_t max_threads = 0;
  std::size_t max_shared_bytes = 0;
  std::uint64_t resident_threads = 0;
  std::uint64_t lane_rotations = 0;
  bool stage = false;
};
FusedLimits fused_limits(const Shape& shape, int device, bool staged = false);

// How many clusters of `blocks` blocks of the cluster kernel (one rotation each; `points`
// per thread: 8, or 4 for the wide kernel) the device runs at once (the occupancy API); 0
// where it has no thread block clusters (compute capability below 9.0) or cannot run one.
std::uint64_t fused_clusters(const Shape& shape, std::uint32_t blocks, std::uint32_t points,
                             int device);

// Every key polynomial (`polys` of N coefficients, core's BootstrappingKey order) to its
// fused spectrum (fused_rotation.hpp: fold, twist, the engine's own FFT, key_slot order).
void launch_fused_key(const std::uint32_t* bk, std::size_t polys, const Shape& shape,
                      const kernel::Complex* twist, const kernel::Complex* twiddles,
                      kernel::Complex* out, cudaStream_t stream);

// The bundled keys of `capacity` rotations (switched masks [capacity][n]) of an unrolled key
// (shape.unroll = 2 to 4; fused_rotation.hpp, bundle_point_at): bundle_size(shape) complex per
// rotation into `bundle`, from the fused key `key`, `roots` and `unit`, in work items of
// bundle_item's order. ready: null (the rotation launched after it waits for its end), or the
// chunk's counters (BundleReady: each row set's counts the parts written; the rotation,
// launched after it with `ready`, starts while it runs); then `blocks` blocks (0: one per work
// item), fused_bundle_overlap_blocks's, so that the rotation's clusters find room beside them.
void launch_fused_bundle(const std::uint32_t* powers, std::uint64_t capacity, const Shape& shape,
                         const kernel::Complex* key, const std::uint32_t* roots,
                         const kernel::Complex* unit, kernel::Complex* bundle,
                         std::uint64_t* ready, std::uint64_t blocks, cudaStream_t stream);

// Blocks of the bundling that the device runs beside one block of the cluster kernel of a
// bundled key (`points` 8) on each multiprocessor (fused::bundle_blocks_beside with the
// kernels' registers and threads), times its multiprocessors.
std::uint64_t fused_bundle_overlap_blocks(const Shape& shape, std::uint32_t cluster_blocks,
                                          int device);

// The n CMUX steps of `capacity` accumulators ([capacity][k1][N], switched masks
// [capacity][n]) in blocks, or (launch.cluster > 1) clusters, of the launch shape `launch`
// (fused_rotation.hpp); for an unrolled key (shape.unroll = 2 or 3) its group steps, with `roots`
// (each key slot's root exponent) and `unit` (zeta^x, x < 2N); null for the standard key.
// bundle: null, or the chunk's bundled keys (launch_fused_bundle), on whose row sets the group
// steps run (clusters of 8 points per thread only; a key in fours always runs so); ready: with
// counters, the bundling is still running (launch_fused_bundle with them, just before on the
// stream): the rotation is launched as its programmatic dependent and waits for each row set.
// Returns whether it runs as one (false without counters, and where the runtime refused the
// attribute: it then runs after the bundling's end, and its waits find every count there).
bool launch_fused_blind_rotation(std::uint32_t* acc, const std::uint32_t* powers,
                                 std::uint64_t capacity, const Shape& shape,
                                 const kernel::fused::LaunchShape& launch, const kernel::Complex* key,
                                 const kernel::Complex* twist, const kernel::Complex* untwist,
                                 const kernel::Complex* twiddles,
                                 const kernel::GadgetConstants& gadget,
                                 const std::uint32_t* roots, const kernel::Complex* unit,
                                 const kernel::Complex* bundle,
                                 const kernel::fused::BundleReady& ready, cudaStream_t stream);

}  // namespace torusgate::gpu::detail
