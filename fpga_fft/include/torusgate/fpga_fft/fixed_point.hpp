// Fixed-point words of the FPGA FFT datapath model: signed two's-complement words of W bits
// holding x * 2^F (F fractional bits), the rounding applied at every multiplier output
// (truncate = floor, or round to nearest with ties up), and the wrap to W bits with overflow
// counting that a hardware register does. DESIGN.md section 8, docs/fpga_fft.md.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace torusgate::fpga_fft {

// Rounding at a multiplier (or scaling shift) output that drops `shift` fractional bits.
enum class Rounding {
  Truncate,  // floor(v / 2^shift): drop the bits (two's complement: towards -infinity)
  Nearest,   // floor(v / 2^shift + 1/2): round to nearest, ties towards +infinity
};

std::string to_string(Rounding r);
// "truncate"/"floor" or "nearest"/"round"; InvalidArgument naming the value otherwise.
Rounding parse_rounding(const std::string& text);

// One complex word: real and imaginary parts, each a W-bit signed integer held in 64 bits.
struct CWord {
  std::int64_t re = 0;
  std::int64_t im = 0;
  bool operator==(const CWord&) const = default;
};

using Wide = __int128;  // exact products and sums before rounding

// v / 2^shift rounded as `mode` says (exact when the dropped bits are zero).
inline Wide round_shift(Wide v, unsigned shift, Rounding mode) {
  if (shift == 0) return v;
  if (mode == Rounding::Nearest) v += Wide{1} << (shift - 1);
  return v >> shift;  // arithmetic: floor
}

// The word helpers below run for every word of a transform, so they do not check `bits`: it is
// a validated word width (FixedFftConfig::validate, 8..64; fits() takes 1..127, wrap() and
// to_register() 1..64). Functions that take a width from their caller check it themselves
// (format_vectors, parse_simulation_output).

// True when v fits a signed word of `bits` bits.
inline bool fits(Wide v, unsigned bits) {
  const Wide half = Wide{1} << (bits - 1);
  return v >= -half && v < half;
}

// v wrapped to a signed word of `bits` bits (two's complement, as a register keeps it).
inline std::int64_t wrap(Wide v, unsigned bits) {
  const auto low = static_cast<std::uint64_t>(v);
  if (bits >= 64) return static_cast<std::int64_t>(low);
  const unsigned drop = 64 - bits;
  return static_cast<std::int64_t>(low << drop) >> drop;
}

// Overflow counts of a datapath, one counter per site (a stage, the multiply-accumulate...).
// Thread-safe: concurrent transforms may count into one object.
class OverflowCounters {
 public:
  explicit OverflowCounters(std::vector<std::string> sites);
  OverflowCounters(const OverflowCounters&) = delete;
  OverflowCounters& operator=(const OverflowCounters&) = delete;

  std::size_t size() const { return names_.size(); }
  // Each takes a site < size(); InvalidArgument naming the site and the range otherwise.
  const std::string& site(std::size_t i) const;
  void add(std::size_t site, std::uint64_t count);
  std::uint64_t count(std::size_t site) const;
  std::uint64_t total() const;
  void reset();

 private:
  void check_site(const char* fn, std::size_t site) const;

  std::vector<std::string> names_;
  std::vector<std::atomic<std::uint64_t>> counts_;
};

// A W-bit register: wraps v and counts an overflow in *overflows when v does not fit.
inline std::int64_t to_register(Wide v, unsigned bits, std::uint64_t& overflows) {
  if (!fits(v, bits)) ++overflows;
  return wrap(v, bits);
}

}  // namespace torusgate::fpga_fft
