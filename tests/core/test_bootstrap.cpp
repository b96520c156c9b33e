// Gate bootstrapping with the engine-agnostic core (BootstrappingKeyFourier, BlindRotator,
// key_switch): sign extraction across the torus, key switching, engine agreement and
// argument validation, on toy parameters and tfhe_lib_128.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <memory>
#include <vector>

#include "test_support.hpp"
#include "torusgate/core/bootstrap.hpp"
#include "torusgate/core/fft.hpp"
#include "torusgate/core/keys.hpp"
#include "torusgate/core/noise.hpp"
#include "torusgate/core/prefetch.hpp"
#include "torusgate/core/simd_fft.hpp"
#include "torusgate/cpu/fftw_fft.hpp"

using namespace torusgate;
using torusgate::test::catch_seed;
using torusgate::test::keys_for;
using torusgate::test::seeded_rng;

namespace {

constexpr Torus32 mu = Torus32{1} << 29;  // 1/8

// Phases spread over the torus, at least `margin` away from the decision boundaries 0, 1/2.
std::vector<Torus32> test_phases(Csprng& rng, std::size_t random_count, double margin) {
  std::vector<Torus32> phases;
  for (int j = 0; j < 64; ++j) {
    const double x = j / 64.0;
    const double d = std::fmin(std::fabs(x - 0.5), std::fmin(x, 1 - x));
    if (d >= margin) phases.push_back(torus_from_fraction(j, 64));
  }
  while (phases.size() < 64 + random_count) {
    const Torus32 t = rng.uniform_torus();
    const double x = torus_to_double(t);
    if (std::fmin(std::fabs(x), 0.5 - std::fabs(x)) >= margin) phases.push_back(t);
  }
  return phases;
}

bool positive_half(Torus32 phase) { return static_cast<std::int32_t>(phase) >= 0; }

struct Rig {
  const torusgate::test::TestKeys& keys;
  std::unique_ptr<NegacyclicFft> fft;
  std::unique_ptr<BootstrappingKeyFourier> fourier;
};

template <class Engine>
Rig make_rig(const Parameters& p) {
  const auto& keys = keys_for(p);
  auto fft = std::make_unique<Engine>(p.polynomial_size);
  auto fourier = std::make_unique<BootstrappingKeyFourier>(keys.cloud->bootstrapping_key(), *fft);
  return Rig{keys, std::move(fft), std::move(fourier)};
}

// Bootstraps encryptions of `phases` and checks the signs, then key-switches and checks
// that the phases survive. Returns the extracted samples.
std::vector<Torus32> check_bootstrap(Rig& rig, const std::vector<Torus32>& phases,
                                     std::uint64_t seed) {
  INFO("seed " << seed);
  const Parameters& p = rig.keys.params;
  INFO("parameter set " << p.name << ", engine " << rig.fft->name());
  Csprng rng = seeded_rng(seed);
  const std::size_t n1 = p.lwe_dimension + 1, big1 = p.extracted_lwe_dimension() + 1;
  const std::size_t count = phases.size();
  std::vector<Torus32> inputs(count * n1);
  for (std::size_t i = 0; i < count; ++i) {
    encrypt_lwe(std::span<Torus32>(inputs).subspan(i * n1, n1), phases[i],
                rig.keys.secret.lwe_key(), p.lwe_noise_stddev, rng);
  }
  BlindRotator rotator(*rig.fourier, *rig.fft, count);
  REQUIRE(rotator.max_batch() == count);
  std::vector<Torus32> extracted(count * big1);
  rotator.bootstrap_extract(inputs, count, mu, extracted);

  const NoiseModel model = noise_model(p);
  const LweKey big_key = rig.keys.secret.glwe_key().extracted_lwe_key();
  const double br_bound = 8 * std::sqrt(model.blind_rotation);
  const double ks_bound = 8 * std::sqrt(model.key_switching);
  std::vector<Torus32> switched(count * n1);
  key_switch(rig.keys.cloud->key_switching_key(), extracted, count, switched);
  double worst_br = 0, worst_ks = 0;
  for (std::size_t i = 0; i < count; ++i) {
    INFO("input phase " << torus_to_double(phases[i]));
    const Torus32 out = lwe_phase(std::span<const Torus32>(extracted).subspan(i * big1, big1),
                                  big_key);
    const Torus32 want = positive_half(phases[i]) ? mu : Torus32{0} - mu;
    worst_br = std::max(worst_br, torus_distance(out, want));
    CHECK(torus_distance(out, want) < br_bound);
    const Torus32 after = lwe_phase(std::span<const Torus32>(switched).subspan(i * n1, n1),
                                    rig.keys.secret.lwe_key());
    worst_ks = std::max(worst_ks, torus_distance(after, out));
    CHECK(torus_distance(after, out) < ks_bound);
  }
  INFO("worst blind-rotation error " << worst_br << " (bound " << br_bound
                                     << "), worst key-switching error " << worst_ks << " (bound "
                                     << ks_bound << ")");
  CHECK(worst_br < br_bound);
  CHECK(worst_ks < ks_bound);
  return extracted;
}

}  // namespace

