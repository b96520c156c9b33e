// Plaintext integers to bit planes and back.
#include "torusgate/circuits/int_codec.hpp"

#include "torusgate/core/error.hpp"

namespace torusgate::circuits {

void check_values(std::span<const std::uint64_t> values, IntType type, const std::string& who) {
  EXPECTS(type.width >= 1 && type.width <= 64,
          who + ": type " + to_string(type) + " but values are 1- to 64-bit integers");
  for (std::size_t e = 0; e < values.size(); ++e) {
    const std::uint64_t v = values[e];
    bool fits = true;
    if (type.width < 64) {
      if (type.is_signed) {
        const auto s = static_cast<std::int64_t>(v);
        const std::int64_t half = std::int64_t{1} << (type.width - 1);
        fits = s >= -half && s < half;
      } else {
        fits = v < (std::uint64_t{1} << type.width);
      }
    }
    EXPECTS(fits, who + ": value " +
                      (type.is_signed ? std::to_string(static_cast<std::int64_t>(v))
                                      : std::to_string(v)) +
                      " (element " + std::to_string(e) + ") does not fit " + to_string(type));
  }
}

std::vector<std::uint8_t> to_bit_planes(std::span<const std::uint64_t> values, IntType type) {
  check_values(values, type, "to_bit_planes");
  const std::size_t lanes = values.size();
  std::vector<std::uint8_t> bits(type.width * lanes);
  for (std::size_t j = 0; j < type.width; ++j)
    for (std::size_t e = 0; e < lanes; ++e) bits[j * lanes + e] = (values[e] >> j) & 1;
  return bits;
}

std::vector<std::uint64_t> from_bit_planes(std::span<const std::uint8_t> bits, IntType type,
                                           std::size_t lanes) {
  EXPECTS(type.width >= 1 && type.width <= 64,
          "from_bit_planes: type " + to_string(type) + " but values are 1- to 64-bit integers");
  EXPECTS(bits.size() == type.width * lanes,
          "from_bit_planes: " + std::to_string(bits.size()) + " bits but " + to_string(type) +
              " x " + std::to_string(lanes) + " needs " + std::to_string(type.width * lanes));
  std::vector<std::uint64_t> values(lanes, 0);
  for (std::size_t j = 0; j < type.width; ++j)
    for (std::size_t e = 0; e < lanes; ++e)
      if (bits[j * lanes + e]) values[e] |= std::uint64_t{1} << j;
  if (type.is_signed && type.width < 64)
    for (std::uint64_t& v : values)
      if ((v >> (type.width - 1)) & 1) v |= ~std::uint64_t{0} << type.width;
  return values;
}

std::vector<std::uint64_t> from_signed(std::span<const std::int64_t> values) {
  std::vector<std::uint64_t> out(values.size());
  for (std::size_t e = 0; e < values.size(); ++e) out[e] = static_cast<std::uint64_t>(values[e]);
  return out;
}

}  // namespace torusgate::circuits
