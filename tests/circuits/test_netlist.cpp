// The netlist and its scheduler: gate folding (constants, negations, repeated inputs, the
// Shannon expansion, complemented gates), deduplication of identical gates, plane views,
// dead-gate removal, merging of independent operations into one batch per level, scratch
// reuse, outputs that are views (negated, repeated, constant planes), and every validation
// of circuits/.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "circuit_test_support.hpp"

using namespace torusgate;
using namespace torusgate::circuits;
using namespace torusgate::test;

namespace {

using PB = PlaintextBackend;
using Arr = IntArray<PB>;

constexpr IntType u1{1, false};

// Three 1-bit inputs over 8 lanes holding every combination: a = bit 0 of the lane number,
// b = bit 1, c = bit 2.
struct ThreeBits {
  PlaintextFixture f;
  Csprng rng = seeded_rng(3);
  std::vector<std::uint64_t> va, vb, vc;
  std::optional<Arr> A, B, C;
  ThreeBits() {
    for (std::uint64_t e = 0; e < 8; ++e) {
      va.push_back(e & 1);
      vb.push_back((e >> 1) & 1);
      vc.push_back((e >> 2) & 1);
    }
    A.emplace(Arr::encrypt(f.be, f.key, va, u1, rng));
    B.emplace(Arr::encrypt(f.be, f.key, vb, u1, rng));
    C.emplace(Arr::encrypt(f.be, f.key, vc, u1, rng));
  }
  // The three inputs of a program, as planes a, b, c.
  std::array<Plane, 3> inputs(Program<PB>& prog) const {
    return {prog.input(*A).bit(0), prog.input(*B).bit(0), prog.input(*C).bit(0)};
  }
  // Runs the planes as 1-bit outputs; returns each one's 8 lanes.
  std::vector<std::vector<std::uint64_t>> run(Program<PB>& prog, const std::vector<Plane>& planes) {
    std::vector<Expr> outs;
    for (const Plane& p : planes) outs.push_back(Expr({p}, false));
    const std::vector<Arr> r = prog.run(std::span<const Expr>(outs));
    std::vector<std::vector<std::uint64_t>> values;
    for (const Arr& a : r) values.push_back(a.decrypt(f.be, f.key));
    return values;
  }
};

std::vector<std::uint64_t> lanes_of(bool (*fn)(bool, bool, bool)) {
  std::vector<std::uint64_t> v;
  for (unsigned e = 0; e < 8; ++e) v.push_back(fn(e & 1, (e >> 1) & 1, (e >> 2) & 1) ? 1 : 0);
  return v;
}

}  // namespace

// ============================================================================ folding

TEST_CASE("gates with constant, negated or repeated inputs fold", "[circuits][netlist]") {
  ThreeBits t;
  Program<PB> prog(t.f.be);
  Circuit& c = prog.circuit();
  const auto [a, b, d] = t.inputs(prog);
  const Plane one = Plane::constant(true, 8), zero = Plane::constant(false, 8);

  SECTION("to an input, its negation or a constant, recording nothing") {
    CHECK(c.and_(a, one) == a);
    CHECK(c.and_(one, a) == a);
    CHECK(c.and_(a, zero) == zero);
    CHECK(c.or_(a, zero) == a);
    CHECK(c.or_(a, one) == one);
    CHECK(c.xor_(a, one) == ~a);
    CHECK(c.xor_(one, ~a) == a);
    CHECK(c.xor_(a, zero) == a);
    CHECK(c.xor_(a, a) == zero);
    CHECK(c.xor_(a, ~a) == one);
    CHECK(c.and_(a, a) == a);
    CHECK(c.and_(a, ~a) == zero);
    CHECK(c.or_(~a, ~a) == ~a);
    CHECK(c.mux(one, a, b) == a);
    CHECK(c.mux(zero, a, b) == b);
    CHECK(c.mux(a, b, b) == b);
    CHECK(c.mux(a, one, zero) == a);
    CHECK(c.mux(a, zero, one) == ~a);
    CHECK(c.majority(a, a, b) == a);
    CHECK(c.majority(a, ~a, b) == b);
    CHECK(c.xor3(a, b, b) == a);
    CHECK(c.xor3(a, one, zero) == ~a);
    CHECK(c.prefix_generate(one, zero, b) == one);
    CHECK(c.gate(GateSpec::of(GateKind::Not), a) == ~a);
    CHECK(c.gate(GateSpec::of(GateKind::Copy), a) == a);
    CHECK(c.nodes().empty());
  }

  SECTION("MAJ(a, b, 1) is one OR-like gate and MAJ(a, b, 0) one AND-like gate") {
    const Plane m1 = c.majority(a, b, one);
    REQUIRE(c.nodes().size() == 1);
    const Plane m0 = c.majority(a, zero, b);
    REQUIRE(c.nodes().size() == 2);
    for (const Node& n : c.nodes()) {
      REQUIRE(n.pieces.size() == 1);
      CHECK(n.pieces[0].spec.arity == 2);
      CHECK(n.pieces[0].spec.bootstraps() == 1);
      CHECK(n.level == 1);
    }
    const auto v = t.run(prog, {m1, m0});
    CHECK(v[0] == lanes_of([](bool x, bool y, bool) { return x || y; }));
    CHECK(v[1] == lanes_of([](bool x, bool y, bool) { return x && y; }));
    CHECK(prog.last_schedule().cost.bootstraps == 16);
  }

  SECTION("a MUX with one negated data input is expanded into three sign gates") {
    const Plane m = c.mux(a, ~b, d);
    CHECK(c.nodes().size() == 3);
    const Plane m2 = c.mux(a, b, ~d);
    const Plane m3 = c.mux(~a, b, d);  // a permuted MUX
    const Plane m4 = c.mux(a, ~b, ~d);
    const auto v = t.run(prog, {m, m2, m3, m4});
    CHECK(v[0] == lanes_of([](bool s, bool x, bool y) { return s ? !x : y; }));
    CHECK(v[1] == lanes_of([](bool s, bool x, bool y) { return s ? x : !y; }));
    CHECK(v[2] == lanes_of([](bool s, bool x, bool y) { return !s ? x : y; }));
    CHECK(v[3] == lanes_of([](bool s, bool x, bool y) { return s ? !x : !y; }));
    // The expansion (every gate a sign gate) has depth 2 and 3 bootstraps per lane.
    Program<PB> alone(t.f.be);
    const auto [pa, pb, pc] = t.inputs(alone);
    const Plane e = alone.circuit().mux(pa, ~pb, pc);
    CHECK(t.run(alone, {e})[0] == v[0]);
    CHECK(alone.last_schedule().cost.depth == 2);
    CHECK(alone.last_schedule().cost.bootstraps == 3 * 8);
  }
}

TEST_CASE("a gate whose complement one gate computes is that gate read negated",
          "[circuits][netlist]") {
  // MUX(a, ~b, ~c) = NOT MUX(a, b, c): one MUX (2 bootstraps a lane) in one level, not the
  // three-gate expansion of a MUX with one negated data input.
  ThreeBits t;
  Program<PB> prog(t.f.be);
  Circuit& c = prog.circuit();
  const auto [a, b, d] = t.inputs(prog);
  const Plane m = c.mux(a, ~b, ~d);
  REQUIRE(c.nodes().size() == 1);
  CHECK(c.nodes()[0].pieces[0].spec.kind == GateKind::Mux);
  CHECK(m == ~c.mux(a, b, d));  // the same node, recorded once
  CHECK(c.nodes().size() == 1);
  // Read by another MUX beside a plain plane: the negation folds into the reader's inputs.
  const Plane r = c.mux(b, m, ~d);
  const auto v = t.run(prog, {m, r});
  CHECK(v[0] == lanes_of([](bool s, bool x, bool y) { return s ? !x : !y; }));
  CHECK(v[1] == lanes_of([](bool s, bool x, bool y) { return x ? (s ? !x : !y) : !y; }));
  Program<PB> alone(t.f.be);
  const auto [pa, pb, pc] = t.inputs(alone);
  CHECK(t.run(alone, {alone.circuit().mux(pa, ~pb, ~pc)})[0] == v[0]);
  CHECK(alone.last_schedule().cost.depth == 1);
  CHECK(alone.last_schedule().cost.bootstraps == 2 * 8);
}

