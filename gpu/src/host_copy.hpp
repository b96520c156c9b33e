// The host side of staged transfers (CudaOptions::transfer = GpuTransfer::pinned): copying a
// piece between the caller's memory and a page-locked staging buffer, split over the host's
// threads. Plain host C++ (OpenMP), so both the CUDA build and the emulator use it.
#pragma once

#include <cstddef>

namespace torusgate::gpu::detail {

// memcpy(dst, src, bytes) for non-overlapping ranges; pieces of 4 MiB or more are split in
// slices of at least 1 MiB over up to 8 OpenMP threads (one memcpy stream rarely saturates a
// host's memory bandwidth, and the staged DMA runs at the slower of the two).
void host_copy(void* dst, const void* src, std::size_t bytes);

}  // namespace torusgate::gpu::detail
