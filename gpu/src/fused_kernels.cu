// The fused engine's kernels: each block runs the block program of fused_rotation.hpp (the
// same code the CPU tests run thread by thread) with DeviceBlock, its barriers __syncthreads.
#include "fused_kernels.cuh"

#include <algorithm>
#include <string>

#include "cuda_resources.cuh"
#include "fused_rotation.hpp"

namespace torusgate::gpu::detail {
namespace {

using kernel::Complex;
using kernel::Torus32;
namespace fused = kernel::fused;

__global__ void fused_key_kernel(const std::uint32_t* bk, std::size_t polys, Shape s,
                                 const Complex* twist, const Complex* twiddles, Complex* out) {
  TG_DYNAMIC_SHARED(shared);
  Complex* buffer = reinterpret_cast<Complex*>(shared);
  fused::TransformRegs regs;
  fused::DeviceBlock<fused::TransformRegs> blk{regs, threadIdx.x};
  for (std::size_t poly = blockIdx.x; poly < polys; poly += gridDim.x) {
    fused::transform_key_polynomial(blk, bk + poly * s.N, s.N, twist, twiddles, buffer,
                                    out + poly * s.M());
    __syncthreads();  // the buffer is free for the next polynomial
  }
}

// k = 1: at most 384 threads per block (6 groups of 64, tfhe_lib_128's latency shape), which
// caps the registers at 168 per thread; k = 2 keeps its registers (at most 256 threads).
template <unsigned K1>
constexpr int rotation_max_threads = K1 == 2 ? 384 : 256;

template <unsigned K1>
__global__ void __launch_bounds__(rotation_max_threads<K1>) fused_blind_rotation_kernel(std::uint32_t* acc_global, const std::uint32_t* powers,
                                            std::uint64_t capacity, Shape s,
                                            fused::LaunchShape shape, const Complex* key,
                                            fused::StepInputs in) {
  TG_DYNAMIC_SHARED(shared);
  const fused::BlockMemory mem = fused::block_memory(shared, shape, s);
  const std::uint32_t words = K1 * s.N, all_words = shape.rotations * words;
  fused::RotationRegs<K1> regs;
  fused::DeviceBlock<fused::RotationRegs<K1>> blk{regs, threadIdx.x};
  for (std::uint64_t first = std::uint64_t{blockIdx.x} * shape.rotations; first < capacity;
       first += std::uint64_t{gridDim.x} * shape.rotations) {
    const auto valid = static_cast<std::uint32_t>(
        capacity - first < shape.rotations ? capacity - first : shape.rotations);
    // The block's accumulators (a partial block's spare slots copy its last rotation's).
    for (std::uint32_t w = threadIdx.x; w < all_words; w += blockDim.x) {
      const std::uint32_t p = w / words < valid ? w / words : valid - 1;
      mem.acc[w] = acc_global[(first + p) * words + w % words];
    }
    fused::blind_rotate<K1>(blk, s, shape, mem, powers + first * s.n, valid, key, in);
    __syncthreads();
    for (std::uint32_t w = threadIdx.x; w < valid * words; w += blockDim.x) {
      acc_global[first * words + w] = mem.acc[w];
    }
    __syncthreads();
  }
}

template <class Kernel>
void allow_shared(Kernel kernel, std::size_t bytes) {
  if (bytes > 48 * 1024) {
    CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(bytes)));
  }
}

constexpr std::uint64_t max_blocks = std::uint64_t{1} << 30;

template <unsigned K1>
FusedLimits fused_limits_k(const Shape& shape, int device) {
  cudaFuncAttributes attributes{};
  CUDA_TRY(cudaFuncGetAttributes(&attributes, fused_blind_rotation_kernel<K1>));
  int optin = 0, multiprocessors = 0;
  CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  CUDA_TRY(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device));
  FusedLimits limits;
  limits.max_threads = static_cast<std::uint32_t>(attributes.maxThreadsPerBlock);
  limits.max_shared_bytes = static_cast<std::size_t>(optin) > attributes.sharedSizeBytes
                                ? static_cast<std::size_t>(optin) - attributes.sharedSizeBytes
                                : 0;
  const fused::LaunchShape one{1, 1};
  const std::size_t shared = fused::block_shared_bytes(one, shape);
  const unsigned threads = fused::block_threads(one, shape);
  if (threads > limits.max_threads || shared > limits.max_shared_bytes) return limits;
  allow_shared(fused_blind_rotation_kernel<K1>, shared);
  int blocks = 0;
  CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &blocks, fused_blind_rotation_kernel<K1>, static_cast<int>(threads), shared));
  limits.resident_threads = std::uint64_t{static_cast<unsigned>(blocks)} *
                            static_cast<unsigned>(multiprocessors) * threads;
  return limits;
}

}  // namespace

FusedLimits fused_limits(const Shape& shape, int device) {
  return shape.k1() == 2 ? fused_limits_k<2>(shape, device) : fused_limits_k<3>(shape, device);
}

void launch_fused_key(const std::uint32_t* bk, std::size_t polys, const Shape& shape,
                      const Complex* twist, const Complex* twiddles, Complex* out,
                      cudaStream_t stream) {
  if (polys == 0) return;
  const std::size_t shared = fused::buffer_points(shape.M()) * sizeof(Complex);
  allow_shared(fused_key_kernel, shared);
  const auto blocks = static_cast<unsigned>(std::min<std::uint64_t>(polys, max_blocks));
  TG_LAUNCH(fused_key_kernel, blocks, fused::fft_threads(shape.M()), shared, stream)
  (bk, polys, shape, twist, twiddles, out);
  CUDA_CHECK_LAUNCH(fused_key_kernel, stream);
}

void launch_fused_blind_rotation(std::uint32_t* acc, const std::uint32_t* powers,
                                 std::uint64_t capacity, const Shape& shape,
                                 const kernel::fused::LaunchShape& launch, const Complex* key,
                                 const Complex* twist, const Complex* untwist,
                                 const Complex* twiddles, const kernel::GadgetConstants& gadget,
                                 cudaStream_t stream) {
  if (capacity == 0) return;
  EXPECTS(fused::valid_shape(launch, shape) && shape.k1() >= 2 && shape.k1() <= 3,
          "launch_fused_blind_rotation: groups=" + std::to_string(launch.groups) +
              ", rotations=" + std::to_string(launch.rotations) + " with k+1=" +
              std::to_string(shape.k1()));
  const std::size_t shared = fused::block_shared_bytes(launch, shape);
  const unsigned threads = fused::block_threads(launch, shape);
  const std::uint64_t needed = (capacity + launch.rotations - 1) / launch.rotations;
  const auto blocks = static_cast<unsigned>(std::min<std::uint64_t>(needed, max_blocks));
  fused::StepInputs in;
  in.twist = twist;
  in.untwist = untwist;
  in.W = twiddles;
  in.gadget = gadget;
  if (shape.k1() == 2) {
    allow_shared(fused_blind_rotation_kernel<2>, shared);
    TG_LAUNCH(fused_blind_rotation_kernel<2>, blocks, threads, shared, stream)
    (acc, powers, capacity, shape, launch, key, in);
    CUDA_CHECK_LAUNCH(fused_blind_rotation_kernel, stream);
  } else {
    allow_shared(fused_blind_rotation_kernel<3>, shared);
    TG_LAUNCH(fused_blind_rotation_kernel<3>, blocks, threads, shared, stream)
    (acc, powers, capacity, shape, launch, key, in);
    CUDA_CHECK_LAUNCH(fused_blind_rotation_kernel, stream);
  }
}

}  // namespace torusgate::gpu::detail
