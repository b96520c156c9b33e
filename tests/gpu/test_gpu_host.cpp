// CPU tests of the CUDA backend's host side, run everywhere (no GPU needed): the kernels'
// per-element math (gpu/src/kernel_math.hpp) against core/, the batch plan and chunking,
// the natural-order FFT that stands in for cuFFT, one CMUX step computed the kernels' way
// against core's exact external product, the kernels' whole data flow (host mirror) against
// the CPU backend word for word, chunked and not, and the backend's option checks and its
// clear refusal where no device (or no CUDA) exists.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <numbers>
#include <string>
#include <tuple>
#include <vector>

#include "backend_fixtures.hpp"
#include "batch_builder.hpp"
#include "batch_plan.hpp"
#include "gpu_test_sets.hpp"
#include "host_copy.hpp"
#include "host_mirror.hpp"
#include "kernel_math.hpp"
#include "test_support.hpp"
#include "torusgate/core/bootstrap.hpp"
#include "torusgate/core/fft.hpp"
#include "torusgate/core/glwe.hpp"
#include "torusgate/cpu/cpu_backend.hpp"
#include "torusgate/gpu/cuda_backend.hpp"
#include "torusgate/gpu/device.hpp"

using namespace torusgate;
using torusgate::test::catch_seed;
using torusgate::test::keys_for;
using torusgate::test::seeded_rng;
namespace k = torusgate::gpu::kernel;
namespace gd = torusgate::gpu::detail;
using torusgate::gpu::test::HostEngine;
using torusgate::gpu::test::NaturalFft;

static_assert(Backend<CudaBackend>);

namespace {

using torusgate::gpu::test::sized_insecure;

std::vector<Parameters> every_set() { return torusgate::gpu::test::every_test_set(); }

std::vector<Torus32> random_torus(Csprng& rng, std::size_t count) {
  std::vector<Torus32> v(count);
  for (auto& x : v) x = rng.uniform_torus();
  return v;
}

// Torus values that stress carries and boundaries, then random ones.
std::vector<Torus32> torus_samples(Csprng& rng) {
  std::vector<Torus32> v = {0u,          1u,          0x7fffffffu, 0x80000000u, 0x80000001u,
                            0xffffffffu, 0x20000000u, 0xe0000000u, 0x00400000u, 0xffc00000u};
  for (std::uint32_t b = 0; b < 32; ++b) {
    v.push_back(Torus32{1} << b);
    v.push_back((Torus32{1} << b) - 1);
    v.push_back(Torus32{0} - (Torus32{1} << b));
  }
  const auto r = random_torus(rng, 20000);
  v.insert(v.end(), r.begin(), r.end());
  return v;
}

}  // namespace

TEST_CASE("kernel math: torus encoding, modulus switch and rounding equal core's",
          "[gpu-host]") {
  const std::uint64_t seed = catch_seed(0x61);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  CHECK(k::eighths(1) == encode_bit(true));
  CHECK(k::eighths(-1) == encode_bit(false));
  CHECK(k::eighths(4) == Torus32{0x80000000u});
  CHECK(k::eighths(-3) == Torus32{0} - 3 * (Torus32{1} << 29));
  for (const Torus32 x : torus_samples(rng)) {
    for (std::uint32_t log2 = 5; log2 <= 15; ++log2) {
      REQUIRE(k::mod_switch(x, log2) == mod_switch_from_torus(x, 1u << log2));
    }
  }
  // Rounding: exact halves (ties away from the even rule differ), large and negative values.
  std::vector<double> values = {0.0, 0.5, -0.5, 1.5, -1.5, 2.5, 0.49999999999, -0.49999999999,
                                4294967295.5, -4294967296.0, 1e15, -1e15, 0x1p50, -0x1p50};
  for (int i = 0; i < 20000; ++i) {
    const double mag = std::ldexp(rng.uniform_open_unit(), static_cast<int>(rng.uniform_below(51)));
    values.push_back(rng.uniform_bit() ? mag : -mag);
  }
  for (const double v : values) {
    INFO("v = " << v);
    REQUIRE(k::round_to_torus32(v) == round_to_torus(v));
  }
}

TEST_CASE("kernel math: gadget digits equal core's GadgetDecomposition for every set",
          "[gpu-host]") {
  const std::uint64_t seed = catch_seed(0x62);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  const auto xs = torus_samples(rng);
  for (const Parameters& p : every_set()) {
    INFO("parameter set " << p.name);
    const GadgetDecomposition ref(p.bk_base_log, p.bk_level_count);
    const k::GadgetConstants g = k::make_gadget(p.bk_base_log, p.bk_level_count);
    CHECK(g.level_count == p.bk_level_count);
    for (const Torus32 x : xs) {
      for (std::uint32_t level = 1; level <= p.bk_level_count; ++level) {
        REQUIRE(k::gadget_digit(g, x, level) == ref.digit(x, level));
        // The rotations' form (no int-to-double conversion): the same value, exactly.
        REQUIRE(k::gadget_digit_double(g, x, level) == static_cast<double>(ref.digit(x, level)));
      }
    }
  }
  // Extreme gadgets: precision 32 (no rounding bit), base 2, and digits of up to 16 bits.
  for (const auto& [base_log, levels] : {std::pair{8u, 4u}, std::pair{1u, 5u}, std::pair{16u, 2u}}) {
    const GadgetDecomposition ref(base_log, levels);
    const k::GadgetConstants g = k::make_gadget(base_log, levels);
    for (const Torus32 x : xs) {
      for (std::uint32_t level = 1; level <= levels; ++level) {
        REQUIRE(k::gadget_digit(g, x, level) == ref.digit(x, level));
        REQUIRE(k::gadget_digit_double(g, x, level) == static_cast<double>(ref.digit(x, level)));
      }
    }
  }
  // Every digit value of tfhe_lib_128's gadget (Bg = 2^7) at every level: the bits that make
  // digit d at level p, for d = -64 .. 63, the extremes included.
  const k::GadgetConstants g = k::make_gadget(7, 3);
  const GadgetDecomposition ref(7, 3);
  for (std::uint32_t level = 1; level <= 3; ++level) {
    for (std::int32_t d = -64; d < 64; ++d) {
      const Torus32 x = (static_cast<Torus32>(d + 64) << (32 - 7 * level)) - g.offset;
      INFO("level " << level << ", digit " << d);
      REQUIRE(ref.digit(x, level) == d);
      REQUIRE(k::gadget_digit_double(g, x, level) == static_cast<double>(d));
    }
  }
}

