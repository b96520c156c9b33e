// A host mirror of the CUDA backend's data flow, for CPU tests: the same batch plan, chunks
// and bucket sizes, the same kernel bodies (gpu/src/kernel_math.hpp) called for every index
// of every kernel's grid, and the same buffer layouts; only cuFFT's batched Z2Z transforms
// are replaced by a natural-order unnormalised FFT on the host (NaturalFft, itself checked
// against a direct DFT). What this cannot show is anything about the device itself: the
// launches, cuFFT, graphs, memory and timing.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numbers>
#include <utility>
#include <vector>

#include "batch_plan.hpp"
#include "kernel_math.hpp"
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

inline detail::Shape shape_of(const Parameters& p) {
  return detail::Shape{p.lwe_dimension,  p.glwe_dimension, p.polynomial_size, p.bk_base_log,
                       p.bk_level_count, p.ks_base_log,    p.ks_level_count};
}

// The device engine's work, on the host.
class HostEngine {
 public:
  explicit HostEngine(const CloudKey& key)
      : s_(shape_of(key.parameters())), fft_(s_.M()),
        gadget_(kernel::make_gadget(s_.bk_base_log, s_.bk_level_count)),
        ks_(kernel::make_key_switch(s_.ks_base_log, s_.ks_level_count, s_.n,
                                    s_.extracted_dimension())),
        twist_(kernel::twist_factors(s_.N)), untwist_(kernel::untwist_factors(s_.N)) {
    const auto bk = key.bootstrapping_key().data();
    ksk_.assign(key.key_switching_key().data().begin(), key.key_switching_key().data().end());
    // bk_fold_twist_kernel, then the batched forward transform of every polynomial.
    const std::size_t polys = std::size_t{s_.n} * s_.rows() * s_.k1(), M = s_.M();
    bk_fourier_.resize(polys * M);
    for (std::size_t poly = 0; poly < polys; ++poly) {
      const Torus32* p = bk.data() + poly * s_.N;
      for (std::size_t j = 0; j < M; ++j) {
        bk_fourier_[poly * M + j] =
            kernel::fold_twist(static_cast<double>(static_cast<std::int32_t>(p[j])),
                               static_cast<double>(static_cast<std::int32_t>(p[j + M])), twist_[j]);
      }
      fft_.forward(bk_fourier_.data() + poly * M);
    }
  }

  const detail::Shape& shape() const { return s_; }

  // One CMUX step for `capacity` accumulators ([capacity][k1][N]) with switched masks
  // `powers` ([capacity][n]): the three kernels and the two batched transforms.
  void cmux_step(std::uint32_t step, std::size_t capacity, const std::vector<std::uint32_t>& powers,
                 std::vector<Torus32>& acc) {
    const std::uint32_t M = s_.M(), k1 = s_.k1(), rows = s_.rows(), N = s_.N;
    digits_.resize(capacity * rows * M);
    product_.resize(capacity * k1 * M);
    for (std::size_t r = 0; r < capacity; ++r) {  // rotate_decompose_kernel
      for (std::uint32_t c = 0; c < k1; ++c) {
        for (std::uint32_t j = 0; j < M; ++j) {
          kernel::rotate_decompose_twist(
              acc.data() + kernel::accumulator_index(r, c, 0, k1, N), powers[r * s_.n + step], j,
              N, gadget_, twist_[j],
              digits_.data() + kernel::digit_index(r, c * gadget_.level_count, j, rows, M), M);
        }
      }
    }
    for (std::size_t poly = 0; poly < capacity * rows; ++poly) fft_.forward(digits_.data() + poly * M);
    const Complex* key_step = bk_fourier_.data() + kernel::bk_spectrum_index(step, 0, 0, 0, rows, k1, M);
    for (std::size_t r = 0; r < capacity; ++r) {  // multiply_accumulate_kernel
      for (std::uint32_t j = 0; j < M; ++j) {
        kernel::multiply_accumulate_point(digits_.data() + kernel::digit_index(r, 0, 0, rows, M),
                                          key_step,
                                          product_.data() + kernel::product_index(r, 0, 0, k1, M),
                                          j, rows, k1, M);
      }
    }
    for (std::size_t poly = 0; poly < capacity * k1; ++poly) fft_.inverse(product_.data() + poly * M);
    for (std::size_t poly = 0; poly < capacity * k1; ++poly) {  // untwist_round_add_kernel
      for (std::uint32_t j = 0; j < M; ++j) {
        kernel::untwist_round_add(product_[poly * M + j], untwist_[j], acc.data() + poly * N, j, M);
      }
    }
  }

