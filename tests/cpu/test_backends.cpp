// The backend contract on every backend (plaintext, sequential, OpenMP): each gate kind on
// every input combination in one mixed batch, aliasing, batch validation, statistics,
// agreement between backends, and on tfhe_lib_128 a failure-rate and phase-noise check
// against the noise model.
#include <catch2/catch.hpp>
#include <omp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "backend_fixtures.hpp"
#include "test_support.hpp"
#include "torusgate/core/backend.hpp"
#include "torusgate/core/keys.hpp"
#include "torusgate/core/noise.hpp"
#include "torusgate/core/plaintext_backend.hpp"
#include "torusgate/cpu/cpu_backend.hpp"

using namespace torusgate;
using torusgate::test::all_specs;
using torusgate::test::catch_seed;
using torusgate::test::keys_for;
using torusgate::test::random_bits;
using torusgate::test::seeded_rng;

static_assert(Backend<PlaintextBackend>);
static_assert(Backend<SequentialBackend>);
static_assert(Backend<OpenMpBackend>);

namespace {

using torusgate::test::CpuFixture;
using torusgate::test::OpenMpFixture;
using torusgate::test::PlaintextFixture;
using torusgate::test::SequentialFixture;

template <class F>
using Buf = BufferOf<typename F::Backend>;
template <class F>
using Bits = BitsOf<typename F::Backend>;
template <class F>
using Op = GateOpOf<typename F::Backend>;

template <class F>
Buf<F> upload_bits(F& f, const std::vector<std::uint8_t>& bits, Csprng& rng) {
  return encrypt(f.be, f.key, bits, rng);
}
template <class F>
std::vector<std::uint8_t> read_bits(F& f, Bits<F> bits) {
  return decrypt(f.be, f.key, bits);
}

std::vector<GateSpec> bootstrapped_specs() {
  std::vector<GateSpec> s;
  for (const auto& g : all_specs()) {
    if (g.bootstraps() > 0) s.push_back(g);
  }
  return s;
}

// The op of `spec` built with the named constructor of its kind (gate::and_, ...).
template <class S>
GateOp<S> named_op(const GateSpec& spec, BitSpan<S> a, BitSpan<S> b, BitSpan<S> c,
                   BitSpan<S> out) {
  switch (spec.kind) {
    case GateKind::Constant: return gate::constant<S>(spec.constant_value, out);
    case GateKind::Copy: return gate::copy<S>(a, out);
    case GateKind::Not: return gate::not_<S>(a, out);
    case GateKind::And: return gate::and_<S>(a, b, out);
    case GateKind::Nand: return gate::nand<S>(a, b, out);
    case GateKind::Or: return gate::or_<S>(a, b, out);
    case GateKind::Nor: return gate::nor<S>(a, b, out);
    case GateKind::Xor: return gate::xor_<S>(a, b, out);
    case GateKind::Xnor: return gate::xnor<S>(a, b, out);
    case GateKind::AndNY: return gate::andny<S>(a, b, out);
    case GateKind::AndYN: return gate::andyn<S>(a, b, out);
    case GateKind::OrNY: return gate::orny<S>(a, b, out);
    case GateKind::OrYN: return gate::oryn<S>(a, b, out);
    case GateKind::Mux: return gate::mux<S>(a, b, c, out);
    case GateKind::Majority: return gate::majority<S>(a, b, c, out);
    case GateKind::Xor3: return gate::xor3<S>(a, b, c, out);
    case GateKind::PrefixGenerate: return gate::prefix_generate<S>(a, b, c, out);
    case GateKind::Threshold: break;
  }
  return gate::make<S>(spec, a, b, c, out);
}

// Every gate of all_specs() on all 8 input combinations (a, b, c), in one batch; checks the
// decryptions against GateSpec::evaluate and the statistics of the batch. Returns the
// decrypted outputs.
template <class F>
std::vector<std::uint8_t> check_all_gates_one_batch(F& f, std::uint64_t seed) {
  using S = typename F::Backend::Storage;
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  const test::TruthTableInputs t = test::truth_table_inputs();
  const std::vector<std::uint8_t>&a = t.a, &b = t.b, &c = t.c;
  auto A = upload_bits(f, a, rng), B = upload_bits(f, b, rng), C = upload_bits(f, c, rng);
  const auto specs = all_specs();
  auto out = f.be.allocate(8 * specs.size());
  std::vector<GateOp<S>> batch;
  std::uint64_t bootstraps = 0;
  for (std::size_t g = 0; g < specs.size(); ++g) {
    batch.push_back(named_op<S>(specs[g], A.bits(), B.bits(), C.bits(), out.bits(8 * g, 8)));
    CHECK(batch.back().spec == specs[g]);
    bootstraps += 8 * static_cast<std::uint64_t>(specs[g].bootstraps());
  }
  f.be.reset_stats();
  f.be.evaluate(batch);
  const auto got = read_bits(f, out.bits());
  REQUIRE(got.size() == 8 * specs.size());
  for (std::size_t g = 0; g < specs.size(); ++g) {
    for (int x = 0; x < 8; ++x) {
      INFO("gate " << gate_kind_name(specs[g].kind) << " #" << g << " inputs " << int(a[x])
                   << int(b[x]) << int(c[x]));
      CHECK(got[8 * g + x] == specs[g].evaluate(a[x], b[x], c[x]));
    }
  }
  const BackendStats st = f.be.stats();
  CHECK(st.batches == 1);
  CHECK(st.gates == 8 * specs.size());
  CHECK(st.bootstraps == bootstraps);
  CHECK(st.bootstrap_batches == 1);
  CHECK(st.gates_by_kind[static_cast<std::size_t>(GateKind::Constant)] == 16);
  CHECK(st.gates_by_kind[static_cast<std::size_t>(GateKind::Threshold)] == 16);
  CHECK(st.gates_by_kind[static_cast<std::size_t>(GateKind::Mux)] == 8);
  // Inputs are unchanged.
  CHECK(read_bits(f, A.bits()) == a);
  CHECK(read_bits(f, C.bits()) == c);
  return got;
}

// A random circuit on one register of `width` bits: each level overwrites half of the
// register with gates whose inputs are anywhere in it (outputs alias inputs of other gates).
struct CircuitOp {
  GateSpec spec;
  std::array<std::size_t, 3> in;
  std::size_t out;
};
struct Circuit {
  std::vector<std::uint8_t> initial;
  std::vector<std::vector<CircuitOp>> levels;
};

Circuit random_circuit(std::uint64_t seed, std::size_t width, std::size_t levels) {
  Csprng rng = seeded_rng(seed);
  const auto specs = all_specs();
  Circuit c;
  c.initial = random_bits(rng, width);
  for (std::size_t l = 0; l < levels; ++l) {
    std::vector<std::size_t> positions(width);
    for (std::size_t i = 0; i < width; ++i) positions[i] = i;
    for (std::size_t i = width - 1; i > 0; --i) std::swap(positions[i], positions[rng.uniform_below(i + 1)]);
    std::vector<CircuitOp> level;
    for (std::size_t g = 0; g < width / 2; ++g) {
      CircuitOp op{specs[rng.uniform_below(specs.size())],
                   {rng.uniform_below(width), rng.uniform_below(width), rng.uniform_below(width)},
                   positions[g]};
      level.push_back(op);
    }
    c.levels.push_back(level);
  }
  return c;
}

// Runs the circuit; returns the register's decryption after every level, checked against a
// plaintext simulation with GateSpec::evaluate.
template <class F>
std::vector<std::vector<std::uint8_t>> run_circuit(F& f, const Circuit& c, std::uint64_t seed) {
  using S = typename F::Backend::Storage;
  Csprng rng = seeded_rng(seed);
  auto reg = upload_bits(f, c.initial, rng);
  std::vector<std::uint8_t> plain = c.initial;
  std::vector<std::vector<std::uint8_t>> snapshots;
  for (std::size_t l = 0; l < c.levels.size(); ++l) {
    std::vector<GateOp<S>> batch;
    std::vector<std::uint8_t> next = plain;
    for (const auto& op : c.levels[l]) {
      batch.push_back(gate::make<S>(op.spec, reg[op.in[0]], reg[op.in[1]], reg[op.in[2]],
                                    reg[op.out]));
      next[op.out] = op.spec.evaluate(plain[op.in[0]], plain[op.in[1]], plain[op.in[2]]);
    }
    f.be.evaluate(batch);
    plain = next;
    snapshots.push_back(read_bits(f, reg.bits()));
    INFO("level " << l);
    CHECK(snapshots.back() == plain);
  }
  return snapshots;
}

}  // namespace

