// Negacyclic FFT engines (PortableFft, FftwFft, SimdFft) against the exact schoolbook product:
// single products, sums of (k+1)l products accumulated in the Fourier domain as blind
// rotation does, inverse_add, signed reading of torus values, size validation; SimdFft's
// vector widths word for word against each other; the prefetch queue the transforms drain.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "test_support.hpp"
#include "torusgate/core/fft.hpp"
#include "torusgate/core/prefetch.hpp"
#include "torusgate/core/simd_fft.hpp"
#include "torusgate/core/glwe.hpp"
#include "torusgate/cpu/fftw_fft.hpp"

using namespace torusgate;
using torusgate::test::catch_seed;
using torusgate::test::seeded_rng;

namespace {

std::vector<std::int32_t> random_digits(Csprng& rng, std::size_t N, std::uint32_t base_log) {
  const std::int64_t half = std::int64_t{1} << (base_log - 1);
  std::vector<std::int32_t> d(N);
  for (auto& x : d) {
    x = static_cast<std::int32_t>(static_cast<std::int64_t>(rng.uniform_below(2 * half)) - half);
  }
  return d;
}

std::vector<Torus32> random_torus(Csprng& rng, std::size_t N) {
  std::vector<Torus32> p(N);
  for (auto& x : p) x = rng.uniform_torus();
  return p;
}

// Largest |got - want| as signed 32-bit differences.
std::int64_t max_error(const std::vector<Torus32>& got, const std::vector<Torus32>& want) {
  std::int64_t worst = 0;
  for (std::size_t j = 0; j < got.size(); ++j) {
    worst = std::max<std::int64_t>(worst, std::abs(static_cast<std::int64_t>(
                                              static_cast<std::int32_t>(got[j] - want[j]))));
  }
  return worst;
}

// sum_q a_q * b_q through the engine: spectra multiplied and accumulated, one inverse.
template <class Engine>
std::vector<Torus32> fourier_sum(const Engine& fft, const std::vector<std::vector<std::int32_t>>& a,
                                 const std::vector<std::vector<Torus32>>& b) {
  const std::size_t N = fft.polynomial_size();
  AlignedVector<double> sa(N), sb(N), acc(N, 0.0);
  for (std::size_t q = 0; q < a.size(); ++q) {
    fft.forward(std::span<const std::int32_t>(a[q]), std::span<double>(sa));
    fft.forward(std::span<const Torus32>(b[q]), std::span<double>(sb));
    fourier_multiply_add(sa, sb, acc);
  }
  std::vector<Torus32> out(N, 0xdeadbeefu);
  fft.inverse(acc, out);
  return out;
}

std::vector<Torus32> exact_sum(const std::vector<std::vector<std::int32_t>>& a,
                               const std::vector<std::vector<Torus32>>& b) {
  const std::size_t N = a[0].size();
  std::vector<Torus32> sum(N, 0), product(N);
  for (std::size_t q = 0; q < a.size(); ++q) {
    negacyclic_multiply_exact(a[q], b[q], product);
    for (std::size_t j = 0; j < N; ++j) sum[j] += product[j];
  }
  return sum;
}

}  // namespace

TEMPLATE_TEST_CASE("FFT product of Bg=2^7 digits and torus values is exact", "[fft]",
                   PortableFft, FftwFft, SimdFft) {
  const std::uint64_t seed = catch_seed(0xff7);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  for (std::uint32_t N : {256u, 512u, 1024u, 2048u}) {
    const TestType fft(N);
    INFO(fft.name() << " N " << N);
    REQUIRE(fft.polynomial_size() == N);
    REQUIRE(fft.spectrum_size() == N);
    for (int trial = 0; trial < 3; ++trial) {
      const std::vector<std::vector<std::int32_t>> a = {random_digits(rng, N, 7)};
      const std::vector<std::vector<Torus32>> b = {random_torus(rng, N)};
      const auto got = fourier_sum(fft, a, b);
      const auto want = exact_sum(a, b);
      INFO("max error " << max_error(got, want));
      CHECK(got == want);
    }
    // Extreme digits: every digit -Bg/2, every torus value -1/2 (the largest magnitudes).
    const std::vector<std::vector<std::int32_t>> a = {std::vector<std::int32_t>(N, -64)};
    const std::vector<std::vector<Torus32>> b = {std::vector<Torus32>(N, 0x80000000u)};
    const auto got = fourier_sum(fft, a, b);
    INFO("max error (extreme inputs) " << max_error(got, exact_sum(a, b)));
    CHECK(got == exact_sum(a, b));
  }
}

