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

constexpr std::uint64_t max_gate_blocks = 65535;  // grid y (a loop beyond)

using FragmentA = wmma::fragment<wmma::matrix_a, kg::fragment, kg::fragment, kg::fragment,
                                 unsigned char, wmma::row_major>;
using FragmentB = wmma::fragment<wmma::matrix_b, kg::fragment, kg::fragment, kg::fragment,
                                 unsigned char, wmma::col_major>;
using Accumulator =
    wmma::fragment<wmma::accumulator, kg::fragment, kg::fragment, kg::fragment, int>;

// Block (x, y): output words [64x, 64x + 64) in all four planes (256 matrix columns) of gate
// tiles y, y + gridDim.y, ... (64 gates each). The word tiles of a gate tile are neighbours in
// the launch order (x first), so the blocks that run together read the same gates'
// coefficients (hits in L2 after the first) as well as the same rows of the key. Per step of
// 64 matrix rows: the A tile made from the gates' digits and the B tile copied from the
// matrix into one of two stages of shared memory, one barrier, then the next step's A loads
// issued into registers, its B tile copied asynchronously into the other stage, and each
// warp's 2 x 4 fragment products for each of the step's 4 slabs (the loads' latency hides
// behind them). Epilogue: each warp recombines its four planes' accumulators in
// registers, stores the words through shared memory (the same bytes as the stages), and the
// block subtracts them from the init. G: groups_per_thread(base_log).
template <unsigned G>
__global__ void __launch_bounds__(kg::threads, kg::blocks_per_multiprocessor)
    key_switch_gemm_kernel(const std::uint32_t* extracted, std::uint64_t jobs,
                           const std::uint64_t* result_index, const std::uint8_t* matrix,
                           kernel::KeySwitchConstants ks, kg::Layout layout,
                           std::uint32_t* result_words) {
  TG_DYNAMIC_SHARED_ALIGNED(stages, 128);  // kg::shared_bytes
  auto* const c_tile = reinterpret_cast<std::int32_t*>(stages);
  const unsigned thread = threadIdx.x, warp = threadIdx.x / kg::warp_size;
  const std::uint32_t w0 = blockIdx.x * kg::tile_words;
  const std::uint64_t tiles = kg::gate_tiles(jobs);
  for (std::uint64_t tile = blockIdx.y; tile < tiles; tile += gridDim.y) {
    const std::uint64_t g0 = tile * kg::tile_gates;
    const auto gates = static_cast<std::uint32_t>(
        jobs - g0 < kg::tile_gates ? jobs - g0 : std::uint64_t{kg::tile_gates});
    Accumulator acc[kg::warp_fragments_m][kg::planes];
#pragma unroll
    for (unsigned fm = 0; fm < kg::warp_fragments_m; ++fm) {
#pragma unroll
      for (unsigned b = 0; b < kg::planes; ++b) wmma::fill_fragment(acc[fm][b], 0);
    }
    kg::AFetch<G> a_next;
    kg::fetch_a(thread, g0, gates, 0, extracted, ks, layout, a_next);
    kg::copy_b_tile_async(thread, 0, w0, matrix, layout, stages + kg::b_stage_offset(0));
    unsigned stage = 0;
    for (std::uint32_t k0 = 0; k0 < layout.rows_padded; k0 += kg::tile_k, stage ^= 1u) {
      // Stage `stage` was last read by the products of two steps ago, which every warp
      // finished before the barrier of the step between.
      std::uint8_t* const a_tile = stages + kg::a_stage_offset(stage);
      std::uint8_t* const b_tile = stages + kg::b_stage_offset(stage);
      kg::write_a_tile(thread, ks, layout, a_next, a_tile);
      kernel::copy16_async_wait();  // this thread's B pieces of this step
      __syncthreads();
      if (k0 + kg::tile_k < layout.rows_padded) {
        kg::fetch_a(thread, g0, gates, k0 + kg::tile_k, extracted, ks, layout, a_next);
        // The other stage was last read by the previous step's products: done before the
        // barrier above.
        kg::copy_b_tile_async(thread, k0 + kg::tile_k, w0, matrix, layout,
                              stages + kg::b_stage_offset(stage ^ 1u));
      }
#pragma unroll
      for (unsigned kk = 0; kk < kg::tile_k; kk += kg::fragment) {
        FragmentA a[kg::warp_fragments_m];
#pragma unroll
        for (unsigned fm = 0; fm < kg::warp_fragments_m; ++fm) {
          wmma::load_matrix_sync(a[fm], a_tile + kg::a_fragment_offset(warp, fm, kk), kg::a_ldm);
        }
#pragma unroll
        for (unsigned b = 0; b < kg::planes; ++b) {
          FragmentB bf;
          wmma::load_matrix_sync(bf, b_tile + kg::b_fragment_offset(warp, b, kk), kg::b_ldm);
#pragma unroll
          for (unsigned fm = 0; fm < kg::warp_fragments_m; ++fm) {
            wmma::mma_sync(acc[fm][b], a[fm], bf, acc[fm][b]);
          }
        }
      }
    }
    __syncthreads();  // every warp's last products are done: the C tile overwrites the stages
#pragma unroll
    for (unsigned fm = 0; fm < kg::warp_fragments_m; ++fm) {
      // Element e of the four planes' fragments is the same (gate, word): recombined
      // mod 2^32 in place (the words as int32 bit patterns).
#pragma unroll
      for (int e = 0; e < acc[fm][0].num_elements; ++e) {
        acc[fm][0].x[e] = static_cast<std::int32_t>(
            kg::recombine(acc[fm][0].x[e], acc[fm][1].x[e], acc[fm][2].x[e], acc[fm][3].x[e]));
      }
      wmma::store_matrix_sync(c_tile + kg::c_fragment_index(warp, fm), acc[fm][0], kg::c_ldm,
                              wmma::mem_row_major);
    }
    __syncthreads();
    kg::store_tile(thread, g0, gates, w0, c_tile, extracted, result_index, ks, result_words);
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
  const dim3 grid_size(layout.word_tiles(),
                       static_cast<unsigned>(std::min(kg::gate_tiles(jobs), max_gate_blocks)));
  kg::with_groups_per_thread(ks.base_log, [&](auto groups) {
    constexpr unsigned G = decltype(groups)::value;
    TG_LAUNCH(key_switch_gemm_kernel<G>, grid_size, kg::threads, kg::shared_bytes, stream)
    (extracted, jobs, result_index, matrix, ks, layout, result_words);
  });
  CUDA_CHECK_LAUNCH(key_switch_gemm_kernel, stream);
}

}  // namespace torusgate::gpu::detail
