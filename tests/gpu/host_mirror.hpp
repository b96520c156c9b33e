// A host mirror of the CUDA backend's data flow, for CPU tests: the same batch plan, chunks
// and bucket sizes, each kernel's own per-index function (gpu/src/kernel_grid.hpp, which
// calls the math of gpu/src/kernel_math.hpp) called for every index of its grid, key
// switching block by block as the kernel tiles it, and the same buffer layouts; only cuFFT's
// batched Z2Z transforms are replaced by a natural-order unnormalised FFT on the host
// (NaturalFft, itself checked against a direct DFT). With fused_groups > 0 the blind rotation
// is the fused engine's instead: its block program (gpu/src/fused_rotation.hpp) run thread by
// thread for each rotation, with its own FFT and Fourier key. What this cannot show is
// anything about the device itself: the launches, cuFFT, graphs, memory and timing.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numbers>
#include <type_traits>
#include <utility>
#include <vector>

#include "backend_fixtures.hpp"
#include "batch_builder.hpp"
#include "batch_plan.hpp"
#include "fused_rotation.hpp"
#include "fused_wide.hpp"
#include "kernel_grid.hpp"
#include "kernel_math.hpp"
#include "rotation_tables.hpp"
#include "torusgate/core/bootstrap.hpp"
#include "torusgate/core/keys.hpp"

namespace torusgate::gpu::test {

using kernel::Complex;
using kernel::Torus32;

// exp(sign * 2 pi i k / M) for k < M, each from its own angle (no accumulated error).
inline std::vector<Complex> unit_roots(std::size_t M, int sign) {
  std::vector<Complex> w(M);
  for (std::size_t k = 0; k < M; ++k) {
    const double a = sign * 2.0 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(M);
    w[k] = Complex{std::cos(a), std::sin(a)};
  }
  return w;
}

// X_k = sum_j x_j exp(sign 2 pi i jk/M): the direct definition (slow, for checks).
inline std::vector<Complex> direct_dft(const std::vector<Complex>& x, int sign) {
  const std::size_t M = x.size();
  const auto w = unit_roots(M, sign);
  std::vector<Complex> out(M);
  for (std::size_t k = 0; k < M; ++k) {
    double re = 0, im = 0;
    for (std::size_t j = 0; j < M; ++j) {
      const Complex t = w[(j * k) % M];
      re += x[j].re * t.re - x[j].im * t.im;
      im += x[j].re * t.im + x[j].im * t.re;
    }
    out[k] = Complex{re, im};
  }
  return out;
}

// cuFFT's Z2Z transform on the host: natural order in and out, forward exp(-2 pi i/M),
// inverse exp(+2 pi i/M), no scaling; in place, iterative radix 2.
class NaturalFft {
 public:
  explicit NaturalFft(std::size_t M) : M_(M), forward_(unit_roots(M, -1)), inverse_(unit_roots(M, 1)) {}
  std::size_t size() const { return M_; }
  void forward(Complex* data) const { transform(data, forward_); }
  void inverse(Complex* data) const { transform(data, inverse_); }