TEST_CASE("kernel math: test vector, rotation and sample extraction equal core's",
          "[gpu-host]") {
  const std::uint64_t seed = catch_seed(0x63);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  for (const std::uint32_t N : {16u, 256u, 1024u}) {
    INFO("N = " << N);
    const Torus32 mu = k::eighths(1);
    const std::vector<Torus32> flat(N, mu);
    std::vector<Torus32> want(N);
    for (std::uint32_t b = 0; b < 2 * N; b += (N >= 1024 ? 7 : 1)) {
      multiply_by_monomial(flat, (2 * N - b) % (2 * N), want);  // X^{-b} mu
      for (std::uint32_t j = 0; j < N; ++j) REQUIRE(k::test_vector_coefficient(b, j, N, mu) == want[j]);
    }
    const auto a = random_torus(rng, N);
    std::vector<Torus32> rotated(N);
    for (std::uint32_t power = 0; power < 2 * N; power += (N >= 1024 ? 5 : 1)) {
      multiply_by_monomial(a, power, rotated);
      for (std::uint32_t j = 0; j < N; ++j) {
        REQUIRE(k::rotate_minus_one(a.data(), power, j, N) == rotated[j] - a[j]);
        REQUIRE(k::rotate_minus_one_flat(a.data(), power, j, N) == rotated[j] - a[j]);
      }
    }
  }
  for (const Parameters& p : {toy_insecure(), toy_k2_insecure(), default_128()}) {
    INFO("parameter set " << p.name);
    const std::uint32_t N = p.polynomial_size, kk = p.glwe_dimension, n = p.lwe_dimension;
    const auto glwe = random_torus(rng, glwe_size(p));
    const auto glwe2 = random_torus(rng, glwe_size(p));
    std::vector<Torus32> want(kk * N + 1), want2(kk * N + 1);
    sample_extract(glwe, kk, N, want);
    sample_extract(glwe2, kk, N, want2);
    std::vector<Torus32> both = glwe;
    both.insert(both.end(), glwe2.begin(), glwe2.end());
    for (std::uint32_t w = 0; w <= kk * N; ++w) {
      REQUIRE(k::sample_extract_word(glwe.data(), w, kk, N) == want[w]);
      REQUIRE(k::gate_extract_word(both.data(), 1, w, kk, N) == want[w]);
      const Torus32 mux = want[w] + want2[w] + (w == kk * N ? k::eighths(1) : 0);
      REQUIRE(k::gate_extract_word(both.data(), 2, w, kk, N) == mux);
    }
    // A fresh accumulator: zero masks, the test vector rotated by the switched body.
    auto sample = random_torus(rng, n + 1);
    const std::uint32_t log2_2n = gd::Shape{n, kk, N, 1, 1, 1, 1}.log2_2n();
    CHECK((1u << log2_2n) == 2 * N);
    const std::uint32_t b = mod_switch_from_torus(sample[n], 2 * N);
    for (std::uint32_t w = 0; w < (kk + 1) * N; ++w) {
      const Torus32 want_w = w < kk * N ? 0 : k::test_vector_coefficient(b, w - kk * N, N, k::eighths(1));
      REQUIRE(k::accumulator_init_word(sample.data(), w, n, kk, N, log2_2n, k::eighths(1)) == want_w);
    }
  }
}

TEST_CASE("kernel math: key switching with the kernel's digits and layout equals core's",
          "[gpu-host]") {
  const std::uint64_t seed = catch_seed(0x64);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  for (const Parameters& p : {toy_insecure(), toy_k2_insecure(), tfhe_lib_128()}) {
    INFO("parameter set " << p.name);
    const CloudKey& cloud = *keys_for(p).cloud;
    const KeySwitchingKey& ksk = cloud.key_switching_key();
    const std::uint32_t n1 = p.lwe_dimension + 1, kN = p.extracted_lwe_dimension();
    const std::size_t base = std::size_t{1} << p.ks_base_log;
    const k::KeySwitchConstants ks =
        k::make_key_switch(p.ks_base_log, p.ks_level_count, p.lwe_dimension, kN);
    CHECK(k::ksk_coefficient_words(ks) * kN == ksk.data().size());
    for (std::size_t i : {std::size_t{0}, std::size_t{1}, std::size_t{kN - 1}}) {
      for (std::size_t level = 0; level < p.ks_level_count; ++level) {
        for (std::size_t digit = 1; digit < base; ++digit) {
          REQUIRE(k::ksk_sample_index(i, level, digit, p.ks_level_count, base, n1) ==
                  static_cast<std::size_t>(ksk.level(i, level) + (digit - 1) * n1 - ksk.data().data()));
        }
      }
    }
    const std::size_t count = 3;
    const auto inputs = random_torus(rng, count * (kN + 1));
    std::vector<Torus32> want(count * n1);
    key_switch(ksk, inputs, count, want);
    gpu::test::HostEngine engine(cloud);
    // One slice of the input coefficients, and the slices of a small batch (the outputs
    // cleared, then every slice's sums added; got starts with garbage): the same words.
    // Whole tiles, slices shorter than a tile, and spans that are no multiple of one (units
    // of 1, 4 (the default), 8 and 24 coefficients).
    for (const std::uint64_t target_blocks : {0, 2, 10, 1 << 20}) {
      for (const unsigned unit : {32u, 1u, 4u, 8u, 24u}) {
        for (const unsigned oversubscribe : {1u, 4u, 8u}) {
          INFO("target blocks " << target_blocks << ", unit " << unit << ", oversubscribe "
                                << oversubscribe);
          std::vector<Torus32> got = random_torus(rng, count * n1);
          engine.key_switch(inputs, {0, 1, 2}, got, target_blocks, unit, oversubscribe);
          CHECK(got == want);
        }
      }
    }
  }
}

TEST_CASE("kernel math: key switching slices of a small batch", "[gpu-host]") {
  namespace grid = torusgate::gpu::detail::grid;
  // tfhe_lib_128: kN = 1024 (32 tiles of 32), n + 1 = 631 (5 blocks of 128 words).
  // Whole tiles, aiming at the target itself (the slicing before docs/gpu.md section 6.20):
  auto tiles = [](std::uint64_t jobs, std::uint32_t kN, std::uint64_t target) {
    return grid::key_switch_slice_span(jobs, 631, kN, target, 32, 1);
  };
  CHECK(tiles(1, 1024, 264) == 32);  // 5 blocks: 32 slices
  CHECK(grid::key_switch_slices(1024, 32) == 32);
  CHECK(tiles(8, 1024, 264) == 32);  // still 5 blocks
  CHECK(tiles(64, 1024, 264) == 160);  // 40 blocks: 7 slices of 5 tiles
  CHECK(grid::key_switch_slices(1024, 160) == 7);
  CHECK(tiles(424, 1024, 264) == 1024);  // 265 blocks: one slice
  CHECK(tiles(1, 1024, 0) == 1024);
  CHECK(tiles(0, 1024, 264) == 1024);
  // kN not a multiple of the tile: slices of whole tiles, the last one short.
  CHECK(tiles(1, 1000, 264) == 32);
  CHECK(grid::key_switch_slices(1000, 32) == 32);
  CHECK(tiles(1, 20, 264) == 32);  // one tile: one slice
  // Finer units and more blocks than the target: one gate's 5 blocks x 128 slices of 8
  // coefficients = 640 blocks; units of 1 at most ceil(4 x 264 / 5) = 212 slices of 5; a
  // batch with the target's blocks still one slice.
  CHECK(grid::key_switch_slice_span(1, 631, 1024, 264, 8, 4) == 8);
  CHECK(grid::key_switch_slices(1024, 8) == 128);
  CHECK(grid::key_switch_slice_span(1, 631, 1024, 264, 1, 4) == 5);
  CHECK(grid::key_switch_slices(1024, 5) == 205);
  CHECK(grid::key_switch_slice_span(64, 631, 1024, 264, 8, 4) == 40);  // 40 blocks: 26 slices
  CHECK(grid::key_switch_slice_span(424, 631, 1024, 264, 8, 4) == 1024);
  CHECK(grid::key_switch_slice_span(1, 631, 20, 264, 8, 4) == 8);  // 3 slices, the last short
  CHECK(grid::key_switch_slice_span(1, 631, 20, 264, 32, 4) == 32);
  // The defaults (units of 4, 8x the target): one gate 256 slices of 4 (1,280 blocks); 64
  // gates (40 blocks) ceil(2,112 / 40) = 53 slices asked, 52 slices of 20; the target's
  // blocks one slice, which the engine's automatic choice gives the matrix product.
  CHECK(grid::key_switch_slice_unit == 4);
  CHECK(grid::key_switch_slice_oversubscribe == 8);
  CHECK(grid::key_switch_slice_span(1, 631, 1024, 264) == 4);
  CHECK(grid::key_switch_slices(1024, 4) == 256);
  CHECK(grid::key_switch_slice_span(8, 631, 1024, 264) == 4);
  CHECK(grid::key_switch_slice_span(64, 631, 1024, 264) == 20);
  CHECK(grid::key_switch_slices(1024, 20) == 52);
  CHECK(grid::key_switch_slice_span(424, 631, 1024, 264) == 1024);
  CHECK(grid::key_switch_slice_span(1, 631, 1024, 0) == 1024);
}

