// Signed gadget decomposition of torus values (TFHE, J. Cryptology 2020, lemma 3.3 and the
// TFHE library's offset trick): every digit with one add, one shift and one mask.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "torusgate/core/error.hpp"
#include "torusgate/core/torus.hpp"

namespace torusgate {

// Signed gadget decomposition in base Bg = 2^base_log with `level_count` levels, rounded to
// the nearest multiple of 2^(32 - base_log*level_count): x ~ sum_p d_p * 2^(32 - p*base_log),
// p = 1..l, with digits d_p in [-Bg/2, Bg/2).
class GadgetDecomposition {
 public:
  GadgetDecomposition(std::uint32_t base_log, std::uint32_t level_count);
  std::uint32_t base_log() const { return base_log_; }
  std::uint32_t level_count() const { return level_count_; }
  // The torus value 2^(32 - p*base_log) of level p (1-based); InvalidArgument outside 1..l.
  Torus32 gadget_value(std::uint32_t p) const {
    EXPECTS(p >= 1 && p <= level_count_, "GadgetDecomposition::gadget_value: p=" +
                                             std::to_string(p) + " but the levels are 1.." +
                                             std::to_string(level_count_));
    return Torus32{1} << (32 - p * base_log_);
  }

  // Digit of level p (1-based) of x; InvalidArgument outside 1..l.
  std::int32_t digit(Torus32 x, std::uint32_t p) const {
    EXPECTS(p >= 1 && p <= level_count_, "GadgetDecomposition::digit: p=" + std::to_string(p) +
                                             " but the levels are 1.." +
                                             std::to_string(level_count_));
    return digit_unchecked(x, p);
  }
  // The same for p known to be in 1..l (the transforms' inner loops).
  std::int32_t digit_unchecked(Torus32 x, std::uint32_t p) const {
    const Torus32 shifted = (x + offset_) >> (32 - p * base_log_);
    return static_cast<std::int32_t>(shifted & mask_) - half_;
  }
  // Digits of every coefficient: digits[(p-1)*N + j] = digit(poly[j], p).
  void decompose(std::span<const Torus32> poly, std::span<std::int32_t> digits) const;

 private:
  std::uint32_t base_log_, level_count_;
  Torus32 offset_ = 0, mask_ = 0;
  std::int32_t half_ = 0;
};

}  // namespace torusgate
