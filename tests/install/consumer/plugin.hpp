// The consumer's own shared library (tests/install/consumer, libconsumer_plugin.so): it links
// the static torusgate libraries, which are therefore built as position-independent code.
#pragma once

// Encrypted NAND of the four pairs of bits on the sequential and OpenMP backends, each with the
// FFTW and the portable FFT engine (their thread_local scratch is what a non-PIC archive cannot
// give a shared library), and a fixed-point FFT round trip: the number of wrong results.
int plugin_wrong_results();