TEST_CASE("kernel math: layouts of the Fourier key, spectra and accumulators",
          "[gpu-host]") {
  const Parameters p = default_128();
  const std::size_t n = p.lwe_dimension, N = p.polynomial_size, M = N / 2;
  const std::size_t k1 = p.glwe_dimension + 1, rows = p.ggsw_row_count();
  // Fourier-key polynomial (i, q, c) starts where coefficient polynomial (i, q, c) of
  // BootstrappingKey::ggsw(i) row q, column c starts, scaled from N words to M points.
  for (std::size_t i : {std::size_t{0}, std::size_t{5}, n - 1}) {
    for (std::size_t q = 0; q < rows; ++q) {
      for (std::size_t c = 0; c < k1; ++c) {
        const std::size_t coefficient_start = i * ggsw_size(p) + (q * k1 + c) * N;
        REQUIRE(k::bk_spectrum_index(i, q, c, 0, rows, k1, M) == coefficient_start / N * M);
      }
    }
  }
  // Rows of rotation r follow each other with stride M; rotations with stride rows*M.
  CHECK(k::digit_index(2, 3, 7, rows, M) == (2 * rows + 3) * M + 7);
  CHECK(k::digit_index(1, 0, 0, rows, M) == k::digit_index(0, rows - 1, M - 1, rows, M) + 1);
  CHECK(k::product_index(1, 0, 0, k1, M) == k::product_index(0, k1 - 1, M - 1, k1, M) + 1);
  CHECK(k::accumulator_index(1, 0, 0, k1, N) == glwe_size(p));
  // The twist tables: zeta^j and zeta^-j / M.
  const auto tw = k::twist_factors(p.polynomial_size), utw = k::untwist_factors(p.polynomial_size);
  REQUIRE(tw.size() == M);
  for (std::size_t j = 0; j < M; ++j) {
    const double re = tw[j].re * utw[j].re - tw[j].im * utw[j].im;
    const double im = tw[j].re * utw[j].im + tw[j].im * utw[j].re;
    REQUIRE(std::abs(re - 1.0 / M) < 1e-15);
    REQUIRE(std::abs(im) < 1e-15);
  }
  CHECK(tw[M / 2].re == Approx(std::cos(std::numbers::pi / 4)));
}

TEST_CASE("the host stand-in for cuFFT is the DFT in natural order", "[gpu-host]") {
  const std::uint64_t seed = catch_seed(0x65);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  for (std::size_t M = 1; M <= 512; M *= 2) {
    INFO("M = " << M);
    std::vector<k::Complex> x(M);
    for (auto& v : x) v = k::Complex{rng.standard_normal(), rng.standard_normal()};
    const NaturalFft fft(M);
    for (const int sign : {-1, 1}) {
      std::vector<k::Complex> got = x;
      if (sign < 0) fft.forward(got.data());
      else fft.inverse(got.data());
      const auto want = gpu::test::direct_dft(x, sign);
      for (std::size_t i = 0; i < M; ++i) {
        REQUIRE(std::abs(got[i].re - want[i].re) < 1e-9);
        REQUIRE(std::abs(got[i].im - want[i].im) < 1e-9);
      }
    }
    // Unscaled both ways: inverse(forward(x)) = M x.
    std::vector<k::Complex> y = x;
    fft.forward(y.data());
    fft.inverse(y.data());
    for (std::size_t i = 0; i < M; ++i) REQUIRE(std::abs(y[i].re - M * x[i].re) < 1e-9);
  }
}

TEST_CASE("one CMUX step the kernels' way equals core's exact external product",
          "[gpu-host]") {
  const std::uint64_t seed = catch_seed(0x66);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  for (const Parameters& p : every_set()) {
    INFO("parameter set " << p.name);
    const CloudKey& cloud = *keys_for(p).cloud;
    HostEngine engine(cloud);
    const std::size_t N = p.polynomial_size, n = p.lwe_dimension, words = glwe_size(p);
    const std::size_t capacity = 3;
    auto acc = random_torus(rng, capacity * words);
    std::vector<std::uint32_t> powers(capacity * n);
    for (auto& v : powers) v = static_cast<std::uint32_t>(rng.uniform_below(2 * N));
    const auto step = static_cast<std::uint32_t>(rng.uniform_below(n));
    powers[1 * n + step] = 0;  // X^0 - 1 = 0: nothing may change
    powers[2 * n + step] = static_cast<std::uint32_t>(N + rng.uniform_below(N));  // a sign flip
    const auto before = acc;
    engine.cmux_step(step, capacity, powers, acc);
    for (std::size_t r = 0; r < capacity; ++r) {
      INFO("rotation " << r << ", power " << powers[r * n + step] << ", step " << step);
      std::vector<Torus32> rotated(words), product(words), want(words);
      for (std::size_t c = 0; c <= p.glwe_dimension; ++c) {
        const std::span<const Torus32> a(before.data() + r * words + c * N, N);
        multiply_by_monomial(a, powers[r * n + step], std::span<Torus32>(rotated).subspan(c * N, N));
        for (std::size_t j = 0; j < N; ++j) rotated[c * N + j] -= a[j];
      }
      external_product_exact(cloud.bootstrapping_key().ggsw(step), rotated, p, product);
      for (std::size_t w = 0; w < words; ++w) want[w] = before[r * words + w] + product[w];
      const std::vector<Torus32> got(acc.begin() + r * words, acc.begin() + (r + 1) * words);
      REQUIRE(got == want);
    }
  }
}

