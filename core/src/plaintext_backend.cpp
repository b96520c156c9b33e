// The plaintext backend: gate semantics on cleartext bits, with counts and depth.
#include "torusgate/core/plaintext_backend.hpp"

#include <algorithm>

namespace torusgate {

PlainBits encrypt_bits(const PlaintextKey&, std::span<const std::uint8_t> bits, Csprng&) {
  for (std::size_t i = 0; i < bits.size(); ++i) {
    EXPECTS(bits[i] <= 1, "encrypt_bits: value " + std::to_string(bits[i]) + " at index " +
                              std::to_string(i) + " but expected 0 or 1");
  }
  return PlainBits{std::vector<std::uint8_t>(bits.begin(), bits.end())};
}

std::vector<std::uint8_t> decrypt_bits(const PlaintextKey&, const PlainBits& batch) {
  return batch.bits;
}

BitBuffer<PlaintextStorage> PlaintextBackend::allocate(std::size_t count) {
  auto s = std::make_unique<Storage>();
  s->owner = this;
  s->owner_serial = serial_;
  allocating("PlaintextBackend::allocate: " + std::to_string(count) + " bits",
             count <= SIZE_MAX / 5 ? count * 5 : SIZE_MAX, [&] {
               s->bits.assign(count, 0);
               s->depth.assign(count, 0);
               return 0;
             });
  return BitBuffer<Storage>(std::move(s), count);
}

BitBuffer<PlaintextStorage> PlaintextBackend::upload(const PlainBits& batch) {
  auto buffer = allocate(batch.bits.size());
  for (std::size_t i = 0; i < batch.bits.size(); ++i) {
    EXPECTS(batch.bits[i] <= 1, "PlaintextBackend::upload: value " +
                                    std::to_string(batch.bits[i]) + " at index " +
                                    std::to_string(i) + " but expected 0 or 1");
  }
  buffer.storage().bits = batch.bits;
  return buffer;
}

PlainBits PlaintextBackend::download(BitSpan<Storage> bits) const {
  check_own_span(bits, [this](const Storage* s) { return owns(s); }, "PlaintextBackend::download");
  const auto first = bits.storage->bits.begin() + static_cast<std::ptrdiff_t>(bits.offset);
  return PlainBits{std::vector<std::uint8_t>(first, first + static_cast<std::ptrdiff_t>(bits.count))};
}

std::uint32_t PlaintextBackend::depth(BitSpan<Storage> bits) const {
  check_own_span(bits, [this](const Storage* s) { return owns(s); }, "PlaintextBackend::depth");
  std::uint32_t d = 0;
  for (std::size_t i = 0; i < bits.count; ++i) d = std::max(d, bits.storage->depth[bits.offset + i]);
  return d;
}

void PlaintextBackend::evaluate(std::span<const GateOp<Storage>> batch) {
  const ExclusiveCalls::Scope exclusive = calls_.enter("PlaintextBackend::evaluate");
  validate_batch<Storage>(batch, [this](const Storage* s) { return owns(s); },
                          "PlaintextBackend::evaluate");
  // Read every input first (outputs may alias inputs), then write.
  struct Result {
    std::uint8_t bit;
    std::uint32_t depth;
  };
  std::vector<Result> results;
  std::uint64_t bootstraps = 0;
  for (const auto& op : batch) {
    const int boots = op.spec.bootstraps();
    for (std::size_t e = 0; e < op.out.count; ++e) {
      bool in[3] = {false, false, false};
      std::uint32_t d = 0;
      for (int j = 0; j < op.spec.arity; ++j) {
        const auto& s = *op.in[j].storage;
        in[j] = s.bits[op.in[j].offset + e] != 0;
        d = std::max(d, s.depth[op.in[j].offset + e]);
      }
      results.push_back({static_cast<std::uint8_t>(op.spec.evaluate(in[0], in[1], in[2])),
                         op.spec.kind == GateKind::Constant ? 0u : d + (boots > 0 ? 1u : 0u)});
      bootstraps += static_cast<std::uint64_t>(boots);
    }
    stats_.gates_by_kind[static_cast<std::size_t>(op.spec.kind)] += op.out.count;
    stats_.gates += op.out.count;
  }
  std::size_t r = 0;
  for (const auto& op : batch) {
    for (std::size_t e = 0; e < op.out.count; ++e, ++r) {
      op.out.storage->bits[op.out.offset + e] = results[r].bit;
      op.out.storage->depth[op.out.offset + e] = results[r].depth;
    }
  }
  stats_.batches += 1;
  stats_.bootstraps += bootstraps;
  if (bootstraps > 0) stats_.bootstrap_batches += 1;
}

}  // namespace torusgate
