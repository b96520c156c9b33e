// CPU tests of the fused blind-rotation engine (gpu/src/fused_fft.hpp, fused_rotation.hpp):
// its FFT's pass structure, the block program run thread by thread against a scalar radix-2
// schedule (bit for bit) and the exact DFT, exact negacyclic products, one CMUX step against
// core's exact external product, the whole data flow against the CPU backend word for word
// for every launch shape, its Fourier key against the cuFFT engine's, and the launch-shape
// rules. The device runs the same block program (fused_kernels.cu); what these cannot show is
// the device itself: barriers, shared-memory races, registers, launches, timing.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numbers>
#include <string>
#include <vector>

#include "backend_fixtures.hpp"
#include "fused_fft.hpp"
#include "fused_rotation.hpp"
#include "fused_wide.hpp"
#include "gpu_test_sets.hpp"
#include "host_mirror.hpp"
#include "test_support.hpp"
#include "torusgate/core/bootstrap.hpp"
#include "torusgate/core/glwe.hpp"
#include "torusgate/cpu/cpu_backend.hpp"

using namespace torusgate;
using torusgate::test::catch_seed;
using torusgate::test::keys_for;
using torusgate::test::seeded_rng;
namespace k = torusgate::gpu::kernel;
namespace fz = torusgate::gpu::kernel::fused;
namespace gd = torusgate::gpu::detail;
using torusgate::gpu::test::cpu_and_mirror;
using torusgate::gpu::test::HostEngine;
using torusgate::gpu::test::NaturalFft;
using torusgate::gpu::test::shape_of;
using torusgate::gpu::test::sized_insecure;

namespace {

constexpr double eps = 0x1p-53;

std::uint32_t bit_reverse(std::uint32_t x, unsigned bits) {
  std::uint32_t y = 0;
  for (unsigned b = 0; b < bits; ++b) y |= ((x >> b) & 1u) << (bits - 1 - b);
  return y;
}

// The radix-2 stage on bit b over the whole array, with the table's twiddles: the textbook
// schedule, which the radix-8 passes equal up to rounding.
void radix2_stage(std::vector<k::Complex>& x, const std::vector<k::Complex>& W, unsigned b,
                  bool inverse) {
  const auto M = static_cast<std::uint32_t>(x.size());
  const unsigned m = fz::log2_exact(M);
  const std::uint32_t h = 1u << b;
  for (std::uint32_t i = 0; i < M; ++i) {
    if (i & h) continue;
    if (inverse) fz::dit_butterfly(x[i], x[i + h], W[fz::twiddle_exponent(i, b, m)]);
    else fz::dif_butterfly(x[i], x[i + h], W[fz::twiddle_exponent(i, b, m)]);
  }
}

// One pass of the engine's schedule over the whole array, scalar: a pass of 3 stages as a
// radix-8 butterfly on every 8 points whose bits top..top-2 vary, a shorter one as radix-2
// stages.
void scalar_pass(std::vector<k::Complex>& x, const std::vector<k::Complex>& W, fz::Pass pass,
                 bool inverse) {
  const auto M = static_cast<std::uint32_t>(x.size());
  const unsigned m = fz::log2_exact(M);
  if (pass.stages < 3) {
    for (unsigned s = 0; s < pass.stages; ++s) {
      radix2_stage(x, W, inverse ? pass.top - (pass.stages - 1 - s) : pass.top - s, inverse);
    }
    return;
  }
  const std::uint32_t h = 1u << (pass.top - 2);
  for (std::uint32_t base = 0; base < M; ++base) {
    if ((base >> (pass.top - 2)) & 7u) continue;
    k::Complex v[8];
    for (unsigned a = 0; a < 8; ++a) v[a] = x[base + a * h];
    if (inverse) fz::radix8_pass<true>(v, base & (h - 1), pass, m, W.data());
    else fz::radix8_pass<false>(v, base & (h - 1), pass, m, W.data());
    for (unsigned a = 0; a < 8; ++a) x[base + a * h] = v[a];
  }
}

// The scalar schedule: the forward passes from bit m-1 down, the inverse ones from bit 0 up.
void scalar_forward(std::vector<k::Complex>& x, const std::vector<k::Complex>& W) {
  const unsigned m = fz::log2_exact(static_cast<std::uint32_t>(x.size()));
  for (unsigned p = 0; p < fz::pass_count(m); ++p) scalar_pass(x, W, fz::forward_pass(m, p), false);
}
void scalar_inverse(std::vector<k::Complex>& x, const std::vector<k::Complex>& W) {
  const unsigned m = fz::log2_exact(static_cast<std::uint32_t>(x.size()));
  for (unsigned p = fz::pass_count(m); p-- > 0;) scalar_pass(x, W, fz::forward_pass(m, p), true);
}

// The block program's transforms of `groups` inputs at once (group g transforms inputs[g]),
// thread by thread: in natural order out in bit-reversed order (forward), or back. Groups:
// FftGroups (the length at run time) or FixedGroups<log2 M>.
template <class Groups = fz::FftGroups>
std::vector<std::vector<k::Complex>> block_transform(const std::vector<std::vector<k::Complex>>& inputs,
                                                     const std::vector<k::Complex>& W, bool forward) {
  const auto M = static_cast<std::uint32_t>(inputs[0].size());
  const auto groups = static_cast<std::uint32_t>(inputs.size());
  std::vector<k::Complex> buffers(groups * fz::buffer_points(M), k::Complex{NAN, NAN});
  const Groups f = fz::make_groups<Groups>(M, buffers.data(), W.data());
  REQUIRE(f.M == M);
  fz::HostBlock<fz::TransformRegs> blk(groups * f.T);
  blk.each([&](unsigned tid, auto& R) {
    for (unsigned r = 0; r < 8; ++r) {
      const std::uint32_t p = forward ? fz::point_of(f.thread(tid), r, f.m - 1)
                                      : f.thread(tid) * 8 + r;
      R.v[r] = inputs[f.group(tid)][p];
    }
  });
  if (forward) fz::forward_transform(blk, f);
  else fz::inverse_transform(blk, f);
  std::vector<std::vector<k::Complex>> out(groups, std::vector<k::Complex>(M));
  blk.each([&](unsigned tid, auto& R) {
    for (unsigned r = 0; r < 8; ++r) {
      const std::uint32_t p = forward ? f.thread(tid) * 8 + r
                                      : fz::point_of(f.thread(tid), r, f.m - 1);
      out[f.group(tid)][p] = R.v[r];
    }
  });
  return out;
}

// f(FixedGroups<m>{}) (a transform length fixed at compile time, as the kernels of the
// parameter sets' lengths have it), for m in [L, max_transform_log2].
template <unsigned L = fz::min_transform_log2, class F>
void with_fixed_groups(unsigned m, F&& f) {
  if (m == L) {
    f(fz::FixedGroups<L>{});
    return;
  }
  if constexpr (L < fz::max_transform_log2) with_fixed_groups<L + 1>(m, f);
}

// The block program's twisted transforms (as the rotation runs them), thread by thread:
// forward, the spectrum of x_j zeta^j for the folded input x (register r of point j takes
// twisted_input); inverse, the untwisted result over M (untwisted_output) of a spectrum.
// Groups: FftGroups (the length at run time: the twist from its table) or FixedGroups<m>
// (the twist in the first pass where twist_in_first_pass(m)).
template <class Groups>
std::vector<k::Complex> twisted_transform(const std::vector<k::Complex>& input,
                                          const std::vector<k::Complex>& W, bool forward) {
  const auto M = static_cast<std::uint32_t>(input.size());
  const auto twist = k::twist_factors(2 * M), untwist = k::untwist_factors(2 * M);
  std::vector<k::Complex> buffer(fz::buffer_points(M), k::Complex{NAN, NAN});
  const Groups f = fz::make_groups<Groups>(M, buffer.data(), W.data());
  REQUIRE(f.M == M);
  fz::HostBlock<fz::TransformRegs> blk(f.T);
  std::vector<k::Complex> out(M);
  blk.each([&](unsigned tid, auto& R) {
    for (unsigned r = 0; r < 8; ++r) {
      const std::uint32_t j = fz::point_of(tid, r, f.m - 1);
      R.v[r] = forward ? fz::twisted_input(f, input[j].re, input[j].im, twist.data(), j, r)
                       : input[tid * 8 + r];
    }
  });
  if (forward) fz::forward_transform<true>(blk, f);
  else fz::inverse_transform<true>(blk, f);
  blk.each([&](unsigned tid, auto& R) {
    for (unsigned r = 0; r < 8; ++r) {
      const std::uint32_t j = fz::point_of(tid, r, f.m - 1);
      if (forward) out[tid * 8 + r] = R.v[r];
      else out[j] = fz::untwisted_output(f, R.v[r], untwist.data(), j, r);
    }
  });
  return out;
}

bool same_bits(const std::vector<k::Complex>& a, const std::vector<k::Complex>& b) {
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].re != b[i].re || a[i].im != b[i].im) return false;
  }
  return a.size() == b.size();
}

// ||got - want|| / ||want|| in the L2 norm, want in long double.
double relative_error(const std::vector<k::Complex>& got, const std::vector<long double>& want_re,
                      const std::vector<long double>& want_im) {
  long double err = 0, norm = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const long double dr = got[i].re - want_re[i], di = got[i].im - want_im[i];
    err += dr * dr + di * di;
    norm += want_re[i] * want_re[i] + want_im[i] * want_im[i];
  }
  return static_cast<double>(std::sqrt(err / norm));
}

constexpr long double pi = 3.141592653589793238462643383279502884L;

// X_k = sum_j x_j zeta^j exp(-2 pi i jk/M) at point bitrev(k) (re, im), in long double:
// zeta = exp(i pi/N), N = 2M (the twist) when twisted, else 1.
void exact_spectrum(const std::vector<k::Complex>& x, bool twisted, std::vector<long double>& re,
                    std::vector<long double>& im) {
  const auto M = static_cast<std::uint32_t>(x.size());
  const unsigned m = fz::log2_exact(M);
  re.assign(M, 0);
  im.assign(M, 0);
  for (std::uint32_t kk = 0; kk < M; ++kk) {
    long double sr = 0, si = 0;
    for (std::uint32_t j = 0; j < M; ++j) {
      const long double a = (twisted ? pi * static_cast<long double>(j) / (2 * M) : 0.0L) -
                            2.0L * pi * static_cast<long double>((std::uint64_t{j} * kk) % M) / M;
      sr += x[j].re * std::cos(a) - x[j].im * std::sin(a);
      si += x[j].re * std::sin(a) + x[j].im * std::cos(a);
    }
    re[bit_reverse(kk, m)] = sr;
    im[bit_reverse(kk, m)] = si;
  }
}

std::vector<Torus32> negacyclic_exact(const std::vector<std::int32_t>& d, const std::vector<Torus32>& b) {
  const std::size_t N = d.size();
  std::vector<Torus32> out(N, 0);
  for (std::size_t i = 0; i < N; ++i) {
    for (std::size_t j = 0; j < N; ++j) {
      const Torus32 t = static_cast<Torus32>(d[i]) * b[j];
      if (i + j < N) out[i + j] += t;
      else out[i + j - N] -= t;
    }
  }
  return out;
}

}  // namespace

