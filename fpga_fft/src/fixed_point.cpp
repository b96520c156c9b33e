// Rounding names and the thread-safe overflow counters of the fixed-point datapath model.
#include "torusgate/fpga_fft/fixed_point.hpp"

#include "torusgate/core/error.hpp"

namespace torusgate::fpga_fft {

std::string to_string(Rounding r) { return r == Rounding::Nearest ? "nearest" : "truncate"; }

Rounding parse_rounding(const std::string& text) {
  if (text == "nearest" || text == "round") return Rounding::Nearest;
  if (text == "truncate" || text == "floor") return Rounding::Truncate;
  throw InvalidArgument("rounding '" + text + "' is not known; expected nearest or truncate");
}

OverflowCounters::OverflowCounters(std::vector<std::string> sites)
    : names_(std::move(sites)), counts_(names_.size()) {}

std::uint64_t OverflowCounters::total() const {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < counts_.size(); ++i) sum += count(i);
  return sum;
}

void OverflowCounters::reset() {
  for (auto& c : counts_) c.store(0, std::memory_order_relaxed);
}

}  // namespace torusgate::fpga_fft
