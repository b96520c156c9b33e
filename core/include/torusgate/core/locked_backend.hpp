// LockedBackend: one backend shared by several threads. Every call of the backend contract
// runs under one mutex, so the calls of different threads are serialised (a batch at a time;
// an OpenMP backend still spreads each batch over its own team). Buffers are made by, and
// belong to, the wrapped backend. The rules of docs/architecture.md ("Threads") apply: a
// buffer is read or written by one thread at a time, and one backend per thread (sharing a
// CpuKeyContext) is the faster choice when threads evaluate at the same time.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <mutex>
#include <span>
#include <string>
#include <utility>

#include "torusgate/core/backend.hpp"

namespace torusgate {

template <Backend B>
class LockedBackend {
 public:
  using Storage = typename B::Storage;
  using HostBatch = typename B::HostBatch;
  using ClientKey = typename B::ClientKey;

  // Makes the wrapped backend from `args` (B's constructor arguments).
  template <class... Args>
  explicit LockedBackend(std::in_place_t, Args&&... args) : be_(std::forward<Args>(args)...) {}
  LockedBackend(const LockedBackend&) = delete;
  LockedBackend& operator=(const LockedBackend&) = delete;

  std::string name() const { return "locked " + be_.name(); }
  BitBuffer<Storage> allocate(std::size_t count) {
    std::lock_guard lock(mutex_);
    return be_.allocate(count);
  }
  BitBuffer<Storage> upload(const HostBatch& batch) {
    std::lock_guard lock(mutex_);
    return be_.upload(batch);
  }
  HostBatch download(BitSpan<Storage> bits) const {
    std::lock_guard lock(mutex_);
    return be_.download(bits);
  }
  void evaluate(std::span<const GateOp<Storage>> batch) {
    std::lock_guard lock(mutex_);
    be_.evaluate(batch);
  }
  void evaluate(std::initializer_list<GateOp<Storage>> batch) {
    evaluate(std::span<const GateOp<Storage>>(batch.begin(), batch.size()));
  }
  // A copy: the counters of every thread's batches so far.
  BackendStats stats() const {
    std::lock_guard lock(mutex_);
    return be_.stats();
  }
  void reset_stats() {
    std::lock_guard lock(mutex_);
    be_.reset_stats();
  }
  // The wrapped backend's parameter set, when it has one (fixed at construction: no lock).
  decltype(auto) parameters() const
    requires requires(const B& b) { b.parameters(); }
  {
    return be_.parameters();
  }
  // The wrapped backend's key id, when it has one (fixed at construction: no lock).
  std::uint64_t key_id() const
    requires requires(const B& b) { b.key_id(); }
  {
    return be_.key_id();
  }

  // The wrapped backend itself, for code that knows no other thread uses it meanwhile.
  B& unlocked() { return be_; }

 private:
  mutable std::mutex mutex_;
  B be_;
};

}  // namespace torusgate
