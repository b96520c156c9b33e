// CPU tests of key switching as one integer matrix product (gpu/src/ks_gemm.hpp, the WMMA
// kernel of gpu/src/ks_gemm.cu): the byte-plane matrix rebuilds the key exactly, the one-hot
// product equals core's key_switch, the kernel's tiling run on the host (every block, every
// thread's tile loads and epilogue, every warp's 16 x 16 x 16 fragment products with a scalar
// integer product in place of mma_sync) equals core's key_switch word for word, and the
// shapes the kernel refuses (the int32 accumulator bound) are refused.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <vector>

#include "kernel_math.hpp"
#include "ks_gemm.hpp"
#include "test_support.hpp"
#include "torusgate/core/bootstrap.hpp"

using namespace torusgate;
using torusgate::test::catch_seed;
using torusgate::test::keys_for;
using torusgate::test::seeded_rng;
namespace k = torusgate::gpu::kernel;
namespace kg = torusgate::gpu::kernel::ks_gemm;

namespace {

k::KeySwitchConstants constants_of(const Parameters& p) {
  return k::make_key_switch(p.ks_base_log, p.ks_level_count, p.lwe_dimension,
                            p.extracted_lwe_dimension());
}

// The largest accumulator the mirror met (each kept in 64 bits, so an int32 overflow shows),
// the blocks run, and the ones in A tile rows of gates past the batch (must stay 0).
struct MirrorStats {
  std::int64_t max_accumulator = 0;
  std::uint64_t blocks = 0;
  std::uint64_t ones_past_batch = 0;
  std::uint64_t a_mismatches = 0;  // A tile bytes of the batch's gates that differ from a_element
};

// mma_sync on the host: c (16 x 16, row-major) += a (16 x 16, row-major, leading dimension
// lda) times b (16 x 16, column-major, leading dimension ldb), exact integers. A fragment of
// zeros adds nothing and is skipped (most of A is zero), which keeps the mirror fast without
// changing any sum.
void fragment_mma(const std::uint8_t* a, unsigned lda, const std::uint8_t* b, unsigned ldb,
                  std::int64_t* c) {
  bool any = false;
  for (unsigned i = 0; i < kg::fragment && !any; ++i) {
    for (unsigned kk = 0; kk < kg::fragment; ++kk) any = any || a[i * lda + kk] != 0;
  }
  if (!any) return;
  for (unsigned i = 0; i < kg::fragment; ++i) {
    for (unsigned kk = 0; kk < kg::fragment; ++kk) {
      const std::int64_t av = a[i * lda + kk];
      if (av == 0) continue;
      std::int64_t* crow = c + i * kg::fragment;
      for (unsigned j = 0; j < kg::fragment; ++j) crow[j] += av * b[j * ldb + kk];
    }
  }
}

// key_switch_gemm_kernel<G> on the host, block by block (grid x: gate tiles, y: word tiles),
// with the kernel's shared memory (one buffer: two stages of A and B tiles, then the C tile in
// the same bytes), its barriers as the order of the loops, its per-thread registers (every
// thread's fetched share of the next step's A tile; the next B tile copied into the other
// stage, which the host's copy16_async does at once) and its per-thread and per-warp
// functions. Every
// A tile of the first word tile is checked byte for byte against a_element.
template <unsigned G>
void mirror_key_switch_gemm(const std::vector<Torus32>& extracted, std::uint64_t jobs,
                            const std::vector<std::uint64_t>& result_index,
                            const std::vector<std::uint8_t>& matrix,
                            const k::KeySwitchConstants& ks, std::vector<Torus32>& result_words,
                            MirrorStats& stats) {
  const kg::Layout l = kg::make_layout(ks);
  REQUIRE(kg::groups_per_thread(ks.base_log) == G);
  REQUIRE(matrix.size() == l.bytes());
  REQUIRE(extracted.size() >= jobs * (std::uint64_t{ks.input_dimension} + 1));
  REQUIRE(result_index.size() >= jobs);
  std::vector<std::int32_t> shared(kg::shared_bytes / 4);
  auto* stages = reinterpret_cast<std::uint8_t*>(shared.data());
  std::vector<kg::AFetch<G>> a_next(kg::threads);
  constexpr unsigned fragment_words = kg::fragment * kg::fragment;
  using WarpAccumulators =
      std::array<std::int64_t, kg::warp_fragments_m * kg::planes * fragment_words>;
  std::vector<WarpAccumulators> acc(kg::warps);
  const std::uint64_t in_words = std::uint64_t{ks.input_dimension} + 1;
  for (std::uint32_t by = 0; by < l.word_tiles(); ++by) {
    const std::uint32_t w0 = by * kg::tile_words;
    for (std::uint64_t tile = 0; tile < kg::gate_tiles(jobs); ++tile) {
      ++stats.blocks;
      const std::uint64_t g0 = tile * kg::tile_gates;
      const auto gates =
          static_cast<std::uint32_t>(std::min<std::uint64_t>(kg::tile_gates, jobs - g0));
      for (auto& a : acc) a.fill(0);
      for (unsigned t = 0; t < kg::threads; ++t) {
        kg::fetch_a(t, g0, gates, 0, extracted.data(), ks, l, a_next[t]);
        kg::copy_b_tile_async(t, 0, w0, matrix.data(), l, stages + kg::b_stage_offset(0));
      }
      unsigned stage = 0;
      for (std::uint32_t k0 = 0; k0 < l.rows_padded; k0 += kg::tile_k, stage ^= 1u) {
        std::uint8_t* const a_tile = stages + kg::a_stage_offset(stage);
        std::uint8_t* const b_tile = stages + kg::b_stage_offset(stage);
        for (unsigned t = 0; t < kg::threads; ++t) {
          kg::write_a_tile(t, ks, l, a_next[t], a_tile);
        }
        if (k0 + kg::tile_k < l.rows_padded) {  // after the barrier: the next step's loads
          for (unsigned t = 0; t < kg::threads; ++t) {
            kg::fetch_a(t, g0, gates, k0 + kg::tile_k, extracted.data(), ks, l, a_next[t]);
            kg::copy_b_tile_async(t, k0 + kg::tile_k, w0, matrix.data(), l,
                                  stages + kg::b_stage_offset(stage ^ 1u));
          }
        }
        for (unsigned g = 0; g < kg::tile_gates; ++g) {
          for (unsigned kk = 0; kk < kg::tile_k; ++kk) {
            const std::uint8_t a = a_tile[kg::a_tile_offset(g, kk)];
            if (g >= gates) stats.ones_past_batch += a;
            else if (by == 0) {
              stats.a_mismatches +=
                  a != kg::a_element(ks, l, extracted.data() + (g0 + g) * in_words, k0 + kk);
            }
          }
        }
        for (unsigned warp = 0; warp < kg::warps; ++warp) {
          for (unsigned kk = 0; kk < kg::tile_k; kk += kg::fragment) {
            for (unsigned fm = 0; fm < kg::warp_fragments_m; ++fm) {
              for (unsigned b = 0; b < kg::planes; ++b) {
                fragment_mma(a_tile + kg::a_fragment_offset(warp, fm, kk), kg::a_ldm,
                             b_tile + kg::b_fragment_offset(warp, b, kk), kg::b_ldm,
                             acc[warp].data() + (fm * kg::planes + b) * fragment_words);
              }
            }
          }
        }
      }
      for (unsigned warp = 0; warp < kg::warps; ++warp) {  // recombined, store_matrix_sync
        for (unsigned fm = 0; fm < kg::warp_fragments_m; ++fm) {
          const std::int64_t* f = acc[warp].data() + fm * kg::planes * fragment_words;
          std::int32_t* c = shared.data() + kg::c_fragment_index(warp, fm);
          for (unsigned e = 0; e < fragment_words; ++e) {
            std::int32_t p[kg::planes];
            for (unsigned b = 0; b < kg::planes; ++b) {
              const std::int64_t v = f[b * fragment_words + e];
              stats.max_accumulator = std::max(stats.max_accumulator, v);
              p[b] = static_cast<std::int32_t>(v);
            }
            c[(e / kg::fragment) * kg::c_ldm + e % kg::fragment] =
                static_cast<std::int32_t>(kg::recombine(p[0], p[1], p[2], p[3]));
          }
        }
      }
      for (unsigned t = 0; t < kg::threads; ++t) {
        kg::store_tile(t, g0, gates, w0, shared.data(), extracted.data(), result_index.data(), ks,
                       result_words.data());
      }
    }
  }
}

void mirror_key_switch_gemm(const std::vector<Torus32>& extracted, std::uint64_t jobs,
                            const std::vector<std::uint64_t>& result_index,
                            const std::vector<std::uint8_t>& matrix,
                            const k::KeySwitchConstants& ks, std::vector<Torus32>& result_words,
                            MirrorStats& stats) {
  kg::with_groups_per_thread(ks.base_log, [&](auto groups) {  // the launcher's choice
    mirror_key_switch_gemm<decltype(groups)::value>(extracted, jobs, result_index, matrix, ks, result_words,
                                     stats);
  });
}

// The gates of a test batch: odd gates have every coefficient one edge value (every digit
// base-1 after rounding, 0xffffffff, every digit 0 after rounding, 0, the rounding
// boundaries, 1/2), even gates random coefficients; bodies 0, 0xffffffff or random.
std::vector<Torus32> test_gates(Csprng& rng, const k::KeySwitchConstants& ks, std::size_t count) {
  const std::size_t words = std::size_t{ks.input_dimension} + 1;
  const Torus32 all_max = 0xffffffffu - ks.round_offset;  // + offset = 0xffffffff
  const Torus32 all_zero = Torus32{0} - ks.round_offset;   // + offset = 0
  const std::vector<Torus32> edges = {all_max,      0xffffffffu, all_zero,   0u,
                                      all_zero - 1, all_max + 1, 0x80000000u};
  std::vector<Torus32> v(count * words);
  for (std::size_t g = 0; g < count; ++g) {
    Torus32* s = v.data() + g * words;
    for (std::size_t i = 0; i + 1 < words; ++i) {
      s[i] = g % 2 == 1 ? edges[(g / 2) % edges.size()] : rng.uniform_torus();
    }
    s[words - 1] = g % 3 == 0 ? rng.uniform_torus() : g % 3 == 1 ? 0xffffffffu : 0u;
  }
  return v;
}

// The kernel's data flow on the host against core's key_switch: results scattered by a
// permuted result_index into a larger buffer whose other words must stay untouched. Past the
// batch, the buffers hold a tile of further gates (random samples, result index 0, a free
// slot), which the kernel must neither select samples for nor write.
void check_against_core(const Parameters& p, std::size_t count, std::uint64_t seed) {
  INFO("parameter set " << p.name << ", " << count << " gates, seed " << seed);
  Csprng rng = seeded_rng(seed);
  const KeySwitchingKey& ksk = keys_for(p).cloud->key_switching_key();
  const k::KeySwitchConstants ks = constants_of(p);
  const kg::Layout l = kg::make_layout(ks);
  const auto matrix = kg::build_matrix(ksk.data().data(), ksk.data().size(), l);
  const auto inputs = test_gates(rng, ks, count);
  const std::size_t n1 = p.lwe_dimension + 1;
  std::vector<Torus32> want(count * n1);
  key_switch(ksk, inputs, count, want);

  const std::size_t slots = count + 2;
  std::vector<std::uint64_t> result_index(count + kg::tile_gates, 0);
  for (std::size_t g = 0; g < count; ++g) result_index[g] = count - g;  // reversed, slots 1..count
  std::vector<Torus32> buffer = inputs;
  for (std::size_t i = 0; i < kg::tile_gates * (std::size_t{ks.input_dimension} + 1); ++i) {
    buffer.push_back(rng.uniform_torus());
  }
  const Torus32 sentinel = 0x5a5a5a5au;
  std::vector<Torus32> results(slots * n1, sentinel);
  MirrorStats stats;
  mirror_key_switch_gemm(buffer, count, result_index, matrix, ks, results, stats);
  CHECK(stats.blocks == kg::gate_tiles(count) * l.word_tiles());
  CHECK(stats.ones_past_batch == 0);
  CHECK(stats.a_mismatches == 0);
  CHECK(stats.max_accumulator <= static_cast<std::int64_t>(kg::max_accumulator(ks)));
  CHECK(stats.max_accumulator <= std::numeric_limits<std::int32_t>::max());
  std::size_t wrong = 0;
  for (std::size_t g = 0; g < count; ++g) {
    for (std::size_t w = 0; w < n1; ++w) {
      wrong += results[result_index[g] * n1 + w] != want[g * n1 + w];
    }
  }
  CHECK(wrong == 0);
  for (const std::size_t free_slot : {std::size_t{0}, slots - 1}) {
    CHECK(std::all_of(results.begin() + free_slot * n1, results.begin() + (free_slot + 1) * n1,
                      [&](Torus32 x) { return x == sentinel; }));
  }
}

}  // namespace

