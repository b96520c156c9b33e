// Helpers of the workload runner: random inputs, plain references, output comparison.
#include "item_runner.hpp"

namespace torusgate::apps::compare {

std::vector<std::uint8_t> random_bits(Csprng& rng, std::size_t count) {
  std::vector<std::uint8_t> bits(count);
  for (auto& b : bits) b = static_cast<std::uint8_t>(rng.uniform_bit());
  return bits;
}

std::uint64_t low_mask(std::size_t bits) {
  EXPECTS(bits >= 1 && bits <= 64, "low_mask: " + std::to_string(bits) + " bits; expected 1..64");
  return bits == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
}

std::vector<std::uint64_t> random_values(Csprng& rng, std::size_t count, std::size_t bits) {
  const std::uint64_t mask = low_mask(bits);
  std::vector<std::uint64_t> values(count);
  for (auto& v : values) v = rng.uniform_u64() & mask;
  return values;
}

std::string compare_values(std::span<const std::uint64_t> got, std::span<const std::uint64_t> want,
                           const std::string& what) {
  if (got.size() != want.size()) {
    return what + ": " + std::to_string(got.size()) + " values decrypted, " +
           std::to_string(want.size()) + " expected";
  }
  std::size_t first = got.size(), wrong = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] == want[i]) continue;
    if (wrong++ == 0) first = i;
  }
  if (wrong == 0) return "";
  return what + ": element " + std::to_string(first) + " is " + std::to_string(got[first]) +
         " but plain arithmetic gives " + std::to_string(want[first]) + " (" +
         std::to_string(wrong) + " of " + std::to_string(got.size()) + " elements differ)";
}

std::vector<std::uint64_t> plain_matmul(std::span<const std::uint64_t> a,
                                        std::span<const std::uint64_t> b, std::size_t q,
                                        std::size_t bits) {
  const std::uint64_t mask = low_mask(bits);
  std::vector<std::uint64_t> c(q * q);
  for (std::size_t i = 0; i < q; ++i)
    for (std::size_t j = 0; j < q; ++j) {
      std::uint64_t sum = 0;  // wraps modulo 2^64, a multiple of 2^bits
      for (std::size_t k = 0; k < q; ++k) sum += a[i * q + k] * b[k * q + j];
      c[i * q + j] = sum & mask;
    }
  return c;
}

QuantizedData regression_data(const Item& item) {
  const FeatureKind kind = item.binary ? FeatureKind::Binary : FeatureKind::Numeric;
  const Dataset data = synthetic_dataset(DatasetShape{item.rows, item.attributes}, kind, 2020);
  // Binary features are 1-bit; the width applies to numeric values (numeric y included).
  return quantize(data, kind, item.binary ? 8 : item.bits, std::nullopt);
}

}  // namespace torusgate::apps::compare
