// The fixed-point negacyclic multiplier as an FFT engine: products and sums of (k+1)l products
// against the exact schoolbook product, error shrinking with F, the key spectrum in double,
// overflow sites, validation; and gate bootstrapping with it: tfhe_lib_128 decrypts correctly
// with F = 30 and fails with F = 20 (the negative control that the engine is really used).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numbers>
#include <vector>

#include "test_support.hpp"
#include "torusgate/core/bootstrap.hpp"
#include "torusgate/core/glwe.hpp"
#include "torusgate/cpu/cpu_backend.hpp"
#include "torusgate/fpga_fft/negacyclic.hpp"
#include "torusgate/fpga_fft/precision.hpp"

using namespace torusgate;
using namespace torusgate::fpga_fft;
using torusgate::test::catch_seed;
using torusgate::test::keys_for;
using torusgate::test::seeded_rng;

namespace {

// Sums of (k+1)l = 6 products of Bg = 2^7 digits by torus values (one column of an external
// product of tfhe_lib_128), or of the toy set's 4 products for N = 256.
ProductError sum_error(const NegacyclicFft& engine, Csprng& rng) {
  const Parameters p = engine.polynomial_size() == 1024 ? tfhe_lib_128() : toy_insecure();
  return external_product_error(engine, p, 1, rng);
}

NegacyclicConfig config_with(std::uint32_t F, Rounding mode = Rounding::Nearest,
                             bool merged = false, bool key_in_double = false) {
  NegacyclicConfig c;
  c.fft.frac_bits = F;
  c.fft.rounding = mode;
  c.fft.merged_twist = merged;
  c.key_in_double = key_in_double;
  return c;
}

}  // namespace

TEST_CASE("fpga_fft negacyclic: products within a few LSB at F = 34, error ~ 2^-F", "[fpga_fft]") {
  const std::uint64_t seed = catch_seed(0x7e9a);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  double previous = 1e300;
  for (const std::uint32_t F : {20u, 26u, 30u, 34u}) {
    const FixedPointNegacyclicFft engine(1024, config_with(F));
    const ProductError e = sum_error(engine, rng);
    INFO("F=" << F << " rms " << e.rms_lsb << " max " << e.max_lsb);
    // Each 4 bits of F cut the error by about 16.
    CHECK(e.rms_lsb < previous / 8);
    previous = e.rms_lsb;
    CHECK(engine.overflows().total() == 0);
  }
  // F = 34: the error of a 6-row sum stays below 2^-20 of the torus (4096 LSB).
  const FixedPointNegacyclicFft fine(1024, config_with(34));
  CHECK(sum_error(fine, rng).max_lsb < 4096);
}

TEST_CASE("fpga_fft negacyclic: every variant computes the product (radix, twist, rounding, key)",
          "[fpga_fft]") {
  const std::uint64_t seed = catch_seed(0x7e9b);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  for (const std::uint32_t radix : {2u, 8u}) {
    for (const bool merged : {false, true}) {
      for (const Rounding mode : {Rounding::Nearest, Rounding::Truncate}) {
        for (const bool in_double : {false, true}) {
          NegacyclicConfig c = config_with(32, mode, merged, in_double);
          c.fft.radix = radix;
          const FixedPointNegacyclicFft engine(1024, c);
          INFO(engine.name());
          // 2^-16 of the torus: far below the noise of bootstrapping, far above a wrong product.
          CHECK(sum_error(engine, rng).max_lsb < 65536);
        }
      }
    }
  }
  // Small N too (the toy parameter sets): N = 256, M = 128 points. Their digits reach 2^9
  // (Bg = 2^10), 8 times tfhe_lib_128's, so the same bound needs F = 32 here too.
  const FixedPointNegacyclicFft small(256, config_with(32));
  CHECK(sum_error(small, rng).max_lsb < 65536);
  // Full length (M = N, no folding), for comparison: the same products.
  for (const bool in_double : {false, true}) {
    for (const std::uint32_t radix : {2u, 4u}) {  // log2 1024 = 10: radices 2, 4, 32, 1024
      NegacyclicConfig c = config_with(32, Rounding::Nearest, false, in_double);
      c.full_length = true;
      c.fft.radix = radix;
      const FixedPointNegacyclicFft full(1024, c);
      INFO(full.name());
      CHECK(full.transform().size() == 1024);
      CHECK(full.name().find("full-length") != std::string::npos);
      CHECK(sum_error(full, rng).max_lsb < 65536);
    }
  }
  NegacyclicConfig merged_full = config_with(30, Rounding::Nearest, true);
  merged_full.full_length = true;
  REQUIRE_INVALID_ARGUMENT(FixedPointNegacyclicFft(1024, merged_full),
                           "full_length supports the separate twist only");
}