TEST_CASE("ks_gemm: the byte-plane matrix rebuilds the key exactly, padding zero",
          "[gpu-host][ks-gemm]") {
  for (const Parameters& p : {toy_insecure(), toy_k2_insecure(), tfhe_lib_128()}) {
    INFO("parameter set " << p.name);
    const KeySwitchingKey& ksk = keys_for(p).cloud->key_switching_key();
    const k::KeySwitchConstants ks = constants_of(p);
    const kg::Layout l = kg::make_layout(ks);
    const std::size_t n1 = p.lwe_dimension + 1;
    const std::size_t base = std::size_t{1} << p.ks_base_log;
    CHECK(l.words == n1);
    CHECK(std::size_t{l.rows} == std::size_t{ks.input_dimension} * ks.level_count * base);
    CHECK(std::size_t{l.rows} / base * (base - 1) * n1 == ksk.data().size());
    CHECK(l.rows_padded % kg::tile_k == 0);
    CHECK(l.rows_padded - l.rows < kg::tile_k);
    CHECK(l.plane_columns % kg::tile_words == 0);
    CHECK(l.plane_columns - n1 < kg::tile_words);
    CHECK(l.bytes() == std::size_t{l.rows_padded} * 4 * l.plane_columns);
    const auto m = kg::build_matrix(ksk.data().data(), ksk.data().size(), l);
    REQUIRE(m.size() == l.bytes());
    // Row (i, level, digit) is core's sample (i, level, digit) for digit >= 1; the digit-0
    // rows and the padding are zero.
    std::size_t wrong = 0, nonzero_padding = 0, samples = 0;
    for (std::uint32_t r = 0; r < l.rows_padded; ++r) {
      const kg::Sample s = kg::decode_row(l, r);
      const bool stored = r < l.rows && s.digit != 0;
      if (r < l.rows) REQUIRE(kg::sample_row(l, s.coefficient, s.level, s.digit) == r);
      samples += stored;
      const std::size_t core_index =
          stored ? k::ksk_sample_index(s.coefficient, s.level, s.digit, ks.level_count, base, n1)
                 : 0;
      for (std::uint32_t w = 0; w < l.plane_columns; ++w) {
        Torus32 word = 0;
        for (unsigned b = 0; b < kg::planes; ++b) {
          const std::uint8_t byte = m[kg::matrix_index(l, r, b, w)];
          word += Torus32{byte} << (8 * b);
        }
        if (stored && w < n1) wrong += word != ksk.data()[core_index + w];
        else nonzero_padding += word != 0;
      }
    }
    CHECK(samples * n1 == ksk.data().size());
    CHECK(wrong == 0);
    CHECK(nonzero_padding == 0);
    for (const std::uint32_t i : {0u, 1u, ks.input_dimension - 1}) {
      for (std::uint32_t level = 0; level < ks.level_count; ++level) {
        for (std::uint32_t digit = 0; digit < base; ++digit) {
          const kg::Sample s = kg::decode_row(l, kg::sample_row(l, i, level, digit));
          REQUIRE(s.coefficient == i);
          REQUIRE(s.level == level);
          REQUIRE(s.digit == digit);
        }
      }
    }
  }
}