TEMPLATE_TEST_CASE("every gate kind on every input combination in one mixed batch",
                   "[backend]", PlaintextFixture, SequentialFixture, OpenMpFixture) {
  for (const Parameters& p : {toy_insecure(), toy_k2_insecure()}) {
    INFO("parameter set " << p.name);
    TestType f(p);
    check_all_gates_one_batch(f, catch_seed(0x9a7e));
  }
}

TEST_CASE("an unrolled bootstrapping key: every gate kind, sequential and OpenMP agree",
          "[backend][unroll]") {
  // Key bits in pairs, threes and fours (toy n = 64: 21 threes and a last standard bit, 16
  // fours).
  for (std::uint32_t unroll : {2u, 3u, 4u}) {
    for (const Parameters& p : {toy_insecure(), toy_k2_insecure()}) {
      INFO("parameter set " << p.name << ", unroll " << unroll);
      SequentialFixture seq(p, {}, unroll);
      OpenMpFixture omp(p, {}, unroll);
      REQUIRE(seq.keys.cloud->bootstrapping_key().unroll() == unroll);
      const std::uint64_t seed = catch_seed(0x4e11);
      CHECK(check_all_gates_one_batch(seq, seed) == check_all_gates_one_batch(omp, seed));
    }
    // The FFTW engine too (the default engine is SimdFft where AVX-512 is built).
    SequentialFixture fftw(toy_insecure(), CpuOptions{FftEngineKind::Fftw, 2, 0}, unroll);
    check_all_gates_one_batch(fftw, catch_seed(0x4e12));
  }
}

TEST_CASE("one mixed batch of every gate with real parameter sets, sequential and OpenMP",
          "[backend][real]") {
  for (const Parameters& p : {tfhe_lib_128(), default_128()}) {
    INFO("parameter set " << p.name);
    SequentialFixture seq(p);
    OpenMpFixture omp(p);
    const std::uint64_t seed = catch_seed(0x4ea1);
    const auto from_seq = check_all_gates_one_batch(seq, seed);
    const auto from_omp = check_all_gates_one_batch(omp, seed);
    CHECK(from_seq == from_omp);
  }
}

TEST_CASE("sequential and OpenMP backends compute identical ciphertexts", "[backend]") {
  // Evaluation is deterministic and both share one key context: same inputs, same words.
  const std::uint64_t seed = catch_seed(0x1d);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  SequentialFixture seq(toy_k2_insecure());
  OpenMpFixture omp(toy_k2_insecure(), CpuOptions{FftEngineKind::Fftw, 3, 3});
  const LweBatch in = encrypt_bits(seq.key, random_bits(rng, 3 * 40), rng);
  auto bs = seq.be.upload(in);
  auto bo = omp.be.upload(in);
  const auto specs = all_specs();
  std::vector<GateOpOf<SequentialBackend>> batch_s;
  std::vector<GateOpOf<OpenMpBackend>> batch_o;
  for (std::size_t g = 0; g < 20; ++g) {
    const GateSpec& spec = specs[g % specs.size()];
    const std::size_t o = 2 * g;  // 2-bit spans; outputs overwrite the first 40 bits
    batch_s.push_back(gate::make(spec, bs.bits(40 + o, 2), bs.bits(80 + o, 2),
                                 bs.bits((o + 7) % 38, 2), bs.bits(o, 2)));
    batch_o.push_back(gate::make(spec, bo.bits(40 + o, 2), bo.bits(80 + o, 2),
                                 bo.bits((o + 7) % 38, 2), bo.bits(o, 2)));
  }
  seq.be.evaluate(batch_s);
  omp.be.evaluate(batch_o);
  CHECK(seq.be.download(bs.bits()) == omp.be.download(bo.bits()));
  CHECK(seq.be.stats().bootstraps == omp.be.stats().bootstraps);
}

TEST_CASE("a random multi-level circuit decrypts the same on every backend", "[backend]") {
  const std::uint64_t seed = catch_seed(0xc1c);
  INFO("seed " << seed);
  const Circuit c = random_circuit(seed, 48, 6);
  PlaintextFixture plain;
  SequentialFixture seq(toy_insecure());
  OpenMpFixture omp(toy_insecure());
  CpuFixture<SequentialBackend> portable(toy_insecure(), CpuOptions{FftEngineKind::Portable, 2, 0});
  CpuFixture<SequentialBackend> fftw(toy_insecure(), CpuOptions{FftEngineKind::Fftw, 7, 0});
  OpenMpFixture omp_k2(toy_k2_insecure(), CpuOptions{FftEngineKind::Fftw, 5, 2});
  OpenMpFixture simd_k2(toy_k2_insecure(), CpuOptions{FftEngineKind::Simd, 3, 2});
  const auto want = run_circuit(plain, c, seed + 1);
  CHECK(run_circuit(seq, c, seed + 2) == want);
  CHECK(run_circuit(omp, c, seed + 3) == want);
  CHECK(run_circuit(portable, c, seed + 4) == want);
  CHECK(run_circuit(fftw, c, seed + 5) == want);
  CHECK(run_circuit(omp_k2, c, seed + 6) == want);
  CHECK(run_circuit(simd_k2, c, seed + 7) == want);
  CHECK(portable.be.context().fft().name() == "portable");
  CHECK(fftw.be.context().fft().name() == "fftw");
  CHECK(simd_k2.be.context().fft().name() == "simd");
  // The default (Auto) engine is SimdFft from N = 128 on where the build targets AVX-512.
  CHECK(seq.be.context().fft().name() == std::string(simd_fft_preferred() ? "simd" : "fftw"));
}