  // The engine's evaluate(): plan pointers are host pointers; chunks of at most `capacity`
  // rotations (a bucket size >= 2), each run at its bucket size as the device does.
  void evaluate(const detail::BatchPlan& plan, std::uint64_t capacity) {
    const std::uint32_t n = s_.n, n1 = s_.n1(), kN = s_.extracted_dimension(), N = s_.N;
    const std::uint32_t acc_words = s_.k1() * N;
    std::vector<Torus32> results(plan.results * n1);
    const auto op_count = static_cast<std::uint32_t>(plan.ops.size());
    const auto boot_count = static_cast<std::uint32_t>(plan.boot_ops.size());
    if (plan.has_free_gates) {  // free_gates_kernel
      for (std::uint64_t idx = 0; idx < plan.results * n1; ++idx) {
        const std::uint64_t result = idx / n1;
        const auto w = static_cast<std::uint32_t>(idx % n1);
        const auto& op = plan.ops[kernel::find_item(plan.ops.data(), op_count,
                                                    &kernel::OpDesc::first_result, result)];
        if (op.kind != kernel::OpKind::Bootstrapped) {
          results[idx] = kernel::free_gate_word(op, result - op.first_result, w, n);
        }
      }
    }
    for (std::uint64_t job = 0; job < plan.jobs;) {
      const detail::Chunk chunk = detail::next_chunk(plan, job, capacity);
      const std::uint64_t C = detail::bucket_capacity(chunk.rotations());
      chunks_run += 1;
      std::vector<Torus32> pre(C * n1, 0), acc(C * acc_words);
      std::vector<std::uint32_t> powers(C * n);
      for (std::uint64_t idx = 0; idx < chunk.rotations() * n1; ++idx) {  // linear_combination
        const std::uint64_t rotation = chunk.rotation_begin + idx / n1;
        const auto& op = plan.boot_ops[kernel::find_item(plan.boot_ops.data(), boot_count,
                                                         &kernel::BootOpDesc::first_rotation,
                                                         rotation)];
        pre[idx] = kernel::linear_combination_word(op, rotation, static_cast<std::uint32_t>(idx % n1), n);
      }
      for (std::uint64_t r = 0; r < C; ++r) {  // accumulator_init_kernel
        for (std::uint32_t w = 0; w < acc_words; ++w) {
          acc[r * acc_words + w] = kernel::accumulator_init_word(
              pre.data() + r * n1, w, n, s_.k, N, s_.log2_2n(), kernel::eighths(1));
        }
        for (std::uint32_t i = 0; i < n; ++i) {
          powers[r * n + i] = kernel::mod_switch(pre[r * n1 + i], s_.log2_2n());
        }
      }
      for (std::uint32_t i = 0; i < n; ++i) cmux_step(i, C, powers, acc);
      std::vector<Torus32> extracted(chunk.jobs() * (kN + 1));
      std::vector<std::uint64_t> result_index(chunk.jobs());
      for (std::uint64_t idx = 0; idx < extracted.size(); ++idx) {  // sample_extract_kernel
        const std::uint64_t g = idx / (kN + 1);
        const auto w = static_cast<std::uint32_t>(idx % (kN + 1));
        const std::uint64_t job_g = chunk.job_begin + g;
        const auto& op = plan.boot_ops[kernel::find_item(plan.boot_ops.data(), boot_count,
                                                         &kernel::BootOpDesc::first_job, job_g)];
        const std::uint64_t local = job_g - op.first_job;
        const std::uint64_t rotation = op.first_rotation + local * op.bootstraps - chunk.rotation_begin;
        extracted[idx] = kernel::gate_extract_word(acc.data() + rotation * acc_words,
                                                   op.bootstraps, w, s_.k, N);
        if (w == 0) result_index[g] = op.first_result + local;
      }
      key_switch(extracted, result_index, results);
      job = chunk.job_end;
    }
    for (std::uint64_t idx = 0; idx < plan.results * n1; ++idx) {  // write_outputs_kernel
      const std::uint64_t result = idx / n1;
      const auto& op = plan.ops[kernel::find_item(plan.ops.data(), op_count,
                                                  &kernel::OpDesc::first_result, result)];
      op.out[(result - op.first_result) * n1 + idx % n1] = results[idx];
    }
  }

  // key_switch_kernel: every output word of every gate, coefficient by coefficient.
  void key_switch(const std::vector<Torus32>& extracted, const std::vector<std::uint64_t>& result_index,
                  std::vector<Torus32>& results) const {
    const std::uint32_t n1 = s_.n1(), kN = s_.extracted_dimension();
    const std::size_t coefficient_words = kernel::ksk_coefficient_words(ks_);
    for (std::size_t g = 0; g < result_index.size(); ++g) {
      const Torus32* in = extracted.data() + g * (kN + 1);
      for (std::uint32_t w = 0; w < n1; ++w) {
        Torus32 acc = w == s_.n ? in[kN] : Torus32{0};
        for (std::uint32_t i = 0; i < kN; ++i) {
          acc = kernel::key_switch_step(acc, in[i] + ks_.round_offset,
                                        ksk_.data() + i * coefficient_words, w, ks_);
        }
        results[result_index[g] * n1 + w] = acc;
      }
    }
  }

  std::size_t chunks_run = 0;

 private:
  detail::Shape s_;
  NaturalFft fft_;
  kernel::GadgetConstants gadget_;
  kernel::KeySwitchConstants ks_;
  std::vector<Complex> twist_, untwist_, bk_fourier_;
  std::vector<Torus32> ksk_;
  std::vector<Complex> digits_, product_;
};

}  // namespace torusgate::gpu::test