TEST_CASE("ks_gemm: the one-hot product of the byte planes equals core's key_switch",
          "[gpu-host][ks-gemm]") {
  // The formulation alone (no tiles): out = init - sum_b 2^(8b) (A B_b), with A from
  // a_element and each plane product in int64, on toy, toy k=2 and tfhe_lib_128.
  const std::uint64_t seed = catch_seed(0x6b5);
  for (const Parameters& p : {toy_insecure(), toy_k2_insecure(), tfhe_lib_128()}) {
    INFO("parameter set " << p.name << ", seed " << seed);
    Csprng rng = seeded_rng(seed);
    const KeySwitchingKey& ksk = keys_for(p).cloud->key_switching_key();
    const k::KeySwitchConstants ks = constants_of(p);
    const kg::Layout l = kg::make_layout(ks);
    const auto m = kg::build_matrix(ksk.data().data(), ksk.data().size(), l);
    const std::size_t count = 9, n1 = p.lwe_dimension + 1, in_words = ks.input_dimension + 1;
    const auto inputs = test_gates(rng, ks, count);
    std::vector<Torus32> want(count * n1);
    key_switch(ksk, inputs, count, want);
    for (std::size_t g = 0; g < count; ++g) {
      const Torus32* sample = inputs.data() + g * in_words;
      std::vector<std::int64_t> plane_sums(kg::planes * n1, 0);
      std::uint32_t ones = 0, nonzero_digits = 0;
      for (std::uint32_t r = 0; r < l.rows_padded; ++r) {
        const std::uint8_t a = kg::a_element(ks, l, sample, r);
        REQUIRE(a <= 1);
        if (a == 0) continue;
        ++ones;
        for (unsigned b = 0; b < kg::planes; ++b) {
          for (std::size_t w = 0; w < n1; ++w) {
            plane_sums[b * n1 + w] += m[kg::matrix_index(l, r, b, static_cast<std::uint32_t>(w))];
          }
        }
      }
      for (std::uint32_t i = 0; i < ks.input_dimension; ++i) {
        for (std::uint32_t level = 0; level < ks.level_count; ++level) {
          nonzero_digits += k::key_switch_digit(ks, sample[i] + ks.round_offset, level) != 0;
        }
      }
      CHECK(ones == nonzero_digits);  // one sample per nonzero digit, none for digit 0
      CHECK(ones <= ks.input_dimension * ks.level_count);
      for (std::size_t w = 0; w < n1; ++w) {
        const Torus32 init = w + 1 == n1 ? sample[ks.input_dimension] : 0;
        REQUIRE(plane_sums[w] <= 0x7fffffff);
        const Torus32 got = kg::output_word(
            init, kg::recombine(static_cast<std::int32_t>(plane_sums[w]),
                                static_cast<std::int32_t>(plane_sums[n1 + w]),
                                static_cast<std::int32_t>(plane_sums[2 * n1 + w]),
                                static_cast<std::int32_t>(plane_sums[3 * n1 + w])));
        REQUIRE(got == want[g * n1 + w]);
      }
    }
  }
  // The edge gates: every digit base-1 selects kN*t samples, every digit 0 selects none.
  const k::KeySwitchConstants ks = constants_of(toy_insecure());
  const kg::Layout l = kg::make_layout(ks);
  std::vector<Torus32> all_max(ks.input_dimension + 1, 0xffffffffu - ks.round_offset);
  std::vector<Torus32> all_zero(ks.input_dimension + 1, Torus32{0} - ks.round_offset);
  std::uint32_t ones_max = 0, ones_zero = 0;
  for (std::uint32_t r = 0; r < l.rows_padded; ++r) {
    ones_max += kg::a_element(ks, l, all_max.data(), r);
    ones_zero += kg::a_element(ks, l, all_zero.data(), r);
  }
  CHECK(ones_max == ks.input_dimension * ks.level_count);
  CHECK(ones_zero == 0);
  CHECK(kg::recombine(1, 0, 0, 0) == 1u);
  CHECK(kg::recombine(0, 1, 0, 0) == 0x100u);
  CHECK(kg::recombine(0, 0, 0, 1) == 0x1000000u);
  CHECK(kg::recombine(0x7fffffff, 0, 0, 0x7fffffff) == 0x7fffffffu + 0xff000000u);
  CHECK(kg::output_word(5, kg::recombine(6, 0, 0, 0)) == 0xffffffffu);
}

