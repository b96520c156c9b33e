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

void OverflowCounters::check_site(const char* fn, std::size_t site) const {
  EXPECTS(site < names_.size(),
          std::string("OverflowCounters::") + fn + ": site=" + std::to_string(site) +
              (names_.empty() ? std::string(" but there are no sites")
                              : " but the sites are 0.." + std::to_string(names_.size() - 1)));
}

const std::string& OverflowCounters::site(std::size_t i) const {
  check_site("site", i);
  return names_[i];
}

void OverflowCounters::add(std::size_t site, std::uint64_t count) {
  check_site("add", site);
  if (count != 0) counts_[site].fetch_add(count, std::memory_order_relaxed);
}

std::uint64_t OverflowCounters::count(std::size_t site) const {
  check_site("count", site);
  return counts_[site].load(std::memory_order_relaxed);
}

std::uint64_t OverflowCounters::total() const {
  std::uint64_t sum = 0;
  for (const auto& c : counts_) sum += c.load(std::memory_order_relaxed);
  return sum;
}

void OverflowCounters::reset() {
  for (auto& c : counts_) c.store(0, std::memory_order_relaxed);
}

}  // namespace torusgate::fpga_fft
