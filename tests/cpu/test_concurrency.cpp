// The thread rules of docs/architecture.md ("Threads"), exercised: threads with a backend each
// on one shared CpuKeyContext, a schedule compiled once and run by every thread, threads
// sharing const keys with their own generators and FFTW key contexts planned at the same
// time, and one backend shared through LockedBackend. Every result is decrypted and checked.
// Catch2's assertions are not thread-safe, so threads collect problems as text and the main
// thread checks them. Also run under ThreadSanitizer (docs/results/fuzzing.md says how).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <latch>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "test_support.hpp"
#include "torusgate/circuits/circuits.hpp"
#include "torusgate/core/keys.hpp"
#include "torusgate/core/locked_backend.hpp"
#include "torusgate/core/plaintext_backend.hpp"
#include "torusgate/cpu/cpu_backend.hpp"

using namespace torusgate;
using namespace torusgate::circuits;
using torusgate::test::keys_for;
using torusgate::test::seeded_rng;

namespace {

constexpr int thread_count = 4;
constexpr std::size_t lanes = 4;
constexpr IntType u8{8, false};

struct ThreadReport {
  std::vector<std::string> problems;
  std::uint64_t bootstraps = 0;  // what the thread's schedules say it bootstrapped
  int checked = 0;               // results compared
};

// Runs body(t, report) on `count` threads started together; an exception is a problem.
template <class Body>
std::vector<ThreadReport> run_threads(int count, Body&& body) {
  std::vector<ThreadReport> reports(static_cast<std::size_t>(count));
  std::latch start(count);
  std::vector<std::thread> threads;
  for (int t = 0; t < count; ++t) {
    threads.emplace_back([&, t] {
      ThreadReport& report = reports[static_cast<std::size_t>(t)];
      start.arrive_and_wait();
      try {
        body(t, report);
      } catch (const std::exception& e) {
        report.problems.push_back(std::string("exception: ") + e.what());
      }
    });
  }
  for (auto& th : threads) th.join();
  return reports;
}

void require_clean(const std::vector<ThreadReport>& reports, int min_checked) {
  for (std::size_t t = 0; t < reports.size(); ++t) {
    std::string text;
    for (const auto& p : reports[t].problems) text += p + "\n";
    INFO("thread " << t << ":\n" << text);
    CHECK(reports[t].problems.empty());
    CHECK(reports[t].checked >= min_checked);
  }
}

void expect_equal(ThreadReport& report, const std::string& what,
                  const std::vector<std::uint64_t>& got, const std::vector<std::uint64_t>& want) {
  ++report.checked;
  if (got == want) return;
  std::string text = what + ": got";
  for (auto v : got) text.append(1, ' ').append(std::to_string(v));
  text += ", expected";
  for (auto v : want) text.append(1, ' ').append(std::to_string(v));
  report.problems.push_back(text);
}

std::vector<std::uint64_t> random_u8(std::mt19937_64& gen) {
  std::vector<std::uint64_t> v(lanes);
  for (auto& x : v) x = gen() & 0xff;
  return v;
}

// One round of integer work on `be`: x + y, x * y (wrapping) and x < y on 4 lanes of random
// 8-bit operands, recorded into one program and checked against plain arithmetic.
template <class B>
void integer_round(B& be, const typename B::ClientKey& key, Csprng& rng, std::mt19937_64& gen,
                   ThreadReport& report) {
  const auto a = random_u8(gen), b = random_u8(gen);
  const auto x = IntArray<B>::encrypt(be, key, a, u8, rng);
  const auto y = IntArray<B>::encrypt(be, key, b, u8, rng);
  Program<B> prog(be);
  const Expr ex = prog.input(x), ey = prog.input(y);
  const Expr sum = add(prog.circuit(), ex, ey);
  const Expr product = multiply(prog.circuit(), ex, ey);
  const Expr lt = less(prog.circuit(), ex, ey);
  const auto out = prog.run({sum, product, lt});
  report.bootstraps += prog.last_schedule().cost.bootstraps;
  std::vector<std::uint64_t> want_sum(lanes), want_product(lanes), want_lt(lanes);
  for (std::size_t e = 0; e < lanes; ++e) {
    want_sum[e] = (a[e] + b[e]) & 0xff;
    want_product[e] = (a[e] * b[e]) & 0xff;
    want_lt[e] = a[e] < b[e] ? 1 : 0;
  }
  expect_equal(report, be.name() + " x + y", out[0].decrypt(be, key), want_sum);
  expect_equal(report, be.name() + " x * y", out[1].decrypt(be, key), want_product);
  expect_equal(report, be.name() + " x < y", out[2].decrypt(be, key), want_lt);
}

std::shared_ptr<const CpuKeyContext> shared_toy_context() {
  // keys_for caches in an unsynchronised map: call it here, on the main thread, only.
  return std::make_shared<const CpuKeyContext>(keys_for(toy_insecure()).cloud);
}

}  // namespace

