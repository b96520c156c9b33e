// Plaintext integers to bit planes and back: the bit-coalesced layout of an integer array is
// bit j of element e at position j * lanes + e.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "torusgate/circuits/netlist.hpp"

namespace torusgate::circuits {

// Throws InvalidArgument (naming `who`) unless `type` has a width of 1 to 64 bits and every
// value fits it: unsigned values below 2^width; signed values, read as int64, in
// [-2^(width-1), 2^(width-1)).
void check_values(std::span<const std::uint64_t> values, IntType type, const std::string& who);

// Bit planes of `values` (width * values.size() bits, 0 or 1).
std::vector<std::uint8_t> to_bit_planes(std::span<const std::uint64_t> values, IntType type);

// Values of `lanes` integers from bit planes (width <= 64): unsigned values zero-extended,
// signed ones sign-extended to 64 bits.
std::vector<std::uint64_t> from_bit_planes(std::span<const std::uint8_t> bits, IntType type,
                                           std::size_t lanes);

// Signed values as the uint64 bit patterns the other functions take.
std::vector<std::uint64_t> from_signed(std::span<const std::int64_t> values);

}  // namespace torusgate::circuits