TEST_CASE("batch plan: buckets, chunk capacity and scratch per rotation", "[gpu-host]") {
  const std::vector<std::uint64_t> buckets = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64};
  for (std::uint64_t r = 1; r <= 64; ++r) {
    const std::uint64_t b = gd::bucket_capacity(r);
    INFO("r = " << r);
    REQUIRE(b >= r);
    REQUIRE(std::find(buckets.begin(), buckets.end(), b) != buckets.end());
    REQUIRE(b == *std::lower_bound(buckets.begin(), buckets.end(), r));  // the smallest
    REQUIRE(2 * b <= 3 * r);  // less than a third of a workspace unused
    REQUIRE(gd::largest_bucket_at_most(r) <= r);
    REQUIRE(gd::bucket_capacity(gd::largest_bucket_at_most(r)) == gd::largest_bucket_at_most(r));
  }
  CHECK(gd::bucket_capacity(1000) == 1024);
  CHECK(gd::bucket_capacity(1025) == 1536);
  CHECK(gd::bucket_capacity(65536) == 65536);
  CHECK(gd::largest_bucket_at_most(0) == 0);
  CHECK(gd::largest_bucket_at_most(100) == 96);
  // tfhe_lib_128: n+1 + n words, 2N words of accumulator, 6 digit spectra and 2 product
  // spectra of 512 points, a work area as large as the digits, kN+1 words and an index.
  const gd::Shape s = gpu::test::shape_of(tfhe_lib_128());
  CHECK(gd::bytes_per_rotation(s) ==
        631 * 4 + 630 * 4 + 2 * 1024 * 4 + 6 * 512 * 16 + 2 * 512 * 16 + 6 * 512 * 16 + 1025 * 4 + 8);
  // The fused engine keeps the spectra in shared memory and needs no linear combinations.
  CHECK(gd::bytes_per_rotation(s, GpuEngine::fused) == 630 * 4 + 2 * 1024 * 4 + 1025 * 4 + 8);
  const std::size_t per = gd::bytes_per_rotation(s);
  CHECK(gd::chunk_capacity(100 * per, per, 1 << 20) == 96);
  CHECK(gd::chunk_capacity(100 * per, per, 50) == 48);
  CHECK(gd::chunk_capacity(per - 1, per, 1 << 20) == 0);
  CHECK(s.bk_words() == tfhe_lib_128().lwe_dimension * ggsw_size(tfhe_lib_128()));
  CHECK(s.ksk_words() == KeySwitchingKey::size(tfhe_lib_128()));
}

TEST_CASE("batch plan: descriptors of a mixed batch and its chunks", "[gpu-host]") {
  using S = CpuStorage;
  test::SequentialFixture f(toy_insecure());
  Csprng rng = seeded_rng(catch_seed(0x67));
  auto A = encrypt(f.be, f.key, std::vector<std::uint8_t>(10, 1), rng);
  auto out = f.be.allocate(40);
  const std::vector<GateOp<S>> batch = {
      gate::nand<S>(A.bits(0, 3), A.bits(3, 3), out.bits(0, 3)),
      gate::not_<S>(A.bits(0, 2), out.bits(3, 2)),
      gate::mux<S>(A.bits(0, 4), A.bits(1, 4), A.bits(2, 4), out.bits(5, 4)),
      gate::constant<S>(true, out.bits(9, 0)),  // empty: left out of the plan
      gate::xor3<S>(A.bits(0, 5), A.bits(1, 5), A.bits(2, 5), out.bits(10, 5)),
      gate::constant<S>(false, out.bits(15, 1)),
  };
  const std::size_t n1 = toy_insecure().lwe_dimension + 1;
  Torus32* base_a = const_cast<Torus32*>(A.storage().batch.data().data());
  Torus32* base_out = const_cast<Torus32*>(out.storage().batch.data().data());
  const gd::BatchPlan plan = gd::build_batch_plan<S>(batch, n1, [](const S* s) {
    return const_cast<Torus32*>(s->batch.data().data());
  });
  REQUIRE(plan.ops.size() == 5);
  REQUIRE(plan.boot_ops.size() == 3);
  CHECK(plan.results == 3 + 2 + 4 + 5 + 1);
  CHECK(plan.jobs == 3 + 4 + 5);
  CHECK(plan.rotations == 3 + 8 + 5);
  CHECK(plan.has_free_gates);
  CHECK(plan.ops[1].kind == k::OpKind::Not);
  CHECK(plan.ops[1].in == base_a);
  CHECK(plan.ops[1].out == base_out + 3 * n1);
  CHECK(plan.ops[4].kind == k::OpKind::Constant);
  CHECK(plan.ops[4].constant == encode_bit(false));
  CHECK(plan.ops[4].first_result == 14);
  const k::BootOpDesc& mux = plan.boot_ops[1];
  CHECK(mux.bootstraps == 2);
  CHECK(mux.first_job == 3);
  CHECK(mux.first_rotation == 3);
  CHECK(mux.first_result == 5);
  CHECK(mux.in[2] == base_a + 2 * n1);
  CHECK(mux.weights[0][0] == 1);
  CHECK(mux.weights[1][0] == -1);
  CHECK(mux.weights[1][2] == 1);
  CHECK(mux.offset_eighths[1] == -1);
  const k::BootOpDesc& x3 = plan.boot_ops[2];
  CHECK(x3.first_rotation == 11);
  CHECK(x3.weights[0][2] == -2);
  // Chunks tile the jobs, never split a MUX, and stay within the capacity.
  for (std::uint64_t capacity : {2u, 3u, 4u, 6u, 16u, 1024u}) {
    INFO("capacity " << capacity);
    std::uint64_t job = 0, rotation = 0, chunks = 0;
    while (job < plan.jobs) {
      const gd::Chunk c = gd::next_chunk(plan, job, capacity);
      REQUIRE(c.job_begin == job);
      REQUIRE(c.rotation_begin == rotation);
      REQUIRE(c.jobs() >= 1);
      REQUIRE(c.rotations() <= capacity);
      REQUIRE(gd::bucket_capacity(c.rotations()) <= std::max<std::uint64_t>(capacity, 2));
      job = c.job_end;
      rotation = c.rotation_end;
      ++chunks;
    }
    CHECK(rotation == plan.rotations);
    if (capacity >= plan.rotations) CHECK(chunks == 1);
    if (capacity == 2) CHECK(chunks == 2 + 4 + 3);  // NANDs 2+1, one MUX each, XOR3s 2+2+1
  }
  // The fused engine's combination_init_at: the words of linear_combination_at then
  // accumulator_init_at for the chunk's rotations; a workspace's rotations past the chunk
  // start from the zero sample. Chunks of at most 6 rotations in workspaces of 6 and 8.
  const gd::Shape shape = gpu::test::shape_of(toy_insecure());
  for (const std::uint64_t C : {6u, 8u}) {
    for (std::uint64_t job = 0; job < plan.jobs;) {
      const gd::Chunk c = gd::next_chunk(plan, job, 6);
      INFO("workspace " << C << ", chunk from rotation " << c.rotation_begin);
      const auto boot_count = static_cast<std::uint32_t>(plan.boot_ops.size());
      std::vector<Torus32> pre(C * n1, 0), acc(C * shape.k1() * shape.N, 7),
          fused_acc(acc.size(), 9);
      std::vector<std::uint32_t> powers(C * shape.n, 7), fused_powers(powers.size(), 9);
      for (std::uint64_t idx = 0; idx < gd::grid::sample_words_size(c.rotations(), shape); ++idx) {
        gd::grid::linear_combination_at(idx, plan.boot_ops.data(), boot_count, c.rotation_begin,
                                        shape, pre.data());
      }
      for (std::uint64_t idx = 0; idx < gd::grid::accumulator_init_size(C, shape); ++idx) {
        gd::grid::accumulator_init_at(idx, pre.data(), C, shape, powers.data(), acc.data());
        gd::grid::combination_init_at(idx, plan.boot_ops.data(), boot_count, c.rotation_begin,
                                      c.rotations(), C, shape, fused_powers.data(),
                                      fused_acc.data());
      }
      CHECK(fused_acc == acc);  // pre is zero past the chunk: the zero sample's words
      CHECK(fused_powers == powers);
      job = c.job_end;
    }
  }
  // An op of more than 2^32-1 bits cannot be described.
  const BitSpan<S> huge{&out.storage(), 0, std::size_t{1} << 32};
  const std::vector<GateOp<S>> too_big = {gate::not_<S>(huge, huge)};
  REQUIRE_INVALID_ARGUMENT(
      gd::build_batch_plan<S>(too_big, n1, [](const S* s) { return const_cast<Torus32*>(s->batch.data().data()); }),
      "at most 2^32-1");
}

