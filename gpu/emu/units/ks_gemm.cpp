// gpu/src/ks_gemm.cu compiled by the host compiler against the CUDA emulator (gpu/emu).
#include "../../src/ks_gemm.cu"