TEST_CASE("bootstrap_extract gives +mu on (0,1/2) and -mu on (-1/2,0); key_switch keeps it",
          "[bootstrap]") {
  const std::uint64_t seed = catch_seed(0xb007);
  Csprng rng = seeded_rng(seed);
  SECTION("toy_INSECURE, portable FFT") {
    auto rig = make_rig<PortableFft>(toy_insecure());
    check_bootstrap(rig, test_phases(rng, 64, 1.0 / 32), seed);
  }
  SECTION("toy_k2_INSECURE, portable FFT") {
    auto rig = make_rig<PortableFft>(toy_k2_insecure());
    check_bootstrap(rig, test_phases(rng, 64, 1.0 / 32), seed);
  }
  SECTION("tfhe_lib_128, portable FFT") {
    auto rig = make_rig<PortableFft>(tfhe_lib_128());
    check_bootstrap(rig, test_phases(rng, 16, 1.0 / 32), seed);
  }
  SECTION("tfhe_lib_128, FFTW") {
    auto rig = make_rig<FftwFft>(tfhe_lib_128());
    check_bootstrap(rig, test_phases(rng, 0, 1.0 / 32), seed);
  }
}

TEST_CASE("bootstrapping of exact trivial samples at the quarter points", "[bootstrap]") {
  // Noiseless inputs +-1/4: as far from the boundaries as can be.
  auto rig = make_rig<PortableFft>(toy_insecure());
  const Parameters& p = rig.keys.params;
  const std::size_t n1 = p.lwe_dimension + 1, big1 = p.extracted_lwe_dimension() + 1;
  std::vector<Torus32> in(2 * n1), out(2 * big1);
  trivial_lwe(std::span<Torus32>(in).subspan(0, n1), torus_from_fraction(1, 4));
  trivial_lwe(std::span<Torus32>(in).subspan(n1, n1), torus_from_fraction(-1, 4));
  BlindRotator rotator(*rig.fourier, *rig.fft, 4);
  // A smaller count than max_batch is fine; a different mu is honoured.
  const Torus32 mu3 = torus_from_fraction(3, 16);
  rotator.bootstrap_extract(in, 2, mu3, out);
  const LweKey big_key = rig.keys.secret.glwe_key().extracted_lwe_key();
  const double bound = 8 * std::sqrt(noise_model(p).blind_rotation);
  CHECK(torus_distance(lwe_phase(std::span<const Torus32>(out).subspan(0, big1), big_key), mu3) <
        bound);
  CHECK(torus_distance(lwe_phase(std::span<const Torus32>(out).subspan(big1, big1), big_key),
                       Torus32{0} - mu3) < bound);
}

