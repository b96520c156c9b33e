// The work of one grid index of each CUDA kernel (cuda_kernels.cu): the index decomposed
// into (rotation, polynomial, point) or (sample, word), the buffers addressed, and the
// kernel_math.hpp body called. A kernel is a grid-stride loop over these functions; the host
// mirror of the CPU tests (tests/gpu/host_mirror.hpp) calls the same functions for every
// index, so the kernels' indexing is tested on the CPU too. Standard headers only.
#pragma once

#include <cstdint>

#include "batch_plan.hpp"
#include "kernel_math.hpp"

namespace torusgate::gpu::detail::grid {

using kernel::Complex;
using kernel::Torus32;

// Index count of each kernel's grid.
TG_HD std::uint64_t bk_fold_twist_size(std::uint64_t polys, const Shape& s) { return polys * s.M(); }
TG_HD std::uint64_t sample_words_size(std::uint64_t samples, const Shape& s) { return samples * s.n1(); }
TG_HD std::uint64_t accumulator_init_size(std::uint64_t capacity, const Shape& s) {
  return capacity * (std::uint64_t{s.k1()} * s.N + s.n);
}
TG_HD std::uint64_t polynomial_points_size(std::uint64_t capacity, const Shape& s) {
  return capacity * s.k1() * s.M();
}
TG_HD std::uint64_t rotation_points_size(std::uint64_t capacity, const Shape& s) {
  return capacity * s.M();
}
TG_HD std::uint64_t extract_size(const Chunk& chunk, const Shape& s) {
  return chunk.jobs() * (std::uint64_t{s.extracted_dimension()} + 1);
}

// Fourier key, step 1: point j of coefficient polynomial `poly`, folded and twisted.
TG_HD void bk_fold_twist_at(std::uint64_t idx, const std::uint32_t* bk, const Shape& s,
                            const Complex* twist, Complex* out) {
  const std::uint32_t M = s.M();
  const std::uint64_t poly = idx / M;
  const auto j = static_cast<std::uint32_t>(idx % M);
  const std::uint32_t* p = bk + poly * s.N;
  out[idx] = kernel::fold_twist(static_cast<double>(static_cast<std::int32_t>(p[j])),
                                static_cast<double>(static_cast<std::int32_t>(p[j + M])), twist[j]);
}

// Word idx % (n+1) of result idx / (n+1), when its op is a free gate.
TG_HD void free_gates_at(std::uint64_t idx, const OpDesc* ops, std::uint32_t op_count,
                         const Shape& s, std::uint32_t* result_words) {
  const std::uint32_t n1 = s.n1();
  const std::uint64_t result = idx / n1;
  const auto w = static_cast<std::uint32_t>(idx % n1);
  const OpDesc& op = ops[kernel::find_item(ops, op_count, &OpDesc::first_result, result)];
  if (op.kind == kernel::OpKind::Bootstrapped) return;
  result_words[idx] = kernel::free_gate_word(op, result - op.first_result, w, s.n);
}

// Word of the linear combination of the chunk's rotation idx / (n+1) (rotations counted from
// rotation_begin), into pre[idx].
TG_HD void linear_combination_at(std::uint64_t idx, const BootOpDesc* ops, std::uint32_t op_count,
                                 std::uint64_t rotation_begin, const Shape& s, std::uint32_t* pre) {
  const std::uint32_t n1 = s.n1();
  const std::uint64_t rotation = rotation_begin + idx / n1;
  const auto w = static_cast<std::uint32_t>(idx % n1);
  const BootOpDesc& op = ops[kernel::find_item(ops, op_count, &BootOpDesc::first_rotation, rotation)];
  pre[idx] = kernel::linear_combination_word(op, rotation, w, s.n);
}

// The first capacity*(k+1)N indices: accumulator words; the next capacity*n: switched masks.
TG_HD void accumulator_init_at(std::uint64_t idx, const std::uint32_t* pre, std::uint64_t capacity,
                               const Shape& s, std::uint32_t* powers, std::uint32_t* acc) {
  const std::uint32_t acc_words = s.k1() * s.N, n1 = s.n1(), log2_2n = s.log2_2n();
  const std::uint64_t acc_total = capacity * acc_words;
  if (idx < acc_total) {
    const std::uint64_t r = idx / acc_words;
    const auto w = static_cast<std::uint32_t>(idx % acc_words);
    acc[idx] = kernel::accumulator_init_word(pre + r * n1, w, s.n, s.k, s.N, log2_2n,
                                             kernel::eighths(1));
  } else {
    const std::uint64_t p = idx - acc_total;
    const std::uint64_t r = p / s.n;
    const auto i = static_cast<std::uint32_t>(p % s.n);
    powers[p] = kernel::mod_switch(pre[r * n1 + i], log2_2n);
  }
}

// The fused engine's start of a chunk: linear_combination_at and accumulator_init_at in one
// kernel, without `pre`: index idx < accumulator_init_size(capacity, s) writes the word that
// accumulator_init_at writes there, each from the word of the linear combination it needs (an
// accumulator's body words from the combination's body, a switched mask from its mask word).
// Rotation r < rotations of the workspace is the chunk's rotation_begin + r; those past the
// chunk (up to capacity) start from the zero sample, as every rotation is run.
TG_HD void combination_init_at(std::uint64_t idx, const BootOpDesc* ops, std::uint32_t op_count,
                               std::uint64_t rotation_begin, std::uint64_t rotations,
                               std::uint64_t capacity, const Shape& s, std::uint32_t* powers,
                               std::uint32_t* acc) {
  const std::uint32_t acc_words = s.k1() * s.N, log2_2n = s.log2_2n();
  const std::uint64_t acc_total = capacity * acc_words;
  const auto word = [&](std::uint64_t r, std::uint32_t w) -> Torus32 {
    if (r >= rotations || op_count == 0) return 0;
    const std::uint64_t rotation = rotation_begin + r;
    return kernel::linear_combination_word(
        ops[kernel::find_item(ops, op_count, &BootOpDesc::first_rotation, rotation)], rotation, w,
        s.n);
  };
  if (idx < acc_total) {
    const std::uint64_t r = idx / acc_words;
    const auto w = static_cast<std::uint32_t>(idx % acc_words);
    // A mask word is 0 without the combination's body (a search of the ops and three loads).
    acc[idx] = w < s.k * s.N ? Torus32{0}
                             : kernel::fresh_accumulator_word(word(r, s.n), w, s.k, s.N, log2_2n,
                                                              kernel::eighths(1));
  } else {
    const std::uint64_t p = idx - acc_total;
    powers[p] = kernel::mod_switch(word(p / s.n, static_cast<std::uint32_t>(p % s.n)), log2_2n);
  }
}

// CMUX step `step`: point j of polynomial c of accumulator r, rotated, decomposed, twisted.
TG_HD void rotate_decompose_at(std::uint64_t idx, const std::uint32_t* acc,
                               const std::uint32_t* powers, std::uint32_t step, const Shape& s,
                               const kernel::GadgetConstants& g, const Complex* twist,
                               Complex* digits, bool rotate = true) {
  const std::uint32_t M = s.M(), k1 = s.k1(), rows = s.rows();
  const std::uint64_t r = idx / (std::uint64_t{k1} * M);
  const auto c = static_cast<std::uint32_t>((idx / M) % k1);
  const auto j = static_cast<std::uint32_t>(idx % M);
  kernel::rotate_decompose_twist(acc + kernel::accumulator_index(r, c, 0, k1, s.N),
                                 powers[r * s.n + step], j, s.N, g, twist[j],
                                 digits + kernel::digit_index(r, c * g.level_count, j, rows, M), M,
                                 rotate);
}

// CMUX step: point j of every product column of rotation r.
TG_HD void multiply_accumulate_at(std::uint64_t idx, const Complex* digits, const Complex* key_step,
                                  const Shape& s, Complex* product) {
  const std::uint32_t M = s.M(), k1 = s.k1(), rows = s.rows();
  const std::uint64_t r = idx / M;
  const auto j = static_cast<std::uint32_t>(idx % M);
  kernel::multiply_accumulate_point(digits + kernel::digit_index(r, 0, 0, rows, M), key_step,
                                    product + kernel::product_index(r, 0, 0, k1, M), j, rows, k1, M);
}

// Group step of an unrolled key (key bits `bit` .. bit + s.unroll - 1): point j of every
// product column of rotation r, against the group's 2^u - 1 GGSW at `key_group` (roots: each
// slot's root exponent, unit: zeta^x; kernel_math.hpp).
TG_HD void multiply_accumulate_group_at(std::uint64_t idx, const Complex* digits,
                                        const Complex* key_group, const std::uint32_t* powers,
                                        std::uint32_t bit, const std::uint32_t* roots,
                                        const Complex* unit, const Shape& s, Complex* product) {
  const std::uint32_t M = s.M(), k1 = s.k1(), rows = s.rows();
  const std::uint64_t r = idx / M;
  const auto j = static_cast<std::uint32_t>(idx % M);
  kernel::multiply_accumulate_group_point(
      digits + kernel::digit_index(r, 0, 0, rows, M), key_group,
      product + kernel::product_index(r, 0, 0, k1, M), j, rows, k1, M, powers + r * s.n + bit,
      s.unroll, roots[j], unit);
}

// CMUX step, after the inverse transform: point j of product polynomial idx / M.
TG_HD void untwist_round_add_at(std::uint64_t idx, const Complex* product, const Complex* untwist,
                                const Shape& s, std::uint32_t* acc) {
  const std::uint32_t M = s.M();
  const std::uint64_t poly = idx / M;  // r * (k+1) + c
  const auto j = static_cast<std::uint32_t>(idx % M);
  kernel::untwist_round_add(product[idx], untwist[j], acc + poly * s.N, j, M);
}

// Word idx % (kN+1) of the key-switching input of the chunk's job idx / (kN+1).
TG_HD void sample_extract_at(std::uint64_t idx, const BootOpDesc* ops, std::uint32_t op_count,
                             const Chunk& chunk, const std::uint32_t* acc, const Shape& s,
                             std::uint32_t* extracted, std::uint64_t* result_index) {
  const std::uint32_t words = s.extracted_dimension() + 1, acc_words = s.k1() * s.N;
  const std::uint64_t g = idx / words;
  const auto w = static_cast<std::uint32_t>(idx % words);
  const std::uint64_t job = chunk.job_begin + g;
  const BootOpDesc& op = ops[kernel::find_item(ops, op_count, &BootOpDesc::first_job, job)];
  const std::uint64_t local = job - op.first_job;
  const std::uint64_t rotation = op.first_rotation + local * op.bootstraps - chunk.rotation_begin;
  extracted[idx] = kernel::gate_extract_word(acc + rotation * acc_words, op.bootstraps, w, s.k, s.N);
  if (w == 0) result_index[g] = op.first_result + local;
}

// Word idx % (n+1) of result idx / (n+1), to its op's output span.
TG_HD void write_output_at(std::uint64_t idx, const OpDesc* ops, std::uint32_t op_count,
                           const Shape& s, const std::uint32_t* result_words) {
  const std::uint32_t n1 = s.n1();
  const std::uint64_t result = idx / n1;
  const OpDesc& op = ops[kernel::find_item(ops, op_count, &OpDesc::first_result, result)];
  op.out[(result - op.first_result) * n1 + idx % n1] = result_words[idx];
}

// Key switching's block shape: gates per block, input coefficients per tile, threads (output
// words) per block.
inline constexpr unsigned key_switch_gates_per_block = 8;
inline constexpr unsigned key_switch_tile = 32;
inline constexpr unsigned key_switch_threads = 128;

// How a small batch's key switching is sliced (below): slices of a multiple of `unit` input
// coefficients, aiming at `oversubscribe` x the target blocks. Measured on an H100 with
// tfhe_lib_128 at batch 1 (docs/gpu.md section 6.20; one gate has 5 blocks, the target is
// 264): whole tiles and 1x the target (32 slices, 160 blocks) 0.069 ms, units of 8 and 4x
// (128 slices, 640 blocks) 0.033 ms, units of 4 and 8x (256 slices, 1,280 blocks) 0.022 ms,
// the default. The macros build A/B variants (scripts/gpu_variant.sh).
#ifndef TORUSGATE_KS_SLICE_UNIT
#define TORUSGATE_KS_SLICE_UNIT 4
#endif
#ifndef TORUSGATE_KS_SLICE_OVERSUBSCRIBE
#define TORUSGATE_KS_SLICE_OVERSUBSCRIBE 8
#endif
inline constexpr unsigned key_switch_slice_unit = TORUSGATE_KS_SLICE_UNIT;
inline constexpr unsigned key_switch_slice_oversubscribe = TORUSGATE_KS_SLICE_OVERSUBSCRIBE;
static_assert(key_switch_slice_unit >= 1 && key_switch_slice_oversubscribe >= 1);

// Key switching, as the kernel tiles it: a block takes G gates from gate g0 (`gates` of them
// exist) and one output word w per thread; the gates' input coefficients pass through a tile
// of `tile` coefficients per gate (shared memory on the device). A thread starts its G
// accumulators, then per tile loads its share of the tile and (after a barrier)
// accumulates, then stores.
//
// Slices: a batch of few gates has few blocks (one per G gates and T output words: 5 for one
// tfhe_lib_128 gate), each walking all kN input coefficients with a load it waits for at
// every one; there the grid's z dimension cuts the coefficients into slices (multiples of
// key_switch_slice_unit; a slice shorter than a tile loads and accumulates only its own),
// block z takes slice z, only slice 0 starts from the body b, and every block adds its
// sums into outputs cleared first (key_switch_clear_at). The additions are mod 2^32, so any
// order of them gives the words of one block walking everything.
template <unsigned G>
TG_HD void key_switch_start(std::uint32_t w, std::uint64_t g0, std::uint32_t gates,
                            const std::uint32_t* extracted, const kernel::KeySwitchConstants& ks,
                            Torus32 (&acc)[G], bool first_slice = true) {
  const std::uint32_t kN = ks.input_dimension;
TG_UNROLL
  for (unsigned g = 0; g < G; ++g) {
    acc[g] = (first_slice && w == ks.n && g < gates) ? extracted[(g0 + g) * (kN + 1) + kN]
                                                     : Torus32{0};
  }
}

// Input coefficients per slice (a multiple of `unit`) so that the key switching of `jobs`
// gates has at least oversubscribe x target_blocks blocks where whole units allow: every
// coefficient in one slice (kN rounded up to tiles) where the batch has target_blocks blocks
// already (the engine then takes the matrix product under its automatic choice).
inline std::uint32_t key_switch_slice_span(std::uint64_t jobs, std::uint32_t n1, std::uint32_t kN,
                                           std::uint64_t target_blocks,
                                           unsigned unit = key_switch_slice_unit,
                                           unsigned oversubscribe = key_switch_slice_oversubscribe) {
  const std::uint64_t blocks = (jobs + key_switch_gates_per_block - 1) / key_switch_gates_per_block *
                               ((n1 + key_switch_threads - 1) / key_switch_threads);
  const std::uint32_t whole = (kN + key_switch_tile - 1) / key_switch_tile * key_switch_tile;
  const std::uint32_t units = (kN + unit - 1) / unit;
  if (blocks == 0 || blocks >= target_blocks || units <= 1) return whole;
  const std::uint64_t slices =
      std::min<std::uint64_t>(units, (target_blocks * oversubscribe + blocks - 1) / blocks);
  return std::min(whole, static_cast<std::uint32_t>((units + slices - 1) / slices) * unit);
}

// Slices of `span` coefficients each.
inline std::uint32_t key_switch_slices(std::uint32_t kN, std::uint32_t span) {
  return (kN + span - 1) / span;
}

// Words of the outputs that sliced key switching adds into.
inline std::uint64_t key_switch_clear_size(std::uint64_t jobs, std::uint32_t n1) {
  return jobs * n1;
}
TG_HD void key_switch_clear_at(std::uint64_t idx, const std::uint64_t* result_index,
                               std::uint32_t n1, std::uint32_t* result_words) {
  result_words[result_index[idx / n1] * n1 + idx % n1] = 0;
}

// result += v mod 2^32, by every block of a sliced key switching at once on the device.
TG_HD void add_wrapping(std::uint32_t* result, std::uint32_t v) {
#if defined(__CUDA_ARCH__) || defined(TORUSGATE_CUDA_EMULATION)
  atomicAdd(result, v);
#else
  *result += v;
#endif
}

// The tile of coefficients i0 .. i0 + tile - 1 that the slice (ending before `end`) has.
TG_HD void key_switch_load_tile(unsigned thread, unsigned threads, std::uint64_t g0,
                                std::uint32_t gates, std::uint32_t i0, std::uint32_t end,
                                unsigned gates_per_block, unsigned tile,
                                const std::uint32_t* extracted,
                                const kernel::KeySwitchConstants& ks, Torus32* tile_words) {
  const std::uint32_t in_words = ks.input_dimension + 1;
  for (unsigned t = thread; t < gates_per_block * tile; t += threads) {
    const unsigned g = t / tile, c = t % tile;
    tile_words[t] = (g < gates && i0 + c < end)
                        ? extracted[(g0 + g) * in_words + i0 + c] + ks.round_offset
                        : Torus32{0};
  }
}

template <unsigned G>
TG_HD void key_switch_accumulate_tile(std::uint32_t w, std::uint32_t gates, std::uint32_t i0,
                                      std::uint32_t end, unsigned tile,
                                      const Torus32* tile_words, const std::uint32_t* ksk,
                                      const kernel::KeySwitchConstants& ks, Torus32 (&acc)[G]) {
  if (w > ks.n) return;
  const std::size_t coefficient_words = kernel::ksk_coefficient_words(ks);
  const std::uint32_t tile_end = end - i0 < tile ? end - i0 : tile;
  for (std::uint32_t c = 0; c < tile_end; ++c) {
    const Torus32* key_i = ksk + std::size_t{i0 + c} * coefficient_words;
TG_UNROLL
    for (unsigned g = 0; g < G; ++g) {
      if (g < gates) acc[g] = kernel::key_switch_step(acc[g], tile_words[g * tile + c], key_i, w, ks);
    }
  }
}

// The block's sums into the outputs: stored, or with slices added into the cleared outputs.
template <unsigned G>
TG_HD void key_switch_store(std::uint32_t w, std::uint64_t g0, std::uint32_t gates,
                            const std::uint64_t* result_index,
                            const kernel::KeySwitchConstants& ks, const Torus32 (&acc)[G],
                            std::uint32_t* result_words, bool sliced = false) {
  if (w > ks.n) return;
TG_UNROLL
  for (unsigned g = 0; g < G; ++g) {
    if (g >= gates) continue;
    std::uint32_t* out = result_words + result_index[g0 + g] * (ks.n + 1) + w;
    if (sliced) add_wrapping(out, acc[g]);
    else *out = acc[g];
  }
}

}  // namespace torusgate::gpu::detail::grid
