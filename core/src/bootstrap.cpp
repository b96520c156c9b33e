// Batched gate bootstrapping (TFHE, J. Cryptology 2020, algorithm 3 "bootstrapping",
// CMUX-based blind rotation, section 4.2 sample extraction, algorithm 1 key switching).
#include "torusgate/core/bootstrap.hpp"

#include <algorithm>
#include <cmath>

#include "torusgate/core/error.hpp"
#include "torusgate/core/prefetch.hpp"
#include "torusgate/core/vec8.hpp"

namespace torusgate {

BootstrappingKeyFourier::BootstrappingKeyFourier(const BootstrappingKey& bk,
                                                 const NegacyclicFft& fft)
    : params_(bk.parameters()), engine_(fft.name()), unroll_(bk.unroll()),
      ggsw_count_(bk.ggsw_count()) {
  const std::size_t N = params_.polynomial_size, k = params_.glwe_dimension;
  EXPECTS(fft.polynomial_size() == N,
          "BootstrappingKeyFourier: FFT engine is for N=" + std::to_string(fft.polynomial_size()) +
              " but parameter set '" + params_.name + "' has N=" + std::to_string(N));
  if (unroll_ > 1) {
    EXPECTS(!fft.custom_arithmetic(),
            "BootstrappingKeyFourier: an unrolled bootstrapping key (unroll " +
                std::to_string(unroll_) + ") needs a double FFT engine, but engine '" +
                fft.name() + "' has custom arithmetic (use the standard key, unroll 1, with it)");
    roots_ = spectrum_root_exponents(fft);
  }
  const std::size_t polys = std::size_t{params_.ggsw_row_count()} * (k + 1);
  ggsw_doubles_ = polys * N;  // each spectrum is 2M = N doubles
  data_.resize(ggsw_count_ * ggsw_doubles_);
  const std::size_t M = N / 2;
  std::vector<double> spectrum(N);
  for (std::size_t i = 0; i < ggsw_count_; ++i) {
    const auto g = bk.ggsw(i);
    double* out = data_.data() + i * ggsw_doubles_;
    for (std::size_t q = 0; q < polys; ++q) {
      fft.forward(g.subspan(q * N, N), spectrum);
      // Blocked layout: [point block b of 8][polynomial q][8 real parts, 8 imaginary parts].
      for (std::size_t b = 0; b < M / 8; ++b) {
        double* dst = out + (b * polys + q) * 16;
        for (std::size_t t = 0; t < 8; ++t) {
          dst[t] = spectrum[b * 8 + t];
          dst[8 + t] = spectrum[M + b * 8 + t];
        }
      }
    }
  }
}

void BootstrappingKeyFourier::spectrum(std::size_t i, std::size_t q, std::span<double> out) const {
  const std::size_t N = params_.polynomial_size, M = N / 2;
  const std::size_t polys = std::size_t{params_.ggsw_row_count()} * (params_.glwe_dimension + 1);
  EXPECTS(i < ggsw_count_ && q < polys,
          "BootstrappingKeyFourier::spectrum: GGSW " + std::to_string(i) + ", polynomial " +
              std::to_string(q) + " but the key has " + std::to_string(ggsw_count_) +
              " GGSW samples of " + std::to_string(polys) + " polynomials");
  EXPECTS(out.size() == N, "BootstrappingKeyFourier::spectrum: output has " +
                               std::to_string(out.size()) + " slots but expected N=" +
                               std::to_string(N));
  const double* g = ggsw(i);
  for (std::size_t b = 0; b < M / 8; ++b) {
    const double* src = g + (b * polys + q) * 16;
    std::copy(src, src + 8, out.data() + b * 8);
    std::copy(src + 8, src + 16, out.data() + M + b * 8);
  }
}

namespace {

// One external product in the Fourier domain for `gates` accumulators (split spectra of M
// points): product_t[c] = sum_q digits_t[q] * key[q][c] for q < rows, c < k1. With a factor
// (unrolled keys): product_t[c] (= or +=) factor_t * sum_q ..., slot-wise.
struct ExternalProduct {
  const double* digits;        // gate t, row q at digits + t*digit_stride + q*stride
  std::size_t digit_stride;
  const double* key;           // one GGSW in the blocked layout of BootstrappingKeyFourier
  std::size_t rows, k1, M;
  double* product;             // gate t, column c at product + t*product_stride + c*stride
  std::size_t product_stride;
  std::size_t stride;          // doubles from one spectrum of a gate to the next (>= 2M)
  std::size_t begin, end;      // the points computed: [begin, end), multiples of 8
  const double* factor = nullptr;  // gate t's 2M split slots at factor + t*factor_stride
  std::size_t factor_stride = 0;
  bool accumulate = false;         // with a factor: add to product instead of storing
};

// G gates at once on vectors of W points: each key block is read once for all of them
// (sequentially), and the accumulators of W points stay in registers across all rows. K1 = 0:
// k1 known at run time only (fallback). Factor: the rotation of an unrolled key's step,
// applied in registers. Every W does the same operations on each point in the same order, so
// the products are the same words at every width.
template <unsigned W, std::size_t K1, std::size_t G, bool Factor>
void external_product_fourier(const ExternalProduct& x) {
  using V = VecN<W>;
  constexpr std::size_t kMax = K1 == 0 ? 9 : K1;
  const std::size_t cols = K1 == 0 ? x.k1 : K1;
  const std::size_t M = x.M, stride = x.stride;
  const std::size_t block = 16 * x.rows * cols;  // doubles per key block of 8 points
  for (std::size_t j = x.begin; j < x.end; j += W) {
    // Points j..j+W-1 sit at offset j % 8 of key block j / 8's real and imaginary parts.
    const double* key = x.key + (j / 8) * block + j % 8;
    V acc_re[G][kMax], acc_im[G][kMax];
    for (std::size_t t = 0; t < G; ++t) {
      for (std::size_t c = 0; c < cols; ++c) acc_re[t][c] = acc_im[t][c] = V{};
    }
    for (std::size_t q = 0; q < x.rows; ++q) {
      V dr[G], di[G];
      for (std::size_t t = 0; t < G; ++t) {
        dr[t] = loadn<W>(x.digits + t * x.digit_stride + q * stride + j);
        di[t] = loadn<W>(x.digits + t * x.digit_stride + q * stride + M + j);
      }
      for (std::size_t c = 0; c < cols; ++c, key += 16) {
        const V kr = loadn<W>(key);
        const V ki = loadn<W>(key + 8);
        for (std::size_t t = 0; t < G; ++t) {  // four fused multiply-adds
          acc_re[t][c] += dr[t] * kr;
          acc_re[t][c] -= di[t] * ki;
          acc_im[t][c] += dr[t] * ki;
          acc_im[t][c] += di[t] * kr;
        }
      }
    }
    for (std::size_t t = 0; t < G; ++t) {
      V fr{}, fi{};
      if constexpr (Factor) {
        fr = loadn<W>(x.factor + t * x.factor_stride + j);
        fi = loadn<W>(x.factor + t * x.factor_stride + M + j);
      }
      for (std::size_t c = 0; c < cols; ++c) {
        double* re = x.product + t * x.product_stride + c * stride + j;
        double* im = re + M;
        if constexpr (Factor) {
          V pr = acc_re[t][c] * fr - acc_im[t][c] * fi;
          V pi = acc_re[t][c] * fi + acc_im[t][c] * fr;
          if (x.accumulate) {
            pr += loadn<W>(re);
            pi += loadn<W>(im);
          }
          storen<W>(re, pr);
          storen<W>(im, pi);
        } else {
          storen<W>(re, acc_re[t][c]);
          storen<W>(im, acc_im[t][c]);
        }
      }
    }
  }
}

// Gates per pass for k1 = K1 on this build's vectors: as many as keep a pass's accumulators
// (2 K1 per gate), one row's digits (2 per gate) and a key point pair in the vector registers
// (32 with AVX-512, 16 with AVX or SSE2). The AVX-512 build keeps 4 gates at k1 = 3 too (34
// of 32: a small spill, as measured so far). K1 = 0 (larger k): one gate a pass.
template <std::size_t K1>
constexpr std::size_t pass_gates() {
  if constexpr (K1 == 0) return 1;
  else if constexpr (native_vector_doubles == 8) return 4;
  else return (16 - 2) / (2 * K1 + 2);
}

// One pass of `gates` (1 to G) gates: the kernel for exactly that many.
template <std::size_t K1, std::size_t G, bool Factor>
void external_product_pass(const ExternalProduct& x, std::size_t gates) {
  if constexpr (G > 1) {
    if (gates < G) return external_product_pass<K1, G - 1, Factor>(x, gates);
  }
  external_product_fourier<native_vector_doubles, K1, G, Factor>(x);
}

// `gates` gates in passes of at most pass_gates<K1>(): pass p takes gates from Pass p on.
template <std::size_t K1, bool Factor>
void external_product_passes(const ExternalProduct& x, std::size_t gates) {
  constexpr std::size_t Pass = pass_gates<K1>();
  for (std::size_t first = 0; first < gates; first += Pass) {
    ExternalProduct pass = x;
    pass.digits += first * x.digit_stride;
    pass.product += first * x.product_stride;
    if constexpr (Factor) pass.factor += first * x.factor_stride;
    external_product_pass<K1, Pass, Factor>(pass, std::min(Pass, gates - first));
  }
}

template <std::size_t K1>
void external_product_fourier_group(const ExternalProduct& x, std::size_t gates) {
  if (x.factor != nullptr) return external_product_passes<K1, true>(x, gates);
  external_product_passes<K1, false>(x, gates);
}

// External products of `gates` (at most BlindRotator::group_size) digit sets with one GGSW.
void external_product_fourier(const ExternalProduct& x, std::size_t gates) {
  switch (x.k1) {
    case 2: return external_product_fourier_group<2>(x, gates);
    case 3: return external_product_fourier_group<3>(x, gates);
    default: return external_product_fourier_group<0>(x, gates);  // larger k: one gate a pass
  }
}

}  // namespace

BlindRotator::BlindRotator(const BootstrappingKeyFourier& key, const NegacyclicFft& fft,
                           std::size_t max_batch)
    : key_(key), fft_(fft), params_(key.parameters()), max_batch_(max_batch),
      gadget_(params_.bk_base_log, params_.bk_level_count) {
  EXPECTS(max_batch >= 1, "BlindRotator: max_batch=0 but expected at least 1");
  EXPECTS(fft.polynomial_size() == params_.polynomial_size,
          "BlindRotator: FFT engine is for N=" + std::to_string(fft.polynomial_size()) +
              " but the key has N=" + std::to_string(params_.polynomial_size));
  EXPECTS(fft.name() == key.engine(), "BlindRotator: the key's spectra were made by engine '" +
                                          key.engine() + "' but this rotator runs engine '" +
                                          fft.name() + "' (spectra are engine-specific)");
  const std::size_t N = params_.polynomial_size, k1 = params_.glwe_dimension + 1;
  const std::size_t rows = params_.ggsw_row_count();
  accumulators_.resize(max_batch * k1 * N);
  powers_.resize(max_batch * params_.lwe_dimension);
  rotated_.resize(group_size * k1 * N);
  const std::size_t S = spectrum_stride();
  digit_spectra_.resize(group_size * rows * S);
  product_spectra_.resize(group_size * k1 * S);
  if (fft.custom_arithmetic()) key_spectra_.resize(rows * k1 * N);
  if (key.unroll() > 1) {
    const auto unit = unit_roots_split(params_.polynomial_size);
    unit_roots_.assign(unit.begin(), unit.end());
    factors_.resize(group_size * unroll_group_ggsws(key.unroll()) * S);
  }
}

void BlindRotator::external_product_custom(const Group& g, const TeamPart& part) {
  const std::size_t N = params_.polynomial_size, k1 = params_.glwe_dimension + 1;
  const std::size_t S = spectrum_stride();
  const std::size_t rows = params_.ggsw_row_count();
  for (std::size_t t = 0; t < g.gates; ++t) {
    for (std::size_t c = 0; c < k1; ++c) {
      if (!owns(part, g, t, c)) continue;
      std::span<double> product(product_spectra_.data() + (t * k1 + c) * S, N);
      std::fill(product.begin(), product.end(), 0.0);  // zero words in every engine
      for (std::size_t q = 0; q < rows; ++q) {
        fft_.multiply_add(
            std::span<const double>(digit_spectra_.data() + (t * rows + q) * S, N),
            std::span<const double>(key_spectra_.data() + (q * k1 + c) * N, N), product);
      }
    }
  }
}

void BlindRotator::add_products(const Group& g, const TeamPart& part) {
  const std::size_t N = params_.polynomial_size, k1 = params_.glwe_dimension + 1;
  const std::size_t S = spectrum_stride();
  for (std::size_t t = 0; t < g.gates; ++t) {
    for (std::size_t c = 0; c < k1; ++c) {
      if (!owns(part, g, t, c)) continue;
      fft_.inverse_add(std::span<const double>(product_spectra_.data() + (t * k1 + c) * S, N),
                       std::span<Torus32>(g.accs[t] + c * N, N));
    }
  }
}

void BlindRotator::decompose_column(const Torus32* poly, std::size_t t, std::size_t c) {
  const std::size_t N = params_.polynomial_size, S = spectrum_stride();
  const std::size_t l = params_.bk_level_count, rows = (params_.glwe_dimension + 1) * l;
  fft_.forward_decomposed(
      std::span<const Torus32>(poly, N), gadget_,
      std::span<double>(digit_spectra_.data() + (t * rows + c * l) * S, (l - 1) * S + N), S);
}

void BlindRotator::cmux_group(std::size_t i, const Group& g, const TeamPart& part) {
  // ACC_t += BK_i [x] ((X^power_t - 1) ACC_t): the CMUX that multiplies ACC_t by
  // X^(power_t * s_i), for up to group_size accumulators sharing the reads of GGSW i.
  const std::size_t N = params_.polynomial_size, k1 = params_.glwe_dimension + 1;
  const std::size_t S = spectrum_stride();
  const std::size_t l = params_.bk_level_count, rows = k1 * l;
  for (std::size_t t = 0; t < g.gates; ++t) {
    const std::uint32_t power = g.powers[t];
    for (std::size_t c = 0; c < k1; ++c) {
      if (!owns(part, g, t, c)) continue;
      const Torus32* a = g.accs[t] + c * N;
      // A team's members each need their own scratch; a lone thread reuses one column's.
      Torus32* r = rotated_.data() + (part.members > 1 ? t * k1 + c : c) * N;
      // (X^power a)[j] = a[j - power] for j >= power (mod 2N sign rules), minus a[j].
      const bool negate = power >= N;
      const std::size_t s = negate ? power - N : power;
      const Torus32 sign_hi = negate ? Torus32(-1) : Torus32(1);  // j >= s: a[j-s] * sign_hi
      for (std::size_t j = 0; j < s; ++j) r[j] = Torus32{0} - sign_hi * a[j + N - s] - a[j];
      for (std::size_t j = s; j < N; ++j) r[j] = sign_hi * a[j - s] - a[j];
      decompose_column(r, t, c);
    }
  }
  if (!key_spectra_.empty() && part.member == 0) {
    for (std::size_t q = 0; q < rows * k1; ++q) {
      key_.spectrum(i, q, std::span<double>(key_spectra_.data() + q * N, N));
    }
  }
  part.sync();  // every digit spectrum (and the custom engines' key) written
  if (key_spectra_.empty()) {
    ExternalProduct x{digit_spectra_.data(), rows * S, key_.ggsw(i), rows, k1, N / 2,
                      product_spectra_.data(), k1 * S, S, part.begin(N / 2, 8), part.end(N / 2, 8)};
    external_product_fourier(x, g.gates);
  } else {
    external_product_custom(g, part);
  }
  part.sync();  // every product written
  add_products(g, part);
}

void BlindRotator::unrolled_group(std::size_t p, const Group& grp, const TeamPart& part) {
  const std::uint32_t unroll = key_.unroll(), G = unroll_group_ggsws(unroll);
  const std::size_t N = params_.polynomial_size, M = N / 2, k1 = params_.glwe_dimension + 1;
  const std::size_t S = spectrum_stride();
  const std::size_t l = params_.bk_level_count, rows = k1 * l;
  const std::uint32_t mask = static_cast<std::uint32_t>(2 * N - 1);
  const std::uint32_t* roots = key_.root_exponents().data();
  const double* unit_re = unit_roots_.data();
  const double* unit_im = unit_roots_.data() + 2 * N;
  for (std::size_t t = 0; t < grp.gates; ++t) {
    for (std::size_t c = 0; c < k1; ++c) {
      if (owns(part, grp, t, c)) decompose_column(grp.accs[t] + c * N, t, c);
    }
    for (std::uint32_t g = 0; g < G; ++g) {
      if (!part.mine(grp.index[t] * G + g)) continue;
      const std::uint32_t e = unrolled_exponent(grp.powers + unroll * t, unroll, g, mask);
      double* re = factors_.data() + (t * G + g) * S;
      double* im = re + M;
      for (std::size_t j = 0; j < M; ++j) {  // zeta^(t_j e) - 1: X^e - 1 at slot j's root
        const std::uint32_t at = (roots[j] * e) & mask;
        re[j] = unit_re[at] - 1.0;
        im[j] = unit_im[at];
      }
    }
  }
  part.sync();  // every digit spectrum and factor written
  for (std::uint32_t g = 0; g < G; ++g) {
    ExternalProduct x{digit_spectra_.data(), rows * S, key_.ggsw(G * p + g), rows, k1, M,
                      product_spectra_.data(), k1 * S, S, part.begin(M, 8), part.end(M, 8)};
    x.factor = factors_.data() + g * S;
    x.factor_stride = G * S;
    x.accumulate = g > 0;
    external_product_fourier(x, grp.gates);
  }
  part.sync();  // every product written
  add_products(grp, part);
}

void BlindRotator::queue_prefetch(std::size_t first, std::size_t ggsws, std::size_t count,
                                  const TeamPart& part) const {
  PrefetchQueue& queue = this_thread_prefetch;
  queue.clear();
  const std::size_t drains_per_transform = fft_.prefetch_drains();
  if (ggsws == 0 || drains_per_transform == 0 || !key_spectra_.empty()) return;
  const std::size_t M = params_.polynomial_size / 2, k1 = params_.glwe_dimension + 1;
  // A key block holds 8 points of every row and column (BootstrappingKeyFourier's layout);
  // this member's products read blocks [begin / 8, end / 8) of each GGSW.
  const std::size_t block = 16 * params_.ggsw_row_count() * k1;
  const std::size_t b0 = part.begin(M, 8) / 8 * block, b1 = part.end(M, 8) / 8 * block;
  const std::size_t ggsw_doubles = key_.ggsw_doubles();
  if (part.members == 1) {
    queue.add(key_.ggsw(first), ggsws * ggsw_doubles * sizeof(double));
  } else {
    for (std::size_t g = 0; g < ggsws; ++g) {
      queue.add(key_.ggsw(first + g) + b0, (b1 - b0) * sizeof(double));
    }
  }
  // This member's transforms in a group: its columns (work units) of up to group_size
  // accumulators, l forward transforms and one inverse each.
  const std::size_t units = std::min(count, group_size) * k1;
  const std::size_t mine = (units + part.members - 1) / part.members;
  const std::size_t drains = mine * (params_.bk_level_count + 1) * drains_per_transform;
  queue.set_lines_per_drain((queue.lines() + drains - 1) / drains);
}

template <class Step>
void BlindRotator::for_each_group(std::size_t first, std::size_t width,
                                  std::span<Torus32> accumulators, std::size_t count,
                                  Step&& step) {
  const std::size_t n = params_.lwe_dimension;
  const std::size_t acc_words = (params_.glwe_dimension + 1) * params_.polynomial_size;
  std::uint32_t group_powers[group_size * max_unroll];
  Torus32* group_accs[group_size];
  std::size_t group_index[group_size];
  std::size_t in_group = 0;
  for (std::size_t r = 0; r < count; ++r) {
    const std::uint32_t* powers = powers_.data() + r * n + first;
    if (std::all_of(powers, powers + width, [](std::uint32_t e) { return e == 0; })) {
      continue;  // X^0 = 1: nothing to add
    }
    std::copy(powers, powers + width, group_powers + in_group * width);
    group_accs[in_group] = accumulators.data() + r * acc_words;
    group_index[in_group] = r;
    if (++in_group == group_size) {
      step(Group{group_powers, group_accs, group_index, in_group});
      in_group = 0;
    }
  }
  if (in_group > 0) step(Group{group_powers, group_accs, group_index, in_group});
}

void BlindRotator::blind_rotate(std::span<const Torus32> inputs, std::size_t count, Torus32 mu,
                                std::span<Torus32> accumulators, ThreadTeam* team,
                                unsigned member) {
  run_as_member(team, [&] {
    rotate(inputs, count, mu, accumulators, team_part(team, member, "BlindRotator::blind_rotate"));
  });
}

void BlindRotator::rotate(std::span<const Torus32> inputs, std::size_t count, Torus32 mu,
                          std::span<Torus32> accumulators, const TeamPart& part) {
  const std::size_t n = params_.lwe_dimension, N = params_.polynomial_size;
  const std::size_t k = params_.glwe_dimension, acc_words = (k + 1) * N;
  EXPECTS(count <= max_batch_, "BlindRotator::blind_rotate: count=" + std::to_string(count) +
                                   " but this rotator holds at most " +
                                   std::to_string(max_batch_));
  EXPECTS(inputs.size() == count * (n + 1),
          "BlindRotator::blind_rotate: inputs have " + std::to_string(inputs.size()) +
              " words but count*(n+1)=" + std::to_string(count * (n + 1)));
  EXPECTS(accumulators.size() == count * acc_words,
          "BlindRotator::blind_rotate: accumulators have " + std::to_string(accumulators.size()) +
              " words but count*(k+1)N=" + std::to_string(count * acc_words));
  const auto two_n = static_cast<std::uint32_t>(2 * N);
  for (std::size_t r = 0; r < count; ++r) {
    if (!part.mine(r)) continue;
    const Torus32* in = inputs.data() + r * (n + 1);
    Torus32* acc = accumulators.data() + r * acc_words;
    std::fill(acc, acc + k * N, Torus32{0});
    // Body: X^{-b~} * (mu, mu, ..., mu), b~ = round(b * 2N).
    const std::uint32_t b = mod_switch_from_torus(in[n], two_n);
    const std::uint32_t shift = b % N;
    Torus32* body = acc + k * N;
    // Coefficient j of X^{-b} v is v[j+b] for j+b < N, else -v[j+b-N] (negacyclic), with a
    // global sign flip when b >= N.
    const Torus32 sign = b >= N ? Torus32(-1) : Torus32(1);
    for (std::size_t j = 0; j < N; ++j) body[j] = (j + shift < N ? sign : Torus32{0} - sign) * mu;
    for (std::size_t i = 0; i < n; ++i) powers_[r * n + i] = mod_switch_from_torus(in[i], two_n);
  }
  // Key-major loop: each step's GGSW samples are read once for the whole batch (from cache
  // after the first group), and each block of them once per group of accumulators.
  part.sync();  // every accumulator and power set
  const std::uint32_t unroll = key_.unroll(), G = unroll_group_ggsws(unroll);
  const std::size_t grouped = unrolled_bits(n, unroll);
  // Each step queues the next step's GGSW samples for prefetch (queue_prefetch): a group step
  // (bits j .. j + unroll - 1) reads G of them, a single bit one.
  auto prefetch_after = [&](std::size_t i) {
    const std::size_t j = i < grouped ? i + unroll : i + 1;
    if (j >= n) return queue_prefetch(0, 0, count, part);
    queue_prefetch(unrolled_step_ggsw(n, unroll, j), j < grouped ? G : 1, count, part);
  };
  for (std::size_t i = 0; i < grouped; i += unroll) {
    prefetch_after(i);
    for_each_group(i, unroll, accumulators, count,
                   [&](const Group& g) { unrolled_group(i / unroll, g, part); });
  }
  for (std::size_t i = grouped; i < n; ++i) {
    const std::size_t ggsw = unrolled_step_ggsw(n, unroll, i);
    prefetch_after(i);
    for_each_group(i, 1, accumulators, count, [&](const Group& g) { cmux_group(ggsw, g, part); });
  }
  this_thread_prefetch.clear();
  part.sync();  // every accumulator's last column added
}

void BlindRotator::bootstrap_extract(std::span<const Torus32> inputs, std::size_t count,
                                     Torus32 mu, std::span<Torus32> extracted, ThreadTeam* team,
                                     unsigned member) {
  const std::size_t N = params_.polynomial_size, k = params_.glwe_dimension;
  const std::size_t acc_words = (k + 1) * N, out_words = k * N + 1;
  run_as_member(team, [&] {
    const TeamPart part = team_part(team, member, "BlindRotator::bootstrap_extract");
    EXPECTS(extracted.size() == count * out_words,
            "BlindRotator::bootstrap_extract: output has " + std::to_string(extracted.size()) +
                " words but count*(kN+1)=" + std::to_string(count * out_words));
    EXPECTS(count <= max_batch_, "BlindRotator::bootstrap_extract: count=" +
                                     std::to_string(count) + " but this rotator holds at most " +
                                     std::to_string(max_batch_));
    std::span<Torus32> acc(accumulators_.data(), count * acc_words);
    rotate(inputs, count, mu, acc, part);
    for (std::size_t r = 0; r < count; ++r) {
      if (!part.mine(r)) continue;
      sample_extract(acc.subspan(r * acc_words, acc_words), static_cast<std::uint32_t>(k),
                     static_cast<std::uint32_t>(N), extracted.subspan(r * out_words, out_words));
    }
    part.sync();  // every sample extracted
  });
}

void key_switch(const KeySwitchingKey& ksk, std::span<const Torus32> inputs, std::size_t count,
                std::span<Torus32> outputs, unsigned part, unsigned parts) {
  const Parameters& p = ksk.parameters();
  const std::size_t n1 = p.lwe_dimension + 1, big = p.extracted_lwe_dimension();
  EXPECTS(inputs.size() == count * (big + 1),
          "key_switch: inputs have " + std::to_string(inputs.size()) + " words but count*(kN+1)=" +
              std::to_string(count * (big + 1)));
  EXPECTS(outputs.size() == count * n1, "key_switch: outputs have " +
                                            std::to_string(outputs.size()) +
                                            " words but count*(n+1)=" + std::to_string(count * n1));
  EXPECTS(parts >= 1 && part < parts, "key_switch: part " + std::to_string(part) + " of " +
                                          std::to_string(parts) +
                                          " but expected parts >= 1 and part < parts");
  // This call's output words [w0, w1) of every sample (the body is word n).
  const TeamPart share{nullptr, part, parts};
  const std::size_t w0 = share.begin(n1), w1 = share.end(n1);
  const unsigned base_log = p.ks_base_log, levels = p.ks_level_count;
  const Torus32 mask = (Torus32{1} << base_log) - 1;
  const unsigned precision = base_log * levels;
  const Torus32 round_offset = precision < 32 ? Torus32{1} << (32 - precision - 1) : 0;
  for (std::size_t g = 0; g < count; ++g) {
    Torus32* out = outputs.data() + g * n1;
    std::fill(out + w0, out + std::min(w1, n1 - 1), Torus32{0});
    if (w1 == n1) out[n1 - 1] = inputs[g * (big + 1) + big];
  }
  auto digit_of = [&](Torus32 a, unsigned j) { return (a >> (32 - (j + 1) * base_log)) & mask; };
  // While coefficient i's rows are subtracted, the rows of coefficient i + 1 that the first
  // samples will read (as many as the prefetch queue holds) are prefetched, a few lines per
  // row: at small batches these scattered rows are the key switching's reads from DRAM.
  PrefetchQueue& queue = this_thread_prefetch;
  const std::size_t rows_per_coefficient = count * levels;
  for (std::size_t i = 0; i < big; ++i) {
    queue.clear();
    for (std::size_t g = 0; g < count && i + 1 < big && !queue.full(); ++g) {
      const Torus32 a = inputs[g * (big + 1) + i + 1] + round_offset;
      for (unsigned j = 0; j < levels; ++j) {
        const Torus32 digit = digit_of(a, j);
        if (digit != 0) queue.add(ksk.level(i + 1, j) + (digit - 1) * n1 + w0, (w1 - w0) * 4);
      }
    }
    queue.set_lines_per_drain((queue.lines() + rows_per_coefficient - 1) / rows_per_coefficient);
    for (std::size_t g = 0; g < count; ++g) {
      const Torus32 a = inputs[g * (big + 1) + i] + round_offset;
      Torus32* __restrict out = outputs.data() + g * n1;
      for (unsigned j = 0; j < levels; ++j) {
        queue.drain();
        const Torus32 digit = digit_of(a, j);
        if (digit == 0) continue;
        const Torus32* __restrict row = ksk.level(i, j) + (digit - 1) * n1;
        for (std::size_t w = w0; w < w1; ++w) out[w] -= row[w];
      }
    }
  }
  queue.clear();
}

ProductRounding product_rounding(const Parameters& p, std::uint32_t unroll) {
  p.validate();
  check_unroll(unroll, "product_rounding");
  const double terms = unroll == 1 ? 1.0 : 2.0 * unroll_group_ggsws(unroll);
  const double N = p.polynomial_size, twelve = std::sqrt(12.0);
  ProductRounding r;
  r.product_rms = std::sqrt(terms * p.ggsw_row_count() * N) *
                  (std::ldexp(1.0, static_cast<int>(p.bk_base_log)) / twelve) *
                  (std::ldexp(1.0, 32) / twelve);
  r.error_sigma = product_error_scale * std::sqrt(std::log2(N)) * std::ldexp(r.product_rms, -53);
  r.margin = 0.5 / r.error_sigma;
  return r;
}

}  // namespace torusgate
