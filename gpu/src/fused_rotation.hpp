// The fused blind-rotation engine's block program (DESIGN.md section 6.1, item 2; TFHE,
// J. Cryptology 2020, algorithm 3, with the external product of core/bootstrap.cpp): a block
// keeps its rotations' accumulators in shared memory for all n CMUX steps; per step it
// rotates and decomposes the accumulator, folds and twists the digits, transforms them with
// its own FFT (fused_fft.hpp), multiplies and accumulates against the step's key slice (read
// from L2/HBM) in registers, transforms the k+1 products back, and untwists, rounds and adds
// them into the accumulator. Nothing of a step goes through device memory but the key.
//
// A block runs R rotations with G groups of T = M/8 threads each (LaunchShape; the shape
// changes speed, not results). Group g of a rotation takes the digit rows q = g, g+G, ...;
// with G > 1 the groups' partial products go through shared memory a column at a time and
// group c < k+1 sums product c's in group order and transforms it back; with R > 1 the rows' key spectra are staged in
// shared memory once for the block's R rotations. Standard headers only: the host tests run
// this program thread by thread (HostBlock) and compare it with core.
//
// The Fourier key of the fused engine: per GGSW i, row q, column c, the M spectrum points of
// the folded and twisted key polynomial in this FFT's (bit-reversed) order, point 8t + r at
// slot r*T + t, so that a warp's loads of one register are contiguous.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "batch_plan.hpp"
#include "fused_fft.hpp"
#include "kernel_math.hpp"