 private:
  void transform(Complex* a, const std::vector<Complex>& w) const {
    for (std::size_t i = 1, j = 0; i < M_; ++i) {  // bit-reversal permutation
      std::size_t bit = M_ >> 1;
      for (; j & bit; bit >>= 1) j ^= bit;
      j ^= bit;
      if (i < j) std::swap(a[i], a[j]);
    }
    for (std::size_t len = 2; len <= M_; len *= 2) {
      const std::size_t step = M_ / len;
      for (std::size_t s = 0; s < M_; s += len) {
        for (std::size_t j = 0; j < len / 2; ++j) {
          const Complex t = w[j * step];
          Complex& x = a[s + j];
          Complex& y = a[s + j + len / 2];
          const Complex v{y.re * t.re - y.im * t.im, y.re * t.im + y.im * t.re};
          y = Complex{x.re - v.re, x.im - v.im};
          x = Complex{x.re + v.re, x.im + v.im};
        }
      }
    }
  }
  std::size_t M_;
  std::vector<Complex> forward_, inverse_;
};

inline detail::Shape shape_of(const Parameters& p, std::uint32_t unroll = 1) {
  return detail::Shape{p.lwe_dimension,  p.glwe_dimension, p.polynomial_size, p.bk_base_log,
                       p.bk_level_count, p.ks_base_log,    p.ks_level_count, unroll};
}

// The device engine's work, on the host: each kernel is a loop over its grid's indices
// calling the kernel's own per-index function (gpu/src/kernel_grid.hpp); each batched cuFFT
// call is a loop of NaturalFft transforms over the same buffer.
class HostEngine {
 public:
  // fused_groups: 0 for the cuFFT engine's kernels, else the fused engine with that many
  // thread groups per rotation (1, k+1 or (k+1)l).
  explicit HostEngine(const CloudKey& key, std::uint32_t fused_groups = 0)
      : s_(shape_of(key.parameters(), key.bootstrapping_key().unroll())), fft_(s_.M()),
        fused_{fused_groups, 1},
        gadget_(kernel::make_gadget(s_.bk_base_log, s_.bk_level_count)),
        ks_(kernel::make_key_switch(s_.ks_base_log, s_.ks_level_count, s_.n,
                                    s_.extracted_dimension())),
        twist_(kernel::twist_factors(s_.N)), untwist_(kernel::untwist_factors(s_.N)) {
    const auto bk = key.bootstrapping_key().data();
    ksk_.assign(key.key_switching_key().data().begin(), key.key_switching_key().data().end());
    // bk_fold_twist_kernel, then the batched forward transform of every polynomial.
    const std::size_t polys = std::size_t{s_.ggsw_count()} * s_.rows() * s_.k1(), M = s_.M();
    bk_fourier_.resize(polys * M);
    for (std::uint64_t idx = 0; idx < detail::grid::bk_fold_twist_size(polys, s_); ++idx) {
      detail::grid::bk_fold_twist_at(idx, bk.data(), s_, twist_.data(), bk_fourier_.data());
    }
    for (std::size_t poly = 0; poly < polys; ++poly) fft_.forward(bk_fourier_.data() + poly * M);
    std::vector<Torus32> x(s_.N, 0);  // the probe polynomial X of the root exponents
    x[1] = 1;
    if (s_.unroll > 1) {
      // CudaEngine::Impl::make_rotation_tables, cuFFT engine: the key's transform of X.
      std::vector<Complex> spectrum(M);
      for (std::uint64_t idx = 0; idx < detail::grid::bk_fold_twist_size(1, s_); ++idx) {
        detail::grid::bk_fold_twist_at(idx, x.data(), s_, twist_.data(), spectrum.data());
      }
      fft_.forward(spectrum.data());
      roots_ = detail::slot_root_exponents(spectrum, s_.N);
      unit_ = detail::unit_roots_complex(s_.N);
    }
    if (fused_.groups != 0) {
      // fused_key_kernel: one block of T threads per polynomial.
      namespace fused = kernel::fused;
      twiddles_ = fused::twiddles(s_.M());
      fused_key_.resize(polys * M);
      fused::HostBlock<fused::TransformRegs> blk(fused::fft_threads(s_.M()));
      std::vector<Complex> buffer(fused::buffer_points(s_.M()));
      for (std::size_t poly = 0; poly < polys; ++poly) {
        fused::transform_key_polynomial(blk, bk.data() + poly * s_.N, s_.N, twist_.data(),
                                        twiddles_.data(), buffer.data(),
                                        fused_key_.data() + poly * M);
      }
      if (s_.unroll > 1) {  // the fused key's slots evaluate elsewhere: their own roots
        std::vector<Complex> spectrum(M);
        fused::transform_key_polynomial(blk, x.data(), s_.N, twist_.data(), twiddles_.data(),
                                        buffer.data(), spectrum.data());
        fused_roots_ = detail::slot_root_exponents(spectrum, s_.N);
      }
    }
  }

  // The root exponents of the cuFFT engine's slots and of the fused engine's (unroll 2).
  const std::vector<std::uint32_t>& roots() const { return roots_; }
  const std::vector<std::uint32_t>& fused_roots() const { return fused_roots_; }