TEMPLATE_TEST_CASE("outputs may alias inputs: every input is read before any write",
                   "[backend]", PlaintextFixture, SequentialFixture, OpenMpFixture) {
  using S = typename TestType::Backend::Storage;
  const std::uint64_t seed = catch_seed(0xa11a5);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  TestType f;
  const std::vector<std::uint8_t> a = {0, 1, 0, 1}, b = {0, 0, 1, 1};
  auto A = upload_bits(f, a, rng), B = upload_bits(f, b, rng);

  f.be.evaluate({gate::not_<S>(A.bits(), A.bits())});
  CHECK(read_bits(f, A.bits()) == std::vector<std::uint8_t>{1, 0, 1, 0});
  f.be.evaluate({gate::not_<S>(A.bits(), A.bits())});
  CHECK(read_bits(f, A.bits()) == a);

  f.be.evaluate({gate::and_<S>(A.bits(), B.bits(), A.bits())});
  CHECK(read_bits(f, A.bits()) == std::vector<std::uint8_t>{0, 0, 0, 1});

  // Swap in one batch: both copies read the old values.
  auto P = upload_bits(f, {1, 1, 0, 0}, rng), Q = upload_bits(f, {0, 1, 0, 1}, rng);
  f.be.evaluate({gate::copy<S>(P.bits(), Q.bits()), gate::copy<S>(Q.bits(), P.bits())});
  CHECK(read_bits(f, P.bits()) == std::vector<std::uint8_t>{0, 1, 0, 1});
  CHECK(read_bits(f, Q.bits()) == std::vector<std::uint8_t>{1, 1, 0, 0});

  // Two bootstrapped gates that each overwrite the other's input.
  auto X = upload_bits(f, a, rng), Y = upload_bits(f, b, rng);
  f.be.evaluate({gate::xor_<S>(X.bits(), Y.bits(), Y.bits()), gate::and_<S>(X.bits(), Y.bits(), X.bits())});
  CHECK(read_bits(f, Y.bits()) == std::vector<std::uint8_t>{0, 1, 1, 0});
  CHECK(read_bits(f, X.bits()) == std::vector<std::uint8_t>{0, 0, 0, 1});

  // A MUX writing over its select input; a shifted overlap of input and output.
  auto Sel = upload_bits(f, {0, 1, 1, 0}, rng);
  auto T = upload_bits(f, {1, 1, 1, 1}, rng), E = upload_bits(f, {0, 0, 0, 0}, rng);
  f.be.evaluate({gate::mux<S>(Sel.bits(), T.bits(), E.bits(), Sel.bits())});
  CHECK(read_bits(f, Sel.bits()) == std::vector<std::uint8_t>{0, 1, 1, 0});
  auto R = upload_bits(f, {1, 0, 0, 1, 1, 0}, rng);
  f.be.evaluate({gate::nand<S>(R.bits(0, 4), R.bits(1, 4), R.bits(2, 4))});
  // out[e] = nand(R[e], R[e+1]) with the old R = 1 0 0 1 1 0.
  CHECK(read_bits(f, R.bits()) == std::vector<std::uint8_t>{1, 0, 1, 1, 1, 0});
}

TEMPLATE_TEST_CASE("invalid batches throw InvalidArgument before anything is evaluated",
                   "[backend]", PlaintextFixture, SequentialFixture, OpenMpFixture) {
  using S = typename TestType::Backend::Storage;
  Csprng rng = seeded_rng(11);
  TestType f, other;
  auto A = upload_bits(f, {0, 1, 0, 1, 1, 1, 0, 0}, rng);
  auto B = upload_bits(f, {0, 0, 1, 1, 0, 1, 0, 1}, rng);
  auto out = f.be.allocate(8);
  auto foreign = upload_bits(other, {1, 1, 1, 1, 1, 1, 1, 1}, rng);
  const BackendStats before = f.be.stats();
  const auto out_before = read_bits(f, out.bits());

  SECTION("overlapping outputs") {
    REQUIRE_INVALID_ARGUMENT(f.be.evaluate({gate::and_<S>(A.bits(0, 4), B.bits(0, 4), out.bits(0, 4)),
                                            gate::or_<S>(A.bits(4, 4), B.bits(4, 4), out.bits(2, 4))}),
                             "overlap");
    REQUIRE_INVALID_ARGUMENT(f.be.evaluate({gate::not_<S>(A.bits(0, 1), out.bits(3, 1)),
                                            gate::copy<S>(A.bits(1, 1), out.bits(3, 1))}),
                             "overlap");
  }
  SECTION("spans of another backend") {
    REQUIRE_INVALID_ARGUMENT(f.be.evaluate({gate::and_<S>(A.bits(), foreign.bits(), out.bits())}),
                             "another backend");
    REQUIRE_INVALID_ARGUMENT(f.be.evaluate({gate::not_<S>(A.bits(), foreign.bits())}),
                             "another backend");
    REQUIRE_INVALID_ARGUMENT(f.be.download(foreign.bits()), "another backend");
    CHECK(read_bits(other, foreign.bits()) == std::vector<std::uint8_t>(8, 1));
  }
  SECTION("spans without a buffer") {
    // A default span, and a span of a moved-from buffer, are named as such (they used to be
    // reported as another backend's). A moved-from buffer is empty: size 0, no storage.
    REQUIRE_INVALID_ARGUMENT(f.be.download(BitSpan<S>{}), "the span has no buffer");
    BufferOf<typename TestType::Backend> moved = std::move(B);
    CHECK(B.size() == 0);  // NOLINT(bugprone-use-after-move): the documented state
    REQUIRE_INVALID_ARGUMENT(B.bits(0, 4), "BitSpan::subspan: [0, 4) is outside a span of 0 bits");
    REQUIRE_INVALID_ARGUMENT(f.be.download(B.bits()), "the span has no buffer");
    CHECK(read_bits(f, moved.bits(0, 4)) == std::vector<std::uint8_t>{0, 0, 1, 1});
    B = std::move(moved);
  }
  SECTION("length mismatch") {
    REQUIRE_INVALID_ARGUMENT(f.be.evaluate({gate::and_<S>(A.bits(0, 4), B.bits(0, 3), out.bits(0, 4))}),
                             "input 1 has 3 bits");
    REQUIRE_INVALID_ARGUMENT(f.be.evaluate({gate::not_<S>(A.bits(0, 5), out.bits(0, 4))}),
                             "input 0 has 5 bits");
  }
  SECTION("span past the end") {
    const BitSpan<S> past{&A.storage(), 6, 4};  // bits 6..9 of an 8-bit buffer
    REQUIRE_INVALID_ARGUMENT(f.be.evaluate({gate::and_<S>(past, B.bits(0, 4), out.bits(0, 4))}),
                             "ends at bit 10");
    const BitSpan<S> past_out{&out.storage(), 5, 4};
    REQUIRE_INVALID_ARGUMENT(f.be.evaluate({gate::not_<S>(A.bits(0, 4), past_out)}),
                             "ends at bit 9");
    REQUIRE_INVALID_ARGUMENT(f.be.download(past), "ends at bit 10");
    REQUIRE_INVALID_ARGUMENT(A.bits(6, 4), "outside");
    REQUIRE_INVALID_ARGUMENT(A[8], "outside");
  }
  SECTION("missing inputs, missing output, bad arity") {
    REQUIRE_INVALID_ARGUMENT(
        f.be.evaluate({gate::make<S>(GateSpec::of(GateKind::And), A.bits(), {}, {}, out.bits())}),
        "needs input 1");
    REQUIRE_INVALID_ARGUMENT(
        f.be.evaluate({gate::make<S>(GateSpec::of(GateKind::And), A.bits(), B.bits(), {}, {})}),
        "no output span");
    GateSpec four = GateSpec::of(GateKind::Majority);
    four.arity = 4;
    REQUIRE_INVALID_ARGUMENT(
        f.be.evaluate({gate::make<S>(four, A.bits(), B.bits(), A.bits(), out.bits())}),
        "op 0 (MAJORITY)");
    // The bad op is named by its position in the batch.
    REQUIRE_INVALID_ARGUMENT(f.be.evaluate({gate::not_<S>(A.bits(), out.bits()),
                                            gate::make<S>(GateSpec::of(GateKind::Xor), A.bits(),
                                                          {}, {}, B.bits())}),
                             "op 1 (XOR)");
  }
  // Nothing was evaluated or counted.
  CHECK(f.be.stats().batches == before.batches);
  CHECK(f.be.stats().gates == before.gates);
  CHECK(read_bits(f, out.bits()) == out_before);
  // Touching but not overlapping outputs, and equal offsets in different buffers, are fine.
  CHECK_NOTHROW(f.be.evaluate({gate::not_<S>(A.bits(0, 4), out.bits(0, 4)),
                               gate::not_<S>(A.bits(4, 4), out.bits(4, 4)),
                               gate::not_<S>(A.bits(4, 4), B.bits(0, 4))}));
  CHECK(read_bits(f, out.bits()) == std::vector<std::uint8_t>{1, 0, 1, 0, 0, 0, 1, 1});
  CHECK(read_bits(f, B.bits(0, 4)) == std::vector<std::uint8_t>{0, 0, 1, 1});
}

