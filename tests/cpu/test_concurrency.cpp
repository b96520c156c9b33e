// The thread rules of docs/architecture.md ("Threads"), exercised: threads with a backend each
// on one shared CpuKeyContext, a schedule compiled once and run by every thread, threads
// sharing const keys with their own generators and FFTW key contexts planned at the same
// time, and one backend shared through LockedBackend. Every result is decrypted and checked.
// And ThreadTeam: one blind rotation on several threads gives a lone thread's words.
// Catch2's assertions are not thread-safe, so threads collect problems as text and the main
// thread checks them. Also run under ThreadSanitizer (docs/results/fuzzing.md says how).
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
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
#include "torusgate/core/team.hpp"
#include "torusgate/cpu/cpu_backend.hpp"
#include "torusgate/cpu/fftw_fft.hpp"
#include "torusgate/fpga_fft/negacyclic.hpp"

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

TEST_CASE("threads: one backend's evaluate from a second thread while it runs is refused, the "
          "running call unharmed", "[concurrency]") {
  const auto context = shared_toy_context();
  const SecretKey& secret = keys_for(toy_insecure()).secret;
  SequentialBackend be(context);
  const auto seed = test::catch_seed(0xe7c1);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  // Thread 0: one long batch of NANDs (toy keys, one thread: about a second); thread 1 calls
  // evaluate on a one-gate batch over and over until thread 0 is done. A refused call changes
  // nothing, so each thread's results and the counters are those of the calls that ran.
  constexpr std::size_t gates = 4000;
  const std::vector<std::uint8_t> a = test::random_bits(rng, gates),
                                  b = test::random_bits(rng, gates);
  const auto xa = encrypt(be, secret, a, rng), xb = encrypt(be, secret, b, rng);
  auto out = be.allocate(gates);
  const std::vector<std::uint8_t> one = {1, 0};
  const auto small = encrypt(be, secret, one, rng);
  auto small_out = be.allocate(1);
  std::atomic<bool> long_done{false};
  std::atomic<int> refused{0}, ran{0};
  const auto reports = run_threads(2, [&](int t, ThreadReport& report) {
    if (t == 0) {  // (refused too while a small call runs: then tried again)
      try {
        while (true) {
          try {
            be.evaluate({gate::nand(xa.bits(), xb.bits(), out.bits())});
            break;
          } catch (const InvalidArgument&) {
          }
        }
      } catch (...) {
        long_done = true;
        throw;
      }
      long_done = true;
      return;
    }
    while (!long_done) {
      try {
        be.evaluate({gate::nand(small.bits(0, 1), small.bits(1, 1), small_out.bits())});
        ++ran;
      } catch (const InvalidArgument& e) {
        if (std::string(e.what()).find("CpuBackend::evaluate: called while another call on this "
                                       "backend runs") == std::string::npos) {
          report.problems.push_back(std::string("unexpected refusal: ") + e.what());
          return;
        }
        ++refused;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));  // room for thread 0's call
    }
  });
  for (const auto& r : reports) {
    for (const auto& p : r.problems) FAIL_CHECK(p);
  }
  CHECK(refused > 0);
  const std::vector<std::uint8_t> got = decrypt(be, secret, out.bits());
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < gates; ++i) wrong += got[i] != !(a[i] && b[i]);
  CHECK(wrong == 0);
  if (ran > 0) CHECK(decrypt(be, secret, small_out.bits()) == std::vector<std::uint8_t>{1});
  // The counters: the long batch and the small ones that ran, nothing of the refused ones.
  CHECK(be.stats().batches == 1 + static_cast<std::uint64_t>(ran));
  CHECK(be.stats().bootstraps == gates + static_cast<std::uint64_t>(ran));
}

// ---------------------------------------------------------------------------------------
// ThreadTeam: one blind rotation on several threads (BlindRotator's team form), the words of a
// lone thread; an abort releases the waiting members.

namespace {

// count encryptions of random phases under p's key, one mask word set to 0 (a skipped step,
// which regroups the accumulators of later steps).
std::vector<Torus32> rotation_inputs(const Parameters& p, std::size_t count, Csprng& rng) {
  const std::size_t n1 = p.lwe_dimension + 1;
  std::vector<Torus32> in(count * n1);
  for (std::size_t i = 0; i < count; ++i) {
    encrypt_lwe(std::span<Torus32>(in).subspan(i * n1, n1), rng.uniform_torus(),
                keys_for(p).secret.lwe_key(), p.lwe_noise_stddev, rng);
  }
  in[2] = 0;
  return in;
}

// bootstrap_extract of `in` on a team of `members` std::threads sharing one rotator, and a
// problem for each member that threw.
std::vector<Torus32> team_bootstrap(const BootstrappingKeyFourier& key, const NegacyclicFft& fft,
                                    const std::vector<Torus32>& in, std::size_t count,
                                    unsigned members, std::vector<std::string>& problems) {
  const Parameters& p = key.parameters();
  BlindRotator rotator(key, fft, count);
  ThreadTeam team(members);
  std::vector<Torus32> out(count * (p.extracted_lwe_dimension() + 1));
  const auto reports = run_threads(static_cast<int>(members), [&](int m, ThreadReport&) {
    rotator.bootstrap_extract(in, count, Torus32{1} << 29, out, &team, static_cast<unsigned>(m));
  });
  for (const auto& r : reports) problems.insert(problems.end(), r.problems.begin(), r.problems.end());
  return out;
}

}  // namespace

