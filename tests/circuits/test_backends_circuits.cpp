// Circuits on every backend (plaintext, sequential CPU, OpenMP CPU): seeded random inputs at
// widths 2 to 6 for a representative set of operations, each run checked against the plain
// integer result and against the plaintext backend's decryption, and the backend's
// bootstrap count against the schedule; every catalog operation at width 4 on both CPU
// backends. Then a few cases with the tfhe_lib_128 parameters on the OpenMP backend;
// everything heavier is tagged [slow].
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "circuit_test_support.hpp"

using namespace torusgate;
using namespace torusgate::circuits;
using namespace torusgate::test;

namespace {

// Operations of the catalog run on every backend, with the signednesses to run them in.
struct OpCase {
  const char* name;
  std::vector<bool> signedness;
};
const std::vector<OpCase>& representative_ops() {
  static const std::vector<OpCase> ops = {
      {"add.ripple", {false}},        {"add.number-wise", {true}},
      {"add.kogge-stone", {false}},   {"add.sklansky", {true}},
      {"subtract", {true}},           {"less", {false, true}},
      {"min", {true}},                {"mul.wrapping.dadda", {false}},
      {"mul.wrapping.tree", {true}},  {"mul.wrapping.karatsuba", {false}},
      {"mul.full.dadda", {true}},
  };
  return ops;
}

// Runs `op` on fixture f and on the plaintext backend; checks both against the reference and
// each other, and the backend's bootstraps against the schedule.
template <class F>
void check_against_plaintext(F& f, PlaintextFixture& ref, const Operation& op, IntType type,
                             const std::vector<std::uint64_t>& xs,
                             const std::vector<std::uint64_t>& ys, Csprng& rng) {
  INFO(op.name << " on " << to_string(type) << ", backend " << f.be.name());
  const std::vector<std::uint64_t> no_y;
  const auto& y_used = op.arity == 2 ? ys : no_y;
  const std::uint64_t before = f.be.stats().bootstraps;
  const OpRun got = run_operation(f, op, type, xs, y_used, rng);
  CHECK(f.be.stats().bootstraps - before == got.cost.bootstraps);
  const OpRun want = run_operation(ref, op, type, xs, y_used, rng);
  CHECK(got.cost.bootstraps == want.cost.bootstraps);
  CHECK(got.cost.depth == want.cost.depth);
  const std::size_t rw = op.result_width(type.width);
  const std::string bad =
      compare_lanes(got.values, reference_lanes(op, type, xs, y_used), rw, xs, y_used, type);
  INFO(bad);
  CHECK(bad.empty());
  CHECK(got.values == want.values);
}

template <class F, class Record>
std::vector<std::uint64_t> run_linalg(F& f, IntType type, const std::vector<std::uint64_t>& av,
                                      const std::vector<std::uint64_t>& bv, std::size_t rows,
                                      Csprng& rng, Record record) {
  using B = typename F::Backend;
  const auto a = IntArray<B>::encrypt(f.be, f.key, av, type, rng, rows);
  const auto b = IntArray<B>::encrypt(f.be, f.key, bv, type, rng, rows);
  return record(f.be, a, b).decrypt(f.be, f.key);
}

std::vector<std::uint64_t> plain_matmul(const std::vector<std::uint64_t>& a,
                                        const std::vector<std::uint64_t>& b, std::size_t q,
                                        IntType type) {
  std::vector<std::uint64_t> c(q * q);
  for (std::size_t i = 0; i < q; ++i)
    for (std::size_t j = 0; j < q; ++j) {
      i128 s = 0;
      for (std::size_t t = 0; t < q; ++t) s += value_of(a[i * q + t], type) * value_of(b[t * q + j], type);
      c[i * q + j] = pattern_of(s, type);
    }
  return c;
}

}  // namespace

TEMPLATE_TEST_CASE("integer operations agree with the plaintext backend at widths 2 to 6",
                   "[circuits][backends]", PlaintextFixture, SequentialFixture, OpenMpFixture) {
  const std::uint64_t seed = catch_seed(0xbac0);
  INFO("seed " << seed);
  TestType f;
  PlaintextFixture ref;
  Csprng rng = seeded_rng(seed);
  for (std::size_t w = 2; w <= 6; ++w)
    for (const OpCase& oc : representative_ops())
      for (bool is_signed : oc.signedness) {
        const IntType type{w, is_signed};
        const auto xs = random_values(rng, type, 3), ys = random_values(rng, type, 3);
        check_against_plaintext(f, ref, find_operation(oc.name), type, xs, ys, rng);
      }
}

