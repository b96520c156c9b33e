// Validation audit of circuits/ (part of issue 7): an expression recorded in one circuit and
// used in a gate of another is rejected when the gate is recorded (it used to index the other
// circuit's gates out of range: a crash), and encrypted arrays refuse a client key of another
// parameter set than the backend's.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "backend_fixtures.hpp"
#include "test_support.hpp"
#include "torusgate/circuits/circuits.hpp"

using namespace torusgate;
using namespace torusgate::circuits;
using torusgate::test::seeded_rng;

namespace {
constexpr IntType u8{8, false};
}  // namespace

// BUG (found by this audit, fixed): Circuit::gate read nodes_[id] for the level of every
// input segment without checking the id, so a gate output of a larger circuit used in a
// smaller one read past the end of the smaller one's gates (ASan: SEGV in Circuit::commit).
TEST_CASE("validation: Circuit::gate rejects an expression of another circuit",
          "[circuits][validation]") {
  Circuit big;
  const Expr bx = big.input(u8, 1, 2), by = big.input(u8, 1, 2);
  const Expr sum = add(big, bx, by);  // gates of `big`
  REQUIRE(big.nodes().size() > 2);

  Circuit small;
  const Expr a = small.input(u8, 1, 2);
  // A gate output of `big`, and inputs of `big`, whether or not `small` has such numbers.
  REQUIRE_INVALID_ARGUMENT(bit_and(small, a, sum), "is an expression of another circuit");
  REQUIRE_INVALID_ARGUMENT(small.gate(GateSpec::of(GateKind::Xor), a.bit(0), sum.bit(3)),
                           "Circuit::gate(XOR): input 1 is an expression of another circuit");
  REQUIRE_INVALID_ARGUMENT(bit_or(small, a, by),
                           "Circuit::gate(OR): input 1 is an expression of another circuit");
  REQUIRE_INVALID_ARGUMENT(bit_or(small, bx, a),
                           "Circuit::gate(OR): input 0 is an expression of another circuit");
  // A segment of this circuit past its input's bits (only a hand-made plane can be).
  Circuit narrow;
  const Expr n1 = narrow.input(IntType{2, false}, 1, 2);
  Segment past = n1.bit(1).segments()[0];
  past.offset = 15;
  past.count = 1;
  REQUIRE_INVALID_ARGUMENT(narrow.majority(n1.bit(0).slice(0, 1), n1.bit(1).slice(0, 1),
                                           Plane::of(past)),
                           "input 2 reads bit 15 of input 0 but the circuit has 1 inputs and "
                           "that one has 4 bits");
  // Nothing was recorded by the refused gates; the circuit still works.
  CHECK(small.nodes().empty());
  const Expr ok = bit_and(small, a, a);
  CHECK(ok.width() == 8);
  // Copy, NOT and constants record nothing and stay free.
  CHECK(small.gate(GateSpec::of(GateKind::Not), sum.bit(0)).lanes() == 2);
}

TEST_CASE("validation: encrypted arrays refuse a client key of another parameter set",
          "[circuits][validation]") {
  test::SequentialFixture f;  // toy_INSECURE
  Csprng rng = seeded_rng(0x6b2);
  // Same n = 64 as toy_INSECURE: without the check the samples would upload and bootstrap to
  // garbage under the toy cloud key.
  const SecretKey other(toy_k2_insecure(), rng);
  const std::vector<std::uint64_t> values{1, 2, 3};
  REQUIRE_INVALID_ARGUMENT(IntArray<SequentialBackend>::encrypt(f.be, other, values, u8, rng),
                           "encrypt: the client key is for parameter set 'toy_k2_INSECURE' but "
                           "the backend's cloud key is for 'toy_INSECURE'");
  const auto x = IntArray<SequentialBackend>::encrypt(f.be, f.key, values, u8, rng);
  REQUIRE_INVALID_ARGUMENT(x.decrypt(f.be, other), "decrypt: the client key is for parameter set");
  CHECK(x.decrypt(f.be, f.key) == values);
}

// Found by an API audit (fixed): an empty client key (default-constructed or moved-from) was
// reported as a key "for parameter set ''".
TEST_CASE("validation: encrypted arrays name an empty client key", "[circuits][validation]") {
  test::SequentialFixture f;
  Csprng rng = seeded_rng(0x6b3);
  const std::vector<std::uint64_t> values{1, 2, 3};
  REQUIRE_INVALID_ARGUMENT(IntArray<SequentialBackend>::encrypt(f.be, SecretKey{}, values, u8, rng),
                           "encrypt: the client key is empty (default-constructed or moved-from)");
  const auto x = IntArray<SequentialBackend>::encrypt(f.be, f.key, values, u8, rng);
  REQUIRE_INVALID_ARGUMENT(x.decrypt(f.be, SecretKey{}), "decrypt: the client key is empty");
}

