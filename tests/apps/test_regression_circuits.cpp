// The regression circuits: exact aggregates and predictions on the plaintext backend against
// integer arithmetic (random and extreme data, every encoding), the exact types, and encrypted
// runs. The bit-heap pieces they use (mixed-type products, squares) are tested with the
// circuits library (tests/circuits/test_linalg.cpp).
#include <catch2/catch.hpp>

#include <random>

#include "backend_fixtures.hpp"
#include "regression_data.hpp"
#include "test_support.hpp"
#include "torusgate/circuits/circuits.hpp"

using namespace torusgate;
using namespace torusgate::circuits;
using test::PlaintextFixture;

namespace {

// Uniform random values of a type.
std::vector<std::int64_t> random_values(IntType t, std::size_t count, std::mt19937_64& gen) {
  std::uniform_int_distribution<std::int64_t> dist(static_cast<std::int64_t>(min_value(t)),
                                                   static_cast<std::int64_t>(max_value(t)));
  std::vector<std::int64_t> v(count);
  for (auto& e : v) e = dist(gen);
  return v;
}

apps::QuantizedData make_data(std::size_t n, std::size_t d, IntType xt, IntType yt,
                              std::vector<std::int64_t> x, std::vector<std::int64_t> y) {
  apps::QuantizedData q;
  q.rows = n;
  q.attributes = d;
  q.x_type = xt;
  q.y_type = yt;
  q.x = std::move(x);
  q.y = std::move(y);
  return q;
}

// Runs the aggregates on a backend and checks them against plain_aggregates.
template <class Fixture>
void check_aggregates(Fixture& f, const apps::QuantizedData& q, bool intercept) {
  Csprng rng = test::seeded_rng(q.rows * 131 + q.attributes);
  using B = typename Fixture::Backend;
  const IntArray<B> x = IntArray<B>::encrypt_integers(f.be, f.key, q.x, q.x_type, rng, q.rows);
  const IntArray<B> y = IntArray<B>::encrypt_integers(f.be, f.key, q.y, q.y_type, rng, q.rows);
  Program<B> prog(f.be);
  const RegressionAggregates agg =
      regression_aggregates(prog.circuit(), prog.input(x), prog.input(y), intercept);
  const std::size_t p = q.attributes + (intercept ? 1 : 0);
  CHECK(agg.xtx.rows() == p);
  CHECK(agg.xtx.cols() == p);
  CHECK(agg.xty.lanes() == p);
  CHECK(agg.xtx.type() == xtx_type(q.x_type, q.rows));
  CHECK(agg.xty.type() == xty_type(q.x_type, q.y_type, q.rows));
  const auto out = prog.run({agg.xtx, agg.xty});
  const apps::IntegerAggregates want = apps::plain_aggregates(q, intercept);
  CHECK(out[0].decrypt_integers(f.be, f.key) == want.xtx);
  CHECK(out[1].decrypt_integers(f.be, f.key) == want.xty);
}

std::vector<std::int64_t> plain_predictions(const apps::QuantizedData& q,
                                            const std::vector<std::int64_t>& beta, bool intercept,
                                            std::size_t shift) {
  std::vector<std::int64_t> out(q.rows);
  const std::size_t first = intercept ? 1 : 0;
  for (std::size_t t = 0; t < q.rows; ++t) {
    __int128 v = intercept ? static_cast<__int128>(beta[0]) << shift : 0;
    for (std::size_t j = 0; j < q.attributes; ++j)
      v += static_cast<__int128>(q.x[t * q.attributes + j]) * beta[first + j];
    out[t] = static_cast<std::int64_t>(v);
  }
  return out;
}

// Predictions with an encrypted and with a plaintext model, against integer arithmetic.
template <class Fixture>
void check_predictions(Fixture& f, const apps::QuantizedData& q, const std::vector<std::int64_t>& beta,
                       IntType beta_type, bool intercept, std::size_t shift) {
  using B = typename Fixture::Backend;
  Csprng rng = test::seeded_rng(beta.size() * 17 + shift);
  const IntArray<B> x = IntArray<B>::encrypt_integers(f.be, f.key, q.x, q.x_type, rng, q.rows);
  const IntArray<B> b = IntArray<B>::encrypt_integers(f.be, f.key, beta, beta_type, rng, 1);
  Program<B> prog(f.be);
  const Expr ex = prog.input(x);
  const Expr enc = predict(prog.circuit(), ex, prog.input(b), intercept, shift);
  const Expr pln = predict(prog.circuit(), ex, std::span<const std::int64_t>(beta), intercept, shift);
  CHECK(enc.type() == prediction_type(q.x_type, beta_type, q.attributes, intercept, shift));
  CHECK(pln.type() == prediction_type(q.x_type, beta, intercept, shift));
  const auto out = prog.run({enc, pln});
  const std::vector<std::int64_t> want = plain_predictions(q, beta, intercept, shift);
  CHECK(out[0].decrypt_integers(f.be, f.key) == want);
  CHECK(out[1].decrypt_integers(f.be, f.key) == want);
}

}  // namespace