TEMPLATE_TEST_CASE("FFT sum of (k+1)l = 6 products accumulated in the Fourier domain is exact",
                   "[fft]", PortableFft, FftwFft, SimdFft) {
  const std::uint64_t seed = catch_seed(0xf6);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  for (std::uint32_t N : {256u, 512u, 1024u, 2048u}) {
    const TestType fft(N);
    INFO(fft.name() << " N " << N);
    for (int trial = 0; trial < 2; ++trial) {
      std::vector<std::vector<std::int32_t>> a;
      std::vector<std::vector<Torus32>> b;
      for (int q = 0; q < 6; ++q) {
        a.push_back(random_digits(rng, N, 7));
        b.push_back(random_torus(rng, N));
      }
      const auto got = fourier_sum(fft, a, b);
      const auto want = exact_sum(a, b);
      INFO("max error " << max_error(got, want));
      CHECK(got == want);
    }
  }
}

TEMPLATE_TEST_CASE("FFT products with Bg=2^10 digits at N=1024", "[fft]", PortableFft, FftwFft, SimdFft) {
  // Bg = 2^10 is the gadget base of tfhe_lib_80 and default_128 ((k+1)l = 4 and 6 rows).
  const std::uint64_t seed = catch_seed(0xf10);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  const TestType fft(1024);
  std::int64_t worst_single = 0, worst_sum = 0;
  for (int trial = 0; trial < 4; ++trial) {
    const std::vector<std::vector<std::int32_t>> a = {random_digits(rng, 1024, 10)};
    const std::vector<std::vector<Torus32>> b = {random_torus(rng, 1024)};
    worst_single = std::max(worst_single, max_error(fourier_sum(fft, a, b), exact_sum(a, b)));
    std::vector<std::vector<std::int32_t>> a6;
    std::vector<std::vector<Torus32>> b6;
    for (int q = 0; q < 6; ++q) {
      a6.push_back(random_digits(rng, 1024, 10));
      b6.push_back(random_torus(rng, 1024));
    }
    worst_sum = std::max(worst_sum, max_error(fourier_sum(fft, a6, b6), exact_sum(a6, b6)));
  }
  INFO(fft.name() << ": max error of one product " << worst_single << ", of a sum of 6 "
                  << worst_sum);
  // Exact as well: products are at most 2^9 * 2^31 * 1024 * 6 < 2^53 in magnitude and the
  // rounding errors of the double-precision transforms stay far below 1/2 (measured error 0
  // over 200 random trials per case, both engines, N = 1024 and 2048, one product and sums
  // of 6). Were this to fail by one unit of 2^-32, it would be harmless noise, but a
  // regression in the engines all the same.
  CHECK(worst_single == 0);
  CHECK(worst_sum == 0);
}

TEMPLATE_TEST_CASE("FFT inverse_add adds to the polynomial", "[fft]", PortableFft, FftwFft, SimdFft) {
  const std::uint64_t seed = catch_seed(0xadd);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  const std::uint32_t N = 512;
  const TestType fft(N);
  const auto a = random_digits(rng, N, 7);
  const auto b = random_torus(rng, N);
  const auto start = random_torus(rng, N);
  AlignedVector<double> sa(N), sb(N), acc(N, 0.0);
  fft.forward(std::span<const std::int32_t>(a), std::span<double>(sa));
  fft.forward(std::span<const Torus32>(b), std::span<double>(sb));
  fourier_multiply_add(sa, sb, acc);
  std::vector<Torus32> poly = start, product(N);
  fft.inverse_add(acc, poly);
  negacyclic_multiply_exact(a, b, product);
  for (std::size_t j = 0; j < N; ++j) REQUIRE(poly[j] == start[j] + product[j]);
  // inverse after forward of an integer polynomial gives it back.
  std::vector<Torus32> round_trip(N);
  fft.forward(std::span<const Torus32>(b), std::span<double>(sb));
  fft.inverse(sb, round_trip);
  CHECK(round_trip == b);
  // The spectrum is left unchanged by inverse (const input).
  const AlignedVector<double> before = sb;
  fft.inverse(sb, round_trip);
  CHECK(sb == before);
}

