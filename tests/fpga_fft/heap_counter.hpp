// The heap tests_fpga_fft holds through operator new, which heap_counter.cpp replaces for the
// whole program: for the check of StreamingFft::run_bytes against what a run takes.
#pragma once
#include <cstdint>

namespace torusgate::test {

// Starts a new peak at the bytes held now, and returns them.
std::int64_t heap_peak_reset();
// The most bytes held since the last heap_peak_reset().
std::int64_t heap_peak();

}  // namespace torusgate::test