// Regression: validate_batch used to trust spec.arity, so a hand-made MUX of arity 1 passed
// validation and the CPU backends then read inputs 1 and 2 through null pointers (a
// segmentation fault). Every spec is now checked against what of/constant/threshold make.
TEMPLATE_TEST_CASE("a buffer of a destroyed backend is another backend's for a new one at its address",
                   "[backend]", PlaintextFixture, SequentialFixture, OpenMpFixture) {
  using S = typename TestType::Backend::Storage;
  Csprng rng = seeded_rng(12);
  std::optional<TestType> f;
  f.emplace();
  auto old = upload_bits(*f, {1, 0, 1, 1}, rng);
  const void* address = &f->be;
  f.reset();
  f.emplace();  // in the same place: the same address (the samples could have another n)
  REQUIRE(static_cast<const void*>(&f->be) == address);
  auto out = f->be.allocate(4);
  REQUIRE_INVALID_ARGUMENT(f->be.evaluate({gate::not_<S>(old.bits(), out.bits())}),
                           "another backend");
  REQUIRE_INVALID_ARGUMENT(f->be.download(old.bits()), "another backend");
}

TEMPLATE_TEST_CASE("batches with hand-made gate specs are rejected before evaluation",
                   "[backend]", PlaintextFixture, SequentialFixture, OpenMpFixture) {
  using S = typename TestType::Backend::Storage;
  Csprng rng = seeded_rng(15);
  TestType f;
  auto A = upload_bits(f, {0, 1}, rng), B = upload_bits(f, {1, 1}, rng);
  auto out = f.be.allocate(2);
  struct Case {
    const char* what;
    GateSpec spec;
    const char* fragment;
  };
  std::vector<Case> cases;
  for (GateKind kind : {GateKind::Mux, GateKind::Majority, GateKind::And, GateKind::Xor3}) {
    GateSpec spec = GateSpec::of(kind);
    spec.arity = 1;
    cases.push_back({"arity 1", spec, "GateSpec::validate"});
  }
  GateSpec and_offset = GateSpec::of(GateKind::And);
  and_offset.offset_eighths = 1;  // that is OR's offset: AND in name, OR in effect
  cases.push_back({"AND with OR's offset", and_offset, "op 0 (AND)"});
  GateSpec constant1 = GateSpec::constant(true);
  constant1.arity = 1;
  cases.push_back({"CONSTANT of arity 1", constant1, "CONSTANT has arity 1"});
  GateSpec boundary = GateSpec::threshold(1, {1, 1});
  boundary.offset_eighths = 0;  // a != b puts the phase on 0
  cases.push_back({"THRESHOLD on a boundary", boundary, "decision boundary"});
  GateSpec zero_weight = GateSpec::threshold(1, {1, 1});
  zero_weight.weights[1] = 0;
  cases.push_back({"THRESHOLD with a zero weight", zero_weight, "THRESHOLD weight 1"});
  GateSpec extra_weight = GateSpec::threshold(1, {1, 1});
  extra_weight.weights[2] = 3;
  cases.push_back({"THRESHOLD with a weight past its arity", extra_weight, "THRESHOLD weight 2"});
  GateSpec unknown = GateSpec::of(GateKind::And);
  unknown.kind = static_cast<GateKind>(50);
  cases.push_back({"unknown kind", unknown, "unknown gate kind"});
  for (const auto& c : cases) {
    INFO("case: " << c.what << " (" << gate_kind_name(c.spec.kind) << ")");
    REQUIRE_INVALID_ARGUMENT(
        f.be.evaluate({gate::make<S>(c.spec, A.bits(), B.bits(), A.bits(), out.bits())}),
        c.fragment);
  }
  CHECK(f.be.stats().batches == 0);
  CHECK(read_bits(f, out.bits()) == std::vector<std::uint8_t>{0, 0});
  // validate_batch itself, as every backend calls it.
  const auto owns = [&](const S* s) { return s == &A.storage() || s == &out.storage(); };
  GateSpec mux1 = GateSpec::of(GateKind::Mux);
  mux1.arity = 1;
  const std::vector<GateOp<S>> batch = {gate::make<S>(mux1, A.bits(), {}, {}, out.bits())};
  REQUIRE_INVALID_ARGUMENT(validate_batch<S>(batch, owns, "caller"), "caller: op 0 (MUX)");
}

TEMPLATE_TEST_CASE("upload and encrypt reject bad batches", "[backend]", PlaintextFixture,
                   SequentialFixture, OpenMpFixture) {
  Csprng rng = seeded_rng(12);
  TestType f;
  REQUIRE_INVALID_ARGUMENT(upload_bits(f, {0, 1, 2}, rng), "index 2");
  if constexpr (TestType::encrypted) {
    const std::uint32_t n = f.be.parameters().lwe_dimension;
    REQUIRE_INVALID_ARGUMENT(f.be.upload(LweBatch(n + 1, 2)), "n=");
    // An LWE batch carries only n: any batch of the right n is accepted.
    CHECK(f.be.upload(LweBatch(n, 3)).size() == 3);
  } else {
    REQUIRE_INVALID_ARGUMENT(f.be.upload(PlainBits{{0, 1, 7}}), "index 2");
  }
  // Empty uploads and allocations work.
  CHECK(upload_bits(f, {}, rng).size() == 0);
  auto z = f.be.allocate(5);
  CHECK(read_bits(f, z.bits()) == std::vector<std::uint8_t>(5, 0));
}

