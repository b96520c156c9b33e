// cuFFT as the CUDA emulator (gpu/emu) provides it: the plan calls the backend makes and
// batched double-precision complex transforms (Z2Z, rank 1, unnormalised, sign -1 forward
// and +1 inverse as cuFFT defines them), run on the CPU at execution (or at graph replay
// while the plan's stream is captured). The emulator checks what cuFFT requires: plans made
// before use, a work area of the reported size when auto-allocation is off, data inside live
// device allocations, no plan made during a stream capture.
#pragma once

#include <cstddef>

#include "cuda_runtime.h"

using cufftHandle = int;

struct alignas(16) cufftDoubleComplex {
  double x = 0, y = 0;
};

enum cufftResult {
  CUFFT_SUCCESS = 0,
  CUFFT_INVALID_PLAN = 1,
  CUFFT_ALLOC_FAILED = 2,
  CUFFT_INVALID_TYPE = 3,
  CUFFT_INVALID_VALUE = 4,
  CUFFT_INTERNAL_ERROR = 5,
  CUFFT_EXEC_FAILED = 6,
  CUFFT_SETUP_FAILED = 7,
  CUFFT_INVALID_SIZE = 8,
  CUFFT_UNALIGNED_DATA = 9,
  CUFFT_INVALID_DEVICE = 11,
  CUFFT_NO_WORKSPACE = 13,
  CUFFT_NOT_IMPLEMENTED = 14,
  CUFFT_NOT_SUPPORTED = 16,
};

enum cufftType {
  CUFFT_R2C = 0x2a,
  CUFFT_C2R = 0x2c,
  CUFFT_C2C = 0x29,
  CUFFT_D2Z = 0x6a,
  CUFFT_Z2D = 0x6c,
  CUFFT_Z2Z = 0x69,
};

#define CUFFT_FORWARD -1
#define CUFFT_INVERSE 1

cufftResult cufftCreate(cufftHandle* plan);
cufftResult cufftDestroy(cufftHandle plan);
cufftResult cufftSetAutoAllocation(cufftHandle plan, int auto_allocate);
cufftResult cufftMakePlanMany(cufftHandle plan, int rank, int* n, int* inembed, int istride,
                              int idist, int* onembed, int ostride, int odist, cufftType type,
                              int batch, std::size_t* work_size);
cufftResult cufftSetWorkArea(cufftHandle plan, void* work_area);
cufftResult cufftSetStream(cufftHandle plan, cudaStream_t stream);
cufftResult cufftExecZ2Z(cufftHandle plan, cufftDoubleComplex* in, cufftDoubleComplex* out,
                         int direction);