TEST_CASE("type_for_range, min_value and max_value", "[regression]") {
  CHECK(type_for_range(0, 0) == IntType{1, false});
  CHECK(type_for_range(0, 1) == IntType{1, false});
  CHECK(type_for_range(0, 255) == IntType{8, false});
  CHECK(type_for_range(0, 256) == IntType{9, false});
  CHECK(type_for_range(-1, 0) == IntType{1, true});
  CHECK(type_for_range(-128, 127) == IntType{8, true});
  CHECK(type_for_range(-129, 0) == IntType{9, true});
  CHECK(type_for_range(-1, 128) == IntType{9, true});
  CHECK(type_for_range(0, static_cast<__int128>(UINT64_MAX)) == IntType{64, false});
  REQUIRE_INVALID_ARGUMENT(type_for_range(0, static_cast<__int128>(UINT64_MAX) + 1), "more than 64 bits");
  REQUIRE_INVALID_ARGUMENT(type_for_range(2, 1), "empty range");
  CHECK(min_value(IntType{8, true}) == -128);
  CHECK(max_value(IntType{8, true}) == 127);
  CHECK(max_value(IntType{8, false}) == 255);
  // n products of 8-bit signed values: at most n * 2^14 = (-128)^2 n.
  CHECK(xtx_type(IntType{8, true}, 1) == IntType{16, true});
  CHECK(xtx_type(IntType{8, true}, 4) == IntType{18, true});
  CHECK(xtx_type(IntType{1, false}, 200) == IntType{8, false});
  CHECK(xty_type(IntType{1, false}, IntType{8, true}, 200) == IntType{16, true});
}

TEST_CASE("regression aggregates are exact for every encoding (plaintext backend)", "[regression]") {
  PlaintextFixture f;
  std::mt19937_64 gen(test::catch_seed(11));
  struct Case {
    std::size_t n, d;
    IntType x, y;
  };
  for (const Case k : {Case{5, 1, {8, true}, {8, true}}, Case{7, 3, {8, true}, {8, true}},
                       Case{9, 4, {1, false}, {1, false}}, Case{6, 2, {1, false}, {6, true}},
                       Case{4, 2, {5, false}, {3, true}}, Case{3, 5, {16, true}, {16, true}}}) {
    INFO(k.n << " x " << k.d << " " << to_string(k.x) << ", y " << to_string(k.y));
    const auto q = make_data(k.n, k.d, k.x, k.y, random_values(k.x, k.n * k.d, gen),
                             random_values(k.y, k.n, gen));
    check_aggregates(f, q, true);
    check_aggregates(f, q, false);
  }
}

