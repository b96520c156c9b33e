// Options and per-phase timings of the CUDA backend. Plain host C++ with standard headers
// only, so both the public backend header and the CUDA sources include it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace torusgate {

// The blind-rotation engines of the CUDA backend (docs/gpu.md).
enum class GpuEngine {
  // Per CMUX step: rotate/decompose kernel, batched cuFFT forward, multiply-accumulate
  // kernel, batched cuFFT inverse, untwist/round/add kernel, captured in a CUDA graph.
  cufft,
  // One kernel for the whole blind rotation: a block per rotation keeps its accumulator in
  // shared memory and runs its own FFT; only the key is read from device memory.
  fused,
};

// Key switching's formulations (both give the same words).
enum class GpuKeySwitching {
  // Per input coefficient and level, subtract the key sample the digit selects (int32).
  gather,
  // One matrix product (one-hot digits x key-switching matrix as 4 byte planes) on the int8
  // tensor cores, recombined exactly mod 2^32.
  tensor_core,
  // Per chunk, the faster one as measured on an H100 and an H200: gather for a chunk with
  // fewer than two of its blocks per multiprocessor (it then runs in slices of the input
  // coefficients: 0.022 ms for one gate against 0.86 ms for the matrix product on an H100,
  // docs/gpu.md section 6.20), tensor_core for larger ones (7-9% more bootstraps/s from 1,024
  // gates). The device holds both keys (tfhe_lib_128: 62.0 + 83.9 MB).
  automatic,
};

// How upload() and download() move ciphertexts between the caller's memory and the device
// (both give the same words).
enum class GpuTransfer {
  // One cudaMemcpyAsync from or to the caller's memory; for pageable memory the driver
  // stages it through its own page-locked buffers.
  direct,
  // Through two page-locked staging buffers of CudaOptions::staging_bytes each, allocated
  // once per backend: the host copy of one piece (split over the host's threads) overlaps
  // the DMA of the other.
  pinned,
};

const char* gpu_engine_name(GpuEngine engine);
const char* gpu_key_switching_name(GpuKeySwitching key_switching);
const char* gpu_transfer_name(GpuTransfer transfer);
// Registers per thread this build compiled the fused engine's block kernel for (CMake
// TORUSGATE_FUSED_MAX_REGISTERS); 0: the kernel's own launch bounds.
std::uint32_t fused_max_registers();