TEST_CASE("blind_rotate then sample_extract equals bootstrap_extract", "[bootstrap]") {
  const std::uint64_t seed = catch_seed(0xacc);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  auto rig = make_rig<PortableFft>(toy_k2_insecure());
  const Parameters& p = rig.keys.params;
  const std::size_t n1 = p.lwe_dimension + 1, big1 = p.extracted_lwe_dimension() + 1;
  const std::size_t acc_words = glwe_size(p), count = 5;
  std::vector<Torus32> in(count * n1);
  for (std::size_t i = 0; i < count; ++i) {
    encrypt_lwe(std::span<Torus32>(in).subspan(i * n1, n1), rng.uniform_torus(),
                rig.keys.secret.lwe_key(), p.lwe_noise_stddev, rng);
  }
  BlindRotator rotator(*rig.fourier, *rig.fft, count);
  std::vector<Torus32> acc(count * acc_words), extracted(count * big1), manual(count * big1);
  rotator.blind_rotate(in, count, mu, acc);
  rotator.bootstrap_extract(in, count, mu, extracted);
  for (std::size_t i = 0; i < count; ++i) {
    sample_extract(std::span<const Torus32>(acc).subspan(i * acc_words, acc_words),
                   p.glwe_dimension, p.polynomial_size,
                   std::span<Torus32>(manual).subspan(i * big1, big1));
  }
  CHECK(manual == extracted);
  // The accumulator is X^(-phase) times the test polynomial (mu, ..., mu): every
  // coefficient of its phase is +-mu up to the noise.
  std::vector<Torus32> phase(p.polynomial_size);
  const double bound = 8 * std::sqrt(noise_model(p).blind_rotation);
  for (std::size_t i = 0; i < count; ++i) {
    glwe_phase(std::span<const Torus32>(acc).subspan(i * acc_words, acc_words),
               rig.keys.secret.glwe_key(), phase);
    for (Torus32 c : phase) {
      REQUIRE(std::fmin(torus_distance(c, mu), torus_distance(c, Torus32{0} - mu)) < bound);
    }
  }
}

namespace {

// The blind rotation of `in` (n+1 words) in exact integer arithmetic, from the key's
// coefficient-domain GGSW samples: ACC = X^(-b) (mu, ..., mu); then per step, ACC += sum_q
// digit_q(R) * GGSW[q][c] with R = (X^a - 1) ACC (a CMUX), or, for an unrolled key's group
// step, R = ACC and each GGSW g of the group's product times X^(e_g) - 1. The steps whose
// rotations are all X^0 are skipped, as BlindRotator skips them (their terms are 0).
std::vector<Torus32> exact_blind_rotation(const Parameters& p, const BootstrappingKey& bk,
                                          std::span<const Torus32> in, Torus32 mu_value) {
  const std::size_t n = p.lwe_dimension, N = p.polynomial_size, k1 = p.glwe_dimension + 1;
  const std::size_t l = p.bk_level_count, rows = k1 * l;
  const auto two_n = static_cast<std::uint32_t>(2 * N);
  const std::uint32_t unroll = bk.unroll(), G = unroll > 1 ? unroll_group_ggsws(unroll) : 1;
  const GadgetDecomposition gadget(p.bk_base_log, l);
  std::vector<Torus32> acc(k1 * N, 0), test(N, mu_value);
  const std::uint32_t b = mod_switch_from_torus(in[n], two_n);
  multiply_by_monomial(test, (two_n - b) % two_n, std::span<Torus32>(acc).subspan((k1 - 1) * N, N));
  std::vector<std::uint32_t> masks(n);
  for (std::size_t i = 0; i < n; ++i) masks[i] = mod_switch_from_torus(in[i], two_n);
  std::vector<Torus32> r(k1 * N), shifted(N), product(N), sum(k1 * N);
  std::vector<std::int32_t> digits(N);
  // sum = sum_q digit_q(r) * GGSW `ggsw`[q][c], column by column.
  auto external_product = [&](std::size_t ggsw) {
    const auto key = bk.ggsw(ggsw);
    std::fill(sum.begin(), sum.end(), Torus32{0});
    for (std::size_t q = 0; q < rows; ++q) {
      const std::size_t column = q / l;
      const auto level = static_cast<std::uint32_t>(q % l + 1);
      for (std::size_t j = 0; j < N; ++j) digits[j] = gadget.digit(r[column * N + j], level);
      for (std::size_t c = 0; c < k1; ++c) {
        negacyclic_multiply_exact(digits, key.subspan((q * k1 + c) * N, N), product);
        for (std::size_t j = 0; j < N; ++j) sum[c * N + j] += product[j];
      }
    }
  };
  const std::size_t grouped = unrolled_bits(n, unroll);
  for (std::size_t i = 0; i < n;) {
    const std::size_t width = i < grouped ? unroll : 1;
    if (std::all_of(masks.begin() + i, masks.begin() + i + width,
                    [](std::uint32_t e) { return e == 0; })) {
      i += width;
      continue;
    }
    const std::size_t first = unrolled_step_ggsw(n, unroll, i);
    if (width == 1) {  // a CMUX: r = (X^a - 1) acc, acc += GGSW [x] r
      for (std::size_t c = 0; c < k1; ++c) {
        const auto column = std::span<const Torus32>(acc).subspan(c * N, N);
        multiply_by_monomial(column, masks[i], shifted);
        for (std::size_t j = 0; j < N; ++j) r[c * N + j] = shifted[j] - column[j];
      }
      external_product(first);
      for (std::size_t j = 0; j < k1 * N; ++j) acc[j] += sum[j];
    } else {  // a group step: acc += sum_g (X^e_g - 1) (GGSW_g [x] acc)
      r = acc;
      std::vector<Torus32> add(k1 * N, 0);
      for (std::uint32_t g = 0; g < G; ++g) {
        external_product(first + g);
        const std::uint32_t e = unrolled_exponent(masks.data() + i, unroll, g, two_n - 1);
        for (std::size_t c = 0; c < k1; ++c) {
          const auto column = std::span<const Torus32>(sum).subspan(c * N, N);
          multiply_by_monomial(column, e, shifted);
          for (std::size_t j = 0; j < N; ++j) add[c * N + j] += shifted[j] - column[j];
        }
      }
      for (std::size_t j = 0; j < k1 * N; ++j) acc[j] += add[j];
    }
    i += width;
  }
  return acc;
}

}  // namespace