TEMPLATE_TEST_CASE("stats count gates, bootstraps (MUX counts 2) and batches", "[backend]",
                   PlaintextFixture, SequentialFixture, OpenMpFixture) {
  using S = typename TestType::Backend::Storage;
  Csprng rng = seeded_rng(13);
  TestType f;
  auto A = upload_bits(f, random_bits(rng, 4), rng);
  auto B = upload_bits(f, random_bits(rng, 4), rng);
  auto C = upload_bits(f, random_bits(rng, 4), rng);
  auto out = f.be.allocate(22);
  CHECK(f.be.stats().batches == 0);
  f.be.evaluate({gate::and_<S>(A.bits(), B.bits(), out.bits(0, 4)),
                 gate::mux<S>(A.bits(), B.bits(), C.bits(), out.bits(4, 4)),
                 gate::not_<S>(A.bits(), out.bits(8, 4)),
                 gate::constant<S>(true, out.bits(12, 4)),
                 gate::copy<S>(A.bits(0, 2), out.bits(16, 2)),
                 gate::xor3<S>(A.bits(), B.bits(), C.bits(), out.bits(18, 4))});
  BackendStats st = f.be.stats();
  CHECK(st.batches == 1);
  CHECK(st.gates == 22);
  CHECK(st.bootstraps == 4 + 8 + 4);
  CHECK(st.bootstrap_batches == 1);
  CHECK(st.gates_by_kind[static_cast<std::size_t>(GateKind::And)] == 4);
  CHECK(st.gates_by_kind[static_cast<std::size_t>(GateKind::Mux)] == 4);
  CHECK(st.gates_by_kind[static_cast<std::size_t>(GateKind::Not)] == 4);
  CHECK(st.gates_by_kind[static_cast<std::size_t>(GateKind::Constant)] == 4);
  CHECK(st.gates_by_kind[static_cast<std::size_t>(GateKind::Copy)] == 2);
  CHECK(st.gates_by_kind[static_cast<std::size_t>(GateKind::Xor3)] == 4);
  CHECK(st.gates_by_kind[static_cast<std::size_t>(GateKind::Or)] == 0);
  // A batch of free gates only: a batch but no bootstrapped level.
  f.be.evaluate({gate::not_<S>(A.bits(), out.bits(0, 4))});
  st = f.be.stats();
  CHECK(st.batches == 2);
  CHECK(st.gates == 26);
  CHECK(st.bootstraps == 16);
  CHECK(st.bootstrap_batches == 1);
  // An empty batch still counts as a batch.
  f.be.evaluate(std::span<const GateOp<S>>{});
  CHECK(f.be.stats().batches == 3);
  CHECK(f.be.stats().gates == 26);
  f.be.reset_stats();
  st = f.be.stats();
  CHECK(st.batches == 0);
  CHECK(st.gates == 0);
  CHECK(st.bootstraps == 0);
  CHECK(st.bootstrap_batches == 0);
  CHECK(st.gates_by_kind[static_cast<std::size_t>(GateKind::And)] == 0);
}

namespace {

// PortableFft's words, but once armed every digit transform throws: a failure from inside a
// batch's run (the parallel region, a team member) after the batch was validated.
class FailingFft final : public NegacyclicFft {
 public:
  explicit FailingFft(std::uint32_t polynomial_size)
      : NegacyclicFft(polynomial_size), inner_(polynomial_size) {}
  std::string name() const override { return "failing"; }
  void arm(bool on) { armed_ = on; }

 protected:
  void forward_integers(const std::int32_t* poly, double* spectrum) const override {
    inner_.forward(std::span<const std::int32_t>(poly, polynomial_size()),
                   std::span<double>(spectrum, spectrum_size()));
  }
  void forward_torus(const Torus32* poly, double* spectrum) const override {
    inner_.forward(std::span<const Torus32>(poly, polynomial_size()),
                   std::span<double>(spectrum, spectrum_size()));
  }
  void forward_digits(const Torus32* poly, const GadgetDecomposition& gadget, double* spectra,
                      std::size_t stride) const override {
    if (armed_) throw std::runtime_error("FailingFft: injected failure");
    const std::size_t slots = (gadget.level_count() - 1) * stride + spectrum_size();
    inner_.forward_decomposed(std::span<const Torus32>(poly, polynomial_size()), gadget,
                              std::span<double>(spectra, slots), stride);
  }
  void inverse_to_torus(const double* spectrum, Torus32* poly, bool add) const override {
    const std::span<const double> s(spectrum, spectrum_size());
    const std::span<Torus32> p(poly, polynomial_size());
    if (add) {
      inner_.inverse_add(s, p);
    } else {
      inner_.inverse(s, p);
    }
  }

 private:
  PortableFft inner_;
  std::atomic<bool> armed_{false};
};

}  // namespace

// Every counter moves with a completed batch only: one that fails while it runs changes none
// (gates_by_kind used to count it while the others did not).
TEST_CASE("stats are unchanged by a batch that fails while it runs", "[backend][cpu]") {
  const auto& keys = keys_for(toy_insecure());
  const auto fft = std::make_shared<FailingFft>(toy_insecure().polynomial_size);
  const auto ctx = std::make_shared<const CpuKeyContext>(keys.cloud, fft);
  Csprng rng = seeded_rng(17);
  const LweBatch in = encrypt_bits(keys.secret, random_bits(rng, 2), rng);
  auto check = [&](auto& be) {
    using S = typename std::remove_reference_t<decltype(be)>::Storage;
    auto x = be.upload(in);
    auto out = be.allocate(3);
    auto batch = [&] {  // one bootstrapped gate: a team where 2 threads and processors exist
      be.evaluate({gate::nand<S>(x.bits(0, 1), x.bits(1, 1), out.bits(0, 1)),
                   gate::not_<S>(x.bits(), out.bits(1, 2))});
    };
    batch();
    const BackendStats before = be.stats();
    fft->arm(true);
    REQUIRE_THROWS_WITH(batch(), "FailingFft: injected failure");
    fft->arm(false);
    const BackendStats& after = be.stats();
    CHECK(after.batches == before.batches);
    CHECK(after.gates == before.gates);
    CHECK(after.bootstraps == before.bootstraps);
    CHECK(after.bootstrap_batches == before.bootstrap_batches);
    CHECK(after.gates_by_kind == before.gates_by_kind);
    batch();  // and the backend still works, counting as before
    CHECK(be.stats().batches == 2);
    CHECK(be.stats().gates_by_kind[static_cast<std::size_t>(GateKind::Nand)] == 2);
    CHECK(be.stats().gates_by_kind[static_cast<std::size_t>(GateKind::Not)] == 4);
  };
  SECTION("sequential") {
    SequentialBackend be(ctx);
    check(be);
  }
  SECTION("OpenMP, tasks on threads and on teams") {
    for (int threads : {1, 2, 4}) {
      INFO(threads << " threads");
      OpenMpBackend be(ctx, CpuOptions{FftEngineKind::Auto, 32, threads});
      check(be);
    }
  }
}

