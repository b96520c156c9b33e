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
// is not stored). Number the stored samples r = (i*t + j)*(base-1) + d-1 (core's order, so
// row r of the key is words [r(n+1), (r+1)(n+1)) of KeySwitchingKey::data()). Then
//   out[g] = init[g] - sum_r A[g][r] B[r]   (mod 2^32)
// with A[g][r] = 1 when gate g selects sample r, else 0 (one-hot: at most kN*t ones per row)
// and B = the key as a [K = kN t (base-1)][n+1] matrix. Split every key word into its four
// unsigned bytes, B = sum_b 2^(8b) B_b with B_b in [0, 255]; each A B_b is an exact int32
// product (every entry at most kN*t*255, checked < 2^31 by make_layout), so
//   sum_r A[g][r] B[r][w] = sum_b 2^(8b) (A B_b)[g][w]   (mod 2^32, uint32 wrap)
// gives core's words exactly: same samples, same noise.
//
// Byte-plane matrix (device memory, made once per key): [rows_padded][4 * plane_columns]
// uint8, row-major; row r is key sample r; plane b (byte b of each word, b = 0 least
// significant) occupies columns [b * plane_columns, (b+1) * plane_columns), word w at column
// b * plane_columns + w. rows_padded = K rounded up to tile_k, plane_columns = n+1 rounded up
// to tile_words; every padding byte is 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernel_math.hpp"
#include "torusgate/core/error.hpp"

namespace torusgate::gpu::kernel::ks_gemm {

// ---- tile shape -----------------------------------------------------------------------------

inline constexpr unsigned fragment = 16;   // WMMA m = n = k (u8 x u8 -> int32)
inline constexpr unsigned planes = 4;      // bytes of a Torus32
inline constexpr unsigned tile_gates = 64;  // gates per block (A rows)
inline constexpr unsigned tile_words = 32;  // output words per block, in each of the 4 planes
inline constexpr unsigned tile_columns = planes * tile_words;  // 128 columns of the matrix
inline constexpr unsigned tile_k = 32;      // key samples per step of the K loop
inline constexpr unsigned threads = 256;    // 8 warps
inline constexpr unsigned warp_size = 32;
inline constexpr unsigned warps = threads / warp_size;
// The warps of a block as a 2 x 4 grid over the 64 x 128 output tile: each warp owns 32 gates
// x 32 columns, 2 x 2 fragments of 16 x 16 int32 accumulators.
inline constexpr unsigned warp_grid_rows = 2;
inline constexpr unsigned warp_grid_columns = 4;
inline constexpr unsigned warp_tile_gates = tile_gates / warp_grid_rows;        // 32
inline constexpr unsigned warp_tile_columns = tile_columns / warp_grid_columns;  // 32
inline constexpr unsigned warp_fragments_m = warp_tile_gates / fragment;        // 2
inline constexpr unsigned warp_fragments_n = warp_tile_columns / fragment;      // 2

// Shared memory of a block: two stages of an A tile and a B tile during the K loop (step s
// writes stage s mod 2 while the products of step s-1 may still read the other, so a step
// needs one barrier); then, in the same bytes, the int32 C tile for the epilogue.
inline constexpr unsigned a_tile_bytes = tile_gates * tile_k;                  // 2 KB
inline constexpr unsigned b_tile_bytes = tile_k * tile_columns;                // 4 KB
inline constexpr unsigned stage_bytes = a_tile_bytes + b_tile_bytes;           // 6 KB
inline constexpr unsigned stages = 2;
inline constexpr unsigned c_tile_bytes = tile_gates * tile_columns * 4;        // 32 KB
inline constexpr unsigned shared_bytes =
    stages * stage_bytes > c_tile_bytes ? stages * stage_bytes : c_tile_bytes;
// Byte offsets of stage `stage`'s A and B tiles in the block's shared memory.
TG_HD unsigned a_stage_offset(unsigned stage) { return stage * stage_bytes; }
TG_HD unsigned b_stage_offset(unsigned stage) { return stage * stage_bytes + a_tile_bytes; }

// A thread's share of a step's tiles: A elements of one K column for every 8th gate, and
// one 16-byte piece of the B tile. (Steps of 64 key samples, 16 A elements and 2 pieces a
// thread, took 174 registers on sm_90, one block per multiprocessor; these take 80, three.)
inline constexpr unsigned a_gate_step = threads / tile_k;                       // 8
inline constexpr unsigned a_elements_per_thread = tile_gates / a_gate_step;     // 8
inline constexpr unsigned b_copies_per_thread = tile_k * tile_columns / 16 / threads;  // 1

// Leading dimensions of the fragments' loads and stores (elements).
inline constexpr unsigned a_ldm = fragment;      // A and B tiles are 16-column slabs
inline constexpr unsigned b_ldm = fragment;
inline constexpr unsigned c_ldm = tile_columns;  // C tile row-major

static_assert(warp_grid_rows * warp_grid_columns == warps);
static_assert(tile_k % fragment == 0 && tile_words % fragment == 0);
static_assert(threads % tile_k == 0, "fetch_a gives each thread one fixed K column");
static_assert(tile_gates % a_gate_step == 0 && a_elements_per_thread <= 32,
              "fetch_a: a thread's gates as the bits of a 32-bit mask");
static_assert(tile_k * tile_columns % (16 * threads) == 0, "fetch_b: whole 16-byte copies");
static_assert(stage_bytes % 128 == 0, "every stage's tiles 128-byte aligned (WMMA needs 32)");
static_assert(shared_bytes <= 48 * 1024, "static shared memory");

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
  std::uint32_t rows = 0;                     // K = kN t (base-1): key samples, core's order
  std::uint32_t rows_padded = 0;              // K rounded up to tile_k (zero rows after K)
  std::uint32_t samples_per_coefficient = 0;  // t (base-1)
  std::uint32_t digits = 0;                   // base - 1 (stored digits 1..base-1)
  std::uint32_t words = 0;                    // n + 1
  std::uint32_t plane_columns = 0;            // n + 1 rounded up to tile_words