TEST_CASE("folded gates compute their function for every literal and constant pattern",
          "[circuits][netlist][exhaustive]") {
  ThreeBits t;
  Program<PB> prog(t.f.be);
  Circuit& c = prog.circuit();
  const auto [a, b, d] = t.inputs(prog);
  // Each gate input is one of a, ~a, b, ~b, c, ~c, 0, 1.
  const std::vector<Plane> choices = {a, ~a, b, ~b, d, ~d, Plane::constant(false, 8),
                                      Plane::constant(true, 8)};
  const auto lane_value = [](std::size_t choice, unsigned e) -> bool {
    if (choice >= 6) return choice == 7;
    const bool v = (e >> (choice / 2)) & 1;
    return (choice % 2) ? !v : v;
  };
  std::vector<GateSpec> specs;
  for (GateKind k : {GateKind::And, GateKind::Nand, GateKind::Or, GateKind::Nor, GateKind::Xor,
                     GateKind::Xnor, GateKind::AndNY, GateKind::AndYN, GateKind::OrNY,
                     GateKind::OrYN, GateKind::Mux, GateKind::Majority, GateKind::Xor3,
                     GateKind::PrefixGenerate})
    specs.push_back(GateSpec::of(k));
  specs.push_back(GateSpec::threshold(1, {3, -1, 2}));
  specs.push_back(GateSpec::threshold(2, {1, 2}));
  struct Case {
    GateSpec spec;
    std::array<std::size_t, 3> in;
  };
  std::vector<Case> cases;
  std::vector<Plane> planes;
  for (const GateSpec& spec : specs) {
    const std::size_t n = spec.arity;
    const std::size_t combos = n == 2 ? 64 : 512;
    for (std::size_t k = 0; k < combos; ++k) {
      const std::array<std::size_t, 3> in{k % 8, (k / 8) % 8, (k / 64) % 8};
      cases.push_back(Case{spec, in});
      planes.push_back(c.gate(spec, choices[in[0]], choices[in[1]], n == 3 ? choices[in[2]] : Plane{}));
    }
  }
  const auto got = t.run(prog, planes);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    std::vector<std::uint64_t> want;
    for (unsigned e = 0; e < 8; ++e) {
      bool in[3] = {false, false, false};
      for (std::size_t j = 0; j < cases[i].spec.arity; ++j) in[j] = lane_value(cases[i].in[j], e);
      want.push_back(cases[i].spec.evaluate(in[0], in[1], in[2]) ? 1 : 0);
    }
    if (got[i] != want && bad++ < 5) {
      INFO("gate " << gate_kind_name(cases[i].spec.kind) << " offset "
                   << int(cases[i].spec.offset_eighths) << " on inputs " << cases[i].in[0] << ", "
                   << cases[i].in[1] << ", " << cases[i].in[2]
                   << " (0..5: a, ~a, b, ~b, c, ~c; 6, 7: constants 0, 1)");
      CHECK(got[i] == want);
    }
  }
  CHECK(bad == 0);
  // Every recorded gate is one backend gate per lane; nothing folds to more than three.
  CHECK(prog.last_schedule().cost.depth <= 2);
}

TEST_CASE("identical gates are recorded once", "[circuits][netlist]") {
  Circuit c;
  const Expr x = c.input(IntType{8, false}, 4), y = c.input(IntType{8, false}, 4);
  const Plane g1 = c.and_(x.bit(0), y.bit(1));
  REQUIRE(c.nodes().size() == 1);
  const Plane g2 = c.and_(x.bit(0), y.bit(1));
  CHECK(g1 == g2);
  CHECK(c.nodes().size() == 1);
  c.and_(x.bit(0), y.bit(2));
  CHECK(c.nodes().size() == 2);
  // A whole operation recorded twice adds no node the second time.
  const Expr s1 = add(c, x, y);
  const std::size_t after_one = c.nodes().size();
  const Expr s2 = add(c, x, y);
  CHECK(c.nodes().size() == after_one);
  CHECK(s1.bits() == s2.bits());
  // The same gate on a sub-range of lanes is a different gate.
  c.and_(x.bit(0).slice(0, 2), y.bit(1).slice(0, 2));
  CHECK(c.nodes().size() == after_one + 1);
}

TEST_CASE("compile drops gates no output needs", "[circuits][netlist][schedule]") {
  const IntType type{8, false};
  Circuit alone;
  const Expr ax = alone.input(type, 1), ay = alone.input(type, 1);
  const Expr only_add = add(alone, ax, ay);
  const ScheduleCost want = compile(alone, std::span<const Expr>(&only_add, 1)).cost;

  Circuit both;
  const Expr x = both.input(type, 1), y = both.input(type, 1);
  const Expr s = add(both, x, y);
  const Expr p = multiply(both, x, y, Product::Full);
  (void)p;
  const ScheduleCost got = compile(both, std::span<const Expr>(&s, 1)).cost;
  CHECK(got.gates == want.gates);
  CHECK(got.bootstraps == want.bootstraps);
  CHECK(got.depth == want.depth);
  CHECK(got.batches == want.batches);
  CHECK(both.nodes().size() > alone.nodes().size());

  // Gates recorded but never used cost nothing: a circuit whose output is an input.
  const Expr out = x;
  const Schedule sched = compile(both, std::span<const Expr>(&out, 1));
  CHECK(sched.cost.gates == 0);
  CHECK(sched.cost.bootstraps == 0);
  CHECK(sched.cost.depth == 0);
  CHECK(sched.cost.free_gates == 8);
  CHECK(sched.scratch_bits == 0);
}

// ============================================================================ planes

TEST_CASE("planes: slice, concat, gather, broadcast and negation", "[circuits][netlist]") {
  Circuit c;
  const Plane p = c.input(u1, 8).bit(0);
  REQUIRE(p.lanes() == 8);
  REQUIRE(p.segments().size() == 1);
  CHECK_FALSE(p.constant_value().has_value());

  const Plane s = p.slice(2, 3);
  REQUIRE(s.segments().size() == 1);
  CHECK(s.lanes() == 3);
  CHECK(s.segments()[0].offset == 2);
  CHECK(s.segments()[0].count == 3);
  CHECK(p.slice(0, 8) == p);
  CHECK(p.slice(8, 0).empty());

  const Plane parts[] = {p.slice(0, 2), p.slice(2, 3)};
  const Plane joined = Plane::concat(parts);
  CHECK(joined == p.slice(0, 5));
  CHECK(joined.segments().size() == 1);

  CHECK(p.gather(std::vector<std::size_t>{3, 4, 5}) == p.slice(3, 3));
  const Plane rev = p.gather(std::vector<std::size_t>{7, 6, 5});
  CHECK(rev.lanes() == 3);
  CHECK(rev.segments().size() == 3);
  CHECK(rev.segments()[0].offset == 7);
  CHECK(rev.segments()[2].offset == 5);
  const Plane twice = p.gather(std::vector<std::size_t>{4, 4});
  CHECK(twice.lanes() == 2);
  CHECK(twice.segments().size() == 2);

  const Plane b = p.slice(4, 1).broadcast(5);
  REQUIRE(b.segments().size() == 1);
  CHECK(b.lanes() == 5);
  CHECK(b.segments()[0].stride == 0);
  CHECK(b.segments()[0].offset == 4);
  CHECK(b.slice(1, 3).segments()[0].offset == 4);
  CHECK(b.gather(std::vector<std::size_t>{0, 4}).lanes() == 2);

  CHECK(~~p == p);
  CHECK((~p).segments()[0].negated);
  CHECK_FALSE(p.segments()[0].negated);
  CHECK_FALSE(Plane::concat(std::vector<Plane>{p.slice(0, 1), (~p).slice(1, 1)}) == p.slice(0, 2));

  const Plane one = Plane::constant(true, 3);
  CHECK(one.constant_value() == true);
  CHECK((~one).constant_value() == false);
  const Plane ones = Plane::constant(true, 1).broadcast(4);
  CHECK(ones.lanes() == 4);
  CHECK(ones.constant_value() == true);
  const Plane mixed[] = {Plane::constant(true, 2), Plane::constant(false, 2)};
  CHECK_FALSE(Plane::concat(mixed).constant_value().has_value());
  const Plane same[] = {Plane::constant(false, 2), Plane::constant(false, 3)};
  CHECK(Plane::concat(same) == Plane::constant(false, 5));
}

TEST_CASE("element views of expressions run on a backend", "[circuits][netlist]") {
  PlaintextFixture f;
  Csprng rng = seeded_rng(5);
  const IntType type{5, true};
  const std::vector<std::uint64_t> vals = from_signed(std::vector<std::int64_t>{-16, -1, 0, 1, 7, 15, -8, 3});
  const Arr ax = Arr::encrypt(f.be, f.key, vals, type, rng);
  Program<PB> prog(f.be);
  const Expr x = prog.input(ax);
  const Expr parts[] = {x.elements(5, 3), broadcast(x.elements(1, 1), 2), x.gather(std::vector<std::size_t>{7, 0, 0})};
  const Expr cat = concat_elements(parts);
  const Expr m = x.reshape(2, 4);
  CHECK(m.rows() == 2);
  CHECK(m.cols() == 4);
  const Expr tm = transpose(m);
  CHECK(tm.rows() == 4);
  CHECK(tm.cols() == 2);
  const auto out = prog.run({cat, tm, bit_not(m), x.as_signed(false)});
  CHECK(prog.last_schedule().cost.gates == 0);
  CHECK(out[0].decrypt_signed(f.be, f.key) == std::vector<std::int64_t>{15, -8, 3, -1, -1, 3, -16, -16});
  CHECK(out[1].rows() == 4);
  CHECK(out[1].decrypt_signed(f.be, f.key) == std::vector<std::int64_t>{-16, 7, -1, 15, 0, -8, 1, 3});
  CHECK(out[2].rows() == 2);
  CHECK(out[2].decrypt_signed(f.be, f.key) == std::vector<std::int64_t>{15, 0, -1, -2, -8, -16, 7, -4});
  CHECK_FALSE(out[3].is_signed());
  CHECK(out[3].decrypt(f.be, f.key) == std::vector<std::uint64_t>{16, 31, 0, 1, 7, 15, 24, 3});
}