// A secret key of the same parameter set that did not make the backend's cloud key: its
// samples bootstrap to random bits. The key ids tell them apart (CloudKey::key_id).
TEST_CASE("validation: encrypted arrays refuse a secret key the cloud key was not made from",
          "[circuits][validation][key_id]") {
  test::SequentialFixture f;  // toy_INSECURE
  Csprng rng = seeded_rng(0x6b4);
  const SecretKey other(f.key.parameters(), rng);
  REQUIRE(f.be.key_id() == f.key.key_id());
  const std::vector<std::uint64_t> values{4, 5};
  REQUIRE_INVALID_ARGUMENT(IntArray<SequentialBackend>::encrypt(f.be, other, values, u8, rng),
                           "encrypt: the client key (key id " + key_id_text(other.key_id()) +
                               ") is not the secret key the backend's cloud key was made from "
                               "(key id " + key_id_text(f.key.key_id()) + ")");
  const auto x = IntArray<SequentialBackend>::encrypt(f.be, f.key, values, u8, rng);
  REQUIRE_INVALID_ARGUMENT(x.decrypt(f.be, other), "decrypt: the client key (key id");
  CHECK(x.decrypt(f.be, f.key) == values);
  // A cloud key that does not name its secret key (key id 0) is not checked.
  SequentialBackend anonymous(std::make_shared<const CloudKey>(
      CloudKey(f.be.context().cloud_key().bootstrapping_key(),
               f.be.context().cloud_key().key_switching_key())));
  CHECK(anonymous.key_id() == 0);
  CHECK_NOTHROW(IntArray<SequentialBackend>::encrypt(anonymous, other, values, u8, rng));
}

// Found by an API audit (fixed): enum values outside their enumerations were accepted
// (AdderKind(9) ran as Sklansky) or gave an internal message (MultiplierKind(9)).
TEST_CASE("validation: adder, multiplier and product kinds outside their enumerations",
          "[circuits][validation]") {
  Circuit c;
  const Expr x = c.input(u8, 1, 2), y = c.input(u8, 1, 2);
  const auto bad_adder = static_cast<AdderKind>(9);
  REQUIRE_INVALID_ARGUMENT(add(c, x, y, bad_adder),
                           "add: AdderKind(9) is not an adder; expected ripple, number-wise, "
                           "kogge-stone or sklansky");
  REQUIRE_INVALID_ARGUMENT(add_with_carry(c, x, y, bit_range(x, 0, 1), bad_adder),
                           "add_with_carry: AdderKind(9)");
  REQUIRE_INVALID_ARGUMENT(subtract(c, x, y, bad_adder), "subtract: AdderKind(9)");
  REQUIRE_INVALID_ARGUMENT(negate(c, x, bad_adder), "negate: AdderKind(9)");
  BitHeap heap(8, 2);
  heap.add(x);
  heap.add(y);
  REQUIRE_INVALID_ARGUMENT(heap.sum(c, false, bad_adder), "BitHeap::sum: AdderKind(9)");
  REQUIRE_INVALID_ARGUMENT(multiply(c, x, y, Product::Wrapping, static_cast<MultiplierKind>(9)),
                           "multiply: MultiplierKind(9) is not a multiplier; expected dadda, "
                           "tree or karatsuba");
  REQUIRE_INVALID_ARGUMENT(multiply(c, x, y, static_cast<Product>(7)),
                           "multiply: Product(7) is neither");
  REQUIRE_INVALID_ARGUMENT(multiply_karatsuba(c, x, y, static_cast<Product>(7), 3),
                           "multiply_karatsuba: Product(7)");
  CHECK(c.nodes().empty());  // nothing was recorded
  for (AdderKind kind : {AdderKind::Ripple, AdderKind::NumberWise, AdderKind::KoggeStone,
                         AdderKind::Sklansky}) {
    CHECK_NOTHROW(add(c, x, y, kind));
  }
}

