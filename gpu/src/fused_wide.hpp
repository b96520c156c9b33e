// Wide clusters: the fused engine's cluster program (fused_rotation.hpp) with 4 points per
// thread instead of 8, so twice the threads per block (T = M/4: 128 for tfhe_lib_128) and
// half a thread's work per step. For batch 1, where a cluster of (k+1)l blocks of 64 threads
// left each multiprocessor 2 warps on 2 of its 4 schedulers, each issuing every 6.75 cycles
// (Nsight Compute, H200, docs/gpu.md section 6.2): the step's latency is one thread's chain of
// instructions. Here each block has 4 warps, one per scheduler, each with about half the
// instructions of a step (docs/gpu.md section 6.6).
//
// The transform: the same radix-2 decimation in frequency as fused_fft.hpp (forward X_k =
// sum_j x_j exp(-2 pi i jk/M) in bit-reversed order, the inverse undoing each stage, times
// M), in passes of up to 2 stages. In a pass whose top bit is `top`, thread t owns the 4
// points whose bits top, top-1 are the register index r (bits 1, 0) and whose other bits are
// t's (point_of). The first pass takes m mod 2 stages (2 when m is even), the others 2; the
// last has top 1, so after the forward transform thread t holds spectrum points 4t .. 4t+3,
// which the first inverse pass needs: the products stay in registers.
//
// Radix 4: with top bit T, h = 2^(T-1), L = 4h and n0 = i mod h (the thread's low bits), the
// points x_a = x_{base + a h} become y at register bitrev_2(k) = W_L^{n0 k} sum_a x_a W_4^{ak}
// (W_L = W^{M/L}): a 4-point DFT with the constants 1 and -i (dft_registers), then 3
// products by W^{(n0 k) 2^(m-1-T)} from the wide pass table, in the threads' order (none in
// the last pass, n0 = 0). The passes' structure is in fused_fft.hpp (namespace wide).
// The inverse takes the conjugate twiddles first, then undoes the DFT (times 4). A pass of 1
// stage (the first, when m is odd) is the radix-2 stage with the table's twiddles.
//
// Fixed lengths only (N = 512, 1024, 2048: the kernels of fused_kernels.cu): the twist and
// untwist come from the engine's tables (zeta^j and zeta^-j / M), the key from the fused
// Fourier key of the 8-point program (key_slot), so both programs share one key; so do an
// unrolled key's slot roots (in.roots, by key slot).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "fused_fft.hpp"
#include "fused_rotation.hpp"
#include "kernel_math.hpp"

