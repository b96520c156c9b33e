// gpu/src/cuda_engine.cu compiled by the host compiler against the CUDA emulator (gpu/emu).
#include "../../src/cuda_engine.cu"
