// Product error of a negacyclic FFT engine against the exact schoolbook product.
#include "torusgate/fpga_fft/precision.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "torusgate/core/error.hpp"
#include "torusgate/core/glwe.hpp"

namespace torusgate::fpga_fft {

ProductError external_product_error(const NegacyclicFft& engine, const Parameters& params,
                                    std::uint32_t columns, Csprng& rng) {
  const std::size_t N = params.polynomial_size, rows = params.ggsw_row_count();
  EXPECTS(engine.polynomial_size() == N,
          "external_product_error: engine '" + engine.name() + "' is for N=" +
              std::to_string(engine.polynomial_size()) + " but parameter set '" + params.name +
              "' has N=" + std::to_string(N));
  EXPECTS(columns >= 1, "external_product_error: columns=0 but expected at least 1");
  const std::int64_t half = std::int64_t{1} << (params.bk_base_log - 1);
  std::vector<double> sa(N), sb(N), acc(N);
  std::vector<std::int32_t> a(N);
  std::vector<Torus32> b(N), exact(N), product(N), got(N);
  double sum = 0, worst = 0;
  for (std::uint32_t c = 0; c < columns; ++c) {
    std::fill(acc.begin(), acc.end(), 0.0);  // zero words in every engine
    std::fill(exact.begin(), exact.end(), Torus32{0});
    for (std::size_t q = 0; q < rows; ++q) {
      for (auto& v : a) {
        v = static_cast<std::int32_t>(static_cast<std::int64_t>(rng.uniform_below(2 * half)) - half);
      }
      for (auto& v : b) v = rng.uniform_torus();
      engine.forward(std::span<const std::int32_t>(a), sa);
      engine.forward(std::span<const Torus32>(b), sb);
      engine.multiply_add(sa, sb, acc);
      negacyclic_multiply_exact(a, b, product);
      for (std::size_t j = 0; j < N; ++j) exact[j] += product[j];
    }
    engine.inverse(acc, got);
    for (std::size_t j = 0; j < N; ++j) {
      const double d = static_cast<std::int32_t>(got[j] - exact[j]);
      sum += d * d;
      worst = std::max(worst, std::fabs(d));
    }
  }
  return {std::sqrt(sum / (static_cast<double>(columns) * static_cast<double>(N))), worst};
}

}  // namespace torusgate::fpga_fft