TEMPLATE_TEST_CASE("FFT forward_decomposed at a stride: the same spectra, the gaps untouched",
                   "[fft]", PortableFft, FftwFft, SimdFft) {
  const std::uint64_t seed = catch_seed(0x5d);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  const std::size_t N = 1024, l = 3, gap = 16, stride = N + gap;
  const TestType fft(N);
  const GadgetDecomposition gadget(7, l);
  const auto poly = random_torus(rng, N);
  std::vector<double> packed(l * N), spaced((l - 1) * stride + N, -0.5);
  fft.forward_decomposed(poly, gadget, packed);
  fft.forward_decomposed(poly, gadget, spaced, stride);
  for (std::size_t p = 0; p < l; ++p) {
    INFO("level " << p + 1);
    CHECK(std::equal(packed.begin() + p * N, packed.begin() + (p + 1) * N,
                     spaced.begin() + p * stride));
    if (p + 1 < l) {
      CHECK(std::all_of(spaced.begin() + p * stride + N, spaced.begin() + (p + 1) * stride,
                        [](double x) { return x == -0.5; }));
    }
  }
}

TEMPLATE_TEST_CASE("FFT forward reads torus values as signed", "[fft]", PortableFft, FftwFft, SimdFft) {
  const std::uint64_t seed = catch_seed(0x516);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  const std::uint32_t N = 256;
  const TestType fft(N);
  const auto t = random_torus(rng, N);
  std::vector<std::int32_t> s(N);
  for (std::size_t j = 0; j < N; ++j) s[j] = static_cast<std::int32_t>(t[j]);
  AlignedVector<double> st(N), ss(N);
  fft.forward(std::span<const Torus32>(t), std::span<double>(st));
  fft.forward(std::span<const std::int32_t>(s), std::span<double>(ss));
  CHECK(st == ss);
  // The constant polynomial -1 (0xffffffff): its spectrum is -1 at every point, since the
  // fold/twist of a constant puts -1 at j = 0 only and an FFT of a delta is flat.
  std::vector<Torus32> minus_one(N, 0);
  minus_one[0] = 0xffffffffu;
  fft.forward(std::span<const Torus32>(minus_one), std::span<double>(st));
  for (std::size_t j = 0; j < N / 2; ++j) {
    REQUIRE(st[j] == Approx(-1.0).margin(1e-12));
    REQUIRE(st[N / 2 + j] == Approx(0.0).margin(1e-12));
  }
}

TEST_CASE("SimdFft is exact at its smallest size and rejects smaller ones", "[fft]") {
  const std::uint64_t seed = catch_seed(0x51d);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  const SimdFft fft(128);
  std::vector<std::vector<std::int32_t>> a;
  std::vector<std::vector<Torus32>> b;
  for (int q = 0; q < 6; ++q) {
    a.push_back(random_digits(rng, 128, 10));
    b.push_back(random_torus(rng, 128));
  }
  CHECK(fourier_sum(fft, a, b) == exact_sum(a, b));
  REQUIRE_INVALID_ARGUMENT(SimdFft(64), "at least 128");
}

TEST_CASE("SimdFft gives the same words at every vector width", "[fft]") {
  // Widths 2, 4 and 8 run on any build (the compiler splits vectors wider than its registers),
  // so every width is checked here whichever the machine's native one is.
  const std::uint64_t seed = catch_seed(0x51d2);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  const unsigned native = SimdFft::native_width();
  CHECK((native == 2 || native == 4 || native == 8));
  CHECK(SimdFft(1024).width() == native);
  for (std::uint32_t N : {128u, 256u, 512u, 1024u, 2048u}) {
    const SimdFft w8(N, 8), w4(N, 4), w2(N, 2);
    REQUIRE(w8.width() == 8);
    REQUIRE(w4.width() == 4);
    REQUIRE(w2.width() == 2);
    INFO("N " << N);
    const std::vector<Torus32> poly = random_torus(rng, N);
    const std::vector<std::int32_t> digits = random_digits(rng, N, 7);
    AlignedVector<double> s8(N), s4(N), s2(N);
    w8.forward(std::span<const Torus32>(poly), std::span<double>(s8));
    w4.forward(std::span<const Torus32>(poly), std::span<double>(s4));
    w2.forward(std::span<const Torus32>(poly), std::span<double>(s2));
    CHECK(s4 == s8);
    CHECK(s2 == s8);
    w8.forward(std::span<const std::int32_t>(digits), std::span<double>(s8));
    w4.forward(std::span<const std::int32_t>(digits), std::span<double>(s4));
    w2.forward(std::span<const std::int32_t>(digits), std::span<double>(s2));
    CHECK(s4 == s8);
    CHECK(s2 == s8);
    // The inverse of an arbitrary spectrum (not one a forward transform made).
    AlignedVector<double> spectrum(N);
    for (auto& x : spectrum) x = static_cast<double>(rng.uniform_torus()) - 2147483648.0;
    std::vector<Torus32> p8(N), p4(N), p2(N);
    w8.inverse(spectrum, p8);
    w4.inverse(spectrum, p4);
    w2.inverse(spectrum, p2);
    CHECK(p4 == p8);
    CHECK(p2 == p8);
    // Each width's products against the exact schoolbook sum.
    std::vector<std::vector<std::int32_t>> a;
    std::vector<std::vector<Torus32>> b;
    for (int q = 0; q < 6; ++q) {
      a.push_back(random_digits(rng, N, 7));
      b.push_back(random_torus(rng, N));
    }
    const auto want = exact_sum(a, b);
    CHECK(fourier_sum(w8, a, b) == want);
    CHECK(fourier_sum(w4, a, b) == want);
    CHECK(fourier_sum(w2, a, b) == want);
  }
  REQUIRE_INVALID_ARGUMENT(SimdFft(1024, 3), "width=3");
  REQUIRE_INVALID_ARGUMENT(SimdFft(1024, 16), "width=16");
}