TEMPLATE_TEST_CASE("dot products and matrix products agree with the plaintext backend",
                   "[circuits][backends]", PlaintextFixture, SequentialFixture, OpenMpFixture) {
  const std::uint64_t seed = catch_seed(0xbac1);
  INFO("seed " << seed);
  TestType f;
  PlaintextFixture ref;
  Csprng rng = seeded_rng(seed);
  for (std::size_t w = 2; w <= 6; ++w) {
    const bool is_signed = w % 2 == 0;
    const IntType type{w, is_signed};
    INFO(to_string(type) << ", backend " << f.be.name());
    const auto av = random_values(rng, type, 4), bv = random_values(rng, type, 4);

    // Dot product of the first three elements.
    const std::vector<std::uint64_t> x3(av.begin(), av.begin() + 3), y3(bv.begin(), bv.begin() + 3);
    const auto dot3 = [](auto& be, const auto& a, const auto& b) {
      return compute(be, [](Circuit& c, Expr x, Expr y) { return dot(c, x, y); }, a, b);
    };
    const auto got_dot = run_linalg(f, type, x3, y3, 1, rng, dot3);
    i128 exact = 0;
    for (std::size_t e = 0; e < 3; ++e) exact += value_of(x3[e], type) * value_of(y3[e], type);
    CHECK(got_dot == std::vector<std::uint64_t>{pattern_of(exact, type)});
    CHECK(got_dot == run_linalg(ref, type, x3, y3, 1, rng, dot3));

    // 2 x 2 matrix product, by matmul and by Cannon's algorithm in two steps.
    const auto mm = [](auto& be, const auto& a, const auto& b) {
      return compute(be, [](Circuit& c, Expr x, Expr y) { return matmul(c, x, y); }, a, b);
    };
    const auto cannon = [](auto& be, const auto& a, const auto& b) {
      std::vector<ScheduleCost> costs;
      auto r = cannon_multiply(be, a, b, 2, 0, &costs);
      CHECK(costs.size() == 2);
      return r;
    };
    const std::vector<std::uint64_t> want = plain_matmul(av, bv, 2, type);
    const auto got_mm = run_linalg(f, type, av, bv, 2, rng, mm);
    const auto got_cannon = run_linalg(f, type, av, bv, 2, rng, cannon);
    CHECK(got_mm == want);
    CHECK(got_cannon == want);
    CHECK(got_mm == run_linalg(ref, type, av, bv, 2, rng, mm));
    CHECK(got_cannon == run_linalg(ref, type, av, bv, 2, rng, cannon));
  }
}

TEST_CASE("4-bit addition and multiplication with tfhe_lib_128 on the OpenMP backend",
          "[circuits][backends][tfhe_lib_128]") {
  const std::uint64_t seed = catch_seed(0x128);
  INFO("seed " << seed);
  OpenMpFixture f(tfhe_lib_128());
  PlaintextFixture ref;
  Csprng rng = seeded_rng(seed);
  f.be.reset_stats();
  for (bool is_signed : {false, true}) {
    const IntType type{4, is_signed};
    std::vector<std::uint64_t> xs = {edge_values(type)[3], random_value(rng, type)};
    std::vector<std::uint64_t> ys = {edge_values(type)[is_signed ? 5 : 3], random_value(rng, type)};
    check_against_plaintext(f, ref, find_operation(is_signed ? "add.sklansky" : "add.ripple"), type, xs, ys, rng);
    check_against_plaintext(f, ref, find_operation("mul.wrapping.dadda"), type, xs, ys, rng);
  }
  // About 100 bootstraps in all (each one several milliseconds at these parameters).
  CHECK(f.be.stats().bootstraps < 400);
}

TEST_CASE("8-bit operations with tfhe_lib_128 on the OpenMP backend",
          "[circuits][backends][tfhe_lib_128][slow]") {
  const std::uint64_t seed = catch_seed(0x1288);
  INFO("seed " << seed);
  OpenMpFixture f(tfhe_lib_128());
  PlaintextFixture ref;
  Csprng rng = seeded_rng(seed);
  for (const char* name : {"add.sklansky", "subtract", "less", "max", "mul.full.dadda", "mul.wrapping.karatsuba"})
    for (bool is_signed : {false, true}) {
      const IntType type{8, is_signed};
      std::vector<std::uint64_t> xs, ys;
      for (std::uint64_t v : edge_values(type)) {
        xs.push_back(v);
        ys.push_back(random_value(rng, type));
      }
      check_against_plaintext(f, ref, find_operation(name), type, xs, ys, rng);
    }
  // A 3 x 3 matrix product of 6-bit integers, by matmul and by element-wise Cannon.
  const IntType type{6, true};
  const auto av = random_values(rng, type, 9), bv = random_values(rng, type, 9);
  const auto a = IntArray<OpenMpBackend>::encrypt(f.be, f.key, av, type, rng, 3);
  const auto b = IntArray<OpenMpBackend>::encrypt(f.be, f.key, bv, type, rng, 3);
  const auto mm = compute(f.be, [](Circuit& c, Expr x, Expr y) { return matmul(c, x, y); }, a, b);
  const auto cn = cannon_multiply(f.be, a, b, 3);
  std::vector<std::uint64_t> want(9);
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 3; ++j) {
      i128 s = 0;
      for (std::size_t t = 0; t < 3; ++t) s += value_of(av[i * 3 + t], type) * value_of(bv[t * 3 + j], type);
      want[i * 3 + j] = pattern_of(s, type);
    }
  CHECK(mm.decrypt(f.be, f.key) == want);
  CHECK(cn.decrypt(f.be, f.key) == want);
}

TEMPLATE_TEST_CASE("every catalog operation at width 4 on the CPU backends",
                   "[circuits][backends]", SequentialFixture, OpenMpFixture) {
  const std::uint64_t seed = catch_seed(0xa114);
  INFO("seed " << seed);
  TestType f;
  PlaintextFixture ref;
  Csprng rng = seeded_rng(seed);
  for (const Operation& op : operation_catalog())
    for (bool is_signed : signednesses(op)) {
      const IntType type{4, is_signed};
      std::vector<std::uint64_t> xs, ys;
      const auto edges = edge_values(type);
      for (std::uint64_t a : edges) {
        xs.push_back(a);
        ys.push_back(random_value(rng, type));
      }
      check_against_plaintext(f, ref, op, type, xs, ys, rng);
    }
}