  // Another launch shape of the fused engine (the engine was made with fused_groups > 0).
  void set_fused_shape(kernel::fused::LaunchShape shape) { fused_ = shape; }
  // Whether the fixed-length programs run where the device runs them (default), or the
  // run-time-length ones everywhere.
  void set_fixed_lengths(bool on) { fixed_lengths_ = on; }
  // A cluster's product halves (fused_rotation.hpp, cluster_halves): 0, the device's choice
  // (this build's); 1 or 2 forced, at any length (the program takes any).
  void set_product_halves(std::uint32_t halves) { product_halves_ = halves; }
  // Clusters of 8 points per thread with an unrolled key: each rotation's group steps on its
  // bundled key (CudaOptions::fused_bundle = 2; made by bundle_point_at, fused_bundle_kernel's
  // per-index function), as the device's bundled kernels run them.
  void set_bundle(bool on) { bundle_ = on; }
  // Bundled keys made while the rotation runs (CudaOptions::fused_bundle_overlap = 2): the
  // bundling walks fused_bundle_kernel's work items (bundle_item) and counts each row set's
  // parts (BundleReady), and the rotation's fetches wait for all of them. short_row_set: that
  // row set of each rotation counts one part fewer (one not yet written), so the host block's
  // fetch of its rows must refuse, as a device would wait for ever.
  void set_bundle_ready(bool on, std::uint32_t short_row_set = UINT32_MAX) {
    bundle_ready_ = on;
    short_row_set_ = short_row_set;
  }

  // fused_blind_rotation_kernel for `capacity` accumulators: from `first_step`, `steps` CMUX
  // steps (all n by default) of each rotation's block program, thread by thread.
  void fused_rotation(std::uint64_t capacity, const std::vector<std::uint32_t>& powers,
                      std::vector<Torus32>& acc, std::uint32_t first_step = 0,
                      std::uint32_t steps = UINT32_MAX) {
    if (s_.k1() == 2) fused_rotation_k<2>(capacity, powers, acc, first_step, steps);
    else fused_rotation_k<3>(capacity, powers, acc, first_step, steps);
  }

  const detail::Shape& shape() const { return s_; }

  // One CMUX step for `capacity` accumulators ([capacity][k1][N]) with switched masks
  // `powers` ([capacity][n]): the three kernels and the two batched transforms (standard key).
  void cmux_step(std::uint32_t step, std::uint64_t capacity, const std::vector<std::uint32_t>& powers,
                 std::vector<Torus32>& acc) {
    engine_step(false, step, capacity, powers, acc, step);
  }

  // The engine's evaluate(): plan pointers are host pointers; chunks of at most `capacity`
  // rotations (a bucket size >= 2), each run at its bucket size as the device does.
  void evaluate(const detail::BatchPlan& plan, std::uint64_t capacity) {
    namespace grid = detail::grid;
    const std::uint32_t n1 = s_.n1(), kN = s_.extracted_dimension();
    std::vector<Torus32> results(plan.results * n1);
    const auto op_count = static_cast<std::uint32_t>(plan.ops.size());
    const auto boot_count = static_cast<std::uint32_t>(plan.boot_ops.size());
    if (plan.has_free_gates) {
      for (std::uint64_t idx = 0; idx < grid::sample_words_size(plan.results, s_); ++idx) {
        grid::free_gates_at(idx, plan.ops.data(), op_count, s_, results.data());
      }
    }
    for (std::uint64_t job = 0; job < plan.jobs;) {
      const detail::Chunk chunk = detail::next_chunk(plan, job, capacity);
      const std::uint64_t C = detail::bucket_capacity(chunk.rotations());
      chunks_run += 1;
      std::vector<Torus32> acc(C * s_.k1() * s_.N);
      std::vector<std::uint32_t> powers(C * s_.n);
      if (fused_.groups != 0) {  // the fused engine: combination_init_kernel
        for (std::uint64_t idx = 0; idx < grid::accumulator_init_size(C, s_); ++idx) {
          grid::combination_init_at(idx, plan.boot_ops.data(), boot_count, chunk.rotation_begin,
                                    chunk.rotations(), C, s_, powers.data(), acc.data());
        }
      } else {
        std::vector<Torus32> pre(C * n1, 0);
        for (std::uint64_t idx = 0; idx < grid::sample_words_size(chunk.rotations(), s_); ++idx) {
          grid::linear_combination_at(idx, plan.boot_ops.data(), boot_count,
                                      chunk.rotation_begin, s_, pre.data());
        }
        for (std::uint64_t idx = 0; idx < grid::accumulator_init_size(C, s_); ++idx) {
          grid::accumulator_init_at(idx, pre.data(), C, s_, powers.data(), acc.data());
        }
      }
      if (fused_.groups != 0) {
        fused_rotation(C, powers, acc);
      } else {  // record_rotation's order: group steps, then CMUX steps
        const std::uint32_t grouped = s_.grouped_bits();
        for (std::uint32_t i = 0; i < s_.n; i += i < grouped ? s_.unroll : 1) {
          engine_step(i < grouped, i, C, powers, acc, static_cast<std::uint32_t>(s_.step_ggsw(i)));
        }
      }
      std::vector<Torus32> extracted(chunk.jobs() * (kN + 1));
      std::vector<std::uint64_t> result_index(chunk.jobs());
      for (std::uint64_t idx = 0; idx < grid::extract_size(chunk, s_); ++idx) {
        grid::sample_extract_at(idx, plan.boot_ops.data(), boot_count, chunk, acc.data(), s_,
                                extracted.data(), result_index.data());
      }
      key_switch(extracted, result_index, results);
      job = chunk.job_end;
    }
    for (std::uint64_t idx = 0; idx < grid::sample_words_size(plan.results, s_); ++idx) {
      grid::write_output_at(idx, plan.ops.data(), op_count, s_, results.data());
    }
  }

