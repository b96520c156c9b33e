// PlaintextBackend: the backend contract on cleartext bits. It is the oracle of circuit
// tests (gates compute exactly what an encrypted evaluation decrypts to, weighted sign gates
// included) and measures circuits: gate counts, bootstraps, batches and depth.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "torusgate/core/backend.hpp"

namespace torusgate {

// The plaintext "client key": nothing to keep secret.
struct PlaintextKey {};

// Bits as they cross to and from the plaintext backend.
struct PlainBits {
  std::vector<std::uint8_t> bits;
};

PlainBits encrypt_bits(const PlaintextKey&, std::span<const std::uint8_t> bits, Csprng&);
std::vector<std::uint8_t> decrypt_bits(const PlaintextKey&, const PlainBits& batch);

struct PlaintextStorage {
  const void* owner = nullptr;
  std::uint64_t owner_serial = 0;  // the owner's new_backend_serial()
  std::vector<std::uint8_t> bits;
  std::vector<std::uint32_t> depth;  // bootstraps on the longest path to each bit
  std::size_t size() const { return bits.size(); }
};

class PlaintextBackend {
 public:
  using Storage = PlaintextStorage;
  using HostBatch = PlainBits;
  using ClientKey = PlaintextKey;

  PlaintextBackend() = default;
  // Buffers name their backend by address: a copy or a moved-to backend would own none.
  PlaintextBackend(const PlaintextBackend&) = delete;
  PlaintextBackend& operator=(const PlaintextBackend&) = delete;

  std::string name() const { return "plaintext"; }
  BitBuffer<Storage> allocate(std::size_t count);  // bits 0, depth 0
  BitBuffer<Storage> upload(const PlainBits& batch);
  PlainBits download(BitSpan<Storage> bits) const;
  void evaluate(std::span<const GateOp<Storage>> batch);
  void evaluate(std::initializer_list<GateOp<Storage>> batch) {
    evaluate(std::span<const GateOp<Storage>>(batch.begin(), batch.size()));
  }

  // Largest depth (bootstraps on a longest path from uploaded bits) among `bits`.
  std::uint32_t depth(BitSpan<Storage> bits) const;

  const BackendStats& stats() const { return stats_; }
  void reset_stats() { stats_ = {}; }

 private:
  bool owns(const Storage* s) const {
    return s != nullptr && s->owner == this && s->owner_serial == serial_;
  }
  std::uint64_t serial_ = new_backend_serial();
  BackendStats stats_;
  ExclusiveCalls calls_;  // evaluate() from two threads at once: refused
};

}  // namespace torusgate