  TG_HD std::size_t row_bytes() const { return std::size_t{planes} * plane_columns; }
  TG_HD std::size_t bytes() const { return std::size_t{rows_padded} * row_bytes(); }
  TG_HD std::uint32_t word_tiles() const { return plane_columns / tile_words; }
  TG_HD std::uint32_t k_tiles() const { return rows_padded / tile_k; }
};

// Byte offset of (row r, plane b, word w) in the matrix.
TG_HD std::size_t matrix_index(const Layout& l, std::uint32_t row, unsigned plane,
                               std::uint32_t word) {
  return std::size_t{row} * l.row_bytes() + std::size_t{plane} * l.plane_columns + word;
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
  const std::uint64_t digits = (std::uint64_t{1} << ks.base_log) - 1;
  const std::uint64_t rows = std::uint64_t{ks.input_dimension} * ks.level_count * digits;
  const std::uint64_t rows_padded = (rows + tile_k - 1) / tile_k * tile_k;
  EXPECTS(rows_padded <= 0x80000000u - tile_k,
          where + "the key has " + std::to_string(rows) +
              " samples (kN*t*(base-1)), expected at most 2^31 - " + std::to_string(tile_k));
  const std::uint64_t words = std::uint64_t{ks.n} + 1;
  const std::uint64_t plane_columns = (words + tile_words - 1) / tile_words * tile_words;
  EXPECTS(plane_columns / tile_words <= 65535,
          where + "n=" + std::to_string(ks.n) + " needs " +
              std::to_string(plane_columns / tile_words) +
              " word tiles (grid dimension y), expected at most 65535");
  Layout l;
  l.rows = static_cast<std::uint32_t>(rows);
  l.rows_padded = static_cast<std::uint32_t>(rows_padded);
  l.samples_per_coefficient = static_cast<std::uint32_t>(ks.level_count * digits);
  l.digits = static_cast<std::uint32_t>(digits);
  l.words = static_cast<std::uint32_t>(words);
  l.plane_columns = static_cast<std::uint32_t>(plane_columns);
  return l;
}