namespace torusgate::gpu::kernel::fused::wide {

// Points per thread of a wide transform (LaunchShape::points of a wide cluster).
inline constexpr unsigned points = wide_points;

// M = 2^LogM with T = M/4 threads per transform (group, thread and buffer of a thread as for
// the 8-point groups).
template <unsigned LogM>
using Groups = TransformGroups<FixedLength<LogM, points>>;

template <class G>
inline constexpr bool is_wide = false;
template <unsigned LogM>
inline constexpr bool is_wide<TransformGroups<FixedLength<LogM, points>>> = true;

// Threads of one wide transform of M points.
TG_HD constexpr std::uint32_t threads(std::uint32_t M) { return M / points; }

// The point that register r of thread t holds in a pass with top bit `top` (top >= 1).
TG_HD std::uint32_t point_of(std::uint32_t t, unsigned r, unsigned top) {
  const unsigned low_bits = top - 1;
  const std::uint32_t low = t & ((std::uint32_t{1} << low_bits) - 1);
  return ((t >> low_bits) << (top + 1)) | (static_cast<std::uint32_t>(r) << low_bits) | low;
}

// The stages of one pass on thread t's registers (W: the twiddle table, fused_fft.hpp):
// forward, bits top down; inverse, undoing them, bits bottom up. A radix-4 pass reads its 3
// twiddles from the wide pass table, where a warp's loads of one register are contiguous.
template <bool Inverse>
TG_HD void pass_registers(Complex (&v)[points], std::uint32_t t, Pass pass, unsigned m,
                          const Complex* W) {
  if (pass.stages == 1) {  // the stage on bit top: registers r and r + 2
TG_UNROLL
    for (unsigned r = 0; r < 2; ++r) {
      stage_butterfly<Inverse>(v[r], v[r + 2], point_of(t, r, pass.top), pass.top, m, W);
    }
    return;
  }
  if (!Inverse) dft_registers<false>(v);
  if (pass.top > 1) {
    const std::uint32_t h = std::uint32_t{1} << (pass.top - 1);
    const Complex* table = W + wide_table_offset(std::uint32_t{1} << m) + pass.table + (t & (h - 1));
TG_UNROLL
    for (unsigned r = 1; r < points; ++r) {
      const Complex w = table[(r - 1) * h];
      v[r] = Inverse ? times_conj(v[r], w) : times(v[r], w);
    }
  }
  if (Inverse) dft_registers<true>(v);
}

// Every thread's registers from the layout of the pass with top bit `from` to that of `to`,
// through its group's buffer; barriers as in fused_fft.hpp's exchange (one before a
// transform's first exchange, one between writes and reads, none after).
template <class Block, class G>
TG_HD void exchange(Block& blk, const G& f, unsigned from, unsigned to, bool first) {
  if (first) blk.sync();
  blk.each([&](unsigned tid, auto& R) {
    Complex* b = f.buffer(tid);
TG_UNROLL
    for (unsigned r = 0; r < points; ++r) b[padded(point_of(f.thread(tid), r, from))] = R.v[r];
  });
  blk.sync();
  blk.each([&](unsigned tid, auto& R) {
    const Complex* b = f.buffer(tid);
TG_UNROLL
    for (unsigned r = 0; r < points; ++r) R.v[r] = b[padded(point_of(f.thread(tid), r, to))];
  });
}

// Forward transform of every group's points: on entry register r of thread t holds point
// point_of(t, r, m-1) = rT + t; on exit spectrum point 4t + r (bit-reversed order).
template <class Block, class G>
TG_HD void forward_transform(Block& blk, const G& f) {
TG_UNROLL
  for (unsigned p = 0; p < pass_count(G::m); ++p) {
    const Pass pass = forward_pass(G::m, p);
    if (p > 0) wide::exchange(blk, f, forward_pass(G::m, p - 1).top, pass.top, p == 1);
    blk.each([&](unsigned tid, auto& R) {
      pass_registers<false>(R.v, f.thread(tid), pass, G::m, f.W);
    });
  }
}

// Inverse transform, times M: on entry register r of thread t holds spectrum point 4t + r; on
// exit point rT + t of the result.
template <class Block, class G>
TG_HD void inverse_transform(Block& blk, const G& f) {
  constexpr unsigned passes = pass_count(G::m);
TG_UNROLL
  for (unsigned k = 0; k < passes; ++k) {
    const Pass pass = forward_pass(G::m, passes - 1 - k);
    if (k > 0) wide::exchange(blk, f, forward_pass(G::m, passes - k).top, pass.top, k == 1);
    blk.each([&](unsigned tid, auto& R) {
      pass_registers<true>(R.v, f.thread(tid), pass, G::m, f.W);
    });
  }
}

// Per-thread registers: the 4 points in flight and the K1 product sums (the row's key points
// come from the block's key stage, fetched while the digits are transformed).
template <unsigned K1>
struct Regs {
  static constexpr unsigned lanes = 1;
  Complex v[points];
  Complex sum[K1][points];
};

// Partials a wide cluster's block loads at once when it sums a product: all of a cluster of
// up to 6 (tfhe_lib_128's (k+1)l), from its inbox; the 8-point program's registers hold 3
// (cluster_partials_in_flight).
inline constexpr unsigned partials_in_flight = 6;

// Per-thread registers of a plain wide transform.
struct TransformRegs {
  Complex v[points];
};

// The wide groups of a cluster's block program: one per block, T = M/4 threads each (the
// host runs the cluster as one block, so a block's buffer strides by its shared memory).
template <class G>
TG_HD G cluster_groups(const detail::Shape& s, std::uint32_t blocks, std::uint32_t inboxes,
                       unsigned char* base, const Complex* W) {
  return G{{}, reinterpret_cast<Complex*>(base), W,
           cluster_block_bytes_with(s, blocks, inboxes) / sizeof(Complex)};
}

// CMUX step of a wide cluster's rotation: acc += external_product(BK_i, (X^power - 1) acc).
// The cluster program of fused_rotation.hpp (the same transfers and waits, partial products
// and sums in rank order) with 4 points per thread: block b takes digit rows b, b + C, ...;
// the blocks of ClusterRoles::summers sum product c (the owner of accumulator column c, or
// with every_block_sums every block whose row decomposes it). Block b's partial product c,
// point 4t + r, is at (4b + r) T + t of each such block's inbox. The key rows come through
// the key stage as in the 8-point program (first: the rotation's first step); power =
// masks[0]. U > 1: an unrolled key's group step of U key bits on the 2^U - 1 GGSW at
// in.key_step, switched masks masks[0 .. U): the digits of acc itself, each row's products
// with the group's GGSW times their rotation factors by the 8-point program's
// multiply_row_group_at (the same operations in the same order, so the same words).
template <unsigned K1, class G, unsigned U = 1, class Block>
TG_HD void cluster_cmux_step(Block& blk, const detail::Shape& s, std::uint32_t blocks,
                             unsigned char* base, const std::uint32_t* masks,
                             const StepInputs& in, bool first, std::uint32_t parity) {
  static_assert(is_wide<G>);
  constexpr bool Group = U > 1;
  const std::uint32_t power = masks[0];
  const std::uint32_t inboxes = blk.inboxes();
  const G f = cluster_groups<G>(s, blocks, inboxes, base, in.W);
  constexpr std::uint32_t M = G::M, N = 2 * M, T = G::T;
  const std::uint32_t l = s.bk_level_count, rows = s.rows();
  const ClusterMemory mem = cluster_memory(s, blocks, inboxes, base);
  if (first) fetch_key_rows<K1>(blk, mem, in.key_step, 0, group_ggsws<U>, rows, blocks, M);
  blk.each([&](unsigned, auto& R) {
TG_UNROLL
    for (unsigned c = 0; c < K1; ++c) {
TG_UNROLL
      for (unsigned r = 0; r < points; ++r) R.sum[c][r] = Complex{0, 0};
    }
  });
  prefetch_cluster_rows<K1, U>(blk, f, in, rows, blocks);
  for (std::uint32_t x = 0; x < rows / blocks; ++x) {
    // Row q's digits (column q / l, level q % l + 1), folded and twisted, at rT + t.
    blk.each([&](unsigned tid, auto& R) {
      const std::uint32_t q = blk.rank(tid) + blocks * x, t = f.thread(tid);
      const Torus32* a = blk.local(mem.acc, tid) + std::size_t{q / l} * N;  // its own copy
TG_UNROLL
      for (unsigned r = 0; r < points; ++r) {
        const std::uint32_t j = r * T + t;
        const Torus32 lo = Group ? a[j] : rotate_minus_one_flat(a, power, j, N);
        const Torus32 hi = Group ? a[j + M] : rotate_minus_one_flat(a, power, j + M, N);
        R.v[r] = fold_twist(gadget_digit_double(in.gadget, lo, q % l + 1),
                            gadget_digit_double(in.gadget, hi, q % l + 1),
                            in.twist[j]);
      }
    });
    wide::forward_transform(blk, f);
    // sum_c += digits * BK_i[q][c] at spectrum points 4t + r (key_slot order), from the stage;
    // U > 1: the 8-point program's products (multiply_row_group_at) at those slots.
    blk.each([&](unsigned tid, auto& R) {
      blk.wait_fetched(tid, mem.signals, key_arrived);
      const Complex* row = blk.local(mem.stage, tid);
      const std::uint32_t t = f.thread(tid);
      auto slot_of = [&](unsigned r) { return key_slot(points * t + r, fft_threads(M)); };
      if constexpr (Group) {
        multiply_row_group_at<K1, U, false>(
            R, f, row, std::size_t{K1} * M,
            {{group_exponents<U>([&](unsigned m) { return masks[m]; })}}, in, slot_of);
      } else {
TG_UNROLL
        for (unsigned c = 0; c < K1; ++c) {
TG_UNROLL
          for (unsigned r = 0; r < points; ++r) {
            multiply_add(R.sum[c][r], R.v[r], row[c * M + slot_of(r)]);
          }
        }
      }
    });
    fetch_next_key_rows<K1, U>(blk, mem, in, x, rows, blocks, M);
  }
  exchange_partials<K1, partials_in_flight>(blk, f, mem, blocks, parity);
  wide::inverse_transform(blk, f);  // each block's own buffer
  blk.each([&](unsigned tid, auto& R) {
    const std::uint32_t c = blk.roles(tid).summed;
    if (c >= K1) return;
    Torus32* a = blk.local(mem.acc, tid) + std::size_t{c} * N;
    const std::uint32_t t = f.thread(tid);
TG_UNROLL
    for (unsigned r = 0; r < points; ++r) {
      const std::uint32_t j = r * T + t;
      round_add(times(R.v[r], in.untwist[j]), a, j, M);
    }
  });
  push_columns<K1>(blk, f, mem, N, blocks);
}

// The n CMUX steps of a wide cluster's rotation (fused_rotation.hpp's cluster_steps);
// Unroll > 1: its group steps, then a CMUX step per key bit left (blind_rotate's order).
template <unsigned K1, class G, unsigned Unroll = 1, class Block>
TG_HD void cluster_blind_rotate(Block& blk, const detail::Shape& s, std::uint32_t blocks,
                                unsigned char* base, const std::uint32_t* powers,
                                const Complex* key, StepInputs in) {
  cluster_steps<Unroll>(blk, s, key, in, [&](std::uint32_t i, auto u, std::uint32_t parity) {
    wide::cluster_cmux_step<K1, G, decltype(u)::value>(blk, s, blocks, base, powers + i, in,
                                                       i == 0, parity);
  });
}

// f(Groups<log2 M>{}) where the wide program has M (true), else nothing (false).
template <class F>
bool with_length(std::uint32_t M, F&& f) {
  return with_fixed_length<Groups>(M, f);
}

}  // namespace torusgate::gpu::kernel::fused::wide