// ============================================================================ scheduling

TEST_CASE("compile handles outputs that are negations, repeats, constants and inputs",
          "[circuits][netlist][schedule]") {
  ThreeBits t;
  Program<PB> prog(t.f.be);
  Circuit& c = prog.circuit();
  const auto [a, b, d] = t.inputs(prog);
  const Plane g = c.and_(a, b);         // read by two outputs
  const Plane h = c.or_(b, d);          // only ever read negated (flipped into its output)
  const Plane k = c.xor_(a, d);         // read negated and by a later gate
  const Plane later = c.and_(k, b);
  const std::vector<Expr> outs = {
      Expr({g, g, ~g}, false),
      Expr({~h}, false),
      Expr({~k, later, a, ~d, Plane::constant(true, 8), Plane::constant(false, 8)}, false),
      Expr({Plane::concat(std::vector<Plane>{g.slice(0, 4), b.slice(4, 4)}),
            g.slice(3, 1).broadcast(8)}, false),
  };
  const std::vector<Arr> r = prog.run(std::span<const Expr>(outs));
  const std::size_t n = 8;
  std::vector<std::vector<std::uint8_t>> bits;
  for (const Arr& arr : r) bits.push_back(arr.decrypt_bits(t.f.be, t.f.key));
  for (unsigned e = 0; e < n; ++e) {
    const bool va = e & 1, vb = (e >> 1) & 1, vd = (e >> 2) & 1;
    const bool vg = va && vb, vh = vb || vd, vk = va != vd;
    INFO("lane " << e);
    CHECK(bits[0][0 * n + e] == vg);
    CHECK(bits[0][1 * n + e] == vg);
    CHECK(bits[0][2 * n + e] == !vg);
    CHECK(bits[1][e] == !vh);
    CHECK(bits[2][0 * n + e] == !vk);
    CHECK(bits[2][1 * n + e] == (vk && vb));
    CHECK(bits[2][2 * n + e] == va);
    CHECK(bits[2][3 * n + e] == !vd);
    CHECK(bits[2][4 * n + e] == 1);
    CHECK(bits[2][5 * n + e] == 0);
    CHECK(bits[3][0 * n + e] == (e < 4 ? vg : vb));
    CHECK(bits[3][1 * n + e] == 1);  // lane 3 of g: a = 1 and b = 1
  }
}

TEST_CASE("a schedule runs again on other inputs, and a program runs again after more recording",
          "[circuits][netlist][schedule]") {
  PlaintextFixture f;
  Csprng rng = seeded_rng(0x2e);
  const IntType type{8, true};
  Circuit c;
  const Expr x = c.input(type, 3), y = c.input(type, 3);
  const Expr p = multiply(c, x, y);
  const Schedule sched = compile(c, std::span<const Expr>(&p, 1));
  for (int round = 0; round < 3; ++round) {
    INFO("round " << round);
    const auto xs = random_values(rng, type, 3), ys = random_values(rng, type, 3);
    const Arr ax = Arr::encrypt(f.be, f.key, xs, type, rng), ay = Arr::encrypt(f.be, f.key, ys, type, rng);
    const Arr* in[] = {&ax, &ay};
    const auto out = execute(f.be, sched, std::span<const Arr* const>(in));
    const auto got = out[0].decrypt(f.be, f.key);
    for (std::size_t e = 0; e < 3; ++e)
      CHECK(got[e] == pattern_of(value_of(xs[e], type) * value_of(ys[e], type), type));
  }

  const auto xs = random_values(rng, type, 3), ys = random_values(rng, type, 3);
  const Arr ax = Arr::encrypt(f.be, f.key, xs, type, rng), ay = Arr::encrypt(f.be, f.key, ys, type, rng);
  Program<PB> prog(f.be);
  const Expr ex = prog.input(ax), ey = prog.input(ay);
  const Arr s = prog.run(add(prog.circuit(), ex, ey));
  const Arr d = prog.run(subtract(prog.circuit(), ex, ey));
  const Arr m = prog.run(max(prog.circuit(), ex, ey));
  const auto sv = s.decrypt(f.be, f.key), dv = d.decrypt(f.be, f.key), mv = m.decrypt(f.be, f.key);
  for (std::size_t e = 0; e < 3; ++e) {
    const i128 a = value_of(xs[e], type), b = value_of(ys[e], type);
    CHECK(sv[e] == pattern_of(a + b, type));
    CHECK(dv[e] == pattern_of(a - b, type));
    CHECK(mv[e] == pattern_of(a > b ? a : b, type));
  }
}

TEST_CASE("independent operations in one program share one batch per level",
          "[circuits][netlist][schedule]") {
  const std::uint64_t seed = catch_seed(0x5c4ed);
  INFO("seed " << seed);
  PlaintextFixture f;
  Csprng rng = seeded_rng(seed);
  const IntType type{8, false};
  const std::vector<std::uint64_t> xs = random_values(rng, type, 4), ys = random_values(rng, type, 4);
  const Arr ax = Arr::encrypt(f.be, f.key, xs, type, rng);
  const Arr ay = Arr::encrypt(f.be, f.key, ys, type, rng);

  const auto cost_of = [&](auto record) {
    Circuit c;
    const Expr out = record(c, c.input(type, 4), c.input(type, 4));
    return compile(c, std::span<const Expr>(&out, 1)).cost;
  };
  const ScheduleCost add_cost = cost_of([](Circuit& c, Expr x, Expr y) { return add(c, x, y); });
  const ScheduleCost mul_cost = cost_of([](Circuit& c, Expr x, Expr y) { return multiply(c, x, y); });
  REQUIRE(add_cost.depth > 0);
  REQUIRE(mul_cost.depth > 0);

  Program<PB> prog(f.be);
  const Expr x = prog.input(ax), y = prog.input(ay);
  const Expr s = add(prog.circuit(), x, y), p = multiply(prog.circuit(), x, y);
  f.be.reset_stats();
  const auto out = prog.run({s, p});
  const ScheduleCost cost = prog.last_schedule().cost;
  CHECK(cost.depth == std::max(add_cost.depth, mul_cost.depth));
  CHECK(cost.depth < add_cost.depth + mul_cost.depth);
  CHECK(f.be.stats().bootstrap_batches == cost.depth);
  CHECK(f.be.stats().batches == cost.batches);
  CHECK(f.be.stats().bootstraps == cost.bootstraps);
  // Shared gates (x_i AND y_i) are recorded once.
  CHECK(cost.bootstraps <= add_cost.bootstraps + mul_cost.bootstraps);
  const auto sv = out[0].decrypt(f.be, f.key), pv = out[1].decrypt(f.be, f.key);
  for (std::size_t e = 0; e < xs.size(); ++e) {
    CHECK(sv[e] == ((xs[e] + ys[e]) & 255));
    CHECK(pv[e] == ((xs[e] * ys[e]) & 255));
  }
}

TEST_CASE("the rows of a matrix product and the Karatsuba sub-products share batches",
          "[circuits][netlist][schedule]") {
  const std::uint64_t seed = catch_seed(0x3a7);
  INFO("seed " << seed);
  PlaintextFixture f;
  Csprng rng = seeded_rng(seed);

  SECTION("matmul: one batch per level, and the depth of a single dot product") {
    const IntType type{6, false};
    const auto av = random_values(rng, type, 9), bv = random_values(rng, type, 9);
    const Arr a = Arr::encrypt(f.be, f.key, av, type, rng, 3);
    const Arr b = Arr::encrypt(f.be, f.key, bv, type, rng, 3);
    Program<PB> prog(f.be);
    const Expr out = matmul(prog.circuit(), prog.input(a), prog.input(b));
    f.be.reset_stats();
    const Arr r = prog.run(out);
    const ScheduleCost cost = prog.last_schedule().cost;
    CHECK(cost.batches == cost.depth);
    CHECK(f.be.stats().bootstrap_batches == cost.depth);
    CHECK(f.be.stats().batches == cost.depth);

    Circuit one;
    const Expr d = dot(one, one.input(type, 3), one.input(type, 3));
    CHECK(compile(one, std::span<const Expr>(&d, 1)).cost.depth == cost.depth);
    const auto got = r.decrypt(f.be, f.key);
    for (std::size_t i = 0; i < 3; ++i)
      for (std::size_t j = 0; j < 3; ++j) {
        std::uint64_t want = 0;
        for (std::size_t k = 0; k < 3; ++k) want += av[i * 3 + k] * bv[k * 3 + j];
        CHECK(got[i * 3 + j] == (want & 63));
      }
  }

  SECTION("Karatsuba at 16 bits: one batch per level, shallower than its products in turn") {
    // A 4-bit base recurses 16 -> 9 -> 5 -> 3 bits; every level stacks its three
    // sub-products as one vector product.
    const IntType type{16, false};
    const auto xs = random_values(rng, type, 3), ys = random_values(rng, type, 3);
    const Arr ax = Arr::encrypt(f.be, f.key, xs, type, rng);
    const Arr ay = Arr::encrypt(f.be, f.key, ys, type, rng);
    Program<PB> prog(f.be);
    const Expr out = multiply_karatsuba(prog.circuit(), prog.input(ax), prog.input(ay),
                                        Product::Full, 4);
    f.be.reset_stats();
    const Arr r = prog.run(out);
    const ScheduleCost cost = prog.last_schedule().cost;
    CHECK(cost.batches == cost.depth);
    CHECK(f.be.stats().bootstrap_batches == cost.depth);
    // Run one after the other, the three 9-bit sub-products would need three times the
    // depth of one.
    Circuit sub;
    const Expr z = multiply_karatsuba(sub, sub.input(IntType{9, false}, 1),
                                      sub.input(IntType{9, false}, 1), Product::Full, 4);
    const std::uint32_t sub_depth = compile(sub, std::span<const Expr>(&z, 1)).cost.depth;
    CHECK(cost.depth > sub_depth);
    CHECK(cost.depth < 2 * sub_depth);
    const auto got = decode128(r.decrypt_bits(f.be, f.key), 32, 3);
    for (std::size_t e = 0; e < 3; ++e) CHECK(got[e] == static_cast<u128>(xs[e] * ys[e]));
  }
}