using torusgate::gpu::test::cpu_and_mirror;

TEST_CASE("the kernels' whole data flow on the host equals the CPU backend word for word",
          "[gpu-host]") {
  using S = CpuStorage;
  const std::uint64_t seed = catch_seed(0x68);
  INFO("seed " << seed);
  for (const Parameters& p : {toy_insecure(), toy_k2_insecure(), sized_insecure(512, 1),
                              sized_insecure(2048, 2)}) {
    INFO("parameter set " << p.name);
    Csprng rng = seeded_rng(seed);
    test::SequentialFixture f(p);
    HostEngine engine(*keys_for(p).cloud);
    // Every gate kind on every input combination, one mixed batch.
    const test::TruthTableInputs t = test::truth_table_inputs();
    auto A = encrypt(f.be, f.key, t.a, rng), B = encrypt(f.be, f.key, t.b, rng),
         C = encrypt(f.be, f.key, t.c, rng);
    auto batch_of = [&](const BitBuffer<S>& out) {
      return test::every_gate_batch<S>(A.bits(), B.bits(), C.bits(), out.bits());
    };
    const std::size_t bits = 8 * test::all_specs().size();
    const auto [cpu, whole] = cpu_and_mirror(f, engine, bits, 1 << 20, batch_of);
    CHECK(engine.chunks_run == 1);
    CHECK(whole == cpu);
    test::check_every_gate(decrypt_bits(f.key, whole), t);
    // Chunked: chunks of 2, 3 and 6 rotations give the same words.
    for (std::uint64_t capacity : {2u, 3u, 6u}) {
      INFO("capacity " << capacity);
      engine.chunks_run = 0;
      const auto [cpu2, chunked] = cpu_and_mirror(f, engine, bits, capacity, batch_of);
      CHECK(chunked == whole);
      CHECK(cpu2 == cpu);
      CHECK(engine.chunks_run > 1);
    }
  }
}

TEST_CASE("the kernels' data flow equals the CPU backend on the real parameter sets",
          "[gpu-host]") {
  using S = CpuStorage;
  const std::uint64_t seed = catch_seed(0x69);
  INFO("seed " << seed);
  for (const Parameters& p : {tfhe_lib_128(), default_128()}) {
    INFO("parameter set " << p.name);
    Csprng rng = seeded_rng(seed);
    test::SequentialFixture f(p);
    HostEngine engine(*keys_for(p).cloud);
    auto A = encrypt(f.be, f.key, std::vector<std::uint8_t>{0, 1}, rng);
    auto B = encrypt(f.be, f.key, std::vector<std::uint8_t>{1, 1}, rng);
    auto C = encrypt(f.be, f.key, std::vector<std::uint8_t>{0, 0}, rng);
    auto batch_of = [&](const BitBuffer<S>& out) {
      return std::vector<GateOp<S>>{gate::nand<S>(A.bits(), B.bits(), out.bits(0, 2)),
                                    gate::mux<S>(A.bits(0, 1), B.bits(0, 1), C.bits(0, 1), out.bits(2, 1)),
                                    gate::xor3<S>(A.bits(1, 1), B.bits(1, 1), C.bits(1, 1), out.bits(3, 1))};
    };
    const auto [cpu, mirror] = cpu_and_mirror(f, engine, 4, 4, batch_of);
    CHECK(engine.chunks_run == 2);
    CHECK(mirror == cpu);
    CHECK(decrypt_bits(f.key, mirror) == std::vector<std::uint8_t>{1, 0, 0, 0});
  }
}

