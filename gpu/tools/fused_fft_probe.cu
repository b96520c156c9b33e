// The fused engine's FFT passes (gpu/src/fused_fft.hpp) as small kernels, one per pass of the
// transforms of N = 512, 1024 and 2048 (M = 256, 512, 1024), forward and inverse, each
// compiled with the pass's top bit and stage count as constants, as the fused kernel runs
// them; and the other FP64 work of a CMUX step per thread (gpu/src/fused_rotation.hpp):
// the digits of one row folded and twisted, one row's products for k+1 = 2 columns, one
// column untwisted, rounded and added. Not part of the build: scripts/fused_fft_sass.sh
// compiles it with nvcc and counts the FP64 instructions and loads of each kernel's SASS
// (docs/gpu.md section 1.1). Every pass kernel loads and stores its 8 points (8 LDG, 8 STG);
// its other global loads are twiddles.
#include "fused_rotation.hpp"

namespace fz = torusgate::gpu::kernel::fused;
using torusgate::gpu::kernel::Complex;

template <unsigned M, unsigned Top, unsigned Stages, bool Inverse>
__global__ void __launch_bounds__(M / 8) fft_pass_probe(Complex* data, const Complex* W) {
  constexpr unsigned T = M / 8;
  Complex v[fz::points_per_thread];
#pragma unroll
  for (unsigned r = 0; r < fz::points_per_thread; ++r) v[r] = data[r * T + threadIdx.x];
  fz::pass_registers<Inverse>(v, threadIdx.x, fz::Pass{Top, Stages}, fz::log2_exact(M), W);
#pragma unroll
  for (unsigned r = 0; r < fz::points_per_thread; ++r) data[r * T + threadIdx.x] = v[r];
}

#define TG_PROBE(M, TOP, STAGES)                                                        \
  template __global__ void fft_pass_probe<M, TOP, STAGES, false>(Complex*, const Complex*); \
  template __global__ void fft_pass_probe<M, TOP, STAGES, true>(Complex*, const Complex*);

// M = 256 (m = 8): a pass of 2 stages, then 3 + 3.
TG_PROBE(256, 7, 2)
TG_PROBE(256, 5, 3)
TG_PROBE(256, 2, 3)
// M = 512 (m = 9): 3 + 3 + 3.
TG_PROBE(512, 8, 3)
TG_PROBE(512, 5, 3)
TG_PROBE(512, 2, 3)
// M = 1024 (m = 10): 1, then 3 + 3 + 3.
TG_PROBE(1024, 9, 1)
TG_PROBE(1024, 8, 3)
TG_PROBE(1024, 5, 3)
TG_PROBE(1024, 2, 3)

namespace kn = torusgate::gpu::kernel;

// One row's digits at a thread's 8 points, folded and twisted (the block program's digit
// phase without the integer work before it: the rotation and the gadget digits, whose branch
// on the power would double the static count).
__global__ void step_digits_probe(const std::int32_t* digits, std::uint32_t M,
                                  const Complex* twist, Complex* out) {
  const std::uint32_t m = fz::log2_exact(M);
#pragma unroll
  for (unsigned r = 0; r < fz::points_per_thread; ++r) {
    const std::uint32_t j = fz::point_of(threadIdx.x, r, m - 1);
    out[r * blockDim.x + threadIdx.x] = kn::fold_twist(static_cast<double>(digits[j]),
                                                       static_cast<double>(digits[j + M]), twist[j]);
  }
}

// One row's products for K1 columns: sum[c] += digits * key[c] at 8 points.
template <unsigned K1>
__global__ void step_products_probe(const Complex* digits, const Complex* key, Complex* sums) {
  fz::RotationRegs<K1> R;
#pragma unroll
  for (unsigned r = 0; r < fz::points_per_thread; ++r) {
    R.v[r] = digits[r * blockDim.x + threadIdx.x];
#pragma unroll
    for (unsigned c = 0; c < K1; ++c) R.sum[c][r] = sums[(c * 8 + r) * blockDim.x + threadIdx.x];
  }
#pragma unroll
  for (unsigned c = 0; c < K1; ++c) {
#pragma unroll
    for (unsigned r = 0; r < fz::points_per_thread; ++r) {
#if defined(TORUSGATE_FUSED_MULTIPLY_ADD)
      fz::multiply_add(R.sum[c][r], R.v[r], key[(c * 8 + r) * blockDim.x + threadIdx.x]);
#else  // the block program's products before multiply_add (scripts/fused_fft_sass.sh --against)
      const Complex b = key[(c * 8 + r) * blockDim.x + threadIdx.x];
      const Complex d = R.v[r];
      R.sum[c][r].re += d.re * b.re - d.im * b.im;
      R.sum[c][r].im += d.re * b.im + d.im * b.re;
#endif
    }
  }
#pragma unroll
  for (unsigned r = 0; r < fz::points_per_thread; ++r) {
#pragma unroll
    for (unsigned c = 0; c < K1; ++c) sums[(c * 8 + r) * blockDim.x + threadIdx.x] = R.sum[c][r];
  }
}
template __global__ void step_products_probe<2>(const Complex*, const Complex*, Complex*);

// One column back: a thread's 8 points untwisted, rounded and added into the accumulator.
__global__ void step_untwist_probe(const Complex* v, const Complex* untwist, kn::Torus32* acc,
                                   std::uint32_t M) {
  const std::uint32_t m = fz::log2_exact(M);
#pragma unroll
  for (unsigned r = 0; r < fz::points_per_thread; ++r) {
    const std::uint32_t j = fz::point_of(threadIdx.x, r, m - 1);
    kn::untwist_round_add(v[r * blockDim.x + threadIdx.x], untwist[j], acc, j, M);
  }
}