TEST_CASE("scratch slots are reused once their readers have run", "[circuits][netlist][schedule]") {
  for (MultiplierKind kind : {MultiplierKind::Dadda, MultiplierKind::Tree, MultiplierKind::Karatsuba}) {
    INFO(multiplier_name(kind));
    Circuit c;
    const Expr out = multiply(c, c.input(IntType{16, false}, 1), c.input(IntType{16, false}, 1),
                              Product::Full, kind);
    const Schedule sched = compile(c, std::span<const Expr>(&out, 1));
    CHECK(sched.scratch_bits == sched.cost.scratch_bits);
    CHECK(sched.scratch_bits > 0);
    // Every gate output bit, minus the 32 written straight into the output.
    CHECK(sched.scratch_bits < sched.cost.gates - 32);
    CHECK(sched.scratch_bits * 2 < sched.cost.gates);
  }
}

// ============================================================================ validation

TEST_CASE("operations reject operands of different types or element counts",
          "[circuits][netlist][validation]") {
  Circuit c;
  const Expr u8 = c.input(IntType{8, false}, 4), u4 = c.input(IntType{4, false}, 4);
  const Expr s8 = c.input(IntType{8, true}, 4), u8x3 = c.input(IntType{8, false}, 3);
  REQUIRE_INVALID_ARGUMENT(add(c, u8, u4), "add: operands are u8 and u4");
  REQUIRE_INVALID_ARGUMENT(add(c, u8, s8), "add: operands are u8 and s8");
  REQUIRE_INVALID_ARGUMENT(add(c, u8, u8x3), "add: operands have 4 and 3 elements");
  REQUIRE_INVALID_ARGUMENT(subtract(c, u8, s8), "subtract: operands are u8 and s8");
  REQUIRE_INVALID_ARGUMENT(multiply(c, u8, u4), "multiply: operands are u8 and u4");
  REQUIRE_INVALID_ARGUMENT(multiply(c, u8, u8x3), "multiply: operands have 4 and 3");
  REQUIRE_INVALID_ARGUMENT(multiply_karatsuba(c, u8, s8, Product::Full, 4),
                           "multiply_karatsuba: operands are u8 and s8");
  REQUIRE_INVALID_ARGUMENT(multiply_karatsuba(c, u8, u8, Product::Full, 2),
                           "multiply_karatsuba: base_width=2");
  REQUIRE_INVALID_ARGUMENT(bit_and(c, u8, u4), "bit_and: operands are u8 and u4");
  REQUIRE_INVALID_ARGUMENT(bit_or(c, u8, s8), "bit_or");
  REQUIRE_INVALID_ARGUMENT(bit_xor(c, u8, u8x3), "bit_xor");
  REQUIRE_INVALID_ARGUMENT(equal(c, u8, s8), "equal: operands are u8 and s8");
  REQUIRE_INVALID_ARGUMENT(less(c, u8, u4), "less: operands are u8 and u4");
  REQUIRE_INVALID_ARGUMENT(min(c, u8, u8x3), "less: operands have 4 and 3");
  REQUIRE_INVALID_ARGUMENT(select(c, bit_range(u8, 0, 1), u8, s8), "select: operands are u8 and s8");
  REQUIRE_INVALID_ARGUMENT(select(c, bit_range(u8, 0, 2), u8, u8), "select: the condition or carry has 2 bits");
  REQUIRE_INVALID_ARGUMENT(select(c, bit_range(u8x3, 0, 1), u8, u8),
                           "select: the condition or carry has 3 elements but the operands have 4");
  REQUIRE_INVALID_ARGUMENT(add_with_carry(c, u8, u8, bit_range(u8, 0, 2)),
                           "add_with_carry: the condition or carry has 2 bits but must have 1");
  REQUIRE_INVALID_ARGUMENT(abs(c, u8), "abs: the operand is u8 but must be signed");
  REQUIRE_INVALID_ARGUMENT(dot(c, u8, s8), "dot: operands are u8 and s8");
  REQUIRE_INVALID_ARGUMENT(concat_bits(u8, u8x3), "concat_bits: 4 and 3 elements");
  const Expr mixed[] = {u8, s8};
  REQUIRE_INVALID_ARGUMENT(concat_elements(mixed), "concat_elements: part 1 is s8 but part 0 is u8");
  REQUIRE_INVALID_ARGUMENT(concat_elements(std::span<const Expr>()), "concat_elements: no parts");
}

TEST_CASE("expressions, planes and free operations validate their arguments",
          "[circuits][netlist][validation]") {
  Circuit c;
  const Expr x = c.input(IntType{8, false}, 8);
  const Expr one = c.input(IntType{8, false}, 1);
  REQUIRE_INVALID_ARGUMENT(x.reshape(3, 3), "Expr::reshape: 3 x 3 does not hold the 8 elements");
  REQUIRE_INVALID_ARGUMENT(x.reshape(0, 8), "Expr::reshape");
  REQUIRE_INVALID_ARGUMENT(c.input(IntType{8, false}, 2, 4).reshape(4, 4), "does not hold the 8 elements");
  REQUIRE_INVALID_ARGUMENT(x.elements(6, 3), "Expr::elements: [6, 9) is not a non-empty range of the 8 elements");
  REQUIRE_INVALID_ARGUMENT(x.elements(2, 0), "Expr::elements");
  REQUIRE_INVALID_ARGUMENT(x.gather(std::vector<std::size_t>{}), "Expr::gather: no elements selected");
  REQUIRE_INVALID_ARGUMENT(x.gather(std::vector<std::size_t>{1, 9}), "Plane::gather: lane 9 is outside a plane of 8 lanes");
  REQUIRE_INVALID_ARGUMENT(x.bit(8), "Expr::bit: bit 8 of a 8-bit integer");
  REQUIRE_INVALID_ARGUMENT(Expr(std::vector<Plane>{}, false), "Expr: an integer needs at least one bit");
  REQUIRE_INVALID_ARGUMENT(Expr(std::vector<Plane>{Plane()}, false), "at least one element");
  REQUIRE_INVALID_ARGUMENT((Expr({x.bit(0), one.bit(0)}, false)), "Expr: bit 1 has 1 lanes but bit 0 has 8");
  REQUIRE_INVALID_ARGUMENT(x.bit(0).slice(6, 3), "Plane::slice: lanes [6, 9) are outside a plane of 8 lanes");
  REQUIRE_INVALID_ARGUMENT(x.bit(0).broadcast(4), "Plane::broadcast: the plane has 8 lanes");
  REQUIRE_INVALID_ARGUMENT(resize(x, 0), "resize: width 0");
  REQUIRE_INVALID_ARGUMENT(bit_range(x, 6, 3), "bit_range: bits [6, 9) are not a non-empty range of a u8");
  REQUIRE_INVALID_ARGUMENT(bit_range(x, 0, 0), "bit_range");
  REQUIRE_INVALID_ARGUMENT(broadcast(x, 4), "broadcast: the expression has 8 elements");
  REQUIRE_INVALID_ARGUMENT(broadcast(one, 0), "broadcast: to no elements");
  REQUIRE_INVALID_ARGUMENT(find_operation("no_such_op"), "no operation 'no_such_op'");
  REQUIRE_INVALID_ARGUMENT(find_operation("no_such_op"), "add.sklansky");
  CHECK(find_operation("mul.full.dadda").name == "mul.full.dadda");
  REQUIRE_INVALID_ARGUMENT(BitHeap(0, 1), "BitHeap: width 0 but expected 1..131072");
  // Refused before its columns are allocated (std::length_error before).
  REQUIRE_INVALID_ARGUMENT(BitHeap(std::size_t{1} << 62, 1),
                           "BitHeap: width 4611686018427387904 but expected 1..131072");
  CHECK(BitHeap(2 * max_width, 1).width() == 2 * max_width);
  REQUIRE_INVALID_ARGUMENT(BitHeap(8, 0), "BitHeap: no elements");
  BitHeap heap(8, 8);
  REQUIRE_INVALID_ARGUMENT(heap.add_bit(0, one.bit(0)), "BitHeap::add_bit: a bit of 1 lanes added to a heap of 8");
  REQUIRE_INVALID_ARGUMENT(heap.add_product(c, x, one), "BitHeap::add_product: operands have 8 and 1");
}

