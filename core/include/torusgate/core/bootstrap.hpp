// Gate bootstrapping: the bootstrapping key in the Fourier domain, batched blind rotation
// with sample extraction, and batched key switching (TFHE, J. Cryptology 2020, algorithms
// 1-3 and section 4; CMUX-based blind rotation with the external product in the Fourier
// domain). Engine-agnostic: any NegacyclicFft runs it.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "torusgate/core/aligned.hpp"
#include "torusgate/core/fft.hpp"
#include "torusgate/core/keys.hpp"
#include "torusgate/core/team.hpp"

namespace torusgate {

// Spectra of every polynomial of the bootstrapping key, made once with one engine.
// Blocked layout, so the external product reads it sequentially: GGSW i, then for each block
// of 8 spectrum points, for each polynomial q = row*(k+1) + column, 8 real parts and 8
// imaginary parts: [i < ggsw_count()][block < M/8][q < (k+1)^2 l][16 doubles].
// An unrolled key (unroll 2 to 4) needs a double engine (not custom_arithmetic()): its rotations
// are products in the Fourier domain, at the engine's spectrum_root_exponents().
class BootstrappingKeyFourier {
 public:
  BootstrappingKeyFourier(const BootstrappingKey& bk, const NegacyclicFft& fft);

  const Parameters& parameters() const { return params_; }
  // name() of the engine that made the spectra: only that engine can use them.
  const std::string& engine() const { return engine_; }
  std::uint32_t unroll() const { return unroll_; }  // the BootstrappingKey's form
  std::size_t ggsw_count() const { return ggsw_count_; }
  // unroll > 1: spectrum_root_exponents() of the engine (empty for unroll 1).
  const std::vector<std::uint32_t>& root_exponents() const { return roots_; }
  // The (k+1)l x (k+1) spectra of GGSW sample i, contiguous, blocked as above.
  const double* ggsw(std::size_t i) const { return data_.data() + i * ggsw_doubles_; }
  std::size_t ggsw_doubles() const { return ggsw_doubles_; }  // doubles of one GGSW sample
  // Spectrum of polynomial q = row*(k+1) + column of GGSW i, un-blocked into `out` (2M slots):
  // the slots are copied, never computed on, so engines with custom arithmetic can use it.
  void spectrum(std::size_t i, std::size_t q, std::span<double> out) const;
  std::size_t memory_bytes() const { return data_.size() * sizeof(double); }

 private:
  Parameters params_;
  std::string engine_;
  std::uint32_t unroll_ = 1;
  std::size_t ggsw_count_ = 0;
  std::size_t ggsw_doubles_ = 0;
  std::vector<std::uint32_t> roots_;
  AlignedVector<double> data_;
};

// Batched blind rotation and sample extraction: one object per thread (it owns the scratch,
// sized once for up to `max_batch` samples; nothing is allocated per gate). The key and the
// engine are shared, read-only, between threads.
//
// Or one object per ThreadTeam, for a batch too small to give every thread rotations of its
// own: every member calls with the same arguments, its own `member` index and the team. Member
// m owns the work units (accumulator r, column c) with (r (k+1) + c) % members == m: it
// decomposes and transforms that column and adds its inverse transform back. Each external
// product is cut by spectrum points, a share of the points (and of the key's reads) for each
// member. Two barriers a step: after the forward transforms, after the products. The words are
// those of a lone thread: the same operations on the same values. Without a team (nullptr),
// member 0: the lone thread.
class BlindRotator {
 public:
  BlindRotator(const BootstrappingKeyFourier& key, const NegacyclicFft& fft, std::size_t max_batch);

  std::size_t max_batch() const { return max_batch_; }

  // For each of `count` LWE samples in `inputs` (count x (n+1) words), the LWE sample
  // (k*N+1 words, key: the extracted GLWE key) of phase +mu if the input phase lies in
  // [0, 1/2) and -mu otherwise, up to bootstrapping noise. Writes count x (kN+1) words.
  void bootstrap_extract(std::span<const Torus32> inputs, std::size_t count, Torus32 mu,
                         std::span<Torus32> extracted, ThreadTeam* team = nullptr,
                         unsigned member = 0);

  // The accumulators themselves, before extraction: count x (k+1)N words.
  void blind_rotate(std::span<const Torus32> inputs, std::size_t count, Torus32 mu,
                    std::span<Torus32> accumulators, ThreadTeam* team = nullptr,
                    unsigned member = 0);

