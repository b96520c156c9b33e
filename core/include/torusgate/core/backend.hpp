// The backend contract that circuits are written against (a C++20 concept), the bit
// handles it works on, and the gate operations of a batch.
//
// A backend owns batch storage: a BitBuffer is a contiguous run of encrypted bits
// (bit-coalesced: for ciphertext backends one [count][n+1] LWE array). A BitSpan views part
// of one buffer. A batch is a list of GateOps; each applies one gate element-wise over spans
// of equal length. Every gate of a batch is independent: all inputs are read before any
// output is written (an output may alias an input), and outputs must not overlap.
#pragma once

#include <array>
#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <climits>
#include <memory>
#include <utility>
#include <span>
#include <string>
#include <vector>

#include "torusgate/core/error.hpp"
#include "torusgate/core/gates.hpp"
#include "torusgate/core/params.hpp"
#include "torusgate/core/random.hpp"

namespace torusgate {

// Non-owning view of `count` consecutive bits of one buffer's storage.
template <class Storage>
struct BitSpan {
  Storage* storage = nullptr;
  std::size_t offset = 0;
  std::size_t count = 0;

  std::size_t size() const { return count; }
  bool empty() const { return count == 0; }

  BitSpan subspan(std::size_t first, std::size_t n) const {
    EXPECTS(first <= count && n <= count - first,
            "BitSpan::subspan: [" + std::to_string(first) + ", " + std::to_string(first + n) +
                ") is outside a span of " + std::to_string(count) + " bits");
    return BitSpan{storage, offset + first, n};
  }
  // The single bit i.
  BitSpan operator[](std::size_t i) const { return subspan(i, 1); }
  friend bool operator==(const BitSpan&, const BitSpan&) = default;
};

// True when `bits` lies inside its storage (checked without overflow).
template <class Storage>
bool span_in_bounds(const BitSpan<Storage>& bits) {
  const std::size_t size = bits.storage->size();
  return bits.offset <= size && bits.count <= size - bits.offset;
}

// Describes an out-of-bounds span for error messages.
template <class Storage>
std::string span_bounds_error(const BitSpan<Storage>& bits) {
  const bool wraps = bits.count > SIZE_MAX - bits.offset;
  return "the span of " + std::to_string(bits.count) + " bits at bit " +
         std::to_string(bits.offset) + " ends " +
         (wraps ? std::string("past 2^64") : "at bit " + std::to_string(bits.offset + bits.count)) +
         ", outside its buffer of " + std::to_string(bits.storage->size()) + " bits";
}

// Throws InvalidArgument naming `who` unless `bits` has a buffer, one of this backend's
// (`owns`), and lies inside it: what download and depth check.
template <class Storage, class OwnsFn>
void check_own_span(const BitSpan<Storage>& bits, OwnsFn&& owns, const std::string& who) {
  EXPECTS(bits.storage != nullptr,
          who + ": the span has no buffer (a default-constructed BitSpan, or a span of a "
                "default-constructed or moved-from BitBuffer)");
  EXPECTS(owns(bits.storage), who + ": the span belongs to another backend");
  EXPECTS(span_in_bounds(bits), who + ": " + span_bounds_error(bits));
}

// Owning handle to a backend's storage of `size()` bits. Moving the handle keeps the
// storage where it is, so spans taken earlier stay valid while the buffer lives.
template <class Storage>
class BitBuffer {
 public:
  BitBuffer() = default;
  BitBuffer(std::unique_ptr<Storage> storage, std::size_t count)
      : storage_(std::move(storage)), count_(count) {}
  // A moved-from buffer is empty: no storage and size 0 (not its old size over no storage).
  BitBuffer(BitBuffer&& other) noexcept
      : storage_(std::move(other.storage_)), count_(std::exchange(other.count_, 0)) {}
  BitBuffer& operator=(BitBuffer&& other) noexcept {
    storage_ = std::move(other.storage_);
    count_ = std::exchange(other.count_, 0);
    return *this;
  }

  std::size_t size() const { return count_; }
  BitSpan<Storage> bits() const { return BitSpan<Storage>{storage_.get(), 0, count_}; }
  BitSpan<Storage> bits(std::size_t first, std::size_t n) const { return bits().subspan(first, n); }
  BitSpan<Storage> operator[](std::size_t i) const { return bits().subspan(i, 1); }
  Storage& storage() { return *storage_; }
  const Storage& storage() const { return *storage_; }