TEST_CASE("ks_gemm: a step's threads write every A element and B byte of a stage once",
          "[gpu-host][ks-gemm]") {
  // The stages are not cleared between steps, so an element no thread writes would keep an
  // older step's value.
  std::vector<unsigned> a_writes(kg::a_tile_bytes), b_writes(kg::b_tile_bytes);
  for (unsigned t = 0; t < kg::threads; ++t) {
    REQUIRE(kg::a_gate(t) < kg::tile_gates);
    for (unsigned row = 0; row < kg::a_rows_per_thread; ++row) {
      const unsigned kk = kg::a_rows_per_thread * kg::a_slab(t) + row;
      REQUIRE(kk < kg::tile_k);
      // The thread's 16 bytes are contiguous: write_a_tile stores them at once.
      REQUIRE(kg::a_tile_offset(kg::a_gate(t), kk) ==
              kg::a_tile_offset(kg::a_gate(t), kk - row) + row);
      ++a_writes.at(kg::a_tile_offset(kg::a_gate(t), kk));
    }
    for (unsigned c = 0; c < kg::b_copies_per_thread; ++c) {
      const kg::BPiece p = kg::b_piece(t, c);
      REQUIRE(p.kk + 16 <= kg::tile_k);
      REQUIRE(p.plane < kg::planes);
      REQUIRE(p.word < kg::tile_words);
      // 16 rows of one column, contiguous in the tile (one 16-byte copy).
      const unsigned column = p.plane * kg::tile_words + p.word;
      for (unsigned byte = 0; byte < 16; ++byte) {
        REQUIRE(kg::b_tile_offset(p.kk + byte, column) == kg::b_tile_offset(p.kk, column) + byte);
        ++b_writes.at(kg::b_tile_offset(p.kk + byte, column));
      }
    }
  }
  CHECK(std::all_of(a_writes.begin(), a_writes.end(), [](unsigned n) { return n == 1; }));
  // Each quarter-warp's 16-byte B stores (one phase of shared memory) cover 128 consecutive
  // bytes, so no two hit the same bank; and a warp reads whole 64-byte runs of the matrix
  // (each column's 64 rows of the step).
  for (unsigned c = 0; c < kg::b_copies_per_thread; ++c) {
    for (unsigned t0 = 0; t0 < kg::threads; t0 += 8) {
      const kg::BPiece first = kg::b_piece(t0, c);
      for (unsigned t = t0; t < t0 + 8; ++t) {
        const kg::BPiece p = kg::b_piece(t, c);
        CHECK(kg::b_tile_offset(p.kk, p.plane * kg::tile_words + p.word) ==
              kg::b_tile_offset(first.kk, first.plane * kg::tile_words + first.word) +
                  16 * (t - t0));
      }
    }
    for (unsigned t0 = 0; t0 < kg::threads; t0 += kg::warp_size) {
      std::map<std::pair<unsigned, unsigned>, unsigned> rows_of_column;
      for (unsigned t = t0; t < t0 + kg::warp_size; ++t) {
        const kg::BPiece p = kg::b_piece(t, c);
        rows_of_column[{p.plane, p.word}] |= 1u << (p.kk / 16);
      }
      CHECK(rows_of_column.size() == 8);
      for (const auto& [column, slabs] : rows_of_column) CHECK(slabs == 0xfu);
    }
  }
  CHECK(std::all_of(b_writes.begin(), b_writes.end(), [](unsigned n) { return n == 1; }));
  // The two stages and the C tile fit the block's static shared memory, each stage's tiles
  // 128-byte aligned.
  CHECK(kg::b_stage_offset(1) + kg::b_tile_bytes <= kg::shared_bytes);
  CHECK(kg::c_tile_bytes <= kg::shared_bytes);
  CHECK(kg::a_stage_offset(1) % 128 == 0);
  CHECK(kg::b_stage_offset(0) % 128 == 0);
}

