// The CUDA backend's kernels and their launchers. A kernel is a grid-stride loop over one
// function of kernel_grid.hpp (the work of one index, tested on the CPU through the host
// mirror), so any element count runs with a bounded grid. The batched cuFFT transforms
// between the CMUX kernels are issued by cuda_engine.cu.
#include "cuda_kernels.cuh"

#include <algorithm>

#include "cuda_resources.cuh"
#include "kernel_grid.hpp"

namespace torusgate::gpu::detail {
namespace {

using kernel::Torus32;

constexpr unsigned threads_per_block = 256;
constexpr unsigned ks_gates = grid::key_switch_gates_per_block;
constexpr unsigned ks_tile = grid::key_switch_tile;
constexpr unsigned ks_threads = grid::key_switch_threads;
constexpr std::uint64_t max_blocks = std::uint64_t{1} << 24;

unsigned blocks_for(std::uint64_t total) {
  return static_cast<unsigned>(
      std::min<std::uint64_t>((total + threads_per_block - 1) / threads_per_block, max_blocks));
}

#define TG_GRID_STRIDE(idx, total)                                                    \
  for (std::uint64_t idx = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x;      \
       idx < (total); idx += std::uint64_t{gridDim.x} * blockDim.x)

__global__ void bk_fold_twist_kernel(std::uint64_t total, const std::uint32_t* bk, Shape s,
                                     const Complex* twist, Complex* out) {
  TG_GRID_STRIDE(idx, total) grid::bk_fold_twist_at(idx, bk, s, twist, out);
}

__global__ void free_gates_kernel(std::uint64_t total, const OpDesc* ops, std::uint32_t op_count,
                                  Shape s, std::uint32_t* result_words) {
  TG_GRID_STRIDE(idx, total) grid::free_gates_at(idx, ops, op_count, s, result_words);
}

__global__ void linear_combination_kernel(std::uint64_t total, const BootOpDesc* ops,
                                          std::uint32_t op_count, std::uint64_t rotation_begin,
                                          Shape s, std::uint32_t* pre) {
  TG_GRID_STRIDE(idx, total) grid::linear_combination_at(idx, ops, op_count, rotation_begin, s, pre);
}

__global__ void accumulator_init_kernel(std::uint64_t total, const std::uint32_t* pre,
                                        std::uint64_t capacity, Shape s, std::uint32_t* powers,
                                        std::uint32_t* acc) {
  TG_GRID_STRIDE(idx, total) grid::accumulator_init_at(idx, pre, capacity, s, powers, acc);
}

__global__ void combination_init_kernel(std::uint64_t total, const BootOpDesc* ops,
                                        std::uint32_t op_count, std::uint64_t rotation_begin,
                                        std::uint64_t rotations, std::uint64_t capacity, Shape s,
                                        std::uint32_t* powers, std::uint32_t* acc) {
  TG_GRID_STRIDE(idx, total) {
    grid::combination_init_at(idx, ops, op_count, rotation_begin, rotations, capacity, s, powers,
                              acc);
  }
}

__global__ void rotate_decompose_kernel(std::uint64_t total, const std::uint32_t* acc,
                                        const std::uint32_t* powers, std::uint32_t step, Shape s,
                                        GadgetConstants g, const Complex* twist,
                                        Complex* digits, bool rotate) {
  TG_GRID_STRIDE(idx, total) {
    grid::rotate_decompose_at(idx, acc, powers, step, s, g, twist, digits, rotate);
  }
}

__global__ void multiply_accumulate_group_kernel(std::uint64_t total, const Complex* digits,
                                                 const Complex* key_group,
                                                 const std::uint32_t* powers, std::uint32_t bit,
                                                 const std::uint32_t* roots, const Complex* unit,
                                                 Shape s, Complex* product) {
  TG_GRID_STRIDE(idx, total) {
    grid::multiply_accumulate_group_at(idx, digits, key_group, powers, bit, roots, unit, s,
                                       product);
  }
}

__global__ void multiply_accumulate_kernel(std::uint64_t total, const Complex* digits,
                                           const Complex* key_step, Shape s, Complex* product) {
  TG_GRID_STRIDE(idx, total) grid::multiply_accumulate_at(idx, digits, key_step, s, product);
}

__global__ void untwist_round_add_kernel(std::uint64_t total, const Complex* product,
                                         const Complex* untwist, Shape s, std::uint32_t* acc) {
  TG_GRID_STRIDE(idx, total) grid::untwist_round_add_at(idx, product, untwist, s, acc);
}

__global__ void sample_extract_kernel(std::uint64_t total, const BootOpDesc* ops,
                                      std::uint32_t op_count, Chunk chunk,
                                      const std::uint32_t* acc, Shape s,
                                      std::uint32_t* extracted, std::uint64_t* result_index) {
  TG_GRID_STRIDE(idx, total) {
    grid::sample_extract_at(idx, ops, op_count, chunk, acc, s, extracted, result_index);
  }
}

__global__ void write_outputs_kernel(std::uint64_t total, const OpDesc* ops,
                                     std::uint32_t op_count, Shape s,
                                     const std::uint32_t* result_words) {
  TG_GRID_STRIDE(idx, total) grid::write_output_at(idx, ops, op_count, s, result_words);
}

__global__ void key_switch_clear_kernel(std::uint64_t total, const std::uint64_t* result_index,
                                        std::uint32_t n1, std::uint32_t* result_words) {
  TG_GRID_STRIDE(idx, total) grid::key_switch_clear_at(idx, result_index, n1, result_words);
}

// Key switching: a block takes ks_gates gates, ks_threads output words and the input
// coefficients of slice blockIdx.z (span of them; all in one slice unless the batch is
// small, kernel_grid.hpp); the gates' input coefficients go through shared memory in tiles,
// so each key sample a digit selects is read once per block for all its gates (from L1/L2
// when several gates select the same one).
__global__ void __launch_bounds__(ks_threads)
    key_switch_kernel(const std::uint32_t* extracted, std::uint64_t jobs,
                      const std::uint64_t* result_index, const std::uint32_t* ksk,
                      KeySwitchConstants ks, std::uint32_t span, std::uint32_t* result_words) {
  __shared__ Torus32 tile[ks_gates * ks_tile];
  const std::uint64_t g0 = std::uint64_t{blockIdx.x} * ks_gates;
  const std::uint32_t w = blockIdx.y * blockDim.x + threadIdx.x;
  const auto gates = static_cast<std::uint32_t>(jobs - g0 < ks_gates ? jobs - g0 : ks_gates);
  const std::uint32_t begin = blockIdx.z * span;
  const std::uint32_t end = ks.input_dimension - begin < span ? ks.input_dimension : begin + span;
  const bool sliced = gridDim.z > 1;
  Torus32 acc[ks_gates];
  grid::key_switch_start<ks_gates>(w, g0, gates, extracted, ks, acc, blockIdx.z == 0);
  for (std::uint32_t i0 = begin; i0 < end; i0 += ks_tile) {
    grid::key_switch_load_tile(threadIdx.x, blockDim.x, g0, gates, i0, end, ks_gates, ks_tile,
                               extracted, ks, tile);
    __syncthreads();
    grid::key_switch_accumulate_tile<ks_gates>(w, gates, i0, end, ks_tile, tile, ksk, ks, acc);
    __syncthreads();
  }
  grid::key_switch_store<ks_gates>(w, g0, gates, result_index, ks, acc, result_words, sliced);
}

}  // namespace

void load_rotation_kernels() {
  cudaFuncAttributes a{};
  CUDA_TRY(cudaFuncGetAttributes(&a, accumulator_init_kernel));
  CUDA_TRY(cudaFuncGetAttributes(&a, rotate_decompose_kernel));
  CUDA_TRY(cudaFuncGetAttributes(&a, multiply_accumulate_kernel));
  CUDA_TRY(cudaFuncGetAttributes(&a, multiply_accumulate_group_kernel));
  CUDA_TRY(cudaFuncGetAttributes(&a, untwist_round_add_kernel));
}

void launch_bk_fold_twist(const std::uint32_t* bk, std::size_t polys, const Shape& shape,
                          const Complex* twist, Complex* out, cudaStream_t stream) {
  const std::uint64_t total = grid::bk_fold_twist_size(polys, shape);
  if (total == 0) return;
  TG_LAUNCH(bk_fold_twist_kernel, blocks_for(total), threads_per_block, 0, stream)
  (total, bk, shape, twist, out);
  CUDA_CHECK_LAUNCH(bk_fold_twist_kernel, stream);
}

void launch_free_gates(const OpDesc* ops, std::uint32_t op_count, std::uint64_t results,
                       const Shape& shape, std::uint32_t* result_words, cudaStream_t stream) {
  const std::uint64_t total = grid::sample_words_size(results, shape);
  if (total == 0 || op_count == 0) return;
  TG_LAUNCH(free_gates_kernel, blocks_for(total), threads_per_block, 0, stream)
  (total, ops, op_count, shape, result_words);
  CUDA_CHECK_LAUNCH(free_gates_kernel, stream);
}

void launch_linear_combination(const BootOpDesc* ops, std::uint32_t op_count,
                               std::uint64_t rotation_begin, std::uint64_t rotations,
                               const Shape& shape, std::uint32_t* pre, cudaStream_t stream) {
  const std::uint64_t total = grid::sample_words_size(rotations, shape);
  if (total == 0 || op_count == 0) return;
  TG_LAUNCH(linear_combination_kernel, blocks_for(total), threads_per_block, 0, stream)
  (total, ops, op_count, rotation_begin, shape, pre);
  CUDA_CHECK_LAUNCH(linear_combination_kernel, stream);
}

void launch_accumulator_init(const std::uint32_t* pre, std::uint64_t capacity, const Shape& shape,
                             std::uint32_t* powers, std::uint32_t* acc, cudaStream_t stream) {
  const std::uint64_t total = grid::accumulator_init_size(capacity, shape);
  if (total == 0) return;
  TG_LAUNCH(accumulator_init_kernel, blocks_for(total), threads_per_block, 0, stream)
  (total, pre, capacity, shape, powers, acc);
  CUDA_CHECK_LAUNCH(accumulator_init_kernel, stream);
}

void launch_combination_init(const BootOpDesc* ops, std::uint32_t op_count,
                             std::uint64_t rotation_begin, std::uint64_t rotations,
                             std::uint64_t capacity, const Shape& shape, std::uint32_t* powers,
                             std::uint32_t* acc, cudaStream_t stream) {
  const std::uint64_t total = grid::accumulator_init_size(capacity, shape);
  if (total == 0) return;
  TG_LAUNCH(combination_init_kernel, blocks_for(total), threads_per_block, 0, stream)
  (total, ops, op_count, rotation_begin, rotations, capacity, shape, powers, acc);
  CUDA_CHECK_LAUNCH(combination_init_kernel, stream);
}

void launch_rotate_decompose(const std::uint32_t* acc, const std::uint32_t* powers,
                             std::uint32_t step, std::uint64_t capacity, const Shape& shape,
                             const GadgetConstants& gadget, const Complex* twist,
                             Complex* digits, cudaStream_t stream, bool rotate) {
  const std::uint64_t total = grid::polynomial_points_size(capacity, shape);
  if (total == 0) return;
  TG_LAUNCH(rotate_decompose_kernel, blocks_for(total), threads_per_block, 0, stream)
  (total, acc, powers, step, shape, gadget, twist, digits, rotate);
  CUDA_CHECK_LAUNCH(rotate_decompose_kernel, stream);
}

void launch_multiply_accumulate_group(const Complex* digits, const Complex* key_group,
                                      const std::uint32_t* powers, std::uint32_t bit,
                                      const std::uint32_t* roots, const Complex* unit,
                                      std::uint64_t capacity, const Shape& shape,
                                      Complex* product, cudaStream_t stream) {
  const std::uint64_t total = grid::rotation_points_size(capacity, shape);
  if (total == 0) return;
  TG_LAUNCH(multiply_accumulate_group_kernel, blocks_for(total), threads_per_block, 0, stream)
  (total, digits, key_group, powers, bit, roots, unit, shape, product);
  CUDA_CHECK_LAUNCH(multiply_accumulate_group_kernel, stream);
}

void launch_multiply_accumulate(const Complex* digits, const Complex* key_step,
                                std::uint64_t capacity, const Shape& shape, Complex* product,
                                cudaStream_t stream) {
  const std::uint64_t total = grid::rotation_points_size(capacity, shape);
  if (total == 0) return;
  TG_LAUNCH(multiply_accumulate_kernel, blocks_for(total), threads_per_block, 0, stream)
  (total, digits, key_step, shape, product);
  CUDA_CHECK_LAUNCH(multiply_accumulate_kernel, stream);
}

void launch_untwist_round_add(const Complex* product, const Complex* untwist,
                              std::uint64_t capacity, const Shape& shape, std::uint32_t* acc,
                              cudaStream_t stream) {
  const std::uint64_t total = grid::polynomial_points_size(capacity, shape);
  if (total == 0) return;
  TG_LAUNCH(untwist_round_add_kernel, blocks_for(total), threads_per_block, 0, stream)
  (total, product, untwist, shape, acc);
  CUDA_CHECK_LAUNCH(untwist_round_add_kernel, stream);
}

void launch_sample_extract(const BootOpDesc* ops, std::uint32_t op_count, const Chunk& chunk,
                           const std::uint32_t* acc, const Shape& shape,
                           std::uint32_t* extracted, std::uint64_t* result_index,
                           cudaStream_t stream) {
  const std::uint64_t total = grid::extract_size(chunk, shape);
  if (total == 0 || op_count == 0) return;
  TG_LAUNCH(sample_extract_kernel, blocks_for(total), threads_per_block, 0, stream)
  (total, ops, op_count, chunk, acc, shape, extracted, result_index);
  CUDA_CHECK_LAUNCH(sample_extract_kernel, stream);
}

void launch_key_switch(const std::uint32_t* extracted, std::uint64_t jobs,
                       const std::uint64_t* result_index, const std::uint32_t* ksk,
                       const KeySwitchConstants& ks, std::uint32_t* result_words,
                       std::uint32_t span, cudaStream_t stream) {
  if (jobs == 0) return;
  const std::uint32_t n1 = ks.n + 1;
  const std::uint32_t slices = grid::key_switch_slices(ks.input_dimension, span);
  if (slices > 1) {
    const std::uint64_t total = grid::key_switch_clear_size(jobs, n1);
    TG_LAUNCH(key_switch_clear_kernel, blocks_for(total), threads_per_block, 0, stream)
    (total, result_index, n1, result_words);
    CUDA_CHECK_LAUNCH(key_switch_clear_kernel, stream);
  }
  const dim3 grid_size(static_cast<unsigned>((jobs + ks_gates - 1) / ks_gates),
                       (n1 + ks_threads - 1) / ks_threads, slices);
  TG_LAUNCH(key_switch_kernel, grid_size, ks_threads, 0, stream)
  (extracted, jobs, result_index, ksk, ks, span, result_words);
  CUDA_CHECK_LAUNCH(key_switch_kernel, stream);
}

void launch_write_outputs(const OpDesc* ops, std::uint32_t op_count, std::uint64_t results,
                          const Shape& shape, const std::uint32_t* result_words,
                          cudaStream_t stream) {
  const std::uint64_t total = grid::sample_words_size(results, shape);
  if (total == 0 || op_count == 0) return;
  TG_LAUNCH(write_outputs_kernel, blocks_for(total), threads_per_block, 0, stream)
  (total, ops, op_count, shape, result_words);
  CUDA_CHECK_LAUNCH(write_outputs_kernel, stream);
}

}  // namespace torusgate::gpu::detail