// The rotator's Fourier-domain external products (gates in passes sized to the build's vector
// registers, the spectra spaced spectrum_gap doubles apart) against the exact integer chain:
// with these parameter sets every double engine rounds each product to its exact integer
// (product_rounding), so the accumulators are the same words. 7 rotations: a group of 4 and
// one of 3 sharing each GGSW.
TEST_CASE("BlindRotator's rotations are the exact integer CMUX chain, word for word",
          "[bootstrap]") {
  const std::uint64_t seed = catch_seed(0xc4a1);
  INFO("seed " << seed);
  struct Case {
    Parameters params;
    std::uint32_t unroll;
  };
  for (const Case& tc : {Case{toy_insecure(), 1}, Case{toy_k2_insecure(), 1},
                         Case{toy_insecure(), 2}, Case{toy_insecure(), 3},
                         Case{toy_k2_insecure(), 2}}) {
    const Parameters& p = tc.params;
    INFO("parameter set " << p.name << ", unroll " << tc.unroll);
    REQUIRE(product_rounding(p, tc.unroll).exact());
    const auto& keys = keys_for(p, tc.unroll);
    const BootstrappingKey& bk = keys.cloud->bootstrapping_key();
    Csprng rng = seeded_rng(seed ^ tc.unroll);
    const std::size_t n1 = p.lwe_dimension + 1, acc_words = glwe_size(p), count = 7;
    std::vector<Torus32> in(count * n1);
    for (std::size_t i = 0; i < count; ++i) {
      encrypt_lwe(std::span<Torus32>(in).subspan(i * n1, n1), rng.uniform_torus(),
                  keys.secret.lwe_key(), p.lwe_noise_stddev, rng);
    }
    in[n1 + 2] = 0;  // a zero mask word: that step is skipped
    // Bodies that switch to b~ = 0, N - 1, N (the sign flip's edge), N + 1 and 2N - 1.
    const std::uint32_t N = p.polynomial_size, step = std::uint32_t{1} << 31 >> std::countr_zero(N);
    const std::uint32_t edges[] = {0, N - 1, N, N + 1, 2 * N - 1};
    for (std::size_t e = 0; e < std::size(edges); ++e) in[(2 + e) * n1 - 1] = edges[e] * step;
    std::vector<std::vector<Torus32>> want;
    for (std::size_t i = 0; i < count; ++i) {
      want.push_back(
          exact_blind_rotation(p, bk, std::span<const Torus32>(in).subspan(i * n1, n1), mu));
    }
    std::vector<std::unique_ptr<NegacyclicFft>> engines;
    engines.push_back(std::make_unique<PortableFft>(p.polynomial_size));
    engines.push_back(std::make_unique<FftwFft>(p.polynomial_size));
    engines.push_back(std::make_unique<SimdFft>(p.polynomial_size));
    for (const auto& fft : engines) {
      INFO("engine " << fft->name());
      const BootstrappingKeyFourier fourier(bk, *fft);
      BlindRotator rotator(fourier, *fft, count);
      std::vector<Torus32> acc(count * acc_words);
      // Each step queues the next step's key for the transforms to prefetch (SimdFft drains
      // the queue): lines left from before are dropped, and none are left after.
      this_thread_prefetch.add(in.data(), in.size() * sizeof(Torus32));
      rotator.blind_rotate(in, count, mu, acc);
      CHECK(this_thread_prefetch.lines() == 0);
      for (std::size_t i = 0; i < count; ++i) {
        INFO("rotation " << i);
        CHECK(std::equal(want[i].begin(), want[i].end(), acc.begin() + i * acc_words));
      }
    }
  }
}