  // key_switch_kernel, block by block and thread by thread: blocks of G gates, T output
  // words and one slice of the input coefficients (as launch_key_switch cuts them for
  // target_blocks, unit and oversubscribe; 0: one slice), the tile loaded by every thread
  // before any accumulates (the barrier); with slices, the outputs cleared first and every
  // block's sums added.
  void key_switch(const std::vector<Torus32>& extracted, const std::vector<std::uint64_t>& result_index,
                  std::vector<Torus32>& results, std::uint64_t target_blocks = 0,
                  unsigned unit = detail::grid::key_switch_slice_unit,
                  unsigned oversubscribe = detail::grid::key_switch_slice_oversubscribe) const {
    namespace grid = detail::grid;
    constexpr unsigned G = grid::key_switch_gates_per_block, tile = grid::key_switch_tile,
                       T = grid::key_switch_threads;
    const std::uint64_t jobs = result_index.size();
    const std::uint32_t n1 = s_.n1(), kN = s_.extracted_dimension();
    const std::uint32_t word_blocks = (n1 + T - 1) / T;
    const std::uint32_t span =
        grid::key_switch_slice_span(jobs, n1, kN, target_blocks, unit, oversubscribe);
    const std::uint32_t slices = grid::key_switch_slices(kN, span);
    if (slices > 1) {
      for (std::uint64_t idx = 0; idx < grid::key_switch_clear_size(jobs, n1); ++idx) {
        grid::key_switch_clear_at(idx, result_index.data(), n1, results.data());
      }
    }
    std::vector<Torus32> tile_words(G * tile);
    for (std::uint64_t g0 = 0; g0 < jobs; g0 += G) {
      const auto gates = static_cast<std::uint32_t>(std::min<std::uint64_t>(G, jobs - g0));
      for (std::uint32_t by = 0; by < word_blocks; ++by) {
       for (std::uint32_t z = 0; z < slices; ++z) {
        struct Accumulators {
          Torus32 v[G];
        };
        std::vector<Accumulators> acc(T);  // each thread's registers
        auto acc_of = [&](unsigned t) -> Torus32(&)[G] { return acc[t].v; };
        for (unsigned t = 0; t < T; ++t) {
          grid::key_switch_start<G>(by * T + t, g0, gates, extracted.data(), ks_, acc_of(t), z == 0);
        }
        const std::uint32_t end = std::min(kN, (z + 1) * span);
        for (std::uint32_t i0 = z * span; i0 < end; i0 += tile) {
          for (unsigned t = 0; t < T; ++t) {
            grid::key_switch_load_tile(t, T, g0, gates, i0, end, G, tile, extracted.data(), ks_,
                                       tile_words.data());
          }
          for (unsigned t = 0; t < T; ++t) {
            grid::key_switch_accumulate_tile<G>(by * T + t, gates, i0, end, tile,
                                                tile_words.data(), ksk_.data(), ks_, acc_of(t));
          }
        }
        for (unsigned t = 0; t < T; ++t) {
          grid::key_switch_store<G>(by * T + t, g0, gates, result_index.data(), ks_, acc_of(t),
                                    results.data(), slices > 1);
        }
       }
      }
    }
  }

  std::size_t chunks_run = 0;

 private:
  // f(std::integral_constant<unsigned, U>) for the key's form U = 2 or 3 (the kernels'
  // template argument, as fused_kernels.cu picks it).
  template <class F>
  void with_unroll(F&& f) const {
    REQUIRE((s_.unroll == 2 || s_.unroll == 3));
    kernel::fused::with_unroll(s_.unroll, f);
  }