TEST_CASE("Circuit validates inputs, constants and gates", "[circuits][netlist][validation]") {
  Circuit c;
  REQUIRE_INVALID_ARGUMENT(c.input(IntType{0, false}, 1), "Circuit::input: width 0");
  REQUIRE_INVALID_ARGUMENT(c.input(IntType{8, false}, 0, 3), "Circuit::input: shape 0 x 3 has no elements");
  REQUIRE_INVALID_ARGUMENT(c.input(IntType{8, false}, 0), "has no elements");
  CHECK(c.inputs().empty());
  REQUIRE_INVALID_ARGUMENT(c.constant(256, IntType{8, false}, 1), "Circuit::constant: value 256 (element 0) does not fit u8");
  REQUIRE_INVALID_ARGUMENT(c.constant_signed(-129, IntType{8, true}, 1), "value -129 (element 0) does not fit s8");
  REQUIRE_INVALID_ARGUMENT(c.constant_signed(128, IntType{8, true}, 1), "value 128 (element 0) does not fit s8");
  REQUIRE_INVALID_ARGUMENT(c.constant_signed(1, IntType{8, false}, 1), "Circuit::constant_signed: type u8 is unsigned");
  const std::uint64_t vals[] = {1, 2, 16};
  REQUIRE_INVALID_ARGUMENT(c.constant(vals, IntType{4, false}), "value 16 (element 2) does not fit u4");
  REQUIRE_INVALID_ARGUMENT(c.constant(std::span<const std::uint64_t>(), IntType{4, false}), "Circuit::constant: no values");
  REQUIRE_INVALID_ARGUMENT(c.constant(1, IntType{4, false}, 0), "Circuit::constant: no elements");
  REQUIRE_INVALID_ARGUMENT(c.constant(0, IntType{0, false}, 1), "Circuit::constant: width 0");
  // Values that do fit: the extremes of each type.
  CHECK(c.constant_signed(-128, IntType{8, true}, 2).lanes() == 2);
  CHECK(c.constant(255, IntType{8, false}, 1).width() == 8);
  CHECK(c.constant(~std::uint64_t{0}, IntType{64, false}, 1).width() == 64);

  const Plane a = c.input(IntType{1, false}, 4).bit(0), b = c.input(IntType{1, false}, 3).bit(0);
  REQUIRE_INVALID_ARGUMENT(c.gate(GateSpec::constant(true), a), "Circuit::gate: a constant has no lane count");
  REQUIRE_INVALID_ARGUMENT(c.and_(a, b), "Circuit::gate(AND): input 1 has 3 lanes but input 0 has 4");
  REQUIRE_INVALID_ARGUMENT(c.mux(a, a, b), "input 2 has 3 lanes but input 0 has 4");
  REQUIRE_INVALID_ARGUMENT(c.and_(Plane(), Plane()), "input 0 has no lanes");
  GateSpec bad = GateSpec::of(GateKind::And);
  bad.offset_eighths = 3;
  REQUIRE_THROWS_AS(c.gate(bad, a, a), InvalidArgument);
  CHECK(c.nodes().empty());
}

TEST_CASE("compile rejects expressions of another circuit", "[circuits][netlist][validation]") {
  Circuit big;
  const Expr x = big.input(IntType{8, false}, 4), y = big.input(IntType{8, false}, 4);
  const Expr s = add(big, x, y);
  Circuit small;
  small.input(IntType{8, false}, 4);
  REQUIRE_INVALID_ARGUMENT(compile(small, std::span<const Expr>(&s, 1)),
                           "compile: output 0 is an expression of another circuit (circuit " +
                               std::to_string(big.id()) + "; this is circuit " +
                               std::to_string(small.id()) + ")");
  // The same numbers of inputs and gates: still another circuit's (once, this compiled the
  // other circuit's expression against this one's inputs and gates: wrong results).
  Circuit twin;
  const Expr tx = twin.input(IntType{8, false}, 4), ty = twin.input(IntType{8, false}, 4);
  (void)add(twin, tx, ty);
  REQUIRE(twin.nodes().size() == big.nodes().size());
  REQUIRE_INVALID_ARGUMENT(compile(twin, std::span<const Expr>(&s, 1)),
                           "is an expression of another circuit");
  REQUIRE_INVALID_ARGUMENT(compile(twin, std::span<const Expr>(&y, 1)),
                           "is an expression of another circuit");
  // A copy gets its own id, and the original's expressions of before the copy compile there.
  Circuit copy = big;
  CHECK(copy.id() != big.id());
  CHECK(compile(copy, std::span<const Expr>(&s, 1)).cost.bootstraps > 0);
  // Segments of this circuit that name inputs or gates it does not have (only hand-made
  // planes can): refused by number.
  Circuit narrow;
  narrow.input(IntType{8, false}, 2);
  Segment past;
  past.kind = SourceKind::Input;
  past.circuit = narrow.id();
  past.offset = 19;
  past.count = 1;
  const Expr bad_bit({Plane::of(past)}, false);
  REQUIRE_INVALID_ARGUMENT(compile(narrow, std::span<const Expr>(&bad_bit, 1)),
                           "reads bit 19 of input 0, which has 16 bits");
  past.id = 1;
  const Expr bad_input({Plane::of(past)}, false);
  REQUIRE_INVALID_ARGUMENT(compile(narrow, std::span<const Expr>(&bad_input, 1)),
                           "compile: output 0 reads input 1 but the circuit has 1 inputs");
  Segment gate = past;
  gate.kind = SourceKind::Node;
  gate.id = 0;
  gate.offset = 3;
  Circuit one;
  one.and_(one.input(u1, 1).bit(0), one.input(u1, 1).bit(0));
  gate.circuit = one.id();
  const Expr e4({Plane::of(gate)}, false);
  REQUIRE_INVALID_ARGUMENT(compile(one, std::span<const Expr>(&e4, 1)),
                           "compile: output 0 reads lane 3 of gate 0, which has 1 lanes");
  const Expr outs[] = {x, Expr()};
  REQUIRE_INVALID_ARGUMENT(compile(big, std::span<const Expr>(outs)), "compile: output 1 is an empty expression");
}

TEST_CASE("execute rejects missing or mismatched inputs", "[circuits][netlist][validation]") {
  PlaintextFixture f;
  Csprng rng = seeded_rng(7);
  Circuit c;
  const Expr x = c.input(IntType{8, false}, 4), y = c.input(IntType{8, false}, 4);
  const Expr s = add(c, x, y);
  const Schedule sched = compile(c, std::span<const Expr>(&s, 1));
  const std::vector<std::uint64_t> v = {1, 2, 3, 4};
  const Arr a = Arr::encrypt(f.be, f.key, v, IntType{8, false}, rng);
  const Arr narrow = Arr::encrypt(f.be, f.key, v, IntType{4, false}, rng);
  const Arr sgn = Arr::encrypt(f.be, f.key, v, IntType{8, true}, rng);
  const Arr square = Arr::encrypt(f.be, f.key, v, IntType{8, false}, rng, 2);
  const auto run = [&](std::vector<const Arr*> in) {
    return execute(f.be, sched, std::span<const Arr* const>(in));
  };
  REQUIRE_INVALID_ARGUMENT(run({&a}), "execute: 1 inputs bound but the circuit has 2");
  REQUIRE_INVALID_ARGUMENT(run({&a, &a, &a}), "execute: 3 inputs bound");
  REQUIRE_INVALID_ARGUMENT(run({&a, nullptr}), "execute: input 1 is not bound");
  REQUIRE_INVALID_ARGUMENT(run({&a, &narrow}), "execute: input 1 is 1 x 4 u4 but the circuit expects 1 x 4 u8");
  REQUIRE_INVALID_ARGUMENT(run({&sgn, &a}), "execute: input 0 is 1 x 4 s8 but the circuit expects 1 x 4 u8");
  REQUIRE_INVALID_ARGUMENT(run({&a, &square}), "execute: input 1 is 2 x 2 u8 but the circuit expects 1 x 4 u8");
  const auto ok = run({&a, &a});
  REQUIRE(ok.size() == 1);
  CHECK(ok[0].decrypt(f.be, f.key) == std::vector<std::uint64_t>{2, 4, 6, 8});

  // A hand-made schedule's input and output numbers are checked, not trusted.
  Schedule bad = sched;
  bool input_changed = false, output_changed = false;
  for (auto& batch : bad.batches) {
    for (ScheduledOp& op : batch) {
      if (!input_changed && op.in[0].space == Location::Space::Input) {
        op.in[0].index = 5;
        input_changed = true;
      }
    }
  }
  REQUIRE(input_changed);
  std::vector<const Arr*> both = {&a, &a};
  REQUIRE_INVALID_ARGUMENT(execute(f.be, bad, std::span<const Arr* const>(both)),
                           "execute: an op reads input 5 but 2 are bound");
  bad = sched;
  for (auto& batch : bad.batches) {
    for (ScheduledOp& op : batch) {
      if (!output_changed && op.out.space == Location::Space::Output) {
        op.out.index = 3;
        output_changed = true;
      }
    }
  }
  REQUIRE(output_changed);
  REQUIRE_INVALID_ARGUMENT(execute(f.be, bad, std::span<const Arr* const>(both)),
                           "execute: an op writes output 3 but the schedule has 1");
}