// The passes of a transform of M = 2^m points with P = 2^B points per thread (pass_of(p):
// forward pass p of `passes`; point_of(t, r, top)): bits m-1 down to 0 each taken once, in
// DIF order; each pass's points a bijection whose register index is the owned bits top ..
// top-B+1; the last forward pass (and first inverse one) holds points Pt + r, the first
// t + rT.
template <class PassOf, class PointOf>
void check_passes(unsigned m, unsigned P, unsigned passes, PassOf pass_of, PointOf point_of) {
  const unsigned B = fz::log2_exact(P);
  const std::uint32_t M = 1u << m, T = M / P;
  std::vector<unsigned> stage_bits;
  for (unsigned p = 0; p < passes; ++p) {
    const fz::Pass pass = pass_of(p);
    INFO("pass " << p << ", top " << pass.top);
    REQUIRE(pass.stages >= 1);
    REQUIRE(pass.stages <= B);
    REQUIRE(pass.top >= B - 1);
    for (unsigned s = 0; s < pass.stages; ++s) stage_bits.push_back(pass.top - s);
    std::vector<int> seen(M, 0);
    for (std::uint32_t t = 0; t < T; ++t) {
      for (unsigned r = 0; r < P; ++r) {
        const std::uint32_t point = point_of(t, r, pass.top);
        REQUIRE(point < M);
        ++seen[point];
        REQUIRE(((point >> (pass.top + 1 - B)) & (P - 1)) == r);
      }
    }
    REQUIRE(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
  }
  REQUIRE(stage_bits.size() == m);
  for (unsigned s = 0; s < m; ++s) REQUIRE(stage_bits[s] == m - 1 - s);
  const fz::Pass last = pass_of(passes - 1);
  REQUIRE(last.top == B - 1);
  for (std::uint32_t t = 0; t < T; ++t) {
    for (unsigned r = 0; r < P; ++r) {
      REQUIRE(point_of(t, r, last.top) == P * t + r);
      REQUIRE(point_of(t, r, m - 1) == t + r * T);
    }
  }
}

TEST_CASE("fused FFT: the passes take every stage once and each pass's points are a bijection",
          "[gpu-host][fused]") {
  for (unsigned m = fz::min_transform_log2; m <= fz::max_transform_log2; ++m) {
    INFO("M = 2^" << m);
    const std::uint32_t M = 1u << m;
    check_passes(m, 8, fz::pass_count(m), [&](unsigned p) { return fz::forward_pass(m, p); },
                 [](std::uint32_t t, unsigned r, unsigned top) { return fz::point_of(t, r, top); });
    // Padded slots are distinct and within the buffer.
    std::vector<int> slots(fz::buffer_points(M), 0);
    for (std::uint32_t p = 0; p < M; ++p) ++slots[fz::padded(p)];
    REQUIRE(std::count(slots.begin(), slots.end(), 1) == static_cast<long>(M));
  }
}

TEST_CASE("fused FFT: the block program equals the scalar schedule bit for bit and the exact "
          "DFT in bit-reversed order",
          "[gpu-host][fused]") {
  const std::uint64_t seed = catch_seed(0x6a);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  for (unsigned m = fz::min_transform_log2; m <= fz::max_transform_log2; ++m) {
    INFO("M = 2^" << m);
    const std::uint32_t M = 1u << m;
    const auto W = fz::twiddles(M);
    REQUIRE(W.size() == fz::twiddle_table_size(M));
    // Three groups at once, each its own input.
    std::vector<std::vector<k::Complex>> inputs(3, std::vector<k::Complex>(M));
    for (auto& in : inputs) {
      for (auto& v : in) v = k::Complex{rng.standard_normal(), rng.standard_normal()};
    }
    const auto spectra = block_transform(inputs, W, true);
    const auto back = block_transform(spectra, W, false);
    for (std::size_t g = 0; g < inputs.size(); ++g) {
      INFO("group " << g);
      std::vector<k::Complex> scalar = inputs[g];
      scalar_forward(scalar, W);
      REQUIRE(same_bits(spectra[g], scalar));
      scalar_inverse(scalar, W);
      REQUIRE(same_bits(back[g], scalar));
      if (g > 0) continue;  // the exact DFT (quadratic) for the first group
      // Forward: X_k = sum_j x_j exp(-2 pi i jk/M) at point bitrev(k), exactly in long double.
      std::vector<long double> want_re, want_im, orig_re(M), orig_im(M);
      exact_spectrum(inputs[g], false, want_re, want_im);
      for (std::uint32_t kk = 0; kk < M; ++kk) {
        orig_re[kk] = static_cast<long double>(inputs[g][kk].re) * M;
        orig_im[kk] = static_cast<long double>(inputs[g][kk].im) * M;
      }
      // A radix-2 transform with accurate twiddles errs by O(log M) eps (relative, L2).
      const double forward_error = relative_error(spectra[g], want_re, want_im);
      const double round_trip_error = relative_error(back[g], orig_re, orig_im);
      INFO("forward error " << forward_error << ", round trip " << round_trip_error);
      REQUIRE(forward_error < 2.0 * m * eps);
      REQUIRE(round_trip_error < 4.0 * m * eps);
    }
  }
}

namespace {

// The wide program's transforms (fused_wide.hpp, 4 points per thread) of `groups` inputs at
// once, thread by thread: natural order in, bit-reversed order out (forward), or back.
template <class G>
std::vector<std::vector<k::Complex>> wide_transform(const std::vector<std::vector<k::Complex>>& inputs,
                                                    const std::vector<k::Complex>& W, bool forward) {
  constexpr std::uint32_t M = G::M, T = G::T;
  const auto groups = static_cast<std::uint32_t>(inputs.size());
  std::vector<k::Complex> buffers(groups * fz::buffer_points(M), k::Complex{NAN, NAN});
  const G f{{}, buffers.data(), W.data(), fz::buffer_points(M)};
  fz::HostBlock<fz::wide::TransformRegs> blk(groups * T);
  blk.each([&](unsigned tid, auto& R) {
    for (unsigned r = 0; r < 4; ++r) {
      R.v[r] = inputs[f.group(tid)][forward ? r * T + f.thread(tid) : 4 * f.thread(tid) + r];
    }
  });
  if (forward) fz::wide::forward_transform(blk, f);
  else fz::wide::inverse_transform(blk, f);
  std::vector<std::vector<k::Complex>> out(groups, std::vector<k::Complex>(M));
  blk.each([&](unsigned tid, auto& R) {
    for (unsigned r = 0; r < 4; ++r) {
      out[f.group(tid)][forward ? 4 * f.thread(tid) + r : r * T + f.thread(tid)] = R.v[r];
    }
  });
  return out;
}

}  // namespace

TEST_CASE("fused FFT, wide (4 points per thread): the passes take every stage once, and the "
          "transforms equal the exact DFT and the 8-point transforms",
          "[gpu-host][fused]") {
  const std::uint64_t seed = catch_seed(0x7a);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  auto check = [&](auto groups) {
    using G = decltype(groups);
    constexpr unsigned m = G::m;
    constexpr std::uint32_t M = G::M, T = G::T;
    INFO("M = 2^" << m);
    REQUIRE(T == fz::wide::threads(M));
    check_passes(
        m, 4, fz::wide::pass_count(m), [&](unsigned p) { return fz::wide::forward_pass(m, p); },
        [](std::uint32_t t, unsigned r, unsigned top) { return fz::wide::point_of(t, r, top); });
    // Transforms: two groups at once; the exact DFT in bit-reversed order, the 8-point
    // program's spectrum, and the round trip (times M).
    const auto W = fz::twiddles(M);
    std::vector<std::vector<k::Complex>> inputs(2, std::vector<k::Complex>(M));
    for (auto& in : inputs) {
      for (auto& v : in) v = k::Complex{rng.standard_normal(), rng.standard_normal()};
    }
    const auto spectra = wide_transform<G>(inputs, W, true);
    const auto back = wide_transform<G>(spectra, W, false);
    const auto eight = block_transform(inputs, W, true);
    for (std::size_t g = 0; g < inputs.size(); ++g) {
      INFO("group " << g);
      std::vector<long double> want_re, want_im, orig_re(M), orig_im(M), eight_re(M), eight_im(M);
      exact_spectrum(inputs[g], false, want_re, want_im);
      for (std::uint32_t kk = 0; kk < M; ++kk) {
        orig_re[kk] = static_cast<long double>(inputs[g][kk].re) * M;
        orig_im[kk] = static_cast<long double>(inputs[g][kk].im) * M;
        eight_re[kk] = eight[g][kk].re;
        eight_im[kk] = eight[g][kk].im;
      }
      const double forward_error = relative_error(spectra[g], want_re, want_im);
      const double against_eight = relative_error(spectra[g], eight_re, eight_im);
      const double round_trip_error = relative_error(back[g], orig_re, orig_im);
      INFO("forward error " << forward_error << ", against 8 points " << against_eight
                            << ", round trip " << round_trip_error);
      REQUIRE(forward_error < 2.0 * m * eps);
      REQUIRE(against_eight < 4.0 * m * eps);
      REQUIRE(round_trip_error < 4.0 * m * eps);
    }
  };
  check(fz::wide::Groups<8>{});
  check(fz::wide::Groups<9>{});
  check(fz::wide::Groups<10>{});
  // Every length of the wide program, and no other.
  unsigned lengths = 0;
  for (unsigned m = fz::min_transform_log2; m <= fz::max_transform_log2; ++m) {
    lengths += fz::wide::with_length(1u << m, [](auto) {}) ? 1 : 0;
  }
  CHECK(lengths == 3);
}

TEST_CASE("fused FFT: the pass tables hold each radix-8 (and wide radix-4) pass's twiddles in "
          "its threads' order",
          "[gpu-host][fused]") {
  // M = 512: passes with top 8, 5, 2: 7 * 64 + 7 * 8 entries after the M powers, then the
  // twist table's 8 * 64, then the wide pass table (radix-4 passes with top 7, 5, 3).
  STATIC_REQUIRE(fz::twist_table_offset(512) == 512 + 7 * 64 + 7 * 8);
  STATIC_REQUIRE(fz::wide_table_offset(512) == 512 + 7 * 64 + 7 * 8 + 512);
  STATIC_REQUIRE(fz::wide_table_size(512) == 3 * 64 + 3 * 16 + 3 * 4);
  STATIC_REQUIRE(fz::twiddle_table_size(512) == 512 + 7 * 64 + 7 * 8 + 512 + 252);
  // M = 1024: a pass of one radix-2 stage (no entries), then tops 8, 5, 2; no twist table;
  // the wide passes' tops 9, 7, 5, 3 (and 1, without twiddles).
  STATIC_REQUIRE(fz::twiddle_table_size(1024) == 1024 + 7 * 64 + 7 * 8 + 3 * (256 + 64 + 16 + 4));
  STATIC_REQUIRE(fz::twiddle_table_size(8) == 8);  // one pass, top 2; wide: tops 2 and 1
  for (unsigned m = fz::min_transform_log2; m <= fz::max_transform_log2; ++m) {
    INFO("M = 2^" << m);
    const std::uint32_t M = 1u << m;
    const auto W = fz::twiddles(M);
    REQUIRE(W.size() == fz::twiddle_table_size(M));
    std::uint32_t entries = M;
    for (unsigned p = 0; p < fz::pass_count(m); ++p) {
      const fz::Pass pass = fz::forward_pass(m, p);
      INFO("pass " << p << ", top " << pass.top);
      REQUIRE(pass.table + M == entries);  // the passes' entries follow each other
      if (pass.stages < 3 || pass.top == 2) continue;
      const std::uint32_t h = 1u << (pass.top - 2);
      for (unsigned r = 1; r < 8; ++r) {
        for (std::uint32_t n0 = 0; n0 < h; ++n0) {
          // The exponent as the radix-8 butterfly of a pass needs it, the value exact in
          // long double: the table's entry is the power table's, bit for bit.
          const std::uint32_t e = (n0 * bit_reverse(r, 3)) << (m - 1 - pass.top);
          const k::Complex w = W[M + pass.table + (r - 1) * h + n0];
          REQUIRE(e < 7 * M / 8);
          REQUIRE(w.re == W[e].re);
          REQUIRE(w.im == W[e].im);
        }
      }
      entries += 7 * h;
    }
    REQUIRE(entries == fz::twist_table_offset(M));
    entries += fz::twist_in_first_pass(m) ? M : 0;
    REQUIRE(entries == fz::wide_table_offset(M));
    // The wide pass table: W^{(n0 bitrev_2(r)) 2^(m-1-top)} at (r-1) 2^(top-1) + n0 of each
    // radix-4 pass with top > 1, bit for bit the power's.
    for (unsigned p = 0; p < fz::wide::pass_count(m); ++p) {
      const fz::Pass pass = fz::wide::forward_pass(m, p);
      INFO("wide pass " << p << ", top " << pass.top);
      REQUIRE(pass.table + fz::wide_table_offset(M) == entries);
      if (pass.stages < 2 || pass.top == 1) continue;
      const std::uint32_t h = 1u << (pass.top - 1);
      for (unsigned r = 1; r < 4; ++r) {
        for (std::uint32_t n0 = 0; n0 < h; ++n0) {
          const std::uint32_t e = (n0 * bit_reverse(r, 2)) << (m - 1 - pass.top);
          const k::Complex w = W[fz::wide_table_offset(M) + pass.table + (r - 1) * h + n0];
          REQUIRE(e < 3 * M / 4);
          REQUIRE(w.re == W[e].re);
          REQUIRE(w.im == W[e].im);
        }
      }
      entries += 3 * h;
    }
    REQUIRE(W.size() == entries);
  }
}

TEST_CASE("fused FFT: the twist goes into the first pass where it is a radix-8 pass with "
          "twiddles, from correct constants and table entries",
          "[gpu-host][fused]") {
  // exp(i pi r/16), correctly rounded (the long double values round to the same doubles).
  for (unsigned r = 0; r < 8; ++r) {
    INFO("r = " << r);
    const k::Complex c = fz::register_twist(r);
    CHECK(c.re == static_cast<double>(std::cos(pi * r / 16)));
    CHECK(c.im == static_cast<double>(std::sin(pi * r / 16)));
  }
  std::vector<unsigned> merged;
  for (unsigned m = fz::min_transform_log2; m <= fz::max_transform_log2; ++m) {
    if (!fz::twist_in_first_pass(m)) continue;
    merged.push_back(m);
    INFO("M = 2^" << m);
    const fz::Pass first = fz::forward_pass(m, 0);
    REQUIRE(first.stages == 3);  // a radix-8 pass with twiddles
    REQUIRE(first.top > 2);
    const std::uint32_t M = 1u << m, T = M / 8, at = fz::twist_table_offset(M);
    const auto W = fz::twiddles(M);
    for (unsigned r = 0; r < 8; ++r) {
      for (std::uint32_t t = 0; t < T; ++t) {
        // zeta^t W^{t bitrev(r)}, the product of the two in long double.
        const long double zt = pi * t / (2.0L * M);
        const long double wt = -2.0L * pi * static_cast<long double>(t * bit_reverse(r, 3)) / M;
        const long double re = std::cos(zt) * std::cos(wt) - std::sin(zt) * std::sin(wt);
        const long double im = std::cos(zt) * std::sin(wt) + std::sin(zt) * std::cos(wt);
        const k::Complex w = W[at + r * T + t];
        REQUIRE(std::abs(w.re - re) <= eps);
        REQUIRE(std::abs(w.im - im) <= eps);
      }
    }
  }
  CHECK(merged == std::vector<unsigned>{6, 9});  // N = 128 and tfhe_lib_128's N = 1024
}

// block_transform with FixedGroups<L> for each L in [First, Last] against FftGroups.
template <unsigned First, unsigned Last>
void check_fixed_transforms(Csprng& rng) {
  INFO("M = 2^" << First);
  const std::uint32_t M = 1u << First;
  const auto W = fz::twiddles(M);
  std::vector<std::vector<k::Complex>> inputs(2, std::vector<k::Complex>(M));
  for (auto& in : inputs) {
    for (auto& v : in) v = k::Complex{rng.standard_normal(), rng.standard_normal()};
  }
  for (const bool forward : {true, false}) {
    const auto run_time = block_transform(inputs, W, forward);
    const auto fixed = block_transform<fz::FixedGroups<First>>(inputs, W, forward);
    STATIC_REQUIRE(fz::FixedGroups<First>::T == M / 8);
    for (std::size_t g = 0; g < inputs.size(); ++g) REQUIRE(same_bits(fixed[g], run_time[g]));
  }
  if constexpr (First < Last) check_fixed_transforms<First + 1, Last>(rng);
}

TEST_CASE("fused FFT: a length fixed at compile time (FixedGroups) gives the run-time "
          "length's transforms bit for bit",
          "[gpu-host][fused]") {
  const std::uint64_t seed = catch_seed(0x71);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  check_fixed_transforms<fz::min_transform_log2, fz::max_transform_log2>(rng);
  // The kernels' lengths: N = 512, 1024, 2048, and no others.
  std::vector<std::uint32_t> fixed;
  for (std::uint32_t M = 8; M <= 4096; M *= 2) {
    std::uint32_t seen = 0;
    const bool found = fz::with_fixed_length(M, [&](auto groups) { seen = decltype(groups)::M; });
    if (found) {
      REQUIRE(seen == M);
      fixed.push_back(M);
    }
  }
  CHECK(fixed == std::vector<std::uint32_t>{256, 512, 1024});
}

TEST_CASE("fused FFT: the 8-point DFT's constant twiddles are W^{qM/8} and its butterflies the "
          "table's",
          "[gpu-host][fused]") {
  const std::uint64_t seed = catch_seed(0x6c);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  // The factors the constant butterflies apply: (u - v) w forward, v conj(w) inverse.
  auto applied = [](unsigned q, bool inverse) {
    k::Complex u{0, 0}, v{-1, 0};  // u - v = 1 and v = -1
    if (inverse) {
      fz::eighth_dit_butterfly(u, v, q);  // v = u - v conj(w) = conj(w)
      return k::Complex{v.re, -v.im};
    }
    fz::eighth_dif_butterfly(u, v, q);  // v = (u - v) w = w
    return v;
  };
  for (unsigned m = fz::min_transform_log2; m <= fz::max_transform_log2; ++m) {
    INFO("M = 2^" << m);
    const std::uint32_t M = 1u << m;
    const auto W = fz::twiddles(M);
    for (unsigned q = 0; q < 4; ++q) {
      INFO("q = " << q);
      const k::Complex w = W[q * M / 8];
      const k::Complex forward = applied(q, false);
      CHECK(std::abs(forward.re - w.re) <= eps);
      CHECK(std::abs(forward.im - w.im) <= eps);
      const k::Complex inverse = applied(q, true);
      CHECK(std::abs(inverse.re - w.re) <= eps);
      CHECK(std::abs(inverse.im - w.im) <= eps);
      for (int trial = 0; trial < 64; ++trial) {
        const k::Complex u0{rng.standard_normal(), rng.standard_normal()};
        const k::Complex v0{rng.standard_normal(), rng.standard_normal()};
        k::Complex u1 = u0, v1 = v0, u2 = u0, v2 = v0;
        fz::eighth_dif_butterfly(u1, v1, q);
        fz::dif_butterfly(u2, v2, w);
        CHECK(u1.re == u2.re);  // the sum is the same operation
        CHECK(u1.im == u2.im);
        const double scale = 4 * eps * (std::abs(u0.re) + std::abs(u0.im) + std::abs(v0.re) +
                                        std::abs(v0.im));
        CHECK(std::abs(v1.re - v2.re) <= scale);
        CHECK(std::abs(v1.im - v2.im) <= scale);
        if (q % 2 == 0) {  // 1 and -i: no rounding beyond the difference
          const double dr = u0.re - v0.re, di = u0.im - v0.im;
          CHECK(v1.re == (q == 0 ? dr : di));
          CHECK(v1.im == (q == 0 ? di : -dr));
        }
        k::Complex u3 = u0, v3 = v0, u4 = u0, v4 = v0;
        fz::eighth_dit_butterfly(u3, v3, q);
        fz::dit_butterfly(u4, v4, w);
        CHECK(std::abs(u3.re - u4.re) <= scale);
        CHECK(std::abs(u3.im - u4.im) <= scale);
        CHECK(std::abs(v3.re - v4.re) <= scale);
        CHECK(std::abs(v3.im - v4.im) <= scale);
      }
    }
  }
}

TEST_CASE("fused FFT: a pass of 3 stages (radix 8) equals its three radix-2 stages",
          "[gpu-host][fused]") {
  const std::uint64_t seed = catch_seed(0x6d);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  bool any_difference = false;
  for (unsigned m = fz::min_transform_log2; m <= fz::max_transform_log2; ++m) {
    const std::uint32_t M = 1u << m;
    const auto W = fz::twiddles(M);
    for (unsigned p = 0; p < fz::pass_count(m); ++p) {
      const fz::Pass pass = fz::forward_pass(m, p);
      if (pass.stages != 3) continue;
      INFO("M = 2^" << m << ", pass top " << pass.top);
      std::vector<k::Complex> x(M);
      for (auto& v : x) v = k::Complex{rng.standard_normal(), rng.standard_normal()};
      for (const bool inverse : {false, true}) {
        INFO((inverse ? "inverse" : "forward"));
        std::vector<k::Complex> radix8 = x, radix2 = x;
        scalar_pass(radix8, W, pass, inverse);
        for (unsigned s = 0; s < 3; ++s) radix2_stage(radix2, W, inverse ? pass.top - 2 + s : pass.top - s, inverse);
        std::vector<long double> re(M), im(M);
        for (std::uint32_t i = 0; i < M; ++i) {
          re[i] = radix2[i].re;
          im[i] = radix2[i].im;
        }
        const double error = relative_error(radix8, re, im);
        INFO("relative error " << error);
        CHECK(error < 8 * eps);
        any_difference = any_difference || error > 0;
      }
    }
  }
  // Another schedule rounds differently somewhere: equal words everywhere would mean that
  // the radix-2 stages ran.
  CHECK(any_difference);
}

TEST_CASE("fused FFT: negacyclic products through fold, twist, transform and untwist are exact",
          "[gpu-host][fused]") {
  const std::uint64_t seed = catch_seed(0x6b);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  for (std::uint32_t N = 16; N <= 4096; N *= 2) {
    INFO("N = " << N);
    const std::uint32_t M = N / 2, T = fz::fft_threads(M);
    const auto W = fz::twiddles(M);
    const auto twist = k::twist_factors(N), untwist = k::untwist_factors(N);
    // Digits of the largest gadget base we use (2^10, signed), times a uniform torus polynomial.
    std::vector<std::int32_t> d(N);
    std::vector<Torus32> d_words(N), b(N);
    for (std::uint32_t j = 0; j < N; ++j) {
      d[j] = static_cast<std::int32_t>(rng.uniform_below(1024)) - 512;
      d_words[j] = static_cast<Torus32>(d[j]);
      b[j] = rng.uniform_torus();
    }
    std::vector<k::Complex> buffer(fz::buffer_points(M)), spectrum_d(M), spectrum_b(M);
    fz::HostBlock<fz::TransformRegs> blk(T);
    fz::transform_key_polynomial(blk, d_words.data(), N, twist.data(), W.data(), buffer.data(),
                                 spectrum_d.data());
    fz::transform_key_polynomial(blk, b.data(), N, twist.data(), W.data(), buffer.data(),
                                 spectrum_b.data());
    std::vector<Torus32> got(N, 0);
    const fz::FftGroups f = fz::make_groups(M, buffer.data(), W.data());
    blk.each([&](unsigned tid, auto& R) {
      for (unsigned r = 0; r < 8; ++r) {
        const std::uint32_t slot = r * T + f.thread(tid);
        const k::Complex x = spectrum_d[slot], y = spectrum_b[slot];
        R.v[r] = k::Complex{x.re * y.re - x.im * y.im, x.re * y.im + x.im * y.re};
      }
    });
    fz::inverse_transform(blk, f);
    blk.each([&](unsigned tid, auto& R) {
      for (unsigned r = 0; r < 8; ++r) {
        const std::uint32_t j = fz::point_of(f.thread(tid), r, f.m - 1);
        k::untwist_round_add(R.v[r], untwist[j], got.data(), j, M);
      }
    });
    REQUIRE(got == negacyclic_exact(d, b));
    // The rotation's path: the digits through the twisted forward transform, the product
    // through the twisted inverse one, with the length at run time and fixed (the twist in
    // the first pass where it can be).
    std::vector<k::Complex> folded(M);
    for (std::uint32_t j = 0; j < M; ++j) folded[j] = k::Complex{double(d[j]), double(d[j + M])};
    auto rotation_path = [&](auto groups) {
      using Groups = decltype(groups);
      const auto digits = twisted_transform<Groups>(folded, W, true);
      std::vector<k::Complex> product(M);
      for (std::uint32_t p = 0; p < M; ++p) {
        const k::Complex x = digits[p], y = spectrum_b[fz::key_slot(p, T)];
        product[p] = k::Complex{x.re * y.re - x.im * y.im, x.re * y.im + x.im * y.re};
      }
      const auto back = twisted_transform<Groups>(product, W, false);
      std::vector<Torus32> words(N, 0);
      for (std::uint32_t j = 0; j < M; ++j) k::round_add(back[j], words.data(), j, M);
      return words;
    };
    REQUIRE(rotation_path(fz::FftGroups{}) == negacyclic_exact(d, b));
    with_fixed_groups(f.m, [&](auto groups) {
      REQUIRE(rotation_path(groups) == negacyclic_exact(d, b));
    });
  }
}

TEST_CASE("fused FFT: the twisted transforms of a fixed length equal the exact transform of "
          "the twisted input and, where the twist is not in their first pass, the plain "
          "transforms bit for bit",
          "[gpu-host][fused]") {
  const std::uint64_t seed = catch_seed(0x74);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  for (unsigned m = fz::min_transform_log2; m <= fz::max_transform_log2; ++m) {
    INFO("M = 2^" << m);
    const std::uint32_t M = 1u << m, N = 2 * M;
    const auto W = fz::twiddles(M);
    const auto twist = k::twist_factors(N);
    // Folded digits: small integers, as the rotation transforms them.
    std::vector<k::Complex> x(M), twisted(M);
    for (std::uint32_t j = 0; j < M; ++j) {
      x[j] = k::Complex{double(rng.uniform_below(128)) - 64, double(rng.uniform_below(128)) - 64};
      twisted[j] = k::fold_twist(x[j].re, x[j].im, twist[j]);
    }
    // The run-time length: the plain transform of the twisted input, bit for bit.
    const auto plain = block_transform({twisted}, W, true)[0];
    REQUIRE(same_bits(twisted_transform<fz::FftGroups>(x, W, true), plain));
    std::vector<k::Complex> spectrum, back;
    with_fixed_groups(m, [&](auto groups) {
      spectrum = twisted_transform<decltype(groups)>(x, W, true);
      back = twisted_transform<decltype(groups)>(spectrum, W, false);
    });
    // X_k = sum_j x_j zeta^j W^{jk}, zeta = exp(i pi/N), at point bitrev(k), in long double.
    std::vector<long double> want_re, want_im;
    exact_spectrum(x, true, want_re, want_im);
    const double forward_error = relative_error(spectrum, want_re, want_im);
    INFO("forward error " << forward_error << ", plain "
                          << relative_error(plain, want_re, want_im));
    CHECK(forward_error < 2.0 * m * eps);
    // Back: the folded input again (the 1/M and the untwist in untwisted_output).
    std::vector<long double> x_re(M), x_im(M);
    for (std::uint32_t j = 0; j < M; ++j) {
      x_re[j] = x[j].re;
      x_im[j] = x[j].im;
    }
    const double round_trip_error = relative_error(back, x_re, x_im);
    INFO("round trip error " << round_trip_error);
    CHECK(round_trip_error < 4.0 * m * eps);
    // The same operations as the plain transform of the twisted input unless the first pass
    // carries the twist, which rounds differently (and so is not the plain code).
    if (fz::twist_in_first_pass(m)) CHECK_FALSE(same_bits(spectrum, plain));
    else CHECK(same_bits(spectrum, plain));
  }
}

TEST_CASE("fused engine: its Fourier key is the cuFFT engine's spectrum in bit-reversed order",
          "[gpu-host][fused]") {
  const Parameters p = toy_k2_insecure();
  const CloudKey& cloud = *keys_for(p).cloud;
  const gd::Shape s = shape_of(p);
  const std::uint32_t M = s.M(), m = fz::log2_exact(M);
  const auto twist = k::twist_factors(s.N);
  const auto W = fz::twiddles(M);
  const NaturalFft fft(M);
  std::vector<k::Complex> buffer(fz::buffer_points(M)), fused(M), natural(M);
  fz::HostBlock<fz::TransformRegs> blk(fz::fft_threads(M));
  const auto bk = cloud.bootstrapping_key().data();
  const std::size_t polys = std::size_t{s.n} * s.rows() * s.k1();
  for (std::size_t poly = 0; poly < polys; poly += 37) {
    INFO("polynomial " << poly);
    const Torus32* coefficients = bk.data() + poly * s.N;
    fz::transform_key_polynomial(blk, coefficients, s.N, twist.data(), W.data(), buffer.data(),
                                 fused.data());
    for (std::uint64_t idx = 0; idx < M; ++idx) {
      gd::grid::bk_fold_twist_at(idx, coefficients, s, twist.data(), natural.data());
    }
    fft.forward(natural.data());
    double scale = 0, worst = 0;
    for (std::uint32_t pt = 0; pt < M; ++pt) {
      const k::Complex a = fused[fz::key_slot(pt, fz::fft_threads(M))];
      const k::Complex b = natural[bit_reverse(pt, m)];
      worst = std::max(worst, std::hypot(a.re - b.re, a.im - b.im));
      scale = std::max(scale, std::hypot(b.re, b.im));
    }
    REQUIRE(worst < 64 * m * eps * scale);
    // The full-key index agrees with the slot order.
    const std::size_t i = poly / (std::size_t{s.rows()} * s.k1());
    const std::size_t q = poly / s.k1() % s.rows(), c = poly % s.k1();
    REQUIRE(fz::key_index(i, q, c, 5, s.rows(), s.k1(), M) == poly * M + fz::key_slot(5, fz::fft_threads(M)));
  }
}

namespace {

// One CMUX step of GGSW `step`, exactly: for each rotation r of `start` ([r][k1][N] words) with
// switched masks `powers` ([r][n]), start_r + ((X^a - 1) start_r) [x] GGSW_step, a the power
// of that step (core's external_product_exact).
std::vector<std::vector<Torus32>> exact_cmux_step(const CloudKey& cloud,
                                                  const std::vector<Torus32>& start,
                                                  const std::vector<std::uint32_t>& powers,
                                                  std::uint32_t step) {
  const Parameters& p = cloud.parameters();
  const std::size_t N = p.polynomial_size, n = p.lwe_dimension, words = glwe_size(p);
  const std::size_t capacity = start.size() / words;
  std::vector<std::vector<Torus32>> want(capacity, std::vector<Torus32>(words));
  for (std::size_t r = 0; r < capacity; ++r) {
    std::vector<Torus32> rotated(words), product(words);
    for (std::size_t c = 0; c <= p.glwe_dimension; ++c) {
      const std::span<const Torus32> a(start.data() + r * words + c * N, N);
      multiply_by_monomial(a, powers[r * n + step], std::span<Torus32>(rotated).subspan(c * N, N));
      for (std::size_t j = 0; j < N; ++j) rotated[c * N + j] -= a[j];
    }
    external_product_exact(cloud.bootstrapping_key().ggsw(step), rotated, p, product);
    for (std::size_t w = 0; w < words; ++w) want[r][w] = start[r * words + w] + product[w];
  }
  return want;
}

}  // namespace

TEST_CASE("fused engine: one CMUX step of the block program equals core's exact external "
          "product, for every launch shape (groups per rotation, rotations per block, blocks "
          "per cluster, rotations per thread)",
          "[gpu-host][fused]") {
  const std::uint64_t seed = catch_seed(0x6c);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  for (const Parameters& p : gpu::test::every_test_set()) {
    INFO("parameter set " << p.name);
    const CloudKey& cloud = *keys_for(p).cloud;
    const gd::Shape s = shape_of(p);
    const std::size_t N = p.polynomial_size, n = p.lwe_dimension, words = glwe_size(p);
    // 5 rotations: with R = 2 or two lanes, two full blocks and a partial one, and random
    // powers in the second lane (rotation 3).
    const std::size_t capacity = 5;
    const auto step = static_cast<std::uint32_t>(rng.uniform_below(n));
    std::vector<Torus32> start(capacity * words);
    for (auto& v : start) v = rng.uniform_torus();
    std::vector<std::uint32_t> powers(capacity * n);
    for (auto& v : powers) v = static_cast<std::uint32_t>(rng.uniform_below(2 * N));
    powers[1 * n + step] = 0;                                                    // X^0 - 1 = 0
    powers[2 * n + step] = static_cast<std::uint32_t>(N + rng.uniform_below(N));  // a sign flip
    const std::vector<std::vector<Torus32>> want = exact_cmux_step(cloud, start, powers, step);
    HostEngine engine(cloud, 1);
    std::vector<fz::LaunchShape> shapes = {{1, 1}, {s.k1(), 1}, {s.rows(), 1}, {1, 2},
                                           {1, 3}, {s.k1(), 2}, {1, 1, s.k1()}};
    if (fz::valid_cluster(s.rows(), s)) shapes.push_back({1, 1, s.rows()});
    // Two rotations per thread (k = 1).
    const fz::LaunchShape lanes{1, 1, 1, 2};
    if (fz::valid_lanes(2, s)) shapes.push_back(lanes);
    // The key stage (fixed lengths, the standard key): 1x1 and two lanes.
    const fz::LaunchShape staged{1, 1, 1, 1, fz::points_per_thread, fz::owner_sums, fz::key_stage};
    if (fz::stage_fits(staged, s)) shapes.push_back(staged);
    const fz::LaunchShape staged_lanes{1, 1, 1, 2, fz::points_per_thread, fz::owner_sums,
                                       fz::key_stage};
    if (fz::stage_fits(staged_lanes, s)) shapes.push_back(staged_lanes);
    // Wide clusters (4 points per thread; fixed lengths).
    if (fz::valid_wide(s)) {
      shapes.push_back({1, 1, s.k1(), 1, fz::wide_points});
      if (fz::valid_cluster(s.rows(), s)) shapes.push_back({1, 1, s.rows(), 1, fz::wide_points});
    }
    // The programs of a fixed length (N = 512 .. 2048, shape 1x1, a cluster or lanes) and, for
    // the same shapes, those of a run-time length.
    std::vector<std::pair<fz::LaunchShape, bool>> runs;
    for (const fz::LaunchShape shape : shapes) runs.emplace_back(shape, true);
    runs.emplace_back(fz::LaunchShape{1, 1}, false);
    runs.emplace_back(fz::LaunchShape{1, 1, s.k1()}, false);
    if (fz::valid_lanes(2, s)) runs.emplace_back(lanes, false);
    for (const auto& [shape, fixed] : runs) {
      INFO("groups " << shape.groups << ", rotations per block " << shape.rotations
                     << ", blocks per cluster " << shape.cluster << ", rotations per thread "
                     << shape.lanes << ", points per thread " << shape.points
                     << ", key stage " << shape.stage << ", fixed lengths " << fixed);
      REQUIRE(fz::valid_shape(shape, s));
      engine.set_fused_shape(shape);
      engine.set_fixed_lengths(fixed);
      std::vector<Torus32> acc = start;
      engine.fused_rotation(capacity, powers, acc, step, 1);
      for (std::size_t r = 0; r < capacity; ++r) {
        INFO("rotation " << r << ", power " << powers[r * n + step] << ", step " << step);
        const std::vector<Torus32> got(acc.begin() + r * words, acc.begin() + (r + 1) * words);
        REQUIRE(got == want[r]);
      }
    }
  }
}

TEST_CASE("fused engine: its products' rounding error, measured where rounding often fails, "
          "is within product_rounding's model (as the CPU engines' is)",
          "[gpu-host][fused]") {
  // A gadget far too large for exact rounding (Bg = 2^14, l = 2, N = 1024, k = 1: 2.7 model
  // sigma): one CMUX step of the block program against core's exact external product. The
  // share f of words 1 off gives the error's sigma (f = erfc(0.5 / (sigma sqrt 2)), a normal
  // error), and sigma over sqrt(log2 N) 2^-53 product_rms the engine's scale, which the model
  // takes as product_error_scale (2; the CPU engines measure 1.1 to 1.6).
  const std::uint64_t seed = catch_seed(0x71);
  INFO("seed " << seed);
  Csprng rng = seeded_rng(seed);
  Parameters p = toy_insecure();
  p.name = "rounding_N1024_Bg14_INSECURE";
  p.lwe_dimension = 8;
  p.polynomial_size = 1024;
  p.bk_base_log = 14;
  const CloudKey& cloud = *keys_for(p).cloud;
  const gd::Shape s = shape_of(p);
  const ProductRounding model = product_rounding(p, 1);
  REQUIRE(model.margin < 3);
  const std::size_t N = p.polynomial_size, n = p.lwe_dimension, words = glwe_size(p);
  const std::size_t capacity = 24;
  const auto step = static_cast<std::uint32_t>(rng.uniform_below(n));
  std::vector<Torus32> start(capacity * words);
  for (auto& v : start) v = rng.uniform_torus();
  std::vector<std::uint32_t> powers(capacity * n);
  for (auto& v : powers) v = static_cast<std::uint32_t>(1 + rng.uniform_below(2 * N - 1));
  for (std::size_t r = 0; r < capacity; ++r) powers[r * n + step] |= 1;  // never X^N or X^0
  const std::vector<std::vector<Torus32>> want = exact_cmux_step(cloud, start, powers, step);
  HostEngine engine(cloud, 1);
  std::vector<fz::LaunchShape> shapes = {{1, 1}, {s.k1(), 1}, {1, 1, s.k1()}, {1, 1, 1, 2}};
  if (fz::valid_wide(s)) shapes.push_back({1, 1, s.k1(), 1, fz::wide_points});
  for (const fz::LaunchShape shape : shapes) {
    INFO("groups " << shape.groups << ", blocks per cluster " << shape.cluster
                   << ", rotations per thread " << shape.lanes << ", points per thread "
                   << shape.points);
    REQUIRE(fz::valid_shape(shape, s));
    engine.set_fused_shape(shape);
    std::vector<Torus32> acc = start;
    engine.fused_rotation(capacity, powers, acc, step, 1);
    std::size_t off = 0, far = 0;
    for (std::size_t w = 0; w < acc.size(); ++w) {
      const auto d = static_cast<std::int32_t>(acc[w] - want[w / words][w % words]);
      off += d != 0;
      far += d > 1 || d < -1;
    }
    const double f = static_cast<double>(off) / static_cast<double>(acc.size());
    // sigma from f: bisect erfc(0.5 / (sigma sqrt 2)) = f.
    double lo = 1e-3, hi = 10;
    for (int i = 0; i < 100; ++i) {
      const double mid = 0.5 * (lo + hi);
      (std::erfc(0.5 / (mid * std::sqrt(2.0))) < f ? lo : hi) = mid;
    }
    const double scale = lo / (std::sqrt(std::log2(static_cast<double>(N))) *
                               std::ldexp(model.product_rms, -53));
    INFO(off << " of " << acc.size() << " words 1 off: error sigma " << lo << ", scale "
             << scale << " (model " << product_error_scale << ", sigma " << model.error_sigma
             << ")");
    CHECK(far == 0);
    CHECK(off > 20);  // enough to measure
    CHECK(scale < product_error_scale);
    CHECK(scale > 0.5);
  }
}

namespace {

struct DataFlowCase {
  Parameters p;
  std::vector<fz::LaunchShape> shapes;
};

// Every gate kind on the truth-table inputs (encrypted from `seed`), on the CPU backend of `f`
// and through the host mirror `engine` with each of `shapes` (none: the engine as it is, the
// cuFFT engine's kernels), in chunks of 6: the same words, and the right decryptions.
void check_every_gate_flow(test::SequentialFixture& f, HostEngine& engine,
                           const std::vector<fz::LaunchShape>& shapes, std::uint64_t seed) {
  using S = CpuStorage;
  const Parameters& p = f.be.parameters();
  Csprng rng = seeded_rng(seed);
  const test::TruthTableInputs t = test::truth_table_inputs();
  auto A = encrypt(f.be, f.key, t.a, rng), B = encrypt(f.be, f.key, t.b, rng),
       C = encrypt(f.be, f.key, t.c, rng);
  auto batch_of = [&](const BitBuffer<S>& out) {
    return test::every_gate_batch<S>(A.bits(), B.bits(), C.bits(), out.bits());
  };
  const std::size_t bits = 8 * test::all_specs().size();
  auto run = [&] {
    engine.chunks_run = 0;
    const auto [cpu, mirror] = cpu_and_mirror(f, engine, bits, 6, batch_of);
    CHECK(engine.chunks_run > 1);
    REQUIRE(mirror == cpu);
    test::check_every_gate(decrypt_bits(f.key, mirror), t);
  };
  if (shapes.empty()) run();
  for (const fz::LaunchShape shape : shapes) {
    INFO("groups " << shape.groups << ", rotations per block " << shape.rotations
                   << ", blocks per cluster " << shape.cluster << ", rotations per thread "
                   << shape.lanes << ", points per thread " << shape.points << ", sums "
                   << shape.sums);
    REQUIRE(fz::valid_shape(shape, shape_of(p, engine.shape().unroll)));
    engine.set_fused_shape(shape);
    run();
  }
}

}  // namespace

TEST_CASE("fused engine: the whole data flow equals the CPU backend word for word",
          "[gpu-host][fused]") {
  const std::uint64_t seed = catch_seed(0x6d);
  INFO("seed " << seed);
  const std::vector<DataFlowCase> cases = {
      {toy_insecure(),
       {{1, 1}, {2, 1}, {4, 1}, {1, 4}, {1, 1, 2}, {1, 1, 4}, {1, 1, 1, 2}, {1, 1, 4, 1, 8, 2}}},
      {toy_k2_insecure(), {{1, 1}, {6, 1}, {1, 2}, {1, 1, 3}, {1, 1, 6}, {1, 1, 6, 1, 8, 2}}},
      {sized_insecure(512, 1),
       {{1, 1}, {2, 1}, {1, 3}, {1, 1, 2}, {1, 1, 1, 2}, {1, 1, 2, 1, 4}, {1, 1, 4, 1, 8, 2},
        {1, 1, 4, 1, 4, 2}, {1, 1, 1, 1, 8, 1, fz::key_stage}, {1, 1, 1, 2, 8, 1, fz::key_stage}}},
      {sized_insecure(2048, 2),
       {{1, 1}, {3, 1}, {1, 2}, {1, 1, 3}, {1, 1, 3, 1, 4}, {1, 1, 1, 1, 8, 1, fz::key_stage}}}};
  for (const DataFlowCase& cs : cases) {
    INFO("parameter set " << cs.p.name);
    test::SequentialFixture f(cs.p);
    HostEngine engine(*keys_for(cs.p).cloud, 1);
    check_every_gate_flow(f, engine, cs.shapes, seed);
  }
}

namespace {

// A NAND of two bits and a MUX on tfhe_lib_128 with a key of form `unroll` (3 outputs, chunks
// of 4 rotations): the CPU backend's words through the host mirror with `fused_groups` (0: the
// cuFFT engine, as it is) and each of `shapes`, clusters with product halves `halves` (0: this
// build's).
void check_lib128_flow(std::uint32_t unroll, std::uint32_t fused_groups,
                       const std::vector<fz::LaunchShape>& shapes, std::uint64_t seed,
                       std::uint32_t halves = 0, bool bundle = false) {
  using S = CpuStorage;
  INFO("seed " << seed << ", unroll " << unroll << ", product halves " << halves
                << ", bundled keys " << bundle);
  Csprng rng = seeded_rng(seed);
  test::SequentialFixture f(tfhe_lib_128(), {}, unroll);
  HostEngine engine(*f.keys.cloud, fused_groups);
  engine.set_product_halves(halves);
  engine.set_bundle(bundle);
  auto A = encrypt(f.be, f.key, std::vector<std::uint8_t>{0, 1}, rng);
  auto B = encrypt(f.be, f.key, std::vector<std::uint8_t>{1, 1}, rng);
  auto C = encrypt(f.be, f.key, std::vector<std::uint8_t>{0, 0}, rng);
  auto batch_of = [&](const BitBuffer<S>& out) {
    return std::vector<GateOp<S>>{gate::nand<S>(A.bits(), B.bits(), out.bits(0, 2)),
                                  gate::mux<S>(A.bits(0, 1), B.bits(0, 1), C.bits(0, 1), out.bits(2, 1))};
  };
  auto run = [&] {
    const auto [cpu, mirror] = cpu_and_mirror(f, engine, 3, 4, batch_of);
    REQUIRE(mirror == cpu);
    CHECK(decrypt_bits(f.key, mirror) == std::vector<std::uint8_t>{1, 0, 0});
  };
  if (shapes.empty()) run();
  for (const fz::LaunchShape shape : shapes) {
    INFO("rotations per thread " << shape.lanes << ", blocks per cluster " << shape.cluster);
    engine.set_fused_shape(shape);
    run();
  }
}

}  // namespace

TEST_CASE("fused engine: the data flow equals the CPU backend on tfhe_lib_128", "[gpu-host][fused]") {
  // One rotation per thread, and two (the lane kernel's program; 4 rotations: 2 full blocks),
  // each also with the key stage.
  check_lib128_flow(1, 1,
                    {fz::LaunchShape{1, 1}, fz::LaunchShape{1, 1, 1, 2},
                     fz::LaunchShape{1, 1, 1, 1, 8, 1, fz::key_stage},
                     fz::LaunchShape{1, 1, 1, 2, 8, 1, fz::key_stage}},
                    catch_seed(0x6e));
}

TEST_CASE("fused engine: clusters whose every block sums its own column give the CPU backend's "
          "words on tfhe_lib_128",
          "[gpu-host][fused]") {
  // c6e and w6e (docs/gpu.md section 6.18), with the standard and the unrolled key; the host
  // mirror reads each column from its owner's copy at the end, and every block's copy is
  // what its next step decomposes.
  const std::vector<fz::LaunchShape> shapes = {fz::LaunchShape{1, 1, 6, 1, 8, fz::every_block_sums},
                                               fz::LaunchShape{1, 1, 6, 1, 4, fz::every_block_sums}};
  check_lib128_flow(1, 1, shapes, catch_seed(0x6f));
  check_lib128_flow(2, 1, shapes, catch_seed(0x70));
}

TEST_CASE("unrolled key: each engine's slot roots; the cuFFT and fused data flows equal the CPU "
          "backend word for word",
          "[gpu-host][fused][unroll]") {
  const std::uint64_t seed = catch_seed(0x2011);
  INFO("seed " << seed);
  const std::vector<DataFlowCase> cases = {
      {toy_insecure(), {{1, 1}, {2, 1}, {4, 1}, {1, 1, 2}, {1, 1, 4}, {1, 1, 1, 2}}},
      {toy_k2_insecure(), {{1, 1}, {3, 1}, {6, 1}, {1, 1, 3}, {1, 1, 6}}},
      // Wide clusters (4 points per thread): N = 512 .. 2048. Two lanes (k = 1) at a fixed
      // length and at a run-time one.
      {gpu::test::odd_n_insecure(512, 1),
       {{1, 1}, {2, 1}, {1, 1, 2}, {1, 1, 2, 1, 4}, {1, 1, 1, 2}}},
      {sized_insecure(2048, 2), {{1, 1}, {1, 1, 3}, {1, 1, 3, 1, 4}}}};
  // Key bits in pairs and in threes (toy n = 64: 21 threes and a CMUX step; n = 17: 5 threes
  // and two CMUX steps).
  for (const std::uint32_t unroll : {2u, 3u}) {
    for (const DataFlowCase& cs : cases) {
      INFO("parameter set " << cs.p.name << ", unroll " << unroll);
      const std::uint32_t N = cs.p.polynomial_size;
      test::SequentialFixture f(cs.p, {}, unroll);
      REQUIRE(f.keys.cloud->bootstrapping_key().unroll() == unroll);
      // The cuFFT engine: natural order, slot j evaluates at zeta^(1 - 4j).
      HostEngine cufft(*f.keys.cloud, 0);
      REQUIRE(cufft.roots().size() == N / 2);
      for (std::uint32_t j = 0; j < N / 2; ++j) {
        REQUIRE(cufft.roots()[j] == (2 * N + 1 - (4 * j) % (2 * N)) % (2 * N));
      }
      check_every_gate_flow(f, cufft, {}, seed);
      // The fused engine: its own (bit-reversed) slots, a permutation of the same roots.
      HostEngine engine(*f.keys.cloud, 1);
      std::vector<std::uint32_t> sorted = engine.fused_roots(), want = cufft.roots();
      std::sort(sorted.begin(), sorted.end());
      std::sort(want.begin(), want.end());
      REQUIRE(sorted == want);
      CHECK(engine.fused_roots() != cufft.roots());
      // (The host runs every shape's program, also where a device has too little shared memory
      // for a cluster's block: N = 2048, k = 2.)
      for (const fz::LaunchShape shape : cs.shapes) REQUIRE(fz::valid_unrolled(shape));
      check_every_gate_flow(f, engine, cs.shapes, seed);
    }
  }
  // Shapes without a pair step; a probe that is no set of odd roots gives none.
  CHECK_FALSE(fz::valid_unrolled(fz::LaunchShape{1, 2}));
  CHECK(fz::valid_unrolled(fz::LaunchShape{1, 1, 1, 2}));         // two lanes
  CHECK_FALSE(fz::valid_unrolled(fz::LaunchShape{2, 1, 1, 2}));   // lanes: one group,
  CHECK_FALSE(fz::valid_unrolled(fz::LaunchShape{1, 1, 2, 2}));   // no cluster,
  CHECK_FALSE(fz::valid_unrolled(fz::LaunchShape{1, 1, 1, 3}));   // two lanes,
  CHECK_FALSE(fz::valid_unrolled(fz::LaunchShape{1, 1, 1, 2, 4}));  // 8 points
  CHECK_FALSE(fz::valid_unrolled(fz::LaunchShape{1, 1, 1, 1, 4}));  // 4 points: clusters only
  CHECK(fz::valid_unrolled(fz::LaunchShape{1, 1, 2, 1, 4}));
  std::vector<k::Complex> bad(8, k::Complex{1, 0});  // zeta^0 everywhere
  CHECK(gd::slot_root_exponents(bad, 16).empty());
  bad = {{std::cos(std::numbers::pi / 16), std::sin(std::numbers::pi / 16)}, {std::cos(std::numbers::pi / 16), std::sin(std::numbers::pi / 16)}};
  CHECK(gd::slot_root_exponents(bad, 16).empty());  // twice the same root
}

TEST_CASE("unrolled key: the data flow equals the CPU backend on tfhe_lib_128",
          "[gpu-host][fused][unroll]") {
  const std::uint64_t seed = catch_seed(0x2012);
  check_lib128_flow(2, 0, {}, seed);  // the cuFFT engine
  // 1x1, two lanes (the lane kernel's program; 4 rotations: 2 full blocks), c6 and w6 (a wide
  // cluster: 4 points per thread).
  check_lib128_flow(2, 1,
                    {fz::LaunchShape{1, 1}, fz::LaunchShape{1, 1, 1, 2}, fz::LaunchShape{1, 1, 6},
                     fz::LaunchShape{1, 1, 6, 1, 4}},
                    seed);
}

TEST_CASE("group_exponent and group_exponents: core's unrolled_exponent for every GGSW of a "
          "group",
          "[gpu-host][fused][unroll]") {
  Csprng rng = seeded_rng(catch_seed(0x2014));
  const std::uint32_t N = 1024, mask = 2 * N - 1;
  for (int trial = 0; trial < 200; ++trial) {
    std::uint32_t masks[3];
    for (auto& m : masks) m = static_cast<std::uint32_t>(rng.uniform_below(2 * N));
    INFO("masks " << masks[0] << ", " << masks[1] << ", " << masks[2]);
    for (std::uint32_t u = 1; u <= 3; ++u) {
      for (std::uint32_t g = 0; g < unroll_group_ggsws(u); ++g) {
        CHECK((k::group_exponent(masks, u, g) & mask) == unrolled_exponent(masks, u, g, mask));
      }
    }
    const auto pairs = k::group_exponents<2>([&](unsigned m) { return masks[m]; });
    const auto threes = k::group_exponents<3>([&](unsigned m) { return masks[m]; });
    for (std::uint32_t g = 0; g < 3; ++g) CHECK(pairs.e[g] == k::group_exponent(masks, 2, g));
    for (std::uint32_t g = 0; g < 7; ++g) CHECK(threes.e[g] == k::group_exponent(masks, 3, g));
    // The first is every bit's (a + b + c), the last the last bit's alone (c).
    CHECK(threes.e[0] == masks[0] + masks[1] + masks[2]);
    CHECK(threes.e[6] == masks[2]);
  }
}

TEST_CASE("multiply_row_group_at: both orders of a group step's products (factor_times_key) give "
          "the sum within rounding",
          "[gpu-host][fused][unroll]") {
  // One thread's 8 points, k = 1, N = 1024: sum_c += sum_g digits f_g key_g[c], f_g =
  // zeta^(root e_g) - 1, in the default order (digits times factor, then times the key) and in
  // the A/B order (factor times key, summed, then times the digits), against long double.
  Csprng rng = seeded_rng(catch_seed(0x2015));
  constexpr unsigned K1 = 2;
  const std::uint32_t N = 1024, M = N / 2;
  const std::vector<k::Complex> unit = gd::unit_roots_complex(N);
  std::vector<std::uint32_t> roots(M);
  for (auto& r : roots) r = static_cast<std::uint32_t>(2 * rng.uniform_below(N) + 1);
  struct Groups {
    std::uint32_t M;
  };
  const Groups f{M};
  fz::StepInputs in;
  in.roots = roots.data();
  in.unit = unit.data();
  auto uniform = [&](double scale) {
    return scale * (static_cast<double>(rng.uniform_below(1u << 30)) / (1u << 29) - 1.0);
  };
  auto check_unroll = [&](auto unroll) {
    constexpr unsigned U = decltype(unroll)::value, G = (1u << U) - 1;
    INFO("unroll " << U);
    std::uint32_t masks[U];
    for (auto& m : masks) m = static_cast<std::uint32_t>(rng.uniform_below(2 * N));
    const auto e = k::group_exponents<U>([&](unsigned m) { return masks[m]; });
    std::vector<k::Complex> row(std::size_t{G} * K1 * M);
    for (auto& b : row) b = k::Complex{uniform(1e6), uniform(1e6)};
    fz::RotationRegs<K1> base{}, keyed{};
    for (unsigned r = 0; r < fz::points_per_thread; ++r) {
      base.v[r] = keyed.v[r] = k::Complex{uniform(64), uniform(64)};
    }
    const std::uint32_t t = static_cast<std::uint32_t>(rng.uniform_below(M / 8));
    auto slot_of = [&](unsigned r) { return r * (M / 8) + t; };
    fz::multiply_row_group_at<K1, U, false, false>(base, f, row.data(), std::size_t{K1} * M, {{e}},
                                                   in, slot_of);
    fz::multiply_row_group_at<K1, U, false, true>(keyed, f, row.data(), std::size_t{K1} * M, {{e}},
                                                  in, slot_of);
    for (unsigned r = 0; r < fz::points_per_thread; ++r) {
      const std::uint32_t slot = slot_of(r);
      for (unsigned c = 0; c < K1; ++c) {
        long double re = 0, im = 0, size = 0;
        for (unsigned g = 0; g < G; ++g) {
          const std::uint32_t x = (roots[slot] * e.e[g]) & (2 * N - 1);
          const long double angle = std::acos(-1.0L) * x / N;
          const long double fr = std::cos(angle) - 1, fi = std::sin(angle);
          const k::Complex d = base.v[r], b = row[(std::size_t{g} * K1 + c) * M + slot];
          const long double dr = d.re * fr - d.im * fi, di = d.re * fi + d.im * fr;
          re += dr * b.re - di * b.im;
          im += dr * b.im + di * b.re;
          size += std::hypot(dr, di) * std::hypot(b.re, b.im);
        }
        INFO("point " << r << ", column " << c);
        const double tolerance = static_cast<double>(size) * 1e-14;
        CHECK(std::abs(base.sum[c][r].re - static_cast<double>(re)) <= tolerance);
        CHECK(std::abs(base.sum[c][r].im - static_cast<double>(im)) <= tolerance);
        CHECK(std::abs(keyed.sum[c][r].re - static_cast<double>(re)) <= tolerance);
        CHECK(std::abs(keyed.sum[c][r].im - static_cast<double>(im)) <= tolerance);
      }
    }
    // The kernels' order, as built (default: digits times factor first).
    CHECK(fz::factor_times_key == false);
  };
  for (int trial = 0; trial < 20; ++trial) {
    check_unroll(std::integral_constant<unsigned, 2>{});
    check_unroll(std::integral_constant<unsigned, 3>{});
  }
}

TEST_CASE("bundled keys: each row set is the sum of the group's GGSW times their factors",
          "[gpu-host][fused][unroll]") {
  // bundle_point_at (fused_bundle_kernel's per-index function) for 2 rotations of random masks
  // and a random key, k = 1 and 2, pairs, threes and fours: every point of every row set
  // against sum_g (zeta^(root e_g) - 1) K_g in long double; the group steps only (n = 10: in
  // threes 3 groups and a key bit left, which has no row set; in fours 2 groups, two left).
  Csprng rng = seeded_rng(catch_seed(0x2016));
  auto uniform = [&](double scale) {
    return scale * (static_cast<double>(rng.uniform_below(1u << 30)) / (1u << 29) - 1.0);
  };
  for (const std::uint32_t k : {1u, 2u}) {
    for (const std::uint32_t unroll : {2u, 3u, 4u}) {
      const gd::Shape s{10, k, 64, 8, 2, 2, 4, unroll};
      INFO("k " << k << ", unroll " << unroll);
      const std::uint32_t N = s.N, M = s.M(), G = s.group_ggsws(), capacity = 2;
      const std::size_t key_step = std::size_t{s.rows()} * s.k1() * M;
      REQUIRE(fz::bundle_steps(s) == 10 / unroll);
      REQUIRE(fz::bundle_size(s) == fz::bundle_steps(s) * key_step);
      REQUIRE(fz::bundle_points(s, capacity) == capacity * fz::bundle_steps(s) * M);
      const std::vector<k::Complex> unit = gd::unit_roots_complex(N);
      std::vector<std::uint32_t> roots(M), powers(capacity * s.n);
      for (auto& r : roots) r = static_cast<std::uint32_t>(2 * rng.uniform_below(N) + 1);
      for (auto& m : powers) m = static_cast<std::uint32_t>(rng.uniform_below(2 * N));
      std::vector<k::Complex> key(s.ggsw_count() * key_step);
      for (auto& b : key) b = k::Complex{uniform(1e9), uniform(1e9)};
      std::vector<k::Complex> bundle(capacity * fz::bundle_size(s), k::Complex{NAN, NAN});
      for (std::uint64_t idx = 0; idx < fz::bundle_points(s, capacity); ++idx) {
        fz::with_bundle_unroll(unroll, [&](auto u) {
          fz::bundle_point_at<decltype(u)::value>(idx, s, powers.data(), key.data(), roots.data(),
                                                  unit.data(), bundle.data());
        });
      }
      std::size_t checked = 0;
      for (std::uint32_t r = 0; r < capacity; ++r) {
        for (std::uint32_t j = 0; j < fz::bundle_steps(s); ++j) {
          const std::uint32_t* masks = powers.data() + r * s.n + j * unroll;
          for (std::size_t row = 0; row < std::size_t{s.rows()} * s.k1(); ++row) {
            for (std::uint32_t p = 0; p < M; ++p) {
              long double re = 0, im = 0, size = 0;
              for (std::uint32_t g = 0; g < G; ++g) {
                const std::uint32_t x = (roots[p] * k::group_exponent(masks, unroll, g)) & (2 * N - 1);
                const long double angle = std::acos(-1.0L) * x / N;
                const long double fr = std::cos(angle) - 1, fi = std::sin(angle);
                const k::Complex b = key[(s.step_ggsw(j * unroll) + g) * key_step + row * M + p];
                re += fr * b.re - fi * b.im;
                im += fr * b.im + fi * b.re;
                size += std::hypot(fr, fi) * std::hypot(b.re, b.im);
              }
              const k::Complex got = bundle[(std::size_t{r} * fz::bundle_steps(s) + j) * key_step +
                                            row * M + p];
              const double tolerance = static_cast<double>(size) * 1e-14;
              INFO("rotation " << r << ", group step " << j << ", row " << row << ", slot " << p);
              REQUIRE(std::abs(got.re - static_cast<double>(re)) <= tolerance);
              REQUIRE(std::abs(got.im - static_cast<double>(im)) <= tolerance);
              ++checked;
            }
          }
        }
      }
      CHECK(checked == capacity * fz::bundle_size(s));
    }
  }
  // The standard key has no group steps, so no row sets.
  CHECK(fz::bundle_size(gd::Shape{10, 1, 64, 8, 2, 2, 4, 1}) == 0);
  CHECK(fz::step_ggsws<fz::bundled_step> == 1);
  CHECK(fz::step_ggsws<1> == 1);
  CHECK(fz::step_ggsws<3> == 7);
  // A key in fours: a cluster block's stage holds one row set (its steps are bundled).
  CHECK(fz::cluster_stage_ggsws(gd::Shape{10, 1, 64, 8, 2, 2, 4, 4}) == 1);
  CHECK(fz::cluster_stage_ggsws(gd::Shape{10, 1, 64, 8, 2, 2, 4, 3}) == 7);
}

TEST_CASE("bundled keys: clusters whose group steps run on bundled keys give the CPU backend's "
          "words",
          "[gpu-host][fused][unroll]") {
  // The bundled kernels' program (fused_rotation.hpp: cluster_blind_rotate with Unroll =
  // bundled_step; CudaOptions::fused_bundle = 2): clusters of k+1 and (k+1)l blocks, owners'
  // and every block's sums, product halves, run-time and fixed lengths, pairs and threes;
  // toy n = 64 in threes has 21 group steps and a CMUX step on the fused key after them, n = 17
  // 5 and two. Then tfhe_lib_128 in threes on c6e, the shape of batch 1.
  const std::uint64_t seed = catch_seed(0x2017);
  INFO("seed " << seed);
  const std::vector<DataFlowCase> cases = {
      {toy_insecure(), {{1, 1, 2}, {1, 1, 4}, {1, 1, 4, 1, 8, fz::every_block_sums}}},
      {toy_k2_insecure(), {{1, 1, 3}, {1, 1, 6, 1, 8, fz::every_block_sums}}},
      {sized_insecure(512, 1), {{1, 1, 2}, {1, 1, 4, 1, 8, fz::every_block_sums}}}};
  for (const std::uint32_t unroll : {2u, 3u, 4u}) {
    for (const DataFlowCase& cs : cases) {
      for (const bool fixed : {true, false}) {
        for (const std::uint32_t halves : {1u, 2u}) {
          INFO("parameter set " << cs.p.name << ", unroll " << unroll << ", fixed lengths "
                                << fixed << ", product halves " << halves);
          test::SequentialFixture f(cs.p, {}, unroll);
          HostEngine engine(*f.keys.cloud, 1);
          engine.set_bundle(true);
          engine.set_fixed_lengths(fixed);
          engine.set_product_halves(halves);
          check_every_gate_flow(f, engine, cs.shapes, seed);
        }
      }
    }
  }
  check_lib128_flow(3, 1, {fz::LaunchShape{1, 1, 6, 1, 8, fz::every_block_sums}},
                    catch_seed(0x2018), 0, true);
  // Key bits in fours (toy n = 64: 16 group steps of 15 GGSW; n = 17: 4 and a CMUX step): the
  // cuFFT engine's kernels (their group step takes any form) and the bundled clusters; then
  // tfhe_lib_128 (157 group steps and two CMUX steps) on c6e.
  for (const Parameters& p : {toy_insecure(), gpu::test::odd_n_insecure(512, 1)}) {
    INFO("parameter set " << p.name << ", fours");
    test::SequentialFixture f(p, {}, 4);
    HostEngine cufft(*f.keys.cloud, 0);
    check_every_gate_flow(f, cufft, {}, seed);
    HostEngine engine(*f.keys.cloud, 1);
    engine.set_bundle(true);
    check_every_gate_flow(
        f, engine, {fz::LaunchShape{1, 1, 2}, fz::LaunchShape{1, 1, 4, 1, 8, fz::every_block_sums}},
        seed);
  }
  check_lib128_flow(4, 1, {fz::LaunchShape{1, 1, 6, 1, 8, fz::every_block_sums}},
                    catch_seed(0x2019), 0, true);
}

TEST_CASE("bundled keys made while the rotation runs: the bundling's work items, its counts, "
          "and clusters that wait for them",
          "[gpu-host][fused][unroll]") {
  // fused_bundle_kernel's work items (bundle_item): every point of every row set of a chunk
  // exactly once, the group steps slowest (every rotation's row set j before any's j + 1), each
  // part within one row set; M below, at and above bundle_threads.
  for (const std::uint32_t N : {128u, 1024u, 2048u}) {
    for (const std::uint32_t unroll : {2u, 3u, 4u}) {
      const gd::Shape s{37, 1, N, 8, 2, 2, 4, unroll};
      const std::uint64_t capacity = 3;
      const std::uint32_t M = s.M(), parts = fz::bundle_parts(s);
      INFO("N " << N << ", unroll " << unroll);
      REQUIRE(parts == (M + fz::bundle_threads - 1) / fz::bundle_threads);
      REQUIRE(fz::bundle_items(s, capacity) == capacity * fz::bundle_steps(s) * parts);
      std::vector<int> seen(fz::bundle_points(s, capacity), 0);
      std::vector<std::uint64_t> counted(capacity * fz::bundle_steps(s), 0);
      std::uint32_t last_step = 0;
      for (std::uint64_t w = 0; w < fz::bundle_items(s, capacity); ++w) {
        const fz::BundleItem item = fz::bundle_item(w, s, capacity);
        REQUIRE(item.step >= last_step);  // step-major
        last_step = item.step;
        REQUIRE(item.rotation < capacity);
        REQUIRE(item.part < parts);
        REQUIRE(item.row_set(s) == item.rotation * fz::bundle_steps(s) + item.step);
        for (std::uint32_t t = 0; t < fz::bundle_threads; ++t) {
          const std::uint32_t p = item.part * fz::bundle_threads + t;
          if (p < M) ++seen[item.point(s, p)];
        }
        ++counted[item.row_set(s)];
      }
      CHECK(std::count(seen.begin(), seen.end(), 1) == static_cast<std::ptrdiff_t>(seen.size()));
      CHECK(std::count(counted.begin(), counted.end(), parts) ==
            static_cast<std::ptrdiff_t>(counted.size()));
      // bundle_point_at's index: rotation, group step, slot.
      const fz::BundleItem last = fz::bundle_item(fz::bundle_items(s, capacity) - 1, s, capacity);
      CHECK(last.rotation == capacity - 1);
      CHECK(last.step == fz::bundle_steps(s) - 1);
      CHECK(last.point(s, M - 1) == fz::bundle_points(s, capacity) - 1);
    }
  }

  // The bundling's blocks beside a cluster block: registers per warp in units of 256.
  CHECK(fz::block_registers(64, 204) == 2 * 6656);
  CHECK(fz::block_registers(256, 98) == 8 * 3328);
  CHECK(fz::block_registers(100, 32) == 4 * 1024);  // a partial warp holds a whole one's
  // tfhe_lib_128's bundled c6e block (64 threads, 204 registers): fours' bundling (98) one
  // block per multiprocessor, threes' (66) two; no room still gives 1; then threads bound it.
  CHECK(fz::bundle_blocks_beside(65536, 2048, 64, 204, 98) == 1);
  CHECK(fz::bundle_blocks_beside(65536, 2048, 64, 204, 66) == 2);
  CHECK(fz::bundle_blocks_beside(65536, 2048, 64, 204, 32) == 6);
  CHECK(fz::bundle_blocks_beside(65536, 2048, 256, 255, 200) == 1);
  CHECK(fz::bundle_blocks_beside(65536, 512, 64, 204, 32) == 1);
  CHECK(fz::bundle_blocks_beside(65536, 2048, 64, 204, 0) == 7);  // registers unknown (emulator)

  // The cluster program on row sets counted as the bundling's work items complete them
  // (CudaOptions::fused_bundle_overlap = 2): the CPU backend's words, every fetch of a row set
  // with its count complete (HostClusterBlock::fetch checks). With one part of the first, a
  // middle or the last row set missing, a fetch refuses (a device would wait, then trap): the
  // first step's own fetch, and the next steps' fetches at the end of the step before (on
  // clusters of (k+1)l blocks, one row a block: no other fetch of the row set's rows).
  const std::uint64_t seed = catch_seed(0x2020);
  INFO("seed " << seed);
  for (const std::uint32_t unroll : {2u, 3u, 4u}) {
    INFO("unroll " << unroll);
    test::SequentialFixture f(toy_insecure(), {}, unroll);
    HostEngine engine(*f.keys.cloud, 1);
    engine.set_bundle(true);
    engine.set_bundle_ready(true);
    const std::vector<fz::LaunchShape> shapes = {
        fz::LaunchShape{1, 1, 2}, fz::LaunchShape{1, 1, 4, 1, 8, fz::every_block_sums}};
    check_every_gate_flow(f, engine, shapes, seed);
    const std::uint32_t steps = fz::bundle_steps(engine.shape());
    REQUIRE(steps > 2);
    for (const std::uint32_t missing : {0u, steps / 2, steps - 1}) {
      INFO("row set " << missing << " of " << steps << " one part short");
      engine.set_bundle_ready(true, missing);
      for (const fz::LaunchShape& shape : shapes) {
        INFO("blocks per cluster " << shape.cluster);
        REQUIRE_THROWS_WITH(check_every_gate_flow(f, engine, {shape}, seed),
                            Catch::Matchers::Contains("parts, the rotation waits for"));
      }
    }
  }
}

TEST_CASE("rotation_factor_quarter: the whole table's factors from its first quarter, the same "
          "doubles",
          "[gpu-host][fused][unroll]") {
  for (std::uint32_t N : {16u, 256u, 1024u, 2048u, 4096u}) {
    INFO("N = " << N);
    const std::vector<k::Complex> unit = gd::unit_roots_complex(N);
    REQUIRE(unit.size() == 2 * N);
    std::size_t differ = 0;
    for (std::uint32_t root : {1u, 3u, 2 * N - 1}) {
      for (std::uint32_t e = 0; e < 2 * N; ++e) {
        const k::Complex full = k::rotation_factor_full(unit.data(), root, e, N);
        const k::Complex quarter = k::rotation_factor_quarter(unit.data(), root, e, N);
        differ += std::memcmp(&full, &quarter, sizeof full) != 0;  // signed zeros too
      }
    }
    CHECK(differ == 0);
  }
}

TEST_CASE("unit_power_quarter_bits and group_factors: the quadrant by sign bits gives the same "
          "doubles; the powers as products the same factors within rounding",
          "[gpu-host][fused][unroll]") {
  for (std::uint32_t N : {16u, 1024u, 2048u}) {
    INFO("N = " << N);
    const std::vector<k::Complex> unit = gd::unit_roots_complex(N);
    std::size_t differ = 0;
    for (std::uint32_t root : {1u, 3u, 2 * N - 1}) {
      for (std::uint32_t e = 0; e < 2 * N; ++e) {
        const k::Complex table = k::rotation_factor_quarter(unit.data(), root, e, N);
        const k::Complex power = k::unit_power_quarter_bits(unit.data(), root, e, N);
        const k::Complex bits{power.re - 1.0, power.im};
        differ += std::memcmp(&table, &bits, sizeof table) != 0;  // signed zeros too
      }
    }
    CHECK(differ == 0);
    // Random roots and masks (each < 2N; the exponents are sums, not reduced).
    Csprng rng = seeded_rng(catch_seed(0x2016) + N);
    auto check_products = [&](auto u) {
      constexpr unsigned U = decltype(u)::value;
      constexpr unsigned G = k::group_ggsws<U>;
      double worst = 0;
      for (int trial = 0; trial < 200; ++trial) {
        const std::uint32_t root = (rng.uniform_u32() % N) * 2 + 1;  // odd
        std::uint32_t masks[U];
        for (unsigned m = 0; m < U; ++m) masks[m] = rng.uniform_u32() % (2 * N);
        const k::GroupExponents<U> e = k::group_exponents<U>([&](unsigned m) { return masks[m]; });
        k::Complex table[G], products[G];
        fz::group_factors<U, false>(unit.data(), root, e, N, table);
        fz::group_factors<U, true>(unit.data(), root, e, N, products);
        for (unsigned g = 0; g < G; ++g) {
          // Each table entry is the factor rounded once.
          const long double angle = std::numbers::pi_v<long double> *
                                    static_cast<long double>((root * e.e[g]) % (2 * N)) / N;
          REQUIRE(std::abs(static_cast<long double>(table[g].re) - (std::cos(angle) - 1)) < 1e-15L);
          REQUIRE(std::abs(static_cast<long double>(table[g].im) - std::sin(angle)) < 1e-15L);
          worst = std::max({worst, std::abs(products[g].re - table[g].re),
                            std::abs(products[g].im - table[g].im)});
        }
      }
      INFO("U = " << U << ", largest difference " << worst);
      CHECK(worst < 1e-15);
    };
    check_products(std::integral_constant<unsigned, 2>{});
    check_products(std::integral_constant<unsigned, 3>{});
  }
  CHECK(fz::factor_products);  // the default build: single bits' powers from the table
  CHECK_FALSE(fz::factor_signbits);
}

TEST_CASE("key bits in threes: the data flow equals the CPU backend on tfhe_lib_128",
          "[gpu-host][fused][unroll]") {
  const std::uint64_t seed = catch_seed(0x2013);
  check_lib128_flow(3, 0, {}, seed);  // the cuFFT engine
  // 1x1, two lanes, c6 (with either summing) and w6: 210 group steps of 7 GGSW each.
  check_lib128_flow(3, 1,
                    {fz::LaunchShape{1, 1}, fz::LaunchShape{1, 1, 1, 2}, fz::LaunchShape{1, 1, 6},
                     fz::LaunchShape{1, 1, 6, 1, 8, fz::every_block_sums},
                     fz::LaunchShape{1, 1, 6, 1, 4}},
                    seed);
}

TEST_CASE("product halves: clusters whose blocks' second half computes half the products give the "
          "CPU backend's words",
          "[gpu-host][fused]") {
  // The program with two halves per cluster block (fused_rotation.hpp, cluster_halves; an A/B
  // build's kernels, docs/gpu.md section 6.22), forced here at every length: owners' and every
  // block's sums, k = 1 and 2, the standard key and keys in pairs and threes, the run-time and
  // the fixed lengths.
  const std::uint64_t seed = catch_seed(0x2014);
  INFO("seed " << seed);
  const std::vector<DataFlowCase> cases = {
      {toy_insecure(), {{1, 1, 2}, {1, 1, 4}, {1, 1, 4, 1, 8, 2}}},
      {toy_k2_insecure(), {{1, 1, 3}, {1, 1, 6}, {1, 1, 6, 1, 8, 2}}},
      {sized_insecure(512, 1), {{1, 1, 2}, {1, 1, 4, 1, 8, 2}}}};
  for (const std::uint32_t unroll : {1u, 2u, 3u}) {
    for (const DataFlowCase& cs : cases) {
      for (const bool fixed : {true, false}) {
        INFO("parameter set " << cs.p.name << ", unroll " << unroll << ", fixed lengths " << fixed);
        test::SequentialFixture f(cs.p, {}, unroll);
        HostEngine engine(*f.keys.cloud, 1);
        engine.set_product_halves(2);
        engine.set_fixed_lengths(fixed);
        check_every_gate_flow(f, engine, cs.shapes, seed);
      }
    }
  }
  // tfhe_lib_128 in threes with c6e, the shape it would run at batch 1.
  check_lib128_flow(3, 1, {fz::LaunchShape{1, 1, 6, 1, 8, fz::every_block_sums}},
                    catch_seed(0x2015), 2);
  // This build's choice: 2 halves for 8-point clusters at fixed lengths where it has them.
  const gd::Shape lib = shape_of(tfhe_lib_128());
  CHECK(fz::cluster_halves(6, 8, lib) == (fz::product_halves ? 2u : 1u));
  CHECK(fz::cluster_halves(6, 4, lib) == 1);  // wide
  CHECK(fz::cluster_halves(1, 8, lib) == 1);  // no cluster
  CHECK(fz::block_threads(fz::LaunchShape{1, 1, 6}, lib) == (fz::product_halves ? 128u : 64u));
  CHECK(fz::cluster_halves(6, 8, shape_of(sized_insecure(4096, 1))) == 1);  // no fixed length
}

TEST_CASE("fused engine: launch shapes, shared memory and the sets it refuses", "[gpu-host][fused]") {
  const gd::Shape tfhe = shape_of(tfhe_lib_128());  // k = 1, N = 1024, l = 3
  CHECK(fz::valid_groups(1, tfhe));
  CHECK(fz::valid_groups(2, tfhe));
  CHECK(fz::valid_groups(6, tfhe));
  CHECK_FALSE(fz::valid_groups(3, tfhe));
  CHECK_FALSE(fz::valid_groups(0, tfhe));
  CHECK(fz::valid_shape({1, 8}, tfhe));
  CHECK_FALSE(fz::valid_shape({1, 9}, tfhe));
  CHECK_FALSE(fz::valid_shape({1, 0}, tfhe));
  CHECK(fz::block_threads({1, 1}, tfhe) == 64);
  CHECK(fz::block_threads({6, 1}, tfhe) == 384);
  CHECK(fz::block_threads({1, 4}, tfhe) == 256);
  // Buffers of 576 complex, then (R > 1) G rows x 2 spectra of 512, then R x 2 x 1024 words,
  // then with one group R x 1024 column words.
  CHECK(fz::block_shared_bytes({2, 1}, tfhe) == 2 * 576 * 16 + 2 * 1024 * 4);
  CHECK(fz::block_shared_bytes({1, 1}, tfhe) == 576 * 16 + 2 * 1024 * 4 + 1024 * 4);
  CHECK(fz::block_stage_bytes({2, 1}, tfhe) == 0);
  CHECK(fz::block_shared_bytes({1, 4}, tfhe) ==
        4 * 576 * 16 + 2 * 512 * 16 + 4 * 2 * 1024 * 4 + 4 * 1024 * 4);
  CHECK(fz::block_accumulator_offset({1, 4}, tfhe) == 4 * 576 * 16 + 2 * 512 * 16);
  CHECK(fz::block_column_offset({1, 4}, tfhe) == 4 * 576 * 16 + 2 * 512 * 16 + 4 * 2 * 1024 * 4);
  CHECK(fz::column_words_shape({1, 4}, tfhe));
  CHECK(fz::column_words_shape({1, 1, 1, 2}, tfhe));
  CHECK_FALSE(fz::column_words_shape({2, 1}, tfhe));
  CHECK_FALSE(fz::column_words_shape({1, 1, 6}, tfhe));
  // An unrolled key's kernels keep none.
  gd::Shape pairs = tfhe;
  pairs.unroll = 2;
  CHECK_FALSE(fz::column_words_shape({1, 1}, pairs));
  CHECK(fz::block_shared_bytes({1, 1}, pairs) == 576 * 16 + 2 * 1024 * 4);
  CHECK(fz::block_shared_bytes({1, 1, 1, 2}, pairs) == 2 * 576 * 16 + 2 * 2 * 1024 * 4);
  // Two rotations per thread: k = 1, one group and one rotation slot per block; a buffer and
  // an accumulator per lane, the threads of one rotation.
  const fz::LaunchShape lanes{1, 1, 1, 2};
  CHECK(fz::valid_shape(lanes, tfhe));
  CHECK(fz::valid_lanes(2, tfhe));
  CHECK_FALSE(fz::valid_lanes(3, tfhe));
  CHECK_FALSE(fz::valid_lanes(0, tfhe));
  CHECK_FALSE(fz::valid_shape({1, 1, 1, 3}, tfhe));
  CHECK_FALSE(fz::valid_shape({2, 1, 1, 2}, tfhe));
  CHECK_FALSE(fz::valid_shape({1, 2, 1, 2}, tfhe));
  CHECK_FALSE(fz::valid_shape({1, 1, 2, 2}, tfhe));
  CHECK_FALSE(fz::valid_shape(lanes, shape_of(toy_k2_insecure())));  // k = 2: 255 registers
  CHECK(fz::block_threads(lanes, tfhe) == 64);
  CHECK(fz::block_rotations(lanes) == 2);
  CHECK(fz::block_rotations({1, 4}) == 4);
  CHECK(fz::block_shared_bytes(lanes, tfhe) == 2 * 576 * 16 + 2 * 2 * 1024 * 4 + 2 * 1024 * 4);
  CHECK(fz::block_accumulator_offset(lanes, tfhe) == 2 * 576 * 16);
  // The key stage: one group and one slot (one or two lanes), no cluster, the standard key at a
  // fixed length; the stage (a row's K1 spectra) after the buffers, no column words, and the
  // mbarrier's 16 bytes at the end: 6 blocks of 1x1 and 4 of two lanes in an H100's 228 KB
  // with a KB reserved per block (docs/gpu.md section 6.34).
  const fz::LaunchShape staged{1, 1, 1, 1, 8, fz::owner_sums, fz::key_stage};
  const fz::LaunchShape staged_lanes{1, 1, 1, 2, 8, fz::owner_sums, fz::key_stage};
  CHECK(fz::valid_shape(staged, tfhe));
  CHECK(fz::valid_shape(staged_lanes, tfhe));
  CHECK(fz::stage_fits(staged, tfhe));
  CHECK_FALSE(fz::valid_shape({1, 1, 1, 1, 8, fz::owner_sums, 2}, tfhe));         // stage 1 only
  CHECK_FALSE(fz::valid_shape({2, 1, 1, 1, 8, fz::owner_sums, fz::key_stage}, tfhe));  // G = 2
  CHECK_FALSE(fz::valid_shape({1, 2, 1, 1, 8, fz::owner_sums, fz::key_stage}, tfhe));  // R = 2
  CHECK_FALSE(fz::valid_shape({1, 1, 2, 1, 8, fz::owner_sums, fz::key_stage}, tfhe));  // cluster
  CHECK_FALSE(fz::valid_shape(staged, pairs));                                     // unrolled
  CHECK_FALSE(fz::valid_shape(staged, shape_of(toy_insecure())));                  // N = 256
  CHECK_FALSE(fz::valid_shape(staged_lanes, shape_of(toy_k2_insecure())));         // k = 2 lanes
  CHECK_FALSE(fz::column_words_shape(staged, tfhe));
  CHECK(fz::block_stage_bytes(staged, tfhe) == 2 * 512 * 16);
  CHECK(fz::block_accumulator_offset(staged, tfhe) == 576 * 16 + 2 * 512 * 16);
  CHECK(fz::block_signal_offset(staged, tfhe) == 576 * 16 + 2 * 512 * 16 + 2 * 1024 * 4);
  CHECK(fz::block_shared_bytes(staged, tfhe) == 576 * 16 + 2 * 512 * 16 + 2 * 1024 * 4 + 16);
  CHECK(fz::block_shared_bytes(staged_lanes, tfhe) ==
        2 * 576 * 16 + 2 * 512 * 16 + 2 * 2 * 1024 * 4 + 16);
  CHECK(6 * (fz::block_shared_bytes(staged, tfhe) + 1024) <= 228 * 1024);
  CHECK(4 * (fz::block_shared_bytes(staged_lanes, tfhe) + 1024) <= 228 * 1024);
  {
    std::vector<unsigned char> base(fz::block_shared_bytes(staged, tfhe));
    const fz::BlockMemory mem = fz::block_memory(base.data(), staged, tfhe);
    CHECK(mem.column == nullptr);
    CHECK(reinterpret_cast<unsigned char*>(mem.stage) == base.data() + 576 * 16);
    CHECK(reinterpret_cast<unsigned char*>(mem.signal) ==
          base.data() + fz::block_signal_offset(staged, tfhe));
    CHECK(fz::block_memory(base.data(), {1, 1}, tfhe).signal == nullptr);
  }
  // Clusters: k+1 or (k+1)l blocks up to 8, one group and one rotation per block; a block
  // holds its exchange buffer, k+1 partial products and one accumulator column.
  CHECK(fz::valid_shape({1, 1, 2}, tfhe));
  CHECK(fz::valid_shape({1, 1, 6}, tfhe));
  CHECK_FALSE(fz::valid_shape({1, 1, 3}, tfhe));
  CHECK_FALSE(fz::valid_shape({2, 1, 2}, tfhe));
  CHECK_FALSE(fz::valid_shape({1, 2, 6}, tfhe));
  CHECK_FALSE(fz::valid_shape({1, 1, 0}, tfhe));
  gd::Shape deep = tfhe;
  deep.bk_level_count = 5;  // (k+1)l = 10: above the portable cluster size
  CHECK_FALSE(fz::valid_cluster(10, deep));
  CHECK(fz::valid_cluster(2, deep));
  CHECK(fz::preferred_cluster(deep) == 2);
  CHECK(fz::preferred_cluster(tfhe) == 6);
  CHECK(fz::block_threads({1, 1, 6}, tfhe) == 64);
  // A cluster block of C: its exchange buffer, an inbox of C partial products (two with
  // C = (k+1)l, where each block decomposes one column: section 6.16), a copy of both columns,
  // a key stage of one row (K1 spectra), four mbarriers.
  constexpr std::size_t stage = 2 * 512 * 16;
  CHECK(fz::cluster_inboxes(tfhe, 6) == 2);
  CHECK(fz::cluster_inboxes(tfhe, 2) == 1);  // both blocks decompose both columns
  CHECK(fz::block_shared_bytes({1, 1, 6}, tfhe) ==
        576 * 16 + 2 * 6 * 512 * 16 + 2 * 1024 * 4 + stage + 32);
  CHECK(fz::block_shared_bytes({1, 1, 2}, tfhe) ==
        576 * 16 + 2 * 512 * 16 + 2 * 1024 * 4 + stage + 32);
  CHECK(fz::cluster_accumulator_offset(tfhe, 6) == 576 * 16 + 2 * 6 * 512 * 16);
  CHECK(fz::cluster_stage_offset(tfhe, 6) == 576 * 16 + 2 * 6 * 512 * 16 + 2 * 1024 * 4);
  CHECK(fz::cluster_stage_offset(tfhe, 6) % 16 == 0);  // the bulk copies' alignment
  CHECK(fz::cluster_signals_offset(tfhe, 6) ==
        576 * 16 + 2 * 6 * 512 * 16 + 2 * 1024 * 4 + stage);
  CHECK(fz::cluster_signals_offset(tfhe, 6) % 8 == 0);
  // Who owns, decomposes and receives which column. c6 (l = 3): block b's row decomposes
  // column b / 3; blocks 0 and 3 own columns 0 and 1 and send each to the two other blocks of
  // its rows, so blocks 0 and 3 receive nothing and the others one column.
  CHECK(fz::column_owner(0, 6, tfhe) == 0);
  CHECK(fz::column_owner(1, 6, tfhe) == 3);
  CHECK(fz::owned_column(3, 6, tfhe) == 1);
  CHECK(fz::owned_column(1, 6, tfhe) == 2);  // none
  for (std::uint32_t b = 0; b < 6; ++b) {
    INFO("block " << b);
    CHECK(fz::decomposes_column(b, b / 3, 6, tfhe));
    CHECK_FALSE(fz::decomposes_column(b, 1 - b / 3, 6, tfhe));
    CHECK(fz::received_column_bytes(b, 6, 2, tfhe) == (b % 3 == 0 ? 0u : 1024u * 4));
    // One inbox buffer: every owner sends its column to every other block.
    CHECK(fz::received_column_bytes(b, 6, 1, tfhe) == (b % 3 == 0 ? 1u : 2u) * 1024 * 4);
  }
  // Who sums each product: its column's owner (block 0 or 3), and nothing else changes.
  for (std::uint32_t b = 0; b < 6; ++b) {
    INFO("block " << b);
    const fz::ClusterRoles owners = fz::cluster_roles(tfhe, 6, b);
    CHECK(owners.summers_of(0) == 1u);
    CHECK(owners.summers_of(1) == 1u << 3);
    CHECK(owners.summed == fz::owned_column(b, 6, tfhe));
    CHECK(owners.received_bytes == fz::received_column_bytes(b, 6, 2, tfhe));
    CHECK(owners.receivers == (b == 0 ? 6u : b == 3 ? 48u : 0u));
    // Every block sums the column its row decomposes (LaunchShape::sums = 2, section 6.18):
    // product c goes to the three blocks of column c, and no column is sent.
    const fz::ClusterRoles every = fz::cluster_roles(tfhe, 6, b, fz::every_block_sums);
    CHECK(every.summers_of(0) == 7u);
    CHECK(every.summers_of(1) == 56u);
    CHECK(every.summed == b / 3);
    CHECK(every.owned == owners.owned);  // the owners still write the columns out
    CHECK(every.inboxes == 2);
    CHECK(every.receivers == 0);
    CHECK(every.received_bytes == 0);
  }
  CHECK(fz::every_block_sums_fit(6, tfhe));
  CHECK_FALSE(fz::every_block_sums_fit(2, tfhe));  // blocks of three rows, two columns each
  CHECK(fz::valid_shape({1, 1, 6, 1, 8, fz::every_block_sums}, tfhe));
  CHECK(fz::valid_shape({1, 1, 6, 1, 4, fz::every_block_sums}, tfhe));
  CHECK_FALSE(fz::valid_shape({1, 1, 2, 1, 8, fz::every_block_sums}, tfhe));
  CHECK_FALSE(fz::valid_shape({1, 1, 1, 1, 8, fz::every_block_sums}, tfhe));
  CHECK_FALSE(fz::valid_shape({1, 1, 6, 1, 8, 0}, tfhe));
  CHECK_FALSE(fz::valid_shape({1, 1, 6, 1, 8, 3}, tfhe));
  // A cluster whose roles cannot be every block's keeps the owners' (c2).
  CHECK(fz::cluster_roles(tfhe, 2, 1, fz::every_block_sums).summers_of(1) == 2u);
  CHECK(fz::cluster_roles(tfhe, 2, 1, fz::every_block_sums).received_bytes == 1024 * 4);
  // c2: blocks 0 and 1 own columns 0 and 1 and decompose both.
  CHECK(fz::column_owner(1, 2, tfhe) == 1);
  CHECK(fz::received_column_bytes(0, 2, 1, tfhe) == 1024 * 4);
  // Two inbox buffers where they fit in 227 KiB: N = 2048, k = 2, C = 6 keeps one (two would
  // take 280 KiB).
  const gd::Shape n2048 = shape_of(sized_insecure(2048, 2));
  CHECK(fz::cluster_inboxes(n2048, 6) == 1);
  CHECK_FALSE(fz::every_block_sums_fit(6, n2048));  // which every block's sums need
  CHECK(fz::cluster_block_bytes_with(n2048, 6, 2) > fz::cluster_shared_room);
  CHECK(fz::cluster_block_bytes(n2048, 6) <= fz::cluster_shared_room);
  // An unrolled key's pair steps read a row of 3 GGSW samples: a stage three times as large.
  gd::Shape unrolled = tfhe;
  unrolled.unroll = 2;
  CHECK(fz::cluster_signals_offset(unrolled, 6) - fz::cluster_stage_offset(unrolled, 6) ==
        3 * stage);
  // Key bits in threes: a row of 7 GGSW samples, 112 KiB of stage; c6 keeps its two inbox
  // buffers (9,216 + 2 x 49,152 + 8,192 + 114,688 + 32 = 230,432 bytes of 232,448), so every
  // block may sum its column too.
  gd::Shape threes = tfhe;
  threes.unroll = 3;
  CHECK(fz::cluster_stage_ggsws(threes) == 7);
  CHECK(fz::cluster_signals_offset(threes, 6) - fz::cluster_stage_offset(threes, 6) == 7 * stage);
  CHECK(fz::cluster_inboxes(threes, 6) == 2);
  CHECK(fz::cluster_block_bytes(threes, 6) == 230432);
  CHECK(fz::every_block_sums_fit(6, threes));
  // N = 2048, k = 1, in threes: the stage alone (224 KiB) leaves no room for a cluster's
  // block; the automatic shape then takes no cluster.
  gd::Shape threes2048 = shape_of(sized_insecure(2048, 1));
  threes2048.unroll = 3;
  CHECK(fz::cluster_block_bytes(threes2048, 2) > fz::cluster_shared_room);
  CHECK(fz::choose_shape(threes2048, 1, 1024, fz::cluster_shared_room, 132 * 1024, 66).cluster ==
        1);
  // Wide clusters: 4 points per thread, twice the threads, the same shared memory; clusters
  // only, of the fixed lengths N = 512 .. 2048.
  const fz::LaunchShape wide6{1, 1, 6, 1, 4};
  CHECK(fz::valid_shape(wide6, tfhe));
  CHECK(fz::valid_shape({1, 1, 2, 1, 4}, tfhe));
  CHECK(fz::block_threads(wide6, tfhe) == 128);
  CHECK(fz::block_shared_bytes(wide6, tfhe) == fz::block_shared_bytes({1, 1, 6}, tfhe));
  CHECK_FALSE(fz::valid_shape({1, 1, 1, 1, 4}, tfhe));  // no cluster
  CHECK_FALSE(fz::valid_shape({1, 1, 3, 1, 4}, tfhe));
  CHECK_FALSE(fz::valid_shape({2, 1, 2, 1, 4}, tfhe));
  CHECK_FALSE(fz::valid_shape({1, 1, 2, 2, 4}, tfhe));
  CHECK_FALSE(fz::valid_shape({1, 1, 6, 1, 2}, tfhe));
  CHECK_FALSE(fz::valid_shape({1, 1, 6, 1, 16}, tfhe));
  CHECK_FALSE(fz::valid_shape({1, 1, 2, 1, 4}, shape_of(toy_insecure())));  // N = 32: no kernel
  CHECK(fz::valid_wide(shape_of(gpu::test::sized_insecure(512, 1))));
  CHECK(fz::valid_wide(shape_of(gpu::test::sized_insecure(2048, 2))));
  CHECK_FALSE(fz::valid_wide(shape_of(gpu::test::sized_insecure(4096, 1))));
  CHECK(fz::unsupported_reason(tfhe) == nullptr);
  CHECK(fz::unsupported_reason(shape_of(default_128())) == nullptr);
  CHECK(fz::unsupported_reason(shape_of(toy_insecure())) == nullptr);
  gd::Shape wide = tfhe;
  wide.k = 3;
  CHECK(std::string(fz::unsupported_reason(wide)).find("k+1 = 2 or 3") != std::string::npos);
  gd::Shape big = tfhe;
  big.N = 8192;
  CHECK(std::string(fz::unsupported_reason(big)).find("N = 16 .. 4096") != std::string::npos);

  // Small batches take the most threads per rotation, full devices one group and one
  // rotation per block (measured fastest on an H100).
  auto choose = [&](std::uint64_t rotations, std::uint32_t threads, std::size_t shared) {
    const fz::LaunchShape b = fz::choose_shape(tfhe, rotations, threads, shared, 132 * 1024);
    return std::pair<std::uint32_t, std::uint32_t>{b.groups, b.rotations};
  };
  using P = std::pair<std::uint32_t, std::uint32_t>;
  CHECK(choose(1, 1024, 227 * 1024) == P{6, 1});
  CHECK(choose(352, 1024, 227 * 1024) == P{6, 1});   // 352 x 384 threads = 132 x 1024
  CHECK(choose(353, 1024, 227 * 1024) == P{2, 1});
  CHECK(choose(1056, 1024, 227 * 1024) == P{2, 1});
  CHECK(choose(1057, 1024, 227 * 1024) == P{1, 1});
  CHECK(choose(1 << 16, 1024, 227 * 1024) == P{1, 1});
  // The kernel's register limit and the shared memory rule shapes out.
  CHECK(choose(1, 256, 227 * 1024) == P{2, 1});
  CHECK(choose(1, 1024, 30 * 1024) == P{2, 1});  // G = 6 needs 62 KB
  CHECK(choose(1, 1024, 20 * 1024) == P{1, 1});  // G = 2 needs 26 KB
  // With room for 22 clusters of 6 blocks (132 multiprocessors): chunks of up to 22
  // rotations take a cluster each; larger ones, or no room (no clusters), as before.
  auto cluster_of = [&](std::uint64_t rotations, std::uint64_t room) {
    return fz::choose_shape(tfhe, rotations, 1024, 227 * 1024, 132 * 1024, room).cluster;
  };
  CHECK(cluster_of(1, 22) == 6);
  CHECK(cluster_of(22, 22) == 6);
  CHECK(cluster_of(23, 22) == 1);
  CHECK(cluster_of(1, 0) == 1);
  CHECK(fz::choose_shape(tfhe, 23, 1024, 227 * 1024, 132 * 1024, 22).groups == 6);
  // Bundled keys: clusters in two waves for pairs, three for threes (docs/gpu.md 6.31).
  CHECK(fz::bundled_cluster_waves(1) == 1);
  CHECK(fz::bundled_cluster_waves(2) == 2);
  CHECK(fz::bundled_cluster_waves(3) == 3);
  CHECK(fz::bundled_cluster_waves(4) == 1);
  for (const std::uint32_t waves : {2u, 3u}) {
    INFO("waves " << waves);
    const auto waved = [&](std::uint64_t rotations) {
      return fz::choose_shape(tfhe, rotations, 1024, 227 * 1024, 132 * 1024, 20, 0, waves);
    };
    CHECK(waved(20).cluster == 6);
    CHECK(waved(21).cluster == 6);
    CHECK(waved(20 * waves).cluster == 6);
    CHECK(waved(20 * waves).sums == fz::every_block_sums);
    CHECK(waved(20 * waves + 1).cluster == 1);
    CHECK(waved(20 * waves + 1).groups == 6);
    CHECK(fz::choose_shape(tfhe, 40, 1024, 227 * 1024, 132 * 1024, 0, 0, waves).cluster == 1);
  }
  CHECK(fz::choose_shape(tfhe, 1, 1024, 20 * 1024, 132 * 1024, 22).cluster == 1);  // 30 KB
  // A chunk that takes a cluster takes 8 points per thread and every block summing its
  // column where that fits (two inbox buffers, (k+1)l blocks); wide clusters only when forced.
  auto cluster_shape = [&](const gd::Shape& s, std::uint64_t rotations, std::size_t shared) {
    return fz::choose_shape(s, rotations, 1024, shared, 132 * 1024, 22);
  };
  for (const std::uint64_t rotations : {1, 8, 9, 22}) {
    const fz::LaunchShape b = cluster_shape(tfhe, rotations, 227 * 1024);
    CHECK(b.cluster == 6);
    CHECK(b.points == fz::points_per_thread);
    CHECK(b.sums == fz::every_block_sums);
    CHECK(fz::valid_shape(b, tfhe));
  }
  CHECK(cluster_shape(tfhe, 23, 227 * 1024).sums == fz::owner_sums);  // no cluster
  // N = 2048, k = 2: c6 with one inbox buffer (above), so the owners sum.
  const fz::LaunchShape n2048_chosen = cluster_shape(n2048, 1, fz::cluster_shared_room);
  CHECK(n2048_chosen.cluster == 6);
  CHECK(n2048_chosen.sums == fz::owner_sums);
  // Threes on tfhe_lib_128: c6 with two inbox buffers fits, so every block sums.
  CHECK(cluster_shape(threes, 1, fz::cluster_shared_room).sums == fz::every_block_sums);
  // A chunk that 1x1 cannot hold resident at once (here 132 x 1024 threads: 2,112 rotations
  // of 64 threads) takes two lanes where the lane kernel runs (room > 0); one that fits, or
  // no lane kernel, keeps 1x1; the G > 1 shapes and clusters come first.
  auto lanes_of = [&](const gd::Shape& s, std::uint64_t rotations, std::size_t shared,
                      std::uint64_t lane_room) {
    const fz::LaunchShape b = fz::choose_shape(s, rotations, 1024, shared, 132 * 1024, 22, lane_room);
    if (b.lanes != 1) CHECK((b.groups == 1 && b.rotations == 1 && b.cluster == 1));
    return b.lanes;
  };
  CHECK(fz::block_threads({1, 1}, tfhe) == 64);
  CHECK(lanes_of(tfhe, 2113, 227 * 1024, 1056) == 2);
  CHECK(lanes_of(tfhe, 1 << 16, 227 * 1024, 1056) == 2);
  CHECK(lanes_of(tfhe, 1 << 16, 227 * 1024, 1) == 2);  // the room only says it runs
  CHECK(lanes_of(tfhe, 2112, 227 * 1024, 1056) == 1);  // one wave of 1x1
  CHECK(choose(2112, 1024, 227 * 1024) == P{1, 1});
  CHECK(lanes_of(tfhe, 1 << 16, 227 * 1024, 0) == 1);
  CHECK(lanes_of(tfhe, 1056, 227 * 1024, 1056) == 1);  // G = 2
  CHECK(lanes_of(tfhe, 1, 227 * 1024, 1056) == 1);     // a cluster
  // Two lanes need two exchange buffers, two accumulators and two lanes of column words: 42 KB
  // for tfhe_lib_128.
  CHECK(fz::block_shared_bytes({1, 1, 1, 2}, tfhe) ==
        2 * 576 * 16 + 2 * 2 * 1024 * 4 + 2 * 1024 * 4);
  CHECK(lanes_of(tfhe, 1 << 16, 30 * 1024, 1056) == 1);
  gd::Shape k2 = tfhe;
  k2.k = 2;
  CHECK(lanes_of(k2, 1 << 16, 227 * 1024, 1056) == 1);
}