TEST_CASE("CudaBackend options are checked before any CUDA call", "[gpu-host]") {
  const Parameters p = tfhe_lib_128();
  CHECK_NOTHROW(validate_cuda_options(CudaOptions{}, p));
  CudaOptions o;
  o.device = -1;
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p), "device=-1");
  o = CudaOptions{};
  o.max_cached_workspaces = 0;
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p), "max_cached_workspaces=0");
  o.max_cached_workspaces = 65;
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p), "1..64");
  o = CudaOptions{};
  o.engine = GpuEngine::cufft;  // the budget of the cuFFT engine's rotations
  const std::size_t per = gd::bytes_per_rotation(gpu::test::shape_of(p));
  o.memory_budget_bytes = 2 * per - 1;
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p), "two blind rotations");
  o.memory_budget_bytes = 2 * per;
  CHECK_NOTHROW(validate_cuda_options(o, p));
  // The fused engine: its launch shapes, the sets it runs, its own budget per rotation.
  o = CudaOptions{};
  o.engine = GpuEngine::fused;
  for (const std::uint32_t groups : {0u, 1u, 2u, 6u}) {
    o.fused_groups = groups;
    CHECK_NOTHROW(validate_cuda_options(o, p));
  }
  o.fused_groups = 3;
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p),
                           "fused_groups=3 but parameter set 'tfhe_lib_128' takes 0 (automatic), 1, 2 (k+1) or 6");
  o.fused_groups = 0;
  o.fused_rotations_per_block = 8;
  CHECK_NOTHROW(validate_cuda_options(o, p));
  o.fused_rotations_per_block = 9;
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p),
                           "fused_rotations_per_block=9 but expected 0 (automatic) to 8");
  o.fused_rotations_per_block = 0;
  // Clusters: k+1 or (k+1)l blocks up to 8, with one group and one rotation per block.
  for (const std::uint32_t blocks : {0u, 1u, 2u, 6u}) {
    o.fused_cluster_blocks = blocks;
    CHECK_NOTHROW(validate_cuda_options(o, p));
  }
  o.fused_cluster_blocks = 3;
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p),
                           "fused_cluster_blocks=3 but parameter set 'tfhe_lib_128' takes 0 "
                           "(automatic), 1 (none), 2 (k+1) or 6 ((k+1)l)");
  Parameters deep = p;
  deep.bk_level_count = 5;
  deep.name = "deep";
  o.fused_cluster_blocks = 10;
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, deep),
                           "takes 0 (automatic), 1 (none), 2 (k+1) ((k+1)l = 10 is above the "
                           "portable cluster size of 8)");
  o.fused_cluster_blocks = 6;
  o.fused_groups = 2;
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p),
                           "fused_cluster_blocks=6 runs one group and one rotation per block; "
                           "fused_groups=2 and fused_rotations_per_block=0 must be 0 or 1");
  o.fused_groups = 1;
  o.fused_rotations_per_block = 1;
  CHECK_NOTHROW(validate_cuda_options(o, p));
  o.fused_groups = o.fused_rotations_per_block = o.fused_cluster_blocks = 0;
  // Two rotations per thread: k = 1, one group, one rotation slot, no cluster.
  for (const std::uint32_t lanes : {0u, 1u, 2u}) {
    o.fused_lanes = lanes;
    CHECK_NOTHROW(validate_cuda_options(o, p));
  }
  o.fused_lanes = 3;
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p),
                           "fused_lanes=3 but parameter set 'tfhe_lib_128' takes 0 (automatic), 1 or 2");
  o.fused_lanes = 2;
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, toy_k2_insecure()),
                           "fused_lanes=2 but parameter set 'toy_k2_INSECURE' takes 0 (automatic) or 1 "
                           "(2 rotations per thread need k = 1)");
  o.fused_cluster_blocks = 2;
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p),
                           "fused_lanes=2 runs one group, one rotation slot per block and no cluster; "
                           "fused_groups=0, fused_rotations_per_block=0 and fused_cluster_blocks=2 must "
                           "be 0 or 1 with it");
  o.fused_cluster_blocks = 0;
  o.fused_groups = 2;
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p), "fused_groups=2, fused_rotations_per_block=0");
  o.fused_groups = 1;
  o.fused_rotations_per_block = 1;
  o.fused_cluster_blocks = 1;
  CHECK_NOTHROW(validate_cuda_options(o, p));
  o.fused_groups = o.fused_rotations_per_block = o.fused_cluster_blocks = o.fused_lanes = 0;
  // Points per thread of a cluster's transforms: 8, or 4 (wide clusters: N = 512 .. 2048,
  // where a cluster runs, chosen or forced).
  for (const std::uint32_t points : {0u, 4u, 8u}) {
    o.fused_cluster_points = points;
    CHECK_NOTHROW(validate_cuda_options(o, p));
  }
  o.fused_cluster_points = 3;
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p),
                           "fused_cluster_points=3 but expected 0 (automatic), 8 or 4 (wide "
                           "clusters)");
  o.fused_cluster_points = 4;
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, toy_insecure()),
                           "fused_cluster_points=4 but parameter set 'toy_INSECURE' has N=");
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, toy_insecure()),
                           "wide clusters run N = 512, 1024 or 2048");
  o.fused_cluster_blocks = 1;
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p),
                           "fused_cluster_points=4 sets the points per thread of a cluster, but "
                           "fused_cluster_blocks=1, fused_groups=0, fused_rotations_per_block=0 "
                           "and fused_lanes=0 run none");
  o.fused_cluster_blocks = 0;
  o.fused_lanes = 2;
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p), "and fused_lanes=2 run none");
  o.fused_lanes = 0;
  o.fused_cluster_blocks = 6;
  CHECK_NOTHROW(validate_cuda_options(o, p));
  o.fused_cluster_blocks = 0;
  o.fused_cluster_points = 0;
  // Who sums a cluster's products: 2 (every block its own column) needs clusters of (k+1)l
  // blocks with two inbox buffers, forced or automatic.
  for (const std::uint32_t sums : {0u, 1u, 2u}) {
    o.fused_cluster_sums = sums;
    CHECK_NOTHROW(validate_cuda_options(o, p));
    CHECK_NOTHROW(validate_cuda_options(o, p, 2));
  }
  o.fused_cluster_blocks = 6;
  o.fused_cluster_points = 4;
  CHECK_NOTHROW(validate_cuda_options(o, p));
  o.fused_cluster_points = 0;
  o.fused_cluster_sums = 3;
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p),
                           "fused_cluster_sums=3 but expected 0 (automatic), 1 (each column's "
                           "owner sums it) or 2 (every block sums the column its row decomposes)");
  o.fused_cluster_sums = 2;
  for (const std::uint32_t blocks : {1u, 2u}) {
    o.fused_cluster_blocks = blocks;
    REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p),
                             "fused_cluster_sums=2 sums in every block of a cluster of (k+1)l=6 "
                             "blocks, but fused_cluster_blocks=" + std::to_string(blocks) +
                                 ", fused_groups=0, fused_rotations_per_block=0 and "
                                 "fused_lanes=0 (fused_cluster_blocks must be 6, or all four 0)");
  }
  o.fused_cluster_blocks = 0;
  o.fused_lanes = 2;
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p), "and fused_lanes=2 (fused_cluster_blocks");
  o.fused_lanes = 0;
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, sized_insecure(2048, 2)),
                           "fused_cluster_sums=2 needs clusters of (k+1)l blocks with two inbox "
                           "buffers, but parameter set 'test_N2048_k2_INSECURE' has (k+1)l=6, "
                           "whose blocks would need 282 KiB of shared memory with two inbox "
                           "buffers (at most 227); 0 or 1 sums by owners");
  Parameters rows9 = sized_insecure(1024, 2);
  rows9.bk_level_count = 3;
  rows9.name = "test_rows9_INSECURE";
  CHECK_NOTHROW(validate_cuda_options(CudaOptions{}, rows9));
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, rows9),
                           "has (k+1)l=9, above the portable cluster size of 8; 0 or 1 sums by "
                           "owners");
  o.fused_cluster_sums = 0;
  // Bundled keys (2): the fused engine, an unrolled key, clusters of 8 points per thread.
  CHECK(CudaOptions{}.fused_bundle == 0);
  for (const std::uint32_t bundle : {0u, 1u, 2u}) {
    o.fused_bundle = bundle;
    CHECK_NOTHROW(validate_cuda_options(o, p, 3));
    CHECK_NOTHROW(validate_cuda_options(o, p, 2));
  }
  o.fused_cluster_blocks = 6;
  CHECK_NOTHROW(validate_cuda_options(o, p, 3));
  o.fused_cluster_points = 8;
  CHECK_NOTHROW(validate_cuda_options(o, p, 3));
  o.fused_cluster_points = 4;
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p, 3),
                           "fused_bundle=2 runs on clusters of 8 points per thread, but "
                           "fused_cluster_points=4 (wide clusters have no bundled steps; 0 or 8 "
                           "with it)");
  o.fused_cluster_points = 0;
  o.fused_cluster_blocks = 1;
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p, 3),
                           "fused_bundle=2 runs on clusters, but fused_cluster_blocks=1, "
                           "fused_groups=0, fused_rotations_per_block=0 and fused_lanes=0 run "
                           "none (fused_cluster_blocks above 1, or all four 0)");
  o.fused_cluster_blocks = 0;
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p),
                           "fused_bundle=2 bundles the fused engine's group steps, but the "
                           "bootstrapping key is not unrolled (unroll 1); it needs engine=fused "
                           "and a key in pairs or threes (0 or 1 otherwise)");
  o.engine = GpuEngine::cufft;
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p, 3),
                           "fused_bundle=2 bundles the fused engine's group steps, but "
                           "engine=cufft");
  o.engine = GpuEngine::fused;
  o.fused_bundle = 3;
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p, 3),
                           "fused_bundle=3 but expected 0 (automatic), 1 (never) or 2 (an "
                           "unrolled key's group steps on bundled keys where a chunk runs on a "
                           "cluster)");
  o.fused_bundle = 1;
  CHECK_NOTHROW(validate_cuda_options(o, p));  // never: fine with any key
  // The rotation started while its bundled keys are made (2): only where keys are bundled,
  // fused_bundle 2 with pairs or threes, or a key in fours.
  CHECK(CudaOptions{}.fused_bundle_overlap == 0);
  for (const std::uint32_t overlap : {0u, 1u}) {
    o.fused_bundle_overlap = overlap;
    CHECK_NOTHROW(validate_cuda_options(o, p));
    CHECK_NOTHROW(validate_cuda_options(o, p, 3));
  }
  o.fused_bundle_overlap = 2;
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p, 3),
                           "fused_bundle_overlap=2 starts a rotation while its bundled keys are "
                           "made, but fused_bundle=1 with a key in threes, so nothing is bundled (it "
                           "needs engine=fused and fused_bundle=2 with a key in pairs or threes, "
                           "or a key in fours; 0 or 1 otherwise)");
  o.fused_bundle = 0;
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p, 2),
                           "but fused_bundle=0 with a key in pairs, so nothing is bundled");
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p),
                           "but the bootstrapping key is not unrolled (unroll 1), so nothing is bundled");
  CHECK_NOTHROW(validate_cuda_options(o, p, 4));
  o.fused_bundle = 2;
  CHECK_NOTHROW(validate_cuda_options(o, p, 2));
  CHECK_NOTHROW(validate_cuda_options(o, p, 3));
  o.engine = GpuEngine::cufft;
  o.fused_bundle = 0;
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p, 4), "made, but engine=cufft, so nothing is bundled");
  o.engine = GpuEngine::fused;
  o.fused_bundle_overlap = 3;
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p, 3),
                           "fused_bundle_overlap=3 but expected 0 (automatic), 1 (never) or 2 (the "
                           "rotation starts while its bundled keys are made)");
  o.fused_bundle_overlap = 0;
  o.fused_bundle = 0;
  o.memory_budget_bytes = 2 * gd::bytes_per_rotation(gpu::test::shape_of(p), GpuEngine::fused);
  CHECK_NOTHROW(validate_cuda_options(o, p));
  Parameters wide = sized_insecure(1024, 3);
  wide.name = "test_k3_INSECURE";
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, wide),
                           "engine=fused cannot run parameter set 'test_k3_INSECURE' (k=3, N=1024)");
  o = CudaOptions{};
  o.engine = GpuEngine::cufft;
  CHECK_NOTHROW(validate_cuda_options(o, wide));
  CHECK(CudaOptions{}.engine == GpuEngine::fused);  // the default, where it runs
  CHECK(CudaOptions{}.key_switching == GpuKeySwitching::automatic);
  for (const GpuKeySwitching ks :
       {GpuKeySwitching::gather, GpuKeySwitching::tensor_core, GpuKeySwitching::automatic}) {
    o.key_switching = ks;
    CHECK_NOTHROW(validate_cuda_options(o, wide));
  }
  o.engine = static_cast<GpuEngine>(7);
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p), "engine=7");
  o = CudaOptions{};
  o.key_switching = static_cast<GpuKeySwitching>(9);
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p), "key_switching=9");
  CHECK(std::string(gpu_engine_name(GpuEngine::fused)) == "fused");
  CHECK(std::string(gpu_key_switching_name(GpuKeySwitching::tensor_core)) == "tensor_core");
  CHECK(std::string(gpu_key_switching_name(GpuKeySwitching::automatic)) == "automatic");
  o = CudaOptions{};
  o.transfer = static_cast<GpuTransfer>(5);
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p),
                           "transfer=5 but expected GpuTransfer::direct or GpuTransfer::pinned");
  o = CudaOptions{};
  o.transfer = GpuTransfer::pinned;
  for (const std::size_t bad : {std::size_t{0}, std::size_t{65532}, std::size_t{65538},
                                (std::size_t{1} << 30) + 4}) {
    o.staging_bytes = bad;
    REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p),
                             "staging_bytes=" + std::to_string(bad) +
                                 " but expected a multiple of 4 from 65536 (64 KiB)");
  }
  for (const std::size_t good : {std::size_t{65536}, std::size_t{65540}, std::size_t{1} << 30}) {
    o.staging_bytes = good;
    CHECK_NOTHROW(validate_cuda_options(o, p));
  }
  CHECK(std::string(gpu_transfer_name(GpuTransfer::pinned)) == "pinned");
  CHECK(std::string(gpu_transfer_name(GpuTransfer::direct)) == "direct");
  // An unrolled key (pairs or threes): no lanes or staged rotations; everything else (wide
  // clusters too) as before.
  o = CudaOptions{};
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p, 5), "unroll=5");
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p, 0), "unroll=0");
  // Key bits in fours: the fused engine's bundled clusters of 8 points per thread only (or the
  // cuFFT engine, any options).
  CHECK_NOTHROW(validate_cuda_options(o, p, 4));
  o.fused_bundle = 2;
  o.fused_cluster_blocks = 2;
  o.fused_cluster_points = 8;
  CHECK_NOTHROW(validate_cuda_options(o, p, 4));
  o.fused_cluster_blocks = 6;
  CHECK_NOTHROW(validate_cuda_options(o, p, 4));
  const std::string fours_only =
      "a bootstrapping key in fours (unroll 4) runs on the fused engine's bundled clusters of 8 "
      "points per thread only, but fused_bundle=";
  // (Staged rotations: refused for every unrolled key first; lanes: by the fours' check.)
  const std::string one_lane = "an unrolled bootstrapping key runs one rotation slot per block";
  for (const auto& [field, value, why] :
       std::vector<std::tuple<std::uint32_t CudaOptions::*, std::uint32_t, std::string>>{
           {&CudaOptions::fused_bundle, 1, fours_only},
           {&CudaOptions::fused_cluster_blocks, 1, fours_only},
           {&CudaOptions::fused_groups, 6, fours_only},
           {&CudaOptions::fused_cluster_points, 4, fours_only},
           {&CudaOptions::fused_rotations_per_block, 2, one_lane},
           {&CudaOptions::fused_lanes, 2, fours_only}}) {
    CudaOptions bad = o;
    bad.fused_cluster_blocks = 0;
    bad.*field = value;
    INFO("field value " << value);
    REQUIRE_INVALID_ARGUMENT(validate_cuda_options(bad, p, 4), why);
  }
  o = CudaOptions{};
  o.engine = GpuEngine::cufft;
  o.fused_cluster_blocks = 1;  // no cluster: nothing the cuFFT engine needs
  CHECK_NOTHROW(validate_cuda_options(o, p, 4));
  o.engine = GpuEngine::fused;
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p, 4), "or engine=cufft)");
  o = CudaOptions{};
  for (const std::uint32_t unroll : {2u, 3u}) {
    INFO("unroll " << unroll);
    o = CudaOptions{};
    CHECK_NOTHROW(validate_cuda_options(o, p, unroll));
    // Two lanes run an unrolled key's group steps too (k = 1); staged rotations do not.
    o.fused_lanes = 2;
    CHECK_NOTHROW(validate_cuda_options(o, p, unroll));
    o.fused_cluster_blocks = 2;
    REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p, unroll),
                             "fused_lanes=2 runs one group, one rotation slot per block and no "
                             "cluster");
    o = CudaOptions{};
    o.fused_lanes = 2;
    REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, toy_k2_insecure(), unroll),
                             "rotations per thread need k = 1");
    o = CudaOptions{};
    o.fused_rotations_per_block = 2;
    CHECK_NOTHROW(validate_cuda_options(o, p));
    REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p, unroll),
                             "an unrolled bootstrapping key runs one rotation slot per block (0 or 1)");
    o = CudaOptions{};
    o.fused_cluster_points = 4;
    o.fused_cluster_blocks = 2;
    CHECK_NOTHROW(validate_cuda_options(o, p, unroll));
    o = CudaOptions{};
    for (const std::uint32_t groups : {1u, 2u, 6u}) {
      o.fused_groups = groups;
      o.fused_rotations_per_block = 1;
      CHECK_NOTHROW(validate_cuda_options(o, p, unroll));
    }
    o = CudaOptions{};
    o.fused_cluster_blocks = 6;
    o.fused_cluster_points = 8;
    CHECK_NOTHROW(validate_cuda_options(o, p, unroll));
  }
  o = CudaOptions{};
  // The constructor checks its arguments first, with or without CUDA and a device.
  REQUIRE_INVALID_ARGUMENT(CudaBackend(nullptr), "the cloud key is null");
  o.device = -3;
  REQUIRE_INVALID_ARGUMENT(CudaBackend(keys_for(toy_insecure()).cloud, o), "device=-3");
  o.device = 0;
  o.fused_rotations_per_block = 2;
  REQUIRE_INVALID_ARGUMENT(CudaBackend(keys_for(toy_insecure(), 2).cloud, o),
                           "an unrolled bootstrapping key runs");
  REQUIRE_INVALID_ARGUMENT(CudaBackend(keys_for(toy_insecure(), 3).cloud, o),
                           "an unrolled bootstrapping key runs");
}