TEST_CASE("fpga_fft negacyclic: name, spectrum words, overflow sites, validation", "[fpga_fft]") {
  const FixedPointNegacyclicFft engine(1024, config_with(30));
  CHECK(engine.name() == "fixed(M=512 r=2 W=64 F=30 T=32 nearest separate-twist)");
  CHECK(engine.custom_arithmetic());
  CHECK(engine.transform().size() == 512);
  CHECK(engine.overflows().size() == 4 + 2 * 9);
  CHECK(engine.overflows().site(0) == "input");
  CHECK(engine.overflows().site(11) == "multiply-accumulate");
  std::vector<CWord> words(512);
  for (std::size_t j = 0; j < 512; ++j) words[j] = {std::int64_t(j) - 300, -(std::int64_t(j) << 40)};
  std::vector<double> slots(1024);
  FixedPointNegacyclicFft::store(words, slots.data());
  CHECK(FixedPointNegacyclicFft::load(slots.data(), 512) == words);

  // A narrow datapath overflows in the multiply-accumulate: digits of 64 times torus values.
  NegacyclicConfig narrow = config_with(20);
  narrow.fft.word_bits = 32;
  const FixedPointNegacyclicFft small(1024, narrow);
  Csprng rng = seeded_rng(11);
  sum_error(small, rng);
  CHECK(small.overflows().total() > 0);
  std::uint64_t forward_stages = 0;
  for (std::size_t s = 2; s < 11; ++s) forward_stages += small.overflows().count(s);
  CHECK(forward_stages > 0);  // the digit spectrum outgrows 11 integer bits
  small.reset_overflows();
  CHECK(small.overflows().total() == 0);

  Csprng other = seeded_rng(12);
  REQUIRE_INVALID_ARGUMENT(external_product_error(engine, toy_insecure(), 1, other),
                           "is for N=1024 but parameter set 'toy_INSECURE' has N=256");
  REQUIRE_INVALID_ARGUMENT(external_product_error(engine, tfhe_lib_128(), 0, other), "columns=0");
  // The double engines are exact: the same measurement gives 0.
  const PortableFft exact_engine(1024);
  CHECK(external_product_error(exact_engine, tfhe_lib_128(), 2, other).max_lsb == 0);

  NegacyclicConfig sized = config_with(30);
  sized.fft.size = 256;
  REQUIRE_INVALID_ARGUMENT(FixedPointNegacyclicFft(1024, sized), "needs M=N/2=512");
  NegacyclicConfig bad = config_with(30);
  bad.fft.radix = 4;
  REQUIRE_INVALID_ARGUMENT(FixedPointNegacyclicFft(1024, bad), "allowed radices: 2, 8, 512");
  // Too large for the datapath: the message names the N passed, not the derived M.
  REQUIRE_INVALID_ARGUMENT(FixedPointNegacyclicFft(262144, {}),
                           "polynomial_size N=262144 but expected at most 131072");
  NegacyclicConfig full;
  full.full_length = true;
  REQUIRE_INVALID_ARGUMENT(FixedPointNegacyclicFft(131072, full),
                           "polynomial_size N=131072 but expected at most 65536");
  std::vector<double> a(1024), b(1024), shorter(512);
  REQUIRE_INVALID_ARGUMENT(engine.multiply_add(a, b, shorter), "multiply_add: spectra have 1024, 1024 and 512 slots");

  // Full scale (every word -2^63): the imaginary part's products sum to 2^127, one past the
  // 128-bit signed range. It wraps modulo 2^128 with defined arithmetic, which leaves the W-bit
  // register's value and its overflow as the exact sum gives them: the real part
  // 2^126 - 2^126 = 0, the imaginary part 2^127 / 2^30 = 2^97 = 0 modulo 2^64, overflowed.
  const FixedPointNegacyclicFft tiny(4, config_with(30));
  std::vector<double> full_scale(4), acc(4, 0.0);
  FixedPointNegacyclicFft::store(std::vector<CWord>(2, CWord{INT64_MIN, INT64_MIN}),
                                 full_scale.data());
  tiny.multiply_add(full_scale, full_scale, acc);
  CHECK(FixedPointNegacyclicFft::load(acc.data(), 2) == std::vector<CWord>(2, CWord{0, 0}));
  // The multiply-accumulate rounds as configured (a mutation truncating there passed the
  // product-error bounds): 1 * 1.5 in F = 30 bits is 1.5 after the shift, 2 to nearest (ties
  // up), 1 truncated; the imaginary part -1 * 1.5 = -1.5: -1 to nearest, -2 truncated.
  for (const Rounding mode : {Rounding::Nearest, Rounding::Truncate}) {
    const FixedPointNegacyclicFft engine_of_mode(4, config_with(30, mode));
    std::vector<double> x(4), y(4), sum(4, 0.0);
    FixedPointNegacyclicFft::store(std::vector<CWord>(2, CWord{1, 0}), x.data());
    FixedPointNegacyclicFft::store(std::vector<CWord>(2, CWord{3 << 29, -(3 << 29)}), y.data());
    engine_of_mode.multiply_add(x, y, sum);
    const CWord want = mode == Rounding::Nearest ? CWord{2, -1} : CWord{1, -2};
    CHECK(FixedPointNegacyclicFft::load(sum.data(), 2) == std::vector<CWord>(2, want));
  }
  REQUIRE(tiny.overflows().site(3) == "multiply-accumulate");  // input, twist, 1 stage (M = 2)
  CHECK(tiny.overflows().count(3) == 2);                        // one per point
  CHECK(tiny.overflows().total() == 2);
}