TEMPLATE_TEST_CASE("FFT products are exact for small sizes too", "[fft]", PortableFft, FftwFft) {
  const std::uint64_t seed = catch_seed(0x5a11);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  for (std::uint32_t N : {4u, 8u, 16u, 32u, 64u, 128u}) {
    const TestType fft(N);
    INFO(fft.name() << " N " << N);
    std::vector<std::vector<std::int32_t>> a;
    std::vector<std::vector<Torus32>> b;
    for (int q = 0; q < 6; ++q) {
      a.push_back(random_digits(rng, N, 10));
      b.push_back(random_torus(rng, N));
    }
    CHECK(fourier_sum(fft, a, b) == exact_sum(a, b));
  }
}

TEMPLATE_TEST_CASE("FFT engines reject mismatched sizes", "[fft]", PortableFft, FftwFft, SimdFft) {
  const TestType fft(256);
  std::vector<std::int32_t> digits(256), short_digits(128);
  std::vector<Torus32> poly(256), long_poly(512);
  AlignedVector<double> spectrum(256), short_spectrum(128);
  REQUIRE_INVALID_ARGUMENT(fft.forward(std::span<const std::int32_t>(short_digits),
                                       std::span<double>(spectrum)),
                           "forward");
  REQUIRE_INVALID_ARGUMENT(
      fft.forward(std::span<const Torus32>(long_poly), std::span<double>(spectrum)), "512");
  REQUIRE_INVALID_ARGUMENT(fft.forward(std::span<const std::int32_t>(digits),
                                       std::span<double>(short_spectrum)),
                           "spectrum");
  REQUIRE_INVALID_ARGUMENT(fft.inverse(short_spectrum, poly), "inverse");
  REQUIRE_INVALID_ARGUMENT(fft.inverse(spectrum, long_poly), "inverse");
  REQUIRE_INVALID_ARGUMENT(fft.inverse_add(spectrum, long_poly), "inverse_add");
  REQUIRE_INVALID_ARGUMENT(TestType(1000), "polynomial_size=1000");
  REQUIRE_INVALID_ARGUMENT(TestType(2), "polynomial_size=2");
  REQUIRE_THROWS_AS(TestType(0), InvalidArgument);
}

TEST_CASE("PortableFft and FftwFft agree on products (spectrum orders may differ)", "[fft]") {
  const std::uint64_t seed = catch_seed(0xa9);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  const PortableFft portable(1024);
  const FftwFft fftw(1024);
  CHECK(portable.name() == "portable");
  CHECK(fftw.name() == "fftw");
  const std::vector<std::vector<std::int32_t>> a = {random_digits(rng, 1024, 7),
                                                    random_digits(rng, 1024, 7)};
  const std::vector<std::vector<Torus32>> b = {random_torus(rng, 1024), random_torus(rng, 1024)};
  CHECK(fourier_sum(portable, a, b) == fourier_sum(fftw, a, b));
  const SimdFft simd(1024);
  CHECK(simd.name() == "simd");
  CHECK(fourier_sum(simd, a, b) == fourier_sum(fftw, a, b));
}

TEST_CASE("round_to_torus rounds to nearest modulo 2^32", "[fft]") {
  CHECK(round_to_torus(0.0) == 0u);
  CHECK(round_to_torus(0.4) == 0u);
  CHECK(round_to_torus(0.6) == 1u);
  CHECK(round_to_torus(-0.6) == 0xffffffffu);
  CHECK(round_to_torus(-1.0) == 0xffffffffu);
  CHECK(round_to_torus(4294967296.0 + 5.0) == 5u);
  CHECK(round_to_torus(-4294967296.0 * 1000 - 3.2) == Torus32{0} - 3u);
  CHECK(round_to_torus(1099511627776.0 * 1024 + 7.0) == 7u);  // 2^50 + 7
}