TEST_CASE("PlaintextBackend depth grows by one per bootstrapped level", "[backend][plaintext]") {
  Csprng rng = seeded_rng(14);
  PlaintextFixture f;
  using S = PlaintextStorage;
  auto A = upload_bits(f, {0, 1, 1, 0}, rng), B = upload_bits(f, {1, 1, 0, 0}, rng);
  auto L1 = f.be.allocate(4), L2 = f.be.allocate(4), L3 = f.be.allocate(4);
  CHECK(f.be.depth(A.bits()) == 0);
  CHECK(f.be.depth(L1.bits()) == 0);
  f.be.evaluate({gate::and_<S>(A.bits(), B.bits(), L1.bits())});
  CHECK(f.be.depth(L1.bits()) == 1);
  // NOT and COPY keep the depth; CONSTANT resets it to 0.
  f.be.evaluate({gate::not_<S>(L1.bits(0, 2), L2.bits(0, 2)),
                 gate::copy<S>(L1.bits(2, 2), L2.bits(2, 2))});
  CHECK(f.be.depth(L2.bits()) == 1);
  f.be.evaluate({gate::constant<S>(true, L2.bits(0, 1))});
  CHECK(f.be.depth(L2.bits(0, 1)) == 0);
  CHECK(f.be.depth(L2.bits()) == 1);
  // The longest path counts: XOR of a depth-1 and a depth-0 bit has depth 2.
  f.be.evaluate({gate::xor_<S>(L1.bits(), A.bits(), L3.bits())});
  CHECK(f.be.depth(L3.bits()) == 2);
  // A MUX is one level, though two bootstraps.
  f.be.evaluate({gate::mux<S>(L3.bits(), L1.bits(), A.bits(), L2.bits())});
  CHECK(f.be.depth(L2.bits()) == 3);
  CHECK(f.be.depth(L2.bits(1, 1)) == 3);
  f.be.evaluate({gate::not_<S>(L2.bits(), L2.bits())});
  CHECK(f.be.depth(L2.bits()) == 3);
  // Per bit: only the element-wise path counts.
  f.be.evaluate({gate::and_<S>(A.bits(0, 2), L3.bits(0, 2), L1.bits(0, 2))});
  CHECK(f.be.depth(L1.bits(0, 2)) == 3);
  CHECK(f.be.depth(L1.bits(2, 2)) == 1);
  CHECK(f.be.stats().bootstrap_batches == 4);
  PlaintextFixture other;
  REQUIRE_INVALID_ARGUMENT(other.be.depth(A.bits()), "another backend");
  REQUIRE_INVALID_ARGUMENT(f.be.depth(BitSpan<S>{&A.storage(), 2, 3}), "outside");
}

TEST_CASE("CPU backend options and construction are validated", "[backend][cpu]") {
  const auto ctx = torusgate::test::cpu_context_for(toy_insecure());
  REQUIRE_INVALID_ARGUMENT(SequentialBackend(ctx, CpuOptions{FftEngineKind::Fftw, 1, 0}),
                           "task_size=1");
  REQUIRE_INVALID_ARGUMENT(SequentialBackend(ctx, CpuOptions{FftEngineKind::Fftw, 0, 0}),
                           "task_size=0");
  REQUIRE_INVALID_ARGUMENT(OpenMpBackend(ctx, CpuOptions{FftEngineKind::Fftw, 5000, 0}),
                           "task_size=5000");
  REQUIRE_INVALID_ARGUMENT(OpenMpBackend(ctx, CpuOptions{FftEngineKind::Fftw, 8, -1}),
                           "threads=-1");
  // One workspace per thread: a huge count would exhaust memory before anything runs.
  REQUIRE_INVALID_ARGUMENT(OpenMpBackend(ctx, CpuOptions{FftEngineKind::Fftw, 8, 1000000}),
                           "threads=1000000 but expected 0 (the OpenMP default) to 4096");
  for (int procs : {-1, 4097}) {
    REQUIRE_INVALID_ARGUMENT(OpenMpBackend(ctx, CpuOptions{FftEngineKind::Fftw, 8, 2, procs}),
                             "team_processors=" + std::to_string(procs) +
                                 " but expected 0 (the processors this process may run on) "
                                 "to 4096");
  }
  REQUIRE_INVALID_ARGUMENT(SequentialBackend(std::shared_ptr<const CpuKeyContext>{}), "null");
  REQUIRE_INVALID_ARGUMENT(CpuKeyContext(std::shared_ptr<const CloudKey>{}), "null");
  const SequentialBackend seq(ctx);
  CHECK(seq.name() == "sequential");
  CHECK(seq.threads() == 1);
  const OpenMpBackend omp(ctx, CpuOptions{FftEngineKind::Fftw, 8, 3});
  CHECK(omp.threads() == 3);
  CHECK(omp.name() == "openmp(3)");
  CHECK(omp.parameters() == toy_insecure());
  CHECK(ctx->memory_bytes() > keys_for(toy_insecure()).cloud->memory_bytes());
}

// threads=0 takes the OpenMP default (OMP_NUM_THREADS), which gets a workspace per thread too.
// omp_set_num_threads sets this thread's default only; the guard restores it even when a
// check fails, so later tests see the default they started with.
TEST_CASE("CPU backend: the OpenMP default thread count has the same cap of 4096",
          "[backend][cpu]") {
  const auto ctx = torusgate::test::cpu_context_for(toy_insecure());
  struct RestoreDefault {
    int threads = omp_get_max_threads();
    ~RestoreDefault() { omp_set_num_threads(threads); }
  } restore;
  omp_set_num_threads(3);
  CHECK(OpenMpBackend(ctx).threads() == 3);
  omp_set_num_threads(5000);
  REQUIRE_INVALID_ARGUMENT(OpenMpBackend(ctx),
                           "(OMP_NUM_THREADS or omp_set_num_threads), which is 5000 but expected "
                           "at most 4096 (each thread gets a workspace): set OMP_NUM_THREADS to "
                           "4096 or fewer, or CpuOptions::threads to 1..4096");
  CHECK(OpenMpBackend(ctx, CpuOptions{FftEngineKind::Fftw, 8, 2}).threads() == 2);
  CHECK(SequentialBackend(ctx).threads() == 1);
}

TEST_CASE("cpu_task_starts: a task per thread while rotations last, a MUX never split",
          "[backend][cpu]") {
  std::vector<std::size_t> starts;
  auto cut = [&](std::vector<std::uint32_t> boots, std::size_t task_size, int threads) {
    cpu_task_starts(boots, task_size, threads, starts);
    return starts;
  };
  using V = std::vector<std::size_t>;
  // As many rotations as threads (or fewer): one task each, every thread busy.
  CHECK(cut({1, 1}, 32, 2) == V{0, 1, 2});
  CHECK(cut({1, 1, 1}, 32, 16) == V{0, 1, 2, 3});
  CHECK(cut({1}, 32, 2) == V{0, 1});
  // A MUX's two rotations stay together even where the cap is 1.
  CHECK(cut({2, 1, 2}, 32, 8) == V{0, 1, 2, 3});
  // ceil(rotations / threads) per task, at most task_size.
  CHECK(cut({1, 1, 1, 1, 1}, 32, 2) == V{0, 3, 5});
  CHECK(cut(std::vector<std::uint32_t>(10, 1), 4, 1) == V{0, 4, 8, 10});
  CHECK(cut({1, 2, 1, 1}, 32, 2) == V{0, 2, 4});  // cap 3: the 1 and the MUX, then 1 and 1
  CHECK(cut({}, 32, 2) == V{0});
  // One thread: tasks of task_size rotations.
  CHECK(cut(std::vector<std::uint32_t>(64, 1), 32, 1) == V{0, 32, 64});
  REQUIRE_INVALID_ARGUMENT(cut({1, 3}, 32, 2), "cpu_task_starts: job 1 takes 3 rotations");
  REQUIRE_INVALID_ARGUMENT(cut({1, 0}, 32, 2), "job 1 takes 0 rotations");
  REQUIRE_INVALID_ARGUMENT(cut({1}, 1, 2), "task_size=1 but expected at least 2");
  REQUIRE_INVALID_ARGUMENT(cut({1}, 32, 0), "threads=0 but expected at least 1");
}