TEST_CASE("fpga_fft negacyclic: forward_decomposed at a stride gives the consecutive words",
          "[fpga_fft]") {
  const FixedPointNegacyclicFft engine(1024, config_with(30));
  const GadgetDecomposition gadget(7, 3);
  Csprng rng = seeded_rng(21);
  std::vector<Torus32> poly(1024);
  for (auto& x : poly) x = rng.uniform_torus();
  const std::size_t stride = 1024 + 16;
  std::vector<double> packed(3 * 1024), spaced(2 * stride + 1024, 0.25);
  engine.forward_decomposed(poly, gadget, packed);
  engine.forward_decomposed(poly, gadget, spaced, stride);
  for (std::size_t p = 0; p < 3; ++p) {
    INFO("level " << p + 1);
    CHECK(std::memcmp(packed.data() + p * 1024, spaced.data() + p * stride, 1024 * 8) == 0);
  }
  CHECK(std::all_of(spaced.begin() + 1024, spaced.begin() + stride,
                    [](double x) { return x == 0.25; }));
}

TEST_CASE("fpga_fft negacyclic: a Fourier key is usable only with the engine that made it",
          "[fpga_fft]") {
  const auto& keys = keys_for(toy_insecure());
  const FixedPointNegacyclicFft fixed(keys.params.polynomial_size, config_with(30));
  const PortableFft portable(keys.params.polynomial_size);
  const BootstrappingKeyFourier key(keys.cloud->bootstrapping_key(), portable);
  CHECK(key.engine() == "portable");
  REQUIRE_INVALID_ARGUMENT(BlindRotator(key, fixed, 4),
                           "made by engine 'portable' but this rotator runs engine 'fixed(");
  REQUIRE_INVALID_ARGUMENT(CpuKeyContext(keys.cloud, std::shared_ptr<const NegacyclicFft>()),
                           "FFT engine is null");
  auto wrong_size = std::make_shared<const PortableFft>(512);
  REQUIRE_INVALID_ARGUMENT(CpuKeyContext(keys.cloud, wrong_size), "is for N=512");
  // An unrolled key's rotations are complex products in the Fourier domain: not with words
  // of custom arithmetic.
  const auto& unrolled = keys_for(toy_insecure(), 2);
  REQUIRE_INVALID_ARGUMENT(BootstrappingKeyFourier(unrolled.cloud->bootstrapping_key(), fixed),
                           "has custom arithmetic (use the standard key, unroll 1, with it)");
  REQUIRE_INVALID_ARGUMENT(spectrum_root_exponents(fixed), "has custom arithmetic");
  CHECK_NOTHROW(BootstrappingKeyFourier(unrolled.cloud->bootstrapping_key(), portable));
}

