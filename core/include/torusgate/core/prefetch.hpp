// Software prefetch spread over computation. A blind rotation step reads its GGSW sample (98 KB
// of spectra for tfhe_lib_128) in one burst, in the external product; at batch 1 nothing else
// hides that read from DRAM. A thread's PrefetchQueue holds the ranges a later step will read
// (the next step's key), and the FFT engine's loops call drain() a few cache lines at a time
// while they compute, so the lines arrive in cache during the transforms instead of during the
// product. Prefetching never faults and changes no value: only the time of a read.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace torusgate {

class PrefetchQueue {
 public:
  static constexpr std::size_t line_bytes = 64;
  static constexpr std::size_t max_ranges = 16;

  // Drops every queued line; lines_per_drain() is 1 again.
  void clear() {
    count_ = 0;
    current_ = 0;
    per_drain_ = 1;
  }
  // Queues the cache lines of [data, data + bytes). Ranges beyond max_ranges are ignored (a
  // prefetch is a hint: missing one costs time, never a result).
  void add(const void* data, std::size_t bytes) {
    if (bytes == 0 || full()) return;
    const auto begin = reinterpret_cast<std::uintptr_t>(data) / line_bytes * line_bytes;
    const auto end = reinterpret_cast<std::uintptr_t>(data) + bytes;
    ranges_[count_++] = Range{begin, end};
  }
  // Whether add() would ignore another range.
  bool full() const { return count_ == max_ranges; }
  // Lines each drain() prefetches (at least 1).
  void set_lines_per_drain(std::size_t lines) { per_drain_ = lines == 0 ? 1 : lines; }
  std::size_t lines_per_drain() const { return per_drain_; }
  // Queued lines not yet prefetched.
  std::size_t lines() const {
    std::size_t total = 0;
    for (std::size_t r = current_; r < count_; ++r) {
      total += (ranges_[r].end - ranges_[r].next + line_bytes - 1) / line_bytes;
    }
    return total;
  }
  // Prefetches the next lines_per_drain() queued lines (fewer when the queue runs out).
  void drain() {
    for (std::size_t i = 0; i < per_drain_ && current_ < count_; ++i) {
      Range& r = ranges_[current_];
      __builtin_prefetch(reinterpret_cast<const void*>(r.next), 0, 3);
      r.next += line_bytes;
      if (r.next >= r.end) ++current_;
    }
  }

 private:
  struct Range {
    std::uintptr_t next, end;
  };
  std::array<Range, max_ranges> ranges_{};
  std::size_t count_ = 0, current_ = 0, per_drain_ = 1;
};

// The calling thread's queue: BlindRotator fills it, SimdFft's transforms drain it.
inline thread_local PrefetchQueue this_thread_prefetch;

}  // namespace torusgate