TEST_CASE("PortableFft and FftwFft bootstraps agree", "[bootstrap]") {
  const std::uint64_t seed = catch_seed(0xe9);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  auto portable = make_rig<PortableFft>(tfhe_lib_128());
  auto fftw = make_rig<FftwFft>(tfhe_lib_128());
  const Parameters& p = portable.keys.params;
  const std::size_t n1 = p.lwe_dimension + 1, big1 = p.extracted_lwe_dimension() + 1;
  const std::size_t count = 4;
  std::vector<Torus32> in(count * n1);
  for (std::size_t i = 0; i < count; ++i) {
    encrypt_lwe(std::span<Torus32>(in).subspan(i * n1, n1), rng.uniform_torus(),
                portable.keys.secret.lwe_key(), p.lwe_noise_stddev, rng);
  }
  std::vector<Torus32> a(count * big1), b(count * big1);
  BlindRotator(*portable.fourier, *portable.fft, count).bootstrap_extract(in, count, mu, a);
  BlindRotator(*fftw.fourier, *fftw.fft, count).bootstrap_extract(in, count, mu, b);
  // Both engines compute the Bg = 2^7 products exactly (see test_fft.cpp), so the
  // bootstrapped samples are identical word for word.
  CHECK(a == b);
}

TEST_CASE("BlindRotator, BootstrappingKeyFourier and key_switch validate their arguments",
          "[bootstrap]") {
  auto rig = make_rig<PortableFft>(toy_insecure());
  const Parameters& p = rig.keys.params;
  const std::size_t n1 = p.lwe_dimension + 1, big1 = p.extracted_lwe_dimension() + 1;
  BlindRotator rotator(*rig.fourier, *rig.fft, 2);
  std::vector<Torus32> in3(3 * n1), out3(3 * big1), in2(2 * n1), out2(2 * big1);
  std::vector<Torus32> acc3(3 * glwe_size(p)), acc2(2 * glwe_size(p));
  REQUIRE_INVALID_ARGUMENT(rotator.bootstrap_extract(in3, 3, mu, out3), "count=3");
  REQUIRE_INVALID_ARGUMENT(rotator.blind_rotate(in3, 3, mu, acc3), "count=3");
  REQUIRE_INVALID_ARGUMENT(rotator.bootstrap_extract(in3, 2, mu, out2), "inputs");
  REQUIRE_INVALID_ARGUMENT(rotator.bootstrap_extract(in2, 2, mu, out3), "output");
  REQUIRE_INVALID_ARGUMENT(rotator.blind_rotate(in2, 2, mu, acc3), "accumulators");
  REQUIRE_INVALID_ARGUMENT(rotator.blind_rotate(in3, 2, mu, acc2), "inputs");
  CHECK_NOTHROW(rotator.bootstrap_extract(in2, 2, mu, out2));
  CHECK_NOTHROW(rotator.bootstrap_extract({}, 0, mu, {}));
  REQUIRE_INVALID_ARGUMENT(BlindRotator(*rig.fourier, *rig.fft, 0), "max_batch=0");
  const PortableFft other(p.polynomial_size * 2);
  REQUIRE_INVALID_ARGUMENT(BlindRotator(*rig.fourier, other, 1), "N=512");
  REQUIRE_INVALID_ARGUMENT(BootstrappingKeyFourier(rig.keys.cloud->bootstrapping_key(), other),
                           "N=512");
  const auto& ksk = rig.keys.cloud->key_switching_key();
  REQUIRE_INVALID_ARGUMENT(key_switch(ksk, out3, 2, in2), "inputs");
  REQUIRE_INVALID_ARGUMENT(key_switch(ksk, out2, 2, in3), "outputs");
  CHECK_NOTHROW(key_switch(ksk, out2, 2, in2));
  REQUIRE_INVALID_ARGUMENT(key_switch(ksk, out2, 2, in2, 2, 2),
                           "key_switch: part 2 of 2 but expected parts >= 1 and part < parts");
  REQUIRE_INVALID_ARGUMENT(key_switch(ksk, out2, 2, in2, 0, 0), "part 0 of 0");
}