TEST_CASE("ks_gemm: the kernel's tiling on the host equals core's key_switch word for word",
          "[gpu-host][ks-gemm]") {
  const std::uint64_t seed = catch_seed(0x6b6);
  // 67 gates: two gate tiles, the second with 3 gates; 1 gate; a few on the real sets.
  check_against_core(toy_insecure(), kg::tile_gates + 3, seed);
  check_against_core(toy_insecure(), 1, seed + 1);
  check_against_core(toy_k2_insecure(), 9, seed + 2);
  check_against_core(toy_k2_insecure(), 1, seed + 3);
  check_against_core(tfhe_lib_128(), 8, seed + 4);
  check_against_core(default_128(), 5, seed + 5);
  // The other kernel instantiations (groups_per_thread 8 and 1): key-switching bases 2, 16
  // and 32 on the toy set (base 16: a thread's rows are one whole group; base 32: half of one).
  for (const auto& [base_log, levels] : {std::pair{1u, 16u}, {4u, 4u}, {5u, 3u}}) {
    Parameters p = toy_insecure();
    p.name = "toy_ks" + std::to_string(base_log) + "_INSECURE";
    p.ks_base_log = base_log;
    p.ks_level_count = levels;
    check_against_core(p, 3, seed + 6 + base_log);
  }
}