 private:
  // Accumulators that share each read of a GGSW block in the external product.
  static constexpr std::size_t group_size = 4;
  // Doubles from one scratch spectrum to the next: 2M and 16 more (128 bytes). N doubles is a
  // multiple of 4 KiB, so without the gap the external product's (k+1)l digit rows and (k+1)
  // product columns of every gate all fall on one set of the L1 cache and evict each other
  // between two reads of a cache line (3x the product's time on an AVX2 EPYC).
  static constexpr std::size_t spectrum_gap = 16;
  std::size_t spectrum_stride() const { return params_.polynomial_size + spectrum_gap; }
  // Queues GGSW samples [first, first + ggsws) on this thread's prefetch queue (this member's
  // share of their points, the share its external products read), spread over the transforms
  // this member makes for the first group of `count` accumulators: the next step's key
  // arrives in cache while the current step transforms. Nothing for engines that do not drain
  // the queue, or ggsws = 0.
  void queue_prefetch(std::size_t first, std::size_t ggsws, std::size_t count,
                      const TeamPart& part) const;
  // blind_rotate's work for one member (inside run_as_member()).
  void rotate(std::span<const Torus32> inputs, std::size_t count, Torus32 mu,
              std::span<Torus32> accumulators, const TeamPart& part);
  // A group of up to group_size accumulators in one step: their powers (`width` each), the
  // accumulators and their indices in the batch (which name the team's work units).
  struct Group {
    const std::uint32_t* powers;
    Torus32* const* accs;
    const std::size_t* index;
    std::size_t gates;
  };
  // Digit rows c l .. c l + l-1 of gate t's spectra: forward_decomposed of poly (N words).
  void decompose_column(const Torus32* poly, std::size_t t, std::size_t c);
  // Gate t's column c of the group is this member's work unit.
  bool owns(const TeamPart& part, const Group& g, std::size_t t, std::size_t c) const {
    return part.mine(g.index[t] * (params_.glwe_dimension + 1) + c);
  }
  void cmux_group(std::size_t i, const Group& g, const TeamPart& part);
  // Unrolled key (u = unroll), group p (key bits u p .. u p + u-1, GGSW G p .. G p + G-1,
  // G = 2^u - 1): ACC_t += sum_g (X^e_g - 1) (GGSW_Gp+g [x] ACC_t), e_g = unrolled_exponent
  // (a+b, a, b for pairs): one decomposition of ACC_t, G products, the rotations as slot-wise
  // factors before one inverse transform per column.
  void unrolled_group(std::size_t p, const Group& g, const TeamPart& part);
  // Runs `step` on groups of up to group_size accumulators whose powers (`width` per
  // accumulator, from column `first` of powers_) are not all zero.
  template <class Step>
  void for_each_group(std::size_t first, std::size_t width, std::span<Torus32> accumulators,
                      std::size_t count, Step&& step);
  // The external products of cmux_group for engines with custom arithmetic: the engine's own
  // multiply_add over the un-blocked key spectra (in a team: each member its own units).
  void external_product_custom(const Group& g, const TeamPart& part);
  // The group's products back into the accumulators (inverse_add), each member its own units.
  void add_products(const Group& g, const TeamPart& part);

  const BootstrappingKeyFourier& key_;
  const NegacyclicFft& fft_;
  Parameters params_;
  std::size_t max_batch_;
  GadgetDecomposition gadget_;
  AlignedVector<Torus32> accumulators_;    // max_batch x (k+1)N
  std::vector<std::uint32_t> powers_;      // max_batch x n: rounded a_i in Z_2N
  AlignedVector<Torus32> rotated_;         // group_size x (k+1)N: (X^a - 1) ACC
  AlignedVector<double> digit_spectra_;    // group_size x (k+1)l spectra, spectrum_stride() apart
  AlignedVector<double> product_spectra_;  // group_size x (k+1) spectra, spectrum_stride() apart
  AlignedVector<double> key_spectra_;      // custom engines: (k+1)l x (k+1) x 2M (one GGSW)
  // Unrolled keys: zeta^t for t < 2N (2N real parts, then 2N imaginary parts), and the
  // factors zeta^(t_j e) - 1 of each gate's G = 2^u - 1 rotations: group_size x G split
  // arrays of 2M, spectrum_stride() apart.
  AlignedVector<double> unit_roots_;
  AlignedVector<double> factors_;
};

// How near the external products of a parameter set and key form come to the limit of a double
// engine's exact rounding. Each coefficient an engine rounds after its inverse transform is an
// exact integer: the sum over the (k+1)l rows (unrolled keys: and over the G = 2^u - 1 GGSW
// samples of a group step, each times X^e - 1) of products of a gadget digit and a key word.
// The engine computes it with an error that grows with its magnitude and rounds it to that
// integer while the error stays below 1/2. Past that, two engines (the CPU's, the GPU's) can
// differ by 1 in a word: 2^-32 of noise, far below a bootstrap's, so decryptions agree, but
// the words no longer equal each other. The model, for uniform digits in [-Bg/2, Bg/2) and
// uniform key words (what a blind rotation sees):
//   product_rms = sqrt(terms (k+1) l N) (Bg / sqrt 12) (2^32 / sqrt 12),
//                 terms = 1 (standard key) or 2 G (unrolled: X^e - 1 has two terms),
//   error_sigma = product_error_scale sqrt(log2 N) 2^-53 product_rms.
// product_error_scale bounds the engines' measured errors (tests_core's case "product_rounding",
// docs/architecture.md): 1.2 for FFTW, 1.4 for SimdFft, 1.6 for PortableFft.
inline constexpr double product_error_scale = 2.0;
// exact(): every engine's error stays below 1/2 but with a chance of about 1e-15 per coefficient
// (beyond 8 sigma either way of a normal error, 1.2e-15; the engines' errors measure below 0.82
// error_sigma, so > 9.8 sigma, about 2e-22).
inline constexpr double exact_rounding_margin = 8.0;

struct ProductRounding {
  double product_rms = 0;  // of the exact integer coefficients
  double error_sigma = 0;  // a double engine's rounding error, as modelled above
  double margin = 0;       // 1/2 over error_sigma
  // The engines round every product coefficient exactly: their words agree.
  bool exact() const { return margin >= exact_rounding_margin; }
};

// The model for parameter set p (validated) and a key of form `unroll` (1 to max_unroll);
// InvalidArgument otherwise.
ProductRounding product_rounding(const Parameters& p, std::uint32_t unroll);

// Key switching of `count` samples of dimension k*N (count x (kN+1) words) to dimension n
// (count x (n+1) words), processed key-row-major so each key row is read once per batch.
// Cut into `parts` calls (threads): call `part` (0 .. parts-1) writes its share of every output
// sample's words, and reads only that share of each key row. InvalidArgument unless
// part < parts.
void key_switch(const KeySwitchingKey& ksk, std::span<const Torus32> inputs, std::size_t count,
                std::span<Torus32> outputs, unsigned part = 0, unsigned parts = 1);

}  // namespace torusgate