namespace {

struct GateRun {
  std::size_t wrong = 0;
  double rms_error = 0;  // of the output phase around +-1/8, as a torus fraction
};

// NAND on `gates` fresh encryptions with the engine, decrypted and measured with the secret key.
GateRun run_nand(const test::TestKeys& keys, std::shared_ptr<const NegacyclicFft> engine,
                 std::size_t gates, std::uint64_t seed) {
  auto ctx = std::make_shared<const CpuKeyContext>(keys.cloud, std::move(engine));
  OpenMpBackend be(ctx);
  Csprng rng = seeded_rng(seed);
  std::vector<std::uint8_t> a(gates), b(gates);
  for (std::size_t i = 0; i < gates; ++i) {
    a[i] = static_cast<std::uint8_t>(rng.uniform_bit());
    b[i] = static_cast<std::uint8_t>(rng.uniform_bit());
  }
  auto A = encrypt(be, keys.secret, a, rng);
  auto B = encrypt(be, keys.secret, b, rng);
  auto out = be.allocate(gates);
  be.evaluate({gate::nand(A.bits(), B.bits(), out.bits())});
  const LweBatch result = be.download(out.bits());
  GateRun run;
  for (std::size_t i = 0; i < gates; ++i) {
    const bool want = !(a[i] && b[i]);
    const Torus32 phase = lwe_phase(result.sample(i), keys.secret.lwe_key());
    const double error = torus_to_double(phase - torus_from_fraction(want ? 1 : -1, 8));
    run.rms_error += error * error;
    if (decode_bit(phase) != want) ++run.wrong;
  }
  run.rms_error = std::sqrt(run.rms_error / static_cast<double>(gates));
  return run;
}

}  // namespace

TEST_CASE("fpga_fft negacyclic: bootstrapping tfhe_lib_128 with F = 30 decrypts, F = 20 fails",
          "[fpga_fft][bootstrap]") {
  // Fixed seeds: the outcome is deterministic (keys_for and the inputs), so the negative control
  // cannot pass or fail by chance.
  const auto& keys = keys_for(tfhe_lib_128());
  const std::size_t N = keys.params.polynomial_size;
  const GateRun good =
      run_nand(keys, std::make_shared<const FixedPointNegacyclicFft>(N, config_with(30)), 8, 101);
  INFO("F=30: " << good.wrong << " wrong, rms phase error " << good.rms_error);
  CHECK(good.wrong == 0);
  CHECK(good.rms_error < 1.0 / 32);  // the margin is 1/8
  const GateRun bad =
      run_nand(keys, std::make_shared<const FixedPointNegacyclicFft>(N, config_with(20)), 12, 102);
  INFO("F=20: " << bad.wrong << " wrong, rms phase error " << bad.rms_error);
  CHECK(bad.wrong > 0);
  CHECK(bad.rms_error > 0.1);  // the output phase is close to uniform: no information left
}