TEST_CASE("key_switch in parts writes the words of one call", "[bootstrap]") {
  // A team's members each switch a share of the output words (CpuBackend's teams).
  const std::uint64_t seed = catch_seed(0x5a17);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  const Parameters p = toy_insecure();
  const auto& ksk = keys_for(p).cloud->key_switching_key();
  const std::size_t n1 = p.lwe_dimension + 1, big1 = p.extracted_lwe_dimension() + 1;
  const std::size_t count = 3;
  std::vector<Torus32> in(count * big1);
  for (auto& w : in) w = rng.uniform_u32();
  std::vector<Torus32> whole(count * n1);
  key_switch(ksk, in, count, whole);
  for (unsigned parts : {2u, 3u, 7u, static_cast<unsigned>(n1 + 5)}) {
    INFO(parts << " parts");
    std::vector<Torus32> got(count * n1, 0xdeadbeef);
    for (unsigned part = 0; part < parts; ++part) key_switch(ksk, in, count, got, part, parts);
    CHECK(got == whole);
    CHECK(this_thread_prefetch.lines() == 0);  // none left after a call
  }
}

TEST_CASE("key material has the documented sizes and validates them", "[bootstrap][keys]") {
  const auto& keys = keys_for(toy_k2_insecure());
  const Parameters& p = keys.params;
  const auto& bk = keys.cloud->bootstrapping_key();
  const auto& ksk = keys.cloud->key_switching_key();
  CHECK(bk.data().size() == p.lwe_dimension * ggsw_size(p));
  CHECK(ksk.data().size() == KeySwitchingKey::size(p));
  CHECK(KeySwitchingKey::size(p) ==
        std::size_t{p.glwe_dimension} * p.polynomial_size * p.ks_level_count *
            ((1u << p.ks_base_log) - 1) * (p.lwe_dimension + 1));
  CHECK(keys.cloud->memory_bytes() == 4 * (bk.data().size() + ksk.data().size()));
  REQUIRE_INVALID_ARGUMENT(bk.ggsw(p.lwe_dimension), "index");
  std::vector<Torus32> short_bk(bk.data().begin(), bk.data().end() - 1);
  REQUIRE_INVALID_ARGUMENT(BootstrappingKey(p, short_bk), "BootstrappingKey");
  std::vector<Torus32> short_ksk(ksk.data().begin(), ksk.data().end() - 1);
  REQUIRE_INVALID_ARGUMENT(KeySwitchingKey(p, short_ksk), "KeySwitchingKey");
  // Keys of two different parameter sets do not make a cloud key.
  const auto& toy = keys_for(toy_insecure());
  REQUIRE_INVALID_ARGUMENT(CloudKey(bk, toy.cloud->key_switching_key()), "CloudKey");
  // The bootstrapping key's GGSW i encrypts s_i: its last row's body phase is s_i * g_l.
  const GadgetDecomposition g(p.bk_base_log, p.bk_level_count);
  const std::size_t row = glwe_size(p), l = p.bk_level_count, k = p.glwe_dimension;
  std::vector<Torus32> phase(p.polynomial_size);
  const double bound = 8 * p.glwe_noise_stddev;
  for (std::size_t i = 0; i < 8; ++i) {
    const auto body_row = bk.ggsw(i).subspan((k * l + l - 1) * row, row);
    glwe_phase(body_row, keys.secret.glwe_key(), phase);
    const Torus32 want =
        static_cast<Torus32>(keys.secret.lwe_key().coefficients()[i]) * g.gadget_value(l);
    CHECK(torus_distance(phase[0], want) < bound);
  }
}