// Program::input keeps a pointer to an array it binds by reference, and takes an array given
// by value (a temporary, std::move) into the program; a const temporary does not compile.
template <class P, class A>
concept binds = requires(P& p, A&& a) { p.input(std::forward<A>(a)); };
static_assert(binds<Program<PB>, const Arr&> && binds<Program<PB>, Arr&>);
static_assert(binds<Program<PB>, Arr&&> && !binds<Program<PB>, const Arr&&>);

TEST_CASE("Program keeps the arrays bound by value", "[circuits][netlist]") {
  PlaintextFixture f;
  Csprng rng = seeded_rng(12);
  const IntType u8{8, false};
  Program<PB> prog(f.be);
  std::vector<Expr> xs;
  // Arrays made in a loop and moved in: before, only a pointer was kept, and a vector of
  // arrays that grew (or a temporary) left it dangling.
  for (std::uint64_t k = 1; k <= 5; ++k) {
    const std::vector<std::uint64_t> v = {k, 10 * k};
    xs.push_back(prog.input(Arr::encrypt(f.be, f.key, v, u8, rng)));
  }
  Expr total = xs[0];
  for (std::size_t k = 1; k < xs.size(); ++k) total = add(prog.circuit(), total, xs[k]);
  CHECK(prog.run(total).decrypt(f.be, f.key) == std::vector<std::uint64_t>{15, 150});
  // By reference and by value in one program.
  const std::vector<std::uint64_t> w = {100, 7};
  const Arr kept = Arr::encrypt(f.be, f.key, w, u8, rng);
  Arr moved = Arr::encrypt(f.be, f.key, w, u8, rng);
  const Expr a = prog.input(kept), b = prog.input(std::move(moved));
  CHECK(prog.run(add(prog.circuit(), a, b)).decrypt(f.be, f.key) ==
        std::vector<std::uint64_t>{200, 14});
}

TEST_CASE("IntArray validates values, shapes and widths", "[circuits][netlist][validation]") {
  PlaintextFixture f;
  Csprng rng = seeded_rng(8);
  const std::vector<std::uint64_t> too_big = {3, 16};
  REQUIRE_INVALID_ARGUMENT(Arr::encrypt(f.be, f.key, too_big, IntType{4, false}, rng),
                           "value 16 (element 1) does not fit u4");
  const std::vector<std::uint64_t> neg = from_signed(std::vector<std::int64_t>{7, -9});
  REQUIRE_INVALID_ARGUMENT(Arr::encrypt(f.be, f.key, neg, IntType{4, true}, rng),
                           "value -9 (element 1) does not fit s4");
  const std::vector<std::uint64_t> eight = {8};
  REQUIRE_INVALID_ARGUMENT(Arr::encrypt(f.be, f.key, eight, IntType{4, true}, rng),
                           "value 8 (element 0) does not fit s4");
  REQUIRE_INVALID_ARGUMENT(Arr::encrypt(f.be, f.key, eight, IntType{65, false}, rng),
                           "type u65 but values are 1- to 64-bit integers");
  REQUIRE_INVALID_ARGUMENT(Arr::encrypt(f.be, f.key, std::vector<std::uint64_t>{}, IntType{4, false}, rng),
                           "IntArray::encrypt: no values");
  const std::vector<std::uint64_t> six = {1, 2, 3, 4, 5, 6};
  REQUIRE_INVALID_ARGUMENT(Arr::encrypt(f.be, f.key, six, IntType{4, false}, rng, 4),
                           "IntArray::encrypt: 6 values do not fill 4 equal rows");
  REQUIRE_INVALID_ARGUMENT(Arr::encrypt(f.be, f.key, six, IntType{4, false}, rng, 0),
                           "do not fill 0 equal rows");
  REQUIRE_INVALID_ARGUMENT(Arr::encrypt_signed(f.be, f.key, std::vector<std::int64_t>{1}, IntType{4, false}, rng),
                           "IntArray::encrypt_signed: type u4 is unsigned");
  REQUIRE_INVALID_ARGUMENT(Arr::trivial(f.be, std::vector<std::uint64_t>{300}, IntType{8, false}),
                           "IntArray::trivial: value 300 (element 0) does not fit u8");
  REQUIRE_INVALID_ARGUMENT(Arr::trivial(f.be, six, IntType{8, false}, 4), "IntArray::trivial: 6 values");
  // Boundaries that fit.
  const std::vector<std::int64_t> ext = {-8, 7};
  CHECK(Arr::encrypt_signed(f.be, f.key, ext, IntType{4, true}, rng).decrypt_signed(f.be, f.key) == ext);
  const std::vector<std::uint64_t> max64 = {~std::uint64_t{0}, 0};
  CHECK(Arr::encrypt(f.be, f.key, max64, IntType{64, false}, rng).decrypt(f.be, f.key) == max64);

  REQUIRE_INVALID_ARGUMENT(Arr(f.be.allocate(7), IntType{8, false}, 1, 1),
                           "IntArray: the buffer has 7 bits but 1 x 1 u8 needs 8");
  REQUIRE_INVALID_ARGUMENT(Arr(f.be.allocate(0), IntType{0, false}, 1, 1), "holds no bits");
  REQUIRE_INVALID_ARGUMENT(Arr(f.be.allocate(8), IntType{8, false}, 0, 1), "holds no bits");
  const Arr wide(f.be.allocate(65 * 2), IntType{65, true}, 1, 2);
  REQUIRE_INVALID_ARGUMENT(wide.decrypt(f.be, f.key), "IntArray::decrypt: s65 is wider than 64 bits; use decrypt_bits");
  REQUIRE_INVALID_ARGUMENT(wide.decrypt_signed(f.be, f.key), "use decrypt_bits");
  CHECK(wide.decrypt_bits(f.be, f.key).size() == 130);
  REQUIRE_INVALID_ARGUMENT(wide.bit(65), "IntArray::bit: bit 65 of a s65 array");
  CHECK(wide.bit(64).size() == 2);

  Arr m = Arr::encrypt(f.be, f.key, six, IntType{4, false}, rng);
  REQUIRE_INVALID_ARGUMENT(Arr(std::move(m)).reshaped(4, 2), "IntArray::reshaped: 6 values do not fill 4 equal rows");
  Arr m2 = Arr::encrypt(f.be, f.key, six, IntType{4, false}, rng);
  REQUIRE_INVALID_ARGUMENT(std::move(m2).reshaped(2, 2), "IntArray::reshaped: 2 x 2 does not hold 6 elements");
  const Arr m3 = Arr::encrypt(f.be, f.key, six, IntType{4, false}, rng).reshaped(3, 2);
  CHECK(m3.rows() == 3);
  CHECK(m3.cols() == 2);
  CHECK(m3.decrypt(f.be, f.key) == six);
}

TEST_CASE("matmul and Cannon's algorithm reject mismatched shapes", "[circuits][netlist][validation]") {
  Circuit c;
  const Expr a23 = c.input(IntType{4, false}, 2, 3), b23 = c.input(IntType{4, false}, 2, 3);
  const Expr s32 = c.input(IntType{4, true}, 3, 2);
  REQUIRE_INVALID_ARGUMENT(matmul(c, a23, b23), "matmul: A is 2 x 3 but B is 2 x 3");
  REQUIRE_INVALID_ARGUMENT(matmul(c, a23, s32), "matmul: operands are u4 and s4");
  CHECK(matmul(c, a23, transpose(b23)).rows() == 2);

  const Expr q4 = c.input(IntType{4, false}, 4, 4), p4 = c.input(IntType{4, false}, 4, 4);
  REQUIRE_INVALID_ARGUMENT(cannon_step(c, q4, p4, {}, 3, 0, 4), "cannon_step: a grid of 3 blocks does not divide 4 rows");
  REQUIRE_INVALID_ARGUMENT(cannon_step(c, q4, p4, {}, 0, 0, 4), "a grid of 0 blocks");
  REQUIRE_INVALID_ARGUMENT(cannon_step(c, q4, p4, {}, 2, 0, 0), "cannon_step: width 0");
  REQUIRE_INVALID_ARGUMENT(cannon_step(c, a23, b23, {}, 1, 0, 4), "Cannon's algorithm needs two square matrices");
  REQUIRE_INVALID_ARGUMENT(cannon_step(c, q4, q4.as_signed(true), {}, 1, 0, 4), "cannon_step: operands are u4 and s4");
  const CannonRows rows = cannon_step(c, q4, p4, {}, 2, 0, 4);
  REQUIRE_INVALID_ARGUMENT(cannon_finish(c, CannonRows{rows.row0, a23}, false), "cannon_finish: operands");
  // An accumulator of another width or shape, or half of one, was added as other numbers.
  const Expr q8 = c.input(IntType{8, false}, 4, 4);
  REQUIRE_INVALID_ARGUMENT(cannon_step(c, q4, p4, CannonRows{q8, q8}, 2, 1, 4),
                           "cannon_step: the accumulator rows are u8 4 x 4 and u8 4 x 4 but must "
                           "both be empty or 4-bit 4 x 4");
  REQUIRE_INVALID_ARGUMENT(cannon_step(c, q4, p4, CannonRows{rows.row0, Expr()}, 2, 1, 4),
                           "the accumulator rows are u4 4 x 4 and u0 0 x 0");
  REQUIRE_INVALID_ARGUMENT(cannon_step(c, q4, p4, CannonRows{a23, a23}, 2, 1, 4),
                           "the accumulator rows are u4 2 x 3");
  CHECK(cannon_step(c, q4, p4, rows, 2, 1, 4).row0.width() == 4);

  PlaintextFixture f;
  Csprng rng = seeded_rng(9);
  const std::vector<std::uint64_t> v16(16, 1), v6(6, 1);
  const Arr a = Arr::encrypt(f.be, f.key, v16, IntType{4, false}, rng, 4);
  const Arr rect = Arr::encrypt(f.be, f.key, v6, IntType{4, false}, rng, 2);
  REQUIRE_INVALID_ARGUMENT(cannon_multiply(f.be, a, a, 3), "a grid of 3 blocks does not divide 4 rows");
  REQUIRE_INVALID_ARGUMENT(cannon_multiply(f.be, rect, rect, 1), "needs two square matrices");
}

