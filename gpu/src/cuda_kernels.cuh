// Launchers of the CUDA backend's kernels (cuda_kernels.cu). Each computes its grid, launches
// on `stream` and checks the launch; a launch over zero elements does nothing. The work of
// every index is a function of kernel_grid.hpp.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "batch_plan.hpp"
#include "kernel_math.hpp"

namespace torusgate::gpu::detail {

using kernel::Complex;
using kernel::GadgetConstants;
using kernel::KeySwitchConstants;

// Fourier bootstrapping key, step 1: fold and twist each of `polys` coefficient polynomials
// (N words) into M complex points (then a batched forward transform).
void launch_bk_fold_twist(const std::uint32_t* bk, std::size_t polys, const Shape& shape,
                          const Complex* twist, Complex* out, cudaStream_t stream);

// Free gates: results of Constant/Copy/Not ops (bootstrapped ops' results are left alone).
void launch_free_gates(const OpDesc* ops, std::uint32_t op_count, std::uint64_t results,
                       const Shape& shape, std::uint32_t* result_words, cudaStream_t stream);

// Linear combinations of rotations [rotation_begin, rotation_begin + rotations) into `pre`
// ([rotations][n+1]).
void launch_linear_combination(const BootOpDesc* ops, std::uint32_t op_count,
                               std::uint64_t rotation_begin, std::uint64_t rotations,
                               const Shape& shape, std::uint32_t* pre, cudaStream_t stream);

// Blind rotation, start: switched powers [capacity][n] and fresh accumulators from `pre`.
void launch_accumulator_init(const std::uint32_t* pre, std::uint64_t capacity, const Shape& shape,
                             std::uint32_t* powers, std::uint32_t* acc, cudaStream_t stream);

// The fused engine's start of a chunk's rotations, both of the above in one launch (no
// `pre`): switched powers and fresh accumulators of the workspace's `capacity` rotations,
// the chunk's [rotation_begin, rotation_begin + rotations) first (grid::combination_init_at).
void launch_combination_init(const BootOpDesc* ops, std::uint32_t op_count,
                             std::uint64_t rotation_begin, std::uint64_t rotations,
                             std::uint64_t capacity, const Shape& shape, std::uint32_t* powers,
                             std::uint32_t* acc, cudaStream_t stream);

// CMUX step `step`, kernel 1: (X^power - 1) ACC, decomposed, folded and twisted into the
// digit spectra (then the batched forward transform over capacity*(k+1)*l polynomials);
// rotate = false: ACC itself (an unrolled key's group step).
void launch_rotate_decompose(const std::uint32_t* acc, const std::uint32_t* powers,
                             std::uint32_t step, std::uint64_t capacity, const Shape& shape,
                             const GadgetConstants& gadget, const Complex* twist,
                             Complex* digits, cudaStream_t stream, bool rotate = true);

// CMUX step, kernel 2: products with one GGSW of the Fourier key (`key_step`).
void launch_multiply_accumulate(const Complex* digits, const Complex* key_step,
                                std::uint64_t capacity, const Shape& shape, Complex* product,
                                cudaStream_t stream);

// Group step of an unrolled key (key bits `bit` .. bit + u - 1, u = shape.unroll), kernel 2:
// the products with the group's 2^u - 1 GGSW (`key_group`), each times its factor
// zeta^(t e) - 1 (roots: the root exponent t of each cuFFT slot, unit: zeta^x), summed
// (kernel_math.hpp).
void launch_multiply_accumulate_group(const Complex* digits, const Complex* key_group,
                                      const std::uint32_t* powers, std::uint32_t bit,
                                      const std::uint32_t* roots, const Complex* unit,
                                      std::uint64_t capacity, const Shape& shape,
                                      Complex* product, cudaStream_t stream);

// Loads the kernels of the cuFFT engine's rotation (accumulator init and the three CMUX-step
// kernels) into the context, so that capturing them into a graph loads nothing.
void load_rotation_kernels();

// CMUX step, kernel 3 (after the batched inverse transform): untwist, round, add into ACC.
void launch_untwist_round_add(const Complex* product, const Complex* untwist,
                              std::uint64_t capacity, const Shape& shape, std::uint32_t* acc,
                              cudaStream_t stream);

// Sample extraction of the chunk's jobs (MUX: the sum of its two, plus 1/8) into
// `extracted` ([jobs][kN+1]) and each job's result index.
void launch_sample_extract(const BootOpDesc* ops, std::uint32_t op_count, const Chunk& chunk,
                           const std::uint32_t* acc, const Shape& shape,
                           std::uint32_t* extracted, std::uint64_t* result_index,
                           cudaStream_t stream);

// Key switching of `jobs` extracted samples into the result buffer ([results][n+1]), the
// input coefficients in slices of `span` (grid::key_switch_slice_span); with more than one
// slice the outputs are cleared and each slice's sums added (kernel_grid.hpp).
void launch_key_switch(const std::uint32_t* extracted, std::uint64_t jobs,
                       const std::uint64_t* result_index, const std::uint32_t* ksk,
                       const KeySwitchConstants& ks, std::uint32_t* result_words,
                       std::uint32_t span, cudaStream_t stream);

// Every result to its op's output span.
void launch_write_outputs(const OpDesc* ops, std::uint32_t op_count, std::uint64_t results,
                          const Shape& shape, const std::uint32_t* result_words,
                          cudaStream_t stream);

}  // namespace torusgate::gpu::detail