TEST_CASE("regression aggregates do not overflow at the extremes of the types", "[regression]") {
  PlaintextFixture f;
  for (const IntType t : {IntType{8, true}, IntType{6, false}}) {
    INFO(to_string(t));
    for (const __int128 v : {min_value(t), max_value(t)}) {
      const std::size_t n = 9, d = 2;
      const auto q = make_data(n, d, t, t, std::vector<std::int64_t>(n * d, static_cast<std::int64_t>(v)),
                               std::vector<std::int64_t>(n, static_cast<std::int64_t>(v)));
      check_aggregates(f, q, true);
    }
  }
}

TEST_CASE("regression aggregates check their operands", "[regression]") {
  Circuit c;
  const Expr x = c.input(IntType{8, true}, 4, 2), y = c.input(IntType{8, true}, 3, 1);
  REQUIRE_INVALID_ARGUMENT(regression_aggregates(c, x, y), "x is 4 x 2 s8 (4 rows) but y has 3 elements");
  const Expr beta = c.input(IntType{8, true}, 1, 2);
  REQUIRE_INVALID_ARGUMENT(predict(c, x, beta), "beta needs 3 coefficients (the intercept first) but has 2");
  const std::vector<std::int64_t> plain = {1, 2, 3};
  REQUIRE_INVALID_ARGUMENT(predict(c, x, std::span<const std::int64_t>(plain), false),
                           "beta needs 2 coefficients but has 3");
  const Expr wide = c.input(IntType{40, true}, 4, 2);
  REQUIRE_INVALID_ARGUMENT(regression_aggregates(c, wide, y.elements(0, 1).gather(std::vector<std::size_t>(4, 0))),
                           "more than 64 bits");
}

TEST_CASE("predictions are exact with encrypted and plaintext models (plaintext backend)",
          "[regression]") {
  PlaintextFixture f;
  std::mt19937_64 gen(test::catch_seed(12));
  for (const IntType xt : {IntType{8, true}, IntType{1, false}, IntType{4, false}})
    for (const bool intercept : {true, false})
      for (const std::size_t shift : {std::size_t{0}, std::size_t{5}}) {
        if (!intercept && shift) continue;
        INFO(to_string(xt) << (intercept ? " with" : " without") << " intercept, shift " << shift);
        const std::size_t n = 6, d = 3;
        const IntType bt{7, true};
        const auto q = make_data(n, d, xt, xt, random_values(xt, n * d, gen), {});
        std::vector<std::int64_t> beta = random_values(bt, d + (intercept ? 1 : 0), gen);
        beta[beta.size() - 1] = static_cast<std::int64_t>(min_value(bt));  // an extreme digit
        check_predictions(f, q, beta, bt, intercept, shift);
      }
}

TEST_CASE("encrypted aggregates and predictions (toy parameters, OpenMP)", "[regression]") {
  test::OpenMpFixture f;
  const apps::Dataset data = apps::synthetic_dataset({5, 2}, apps::FeatureKind::Numeric, 4);
  const apps::QuantizedData q = apps::quantize(data, apps::FeatureKind::Numeric, 4, std::nullopt);
  check_aggregates(f, q, true);
  check_predictions(f, q, {3, -2, 5}, IntType{4, true}, true, 3);
}

TEST_CASE("encrypted aggregates of a binary dataset (tfhe_lib_128)", "[regression]") {
  test::OpenMpFixture f(tfhe_lib_128());
  const apps::Dataset data = apps::synthetic_dataset({6, 2}, apps::FeatureKind::Binary, 9);
  const apps::QuantizedData q = apps::quantize(data, apps::FeatureKind::Binary, 8, std::nullopt);
  check_aggregates(f, q, true);
}

TEST_CASE("encrypted aggregates and predictions of 8-bit data (tfhe_lib_128)",
          "[regression][slow]") {
  test::OpenMpFixture f(tfhe_lib_128());
  const apps::Dataset data = apps::synthetic_dataset({6, 2}, apps::FeatureKind::Numeric, 10);
  const apps::QuantizedData q = apps::quantize(data, apps::FeatureKind::Numeric, 8, std::nullopt);
  check_aggregates(f, q, true);
  check_predictions(f, q, {-100, 57, 127}, IntType{8, true}, true, 7);
}