struct CudaOptions {
  // The CUDA device (index as gpu::devices() lists them). One backend per device and
  // thread; a process may hold one backend per GPU.
  int device = 0;
  // Device memory one batch may use for its scratch (linear combinations, accumulators,
  // digit and product spectra, cuFFT work area, extracted samples). 0: automatic, the free
  // device memory at evaluate() time minus a reserve. Batches needing more run in chunks.
  // Set it small to force chunking (tests). Must hold at least two blind rotations.
  std::size_t memory_budget_bytes = 0;
  // Capture each batch size's step loop in a CUDA graph (launched once per chunk); false
  // launches the same kernels and transforms one by one (for debugging and comparison).
  bool use_cuda_graphs = true;
  // Per-batch-size workspaces (cuFFT plans, scratch, graph) kept for reuse, least recently
  // used dropped first; 1..64.
  std::size_t max_cached_workspaces = 4;
  // The blind-rotation engine. The fused one (the default: faster at every batch size on an
  // H100 and an H200, docs/results/gpu/) needs k = 1 or 2 and N = 16..4096; cufft runs any
  // parameter set.
  GpuEngine engine = GpuEngine::fused;
  // The fused_* options below are the fused engine's: with engine=cufft the launch-shape
  // ones (groups, rotations per block, cluster blocks, lanes, cluster points and sums) are
  // checked against the parameter set but have no effect, so that one set of options serves a
  // run of both engines (bench_gates --gpu-engine cufft,fused); fused_bundle 2,
  // fused_bundle_overlap 2 and fused_key_stage 2, which ask for work the cuFFT engine cannot
  // do, are refused with it.
  // Fused engine launch shape: thread groups of N/16 threads per rotation (1, k+1 or (k+1)l)
  // and rotations per block (1..8, sharing each step's key reads). Both 0: chosen per chunk
  // (small batches: the most groups that keep every rotation on the device at once; batches
  // that fill it: 1 group, 1 rotation per block, or two lanes, below). One of them 0: that one
  // is 1. Every shape gives the same words.
  std::uint32_t fused_groups = 0;
  std::uint32_t fused_rotations_per_block = 0;
  // Fused engine: blocks of a thread block cluster per rotation (compute capability 9.0: the
  // blocks share one rotation's CMUX steps through distributed shared memory, for batch-1
  // latency). 0: automatic (a chunk of at most as many rotations as clusters of k+1 or (k+1)l
  // blocks fit on the device with a multiprocessor each takes them, where the device has
  // clusters and fused_groups and fused_rotations_per_block are 0); 1: never; k+1 or (k+1)l
  // (at most 8): always, with fused_groups and fused_rotations_per_block 0 or 1.
  std::uint32_t fused_cluster_blocks = 0;
  // Fused engine: rotations each thread carries (its lanes). 2: a block of one group of N/16
  // threads runs two rotations, each thread the same points of both, so every twiddle, twist
  // and key load serves two (half the key's L2 traffic per rotation; twice the registers);
  // needs k = 1, with fused_groups, fused_rotations_per_block and fused_cluster_blocks 0 or
  // 1. 0: automatic (2 for k = 1 when the other three are 0 and a chunk has more rotations
  // than one group per rotation keeps resident on the device at once; measured faster there
  // on an H100, docs/gpu.md section 6.5); 1: one lane, the rest of the shape automatic.
  // Keys in pairs take two lanes as the standard key does (docs/gpu.md section 6.38); keys
  // in threes where 2 asks for it, 0 gives them one lane (sections 6.27 and 6.31). A key in
  // fours runs bundled clusters only.
  std::uint32_t fused_lanes = 0;
  // Fused engine: points per thread in the transforms of a cluster (where one runs, chosen or
  // forced). 8: blocks of N/16 threads. 4: wide clusters, blocks of N/8 threads, each thread
  // half the work of a step (N = 512, 1024 or 2048; an unrolled key's group steps too).
  // 0: automatic: 8 (on an H100 with every block summing its column, 8 points were 5 to 17%
  // faster than 4 at batches 1 and 8 for every key form; docs/gpu.md section 6.20).
  // 4 needs a cluster that can run: fused_cluster_blocks above 1, or 0 with the shape
  // automatic.
  std::uint32_t fused_cluster_points = 0;
  // Fused engine: who sums the products of a cluster's step (where one runs, chosen or
  // forced). 1: the owner of each accumulator column sums its products, transforms them back
  // and sends the column to the blocks that decompose it (two transfers a step). 2: every
  // block sums the products of the column its row decomposes itself (one transfer a step, and
  // l times the partial products sent; docs/gpu.md section 6.18); needs a parameter set
  // whose clusters of (k+1)l blocks run ((k+1)l <= 8, two inbox buffers within 227 KiB) and
  // fused_cluster_blocks 0 or (k+1)l. 0: automatic (2 where it fits, else 1: on an H100 with
  // tfhe_lib_128, 2 was 2 to 6% faster at batches 1 and 8 for every key form; docs/gpu.md
  // section 6.20).
  std::uint32_t fused_cluster_sums = 0;
  // Fused engine, unrolled bootstrapping keys (unroll 2 or 3): whether a chunk that runs on
  // clusters of 8 points per thread first bundles each group step's 2^u - 1 GGSW into one row
  // set, sum_g (X^e_g - 1) GGSW_g, for each of its rotations (a kernel on the whole device,
  // (n/u) (k+1)l (k+1) N/2 complex a rotation: 20.6 MB for tfhe_lib_128 in threes), so that
  // the rotation's group steps take a CMUX step's products on the accumulator's own digits,
  // without the factors and the 2^u - 1 GGSW products (docs/gpu.md section 6.25). The same
  // words as without. 1: never. 2: always where a chunk runs on such a cluster (chunks on
  // other shapes run as without); needs the fused engine, an unrolled key and
  // fused_cluster_points 0 or 8. 0: automatic, which is 2 (on an H200 with tfhe_lib_128,
  // bundling made the rotation 1.32x faster in pairs and 1.67x in threes at batch 1, 1.25x and
  // 1.54x at 8; docs/gpu.md section 6.31). A key in fours (unroll 4) runs every chunk on such
  // bundled clusters: 0 or 2 (1 is refused).
  std::uint32_t fused_bundle = 0;
  // Fused engine, a chunk on bundled keys (fused_bundle 2, or a key in fours): whether its
  // rotation starts while the bundling runs (docs/gpu.md section 6.26). The rotation is then
  // launched as the bundling's programmatic dependent (compute capability 9.0, as clusters
  // are); the bundling makes every rotation's row sets in step order, on blocks that leave
  // room for a cluster block on each multiprocessor, and counts each row set's parts as it
  // writes them; a cluster block fetches a row set's rows once its count is complete. The same
  // words. 1: never (the rotation waits for the bundling's end). 2: always where a chunk
  // bundles; needs the fused engine, an unrolled key and fused_bundle 2 (pairs, threes) or a
  // key in fours. 0: automatic: a key in fours where the chunk's clusters take at most half
  // the multiprocessors (on an H200, 1.03x faster at batch 1, 1.34x at 8, 0.88x at 22, where
  // the clusters fill the device; pairs and threes 5 to 9% slower; docs/gpu.md section 6.31).
  std::uint32_t fused_bundle_overlap = 0;
  // Fused engine, the standard key's chunks on one group and one rotation slot per block (1x1
  // and two lanes, what large batches run): whether each digit row's key spectra come through
  // a stage in the block's shared memory that the TMA fills (compute capability 9.0's bulk
  // copy, asked for once the row before has been multiplied, waited for on an mbarrier just
  // before the row's products) instead of each thread loading its key points from L2 after its
  // transform (docs/gpu.md section 6.34). The same words. 1: never. 2: always where a chunk
  // runs on such blocks (chunks on clusters or G > 1 run as without); needs the fused engine,
  // the standard key (unroll 1), N = 512, 1024 or 2048, no forced cluster, groups or
  // rotations per block above 1, and a device and build with compute capability 9.0 (refused
  // at construction otherwise). 0: automatic, which is 1 until a GPU has measured it.
  std::uint32_t fused_key_stage = 0;
  GpuKeySwitching key_switching = GpuKeySwitching::automatic;
  // Host-device transfers of upload() and download(); pinned uses two page-locked buffers
  // of staging_bytes (64 KiB..1 GiB, a multiple of 4), made at the first transfer.
  GpuTransfer transfer = GpuTransfer::direct;
  std::size_t staging_bytes = std::size_t{8} << 20;