  // The cuFFT engine's step (record_rotation): decompose (rotated for a CMUX step), forward,
  // the products with GGSW `ggsw` (a group step: with the 2^u - 1 from there), inverse, untwist.
  void engine_step(bool group, std::uint32_t bit, std::uint64_t capacity,
                   const std::vector<std::uint32_t>& powers, std::vector<Torus32>& acc,
                   std::uint32_t ggsw) {
    namespace grid = detail::grid;
    const std::uint32_t M = s_.M(), k1 = s_.k1(), rows = s_.rows();
    digits_.resize(capacity * rows * M);
    product_.resize(capacity * k1 * M);
    for (std::uint64_t idx = 0; idx < grid::polynomial_points_size(capacity, s_); ++idx) {
      grid::rotate_decompose_at(idx, acc.data(), powers.data(), bit, s_, gadget_, twist_.data(),
                                digits_.data(), /*rotate=*/!group);
    }
    for (std::size_t poly = 0; poly < capacity * rows; ++poly) fft_.forward(digits_.data() + poly * M);
    const Complex* key = bk_fourier_.data() + kernel::bk_spectrum_index(ggsw, 0, 0, 0, rows, k1, M);
    for (std::uint64_t idx = 0; idx < grid::rotation_points_size(capacity, s_); ++idx) {
      if (group) {
        grid::multiply_accumulate_group_at(idx, digits_.data(), key, powers.data(), bit,
                                           roots_.data(), unit_.data(), s_, product_.data());
      } else {
        grid::multiply_accumulate_at(idx, digits_.data(), key, s_, product_.data());
      }
    }
    for (std::size_t poly = 0; poly < capacity * k1; ++poly) fft_.inverse(product_.data() + poly * M);
    for (std::uint64_t idx = 0; idx < grid::polynomial_points_size(capacity, s_); ++idx) {
      grid::untwist_round_add_at(idx, product_.data(), untwist_.data(), s_, acc.data());
    }
  }

  // What the fused engine's steps read besides the accumulators and the key.
  kernel::fused::StepInputs fused_inputs() const {
    kernel::fused::StepInputs in;
    in.twist = twist_.data();
    in.untwist = untwist_.data();
    in.W = twiddles_.data();
    in.gadget = gadget_;
    if (s_.unroll > 1) {
      in.roots = fused_roots_.data();
      in.unit = unit_.data();
    }
    return in;
  }

