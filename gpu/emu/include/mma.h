// The warp matrix functions (nvcuda::wmma) as the CUDA emulator (gpu/emu) provides them. A
// thread's matrix_a and matrix_b fragments hold the whole tile; its accumulator fragment owns
// the elements e with e % 32 == its lane (as a warp's lanes share a fragment on the device),
// which mma_sync computes and store_matrix_sync writes: a product is complete only when all
// 32 lanes of the warp take part, as the device requires. Integer products are exact, and an
// int32 accumulator that would overflow is a fault, not a silent wrap. Load and store check
// what the hardware requires: a 256-bit aligned pointer and a leading dimension that is a
// multiple of 16 bytes; a violation is a device fault (cudaErrorLaunchFailure).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "cuda_runtime.h"

namespace nvcuda::wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

namespace detail {
template <class Use, int M, int N, int K>
struct Extent;
template <int M, int N, int K>
struct Extent<matrix_a, M, N, K> {
  static constexpr int rows = M, cols = K;
};
template <int M, int N, int K>
struct Extent<matrix_b, M, N, K> {
  static constexpr int rows = K, cols = N;
};
template <int M, int N, int K>
struct Extent<accumulator, M, N, K> {
  static constexpr int rows = M, cols = N;
};

// The calling thread's lane in its warp.
inline unsigned lane() {
  return (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) % 32;
}

inline void check_access(const void* p, unsigned ldm, std::size_t element_bytes,
                         const char* call) {
  if (reinterpret_cast<std::uintptr_t>(p) % 32 != 0) {
    cuda_emu::device_fault((std::string(call) + ": the pointer is not 256-bit aligned").c_str());
  }
  if ((ldm * element_bytes) % 16 != 0) {
    cuda_emu::device_fault((std::string(call) + ": ldm is not a multiple of 16 bytes").c_str());
  }
}
}  // namespace detail

template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment {
  static constexpr int rows = detail::Extent<Use, M, N, K>::rows;
  static constexpr int cols = detail::Extent<Use, M, N, K>::cols;
  static constexpr int num_elements = rows * cols;
  T x[rows * cols];
};

template <class Use, int M, int N, int K, class T, class Layout>
void fill_fragment(fragment<Use, M, N, K, T, Layout>& f, T value) {
  for (auto& e : f.x) e = value;
}

template <class Use, int M, int N, int K, class T, class Layout>
void load_matrix_sync(fragment<Use, M, N, K, T, Layout>& f, const T* p, unsigned ldm) {
  detail::check_access(p, ldm, sizeof(T), "wmma::load_matrix_sync");
  using F = fragment<Use, M, N, K, T, Layout>;
  for (int r = 0; r < F::rows; ++r) {
    for (int c = 0; c < F::cols; ++c) {
      f.x[r * F::cols + c] = std::is_same_v<Layout, col_major> ? p[std::size_t{unsigned(c)} * ldm + r]
                                                                : p[std::size_t{unsigned(r)} * ldm + c];
    }
  }
}

template <int M, int N, int K, class T>
void store_matrix_sync(T* p, const fragment<accumulator, M, N, K, T>& f, unsigned ldm,
                       layout_t layout) {
  detail::check_access(p, ldm, sizeof(T), "wmma::store_matrix_sync");
  for (int e = static_cast<int>(detail::lane()); e < M * N; e += 32) {
    const int r = e / N, c = e % N;
    if (layout == mem_col_major) p[std::size_t{unsigned(c)} * ldm + r] = f.x[e];
    else p[std::size_t{unsigned(r)} * ldm + c] = f.x[e];
  }
}

template <int M, int N, int K, class TA, class TB, class TC, class LA, class LB>
void mma_sync(fragment<accumulator, M, N, K, TC>& d, const fragment<matrix_a, M, N, K, TA, LA>& a,
              const fragment<matrix_b, M, N, K, TB, LB>& b,
              const fragment<accumulator, M, N, K, TC>& c) {
  for (int e = static_cast<int>(detail::lane()); e < M * N; e += 32) {
    const int i = e / N, j = e % N;
    if constexpr (std::is_integral_v<TC>) {
      // Exact, then checked: the backend bounds its products so that int32 never overflows
      // (ks_gemm.hpp).
      std::int64_t sum = c.x[e];
      for (int k = 0; k < K; ++k) sum += std::int64_t{a.x[i * K + k]} * std::int64_t{b.x[k * N + j]};
      if (sum < std::int64_t{INT32_MIN} || sum > std::int64_t{INT32_MAX}) {
        cuda_emu::device_fault("wmma::mma_sync: an int32 accumulator overflowed");
      }
      d.x[e] = static_cast<TC>(sum);
    } else {
      TC sum = c.x[e];
      for (int k = 0; k < K; ++k) sum += static_cast<TC>(a.x[i * K + k]) * static_cast<TC>(b.x[k * N + j]);
      d.x[e] = sum;
    }
  }
}

}  // namespace nvcuda::wmma
