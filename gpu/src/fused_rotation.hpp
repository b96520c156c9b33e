// The fused blind-rotation engine's block program (DESIGN.md section 6.1, item 2; TFHE,
// J. Cryptology 2020, algorithm 3, with the external product of core/bootstrap.cpp): one block
// per blind rotation keeps the accumulator in shared memory for all n CMUX steps; per step it
// rotates and decomposes the accumulator, folds and twists the digits, transforms them with
// its own FFT (fused_fft.hpp), multiplies and accumulates against the step's key slice (read
// from L2/HBM) in registers, transforms the k+1 products back, and untwists, rounds and adds
// them into the accumulator. Nothing of a step goes through device memory but the key.
//
// A block has G groups of T = M/8 threads, G in {1, k+1, (k+1)l} (launch shape, not result:
// every G gives the same words). Group g takes the digit rows q = g, g+G, ...; with G > 1 the
// groups' partial products are summed in group order through shared memory and group c < k+1
// transforms product c back. Standard headers only: the host tests run this program thread by
// thread (HostBlock) and compare it with core.
//
// Shared memory of a block: G exchange buffers of buffer_points(M) complex (with G > 1,
// buffer c < k+1 also holds product c), then the accumulator, (k+1)N Torus32.
// The Fourier key of the fused engine: per GGSW i, row q, column c, the M spectrum points of
// the folded and twisted key polynomial in this FFT's (bit-reversed) order, point 8t + r at
// slot r*T + t, so that a warp's loads of one register are contiguous.
#pragma once

#include <cstddef>
#include <cstdint>

#include "batch_plan.hpp"
#include "fused_fft.hpp"
#include "kernel_math.hpp"