  // fused_cluster_rotation_kernel's clusters, one rotation after the other, each cluster's
  // blocks as one block of C*T threads (fused_rotation.hpp, HostClusterBlock).
  template <unsigned K1>
  void fused_cluster_rotation_k(std::uint64_t capacity, const std::vector<std::uint32_t>& powers,
                                std::vector<Torus32>& acc, std::uint32_t first_step,
                                std::uint32_t last) {
    namespace fused = kernel::fused;
    if (fused_.points == fused::wide_points) {
      fused_cluster_rotation_k<K1, fused::wide::Regs<K1>>(capacity, powers, acc, first_step, last);
    } else {
      fused_cluster_rotation_k<K1, fused::RotationRegs<K1>>(capacity, powers, acc, first_step,
                                                            last);
    }
  }
  // The same with the registers of the 8-point (RotationRegs) or wide (fused_wide.hpp) program.
  template <unsigned K1, class Regs>
  void fused_cluster_rotation_k(std::uint64_t capacity, const std::vector<std::uint32_t>& powers,
                                std::vector<Torus32>& acc, std::uint32_t first_step,
                                std::uint32_t last) {
    namespace fused = kernel::fused;
    constexpr bool wide = std::is_same_v<Regs, fused::wide::Regs<K1>>;
    const std::uint32_t C = fused_.cluster, N = s_.N;
    const std::size_t bytes = fused::cluster_block_bytes(s_, C);
    const std::uint32_t device_halves = fused::cluster_halves(C, fused_.points, s_);
    const std::uint32_t halves = wide ? 1 : product_halves_ != 0 ? product_halves_ : device_halves;
    fused::HostClusterBlock<Regs> blk(s_, C, fused::block_threads(fused_, s_) / device_halves,
                                      fused_.sums, halves);
    // The cluster's shared memory, NaN-filled so that a read before a write shows.
    std::vector<Complex> shared(C * bytes / sizeof(Complex), Complex{NAN, NAN});
    auto* base = reinterpret_cast<unsigned char*>(shared.data());
    fused::StepInputs in = fused_inputs();
    const std::size_t key_step = std::size_t{s_.rows()} * s_.k1() * s_.M();
    for (std::uint64_t rotation = 0; rotation < capacity; ++rotation) {
      // Block b's copy of the accumulator (k+1 columns); column c's owner holds it.
      auto copy = [&](std::uint32_t b) {
        return reinterpret_cast<Torus32*>(base + b * bytes + fused::cluster_accumulator_offset(s_, C));
      };
      auto column = [&](std::uint32_t c) {
        return copy(fused::column_owner(c, C, s_)) + std::size_t{c} * N;
      };
      for (std::uint32_t b = 0; b < C; ++b) {
        std::copy_n(acc.begin() + rotation * K1 * N, K1 * N, copy(b));
      }
      const std::uint32_t* rotation_powers = powers.data() + rotation * s_.n;
      auto run = [&](auto groups) {
        using Groups = decltype(groups);
        // One step alone: it fetches its own key rows (first) and none for a next step.
        auto step = [&](std::uint32_t i) {
          in.key_step = fused_key_.data() + i * key_step;
          in.key_next = nullptr;
          if constexpr (wide) {
            fused::wide::cluster_cmux_step<K1, Groups>(blk, s_, C, base, rotation_powers + i, in,
                                                       true, i & 1u);
          } else if (halves == 2) {
            fused::cluster_cmux_step<K1, Groups, 1, 2>(blk, s_, C, base, rotation_powers + i, in,
                                                       true, i & 1u);
          } else {
            fused::cluster_cmux_step<K1, Groups>(blk, s_, C, base, rotation_powers + i, in, true,
                                                 i & 1u);
          }
        };
        if (s_.unroll > 1 && bundle_) {  // the bundled kernel's loop
          REQUIRE(first_step == 0);
          REQUIRE(last == s_.n);
          if constexpr (wide) {
            FAIL("wide clusters have no bundled steps (validate_cuda_options)");
          } else {
            bundled_cluster_rotation<K1, Groups>(blk, C, base, rotation_powers, in, halves);
          }
        } else if (s_.unroll > 1) {  // the unrolled kernel's own loop
          REQUIRE(first_step == 0);
          REQUIRE(last == s_.n);
          with_unroll([&](auto u) {
            constexpr unsigned U = decltype(u)::value;
            if constexpr (wide) {
              fused::wide::cluster_blind_rotate<K1, Groups, U>(blk, s_, C, base, rotation_powers,
                                                               fused_key_.data(), in);
            } else if (halves == 2) {
              fused::cluster_blind_rotate<K1, Groups, U, 2>(blk, s_, C, base, rotation_powers,
                                                            fused_key_.data(), in);
            } else {
              fused::cluster_blind_rotate<K1, Groups, U>(blk, s_, C, base, rotation_powers,
                                                         fused_key_.data(), in);
            }
          });
        } else if (first_step != 0 || last != s_.n) {
          for (std::uint32_t i = first_step; i < last; ++i) step(i);
        } else if constexpr (wide) {  // the kernel's own loop
          fused::wide::cluster_blind_rotate<K1, Groups>(blk, s_, C, base, rotation_powers,
                                                        fused_key_.data(), in);
        } else if (halves == 2) {
          fused::cluster_blind_rotate<K1, Groups, 1, 2>(blk, s_, C, base, rotation_powers,
                                                        fused_key_.data(), in);
        } else {
          fused::cluster_blind_rotate<K1, Groups>(blk, s_, C, base, rotation_powers,
                                                  fused_key_.data(), in);
        }
      };
      // The device's choice of kernel (fused_kernels.cu: cluster_kernel; the wide program has
      // fixed lengths only, valid_shape).
      if constexpr (wide) {
        fused::wide::with_length(s_.M(), run);
      } else if (!fixed_lengths_ || !fused::with_fixed_length(s_.M(), run)) {
        run(fused::FftGroups{});
      }
      for (std::uint32_t c = 0; c < K1; ++c) {
        std::copy_n(column(c), N, acc.begin() + (rotation * K1 + c) * N);
      }
    }
  }