TEST_CASE("fpga_fft negacyclic: every datapath variant bootstraps tfhe_lib_128 correctly",
          "[fpga_fft][bootstrap][slow]") {
  const auto& keys = keys_for(tfhe_lib_128());
  const std::size_t N = keys.params.polynomial_size;
  struct Variant {
    const char* what;
    NegacyclicConfig config;
  };
  std::vector<Variant> variants;
  NegacyclicConfig c = config_with(30);
  c.fft.radix = 8;
  variants.push_back({"radix 8", c});
  variants.push_back({"merged twist", config_with(30, Rounding::Nearest, true)});
  variants.push_back({"truncation at F = 32", config_with(32, Rounding::Truncate)});
  variants.push_back({"key spectrum in double", config_with(30, Rounding::Nearest, false, true)});
  c = config_with(30);
  c.full_length = true;
  variants.push_back({"full length", c});
  c = config_with(28);
  c.fft.word_bits = 48;  // 19 integer bits: enough for these values at F = 28
  variants.push_back({"48-bit words", c});
  std::uint64_t seed = 201;
  for (const Variant& v : variants) {
    auto engine = std::make_shared<const FixedPointNegacyclicFft>(N, v.config);
    const GateRun run = run_nand(keys, engine, 8, seed++);
    INFO(v.what << ": " << engine->name() << ", " << run.wrong << " wrong, rms phase error "
                << run.rms_error << ", " << engine->overflows().total() << " overflows");
    CHECK(run.wrong == 0);
    CHECK(run.rms_error < 1.0 / 32);
    CHECK(engine->overflows().total() == 0);
  }
}

TEST_CASE("fpga_fft negacyclic: the key in double counts and wraps overflows as the fixed path does",
          "[fpga_fft]") {
  // Coefficients near 1/2 at W = 64, F = 62: spectrum values of magnitude 2 and more do not fit
  // (std::llround of them gave INT64_MIN, uncounted). The fixed path counts its overflows at
  // every stage where an intermediate value does not fit (648 here: a wrapped value goes on
  // and may overflow again); the double path rounds the host's spectrum once, so it counts each
  // component of that spectrum outside the word once, and wraps it as a register does.
  constexpr std::size_t N = 1024, M = N / 2;
  const std::vector<Torus32> poly(N, Torus32{0x7FFFFFFF});
  std::vector<double> fixed_spectrum(N), double_spectrum(N);
  NegacyclicConfig c = config_with(62);
  const FixedPointNegacyclicFft fixed(N, c);
  fixed.forward(poly, fixed_spectrum);
  c.key_in_double = true;
  const FixedPointNegacyclicFft in_double(N, c);
  in_double.forward(poly, double_spectrum);
  CHECK(fixed.overflows().total() > 0);

  // The host's spectrum, as forward_torus computes it, rounded and wrapped here in 128 bits.
  std::vector<std::complex<double>> folded(M), values(M);
  for (std::size_t j = 0; j < M; ++j) {
    std::complex<double> v(torus_to_double(poly[j]), torus_to_double(poly[j + M]));
    v *= std::polar(1.0, std::numbers::pi * static_cast<double>(j) / static_cast<double>(N));
    folded[j] = v;
  }
  in_double.transform().forward_double(folded, values);
  std::uint64_t outside = 0;
  std::vector<CWord> want(M);
  auto word = [&](double v) {
    const Wide x = static_cast<Wide>(std::round(std::ldexp(static_cast<long double>(v), 62)));
    if (!fits(x, 64)) ++outside;
    return wrap(x, 64);
  };
  for (std::size_t p = 0; p < M; ++p) want[p] = {word(values[p].real()), word(values[p].imag())};
  INFO("fixed path " << fixed.overflows().total() << " overflows, key in double "
                     << in_double.overflows().total() << ", components outside " << outside);
  CHECK(outside > 0);
  CHECK(in_double.overflows().count(FixedPointNegacyclicFft::input_site) == outside);
  CHECK(in_double.overflows().total() == outside);
  CHECK(FixedPointNegacyclicFft::load(double_spectrum.data(), M) == want);

  // Small coefficients (2^-12): a spectrum that fits, nothing counted.
  const std::vector<Torus32> small(N, Torus32{0x00100000});
  const FixedPointNegacyclicFft quiet(N, c);
  quiet.forward(small, double_spectrum);
  CHECK(quiet.overflows().total() == 0);
}
