// Launcher of key switching as one integer matrix product on the tensor cores (ks_gemm.cu;
// the formulation, the byte-plane matrix and the tiles are in ks_gemm.hpp). Same inputs as
// launch_key_switch (cuda_kernels.cuh), with the byte-plane matrix in place of the key.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernel_math.hpp"

namespace torusgate::gpu::detail {

// Key switching of `jobs` extracted samples ([jobs][kN+1] words) into the result buffer:
// result_words[result_index[g] * (n+1) + w] = word w of gate g's key-switched sample, equal
// to core's key_switch word for word. `matrix` holds ks_gemm::make_layout(ks).bytes() bytes
// written by ks_gemm::write_matrix from the same key, 16-byte aligned. Throws InvalidArgument
// (before launching) for a shape make_layout refuses or a misaligned matrix, SystemError for a
// failed launch; jobs == 0 does nothing.
void launch_key_switch_gemm(const std::uint32_t* extracted, std::uint64_t jobs,
                            const std::uint64_t* result_index, const std::uint8_t* matrix,
                            const kernel::KeySwitchConstants& ks, std::uint32_t* result_words,
                            cudaStream_t stream);

}  // namespace torusgate::gpu::detail
