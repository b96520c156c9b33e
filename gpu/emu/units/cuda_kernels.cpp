// gpu/src/cuda_kernels.cu compiled by the host compiler against the CUDA emulator (gpu/emu).
#include "../../src/cuda_kernels.cu"