  // Whether the fused engine chooses its launch shape per chunk (clusters for the smallest):
  // fused_cluster_blocks, fused_groups and fused_rotations_per_block 0, fused_lanes 0 or 1.
  bool fused_shape_automatic() const {
    return fused_cluster_blocks == 0 && fused_groups == 0 && fused_rotations_per_block == 0 &&
           fused_lanes <= 1;
  }
  bool operator==(const CudaOptions&) const = default;
};

// Milliseconds. Transfers: the caller's wait in the last upload() / download() call (host
// clock, whichever CudaOptions::transfer). The others: on the device, measured with CUDA
// events on the backend's stream, for the last evaluate() (summed over its chunks). Each
// phase runs from the event where the one before it ended, so they add up to evaluate_ms;
// a phase includes the device's wait for the host's next call (at batch 1, the host's calls
// before the blind rotation's launch fall in tables and linear_combination).
struct CudaPhaseTimes {
  double upload_ms = 0;              // last upload(): host to device
  double download_ms = 0;            // last download(): device to host
  double tables_ms = 0;              // evaluate(): the batch's op descriptors, host to device
  double linear_combination_ms = 0;  // free gates (NOT, COPY, CONSTANT) and gate inputs
  double blind_rotation_ms = 0;      // modulus switch, test vector and every CMUX step
  double sample_extraction_ms = 0;   // extraction (and MUX sums)
  double key_switching_ms = 0;
  double output_ms = 0;              // results written to the output spans
  double evaluate_ms = 0;            // first to last event of the last evaluate()
  double setup_ms = 0;               // host time making workspaces (plans, graphs) in it
  std::size_t chunks = 0;            // chunks the last evaluate() ran in
  std::size_t chunk_capacity = 0;    // blind rotations the largest chunk's workspace holds
  std::uint32_t fused_groups = 0;    // fused engine: thread groups per rotation of the last chunk
  std::uint32_t fused_rotations_per_block = 0;  // and its rotations per block
  std::uint32_t fused_cluster_blocks = 0;       // and its blocks per cluster (1: no cluster)
  std::uint32_t fused_lanes = 0;                // and its rotations per thread
  std::uint32_t fused_cluster_points = 0;       // and its cluster's points per thread (0: none)
  std::uint32_t fused_cluster_sums = 0;         // and who summed its cluster's products (0: none)
  // and whether it ran on bundled keys made before its rotation (1), made while its rotation
  // ran (2: CudaOptions::fused_bundle_overlap), or not (0)
  std::uint32_t fused_bundle = 0;
  // and whether its key rows came through the TMA's stage (1: CudaOptions::fused_key_stage) or
  // not (0)
  std::uint32_t fused_key_stage = 0;
  // Key switching of the last chunk: 0 the tensor-core matrix product, 1 the gather kernel,
  // S > 1 the gather kernel in S slices of the input coefficients (a small chunk).
  std::uint32_t key_switching_slices = 0;
};

}  // namespace torusgate