namespace torusgate::gpu::kernel::fused {

// Largest k + 1 the engine's registers hold.
inline constexpr std::uint32_t max_columns = 3;

// Per-thread registers of the blind rotation: the 8 points in flight and the K1 product sums.
template <unsigned K1>
struct RotationRegs {
  Complex v[points_per_thread];
  Complex sum[K1][points_per_thread];
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

// A launch shape: thread groups per rotation.
TG_HD bool valid_groups(std::uint32_t groups, const detail::Shape& s) {
  return groups == 1 || groups == s.k1() || groups == s.rows();
}

// Threads and shared-memory bytes of one block.
TG_HD std::uint32_t block_threads(std::uint32_t groups, const detail::Shape& s) {
  return groups * fft_threads(s.M());
}
TG_HD std::size_t block_buffer_bytes(std::uint32_t groups, const detail::Shape& s) {
  return std::size_t{groups} * buffer_points(s.M()) * sizeof(Complex);
}
TG_HD std::size_t block_shared_bytes(std::uint32_t groups, const detail::Shape& s) {
  return block_buffer_bytes(groups, s) + std::size_t{s.k1()} * s.N * sizeof(Torus32);
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

// The launch shape: `requested` groups when not 0 (checked by the caller), else the most
// threads per rotation (G = (k+1)l, then k+1, then 1) that the device runs in one block
// (max_threads: the kernel's limit for its registers; max_shared: the opt-in shared memory)
// while the whole chunk stays within `resident_threads` (the threads of one-group blocks the
// device keeps resident at once); batches that fill the device take G = 1, the fewest
// barriers and the least shared memory per rotation.
inline std::uint32_t choose_groups(const detail::Shape& s, std::uint64_t rotations,
                                   std::uint32_t max_threads, std::size_t max_shared,
                                   std::uint64_t resident_threads) {
  const std::uint32_t candidates[] = {s.rows(), s.k1(), 1};
  for (const std::uint32_t g : candidates) {
    const std::uint32_t threads = block_threads(g, s);
    if (threads > max_threads || block_shared_bytes(g, s) > max_shared) continue;
    if (g == 1 || rotations * threads <= resident_threads) return g;
  }
  return 1;
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

// What one step reads besides the accumulator.
struct StepInputs {
  const Complex* key_step = nullptr;  // GGSW i: rows x k1 fused spectra
  const Complex* twist = nullptr;     // zeta^j, j < M
  const Complex* untwist = nullptr;   // zeta^-j / M
  const Complex* W = nullptr;         // twiddles (fused_fft.hpp)
  GadgetConstants gadget;
};

// CMUX step: acc += external_product(BK_i, (X^power - 1) acc), for the block's accumulator
// `acc` ((k+1)N words in shared memory); `buffers` are the G exchange buffers. K1 = k + 1.
template <unsigned K1, class Block>
TG_HD void cmux_step(Block& blk, const detail::Shape& s, std::uint32_t groups, Torus32* acc,
                     Complex* buffers, std::uint32_t power, const StepInputs& in) {
  const std::uint32_t N = s.N, M = s.M(), l = s.bk_level_count, rows = s.rows();
  const FftGroups f = make_groups(M, buffers, in.W);
  const std::uint32_t buffer_size = buffer_points(M);
  blk.sync();  // the previous step's additions into acc are done
  blk.each([&](unsigned, auto& R) {
TG_UNROLL
    for (unsigned c = 0; c < K1; ++c) {
TG_UNROLL
      for (unsigned r = 0; r < points_per_thread; ++r) R.sum[c][r] = Complex{0, 0};
    }
  });
  for (std::uint32_t x = 0; x < rows / groups; ++x) {
    // Digits of row q (column q / l, level q % l + 1) at the first pass's points.
    blk.each([&](unsigned tid, auto& R) {
      const std::uint32_t q = f.group(tid) + groups * x;
      const Torus32* a = acc + std::size_t{q / l} * N;
      const std::uint32_t level = q % l + 1;
TG_UNROLL
      for (unsigned r = 0; r < points_per_thread; ++r) {
        const std::uint32_t j = point_of(f.thread(tid), r, f.m - 1);
        const Torus32 lo = rotate_minus_one(a, power, j, N);
        const Torus32 hi = rotate_minus_one(a, power, j + M, N);
        R.v[r] = fold_twist(static_cast<double>(gadget_digit(in.gadget, lo, level)),
                            static_cast<double>(gadget_digit(in.gadget, hi, level)), in.twist[j]);
      }
    });
    forward_transform(blk, f);
    // sum_c += digits * BK_i[q][c], pointwise, in registers.
    blk.each([&](unsigned tid, auto& R) {
      const std::uint32_t q = f.group(tid) + groups * x, t = f.thread(tid);
TG_UNROLL
      for (unsigned c = 0; c < K1; ++c) {
        const Complex* key = in.key_step + (std::size_t{q} * K1 + c) * M;
TG_UNROLL
        for (unsigned r = 0; r < points_per_thread; ++r) {
          const Complex b = key[r * f.T + t];
          const Complex d = R.v[r];
          R.sum[c][r].re += d.re * b.re - d.im * b.im;
          R.sum[c][r].im += d.re * b.im + d.im * b.re;
        }
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
      inverse_transform(blk, f);
      blk.each([&](unsigned tid, auto& R) {
TG_UNROLL
        for (unsigned r = 0; r < points_per_thread; ++r) {
          const std::uint32_t j = point_of(f.thread(tid), r, f.m - 1);
          untwist_round_add(R.v[r], in.untwist[j], acc + std::size_t{c} * N, j, M);
        }
      });
    }
    return;
  }

  // The groups' partial products summed in group order into buffers 0..K1-1.
  blk.sync();
  for (std::uint32_t g = 0; g < groups; ++g) {
    blk.each([&](unsigned tid, auto& R) {
      if (f.group(tid) != g) return;
      const std::uint32_t t = f.thread(tid);
TG_UNROLL
      for (unsigned c = 0; c < K1; ++c) {
        Complex* product = buffers + std::size_t{c} * buffer_size;
TG_UNROLL
        for (unsigned r = 0; r < points_per_thread; ++r) {
          Complex& slot = product[padded(t * points_per_thread + r)];
          if (g == 0) {
            slot = R.sum[c][r];
          } else {
            slot.re += R.sum[c][r].re;
            slot.im += R.sum[c][r].im;
          }
        }
      }
    });
    blk.sync();
  }
  // Group c < K1 transforms product c back in its own buffer (the others idle along).
  blk.each([&](unsigned tid, auto& R) {
    const std::uint32_t t = f.thread(tid);
    const Complex* b = f.buffer(tid);
TG_UNROLL
    for (unsigned r = 0; r < points_per_thread; ++r) {
      R.v[r] = f.group(tid) < K1 ? b[padded(t * points_per_thread + r)] : Complex{0, 0};
    }
  });
  blk.sync();
  inverse_transform(blk, f);
  blk.each([&](unsigned tid, auto& R) {
    const std::uint32_t c = f.group(tid);
    if (c >= K1) return;
TG_UNROLL
    for (unsigned r = 0; r < points_per_thread; ++r) {
      const std::uint32_t j = point_of(f.thread(tid), r, f.m - 1);
      untwist_round_add(R.v[r], in.untwist[j], acc + std::size_t{c} * N, j, M);
    }
  });
}

// The n CMUX steps of one blind rotation on the accumulator in shared memory; powers are the
// rotation's n switched masks, key the whole fused Fourier key.
template <unsigned K1, class Block>
TG_HD void blind_rotate(Block& blk, const detail::Shape& s, std::uint32_t groups, Torus32* acc,
                        Complex* buffers, const std::uint32_t* powers, const Complex* key,
                        StepInputs in) {
  const std::size_t key_step = std::size_t{s.rows()} * s.k1() * s.M();
  for (std::uint32_t i = 0; i < s.n; ++i) {
    in.key_step = key + i * key_step;
    cmux_step<K1>(blk, s, groups, acc, buffers, powers[i], in);
  }
}

}  // namespace torusgate::gpu::kernel::fused