TEST_CASE("cpu_team_size: the threads a task gets when tasks are fewer than threads",
          "[backend][cpu]") {
  // At least as many processors as threads: the threads decide.
  CHECK(cpu_team_size(1, 1, 2, 2, 2) == 2);     // one NAND on two threads: a column each
  CHECK(cpu_team_size(1, 1, 2, 16, 64) == 2);   // at most (k+1) units a rotation
  CHECK(cpu_team_size(1, 2, 2, 16, 64) == 4);   // a MUX: two rotations
  CHECK(cpu_team_size(1, 1, 3, 16, 16) == 3);   // k = 2
  CHECK(cpu_team_size(3, 1, 2, 8, 8) == 2);     // 8 / 3 threads each
  CHECK(cpu_team_size(2, 1, 2, 3, 64) == 1);    // one thread each: no teams
  CHECK(cpu_team_size(4, 16, 2, 4, 64) == 1);
  CHECK(cpu_team_size(1, 1, 2, 1, 64) == 1);
  // More threads than processors: teams share out the processors only (a member without one
  // would stall its team at every barrier).
  CHECK(cpu_team_size(1, 2, 2, 16, 2) == 2);    // a MUX on 2 processors, not 4 threads
  CHECK(cpu_team_size(1, 2, 2, 4, 1) == 1);     // one processor: no teams
  CHECK(cpu_team_size(2, 2, 2, 8, 4) == 2);     // 4 / 2 processors each, not 8 / 2 threads
  CHECK(cpu_team_size(2, 2, 2, 8, 3) == 1);
  REQUIRE_INVALID_ARGUMENT(cpu_team_size(0, 1, 2, 2, 2), "cpu_team_size: tasks=0");
  REQUIRE_INVALID_ARGUMENT(cpu_team_size(1, 1, 2, 0, 2),
                           "threads=0, procs=2 but expected each at least 1");
  REQUIRE_INVALID_ARGUMENT(cpu_team_size(1, 1, 2, 2, 0), "procs=0 but expected each at least 1");
}

// Batches with fewer rotations than threads run on teams of threads (one rotation's columns
// and key reads shared out): every word equals the sequential backend's.
TEST_CASE("OpenMP teams: small batches give the sequential backend's words", "[backend][cpu]") {
  const std::uint64_t seed = catch_seed(0x7e4a);
  INFO("seed " << seed);
  auto spec_of = [](GateKind kind) { return GateSpec::of(kind); };
  const std::vector<std::vector<GateKind>> shapes = {
      {GateKind::Nand},
      {GateKind::Mux},
      {GateKind::Xor, GateKind::And},
      {GateKind::Mux, GateKind::Nand, GateKind::Or}};
  for (const Parameters& p : {toy_insecure(), toy_k2_insecure()}) {
    SequentialFixture seq(p);
    for (int threads : {2, 3, 4, 5}) {
      // Teams as wide as the threads, whatever the machine's processors (2 on CI).
      OpenMpFixture omp(p, CpuOptions{FftEngineKind::Fftw, 32, threads, threads});
      Csprng rng = seeded_rng(seed ^ static_cast<std::uint64_t>(threads));
      for (const auto& shape : shapes) {
        INFO(p.name << ", " << threads << " threads, " << shape.size() << " gates");
        const LweBatch in = encrypt_bits(seq.key, random_bits(rng, 3 * shape.size()), rng);
        auto bs = seq.be.upload(in);
        auto bo = omp.be.upload(in);
        auto os = seq.be.allocate(shape.size());
        auto oo = omp.be.allocate(shape.size());
        std::vector<GateOpOf<SequentialBackend>> batch_s;
        std::vector<GateOpOf<OpenMpBackend>> batch_o;
        for (std::size_t g = 0; g < shape.size(); ++g) {
          const GateSpec spec = spec_of(shape[g]);
          batch_s.push_back(gate::make(spec, bs.bits(3 * g, 1), bs.bits(3 * g + 1, 1),
                                       bs.bits(3 * g + 2, 1), os.bits(g, 1)));
          batch_o.push_back(gate::make(spec, bo.bits(3 * g, 1), bo.bits(3 * g + 1, 1),
                                       bo.bits(3 * g + 2, 1), oo.bits(g, 1)));
        }
        seq.be.evaluate(batch_s);
        omp.be.evaluate(batch_o);
        const LweBatch want = seq.be.download(os.bits());
        CHECK(omp.be.download(oo.bits()) == want);
        const auto bits = decrypt(seq.be, seq.key, os.bits());
        for (std::size_t g = 0; g < shape.size(); ++g) {
          const auto x = decrypt(seq.be, seq.key, bs.bits(3 * g, 3));
          CHECK(bits[g] == spec_of(shape[g]).evaluate(x[0], x[1], x[2]));
        }
      }
    }
  }
}

// Inside a parallel region nested regions get one thread (max-active-levels 1): the backend
// then runs its tasks alone instead of waiting for team members that never come.
TEST_CASE("OpenMP teams: evaluate inside a parallel region falls back to one thread",
          "[backend][cpu]") {
  const std::uint64_t seed = catch_seed(0x7e4b);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  SequentialFixture seq(toy_insecure());
  OpenMpFixture omp0(toy_insecure(), CpuOptions{FftEngineKind::Fftw, 32, 2});
  OpenMpFixture omp1(toy_insecure(), CpuOptions{FftEngineKind::Fftw, 32, 2});
  const LweBatch in = encrypt_bits(seq.key, random_bits(rng, 2), rng);
  auto bs = seq.be.upload(in), b0 = omp0.be.upload(in), b1 = omp1.be.upload(in);
  auto os = seq.be.allocate(1), o0 = omp0.be.allocate(1), o1 = omp1.be.allocate(1);
  seq.be.evaluate({gate::nand(bs.bits(0, 1), bs.bits(1, 1), os.bits())});
  const int levels = omp_get_max_active_levels();
  omp_set_max_active_levels(1);
  int outer = 0;
  std::string problems;
#pragma omp parallel num_threads(2)
  {
    try {
      if (omp_get_thread_num() == 0) {
        outer = omp_get_num_threads();
        omp0.be.evaluate({gate::nand(b0.bits(0, 1), b0.bits(1, 1), o0.bits())});
      } else {
        omp1.be.evaluate({gate::nand(b1.bits(0, 1), b1.bits(1, 1), o1.bits())});
      }
    } catch (const std::exception& e) {
#pragma omp critical
      problems += e.what();
    }
  }
  omp_set_max_active_levels(levels);
  CHECK(problems.empty());
  if (outer == 2) {  // else the runtime gave the outer region one thread: nothing nested
    const LweBatch want = seq.be.download(os.bits());
    CHECK(omp0.be.download(o0.bits()) == want);
    CHECK(omp1.be.download(o1.bits()) == want);
  }
}

TEST_CASE("task sizes and thread counts do not change results", "[backend][cpu]") {
  const std::uint64_t seed = catch_seed(0x7a5c);
  INFO("seed " << seed);
  for (std::size_t task_size : {2u, 3u, 8u, 64u}) {
    for (int threads : {1, 2, 3}) {
      INFO("task_size " << task_size << " threads " << threads);
      OpenMpFixture f(toy_insecure(), CpuOptions{FftEngineKind::Fftw, task_size, threads});
      check_all_gates_one_batch(f, seed);
    }
  }
}

// ---------------------------------------------------------------------------------------
// Failure rate and phase noise on tfhe_lib_128 (realistic noise: gates of a later level take
// outputs of a bootstrapped level as inputs).

