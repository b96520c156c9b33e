// gpu/src/device.cu compiled by the host compiler against the CUDA emulator (gpu/emu).
#include "../../src/device.cu"
