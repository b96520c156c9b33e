// key_switch_gemm_kernel: key switching of a batch as the integer matrix product
// out = init - A * (sum_b 2^(8b) B_b) mod 2^32 on the tensor cores (WMMA, u8 x u8 -> int32,
// 16 x 16 x 16 fragments; sm_72 and later), A the one-hot digit matrix, B_b the byte planes of
// the key (ks_gemm.hpp states the formulation, the layouts and the int32 bound). The tile
// work of each thread and warp is in ks_gemm.hpp, which the host mirror of the CPU tests
// (tests/gpu/test_ks_gemm_host.cpp) calls too.
#include "ks_gemm.cuh"

#include <mma.h>

#include <algorithm>
#include <cstdint>

#include "cuda_resources.cuh"
#include "ks_gemm.hpp"

namespace torusgate::gpu::detail {
namespace {

namespace kg = kernel::ks_gemm;
namespace wmma = nvcuda::wmma;
using kernel::Torus32;

constexpr std::uint64_t max_gate_blocks = std::uint64_t{1} << 20;  // grid x (a loop beyond)

using FragmentA = wmma::fragment<wmma::matrix_a, kg::fragment, kg::fragment, kg::fragment,
                                 unsigned char, wmma::row_major>;
using FragmentB = wmma::fragment<wmma::matrix_b, kg::fragment, kg::fragment, kg::fragment,
                                 unsigned char, wmma::row_major>;
using Accumulator =
    wmma::fragment<wmma::accumulator, kg::fragment, kg::fragment, kg::fragment, int>;

// Block (x, y): gate tiles x, x + gridDim.x, ... (64 gates each) and output words
// [32y, 32y + 32) in all four planes (128 matrix columns). Per step of 32 key samples: the
// A tile made from the gates' digits and the B tile copied from the matrix into one of two
// stages of shared memory, one barrier, then the next step's loads issued into registers and
// each warp's 2 x 2 fragment products of this step (the loads' latency hides behind them).
// Epilogue: the accumulators through shared memory (the same bytes as the stages),
// recombined and subtracted from the init.
__global__ void __launch_bounds__(kg::threads)
    key_switch_gemm_kernel(const std::uint32_t* extracted, std::uint64_t jobs,
                           const std::uint64_t* result_index, const std::uint8_t* matrix,
                           kernel::KeySwitchConstants ks, kg::Layout layout,
                           std::uint32_t* result_words) {
  __shared__ __align__(128) std::int32_t shared[kg::shared_bytes / 4];
  std::uint8_t* const stages = reinterpret_cast<std::uint8_t*>(shared);
  const unsigned thread = threadIdx.x, warp = threadIdx.x / kg::warp_size;
  const std::uint32_t w0 = blockIdx.y * kg::tile_words;
  const std::uint64_t tiles = kg::gate_tiles(jobs);
  for (std::uint64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const std::uint64_t g0 = tile * kg::tile_gates;
    const auto gates = static_cast<std::uint32_t>(
        jobs - g0 < kg::tile_gates ? jobs - g0 : std::uint64_t{kg::tile_gates});
    Accumulator acc[kg::warp_fragments_m][kg::warp_fragments_n];
#pragma unroll
    for (unsigned fm = 0; fm < kg::warp_fragments_m; ++fm) {
#pragma unroll
      for (unsigned fn = 0; fn < kg::warp_fragments_n; ++fn) wmma::fill_fragment(acc[fm][fn], 0);
    }
    kg::AFetch a_next;
    kg::BFetch b_next;
    kg::fetch_a(thread, g0, gates, 0, extracted, ks, layout, a_next);
    kg::fetch_b(thread, 0, w0, matrix, layout, b_next);
    unsigned stage = 0;
    for (std::uint32_t k0 = 0; k0 < layout.rows_padded; k0 += kg::tile_k, stage ^= 1u) {
      // Stage `stage` was last read by the products of two steps ago, which every warp
      // finished before the barrier of the step between.
      std::uint8_t* const a_tile = stages + kg::a_stage_offset(stage);
      std::uint8_t* const b_tile = stages + kg::b_stage_offset(stage);
      kg::write_a_tile(thread, ks, a_next, a_tile);
      kg::write_b_tile(thread, b_next, b_tile);
      __syncthreads();
      if (k0 + kg::tile_k < layout.rows_padded) {
        kg::fetch_a(thread, g0, gates, k0 + kg::tile_k, extracted, ks, layout, a_next);
        kg::fetch_b(thread, k0 + kg::tile_k, w0, matrix, layout, b_next);
      }
#pragma unroll
      for (unsigned kk = 0; kk < kg::tile_k; kk += kg::fragment) {
        FragmentA a[kg::warp_fragments_m];
        FragmentB b[kg::warp_fragments_n];
#pragma unroll
        for (unsigned fm = 0; fm < kg::warp_fragments_m; ++fm) {
          wmma::load_matrix_sync(a[fm], a_tile + kg::a_fragment_offset(warp, fm, kk), kg::a_ldm);
        }
#pragma unroll
        for (unsigned fn = 0; fn < kg::warp_fragments_n; ++fn) {
          wmma::load_matrix_sync(b[fn], b_tile + kg::b_fragment_offset(warp, fn, kk), kg::b_ldm);
        }
#pragma unroll
        for (unsigned fm = 0; fm < kg::warp_fragments_m; ++fm) {
#pragma unroll
          for (unsigned fn = 0; fn < kg::warp_fragments_n; ++fn) {
            wmma::mma_sync(acc[fm][fn], a[fm], b[fn], acc[fm][fn]);
          }
        }
      }
    }
    __syncthreads();  // every warp's last products are done: the C tile overwrites the stages
#pragma unroll
    for (unsigned fm = 0; fm < kg::warp_fragments_m; ++fm) {
#pragma unroll
      for (unsigned fn = 0; fn < kg::warp_fragments_n; ++fn) {
        wmma::store_matrix_sync(shared + kg::c_fragment_index(warp, fm, fn), acc[fm][fn],
                                kg::c_ldm, wmma::mem_row_major);
      }
    }
    __syncthreads();
    kg::store_tile(thread, g0, gates, w0, shared, extracted, result_index, ks, result_words);
    __syncthreads();  // the next gate tile's stages overwrite the C tile
  }
}

}  // namespace

void launch_key_switch_gemm(const std::uint32_t* extracted, std::uint64_t jobs,
                            const std::uint64_t* result_index, const std::uint8_t* matrix,
                            const kernel::KeySwitchConstants& ks, std::uint32_t* result_words,
                            cudaStream_t stream) {
  const kg::Layout layout = kg::make_layout(ks);
  kg::check_matrix_pointer(matrix);
  if (jobs == 0) return;
  const dim3 grid_size(static_cast<unsigned>(std::min(kg::gate_tiles(jobs), max_gate_blocks)),
                       layout.word_tiles());
  TG_LAUNCH(key_switch_gemm_kernel, grid_size, kg::threads, 0, stream)
  (extracted, jobs, result_index, matrix, ks, layout, result_words);
  CUDA_CHECK_LAUNCH(key_switch_gemm_kernel, stream);
}

}  // namespace torusgate::gpu::detail