TEST_CASE("integer codec: bit planes, sign extension and its validations",
          "[circuits][netlist][validation]") {
  const std::vector<std::uint64_t> vals = from_signed(std::vector<std::int64_t>{-3, 2, -1});
  CHECK(vals == std::vector<std::uint64_t>{~std::uint64_t{2}, 2, ~std::uint64_t{0}});
  const IntType s3{3, true};
  const std::vector<std::uint8_t> bits = to_bit_planes(vals, s3);
  // Bit j of element e at j * 3 + e: -3 = 101, 2 = 010, -1 = 111.
  CHECK(bits == std::vector<std::uint8_t>{1, 0, 1, 0, 1, 1, 1, 0, 1});
  CHECK(from_bit_planes(bits, s3, 3) == vals);
  CHECK(from_bit_planes(bits, IntType{3, false}, 3) == std::vector<std::uint64_t>{5, 2, 7});
  const std::vector<std::uint64_t> top = {std::uint64_t{1} << 63, 1};
  CHECK(from_bit_planes(to_bit_planes(top, IntType{64, true}), IntType{64, true}, 2) == top);
  CHECK_NOTHROW(check_values(top, IntType{64, false}, "who"));
  REQUIRE_INVALID_ARGUMENT(check_values(top, IntType{63, false}, "who"),
                           "who: value 9223372036854775808 (element 0) does not fit u63");
  REQUIRE_INVALID_ARGUMENT(check_values(top, IntType{0, false}, "who"), "who: type u0 but values are 1- to 64-bit integers");
  REQUIRE_INVALID_ARGUMENT(to_bit_planes(vals, IntType{2, true}), "to_bit_planes: value -3 (element 0) does not fit s2");
  REQUIRE_INVALID_ARGUMENT(from_bit_planes(bits, IntType{65, false}, 3), "from_bit_planes: type u65 but values are 1- to 64-bit integers");
  REQUIRE_INVALID_ARGUMENT(from_bit_planes(bits, s3, 4), "from_bit_planes: 9 bits but s3 x 4 needs 12");
}

TEST_CASE("IntArray encrypt_integers and decrypt_integers take either signedness as int64",
          "[netlist]") {
  test::PlaintextFixture f;
  Csprng rng = test::seeded_rng(3);
  using Array = IntArray<PlaintextBackend>;
  const std::vector<std::int64_t> s = {-8, 7, 0}, u = {0, 15, 9};
  CHECK(Array::encrypt_integers(f.be, f.key, s, IntType{4, true}, rng).decrypt_integers(f.be, f.key) == s);
  CHECK(Array::encrypt_integers(f.be, f.key, u, IntType{4, false}, rng).decrypt_integers(f.be, f.key) == u);
  REQUIRE_INVALID_ARGUMENT(Array::encrypt_integers(f.be, f.key, s, IntType{4, false}, rng),
                           "does not fit u4");
  const std::vector<std::uint64_t> big = {1};
  REQUIRE_INVALID_ARGUMENT(Array::encrypt(f.be, f.key, big, IntType{64, false}, rng).decrypt_integers(f.be, f.key),
                           "u64 values may not fit int64");
}

TEST_CASE("failure_bound sums the schedule's bootstraps' failure probabilities",
          "[circuits][schedule][noise]") {
  const IntType type{8, false};
  const NoiseModel standard = noise_model(tfhe_lib_128(), 1);
  const NoiseModel threes = noise_model(tfhe_lib_128(), 3);

  // One gate of each of three kinds on 4 lanes, a MUX counted twice per gate.
  Circuit c;
  const Expr x = c.input(type, 4), y = c.input(type, 4), z = c.input(type, 4);
  const Plane a = x.bit(0), b = y.bit(0), d = z.bit(0);
  const Expr out({c.and_(a, b), c.mux(a, b, d), c.prefix_generate(a, b, d)}, false);
  const Schedule s = compile(c, std::span<const Expr>(&out, 1));
  REQUIRE(s.cost.bootstraps == 4 * (1 + 2 + 1));
  const auto p = [&](GateKind kind) {
    return std::exp2(standard.log2_failure_probability(GateSpec::of(kind)));
  };
  // tfhe_lib_128's probabilities underflow nothing in log2 but some in linear terms: compare
  // in log2 against a sum scaled by the largest term.
  const double worst = standard.log2_failure_probability(GateSpec::of(GateKind::PrefixGenerate));
  const double scaled = 4 * (p(GateKind::And) + 2 * p(GateKind::Mux)) * std::exp2(-worst) + 4;
  const FailureBound f = failure_bound(s, standard);
  CHECK(f.has_bootstraps());
  CHECK(f.log2_per_run == Approx(worst + std::log2(scaled)).epsilon(1e-12));
  CHECK(f.worst_gate.kind == GateKind::PrefixGenerate);
  CHECK(f.worst_gate_log2 == worst);
  CHECK(f.worst_gate_log2 < f.log2_per_run);

  // A key in threes makes every bootstrap likelier to fail; the weighted gate stays the worst.
  const FailureBound f3 = failure_bound(s, threes);
  CHECK(f3.log2_per_run > f.log2_per_run);
  CHECK(f3.worst_gate.kind == GateKind::PrefixGenerate);
  CHECK(f3.worst_gate_log2 ==
        threes.log2_failure_probability(GateSpec::of(GateKind::PrefixGenerate)));

  // The 32-bit Sklansky add of docs/security.md's figures: 2^-161.1 with the standard key,
  // 2^-62.6 in threes (214 bootstraps; PREFIX_GENERATE 2^-167 and 2^-69 each).
  Circuit wide;
  const IntType u32{32, false};
  const Expr sum = add(wide, wide.input(u32, 1), wide.input(u32, 1));
  const Schedule adder = compile(wide, std::span<const Expr>(&sum, 1));
  CHECK(failure_bound(adder, standard).log2_per_run == Approx(-161.1).margin(0.05));
  CHECK(failure_bound(adder, threes).log2_per_run == Approx(-62.6).margin(0.05));

  // No bootstrap, no bound: an output that is an input.
  const Schedule copy = compile(c, std::span<const Expr>(&x, 1));
  const FailureBound none = failure_bound(copy, standard);
  CHECK_FALSE(none.has_bootstraps());
  CHECK(std::isinf(none.log2_per_run));
}