// Writes the byte-plane matrix of core's key-switching key words (KeySwitchingKey::data(),
// [kN][t][base-1][n+1]) to `out` (l.bytes() bytes, padding included).
inline void write_matrix(const Torus32* ksk, std::size_t ksk_words, const Layout& l,
                         std::uint8_t* out, std::size_t out_bytes) {
  const std::string where = "ks_gemm::write_matrix: ";
  EXPECTS(ksk_words == std::size_t{l.rows} * l.words,
          where + "the key has " + std::to_string(ksk_words) + " words, expected rows*(n+1) = " +
              std::to_string(std::size_t{l.rows} * l.words));
  EXPECTS(out_bytes == l.bytes(), where + "the output has " + std::to_string(out_bytes) +
                                      " bytes, expected " + std::to_string(l.bytes()));
  std::memset(out, 0, out_bytes);
  for (std::uint32_t r = 0; r < l.rows; ++r) {
    const Torus32* sample = ksk + std::size_t{r} * l.words;
    for (unsigned b = 0; b < planes; ++b) {
      std::uint8_t* plane = out + matrix_index(l, r, b, 0);
      for (std::uint32_t w = 0; w < l.words; ++w) {
        plane[w] = static_cast<std::uint8_t>(sample[w] >> (8 * b));
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

// Key sample r as (input coefficient, level 0..t-1, digit 1..base-1).
struct Sample {
  std::uint32_t coefficient;
  std::uint32_t level;
  std::uint32_t digit;
};

TG_HD Sample decode_row(const Layout& l, std::uint32_t r) {
  const std::uint32_t rest = r % l.samples_per_coefficient;
  return Sample{r / l.samples_per_coefficient, rest / l.digits, rest % l.digits + 1};
}

// A(g, r) for a gate whose input coefficient s.coefficient is `a` (the extracted word,
// without the rounding offset): 1 when its digit of level s.level is s.digit.
TG_HD std::uint8_t one_hot(const KeySwitchConstants& ks, Torus32 a, const Sample& s) {
  return key_switch_digit(ks, a + ks.round_offset, s.level) == s.digit ? 1 : 0;
}

// A(g, r) from the gate's extracted sample (kN + 1 words); 0 on the padding rows.
TG_HD std::uint8_t a_element(const KeySwitchConstants& ks, const Layout& l,
                             const Torus32* gate_sample, std::uint32_t r) {
  const Sample s = decode_row(l, r);
  return s.coefficient < ks.input_dimension ? one_hot(ks, gate_sample[s.coefficient], s) : 0;
}

// sum_b 2^(8b) P_b mod 2^32: the selected samples' sum of word w from its four plane sums.
TG_HD Torus32 recombine(std::int32_t p0, std::int32_t p1, std::int32_t p2, std::int32_t p3) {
  return static_cast<Torus32>(p0) + (static_cast<Torus32>(p1) << 8) +
         (static_cast<Torus32>(p2) << 16) + (static_cast<Torus32>(p3) << 24);
}

// Output word: init (the body for w = n, else 0) minus the selected samples' sum.
TG_HD Torus32 output_word(Torus32 init, std::int32_t p0, std::int32_t p1, std::int32_t p2,
                          std::int32_t p3) {
  return init - recombine(p0, p1, p2, p3);
}

// ---- tiles (shared memory layouts, and the work of each thread and warp) ---------------------

// A tile: [tile_k/16][tile_gates][16] uint8. Slab s holds K columns [16s, 16s+16) of every
// gate, each gate's 16 bytes contiguous, so the fragment (gates [16m, 16m+16), K [16s,
// 16s+16)) is a 16 x 16 row-major matrix with leading dimension 16 starting at a multiple of
// 256 bytes (WMMA loads need 32-byte alignment; a plain [gates][tile_k] layout puts every
// other fragment 16 bytes off).
TG_HD unsigned a_tile_offset(unsigned gate, unsigned kk) {
  return (kk / fragment) * (tile_gates * fragment) + gate * fragment + kk % fragment;
}
// B tile: [tile_columns/16][tile_k][16] uint8, the same slabs over the block's 128 columns
// (column c = plane * tile_words + local word).
TG_HD unsigned b_tile_offset(unsigned kk, unsigned column) {
  return (column / fragment) * (tile_k * fragment) + kk * fragment + column % fragment;
}
// C tile: [tile_gates][tile_columns] int32, row-major.
TG_HD unsigned c_tile_index(unsigned gate, unsigned column) { return gate * tile_columns + column; }

// The warp's first gate and first column in the block's tile.
TG_HD unsigned warp_gate0(unsigned warp) { return (warp / warp_grid_columns) * warp_tile_gates; }
TG_HD unsigned warp_column0(unsigned warp) {
  return (warp % warp_grid_columns) * warp_tile_columns;
}
// Where warp `warp` loads its fragments of A (row fragment fm) and B (column fragment fn) for
// the 16 K columns from kk, and stores accumulator (fm, fn).
TG_HD unsigned a_fragment_offset(unsigned warp, unsigned fm, unsigned kk) {
  return a_tile_offset(warp_gate0(warp) + fm * fragment, kk);
}
TG_HD unsigned b_fragment_offset(unsigned warp, unsigned fn, unsigned kk) {
  return b_tile_offset(kk, warp_column0(warp) + fn * fragment);
}
TG_HD unsigned c_fragment_index(unsigned warp, unsigned fm, unsigned fn) {
  return c_tile_index(warp_gate0(warp) + fm * fragment, warp_column0(warp) + fn * fragment);
}

// Gate tiles of a batch.
TG_HD std::uint64_t gate_tiles(std::uint64_t jobs) { return (jobs + tile_gates - 1) / tile_gates; }

// A step's tiles go through registers: a thread first fetches its share from device memory
// (fetch_a, fetch_b: loads only, nothing waits on them yet), and writes it into a stage of
// shared memory (write_a_tile, write_b_tile) at the next step, so that the loads of step s+1
// are in flight while the warps multiply step s's tiles.

// Thread `thread`'s share of the A tile of gates [g0, g0 + gates) (gates <= tile_gates; the
// others' rows are 0) and key samples [k0, k0 + tile_k): K column thread % tile_k (decoded
// once) of gates thread / tile_k + a_gate_step i, as the gates' input coefficients.
struct AFetch {
  Sample sample;
  std::uint32_t valid = 0;  // bit i: element i is a stored sample of a gate of the batch
  Torus32 coefficient[a_elements_per_thread];
};

TG_HD void fetch_a(unsigned thread, std::uint64_t g0, std::uint32_t gates, std::uint32_t k0,
                   const Torus32* extracted, const KeySwitchConstants& ks, const Layout& l,
                   AFetch& f) {
  f.sample = decode_row(l, k0 + thread % tile_k);
  const bool stored = f.sample.coefficient < ks.input_dimension;
  const std::uint64_t in_words = std::uint64_t{ks.input_dimension} + 1;
  f.valid = 0;
TG_UNROLL
  for (unsigned i = 0; i < a_elements_per_thread; ++i) {
    const unsigned g = thread / tile_k + i * a_gate_step;
    const bool valid = stored && g < gates;
    f.coefficient[i] = valid ? extracted[(g0 + g) * in_words + f.sample.coefficient] : 0;
    f.valid |= std::uint32_t{valid} << i;
  }
}

// Thread `thread` writes its fetched share into an A tile: 1 where the gate's digit selects
// the column's key sample, else 0.
TG_HD void write_a_tile(unsigned thread, const KeySwitchConstants& ks, const AFetch& f,
                        std::uint8_t* a_tile) {
  const unsigned kk = thread % tile_k;
TG_UNROLL
  for (unsigned i = 0; i < a_elements_per_thread; ++i) {
    const unsigned g = thread / tile_k + i * a_gate_step;
    const bool one = ((f.valid >> i) & 1u) != 0 && one_hot(ks, f.coefficient[i], f.sample) != 0;
    a_tile[a_tile_offset(g, kk)] = one ? 1 : 0;
  }
}

// 16 bytes of the matrix, 16-byte aligned.
struct alignas(16) Bytes16 {
  std::uint32_t word[4];
};

TG_HD Bytes16 load16(const std::uint8_t* src) {
#if defined(__CUDA_ARCH__)
  const uint4 v = *reinterpret_cast<const uint4*>(src);
  return Bytes16{{v.x, v.y, v.z, v.w}};
#else
  Bytes16 v;
  std::memcpy(v.word, src, 16);
  return v;
#endif
}

TG_HD void store16(std::uint8_t* dst, const Bytes16& v) {
#if defined(__CUDA_ARCH__)
  *reinterpret_cast<uint4*>(dst) = make_uint4(v.word[0], v.word[1], v.word[2], v.word[3]);
#else
  std::memcpy(dst, v.word, 16);
#endif
}

// Piece c of thread `thread`: B tile row kk, plane `plane`, 16 words from `word` (8 pieces
// cover a row: 4 planes x 2 halves; consecutive threads take consecutive pieces).
struct BPiece {
  unsigned kk, plane, word;
};
TG_HD BPiece b_piece(unsigned thread, unsigned c) {
  constexpr unsigned parts = tile_words / 16, per_row = planes * parts;
  const unsigned piece = c * threads + thread;
  return BPiece{piece / per_row, (piece % per_row) / parts, (piece % parts) * 16};
}

// Thread `thread`'s pieces of the B tile: matrix rows [k0, k0 + tile_k), words
// [w0, w0 + tile_words) of each plane.
struct BFetch {
  Bytes16 piece[b_copies_per_thread];
};

TG_HD void fetch_b(unsigned thread, std::uint32_t k0, std::uint32_t w0,
                   const std::uint8_t* matrix, const Layout& l, BFetch& f) {
TG_UNROLL
  for (unsigned c = 0; c < b_copies_per_thread; ++c) {
    const BPiece p = b_piece(thread, c);
    f.piece[c] = load16(matrix + matrix_index(l, k0 + p.kk, p.plane, w0 + p.word));
  }
}

TG_HD void write_b_tile(unsigned thread, const BFetch& f, std::uint8_t* b_tile) {
TG_UNROLL
  for (unsigned c = 0; c < b_copies_per_thread; ++c) {
    const BPiece p = b_piece(thread, c);
    store16(b_tile + b_tile_offset(p.kk, p.plane * tile_words + p.word), f.piece[c]);
  }
}

// Thread `thread` finishes its outputs of the block's tile (C tile complete in shared memory):
// gate g0 + g, word w0 + w for every (g, w) it owns, recombined and subtracted from the init
// (the body for word n), written to result_words[result_index[gate] * (n+1) + word].
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
    const std::int32_t* p = c_tile + c_tile_index(g, wl);
    const Torus32 init = w == ks.n ? extracted[(g0 + g) * in_words + ks.input_dimension] : 0;
    result_words[result_index[g0 + g] * n1 + w] =
        output_word(init, p[0], p[tile_words], p[2 * tile_words], p[3 * tile_words]);
  }
}

}  // namespace torusgate::gpu::kernel::ks_gemm