namespace {

struct NoiseReport {
  std::size_t gates = 0;        // bootstrapped gates checked, all levels
  std::size_t errors = 0;       // wrong decryptions, all levels
  std::size_t samples = 0;      // outputs of the last level whose phases were measured
  double mean = 0;              // of the phase errors (torus fractions)
  double mean_square = 0;       // E[e^2]: the variance about the ideal phase +-1/8
  double variance = 0;          // about the measured mean
  double model_variance = 0;    // mean of noise_model.gate_output over the same gates
  double max_abs = 0;           // largest |phase error|
};

// Level 1: `widths[0]` bootstrapped gates of random kinds on fresh inputs. Level j > 1:
// `widths[j]` gates, each input a random output of level j-1. Returns the errors of every
// level and the phase statistics of the last.
NoiseReport run_levels(OpenMpFixture& f, const std::vector<std::size_t>& widths,
                       std::uint64_t seed) {
  using S = CpuStorage;
  Csprng rng = seeded_rng(seed);
  const auto specs = bootstrapped_specs();
  const NoiseModel model =
      noise_model(f.be.parameters(), f.keys.cloud->bootstrapping_key().unroll());
  NoiseReport report;
  std::vector<std::uint8_t> prev_plain = random_bits(rng, 3 * widths[0]);
  BitBuffer<S> prev = upload_bits(f, prev_plain, rng);
  for (std::size_t level = 0; level < widths.size(); ++level) {
    const std::size_t w = widths[level];
    BitBuffer<S> out = f.be.allocate(w);
    std::vector<GateOp<S>> batch;
    std::vector<std::uint8_t> want(w);
    std::vector<const GateSpec*> used(w);
    batch.reserve(w);
    for (std::size_t g = 0; g < w; ++g) {
      const GateSpec& spec = specs[rng.uniform_below(specs.size())];
      std::array<std::size_t, 3> in{};
      for (int j = 0; j < 3; ++j) {
        in[j] = level == 0 ? j * widths[0] + g : rng.uniform_below(prev.size());
      }
      batch.push_back(gate::make<S>(spec, prev[in[0]], prev[in[1]], prev[in[2]], out[g]));
      want[g] = spec.evaluate(prev_plain[in[0]], prev_plain[in[1]], prev_plain[in[2]]);
      used[g] = &spec;
    }
    f.be.evaluate(batch);
    const LweBatch result = f.be.download(out.bits());
    const auto got = decrypt_bits(f.key, result);
    for (std::size_t g = 0; g < w; ++g) report.errors += got[g] != want[g];
    report.gates += w;
    if (level + 1 == widths.size()) {
      const auto phases = batch_phases(f.key, result);
      double sum = 0, sum2 = 0, model_sum = 0;
      for (std::size_t g = 0; g < w; ++g) {
        const double e = torus_to_double(phases[g] - encode_bit(want[g] != 0));
        sum += e;
        sum2 += e * e;
        report.max_abs = std::max(report.max_abs, std::fabs(e));
        model_sum += model.gate_output(*used[g]);
      }
      report.samples = w;
      report.mean = sum / w;
      report.mean_square = sum2 / w;
      report.variance = report.mean_square - report.mean * report.mean;
      report.model_variance = model_sum / w;
    }
    prev = std::move(out);
    prev_plain = want;
  }
  return report;
}

void print_report(const NoiseReport& r) {
  UNSCOPED_INFO("gates " << r.gates << ", errors " << r.errors << ", phase samples " << r.samples
                         << ", mean error " << r.mean << ", mean square " << r.mean_square
                         << ", variance about the mean " << r.variance << ", model variance "
                         << r.model_variance << " (ratios " << r.mean_square / r.model_variance
                         << ", " << r.variance / r.model_variance << "), max |error| "
                         << r.max_abs);
}

// The phase statistics of the last level against the noise model. For one fixed key the
// output error is not zero-mean: the key-switching key's noise is fixed, and averaging the
// digits d in [0, base) leaves sum_{i,j} (1/base) sum_{v>0} e_{i,j,v}, a per-key offset of
// standard deviation sigma_lwe sqrt(kN t (base-1)) / base (about 1.2e-3 for tfhe_lib_128,
// a third of the output's standard deviation; the blind rotation's counterpart is ~3e-5).
// The model is an average over keys, so the mean square about the ideal phase is what
// estimates its variance; the variance about the measured mean must also be close.
void check_phase_statistics(const NoiseReport& r, const Parameters& p) {
  print_report(r);
  REQUIRE(r.samples > 0);
  CHECK(r.mean_square >= 0.5 * r.model_variance);
  CHECK(r.mean_square <= 2.0 * r.model_variance);
  CHECK(r.variance >= 0.5 * r.model_variance);
  CHECK(r.variance <= 2.0 * r.model_variance);
  const double base = std::ldexp(1.0, static_cast<int>(p.ks_base_log));
  const double key_offset_sd = p.lwe_noise_stddev *
                               std::sqrt(static_cast<double>(p.extracted_lwe_dimension()) * p.ks_level_count *
                                         (base - 1)) /
                               base;
  CHECK(std::fabs(r.mean) < 5 * key_offset_sd + 6 * std::sqrt(r.model_variance / r.samples));
  CHECK(r.max_abs < 1.0 / 16);
}

}  // namespace

TEST_CASE("tfhe_lib_128 failure-rate smoke test: 2000 gates on bootstrapped inputs",
          "[backend][real][noise]") {
  const std::uint64_t seed = catch_seed(0xfa11);
  INFO("seed " << seed);
  OpenMpFixture f(tfhe_lib_128());
  const NoiseReport r = run_levels(f, {256, 2000}, seed);
  print_report(r);
  CHECK(r.gates == 2256);
  CHECK(r.errors == 0);
  CHECK(r.max_abs < 1.0 / 16);
}

TEST_CASE("tfhe_lib_128 phase noise of bootstrapped outputs matches the noise model",
          "[backend][real][noise]") {
  const std::uint64_t seed = catch_seed(0x9015e);
  INFO("seed " << seed);
  OpenMpFixture f(tfhe_lib_128());
  const NoiseReport r = run_levels(f, {512}, seed);
  CHECK(r.errors == 0);
  CHECK(r.samples == 512);
  check_phase_statistics(r, f.be.parameters());
}

TEST_CASE("tfhe_lib_128 with an unrolled key: zero errors, phase noise as modelled",
          "[backend][real][noise][unroll]") {
  const std::uint32_t unroll = GENERATE(2u, 3u, 4u);  // pairs, threes, fours
  const std::uint64_t seed = catch_seed(0x2011e);
  INFO("seed " << seed << ", unroll " << unroll);
  OpenMpFixture f(tfhe_lib_128(), {}, unroll);
  REQUIRE(f.keys.cloud->bootstrapping_key().unroll() == unroll);
  const NoiseReport r = run_levels(f, {256, 768}, seed);
  CHECK(r.gates == 1024);
  CHECK(r.errors == 0);
  check_phase_statistics(r, f.be.parameters());
}

TEST_CASE("tfhe_lib_128 long run: 20000 gates, zero errors, phase variance as modelled",
          "[backend][real][noise][slow]") {
  const std::uint64_t seed = catch_seed(0x510e);
  INFO("seed " << seed);
  OpenMpFixture f(tfhe_lib_128());
  const NoiseReport r = run_levels(f, {2000, 20000}, seed);
  CHECK(r.gates == 22000);
  CHECK(r.errors == 0);
  check_phase_statistics(r, f.be.parameters());
}