TEST_CASE("CudaOptions::fused_key_stage: the standard key's one-group blocks on the fused "
          "engine at N = 512 .. 2048; the rest refused with the reason",
          "[gpu-host]") {
  const Parameters p = tfhe_lib_128();
  CudaOptions o;
  CHECK(o.fused_key_stage == 0);  // automatic: never, until a GPU has measured it
  for (const std::uint32_t stage : {0u, 1u, 2u}) {
    o.fused_key_stage = stage;
    CHECK_NOTHROW(validate_cuda_options(o, p));
  }
  o.fused_lanes = 2;  // two lanes stage too
  CHECK_NOTHROW(validate_cuda_options(o, p));
  o.fused_lanes = 0;
  o.fused_groups = 1;  // so does a forced 1x1
  o.fused_rotations_per_block = 1;
  CHECK_NOTHROW(validate_cuda_options(o, p));
  o.fused_key_stage = 3;
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p),
                           "fused_key_stage=3 but expected 0 (automatic), 1 (never) or 2 (the key "
                           "rows of one-group blocks through a stage the TMA fills)");
  o.fused_key_stage = 2;
  o.fused_groups = 2;
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p),
                           "fused_key_stage=2 stages the key rows of blocks of one group and one "
                           "rotation slot, but fused_cluster_blocks=0, fused_groups=2 and "
                           "fused_rotations_per_block=1 force blocks that never stage (each 0 or "
                           "1 with it)");
  o.fused_groups = 0;
  o.fused_rotations_per_block = 4;
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p), "fused_rotations_per_block=4");
  o.fused_rotations_per_block = 0;
  o.fused_cluster_blocks = 6;
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p), "fused_cluster_blocks=6");
  o.fused_cluster_blocks = 0;
  CHECK_NOTHROW(validate_cuda_options(o, p));  // clusters chosen for small chunks stay unstaged
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p, 3),
                           "fused_key_stage=2 stages the fused engine's key rows for the standard "
                           "key, but the bootstrapping key is unrolled (unroll 3); it needs "
                           "engine=fused and unroll 1 (0 or 1 otherwise)");
  o.engine = GpuEngine::cufft;
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, p), "key, but engine=cufft; it needs");
  o.engine = GpuEngine::fused;
  REQUIRE_INVALID_ARGUMENT(validate_cuda_options(o, toy_insecure()),
                           "fused_key_stage=2 runs the kernels of N = 512, 1024 or 2048, but "
                           "parameter set 'toy_INSECURE' has N=256 (0 or 1 for it)");
  CHECK_NOTHROW(validate_cuda_options(o, sized_insecure(2048, 2)));  // k = 2 at 1x1
  o.fused_key_stage = 1;  // never: fine with anything
  CHECK_NOTHROW(validate_cuda_options(o, toy_insecure()));
  CHECK_NOTHROW(validate_cuda_options(o, p, 3));
}

