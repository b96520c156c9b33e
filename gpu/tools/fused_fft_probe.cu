// The fused engine's FFT passes (gpu/src/fused_fft.hpp) as small kernels, one per pass of the
// transforms of N = 512, 1024 and 2048 (M = 256, 512, 1024), forward and inverse, each
// compiled with the pass's top bit and stage count as constants, as the fused kernel runs
// them. Not part of the build: scripts/fused_fft_sass.sh compiles it with nvcc and counts the
// FP64 instructions and loads of each kernel's SASS (the FP64 work of the engine's FFT,
// docs/gpu.md section 1.1). Every kernel loads and stores its 8 points (8 LDG, 8 STG); the
// other global loads are twiddles.
#include "fused_fft.hpp"

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