  // One rotation of the bundled cluster kernel (fused_kernels.cu, Unroll = bundled_step): its
  // bundled key by bundle_point_at for every point, then its steps on it.
  template <unsigned K1, class Groups, class Block>
  void bundled_cluster_rotation(Block& blk, std::uint32_t C, unsigned char* base,
                                const std::uint32_t* rotation_powers,
                                const kernel::fused::StepInputs& in, std::uint32_t halves) {
    namespace fused = kernel::fused;
    bundle_keys_.assign(fused::bundle_size(s_), Complex{NAN, NAN});
    REQUIRE((s_.unroll >= 2 && s_.unroll <= fused::max_bundle_unroll));
    // fused_bundle_kernel's work items for one rotation, each part's slots by its threads,
    // then (with counters) the part counted on its row set.
    std::vector<std::uint64_t> counters(fused::bundle_steps(s_), 0);
    fused::with_bundle_unroll(s_.unroll, [&](auto u) {
      for (std::uint64_t w = 0; w < fused::bundle_items(s_, 1); ++w) {
        const fused::BundleItem item = fused::bundle_item(w, s_, 1);
        for (std::uint32_t t = 0; t < fused::bundle_threads; ++t) {
          const std::uint32_t p = item.part * fused::bundle_threads + t;
          if (p >= s_.M()) continue;
          fused::bundle_point_at<decltype(u)::value>(item.point(s_, p), s_, rotation_powers,
                                                     fused_key_.data(), fused_roots_.data(),
                                                     unit_.data(), bundle_keys_.data());
        }
        ++counters[item.row_set(s_)];
      }
    });
    kernel::fused::StepInputs with = in;
    const std::uint64_t* ready = nullptr;
    if (bundle_ready_) {
      if (short_row_set_ < counters.size()) --counters[short_row_set_];
      ready = counters.data();
      with.ready_target = fused::bundle_parts(s_);
    }
    if (halves == 2) {
      fused::cluster_blind_rotate<K1, Groups, fused::bundled_step, 2>(
          blk, s_, C, base, rotation_powers, fused_key_.data(), with, bundle_keys_.data(), ready);
    } else {
      fused::cluster_blind_rotate<K1, Groups, fused::bundled_step>(
          blk, s_, C, base, rotation_powers, fused_key_.data(), with, bundle_keys_.data(), ready);
    }
  }

  // The fused engine's blocks (or clusters), one after the other.
  template <unsigned K1>
  void fused_rotation_k(std::uint64_t capacity, const std::vector<std::uint32_t>& powers,
                        std::vector<Torus32>& acc, std::uint32_t first_step, std::uint32_t steps) {
    namespace fused = kernel::fused;
    const std::uint32_t last = steps > s_.n - first_step ? s_.n : first_step + steps;
    if (fused_.cluster > 1) {
      fused_cluster_rotation_k<K1>(capacity, powers, acc, first_step, last);
      return;
    }
    if constexpr (K1 == fused::lanes_columns) {
      if (fused_.lanes == fused::max_lanes) {
        fused_block_rotation_k<K1, fused::max_lanes>(capacity, powers, acc, first_step, last);
        return;
      }
    }
    fused_block_rotation_k<K1, 1>(capacity, powers, acc, first_step, last);
  }