TEST_CASE("CudaBackend where no GPU can be used: a clear SystemError, never an abort",
          "[gpu-host]") {
  const auto cloud = keys_for(toy_insecure()).cloud;
  if (gpu::devices().empty()) {
    REQUIRE_THROWS_AS(CudaBackend(cloud), SystemError);
    const std::string why = gpu::built_with_cuda() ? "no CUDA device is available"
                                                   : "built without CUDA";
    REQUIRE_THROWS_WITH(CudaBackend(cloud), Catch::Matchers::Contains(why));
  } else {
    // A device exists (a GPU machine): the backend opens it; tests_gpu checks the rest.
    CudaBackend be(cloud);
    CHECK(be.name().rfind("gpu(", 0) == 0);
    CHECK(be.device_key_bytes() > 0);
  }
}

TEST_CASE("host_copy (the host side of pinned transfers) copies every byte, split or not",
          "[gpu-host]") {
  Csprng rng = seeded_rng(catch_seed(0x40c));
  // Below, at and above the size it splits from (4 MiB), and odd sizes whose slices do not
  // divide evenly.
  for (const std::size_t bytes : {std::size_t{0}, std::size_t{1}, std::size_t{4093},
                                  (std::size_t{4} << 20) - 1, std::size_t{4} << 20,
                                  (std::size_t{4} << 20) + 3, (std::size_t{9} << 20) + 4097,
                                  std::size_t{33} << 20}) {
    INFO("bytes " << bytes);
    std::vector<unsigned char> src(bytes + 2), dst(bytes + 2, 0x5a);
    for (auto& b : src) b = static_cast<unsigned char>(rng.uniform_u32());
    gpu::detail::host_copy(dst.data() + 1, src.data() + 1, bytes);
    CHECK(std::equal(src.begin() + 1, src.end() - 1, dst.begin() + 1));
    CHECK(dst.front() == 0x5a);  // nothing outside the range
    CHECK(dst.back() == 0x5a);
  }
}
