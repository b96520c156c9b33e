// The CUDA backend's kernels and their launchers. Every kernel computes its indices and calls
// a body function of kernel_math.hpp (tested on the CPU against core/); grid-stride loops,
// so any element count runs with a bounded grid. The batched cuFFT transforms between the
// CMUX kernels are issued by cuda_engine.cu.
#include "cuda_kernels.cuh"

#include <algorithm>

#include "cuda_resources.cuh"

namespace torusgate::gpu::detail {
namespace {

using kernel::Torus32;

constexpr unsigned threads_per_block = 256;
constexpr std::uint64_t max_blocks = std::uint64_t{1} << 24;

unsigned blocks_for(std::uint64_t total) {
  return static_cast<unsigned>(
      std::min<std::uint64_t>((total + threads_per_block - 1) / threads_per_block, max_blocks));
}

#define TG_GRID_STRIDE(idx, total)                                                    \
  for (std::uint64_t idx = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x;      \
       idx < (total); idx += std::uint64_t{gridDim.x} * blockDim.x)

__global__ void bk_fold_twist_kernel(const std::uint32_t* bk, std::uint64_t total,
                                     std::uint32_t N, const Complex* twist, Complex* out) {
  const std::uint32_t M = N / 2;
  TG_GRID_STRIDE(idx, total) {
    const std::uint64_t poly = idx / M;
    const std::uint32_t j = static_cast<std::uint32_t>(idx % M);
    const std::uint32_t* p = bk + poly * N;
    out[idx] = kernel::fold_twist(static_cast<double>(static_cast<std::int32_t>(p[j])),
                                  static_cast<double>(static_cast<std::int32_t>(p[j + M])),
                                  twist[j]);
  }
}

__global__ void free_gates_kernel(const OpDesc* ops, std::uint32_t op_count, std::uint64_t total,
                                  std::uint32_t n, std::uint32_t* result_words) {
  const std::uint32_t n1 = n + 1;
  TG_GRID_STRIDE(idx, total) {
    const std::uint64_t result = idx / n1;
    const std::uint32_t w = static_cast<std::uint32_t>(idx % n1);
    const OpDesc& op = ops[kernel::find_item(ops, op_count, &OpDesc::first_result, result)];
    if (op.kind == kernel::OpKind::Bootstrapped) continue;
    result_words[idx] = kernel::free_gate_word(op, result - op.first_result, w, n);
  }
}

__global__ void linear_combination_kernel(const BootOpDesc* ops, std::uint32_t op_count,
                                          std::uint64_t rotation_begin, std::uint64_t total,
                                          std::uint32_t n, std::uint32_t* pre) {
  const std::uint32_t n1 = n + 1;
  TG_GRID_STRIDE(idx, total) {
    const std::uint64_t rotation = rotation_begin + idx / n1;
    const std::uint32_t w = static_cast<std::uint32_t>(idx % n1);
    const BootOpDesc& op =
        ops[kernel::find_item(ops, op_count, &BootOpDesc::first_rotation, rotation)];
    pre[idx] = kernel::linear_combination_word(op, rotation, w, n);
  }
}

__global__ void accumulator_init_kernel(const std::uint32_t* pre, std::uint64_t capacity,
                                        Shape s, std::uint32_t* powers, std::uint32_t* acc) {
  const std::uint32_t acc_words = s.k1() * s.N, n1 = s.n1(), log2_2n = s.log2_2n();
  const std::uint64_t acc_total = capacity * acc_words;
  const std::uint64_t total = acc_total + capacity * s.n;
  TG_GRID_STRIDE(idx, total) {
    if (idx < acc_total) {
      const std::uint64_t r = idx / acc_words;
      const std::uint32_t w = static_cast<std::uint32_t>(idx % acc_words);
      acc[idx] = kernel::accumulator_init_word(pre + r * n1, w, s.n, s.k, s.N, log2_2n,
                                               kernel::eighths(1));
    } else {
      const std::uint64_t p = idx - acc_total;
      const std::uint64_t r = p / s.n;
      const std::uint32_t i = static_cast<std::uint32_t>(p % s.n);
      powers[p] = kernel::mod_switch(pre[r * n1 + i], log2_2n);
    }
  }
}

__global__ void rotate_decompose_kernel(const std::uint32_t* acc, const std::uint32_t* powers,
                                        std::uint32_t step, std::uint64_t capacity, Shape s,
                                        GadgetConstants g, const Complex* twist,
                                        Complex* digits) {
  const std::uint32_t M = s.M(), k1 = s.k1(), rows = s.rows();
  const std::uint64_t total = capacity * k1 * M;
  TG_GRID_STRIDE(idx, total) {
    const std::uint64_t r = idx / (std::uint64_t{k1} * M);
    const std::uint32_t c = static_cast<std::uint32_t>((idx / M) % k1);
    const std::uint32_t j = static_cast<std::uint32_t>(idx % M);
    kernel::rotate_decompose_twist(acc + kernel::accumulator_index(r, c, 0, k1, s.N),
                                   powers[r * s.n + step], j, s.N, g, twist[j],
                                   digits + kernel::digit_index(r, c * g.level_count, j, rows, M),
                                   M);
  }
}

__global__ void multiply_accumulate_kernel(const Complex* digits, const Complex* key_step,
                                           std::uint64_t capacity, Shape s, Complex* product) {
  const std::uint32_t M = s.M(), k1 = s.k1(), rows = s.rows();
  const std::uint64_t total = capacity * M;
  TG_GRID_STRIDE(idx, total) {
    const std::uint64_t r = idx / M;
    const std::uint32_t j = static_cast<std::uint32_t>(idx % M);
    kernel::multiply_accumulate_point(digits + kernel::digit_index(r, 0, 0, rows, M), key_step,
                                      product + kernel::product_index(r, 0, 0, k1, M), j, rows,
                                      k1, M);
  }
}

__global__ void untwist_round_add_kernel(const Complex* product, const Complex* untwist,
                                         std::uint64_t capacity, Shape s, std::uint32_t* acc) {
  const std::uint32_t M = s.M(), k1 = s.k1();
  const std::uint64_t total = capacity * k1 * M;
  TG_GRID_STRIDE(idx, total) {
    const std::uint64_t poly = idx / M;  // r * k1 + c
    const std::uint32_t j = static_cast<std::uint32_t>(idx % M);
    kernel::untwist_round_add(product[idx], untwist[j], acc + poly * s.N, j, M);
  }
}

__global__ void sample_extract_kernel(const BootOpDesc* ops, std::uint32_t op_count, Chunk chunk,
                                      const std::uint32_t* acc, Shape s,
                                      std::uint32_t* extracted, std::uint64_t* result_index) {
  const std::uint32_t kN = s.extracted_dimension(), words = kN + 1, acc_words = s.k1() * s.N;
  const std::uint64_t total = chunk.jobs() * words;
  TG_GRID_STRIDE(idx, total) {
    const std::uint64_t g = idx / words;
    const std::uint32_t w = static_cast<std::uint32_t>(idx % words);
    const std::uint64_t job = chunk.job_begin + g;
    const BootOpDesc& op = ops[kernel::find_item(ops, op_count, &BootOpDesc::first_job, job)];
    const std::uint64_t local = job - op.first_job;
    const std::uint64_t rotation = op.first_rotation + local * op.bootstraps - chunk.rotation_begin;
    extracted[idx] = kernel::gate_extract_word(acc + rotation * acc_words, op.bootstraps, w, s.k, s.N);
    if (w == 0) result_index[g] = op.first_result + local;
  }
}

// Key switching: a block takes ks_gates gates and ks_threads output words; the gates' input
// coefficients go through shared memory in tiles, so each key sample a digit selects is read
// once per block for all its gates (from L1/L2 when several gates select the same one).
constexpr unsigned ks_gates = 8;
constexpr unsigned ks_tile = 32;
constexpr unsigned ks_threads = 128;

__global__ void __launch_bounds__(ks_threads)
    key_switch_kernel(const std::uint32_t* extracted, std::uint64_t jobs,
                      const std::uint64_t* result_index, const std::uint32_t* ksk,
                      KeySwitchConstants ks, std::uint32_t* result_words) {
  __shared__ Torus32 tile[ks_gates][ks_tile];
  const std::uint64_t g0 = std::uint64_t{blockIdx.x} * ks_gates;
  const std::uint32_t w = blockIdx.y * blockDim.x + threadIdx.x;
  const std::uint32_t n1 = ks.n + 1, kN = ks.input_dimension, in_words = kN + 1;
  const std::uint32_t gates = static_cast<std::uint32_t>(
      jobs - g0 < ks_gates ? jobs - g0 : std::uint64_t{ks_gates});
  const std::size_t coefficient_words = kernel::ksk_coefficient_words(ks);
  Torus32 acc[ks_gates];
#pragma unroll
  for (unsigned g = 0; g < ks_gates; ++g) {
    acc[g] = (w == ks.n && g < gates) ? extracted[(g0 + g) * in_words + kN] : Torus32{0};
  }
  for (std::uint32_t i0 = 0; i0 < kN; i0 += ks_tile) {
    for (unsigned t = threadIdx.x; t < ks_gates * ks_tile; t += blockDim.x) {
      const unsigned g = t / ks_tile, c = t % ks_tile;
      tile[g][c] = (g < gates && i0 + c < kN)
                       ? extracted[(g0 + g) * in_words + i0 + c] + ks.round_offset
                       : Torus32{0};
    }
    __syncthreads();
    if (w < n1) {
      const std::uint32_t tile_end = kN - i0 < ks_tile ? kN - i0 : ks_tile;
      for (std::uint32_t c = 0; c < tile_end; ++c) {
        const Torus32* key_i = ksk + std::size_t{i0 + c} * coefficient_words;
#pragma unroll
        for (unsigned g = 0; g < ks_gates; ++g) {
          if (g < gates) acc[g] = kernel::key_switch_step(acc[g], tile[g][c], key_i, w, ks);
        }
      }
    }
    __syncthreads();
  }
  if (w < n1) {
#pragma unroll
    for (unsigned g = 0; g < ks_gates; ++g) {
      if (g < gates) result_words[result_index[g0 + g] * n1 + w] = acc[g];
    }
  }
}

__global__ void write_outputs_kernel(const OpDesc* ops, std::uint32_t op_count,
                                     std::uint64_t total, std::uint32_t n,
                                     const std::uint32_t* result_words) {
  const std::uint32_t n1 = n + 1;
  TG_GRID_STRIDE(idx, total) {
    const std::uint64_t result = idx / n1;
    const std::uint32_t w = static_cast<std::uint32_t>(idx % n1);
    const OpDesc& op = ops[kernel::find_item(ops, op_count, &OpDesc::first_result, result)];
    op.out[(result - op.first_result) * n1 + w] = result_words[idx];
  }
}

}  // namespace

void launch_bk_fold_twist(const std::uint32_t* bk, std::size_t polys, std::uint32_t N,
                          const Complex* twist, Complex* out, cudaStream_t stream) {
  const std::uint64_t total = std::uint64_t{polys} * (N / 2);
  if (total == 0) return;
  bk_fold_twist_kernel<<<blocks_for(total), threads_per_block, 0, stream>>>(bk, total, N, twist,
                                                                            out);
  CUDA_CHECK_LAUNCH(bk_fold_twist_kernel);
}

void launch_free_gates(const OpDesc* ops, std::uint32_t op_count, std::uint64_t results,
                       std::uint32_t n, std::uint32_t* result_words, cudaStream_t stream) {
  const std::uint64_t total = results * (n + 1);
  if (total == 0 || op_count == 0) return;
  free_gates_kernel<<<blocks_for(total), threads_per_block, 0, stream>>>(ops, op_count, total, n,
                                                                         result_words);
  CUDA_CHECK_LAUNCH(free_gates_kernel);
}

void launch_linear_combination(const BootOpDesc* ops, std::uint32_t op_count,
                               std::uint64_t rotation_begin, std::uint64_t rotations,
                               std::uint32_t n, std::uint32_t* pre, cudaStream_t stream) {
  const std::uint64_t total = rotations * (n + 1);
  if (total == 0 || op_count == 0) return;
  linear_combination_kernel<<<blocks_for(total), threads_per_block, 0, stream>>>(
      ops, op_count, rotation_begin, total, n, pre);
  CUDA_CHECK_LAUNCH(linear_combination_kernel);
}

void launch_accumulator_init(const std::uint32_t* pre, std::uint64_t capacity, const Shape& shape,
                             std::uint32_t* powers, std::uint32_t* acc, cudaStream_t stream) {
  const std::uint64_t total = capacity * (std::uint64_t{shape.k1()} * shape.N + shape.n);
  if (total == 0) return;
  accumulator_init_kernel<<<blocks_for(total), threads_per_block, 0, stream>>>(pre, capacity,
                                                                               shape, powers, acc);
  CUDA_CHECK_LAUNCH(accumulator_init_kernel);
}

void launch_rotate_decompose(const std::uint32_t* acc, const std::uint32_t* powers,
                             std::uint32_t step, std::uint64_t capacity, const Shape& shape,
                             const GadgetConstants& gadget, const Complex* twist,
                             Complex* digits, cudaStream_t stream) {
  const std::uint64_t total = capacity * shape.k1() * shape.M();
  if (total == 0) return;
  rotate_decompose_kernel<<<blocks_for(total), threads_per_block, 0, stream>>>(
      acc, powers, step, capacity, shape, gadget, twist, digits);
  CUDA_CHECK_LAUNCH(rotate_decompose_kernel);
}

void launch_multiply_accumulate(const Complex* digits, const Complex* key_step,
                                std::uint64_t capacity, const Shape& shape, Complex* product,
                                cudaStream_t stream) {
  const std::uint64_t total = capacity * shape.M();
  if (total == 0) return;
  multiply_accumulate_kernel<<<blocks_for(total), threads_per_block, 0, stream>>>(
      digits, key_step, capacity, shape, product);
  CUDA_CHECK_LAUNCH(multiply_accumulate_kernel);
}

void launch_untwist_round_add(const Complex* product, const Complex* untwist,
                              std::uint64_t capacity, const Shape& shape, std::uint32_t* acc,
                              cudaStream_t stream) {
  const std::uint64_t total = capacity * shape.k1() * shape.M();
  if (total == 0) return;
  untwist_round_add_kernel<<<blocks_for(total), threads_per_block, 0, stream>>>(
      product, untwist, capacity, shape, acc);
  CUDA_CHECK_LAUNCH(untwist_round_add_kernel);
}

void launch_sample_extract(const BootOpDesc* ops, std::uint32_t op_count, const Chunk& chunk,
                           const std::uint32_t* acc, const Shape& shape,
                           std::uint32_t* extracted, std::uint64_t* result_index,
                           cudaStream_t stream) {
  const std::uint64_t total = chunk.jobs() * (std::uint64_t{shape.extracted_dimension()} + 1);
  if (total == 0 || op_count == 0) return;
  sample_extract_kernel<<<blocks_for(total), threads_per_block, 0, stream>>>(
      ops, op_count, chunk, acc, shape, extracted, result_index);
  CUDA_CHECK_LAUNCH(sample_extract_kernel);
}

void launch_key_switch(const std::uint32_t* extracted, std::uint64_t jobs,
                       const std::uint64_t* result_index, const std::uint32_t* ksk,
                       const KeySwitchConstants& ks, std::uint32_t* result_words,
                       cudaStream_t stream) {
  if (jobs == 0) return;
  const dim3 grid(static_cast<unsigned>((jobs + ks_gates - 1) / ks_gates),
                  (ks.n + 1 + ks_threads - 1) / ks_threads);
  key_switch_kernel<<<grid, ks_threads, 0, stream>>>(extracted, jobs, result_index, ksk, ks,
                                                      result_words);
  CUDA_CHECK_LAUNCH(key_switch_kernel);
}

void launch_write_outputs(const OpDesc* ops, std::uint32_t op_count, std::uint64_t results,
                          std::uint32_t n, const std::uint32_t* result_words,
                          cudaStream_t stream) {
  const std::uint64_t total = results * (n + 1);
  if (total == 0 || op_count == 0) return;
  write_outputs_kernel<<<blocks_for(total), threads_per_block, 0, stream>>>(ops, op_count, total,
                                                                            n, result_words);
  CUDA_CHECK_LAUNCH(write_outputs_kernel);
}

}  // namespace torusgate::gpu::detail