TEST_CASE("ks_gemm: shapes the kernel cannot run exactly are refused", "[gpu-host][ks-gemm]") {
  // Every parameter set fits, with the stated bounds.
  for (const Parameters& p : all_parameter_sets()) {
    INFO("parameter set " << p.name);
    const kg::Layout l = kg::make_layout(constants_of(p));
    CHECK(l.word_tiles() >= 1);
    CHECK(kg::max_accumulator(constants_of(p)) <= kg::accumulator_limit);
  }
  CHECK(kg::max_accumulator(constants_of(tfhe_lib_128())) == 2088960u);
  CHECK(kg::max_accumulator(constants_of(default_128())) == 2611200u);
  // The largest shape valid Parameters allow: kN = 8 * 16384, t = 32 (base 2).
  CHECK(kg::max_accumulator(k::make_key_switch(1, 32, 4096, 8 * 16384)) == 1069547520u);
  CHECK_NOTHROW(kg::make_layout(k::make_key_switch(1, 32, 4096, 8 * 16384)));
  // The int32 bound: kN * t * 255 <= 2^31 - 1, i.e. kN * t <= 8,421,504.
  CHECK_NOTHROW(kg::make_layout(k::make_key_switch(1, 1, 630, 8421504)));
  REQUIRE_INVALID_ARGUMENT(kg::make_layout(k::make_key_switch(1, 1, 630, 8421505)),
                           "could overflow the int32 accumulators");
  REQUIRE_INVALID_ARGUMENT(kg::make_layout(k::make_key_switch(2, 8, 630, 1u << 21)),
                           "input_dimension*level_count*255 = 4278190080");
  // Other shapes.
  REQUIRE_INVALID_ARGUMENT(kg::make_layout(k::make_key_switch(0, 8, 630, 1024)), "base_log=0");
  REQUIRE_INVALID_ARGUMENT(kg::make_layout(k::make_key_switch(17, 1, 630, 1024)), "base_log=17");
  REQUIRE_INVALID_ARGUMENT(kg::make_layout(k::make_key_switch(2, 0, 630, 1024)), "level_count=0");
  REQUIRE_INVALID_ARGUMENT(kg::make_layout(k::make_key_switch(4, 9, 630, 1024)), "level_count=9");
  REQUIRE_INVALID_ARGUMENT(kg::make_layout(k::make_key_switch(2, 8, 630, 0)), "input_dimension");
  // At most 2^31 - tile_k rows, kN*t*2^base_log: kN = 16383 with base 2^16 and t = 2 fits.
  CHECK_NOTHROW(kg::make_layout(k::make_key_switch(16, 2, 630, 16383)));
  REQUIRE_INVALID_ARGUMENT(kg::make_layout(k::make_key_switch(16, 2, 630, 16384)),
                           "the matrix would have 2147483648 rows (kN*t*2^base_log)");
  CHECK_NOTHROW(kg::make_layout(k::make_key_switch(2, 8, 65535 * kg::tile_words - 1, 1024)));
  REQUIRE_INVALID_ARGUMENT(
      kg::make_layout(k::make_key_switch(2, 8, 65535 * kg::tile_words, 1024)),
      "65536 word tiles");
  // write_matrix: the key's size and the output's.
  const kg::Layout l = kg::make_layout(constants_of(toy_insecure()));
  std::vector<Torus32> key(std::size_t{l.rows} / 8 * 7 * l.words, 7u);  // base 8: 7 of 8 rows
  std::vector<std::uint8_t> out(l.bytes());
  CHECK_NOTHROW(kg::write_matrix(key.data(), key.size(), l, out.data(), out.size()));
  REQUIRE_INVALID_ARGUMENT(kg::write_matrix(key.data(), key.size() - 1, l, out.data(), out.size()),
                           "the key has");
  REQUIRE_INVALID_ARGUMENT(kg::write_matrix(key.data(), key.size(), l, out.data(), out.size() - 1),
                           "the output has");
  // The launcher's matrix pointer check.
  alignas(16) std::uint8_t bytes[32] = {};
  CHECK_NOTHROW(kg::check_matrix_pointer(bytes));
  CHECK_NOTHROW(kg::check_matrix_pointer(bytes + 16));
  REQUIRE_INVALID_ARGUMENT(kg::check_matrix_pointer(bytes + 1), "1 bytes past a multiple of 16");
  REQUIRE_INVALID_ARGUMENT(kg::check_matrix_pointer(nullptr), "null");
}