  // fused_blind_rotation_kernel's (or with P lanes fused_lane_rotation_kernel's) blocks of
  // R*P rotations, one after the other.
  template <unsigned K1, unsigned P>
  void fused_block_rotation_k(std::uint64_t capacity, const std::vector<std::uint32_t>& powers,
                              std::vector<Torus32>& acc, std::uint32_t first_step,
                              std::uint32_t last) {
    namespace fused = kernel::fused;
    const std::uint32_t words = K1 * s_.N, R = fused::block_rotations(fused_);
    // (A staged block: a plain one with the key stage's fetch, which only staged shapes call.)
    fused::HostStagedBlock<fused::RotationRegs<K1, P>> blk(fused::block_threads(fused_, s_));
    // Shared memory as the kernel lays it out, NaN-filled so that a read before a write shows.
    std::vector<Complex> shared((fused::block_shared_bytes(fused_, s_) + 15) / 16,
                                Complex{NAN, NAN});
    const fused::BlockMemory mem =
        fused::block_memory(reinterpret_cast<unsigned char*>(shared.data()), fused_, s_);
    fused::StepInputs in = fused_inputs();
    const std::size_t key_step = std::size_t{s_.rows()} * s_.k1() * s_.M();
    for (std::uint64_t first = 0; first < capacity; first += R) {
      const auto valid = static_cast<std::uint32_t>(std::min<std::uint64_t>(R, capacity - first));
      for (std::uint32_t w = 0; w < R * words; ++w) {
        const std::uint32_t p = std::min(w / words, valid - 1);
        mem.acc[w] = acc[(first + p) * words + w % words];
      }
      const std::uint32_t* block_powers = powers.data() + first * s_.n;
      auto run = [&](auto groups, auto shape) {
        using Groups = decltype(groups);
        constexpr bool staged = fused::staged_shape<decltype(shape)>;  // the standard key only
        if (s_.unroll > 1) {  // the unrolled kernel's own loop (one lane, or P in the lane kernel)
          REQUIRE(first_step == 0);
          REQUIRE(last == s_.n);
          REQUIRE_FALSE(staged);
          if constexpr (!staged) {
            with_unroll([&](auto u) {
              fused::blind_rotate<K1, Groups, decltype(u)::value>(
                  blk, s_, shape, mem, block_powers, valid, fused_key_.data(), in);
            });
          }
        } else if (first_step == 0 && last == s_.n) {  // the kernel's own loop
          fused::blind_rotate<K1, Groups>(blk, s_, shape, mem, block_powers, valid,
                                          fused_key_.data(), in);
        } else {
          for (std::uint32_t i = first_step; i < last; ++i) {
            in.key_step = fused_key_.data() + i * key_step;
            fused::cmux_step<K1, Groups>(blk, s_, shape, mem,
                                         fused::StepPowers{block_powers + i, s_.n, valid}, in);
          }
        }
      };
      // The device's choice of kernel (fused_kernels.cu: rotation_kernel): a key stage the
      // staged kernels' (a fixed length), lanes fused_lane_rotation_kernel's program, 1x1 at a
      // fixed length fused_fixed_rotation_kernel's.
      if (fused_.stage == fused::key_stage) {
        REQUIRE(fused::with_fixed_length(s_.M(), [&](auto groups) {
          run(groups, fused::FixedShape<1, 1, P, fused::key_stage>{});
        }));
      } else if constexpr (P > 1) {
        const fused::FixedShape<1, 1, P> shape;
        if (!fixed_lengths_ || !fused::with_fixed_length(s_.M(), [&](auto g) { run(g, shape); })) {
          run(fused::FftGroups{}, shape);
        }
      } else {
        const bool fixed = fixed_lengths_ && fused_.groups == 1 && fused_.rotations == 1 &&
                           fused::with_fixed_length(s_.M(), [&](auto groups) {
                             run(groups, fused::FixedShape<1, 1>{});
                           });
        if (!fixed) run(fused::FftGroups{}, fused_);
      }
      std::copy_n(mem.acc, valid * words, acc.begin() + first * words);
    }
  }

  detail::Shape s_;
  NaturalFft fft_;
  kernel::fused::LaunchShape fused_{0, 1};  // groups 0: the cuFFT engine
  bool fixed_lengths_ = true;
  std::uint32_t product_halves_ = 0;
  bool bundle_ = false;
  bool bundle_ready_ = false;
  std::uint32_t short_row_set_ = UINT32_MAX;
  std::vector<Complex> bundle_keys_;  // one rotation's bundled key
  std::vector<Complex> twiddles_, fused_key_;
  kernel::GadgetConstants gadget_;
  kernel::KeySwitchConstants ks_;
  std::vector<Complex> twist_, untwist_, bk_fourier_;
  std::vector<Torus32> ksk_;
  std::vector<Complex> digits_, product_;
  std::vector<std::uint32_t> roots_, fused_roots_;  // unroll > 1: each engine's slot roots
  std::vector<Complex> unit_;                       // unroll > 1: zeta^x, x < 2N
};

// Runs `batch_of(out)` on the CPU backend and through the host mirror (into a second output
// buffer, chunks of `capacity` rotations); returns both outputs' words. Their equality rests on
// both rounding every product exactly, so the set and key form must be ones product_rounding()
// calls exact (else a rare word differs by 1 before key switching: a flaky test).
template <class MakeBatch>
std::pair<LweBatch, LweBatch> cpu_and_mirror(torusgate::test::SequentialFixture& f,
                                             HostEngine& engine, std::size_t out_bits,
                                             std::uint64_t capacity, MakeBatch&& batch_of) {
  using S = CpuStorage;
  REQUIRE(product_rounding(f.be.parameters(), f.keys.cloud->bootstrapping_key().unroll()).exact());
  auto out_cpu = f.be.allocate(out_bits);
  auto out_mirror = f.be.allocate(out_bits);
  f.be.evaluate(batch_of(out_cpu));
  const std::vector<GateOp<S>> batch = batch_of(out_mirror);
  const std::size_t n1 = f.be.parameters().lwe_dimension + 1;
  const detail::BatchPlan plan = detail::build_batch_plan<S>(batch, n1, [](const S* s) {
    return const_cast<Torus32*>(s->batch.data().data());
  });
  engine.evaluate(plan, capacity);
  return {f.be.download(out_cpu.bits()), f.be.download(out_mirror.bits())};
}

}  // namespace torusgate::gpu::test