TEST_CASE("threads: four threads with a backend each on one shared key context run integer "
          "circuits, and every result is right",
          "[concurrency]") {
  const auto context = shared_toy_context();
  const SecretKey& secret = keys_for(toy_insecure()).secret;
  const auto seed = test::catch_seed(0x7e4e);
  INFO("seed " << seed);
  const auto reports = run_threads(thread_count, [&](int t, ThreadReport& report) {
    SequentialBackend be(context);
    Csprng rng = seeded_rng(seed + static_cast<std::uint64_t>(t));
    std::mt19937_64 gen(seed ^ (0x100u + static_cast<std::uint64_t>(t)));
    for (int round = 0; round < 2; ++round) integer_round(be, secret, rng, gen, report);
    if (be.stats().bootstraps != report.bootstraps) {
      report.problems.push_back("the backend counted " + std::to_string(be.stats().bootstraps) +
                                " bootstraps but its schedules say " +
                                std::to_string(report.bootstraps));
    }
    // The plaintext backend (the oracle) in the same thread, on its own.
    PlaintextBackend plain;
    PlaintextKey plain_key;
    integer_round(plain, plain_key, rng, gen, report);
  });
  require_clean(reports, 9);
}

TEST_CASE("threads: a schedule compiled once runs on every thread's backend at once",
          "[concurrency]") {
  const auto context = shared_toy_context();
  const SecretKey& secret = keys_for(toy_insecure()).secret;
  Circuit circuit;
  const Expr x = circuit.input(u8, lanes), y = circuit.input(u8, lanes);
  const Expr outputs[] = {subtract(circuit, x, y), max(circuit, x, y)};
  const Schedule schedule = compile(circuit, outputs);  // read-only from here on
  const auto seed = test::catch_seed(0x5c4d);
  INFO("seed " << seed);
  const auto reports = run_threads(thread_count, [&](int t, ThreadReport& report) {
    SequentialBackend be(context);
    Csprng rng = seeded_rng(seed + static_cast<std::uint64_t>(t));
    std::mt19937_64 gen(seed ^ static_cast<std::uint64_t>(t));
    const auto a = random_u8(gen), b = random_u8(gen);
    const auto ea = IntArray<SequentialBackend>::encrypt(be, secret, a, u8, rng);
    const auto eb = IntArray<SequentialBackend>::encrypt(be, secret, b, u8, rng);
    const IntArray<SequentialBackend>* inputs[] = {&ea, &eb};
    const auto out = execute(be, schedule, std::span<const IntArray<SequentialBackend>* const>(inputs));
    std::vector<std::uint64_t> want_diff(lanes), want_max(lanes);
    for (std::size_t e = 0; e < lanes; ++e) {
      want_diff[e] = (a[e] - b[e]) & 0xff;
      want_max[e] = std::max(a[e], b[e]);
    }
    expect_equal(report, "x - y", out[0].decrypt(be, secret), want_diff);
    expect_equal(report, "max(x, y)", out[1].decrypt(be, secret), want_max);
  });
  require_clean(reports, 2);
}