namespace torusgate::gpu::kernel::fused {

// Largest k + 1 the engine's registers hold.
inline constexpr std::uint32_t max_columns = 3;

// Per-thread registers of the blind rotation: the 8 points in flight and the K1 product sums,
// of one rotation or (P lanes) of the same points of P rotations.
template <unsigned K1, unsigned P = 1>
struct RotationRegs {
  static constexpr unsigned lanes = P;
  Point<P> v[points_per_thread];
  Point<P> sum[K1][points_per_thread];
};

// Per-thread registers of a plain transform.
struct TransformRegs {
  Complex v[points_per_thread];
};

// Slot of spectrum point p (= 8t + r) of one key polynomial.
TG_HD std::uint32_t key_slot(std::uint32_t p, std::uint32_t T) {
  return (p % points_per_thread) * T + p / points_per_thread;
}

// Complex index of point p of polynomial (q, c) of GGSW i in the fused Fourier key.
TG_HD std::size_t key_index(std::size_t i, std::size_t q, std::size_t c, std::uint32_t p,
                            std::size_t rows, std::size_t k1, std::uint32_t M) {
  return ((i * rows + q) * k1 + c) * M + key_slot(p, fft_threads(M));
}

// sum += d * b, one product at a time, so that nvcc fuses each into the sum: 4 DFMA (written
// as sum + (d * b), each component would take a DMUL, a DFMA and a DADD). The macro tells
// gpu/tools/fused_fft_probe.cu that this revision has it.
#define TORUSGATE_FUSED_MULTIPLY_ADD 1
TG_HD void multiply_add(Complex& sum, Complex d, Complex b) {
  sum.re += d.re * b.re;
  sum.re -= d.im * b.im;
  sum.im += d.re * b.im;
  sum.im += d.im * b.re;
}

// A launch shape: G thread groups of T = M/8 threads per rotation (G in {1, k+1, (k+1)l};
// more threads per rotation for small batches) and R rotations per block (R > 1: the block's
// rotations share each step's key rows, staged once in shared memory, so the key is read from
// L2/HBM once per R rotations). Or, with cluster = C > 1, one rotation on a thread block
// cluster of C blocks of one group each (C in {k+1, (k+1)l}, at most 8; compute capability
// 9.0): the cluster program below, for batches far too small to fill the device. Or, with
// lanes = P = 2 (G = R = C = 1, k = 1), one group of T threads carrying P rotations, each
// thread the same 8 points of each (RotationRegs<K1, P>): one load of every twiddle, twist,
// untwist and key point serves P rotations, so the key's L2 traffic and the L1 lookups per
// rotation are divided by P, for twice the registers per thread. Every shape gives the same
// words as the one-block shape with G = C.
//
// points: the points per thread of a cluster's transforms, 8, or 4 for a wide cluster
// (fused_wide.hpp: twice the threads per block, half a thread's work per step; fixed lengths
// only, N = 512 .. 2048). sums: who sums a cluster's products, owner_sums (the owner of each
// column, which sends the column to the blocks that decompose it) or every_block_sums (each
// block sums the column its row decomposes itself; clusters of (k+1)l blocks, docs/gpu.md
// section 6.18).
//
// stage (key_stage = 1; one group and one rotation slot per block, one or two lanes, the
// standard key at a fixed length, compute capability 9.0; docs/gpu.md section 6.34): each
// digit row's key spectra (K1 M complex) are fetched by the TMA into a stage in the block's
// shared memory, asked for after the first barrier of the row's forward transform and waited
// for (an mbarrier) just before its products, which then read them from shared memory instead
// of each thread loading its points from L2 after its transform. The same products in the
// same order: the same words.
inline constexpr std::uint32_t owner_sums = 1, every_block_sums = 2;
inline constexpr std::uint32_t key_stage = 1;
struct LaunchShape {
  std::uint32_t groups = 1;
  std::uint32_t rotations = 1;
  std::uint32_t cluster = 1;
  std::uint32_t lanes = 1;
  std::uint32_t points = points_per_thread;
  std::uint32_t sums = owner_sums;
  std::uint32_t stage = 0;
};

// LaunchShape{G, R, 1, P} (with S = key_stage: its stage) as compile-time constants, for the
// kernels of a fixed transform length (FixedGroups) and the lane kernels: the shape's indices
// and branches fold.
template <std::uint32_t G, std::uint32_t R, std::uint32_t P = 1, std::uint32_t S = 0>
struct FixedShape {
  static constexpr std::uint32_t groups = G;
  static constexpr std::uint32_t rotations = R;
  static constexpr std::uint32_t cluster = 1;
  static constexpr std::uint32_t lanes = P;
  static constexpr std::uint32_t stage = S;
};

// Whether LS is a FixedShape of one group per rotation (then the G > 1 code is not compiled).
template <class LS>
inline constexpr bool one_group_shape = false;
template <std::uint32_t R, std::uint32_t P, std::uint32_t S>
inline constexpr bool one_group_shape<FixedShape<1, R, P, S>> = true;

// The lanes a shape type's kernel compiles: P for FixedShape<G, R, P>, 1 for a LaunchShape
// (whose kernels run one lane).
template <class LS>
inline constexpr unsigned static_lanes = 1;
template <std::uint32_t G, std::uint32_t R, std::uint32_t P, std::uint32_t S>
inline constexpr unsigned static_lanes<FixedShape<G, R, P, S>> = P;

// Whether LS is FixedShape<1, 1, P> (one group, one rotation slot of P lanes), staged or not.
template <class LS, unsigned P>
inline constexpr bool one_slot_shape = false;
template <unsigned P, std::uint32_t S>
inline constexpr bool one_slot_shape<FixedShape<1, 1, P, S>, P> = true;

// Whether a shape type's kernel reads its key rows from the TMA's stage (FixedShape with S =
// key_stage; a LaunchShape's kernels never do).
template <class LS>
inline constexpr bool staged_shape = false;
template <std::uint32_t G, std::uint32_t R, std::uint32_t P, std::uint32_t S>
inline constexpr bool staged_shape<FixedShape<G, R, P, S>> = S == key_stage;

// Most rotations per thread (lanes), and the k + 1 they run with: twice the registers of one
// lane for k = 1 (sm_90: docs/gpu.md section 6.3); k = 2 would need more than 255.
inline constexpr std::uint32_t max_lanes = 2;
inline constexpr std::uint32_t lanes_columns = 2;

// The transform lengths M = 2^L with kernels of their own (FixedGroups<L>, FixedShape<1, 1>
// and the cluster kernel): N = 512, 1024 and 2048.
inline constexpr unsigned first_fixed_log2 = 8;
inline constexpr unsigned last_fixed_log2 = 10;

// f(GroupsOf<log2 M>{}) where M has a fixed-length kernel (true), else nothing (false).
// GroupsOf: FixedGroups, or the wide groups of fused_wide.hpp.
template <template <unsigned> class GroupsOf = FixedGroups, unsigned L = first_fixed_log2, class F>
bool with_fixed_length(std::uint32_t M, F&& f) {
  if (M == (std::uint32_t{1} << L)) {
    f(GroupsOf<L>{});
    return true;
  }
  if constexpr (L < last_fixed_log2) return with_fixed_length<GroupsOf, L + 1>(M, f);
  return false;
}

// The largest key form whose group steps the fused kernels run themselves (Unroll = 2, 3);
// keys in fours run their group steps on bundled keys only (bundle_point_at; docs/gpu.md
// section 6.25), as every chunk of them does (CudaEngine: fused_shape_for).
inline constexpr std::uint32_t max_kernel_unroll = 3;
// The largest key form the bundling kernel takes.
inline constexpr std::uint32_t max_bundle_unroll = 4;

// f(std::integral_constant<unsigned, U>{}) for the key form U = unroll (1, 2 or 3; the
// kernels' Unroll template argument), f's result returned. A key in fours has no such kernels
// (max_kernel_unroll): its engine takes the standard key's (U = 1) only as the stand-in that
// sizes the launch limits (fused_limits, fused_clusters), and runs bundled kernels.
template <class F>
decltype(auto) with_unroll(std::uint32_t unroll, F&& f) {
  if (unroll == 3) return f(std::integral_constant<unsigned, 3>{});
  if (unroll == 2) return f(std::integral_constant<unsigned, 2>{});
  return f(std::integral_constant<unsigned, 1>{});
}

// f(std::integral_constant<unsigned, U>{}) for an unrolled key's form U = unroll, 2 to
// max_bundle_unroll (the bundling kernel's U); nothing for another form.
template <class F>
void with_bundle_unroll(std::uint32_t unroll, F&& f) {
  if (unroll == 4) f(std::integral_constant<unsigned, 4>{});
  if (unroll == 3) f(std::integral_constant<unsigned, 3>{});
  if (unroll == 2) f(std::integral_constant<unsigned, 2>{});
}

// Largest R.
inline constexpr std::uint32_t max_rotations_per_block = 8;
// Largest C: the portable cluster size (larger ones need an opt-in and are not guaranteed).
inline constexpr std::uint32_t max_cluster_blocks = 8;

TG_HD bool valid_groups(std::uint32_t groups, const detail::Shape& s) {
  return groups == 1 || groups == s.k1() || groups == s.rows();
}
TG_HD bool valid_cluster(std::uint32_t blocks, const detail::Shape& s) {
  return blocks == 1 || ((blocks == s.k1() || blocks == s.rows()) && blocks <= max_cluster_blocks);
}
TG_HD bool valid_lanes(std::uint32_t lanes, const detail::Shape& s) {
  return lanes == 1 || (lanes == max_lanes && s.k1() == lanes_columns);
}
// Points per thread of a wide cluster's transforms (fused_wide.hpp), and whether shape s has
// them: a fixed length (N = 512 .. 2048).
inline constexpr std::uint32_t wide_points = 4;
TG_HD bool valid_wide(const detail::Shape& s) {
  return s.M() >= (std::uint32_t{1} << first_fixed_log2) &&
         s.M() <= (std::uint32_t{1} << last_fixed_log2);
}
// Product halves (an A/B, TORUSGATE_FUSED_PRODUCT_HALVES at compile time; docs/gpu.md section
// 6.22): a cluster block of 8 points per thread at a fixed length (valid_wide) gets a second
// half of T threads that computes the products of its partner's points 4 .. 7 while the first
// half computes those of points 0 .. 3 and alone transforms, so that a step's products run on
// 4 warps where they ran on 2 (tfhe_lib_128: half of a step's instructions in threes, with 2
// of each multiprocessor's 4 schedulers idle; section 6.20). The same operations on the same
// points: the same words. Measured on an H200 (tfhe_lib_128, batch 1, c6e): the threes'
// rotation as fast (1.438 against 1.444 ms), the pairs' 5% and the standard key's 19% slower
// (a handoff and two barriers more a step); off.
#if defined(TORUSGATE_FUSED_PRODUCT_HALVES)
inline constexpr bool product_halves = true;
#else
inline constexpr bool product_halves = false;
#endif
TG_HD std::uint32_t cluster_halves(std::uint32_t cluster, std::uint32_t points,
                                   const detail::Shape& s) {
  return product_halves && cluster > 1 && points == points_per_thread && valid_wide(s) ? 2 : 1;
}
// Points of a thread's products with product halves: half h of 2 computes points 4h .. 4h+3.
inline constexpr unsigned half_points = points_per_thread / 2;

TG_HD bool every_block_sums_fit(std::uint32_t blocks, const detail::Shape& s);
// Whether launch shape b may read its key rows from a stage the TMA fills (LaunchShape::stage):
// one group and one rotation slot per block, no cluster, 8 points per thread, one or two lanes
// (valid_lanes), the standard key, a fixed length (the staged kernels', N = 512 .. 2048).
TG_HD bool stage_fits(const LaunchShape& b, const detail::Shape& s) {
  return b.groups == 1 && b.rotations == 1 && b.cluster == 1 && b.points == points_per_thread &&
         b.sums == owner_sums && valid_lanes(b.lanes, s) && s.unroll == 1 && valid_wide(s);
}
TG_HD bool valid_shape(const LaunchShape& b, const detail::Shape& s) {
  if (b.stage != 0) return b.stage == key_stage && stage_fits(b, s);
  if (b.sums != owner_sums && (b.sums != every_block_sums || !every_block_sums_fit(b.cluster, s))) {
    return false;
  }
  if (b.points != points_per_thread) {
    return b.points == wide_points && b.cluster > 1 && b.groups == 1 && b.rotations == 1 &&
           b.lanes == 1 && valid_cluster(b.cluster, s) && valid_wide(s);
  }
  if (b.lanes != 1) {
    return b.groups == 1 && b.rotations == 1 && b.cluster == 1 && valid_lanes(b.lanes, s);
  }
  if (b.cluster != 1) return b.groups == 1 && b.rotations == 1 && valid_cluster(b.cluster, s);
  return valid_groups(b.groups, s) && b.rotations >= 1 && b.rotations <= max_rotations_per_block;
}

// Launch shapes that run an unrolled key's group steps: one rotation slot per block, 8 points
// per thread, or 4 in a wide cluster (the group step reads its 2^u - 1 GGSW from device memory,
// or a cluster block's key stage, with no R > 1 staging); one lane, or two in the lane program
// (one group, no cluster; each key point loaded once for both lanes' products, each lane with
// its own factors; docs/gpu.md section 6.27).
TG_HD bool valid_unrolled(const LaunchShape& b) {
  if (b.lanes != 1) {
    return b.lanes == max_lanes && b.groups == 1 && b.rotations == 1 && b.cluster == 1 &&
           b.points == points_per_thread;
  }
  return b.rotations == 1 &&
         (b.points == points_per_thread || (b.points == wide_points && b.cluster > 1));
}

// Rotations a block runs at once: R slots of P lanes.
TG_HD std::uint32_t block_rotations(const LaunchShape& b) { return b.rotations * b.lanes; }

// A block of a cluster of C blocks (rows q = b, b + C, ... for block b, each decomposing
// column q / l): its exchange buffer; its inbox, C slots of M points where block b sends its
// partial product c when this block owns column c (column_owner; slot b; point Pt + r at
// (bP + r)T + t, P points per thread), twice over where the inbox alternates between two
// buffers by step (cluster_inboxes); a copy of the whole accumulator (k+1 columns of N
// words): the owner of column c sends it into the copies of the blocks that decompose it
// after each step (push_columns), so that every block decomposes from its own shared memory;
// its key stage, the key rows of its next products (one digit row of the 1 or, with an
// unrolled key's group steps, the 2^u - 1 GGSW samples a step reads; fetch_key_rows); then its
// mbarriers, the signals that its partials (one per inbox buffer), its columns and its key
// rows have arrived (cluster_signals).
//
// The owner of column c: block c l with C = (k+1)l, whose one row decomposes column c (so it
// sends the column to the l - 1 other blocks of rows c l .. c l + l - 1), else block c.
TG_HD std::uint32_t column_owner(std::uint32_t c, std::uint32_t blocks, const detail::Shape& s) {
  return blocks == s.rows() ? c * s.bk_level_count : c;
}
// The column block b owns, or k+1 if none.
TG_HD std::uint32_t owned_column(std::uint32_t b, std::uint32_t blocks, const detail::Shape& s) {
  for (std::uint32_t c = 0; c < s.k1(); ++c) {
    if (column_owner(c, blocks, s) == b) return c;
  }
  return s.k1();
}
// Whether one of block b's rows decomposes column c.
TG_HD bool decomposes_column(std::uint32_t b, std::uint32_t c, std::uint32_t blocks,
                             const detail::Shape& s) {
  for (std::uint32_t q = b; q < s.rows(); q += blocks) {
    if (q / s.bk_level_count == c) return true;
  }
  return false;
}
// Shared memory a cluster's block may have: compute capability 9.0's 227 KiB per block.
inline constexpr std::size_t cluster_shared_room = 227 * 1024;
TG_HD std::size_t cluster_block_bytes_with(const detail::Shape& s, std::uint32_t blocks,
                                           std::uint32_t inboxes);
// The inbox buffers of a cluster's block: 2 where some block decomposes no row of some column
// (C = (k+1)l with k+1 > 1 columns), so that the owners send each column only to the blocks
// that decompose it and each block waits for those columns alone (docs/gpu.md section 6.16:
// the order of a step then needs the inbox to alternate), unless two do not fit in
// cluster_shared_room; else 1, and every owner sends its column to every block.
TG_HD std::uint32_t cluster_inboxes(const detail::Shape& s, std::uint32_t blocks) {
  bool every = true;
  for (std::uint32_t b = 0; b < blocks; ++b) {
    for (std::uint32_t c = 0; c < s.k1(); ++c) every = every && decomposes_column(b, c, blocks, s);
  }
  return !every && cluster_block_bytes_with(s, blocks, 2) <= cluster_shared_room ? 2 : 1;
}
// Whether each block of a cluster of `blocks` can sum the column its row decomposes itself
// (LaunchShape::sums = every_block_sums): one row per block (C = (k+1)l, at most
// max_cluster_blocks), so that it decomposes one column, and two inbox buffers, which the
// order of a step needs (cluster_cmux_step).
TG_HD bool every_block_sums_fit(std::uint32_t blocks, const detail::Shape& s) {
  return blocks == s.rows() && blocks <= max_cluster_blocks && cluster_inboxes(s, blocks) == 2;
}
// Who sums a cluster of `blocks`' products when the options leave it automatic: every block
// where that fits (measured faster, section 6.20 of docs/gpu.md), else each column's owner.
TG_HD std::uint32_t automatic_cluster_sums(std::uint32_t blocks, const detail::Shape& s) {
  return every_block_sums_fit(blocks, s) ? every_block_sums : owner_sums;
}
// Whether column c goes to block b (the owner's push), and the bytes of columns block b
// receives a step.
TG_HD bool receives_column(std::uint32_t b, std::uint32_t c, std::uint32_t blocks,
                           std::uint32_t inboxes, const detail::Shape& s) {
  return column_owner(c, blocks, s) != b && (inboxes == 1 || decomposes_column(b, c, blocks, s));
}
TG_HD std::uint32_t received_column_bytes(std::uint32_t b, std::uint32_t blocks,
                                          std::uint32_t inboxes, const detail::Shape& s) {
  std::uint32_t columns = 0;
  for (std::uint32_t c = 0; c < s.k1(); ++c) columns += receives_column(b, c, blocks, inboxes, s);
  return columns * s.N * static_cast<std::uint32_t>(sizeof(Torus32));
}
TG_HD std::size_t cluster_partials_offset(const detail::Shape& s) {
  return std::size_t{buffer_points(s.M())} * sizeof(Complex);
}
TG_HD std::size_t cluster_accumulator_offset_with(const detail::Shape& s, std::uint32_t blocks,
                                                  std::uint32_t inboxes) {
  return cluster_partials_offset(s) + std::size_t{inboxes} * blocks * s.M() * sizeof(Complex);
}
TG_HD std::size_t cluster_stage_offset_with(const detail::Shape& s, std::uint32_t blocks,
                                            std::uint32_t inboxes) {
  return cluster_accumulator_offset_with(s, blocks, inboxes) +
         std::size_t{s.k1()} * s.N * sizeof(Torus32);
}
// GGSW samples whose rows a cluster block's key stage holds at most: 2^u - 1 in an unrolled
// key's group step (3 for pairs, 7 for threes), else 1 (a key in fours runs bundled steps
// only: one row set a step).
TG_HD std::uint32_t cluster_stage_ggsws(const detail::Shape& s) {
  return s.unroll <= max_kernel_unroll ? s.group_ggsws() : 1;
}
TG_HD std::size_t cluster_signals_offset_with(const detail::Shape& s, std::uint32_t blocks,
                                              std::uint32_t inboxes) {
  return cluster_stage_offset_with(s, blocks, inboxes) +
         std::size_t{cluster_stage_ggsws(s)} * s.k1() * s.M() * sizeof(Complex);
}
// partials_arrived + i: inbox buffer i's partials.
inline constexpr unsigned cluster_signals = 4;
inline constexpr unsigned partials_arrived = 0, columns_arrived = 2, key_arrived = 3;
// Rounded up to 16 bytes (the host runs a cluster's blocks one after the other in memory).
TG_HD std::size_t cluster_block_bytes_with(const detail::Shape& s, std::uint32_t blocks,
                                           std::uint32_t inboxes) {
  return (cluster_signals_offset_with(s, blocks, inboxes) +
          cluster_signals * sizeof(std::uint64_t) + 15) / 16 * 16;
}
TG_HD std::size_t cluster_accumulator_offset(const detail::Shape& s, std::uint32_t blocks) {
  return cluster_accumulator_offset_with(s, blocks, cluster_inboxes(s, blocks));
}
TG_HD std::size_t cluster_stage_offset(const detail::Shape& s, std::uint32_t blocks) {
  return cluster_stage_offset_with(s, blocks, cluster_inboxes(s, blocks));
}
TG_HD std::size_t cluster_signals_offset(const detail::Shape& s, std::uint32_t blocks) {
  return cluster_signals_offset_with(s, blocks, cluster_inboxes(s, blocks));
}
TG_HD std::size_t cluster_block_bytes(const detail::Shape& s, std::uint32_t blocks) {
  return cluster_block_bytes_with(s, blocks, cluster_inboxes(s, blocks));
}

// What block `rank` of a cluster does with the columns, worked out once per kernel (the
// functions above divide by l and loop; a step reads these): the inbox buffers, the column it
// owns (k+1: none; the owner writes it out at the end), the column it sums (k+1: none), the
// blocks that sum each product (bit 8c + b: block b sums product c), the blocks that receive
// its column after a step (bit b) and the bytes of the columns it receives a step. With
// owner_sums the owner of column c sums product c and sends the column on; with
// every_block_sums (where every_block_sums_fit) every block sums the column its row
// decomposes, and no column is sent.
struct ClusterRoles {
  std::uint32_t inboxes;
  std::uint32_t owned;
  std::uint32_t summed;
  std::uint32_t summers;
  std::uint32_t receivers;
  std::uint32_t received_bytes;
  TG_HD std::uint32_t summers_of(std::uint32_t c) const { return (summers >> (8 * c)) & 255u; }
};
TG_HD ClusterRoles cluster_roles(const detail::Shape& s, std::uint32_t blocks, std::uint32_t rank,
                                 std::uint32_t sums = owner_sums) {
  const bool every = sums == every_block_sums && every_block_sums_fit(blocks, s);
  const std::uint32_t owned = owned_column(rank, blocks, s);
  ClusterRoles r{cluster_inboxes(s, blocks), owned, every ? rank / s.bk_level_count : owned, 0, 0, 0};
  for (std::uint32_t c = 0; c < s.k1(); ++c) {
    for (std::uint32_t b = 0; b < blocks; ++b) {
      if (every ? decomposes_column(b, c, blocks, s) : column_owner(c, blocks, s) == b) {
        r.summers |= 1u << (8 * c + b);
      }
    }
  }
  if (every) return r;  // each block's copy holds the column it sums: nothing to send
  for (std::uint32_t b = 0; b < blocks && r.owned < s.k1(); ++b) {
    if (receives_column(b, r.owned, blocks, r.inboxes, s)) r.receivers |= 1u << b;
  }
  r.received_bytes = received_column_bytes(rank, blocks, r.inboxes, s);
  return r;
}

// Threads of one block, and its shared memory: R*G*P exchange buffers of buffer_points(M)
// complex (with G > 1, buffer c < k+1 of a rotation also holds its product c; with P lanes a
// group's P buffers side by side), with R > 1 the staged key rows (G rows x (k+1) spectra),
// then R*P accumulators of (k+1)N Torus32, then for the standard key with G = 1
// (column_words_shape) R*P column words of N Torus32 (a column's (X^a - 1) acc plus the
// gadget's offset, cmux_step).
TG_HD std::uint32_t block_threads(const LaunchShape& b, const detail::Shape& s) {
  if (b.cluster != 1) return cluster_halves(b.cluster, b.points, s) * s.M() / b.points;
  return b.rotations * b.groups * fft_threads(s.M());
}
TG_HD std::size_t block_buffer_bytes(const LaunchShape& b, const detail::Shape& s) {
  return std::size_t{b.rotations} * b.groups * b.lanes * buffer_points(s.M()) * sizeof(Complex);
}
TG_HD std::size_t block_stage_bytes(const LaunchShape& b, const detail::Shape& s) {
  return b.rotations > 1 || b.stage == key_stage
             ? std::size_t{b.groups} * s.k1() * s.M() * sizeof(Complex)
             : 0;
}
TG_HD std::size_t block_accumulator_offset(const LaunchShape& b, const detail::Shape& s) {
  return block_buffer_bytes(b, s) + block_stage_bytes(b, s);
}
// Whether a block of launch shape b keeps column words: the standard key (an unrolled key's
// kernels do not: their group steps decompose the accumulator itself, and the column words'
// code in their rare CMUX steps made nvcc spill more in the group steps of the lane kernels)
// on one group per rotation, no cluster (1x1, 1xR, the lanes), where the same threads
// decompose every row of a column; not with a key stage, whose 16 KB (tfhe_lib_128) take their
// place: with them a block of 1x1 would need 37 KB of shared memory, and an H100's 228 KB per
// multiprocessor (a KB a block reserved) would hold 5 such blocks instead of the 6 its
// registers allow (3 instead of 4 with two lanes); without them 33 KB, 6 blocks (4 with lanes).
TG_HD bool column_words_shape(const LaunchShape& b, const detail::Shape& s) {
  return s.unroll == 1 && b.cluster == 1 && b.groups == 1 && b.stage != key_stage;
}
TG_HD std::size_t block_column_offset(const LaunchShape& b, const detail::Shape& s) {
  return block_accumulator_offset(b, s) +
         std::size_t{block_rotations(b)} * s.k1() * s.N * sizeof(Torus32);
}
// With a key stage, its mbarrier (8 bytes, at a multiple of 16) after the column words.
TG_HD std::size_t block_signal_offset(const LaunchShape& b, const detail::Shape& s) {
  const std::size_t end =
      block_column_offset(b, s) +
      (column_words_shape(b, s) ? std::size_t{block_rotations(b)} * s.N * sizeof(Torus32) : 0);
  return (end + 15) / 16 * 16;
}
TG_HD std::size_t block_shared_bytes(const LaunchShape& b, const detail::Shape& s) {
  if (b.cluster != 1) return cluster_block_bytes(s, b.cluster);
  return block_signal_offset(b, s) + (b.stage == key_stage ? 16 : 0);
}

// Why the fused engine cannot run parameter set shape s, or null: k + 1 <= 3 columns of
// registers, N = 16 .. 4096.
inline const char* unsupported_reason(const detail::Shape& s) {
  if (s.k1() < 2 || s.k1() > max_columns) return "the fused engine holds k+1 = 2 or 3 product columns";
  if (s.N < (2u << min_transform_log2) || s.N > (2u << max_transform_log2) || (s.N & (s.N - 1)) != 0) {
    return "the fused engine transforms N = 16 .. 4096 (a power of two)";
  }
  return nullptr;
}

// The cluster size the automatic shape uses: (k+1)l blocks where that is a portable cluster
// size, else k+1.
TG_HD std::uint32_t preferred_cluster(const detail::Shape& s) {
  return s.rows() <= max_cluster_blocks ? s.rows() : s.k1();
}

// Waves of clusters the automatic shape gives a chunk of an unrolled key whose group steps run
// on bundled keys (CudaOptions::fused_bundle 0 or 2; docs/gpu.md section 6.25): a bundled
// cluster step is so much shorter than a group step that two or three waves of clusters beat
// (k+1)l groups per rotation in one. Measured on an H200 with tfhe_lib_128
// (docs/results/gpu/nvidia-h200_2026-12-04, room for 16 to 21 clusters of 6 blocks), the
// rotation's ms, clusters of 6 on bundled keys against the automatic 6x1:
//   rotations   22             44             64
//   pairs       2.475 / 4.050  3.977 / 4.048  5.155 / 4.050
//   threes      1.870 / 4.052  3.006 / 4.029  3.924 / 4.033
// so two waves for pairs, three for threes; one otherwise.
TG_HD constexpr std::uint32_t bundled_cluster_waves(std::uint32_t unroll) {
  return unroll == 2 ? 2 : unroll == 3 ? 3 : 1;
}

// The automatic launch shape for a chunk of `rotations`. A block may have max_threads threads
// (the kernel's limit for its registers) and max_shared bytes (the opt-in shared memory);
// resident_threads is what the device keeps resident of one-rotation, one-group blocks;
// cluster_room is how many clusters of preferred_cluster(s) blocks run at once with a
// multiprocessor of their own each (0: no clusters on this device). A chunk of at most
// cluster_room rotations takes a cluster per rotation (latency: C multiprocessors per
// rotation). Else, while the whole chunk fits in resident_threads with G = (k+1)l, or else
// k+1, groups per rotation, that G; a chunk that fills the device takes G = 1, R = 1.
// Measured on an H100 with tfhe_lib_128 (docs/results/gpu/nvidia-h100_2026-11-26): the
// rotation kernel ran 40,660 rotations/s at 16,384 with 1x1 against 22,456 with 1x4 and
// 25,635 with 1x2; staging the key rows for R > 1 rotations costs more (two barriers and a
// load the block waits for, per row, and fewer blocks per multiprocessor) than the L2 reads
// it saves. R > 1 stays for forced shapes. A chunk that 1x1 cannot hold resident at once
// takes two rotations per thread (l2, k = 1) where the device runs the lane kernel (lane_room,
// the rotations it keeps resident, > 0): every key, twiddle and twist load then serves two
// rotations. Measured on an H100 with tfhe_lib_128 (docs/results/gpu/nvidia-h100_2026-11-26b,
// 792 rotations resident with 1x1, 1,056 with l2), the rotation kernel's rotations/s:
//   rotations   528     768     1,024   4,096   65,536
//   1x1         47,459  68,973  62,041  69,494  69,117
//   l2          40,431  58,794  73,478  74,873  78,303
// Below one wave of 1x1, l2 leaves a third or more of its slots empty; past it, 1x1 runs a
// partial second wave and l2 halves the key's L1 and L2 traffic per rotation.
// A chunk that takes a cluster takes every block summing its column (LaunchShape::sums =
// every_block_sums) where every_block_sums_fit, and 8 points per thread: on an H100 with
// tfhe_lib_128 at 978d167 (docs/results/gpu/nvidia-h100_2026-11-28, bootstrap ms, gather key
// switching) every key form ran fastest so at batches 1 and 8:
//   key          standard       pairs          threes
//   batch        1      8       1      8       1      8
//   c6           2.504  2.813   1.733  1.987   1.662  1.920
//   c6e          2.387  2.651   1.701  1.936   1.564  1.863
//   w6           2.660  2.897   1.875  2.068   1.876  2.148
//   w6e          2.666  2.882   1.789  2.052   1.865  2.153
// (w: 4 points per thread, fused_wide.hpp, which d0f5bcb chose for at most 8 rotations; it
// stays for forced shapes.)
// cluster_waves (default 1) lets a chunk of up to cluster_waves x cluster_room rotations take
// clusters, in waves: bundled_cluster_waves for an unrolled key on bundled keys.
inline LaunchShape choose_shape(const detail::Shape& s, std::uint64_t rotations,
                                std::uint32_t max_threads, std::size_t max_shared,
                                std::uint64_t resident_threads, std::uint64_t cluster_room = 0,
                                std::uint64_t lane_room = 0, std::uint32_t cluster_waves = 1) {
  auto fits = [&](const LaunchShape& b) {
    return block_threads(b, s) <= max_threads && block_shared_bytes(b, s) <= max_shared;
  };
  if (LaunchShape c{1, 1, preferred_cluster(s)};
      rotations <= cluster_room * cluster_waves && fits(c)) {
    c.sums = automatic_cluster_sums(c.cluster, s);
    return c;
  }
  for (const std::uint32_t g : {s.rows(), s.k1()}) {
    const LaunchShape b{g, 1};
    if (fits(b) && rotations * block_threads(b, s) <= resident_threads) return b;
  }
  const LaunchShape one{1, 1};
  if (const LaunchShape l{1, 1, 1, max_lanes};
      lane_room > 0 && rotations * block_threads(one, s) > resident_threads &&
      valid_lanes(l.lanes, s) && fits(l)) {
    return l;
  }
  return one;
}

// One key polynomial (N coefficients) to its fused spectrum, by one group of T threads
// (buffer: buffer_points(M) complex): fold, twist, forward transform, store by key_slot.
template <class Block>
TG_HD void transform_key_polynomial(Block& blk, const Torus32* coefficients, std::uint32_t N,
                                    const Complex* twist, const Complex* W, Complex* buffer,
                                    Complex* spectrum) {
  const std::uint32_t M = N / 2;
  const FftGroups f = make_groups(M, buffer, W);
  blk.each([&](unsigned tid, auto& R) {
TG_UNROLL
    for (unsigned r = 0; r < points_per_thread; ++r) {
      const std::uint32_t j = point_of(f.thread(tid), r, f.m - 1);
      R.v[r] = fold_twist(static_cast<double>(static_cast<std::int32_t>(coefficients[j])),
                          static_cast<double>(static_cast<std::int32_t>(coefficients[j + M])),
                          twist[j]);
    }
  });
  forward_transform(blk, f);
  blk.each([&](unsigned tid, auto& R) {
    const std::uint32_t t = f.thread(tid);
TG_UNROLL
    for (unsigned r = 0; r < points_per_thread; ++r) spectrum[r * f.T + t] = R.v[r];
  });
}

// Asks L2 for the 128-byte line at p (prefetch.global.L2): nothing waits for it. On the host
// and the CUDA emulator, nothing.
TG_HD void prefetch_l2(const void* p) {
#if defined(__CUDA_ARCH__) && !defined(TORUSGATE_CUDA_EMULATION)
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
#else
  (void)p;
#endif
}

// Thread `thread` of `threads`: its lines of `count` complex from `first` towards L2. A step
// asks for the next step's key rows so that they come from L2, not HBM, when it reads them:
// measured on an H100 at batch 1 (docs/results/gpu/nvidia-h100_2026-11-26), the rotation read
// the whole 62 MB tfhe_lib_128 key from DRAM and spent 11 us a step with the FP64 pipe 3% busy.
TG_HD void prefetch_span(const Complex* first, std::size_t count, std::uint32_t thread,
                         std::uint32_t threads) {
  constexpr std::size_t line = 128 / sizeof(Complex);
  for (std::size_t e = std::size_t{thread} * line; e < count; e += std::size_t{threads} * line) {
    prefetch_l2(first + e);
  }
}

// What one step reads besides the accumulators.
struct StepInputs {
  const Complex* key_step = nullptr;  // GGSW i: rows x k1 fused spectra
  const Complex* key_next = nullptr;  // GGSW i+1's, for prefetch_span; null at the last step
  const Complex* twist = nullptr;     // zeta^j, j < M
  const Complex* untwist = nullptr;   // zeta^-j / M
  const Complex* W = nullptr;         // twiddles (fused_fft.hpp)
  GadgetConstants gadget;
  // Unrolled keys (group steps, kernel_math.hpp): the root exponent of every key slot (M, in
  // key_slot order) and the unit table zeta^x, x < 2N; null for the standard key.
  const std::uint32_t* roots = nullptr;
  const Complex* unit = nullptr;
  std::uint32_t next_ggsws = 1;  // GGSW samples at key_next that the next step reads
  // Bundled keys made while the rotation runs (BundleReady): the counters of the row sets at
  // key_step and key_next, null where there is nothing to wait for, and the count each must
  // reach before its rows are fetched.
  const std::uint64_t* ready_step = nullptr;
  const std::uint64_t* ready_next = nullptr;
  std::uint64_t ready_target = 0;
};

// The block's shared memory, as block_shared_bytes lays it out.
struct BlockMemory {
  Complex* buffers = nullptr;  // R*G exchange buffers, rotation-major
  Complex* stage = nullptr;    // R > 1, or a key stage: the staged key rows
  Torus32* acc = nullptr;      // R accumulators of (k+1)N words
  Torus32* column = nullptr;   // R*P column words of N, where column_words_shape
  std::uint64_t* signal = nullptr;  // a key stage's mbarrier (LaunchShape::stage)
};

// The block's rotations in this step: the power of rotation p < `valid` is
// powers[p * stride]; the block's other rotation slots (a last, partial block) compute with
// the power of rotation valid-1 on their own accumulators, which are never written back.
struct StepPowers {
  const std::uint32_t* powers = nullptr;
  std::size_t stride = 0;
  std::uint32_t valid = 1;
  TG_HD std::uint32_t of(std::uint32_t rotation) const { return bit(rotation, 0); }
  // A group step's power of its key bit m (m = 0: `of`'s).
  TG_HD std::uint32_t bit(std::uint32_t rotation, std::uint32_t m) const {
    return powers[std::size_t{rotation < valid ? rotation : valid - 1} * stride + m];
  }
};

// Every thread's K1 product sums to zero.
template <unsigned K1, class Block>
TG_HD void clear_sums(Block& blk) {
  blk.each([&](unsigned, auto& R) {
TG_UNROLL
    for (unsigned c = 0; c < K1; ++c) {
TG_UNROLL
      for (unsigned r = 0; r < points_per_thread; ++r) {
TG_UNROLL
        for (unsigned p = 0; p < std::remove_reference_t<decltype(R)>::lanes; ++p) {
          lane(R.sum[c][r], p) = Complex{0, 0};
        }
      }
    }
  });
}

// One value per lane, passed by value (a lambda capturing the caller's locals by reference
// in its place changed nvcc's code for the one-lane kernels: 32 more instructions).
template <class T, unsigned P>
struct PerLane {
  T lane[P];
};

// The accumulator polynomial (N words) a lane decomposes, and its rotation's power.
struct DigitSource {
  const Torus32* a;
  std::uint32_t power;
};

// x, as a value the compiler cannot compute before this point (a volatile move on the
// device): what is derived from it is computed here, at each call, instead of once before
// the step loop and kept in registers. The lane kernels run at 255 registers, where the
// accumulator points' shared addresses (t | 64r) kept across the steps were spilled.
TG_HD std::uint32_t opaque(std::uint32_t x) {
#if defined(__CUDA_ARCH__) && !defined(TORUSGATE_CUDA_EMULATION)
  asm volatile("mov.b32 %0, %0;" : "+r"(x));
#endif
  return x;
}

// Thread t of a group: the digits of level `level` of (X^power - 1) a for each lane p
// (x.lane[p]), folded and twisted as a twisted forward transform takes them
// (twisted_input), at the first pass's points. Plain: the digits of a itself, not rotated
// (an unrolled key's group step). Flat: rotated by rotate_minus_one_flat (the cluster program)
// instead of rotate_minus_one (the same words).
template <bool Plain = false, bool Flat = false, class Regs, class Groups>
TG_HD void load_digits(Regs& R, std::uint32_t t, const Groups& f,
                       PerLane<DigitSource, Regs::lanes> x, std::uint32_t level,
                       const StepInputs& in) {
  const std::uint32_t M = f.M, N = 2 * f.M;
  if constexpr (Regs::lanes > 1) t = opaque(t);
TG_UNROLL
  for (unsigned r = 0; r < points_per_thread; ++r) {
    const std::uint32_t j = point_of(t, r, f.m - 1);
TG_UNROLL
    for (unsigned p = 0; p < Regs::lanes; ++p) {
      Torus32 lo, hi;
      if constexpr (Plain) {
        lo = x.lane[p].a[j];
        hi = x.lane[p].a[j + M];
      } else if constexpr (Flat) {
        lo = rotate_minus_one_flat(x.lane[p].a, x.lane[p].power, j, N);
        hi = rotate_minus_one_flat(x.lane[p].a, x.lane[p].power, j + M, N);
      } else {
        lo = rotate_minus_one(x.lane[p].a, x.lane[p].power, j, N);
        hi = rotate_minus_one(x.lane[p].a, x.lane[p].power, j + M, N);
      }
      // in.twist[j], where read: one load for every lane (nothing is stored between).
      lane(R.v[r], p) = twisted_input(f, gadget_digit_double(in.gadget, lo, level),
                                      gadget_digit_double(in.gadget, hi, level),
                                      in.twist, j, r);
    }
  }
}

// Thread t of a group: its words of (X^power - 1) a for each lane p's polynomial a
// (x.lane[p]), each plus the gadget's offset (offset_gadget_bits), into that lane's column
// words out.lane[p] (N words) at the points the thread decomposes (those of load_digits), so
// that load_column_digits reads back what the same thread wrote: no barrier between. Once per
// column and step instead of once per row (l times): in tfhe_lib_128's l2 kernel the
// rotation's index arithmetic was 40% of a step's integer and address instructions, its two
// shared loads per word 43% of the shared loads (docs/gpu.md section 6.28).
template <unsigned P, class Groups>
TG_HD void rotate_column(std::uint32_t t, const Groups& f, PerLane<DigitSource, P> x,
                         PerLane<Torus32*, P> out, const StepInputs& in) {
  const std::uint32_t M = f.M, N = 2 * f.M;
TG_UNROLL
  for (unsigned r = 0; r < points_per_thread; ++r) {
    const std::uint32_t j = point_of(t, r, f.m - 1);
TG_UNROLL
    for (unsigned p = 0; p < P; ++p) {
      out.lane[p][j] = rotate_minus_one(x.lane[p].a, x.lane[p].power, j, N) + in.gadget.offset;
      out.lane[p][j + M] =
          rotate_minus_one(x.lane[p].a, x.lane[p].power, j + M, N) + in.gadget.offset;
    }
  }
}

// Thread t of a group: load_digits' values of level `level` (the digits of (X^power - 1) a,
// folded and twisted), from the column words w.lane[p] that rotate_column wrote.
template <class Regs, class Groups>
TG_HD void load_column_digits(Regs& R, std::uint32_t t, const Groups& f,
                              PerLane<Torus32*, Regs::lanes> w, std::uint32_t level,
                              const StepInputs& in) {
  const std::uint32_t M = f.M;
TG_UNROLL
  for (unsigned r = 0; r < points_per_thread; ++r) {
    const std::uint32_t j = point_of(t, r, f.m - 1);
TG_UNROLL
    for (unsigned p = 0; p < Regs::lanes; ++p) {
      lane(R.v[r], p) = twisted_input(f, offset_digit_double(in.gadget, w.lane[p][j], level),
                                      offset_digit_double(in.gadget, w.lane[p][j + M], level),
                                      in.twist, j, r);
    }
  }
}

// One point of the Fourier key in device memory, through L2 only (ld.global.cg): the SM's
// L1 keeps the twiddle, twist and untwist tables, which every rotation reads at every step,
// while each key row passes once per rotation. Measured on an H200
// (docs/results/gpu/nvidia-h200_2026-11-26b, tfhe_lib_128, batch 16384): 55,506 bootstraps/s
// against 51,853 with the key cached in L1 too. TORUSGATE_FUSED_KEY_THROUGH_L1 (compile
// time) restores the plain load, for that A/B. Only for global memory (a device fails with
// cudaErrorInvalidAddressSpace on a shared address; the emulator faults).
TG_HD Complex load_global_key(const Complex* p) {
#if defined(__CUDA_ARCH__) && !defined(TORUSGATE_CUDA_EMULATION) && \
    !defined(TORUSGATE_FUSED_KEY_THROUGH_L1)
  const double2 v = __ldcg(reinterpret_cast<const double2*>(p));
  return Complex{v.x, v.y};
#else
#if defined(TORUSGATE_CUDA_EMULATION)
  if (cuda_emu::is_shared(p)) cuda_emu::device_fault("load_global_key: a shared-memory address");
#endif
  return *p;
#endif
}

// Thread t of a group: sum_c += digits * row[c] (row: one key row's K1 fused spectra, in
// device memory when Global, else staged in shared memory): registers r < Count (all 8 but
// with product halves) hold the thread's points 8t + r + Shift.
template <unsigned K1, bool Global, unsigned Count = points_per_thread, unsigned Shift = 0,
          class Regs, class Groups>
TG_HD void multiply_row(Regs& R, std::uint32_t t, const Groups& f, const Complex* row) {
TG_UNROLL
  for (unsigned c = 0; c < K1; ++c) {
    const Complex* key = row + std::size_t{c} * f.M;
TG_UNROLL
    for (unsigned r = 0; r < Count; ++r) {
      const Complex* point = key + (r + Shift) * f.T + t;
      const Complex b = Global ? load_global_key(point) : *point;  // one load for every lane
TG_UNROLL
      for (unsigned p = 0; p < Regs::lanes; ++p) {
        multiply_add(lane(R.sum[c][r], p), lane(R.v[r], p), b);
      }
    }
  }
}

// The order of a group step's products (multiply_row_group_at), compile time for an A/B
// build: by default the digits times each factor, then that times each column's key point,
// G (1 + K1) complex products a point and row (21 in threes with k = 1); with
// TORUSGATE_FUSED_FACTOR_KEY each factor times the key points, summed per column, then the
// digits times each column's sum once, G K1 + K1 (16 in threes, 8 instead of 9 in pairs).
// The same sum, rounded in another order (the CPU backend's words, as every engine's, up to
// the final rounding). Measured on an H200 (docs/gpu.md section 6.22): 1.4% faster for the
// threes' 1x1 at 16,384, 3 to 8% slower at batch 1 (its cluster kernels spill); off.
#if defined(TORUSGATE_FUSED_FACTOR_KEY)
inline constexpr bool factor_times_key = true;
#else
inline constexpr bool factor_times_key = false;
#endif

// Ablations, an experiment (TORUSGATE_FUSED_ABLATE = a mask, compile time; docs/gpu.md section
// 6.23): a build that leaves out a part of the rotation's step gives WRONG words (bench_gates
// reports them), and only its time means something: what the part costs is the time it no
// longer takes. Never in a default build (0).
//   ablate_factors   a group step's factors from the exponent alone (an integer product and a
//                    conversion, no table load)
//   ablate_fetch     a cluster block's key stage fetched 8 points per GGSW row instead of K1 M
//                    (the same copies, waits and barriers, a 64th of the bytes for N = 1024)
//   ablate_products  no products in a cluster block (its sums stay zero; the key stage still
//                    fetched and waited for)
#if defined(TORUSGATE_FUSED_ABLATE)
inline constexpr unsigned ablate = TORUSGATE_FUSED_ABLATE;
#else
inline constexpr unsigned ablate = 0;
#endif
inline constexpr unsigned ablate_factors = 1, ablate_fetch = 2, ablate_products = 4;

// A group step's factor for exponent x at a slot of root `root` (rotation_factor), or with
// ablate_factors a stand-in that reads no memory.
TG_HD Complex step_factor(const Complex* unit, std::uint32_t root, std::uint32_t x,
                          std::uint32_t N) {
  if constexpr ((ablate & ablate_factors) != 0) {
    return Complex{static_cast<double>((root * x) & (2 * N - 1)) - 1.0, 0.5};
  } else {
    return rotation_factor(unit, root, x, N);
  }
}

// How a group step gets its G = 2^U - 1 factors at a slot (docs/gpu.md sections 6.23 and
// 6.24, where ablations measured the factors at about half of a threes step's products): by
// default zeta^(t a_m) of each key bit's mask a_m from the table and every other power as a
// product, zeta^(t (a + b)) = zeta^(t a) zeta^(t b) (threes: 3 table reads and 4 complex
// products instead of 7 reads; pairs: 2 and 1): the same factors up to their rounding (within
// 1e-15), which the exact integer products' final rounding absorbs, as it absorbs every
// engine's. Measured on an H200 with tfhe_lib_128 (docs/results/gpu/nvidia-h200_2026-11-28,
// f2/ and f3/): the threes' rotation 1.317 ms instead of 1.432 at batch 1 (c6e) and 346.4 ms
// instead of 427.0 at 16,384 (1x1), the pairs' 1.481 instead of 1.560 and 277.0 instead of
// 319.0. TORUSGATE_FUSED_FACTOR_TABLE (compile time) reads each factor from the table
// instead (step_factor), for that A/B. With TORUSGATE_FUSED_FACTOR_SIGNBITS, each table read's
// quadrant by selects and sign bits (unit_power_quarter) instead of negations: the same
// doubles, measured no faster (off).
#if defined(TORUSGATE_FUSED_FACTOR_TABLE)
inline constexpr bool factor_products = false;
#else
inline constexpr bool factor_products = true;
#endif
#if defined(TORUSGATE_FUSED_FACTOR_SIGNBITS)
inline constexpr bool factor_signbits = true;
#else
inline constexpr bool factor_signbits = false;
#endif

// zeta^(root e) (Products) or zeta^(root e) - 1, as the build takes it from the table.
template <bool Power>
TG_HD Complex table_factor(const Complex* unit, std::uint32_t root, std::uint32_t e,
                           std::uint32_t N) {
  if constexpr (factor_signbits && (ablate & ablate_factors) == 0) {
    const Complex v = unit_power_quarter_bits(unit, root, e, N);
    return Power ? v : Complex{v.re - 1.0, v.im};
  } else if constexpr (Power) {
    if constexpr ((ablate & ablate_factors) != 0) {
      return step_factor(unit, root, e, N);  // a stand-in (wrong words, section 6.23)
    } else {
      return unit_power_quarter(unit, root, e, N);
    }
  } else {
    return step_factor(unit, root, e, N);
  }
}

// The G factors f_g = zeta^(root e_g) - 1 of a group step at a slot of root `root` (e: the
// step's exponents, group_exponents' order: GGSW g has pattern G - g over the key bits, bit
// U-1-m for key bit m), by the build's method (factor_products or the table for each).
// Products (template argument, the build's by default): the powers of single bits from the
// table, pattern v's as the product of v's without its lowest bit and that bit's.
template <unsigned U, bool Products = factor_products>
TG_HD void group_factors(const Complex* unit, std::uint32_t root, const GroupExponents<U>& e,
                         std::uint32_t N, Complex (&f)[group_ggsws<U>]) {
  constexpr unsigned G = group_ggsws<U>;
  if constexpr (!Products) {
TG_UNROLL
    for (unsigned g = 0; g < G; ++g) f[g] = table_factor<false>(unit, root, e.e[g], N);
  } else {
    Complex z[G + 1];  // z[v]: zeta^(root e) of pattern v
TG_UNROLL
    for (unsigned v = 1; v <= G; ++v) {
      const unsigned low = v & (0u - v);
      if (low == v) {
        z[v] = table_factor<true>(unit, root, e.e[G - v], N);
      } else {
        z[v] = times(z[v - low], z[low]);
      }
    }
TG_UNROLL
    for (unsigned g = 0; g < G; ++g) f[g] = Complex{z[G - g].re - 1.0, z[G - g].im};
  }
}

// A thread's group step (U key bits): sum_c += sum_g (digits * f_g) * row_g[c], row_g: key
// row q of the group's GGSW g < 2^U - 1 (row + g * ggsw, in device memory when Global, else
// staged in shared memory), f_g = zeta^(t_s e_g) - 1 at the point's slot s (kernel_math.hpp),
// e: each lane's 2^U - 1 exponents; register r's point at key slot slot_of(r) (the 8-point
// groups' r T + t, or a wide cluster's, fused_wide.hpp). FactorKey: the products in the order
// sum_c += digits * (sum_g f_g * row_g[c]) (factor_times_key). Registers r < Count (0: all;
// fewer with product halves).
template <unsigned K1, unsigned U, bool Global = true, bool FactorKey = factor_times_key,
          unsigned Count = 0, class Regs, class Groups, class Slot>
TG_HD void multiply_row_group_at(Regs& R, const Groups& f, const Complex* row, std::size_t ggsw,
                                 PerLane<GroupExponents<U>, Regs::lanes> e, const StepInputs& in,
                                 Slot slot_of) {
  constexpr unsigned points = std::extent_v<decltype(Regs::v)>;
  constexpr unsigned end = Count == 0 ? points : Count;
  const std::uint32_t N = 2 * f.M;
TG_UNROLL
  for (unsigned r = 0; r < end; ++r) {
    const std::uint32_t slot = slot_of(r);
    const std::uint32_t root = in.roots[slot];
    Complex factors[Regs::lanes][group_ggsws<U>];
TG_UNROLL
    for (unsigned p = 0; p < Regs::lanes; ++p) group_factors<U>(in.unit, root, e.lane[p], N, factors[p]);
    if constexpr (FactorKey) {
      Complex keyed[K1][Regs::lanes] = {};
TG_UNROLL
      for (unsigned g = 0; g < group_ggsws<U>; ++g) {
        Complex factor[Regs::lanes];
TG_UNROLL
        for (unsigned p = 0; p < Regs::lanes; ++p) factor[p] = factors[p][g];
TG_UNROLL
        for (unsigned c = 0; c < K1; ++c) {
          const Complex* point = row + g * ggsw + std::size_t{c} * f.M + slot;
          const Complex b = Global ? load_global_key(point) : *point;
TG_UNROLL
          for (unsigned p = 0; p < Regs::lanes; ++p) multiply_add(keyed[c][p], factor[p], b);
        }
      }
TG_UNROLL
      for (unsigned c = 0; c < K1; ++c) {
TG_UNROLL
        for (unsigned p = 0; p < Regs::lanes; ++p) {
          multiply_add(lane(R.sum[c][r], p), lane(R.v[r], p), keyed[c][p]);
        }
      }
      continue;
    }
TG_UNROLL
    for (unsigned g = 0; g < group_ggsws<U>; ++g) {
      Complex w[Regs::lanes];
TG_UNROLL
      for (unsigned p = 0; p < Regs::lanes; ++p) w[p] = times(lane(R.v[r], p), factors[p][g]);
TG_UNROLL
      for (unsigned c = 0; c < K1; ++c) {
        const Complex* point = row + g * ggsw + std::size_t{c} * f.M + slot;
        const Complex b = Global ? load_global_key(point) : *point;
TG_UNROLL
        for (unsigned p = 0; p < Regs::lanes; ++p) multiply_add(lane(R.sum[c][r], p), w[p], b);
      }
    }
  }
}

// Thread t of an 8-point group, a group step (multiply_row_group_at at slots r T + t):
// registers r < Count (0: all) hold points 8t + r + Shift.
template <unsigned K1, unsigned U, bool Global = true, unsigned Count = 0, unsigned Shift = 0,
          class Regs, class Groups>
TG_HD void multiply_row_group(Regs& R, std::uint32_t t, const Groups& f, const Complex* row,
                              std::size_t ggsw, PerLane<GroupExponents<U>, Regs::lanes> e,
                              const StepInputs& in) {
  multiply_row_group_at<K1, U, Global, factor_times_key, Count>(
      R, f, row, ggsw, e, in, [&](unsigned r) { return (r + Shift) * f.T + t; });
}

// ---- bundled keys: a group step's GGSW combined before the rotation -----------------------
//
// A group step adds sum_g (X^e_g - 1) (GGSW_g [x] ACC) = (sum_g (X^e_g - 1) GGSW_g) [x] ACC:
// the external product is linear in the GGSW, and pointwise in the Fourier domain, so at slot
// s the bundled row (q, c) is B[q][c] = sum_g f_g K_g[q][c] with f_g = zeta^(t_s e_g) - 1, the
// group step's factors (group_factors). The exponents come from the rotation's switched
// masks alone, not from its accumulator, so every group step's bundled rows can be made before
// the rotation starts, by the whole device at once (fused_bundle_kernel), and the rotation's
// group step becomes a CMUX step's products (multiply_row: K1 products a point and row) on
// the digits of the accumulator itself, with none of its factors and 2^u - 1 GGSW products on
// the rotation's chain (docs/gpu.md section 6.25). The same products rounded in another order
// (factor_times_key's: each factor times the key points first): the final rounding of the
// exact integer products absorbs the difference, as it absorbs every engine's.
// One rotation's bundled key: a row set of rows x K1 spectra (the layout of one GGSW of the
// fused key, key_index) per group step, grouped_bits / u of them.

// The step kind of a bundled group step in the cluster program's U argument (its digits those
// of the accumulator itself, as a group step's; its products a CMUX step's, on one row set),
// and the kernels' Unroll argument of a rotation on a bundled key (its group steps bundled,
// then a CMUX step per key bit left).
inline constexpr unsigned bundled_step = 0;
// GGSW samples whose rows a step of kind U reads: 2^U - 1 for a group step, 1 otherwise.
template <unsigned U>
inline constexpr unsigned step_ggsws = U > 1 ? group_ggsws<U> : 1;

// Group steps of a rotation, the row sets of its bundled key.
TG_HD std::uint32_t bundle_steps(const detail::Shape& s) {
  return s.unroll > 1 ? s.grouped_bits() / s.unroll : 0;
}
// Complex of one rotation's bundled key.
TG_HD std::size_t bundle_size(const detail::Shape& s) {
  return std::size_t{bundle_steps(s)} * s.rows() * s.k1() * s.M();
}
// Points of the bundled keys of `capacity` rotations: one per group step and slot, the index
// space of bundle_point_at.
TG_HD std::uint64_t bundle_points(const detail::Shape& s, std::uint64_t capacity) {
  return capacity * bundle_steps(s) * s.M();
}

// Point `idx` of the bundled keys of a chunk (U = s.unroll > 1; idx < bundle_points): rotation
// r, group step j (key bits jU .. jU + U - 1, switched masks powers[r n + jU + m]) and slot p,
// every row and column: bundle[r][j][q][c][p] = sum_g f_g key[G j + g][q][c][p] (g in order
// from 0; the fused key's slot order, so slot p's root is roots[p]).
template <unsigned U>
TG_HD void bundle_point_at(std::uint64_t idx, const detail::Shape& s, const std::uint32_t* powers,
                           const Complex* key, const std::uint32_t* roots, const Complex* unit,
                           Complex* bundle) {
  constexpr unsigned G = group_ggsws<U>;
  const std::uint32_t M = s.M(), steps = bundle_steps(s);
  const std::uint32_t p = static_cast<std::uint32_t>(idx % M);
  const std::uint64_t at = idx / M;  // r steps + j
  const std::uint32_t j = static_cast<std::uint32_t>(at % steps);
  const std::uint32_t* masks = powers + (at / steps) * s.n + std::size_t{j} * U;
  Complex f[G];
  group_factors<U>(unit, roots[p], group_exponents<U>([&](unsigned m) { return masks[m]; }), 2 * M,
                   f);
  const std::size_t rows = std::size_t{s.rows()} * s.k1(), key_step = rows * M;
  const Complex* ggsw = key + s.step_ggsw(j * U) * key_step + p;
  Complex* out = bundle + at * key_step + p;
  for (std::size_t row = 0; row < rows; ++row) {
    Complex b{0, 0};
TG_UNROLL
    for (unsigned g = 0; g < G; ++g) multiply_add(b, f[g], load_global_key(ggsw + g * key_step + row * M));
    out[row * M] = b;
  }
}

// Bundled keys made while the rotation runs (CudaOptions::fused_bundle_overlap; docs/gpu.md
// section 6.26): the bundling kernel is the rotation's programmatic primary, and the rotation
// starts while it works. It makes its row sets in the order the rotations read them (every
// rotation's group step 0 first: bundle_item), a part of bundle_threads slots of one row set
// at a time, and counts each part it has written into the row set's counter (one per rotation
// and group step, rotation-major, as the row sets); a cluster block asks for a row set's rows
// only once its counter reaches `target`: the row set's parts times the bundlings the
// workspace's counters have counted, this one included. counters null: the bundled keys were
// made before the rotation, nothing to wait for.
struct BundleReady {
  std::uint64_t* counters = nullptr;
  std::uint64_t target = 0;
};
// Threads of a bundling block, and so the slots of a part.
inline constexpr unsigned bundle_threads = 256;
// Parts of a row set (of M slots).
TG_HD std::uint32_t bundle_parts(const detail::Shape& s) {
  return (s.M() + bundle_threads - 1) / bundle_threads;
}
// Work items of the bundling of `capacity` rotations: a part of a row set each.
TG_HD std::uint64_t bundle_items(const detail::Shape& s, std::uint64_t capacity) {
  return capacity * bundle_steps(s) * bundle_parts(s);
}
// Work item w (w < bundle_items): group step j, then rotation r, then part, slowest first, so
// that every rotation's first row set is made first.
struct BundleItem {
  std::uint64_t rotation;
  std::uint32_t step;
  std::uint32_t part;
  // Its row set's index among the chunk's (the bundled keys' and the counters' order).
  TG_HD std::uint64_t row_set(const detail::Shape& s) const {
    return rotation * bundle_steps(s) + step;
  }
  // bundle_point_at's index of its slot p (p < M).
  TG_HD std::uint64_t point(const detail::Shape& s, std::uint32_t p) const {
    return row_set(s) * s.M() + p;
  }
};
TG_HD BundleItem bundle_item(std::uint64_t w, const detail::Shape& s, std::uint64_t capacity) {
  const std::uint32_t parts = bundle_parts(s);
  const std::uint64_t set = w / parts;
  return {set % capacity, static_cast<std::uint32_t>(set / capacity),
          static_cast<std::uint32_t>(w % parts)};
}

// Registers a block of `threads` threads of `registers` each holds on a multiprocessor: its
// warps' registers, each warp's rounded up to the allocation unit of 256.
inline std::uint64_t block_registers(std::uint32_t threads, std::uint32_t registers) {
  const std::uint64_t warps = (std::uint64_t{threads} + 31) / 32;
  return warps * ((std::uint64_t{registers} * 32 + 255) / 256 * 256);
}
// Bundling blocks (bundle_threads threads of bundle_registers) per multiprocessor that leave
// room for one rotation block (rotation_threads of rotation_registers) beside them: as many as
// the registers and threads left allow, at least 1 (BundleReady: the rotation then starts on
// multiprocessors the bundling runs on, not after it). Shared memory is no limit: the
// bundling has none, and its carveout is set to the most shared memory.
inline std::uint32_t bundle_blocks_beside(std::uint32_t sm_registers, std::uint32_t sm_threads,
                                          std::uint32_t rotation_threads,
                                          std::uint32_t rotation_registers,
                                          std::uint32_t bundling_registers) {
  const std::uint64_t rotation = block_registers(rotation_threads, rotation_registers);
  const std::uint64_t bundling = block_registers(bundle_threads, bundling_registers);
  std::uint64_t fit = sm_threads > rotation_threads ? (sm_threads - rotation_threads) / bundle_threads
                                                    : 0;
  if (bundling > 0) fit = std::min(fit, sm_registers > rotation ? (sm_registers - rotation) / bundling : 0);
  return static_cast<std::uint32_t>(std::max<std::uint64_t>(fit, 1));
}

// Thread t of a group, after the twisted inverse transform: a.lane[p] += round(untwisted v)
// for each lane p (untwisted_output; a.lane[p]: its accumulator polynomial).
template <class Regs, class Groups>
TG_HD void untwist_add(Regs& R, std::uint32_t t, const Groups& f, const Complex* untwist,
                       PerLane<Torus32*, Regs::lanes> a) {
  if constexpr (Regs::lanes > 1) t = opaque(t);
TG_UNROLL
  for (unsigned r = 0; r < points_per_thread; ++r) {
    const std::uint32_t j = point_of(t, r, f.m - 1);
TG_UNROLL
    for (unsigned p = 0; p < Regs::lanes; ++p) {
      round_add(untwisted_output(f, lane(R.v[r], p), untwist, j, r), a.lane[p], j, f.M);
    }
  }
}

// R.v = partial(0)[at(r)] + partial(1)[at(r)] + ... + partial(count-1)[at(r)], added in that
// order: one product's partials (partial(p): partial p's points, at(r): where point r of the
// thread is in each). InFlight partials are loaded at once before they are added (the same
// additions in the same order, so the same words): InFlight = 3 made a cluster of 6 wait
// twice a column instead of 6 times when its partials were read through the cluster (section
// 6.4; they arrive in the owner's inbox since section 6.12). The block program's groups
// load one at a time: several partials' loads in flight cost registers (nvcc 13, sm_80: the
// k = 1 block kernel spills 12 bytes per thread when the loop unrolls, none when it does not).
template <unsigned InFlight = 1, class Regs, class Partial, class At>
TG_HD void sum_partials(Regs& R, std::uint32_t count, Partial partial, At at) {
  // Round p: partials p .. p + InFlight - 1 (those below count; p itself always is) loaded,
  // then added in order (partial 0 taken, not added). Points: the thread's points (8, or 4
  // in a wide cluster, fused_wide.hpp).
  constexpr unsigned points = std::extent_v<decltype(Regs::v)>;
  Complex x[InFlight][points] = {};
  auto load = [&](std::uint32_t p) {
TG_UNROLL
    for (unsigned q = 0; q < InFlight; ++q) {
      if (q > 0 && p + q >= count) break;
      const Complex* next = partial(p + q);
TG_UNROLL
      for (unsigned r = 0; r < points; ++r) x[q][r] = next[at(r)];
    }
  };
  auto add = [&](std::uint32_t p, unsigned from) {
TG_UNROLL
    for (unsigned q = from; q < InFlight; ++q) {
      if (q > 0 && p + q >= count) break;
TG_UNROLL
      for (unsigned r = 0; r < points; ++r) {
        R.v[r].re += x[q][r].re;
        R.v[r].im += x[q][r].im;
      }
    }
  };
  load(0);
TG_UNROLL
  for (unsigned r = 0; r < points; ++r) R.v[r] = x[0][r];
  add(0, 1);
TG_NO_UNROLL
  for (std::uint32_t p = InFlight; p < count; p += InFlight) {
    load(p);
    add(p, 0);
  }
}

// Partials a cluster block loads at once when it sums a product (sum_partials).
inline constexpr unsigned cluster_partials_in_flight = 3;

// CMUX step: acc += external_product(BK_i, (X^power - 1) acc) for each of the block's R*P
// accumulators ((k+1)N words each in shared memory). K1 = k + 1; Groups: FftGroups, or
// FixedGroups<log2 M> (then s.N must be 2M); LS: LaunchShape, or a FixedShape (required with
// P = Block::registers::lanes > 1: FixedShape<1, 1, P>). U > 1: an unrolled key's group step
// of U key bits instead, acc += sum_g (X^e_g - 1) (GGSW_g [x] acc) with the 2^U - 1 GGSW from
// in.key_step and powers.bit(., m) the group's switched masks (one rotation slot per block:
// R = 1). Columns: the standard key's kernels (blind_rotate), whose one-group shapes keep
// column words (column_words_shape).
template <unsigned K1, class Groups = FftGroups, unsigned U = 1, bool Columns = true, class Block,
          class LS>
TG_HD void cmux_step(Block& blk, const detail::Shape& s, LS shape, const BlockMemory& mem,
                     const StepPowers& powers, const StepInputs& in) {
  constexpr unsigned P = Block::registers::lanes;
  constexpr bool Staged = staged_shape<LS>;
  static_assert(P == 1 || one_slot_shape<LS, P>,
                "lanes run one group and one rotation slot per block");
  static_assert(!Staged || (U == 1 && one_slot_shape<LS, P>),
                "a key stage serves the standard key's CMUX steps on one group and one slot");
  const Groups f = make_groups<Groups>(s.M(), mem.buffers, in.W);  // group: slot * G + g
  const std::uint32_t M = f.M, N = 2 * f.M, l = s.bk_level_count, rows = s.rows();
  const std::uint32_t groups = shape.groups;
  const std::uint32_t buffer_size = buffer_points(M);
  const std::uint32_t threads = shape.rotations * groups * f.T;
  constexpr bool Group = U > 1;
  // One group per rotation (column_words_shape; Columns: the standard key's kernels): its
  // threads decompose every row of a column, so they rotate the column once (rotate_column)
  // instead of at each of its l rows.
  const bool column_words = Columns && !Group && groups == 1 && !Staged;
  auto slot_of = [&](unsigned tid) { return f.group(tid) / groups; };
  auto rotation_of = [&](unsigned tid, unsigned p) { return slot_of(tid) * P + p; };
  auto acc_of = [&](unsigned tid, unsigned p) {
    return mem.acc + std::size_t{rotation_of(tid, p)} * K1 * N;
  };
  // Each lane's accumulator polynomial c.
  auto polynomials = [&](unsigned tid, std::uint32_t c) {
    PerLane<Torus32*, P> a;
TG_UNROLL
    for (unsigned p = 0; p < P; ++p) a.lane[p] = acc_of(tid, p) + std::size_t{c} * N;
    return a;
  };
  blk.sync();  // the previous step's additions into acc are done
  clear_sums<K1>(blk);
  if (in.key_next != nullptr) {
    blk.each([&](unsigned tid, auto&) {
      // (A CMUX step's next step is one: only a group step's next may be a group.)
      prefetch_span(in.key_next, std::size_t{Group ? in.next_ggsws : 1} * rows * K1 * M, tid,
                    threads);
    });
  }
  const std::size_t ggsw = std::size_t{rows} * K1 * M;
  for (std::uint32_t x = 0; x < rows / groups; ++x) {
    if (!Group && shape.rotations > 1) {
      // Key rows g + G x (g < G), every column, staged for the block's rotations: copied
      // asynchronously while the digits are decomposed and transformed, waited for just
      // before the products (each thread waits for its own copies, then the barrier).
      blk.sync();  // the previous iteration's products have read the stage
      blk.each([&](unsigned tid, auto&) {
        const std::uint32_t per_row = K1 * M;
        for (std::uint32_t e = tid; e < groups * per_row; e += threads) {
          const std::size_t row = std::size_t{e / per_row} + groups * x;
          copy16_async(mem.stage + e, in.key_step + row * per_row + e % per_row);
        }
      });
    }
    // Digits of row q (column q / l, level q % l + 1) at the first pass's points; with one
    // group the column rotated once, at its first row, into the column words.
    blk.each([&](unsigned tid, auto& R) {
      const std::uint32_t q = f.group(tid) % groups + groups * x;
      PerLane<DigitSource, P> src;
TG_UNROLL
      for (unsigned p = 0; p < P; ++p) {
        src.lane[p] = DigitSource{acc_of(tid, p) + std::size_t{q / l} * N,
                                  powers.of(rotation_of(tid, p))};
      }
      if (column_words) {
        PerLane<Torus32*, P> w;
TG_UNROLL
        for (unsigned p = 0; p < P; ++p) {
          w.lane[p] = mem.column + std::size_t{rotation_of(tid, p)} * N;
        }
        if (q % l == 0) rotate_column<P>(f.thread(tid), f, src, w, in);
        load_column_digits(R, f.thread(tid), f, w, q % l + 1, in);
      } else {
        load_digits<Group>(R, f.thread(tid), f, src, q % l + 1, in);
      }
    });
    if constexpr (Staged) {
      // Row x's key spectra into the stage by the TMA, asked for after the transform's first
      // barrier (every thread's products of the row before have read the stage by then) and
      // waited for just before the products.
      const Complex* row = in.key_step + std::size_t{x} * K1 * M;
      forward_transform<true>(blk, f, [&](unsigned tid) {
        blk.fetch(tid, mem.stage, row, std::size_t{K1} * M, 0, 1, mem.signal);
      });
      blk.each([&](unsigned tid, auto&) { blk.wait_fetched(tid, mem.signal, 0); });
    } else {
      forward_transform<true>(blk, f);
    }
    if (!Group && shape.rotations > 1) {
      blk.each([&](unsigned, auto&) { copy16_async_wait(); });
      blk.sync();  // every thread's copies are in the stage
    }
    // sum_c += digits * BK_i[q][c], pointwise, in registers.
    blk.each([&](unsigned tid, auto& R) {
      const std::uint32_t g = f.group(tid) % groups;
      if constexpr (Group) {
        PerLane<GroupExponents<U>, P> e;
TG_UNROLL
        for (unsigned p = 0; p < P; ++p) {
          const std::uint32_t rotation = rotation_of(tid, p);
          e.lane[p] = group_exponents<U>([&](unsigned m) { return powers.bit(rotation, m); });
        }
        multiply_row_group<K1, U>(R, f.thread(tid), f,
                                  in.key_step + (std::size_t{g} + groups * x) * K1 * M, ggsw, e,
                                  in);
      } else if (Staged || shape.rotations > 1) {
        multiply_row<K1, false>(R, f.thread(tid), f, mem.stage + std::size_t{g} * K1 * M);
      } else {
        multiply_row<K1, true>(R, f.thread(tid), f,
                               in.key_step + (std::size_t{g} + groups * x) * K1 * M);
      }
    });
  }

  if (groups == 1) {
    // Each product back in turn, from the registers.
TG_UNROLL
    for (unsigned c = 0; c < K1; ++c) {
      blk.each([&](unsigned, auto& R) {
TG_UNROLL
        for (unsigned r = 0; r < points_per_thread; ++r) R.v[r] = R.sum[c][r];
      });
      inverse_transform<true>(blk, f);
      blk.each([&](unsigned tid, auto& R) {
        untwist_add(R, f.thread(tid), f, in.untwist, polynomials(tid, c));
      });
    }
    return;
  }
  if constexpr (!one_group_shape<LS>) {
    // Each rotation's products, column by column: every group writes its partial product c
    // into its own buffer, then group c sums the G partials in group order into its registers
    // (the others take zeros and idle along in the inverse transform). At most two barriers a
    // column instead of one per group. R.sum is indexed by constants only (a register, not a
    // local array indexed at run time).
    for (unsigned c = 0; c < K1; ++c) {
      // Column c-1's sums have read the buffers. Column 0 needs no barrier: each thread writes
      // the slots of its points 8t + r, which it alone read last (the last forward
      // transform's last exchange; M = 8 has none, and the previous step's sums are behind
      // the step's first barrier).
      if (c > 0) blk.sync();
      blk.each([&](unsigned tid, auto& R) {
        Complex* own = f.buffer(tid);
        const std::uint32_t t = f.thread(tid);
TG_UNROLL
        for (unsigned column = 0; column < K1; ++column) {
          if (column != c) continue;
TG_UNROLL
          for (unsigned r = 0; r < points_per_thread; ++r) {
            own[padded(t * points_per_thread + r)] = R.sum[column][r];
          }
        }
      });
      blk.sync();
      blk.each([&](unsigned tid, auto& R) {
        if (f.group(tid) % groups != c) return;
        const Complex* partials = mem.buffers + std::size_t{slot_of(tid)} * groups * buffer_size;
        const std::uint32_t slot = f.thread(tid) * points_per_thread;
        sum_partials(
            R, groups, [&](std::uint32_t p) { return partials + std::size_t{p} * buffer_size; },
            [&](unsigned r) { return padded(slot + r); });
      });
    }
    blk.each([&](unsigned tid, auto& R) {
      if (f.group(tid) % groups < K1) return;
TG_UNROLL
      for (unsigned r = 0; r < points_per_thread; ++r) R.v[r] = Complex{0, 0};
    });
    // The inverse transform's first exchange waits for the sums' reads of the buffers.
    inverse_transform<true>(blk, f);
    blk.each([&](unsigned tid, auto& R) {
      const std::uint32_t c = f.group(tid) % groups;
      if (c >= K1) return;
      untwist_add(R, f.thread(tid), f, in.untwist, polynomials(tid, c));
    });
  }
}

// step(i, 1) for each CMUX step from key bit `first` to n - 1, with in's key rows of it and of
// the next: key bit i's GGSW of the fused key `key` (Shape::step_ggsw after an unrolled key's
// groups, else GGSW i).
template <bool Unrolled, class Step>
TG_HD void cmux_steps_from(const detail::Shape& s, const Complex* key, std::uint32_t first,
                           StepInputs& in, Step&& step) {
  const std::size_t key_step = std::size_t{s.rows()} * s.k1() * s.M();
  in.ready_step = in.ready_next = nullptr;  // the fused key's GGSW: nothing to wait for
  for (std::uint32_t i = first; i < s.n; ++i) {
    in.key_step = key + (Unrolled ? s.step_ggsw(i) : i) * key_step;
    in.key_next = i + 1 < s.n ? in.key_step + key_step : nullptr;
    in.next_ggsws = 1;
    step(i, std::integral_constant<unsigned, 1>{});
  }
}

// The steps of a blind rotation in order, each step(i, u) (u: a std::integral_constant, the
// step's key bits) with in's key rows of it and of the next step: an unrolled key's group
// steps (Unroll > 1: key bits i .. i + Unroll - 1, GGSW (i / Unroll) G .. + G - 1, G =
// 2^Unroll - 1) first, then a CMUX step per key bit left, each on the GGSW after them
// (Shape::step_ggsw); for the standard key (Unroll 1) a CMUX step per key bit.
template <unsigned Unroll, class Step>
TG_HD void for_each_step(const detail::Shape& s, const Complex* key, StepInputs& in,
                         Step&& step) {
  constexpr unsigned G = group_ggsws<Unroll>;
  const std::size_t key_step = std::size_t{s.rows()} * s.k1() * s.M();
  const std::uint32_t grouped = Unroll > 1 ? s.grouped_bits() : 0;  // s.unroll is Unroll
  // Two loops, not one with a branch: nvcc 13 then keeps the unrolled 1x1 kernel of
  // N = 1024 without a spill (4 bytes with the branch).
  if constexpr (Unroll > 1) {
    in.ready_step = in.ready_next = nullptr;  // the fused key's GGSW
    for (std::uint32_t i = 0; i < grouped; i += Unroll) {
      in.key_step = key + s.step_ggsw(i) * key_step;
      in.key_next = i + Unroll < s.n ? in.key_step + G * key_step : nullptr;
      in.next_ggsws = i + Unroll < grouped ? G : 1;
      step(i, std::integral_constant<unsigned, Unroll>{});
    }
  }
  cmux_steps_from<(Unroll > 1)>(s, key, grouped, in, step);
}

// The steps of a rotation on a bundled key (s.unroll = u > 1), each step(i, u) as in
// for_each_step: its group steps (key bits i .. i + u - 1) on their row sets, row set i/u of
// `bundle` (bundle_point_at), as steps of kind bundled_step, then a CMUX step per key bit left,
// on the fused key's GGSW after the groups (Shape::step_ggsw).
// ready: null, or the rotation's counters of its row sets (BundleReady; in.ready_target set),
// which in.ready_step and in.ready_next then point into for the row sets' fetches.
template <class Step>
TG_HD void for_each_bundled_step(const detail::Shape& s, const Complex* bundle, const Complex* key,
                                 StepInputs& in, Step&& step,
                                 const std::uint64_t* ready = nullptr) {
  const std::size_t key_step = std::size_t{s.rows()} * s.k1() * s.M();
  const std::uint32_t grouped = s.grouped_bits();
  const Complex* after = grouped < s.n ? key + s.step_ggsw(grouped) * key_step : nullptr;
  for (std::uint32_t i = 0; i < grouped; i += s.unroll) {
    const std::uint32_t j = i / s.unroll;
    in.key_step = bundle + std::size_t{j} * key_step;
    in.key_next = i + s.unroll < grouped ? in.key_step + key_step : after;
    in.next_ggsws = 1;
    in.ready_step = ready != nullptr ? ready + j : nullptr;
    in.ready_next = ready != nullptr && i + s.unroll < grouped ? ready + j + 1 : nullptr;
    step(i, std::integral_constant<unsigned, bundled_step>{});
  }
  cmux_steps_from<true>(s, key, grouped, in, step);  // (which clears in.ready_*)
}

// The n CMUX steps of the block's rotations on their accumulators in shared memory: `powers`
// points to the first rotation's n switched masks (rotation p's at powers + p*n, p < valid),
// key is the whole fused Fourier key. Unroll > 1: an unrolled key's group steps first
// (for_each_step).
template <unsigned K1, class Groups = FftGroups, unsigned Unroll = 1, class Block, class LS>
TG_HD void blind_rotate(Block& blk, const detail::Shape& s, LS shape, const BlockMemory& mem,
                        const std::uint32_t* powers, std::uint32_t valid, const Complex* key,
                        StepInputs in) {
  for_each_step<Unroll>(s, key, in, [&](std::uint32_t i, auto u) {
    cmux_step<K1, Groups, decltype(u)::value, Unroll == 1>(blk, s, shape, mem,
                                                           StepPowers{powers + i, s.n, valid}, in);
  });
}

// The block's shared memory at `base` (16-byte aligned) for a launch shape.
TG_HD BlockMemory block_memory(unsigned char* base, const LaunchShape& shape,
                               const detail::Shape& s) {
  BlockMemory mem;
  mem.buffers = reinterpret_cast<Complex*>(base);
  mem.stage = reinterpret_cast<Complex*>(base + block_buffer_bytes(shape, s));
  mem.acc = reinterpret_cast<Torus32*>(base + block_accumulator_offset(shape, s));
  if (column_words_shape(shape, s)) {
    mem.column = reinterpret_cast<Torus32*>(base + block_column_offset(shape, s));
  }
  if (shape.stage == key_stage) {
    mem.signal = reinterpret_cast<std::uint64_t*>(base + block_signal_offset(shape, s));
  }
  return mem;
}

// ---- one rotation on a thread block cluster ----------------------------------------------
//
// For batch 1 a one-block rotation keeps one SM busy for 630 steps; its FP64 pipe alone
// bounds it near 0.76 ms (docs/gpu.md section 6). A cluster of C blocks (compute capability
// 9.0: co-scheduled, each may write the others' shared memory) splits each step over C SMs:
// block b transforms digit rows b, b + C, ... and multiplies them by their key rows; it sends
// its partial product c into slot b of the inbox of column c's owner (column_owner: block c l
// with C = (k+1)l, else block c; the owner keeps its own in place); the owner, once all have
// arrived, sums them in rank order (the one-block program's group order: the same words as
// G = C), transforms the sum back and adds it into accumulator column c of its copy of the
// accumulator, then sends the column into the copies of the blocks that decompose it
// (push_columns), so that each block decomposes from its own shared memory.
//
// No cluster barrier in a step (docs/gpu.md section 6.12): every transfer is an asynchronous
// store into the receiver's shared memory (st.async) that completes on one of the receiver's
// mbarriers, which counts the bytes (partials_arrived + i, the owners' inbox buffer i:
// (C-1)M points a step; columns_arrived: the columns a block decomposes and does not own), and
// the receiver waits for its mbarrier's phase (Block::wait_signal), not for the whole cluster.
// With one inbox buffer (cluster_inboxes: every block decomposes every column, or two do not
// fit) every owner sends its column to every block, and the order of a step needs no more:
// block b sends its step i+1 partials only after all k+1 columns of step i arrived, and owner
// c sent its column only after it had read its inbox of step i, so no slot is written while it
// is read. With two (docs/gpu.md section 6.16), step i's partials go into buffer i mod 2 and
// complete on its own mbarrier, and a block waits only for the columns it decomposes: block b
// writes buffer i+1 mod 2 of owner o at step i+1 only after the column of step i that its row
// decomposes was summed (by b itself, or by an owner that waited for o's partials of step i),
// and o sent those only after it had read buffer i-1 mod 2 = i+1 mod 2 at step i-1; nor can
// they arrive before o's phase of step i-1 completed. Either way owner c sends its column of
// step i+1 only after every block's partials of step i+1 arrived, which each block sends only
// after its decomposition has read its copy, so no copy is written while it is read.
//
// With LaunchShape::sums = every_block_sums (C = (k+1)l, two inbox buffers; docs/gpu.md
// section 6.18) every block sums the column its one row decomposes itself: each block sends
// its partial product c into the inboxes of the l blocks of column c, each waits for its own
// C - 1 partials, sums them in rank order (the owner's order: the same words in every copy),
// transforms back and adds the column into its own copy, and no column is sent: one transfer
// a step instead of two, for l times the partials. The order is the two-buffer one's: block
// b writes buffer i+1 mod 2 of block o at step i+1 only after it summed step i, which needed
// o's partials of step i, which o sent only after it had read buffer i-1 mod 2 at step i-1; a
// block barrier between its untwist_add and its next decomposition (push_columns) is all its
// copy needs.
//
// Each block's key rows come into its key stage (docs/gpu.md section 6.13): its products wait
// for the stage's mbarrier key_arrived, and only after a block barrier behind them (every
// thread has read the stage) does the block ask for the rows of its next products, its next
// row of the step or its first of the next step, so a fetch lands while the block transforms
// the next digits, and never in a stage still being read. A block fetches once per row and
// waits once per row, so the mbarrier's phases pair up; the rotation's last step fetches
// nothing, and its first fetches its own first rows.
//
// A cluster Block has, beside each/sync: cluster_sync() (every thread of every block of the
// cluster), rank(tid) (the block of thread tid), inboxes() and roles(tid) (cluster_inboxes and
// the ClusterRoles of thread tid's block), local(p, tid) and remote(p, b): for a pointer
// p into shared memory as `base` lays it out, the same place in the calling thread's own block
// and in block b; send(p, b, v, signals) (v, 16 bytes, into place p of block b, completing on
// its signals' mbarrier), wait_signal(tid, signals, which, bytes) (a block's threads wait
// until its mbarrier `which` has counted `bytes` more), init_signals(signals),
// fetch(tid, dst, src, count, stride, segments, signal) (one thread of the block copies
// `segments` runs of `count` complex from device memory, src + g * stride, into its own shared
// memory at dst + g * count, completing on its mbarrier `signal`) and wait_fetched(tid,
// signals, which) (the block's threads wait for the fetch's phase). On the device base is the
// block's own shared memory and tid its thread index; the host runs the cluster as one block
// of C*T threads, block b's memory at base + b * cluster_block_bytes, each phase for every
// thread in turn, so its sends and fetches are plain copies and its waits nothing.

// The FFT groups of a cluster's block program: one per block, T threads each (inboxes: the
// blocks' inbox buffers, ClusterRoles).
template <class Groups = FftGroups>
TG_HD Groups cluster_groups(const detail::Shape& s, std::uint32_t blocks, std::uint32_t inboxes,
                            unsigned char* base, const Complex* W) {
  Groups f = make_groups<Groups>(s.M(), reinterpret_cast<Complex*>(base), W);
  f.stride = cluster_block_bytes_with(s, blocks, inboxes) / sizeof(Complex);
  return f;
}

// Where a cluster's block keeps its inbox (inboxes buffers), its copy of the accumulator,
// its key stage and its mbarriers.
struct ClusterMemory {
  Complex* inbox;
  Torus32* acc;
  Complex* stage;
  std::uint64_t* signals;
  std::uint32_t inboxes;
};
TG_HD ClusterMemory cluster_memory(const detail::Shape& s, std::uint32_t blocks,
                                   std::uint32_t inboxes, unsigned char* base) {
  return {reinterpret_cast<Complex*>(base + cluster_partials_offset(s)),
          reinterpret_cast<Torus32*>(base + cluster_accumulator_offset_with(s, blocks, inboxes)),
          reinterpret_cast<Complex*>(base + cluster_stage_offset_with(s, blocks, inboxes)),
          reinterpret_cast<std::uint64_t*>(base + cluster_signals_offset_with(s, blocks, inboxes)),
          inboxes};
}

// Whether thread tid of a cluster block is in its second half of threads (product halves;
// never with Halves = 1): a thread that takes part in the products and barriers alone.
template <unsigned Halves, class Block>
TG_HD bool second_half(Block& blk, unsigned tid) {
  if constexpr (Halves > 1) {
    return blk.half(tid) != 0;
  } else {
    return false;
  }
}

// f(count, shift) with integral constants for the points of thread tid's products: its
// registers r < count hold the points 8t + r + shift (all P points without product halves;
// half h's 4 from 4h with them).
template <unsigned Halves, unsigned P, class Block, class F>
TG_HD void with_product_points(Block& blk, unsigned tid, F&& f) {
  using Zero = std::integral_constant<unsigned, 0>;
  if constexpr (Halves > 1) {
    using Half = std::integral_constant<unsigned, half_points>;
    if (second_half<Halves>(blk, tid)) {
      f(Half{}, Half{});
    } else {
      f(Half{}, Zero{});
    }
  } else {
    f(std::integral_constant<unsigned, P>{}, Zero{});
  }
}

// A cluster's block: its rows of the next step towards L2 (prefetch_span), where there is one
// (by its first half of threads, with product halves).
template <unsigned K1, unsigned U = 1, unsigned Halves = 1, class Block, class Groups>
TG_HD void prefetch_cluster_rows(Block& blk, const Groups& f, const StepInputs& in,
                                 std::uint32_t rows, std::uint32_t blocks) {
  if (in.key_next == nullptr) return;
  const std::uint32_t ggsws = U > 1 ? in.next_ggsws : 1;  // as in cmux_step
  blk.each([&](unsigned tid, auto&) {
    if (second_half<Halves>(blk, tid)) return;
    for (std::uint32_t g = 0; g < ggsws; ++g) {
      for (std::uint32_t q = blk.rank(tid); q < rows; q += blocks) {
        prefetch_span(in.key_next + (std::size_t{g} * rows + q) * K1 * f.M, std::size_t{K1} * f.M,
                      f.thread(tid), f.T);
      }
    }
  });
}

// A cluster's block: the key rows of its digit row x of a step (row q = rank + x C of `ggsws`
// GGSW samples from `ggsw`, GGSW g's at ggsw + g rows K1 M, K1 M points each) into its key
// stage, completing on its mbarrier key_arrived (Block::fetch: one thread of the block issues
// the copies, the TMA's bulk copies on a device; wait_fetched waits for them).
// ready: null, or the counter the rows' row set must have brought to `target` first
// (BundleReady; Block::fetch waits for it).
template <unsigned K1, class Block>
TG_HD void fetch_key_rows(Block& blk, const ClusterMemory& mem, const Complex* ggsw,
                          std::uint32_t x, std::uint32_t ggsws, std::uint32_t rows,
                          std::uint32_t blocks, std::uint32_t M,
                          const std::uint64_t* ready = nullptr, std::uint64_t target = 0) {
  blk.each([&](unsigned tid, auto&) {
    const std::uint32_t q = blk.rank(tid) + blocks * x;
    const std::size_t count = (ablate & ablate_fetch) != 0 ? 8 : std::size_t{K1} * M;
    blk.fetch(tid, mem.stage, ggsw + std::size_t{q} * K1 * M, count,
              std::size_t{rows} * K1 * M, ggsws, mem.signals + key_arrived, ready, target);
  });
}

// After a cluster block's products of its digit row x of a step have read its key stage (the
// barrier: every thread's): the rows of its next products into the stage, its row x + 1 of this
// step, or its first row of the next step, where there is one. U > 1: this step is an
// unrolled key's group step of U bits (2^U - 1 GGSW samples a row; the next step's count is
// in.next_ggsws).
template <unsigned K1, unsigned U, class Block>
TG_HD void fetch_next_key_rows(Block& blk, const ClusterMemory& mem, const StepInputs& in,
                               std::uint32_t x, std::uint32_t rows, std::uint32_t blocks,
                               std::uint32_t M) {
  blk.sync();  // every thread's products have read the stage
  if (x + 1 < rows / blocks) {
    fetch_key_rows<K1>(blk, mem, in.key_step, x + 1, step_ggsws<U>, rows, blocks, M,
                       in.ready_step, in.ready_target);
  } else if (in.key_next != nullptr) {
    fetch_key_rows<K1>(blk, mem, in.key_next, 0, U > 1 ? in.next_ggsws : 1, rows, blocks, M,
                       in.ready_next, in.ready_target);
  }
}

// The lowest set bit of m != 0.
TG_HD std::uint32_t lowest_bit(std::uint32_t m) {
#if defined(__CUDA_ARCH__)
  return static_cast<std::uint32_t>(__ffs(static_cast<int>(m)) - 1);
#else
  return static_cast<std::uint32_t>(std::countr_zero(m));
#endif
}

// Every thread of a cluster's block b, after its rows: its partial product c into slot b of
// the inbox of each block o that sums product c (ClusterRoles::summers: column c's owner, or
// with every_block_sums every block whose row decomposes column c; buffer `parity` of it where
// there are two), point Pt + r at (bP + r)T + t (P: the thread's points, 8, or 4 in a wide
// cluster), sent for o != b and stored in place for o = b; then each block that sums a column
// waits until the other C - 1 blocks' partials have arrived and sums the C slots in rank order
// into its registers (InFlight at a time, sum_partials), while the other blocks take zeros
// (and idle along in the inverse transform). With product halves (Halves = 2) each half sends
// the points of its products (half h: points 8t + 4h .. 8t + 4h + 3, in its registers 0 .. 3),
// a block barrier follows (the other half's points in this block's own inbox), and the first
// half sums.
template <unsigned K1, unsigned InFlight, unsigned Halves = 1, class Block, class Groups>
TG_HD void exchange_partials(Block& blk, const Groups& f, const ClusterMemory& mem,
                             std::uint32_t blocks, std::uint32_t parity) {
  const std::uint32_t buffer = mem.inboxes == 2 ? parity : 0;
  Complex* const inbox = mem.inbox + std::size_t{buffer} * blocks * f.M;
  blk.each([&](unsigned tid, auto& R) {
    constexpr unsigned P = std::extent_v<decltype(R.v)>;
    const std::uint32_t b = blk.rank(tid), t = f.thread(tid);
    const ClusterRoles roles = blk.roles(tid);
    auto slot = [&](unsigned r) { return (std::size_t{b} * P + r) * f.T + t; };  // point Pt + r
    // Registers r < count of every product, the thread's points Pt + r + shift.
    auto send_points = [&](auto point_count, auto point_shift) {
      constexpr unsigned count = decltype(point_count)::value;
      constexpr unsigned shift = decltype(point_shift)::value;
TG_UNROLL
      for (unsigned c = 0; c < K1; ++c) {
        const std::uint32_t summers = roles.summers_of(c);
        if ((summers >> b) & 1u) {
TG_UNROLL
          for (unsigned r = 0; r < count; ++r) {  // read back by this block alone
            blk.local(inbox, tid)[slot(r + shift)] = R.sum[c][r];
          }
        }
        for (std::uint32_t others = summers & ~(1u << b); others != 0; others &= others - 1) {
          const std::uint32_t o = lowest_bit(others);
TG_UNROLL
          for (unsigned r = 0; r < count; ++r) {
            blk.send(inbox + slot(r + shift), o, R.sum[c][r],
                     mem.signals + partials_arrived + buffer);
          }
        }
      }
    };
    with_product_points<Halves, P>(blk, tid, send_points);
  });
  if constexpr (Halves > 1) blk.sync();  // both halves' points are in the own inbox
  blk.each([&](unsigned tid, auto& R) {
    constexpr unsigned P = std::extent_v<decltype(R.v)>;
    const std::uint32_t t = f.thread(tid);
    if (second_half<Halves>(blk, tid)) return;
    if (blk.roles(tid).summed >= K1) {
TG_UNROLL
      for (unsigned r = 0; r < P; ++r) R.v[r] = Complex{0, 0};
      return;
    }
    blk.wait_signal(tid, mem.signals, partials_arrived + buffer,
                    (blocks - 1) * f.M * static_cast<std::uint32_t>(sizeof(Complex)));
    const Complex* own = blk.local(inbox, tid) + t;
    sum_partials<InFlight>(
        R, blocks, [&](std::uint32_t slot) { return own + std::size_t{slot} * P * f.T; },
        [&](unsigned r) { return r * f.T; });
  });
}

// Four accumulator words, one 16-byte access.
struct alignas(16) Words4 {
  Torus32 w[4];
};

// After the owners' untwist_add: the owner of column c sends it (N words at acc + cN, where
// acc is the block's copy of the accumulator) into column c of the copies of the blocks that
// receive it (receives_column: every other block with one inbox buffer, else those whose rows
// decompose it), 16 bytes per store; then every block waits until the columns it receives have
// arrived (none: no wait). A block barrier first (the column's words were written by all of
// its threads). Every block's copy then holds the columns its rows decompose, and the
// decomposition reads its own shared memory (Nsight Compute, H100, batch 1: the loads of the
// owners' columns through the cluster were 57% of the step's long-scoreboard stalls;
// docs/gpu.md section 6.11).
// With product halves, the first half of a block's threads (the others read no column).
template <unsigned K1, unsigned Halves = 1, class Block, class Groups>
TG_HD void push_columns(Block& blk, const Groups& f, const ClusterMemory& mem, std::uint32_t N,
                        std::uint32_t blocks) {
  blk.sync();  // the owner's column is written (with every_block_sums: each block's own)
  blk.each([&](unsigned tid, auto&) {
    if (second_half<Halves>(blk, tid)) return;
    const ClusterRoles roles = blk.roles(tid);
    if (const std::uint32_t c = roles.owned; c < K1 && roles.receivers != 0) {
      const auto* own = reinterpret_cast<const Words4*>(blk.local(mem.acc, tid) + std::size_t{c} * N);
      auto* column = reinterpret_cast<Words4*>(mem.acc + std::size_t{c} * N);
      for (std::uint32_t w = f.thread(tid); w < N / 4; w += f.T) {
        const Words4 v = own[w];
        for (std::uint32_t b = 0; b < blocks; ++b) {
          if ((roles.receivers >> b) & 1u) blk.send(column + w, b, v, mem.signals + columns_arrived);
        }
      }
    }
    if (roles.received_bytes > 0) {
      blk.wait_signal(tid, mem.signals, columns_arrived, roles.received_bytes);
    }
  });
}

// A cluster block's first half of threads (its only half without product halves): each()
// runs a phase for those alone, sync() is the whole block's barrier (the other half calls it as
// often). What the transforms run on with product halves.
template <class Block, unsigned Halves>
struct FirstHalf {
  using registers = typename Block::registers;
  Block& blk;
  template <class F>
  TG_HD void each(F&& f) {
    blk.each([&](unsigned tid, auto& R) {
      if (!second_half<Halves>(blk, tid)) f(tid, R);
    });
  }
  TG_HD void sync() { blk.sync(); }
};

// CMUX step of the cluster's rotation: acc += external_product(BK_i, (X^power - 1) acc),
// power = masks[0]. U > 1: an unrolled key's group step of U key bits on the 2^U - 1 GGSW at
// in.key_step, switched masks masks[0 .. U). U = bundled_step: a group step on its bundled
// row set at in.key_step (bundle_point_at): the digits of acc itself, then a CMUX step's
// products (masks unused).
// The key rows of each block's products come through its key stage, each asked for once the
// previous products have read it (fetch_next_key_rows); first: the rotation's first step, which
// asks for its own first rows; parity: the step's number in its rotation mod 2 (its inbox
// buffer where there are two). Halves = 2: product halves (cluster_halves): after the forward
// transform the first half hands its points 8t + 4 .. 8t + 7 to the second (thread t + T, its
// registers 0 .. 3) through its exchange buffer, at the slots it read last, and each half
// computes its 4 points' products into its sums 0 .. 3 (sums 4 .. 7 are never used, so a
// thread holds half the sums); only the first half decomposes, transforms, sums and adds.
template <unsigned K1, class Groups = FftGroups, unsigned U = 1, unsigned Halves = 1, class Block>
TG_HD void cluster_cmux_step(Block& blk, const detail::Shape& s, std::uint32_t blocks,
                             unsigned char* base, const std::uint32_t* masks,
                             const StepInputs& in, bool first, std::uint32_t parity) {
  static_assert(Halves == 1 || Halves == 2);
  constexpr bool Group = U > 1;
  constexpr bool Plain = U != 1;  // a group step's digits, or a bundled step's
  const std::uint32_t power = masks[0];
  const std::uint32_t inboxes = blk.inboxes();
  const Groups f = cluster_groups<Groups>(s, blocks, inboxes, base, in.W);
  const std::uint32_t M = f.M, N = 2 * M, l = s.bk_level_count, rows = s.rows();
  const ClusterMemory mem = cluster_memory(s, blocks, inboxes, base);
  FirstHalf<Block, Halves> transforms{blk};
  if (first) {
    fetch_key_rows<K1>(blk, mem, in.key_step, 0, step_ggsws<U>, rows, blocks, M, in.ready_step,
                       in.ready_target);
  }
  clear_sums<K1>(blk);
  prefetch_cluster_rows<K1, U, Halves>(blk, f, in, rows, blocks);
  for (std::uint32_t x = 0; x < rows / blocks; ++x) {
    transforms.each([&](unsigned tid, auto& R) {
      const std::uint32_t q = blk.rank(tid) + blocks * x;
      load_digits<Plain, true>(
          R, f.thread(tid), f,
          {{DigitSource{blk.local(mem.acc, tid) + std::size_t{q / l} * N, power}}}, q % l + 1, in);
    });
    forward_transform<true>(transforms, f);
    if constexpr (Halves > 1) {
      // Points 8t + 4 .. 8t + 7 to the second half: the slots thread t alone read last (the
      // transform's last exchange), read after the barrier; the next writes to the buffer (the
      // next row's transform, the inverse's) come after fetch_next_key_rows's barrier.
      transforms.each([&](unsigned tid, auto& R) {
        Complex* own = f.buffer(tid);
        const std::uint32_t at = f.thread(tid) * points_per_thread;
TG_UNROLL
        for (unsigned r = half_points; r < points_per_thread; ++r) own[padded(at + r)] = R.v[r];
      });
      blk.sync();
      blk.each([&](unsigned tid, auto& R) {
        if (!second_half<Halves>(blk, tid)) return;
        const Complex* own = f.buffer(blk.partner(tid));
        const std::uint32_t at = f.thread(tid) * points_per_thread;
TG_UNROLL
        for (unsigned r = 0; r < half_points; ++r) R.v[r] = own[padded(at + half_points + r)];
      });
    }
    blk.each([&](unsigned tid, auto& R) {
      blk.wait_fetched(tid, mem.signals, key_arrived);
      const Complex* stage = blk.local(mem.stage, tid);
      // Registers r < count, the thread's points 8t + r + shift.
      auto products = [&](auto count, auto shift) {
        if constexpr (Group) {
          multiply_row_group<K1, U, false, decltype(count)::value, decltype(shift)::value>(
              R, f.thread(tid), f, stage, std::size_t{K1} * M,
              {{group_exponents<U>([&](unsigned m) { return masks[m]; })}}, in);
        } else {
          multiply_row<K1, false, decltype(count)::value, decltype(shift)::value>(
              R, f.thread(tid), f, stage);
        }
      };
      if constexpr ((ablate & ablate_products) == 0) {
        with_product_points<Halves, points_per_thread>(blk, tid, products);
      }
    });
    fetch_next_key_rows<K1, U>(blk, mem, in, x, rows, blocks, M);
  }
  exchange_partials<K1, cluster_partials_in_flight, Halves>(blk, f, mem, blocks, parity);
  inverse_transform<true>(transforms, f);  // its exchanges use each block's own buffer
  transforms.each([&](unsigned tid, auto& R) {
    const std::uint32_t c = blk.roles(tid).summed;
    if (c >= K1) return;
    untwist_add(R, f.thread(tid), f, in.untwist, {{blk.local(mem.acc, tid) + std::size_t{c} * N}});
  });
  push_columns<K1, Halves>(blk, f, mem, N, blocks);
}

// The steps of a cluster's rotation (for_each_step), whose accumulator every block has
// loaded into its copy, between its only two cluster barriers: one before (every copy is
// loaded; on the first rotation the mbarriers are initialised for every block) and one
// after (no block leaves, or loads the next rotation, while a transfer to it is in flight).
// Both cluster programs walk their steps with it: step(i, u, parity), parity the step's
// number in the rotation mod 2.
// Unroll = bundled_step: a rotation on a bundled key (for_each_bundled_step, bundle: its row
// sets).
// ready: null, or the rotation's counters of its bundled row sets (for_each_bundled_step).
template <unsigned Unroll, class Block, class Step>
TG_HD void cluster_steps(Block& blk, const detail::Shape& s, const Complex* key, StepInputs& in,
                         Step&& step, const Complex* bundle = nullptr,
                         const std::uint64_t* ready = nullptr) {
  blk.cluster_sync();
  std::uint32_t count = 0;
  auto counted = [&](std::uint32_t i, auto u) {
    step(i, u, count & 1u);
    ++count;
  };
  if constexpr (Unroll == bundled_step) {
    for_each_bundled_step(s, bundle, key, in, counted, ready);
  } else {
    for_each_step<Unroll>(s, key, in, counted);
  }
  blk.cluster_sync();
}

// The n CMUX steps of the cluster's rotation; Unroll > 1: its group steps, then a CMUX step
// per key bit left (blind_rotate's order); Unroll = bundled_step: its group steps on the row
// sets of its bundled key `bundle` (s.unroll > 1), then the same CMUX steps; ready: null, or
// the counters of those row sets (BundleReady, in.ready_target the count to wait for).
// Halves: product halves (cluster_cmux_step).
template <unsigned K1, class Groups = FftGroups, unsigned Unroll = 1, unsigned Halves = 1,
          class Block>
TG_HD void cluster_blind_rotate(Block& blk, const detail::Shape& s, std::uint32_t blocks,
                                unsigned char* base, const std::uint32_t* powers,
                                const Complex* key, StepInputs in,
                                const Complex* bundle = nullptr,
                                const std::uint64_t* ready = nullptr) {
  cluster_steps<Unroll>(
      blk, s, key, in,
      [&](std::uint32_t i, auto u, std::uint32_t parity) {
        cluster_cmux_step<K1, Groups, decltype(u)::value, Halves>(blk, s, blocks, base,
                                                                  powers + i, in, i == 0, parity);
      },
      bundle, ready);
}

// A host block's fetch, done at once: `segments` runs of `count` complex from src + g * stride
// into dst + g * count (the device's bulk copies, fetch_segments in fused_kernels.cu).
inline void copy_segments(Complex* dst, const Complex* src, std::size_t count, std::size_t stride,
                          std::uint32_t segments) {
  for (std::uint32_t g = 0; g < segments; ++g) {
    for (std::size_t e = 0; e < count; ++e) dst[g * count + e] = src[g * stride + e];
  }
}

// A block with a key stage (LaunchShape::stage) run on the host: the stage's fetch is a copy
// made at once by the block's last thread (the device's issuer), and the wait is nothing
// (every thread's phase before has run). The CUDA emulator runs the real kernel's TMA copies
// and mbarrier.
template <class Regs>
struct HostStagedBlock : HostBlock<Regs> {
  using HostBlock<Regs>::HostBlock;
  void fetch(unsigned tid, Complex* dst, const Complex* src, std::size_t count,
             std::size_t stride, std::uint32_t segments, std::uint64_t*) const {
    if (tid + 1 == this->regs.size()) copy_segments(dst, src, count, stride, segments);
  }
  void wait_fetched(unsigned, std::uint64_t*, unsigned) const {}
};

// A cluster run on the host: one block of C*T threads, block b's shared memory at
// base + b * bytes (the program's phases run for every thread of the cluster in turn, so
// both barriers and the waits are nothing here, and a send is a store; the CUDA emulator runs
// the real cluster kernel). With product halves (halves = 2) the blocks' second halves follow
// as C*T more threads: thread h C T + b T + t is thread t of half h of block b, so that the
// first halves' thread numbers are those of a cluster without halves.
template <class Regs>
struct HostClusterBlock : HostBlock<Regs> {
  std::uint32_t T;
  std::uint32_t blocks;
  std::uint32_t halves;
  std::size_t bytes;
  std::vector<ClusterRoles> roles_;  // per block
  HostClusterBlock(const detail::Shape& s, std::uint32_t blocks, std::uint32_t threads,
                   std::uint32_t sums = owner_sums, std::uint32_t halves = 1)
      : HostBlock<Regs>(std::size_t{halves} * blocks * threads),
        T(threads),
        blocks(blocks),
        halves(halves),
        bytes(cluster_block_bytes(s, blocks)) {
    for (std::uint32_t b = 0; b < blocks; ++b) roles_.push_back(cluster_roles(s, blocks, b, sums));
  }
  void cluster_sync() {}
  unsigned rank(unsigned tid) const { return tid / T % blocks; }
  // The half of the block thread tid is in, and the thread of the first half it helps.
  unsigned half(unsigned tid) const { return tid / (blocks * T); }
  unsigned partner(unsigned tid) const { return tid % (blocks * T); }
  std::uint32_t inboxes() const { return roles_.front().inboxes; }  // every block's
  ClusterRoles roles(unsigned tid) const { return roles_[rank(tid)]; }
  template <class U>
  U* remote(U* p, unsigned b) const {
    return reinterpret_cast<U*>(reinterpret_cast<unsigned char*>(p) + std::size_t{b} * bytes);
  }
  template <class U>
  U* local(U* p, unsigned tid) const {
    return remote(p, rank(tid));
  }
  template <class U>
  void send(U* p, unsigned b, const U& v, std::uint64_t*) const {
    *remote(p, b) = v;
  }
  void wait_signal(unsigned, std::uint64_t*, unsigned, std::uint32_t) const {}
  void init_signals(std::uint64_t*) const {}
  // The key stage's copies, done at once by the block's last thread (the device's issuer).
  // ready (BundleReady): here every kernel before has run, so the counter must have reached
  // target already; anything else would wait for ever on a device.
  void fetch(unsigned tid, Complex* dst, const Complex* src, std::size_t count,
             std::size_t stride, std::uint32_t segments, std::uint64_t*,
             const std::uint64_t* ready = nullptr, std::uint64_t target = 0) const {
    if (tid % T != T - 1 || half(tid) + 1 != halves) return;
    if (ready != nullptr && *ready < target) {
      throw std::logic_error("fetch: a bundled row set counted " + std::to_string(*ready) +
                             " parts, the rotation waits for " + std::to_string(target));
    }
    copy_segments(local(dst, tid), src, count, stride, segments);
  }
  void wait_fetched(unsigned, std::uint64_t*, unsigned) const {}
};

}  // namespace torusgate::gpu::kernel::fused