// Found by an API audit (fixed): a shape whose bit count wraps 2^64 passed the checks that
// compare it with a buffer or allocate its planes.
TEST_CASE("validation: shapes of more than 2^64 bits are refused", "[circuits][validation]") {
  Circuit c;
  const std::size_t half = std::size_t{1} << 32;
  REQUIRE_INVALID_ARGUMENT(c.input(u8, half, half), "Circuit::input: 4294967296 x 4294967296 u8 "
                                                    "has more than 2^64 bits");
  REQUIRE_INVALID_ARGUMENT(c.input(IntType{64, false}, std::size_t{1} << 30, std::size_t{1} << 30),
                           "has more than 2^64 bits");
  CHECK(bit_count(u8, 3, 5, "test") == 120);
  test::PlaintextFixture f;
  // 2^61 x 2^3 x 8 bits wraps to 0: the empty buffer matched before.
  REQUIRE_INVALID_ARGUMENT(
      IntArray<PlaintextBackend>(f.be.allocate(0), u8, std::size_t{1} << 61, 8),
      "IntArray: 2305843009213693952 x 8 u8 has more than 2^64 bits");
}

// Found by an API audit (fixed): an empty expression (Expr{}, no bits) crashed rotate (a
// division by zero), less (a null plane), divide, abs, shift_right and resize (the sign bit of
// no bits), and sort and sum returned without an error. Every entry point refuses it now.
TEST_CASE("validation: every operation refuses an empty expression", "[circuits][validation]") {
  Circuit c;
  const Expr x = c.input(u8, 1, 4), e;
  const Expr se = e.as_signed(true);
  const std::vector<std::uint64_t> table(256, 1);
  const std::vector<std::int64_t> beta = {1, 2};
  int n = 0;
  const auto refuses = [&n](const auto& call) {
    INFO("call " << ++n);
    REQUIRE_INVALID_ARGUMENT(call(), "empty expression");
  };
  refuses([&] { return add(c, x, e); });
  refuses([&] { return add(c, e, e); });
  refuses([&] { return subtract(c, e, x); });
  refuses([&] { return negate(c, e); });
  refuses([&] { return abs(c, se); });
  refuses([&] { return less(c, e, e); });
  refuses([&] { return equal(c, x, e); });
  refuses([&] { return min(c, e, e); });
  refuses([&] { return bit_and(c, e, x); });
  refuses([&] { return select(c, bit_range(x, 0, 1), e, e); });
  refuses([&] { return shift_left(e, 1); });
  refuses([&] { return shift_right(se, 1); });
  refuses([&] { return rotate_left(e, 1); });
  refuses([&] { return rotate_right(e, 1); });
  refuses([&] { return resize(se, 4); });
  refuses([&] { return broadcast(e, 4); });
  refuses([&] { return shift_left(c, e, x); });
  refuses([&] { return rotate_right(c, x, e); });
  refuses([&] { return count_ones(c, e); });
  refuses([&] { return leading_zeros(c, e); });
  refuses([&] { return trailing_zeros(c, e); });
  refuses([&] { return divide(c, e, e); });
  refuses([&] { return remainder(c, x, e); });
  refuses([&] { return divide_constant(c, se, 3).quotient; });
  refuses([&] { return multiply(c, e, x); });
  refuses([&] { return multiply_constant(c, e, 3); });
  refuses([&] { return sum(c, e, 4); });
  refuses([&] { return dot(c, e, e, 4); });
  refuses([&] { return transpose(e); });
  refuses([&] { return matmul(c, e, x); });
  refuses([&] { return lookup(c, e, table, u8); });
  refuses([&] { return sort(c, e); });
  refuses([&] { return sort_by_key(c, e, x).keys; });
  refuses([&] { return min_element(c, e); });
  refuses([&] { return argmax(c, e); });
  refuses([&] { return predict(c, e, std::span<const std::int64_t>(beta), false); });
  refuses([&] { return regression_aggregates(c, e, x).xtx; });
  refuses([&] { return regression_aggregates(c, x.reshape(4, 1), e).xtx; });
  refuses([&] { return predict(c, x, e); });
  // These named no operation before ("Expr: an integer needs at least one bit").
  REQUIRE_INVALID_ARGUMENT(bit_not(e), "bit_not: an operand is an empty expression");
  const Expr parts[] = {x, e};
  REQUIRE_INVALID_ARGUMENT(concat_elements(parts),
                           "concat_elements: an operand is an empty expression");
  REQUIRE_INVALID_ARGUMENT(e.sign_bit(), "empty expression");
  CHECK(c.nodes().empty());  // nothing was recorded
}

