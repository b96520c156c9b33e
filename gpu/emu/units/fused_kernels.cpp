// gpu/src/fused_kernels.cu compiled by the host compiler against the CUDA emulator (gpu/emu).
#include "../../src/fused_kernels.cu"
