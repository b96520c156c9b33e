// Key switching of a batch as one exact integer matrix product (GPU issue 5), for the WMMA
// kernel of ks_gemm.cu and its host mirror (tests/gpu/test_ks_gemm_host.cpp): the byte-plane
// matrix made from core's key-switching key, the one-hot left matrix, the tiles, and the
// epilogue. Compiled by nvcc and by the host compiler; standard headers (and core's
// exception header, itself standard headers only).
//
// core's key switching (TFHE, J. Cryptology 2020, section 4; batched it is the integer GEMM
// mod 2^32 of DESIGN.md section 4) is
//   out[g] = (0,...,0,b_g) - sum_{i < kN, j < t} KSK[i][j][d_gij]
// with d_gij the unsigned digit j of a_gi + round_offset; digit 0 selects nothing (its sample
// is not stored). Give each (i, j) a group of base = 2^base_log rows of the matrix, row
// r = ((i t + j) << base_log) + d holding sample (i, j, d) for d >= 1 and zeros for d = 0.
// Then
//   out[g] = init[g] - sum_r A[g][r] B[r]   (mod 2^32)
// with A[g][r] = 1 when gate g's digit (i, j) is d >= 1, else 0 (one-hot: at most kN*t ones
// per row) and B = the key as a [K = kN t base][n+1] matrix. Split every key word into its
// four unsigned bytes, B = sum_b 2^(8b) B_b with B_b in [0, 255]; each A B_b is an exact
// int32 product (every entry at most kN*t*255, checked < 2^31 by make_layout), so
//   sum_r A[g][r] B[r][w] = sum_b 2^(8b) (A B_b)[g][w]   (mod 2^32, uint32 wrap)
// gives core's words exactly: same samples, same noise.
//
// Why a zero row per group: with base >= 4 the rows of a group fill whole 32-bit words of a
// gate's row of A, so a thread makes a word of A from one digit with a shift (1 << 8(d - p),
// p the word's first row in the group), instead of a compare per byte with groups of base-1
// rows straddling words; the price is base/(base-1) times the products (4/3 for
// tfhe_lib_128's base 4).
//
// Byte-plane matrix (device memory, made once per key): [4 * plane_columns][rows_padded]
// uint8, column-major (each column's rows contiguous, as the tensor cores take B: a 16-byte
// piece is 16 rows of one column, copied as it is into the B tile); plane b (byte b of each
// word, b = 0 least significant) is columns [b * plane_columns, (b+1) * plane_columns), word
// w column b * plane_columns + w; row r as above. rows_padded = K rounded up to tile_k,
// plane_columns = n+1 rounded up to tile_words; every padding byte and every d = 0 row is 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "kernel_math.hpp"
#include "torusgate/core/error.hpp"

