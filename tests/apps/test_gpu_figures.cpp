// The figures bench_gates reports next to its GPU timings: the nominal FP64 work and Fourier
// key bytes of one bootstrap (apps/app_support.hpp) and a device's peak FP64 rate and memory
// bandwidth (gpu/device.hpp), against hand counts; the key form's name in their headers.
#include <catch2/catch.hpp>

#include "app_support.hpp"
#include "torusgate/core/params.hpp"
#include "torusgate/gpu/device.hpp"

using namespace torusgate;

TEST_CASE("nominal FP64 work and key bytes of one bootstrap", "[apps]") {
  // tfhe_lib_128: M = 512, log2 M = 9, k+1 = 2, l = 3, n = 630. Per step: 8 transforms of
  // 5*512*9 = 23,040 flops, 6*2*512 multiply-adds of 8, 8*512 twists of 6.
  const double step = 8 * 23040.0 + 6 * 2 * 512 * 8.0 + 8 * 512 * 6.0;
  CHECK(step == 258048.0);
  CHECK(apps::nominal_fp64_per_bootstrap(tfhe_lib_128()) == 630 * step);
  CHECK(apps::fourier_key_bytes_per_bootstrap(tfhe_lib_128()) == 630.0 * 6 * 2 * 512 * 16);
  // default_128: k = 2, l = 2, n = 837: 6 forward and 3 inverse transforms per step.
  const double step2 = 9 * 23040.0 + 6 * 3 * 512 * 8.0 + 9 * 512 * 6.0;
  CHECK(apps::nominal_fp64_per_bootstrap(default_128()) == 837 * step2);
}

TEST_CASE("peak FP64 rate and memory bandwidth of a device", "[apps]") {
  gpu::DeviceInfo h100;
  h100.name = "an H100 SXM";
  h100.compute_capability_major = 9;
  h100.multiprocessors = 132;
  h100.clock_khz = 1980000;
  h100.memory_clock_khz = 2619000;
  h100.memory_bus_bits = 5120;
  CHECK(gpu::fp64_lanes_per_multiprocessor(h100) == 64);
  CHECK(gpu::peak_fp64_flops(h100) == Approx(33.45e12).epsilon(1e-3));
  CHECK(gpu::peak_memory_bytes_per_s(h100) == Approx(3.352e12).epsilon(1e-3));
  gpu::DeviceInfo a100 = h100;
  a100.compute_capability_major = 8;
  a100.multiprocessors = 108;
  a100.clock_khz = 1410000;
  CHECK(gpu::peak_fp64_flops(a100) == Approx(9.75e12).epsilon(1e-3));
  gpu::DeviceInfo consumer = h100;
  consumer.compute_capability_minor = 9;  // 8.9: 2 FP64 lanes per multiprocessor
  consumer.compute_capability_major = 8;
  CHECK(gpu::fp64_lanes_per_multiprocessor(consumer) == 2);
  gpu::DeviceInfo unknown;  // no clocks read: no peak
  CHECK(gpu::peak_fp64_flops(unknown) == 0);
  CHECK(gpu::peak_memory_bytes_per_s(unknown) == 0);
}

TEST_CASE("the key form's name in the benchmarks' headers", "[apps]") {
  CHECK(apps::key_form_text(1) == "the standard bootstrapping key");
  CHECK(apps::key_form_text(2) == "key bits in pairs (--unroll 2)");
  CHECK(apps::key_form_text(3) == "key bits in threes (--unroll 3)");
  CHECK(apps::key_form_text(4) == "key bits in fours (--unroll 4)");
  CHECK(apps::key_form_text(5) == "an unrolled key (--unroll 5)");
}
