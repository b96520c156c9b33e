// The global operator new and delete of tests_fpga_fft, counting the bytes held (by
// malloc_usable_size) and their peak. In a translation unit of their own, so that no caller
// inlines them. A block allocated before a reset and freed after it lowers the count, so a
// peak is never above what a run took since the reset.
#include "fpga_fft/heap_counter.hpp"

#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<std::int64_t> live{0}, peak{0};
}  // namespace

namespace torusgate::test {

std::int64_t heap_peak_reset() {
  const std::int64_t now = live;
  peak = now;
  return now;
}

std::int64_t heap_peak() { return peak; }

}  // namespace torusgate::test

void* operator new(std::size_t bytes) {
  void* p = std::malloc(bytes == 0 ? 1 : bytes);
  if (p == nullptr) throw std::bad_alloc();
  const std::int64_t now = live += static_cast<std::int64_t>(malloc_usable_size(p));
  std::int64_t highest = peak;
  while (now > highest && !peak.compare_exchange_weak(highest, now)) {
  }
  return p;
}

void operator delete(void* p) noexcept {
  if (p == nullptr) return;
  live -= static_cast<std::int64_t>(malloc_usable_size(p));
  std::free(p);
}

void operator delete(void* p, std::size_t) noexcept { operator delete(p); }