 private:
  std::unique_ptr<Storage> storage_;
  std::size_t count_ = 0;
};

// One gate applied element-wise: out[e] = gate(in[0][e], in[1][e], in[2][e]).
template <class Storage>
struct GateOp {
  GateSpec spec;
  std::array<BitSpan<Storage>, 3> in{};
  BitSpan<Storage> out{};
};

// A number no earlier backend object of this process had. A backend's storages name it by
// address and by this number, so that a backend made at the address of a destroyed one does
// not take that one's buffers for its own (their samples may have another dimension).
inline std::uint64_t new_backend_serial() {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

// A backend's evaluate() runs one call at a time (its workspaces and results belong to the
// batch in evaluation). A call that starts while another runs, necessarily from another
// thread, is refused with InvalidArgument instead of sharing them: `enter` at the top of
// evaluate(), the returned scope held to its end. CudaBackend guards its transfers the same
// way (its stream and staging buffers are shared); the CPU backends' touch nothing shared.
class ExclusiveCalls {
 public:
  class Scope {
   public:
    explicit Scope(std::atomic<bool>& busy) : busy_(busy) {}
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    ~Scope() { busy_.store(false, std::memory_order_release); }

   private:
    std::atomic<bool>& busy_;
  };
  [[nodiscard]] Scope enter(const char* who) {
    if (busy_.exchange(true, std::memory_order_acquire)) {
      std::string text = who;
      text.append(": called while another call on this backend runs (from another thread); a ");
      text.append("backend is used by one thread at a time: give each thread its own backend ");
      text.append("(CPU: on one CpuKeyContext) or share one through LockedBackend");
      throw InvalidArgument(text);
    }
    return Scope(busy_);
  }

 private:
  std::atomic<bool> busy_{false};
};

// Counters every backend keeps (the plaintext backend adds depth).
struct BackendStats {
  std::uint64_t batches = 0;     // evaluate() calls
  std::uint64_t gates = 0;       // single-bit gates evaluated
  std::uint64_t bootstraps = 0;  // blind rotations
  std::uint64_t bootstrap_batches = 0;  // evaluate() calls with at least one bootstrap (levels)
  std::array<std::uint64_t, gate_kind_count> gates_by_kind{};
};

template <class B>
concept Backend = requires(B& be, const B& cbe, std::size_t count,
                           BitSpan<typename B::Storage> bits,
                           std::span<const GateOp<typename B::Storage>> batch,
                           const typename B::HostBatch& host) {
  typename B::Storage;    // backend-owned storage of a buffer
  typename B::HostBatch;  // what crosses to/from the client (LweBatch, or plain bits)
  typename B::ClientKey;  // the client's key for encrypt_bits/decrypt_bits on HostBatch
  { be.allocate(count) } -> std::same_as<BitBuffer<typename B::Storage>>;
  { be.upload(host) } -> std::same_as<BitBuffer<typename B::Storage>>;
  { be.download(bits) } -> std::same_as<typename B::HostBatch>;
  be.evaluate(batch);
  { cbe.stats() } -> std::convertible_to<BackendStats>;
  be.reset_stats();
  { cbe.name() } -> std::convertible_to<std::string>;
};

template <class B>
using BitsOf = BitSpan<typename B::Storage>;
template <class B>
using BufferOf = BitBuffer<typename B::Storage>;
template <class B>
using GateOpOf = GateOp<typename B::Storage>;

namespace detail {
// When both the backend and the client key name their parameters (the ciphertext backends),
// they must be the same set: a secret key of another set with the same n would otherwise
// encrypt samples the backend's cloud key silently bootstraps to garbage.
template <class B, class Key>
void check_client_key(const B& be, const Key& key, const char* fn) {
  if constexpr (requires { be.parameters() == key.parameters(); }) {
    EXPECTS(key.parameters().name != "" || be.parameters().name == "",
            std::string(fn) + ": the client key is empty (default-constructed or moved-from)");
    EXPECTS(be.parameters() == key.parameters(),
            std::string(fn) + ": the client key is for parameter set '" + key.parameters().name +
                "' but the backend's cloud key is for '" + be.parameters().name + "'" +
                (key.parameters().name == be.parameters().name
                     ? " (same name, different values)"
                     : ""));
  }
  // When both name the secret key (a cloud key made here or read from a file that names it):
  // a secret key of the same parameter set but another generation would decrypt to noise.
  if constexpr (requires { std::uint64_t{be.key_id()} != std::uint64_t{key.key_id()}; }) {
    EXPECTS(be.key_id() == 0 || key.key_id() == be.key_id(),
            std::string(fn) + ": the client key (key id " + key_id_text(key.key_id()) +
                ") is not the secret key the backend's cloud key was made from (key id " +
                key_id_text(be.key_id()) + "); its samples would decrypt to random bits");
  }
}
}  // namespace detail

// Client-side helpers: encrypt bits with the client key and move them to the backend, and
// back. encrypt_bits/decrypt_bits are found by argument-dependent lookup on the key type.
// Throws InvalidArgument when the key and the backend are for different parameter sets.
template <Backend B>
BufferOf<B> encrypt(B& be, const typename B::ClientKey& key, std::span<const std::uint8_t> plain,
                    Csprng& rng) {
  detail::check_client_key(be, key, "encrypt");
  return be.upload(encrypt_bits(key, plain, rng));
}

template <Backend B>
std::vector<std::uint8_t> decrypt(B& be, const typename B::ClientKey& key, BitsOf<B> bits) {
  detail::check_client_key(be, key, "decrypt");
  return decrypt_bits(key, be.download(bits));
}

// Gate constructors: gate::nand(a, b, out) and so on; spans must have equal lengths.
namespace gate {

template <class S>
GateOp<S> make(const GateSpec& spec, BitSpan<S> a, BitSpan<S> b, BitSpan<S> c, BitSpan<S> out) {
  return GateOp<S>{spec, {a, b, c}, out};
}
template <class S>
GateOp<S> constant(bool value, BitSpan<S> out) {
  return make<S>(GateSpec::constant(value), {}, {}, {}, out);
}
template <class S>
GateOp<S> copy(BitSpan<S> a, BitSpan<S> out) {
  return make<S>(GateSpec::of(GateKind::Copy), a, {}, {}, out);
}
template <class S>
GateOp<S> not_(BitSpan<S> a, BitSpan<S> out) {
  return make<S>(GateSpec::of(GateKind::Not), a, {}, {}, out);
}
#define TORUSGATE_BINARY_GATE(fn, KIND)                                    \
  template <class S>                                                       \
  GateOp<S> fn(BitSpan<S> a, BitSpan<S> b, BitSpan<S> out) {               \
    return make<S>(GateSpec::of(GateKind::KIND), a, b, {}, out);           \
  }
TORUSGATE_BINARY_GATE(and_, And)
TORUSGATE_BINARY_GATE(nand, Nand)
TORUSGATE_BINARY_GATE(or_, Or)
TORUSGATE_BINARY_GATE(nor, Nor)
TORUSGATE_BINARY_GATE(xor_, Xor)
TORUSGATE_BINARY_GATE(xnor, Xnor)
TORUSGATE_BINARY_GATE(andny, AndNY)
TORUSGATE_BINARY_GATE(andyn, AndYN)
TORUSGATE_BINARY_GATE(orny, OrNY)
TORUSGATE_BINARY_GATE(oryn, OrYN)
#undef TORUSGATE_BINARY_GATE
template <class S>
GateOp<S> mux(BitSpan<S> select, BitSpan<S> if_true, BitSpan<S> if_false, BitSpan<S> out) {
  return make<S>(GateSpec::of(GateKind::Mux), select, if_true, if_false, out);
}
template <class S>
GateOp<S> majority(BitSpan<S> a, BitSpan<S> b, BitSpan<S> c, BitSpan<S> out) {
  return make<S>(GateSpec::of(GateKind::Majority), a, b, c, out);
}
template <class S>
GateOp<S> xor3(BitSpan<S> a, BitSpan<S> b, BitSpan<S> c, BitSpan<S> out) {
  return make<S>(GateSpec::of(GateKind::Xor3), a, b, c, out);
}
// G = G_hi or (P_hi and G_lo); valid when G_hi and P_hi are never both 1.
template <class S>
GateOp<S> prefix_generate(BitSpan<S> g_hi, BitSpan<S> p_hi, BitSpan<S> g_lo, BitSpan<S> out) {
  return make<S>(GateSpec::of(GateKind::PrefixGenerate), g_hi, p_hi, g_lo, out);
}

}  // namespace gate

// Checks a batch against the contract before anything is evaluated: each op's spans belong
// to `owns`, have the output's length and the spec's arity; outputs do not overlap.
// Throws InvalidArgument naming the op. Shared by every backend.
template <class S, class OwnsFn>
void validate_batch(std::span<const GateOp<S>> batch, OwnsFn&& owns, const char* who);

}  // namespace torusgate

#include "torusgate/core/backend_validate.hpp"