TEST_CASE("PrefetchQueue counts, drains and drops its lines", "[fft][prefetch]") {
  alignas(64) static char memory[64 * 100];
  PrefetchQueue queue;
  CHECK(queue.lines() == 0);
  queue.drain();  // an empty queue: nothing happens
  // A range from the middle of a line covers that line: bytes 10..137 touch lines 0, 1 and 2.
  queue.add(memory + 10, 128);
  CHECK(queue.lines() == 3);
  queue.add(memory + 640, 64 * 5);  // lines 10..14
  queue.add(memory, 0);             // empty: ignored
  CHECK(queue.lines() == 8);
  CHECK(queue.lines_per_drain() == 1);
  queue.drain();
  CHECK(queue.lines() == 7);
  queue.set_lines_per_drain(4);  // across the end of the first range
  queue.drain();
  CHECK(queue.lines() == 3);
  queue.set_lines_per_drain(0);  // at least one line
  CHECK(queue.lines_per_drain() == 1);
  queue.set_lines_per_drain(10);
  queue.drain();
  CHECK(queue.lines() == 0);
  queue.drain();
  CHECK(queue.lines() == 0);
  // At most max_ranges ranges until clear(); more are dropped (a hint missed, never a result).
  queue.set_lines_per_drain(5);
  queue.clear();
  CHECK(queue.lines_per_drain() == 1);  // clear() starts afresh
  for (std::size_t r = 0; r < PrefetchQueue::max_ranges + 3; ++r) queue.add(memory + 64 * r, 64);
  CHECK(queue.lines() == PrefetchQueue::max_ranges);
  queue.clear();
  CHECK(queue.lines() == 0);
}

TEST_CASE("The engines drain the thread's prefetch queue prefetch_drains() times a transform",
          "[fft][prefetch]") {
  static AlignedVector<char> memory(64 * 4096);  // whole lines
  for (std::uint32_t N : {128u, 1024u, 2048u}) {
    for (unsigned width : {2u, 4u, 8u}) {
      INFO("N " << N << ", width " << width);
      const SimdFft fft(N, width);
      // One per butterfly of the vertical stages of span above 64 (radix 2 first, while the
      // bits left above the 8-point groups are not a multiple of 3), one per 64-point block
      // (the span-64 stage and the transposed one): for N = 1024 (M = 512) and W = 8, the
      // span-512 stage's 8 butterflies and 8 blocks.
      const std::size_t M = N / 2;
      std::size_t expected = M / 64;
      for (std::size_t span = M; span > 64;) {
        const std::size_t radix = (std::countr_zero(span) - 3) % 3 != 0 ? 2 : 8;
        expected += M / (radix * width);
        span /= radix;
      }
      CHECK(fft.prefetch_drains() == expected);
      if (N == 1024 && width == 8) CHECK(fft.prefetch_drains() == 16);
      const std::vector<Torus32> poly(N, 12345);
      AlignedVector<double> with(N), without(N);
      fft.forward(std::span<const Torus32>(poly), std::span<double>(without));
      PrefetchQueue& queue = this_thread_prefetch;
      queue.clear();
      queue.add(memory.data(), memory.size());
      const std::size_t lines = queue.lines();
      fft.forward(std::span<const Torus32>(poly), std::span<double>(with));
      CHECK(queue.lines() == lines - expected);
      CHECK(with == without);  // a prefetch changes no value
      std::vector<Torus32> back(N);
      fft.inverse(with, back);
      CHECK(queue.lines() == lines - 2 * expected);
      CHECK(back == poly);
      queue.clear();
    }
  }
  // FftwFft drains it once before each transform; the portable engine never.
  PrefetchQueue& queue = this_thread_prefetch;
  std::vector<std::unique_ptr<NegacyclicFft>> others;
  others.push_back(std::make_unique<PortableFft>(1024));
  others.push_back(std::make_unique<FftwFft>(1024));
  for (const auto& fft : others) {
    INFO(fft->name());
    const std::size_t drains = fft->name() == "fftw" ? 1 : 0;
    CHECK(fft->prefetch_drains() == drains);
    queue.clear();
    queue.add(memory.data(), 64 * 10);
    queue.set_lines_per_drain(3);
    const std::vector<Torus32> poly(1024, 7);
    AlignedVector<double> spectrum(1024);
    fft->forward(std::span<const Torus32>(poly), std::span<double>(spectrum));
    CHECK(queue.lines() == 10 - 3 * drains);
    std::vector<Torus32> back(1024);
    fft->inverse(spectrum, back);
    CHECK(queue.lines() == 10 - 6 * drains);
    CHECK(back == poly);
  }
  queue.clear();
}
