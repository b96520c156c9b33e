// Host-side planning of a CUDA batch: the op descriptors the kernels read, the split of the
// blind rotations into chunks that fit the memory budget, the batch-size buckets that
// workspaces (cuFFT plans, scratch, CUDA graph) are made for, and the scratch bytes per
// rotation. Standard headers only: nvcc and the host compiler both include it, and the CPU
// tests check it (tests/gpu/test_gpu_host.cpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernel_math.hpp"
#include "torusgate/gpu/cuda_options.hpp"

namespace torusgate::gpu::detail {

using kernel::BootOpDesc;
using kernel::OpDesc;

// The numeric parameters the device code needs.
struct Shape {
  std::uint32_t n = 0;               // lwe_dimension
  std::uint32_t k = 0;               // glwe_dimension
  std::uint32_t N = 0;               // polynomial_size
  std::uint32_t bk_base_log = 0;
  std::uint32_t bk_level_count = 0;  // l
  std::uint32_t ks_base_log = 0;
  std::uint32_t ks_level_count = 0;  // t
  std::uint32_t unroll = 1;          // the bootstrapping key's form (BootstrappingKey::unroll)

  TG_HD std::uint32_t k1() const { return k + 1; }
  // GGSW samples of one step of an unrolled key's group of `unroll` bits: 2^unroll - 1 (3 for
  // pairs, 7 for threes; 1 for the standard key's CMUX steps).
  TG_HD std::uint32_t group_ggsws() const { return kernel::group_ggsw_count(unroll); }
  // Key bits that group steps take (unroll u > 1): u floor(n/u); the others take CMUX steps.
  TG_HD std::uint32_t grouped_bits() const { return unroll > 1 ? n / unroll * unroll : 0; }
  // GGSW samples of the bootstrapping key: n, or 2^u - 1 per group of u key bits and one per
  // key bit left (BootstrappingKey::ggsw_count).
  TG_HD std::uint32_t ggsw_count() const { return static_cast<std::uint32_t>(step_ggsw(n)); }
  // The first GGSW of the step that starts at key bit i (core's unrolled_step_ggsw): a group
  // step (i < grouped_bits()) takes GGSW (i/u) G .. (i/u) G + G - 1, G = group_ggsws(); a CMUX
  // step after the groups the GGSW after theirs; i = n gives ggsw_count().
  TG_HD std::size_t step_ggsw(std::uint32_t i) const {
    const std::uint32_t p = grouped_bits();
    return i < p ? std::size_t{i} / unroll * group_ggsws()
                 : std::size_t{p} / unroll * group_ggsws() + (i - p);
  }
  TG_HD std::uint32_t M() const { return N / 2; }
  TG_HD std::uint32_t rows() const { return (k + 1) * bk_level_count; }
  TG_HD std::uint32_t n1() const { return n + 1; }
  TG_HD std::uint32_t extracted_dimension() const { return k * N; }
  TG_HD std::uint32_t log2_2n() const {
    std::uint32_t log = 0;
    while ((std::uint32_t{1} << log) < 2 * N) ++log;
    return log;
  }
  // Words of the coefficient bootstrapping key and of the key-switching key.
  TG_HD std::size_t bk_words() const { return std::size_t{ggsw_count()} * rows() * k1() * N; }
  TG_HD std::size_t ksk_words() const {
    return std::size_t{extracted_dimension()} * ks_level_count *
           ((std::size_t{1} << ks_base_log) - 1) * n1();
  }
};

// Device scratch of one blind rotation in a chunk: switched powers, accumulator, extracted
// sample and its result index; the cuFFT engine adds the linear combination, the digit
// spectra, the product spectra and a cuFFT work area as large as the digit spectra (an upper
// bound, checked against cuFFT's own figure when plans are made). The fused engine keeps
// those in shared memory, and makes powers and accumulators from the ops directly.
inline std::size_t bytes_per_rotation(const Shape& s, GpuEngine engine = GpuEngine::cufft) {
  const std::size_t complex_bytes = 16;
  const std::size_t common = std::size_t{s.n} * 4 + std::size_t{s.k1()} * s.N * 4 +
                             (std::size_t{s.extracted_dimension()} + 1) * 4 + 8;
  if (engine == GpuEngine::fused) return common;
  const std::size_t digits = std::size_t{s.rows()} * s.M() * complex_bytes;
  return common + std::size_t{s.n1()} * 4 + digits + std::size_t{s.k1()} * s.M() * complex_bytes +
         digits;
}

// A batch flattened: every op with at least one output bit (for the free gates and the
// final write of the results), and the bootstrapped ones (for the rotations).
struct BatchPlan {
  std::vector<OpDesc> ops;
  std::vector<BootOpDesc> boot_ops;
  std::uint64_t results = 0;    // output bits of the batch
  std::uint64_t jobs = 0;       // bootstrapped output bits
  std::uint64_t rotations = 0;  // blind rotations (a MUX bit takes 2)
  bool has_free_gates = false;
};

// Batch sizes that workspaces are made for: 1, 2, 3, 4, 6, 8, 12, 16, 24, ... (powers of two
// and 1.5 times them), so a few workspaces serve every size with at most a third unused.
inline std::uint64_t bucket_capacity(std::uint64_t rotations) {
  if (rotations <= 1) return 1;
  std::uint64_t p = 1;
  while (p < rotations) {
    if (p >= 2 && p + p / 2 >= rotations) return p + p / 2;
    p *= 2;
  }
  return p;
}

// The largest bucket size not above `limit` (0 when limit is 0).
inline std::uint64_t largest_bucket_at_most(std::uint64_t limit) {
  if (limit == 0) return 0;
  std::uint64_t p = 1;
  while (p * 2 <= limit) p *= 2;
  if (p >= 2 && p + p / 2 <= limit) return p + p / 2;
  return p;
}

// The most rotations one chunk may hold: the largest bucket whose scratch fits `budget`
// bytes, at most `cap`; 0 when not even one rotation fits.
inline std::uint64_t chunk_capacity(std::size_t budget, std::size_t per_rotation,
                                    std::uint64_t cap) {
  return largest_bucket_at_most(std::min<std::uint64_t>(budget / per_rotation, cap));
}

// A run of consecutive jobs and their rotations.
struct Chunk {
  std::uint64_t job_begin = 0, job_end = 0;
  std::uint64_t rotation_begin = 0, rotation_end = 0;
  TG_HD std::uint64_t rotations() const { return rotation_end - rotation_begin; }
  TG_HD std::uint64_t jobs() const { return job_end - job_begin; }
};

// The chunk that starts at job `job_begin` (< plan.jobs): as many whole jobs as fit in
// `capacity` rotations (capacity >= 2, so a MUX always fits).
inline Chunk next_chunk(const BatchPlan& plan, std::uint64_t job_begin, std::uint64_t capacity) {
  const auto& ops = plan.boot_ops;
  std::uint32_t o = kernel::find_item(ops.data(), static_cast<std::uint32_t>(ops.size()),
                                      &BootOpDesc::first_job, job_begin);
  Chunk c;
  c.job_begin = c.job_end = job_begin;
  c.rotation_begin = c.rotation_end =
      ops[o].first_rotation + (job_begin - ops[o].first_job) * ops[o].bootstraps;
  for (; o < ops.size(); ++o) {
    const BootOpDesc& op = ops[o];
    const std::uint64_t left_in_op = op.first_job + op.count - c.job_end;
    const std::uint64_t room = (capacity - c.rotations()) / op.bootstraps;
    const std::uint64_t take = std::min(left_in_op, room);
    c.job_end += take;
    c.rotation_end += take * op.bootstraps;
    if (take < left_in_op) break;
  }
  return c;
}

}  // namespace torusgate::gpu::detail
