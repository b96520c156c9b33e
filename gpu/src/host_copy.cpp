#include "host_copy.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>

namespace torusgate::gpu::detail {

void host_copy(void* dst, const void* src, std::size_t bytes) {
  constexpr std::size_t slice_min = std::size_t{1} << 20;
  constexpr int max_threads = 8;
  const int threads = static_cast<int>(std::min<std::size_t>(
      {bytes / slice_min, static_cast<std::size_t>(max_threads),
       static_cast<std::size_t>(std::max(omp_get_max_threads(), 1))}));
  if (bytes < 4 * slice_min || threads < 2) {
    if (bytes != 0) std::memcpy(dst, src, bytes);
    return;
  }
  // Slices of whole 64-byte lines, the last one taking the rest.
  const std::size_t slice = (bytes / threads + 63) / 64 * 64;
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int t = 0; t < threads; ++t) {
    const std::size_t begin = std::min(bytes, std::size_t(t) * slice);
    const std::size_t end = t + 1 == threads ? bytes : std::min(bytes, begin + slice);
    if (end > begin) std::memcpy(d + begin, s + begin, end - begin);
  }
}

}  // namespace torusgate::gpu::detail