// Found by an API audit (fixed): the result types of the regression's sums overflowed their
// 128-bit range arithmetic for 64-bit operands (undefined behaviour), so predict and
// regression_aggregates returned types far too narrow: predict of s64 data gave u63.
TEST_CASE("validation: regression result types that need more than 64 bits are refused",
          "[circuits][validation]") {
  const IntType s64{64, true}, u64{64, false}, s8{8, true};
  REQUIRE_INVALID_ARGUMENT(prediction_type(s64, s64, 4, false), "needs more than 64 bits");
  REQUIRE_INVALID_ARGUMENT(prediction_type(u64, u64, 1, true), "needs more than 64 bits");
  REQUIRE_INVALID_ARGUMENT(xtx_type(s64, 3), "needs more than 64 bits");
  REQUIRE_INVALID_ARGUMENT(xty_type(s64, s64, 3), "needs more than 64 bits");
  const std::vector<std::int64_t> big = {INT64_MIN, INT64_MAX, INT64_MIN};
  REQUIRE_INVALID_ARGUMENT(prediction_type(s64, std::span<const std::int64_t>(big), true, 63),
                           "needs more than 64 bits");
  Circuit c;
  const Expr x = c.input(s64, 4, 1), beta = c.input(s64, 1, 2);
  REQUIRE_INVALID_ARGUMENT(predict(c, x, beta), "needs more than 64 bits");
  // Operands wider than 64 bits: named by the caller and the operand (before: "min_value:
  // width 65").
  const IntType u65{65, false};
  const Expr wide = c.input(u65, 4, 1), narrow = c.input(s8, 4, 1);
  REQUIRE_INVALID_ARGUMENT(regression_aggregates(c, wide, narrow),
                           "regression_aggregates: x is u65 but regression takes integers of 1 "
                           "to 64 bits");
  REQUIRE_INVALID_ARGUMENT(regression_aggregates(c, narrow, wide),
                           "regression_aggregates: y is u65");
  const std::vector<std::int64_t> coefficients = {1, 2};
  REQUIRE_INVALID_ARGUMENT(predict(c, wide, std::span<const std::int64_t>(coefficients)),
                           "predict: x is u65");
  REQUIRE_INVALID_ARGUMENT(predict(c, narrow, c.input(u65, 1, 2)), "predict: beta is u65");
  REQUIRE_INVALID_ARGUMENT(xtx_type(u65, 3), "xtx_type: x is u65");
  REQUIRE_INVALID_ARGUMENT(xty_type(s8, u65, 3), "xty_type: y is u65");
  REQUIRE_INVALID_ARGUMENT(prediction_type(s8, u65, 2, true), "prediction_type: beta is u65");
  // Types that fit are unchanged: 8-bit data, 12 rows.
  CHECK(xtx_type(s8, 12) == IntType{19, true});
  CHECK(prediction_type(s8, s8, 2, true) == IntType{17, true});
}

// Found by an audit (fixed): a moved-from array passed to execute failed in the backend as
// "PlaintextBackend::evaluate: op 0 (XOR) needs input 0 but it is an empty span".
TEST_CASE("validation: execute names an input array that holds no bits", "[circuits][validation]") {
  torusgate::test::PlaintextFixture f;
  Csprng rng = seeded_rng(21);
  const std::vector<std::uint64_t> v = {1, 2, 3};
  IntArray<PlaintextBackend> a = IntArray<PlaintextBackend>::encrypt(f.be, f.key, v, u8, rng);
  const IntArray<PlaintextBackend> b = IntArray<PlaintextBackend>::encrypt(f.be, f.key, v, u8, rng);
  Circuit c;
  const Expr x = c.input(u8, 3), y = c.input(u8, 3);
  const Expr s = bit_xor(c, x, y);
  const Schedule sched = compile(c, std::span<const Expr>(&s, 1));
  const IntArray<PlaintextBackend> taken = std::move(a);
  const IntArray<PlaintextBackend>* ins[] = {&a, &b};  // NOLINT(bugprone-use-after-move)
  REQUIRE_INVALID_ARGUMENT(
      execute(f.be, sched, std::span<const IntArray<PlaintextBackend>* const>(ins)),
      "execute: input 0 (u8) holds 0 bits but needs 24 (an array moved from?)");
  const IntArray<PlaintextBackend>* good[] = {&taken, &b};
  CHECK(execute(f.be, sched, std::span<const IntArray<PlaintextBackend>* const>(good))
            .at(0)
            .decrypt(f.be, f.key) == std::vector<std::uint64_t>{0, 0, 0});
}