namespace torusgate::gpu::kernel::ks_gemm {

// ---- tile shape -----------------------------------------------------------------------------

inline constexpr unsigned fragment = 16;   // WMMA m = n = k (u8 x u8 -> int32)
inline constexpr unsigned planes = 4;      // bytes of a Torus32
inline constexpr unsigned tile_gates = 64;  // gates per block (A rows)
inline constexpr unsigned tile_words = 64;  // output words per block, in each of the 4 planes
inline constexpr unsigned tile_columns = planes * tile_words;  // 256 columns of the matrix
inline constexpr unsigned tile_k = 64;      // matrix rows per step of the K loop
inline constexpr unsigned threads = 256;    // 8 warps
inline constexpr unsigned warp_size = 32;
// The launch bound's blocks per multiprocessor: at most 128 registers a thread (unbounded,
// ptxas took 170-181 for the kernel's 64 accumulator registers and the step's fragments
// loaded ahead, one block per SM).
inline constexpr unsigned blocks_per_multiprocessor = 2;
inline constexpr unsigned warps = threads / warp_size;
// The warps of a block as a 2 x 4 grid: each warp owns 32 gates and 16 words in all four
// planes, 2 x 4 fragments of 16 x 16 int32 accumulators (row fragment fm, plane b). The four
// planes of a word are in the same warp, so the epilogue recombines them in registers: the
// accumulators of one fragment type map their elements to the same positions, so element e
// of plane b's fragments is the same (gate, word) for every b.
inline constexpr unsigned warp_grid_rows = 2;
inline constexpr unsigned warp_grid_columns = 4;
inline constexpr unsigned warp_tile_gates = tile_gates / warp_grid_rows;    // 32
inline constexpr unsigned warp_tile_words = tile_words / warp_grid_columns;  // 16
inline constexpr unsigned warp_fragments_m = warp_tile_gates / fragment;    // 2
static_assert(warp_tile_words == fragment, "a warp's words are one fragment wide per plane");

// Shared memory of a block: two stages of an A tile and a B tile during the K loop (step s
// writes stage s mod 2 while the products of step s-1 may still read the other, so a step
// needs one barrier); then, in the same bytes, the int32 C tile of recombined words for the
// epilogue.
inline constexpr unsigned a_tile_bytes = tile_gates * tile_k;                  // 4 KB
inline constexpr unsigned b_tile_bytes = tile_k * tile_columns;                // 16 KB
inline constexpr unsigned stage_bytes = a_tile_bytes + b_tile_bytes;           // 20 KB
inline constexpr unsigned stages = 2;
inline constexpr unsigned c_tile_bytes = tile_gates * tile_words * 4;          // 16 KB
inline constexpr unsigned shared_bytes =
    stages * stage_bytes > c_tile_bytes ? stages * stage_bytes : c_tile_bytes;
// Byte offsets of stage `stage`'s A and B tiles in the block's shared memory.
TG_HD unsigned a_stage_offset(unsigned stage) { return stage * stage_bytes; }
TG_HD unsigned b_stage_offset(unsigned stage) { return stage * stage_bytes + a_tile_bytes; }

// A thread's share of a step's tiles: 16 consecutive rows of one gate's A row (one 16-byte
// store), and 4 pieces of 16 bytes of the B tile (asynchronous copies).
inline constexpr unsigned a_rows_per_thread = 16;
inline constexpr unsigned b_copies_per_thread = tile_k * tile_columns / 16 / threads;  // 4

// Leading dimensions of the fragments' loads and stores (elements).
inline constexpr unsigned a_ldm = fragment;      // A and B tiles are 16-column slabs
inline constexpr unsigned b_ldm = fragment;      // (B column-major)
inline constexpr unsigned c_ldm = tile_words;    // C tile row-major

static_assert(warp_grid_rows * warp_grid_columns == warps);
static_assert(tile_k % fragment == 0 && tile_words % fragment == 0);
static_assert(tile_gates * tile_k == threads * a_rows_per_thread,
              "fetch_a: one gate's 16 rows a thread");
static_assert(a_rows_per_thread == fragment, "a thread's A rows are one slab row");
static_assert(tile_k * tile_columns % (16 * threads) == 0, "fetch_b: whole 16-byte copies");
static_assert(stage_bytes % 128 == 0, "every stage's tiles 128-byte aligned (WMMA needs 32)");
static_assert(shared_bytes <= 48 * 1024, "dynamic shared memory without the opt-in attribute");

// An accumulator is at most (ones in a row of A) * 255 <= kN * t * 255; int32 holds it while
// kN * t <= accumulator_limit / 255 = 8,421,504. Every valid parameter set is far below
// (kN <= 8 * 16384 and t <= 32 give at most 2^22 * 255 < 2^30; tfhe_lib_128 2,088,960,
// default_128 2,611,200).
inline constexpr std::uint64_t accumulator_limit = 0x7fffffffu;  // 2^31 - 1

TG_HD std::uint64_t max_accumulator(const KeySwitchConstants& ks) {
  return std::uint64_t{ks.input_dimension} * ks.level_count * 255u;
}

// ---- the byte-plane matrix ------------------------------------------------------------------

struct Layout {
  std::uint32_t rows = 0;         // K = kN t base: a group of base rows per (coefficient, level)
  std::uint32_t rows_padded = 0;  // K rounded up to tile_k (zero rows after K)
  std::uint32_t base_log = 0;     // log2(base): a group's rows
  std::uint32_t level_count = 0;  // t
  std::uint32_t words = 0;        // n + 1
  std::uint32_t plane_columns = 0;  // n + 1 rounded up to tile_words

