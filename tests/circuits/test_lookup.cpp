// Table lookup (circuits/lookup.hpp): random tables on every value of 1- to 10-bit indices,
// signed and unsigned, into results of 1 to 64 bits; the AES S-box on all 256 bytes against
// its definition (the inverse in GF(2^8) and the affine map); the cost bound; the checks.
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <vector>

#include "circuit_test_support.hpp"

using namespace torusgate;
using namespace torusgate::circuits;
using namespace torusgate::test;

namespace {

using PB = PlaintextBackend;
using Arr = IntArray<PB>;

// The AES S-box from its definition (FIPS 197, 5.1.1): the multiplicative inverse in
// GF(2^8) modulo x^8 + x^4 + x^3 + x + 1 (0 for 0), then the affine map with 0x63.
std::array<std::uint64_t, 256> aes_sbox() {
  const auto multiply = [](unsigned a, unsigned b) {
    unsigned p = 0;
    for (int i = 0; i < 8; ++i, b >>= 1) {
      if (b & 1) p ^= a;
      a = (a << 1) ^ ((a & 0x80) ? 0x11b : 0);
    }
    return p & 0xff;
  };
  std::array<std::uint64_t, 256> s{};
  for (unsigned x = 0; x < 256; ++x) {
    unsigned inverse = 0;
    for (unsigned y = 1; y < 256 && x != 0; ++y)
      if (multiply(x, y) == 1) inverse = y;
    unsigned b = inverse, out = 0x63;
    for (int r = 0; r < 5; ++r) out ^= ((b << r) | (b >> (8 - r))) & 0xff;
    s[x] = out;
  }
  return s;
}

// lookup on every value of `type`, decrypted.
std::vector<std::uint64_t> run_lookup(PlaintextFixture& f, IntType type,
                                      const std::vector<std::uint64_t>& table, IntType out,
                                      ScheduleCost* cost = nullptr) {
  Csprng rng = seeded_rng(9);
  const Arr a = Arr::encrypt(f.be, f.key, all_values(type), type, rng);
  Program<PB> prog(f.be);
  const Arr r = prog.run(lookup(prog.circuit(), prog.input(a), table, out));
  if (cost) *cost = prog.last_schedule().cost;
  REQUIRE(r.type() == out);
  return r.decrypt(f.be, f.key);
}

}  // namespace

TEST_CASE("lookup: random tables on every index of 1 to 10 bits",
          "[circuits][lookup][exhaustive][random]") {
  const std::uint64_t seed = catch_seed(0x100c);
  INFO("seed " << seed);
  PlaintextFixture f;
  Csprng rng = seeded_rng(seed);
  for (std::size_t w = 1; w <= 10; ++w)
    for (bool is_signed : {false, true})
      for (const IntType out : {IntType{1, false}, IntType{5, true}, IntType{w, is_signed},
                                IntType{64, false}}) {
        const IntType type{w, is_signed};
        INFO(to_string(type) << " -> " << to_string(out));
        const std::vector<std::uint64_t> table = random_values(rng, out, std::size_t{1} << w);
        ScheduleCost cost;
        const std::vector<std::uint64_t> got = run_lookup(f, type, table, out, &cost);
        const std::vector<std::uint64_t> xs = all_values(type);
        std::size_t bad = 0;
        for (std::size_t e = 0; e < xs.size(); ++e) {
          // Rank of x among its type's values: the value, plus 2^(w-1) when signed.
          const i128 rank = value_of(xs[e], type) + (is_signed ? i128{1} << (w - 1) : 0);
          bad += got[e] != table[static_cast<std::size_t>(rank)];
        }
        CHECK(bad == 0);
        // Per element: at most 2^(w-1) - 1 MUXes a result bit, each 2 bootstraps or, beside
        // a negated index bit, 3 over two levels; nothing for w = 1.
        const std::uint64_t per_element = cost.bootstraps / xs.size();
        CHECK(per_element * xs.size() == cost.bootstraps);
        CHECK(per_element <= out.width * 3 * ((std::uint64_t{1} << (w - 1)) - 1));
        CHECK(cost.depth <= 2 * (w - 1));
      }
}

TEST_CASE("lookup: the AES S-box on every byte", "[circuits][lookup][exhaustive]") {
  const std::array<std::uint64_t, 256> sbox = aes_sbox();
  // FIPS 197 figure 7: S(0x00) = 0x63, S(0x53) = 0xed, S(0xff) = 0x16.
  REQUIRE(sbox[0x00] == 0x63);
  REQUIRE(sbox[0x53] == 0xed);
  REQUIRE(sbox[0xff] == 0x16);
  PlaintextFixture f;
  const IntType u8{8, false};
  ScheduleCost cost;
  const std::vector<std::uint64_t> got =
      run_lookup(f, u8, std::vector<std::uint64_t>(sbox.begin(), sbox.end()), u8, &cost);
  for (std::size_t x = 0; x < 256; ++x) CHECK(got[x] == sbox[x]);
  // Per byte: a free first level, one gate a pair at the second, MUXes above (subtrees
  // shared between result bits are recorded once): docs/circuits.md's 745 in 9 levels.
  CHECK(cost.bootstraps == 745 * 256);
  CHECK(cost.depth == 9);
}

TEST_CASE("lookup: constant and repeated tables cost nothing, tables are checked",
          "[circuits][lookup]") {
  Circuit c;
  const Expr x = c.input(IntType{4, false}, 3);
  // A constant table is a constant; table[i] = bit 2 of i is x's bit 2.
  std::vector<std::uint64_t> sevens(16, 7), third;
  for (std::uint64_t i = 0; i < 16; ++i) third.push_back((i >> 2) & 1);
  const Expr k = lookup(c, x, sevens, IntType{3, false});
  const Expr b = lookup(c, x, third, IntType{1, false});
  CHECK(c.nodes().empty());
  CHECK(k.bit(0).constant_value() == true);
  CHECK(b.bit(0) == x.bit(2));

  const std::vector<std::uint64_t> short_table(15, 0);
  CHECK_THROWS_WITH(lookup(c, x, short_table, IntType{8, false}),
                    Catch::Contains("lookup: the table has 15 entries but x is u4: it needs 16"));
  std::vector<std::uint64_t> wide(16, 1);
  wide[5] = 300;
  CHECK_THROWS_WITH(lookup(c, x, wide, IntType{8, false}),
                    Catch::Contains("lookup: value 300 (element 5) does not fit u8"));
  CHECK_THROWS_WITH(lookup(c, x, sevens, IntType{65, false}), Catch::Contains("lookup: type u65"));
  CHECK_THROWS_WITH(lookup(c, c.input(IntType{17, false}, 1), sevens, IntType{8, false}),
                    Catch::Contains("lookup: x is u17; tables index integers of up to 16 bits"));
}