TEST_CASE("copies of a circuit that go separate ways refuse each other's new expressions",
          "[circuits][netlist][validation]") {
  // Once, a copy kept the original's id, and each then numbered its new gates from the same
  // count: an expression recorded in one compiled in the other against other gates.
  PlaintextFixture f;
  Csprng rng = seeded_rng(11);
  const IntType u8{8, false};
  Circuit original;
  const Expr a = original.input(u8, 3), b = original.input(u8, 3);
  const Expr before = bit_xor(original, a, b);  // recorded before the copy: valid in both
  Circuit copy = original;
  const Expr sum = add(original, a, b);      // only in the original
  const Expr product = multiply(copy, a, b);  // only in the copy, from gate numbers sum uses too
  REQUIRE_INVALID_ARGUMENT(compile(copy, std::span<const Expr>(&sum, 1)),
                           "compile: output 0 is an expression of another circuit (circuit " +
                               std::to_string(original.id()) + "; this is circuit " +
                               std::to_string(copy.id()) + ")");
  REQUIRE_INVALID_ARGUMENT(compile(original, std::span<const Expr>(&product, 1)),
                           "is an expression of another circuit");
  REQUIRE_INVALID_ARGUMENT(add(copy, sum, a), "is an expression of another circuit");
  // What each recorded itself, and what was recorded before the copy, runs right in both.
  const std::vector<std::uint64_t> x = {5, 200, 255}, y = {6, 100, 3};
  const Arr ea = Arr::encrypt(f.be, f.key, x, u8, rng), eb = Arr::encrypt(f.be, f.key, y, u8, rng);
  auto run = [&](Circuit& c, const Expr& e) {
    const Schedule sched = compile(c, std::span<const Expr>(&e, 1));
    const Arr* ins[] = {&ea, &eb};
    return execute(f.be, sched, std::span<const Arr* const>(ins)).at(0).decrypt(f.be, f.key);
  };
  const std::vector<std::uint64_t> want_sum = {11, 44, 2}, want_product = {30, 32, 253};
  const std::vector<std::uint64_t> want_xor = {3, 172, 252};
  CHECK(run(original, sum) == want_sum);
  CHECK(run(copy, product) == want_product);
  CHECK(run(copy, before) == want_xor);
  CHECK(run(original, before) == want_xor);
  // A copy of the copy: the first circuit's gates of before the first copy still count.
  Circuit second = copy;
  CHECK(run(second, before) == want_xor);
  CHECK(run(second, product) == want_product);
  REQUIRE_INVALID_ARGUMENT(compile(second, std::span<const Expr>(&sum, 1)),
                           "is an expression of another circuit");
  // Assignment is a copy too.
  Circuit assigned;
  assigned = original;
  CHECK(assigned.id() != original.id());
  CHECK(run(assigned, sum) == want_sum);
  // A move takes the id; the moved-from circuit starts again empty, under a new id.
  const std::uint32_t id = original.id();
  Circuit moved = std::move(original);
  CHECK(moved.id() == id);
  CHECK(run(moved, sum) == want_sum);
  CHECK(original.id() != id);  // NOLINT(bugprone-use-after-move): the documented state
  CHECK(original.nodes().empty());
  CHECK(original.inputs().empty());
  REQUIRE_INVALID_ARGUMENT(compile(original, std::span<const Expr>(&sum, 1)),
                           "is an expression of another circuit");
  // level() checks its segment like every other accessor.
  const Segment gate_segment = sum.bits().back().segments().front();
  REQUIRE(gate_segment.kind == SourceKind::Node);
  CHECK(moved.level(gate_segment) >= 1);
  REQUIRE_INVALID_ARGUMENT(copy.level(gate_segment), "Circuit::level: gate ");
  REQUIRE_INVALID_ARGUMENT(Circuit().level(gate_segment), "is not a gate of this circuit");
  CHECK(Circuit().level(Plane::constant(true, 2).segments().front()) == 0);
}

TEST_CASE("widths above max_width and arrays past 2^64 bits are refused, not allocated",
          "[circuits][netlist][validation]") {
  // Once, a width of 2^40 reached std::vector and left as a bare std::bad_alloc (or took
  // gigabytes first), and a broadcast to 2^61 elements wrapped its bit count to 0.
  Circuit c;
  const std::size_t too_wide = max_width + 1;
  const std::string limit = "width " + std::to_string(too_wide) + " but at most " +
                            std::to_string(max_width) + " bits (max_width) are supported";
  REQUIRE_INVALID_ARGUMENT(c.input(IntType{too_wide, false}, 1), "Circuit::input: " + limit);
  REQUIRE_INVALID_ARGUMENT(c.input(IntType{std::size_t{1} << 40, false}, 1),
                           "Circuit::input: width 1099511627776 but at most");
  REQUIRE_INVALID_ARGUMENT(c.constant(1, IntType{too_wide, false}, 1),
                           "Circuit::constant: " + limit);
  const Expr x = c.input(IntType{8, false}, 4), m = c.input(IntType{8, false}, 2, 2);
  REQUIRE_INVALID_ARGUMENT(resize(x, too_wide), "resize: " + limit);
  REQUIRE_INVALID_ARGUMENT(resize(x, std::size_t{1} << 62), "resize: width 4611686018427387904");
  REQUIRE_INVALID_ARGUMENT(sum(c, x, too_wide), "sum: " + limit);
  REQUIRE_INVALID_ARGUMENT(dot(c, x, x, too_wide), "dot: " + limit);
  REQUIRE_INVALID_ARGUMENT(matmul(c, m, m, too_wide), "matmul: " + limit);
  REQUIRE_INVALID_ARGUMENT(cannon_step(c, m, m, CannonRows{}, 1, 0, too_wide),
                           "cannon_step: " + limit);
  REQUIRE_INVALID_ARGUMENT(multiply_constant(c, x, 3, too_wide), "multiply_constant: " + limit);
  REQUIRE_INVALID_ARGUMENT(resize(x, 0), "resize: width 0; an integer needs at least one bit");
  // max_width itself is accepted.
  CHECK(resize(x, max_width).width() == max_width);
  // A broadcast whose bits would not fit std::size_t.
  const Expr one = c.input(IntType{8, false}, 1);
  REQUIRE_INVALID_ARGUMENT(broadcast(one, std::size_t{1} << 61),
                           "broadcast: 1 x 2305843009213693952 u8 has more than 2^64 bits");
  // Constants and concatenations of elements too (their bit counts wrapped to 0, and execute
  // failed on a span of an output buffer of 0 bits).
  REQUIRE_INVALID_ARGUMENT(c.constant(1, IntType{8, false}, std::size_t{1} << 61),
                           "Circuit::constant: 1 x 2305843009213693952 u8 has more than 2^64 bits");
  const Expr half = broadcast(one, std::size_t{1} << 60);
  const Expr halves[] = {half, half};
  REQUIRE_INVALID_ARGUMENT(concat_elements(halves),
                           "concat_elements: 1 x 2305843009213693952 u8 has more than 2^64 bits");
  // One that fits the count but not memory: compile says so as the library's error.
  const Expr wide = broadcast(one, std::size_t{1} << 50);
  const Expr doubled = add(c, wide, wide);
  REQUIRE_THROWS_WITH(compile(c, std::span<const Expr>(&doubled, 1)),
                      Catch::Matchers::Contains("elements does not fit in memory"));
  REQUIRE_THROWS_AS(compile(c, std::span<const Expr>(&doubled, 1)), SystemError);
}

TEST_CASE("a gate whose inputs are all broadcasts or constants runs once and is broadcast",
          "[circuits][netlist]") {
  PlaintextFixture f;
  Csprng rng = seeded_rng(31);
  const IntType u8{8, false};
  const std::size_t lanes = 1000;
  const std::vector<std::uint64_t> xs = random_values(rng, u8, lanes);
  const std::vector<std::uint64_t> amount = {200};
  const Arr ax = Arr::encrypt(f.be, f.key, xs, u8, rng);
  const Arr as = Arr::encrypt(f.be, f.key, amount, u8, rng);
  // u8 << u8 with one amount for all elements: the OR of the amount's bits 3 to 7 (4 gates)
  // reads only the amount, so it is computed once, not once per element.
  Program<PB> prog(f.be);
  const Expr x = prog.input(ax), s = broadcast(prog.input(as), lanes);
  const Arr r = prog.run(shift_left(prog.circuit(), x, s));
  for (std::uint64_t v : r.decrypt(f.be, f.key)) CHECK(v == 0);  // 200 >= 8
  Circuit per_element;
  const Expr px = per_element.input(u8, lanes), ps = per_element.input(u8, lanes);
  const Expr shifted = shift_left(per_element, px, ps);
  const std::uint64_t each =
      compile(per_element, std::span<const Expr>(&shifted, 1)).cost.bootstraps;
  CHECK(each == 53 * lanes);
  CHECK(prog.last_schedule().cost.bootstraps == each - 4 * (lanes - 1));
  CHECK(prog.last_schedule().cost.depth == 4);
  // A gate of two broadcasts is a broadcast of one gate; with a constant it folds.
  Circuit c;
  const Expr a = broadcast(c.input(u8, 1), 5), b = broadcast(c.input(u8, 1), 5);
  const Plane g = c.and_(a.bit(0), b.bit(0));
  REQUIRE(g.segments().size() == 1);
  CHECK(g.segments().front().stride == 0);
  CHECK(g.lanes() == 5);
  CHECK(c.nodes().back().lanes == 1);
  CHECK(c.or_(a.bit(1), Plane::constant(true, 5)).constant_value() == true);
  CHECK(c.xor_(a.bit(1), Plane::constant(true, 5)) == ~a.bit(1));
}

TEST_CASE("a lane of a broadcast and the same bit read per lane are one variable of a gate",
          "[circuits][netlist]") {
  Circuit c;
  const Plane p = c.input(IntType{8, false}, 4).bit(0);
  // b reads lanes 0 and 1 of p, then lane 2 of p broadcast to two lanes; a ends in a negated
  // lane, so the gate's piece over lane 2 is one lane of the broadcast segment.
  const Plane b = Plane::concat(std::vector<Plane>{p.slice(0, 2), p.slice(2, 1).broadcast(2)});
  const Plane a = Plane::concat(std::vector<Plane>{p.slice(0, 3), ~p.slice(3, 1)});
  REQUIRE(b.segments().size() == 2);
  REQUIRE(b.segments().back().stride == 0);
  const std::size_t before = c.nodes().size();
  const Plane g = c.xor_(a, b);  // x XOR x on lanes 0 to 2; lane 3 is NOT p[3] XOR p[2]
  CHECK(g.slice(0, 3).constant_value() == false);
  REQUIRE(c.nodes().size() == before + 1);
  CHECK(c.nodes().back().lanes == 1);
}