  TG_HD std::size_t bytes() const {
    return std::size_t{rows_padded} * planes * plane_columns;
  }
  TG_HD std::uint32_t word_tiles() const { return plane_columns / tile_words; }
  TG_HD std::uint32_t k_tiles() const { return rows_padded / tile_k; }
};

// Byte offset of (row r, plane b, word w) in the matrix.
TG_HD std::size_t matrix_index(const Layout& l, std::uint32_t row, unsigned plane,
                               std::uint32_t word) {
  return (std::size_t{plane} * l.plane_columns + word) * l.rows_padded + row;
}

// The matrix layout of a key-switching shape, or InvalidArgument naming what does not fit:
// base_log 1..16, level_count >= 1 with base_log*level_count <= 32, kN >= 1, the int32
// accumulator bound above, at most 2^31 - tile_k rows and 65535 word tiles.
inline Layout make_layout(const KeySwitchConstants& ks) {
  const std::string where = "ks_gemm::make_layout: ";
  EXPECTS(ks.base_log >= 1 && ks.base_log <= 16,
          where + "base_log=" + std::to_string(ks.base_log) + ", expected 1..16");
  EXPECTS(ks.level_count >= 1 && std::uint64_t{ks.base_log} * ks.level_count <= 32,
          where + "level_count=" + std::to_string(ks.level_count) +
              ", expected at least 1 with base_log*level_count <= 32");
  EXPECTS(ks.input_dimension >= 1, where + "input_dimension (kN) = 0, expected at least 1");
  EXPECTS(max_accumulator(ks) <= accumulator_limit,
          where + "input_dimension*level_count*255 = " + std::to_string(max_accumulator(ks)) +
              " could overflow the int32 accumulators of the byte-plane products, expected at "
              "most 2^31-1 = " + std::to_string(accumulator_limit) +
              " (input_dimension*level_count at most " + std::to_string(accumulator_limit / 255) +
              ")");
  const std::uint64_t rows = (std::uint64_t{ks.input_dimension} * ks.level_count) << ks.base_log;
  const std::uint64_t rows_padded = (rows + tile_k - 1) / tile_k * tile_k;
  EXPECTS(rows_padded <= 0x80000000u - tile_k,
          where + "the matrix would have " + std::to_string(rows) +
              " rows (kN*t*2^base_log), expected at most 2^31 - " + std::to_string(tile_k));
  const std::uint64_t words = std::uint64_t{ks.n} + 1;
  const std::uint64_t plane_columns = (words + tile_words - 1) / tile_words * tile_words;
  EXPECTS(plane_columns / tile_words <= 65535,
          where + "n=" + std::to_string(ks.n) + " needs " +
              std::to_string(plane_columns / tile_words) +
              " word tiles (grid dimension x), expected at most 65535");
  Layout l;
  l.rows = static_cast<std::uint32_t>(rows);
  l.rows_padded = static_cast<std::uint32_t>(rows_padded);
  l.base_log = ks.base_log;
  l.level_count = ks.level_count;
  l.words = static_cast<std::uint32_t>(words);
  l.plane_columns = static_cast<std::uint32_t>(plane_columns);
  return l;
}

// Matrix row r as (input coefficient, level 0..t-1, digit 0..base-1); digit 0 is a zero row.
struct Sample {
  std::uint32_t coefficient;
  std::uint32_t level;
  std::uint32_t digit;
};

TG_HD Sample decode_row(const Layout& l, std::uint32_t r) {
  const std::uint32_t group = r >> l.base_log;
  return Sample{group / l.level_count, group % l.level_count,
                r & ((std::uint32_t{1} << l.base_log) - 1)};
}

// The matrix row of key sample (coefficient, level, digit).
TG_HD std::uint32_t sample_row(const Layout& l, std::uint32_t coefficient, std::uint32_t level,
                               std::uint32_t digit) {
  return ((coefficient * l.level_count + level) << l.base_log) + digit;
}

// Writes the byte-plane matrix of core's key-switching key words (KeySwitchingKey::data(),
// [kN][t][base-1][n+1]) to `out` (l.bytes() bytes, padding included).
inline void write_matrix(const Torus32* ksk, std::size_t ksk_words, const Layout& l,
                         std::uint8_t* out, std::size_t out_bytes) {
  const std::string where = "ks_gemm::write_matrix: ";
  const std::size_t base = std::size_t{1} << l.base_log;
  const std::size_t samples = std::size_t{l.rows} / base * (base - 1);
  EXPECTS(ksk_words == samples * l.words,
          where + "the key has " + std::to_string(ksk_words) +
              " words, expected kN*t*(base-1)*(n+1) = " + std::to_string(samples * l.words));
  EXPECTS(out_bytes == l.bytes(), where + "the output has " + std::to_string(out_bytes) +
                                      " bytes, expected " + std::to_string(l.bytes()));
  std::memset(out, 0, out_bytes);
  // 16 words at a time: a sample's 64 bytes read together, 64 columns written in row order.
  constexpr std::uint32_t block = 16;
  for (std::uint32_t w0 = 0; w0 < l.words; w0 += block) {
    const std::uint32_t w1 = w0 + block < l.words ? w0 + block : l.words;
    for (std::size_t s = 0; s < samples; ++s) {  // core's sample s = (i t + j)(base-1) + d-1
      const auto r = static_cast<std::uint32_t>(s / (base - 1) * base + s % (base - 1) + 1);
      const Torus32* sample = ksk + s * l.words;
      for (std::uint32_t w = w0; w < w1; ++w) {
        for (unsigned b = 0; b < planes; ++b) {
          out[matrix_index(l, r, b, w)] = static_cast<std::uint8_t>(sample[w] >> (8 * b));
        }
      }
    }
  }
}

// The launcher's check of the device matrix pointer: not null, 16-byte aligned (the B tiles
// are copied 16 bytes at a time; cudaMalloc gives 256).
inline void check_matrix_pointer(const std::uint8_t* matrix) {
  EXPECTS(matrix != nullptr, "launch_key_switch_gemm: the byte-plane matrix is null");
  const auto misalignment = reinterpret_cast<std::uintptr_t>(matrix) % 16;
  EXPECTS(misalignment == 0, "launch_key_switch_gemm: the byte-plane matrix is " +
                                 std::to_string(misalignment) +
                                 " bytes past a multiple of 16, expected 16-byte alignment");
}

inline std::vector<std::uint8_t> build_matrix(const Torus32* ksk, std::size_t ksk_words,
                                              const Layout& l) {
  std::vector<std::uint8_t> m(l.bytes());
  write_matrix(ksk, ksk_words, l, m.data(), m.size());
  return m;
}

// ---- the one-hot left matrix and the epilogue ------------------------------------------------

// Digit `level` of a gate's input coefficient `a` (the extracted word, without the rounding
// offset).
TG_HD std::uint32_t gate_digit(const KeySwitchConstants& ks, Torus32 a, std::uint32_t level) {
  return key_switch_digit(ks, a + ks.round_offset, level);
}

// A(g, r) from the gate's extracted sample (kN + 1 words): 1 when row r is the sample its
// digit selects; 0 on the d = 0 rows and the padding rows.
TG_HD std::uint8_t a_element(const KeySwitchConstants& ks, const Layout& l,
                             const Torus32* gate_sample, std::uint32_t r) {
  const Sample s = decode_row(l, r);
  if (r >= l.rows || s.digit == 0) return 0;
  return gate_digit(ks, gate_sample[s.coefficient], s.level) == s.digit ? 1 : 0;
}

// sum_b 2^(8b) P_b mod 2^32: the selected samples' sum of word w from its four plane sums.
TG_HD Torus32 recombine(std::int32_t p0, std::int32_t p1, std::int32_t p2, std::int32_t p3) {
  return static_cast<Torus32>(p0) + (static_cast<Torus32>(p1) << 8) +
         (static_cast<Torus32>(p2) << 16) + (static_cast<Torus32>(p3) << 24);
}

// Output word: init (the body for w = n, else 0) minus the selected samples' sum.
TG_HD Torus32 output_word(Torus32 init, Torus32 sum) { return init - sum; }

// ---- tiles (shared memory layouts, and the work of each thread and warp) ---------------------

// A tile: [tile_k/16][tile_gates][16] uint8. Slab s holds K columns [16s, 16s+16) of every
// gate, each gate's 16 bytes contiguous, so the fragment (gates [16m, 16m+16), K [16s,
// 16s+16)) is a 16 x 16 row-major matrix with leading dimension 16 starting at a multiple of
// 256 bytes (WMMA loads need 32-byte alignment; a plain [gates][tile_k] layout puts every
// other fragment 16 bytes off).
TG_HD unsigned a_tile_offset(unsigned gate, unsigned kk) {
  return (kk / fragment) * (tile_gates * fragment) + gate * fragment + kk % fragment;
}
// B tile: [tile_k/16][tile_columns][16] uint8: slab s holds K rows [16s, 16s+16) of every
// column (column c = plane * tile_words + local word), each column's 16 bytes contiguous, so
// the fragment (K [16s, 16s+16), columns [16n, 16n+16)) is a 16 x 16 column-major matrix
// with leading dimension 16 at a multiple of 256 bytes: the tensor cores' B layout, which
// the warps load with ldmatrix (a row-major B fragment of bytes is loaded byte by byte).
TG_HD unsigned b_tile_offset(unsigned kk, unsigned column) {
  return (kk / fragment) * (tile_columns * fragment) + column * fragment + kk % fragment;
}
// C tile: [tile_gates][tile_words] int32 (recombined words), row-major.
TG_HD unsigned c_tile_index(unsigned gate, unsigned word) { return gate * tile_words + word; }

// The warp's first gate and first word in the block's tile.
TG_HD unsigned warp_gate0(unsigned warp) { return (warp / warp_grid_columns) * warp_tile_gates; }
TG_HD unsigned warp_word0(unsigned warp) { return (warp % warp_grid_columns) * warp_tile_words; }
// Where warp `warp` loads its fragments of A (row fragment fm) and B (plane b) for the 16 K
// columns from kk, and stores its recombined words of row fragment fm.
TG_HD unsigned a_fragment_offset(unsigned warp, unsigned fm, unsigned kk) {
  return a_tile_offset(warp_gate0(warp) + fm * fragment, kk);
}
TG_HD unsigned b_fragment_offset(unsigned warp, unsigned plane, unsigned kk) {
  return b_tile_offset(kk, plane * tile_words + warp_word0(warp));
}
TG_HD unsigned c_fragment_index(unsigned warp, unsigned fm) {
  return c_tile_index(warp_gate0(warp) + fm * fragment, warp_word0(warp));
}

// Gate tiles of a batch.
TG_HD std::uint64_t gate_tiles(std::uint64_t jobs) { return (jobs + tile_gates - 1) / tile_gates; }

// A step's tiles are fetched a step ahead, so that the loads of step s+1 are in flight while
// the warps multiply step s's tiles: a thread's share of the A tile into registers (fetch_a:
// loads only, nothing waits on them yet), written into a stage of shared memory at the next
// step (write_a_tile, which makes the one-hot bytes); its share of the B tile copied into the
// other stage asynchronously (copy_b_tile_async), waited for at the next step.

// The groups (one per coefficient and level) that a thread's 16 rows of A meet: 16/base for
// base <= 16 (whole groups), else 1 (part of one). The kernel is compiled for each.
TG_HD constexpr unsigned groups_per_thread(std::uint32_t base_log) {
  return base_log >= 4 ? 1u : 16u >> base_log;
}

// run(std::integral_constant<unsigned, G>{}) for G = groups_per_thread(base_log): the
// launcher's choice of kernel, and the host mirror's.
template <class Run>
inline void with_groups_per_thread(std::uint32_t base_log, Run&& run) {
  switch (groups_per_thread(base_log)) {
    case 8: run(std::integral_constant<unsigned, 8>{}); break;
    case 4: run(std::integral_constant<unsigned, 4>{}); break;
    case 2: run(std::integral_constant<unsigned, 2>{}); break;
    default: run(std::integral_constant<unsigned, 1>{}); break;
  }
}

// Thread `thread`'s share of the A tile of gates [g0, g0 + gates) (gates <= tile_gates; the
// others' rows are 0) and matrix rows [k0, k0 + tile_k): rows [k0 + 16 s, k0 + 16 s + 16)
// of gate thread % 64, s = thread / 64 (a warp's 32 gates of one slab: its 16-byte stores
// cover 512 consecutive bytes), as the input coefficient and level of each group they meet.
template <unsigned G>
struct AFetch {
  std::uint32_t row0 = 0;    // the first of the 16 rows
  std::uint32_t level0 = 0;  // group 0's level (group q's: level0 + q, modulo t)
  std::uint32_t valid = 0;   // bit q: group q is a stored group of a gate of the batch
  Torus32 coefficient[G];
};

// The level after `level` (0 after t - 1): the next group's.
TG_HD std::uint32_t next_level(std::uint32_t level, const Layout& l) {
  return level + 1 == l.level_count ? 0 : level + 1;
}

TG_HD unsigned a_gate(unsigned thread) { return thread % tile_gates; }
TG_HD unsigned a_slab(unsigned thread) { return thread / tile_gates; }

template <unsigned G>
TG_HD void fetch_a(unsigned thread, std::uint64_t g0, std::uint32_t gates, std::uint32_t k0,
                   const Torus32* extracted, const KeySwitchConstants& ks, const Layout& l,
                   AFetch<G>& f) {
  const unsigned g = a_gate(thread);
  f.row0 = k0 + a_rows_per_thread * a_slab(thread);
  const std::uint32_t group0 = f.row0 >> l.base_log;
  std::uint32_t coefficient = group0 / l.level_count, level = group0 % l.level_count;
  const std::uint64_t in_words = std::uint64_t{ks.input_dimension} + 1;
  const Torus32* sample = extracted + (g0 + g) * in_words;
  f.level0 = level;
  f.valid = 0;
TG_UNROLL
  for (unsigned q = 0; q < G; ++q) {
    const bool valid = g < gates && coefficient < ks.input_dimension;
    // A load per group, repeated where groups share a coefficient: skipping those (predicated
    // loads) took 7 more instructions a step and 3 more registers on sm_90.
    f.coefficient[q] = valid ? sample[coefficient] : 0;
    f.valid |= std::uint32_t{valid} << q;
    level = next_level(level, l);  // the next group
    coefficient += level == 0 ? 1 : 0;
  }
}

// Word q < 4 of a thread's 16 A bytes (rows row0 + 4q .. row0 + 4q + 3), from the digits of
// its groups (digit[q'] of group q'; 0 where the group is not stored): byte p is 1 where its
// row is the sample its group's digit selects. Base 2: the word holds groups 2q and 2q+1,
// rows (0, 1) each; base >= 4: one group, the word's first row at position
// (row0 + 4q) mod base in it.
template <unsigned G>
TG_HD std::uint32_t a_word(const std::uint32_t (&digit)[G], [[maybe_unused]] std::uint32_t row0,
                           unsigned q, [[maybe_unused]] std::uint32_t base_log) {
  if constexpr (G == 8) {
    return (digit[2 * q] != 0 ? 1u << 8 : 0u) | (digit[2 * q + 1] != 0 ? 1u << 24 : 0u);
  } else {
    const std::uint32_t d = digit[q * G / 4];
    const std::uint32_t position = (row0 + 4 * q) & ((std::uint32_t{1} << base_log) - 1);
    const std::uint32_t byte = d - position;  // wraps past 3 when d < position
    return d != 0 && byte < 4 ? 1u << (8 * byte) : 0u;
  }
}

// 16 bytes of the matrix, 16-byte aligned.
struct alignas(16) Bytes16 {
  std::uint32_t word[4];
};

TG_HD void store16(std::uint8_t* dst, const Bytes16& v) {
#if defined(__CUDA_ARCH__)
  *reinterpret_cast<uint4*>(dst) = make_uint4(v.word[0], v.word[1], v.word[2], v.word[3]);
#else
  std::memcpy(dst, v.word, 16);
#endif
}

// Thread `thread` writes its fetched share into an A tile: 16 bytes, one store.
template <unsigned G>
TG_HD void write_a_tile(unsigned thread, const KeySwitchConstants& ks, const Layout& l,
                        const AFetch<G>& f, std::uint8_t* a_tile) {
  std::uint32_t digit[G];
  std::uint32_t level = f.level0;
TG_UNROLL
  for (unsigned q = 0; q < G; ++q) {
    digit[q] = ((f.valid >> q) & 1u) != 0 ? gate_digit(ks, f.coefficient[q], level) : 0;
    level = next_level(level, l);
  }
  Bytes16 v;
TG_UNROLL
  for (unsigned q = 0; q < 4; ++q) v.word[q] = a_word(digit, f.row0, q, ks.base_log);
  store16(a_tile + a_tile_offset(a_gate(thread), a_rows_per_thread * a_slab(thread)), v);
}

// Piece c of thread `thread`: B tile rows [kk, kk + 16) of column (plane, word). A warp
// copies 8 columns x 4 pieces (each column's 64 rows of the step: 64 consecutive bytes of the
// matrix, two whole sectors); the 8 threads of each quarter-warp store the same slab of 8
// consecutive columns, 128 consecutive bytes of shared memory (no bank conflict).
struct BPiece {
  unsigned kk, plane, word;
};
TG_HD BPiece b_piece(unsigned thread, unsigned c) {
  constexpr unsigned columns_per_warp = 8;
  const unsigned piece = c * threads + thread;
  const unsigned lane = piece % warp_size, group = piece / warp_size;  // group < 32
  const unsigned column = group * columns_per_warp + lane % columns_per_warp;  // 0..255
  return BPiece{(lane / columns_per_warp) * fragment, column / tile_words, column % tile_words};
}

// Thread `thread` copies its pieces of the B tile (matrix rows [k0, k0 + tile_k), words
// [w0, w0 + tile_words) of each plane) into `b_tile` with copy16_async: on the device no
// register holds them; they are there after the thread's copy16_async_wait().
TG_HD void copy_b_tile_async(unsigned thread, std::uint32_t k0, std::uint32_t w0,
                             const std::uint8_t* matrix, const Layout& l, std::uint8_t* b_tile) {
TG_UNROLL
  for (unsigned c = 0; c < b_copies_per_thread; ++c) {
    const BPiece p = b_piece(thread, c);
    copy16_async(b_tile + b_tile_offset(p.kk, p.plane * tile_words + p.word),
                 matrix + matrix_index(l, k0 + p.kk, p.plane, w0 + p.word));
  }
}

// Thread `thread` finishes its outputs of the block's tile (C tile of recombined sums
// complete in shared memory): gate g0 + g, word w0 + w for every (g, w) it owns, subtracted
// from the init (the body for word n), written to result_words[result_index[gate] * (n+1) +
// word].
TG_HD void store_tile(unsigned thread, std::uint64_t g0, std::uint32_t gates, std::uint32_t w0,
                      const std::int32_t* c_tile, const Torus32* extracted,
                      const std::uint64_t* result_index, const KeySwitchConstants& ks,
                      Torus32* result_words) {
  const std::uint64_t in_words = std::uint64_t{ks.input_dimension} + 1;
  const std::uint64_t n1 = std::uint64_t{ks.n} + 1;
  for (unsigned e = thread; e < tile_gates * tile_words; e += threads) {
    const unsigned g = e / tile_words, wl = e % tile_words;
    const std::uint32_t w = w0 + wl;
    if (g >= gates || w > ks.n) continue;
    const Torus32 init = w == ks.n ? extracted[(g0 + g) * in_words + ks.input_dimension] : 0;
    result_words[result_index[g0 + g] * n1 + w] =
        output_word(init, static_cast<Torus32>(c_tile[c_tile_index(g, wl)]));
  }
}

}  // namespace torusgate::gpu::kernel::ks_gemm