TEST_CASE("threads: shared const keys, a generator and an FFTW key context per thread made at "
          "once, gates checked",
          "[concurrency]") {
  const test::TestKeys& keys = keys_for(toy_insecure());
  const std::shared_ptr<const CloudKey> cloud = keys.cloud;
  const SecretKey& secret = keys.secret;
  const auto reports = run_threads(thread_count, [&](int, ThreadReport& report) {
    Csprng rng;  // keyed from the OS: libsodium initialised from several threads at once
    // FFTW plans are made by every thread at the same time (the planner is serialised inside).
    auto context = std::make_shared<const CpuKeyContext>(cloud, FftEngineKind::Fftw);
    SequentialBackend be(context);
    std::vector<std::uint8_t> a(16), b(16), c(16);
    for (std::size_t i = 0; i < a.size(); ++i) {
      a[i] = static_cast<std::uint8_t>(rng.uniform_bit());
      b[i] = static_cast<std::uint8_t>(rng.uniform_bit());
      c[i] = static_cast<std::uint8_t>(rng.uniform_bit());
    }
    // Straight through the client functions with the shared secret key...
    const LweBatch direct = encrypt_bits(secret, a, rng);
    ++report.checked;
    if (decrypt_bits(secret, direct) != a) report.problems.push_back("encrypt/decrypt_bits");
    // ...and through the backend: one batch of NAND, XOR and MUX.
    const auto ea = encrypt(be, secret, a, rng), eb = encrypt(be, secret, b, rng),
               ec = encrypt(be, secret, c, rng);
    auto out = be.allocate(3 * a.size());
    const std::size_t n = a.size();
    be.evaluate({gate::nand(ea.bits(), eb.bits(), out.bits(0, n)),
                 gate::xor_(ea.bits(), eb.bits(), out.bits(n, n)),
                 gate::mux(ea.bits(), eb.bits(), ec.bits(), out.bits(2 * n, n))});
    const auto got = decrypt(be, secret, out.bits());
    std::vector<std::uint8_t> want(3 * n);
    for (std::size_t i = 0; i < n; ++i) {
      want[i] = !(a[i] && b[i]);
      want[n + i] = a[i] ^ b[i];
      want[2 * n + i] = a[i] ? b[i] : c[i];
    }
    ++report.checked;
    if (got != want) report.problems.push_back("NAND/XOR/MUX batch on " + context->fft().name());
  });
  require_clean(reports, 2);
}

TEST_CASE("threads: one backend shared by four threads through LockedBackend", "[concurrency]") {
  const auto context = shared_toy_context();
  const SecretKey& secret = keys_for(toy_insecure()).secret;
  LockedBackend<SequentialBackend> shared(std::in_place, context);
  static_assert(Backend<LockedBackend<SequentialBackend>>);
  const auto seed = test::catch_seed(0x10c4);
  INFO("seed " << seed);
  const auto reports = run_threads(thread_count, [&](int t, ThreadReport& report) {
    Csprng rng = seeded_rng(seed + static_cast<std::uint64_t>(t));
    std::mt19937_64 gen(seed ^ (0x200u + static_cast<std::uint64_t>(t)));
    integer_round(shared, secret, rng, gen, report);
  });
  require_clean(reports, 3);
  std::uint64_t scheduled = 0;
  for (const auto& r : reports) scheduled += r.bootstraps;
  CHECK(shared.stats().bootstraps == scheduled);
  CHECK(shared.name() == "locked sequential");
  // A key of another parameter set is refused through the wrapper too.
  Csprng rng = seeded_rng(1);
  const SecretKey other(toy_k2_insecure(), rng);
  REQUIRE_INVALID_ARGUMENT(encrypt(shared, other, std::vector<std::uint8_t>{1}, rng),
                           "encrypt: the client key is for parameter set 'toy_k2_INSECURE'");
}

TEST_CASE("threads: OpenMP backends evaluate from two threads at once", "[concurrency][openmp]") {
  const auto context = shared_toy_context();
  const SecretKey& secret = keys_for(toy_insecure()).secret;
  const auto seed = test::catch_seed(0x03b9);
  INFO("seed " << seed);
  const auto reports = run_threads(2, [&](int t, ThreadReport& report) {
    OpenMpBackend be(context, CpuOptions{FftEngineKind::Auto, 8, 2});
    Csprng rng = seeded_rng(seed + static_cast<std::uint64_t>(t));
    std::mt19937_64 gen(seed ^ (0x300u + static_cast<std::uint64_t>(t)));
    integer_round(be, secret, rng, gen, report);
  });
  require_clean(reports, 3);
}