TEST_CASE("threads: a ThreadTeam's blind rotation gives a lone thread's words", "[concurrency]") {
  const auto seed = test::catch_seed(0x7ea3);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  struct Case {
    Parameters params;
    std::uint32_t unroll;
  };
  for (const Case& tc : {Case{toy_insecure(), 1}, Case{toy_k2_insecure(), 1},
                         Case{toy_insecure(), 2}, Case{toy_insecure(), 3}}) {
    const Parameters& p = tc.params;
    INFO("parameter set " << p.name << ", unroll " << tc.unroll);
    const auto& keys = keys_for(p, tc.unroll);
    const FftwFft fft(p.polynomial_size);
    const BootstrappingKeyFourier fourier(keys.cloud->bootstrapping_key(), fft);
    // 1 and 3 accumulators (one group), 6 (a group of 4 and one of 2).
    for (std::size_t count : {1u, 3u, 6u}) {
      const auto in = rotation_inputs(p, count, rng);
      std::vector<Torus32> lone(count * (p.extracted_lwe_dimension() + 1));
      BlindRotator(fourier, fft, count).bootstrap_extract(in, count, Torus32{1} << 29, lone);
      for (unsigned members : {1u, 2u, 3u, 4u}) {
        INFO(count << " rotations, " << members << " members");
        std::vector<std::string> problems;
        const auto got = team_bootstrap(fourier, fft, in, count, members, problems);
        CHECK(problems.empty());
        CHECK(got == lone);
      }
    }
  }
}

TEST_CASE("threads: a team with an engine of custom arithmetic gives a lone thread's words",
          "[concurrency]") {
  // The fixed-point model of fpga_fft: each member multiplies whole spectra of its own units.
  const Parameters p = toy_insecure();
  fpga_fft::NegacyclicConfig config;
  config.fft.frac_bits = 30;
  const fpga_fft::FixedPointNegacyclicFft fft(p.polynomial_size, config);
  const BootstrappingKeyFourier fourier(keys_for(p).cloud->bootstrapping_key(), fft);
  Csprng rng = seeded_rng(test::catch_seed(0x7ea4));
  const std::size_t count = 3;
  const auto in = rotation_inputs(p, count, rng);
  std::vector<Torus32> lone(count * (p.extracted_lwe_dimension() + 1));
  BlindRotator(fourier, fft, count).bootstrap_extract(in, count, Torus32{1} << 29, lone);
  for (unsigned members : {2u, 4u}) {
    INFO(members << " members");
    std::vector<std::string> problems;
    CHECK(team_bootstrap(fourier, fft, in, count, members, problems) == lone);
    CHECK(problems.empty());
  }
}

TEST_CASE("threads: a ThreadTeam's abort releases its members; bad members are refused",
          "[concurrency]") {
  REQUIRE_INVALID_ARGUMENT(ThreadTeam(0), "ThreadTeam: members=0 but expected 1..4096");
  REQUIRE_INVALID_ARGUMENT(ThreadTeam(4097), "members=4097");
  {
    // Two members wait at the barrier; the third aborts instead of arriving.
    ThreadTeam team(3);
    const auto reports = run_threads(3, [&](int m, ThreadReport&) {
      if (m == 2) {
        team.abort();
        return;
      }
      team.arrive_and_wait();
    });
    CHECK(reports[0].problems == std::vector<std::string>{"exception: ThreadTeam: another member of the team failed"});
    CHECK(reports[1].problems == reports[0].problems);
    CHECK(reports[2].problems.empty());
    CHECK(team.aborted());
    CHECK_THROWS_AS(team.arrive_and_wait(), TeamAborted);  // later arrivals too
  }
  {
    // Phases in lockstep: what a member writes before a barrier, every member reads after it.
    ThreadTeam team(4);
    std::vector<int> slots(4, 0);
    const auto reports = run_threads(4, [&](int m, ThreadReport& report) {
      for (int phase = 1; phase <= 200; ++phase) {
        slots[static_cast<std::size_t>(m)] = phase;
        team.arrive_and_wait();
        for (int s : slots) {
          if (s != phase) report.problems.push_back("phase " + std::to_string(phase));
        }
        team.arrive_and_wait();
      }
    });
    for (const auto& r : reports) CHECK(r.problems.empty());
  }
  // A member that fails validation aborts the team: the other stops instead of waiting.
  const Parameters p = toy_insecure();
  const FftwFft fft(p.polynomial_size);
  const BootstrappingKeyFourier fourier(keys_for(p).cloud->bootstrapping_key(), fft);
  BlindRotator rotator(fourier, fft, 1);
  Csprng rng = seeded_rng(3);
  const auto in = rotation_inputs(p, 1, rng);
  std::vector<Torus32> out(p.extracted_lwe_dimension() + 1);
  ThreadTeam team(2);
  const auto reports = run_threads(2, [&](int m, ThreadReport&) {
    rotator.bootstrap_extract(in, 1, Torus32{1} << 29, out, &team, m == 0 ? 0u : 5u);
  });
  CHECK(reports[0].problems ==
        std::vector<std::string>{"exception: ThreadTeam: another member of the team failed"});
  CHECK(reports[1].problems ==
        std::vector<std::string>{"exception: BlindRotator::bootstrap_extract: member=5 but the "
                                 "team has 2 members"});
  std::vector<Torus32> acc(glwe_size(p));
  REQUIRE_INVALID_ARGUMENT(rotator.blind_rotate(in, 1, Torus32{1} << 29, acc, nullptr, 1),
                           "BlindRotator::blind_rotate: member=1 but without a team the only "
                           "member is 0");
}
